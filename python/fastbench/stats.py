"""Statistics on sample arrays: pure functions, numpy/scipy based, no measuring here.

Every function validates its input (non-empty, one-dimensional, finite) and raises
ValueError with the reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats as _sps


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
    k = int(_sps.binom.ppf(alpha / 2.0, n, 0.5))
    if _sps.binom.cdf(k, n, 0.5) <= alpha / 2.0:
        k += 1
    if k < 1:
        return None
    return float(x[k - 1]), float(x[n - k])
