"""What a simulated instruction count costs: valgrind's start-up and its slowdown per call.

For each workload, the native time per call (fastbench.measure) and the wall time of a
simulated count (count_instructions(source="simulated"), one run) with few and with many
calls: the slope between the two, over the native time of the extra calls, is valgrind's
slowdown factor; what is left at zero calls is its start-up (two interpreters under
valgrind, one with the calls and one without, run side by side). fastbench's estimate of
a count's cost (fastbench.counters.instructions.VALGRIND_SLOWDOWN and VALGRIND_STARTUP_S)
comes from this script; it prints the estimate beside the wall time for every count.

Targets: none (a measurement to write down); the slowdown is typically 20-100x.
Run on a quiet machine: python benchmarks/valgrind_cost.py [--repeats 3]
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import fastbench
from fastbench.counters import count_instructions
from fastbench.counters import instructions as counting

from _anchors import script_args
from _workloads import loop100, sorted150

_INTS = list(range(20_000, 0, -1))
_RANGE = range(200_000)

# name: (callable, args, few calls, many calls); many calls last about 0.1-0.3 s natively.
WORKLOADS: dict[str, tuple[Callable[..., Any], tuple[Any, ...], int, int]] = {
    "loop100 (pure Python)": (loop100, (), 10, 20_000),
    "sorted150 (C, allocates)": (sorted150, (), 10, 50_000),
    "sum(range(200000)) (C loop)": (sum, (_RANGE,), 1, 100),
    "sorted(20000 ints) (C)": (sorted, (_INTS,), 1, 200),
}


def _wall(fn: Callable[..., Any], args: tuple[Any, ...], calls: int) -> float:
    t0 = time.perf_counter()
    count_instructions(fn, *args, calls=calls, source="simulated")
    return time.perf_counter() - t0


def main() -> None:
    options = script_args(__doc__, lambda p: p.add_argument(
        "--repeats", type=int, default=3, help="simulated counts per point (default 3; the "
        "median is kept)"))
    repeats = max(1, options.repeats)
    slowdowns, startups = [], []
    for name, (fn, args, few, many) in WORKLOADS.items():
        native = fastbench.measure(fn, *args, duration_s=0.3)
        per_call_s = native.median_ns * 1e-9
        low = statistics.median(_wall(fn, args, few) for _ in range(repeats))
        high = statistics.median(_wall(fn, args, many) for _ in range(repeats))
        slowdown = (high - low) / ((many - few) * per_call_s)
        startup = low - few * per_call_s * slowdown
        slowdowns.append(slowdown)
        startups.append(startup)
        print(f"{name}: {native.median_ns / 1e3:.3g} µs/call natively; {few} calls "
              f"{low:.2f} s, {many} calls {high:.2f} s under valgrind: slowdown "
              f"{slowdown:.1f}x, start-up {startup:.2f} s")
        estimate = counting.estimate_count_s(per_call_s * 1e9, many, 1, 1)
        print(f"  fastbench's estimate for {many} calls: {estimate:.2f} s (measured {high:.2f} s)")
    print(f"\nslowdown: median {statistics.median(slowdowns):.1f}x, range "
          f"{min(slowdowns):.1f}-{max(slowdowns):.1f}x; start-up: median "
          f"{statistics.median(startups):.2f} s, range {min(startups):.2f}-{max(startups):.2f} s")
    print(f"in the code: VALGRIND_SLOWDOWN = {counting.VALGRIND_SLOWDOWN:g}, "
          f"VALGRIND_STARTUP_S = {counting.VALGRIND_STARTUP_S:g}")


if __name__ == "__main__":
    main()
