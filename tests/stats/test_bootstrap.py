"""The BCa intervals of a mean of scores and of a paired change, against scipy's BCa
bootstrap, the normal interval of a large sample, simulated coverage, and a hand-worked
change of exactly 5 points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fastbench.stats.bootstrap import bootstrap_mean_ci, paired_bootstrap_delta_ci

# Monte Carlo error of a BCa endpoint with B resamples, in standard errors of the mean: the
# 2.5% percentile of a normal bootstrap distribution has standard deviation
# sqrt(0.025 * 0.975 / B) / phi(1.96) = 0.060 SE at B = 2000 and 0.019 SE at B = 20000,
# plus the noise of z0 (sqrt(0.25 / B) / phi(0) = 0.008 SE at 20000). Two independent runs
# at B = 20000 thus differ by about 0.03 SE; 0.15 SE is five of those.
SCIPY_RESAMPLES = 20_000
SCIPY_TOLERANCE_SE = 0.15


def _scipy_bca(data: tuple[np.ndarray, ...], statistic: object, seed: int,
               paired: bool = False) -> tuple[float, float]:
    ci = stats.bootstrap(data, statistic, n_resamples=SCIPY_RESAMPLES, method="BCa",
                         paired=paired, rng=np.random.default_rng(seed + 1000)).confidence_interval
    return float(ci.low), float(ci.high)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_graded_scores_match_scipy(seed: int) -> None:
    x = np.random.default_rng(seed).beta(2.0, 5.0, size=200)   # skewed scores in [0, 1]
    se = x.std(ddof=1) / math.sqrt(x.size)
    ours = bootstrap_mean_ci(x, resamples=SCIPY_RESAMPLES, seed=seed)
    theirs = _scipy_bca((x,), np.mean, seed)
    assert ours == pytest.approx(theirs, abs=SCIPY_TOLERANCE_SE * se)


@pytest.mark.parametrize("data_seed", [0, 1])
def test_skewed_scores_match_scipy_bca_not_percentile(data_seed: int) -> None:
    """40 lognormal(0, 1.5) scores: a skewed mean, where BCa moves both endpoints well away
    from the percentile interval. In the thin upper tail one run's Monte Carlo error is
    large, so each side averages 8 runs and the tolerance is 4 standard errors of the
    difference of those averages, estimated from the runs' own spread. The percentile
    interval, averaged likewise, must fall outside it: the check can tell the two apart."""
    x = np.random.default_rng(data_seed).lognormal(0.0, 1.5, size=40)
    runs = 8
    ours = np.array([bootstrap_mean_ci(x, resamples=SCIPY_RESAMPLES, seed=s)
                     for s in range(runs)])
    bca = np.array([_scipy_bca((x,), np.mean, s) for s in range(runs)])
    percentile = np.array([
        (ci.low, ci.high) for ci in (
            stats.bootstrap((x,), np.mean, n_resamples=SCIPY_RESAMPLES, method="percentile",
                            rng=np.random.default_rng(s + 1000)).confidence_interval
            for s in range(runs))])
    tolerance = 4.0 * np.sqrt(ours.var(axis=0, ddof=1) / runs + bca.var(axis=0, ddof=1) / runs)
    assert np.all(np.abs(ours.mean(axis=0) - bca.mean(axis=0)) <= tolerance)
    assert np.all(np.abs(percentile.mean(axis=0) - bca.mean(axis=0)) > tolerance)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_correctness_scores_match_scipy(seed: int) -> None:
    """0/1 scores: bootstrap means lie on the lattice k/n, and resamples that tie the sample
    mean are counted half below it here while scipy counts them as not below; the
    endpoints may then differ by one lattice step 1/n on top of the Monte Carlo error."""
    x = (np.random.default_rng(seed).random(300) < 0.8).astype(float)
    se = x.std(ddof=1) / math.sqrt(x.size)
    ours = bootstrap_mean_ci(x, resamples=SCIPY_RESAMPLES, seed=seed)
    theirs = _scipy_bca((x,), np.mean, seed)
    assert ours == pytest.approx(theirs, abs=1.0 / x.size + SCIPY_TOLERANCE_SE * se)


def test_paired_change_matches_scipy_paired_bootstrap() -> None:
    """scipy's paired=True resamples example indices jointly, as the paired bootstrap must."""
    rng = np.random.default_rng(4)
    baseline = rng.beta(2.0, 3.0, size=250)
    candidate = np.clip(baseline + rng.normal(0.03, 0.05, size=250), 0.0, 1.0)
    diff = candidate - baseline
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    delta, low, high = paired_bootstrap_delta_ci(baseline, candidate,
                                                 resamples=SCIPY_RESAMPLES, seed=4)
    assert delta == pytest.approx(candidate.mean() - baseline.mean(), rel=1e-12)
    theirs = _scipy_bca((baseline, candidate), lambda b, c, axis=-1: np.mean(c - b, axis=axis),
                        4, paired=True)
    assert (low, high) == pytest.approx(theirs, abs=SCIPY_TOLERANCE_SE * se)


def test_large_sample_is_the_normal_interval() -> None:
    """n = 10,000 (several resampling chunks): the mean is nearly normal and BCa's
    corrections nearly vanish, so the interval is p +- 1.96 sqrt(p (1 - p) / n) within the
    Monte Carlo error at B = 2000 (0.06 SE, 0.3 SE allowed) and one lattice step."""
    x = (np.random.default_rng(9).random(10_000) < 0.8).astype(float)
    p = float(x.mean())
    se = math.sqrt(p * (1.0 - p) / x.size)
    low, high = bootstrap_mean_ci(x)
    assert low == pytest.approx(p - 1.959964 * se, abs=0.3 * se + 1e-4)
    assert high == pytest.approx(p + 1.959964 * se, abs=0.3 * se + 1e-4)


@pytest.mark.slow
def test_coverage_on_bernoulli_scores() -> None:
    """400 samples of 400 Bernoulli(0.8) scores: an interval with 95% coverage covers 0.8 a
    Binomial(400, 0.95) number of times; the count must lie in that distribution's central
    99.9% range. (At n = 400 the 0/1 lattice adds a little: the closed interval can end
    on 0.8 itself.)"""
    rng = np.random.default_rng(2024)
    reps = 400
    covered = 0
    for rep in range(reps):
        low, high = bootstrap_mean_ci(rng.random(400) < 0.8, seed=rep)
        covered += low <= 0.8 <= high
    lo = stats.binom.ppf(0.0005, reps, 0.95)
    hi = stats.binom.ppf(0.9995, reps, 0.95)
    assert lo <= covered <= hi, (covered, lo, hi)


def _flipped(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A baseline right on 70% of n examples and a candidate that also gets 5% of the
    examples (n / 20 of the wrong ones) right: every difference is 0 or 1."""
    rng = np.random.default_rng(n)
    baseline = np.zeros(n)
    baseline[rng.permutation(n)[: (7 * n) // 10]] = 1.0
    candidate = baseline.copy()
    wrong = np.flatnonzero(baseline == 0.0)
    candidate[rng.choice(wrong, size=n // 20, replace=False)] = 1.0
    return baseline, candidate


def test_five_point_improvement_excludes_zero_at_400_examples() -> None:
    """The differences are n/20 ones and zeros, so delta = (n/20)/n = 0.05 exactly. The lower
    bound is positive once the resamples that miss every flipped example (probability
    0.95^n) fall well below the lower tail BCa reads (about 2.5% here: the bias correction
    and acceleration are small). 0.95^n < 0.025 needs n >= 72, and the normal interval
    0.05 - 1.96 sqrt(0.05 * 0.95 / n) > 0 needs n > 73. At n = 400, 0.95^400 ~ 1e-9 and the
    normal lower bound is 0.0286: far from either edge."""
    baseline, candidate = _flipped(400)
    delta, low, high = paired_bootstrap_delta_ci(baseline, candidate)
    assert delta == 0.05
    assert 0.0 < low < 0.05 < high
    assert low == pytest.approx(0.05 - 1.96 * math.sqrt(0.05 * 0.95 / 400), abs=0.006)


def test_one_flipped_example_of_twenty_includes_zero() -> None:
    """n = 20: one flipped example, missed by a resample with probability 0.95^20 = 0.36,
    far above any tail level, so the lower bound is the bootstrap mean 0."""
    baseline, candidate = _flipped(20)
    delta, low, high = paired_bootstrap_delta_ci(baseline, candidate)
    assert delta == 0.05
    assert low == 0.0
    assert 0.05 < high <= 1.0


def test_degenerate_scores() -> None:
    assert bootstrap_mean_ci([0.7] * 50) == (0.7, 0.7)
    assert bootstrap_mean_ci(np.ones(10, dtype=bool)) == (1.0, 1.0)
    same = np.arange(30) % 2
    assert paired_bootstrap_delta_ci(same, same) == (0.0, 0.0, 0.0)
    assert paired_bootstrap_delta_ci(np.zeros(30), np.full(30, 0.1)) == (0.1, 0.1, 0.1)


def test_bools_are_zero_one_scores_and_seed_reproduces() -> None:
    correct = np.random.default_rng(3).random(300) < 0.6
    assert bootstrap_mean_ci(correct) == bootstrap_mean_ci(correct.astype(float))
    assert bootstrap_mean_ci(correct, seed=5) == bootstrap_mean_ci(list(correct), seed=5)
    graded = np.random.default_rng(3).random(300)
    assert bootstrap_mean_ci(graded, seed=1) != bootstrap_mean_ci(graded, seed=2)


def test_wider_at_higher_confidence() -> None:
    x = np.random.default_rng(8).random(200)
    low90, high90 = bootstrap_mean_ci(x, 0.90)
    low99, high99 = bootstrap_mean_ci(x, 0.99)
    assert low99 < low90 < x.mean() < high90 < high99


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: bootstrap_mean_ci([1.0]), ValueError, "at least 2"),
    (lambda: bootstrap_mean_ci([]), ValueError, "empty"),
    (lambda: bootstrap_mean_ci([1.0, float("nan")]), ValueError, "non-finite"),
    (lambda: bootstrap_mean_ci([[1.0, 2.0]]), ValueError, "one-dimensional"),
    (lambda: bootstrap_mean_ci(["1", "2"]), TypeError, "real numbers"),
    (lambda: bootstrap_mean_ci([1.0, 2.0], 1.5), ValueError, "confidence"),
    (lambda: bootstrap_mean_ci([1.0, 2.0], "0.9"), TypeError, "confidence"),
    (lambda: bootstrap_mean_ci([1.0, 2.0], resamples=10), ValueError, "resamples"),
    (lambda: bootstrap_mean_ci([1.0, 2.0], resamples=2000.0), TypeError, "resamples"),
    (lambda: bootstrap_mean_ci([1.0, 2.0], seed=-1), ValueError, "seed"),
    (lambda: paired_bootstrap_delta_ci([0, 1, 1], [1, 1]), ValueError, "3 and 2"),
    (lambda: paired_bootstrap_delta_ci([0, 1], [1, float("inf")]), ValueError, "candidate"),
])
def test_bad_input(call: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()  # type: ignore[operator]
