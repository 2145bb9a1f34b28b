"""What counting costs: a counted region, a group read, and whole-process counting.

1. Native: one read of a running group (the number fastbench subtracts per reading) next to
   the bare read(2) system call under it, and one empty counted region (start, stop, read),
   for 1, 3 and 6 events; software events always, hardware events where a PMU is exposed,
   by read(2) and by rdpmc where the kernel allows user-space reads.
2. From Python: `with fastbench.counters.count(...)` (which also calibrates the empty
   region each time) and a bare CounterGroup.read() through the binding.
3. perf-stat-style whole-process counting of a command: the time a counted `true` takes
   over an uncounted one, for fastbench's stat and for `perf stat` where it is installed,
   interleaved; and an inherited group's open/start/stop/read/close in this process.

Target on a 2-core VM: a 3-event group read <= 1.5 us.
Run on a quiet machine: python benchmarks/counter_overhead.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from typing import Callable

import fastbench
from fastbench import _core
from fastbench.counters import count
from fastbench.counters.command import stat_command

from _anchors import script_args

SOFTWARE = ["task-clock", "page-faults", "context-switches", "cpu-clock", "minor-faults",
            "major-faults"]
HARDWARE = ["instructions", "cycles", "branches", "branch-misses", "cache-references",
            "cache-misses"]
SIZES = (1, 3, 6)
TARGET_NS = 1500.0


def _median_ns(fn: Callable[[], object], reps: int = 31, batch: int = 50) -> float:
    """Median over batches of the ns per call of fn, timed from Python."""
    per_call = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        per_call.append((time.perf_counter_ns() - t0) / batch)
    return statistics.median(per_call)


def _native_rows(kind: str, events: list[str]) -> tuple[list[str], float | None]:
    """Rows of the native table for one event family; the 3-event read(2) figure."""
    rows, three = [], None
    for n in SIZES:
        names = events[:n]
        group = _core.CounterGroup(names)
        lacking = [e for e in group.events if not e.available]
        if lacking:
            return [f"  {kind:<9}{n:>3}   unavailable: {lacking[0].reason}"], None
        paths = [False]
        if group.read_path == "rdpmc":
            paths.append(True)  # rdpmc first, then forced read(2)
        for forced in paths:
            group.prefer_read(forced)
            costs = [_core.time_counter_ops(group) for _ in range(5)]
            read = statistics.median(c.read_ns for c in costs)
            floor = statistics.median(c.syscall_ns for c in costs)
            region = statistics.median(c.region_ns for c in costs)
            path = costs[-1].read_path
            if n == 3 and path == "read":
                three = read
            rows.append(f"  {kind:<9}{n:>3}  {path:<6}{read:10.0f}{floor:10.0f}{region:11.0f}")
        if group.read_path != "rdpmc" and n == SIZES[0]:
            rows.append(f"           rdpmc not used: {group.read_path_reason}")
    return rows, three


def _command_costs(events: list[str], rounds: int = 15) -> list[str]:
    """Median wall ms of `true`: plain, under fastbench's stat, under perf stat; interleaved."""
    true = shutil.which("true") or "/bin/true"
    perf = shutil.which("perf")
    runners: dict[str, Callable[[], object]] = {
        "plain subprocess.run": lambda: subprocess.run([true], check=False),
        "fastbench stat": lambda: stat_command([true], events, repeat=1),
    }
    if perf is not None:
        perf_cmd = [perf, "stat", "-x,", "-e", ",".join(events), "--", true]
        runners["perf stat"] = lambda: subprocess.run(perf_cmd, check=False,
                                                      capture_output=True)
    times: dict[str, list[float]] = {k: [] for k in runners}
    for r in range(rounds):
        order = list(runners)
        order = order[r % len(order):] + order[:r % len(order)]  # rotate the order
        for name in order:
            t0 = time.perf_counter()
            runners[name]()
            times[name].append((time.perf_counter() - t0) * 1e3)
    plain = statistics.median(times["plain subprocess.run"])
    lines = []
    for name, ts in times.items():
        med = statistics.median(ts)
        extra = "" if name.startswith("plain") else f"   (+{med - plain:.2f} ms)"
        lines.append(f"  {name:<22}{med:9.2f} ms{extra}")
    if perf is None:
        lines.append("  perf stat: not installed (linux-perf), its row is skipped")
    return lines


def main() -> None:
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = f.read().strip()
    except OSError:
        paranoid = "unknown"
    print(f"fastbench {fastbench.__version__}; kernel {os.uname().release}; "
          f"perf_event_paranoid {paranoid}; events count user space only")
    print()
    print("native, per operation in ns (median of 5 x 51 batches of 200):")
    print("  read: one reading of the running group; floor: the bare read(2) under it;")
    print("  region: an empty counted region (start, stop, read)")
    print(f"  {'events':<9}{'n':>3}  {'path':<6}{'read':>10}{'floor':>10}{'region':>11}")
    rows, three = _native_rows("software", SOFTWARE)
    print("\n".join(rows))
    hw_rows, hw_three = _native_rows("hardware", HARDWARE)
    print("\n".join(hw_rows))
    print()

    print("from Python, per operation in us:")
    for n in SIZES:
        names = SOFTWARE[:n]
        group = _core.CounterGroup(names)
        group.start()
        read_us = _median_ns(group.read) / 1e3
        group.stop()

        def region() -> None:
            with count(names):
                pass
        region()  # calibrates the empty-region overhead of this set once
        region_us = _median_ns(region, reps=11, batch=20) / 1e3
        print(f"  {n} events: CounterGroup.read() {read_us:6.2f}; "
              f"empty `with count(...)` {region_us:6.1f} (after the first, which calibrates)")
    print()

    print("whole-process counting (perf stat style), 3 software events:")

    def inherited() -> None:
        g = _core.CounterGroup(SOFTWARE[:3], True)
        g.start()
        g.stop()
        g.read()
        del g  # closes the descriptors
    print(f"  inherited group open/start/stop/read/close in this process: "
          f"{_median_ns(inherited, reps=11, batch=20) / 1e3:.1f} us")
    print("\n".join(_command_costs(SOFTWARE[:3])))
    print()

    for label, value in (("software", three), ("hardware", hw_three)):
        if value is not None:
            verdict = "meets" if value <= TARGET_NS else "misses"
            print(f"3-event {label} group read: {value:.0f} ns ({verdict} the "
                  f"<= {TARGET_NS:.0f} ns target)")
        elif label == "hardware":
            print("3-event hardware group read: not measurable here (no hardware events)")


if __name__ == "__main__":
    script_args(__doc__)
    main()
