"""The Hodges-Lehmann location of one sample and the interval that inverts Wilcoxon's
signed-rank test: the median of the Walsh averages ``(x_i + x_j) / 2`` (i <= j) and the pair
of them the test's critical values pick (Hodges & Lehmann 1963; Hollander, Wolfe & Chicken,
*Nonparametric Statistical Methods*, 3rd ed., sec. 3.2). For paired log-ratios they keep the
sign test's robustness to a few disturbed rounds (the estimator breaks down only past 29% of
them) with about 1.5 times its efficiency under normal noise (3/pi against 2/pi of the t
interval's), so an interval about a fifth narrower from the same rounds.

Pure functions. No Walsh average array is built: an order statistic of the n(n+1)/2 averages
is found by bisection on its value, each step counting the averages below it from the sorted
sample in O(n log n), so that 10^5 rounds cost what 10^3 do in memory.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_fraction
from ._scipy import sps
from .samples import as_samples

__all__ = ["hodges_lehmann", "signed_rank_ci", "signed_rank_lower_count"]

# Up to this many values the null distribution of the signed-rank statistic is counted
# exactly (a subset-sum table of n(n+1)/2 + 1 entries); beyond it the normal approximation
# with a continuity correction, which is then within a rank of the exact critical value.
EXACT_MAX_N = 200


def _walsh_count_le(x: NDArray[np.float64], value: float) -> int:
    """How many Walsh averages of the sorted ``x`` are <= ``value``: pairs i <= j with
    x_i + x_j <= 2 value."""
    n = x.size
    # For each i, the j >= i with x_j <= 2 value - x_i: those below searchsorted's index.
    upto = np.searchsorted(x, 2.0 * value - x, side="right")
    return int(np.maximum(upto - np.arange(n), 0).sum())


def _walsh_order_statistic(x: NDArray[np.float64], k: int) -> float:
    """The k-th smallest (1-based) Walsh average of the sorted ``x``."""
    n = x.size
    total = n * (n + 1) // 2
    if not 1 <= k <= total:
        raise ValueError(f"k must be in [1, {total}], got {k}")
    lo, hi = float(x[0]), float(x[-1])  # every Walsh average lies between
    # Bisection on the value: the k-th average is the smallest one with k averages <= it.
    for _ in range(200):
        mid = lo + (hi - lo) / 2.0
        if mid <= lo or mid >= hi:
            break
        if _walsh_count_le(x, mid) >= k:
            hi = mid
        else:
            lo = mid
    # hi has at least k averages at or below it and lo fewer: the k-th is the largest
    # average <= hi. For each i, the largest x_j (j >= i) with x_i + x_j <= 2 hi.
    upto = np.searchsorted(x, 2.0 * hi - x, side="right") - 1
    idx = np.arange(n)
    ok = upto >= idx
    sums = x[idx[ok]] + x[upto[ok]]
    return float(np.max(sums) / 2.0)


def hodges_lehmann(values: Any) -> float:
    """The median of the Walsh averages ``(x_i + x_j) / 2``, i <= j, of ``values``.

    Raises
    ------
    ValueError
        If the values are invalid (see :func:`fastbench.stats.as_samples`).
    """
    x = np.sort(as_samples(values, name="values"))
    total = x.size * (x.size + 1) // 2
    if total % 2:
        return _walsh_order_statistic(x, total // 2 + 1)
    return 0.5 * (_walsh_order_statistic(x, total // 2)
                  + _walsh_order_statistic(x, total // 2 + 1))


def _exact_lower_cdf(n: int) -> NDArray[np.float64]:
    """P(T+ <= t) for t = 0 .. n(n+1)/2 under the null (no ties): the counts of subsets of
    {1..n} with each sum, over 2^n."""
    total = n * (n + 1) // 2
    counts = np.zeros(total + 1, dtype=np.float64)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
        counts /= 2.0  # keep the table a distribution as it grows (no overflow at n = 200)
    return np.cumsum(counts)


def signed_rank_lower_count(n: int, confidence: float = 0.95) -> int:
    """The number C of Walsh averages left out below (and above) the signed-rank interval:
    the largest t + 1 with P(T+ <= t) <= (1 - confidence) / 2 for the signed-rank statistic
    T+ of n values under the null, exactly up to ``EXACT_MAX_N`` values, else from the
    normal approximation (mean n(n+1)/4, variance n(n+1)(2n+1)/24, continuity corrected).
    0 means no interval exists at this confidence (fewer than 6 values at 95%).

    Raises
    ------
    ValueError
        If ``n`` < 1 or ``confidence`` is outside (0, 1).
    """
    level = check_fraction("confidence", confidence)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    tail = (1.0 - level) / 2.0
    if n <= EXACT_MAX_N:
        cdf = _exact_lower_cdf(n)
        # t with cdf[t] <= tail, the largest; C = t + 1 (0 when even t = 0 is too likely).
        return int(np.searchsorted(cdf, tail * (1.0 + 1e-12), side="right"))
    mean = n * (n + 1) / 4.0
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    z = float(sps().norm.ppf(tail))
    # P(T+ <= t) ~ Phi((t + 0.5 - mean) / sd) <= tail  <=>  t <= mean + z sd - 0.5.
    return max(0, int(math.floor(mean + z * sd - 0.5)) + 1)


def signed_rank_ci(values: Any, confidence: float = 0.95) -> tuple[float, float] | None:
    """The interval for the center of a symmetric distribution that inverts the two-sided
    signed-rank test: ``[A_(C), A_(N + 1 - C)]`` of the N = n(n+1)/2 sorted Walsh averages,
    C from :func:`signed_rank_lower_count` (conservative: its coverage is at least
    ``confidence`` when the values are continuous and symmetric about the center).

    Returns
    -------
    (low, high) or None
        None when there are too few values for any interval at this confidence.

    Raises
    ------
    TypeError
        If ``confidence`` is not a number.
    ValueError
        If ``confidence`` is outside (0, 1) or the values are invalid.
    """
    level = check_fraction("confidence", confidence)
    x = np.sort(as_samples(values, name="values"))
    c = signed_rank_lower_count(x.size, level)
    if c < 1:
        return None
    total = x.size * (x.size + 1) // 2
    return _walsh_order_statistic(x, c), _walsh_order_statistic(x, total + 1 - c)
