"""Amdahl's law, and the per-step ratio statistics a profile's shares and projections use.

A leaf: numbers in, numbers out. A share of a step is a ratio of two sums over steps (the
item's time over the step time), so its interval is a ratio estimator's: the jackknife's
standard error across steps (each step left out in turn) with Student's t. Steps are the
independent units; the ops inside one step are not.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats as _scipy_stats


__all__ = ["amdahl", "ratio_ci"]


def amdahl(share: float, speedup: float) -> float:
    """The whole program's speedup when a part taking ``share`` of its time runs ``speedup``
    times faster: ``1 / ((1 - share) + share / speedup)``.

    Parameters
    ----------
    share : float
        The part's fraction of the time, 0 to 1.
    speedup : float
        How many times faster the part gets (> 0; ``math.inf`` removes it). Below 1 is a
        slowdown.

    Examples
    --------
    >>> round(amdahl(0.7, 2.0), 2)
    1.54
    >>> amdahl(0.5, math.inf)
    2.0
    """
    if isinstance(share, bool) or not isinstance(share, (int, float)) \
            or not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be a fraction of the time from 0 to 1 (0.7 for 70%), "
                         f"got {share!r}")
    p = float(share)
    if isinstance(speedup, bool) or not isinstance(speedup, (int, float)) \
            or math.isnan(speedup) or speedup <= 0:
        raise ValueError(f"speedup must be a positive number of times faster (2.0 halves the "
                         f"part's time, math.inf removes it), got {speedup!r}")
    return 1.0 / ((1.0 - p) + (0.0 if math.isinf(speedup) else p / float(speedup)))


def ratio_ci(a: Any, b: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """``R = sum(a) / sum(b)`` over paired per-step values and its confidence interval.

    The interval is ``R ± t * se`` with the jackknife's standard error (``R`` recomputed
    with each step left out) and Student's t on ``n - 1`` degrees of freedom; to first order
    it equals the linearised ``sd(a - R b) / (sqrt(n) mean(b))``, and it is wider where the
    ratio bends over the steps' spread. With one step there is no spread to judge: the
    interval is ``(nan, nan)``.

    Returns
    -------
    (R, low, high)
    """
    x: NDArray[np.float64] = np.asarray(a, dtype=np.float64)
    y: NDArray[np.float64] = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError(f"a and b must be 1-D of one non-zero length, got shapes "
                         f"{x.shape} and {y.shape}")
    total = float(y.sum())
    if total <= 0:
        return math.nan, math.nan, math.nan
    r = float(x.sum()) / total
    n = x.size
    if n < 2:
        return r, math.nan, math.nan
    # The jackknife's spread of the ratio with each step left out: for a ratio it is a
    # little wider than the linearised (delta-method) spread at few steps, where the latter
    # covers less than it promises.
    rest = total - y
    if np.any(rest <= 0):
        return r, math.nan, math.nan
    leave_one_out = (float(x.sum()) - x) / rest
    se = math.sqrt((n - 1) / n * float(np.sum((leave_one_out - leave_one_out.mean()) ** 2)))
    t = float(_scipy_stats.t.ppf(0.5 + confidence / 2, n - 1))
    return r, r - t * se, r + t * se
