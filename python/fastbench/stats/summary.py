"""The summary of one sample: location, spread, intervals, outliers, shape and drift
(:func:`summarize`, :class:`Summary`, :class:`Outliers`), with the sentences that say what to
distrust. Outliers are counted and kept; nothing here times, prints or drops a sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_fraction
from ..report.warnings import WarningRecord
from ._scipy import sps
from .plain import plain, require_finite
from .robust import median_mad
from .samples import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, FEW_SAMPLES, as_samples,
                      bootstrap_medians, median_ci, percentile_interval)

# The percentiles a Summary gives (Measurement.percentiles_ns gives the same ones).
PERCENTILES = (5, 25, 50, 75, 95, 99)

# Summary thresholds (documented on Summary).
_HIGH_CV = 0.1
_OUTLIER_SHARE = 0.05  # warn when more than 5% of the samples (and more than one) are outliers
_OUTLIER_MEDIAN_SHIFT = 0.01  # ... and leaving them out would move the median by more than 1%
_BC_UNIFORM = 5.0 / 9.0
_MINOR_MODE_SHARE = 0.2  # a second mode matters to the median once it holds a fifth
_MULTIMODAL_MIN_N = 20  # the sample BC is too noisy below this
_TREND_MIN_N = 8
_DRIFT_P = 0.01
_DRIFT_TAU = 0.3


@dataclass(frozen=True)
class Outliers:
    """Samples flagged as outliers. Counted and reported, never removed from any statistic.

    Attributes
    ----------
    tukey_mild : int
        Samples beyond Tukey's inner fences but within the outer ones: below
        ``Q1 - 1.5 IQR`` or above ``Q3 + 1.5 IQR``, and not beyond ``3 IQR``
        (Tukey 1977, *Exploratory Data Analysis*). Quartiles are numpy's linear percentiles.
    tukey_severe : int
        Samples below ``Q1 - 3 IQR`` or above ``Q3 + 3 IQR``. When IQR is 0 (a quantised
        clock, say) every sample off the quartiles is severe: that is the rule, not a bug.
    modified_z : int
        Samples with ``|0.6745 (x - median) / MAD| > 3.5`` (Iglewicz & Hoaglin 1993, *How to
        Detect and Handle Outliers*), MAD unscaled. When MAD is 0 (more than half the samples
        equal the median) every sample off the median has an infinite score and is counted.
    indices : tuple of int
        Positions (in input order, ascending) of the samples flagged by any rule above.
    """

    tukey_mild: int
    tukey_severe: int
    modified_z: int
    indices: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (indices as a list)."""
        result: dict[str, Any] = plain(self)
        return result


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one sample, with its uncertainty and what to distrust.

    All location and spread values are in the unit of the samples (ns for fastbench timings).

    Attributes
    ----------
    n : int
        Number of samples.
    mean, stdev : float
        Arithmetic mean; standard deviation with ddof=1 (0.0 for a single sample).
    median, mad : float
        Median; unscaled median absolute deviation ``median(|x - median|)``.
    min, max : float
        Extremes.
    cv : float or None
        Coefficient of variation ``stdev / mean`` (a fraction, not %). None when the mean is
        not positive, where a relative spread means nothing.
    percentiles : dict of str to float
        ``p5 p25 p50 p75 p95 p99``, numpy's default linear interpolation.
    confidence : float
        Coverage of the two intervals below.
    mean_ci : (float, float) or None
        Student t interval ``mean +- t(1 - alpha/2, n - 1) stdev / sqrt(n)``; None for n < 2.
    median_ci : (float, float) or None
        Distribution-free order-statistic interval (:func:`median_ci`) when it exists;
        otherwise, for n >= 2, a percentile bootstrap (2000 resamples, fixed-seed numpy
        Generator, so repeatable) that undercovers at such small n; None for n = 1.
    median_ci_method : str or None
        ``"order statistics"``, ``"bootstrap"`` or None, matching ``median_ci``.
    mdape : float or None
        Median absolute percentage error from the median, ``100 median(|x - median| / x)``,
        in %, as nanobench's ``err%`` (``Result::medianAbsolutePercentError``). None unless
        every sample is positive, and where it exceeds float64 (a sample near 1e-320 beside
        normal ones).
    outliers : Outliers
        Counts by Tukey's fences and the modified z-score; nothing is dropped.
    bimodality_coefficient : float or None
        Sarle's ``BC = (g^2 + 1) / (k + 3 (n-1)^2 / ((n-2)(n-3)))`` with bias-corrected sample
        skewness g and excess kurtosis k (``scipy.stats.skew/kurtosis(bias=False)``); see
        SAS/STAT User's Guide (PROC CLUSTER) and Pfister et al. 2013, Front. Psychol. 4:700.
        Computed on the samples within Tukey's outer fences (3 IQR), so that severe
        outliers, counted in ``outliers``, do not pass for a second mode. None for fewer
        than 4 such samples or when they are all equal (skewness undefined).
    multimodal : bool
        ``BC > 5/9`` (about 0.555), n >= 20, and the smaller side of the best two-group
        split of those samples (Otsu's threshold: the split of the sorted values with the
        largest between-group variance) holds at least 20% of them. 5/9 is the BC of the
        uniform distribution: unimodal symmetric distributions lie below it, and mixtures
        of separated modes above it. BC also grows with skewness, so a strongly skewed
        sample can pass 5/9 too, and at small n the sample BC is noisy: read this as a hint
        to look at a histogram. A minor mode under 20% leaves the median inside the main
        mode; short timing samples have one (those a timer interrupt or a VM exit hit), so
        it is not reported.
    trend_tau, trend_p : float or None
        Mann-Kendall trend test: Kendall's tau-b between sample order and value, with its
        two-sided p-value from ``scipy.stats.kendalltau(range(n), x)`` (Mann 1945,
        Econometrica 13:245). When all samples are equal, tau = 0 and p = 1 (every ordering
        gives the same statistic). None for n < 8.
    drift : bool
        ``trend_p < 0.01`` and ``|trend_tau| >= 0.3``: a trend both significant and large
        (warm-up, thermal throttling, a competing process). The tau floor keeps long runs
        with a tiny, harmless slope from being flagged.
    warnings : tuple of WarningRecord
        One sentence each for: high variation (the spread of the bulk, 1.4826 MAD / median,
        above 10%; cv is quoted beside it), few samples (n < 10), outliers (when more than
        one, more than 5% of the samples, and leaving them out would move the median by
        more than 1%: otherwise they are only counted), multimodality, drift. The rules
        judge the median, the figure fastbench reports: a tail of interrupted samples
        inflates cv and the mean but not the median, and on a VM every run has one.
    """

    n: int
    mean: float
    stdev: float
    median: float
    mad: float
    min: float
    max: float
    cv: float | None
    percentiles: dict[str, float]
    confidence: float
    mean_ci: tuple[float, float] | None
    median_ci: tuple[float, float] | None
    median_ci_method: str | None
    mdape: float | None
    outliers: Outliers
    bimodality_coefficient: float | None
    multimodal: bool
    trend_tau: float | None
    trend_p: float | None
    drift: bool
    warnings: tuple[WarningRecord, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: tuples become lists, None is kept."""
        result: dict[str, Any] = plain(self)
        return result


def mean_ci(
    mean: float, stdev: float, n: int, confidence: float
) -> tuple[float, float] | None:
    """Student t interval of the mean (Student 1908); None below two samples."""
    if n < 2:
        return None
    half = float(sps().t.ppf(0.5 + confidence / 2.0, n - 1)) * stdev / math.sqrt(n)
    return mean - half, mean + half


def _outliers(x: NDArray[np.float64], median: float, mad: float) -> Outliers:
    q1, q3 = np.percentile(x, [25.0, 75.0])
    iqr = q3 - q1
    beyond_inner = (x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)
    severe = (x < q1 - 3.0 * iqr) | (x > q3 + 3.0 * iqr)
    mild = beyond_inner & ~severe
    # |0.6745 (x - median) / MAD| > 3.5, multiplied out so MAD = 0 needs no division.
    modified_z = 0.6745 * np.abs(x - median) > 3.5 * mad
    flagged = np.flatnonzero(beyond_inner | modified_z)
    return Outliers(
        tukey_mild=int(np.count_nonzero(mild)),
        tukey_severe=int(np.count_nonzero(severe)),
        modified_z=int(np.count_nonzero(modified_z)),
        indices=tuple(int(i) for i in flagged),
    )


def _bimodality_coefficient(x: NDArray[np.float64], median: float) -> float | None:
    n = x.size
    if n < 4 or np.ptp(x) == 0.0:
        return None
    # Skewness and kurtosis depend on neither location nor scale. Centring on the median
    # removes a large common offset before scipy forms moments, where it would otherwise
    # warn about cancellation for large values with a small spread (scipy gh-15905);
    # scaling by a power of two (exact) to |d| < 1 keeps fourth powers from overflowing
    # or underflowing.
    d = x - median
    d = np.ldexp(d, -math.frexp(float(np.max(np.abs(d))))[1])
    g = float(sps().skew(d, bias=False))
    k = float(sps().kurtosis(d, bias=False))
    # The denominator is at least (n-1)(n+1)/((n-2)(n-3)) > 0 since m4 >= m2^2.
    return (g * g + 1.0) / (k + 3.0 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


def _minor_mode_share(x: NDArray[np.float64]) -> float:
    """Share of the smaller group in Otsu's two-group split of ``x`` (0 for < 2 values)."""
    v = np.sort(x)
    n = v.size
    if n < 2 or v[0] == v[-1]:
        return 0.0
    k = np.arange(1, n)  # sizes of the lower group
    lower_sum = np.cumsum(v)[:-1]
    mean_lo = lower_sum / k
    mean_hi = (v.sum() - lower_sum) / (n - k)
    between = k * (n - k) * (mean_hi - mean_lo) ** 2
    best = int(k[int(np.argmax(between))])
    return min(best, n - best) / n


def _median_shift(x: NDArray[np.float64], median: float, outliers: Outliers) -> float:
    """How far the median moves, relative to itself, when the flagged outliers are left out."""
    keep = np.ones(x.size, dtype=bool)
    keep[list(outliers.indices)] = False
    if not keep.any() or median == 0.0:
        return math.inf
    return abs(float(np.median(x[keep])) - median) / abs(median)


def _trend(x: NDArray[np.float64]) -> tuple[float | None, float | None]:
    n = x.size
    if n < _TREND_MIN_N:
        return None, None
    if np.ptp(x) == 0.0:
        # Kendall's tau is 0/0 here; the Mann-Kendall statistic S is 0 under every
        # permutation, so the exact p-value is 1.
        return 0.0, 1.0
    res = sps().kendalltau(np.arange(n), x)
    return float(res.statistic), float(res.pvalue)


def summarize(samples: Any, confidence: float = 0.95) -> Summary:
    """Describe one sample: location, spread, intervals, outliers, shape and drift.

    Parameters
    ----------
    samples : array_like
        One-dimensional finite values, typically times per call in ns.
    confidence : float
        Coverage of the mean and median intervals, in (0, 1).

    Returns
    -------
    Summary
        See :class:`Summary` for each field, its method and its reference. Values are in the
        unit of ``samples``; ``cv`` is a fraction and ``mdape`` a percentage.

    Raises
    ------
    TypeError
        If ``confidence`` is not a number.
    ValueError
        If ``samples`` is empty, not one-dimensional or not finite, if ``confidence`` is not
        in (0, 1), or if the values are so large that float64 arithmetic overflows.
    """
    check_fraction("confidence", confidence)
    x = as_samples(samples)
    # Finite values near 1e308 can overflow sums and squares; the result is checked for
    # inf and NaN at the end and rejected with a ValueError, so numpy need not warn here.
    with np.errstate(over="ignore", invalid="ignore"):
        result = _summarize(x, confidence)
    require_finite(result.to_dict(), "summarize")
    return result


def _summarize(x: NDArray[np.float64], confidence: float) -> Summary:
    n = int(x.size)
    mean = float(np.mean(x))
    stdev = float(np.std(x, ddof=1)) if n > 1 else 0.0
    median, mad = median_mad(x)
    cv = stdev / mean if mean > 0.0 else None
    pct = np.percentile(x, PERCENTILES)
    percentiles = {f"p{p}": float(v) for p, v in zip(PERCENTILES, pct)}

    med_ci = median_ci(x, confidence)
    method: str | None = "order statistics" if med_ci is not None else None
    if med_ci is None and n >= 2:
        rng = np.random.default_rng(BOOTSTRAP_SEED)
        boot = bootstrap_medians(x, rng, BOOTSTRAP_RESAMPLES)
        med_ci, method = percentile_interval(boot, confidence), "bootstrap"

    mdape = None
    if np.all(x > 0.0):
        with np.errstate(over="ignore"):  # a sample near 5e-324 beside normal ones
            ape = float(100.0 * np.median(np.abs((x - median) / x)))
        mdape = ape if math.isfinite(ape) else None
    outliers = _outliers(x, median, mad)
    # Severe outliers are reported above; left in, their skew alone lifts BC past 5/9 and a
    # unimodal sample with one stray value would read as multimodal.
    q1, q3 = np.percentile(x, [25.0, 75.0])
    core = x[(x >= q1 - 3.0 * (q3 - q1)) & (x <= q3 + 3.0 * (q3 - q1))]
    bc = _bimodality_coefficient(core, float(np.median(core)))
    multimodal = (
        bc is not None
        and bc > _BC_UNIFORM
        and n >= _MULTIMODAL_MIN_N
        and _minor_mode_share(core) >= _MINOR_MODE_SHARE
    )
    tau, trend_p = _trend(x)
    drift = (
        tau is not None
        and trend_p is not None
        and trend_p < _DRIFT_P
        and abs(tau) >= _DRIFT_TAU
    )

    notes: list[WarningRecord] = []
    robust_cv = 1.4826 * mad / abs(median) if median != 0.0 else None
    if cv is not None and robust_cv is not None and robust_cv > _HIGH_CV:
        notes.append(WarningRecord(
            f"high variation: the bulk of the samples spreads {robust_cv:.1%} of the median "
            f"(1.4826 MAD; the coefficient of variation is {cv:.1%}); "
            "the machine may be busy or the benchmark unstable", "high-variation"))
    if n < FEW_SAMPLES:
        notes.append(WarningRecord(f"few samples: {n} (at least {FEW_SAMPLES} recommended)",
                                   "few-samples"))
    flagged = len(outliers.indices)
    # Interrupted samples are normal in timing data and move no median: warn only when
    # outliers are a notable share of the samples and the median depends on them (they
    # are always counted).
    if (
        flagged > max(1.0, _OUTLIER_SHARE * n)
        and _median_shift(x, median, outliers) > _OUTLIER_MEDIAN_SHIFT
    ):
        notes.append(WarningRecord(
            f"{flagged} outlier(s) of {n} samples: {outliers.tukey_mild} mild and "
            f"{outliers.tukey_severe} severe by Tukey's fences, {outliers.modified_z} by the "
            "modified z-score; they are kept in every statistic", "outliers"))
    if multimodal and bc is not None:
        notes.append(WarningRecord(
            f"the distribution looks multimodal (bimodality coefficient {bc:.2f} > 0.555): "
            "the mean and median may describe neither mode", "multimodal"))
    if drift and tau is not None and trend_p is not None:
        direction = "up" if tau > 0 else "down"
        notes.append(WarningRecord(
            f"the samples drift {direction} over the run (Mann-Kendall tau = {tau:+.2f}, "
            f"p = {trend_p:.2g}): warm-up, throttling or interference", "drift"))

    return Summary(
        n=n,
        mean=mean,
        stdev=stdev,
        median=median,
        mad=mad,
        min=float(np.min(x)),
        max=float(np.max(x)),
        cv=cv,
        percentiles=percentiles,
        confidence=float(confidence),
        mean_ci=mean_ci(mean, stdev, n, confidence),
        median_ci=med_ci,
        median_ci_method=method,
        mdape=mdape,
        outliers=outliers,
        bimodality_coefficient=bc,
        multimodal=bool(multimodal),
        trend_tau=tau,
        trend_p=trend_p,
        drift=bool(drift),
        warnings=tuple(notes),
    )
