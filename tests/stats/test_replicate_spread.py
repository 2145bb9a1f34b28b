"""How much whole results of identical code vary, learned from its replicates
(fastbench.stats.runs.replicate_spread), on synthetic figures with a known invocation
effect; and the A/A and A-B-A-B verdicts judged against it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats.runs import (ReplicateSpread, compare_runs, detectable_change,
                                  replicate_spread)

ALPHA = 0.05


def _runs(rng: np.random.Generator, n: int, sd: float, true_ns: float = 1000.0) -> np.ndarray:
    return true_ns * np.exp(rng.normal(0.0, sd, n))


def _spread(*series: np.ndarray) -> ReplicateSpread:
    s = replicate_spread(*series)
    assert s is not None
    return s


def test_two_figures_by_hand() -> None:
    s = _spread(np.array([1000.0, 1100.0]))
    assert s.sd == pytest.approx(math.log(1.1) / math.sqrt(2.0))
    assert (s.df, s.runs, s.series) == (1, 2, 1)


def test_a_known_spread_comes_back_without_bias() -> None:
    # E[sum d^2 / (2 (n - 1))] = sd^2 for independent figures (von Neumann 1941).
    rng = np.random.default_rng(11)
    sd, n, trials = 0.04, 30, 3000
    q = np.array([_spread(_runs(rng, n, sd)).sd ** 2 for _ in range(trials)])
    assert q.mean() / sd**2 == pytest.approx(1.0, abs=0.03)
    # Its variance is (3n - 4) / (n - 1)^2 sd^4: the degrees of freedom it is said to be worth.
    assert np.var(q / sd**2) == pytest.approx((3 * n - 4) / (n - 1) ** 2, rel=0.12)
    assert _spread(_runs(rng, n, sd)).df == round(2 * 29**2 / 86)


def test_series_pool_within_and_never_across() -> None:
    """Two identities at levels 3x apart: the spread is that within each, whatever the
    distance between them."""
    rng = np.random.default_rng(13)
    a, b = _runs(rng, 400, 0.05), _runs(rng, 200, 0.05, 3000.0)
    s = _spread(a, b, np.array([7.0]))
    assert s.runs == 601 and s.series == 2
    assert s.sd == pytest.approx(0.05, rel=0.08)
    assert s.df == round(2 * 399**2 / 1196 + 2 * 199**2 / 596)


def test_nothing_to_learn_from() -> None:
    assert replicate_spread() is None
    assert replicate_spread([5.0], []) is None
    with pytest.raises(ValueError, match="positive"):
        replicate_spread([1.0, -1.0])


def test_the_detectable_change() -> None:
    # exp((z(0.975) + z(0.8)) se) - 1 on a normal, with t quantiles on its df.
    assert detectable_change(0.01, None) == pytest.approx(math.expm1(2.8016 * 0.01), rel=1e-3)
    assert detectable_change(0.01, 2) > detectable_change(0.01, 20) > detectable_change(0.01, None)
    assert detectable_change(math.inf, 3) == math.inf


def _abab(rng: np.random.Generator, change: float, effect: float, noise: float = 0.002) -> bool:
    """One A-B-A-B trial of single runs (invocation effect ``effect``, a run's own noise
    ``noise``): A2 against B2, judged against the spread of A1-A2 and B1-B2; True when
    called slower."""
    level = [1.0, 1.0 + change, 1.0, 1.0 + change]
    x = [1000.0 * lv * math.exp(rng.normal(0.0, effect) + rng.normal(0.0, noise))
         for lv in level]
    s = _spread(np.array([x[0], x[2]]), np.array([x[1], x[3]]))
    r = compare_runs([x[2]], [x[3]], alpha=ALPHA, min_effect=0.01, run_variation=s.sd,
                     variation_df=s.df)
    return r.verdict == "slower"


def test_abab_aa_keeps_the_false_positive_rate() -> None:
    rng = np.random.default_rng(21)
    trials = 4000
    calls = sum(_abab(rng, 0.0, 0.03) for _ in range(trials))
    # A one-sided rate: at most alpha / 2 plus the binomial's spread.
    assert calls / trials <= float(sps.binom.ppf(0.9999, trials, ALPHA / 2)) / trials


def test_abab_finds_a_change_well_beyond_the_invocations_spread() -> None:
    """20% slower with invocations 1% apart: t on 2 degrees of freedom still calls it
    (the noncentral t's power, about 0.98, bounds the rate from below)."""
    rng = np.random.default_rng(22)
    found = sum(_abab(rng, 0.20, 0.01) for _ in range(400))
    assert found >= 360
