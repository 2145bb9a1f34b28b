"""The distribution-free confidence interval of any quantile of one sample, from its order
statistics (:func:`quantile_ci`): what a latency's p95 or p99 is reported with. Pure
functions on samples; nothing here times, prints or drops a sample. The median's interval
is :func:`fastbench.stats.samples.median_ci`, the same construction at q = 1/2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._checks import check_fraction
from ._scipy import sps
from .samples import as_samples

__all__ = ["quantile_ci", "quantile_ci_min_samples"]


def _largest_index_below(n: int, p: float, tail: float) -> int:
    """The largest k with P(B <= k) <= ``tail`` for B ~ Binomial(n, p); -1 when even
    P(B = 0) exceeds it."""
    # ppf gives the smallest k with P(B <= k) >= tail; when that holds with equality, k
    # itself qualifies, otherwise the one below it is the largest (as in median_ci).
    k = int(sps().binom.ppf(tail, n, p))
    return k if sps().binom.cdf(k, n, p) <= tail else k - 1


def quantile_ci(samples: Any, q: float, confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the ``q`` quantile, from order statistics.

    With ``B`` the number of samples at or below the true quantile, ``B ~ Binomial(n, q)``
    whatever the distribution (continuous), and the order statistics ``x_(l) <= x_(u)``
    bracket the quantile exactly when ``l <= B <= u - 1``. The interval is equal-tailed and
    conservative: ``l`` is the largest index with ``P(B <= l - 1) <= alpha / 2`` and ``u``
    the smallest with ``P(B >= u) <= alpha / 2``, so its coverage
    ``P(B <= u - 1) - P(B <= l - 1)`` is at least ``confidence`` (Hahn & Meeker 1991,
    *Statistical Intervals*, section 5.2; Conover 1999, *Practical Nonparametric
    Statistics*, section 3.2). At ``q = 0.5`` it is :func:`~fastbench.stats.median_ci`.

    Parameters
    ----------
    samples : array_like
        One-dimensional finite values (in any unit; the interval is in the same one).
    q : float
        The quantile, in (0, 1): 0.95 for the 95th percentile.
    confidence : float
        Coverage in (0, 1).

    Returns
    -------
    (low, high) or None
        Two of the samples, or None when there are too few for an interval at this
        confidence: a tail quantile needs many (:func:`quantile_ci_min_samples`: 72 for the
        p95 and 368 for the p99 at 95%, where ``q**n`` first drops to alpha / 2).

    Raises
    ------
    TypeError
        If ``q`` or ``confidence`` is not a number, or the samples are not real numbers.
    ValueError
        If ``q`` or ``confidence`` is outside (0, 1), or the samples are empty, not
        one-dimensional or not finite.
    """
    quantile = check_fraction("q", q, example="0.95 for the 95th percentile")
    level = check_fraction("confidence", confidence)
    x = np.sort(as_samples(samples))
    n = int(x.size)
    tail = (1.0 - level) / 2.0
    below = _largest_index_below(n, quantile, tail)          # l - 1
    # P(B >= u) = P(n - B <= n - u), and n - B ~ Binomial(n, 1 - q).
    above = _largest_index_below(n, 1.0 - quantile, tail)    # n - u
    if below < 0 or above < 0:
        return None
    # 1-based order statistics l = below + 1 and u = n - above, as 0-based indices.
    return float(x[below]), float(x[n - above - 1])


def quantile_ci_min_samples(q: float, confidence: float = 0.95) -> int:
    """The fewest samples for which :func:`quantile_ci` gives an interval of the ``q``
    quantile at ``confidence``: the least n with both ``q**n`` and ``(1 - q)**n`` at most
    (1 - confidence) / 2 (no sample may be above, or below, the quantile with that
    probability).

    Raises
    ------
    TypeError, ValueError
        As :func:`quantile_ci` for ``q`` and ``confidence``.
    """
    quantile = check_fraction("q", q, example="0.95 for the 95th percentile")
    level = check_fraction("confidence", confidence)
    tail = (1.0 - level) / 2.0
    worst = max(quantile, 1.0 - quantile)
    n = int(np.ceil(np.log(tail) / np.log(worst)))
    # Guard the rounding of the logarithms: step to the exact least n.
    while n > 1 and worst ** (n - 1) <= tail:
        n -= 1
    while worst ** n > tail:
        n += 1
    return max(n, 1)
