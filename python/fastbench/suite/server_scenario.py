"""The Server load scenario after MLPerf LoadGen, run in-process on a zero-argument callable
(one call is one query): Poisson arrivals into a FIFO queue served by the calling thread
(:func:`server`), and the highest arrival rate whose latency percentile meets a bound
(:func:`max_server_rate`). Results are plain data; nothing here prints.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import NDArray

from .. import _core
from .._checks import check_fraction, check_int, check_seconds
from ..report.lines import TextLines, brief_repr
from ..stats.plain import PlainRecord
from ._scenario_shared import (_CI_LEVEL, _check_callable, _fmt_ci_ms, _fmt_ms, _nearest_rank,
                               _percentiles, _t_interval)

__all__ = [
    "MAX_QUERIES",
    "MAX_RATE_QPS",
    "RateSearch",
    "RateTrial",
    "ServerResult",
    "max_server_rate",
    "server",
]

# Bounds of a Server run, checked before anything is drawn: a query is a Python call (so no
# more than ten million a second), and a run's arrival and timing arrays stay near 0.5 GB.
MAX_RATE_QPS = 1e7
MAX_QUERIES = 10_000_000

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
# Server

@dataclass(frozen=True)
class ServerResult(PlainRecord, TextLines):
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

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.queries:,} queries at {self.rate_qps:.4g} q/s offered: "
                                f"p99 {_fmt_ms(self.p99_ns)}, utilization {self.utilization:.1%}")

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
class RateSearch(PlainRecord, TextLines):
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

    def __repr__(self) -> str:
        best = ("none passed" if self.passing_rate_qps is None
                else f"{self.passing_rate_qps:.4g} q/s")
        return brief_repr(self, f"{best} at p{self.percentile * 100:g} <= "
                                f"{self.bound_s * 1e3:.4g} ms, {len(self.trials)} rates")

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
    :func:`.scenarios.single_stream`): rate ``1 / S`` is utilization 1. A passing rate (default
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

    from .scenarios import single_stream  # here: scenarios imports this module at its top
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
