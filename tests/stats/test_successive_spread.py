"""Run-to-run variation learned from a benchmark's consecutive runs
(fastbench.stats.runs.successive_spread), on synthetic run medians with a known run effect,
and the single-run verdicts judged against it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats.runs import SuccessiveSpread, compare_runs, successive_spread

ALPHA = 0.05


def _runs(rng: np.random.Generator, n: int, sd: float, true_ns: float = 1000.0) -> np.ndarray:
    return true_ns * np.exp(rng.normal(0.0, sd, n))


def _spread(*series: np.ndarray) -> SuccessiveSpread:
    s = successive_spread(*series)
    assert s is not None
    return s


def test_two_runs_by_hand() -> None:
    s = successive_spread([1000.0, 1100.0])
    assert s is not None
    assert s.sd == pytest.approx(math.log(1.1) / math.sqrt(2.0))
    assert (s.df, s.runs, s.shifts) == (1, 2, 0)


def test_a_known_spread_comes_back_without_bias() -> None:
    # E[sum d^2 / (2 (n - 1))] = sd^2 for independent runs (von Neumann 1941).
    rng = np.random.default_rng(11)
    sd, n, trials = 0.04, 30, 3000
    q = np.array([_spread(_runs(rng, n, sd)).sd ** 2 for _ in range(trials)])
    assert q.mean() / sd**2 == pytest.approx(1.0, abs=0.03)
    # Its variance is (3n - 4) / (n - 1)^2 sd^4: the degrees of freedom it is said to be worth.
    assert np.var(q / sd**2) == pytest.approx((3 * n - 4) / (n - 1) ** 2, rel=0.12)
    assert _spread(_runs(rng, n, sd)).df == int(2 * 29**2 / 86)


def test_a_change_of_level_does_not_inflate_it() -> None:
    # 20 runs, then the code got twice as fast: one step of log 2 among steps of about 4%.
    rng = np.random.default_rng(12)
    x = np.concatenate([_runs(rng, 20, 0.03), _runs(rng, 20, 0.03, 500.0)])
    s = successive_spread(x)
    assert s is not None and s.shifts == 1
    assert s.sd == pytest.approx(0.03, rel=0.35)
    assert float(np.std(np.log(x), ddof=1)) > 10 * 0.03  # what a plain SD would say


def test_series_of_several_benchmarks_pool() -> None:
    rng = np.random.default_rng(13)
    a, b = _runs(rng, 400, 0.05), _runs(rng, 200, 0.05, 3000.0)  # levels apart: not a step
    s = successive_spread(a, b, [7.0])
    assert s is not None and s.runs == 601 and s.shifts == 0
    assert s.sd == pytest.approx(0.05, rel=0.08)
    assert s.df == int(2 * 399**2 / 1196 + 2 * 199**2 / 596)


def test_nothing_to_learn_from() -> None:
    assert successive_spread() is None
    assert successive_spread([5.0], []) is None
    with pytest.raises(ValueError, match="positive"):
        successive_spread([1.0, -1.0])


def test_identical_medians_give_no_spread_but_a_step_is_kept() -> None:
    # More than half the steps zero: the robust scale is 0, so nothing is called a shift.
    s = successive_spread([100.0, 100.0, 100.0, 100.0, 110.0])
    assert s is not None and s.shifts == 0
    assert s.sd == pytest.approx(math.sqrt(math.log(1.1) ** 2 / 8.0))


def _saved_and_called(log: list[float], pair: list[float]) -> bool:
    """Saves an A/A pair of single runs to ``log`` and judges it against the spread learned
    from every run saved so far, as `fastbench compare` does; True if called different."""
    log += pair
    s = successive_spread(log)
    assert s is not None
    r = compare_runs([pair[0]], [pair[1]], alpha=ALPHA, min_effect=0.0,
                     run_variation=s.sd, variation_df=s.df)
    return r.verdict in ("faster", "slower")


def _learned_aa_calls(rng: np.random.Generator, pairs: int, sd: float, drift: float) -> int:
    """Verdicts ("faster" or "slower") over ``pairs`` A/A pairs saved one after the other,
    each pair judged against the spread learned from every run saved so far, as `fastbench
    compare` does. The host's speed wanders as a random walk of step ``drift`` besides each
    run's own factor."""
    log: list[float] = []
    level = 0.0
    calls = 0
    for _ in range(pairs):
        pair = []
        for _ in range(2):
            level += rng.normal(0.0, drift)
            pair.append(1000.0 * math.exp(level + rng.normal(0.0, sd)))
        calls += _saved_and_called(log, pair)
    return calls


@pytest.mark.parametrize("drift", [0.0, 0.02])
def test_single_run_aa_pairs_judged_against_the_log_keep_the_false_positive_rate(
        drift: float) -> None:
    rng = np.random.default_rng(14 + int(drift * 100))
    calls = trials = 0
    for _ in range(100):
        calls, trials = calls + _learned_aa_calls(rng, 20, 0.05, drift), trials + 20
    assert calls / trials <= float(sps.binom.ppf(0.9999, trials, ALPHA)) / trials


def _moded_runs(rng: np.random.Generator, n: int, share: float = 0.25) -> np.ndarray:
    """A host with two speed modes: most runs at 8.8 µs, ``share`` of them at 8.6 (2.3%
    faster), each with 0.2% of noise of its own (as `sum(range(1000))` ran on a 2-vCPU
    Sapphire Rapids-class VM)."""
    fast = rng.random(n) < share
    return np.where(fast, 8600.0, 8800.0) * np.exp(rng.normal(0.0, 0.002, n))


def test_a_host_switching_between_speed_modes_is_its_variation() -> None:
    rng = np.random.default_rng(16)
    x = _moded_runs(rng, 60, share=0.1)
    s = successive_spread(x)
    assert s is not None
    # Only a first visit to a mode can look like a change of level; every later switch is
    # variation, so the spread is that of the mixture, not the 0.2% within a mode.
    assert s.shifts <= 2
    mixture = float(np.std(np.log(x), ddof=1))
    assert 0.6 * mixture <= s.sd <= 1.6 * mixture and s.sd > 3 * 0.002


def test_single_run_aa_pairs_on_a_moded_host_keep_the_false_positive_rate() -> None:
    rng = np.random.default_rng(17)
    calls = trials = 0
    for _ in range(100):
        log: list[float] = []
        for _ in range(20):
            calls += _saved_and_called(log, list(_moded_runs(rng, 2)))
            trials += 1
    assert calls / trials <= float(sps.binom.ppf(0.9999, trials, ALPHA)) / trials


def test_a_change_beyond_the_learned_spread_is_found() -> None:
    rng = np.random.default_rng(15)
    log = list(_runs(rng, 30, 0.03))
    s = successive_spread(log)
    assert s is not None
    found = sum(
        compare_runs(_runs(rng, 1, 0.03), _runs(rng, 1, 0.03, 1300.0), run_variation=s.sd,
                     variation_df=s.df).verdict == "slower"
        for _ in range(200))
    assert found >= 190  # 30% slower, runs about 3% apart
