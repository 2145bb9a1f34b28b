"""One sample as statistics take it: the input check every function shares (:func:`as_samples`),
the distribution-free interval of the median (:func:`median_ci`) and the percentile bootstrap
of medians that stands in where that interval does not exist. Pure functions; nothing here
times, prints or drops a sample.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_fraction
from ._scipy import sps

# Below this many samples, results carry a "few samples" warning (pyperf warns likewise).
FEW_SAMPLES = 10

# Percentile bootstrap settings. A fixed seed makes every result reproducible: the same
# input always gives the same interval. 2000 resamples keep the Monte Carlo error of a
# 2.5% quantile small (Efron & Tibshirani 1993, ch. 19, suggest >= 1000 for percentiles).
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240917
# Resampled values materialised at once; bounds memory for long runs (8 bytes each).
_BOOTSTRAP_CHUNK_VALUES = 2_000_000


def as_samples(samples: Any, *, name: str = "samples") -> NDArray[np.float64]:
    """Return ``samples`` as a 1-D float64 array after checking it.

    Raises
    ------
    TypeError
        If the values are not real numbers: complex (whose imaginary part a conversion
        would drop), strings (which it would parse), bools, None or other objects.
    ValueError
        If the input is empty, not one-dimensional, or holds NaN or infinity.
    """
    raw = np.asarray(samples)
    # Checked before converting: float64 conversion silently keeps the real part of complex
    # values and parses numeric strings, so ['1', '2'] and [1+5j] would pass as samples.
    if raw.dtype.kind not in "iuf" and not (raw.dtype.kind == "O" and _all_real(raw)):
        raise TypeError(f"{name} must hold real numbers, got {_dtype_name(raw)} values")
    arr = np.asarray(raw, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} holds {bad} non-finite value(s) (NaN or inf)")
    return arr


def _all_real(values: NDArray[Any]) -> bool:
    """Whether every element of an object array is a real number (a bool is not)."""
    return all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
               for v in values.flat)


def _dtype_name(values: NDArray[Any]) -> str:
    """What an array holds, for a message: "complex", "str", "bool", or the first odd type."""
    kind = values.dtype.kind
    named = {"c": "complex", "U": "str", "S": "bytes", "b": "bool"}
    if kind in named:
        return named[kind]
    if kind == "O":
        for v in values.flat:
            if not isinstance(v, numbers.Real) or isinstance(v, (bool, np.bool_)):
                return type(v).__name__
    return str(values.dtype)


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

    Raises
    ------
    TypeError
        If ``confidence`` is not a number.
    ValueError
        If ``confidence`` is outside (0, 1) or the samples are invalid (see :func:`as_samples`).
    """
    level = check_fraction("confidence", confidence)
    x = np.sort(as_samples(samples))
    n = x.size
    alpha = 1.0 - level
    # The largest k with P(B <= k-1) <= alpha/2. ppf gives the smallest k with
    # P(B <= k) >= alpha/2; when that holds with equality, k+1 still qualifies.
    k = int(sps().binom.ppf(alpha / 2.0, n, 0.5))
    if sps().binom.cdf(k, n, 0.5) <= alpha / 2.0:
        k += 1
    if k < 1:
        return None
    return float(x[k - 1]), float(x[n - k])


def bootstrap_medians(
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


def percentile_interval(
    values: NDArray[np.float64], confidence: float
) -> tuple[float, float]:
    """The central ``confidence`` interval of ``values`` by numpy's linear percentiles."""
    alpha = 1.0 - confidence
    low, high = np.percentile(values, [50.0 * alpha, 100.0 - 50.0 * alpha])
    return float(low), float(high)
