"""Load scenarios after MLPerf LoadGen, run in-process on a zero-argument callable (one call
is one query): SingleStream (:func:`single_stream`), Offline (:func:`offline`), Server
(:func:`server`, Poisson arrivals into a FIFO queue served by the calling thread), the
highest Server rate that meets a latency bound (:func:`max_server_rate`), and LoadGen's
early-stopping bound on a latency percentile (:func:`early_stopping`). Results are plain
data; nothing here prints.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from .. import _core
from .._checks import check_choice, check_fraction, check_int, check_seconds
from ..stats._scipy import sps
from ..stats.plain import PlainRecord
from ..stats.quantiles import quantile_ci

__all__ = [
    "OfflineResult",
    "RateSearch",
    "RateTrial",
    "ServerResult",
    "SingleStreamResult",
    "early_stopping",
    "early_stopping_min_queries",
    "max_server_rate",
    "offline",
    "server",
    "single_stream",
]

# Bounds of a Server run, checked before anything is drawn: a query is a Python call (so no
# more than ten million a second), and a run's arrival and timing arrays stay near 0.5 GB.
MAX_RATE_QPS = 1e7
MAX_QUERIES = 10_000_000

# The percentiles every latency result gives, each with its order-statistic interval.
_PERCENTILES = (0.50, 0.90, 0.99)
_CI_LEVEL = 0.95
# Early-stopping rules: "exact" is the order-statistic bound, "loadgen" LoadGen's own rank.
_RULES = ("exact", "loadgen")
# Batches of the batch-means interval of the mean waiting time (Law & Kelton 2000,
# *Simulation Modeling and Analysis*, section 9.5.3): waits in a queue are autocorrelated,
# so a t interval over single waits would be far too narrow; means of long contiguous
# batches are nearly independent.
_WAIT_BATCHES = 20
# The feeder puts each query in the queue this long before its scheduled arrival; the
# server holds it until then. Thread wake-ups and GIL hand-offs (tens of microseconds, ms
# on a busy host) so happen before the arrival instead of adding to the waiting time.
_ISSUE_AHEAD_NS = 2_000_000
# An idle server sleeps until this long before the next arrival, then busy-waits with the
# GIL released: time.sleep overshoots by tens of microseconds (the kernel's timer slack).
_SERVER_SPIN_NS = 300_000
# Warn when issue lateness is large against the mean gap between arrivals.
_LATE_SHARE = 0.05
# Warn of an unstable queue when draining the backlog after the last arrival took this
# share of the window, or the achieved utilization reached this.
_DRAIN_SHARE = 0.1
_UNSTABLE_RHO = 0.98
# Searches stop after this many tried rates, whatever the tolerance, and halve (or double)
# a starting rate at most this many times: each halving doubles a run's length, and each
# doubling past the service rate lengthens the backlog the server must drain.
_MAX_TRIALS = 40
_MAX_STEPS = 4


# ---------------------------------------------------------------------------------------
# Early stopping

def _binom_cdf(m: int, n: int, p: float) -> float:
    """P(B <= m) for B ~ Binomial(n, p)."""
    return float(sps().binom.cdf(m, n, p))


def _smallest_m(n: int, p: float, level: float, strict: bool) -> int:
    """The smallest m with P(B <= m) >= level (or > level when ``strict``), B ~ Bin(n, p)."""
    m = int(sps().binom.ppf(level, n, p))
    # ppf can land one off through rounding of the cdf; step to the exact m.
    def ok(j: int) -> bool:
        c = _binom_cdf(j, n, p)
        return c > level if strict else c >= level
    while m > 0 and ok(m - 1):
        m -= 1
    while not ok(m):
        m += 1
    return m


def early_stopping(n: int, percentile: float = 0.90, confidence: float = 0.99, *,
                   rule: str = "exact") -> int | None:
    """Rank of the order statistic that bounds a latency percentile from above.

    With ``n`` independent latencies and ``B`` the number at or below the true
    ``percentile`` quantile, ``B ~ Binomial(n, percentile)`` whatever the distribution, and
    the ``k``-th smallest latency ``x_(k)`` is at or above that quantile exactly when
    ``B <= k - 1``. The ``"exact"`` rule returns the smallest ``k`` with::

        P(B <= k - 1) = sum_{j=0}^{k-1} C(n, j) p^j (1 - p)^(n - j)  >=  confidence

    so ``x_(k)`` is an upper confidence bound on the percentile. MLPerf LoadGen states the
    same test as a count of "overlatency" queries (``loadgen/early_stopping.cc`` and
    ``PerformanceSummary::EarlyStopping`` in ``loadgen/results.cc``, mlcommons/inference):
    it finds the largest ``t >= 1`` such that ``t`` queries over a latency target would
    still pass, ``P(Binomial(n, 1 - p) <= t) < 1 - confidence``, and reports the latency
    with ``t - 1`` queries above it, ``x_(n - t + 1)``. In the terms above that is the
    smallest ``k`` with ``P(B <= k - 2) > confidence``: one rank above the exact bound (a
    more conservative report), and it needs ``k <= n``. ``rule="loadgen"`` gives LoadGen's
    rank, to compare with MLPerf results.

    Parameters
    ----------
    n : int
        Number of latencies (queries), at least 1.
    percentile : float
        The quantile bounded, in (0, 1): 0.90 for the p90.
    confidence : float
        Confidence of the bound, in (0, 1).
    rule : {"exact", "loadgen"}
        The order-statistic bound, or LoadGen's rank (see above).

    Returns
    -------
    int or None
        The 1-based rank ``k`` (the bound is the ``k``-th smallest latency), or None when
        ``n`` is below :func:`early_stopping_min_queries`.

    Raises
    ------
    TypeError
        If ``n`` is not an int or a level is not a number.
    ValueError
        If ``n`` < 1, a level is outside (0, 1), or ``rule`` is unknown.
    """
    count = check_int("n", n, 1)
    p = check_fraction("percentile", percentile, example="0.90 for the p90")
    level = check_fraction("confidence", confidence, example="0.99")
    how = check_choice("rule", rule, _RULES)
    if how == "exact":
        k = _smallest_m(count, p, level, strict=False) + 1
    else:
        k = _smallest_m(count, p, level, strict=True) + 2
    return k if k <= count else None


def early_stopping_min_queries(percentile: float = 0.90, confidence: float = 0.99, *,
                               rule: str = "exact") -> int:
    """The fewest queries for which :func:`early_stopping` gives a rank.

    For the ``"exact"`` rule that is the least ``n`` with ``percentile**n <= 1 -
    confidence`` (the bound is then the largest latency): 44 for the p90 at 99%. LoadGen's
    rule needs ``P(Binomial(n, 1 - p) <= 1) < 1 - confidence``, one query over the
    percentile allowed: 64 for the p90 at 99%, the figure LoadGen prints as "Need to process
    at least 64 queries for early stopping".

    Raises
    ------
    TypeError, ValueError
        As :func:`early_stopping` for ``percentile``, ``confidence`` and ``rule``.
    """
    p = check_fraction("percentile", percentile, example="0.90 for the p90")
    level = check_fraction("confidence", confidence, example="0.99")
    how = check_choice("rule", rule, _RULES)
    # Existence is monotone in n: grow an upper end, then bisect.
    high = 1
    while early_stopping(high, p, level, rule=how) is None:
        high *= 2
    low = high // 2  # fails (or is 0)
    while high - low > 1:
        mid = (low + high) // 2
        if early_stopping(mid, p, level, rule=how) is None:
            low = mid
        else:
            high = mid
    return high


# ---------------------------------------------------------------------------------------
# Shared pieces

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


# ---------------------------------------------------------------------------------------
# SingleStream

@dataclass(frozen=True)
class SingleStreamResult(PlainRecord):
    """One query after another, each timed.

    Attributes
    ----------
    queries : int
        Queries run.
    duration_s : float
        Wall time from the first query's start to the last one's end.
    latencies_ns : tuple of int
        Each query's latency, in order.
    percentile : float
        The percentile reported (0.90 for the p90).
    percentile_ns : float
        Its nearest-rank value: the ceil(percentile n)-th smallest latency.
    early_stopping_rank : int or None
        :func:`early_stopping`'s rank at ``confidence`` (None: too few queries).
    early_stopping_ns : float or None
        The latency at that rank: an upper bound on the true percentile at ``confidence``.
    confidence : float
        Confidence of the early-stopping bound.
    mean_ns : float
        Mean latency.
    p50_ns, p90_ns, p99_ns : float
        Nearest-rank percentiles.
    p50_ci_ns, p90_ci_ns, p99_ci_ns : (float, float) or None
        Their 95% order-statistic intervals (:func:`fastbench.stats.quantile_ci`); None
        with too few queries.
    warnings : tuple of str
        What not to trust.
    """

    queries: int
    duration_s: float
    latencies_ns: tuple[int, ...]
    percentile: float
    percentile_ns: float
    early_stopping_rank: int | None
    early_stopping_ns: float | None
    confidence: float
    mean_ns: float
    p50_ns: float
    p90_ns: float
    p99_ns: float
    p50_ci_ns: tuple[float, float] | None
    p90_ci_ns: tuple[float, float] | None
    p99_ci_ns: tuple[float, float] | None
    warnings: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """A few lines of text."""
        pct = f"p{self.percentile * 100:g}"
        bound = ("n/a (too few queries)" if self.early_stopping_ns is None
                 else f"{_fmt_ms(self.early_stopping_ns)} at {self.confidence:.0%}")
        out = [
            f"SingleStream: {self.queries} queries in {self.duration_s:.3f} s, "
            f"mean {_fmt_ms(self.mean_ns)}",
            f"  {pct} {_fmt_ms(self.percentile_ns)}, early-stopping bound {bound}",
            f"  p50 {_fmt_ms(self.p50_ns)}{_fmt_ci_ms(self.p50_ci_ns)}, "
            f"p90 {_fmt_ms(self.p90_ns)}{_fmt_ci_ms(self.p90_ci_ns)}, "
            f"p99 {_fmt_ms(self.p99_ns)}{_fmt_ci_ms(self.p99_ci_ns)}",
        ]
        out += [f"  warning: {w}" for w in self.warnings]
        return out


def single_stream(fn: Callable[[], object], *, min_queries: int = 256,
                  min_duration_s: float = 1.0, percentile: float = 0.90,
                  confidence: float = 0.99, max_time_s: float = 60.0) -> SingleStreamResult:
    """Run ``fn`` one query after another until both minimums are met (LoadGen's
    SingleStream: the next query is issued when the previous one completes).

    Parameters
    ----------
    fn : callable
        Zero-argument callable; one call is one query.
    min_queries : int
        At least this many queries.
    min_duration_s : float
        At least this long, in seconds.
    percentile : float
        The latency percentile reported with its early-stopping bound, in (0, 1).
    confidence : float
        Confidence of the early-stopping bound, in (0, 1).
    max_time_s : float
        Stop after this long even if a minimum is not met (then a warning says so).

    Returns
    -------
    SingleStreamResult

    Raises
    ------
    TypeError
        If ``fn`` is not callable or an argument has the wrong type.
    ValueError
        If a count or duration is not positive or a level is outside (0, 1).
    """
    func = _check_callable(fn)
    need = check_int("min_queries", min_queries, 1)
    min_ns = check_seconds("min_duration_s", min_duration_s) * 1e9
    p = check_fraction("percentile", percentile, example="0.90 for the p90")
    level = check_fraction("confidence", confidence, example="0.99")
    max_ns = check_seconds("max_time_s", max_time_s) * 1e9
    clock = time.perf_counter_ns
    latencies: list[int] = []
    first = clock()
    end = first
    while True:
        t0 = clock()
        func()
        end = clock()
        latencies.append(end - t0)
        elapsed = end - first
        if (len(latencies) >= need and elapsed >= min_ns) or elapsed >= max_ns:
            break
    warnings: list[str] = []
    if len(latencies) < need or end - first < min_ns:
        warnings.append(
            f"stopped at max_time_s={max_time_s:g} s with {len(latencies)} queries in "
            f"{(end - first) / 1e9:.3f} s, before min_queries={need} and "
            f"min_duration_s={min_duration_s:g} s were both met")
    x = np.asarray(latencies, dtype=np.float64)
    rank = early_stopping(x.size, p, level)
    sorted_x = np.sort(x)
    bound = None if rank is None else float(sorted_x[rank - 1])
    if rank is None:
        warnings.append(
            f"{x.size} queries are too few for an early-stopping bound on the "
            f"p{p * 100:g} at {level:.0%} (needs {early_stopping_min_queries(p, level)})")
    values, cis = _percentiles(x)
    return SingleStreamResult(
        queries=int(x.size), duration_s=(end - first) / 1e9,
        latencies_ns=tuple(latencies), percentile=p,
        percentile_ns=_nearest_rank(sorted_x, p), early_stopping_rank=rank,
        early_stopping_ns=bound, confidence=level, mean_ns=float(np.mean(x)),
        p50_ns=values[0], p90_ns=values[1], p99_ns=values[2],
        p50_ci_ns=cis[0], p90_ci_ns=cis[1], p99_ci_ns=cis[2], warnings=tuple(warnings))


# ---------------------------------------------------------------------------------------
# Offline

@dataclass(frozen=True)
class OfflineResult(PlainRecord):
    """Calls back to back; throughput in samples per second.

    Attributes
    ----------
    samples_per_call : int
        Samples one call processes (its batch size).
    calls : int
        Calls made.
    total_samples : int
        ``calls * samples_per_call``.
    duration_s : float
        Wall time from the first call's start to the last one's end.
    throughput_sps : float
        ``total_samples / duration_s``.
    throughput_ci_sps : (float, float) or None
        95% Student t interval of the mean per-block throughput (None below two blocks).
    block_throughputs_sps : tuple of float
        Throughput of each block of consecutive calls.
    mean_call_ns : float
        Mean duration of one call, timed around the call alone.
    warnings : tuple of str
        What not to trust.
    """

    samples_per_call: int
    calls: int
    total_samples: int
    duration_s: float
    throughput_sps: float
    throughput_ci_sps: tuple[float, float] | None
    block_throughputs_sps: tuple[float, ...]
    mean_call_ns: float
    warnings: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """A few lines of text."""
        ci = self.throughput_ci_sps
        ci_text = "" if ci is None else f" [{ci[0]:.4g}, {ci[1]:.4g}] (95%, over blocks)"
        out = [
            f"Offline: {self.total_samples} samples in {self.calls} calls of "
            f"{self.samples_per_call}, {self.duration_s:.3f} s",
            f"  throughput {self.throughput_sps:.4g} samples/s{ci_text}, "
            f"mean call {_fmt_ms(self.mean_call_ns)}",
        ]
        out += [f"  warning: {w}" for w in self.warnings]
        return out


def offline(fn: Callable[[], object], *, samples_per_call: int, min_duration_s: float = 1.0,
            blocks: int = 10) -> OfflineResult:
    """Call ``fn`` back to back for at least ``min_duration_s`` (LoadGen's Offline: all
    work available at once) and report samples per second.

    Parameters
    ----------
    fn : callable
        Zero-argument callable processing ``samples_per_call`` samples per call.
    samples_per_call : int
        Samples per call (at least 1).
    min_duration_s : float
        At least this long, in seconds.
    blocks : int
        Consecutive blocks of equal call counts whose throughputs give the interval (at
        least 2); at least this many calls are made.

    Returns
    -------
    OfflineResult

    Raises
    ------
    TypeError
        If ``fn`` is not callable or an argument has the wrong type.
    ValueError
        If ``samples_per_call`` < 1, ``blocks`` < 2 or the duration is not positive.
    """
    func = _check_callable(fn)
    batch = check_int("samples_per_call", samples_per_call, 1)
    min_ns = check_seconds("min_duration_s", min_duration_s) * 1e9
    nblocks = check_int("blocks", blocks, 2)
    clock = time.perf_counter_ns
    starts: list[int] = []
    ends: list[int] = []
    first = clock()
    while True:
        t0 = clock()
        func()
        t1 = clock()
        starts.append(t0)
        ends.append(t1)
        if len(ends) >= nblocks and t1 - first >= min_ns:
            break
    s = np.asarray(starts, dtype=np.float64)
    e = np.asarray(ends, dtype=np.float64)
    calls = int(e.size)
    # Block j holds calls [edges[j], edges[j+1]); it spans from its first call's start to
    # its last call's end, so the blocks tile the run and their calls back to back.
    edges = np.linspace(0, calls, nblocks + 1).astype(int)
    block_tp = np.array([
        (edges[j + 1] - edges[j]) * batch / ((e[edges[j + 1] - 1] - s[edges[j]]) / 1e9)
        for j in range(nblocks)])
    duration_s = (e[-1] - s[0]) / 1e9
    warnings: list[str] = []
    if calls < 10 * nblocks:
        warnings.append(f"only {calls} calls in {nblocks} blocks: the interval rests on "
                        "few calls per block; raise min_duration_s")
    return OfflineResult(
        samples_per_call=batch, calls=calls, total_samples=calls * batch,
        duration_s=float(duration_s), throughput_sps=float(calls * batch / duration_s),
        throughput_ci_sps=_t_interval(block_tp, _CI_LEVEL),
        block_throughputs_sps=tuple(float(v) for v in block_tp),
        mean_call_ns=float(np.mean(e - s)), warnings=tuple(warnings))


# ---------------------------------------------------------------------------------------
# Server

@dataclass(frozen=True)
class ServerResult(PlainRecord):
    """Poisson arrivals served first come, first served by one server.

    Times are integers of nanoseconds on ``time.perf_counter_ns`` measured from the
    first scheduled arrival. A query counts as arrived at its scheduled time (LoadGen
    issues on schedule); how late the feeding thread actually issued it is reported apart.

    Attributes
    ----------
    rate_qps : float
        Offered arrival rate (queries per second).
    achieved_rate_qps : float
        ``(n - 1) / (last arrival - first arrival)``: the rate of the arrivals drawn.
    completed_rate_qps : float
        ``n / window_s``: queries completed per second over the window.
    queries : int
        Queries issued and served.
    window_s : float
        From the first scheduled arrival to the last finish: every query arrives and leaves
        inside it, so Little's law holds on it exactly.
    utilization : float
        Busy time (sum of service times) over the window.
    mean_service_ns : float
        Mean of finish - start.
    mean_wait_ns : float
        Mean of start - arrival (time in queue).
    wait_ci_ns : (float, float) or None
        95% batch-means interval of the mean wait (20 contiguous batches, Student t).
    mean_latency_ns : float
        Mean of finish - arrival (time in system).
    p50_ns, p90_ns, p99_ns : float
        Nearest-rank latency percentiles.
    p50_ci_ns, p90_ci_ns, p99_ci_ns : (float, float) or None
        Their 95% order-statistic intervals; these assume independent latencies, which
        queueing makes optimistic near saturation.
    little_l : float
        Time-average number in system: the integral of N(t) over the window (swept from the
        event timeline) divided by its length.
    little_lambda_w : float
        ``completed_rate_qps`` times the mean time in system.
    little_rel_diff : float
        ``|L - lambda W| / lambda W``.
    mean_issue_lateness_ns, max_issue_lateness_ns : float
        How long after its scheduled arrival the feeding thread put a query in the queue
        (0 for one issued ahead, as intended).
    arrivals_ns, issues_ns, starts_ns, finishes_ns : tuple of int
        Per query: scheduled arrival, issue (normally 2 ms ahead of the arrival), service
        start, service end.
    warnings : tuple of str
        An unstable queue, late issuing, or a run cut short.
    """

    rate_qps: float
    achieved_rate_qps: float
    completed_rate_qps: float
    queries: int
    window_s: float
    utilization: float
    mean_service_ns: float
    mean_wait_ns: float
    wait_ci_ns: tuple[float, float] | None
    mean_latency_ns: float
    p50_ns: float
    p90_ns: float
    p99_ns: float
    p50_ci_ns: tuple[float, float] | None
    p90_ci_ns: tuple[float, float] | None
    p99_ci_ns: tuple[float, float] | None
    little_l: float
    little_lambda_w: float
    little_rel_diff: float
    mean_issue_lateness_ns: float
    max_issue_lateness_ns: float
    arrivals_ns: tuple[int, ...]
    issues_ns: tuple[int, ...]
    starts_ns: tuple[int, ...]
    finishes_ns: tuple[int, ...]
    warnings: tuple[str, ...] = ()

    @property
    def latencies_ns(self) -> NDArray[np.float64]:
        """Per query finish - scheduled arrival."""
        return (np.asarray(self.finishes_ns, dtype=np.float64)
                - np.asarray(self.arrivals_ns, dtype=np.float64))

    def latency_percentile_ns(self, q: float) -> float:
        """Nearest-rank ``q`` quantile of the latencies."""
        return _nearest_rank(np.sort(self.latencies_ns),
                             check_fraction("q", q, example="0.99 for the p99"))

    def lines(self) -> list[str]:
        """A few lines of text."""
        out = [
            f"Server: {self.queries} queries, offered {self.rate_qps:.4g} q/s, achieved "
            f"{self.achieved_rate_qps:.4g} q/s, utilization {self.utilization:.1%}",
            f"  wait {_fmt_ms(self.mean_wait_ns)}{_fmt_ci_ms(self.wait_ci_ns)}, latency mean "
            f"{_fmt_ms(self.mean_latency_ns)}, p50 {_fmt_ms(self.p50_ns)}, "
            f"p90 {_fmt_ms(self.p90_ns)}, p99 {_fmt_ms(self.p99_ns)}"
            f"{_fmt_ci_ms(self.p99_ci_ns)}",
            f"  Little: L {self.little_l:.4g} vs lambda W {self.little_lambda_w:.4g} "
            f"({self.little_rel_diff:.2%} apart); issue lateness mean "
            f"{_fmt_ms(self.mean_issue_lateness_ns)}, max {_fmt_ms(self.max_issue_lateness_ns)}",
        ]
        out += [f"  warning: {w}" for w in self.warnings]
        return out


def _time_average_in_system(arrivals: NDArray[np.float64], finishes: NDArray[np.float64],
                            window_ns: float) -> float:
    """Integral of N(t) dt over the window divided by its length, swept event by event."""
    times = np.concatenate([arrivals, finishes])
    steps = np.concatenate([np.ones(arrivals.size), -np.ones(finishes.size)])
    # At equal times, count the departure first: N never goes above the true count.
    order = np.lexsort((steps, times))
    t = times[order]
    n_after = np.cumsum(steps[order])
    area = float(np.sum(n_after[:-1] * np.diff(t)))
    return area / window_ns


def _feed(schedule: list[int], queue: collections.deque[int], cond: threading.Condition,
          issues: list[int], stop_after_ns: int, state: dict[str, bool]) -> None:
    """Put each query in the queue :data:`_ISSUE_AHEAD_NS` before its scheduled arrival
    (sleeping in between), then notify the server."""
    clock = time.perf_counter_ns
    for i, due in enumerate(schedule):
        if due > stop_after_ns:
            state["truncated"] = True
            break
        ahead = due - _ISSUE_AHEAD_NS - clock()
        if ahead > 0:
            time.sleep(ahead / 1e9)
        with cond:
            issues[i] = clock()
            queue.append(i)
            cond.notify()
    with cond:
        state["done"] = True
        cond.notify()


def _next_query(queue: collections.deque[int], cond: threading.Condition,
                state: dict[str, bool], due_ns: int) -> bool:
    """Take the next query from the queue and hold it until its arrival time; False once
    the feeder has stopped and the queue is empty.

    The feeder issues each query ahead of its arrival, so a thread wake-up (tens of
    microseconds, more on a busy host) is spent before the arrival, not counted as waiting
    time. The last stretch to the arrival is a busy-wait with the GIL released.
    """
    clock = time.perf_counter_ns
    while not queue:  # deque operations are atomic; only this thread pops
        with cond:
            if not queue:
                if state["done"]:
                    return False
                cond.wait(0.05)
    queue.popleft()
    ahead = due_ns - clock()
    while ahead > _SERVER_SPIN_NS:
        time.sleep((ahead - _SERVER_SPIN_NS) / 1e9)
        ahead = due_ns - clock()
    if ahead > 0:
        _core.spin(float(ahead))
    return True


def server(fn: Callable[[], object], rate_qps: float, *, min_queries: int = 1000,
           min_duration_s: float = 1.0, seed: int = 0,
           max_time_s: float = 60.0) -> ServerResult:
    """Serve Poisson arrivals at ``rate_qps`` in arrival order (LoadGen's Server).

    Arrival times are drawn ahead (exponential gaps of mean ``1 / rate_qps``, from
    ``numpy.random.default_rng(seed)``); a feeding thread puts each query, stamped with
    its arrival time, in a FIFO queue and notifies the calling thread, the one server,
    which takes them in order and calls ``fn`` no earlier than the arrival. The feeder
    issues each query 2 ms before its arrival, so that waking the server (a thread wake-up
    and a GIL hand-off, tens of microseconds and more on a busy host) is not counted as
    waiting time: the harness's own cost stays out of the latency, as LoadGen keeps its
    issue overhead out. ``fn`` runs in the calling thread; the feeder mostly sleeps, and an
    idle server sleeps until shortly before the next arrival, then busy-waits with the GIL
    released. Latency is finish - scheduled arrival.

    Parameters
    ----------
    fn : callable
        Zero-argument callable; one call serves one query. If it holds the GIL throughout
        (a pure-Python or a native call that does not release it) the feeder can only issue
        between calls, and the issue lateness shows it.
    rate_qps : float
        Offered arrival rate, queries per second.
    min_queries : int
        At least this many queries are scheduled.
    min_duration_s : float
        Queries are scheduled over at least this long, in seconds.
    seed : int
        Seed of the arrival times.
    max_time_s : float
        No query is issued later than this after the start (a warning says so).

    Returns
    -------
    ServerResult

    Raises
    ------
    TypeError
        If ``fn`` is not callable or an argument has the wrong type.
    ValueError
        If the rate, a count or a duration is not positive.
    """
    func = _check_callable(fn)
    rate = check_seconds("rate_qps", rate_qps)  # a positive finite number
    if rate > MAX_RATE_QPS:
        raise ValueError(f"rate_qps must be at most {MAX_RATE_QPS:.0e} queries a second (each "
                         f"query is a Python call), got {rate_qps!r}")
    need = check_int("min_queries", min_queries, 2, maximum=MAX_QUERIES)
    min_s = check_seconds("min_duration_s", min_duration_s)
    rng_seed = check_int("seed", seed, 0)
    max_s = check_seconds("max_time_s", max_time_s)
    if min_s > max_s:
        raise ValueError(f"min_duration_s={min_duration_s!r} cannot be reached within "
                         f"max_time_s={max_time_s!r}")
    n = max(need, math.ceil(rate * min_s))
    if n > MAX_QUERIES:  # before the arrival times are drawn: 8 bytes each, several arrays
        raise ValueError(f"rate_qps={rate_qps!r} for min_duration_s={min_duration_s!r} asks "
                         f"for {n:,} queries; a run holds at most {MAX_QUERIES:,}")
    gaps_ns = np.random.default_rng(rng_seed).exponential(1e9 / rate, n)
    gaps_ns[0] = 0.0
    lead_ns = 2_000_000  # let the feeder start before the first arrival
    clock = time.perf_counter_ns
    _core.spin(0.0)  # the first spin calibrates the TSC (tens of ms): not inside the run
    origin = clock() + lead_ns
    schedule = [origin + int(v) for v in np.cumsum(gaps_ns)]
    issues = [0] * n
    starts: list[int] = []
    finishes: list[int] = []
    queue: collections.deque[int] = collections.deque()
    cond = threading.Condition()
    state = {"done": False, "truncated": False}
    feeder = threading.Thread(
        target=_feed, args=(schedule, queue, cond, issues, origin + int(max_s * 1e9), state),
        name="fastbench-server-feeder", daemon=True)
    feeder.start()
    try:
        for i in range(n):
            if not _next_query(queue, cond, state, schedule[i]):
                break
            t0 = clock()
            func()
            t1 = clock()
            starts.append(t0)
            finishes.append(t1)
    finally:
        feeder.join()
    served = len(starts)
    if served < 2:
        raise ValueError(
            f"only {served} queries were issued within max_time_s={max_time_s!r} s; "
            "raise it or the rate")
    arr = np.asarray(schedule[:served], dtype=np.float64) - origin
    iss = np.asarray(issues[:served], dtype=np.float64) - origin
    st = np.asarray(starts, dtype=np.float64) - origin
    fin = np.asarray(finishes, dtype=np.float64) - origin
    return _server_result(rate, arr, iss, st, fin, bool(state["truncated"]), max_s, n)


def _server_result(rate: float, arr: NDArray[np.float64], iss: NDArray[np.float64],
                   st: NDArray[np.float64], fin: NDArray[np.float64], truncated: bool,
                   max_s: float, scheduled: int) -> ServerResult:
    """The statistics of a finished Server run."""
    served = int(arr.size)
    window_ns = float(fin[-1] - arr[0])
    service = fin - st
    wait = st - arr
    sojourn = fin - arr
    # Issued ahead by design; only an issue after the arrival is late.
    lateness = np.maximum(iss - arr, 0.0)
    achieved = (served - 1) / ((arr[-1] - arr[0]) / 1e9)
    completed = served / (window_ns / 1e9)
    utilization = float(np.sum(service)) / window_ns
    little_l = _time_average_in_system(arr, fin, window_ns)
    little_lw = completed * float(np.mean(sojourn)) / 1e9
    batches = np.array([float(np.mean(b)) for b in np.array_split(wait, _WAIT_BATCHES)])
    values, cis = _percentiles(sojourn)
    warnings: list[str] = []
    rho = achieved * float(np.mean(service)) / 1e9
    drain_ns = float(fin[-1] - arr[-1])
    if rho >= _UNSTABLE_RHO or drain_ns > _DRAIN_SHARE * window_ns:
        warnings.append(
            f"the queue was still growing: achieved utilization {rho:.2f} (arrival rate x "
            f"mean service); draining the backlog after the last arrival took "
            f"{drain_ns / 1e9:.3f} s of {window_ns / 1e9:.3f} s: the rate is at or above "
            "the service rate, so latencies depend on the run's length")
    mean_gap_ns = 1e9 / achieved
    if float(np.mean(lateness)) > _LATE_SHARE * mean_gap_ns:
        warnings.append(
            f"queries were issued late: mean {float(np.mean(lateness)) / 1e3:.1f} us, max "
            f"{float(np.max(lateness)) / 1e3:.1f} us after schedule, against a mean gap of "
            f"{mean_gap_ns / 1e3:.1f} us (a busy host, or fn holding the GIL)")
    if truncated:
        warnings.append(f"stopped issuing at max_time_s={max_s:g} s after {served} of "
                        f"{scheduled} scheduled queries")
    return ServerResult(
        rate_qps=rate, achieved_rate_qps=float(achieved), completed_rate_qps=float(completed),
        queries=served, window_s=window_ns / 1e9, utilization=utilization,
        mean_service_ns=float(np.mean(service)), mean_wait_ns=float(np.mean(wait)),
        wait_ci_ns=_t_interval(batches, _CI_LEVEL) if served >= 2 * _WAIT_BATCHES else None,
        mean_latency_ns=float(np.mean(sojourn)),
        p50_ns=values[0], p90_ns=values[1], p99_ns=values[2],
        p50_ci_ns=cis[0], p90_ci_ns=cis[1], p99_ci_ns=cis[2],
        little_l=little_l, little_lambda_w=little_lw,
        little_rel_diff=abs(little_l - little_lw) / little_lw,
        mean_issue_lateness_ns=float(np.mean(lateness)),
        max_issue_lateness_ns=float(np.max(lateness)),
        arrivals_ns=tuple(int(v) for v in arr), issues_ns=tuple(int(v) for v in iss),
        starts_ns=tuple(int(v) for v in st), finishes_ns=tuple(int(v) for v in fin),
        warnings=tuple(warnings))


# ---------------------------------------------------------------------------------------
# The highest Server rate within a latency bound

@dataclass(frozen=True)
class RateTrial:
    """One Server run of a rate search.

    Attributes
    ----------
    rate_qps : float
        Offered rate tried.
    latency_ns : float
        Its nearest-rank latency percentile.
    passed : bool
        Whether that percentile was within the bound.
    utilization : float
        The run's utilization.
    """

    rate_qps: float
    latency_ns: float
    passed: bool
    utilization: float


@dataclass(frozen=True)
class RateSearch(PlainRecord):
    """The highest Poisson rate whose latency percentile stayed within a bound.

    Attributes
    ----------
    bound_s : float
        The latency bound, seconds.
    percentile : float
        The percentile held to it (0.99 for the p99).
    service_s : float
        Median single-stream latency, seconds: 1 / service_s is utilization 1.
    passing_rate_qps : float or None
        Highest rate tried that passed (None: none did).
    failing_rate_qps : float or None
        Lowest rate tried above it that failed (None: none did).
    tolerance : float
        Relative width the bracket was narrowed to.
    trials : tuple of RateTrial
        Every rate tried, in order.
    warnings : tuple of str
        Searches that could not bracket the rate, and the runs' own warnings.
    """

    bound_s: float
    percentile: float
    service_s: float
    passing_rate_qps: float | None
    failing_rate_qps: float | None
    tolerance: float
    trials: tuple[RateTrial, ...]
    warnings: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """A few lines of text."""
        pct = f"p{self.percentile * 100:g}"
        best = ("none passed" if self.passing_rate_qps is None
                else f"{self.passing_rate_qps:.4g} q/s")
        out = [f"Max Server rate with {pct} <= {self.bound_s * 1e3:.3f} ms: {best} "
               f"(service {self.service_s * 1e3:.3f} ms, {len(self.trials)} rates tried)"]
        if self.failing_rate_qps is not None:
            out.append(f"  lowest failing rate {self.failing_rate_qps:.4g} q/s")
        out += [f"  warning: {w}" for w in self.warnings]
        return out


def max_server_rate(fn: Callable[[], object], *, p99_bound_s: float, percentile: float = 0.99,
                    low_qps: float | None = None, high_qps: float | None = None,
                    tolerance: float = 0.05, min_queries: int = 1000,
                    min_duration_s: float = 1.0, seed: int = 0,
                    max_time_s: float = 60.0) -> RateSearch:
    """The highest Poisson arrival rate whose latency percentile stays within a bound.

    The search starts from the single-stream service time ``S`` (median of a short
    :func:`single_stream`): rate ``1 / S`` is utilization 1. A passing rate (default
    ``0.5 / S``, halved while it fails) and a failing one (default ``1 / S``, doubled while
    it passes) bracket the answer; then the bracket is bisected in log space (the geometric
    mean is tried) until ``failing / passing - 1 <= tolerance``. Each rate is one
    :func:`server` run with the same seed, so the comparison between rates is not blurred
    by different arrival draws; the percentile of one run is still noisy, so the answer is
    a rate that passed once, not a guarantee. A starting rate is halved (or doubled) at
    most four times; a search that finds no passing (or no failing) rate says so.

    Parameters
    ----------
    fn : callable
        Zero-argument callable; one call serves one query.
    p99_bound_s : float
        The latency bound, seconds.
    percentile : float
        The latency percentile held to the bound, in (0, 1).
    low_qps, high_qps : float or None
        Starting passing and failing rates (defaults above).
    tolerance : float
        Relative width of the final bracket, in (0, 1).
    min_queries, min_duration_s, seed, max_time_s
        Passed to every :func:`server` run.

    Returns
    -------
    RateSearch

    Raises
    ------
    TypeError
        If ``fn`` is not callable or an argument has the wrong type.
    ValueError
        If a rate, bound or duration is not positive, a level is outside (0, 1), or
        ``low_qps >= high_qps``.
    """
    func = _check_callable(fn)
    bound_s = check_seconds("p99_bound_s", p99_bound_s)
    q = check_fraction("percentile", percentile, example="0.99 for the p99")
    tol = check_fraction("tolerance", tolerance, example="0.05 for 5%")
    low = None if low_qps is None else check_seconds("low_qps", low_qps)
    high = None if high_qps is None else check_seconds("high_qps", high_qps)
    if low is not None and high is not None and low >= high:
        raise ValueError(f"low_qps must be below high_qps, got {low_qps!r} and {high_qps!r}")
    check_int("min_queries", min_queries, 2)
    check_seconds("min_duration_s", min_duration_s)
    check_int("seed", seed, 0)
    check_seconds("max_time_s", max_time_s)

    probe = single_stream(func, min_queries=50, min_duration_s=min(0.2, min_duration_s),
                          max_time_s=max_time_s)
    service_s = float(np.median(np.asarray(probe.latencies_ns, dtype=np.float64))) / 1e9
    service_s = max(service_s, 1e-9)
    trials: list[RateTrial] = []
    warnings: list[str] = []

    def run(rate: float) -> bool:
        res = server(func, rate, min_queries=min_queries, min_duration_s=min_duration_s,
                     seed=seed, max_time_s=max_time_s)
        latency = res.latency_percentile_ns(q)
        passed = latency <= bound_s * 1e9
        trials.append(RateTrial(rate_qps=rate, latency_ns=latency, passed=passed,
                                utilization=res.utilization))
        warnings.extend(f"at {rate:.4g} q/s: {w}" for w in res.warnings)
        return passed

    def result(passing: float | None, failing: float | None) -> RateSearch:
        return RateSearch(bound_s=bound_s, percentile=q, service_s=service_s,
                          passing_rate_qps=passing, failing_rate_qps=failing, tolerance=tol,
                          trials=tuple(trials), warnings=tuple(warnings))

    if service_s > bound_s:
        warnings.append(f"the service time alone ({service_s * 1e3:.3f} ms) exceeds the "
                        f"bound ({bound_s * 1e3:.3f} ms): no rate can pass")
    passing: float | None = None
    failing: float | None = None
    rate = low if low is not None else 0.5 / service_s
    for _ in range(_MAX_STEPS):               # find a passing rate
        if run(rate):
            passing = rate
            break
        failing = rate
        rate /= 2.0
    if passing is None:
        warnings.append(f"no rate passed, down to {failing:.4g} q/s: at that load the "
                        "latency is the service's (or the host's), not the queue's")
        return result(None, failing)
    if failing is None:
        rate = high if high is not None else max(1.0 / service_s, 2.0 * passing)
        for _ in range(_MAX_STEPS):           # find a failing rate above it
            if not run(rate):
                failing = rate
                break
            passing = rate
            rate *= 2.0
    if failing is None:
        warnings.append(f"every rate up to {passing:.4g} q/s passed")
        return result(passing, None)
    while failing / passing - 1.0 > tol and len(trials) < _MAX_TRIALS:
        mid = math.sqrt(passing * failing)
        if run(mid):
            passing = mid
        else:
            failing = mid
    if failing / passing - 1.0 > tol:
        warnings.append(f"stopped after {_MAX_TRIALS} runs before the bracket narrowed "
                        f"to {tol:.0%}")
    return result(passing, failing)
