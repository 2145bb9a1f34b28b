"""What a simulated instruction count costs, said before a long one: valgrind's start-up per
run plus its slowdown times the calls' native time (:func:`estimate_count_s`, with the
figures measured by ``benchmarks/valgrind_cost.py``), the one-line notice built from it, and
how many runs go at once. Nothing here counts: :mod:`.instructions` does.
"""

from __future__ import annotations

import os
from typing import Callable

from ..units import format_ns

__all__ = ["LONG_COUNT_S", "VALGRIND_SLOWDOWN", "VALGRIND_STARTUP_S", "announce",
           "check_notice", "cost_notice", "estimate_count_s", "parallel_runs"]

# What a simulated count costs, for the estimate said before a long one (estimate_count_s):
# per run, valgrind's start-up (two interpreters under cachegrind side by side, one with the
# calls and one without) plus the calls' native time times valgrind's slowdown. Measured with
# `python benchmarks/valgrind_cost.py --repeats 2` (valgrind 3.19 cachegrind, CPython 3.11,
# a quiet 2-vCPU VM; one run per count, the median of 2 per point; slowdown = the extra wall
# time of many calls over their native time): loop100 (a pure Python loop) 71x, sorted150
# 85x, sum(range(200000)) 46x, sorted() of 20000 ints 41x; start-up 2.7-3.1 s. The median
# slowdown (58x) is the estimate; a count's true cost may lie from about 0.7 to 1.5 times
# its share of it.
VALGRIND_SLOWDOWN = 60.0
VALGRIND_STARTUP_S = 3.0
# A simulated count expected to take at least this long is announced (``notice``) first.
LONG_COUNT_S = 10.0


def check_notice(notice: object) -> Callable[[str], None] | None:
    if notice is not None and not callable(notice):
        raise TypeError(f"notice must be callable (e.g. print) or None, got "
                        f"{type(notice).__name__}")
    return notice


def parallel_runs(runs: int) -> int:
    """Simulated runs at once: each runs two valgrind processes, so one per two cores."""
    return min(runs, max(1, (os.cpu_count() or 1) // 2))


def estimate_count_s(per_call_ns: float, calls: int, runs: int, parallel: int) -> float:
    """Expected wall time in seconds of a simulated count: ``ceil(runs / parallel)`` waves
    of runs, each ``VALGRIND_STARTUP_S + VALGRIND_SLOWDOWN x calls x per_call_ns``.

    Parameters
    ----------
    per_call_ns : float
        Native time of one call in ns (>= 0).
    calls : int
        Calls per run.
    runs : int
        Runs (heap layouts).
    parallel : int
        Runs under way at once (>= 1).

    Returns
    -------
    float
        Seconds; an estimate from :data:`VALGRIND_SLOWDOWN` and
        :data:`VALGRIND_STARTUP_S`, measured on one machine (benchmarks/valgrind_cost.py).
    """
    waves = -(-runs // max(parallel, 1))
    return waves * (VALGRIND_STARTUP_S + VALGRIND_SLOWDOWN * calls * per_call_ns * 1e-9)


def cost_notice(label: str, per_call_ns: float, calls: int, runs: int, parallel: int) -> str:
    """The line said before a long simulated count: its expected cost and how to cut it."""
    expected = estimate_count_s(per_call_ns, calls, runs, parallel)
    waves = -(-runs // max(parallel, 1))
    made_of = (f"{VALGRIND_STARTUP_S:g} s start-up + {calls} calls x "
               f"{format_ns(per_call_ns, 3)} x {VALGRIND_SLOWDOWN:g} (valgrind's slowdown)")
    if waves > 1:
        made_of = f"({made_of}) x {waves} runs in turn"
    cut = (f"; max_calls (--max-calls) below {calls} counts fewer calls" if calls > 1 else "")
    return (f"counting {label} under valgrind: expect about {format_ns(expected * 1e9, 2)}, "
            f"{made_of}{cut}")


def announce(notice: Callable[[str], None] | None, label: str, per_call_ns: float | None,
              calls: int, runs: int) -> None:
    """Tell ``notice`` the expected cost before a simulated count of ``LONG_COUNT_S`` or
    more."""
    if notice is None or per_call_ns is None:
        return
    parallel = parallel_runs(runs)
    if estimate_count_s(per_call_ns, calls, runs, parallel) >= LONG_COUNT_S:
        notice(cost_notice(label, per_call_ns, calls, runs, parallel))
