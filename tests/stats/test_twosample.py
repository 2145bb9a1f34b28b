"""Tests for fastbench.stats.twosample (compare_samples, SampleComparison): p-values against
scipy on fixed fixtures, effect sizes against hand computation and brute force, verdicts on
synthetic lognormal timings with a known truth (including the false-positive rate over seeded
simulations), the min_effect gate, tiny samples, and the input checks.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats as sps

from fastbench.stats import (
    MIN_SAMPLES,
    SampleComparison,
    compare_samples,
    median_ci,
    median_ratio_ci,
)
from fastbench.stats import twosample

NO_DIFF = "no significant difference"

_RNG = np.random.default_rng(31)
BASE = _RNG.lognormal(np.log(1000.0), 0.05, 25)  # baseline times, ns
CAND = BASE * 1.03 * _RNG.lognormal(0.0, 0.02, 25)  # paired candidate, 3% slower
OTHER = _RNG.lognormal(np.log(1030.0), 0.05, 31)  # independent candidate


def _lognormal_pair(
    rng: np.random.Generator, n: int, ratio: float, sigma: float = 0.05
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Unpaired samples: candidate median = ratio * baseline median."""
    return rng.lognormal(np.log(1000.0), sigma, n), rng.lognormal(np.log(1000.0 * ratio), sigma, n)


def _paired(
    rng: np.random.Generator, n: int, ratio: float, sigma: float = 0.05
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Paired samples: a shared per-pair level (e.g. machine state) plus independent noise."""
    level = rng.lognormal(np.log(1000.0), 0.1, n)
    return level * rng.lognormal(0, sigma, n), ratio * level * rng.lognormal(0, sigma, n)


# -- against scipy and by hand -----------------------------------------------------------------
def test_paired_matches_scipy() -> None:
    c = compare_samples(BASE, CAND, paired=True)
    r = np.log(BASE / CAND)
    assert c.paired and c.test == "sign test"
    assert (c.n_a, c.n_b) == (25, 25)
    sign = sps.binomtest(int(np.count_nonzero(r > 0)), int(np.count_nonzero(r)), 0.5).pvalue
    assert c.p_value == pytest.approx(sign, rel=1e-12)
    assert c.p_wilcoxon == pytest.approx(sps.wilcoxon(r).pvalue, rel=1e-12)
    assert c.p_mannwhitney == pytest.approx(sps.mannwhitneyu(BASE, CAND).pvalue, rel=1e-12)
    welch = sps.ttest_ind(np.log(BASE), np.log(CAND), equal_var=False).pvalue
    assert c.p_welch == pytest.approx(welch, rel=1e-9)
    assert c.speedup == pytest.approx(math.exp(np.median(r)), rel=1e-12)
    ci = median_ci(r)
    assert ci is not None and c.speedup_ci is not None
    assert c.speedup_ci == pytest.approx((math.exp(ci[0]), math.exp(ci[1])), rel=1e-12)
    assert c.median_a == np.median(BASE) and c.median_b == np.median(CAND)
    # The time change follows the pairs: the median log-ratio, as the speedup does.
    assert c.rel_diff_pct == pytest.approx(math.expm1(-np.median(r)) * 100, rel=1e-12)
    assert c.verdict == "slower" and c.warnings == ()


def test_paired_time_change_follows_the_pairs_where_the_medians_disagree() -> None:
    # Hand-worked: in 7 of 9 rounds the candidate ran 5% slower than the baseline beside it;
    # in 2 rounds the machine was slow for the baseline only. Sorted, the baseline's times
    # are 10 10 10 10 30 30 40 40 40 (median 30) and the candidate's 10.5 10.5 10.5 10.5 10.5
    # 10.5 31.5 42 42 (median 10.5): its own median reads 65% faster, while every round but
    # two says 5% slower. The median log-ratio is log(1.05).
    base = np.array([10.0, 10.0, 10.0, 10.0, 30.0, 40.0, 40.0, 30.0, 40.0])
    cand = np.array([10.5, 10.5, 10.5, 10.5, 31.5, 42.0, 42.0, 10.5, 10.5])
    c = compare_samples(base, cand, paired=True)
    assert c.median_b / c.median_a == pytest.approx(0.35)
    assert c.speedup == pytest.approx(1 / 1.05, rel=1e-12)
    assert c.rel_diff_pct == pytest.approx(5.0, rel=1e-9)


def test_unpaired_matches_scipy() -> None:
    c = compare_samples(BASE, OTHER)
    assert not c.paired and c.test == "mann-whitney u"
    assert (c.n_a, c.n_b) == (25, 31)
    assert c.p_value == pytest.approx(sps.mannwhitneyu(BASE, OTHER).pvalue, rel=1e-12)
    assert c.p_mannwhitney == c.p_value and c.p_wilcoxon is None
    welch = sps.ttest_ind(np.log(BASE), np.log(OTHER), equal_var=False).pvalue
    assert c.p_welch == pytest.approx(welch, rel=1e-9)
    assert c.speedup == pytest.approx(np.median(BASE) / np.median(OTHER), rel=1e-12)
    assert c.rel_diff_pct == pytest.approx((np.median(OTHER) / np.median(BASE) - 1) * 100)
    # Percentile bootstrap with a fixed seed: brackets the estimate, repeatable.
    assert c.speedup_ci is not None
    assert c.speedup_ci[0] < c.speedup < c.speedup_ci[1]
    assert compare_samples(BASE, OTHER).speedup_ci == c.speedup_ci


def test_effect_sizes_by_hand() -> None:
    a = [10.0, 11.0, 12.0, 13.0]  # mean 11.5, variance 5/3
    b = [12.0, 13.0, 14.0, 15.0, 16.0]  # mean 14, variance 5/2
    c = compare_samples(a, b)
    pooled = math.sqrt((3 * 5 / 3 + 4 * 5 / 2) / 7)  # sqrt(15/7)
    assert c.cohens_d == pytest.approx(2.5 / pooled, rel=1e-12)
    assert c.hedges_g == pytest.approx((1 - 3 / (4 * 9 - 9)) * 2.5 / pooled, rel=1e-12)
    # Cross pairs: b > a in 17 of 20, b == a in 2 (12 and 13), b < a in 1 (12 < 13).
    assert c.cliffs_delta == pytest.approx((17 - 1) / 20)
    reverse = compare_samples(b, a)
    assert reverse.cohens_d == pytest.approx(-2.5 / pooled)
    assert reverse.cliffs_delta == pytest.approx(-16 / 20)


def _brute_cliff(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    diff = b[None, :] - a[:, None]
    return float((np.count_nonzero(diff > 0) - np.count_nonzero(diff < 0)) / diff.size)


@pytest.mark.parametrize("seed", range(5))
def test_cliffs_delta_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Rounded to create many ties, with different sizes.
    a = np.round(rng.lognormal(3, 0.3, 40 + seed), 0)
    b = np.round(rng.lognormal(3.1, 0.3, 57 - seed), 0)
    assert compare_samples(a, b).cliffs_delta == _brute_cliff(a, b)
    assert compare_samples(a[:30], b[:30], paired=True).cliffs_delta == _brute_cliff(a[:30], b[:30])


def test_to_dict_is_json_ready() -> None:
    c = compare_samples(BASE, CAND, paired=True)
    d = c.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert d["speedup_ci"] == list(c.speedup_ci or ()) and d["warnings"] == []
    assert set(d) == set(SampleComparison.__dataclass_fields__)
    tiny = compare_samples([1.0], [2.0]).to_dict()
    assert tiny["speedup_ci"] is None and tiny["p_welch"] is None and tiny["cohens_d"] is None


# -- verdicts with a known truth ---------------------------------------------------------------
@pytest.mark.parametrize("paired", [True, False])
def test_true_ten_percent_slowdown_is_slower(paired: bool) -> None:
    rng = np.random.default_rng(8)
    a, b = (_paired if paired else _lognormal_pair)(rng, 30, 1.10)
    c = compare_samples(a, b, paired)
    assert c.verdict == "slower"
    assert c.speedup == pytest.approx(1 / 1.1, rel=0.03)
    assert c.speedup_ci is not None and c.speedup_ci[1] < 1
    assert c.p_value < 1e-6 and c.rel_diff_pct > 5
    # Effect sizes treat the samples as independent: positive, smaller when paired (the
    # shared per-pair level spreads both samples).
    assert c.cohens_d is not None and c.cohens_d > 0 and c.cliffs_delta > 0
    # The same data read the other way round is a speedup.
    back = compare_samples(b, a, paired)
    assert back.verdict == "faster" and back.speedup == pytest.approx(1 / c.speedup, rel=0.02)


@pytest.mark.parametrize(("paired", "trials"), [(True, 1000), (False, 500)])
def test_false_positive_rate_on_identical_distributions(paired: bool, trials: int) -> None:
    rng = np.random.default_rng(2025 + paired)
    alpha = 0.05
    significant = flagged = 0
    for _ in range(trials):
        a, b = (_paired if paired else _lognormal_pair)(rng, 20, 1.0)
        c = compare_samples(a, b, paired, alpha=alpha, min_effect=0.0)
        significant += c.p_value < alpha
        flagged += c.verdict != NO_DIFF
    assert abs(significant / trials - alpha) <= 0.03
    # The verdict also needs the interval to exclude 1: never more false alarms than that.
    assert flagged / trials <= alpha + 0.03


@pytest.mark.parametrize("paired", [True, False])
def test_min_effect_gates_a_real_but_small_difference(paired: bool) -> None:
    rng = np.random.default_rng(4)
    a, b = (_paired if paired else _lognormal_pair)(rng, 60, 1.005, sigma=0.002)
    c = compare_samples(a, b, paired, min_effect=0.01)
    assert c.p_value < 1e-6  # clearly significant ...
    assert c.speedup_ci is not None and c.speedup_ci[1] < 1
    assert c.verdict == NO_DIFF  # ... but below the 1% that counts
    assert compare_samples(a, b, paired, min_effect=0.001).verdict == "slower"


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, MIN_SAMPLES - 1])
def test_tiny_samples_never_give_a_verdict(paired: bool, n: int) -> None:
    a = 1000.0 + np.arange(n, dtype=float)
    b = 2 * a  # twice as slow, but too few samples to say so
    c = compare_samples(a, b, paired)
    assert c.verdict == NO_DIFF and c.speedup_ci is None
    assert any(w.startswith("too few samples for a verdict") for w in c.warnings)
    assert any(w.startswith("few samples") for w in c.warnings)
    assert 0.0 <= c.p_value <= 1.0
    json.dumps(c.to_dict(), allow_nan=False)


@pytest.mark.parametrize("paired", [True, False])
def test_few_samples_warning_between_six_and_ten(paired: bool) -> None:
    rng = np.random.default_rng(6)
    a, b = (_paired if paired else _lognormal_pair)(rng, 8, 1.5)
    c = compare_samples(a, b, paired)
    assert c.verdict == "slower"  # 8 is enough for a verdict with this large an effect
    assert not any("too few samples" in w for w in c.warnings)
    unit = "pairs" if paired else "samples per side"
    assert f"few samples: 8 {unit} (at least 10 recommended)" in c.warnings


def test_no_interval_means_no_verdict() -> None:
    # Seven pairs: a 95% sign-test interval exists, a 99% one does not (needs 8).
    rng = np.random.default_rng(12)
    a, b = _paired(rng, 7, 1.5)
    assert compare_samples(a, b, True).verdict == "slower"
    c = compare_samples(a, b, True, confidence=0.99, alpha=0.05)
    assert c.speedup_ci is None and c.verdict == NO_DIFF
    assert any("no 99% confidence interval" in w for w in c.warnings)


def test_identical_pairs_give_p_one_with_a_warning() -> None:
    c = compare_samples(BASE, BASE.copy(), paired=True)
    assert c.p_value == 1.0 and c.speedup == 1.0 and c.verdict == NO_DIFF
    assert any("every pair is identical" in w for w in c.warnings)
    assert c.cliffs_delta == 0.0 and c.cohens_d == 0.0


def test_constant_samples_do_not_crash_or_warn() -> None:
    c = compare_samples([5.0] * 12, [5.0] * 12)
    assert c.p_value == 1.0 and c.verdict == NO_DIFF and c.cohens_d is None
    assert c.p_welch is None  # no spread on either side: the t statistic is undefined
    flat, spread = np.log([5.0] * 12), np.log(np.linspace(5.0, 6.0, 12))
    one_flat = compare_samples(np.exp(flat), np.exp(spread))
    with warnings.catch_warnings():
        # scipy warns about cancellation for the constant side; compare_samples must not.
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = sps.ttest_ind(flat, spread, equal_var=False).pvalue
    assert one_flat.p_welch == pytest.approx(expected, rel=1e-9)


def test_unequal_sizes_warn_beyond_four_to_one() -> None:
    rng = np.random.default_rng(9)
    big = rng.lognormal(0, 0.05, 50)
    assert not any("unequal" in w for w in compare_samples(big[:40], big[40:]).warnings)
    c = compare_samples(big[:41], big[41:])  # 41 vs 9
    assert any("unequal sample sizes: 41 vs 9" in w for w in c.warnings)


# -- large unpaired samples: the order-statistics interval -----------------------------------
def test_median_ratio_ci_matches_the_published_worked_example() -> None:
    # statpsych's ci.ratio.median2(.05, y1, y2) (Bonett): 1.162162 [0.927667, 1.455933].
    y1 = [36, 44, 47, 42, 49, 39, 46, 31, 33, 48]
    y2 = [32, 39, 26, 35, 43, 27, 40, 37, 34, 29, 49, 42, 40]
    ci = median_ratio_ci(y1, y2, 0.95)
    assert ci == pytest.approx((0.927667, 1.455933), abs=5e-7)


def test_median_ratio_ci_by_hand() -> None:
    # n = 36: c = round(18 - 6) = 12, so x_(12) and x_(25), covering with 1 - 2 P(B <= 11).
    a = np.exp(np.linspace(0.0, 0.35, 36))  # log order statistics 0.01 apart
    b = np.exp(np.linspace(0.2, 0.9, 36))  # 0.02 apart
    z_side = sps.norm.isf(sps.binom.cdf(11, 36, 0.5))
    se_a, se_b = (24 - 11) * 0.01 / (2 * z_side), (24 - 11) * 0.02 / (2 * z_side)
    d = np.log(np.median(a)) - np.log(np.median(b))
    half = sps.norm.ppf(0.95) * math.hypot(se_a, se_b)  # 90%
    assert median_ratio_ci(a, b, 0.90) == pytest.approx((math.exp(d - half), math.exp(d + half)),
                                                        rel=1e-12)
    assert median_ratio_ci(a[:5], b) is None  # no interval below MIN_SAMPLES a side


@pytest.mark.parametrize("bad", [[1.0] * 5 + [0.0] * 3, [1.0] * 7 + [-1.0]])
def test_median_ratio_ci_rejects_non_positive_values(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="b holds 1 value|b holds 3 value"):
        median_ratio_ci([1.0] * 8, bad)


def _lognormal_sides(rng: np.random.Generator, n: int) -> tuple[NDArray[np.float64],
                                                                 NDArray[np.float64]]:
    # True medians 1000 and 1100 with unequal spreads: the true ratio is 1/1.1.
    return rng.lognormal(np.log(1000.0), 0.1, n), rng.lognormal(np.log(1100.0), 0.4, n)


def _gamma_sides(rng: np.random.Generator, n: int) -> tuple[NDArray[np.float64],
                                                             NDArray[np.float64]]:
    # Skewed, the same shape scaled: the true ratio of medians is 1000 / 900.
    return 1000.0 * rng.gamma(2.0, 1.0, n), 900.0 * rng.gamma(2.0, 1.0, n)


@pytest.mark.parametrize(("sides", "truth"), [(_lognormal_sides, 1 / 1.1),
                                              (_gamma_sides, 1000 / 900)],
                         ids=["lognormal", "gamma"])
def test_median_ratio_ci_covers_a_known_ratio_95_percent_of_the_time(sides: Any,
                                                                      truth: float) -> None:
    rng = np.random.default_rng(17)
    trials = 400
    covered = 0
    for _ in range(trials):
        a, b = sides(rng, 6000)
        ci = median_ratio_ci(a, b, 0.95)
        assert ci is not None
        covered += ci[0] <= truth <= ci[1]
    # 400 trials: the standard error of the observed coverage is 1.1%.
    assert 0.92 <= covered / trials <= 0.98


@pytest.mark.parametrize("seed", range(3))
def test_order_statistics_interval_agrees_with_the_bootstrap_at_moderate_n(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    a, b = _lognormal_sides(rng, 2500)  # 5000 in all: compare_samples bootstraps
    boot = compare_samples(a, b).speedup_ci
    order = median_ratio_ci(a, b)
    assert boot is not None and order is not None
    lb, ub = np.log(boot)
    lo, uo = np.log(order)
    half = (ub - lb) / 2
    assert abs(lo - lb) < 0.5 * half and abs(uo - ub) < 0.5 * half
    assert (uo - lo) / (ub - lb) == pytest.approx(1.0, abs=0.2)


def _no_bootstrap(*args: Any) -> NDArray[np.float64]:
    raise AssertionError("resampled a large sample")


def test_large_unpaired_comparison_uses_the_order_statistics_interval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(twosample, "bootstrap_medians", _no_bootstrap)
    rng = np.random.default_rng(5)
    a, b = _lognormal_sides(rng, twosample.BOOTSTRAP_MAX_SAMPLES // 2 + 1)
    c = compare_samples(a, b)
    assert c.speedup_ci == median_ratio_ci(a, b)
    assert c.verdict == "slower"


def test_million_sample_unpaired_comparison_does_not_resample(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(twosample, "bootstrap_medians", _no_bootstrap)
    rng = np.random.default_rng(6)
    a = rng.lognormal(np.log(1000.0), 0.1, 1_000_000)
    b = rng.lognormal(np.log(1020.0), 0.1, 1_000_000)  # 2% slower
    c = compare_samples(a, b)
    assert c.speedup_ci == median_ratio_ci(a, b)
    assert c.speedup_ci is not None and c.speedup_ci[0] <= 1 / 1.02 <= c.speedup_ci[1]
    assert c.verdict == "slower"


# -- with_p_value ------------------------------------------------------------------------------
def test_with_p_value_recomputes_the_verdict() -> None:
    c = compare_samples(BASE, CAND, paired=True)
    assert c.verdict == "slower"
    adjusted = c.with_p_value(0.2)
    assert adjusted.p_value == 0.2 and adjusted.verdict == NO_DIFF
    assert adjusted.p_wilcoxon == c.p_wilcoxon and adjusted.speedup == c.speedup
    assert adjusted.with_p_value(c.p_value) == c
    with pytest.raises(ValueError, match="p_adjusted"):
        c.with_p_value(1.5)
    with pytest.raises(ValueError, match="p_adjusted"):
        c.with_p_value(float("nan"))


def test_with_p_value_keeps_tiny_samples_undecided() -> None:
    c = compare_samples([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert c.with_p_value(0.0).verdict == NO_DIFF


# -- input checks ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([], [1.0], {}, "a is empty"),
        ([1.0], [], {}, "b is empty"),
        ([[1.0, 2.0]], [1.0], {}, "one-dimensional"),
        ([1.0, float("nan")], [1.0], {}, "non-finite"),
        ([1.0], [float("inf")], {}, "non-finite"),
        ([1.0, 0.0], [1.0], {}, "a holds 1 value"),
        ([1.0], [-2.0], {}, "positive"),
        ([1.0, 2.0], [1.0], {"paired": True}, "equal lengths"),
        ([1.0], [1.0], {"alpha": 0.0}, "alpha"),
        ([1.0], [1.0], {"alpha": 1.0}, "alpha"),
        ([1.0], [1.0], {"confidence": 1.0}, "confidence"),
        ([1.0], [1.0], {"min_effect": -0.01}, "min_effect"),
        ([1.0], [1.0], {"min_effect": float("nan")}, "min_effect"),
    ],
)
def test_compare_samples_rejects(a: Any, b: Any, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        compare_samples(a, b, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"alpha": "0.05"}, "alpha"), ({"confidence": None}, "confidence"),
     ({"min_effect": "1%"}, "min_effect"), ({"alpha": True}, "alpha")],
)
def test_compare_samples_settings_must_be_numbers(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(TypeError, match=f"^{name} must be a number, got "):
        compare_samples(BASE, CAND, **kwargs)


def test_with_p_value_needs_a_number() -> None:
    with pytest.raises(TypeError, match="p_adjusted must be a number"):
        compare_samples(BASE, CAND).with_p_value("0.2")  # type: ignore[arg-type]


def test_compare_overflow_is_an_error() -> None:
    with pytest.raises(ValueError, match="overflow"):
        compare_samples([1e308, 1.7e308, 1.6e308], [1e-300, 2e-300, 3e-300])
