"""Load scenarios after MLPerf LoadGen, run in-process on a zero-argument callable (one call
is one query): SingleStream (:func:`single_stream`), Offline (:func:`offline`), Server
(:func:`server`, Poisson arrivals into a FIFO queue served by the calling thread), the
highest Server rate that meets a latency bound (:func:`max_server_rate`), and LoadGen's
early-stopping bound on a latency percentile (:func:`early_stopping`). Results are plain
data; nothing here prints. The Server scenario and its rate search are written in
:mod:`.server_scenario` and imported from here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._checks import check_choice, check_fraction, check_int, check_seconds
from ..report.lines import TextLines, brief_repr
from ..stats._scipy import sps
from ..stats.plain import PlainRecord
from ._scenario_shared import (_CI_LEVEL, _check_callable, _fmt_ci_ms, _fmt_ms, _nearest_rank,
                               _percentiles, _t_interval)
from .server_scenario import RateSearch, RateTrial, ServerResult, max_server_rate, server
from .server_scenario import MAX_QUERIES, MAX_RATE_QPS  # noqa: F401  (their old home)

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

# Early-stopping rules: "exact" is the order-statistic bound, "loadgen" LoadGen's own rank.
_RULES = ("exact", "loadgen")


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
# SingleStream

@dataclass(frozen=True)
class SingleStreamResult(PlainRecord, TextLines):
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

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.queries:,} queries: p50 {_fmt_ms(self.p50_ns)}, "
                                f"p90 {_fmt_ms(self.p90_ns)}, p99 {_fmt_ms(self.p99_ns)}")

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
class OfflineResult(PlainRecord, TextLines):
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

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.throughput_sps:.4g} samples/s over {self.calls:,} calls "
                                f"of {self.samples_per_call}")

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
