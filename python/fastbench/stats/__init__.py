"""Statistics on sample arrays: pure functions, numpy/scipy based, no measuring here.

Owns the summary of one sample (:func:`summarize`), sample-size planning
(:func:`required_samples`, :func:`samples_for_power`), the comparison of two samples
(:func:`compare_samples`) and multiple-testing corrections (:func:`adjust_pvalues`).
Nothing here times, prints or drops a sample: outliers are counted and kept.

Every function validates its input (non-empty, one-dimensional, finite) and raises
ValueError with the reason.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from numpy.typing import NDArray


@functools.lru_cache(maxsize=None)
def _sps() -> Any:  # the scipy.stats module (untyped)
    """scipy.stats, imported on first use: it takes most of a second to import, which
    commands that never reach a statistic (``fastbench stat``, ``info``) should not pay."""
    from scipy import stats

    return stats


# Fewer samples per side (or pairs) than this and compare_samples never calls a difference
# significant: the sign-test interval of the median does not exist below 6 at 95% (see
# median_ci), and a bootstrap of 5 values covers far less often than it claims.
MIN_SAMPLES = 6

# Below this many samples, results carry a "few samples" warning (pyperf warns likewise).
_FEW_SAMPLES = 10

# Percentile bootstrap settings. A fixed seed makes every result reproducible: the same
# input always gives the same interval. 2000 resamples keep the Monte Carlo error of a
# 2.5% quantile small (Efron & Tibshirani 1993, ch. 19, suggest >= 1000 for percentiles).
_BOOTSTRAP_RESAMPLES = 2000
_BOOTSTRAP_SEED = 20240917
# Resampled values materialised at once; bounds memory for long runs (8 bytes each).
_BOOTSTRAP_CHUNK_VALUES = 2_000_000

_PERCENTILES = (5, 25, 50, 75, 95, 99)

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
_UNEQUAL_RATIO = 4.0

_FASTER = "faster"
_SLOWER = "slower"
_NO_DIFFERENCE = "no significant difference"


def as_samples(samples: Any, *, name: str = "samples") -> NDArray[np.float64]:
    """Return ``samples`` as a 1-D float64 array after checking it.

    Raises
    ------
    ValueError
        If the input is empty, not one-dimensional, or holds NaN or infinity.
    """
    arr = np.asarray(samples, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} holds {bad} non-finite value(s) (NaN or inf)")
    return arr


def _check_confidence(confidence: float) -> None:
    if not (0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def median_ci(samples: Any, confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median, from order statistics.

    The interval is ``[x_(k), x_(n-k+1)]`` with the largest ``k`` whose binomial(n, 1/2)
    coverage ``1 - 2 P(B <= k-1)`` is at least ``confidence`` (so it is conservative).

    Parameters
    ----------
    samples : array_like
        One-dimensional finite values.
    confidence : float
        Coverage in (0, 1).

    Returns
    -------
    (low, high) or None
        None when there are too few samples for any interval at this confidence
        (fewer than 6 at 95%).
    """
    _check_confidence(confidence)
    x = np.sort(as_samples(samples))
    n = x.size
    alpha = 1.0 - confidence
    # The largest k with P(B <= k-1) <= alpha/2. ppf gives the smallest k with
    # P(B <= k) >= alpha/2; when that holds with equality, k+1 still qualifies.
    k = int(_sps().binom.ppf(alpha / 2.0, n, 0.5))
    if _sps().binom.cdf(k, n, 0.5) <= alpha / 2.0:
        k += 1
    if k < 1:
        return None
    return float(x[k - 1]), float(x[n - k])


# -- plain data --------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """JSON-ready copy: dataclasses -> dicts, tuples -> lists, numpy scalars -> Python."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _require_finite(data: Any, what: str) -> None:
    """Raise if any number in ``data`` (output of _plain) is NaN or infinite.

    Finite inputs can still overflow float64 on the way (a sum near 1e308); a result
    holding inf would be a wrong number, so the caller gets an exception instead.
    """
    if isinstance(data, dict):
        for v in data.values():
            _require_finite(v, what)
    elif isinstance(data, list):
        for v in data:
            _require_finite(v, what)
    elif isinstance(data, float) and not math.isfinite(data):
        raise ValueError(
            f"{what}: the samples overflow float64 arithmetic (magnitudes near 1e308); "
            "rescale them"
        )


def _finite_scalar(value: Any, name: str) -> float:
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


# -- bootstrap ---------------------------------------------------------------------------------
def _bootstrap_medians(
    x: NDArray[np.float64], rng: np.random.Generator, resamples: int
) -> NDArray[np.float64]:
    """Medians of ``resamples`` resamples of ``x`` with replacement (chunked for memory)."""
    n = x.size
    out = np.empty(resamples, dtype=np.float64)
    rows = max(1, _BOOTSTRAP_CHUNK_VALUES // n)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = np.median(x[idx], axis=1)
    return out


def _percentile_interval(
    values: NDArray[np.float64], confidence: float
) -> tuple[float, float]:
    alpha = 1.0 - confidence
    low, high = np.percentile(values, [50.0 * alpha, 100.0 - 50.0 * alpha])
    return float(low), float(high)


# -- summary -----------------------------------------------------------------------------------
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
        result: dict[str, Any] = _plain(self)
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
        every sample is positive.
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
    warnings : tuple of str
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
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: tuples become lists, None is kept."""
        result: dict[str, Any] = _plain(self)
        return result


def _mean_ci(
    mean: float, stdev: float, n: int, confidence: float
) -> tuple[float, float] | None:
    """Student t interval of the mean (Student 1908); None below two samples."""
    if n < 2:
        return None
    half = float(_sps().t.ppf(0.5 + confidence / 2.0, n - 1)) * stdev / math.sqrt(n)
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
    g = float(_sps().skew(d, bias=False))
    k = float(_sps().kurtosis(d, bias=False))
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
    res = _sps().kendalltau(np.arange(n), x)
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
    ValueError
        If ``samples`` is empty, not one-dimensional or not finite, if ``confidence`` is not
        in (0, 1), or if the values are so large that float64 arithmetic overflows.
    """
    _check_confidence(confidence)
    x = as_samples(samples)
    # Finite values near 1e308 can overflow sums and squares; the result is checked for
    # inf and NaN at the end and rejected with a ValueError, so numpy need not warn here.
    with np.errstate(over="ignore", invalid="ignore"):
        result = _summarize(x, confidence)
    _require_finite(result.to_dict(), "summarize")
    return result


def _summarize(x: NDArray[np.float64], confidence: float) -> Summary:
    n = int(x.size)
    mean = float(np.mean(x))
    stdev = float(np.std(x, ddof=1)) if n > 1 else 0.0
    median = float(np.median(x))
    mad = float(np.median(np.abs(x - median)))
    cv = stdev / mean if mean > 0.0 else None
    pct = np.percentile(x, _PERCENTILES)
    percentiles = {f"p{p}": float(v) for p, v in zip(_PERCENTILES, pct)}

    med_ci = median_ci(x, confidence)
    method: str | None = "order statistics" if med_ci is not None else None
    if med_ci is None and n >= 2:
        rng = np.random.default_rng(_BOOTSTRAP_SEED)
        boot = _bootstrap_medians(x, rng, _BOOTSTRAP_RESAMPLES)
        med_ci, method = _percentile_interval(boot, confidence), "bootstrap"

    mdape = float(100.0 * np.median(np.abs((x - median) / x))) if np.all(x > 0.0) else None
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

    notes: list[str] = []
    robust_cv = 1.4826 * mad / abs(median) if median != 0.0 else None
    if cv is not None and robust_cv is not None and robust_cv > _HIGH_CV:
        notes.append(
            f"high variation: the bulk of the samples spreads {robust_cv:.1%} of the median "
            f"(1.4826 MAD; the coefficient of variation is {cv:.1%}); "
            "the machine may be busy or the benchmark unstable"
        )
    if n < _FEW_SAMPLES:
        notes.append(f"few samples: {n} (at least {_FEW_SAMPLES} recommended)")
    flagged = len(outliers.indices)
    # Interrupted samples are normal in timing data and move no median: warn only when
    # outliers are a notable share of the samples and the median depends on them (they
    # are always counted).
    if (
        flagged > max(1.0, _OUTLIER_SHARE * n)
        and _median_shift(x, median, outliers) > _OUTLIER_MEDIAN_SHIFT
    ):
        notes.append(
            f"{flagged} outlier(s) of {n} samples: {outliers.tukey_mild} mild and "
            f"{outliers.tukey_severe} severe by Tukey's fences, {outliers.modified_z} by the "
            "modified z-score; they are kept in every statistic"
        )
    if multimodal and bc is not None:
        notes.append(
            f"the distribution looks multimodal (bimodality coefficient {bc:.2f} > 0.555): "
            "the mean and median may describe neither mode"
        )
    if drift and tau is not None and trend_p is not None:
        direction = "up" if tau > 0 else "down"
        notes.append(
            f"the samples drift {direction} over the run (Mann-Kendall tau = {tau:+.2f}, "
            f"p = {trend_p:.2g}): warm-up, throttling or interference"
        )

    return Summary(
        n=n,
        mean=mean,
        stdev=stdev,
        median=median,
        mad=mad,
        min=float(x.min()),
        max=float(x.max()),
        cv=cv,
        percentiles=percentiles,
        confidence=float(confidence),
        mean_ci=_mean_ci(mean, stdev, n, confidence),
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


# -- sample-size planning ----------------------------------------------------------------------
def required_samples(samples: Any, rel_precision: float, confidence: float = 0.95) -> int:
    """Samples needed for the mean's confidence interval to reach a relative precision.

    Finds the smallest ``n >= 2`` with ``t(1 - alpha/2, n - 1) cv / sqrt(n) <= rel_precision``,
    i.e. a Student t half-width of at most ``rel_precision * mean``, treating the sample's
    coefficient of variation ``cv = stdev / mean`` (ddof=1) as the truth. The search starts
    at the normal-quantile answer ``(z cv / rel_precision)^2`` (a lower bound, as t > z) and
    steps up, since t depends on n.

    Parameters
    ----------
    samples : array_like
        A pilot sample, at least 2 finite values with a positive mean (e.g. times in ns).
    rel_precision : float
        Wanted half-width as a fraction of the mean, in (0, 1): 0.01 for +-1%.
    confidence : float
        Coverage of the interval, in (0, 1).

    Returns
    -------
    int
        Number of samples (at least 2; exactly 2 when the pilot has no spread).

    Raises
    ------
    ValueError
        If ``rel_precision`` or ``confidence`` is outside (0, 1), if there are fewer than 2
        samples, if the mean is not positive, or if the samples are invalid.
    """
    x = as_samples(samples)
    rel = _finite_scalar(rel_precision, "rel_precision")
    if not (0.0 < rel < 1.0):
        raise ValueError(f"rel_precision must be in (0, 1), got {rel_precision!r}")
    _check_confidence(confidence)
    if x.size < 2:
        raise ValueError(f"required_samples needs at least 2 samples, got {x.size}")
    mean = float(np.mean(x))
    if not mean > 0.0:
        raise ValueError(f"required_samples needs a positive mean, got {mean!r}")
    cv = float(np.std(x, ddof=1)) / mean
    if not math.isfinite(cv):
        raise ValueError("required_samples: the samples overflow float64 arithmetic")
    if cv == 0.0:
        return 2
    q = 0.5 + confidence / 2.0
    n = max(2, math.floor((float(_sps().norm.ppf(q)) * cv / rel) ** 2))
    while float(_sps().t.ppf(q, n - 1)) * cv / math.sqrt(n) > rel:
        n += 1
    return n


def _t_test_power(n: int, cv: float, effect: float, alpha: float, paired: bool) -> float:
    """Exact power of the two-sided t-test, from the noncentral t distribution."""
    if paired:
        df, nc = n - 1, effect * math.sqrt(n) / cv
    else:
        df, nc = 2 * n - 2, effect * math.sqrt(n / 2.0) / cv
    crit = float(_sps().t.ppf(1.0 - alpha / 2.0, df))
    return float(_sps().nct.sf(crit, df, nc) + _sps().nct.cdf(-crit, df, nc))


def samples_for_power(
    cv: float,
    effect: float,
    power: float = 0.8,
    alpha: float = 0.05,
    paired: bool = False,
    correlation: float = 0.0,
) -> int:
    """Samples per group for a two-sided t-test to detect a relative difference of means.

    Unpaired: two groups of n with the same standard deviation ``cv * mean``; Student's
    test with ``2n - 2`` degrees of freedom and noncentrality ``effect sqrt(n/2) / cv``.
    Paired: the one-sample test on n differences, whose relative spread is
    ``cv_d = sqrt(2 (1 - correlation)) cv``, with ``n - 1`` degrees of freedom and
    noncentrality ``effect sqrt(n) / cv_d``. Power is computed exactly from the noncentral
    t distribution (``scipy.stats.nct``; Cohen 1988, *Statistical Power Analysis*, ch. 2)
    and n is the smallest with at least the wanted power, found by stepping from the
    normal approximation ``n = k ((z_{1-alpha/2} + z_power) cv / effect)^2`` (k = 2 unpaired,
    1 paired with cv_d).

    compare_samples uses rank tests; their efficiency relative to the t-test is 3/pi (about
    0.955) for normal data and at least 0.864 for any continuous distribution (Hodges &
    Lehmann 1956), so add about 5% for normal data. For heavy-tailed timings they need fewer.

    Parameters
    ----------
    cv : float
        Coefficient of variation of one sample (stdev / mean), positive; e.g. ``Summary.cv``.
    effect : float
        Relative difference of the means to detect, e.g. 0.02 for 2%; the sign is ignored.
    power : float
        Wanted probability of a significant result, in (0, 1).
    alpha : float
        Two-sided significance level, in (0, 1).
    paired : bool
        Paired design (same inputs, interleaved runs) instead of two independent groups.
    correlation : float
        Correlation between paired samples, in [-1, 1); only for ``paired=True``.

    Returns
    -------
    int
        Samples per group (pairs when paired), at least 2.

    Raises
    ------
    ValueError
        If ``cv`` is not positive and finite, ``effect`` is zero or not finite, ``power`` or
        ``alpha`` is outside (0, 1), ``correlation`` is outside [-1, 1), or a correlation is
        given for an unpaired design.
    """
    cv_f = _finite_scalar(cv, "cv")
    if cv_f <= 0.0:
        raise ValueError(f"cv must be positive, got {cv!r}")
    eff = abs(_finite_scalar(effect, "effect"))
    if eff == 0.0:
        raise ValueError("effect must be non-zero")
    pw = _finite_scalar(power, "power")
    if not (0.0 < pw < 1.0):
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    al = _finite_scalar(alpha, "alpha")
    if not (0.0 < al < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    rho = _finite_scalar(correlation, "correlation")
    if not (-1.0 <= rho < 1.0):
        raise ValueError(f"correlation must be in [-1, 1), got {correlation!r}")
    if not paired and rho != 0.0:
        raise ValueError("correlation applies only to paired designs (paired=True)")

    spread = math.sqrt(2.0 * (1.0 - rho)) * cv_f if paired else cv_f
    z = float(_sps().norm.ppf(1.0 - al / 2.0)) + float(_sps().norm.ppf(pw))
    approx = (1.0 if paired else 2.0) * (z * spread / eff) ** 2
    n = max(2, math.ceil(approx))
    # Power grows with n: step up to the first n that reaches it, then down while n - 1
    # still does (the normal answer is usually 1-2 below the exact one).
    while _t_test_power(n, spread, eff, al, paired) < pw:
        n += 1
    while n > 2 and _t_test_power(n - 1, spread, eff, al, paired) >= pw:
        n -= 1
    return n


# -- comparing two samples ---------------------------------------------------------------------
def _verdict(
    p_value: float,
    alpha: float,
    speedup: float,
    min_effect: float,
    speedup_ci: tuple[float, float] | None,
    n: int,
) -> str:
    if n < MIN_SAMPLES or speedup_ci is None or not p_value < alpha:
        return _NO_DIFFERENCE
    if speedup >= 1.0 + min_effect and speedup_ci[0] > 1.0:
        return _FASTER
    if speedup <= 1.0 / (1.0 + min_effect) and speedup_ci[1] < 1.0:
        return _SLOWER
    return _NO_DIFFERENCE


@dataclass(frozen=True)
class SampleComparison:
    """Baseline ``a`` against candidate ``b``: speedup, uncertainty, tests and a verdict.

    Times are in the unit of the samples (ns for fastbench); lower is faster.

    Attributes
    ----------
    paired : bool
        Whether ``a[i]`` and ``b[i]`` were analysed as pairs.
    test : str
        The primary test: ``"sign test"`` (paired) or ``"mann-whitney u"``.
    n_a, n_b : int
        Sample counts (equal when paired).
    median_a, median_b : float
        Medians of the raw samples.
    speedup : float
        ``median(a) / median(b)`` unpaired, ``exp(median(log(a/b)))`` paired; > 1 means the
        candidate is faster.
    speedup_ci : (float, float) or None
        Confidence interval of the speedup at ``confidence``. None with too few samples.
    confidence : float
        Coverage of ``speedup_ci``.
    rel_diff_pct : float
        ``(median(b) / median(a) - 1) * 100``, in %; positive means the candidate is slower.
    p_value : float
        Primary two-sided p-value (sign test or ``p_mannwhitney``, or an adjusted value
        after :meth:`with_p_value`); 1.0 when the test could not run.
    p_wilcoxon : float or None
        Wilcoxon signed-rank test on the log-ratios (paired only).
    p_mannwhitney : float
        Mann-Whitney U test on the two samples as independent (for reference when paired).
    p_welch : float or None
        Welch's t-test on the log times (as independent samples); None when it cannot run
        (a side with one sample, or no spread on either side).
    cohens_d : float or None
        ``(mean(b) - mean(a)) / s_pooled`` on the raw times (Cohen 1988), positive when the
        candidate is slower; None when the pooled standard deviation is 0 or undefined.
    hedges_g : float or None
        ``J d`` with ``J = 1 - 3 / (4 (n_a + n_b) - 9)`` (Hedges & Olkin 1985).
    cliffs_delta : float
        ``P(b > a) - P(b < a)`` over all cross pairs (Cliff 1993), in [-1, 1]; positive
        when the candidate is slower.
    alpha, min_effect : float
        Significance level and smallest relative speedup worth reporting.
    verdict : str
        ``"faster"``, ``"slower"`` or ``"no significant difference"``; see
        :func:`compare_samples`.
    warnings : tuple of str
        Reasons to distrust the result.
    """

    paired: bool
    test: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    speedup: float
    speedup_ci: tuple[float, float] | None
    confidence: float
    rel_diff_pct: float
    p_value: float
    p_wilcoxon: float | None
    p_mannwhitney: float
    p_welch: float | None
    cohens_d: float | None
    hedges_g: float | None
    cliffs_delta: float
    alpha: float
    min_effect: float
    verdict: str
    warnings: tuple[str, ...]

    def with_p_value(self, p_adjusted: float) -> SampleComparison:
        """A copy with ``p_value`` replaced (e.g. by :func:`adjust_pvalues`) and the
        verdict recomputed by the same rule. The other p-values stay unadjusted.

        Raises
        ------
        ValueError
            If ``p_adjusted`` is not a number in [0, 1].
        """
        p = _finite_scalar(p_adjusted, "p_adjusted")
        if not (0.0 <= p <= 1.0):
            raise ValueError(f"p_adjusted must be in [0, 1], got {p_adjusted!r}")
        verdict = _verdict(
            p, self.alpha, self.speedup, self.min_effect, self.speedup_ci,
            min(self.n_a, self.n_b),
        )
        return dataclasses.replace(self, p_value=p, verdict=verdict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: tuples become lists, None is kept."""
        result: dict[str, Any] = _plain(self)
        return result

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleComparison:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            If a field is missing or unknown, or the verdict is not one of the three.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in data]
        extra = [k for k in data if k not in names]
        if missing or extra:
            raise ValueError(f"SampleComparison data: missing {missing}, unknown {extra}")
        values = dict(data)
        ci = values["speedup_ci"]
        values["speedup_ci"] = None if ci is None else (float(ci[0]), float(ci[1]))
        values["warnings"] = tuple(str(w) for w in values["warnings"])
        if values["verdict"] not in (_FASTER, _SLOWER, _NO_DIFFERENCE):
            raise ValueError(f"unknown verdict {values['verdict']!r}")
        return cls(**values)


def _cliffs_delta(a: Any, b: Any) -> float:
    """Cliff's delta ``P(b > a) - P(b < a)`` over all ``n_a n_b`` cross pairs (Cliff 1993,
    Psychol. Bull. 114:494), counted exactly in O((n_a + n_b) log n_a) with a sorted ``a``.

    Positive when ``b`` tends to be larger (slower, for times). Ties count as neither.

    Raises
    ------
    ValueError
        If either input is empty, not one-dimensional or not finite.
    """
    xa = np.sort(as_samples(a, name="a"))
    xb = as_samples(b, name="b")
    below = np.searchsorted(xa, xb, side="left")  # per b_j: how many a_i < b_j
    above = xa.size - np.searchsorted(xa, xb, side="right")  # how many a_i > b_j
    diff = int(below.sum()) - int(above.sum())
    return diff / (xa.size * xb.size)


def _effect_sizes(
    a: NDArray[np.float64], b: NDArray[np.float64]
) -> tuple[float | None, float | None]:
    na, nb = a.size, b.size
    df = na + nb - 2
    if df < 1:
        return None, None
    ss = float(np.sum((a - a.mean()) ** 2) + np.sum((b - b.mean()) ** 2))
    pooled = math.sqrt(ss / df)
    if not math.isfinite(pooled):
        # d would come out as 0.0, a wrong finite number.
        raise ValueError("compare_samples: the samples overflow float64 arithmetic; rescale them")
    if pooled == 0.0:
        return None, None
    d = float(b.mean() - a.mean()) / pooled
    return d, (1.0 - 3.0 / (4.0 * (na + nb) - 9.0)) * d


def _welch_log(log_a: NDArray[np.float64], log_b: NDArray[np.float64]) -> float | None:
    if log_a.size < 2 or log_b.size < 2 or (np.ptp(log_a) == 0.0 and np.ptp(log_b) == 0.0):
        return None
    with warnings.catch_warnings():
        # A side with identical values is legitimate (its variance is 0) but scipy warns
        # about catastrophic cancellation for it.
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        p = float(_sps().ttest_ind(log_a, log_b, equal_var=False).pvalue)
    return p if math.isfinite(p) else None


def _mannwhitney(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    p = float(_sps().mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return p if math.isfinite(p) else 1.0


def _check_level(value: float, name: str) -> float:
    x = _finite_scalar(value, name)
    if not (0.0 < x < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return x


def compare_samples(
    a: Any,
    b: Any,
    paired: bool = False,
    *,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    confidence: float = 0.95,
) -> SampleComparison:
    """Compare a baseline ``a`` with a candidate ``b`` (times, lower is faster).

    Paired (``a[i]`` and ``b[i]`` measured together, e.g. interleaved): on the log-ratios
    ``r = log(a / b)``, speedup ``exp(median(r))``, its interval ``exp`` of the
    distribution-free sign-test interval of the median of r (:func:`median_ci`; Conover 1999,
    *Practical Nonparametric Statistics*, sec. 3.2), and as p-value the exact two-sided sign
    test on r (``scipy.stats.binomtest`` on the count of positive r among non-zero r), which
    agrees with that interval and is not swayed by a few preempted rounds. The Wilcoxon
    signed-rank test on r (``scipy.stats.wilcoxon``; Wilcoxon 1945) is reported beside it as
    ``p_wilcoxon``. If every r is 0, p = 1.

    Unpaired: speedup ``median(a) / median(b)``, its interval a percentile bootstrap of the
    ratio of medians (a and b resampled independently, 2000 resamples, fixed-seed numpy
    Generator so the result is repeatable; Efron & Tibshirani 1993, ch. 13; only with at
    least ``MIN_SAMPLES`` per side, as a bootstrap of fewer values covers far less often
    than it claims), and the two-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu``;
    Mann & Whitney 1947).
    Welch's t-test on log times is reported as ``p_welch`` in both modes (Welch 1947).

    Verdict, exactly one of:

    - ``"faster"`` iff ``p_value < alpha``, ``speedup >= 1 + min_effect`` and the speedup
      interval lies entirely above 1;
    - ``"slower"`` iff ``p_value < alpha``, ``speedup <= 1 / (1 + min_effect)`` and the
      interval lies entirely below 1;
    - ``"no significant difference"`` otherwise, and always when there is no interval or
      fewer than ``MIN_SAMPLES`` (6) samples per side (pairs, when paired).

    Requiring both the test and the interval guards against the two disagreeing, and
    ``min_effect`` keeps real but negligible differences (0.5% on a quiet machine) from being
    reported as changes.

    Parameters
    ----------
    a, b : array_like
        Baseline and candidate times, one-dimensional, finite and positive (any unit, the
        same for both; ns in fastbench). Equal lengths when paired.
    paired : bool
        Analyse ``(a[i], b[i])`` as pairs.
    alpha : float
        Significance level of the primary test, in (0, 1).
    min_effect : float
        Smallest relative speedup (a fraction, >= 0) that counts as a change.
    confidence : float
        Coverage of the speedup interval, in (0, 1).

    Returns
    -------
    SampleComparison
        Includes warnings for: fewer than ``MIN_SAMPLES`` samples (no verdict), fewer than 10
        (few samples), no interval, sizes differing by more than 4x (unpaired), and a test
        that could not run (its p-value is then 1.0).

    Raises
    ------
    ValueError
        If an input is empty, not one-dimensional, not finite or not positive, if paired
        inputs differ in length, or if ``alpha``, ``confidence`` or ``min_effect`` is out of
        range.
    """
    xa = as_samples(a, name="a")
    xb = as_samples(b, name="b")
    al = _check_level(alpha, "alpha")
    _check_confidence(confidence)
    eff = _finite_scalar(min_effect, "min_effect")
    if eff < 0.0:
        raise ValueError(f"min_effect must be >= 0, got {min_effect!r}")
    for name, x in (("a", xa), ("b", xb)):
        if not np.all(x > 0.0):
            raise ValueError(
                f"{name} holds {int(np.count_nonzero(x <= 0.0))} value(s) <= 0; times must "
                "be positive (speedups and log-ratios need it)"
            )
    if paired and xa.size != xb.size:
        raise ValueError(
            f"paired comparison needs equal lengths, got {xa.size} and {xb.size}"
        )

    # As in summarize: overflow near 1e308 surfaces as a ValueError from the final check.
    with np.errstate(over="ignore", invalid="ignore"):
        result = _compare(xa, xb, bool(paired), al, eff, float(confidence))
    _require_finite(result.to_dict(), "compare_samples")
    return result


def _compare(
    xa: NDArray[np.float64],
    xb: NDArray[np.float64],
    paired: bool,
    al: float,
    eff: float,
    confidence: float,
) -> SampleComparison:
    na, nb = int(xa.size), int(xb.size)
    n = min(na, nb)
    if paired:
        unit = "pair" if n == 1 else "pairs"
    else:
        unit = "sample per side" if n == 1 else "samples per side"
    notes: list[str] = []
    median_a, median_b = float(np.median(xa)), float(np.median(xb))
    log_a, log_b = np.log(xa), np.log(xb)
    p_mannwhitney = _mannwhitney(xa, xb)
    speedup_ci: tuple[float, float] | None

    if paired:
        test = "sign test"
        r = log_a - log_b
        speedup = math.exp(float(np.median(r)))
        ci = median_ci(r, confidence)
        speedup_ci = None if ci is None else (math.exp(ci[0]), math.exp(ci[1]))
        nonzero = int(np.count_nonzero(r))
        if nonzero == 0:
            p_primary, p_wilcoxon = 1.0, None
            notes.append(
                "every pair is identical (a[i] == b[i]): no test can run, p-value set to 1.0"
            )
        else:
            # The sign test matches the interval above (both count signs of the log-ratios)
            # and ignores how far a pair is off: one preempted round, however slow, weighs
            # as much as any other. Wilcoxon ranks by magnitude, so two disturbed rounds
            # can hide a slowdown that every other round shows; it is reported beside.
            p_primary = float(_sps().binomtest(int(np.count_nonzero(r > 0)), nonzero, 0.5).pvalue)
            p_wilcoxon = float(_sps().wilcoxon(r).pvalue)
            if not math.isfinite(p_wilcoxon):
                p_wilcoxon = None
                notes.append("the Wilcoxon test could not run on these pairs")
    else:
        test = "mann-whitney u"
        speedup = median_a / median_b
        if n >= MIN_SAMPLES:
            rng = np.random.default_rng(_BOOTSTRAP_SEED)
            boot_a = _bootstrap_medians(xa, rng, _BOOTSTRAP_RESAMPLES)
            boot_b = _bootstrap_medians(xb, rng, _BOOTSTRAP_RESAMPLES)
            speedup_ci = _percentile_interval(boot_a / boot_b, confidence)
        else:
            speedup_ci = None
        p_primary = p_mannwhitney
        p_wilcoxon = None
        if max(na, nb) > _UNEQUAL_RATIO * n:
            notes.append(
                f"unequal sample sizes: {na} vs {nb} (more than {_UNEQUAL_RATIO:g}x apart); "
                "the smaller side limits the precision"
            )

    if n < MIN_SAMPLES:
        notes.append(
            f"too few samples for a verdict: {n} {unit} (at least {MIN_SAMPLES} needed); "
            "the verdict stays 'no significant difference'"
        )
    elif speedup_ci is None:
        notes.append(
            f"no {confidence:.0%} confidence interval for the speedup with {n} {unit}: "
            "the verdict stays 'no significant difference'"
        )
    if n < _FEW_SAMPLES:
        notes.append(f"few samples: {n} {unit} (at least {_FEW_SAMPLES} recommended)")

    cohens_d, hedges_g = _effect_sizes(xa, xb)
    return SampleComparison(
        paired=paired,
        test=test,
        n_a=na,
        n_b=nb,
        median_a=median_a,
        median_b=median_b,
        speedup=speedup,
        speedup_ci=speedup_ci,
        confidence=confidence,
        rel_diff_pct=(median_b / median_a - 1.0) * 100.0,
        p_value=p_primary,
        p_wilcoxon=p_wilcoxon,
        p_mannwhitney=p_mannwhitney,
        p_welch=_welch_log(log_a, log_b),
        cohens_d=cohens_d,
        hedges_g=hedges_g,
        cliffs_delta=_cliffs_delta(xa, xb),
        alpha=al,
        min_effect=eff,
        verdict=_verdict(p_primary, al, speedup, eff, speedup_ci, n),
        warnings=tuple(notes),
    )


# -- multiple testing --------------------------------------------------------------------------
def adjust_pvalues(pvalues: Any, method: str = "holm") -> NDArray[np.float64]:
    """Adjust p-values for multiple comparisons, in the input order.

    ``"holm"``: Holm's step-down (Holm 1979, Scand. J. Stat. 6:65), controlling the
    family-wise error rate: with ascending ``p_(1) <= ... <= p_(m)``, the adjusted
    ``p_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.
    ``"bh"``: Benjamini-Hochberg (1995, JRSS B 57:289), controlling the false discovery
    rate: ``p_(i) = min_{j >= i} min(1, m p_(j) / j)``; equals
    ``scipy.stats.false_discovery_control(p, method="bh")``.

    Parameters
    ----------
    pvalues : array_like
        One-dimensional p-values in [0, 1].
    method : {"holm", "bh"}
        Correction.

    Returns
    -------
    ndarray of float64
        Adjusted p-values, monotone in the raw ones, at most 1, same order as the input.

    Raises
    ------
    ValueError
        If the input is empty, not one-dimensional, not finite or outside [0, 1], or the
        method is unknown.
    """
    p = as_samples(pvalues, name="pvalues")
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("pvalues must lie in [0, 1]")
    if method not in ("holm", "bh"):
        raise ValueError(f"method must be 'holm' or 'bh', got {method!r}")
    m = p.size
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    rank = np.arange(1, m + 1, dtype=np.float64)
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1.0, (m - rank + 1.0) * ranked))
    else:
        adjusted = np.minimum.accumulate(np.minimum(1.0, m * ranked / rank)[::-1])[::-1]
    out = np.empty(m, dtype=np.float64)
    out[order] = adjusted
    return out
