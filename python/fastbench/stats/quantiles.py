"""The distribution-free confidence interval of any quantile of one sample, from its order
statistics (:func:`quantile_ci`): what a latency's p95 or p99 is reported with, either exact
and conservative or interpolated between adjacent order statistics to sit at the nominal
level. Pure functions on samples; nothing here times, prints or drops a sample. The median's
interval is :func:`fastbench.stats.samples.median_ci`, the exact construction at q = 1/2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._checks import check_choice, check_fraction
from ._scipy import sps
from .samples import as_samples

__all__ = ["QUANTILE_CI_METHODS", "quantile_ci", "quantile_ci_min_samples"]

# The interval constructions quantile_ci offers; "exact" is the default.
QUANTILE_CI_METHODS = ("exact", "interpolated")


def _largest_index_below(n: int, p: float, tail: float) -> int:
    """The largest k with P(B <= k) <= ``tail`` for B ~ Binomial(n, p); -1 when even
    P(B = 0) exceeds it."""
    # ppf gives the smallest k with P(B <= k) >= tail; when that holds with equality, k
    # itself qualifies, otherwise the one below it is the largest (as in median_ci).
    k = int(sps().binom.ppf(tail, n, p))
    return k if sps().binom.cdf(k, n, p) <= tail else k - 1


def _nyblom_weight(n: int, q: float, r: int, beta: float) -> float:
    """Nyblom's (1992) weight ``lam`` of ``x_(r+1)`` in ``(1 - lam) x_(r) + lam x_(r+1)``, the
    point below which the ``q`` quantile lies with probability ``beta``, given
    ``P(B <= r - 1) <= beta <= P(B <= r)`` for B ~ Binomial(n, q) and 1 <= r < n."""
    below_r = float(sps().binom.cdf(r - 1, n, q))     # P(x_(r) > Q)
    below_next = float(sps().binom.cdf(r, n, q))      # P(x_(r+1) > Q)
    # lam = 1 / (1 + r (1-q) (pi_{r+1} - beta) / ((n-r) q (beta - pi_r))), written without
    # the division so that beta == pi_r gives lam = 0 (x_(r) alone) instead of 1 / inf.
    near = (n - r) * q * max(beta - below_r, 0.0)
    far = r * (1.0 - q) * max(below_next - beta, 0.0)
    return near / (near + far) if near + far > 0.0 else 0.0


def quantile_ci(samples: Any, q: float, confidence: float = 0.95, *,
                method: str = "exact") -> tuple[float, float] | None:
    """Distribution-free confidence interval of the ``q`` quantile, from order statistics.

    With ``B`` the number of samples at or below the true quantile, ``B ~ Binomial(n, q)``
    whatever the distribution (continuous), and the order statistics ``x_(l) <= x_(u)``
    bracket the quantile exactly when ``l <= B <= u - 1``. The interval is equal-tailed and
    conservative: ``l`` is the largest index with ``P(B <= l - 1) <= alpha / 2`` and ``u``
    the smallest with ``P(B >= u) <= alpha / 2``, so its coverage
    ``P(B <= u - 1) - P(B <= l - 1)`` is at least ``confidence`` (Hahn & Meeker 1991,
    *Statistical Intervals*, section 5.2; Conover 1999, *Practical Nonparametric
    Statistics*, section 3.2). At ``q = 0.5`` it is :func:`~fastbench.stats.median_ci`.

    Because ``B`` is discrete, the exact interval's coverage can sit well above the nominal
    level (98% for the p95 of 100 samples at 95%). ``method="interpolated"`` moves each
    bound between the conservative order statistic and its inner neighbour: the lower bound
    becomes ``(1 - lam) x_(l) + lam x_(l+1)`` and the upper ``(1 - mu) x_(u-1) + mu x_(u)``,
    with Nyblom's weight for a bound between ``x_(r)`` and ``x_(r+1)`` that should lie above
    the quantile with probability ``beta`` (``alpha / 2`` for the lower bound, ``1 - alpha /
    2`` for the upper)::

        lam = 1 / (1 + r (1 - q) (pi_{r+1} - beta) / ((n - r) q (beta - pi_r)))

    where ``pi_r = P(B <= r - 1)`` is the probability that ``x_(r)`` lies above the quantile
    (J. Nyblom 1992, "Note on interpolated order statistics", *Statistics & Probability
    Letters* 14, 129-131, generalising T. P. Hettmansperger & S. J. Sheather 1986,
    "Confidence intervals based on interpolated order statistics", *Statistics &
    Probability Letters* 4, 75-79, from the median to any quantile; the latter's weight makes
    the median's coverage exact for the double exponential). For other continuous
    distributions the coverage is close to the nominal level, above or below it, and no
    longer guaranteed; the bounds are then not samples themselves.

    Parameters
    ----------
    samples : array_like
        One-dimensional finite values (in any unit; the interval is in the same one).
    q : float
        The quantile, in (0, 1): 0.95 for the 95th percentile.
    confidence : float
        Coverage in (0, 1).
    method : {"exact", "interpolated"}
        "exact": two order statistics, coverage at least ``confidence``. "interpolated":
        Nyblom's interpolation between neighbouring order statistics, coverage close to
        ``confidence``.

    Returns
    -------
    (low, high) or None
        Two of the samples ("exact") or points between neighbouring samples
        ("interpolated"), or None when there are too few for an interval at this
        confidence: a tail quantile needs many (:func:`quantile_ci_min_samples`: 72 for the
        p95 and 368 for the p99 at 95%, where ``q**n`` first drops to alpha / 2).

    Raises
    ------
    TypeError
        If ``q`` or ``confidence`` is not a number, or the samples are not real numbers.
    ValueError
        If ``q`` or ``confidence`` is outside (0, 1), ``method`` is not one of
        ``QUANTILE_CI_METHODS``, or the samples are empty, not one-dimensional or not finite.
    """
    quantile = check_fraction("q", q, example="0.95 for the 95th percentile")
    level = check_fraction("confidence", confidence)
    how = check_choice("method", method, QUANTILE_CI_METHODS)
    x = np.sort(as_samples(samples))
    n = int(x.size)
    tail = (1.0 - level) / 2.0
    below = _largest_index_below(n, quantile, tail)          # l - 1
    # P(B >= u) = P(n - B <= n - u), and n - B ~ Binomial(n, 1 - q).
    above = _largest_index_below(n, 1.0 - quantile, tail)    # n - u
    if below < 0 or above < 0:
        return None
    # 1-based order statistics l = below + 1 and u = n - above, as 0-based indices.
    if how == "exact":
        return float(x[below]), float(x[n - above - 1])
    # Here l < u <= n (P(B <= l - 1) <= tail < 1 - tail <= P(B <= u - 1)), so both
    # neighbours x_(l+1) and x_(u-1) exist. The lower bound fails when it lies above Q, with
    # probability tail; the upper one lies above Q with probability 1 - tail.
    low_r, high_r = below + 1, n - above - 1
    lam = _nyblom_weight(n, quantile, low_r, tail)
    mu = _nyblom_weight(n, quantile, high_r, 1.0 - tail)
    low = (1.0 - lam) * x[low_r - 1] + lam * x[low_r]
    high = (1.0 - mu) * x[high_r - 1] + mu * x[high_r]
    # With l + 1 == u both bounds share one gap; keep them ordered.
    return float(min(low, high)), float(max(low, high))


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
