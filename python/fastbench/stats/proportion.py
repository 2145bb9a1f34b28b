"""The confidence interval of a proportion estimated from a count: ``k`` of ``n`` trials
(a sampling profiler's hits on a function among its samples). Pure arithmetic on counts;
nothing here samples, times or prints.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from .._checks import check_fraction, check_int

__all__ = ["wilson_interval"]


def wilson_interval(successes: Any, trials: Any, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion.

    Why Wilson: the textbook Wald interval ``p ± z sqrt(p(1-p)/n)`` collapses to a single
    point at 0 or n successes and covers far less than its nominal level for small shares
    or few trials, exactly where a profile's smaller rows live; Clopper-Pearson's "exact"
    interval never under-covers but is wider than it needs to be. Wilson's interval inverts
    the score test, stays inside [0, 1], is never empty of information at 0 or n, and its
    coverage stays close to the nominal level across p and n (Brown, Cai & DasGupta 2001,
    "Interval Estimation for a Binomial Proportion", Statistical Science 16(2), which
    recommends it). Its formula, with ``p = k/n`` and ``z`` the normal quantile::

        (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)

    Parameters
    ----------
    successes : int
        The count ``k``, from 0 to ``trials``.
    trials : int
        The number of trials ``n`` (at least 1).
    confidence : float
        Two-sided confidence level in (0, 1).

    Returns
    -------
    tuple of float
        ``(low, high)``, both within [0, 1].

    Raises
    ------
    TypeError
        If a count is not an int or ``confidence`` is not a number.
    ValueError
        If ``trials`` < 1, ``successes`` is outside [0, trials], or ``confidence`` is not in
        (0, 1).
    """
    n = check_int("trials", trials, 1)
    k = check_int("successes", successes)
    if not 0 <= k <= n:
        raise ValueError(f"successes must be from 0 to trials ({n}), got {k}")
    level = check_fraction("confidence", confidence, example="0.95")
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p = k / n
    z2n = z * z / n
    center = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    # At k = 0 (or n) the exact bound is 0 (or 1); rounding must not push it past.
    low = 0.0 if k == 0 else max(0.0, center - half)
    high = 1.0 if k == n else min(1.0, center + half)
    return low, high
