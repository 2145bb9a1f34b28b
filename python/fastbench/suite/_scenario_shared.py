"""The pieces the load scenarios share (:mod:`.scenarios` and :mod:`.server_scenario`):
nearest-rank latency percentiles with their order-statistic intervals, the t interval of a
mean, millisecond formatting and the check of the callable under test.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from ..stats._scipy import sps
from ..stats.quantiles import quantile_ci

# The percentiles every latency result gives, each with its order-statistic interval.
_PERCENTILES = (0.50, 0.90, 0.99)
_CI_LEVEL = 0.95


def _nearest_rank(sorted_ns: NDArray[np.float64], q: float) -> float:
    """The nearest-rank ``q`` quantile: the ceil(q n)-th smallest value."""
    n = int(sorted_ns.size)
    rank = min(n, max(1, math.ceil(q * n - 1e-9)))
    return float(sorted_ns[rank - 1])


def _percentiles(latencies_ns: NDArray[np.float64]) -> tuple[
        tuple[float, ...], tuple[tuple[float, float] | None, ...]]:
    """p50/p90/p99 (nearest rank) and their 95% order-statistic intervals."""
    x = np.sort(latencies_ns)
    values = tuple(_nearest_rank(x, q) for q in _PERCENTILES)
    cis = tuple(quantile_ci(x, q, _CI_LEVEL) for q in _PERCENTILES)
    return values, cis


def _check_callable(fn: Any) -> Callable[[], object]:
    if not callable(fn):
        raise TypeError(f"fn must be a zero-argument callable, got {type(fn).__name__}")
    return fn  # type: ignore[no-any-return]


def _t_interval(values: NDArray[np.float64], level: float) -> tuple[float, float] | None:
    """Student t interval of the mean of ``values``; None below two values."""
    n = int(values.size)
    if n < 2:
        return None
    mean = float(np.mean(values))
    t = float(sps().t.ppf(0.5 + level / 2.0, n - 1))
    half = t * float(np.std(values, ddof=1)) / math.sqrt(n)
    return mean - half, mean + half


def _fmt_ms(ns: float | None) -> str:
    return "n/a" if ns is None else f"{ns / 1e6:.3f} ms"


def _fmt_ci_ms(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f" [{ci[0] / 1e6:.3f}, {ci[1] / 1e6:.3f}]"
