"""Two samples compared: a baseline against a candidate (times, lower is faster), with the
speedup, its interval, the tests, effect sizes and one verdict (:func:`compare_samples`,
:class:`SampleComparison`), and the order-statistics interval of a ratio of medians that
stands in for the bootstrap on large samples (:func:`median_ratio_ci`). Pure functions;
scheduling the measurements is fastbench.comparison's.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from numpy.typing import NDArray

from .._checks import check_finite, check_fraction
from ._scipy import sps
from .plain import plain, require_finite
from .samples import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, FEW_SAMPLES, as_samples,
                      bootstrap_medians, median_ci, percentile_interval)
from .signedrank import hodges_lehmann, signed_rank_ci

# Fewer samples per side (or pairs) than this and compare_samples never calls a difference
# significant: the sign-test interval of the median does not exist below 6 at 95% (see
# median_ci), and a bootstrap of 5 values covers far less often than it claims.
MIN_SAMPLES = 6

_UNEQUAL_RATIO = 4.0

# The paired location of the log-ratios and its test: the median with the sign test, or the
# Hodges-Lehmann estimate with Wilcoxon's signed-rank test.
ESTIMATORS = ("median", "hodges-lehmann")

# Unpaired speedup intervals: up to this many samples in all (both sides) the percentile
# bootstrap, above it the order-statistics interval of :func:`median_ratio_ci`. The bootstrap
# takes BOOTSTRAP_RESAMPLES medians of resamples as large as each side, so its cost grows
# with the samples (two sides of 1M took close to a minute); the order-statistics interval
# costs two partial sorts, and its normal approximation is best where the bootstrap costs most.
BOOTSTRAP_MAX_SAMPLES = 10_000

# Fewer runs (processes) per side than this and a run-level comparison gives no verdict: a
# t interval on two run medians has one degree of freedom and rests wholly on normality.
MIN_RUNS = 3

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no significant difference"
CANNOT_TELL = "cannot tell"
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, CANNOT_TELL)

# What a comparison's samples are (SampleComparison.level): the samples of one run each,
# the medians of several runs (processes) per side, or single runs judged against the
# run-to-run variation known for the machine.
LEVELS = ("samples", "runs", "variation")


def _verdict(
    p_value: float,
    alpha: float,
    speedup: float,
    min_effect: float,
    speedup_ci: tuple[float, float] | None,
    n: int,
    level: str = "samples",
) -> str:
    # Against a known run-to-run variation, a difference inside it says nothing either way.
    undecided = CANNOT_TELL if level == "variation" else NO_DIFFERENCE
    minimum = {"samples": MIN_SAMPLES, "runs": MIN_RUNS}.get(level, 1)
    if n < minimum or speedup_ci is None or not p_value < alpha:
        return undecided
    if speedup >= 1.0 + min_effect and speedup_ci[0] > 1.0:
        return FASTER
    if speedup <= 1.0 / (1.0 + min_effect) and speedup_ci[1] < 1.0:
        return SLOWER
    return undecided


@dataclass(frozen=True)
class SampleComparison:
    """Baseline ``a`` against candidate ``b``: speedup, uncertainty, tests and a verdict.

    Times are in the unit of the samples (ns for fastbench); lower is faster.

    Attributes
    ----------
    paired : bool
        Whether ``a[i]`` and ``b[i]`` were analysed as pairs.
    test : str
        The primary test: ``"sign test"`` (paired, the median), ``"wilcoxon signed-rank"``
        (paired, the Hodges-Lehmann estimator) or ``"mann-whitney u"``.
    n_a, n_b : int
        Sample counts (equal when paired).
    median_a, median_b : float
        Medians of the raw samples.
    speedup : float
        ``median(a) / median(b)`` unpaired, ``exp(median(log(a/b)))`` paired (``exp`` of their
        Hodges-Lehmann estimate with that estimator); > 1 means the candidate is faster.
    speedup_ci : (float, float) or None
        Confidence interval of the speedup at ``confidence``. None with too few samples.
    confidence : float
        Coverage of ``speedup_ci``.
    rel_diff_pct : float
        The change in the candidate's time that ``speedup`` estimates, ``(1 / speedup - 1) *
        100`` in %; positive means the candidate is slower. Unpaired that is
        ``(median(b) / median(a) - 1) * 100``; paired it follows the pairs, so it never
        points against the speedup and verdict (the two sides' own medians can, when the
        machine's speed moved between rounds).
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
        ``"faster"``, ``"slower"``, ``"no significant difference"`` (see
        :func:`compare_samples`) or, for single runs judged against the machine's run-to-run
        variation, ``"cannot tell"`` (see :func:`fastbench.stats.runs.compare_runs`).
    warnings : tuple of str
        Reasons to distrust the result.
    level : str
        What ``n_a`` and ``n_b`` count: "samples" (the samples of one run per side), "runs"
        (run medians of several worker processes per side) or "variation" (single runs judged
        against the run-to-run variation ``run_variation``).
    run_variation : float or None
        The relative standard deviation between runs that the verdict allowed for (level
        "variation", or the one measured between the runs for level "runs").
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
    level: str = "samples"
    run_variation: float | None = None

    def with_p_value(self, p_adjusted: float) -> SampleComparison:
        """A copy with ``p_value`` replaced (e.g. by :func:`adjust_pvalues`) and the
        verdict recomputed by the same rule. The other p-values stay unadjusted.

        Raises
        ------
        TypeError
            If ``p_adjusted`` is not a number.
        ValueError
            If ``p_adjusted`` is not in [0, 1].
        """
        p = check_finite("p_adjusted", p_adjusted)
        if not (0.0 <= p <= 1.0):
            raise ValueError(f"p_adjusted must be in [0, 1], got {p_adjusted!r}")
        verdict = CANNOT_TELL if self.verdict == CANNOT_TELL else _verdict(
            p, self.alpha, self.speedup, self.min_effect, self.speedup_ci,
            min(self.n_a, self.n_b), self.level,
        )  # what could not be told stays so, whatever the correction
        return dataclasses.replace(self, p_value=p, verdict=verdict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: tuples become lists, None is kept."""
        result: dict[str, Any] = plain(self)
        return result

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleComparison:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            If a field is missing or unknown, or the verdict is not one of the three.
        """
        fields = dataclasses.fields(cls)
        names = [f.name for f in fields]
        # Fields with a default came later; files written before them lack them.
        missing = [f.name for f in fields
                   if f.name not in data and f.default is dataclasses.MISSING]
        extra = [k for k in data if k not in names]
        if missing or extra:
            raise ValueError(f"SampleComparison data: missing {missing}, unknown {extra}")
        values = dict(data)
        ci = values["speedup_ci"]
        values["speedup_ci"] = None if ci is None else (float(ci[0]), float(ci[1]))
        values["warnings"] = tuple(str(w) for w in values["warnings"])
        if values["verdict"] not in VERDICTS:
            raise ValueError(f"unknown verdict {values['verdict']!r}")
        if values.get("level", "samples") not in LEVELS:
            raise ValueError(f"unknown level {values['level']!r}; expected one of {LEVELS}")
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
    # Sorted queries make the binary searches walk xa in order: several times faster on
    # long samples than random ones (the counts are the same).
    xb = np.sort(as_samples(b, name="b"))
    below = np.searchsorted(xa, xb, side="left")  # per b_j: how many a_i < b_j
    above = xa.size - np.searchsorted(xa, xb, side="right")  # how many a_i > b_j
    diff = int(below.sum()) - int(above.sum())
    return diff / (xa.size * xb.size)


def _log_median_se(x: NDArray[np.float64]) -> float:
    """Standard error of ``log(median(x))`` from two order statistics (Price & Bonett 2001,
    J. Statist. Comput. Simul. 68:295): with ``c = round(n/2 - sqrt(n))`` (at least 1), the
    interval ``[x_(c), x_(n-c+1)]`` covers the median with probability ``1 - 2 P(B <= c-1)``,
    B ~ binomial(n, 1/2), exactly, whatever the distribution; read as a normal interval of
    that coverage, its width on the log scale gives the standard error. ``x`` positive,
    at least 2 values."""
    n = int(x.size)
    c = max(1, round(n / 2.0 - math.sqrt(n)))
    low, high = np.partition(x, (c - 1, n - c))[[c - 1, n - c]]  # O(n): no full sort
    tail = float(sps().binom.cdf(c - 1, n, 0.5))  # P(the median lies below x_(c))
    z = float(sps().norm.isf(tail))
    return (math.log(float(high)) - math.log(float(low))) / (2.0 * z)


def median_ratio_ci(a: Any, b: Any, confidence: float = 0.95) -> tuple[float, float] | None:
    """Confidence interval of ``median(a) / median(b)`` for independent samples, from order
    statistics: no resampling, O(n).

    On the log scale, ``log(median(a)) - log(median(b)) ± z sqrt(se_a² + se_b²)`` with each
    standard error from the distribution-free interval of its median (Price & Bonett 2001;
    the ratio as in Bonett & Price 2002, Psychol. Methods 7:370, and statpsych's
    ``ci.ratio.median2``), ``z`` the normal quantile of ``confidence``. It assumes a
    continuous distribution near each median (few ties) and is asymptotic: its coverage
    approaches ``confidence`` as both sides grow, and is close to it from a few hundred
    samples a side. :func:`compare_samples` uses it above ``BOOTSTRAP_MAX_SAMPLES`` samples.

    Parameters
    ----------
    a, b : array_like
        Positive values, one-dimensional and finite (times: baseline and candidate).
    confidence : float
        Coverage in (0, 1).

    Returns
    -------
    (low, high) or None
        The interval of the ratio; None with fewer than ``MIN_SAMPLES`` (6) values on a side.

    Raises
    ------
    TypeError
        If ``confidence`` is not a number.
    ValueError
        If ``confidence`` is outside (0, 1), or a side is empty, not one-dimensional, not
        finite or not positive.
    """
    level = check_fraction("confidence", confidence)
    xa, xb = as_samples(a, name="a"), as_samples(b, name="b")
    for name, x in (("a", xa), ("b", xb)):
        if not np.all(x > 0.0):
            raise ValueError(f"{name} holds {int(np.count_nonzero(x <= 0.0))} value(s) <= 0; "
                             "a ratio of medians needs positive values")
    if min(xa.size, xb.size) < MIN_SAMPLES:
        return None
    d = math.log(float(np.median(xa))) - math.log(float(np.median(xb)))
    se = math.hypot(_log_median_se(xa), _log_median_se(xb))
    z = float(sps().norm.ppf(0.5 + level / 2.0))
    return math.exp(d - z * se), math.exp(d + z * se)


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
        p = float(sps().ttest_ind(log_a, log_b, equal_var=False).pvalue)
    return p if math.isfinite(p) else None


def _mannwhitney(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    p = float(sps().mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return p if math.isfinite(p) else 1.0


def compare_samples(
    a: Any,
    b: Any,
    paired: bool = False,
    *,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    confidence: float = 0.95,
    estimator: str = "median",
) -> SampleComparison:
    """Compare a baseline ``a`` with a candidate ``b`` (times, lower is faster).

    Paired (``a[i]`` and ``b[i]`` measured together, e.g. interleaved): on the log-ratios
    ``r = log(a / b)``, speedup ``exp(median(r))``, its interval ``exp`` of the
    distribution-free sign-test interval of the median of r (:func:`median_ci`; Conover 1999,
    *Practical Nonparametric Statistics*, sec. 3.2), and as p-value the exact two-sided sign
    test on r (``scipy.stats.binomtest`` on the count of positive r among non-zero r), which
    agrees with that interval and is not swayed by a few preempted rounds. The Wilcoxon
    signed-rank test on r (``scipy.stats.wilcoxon``; Wilcoxon 1945) is reported beside it as
    ``p_wilcoxon``. If every r is 0, p = 1. With ``estimator="hodges-lehmann"`` the speedup is
    ``exp`` of the Hodges-Lehmann estimate of r (the median of its Walsh averages), its
    interval the one that inverts the signed-rank test (:func:`signed_rank_ci`), and the
    p-value that test's: about a fifth narrower from the same pairs under normal noise, and
    still robust to a few disturbed pairs, though less than the sign test to a handful of
    them far off in one direction.

    Unpaired: speedup ``median(a) / median(b)``, its interval a percentile bootstrap of the
    ratio of medians (a and b resampled independently, 2000 resamples, fixed-seed numpy
    Generator so the result is repeatable; Efron & Tibshirani 1993, ch. 13; only with at
    least ``MIN_SAMPLES`` per side, as a bootstrap of fewer values covers far less often
    than it claims); above ``BOOTSTRAP_MAX_SAMPLES`` (10,000) samples in all, whose
    bootstrap would cost seconds to minutes, the order-statistics interval of
    :func:`median_ratio_ci` (asymptotic, no resampling). The test is the two-sided
    Mann-Whitney U test (``scipy.stats.mannwhitneyu``; Mann & Whitney 1947).
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
    estimator : {"median", "hodges-lehmann"}
        The paired location of the log-ratios and its test (see above); unpaired
        comparisons take ``"median"`` only.

    Returns
    -------
    SampleComparison
        Includes warnings for: fewer than ``MIN_SAMPLES`` samples (no verdict), fewer than 10
        (few samples), no interval, sizes differing by more than 4x (unpaired), and a test
        that could not run (its p-value is then 1.0).

    Raises
    ------
    TypeError
        If ``alpha``, ``confidence`` or ``min_effect`` is not a number.
    ValueError
        If an input is empty, not one-dimensional, not finite or not positive, if paired
        inputs differ in length, or if ``alpha``, ``confidence`` or ``min_effect`` is out of
        range.
    """
    xa = as_samples(a, name="a")
    xb = as_samples(b, name="b")
    al = check_fraction("alpha", alpha)
    level = check_fraction("confidence", confidence)
    eff = check_finite("min_effect", min_effect)
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
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    if estimator != "median" and not paired:
        raise ValueError(f"estimator {estimator!r} is for paired comparisons; unpaired ones "
                         "take 'median'")

    # As in summarize: overflow near 1e308 surfaces as a ValueError from the final check.
    with np.errstate(over="ignore", invalid="ignore"):
        result = _compare(xa, xb, bool(paired), al, eff, level, estimator)
    require_finite(result.to_dict(), "compare_samples")
    return result


def _compare(
    xa: NDArray[np.float64],
    xb: NDArray[np.float64],
    paired: bool,
    al: float,
    eff: float,
    confidence: float,
    estimator: str = "median",
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
        hl = estimator == "hodges-lehmann"
        test = "wilcoxon signed-rank" if hl else "sign test"
        r = log_a - log_b
        speedup = math.exp(hodges_lehmann(r) if hl else float(np.median(r)))
        ci = signed_rank_ci(r, confidence) if hl else median_ci(r, confidence)
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
            p_primary = float(sps().binomtest(int(np.count_nonzero(r > 0)), nonzero, 0.5).pvalue)
            p_wilcoxon = float(sps().wilcoxon(r).pvalue)
            if not math.isfinite(p_wilcoxon):
                p_wilcoxon = None
                notes.append("the Wilcoxon test could not run on these pairs")
            if hl:
                p_primary = 1.0 if p_wilcoxon is None else p_wilcoxon
    else:
        test = "mann-whitney u"
        speedup = median_a / median_b
        if n < MIN_SAMPLES:
            speedup_ci = None
        elif na + nb > BOOTSTRAP_MAX_SAMPLES:
            speedup_ci = median_ratio_ci(xa, xb, confidence)
        else:
            rng = np.random.default_rng(BOOTSTRAP_SEED)
            boot_a = bootstrap_medians(xa, rng, BOOTSTRAP_RESAMPLES)
            boot_b = bootstrap_medians(xb, rng, BOOTSTRAP_RESAMPLES)
            speedup_ci = percentile_interval(boot_a / boot_b, confidence)
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
    if n < FEW_SAMPLES:
        notes.append(f"few samples: {n} {unit} (at least {FEW_SAMPLES} recommended)")

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
        rel_diff_pct=(1.0 / speedup - 1.0) * 100.0,
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
