"""Tests for fastbench.stats.summary (summarize): every field against numpy/scipy computed
here on fixed fixtures, hand-checked outlier counts, shape and drift detection, interval
coverage simulated against known population values, and the input checks.
"""

from __future__ import annotations

import json
import math
from typing import Callable

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import optimize, stats as sps

from fastbench.stats import Summary, median_ci, summarize
from fastbench.stats.summary import _minor_mode_share

LOGNORMAL = np.random.default_rng(2024).lognormal(mean=np.log(1000.0), sigma=0.1, size=200)
# Hand-made: median 11, MAD 1, Q1 10.5, Q3 12 (IQR 1.5); 40 is beyond 3 IQR and has
# modified z 0.6745 * 29 = 19.6; 13 is within both rules.
SMALL = np.array([10.0, 11.0, 12.0, 11.0, 10.0, 12.0, 11.0, 13.0, 10.0, 11.0, 40.0])


def _expected_mean_ci(x: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    low, high = sps.t.interval(
        confidence, x.size - 1, loc=np.mean(x), scale=sps.sem(x)
    )
    return float(low), float(high)


def _expected_bc(x: NDArray[np.float64]) -> float:
    """Sarle's BC of the samples within Tukey's outer fences (3 IQR)."""
    q1, q3 = np.percentile(x, [25.0, 75.0])
    x = x[(x >= q1 - 3 * (q3 - q1)) & (x <= q3 + 3 * (q3 - q1))]
    n = x.size
    g = sps.skew(x, bias=False)
    k = sps.kurtosis(x, bias=False)
    return float((g**2 + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))))


# -- every field against numpy/scipy ------------------------------------------------------------
@pytest.mark.parametrize("x", [LOGNORMAL, SMALL], ids=["lognormal", "small"])
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_summarize_fields_match_numpy_and_scipy(
    x: NDArray[np.float64], confidence: float
) -> None:
    s = summarize(x, confidence)
    med = np.median(x)
    assert s.n == x.size
    assert s.mean == pytest.approx(np.mean(x), rel=1e-12)
    assert s.stdev == pytest.approx(np.std(x, ddof=1), rel=1e-12)
    assert s.median == med
    assert s.mad == pytest.approx(sps.median_abs_deviation(x), rel=1e-12)
    assert (s.min, s.max) == (x.min(), x.max())
    assert s.cv == pytest.approx(np.std(x, ddof=1) / np.mean(x), rel=1e-12)
    assert list(s.percentiles) == ["p5", "p25", "p50", "p75", "p95", "p99"]
    for key, value in s.percentiles.items():
        assert value == pytest.approx(np.percentile(x, float(key[1:])), rel=1e-12)
    assert s.confidence == confidence
    assert s.mean_ci == pytest.approx(_expected_mean_ci(x, confidence), rel=1e-12)
    assert s.median_ci == median_ci(x, confidence)
    assert s.median_ci_method == "order statistics"
    assert s.mdape == pytest.approx(100 * np.median(np.abs((x - med) / x)), rel=1e-12)
    assert s.bimodality_coefficient == pytest.approx(_expected_bc(x), rel=1e-9)
    tau, p = sps.kendalltau(np.arange(x.size), x)
    assert s.trend_tau == pytest.approx(tau, rel=1e-12)
    assert s.trend_p == pytest.approx(p, rel=1e-12)


def test_summarize_small_fixture_by_hand() -> None:
    s = summarize(SMALL)
    assert s.median == 11.0 and s.mad == 1.0
    assert s.percentiles["p25"] == 10.5 and s.percentiles["p75"] == 12.0
    o = s.outliers
    assert (o.tukey_mild, o.tukey_severe, o.modified_z, o.indices) == (0, 1, 1, (10,))
    # The outlier stays in every statistic.
    assert s.max == 40.0 and s.mean == pytest.approx(SMALL.sum() / 11)
    assert s.cv is not None and s.cv > 0.1
    assert not s.drift
    # The one severe outlier is counted above; it must not pass for a second mode.
    assert s.bimodality_coefficient is not None and s.bimodality_coefficient < 5 / 9
    assert not s.multimodal


def test_summarize_to_dict_is_json_ready() -> None:
    s = summarize(SMALL)
    d = s.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["mean_ci"] == list(s.mean_ci or ()) and isinstance(d["median_ci"], list)
    assert d["outliers"] == {
        "tukey_mild": 0, "tukey_severe": 1, "modified_z": 1, "indices": [10]
    }
    assert d["warnings"] == list(s.warnings)
    assert set(d) == {f.name for f in Summary.__dataclass_fields__.values()}
    one = summarize([5.0]).to_dict()
    assert one["mean_ci"] is None and one["median_ci"] is None
    assert one["bimodality_coefficient"] is None and one["trend_p"] is None


def test_summarize_is_finite_for_every_size() -> None:
    rng = np.random.default_rng(7)
    for n in range(1, 15):
        d = summarize(rng.lognormal(size=n)).to_dict()
        text = json.dumps(d, allow_nan=False)  # raises on NaN or inf
        assert text


# -- small samples -----------------------------------------------------------------------------
def test_summarize_single_sample() -> None:
    s = summarize([42.0])
    assert (s.n, s.mean, s.stdev, s.median, s.mad, s.cv, s.mdape) == (
        1, 42.0, 0.0, 42.0, 0.0, 0.0, 0.0
    )
    assert s.mean_ci is None and s.median_ci is None and s.median_ci_method is None
    assert s.bimodality_coefficient is None and s.trend_tau is None and s.trend_p is None
    assert not s.multimodal and not s.drift
    assert s.warnings == ("few samples: 1 (at least 10 recommended)",)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_summarize_falls_back_to_a_repeatable_bootstrap_below_six(n: int) -> None:
    x = LOGNORMAL[:n]
    s = summarize(x)
    assert median_ci(x) is None
    assert s.median_ci_method == "bootstrap" and s.median_ci is not None
    low, high = s.median_ci
    assert x.min() <= low <= s.median <= high <= x.max()
    assert summarize(x).median_ci == s.median_ci  # fixed seed
    assert s.mean_ci == pytest.approx(_expected_mean_ci(x, 0.95), rel=1e-12)


def test_summarize_uses_order_statistics_when_the_confidence_allows() -> None:
    # At 50% confidence three samples already have an order-statistic interval.
    s = summarize([3.0, 1.0, 2.0], confidence=0.5)
    assert s.median_ci_method == "order statistics" and s.median_ci == (1.0, 3.0)


def test_summarize_constant_samples() -> None:
    s = summarize([5.0] * 20)
    assert (s.stdev, s.mad, s.cv, s.mdape) == (0.0, 0.0, 0.0, 0.0)
    assert s.mean_ci == (5.0, 5.0) and s.median_ci == (5.0, 5.0)
    assert s.bimodality_coefficient is None and not s.multimodal
    assert (s.trend_tau, s.trend_p, s.drift) == (0.0, 1.0, False)
    assert s.outliers.indices == () and s.warnings == ()


def test_summarize_relative_measures_need_positive_values() -> None:
    s = summarize([-1.0, 0.0, 1.0, 2.0])
    assert s.cv is not None and s.cv == pytest.approx(np.std([-1, 0, 1, 2], ddof=1) / 0.5)
    assert s.mdape is None  # a zero sample: percentage error undefined
    assert summarize([-3.0, -1.0, 1.0]).cv is None  # mean 0
    assert summarize([-3.0, -2.0]).cv is None
    # A sample of 5e-324 beside 0.004: |x - median| / x is 4e321 %, beyond float64; it was
    # an overflow error for the whole summary (found by the results-file fuzz test).
    tiny = summarize([5e-324, 0.004])
    assert tiny.mdape is None and tiny.median == pytest.approx(0.002)


def test_summarize_near_identical_large_values_do_not_warn() -> None:
    # Spread 1e-15 of the magnitude: scipy's moments warn about cancellation on such raw
    # data; summarize centres on the median first (pytest turns warnings into errors).
    x = 1e6 + np.array([0.0, 1e-9, 2e-9, 0.0, 1e-9, 3e-9, 0.0, 1e-9, 2e-9, 1e-9])
    s = summarize(x)
    assert s.bimodality_coefficient is not None and math.isfinite(s.bimodality_coefficient)


def test_summarize_overflow_is_an_error_not_inf() -> None:
    with pytest.raises(ValueError, match="overflow"):
        summarize([1e308, 1.5e308, 1.7e308])
    # Large but representable: fourth moments would overflow without rescaling.
    s = summarize(np.random.default_rng(2).normal(0, 1, 30) * 1e100)
    assert s.bimodality_coefficient is not None and math.isfinite(s.bimodality_coefficient)


# -- outliers ----------------------------------------------------------------------------------
def test_outlier_counts_on_constructed_array() -> None:
    # 1..16 plus -15 and 30 (mild) and -40 and 60 (severe). By hand: Q1 = 3.75, Q3 = 13.25,
    # IQR = 9.5; inner fences -10.5 / 27.5, outer -24.75 / 41.75. Median 8.5, MAD 5: the
    # modified z threshold is |x - 8.5| > 3.5 * 5 / 0.6745 = 25.9, so only -40 and 60.
    core = list(np.arange(1.0, 17.0))
    x = np.array(core[:5] + [30.0] + core[5:9] + [-40.0] + core[9:] + [-15.0, 60.0])
    s = summarize(x)
    assert (s.percentiles["p25"], s.percentiles["p75"]) == (3.75, 13.25)
    assert (s.median, s.mad) == (8.5, 5.0)
    o = s.outliers
    assert (o.tukey_mild, o.tukey_severe, o.modified_z) == (2, 2, 2)
    assert o.indices == tuple(int(i) for i in np.flatnonzero(np.isin(x, [30, -40, -15, 60])))
    assert s.n == 20 and s.min == -40.0 and s.max == 60.0  # kept
    # Two on each side: without them the median is still 8.5, so they are only counted.
    assert not any("outlier" in w for w in s.warnings)


def test_outliers_that_move_the_median_are_a_warning() -> None:
    # 1..16 and four values of 100 (20% of the samples, all above Q3 + 3 IQR = 47.5): the
    # median is (10 + 11) / 2 = 10.5 with them and 8.5 without, a 19% shift.
    x = np.concatenate([np.arange(1.0, 17.0), np.full(4, 100.0)])
    s = summarize(x)
    assert s.outliers.tukey_severe == 4 and s.median == 10.5
    assert any("4 outlier(s) of 20 samples: 0 mild and 4 severe" in w for w in s.warnings)


def test_interrupted_tail_is_counted_not_warned() -> None:
    # Timing samples as a VM gives them: 90% near 1000 ns, 10% hit by an interrupt
    # (+15%). cv and the mean rise; the median stays in the main mode.
    rng = np.random.default_rng(8)
    x = rng.normal(1000.0, 2.0, 2000)
    hit = rng.random(2000) < 0.1
    x[hit] += 150.0
    s = summarize(x)
    assert len(s.outliers.indices) >= hit.sum() * 0.9
    assert abs(s.median - 1000.0) < 2.0
    assert s.warnings == ()


def test_modified_z_with_zero_mad_flags_every_value_off_the_median() -> None:
    x = np.array([7.0] * 12 + [7.5, 9.0])
    s = summarize(x)
    assert s.mad == 0.0
    assert s.outliers.modified_z == 2 and s.outliers.indices == (12, 13)


# -- shape and drift ---------------------------------------------------------------------------
def test_bimodal_mixture_is_flagged_and_normal_is_not() -> None:
    rng = np.random.default_rng(11)
    mixture = np.concatenate([rng.normal(100, 1, 150), rng.normal(110, 1, 150)])
    rng.shuffle(mixture)
    s = summarize(mixture)
    assert s.bimodality_coefficient is not None and s.bimodality_coefficient > 0.8
    assert s.multimodal
    assert any("multimodal" in w for w in s.warnings)

    normal = summarize(rng.normal(100, 1, 300))
    assert normal.bimodality_coefficient is not None
    assert normal.bimodality_coefficient < 5 / 9 and not normal.multimodal
    assert not any("multimodal" in w for w in normal.warnings)


@pytest.mark.parametrize(("share", "flagged"), [(0.15, False), (0.3, True)])
def test_minor_mode_must_hold_a_fifth(share: float, flagged: bool) -> None:
    # A mode at 118 beside a wide one at 100: BC > 5/9 either way (both inside the outer
    # fences), but at 15% the median stays inside the main mode.
    rng = np.random.default_rng(4)
    k = int(share * 1000)
    x = rng.permutation(np.concatenate([rng.normal(100, 4, 1000 - k), rng.normal(118, 1, k)]))
    s = summarize(x)
    assert s.bimodality_coefficient is not None and s.bimodality_coefficient > 5 / 9
    assert s.multimodal is flagged


def test_minor_mode_share_is_otsus_split() -> None:
    # Two point masses: the split falls between them whatever their sizes.
    for low, high in ((3, 17), (10, 10), (17, 3)):
        x = np.array([1.0] * low + [9.0] * high)
        assert _minor_mode_share(x) == min(low, high) / (low + high)
    assert _minor_mode_share(np.full(5, 2.0)) == 0.0


def test_multimodal_needs_twenty_samples() -> None:
    x = np.array([1.0, 5.0] * 10)  # two values only: as bimodal as it gets
    s19, s20 = summarize(x[:19]), summarize(x)
    assert s19.bimodality_coefficient is not None and s19.bimodality_coefficient > 5 / 9
    assert not s19.multimodal
    assert s20.bimodality_coefficient is not None and s20.bimodality_coefficient > 5 / 9
    assert s20.multimodal


def test_linear_drift_is_flagged_and_iid_is_not() -> None:
    rng = np.random.default_rng(5)
    n = 100
    trended = 1000.0 + 0.5 * np.arange(n) + rng.normal(0, 5, n)
    s = summarize(trended)
    assert s.drift and s.trend_tau is not None and s.trend_tau > 0.3
    assert s.trend_p is not None and s.trend_p < 0.01
    assert any("drift up" in w for w in s.warnings)

    down = summarize(trended[::-1])
    assert down.drift and any("drift down" in w for w in down.warnings)

    iid = summarize(rng.normal(1000, 5, n))
    assert not iid.drift and not any("drift" in w for w in iid.warnings)


def test_small_but_significant_trend_is_not_drift() -> None:
    # A long run with a slight slope: significant, but |tau| < 0.3.
    rng = np.random.default_rng(3)
    n = 3000
    x = 1000.0 + 0.0002 * np.arange(n) + rng.normal(0, 1, n)  # 0.6 sigma over the run
    s = summarize(x)
    assert s.trend_p is not None and s.trend_p < 0.01
    assert s.trend_tau is not None and abs(s.trend_tau) < 0.3
    assert not s.drift


def test_trend_needs_eight_samples() -> None:
    assert summarize(np.arange(7.0)).trend_p is None
    s = summarize(np.arange(8.0))
    assert s.trend_tau == pytest.approx(1.0)
    assert s.trend_p is not None and s.trend_p < 0.01 and s.drift


# -- warnings ----------------------------------------------------------------------------------
def test_warning_sentences() -> None:
    # Normal quantiles in shuffled order: no value beyond Tukey's fences (max z = 2.33 <
    # 2.70) or the modified z cut, BC near 1/3, cv 1%, no trend.
    z = sps.norm.ppf((np.arange(50) + 0.5) / 50)
    quiet = summarize(np.random.default_rng(1).permutation(1000 + 10 * z))
    assert quiet.warnings == ()
    noisy = summarize(np.random.default_rng(1).lognormal(0, 0.5, 50))
    assert noisy.cv is not None
    assert any(f"{noisy.cv:.1%}" in w and "high variation" in w for w in noisy.warnings)
    few = summarize([1.0, 1.01, 0.99])
    assert "few samples: 3 (at least 10 recommended)" in few.warnings


# -- coverage against known truth --------------------------------------------------------------
def _bimodal_population(rng: np.random.Generator, shape: tuple[int, int]) -> NDArray[np.float64]:
    mode = rng.random(shape) < 0.6
    return np.where(mode, rng.normal(10.0, 1.0, shape), rng.normal(16.0, 1.5, shape))


def _bimodal_median() -> float:
    def cdf(x: float) -> float:
        return float(0.6 * sps.norm.cdf(x, 10.0, 1.0) + 0.4 * sps.norm.cdf(x, 16.0, 1.5) - 0.5)

    return float(optimize.brentq(cdf, 5.0, 20.0, xtol=1e-12))


Draw = Callable[[np.random.Generator, tuple[int, int]], NDArray[np.float64]]
POPULATIONS: dict[str, tuple[Draw, Callable[[], float]]] = {
    "normal": (lambda rng, shape: rng.normal(100.0, 10.0, shape), lambda: 100.0),
    "lognormal": (lambda rng, shape: rng.lognormal(np.log(50.0), 0.5, shape), lambda: 50.0),
    "bimodal": (_bimodal_population, _bimodal_median),
}


@pytest.mark.parametrize("population", list(POPULATIONS))
def test_median_ci_covers_population_median(population: str) -> None:
    draw, true_median = POPULATIONS[population]
    n, trials = 30, 4000
    samples = np.sort(draw(np.random.default_rng(99), (trials, n)), axis=1)
    # The interval is a pair of order statistics: find which, then check summarize uses it.
    low_rank, high_rank = (int(v) for v in median_ci(np.arange(n, dtype=float)) or (0, 0))
    assert (low_rank, high_rank) == (9, 20)  # x_(10), x_(21) at n = 30
    for row in samples[:40]:
        s = summarize(np.random.default_rng(0).permutation(row))
        assert s.median_ci == (row[low_rank], row[high_rank])
        assert s.median_ci_method == "order statistics"
    m = true_median()
    covered = (samples[:, low_rank] <= m) & (m <= samples[:, high_rank])
    assert 0.93 <= covered.mean() <= 0.97


def test_mean_ci_covers_normal_mean() -> None:
    n, trials, mu = 30, 4000, 100.0
    x = np.random.default_rng(123).normal(mu, 10.0, (trials, n))
    mean = x.mean(axis=1)
    half = sps.t.ppf(0.975, n - 1) * x.std(axis=1, ddof=1) / np.sqrt(n)
    for i in range(40):
        ci = summarize(x[i]).mean_ci
        assert ci is not None
        assert ci == pytest.approx((mean[i] - half[i], mean[i] + half[i]), rel=1e-12)
    covered = (mean - half <= mu) & (mu <= mean + half)
    assert 0.93 <= covered.mean() <= 0.97


# -- input checks ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ([], "empty"),
        (np.ones((3, 2)), "one-dimensional"),
        (5.0, "one-dimensional"),
        ([1.0, float("nan")], "non-finite"),
        ([1.0, float("-inf")], "non-finite"),
    ],
)
def test_summarize_rejects_samples(bad: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        summarize(bad)


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, float("nan")])
def test_summarize_rejects_confidence(confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        summarize(LOGNORMAL, confidence)


@pytest.mark.parametrize("confidence", ["0.95", None, False])
def test_summarize_confidence_must_be_a_number(confidence: object) -> None:
    with pytest.raises(TypeError, match="confidence must be a number"):
        summarize(LOGNORMAL, confidence)  # type: ignore[arg-type]


@pytest.mark.parametrize(("bad", "what"), [
    ([1 + 2j, 3 + 0j, 2 + 5j], "complex"),  # would have kept the real part alone
    (np.array([1.0, 2.0, 3.0]) * (1 + 1j), "complex"),
    (["1", "2", "3"], "str"),  # would have been parsed as numbers
    ([b"1", b"2"], "bytes"),
    ([True, False, True], "bool"),
    ([1.0, None, 2.0], "NoneType"),
    ([1.0, "2", 3.0], "str"),
])
def test_summarize_rejects_values_that_are_not_real_numbers(bad: object, what: str) -> None:
    with pytest.raises(TypeError, match=f"^samples must hold real numbers, got {what} values$"):
        summarize(bad)


def test_summarize_takes_every_real_number_type() -> None:
    # ints of any size, numpy float32 and Python objects that are real numbers.
    expected = summarize([1.0, 2.0, 4.0]).to_dict()
    assert summarize([1, 2, 4]).to_dict() == expected
    assert summarize(np.array([1, 2, 4], dtype=np.float32)).to_dict() == expected
    assert summarize(np.array([1, 2, 4], dtype=np.uint8)).to_dict() == expected
    assert summarize(np.array([1.0, 2, 4], dtype=object)).to_dict() == expected
    assert summarize([1, 2**70, 4]).median == 4.0
