"""The confidence interval of a proportion estimated from a count: ``k`` of ``n`` trials
(a sampling profiler's hits on a function among its samples), or from weighted trials (the
same profiler's samples, each counting the time since the one before). Pure arithmetic;
nothing here samples, times or prints.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from .._checks import check_finite, check_fraction, check_int

__all__ = ["weighted_wilson_interval", "wilson_interval"]


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
    return _wilson(k / n, float(n), level, k == 0, k == n)


def _wilson(p: float, n: float, level: float, none: bool, every: bool) -> tuple[float, float]:
    """Wilson's interval of the proportion ``p`` from ``n`` trials (a real number for an
    effective count); ``none`` / ``every``: no trial or every trial was a success."""
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    z2n = z * z / n
    center = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(max(p * (1.0 - p), 0.0) / n + z2n / (4.0 * n))
    # At k = 0 (or n) the exact bound is 0 (or 1); rounding must not push it past.
    low = 0.0 if none else max(0.0, center - half)
    high = 1.0 if every else min(1.0, center + half)
    return low, high


def weighted_wilson_interval(weight_in: float, square_in: float, weight_all: float,
                             square_all: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's interval of a share estimated from weighted trials: ``p = W_in / W``, where
    ``W_in`` sums the weights of the successes and ``W`` every trial's.

    Wilson's formula is applied with an effective number of trials, the count of
    equal-weight trials that would give ``p`` its variance, and the smaller of two
    estimates of it: the item's own, ``p (1 - p) / v`` with the plug-in variance
    ``v = sum w_i² (x_i - p)² / W² = ((1 - p)² S_in + p² (S - S_in)) / W²`` (``x_i`` 1 for a
    success, ``S`` the sum of squared weights), and Kish's effective sample size ``W² / S``
    (Kish 1965, *Survey Sampling*, 8.2), which holds for every item when the weights do not
    depend on the outcome. The plug-in alone covered only 75% where one trial in ten
    weighed 10 times the rest and p = 0.05 (200 trials); the smaller of the two covered
    95-97% there and 94-97% across p = 0.05-0.7, 50-1000 trials and weights up to 10:1
    (simulated). With equal weights both are the number of trials and the interval is
    :func:`wilson_interval`'s.

    Parameters
    ----------
    weight_in, square_in : float
        Sum of the successes' weights and of their squares.
    weight_all, square_all : float
        The same sums over every trial (``weight_all`` > 0).
    confidence : float
        Two-sided confidence level in (0, 1).

    Raises
    ------
    TypeError
        A sum or ``confidence`` is not a number.
    ValueError
        A sum is negative or not finite, ``weight_all`` is 0, the successes' sums exceed
        the totals, or ``confidence`` is not in (0, 1).
    """
    w_in = check_finite("weight_in", weight_in)
    s_in = check_finite("square_in", square_in)
    w = check_finite("weight_all", weight_all)
    s = check_finite("square_all", square_all)
    level = check_fraction("confidence", confidence, example="0.95")
    if min(w_in, s_in) < 0.0 or w <= 0.0 or s <= 0.0:
        raise ValueError(f"weights must be >= 0 with positive totals, got weight_in={w_in!r}, "
                         f"square_in={s_in!r}, weight_all={w!r}, square_all={s!r}")
    tol = 1e-9
    if w_in > w * (1.0 + tol) or s_in > s * (1.0 + tol):
        raise ValueError(f"the successes' sums ({w_in!r}, {s_in!r}) exceed the totals "
                         f"({w!r}, {s!r})")
    p = min(w_in / w, 1.0)
    none, every = w_in <= 0.0, w_in >= w * (1.0 - tol)
    n_eff = w * w / s  # Kish
    variance = ((1.0 - p) ** 2 * s_in + p * p * max(s - s_in, 0.0)) / (w * w)
    if not (none or every) and variance > 0.0:
        n_eff = min(n_eff, p * (1.0 - p) / variance)
    return _wilson(0.0 if none else 1.0 if every else p, n_eff, level, none, every)
