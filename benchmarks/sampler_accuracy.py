"""The sampling profiler's time per function against the time clocked inside each function,
on a workload of four parts of about --part-ms each that meet the sampler differently:

- ``python_loop``: pure Python, the sampler takes the GIL at the interpreter's switch points;
- ``sleeping``: time.sleep, the GIL released, sampled at once;
- ``sorting``: ``sorted`` of a list of shuffled floats, native code holding the GIL;
- ``native_spin``: a busy-wait made by ``fastbench._core.make_spin``, holding the GIL.

Per part, one line: the time clocked inside it (``time.perf_counter`` around the call, the
truth), ``fastbench.sample``'s time (each sample counting the interval before it, a late
one every deadline it passed) with its 95% interval, the time the same samples give when
each counts alike (share of the samples x wall time, how a sampler that counts hits
reads them), and cProfile's cumulative time for the function in a separate run of the same
workload (a deterministic profiler, as an anchor; its hooks slow the Python loop).
Each ratio is the tool's time over the clocked time of its own run.

Target: every part within 10% of its clocked time for fastbench. Parts only a few sampling
intervals long (--part-ms 4) are harder: a sample is taken a little after its deadline (the
thread's wake-up and the GIL's hand-over, 0.1-0.6 ms on a VM), so at each boundary some
time moves to the part that follows. Run on a quiet machine:
    python benchmarks/sampler_accuracy.py
    python benchmarks/sampler_accuracy.py --part-ms 4 --rounds 20
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from typing import Callable

import fastbench
from fastbench import _core

from _anchors import positive_int, script_args

CLOCKED: dict[str, float] = {}
# Sizes per part, set by _calibrate so that each part takes about --part-ms.
SIZE = {"loop": 10_000, "sleep_s": 0.004, "spin": _core.make_spin(4e6)}
DATA: list[float] = []  # shuffled floats, built once: a sort frees only its new list


def python_loop() -> int:
    s = 0
    for i in range(SIZE["loop"]):
        s += i * i
    return s


def sleeping() -> None:
    time.sleep(SIZE["sleep_s"])


def sorting() -> int:
    return len(sorted(DATA))


def native_spin() -> None:
    SIZE["spin"]()


PARTS: tuple[Callable[..., object], ...] = (python_loop, sleeping, sorting, native_spin)


def _calibrate(part_s: float) -> None:
    """Sizes so that each part takes about ``part_s``: the loop's and the sort's scaled from
    a timed trial, the sleep and the spin set."""
    SIZE.update(sleep_s=part_s, spin=_core.make_spin(part_s * 1e9))
    t0 = time.perf_counter()
    python_loop()
    SIZE["loop"] = max(1, int(SIZE["loop"] * part_s / (time.perf_counter() - t0)))
    random = __import__("random").Random(0)
    n = 20_000
    while True:
        DATA[:] = [random.random() for _ in range(n)]
        t0 = time.perf_counter()
        sorting()
        took = time.perf_counter() - t0
        if took >= part_s / 2 or n > 10**7:
            break
        n *= 2
    DATA[:] = [random.random() for _ in range(max(1000, int(n * part_s / took)))]


def workload(rounds: int) -> None:
    for _ in range(rounds):
        for part in PARTS:
            t0 = time.perf_counter()
            part()
            CLOCKED[part.__name__] = CLOCKED.get(part.__name__, 0.0) + time.perf_counter() - t0


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=positive_int, default=5,
                        help="rounds of the four parts per profiled call (default 5)")
    parser.add_argument("--part-ms", type=positive_int, default=20,
                        help="milliseconds each part takes (default 20)")


def main() -> None:
    args = script_args(__doc__, options)
    _calibrate(args.part_ms / 1e3)
    workload(1)  # warm
    CLOCKED.clear()
    prof = fastbench.sample(workload, args.rounds, duration_s=2.0, threads=False)
    fb_clocked = dict(CLOCKED)
    rows = {r.function.rpartition(":")[2]: r for r in prof.top(50)}
    CLOCKED.clear()
    profiler = cProfile.Profile()
    profiler.enable()
    t_end = time.perf_counter() + 2.0
    while time.perf_counter() < t_end:
        workload(args.rounds)
    profiler.disable()
    cp_clocked = dict(CLOCKED)
    cumulative = {name[2]: stat[3] for name, stat in pstats.Stats(profiler).stats.items()}
    print(f"parts of about {args.part_ms} ms, sampled every 1 ms ± 50%")
    print(f"fastbench.sample: {prof.samples} samples in {prof.wall_s:.2f} s "
          f"({prof.rate_hz:.0f} Hz); {prof.late_fraction():.1%} of the sampled time in late "
          f"ticks, longest {prof.longest_gap_s * 1e3:.2f} ms")
    print(f"{'part':<12} {'clocked':>9} {'fastbench':>10} {'95% interval':>19} {'ratio':>6}"
          f" {'by count':>9} {'ratio':>6} {'cProfile':>9} {'ratio':>6}")
    worst = 0.0
    for part in PARTS:
        name = part.__name__
        r = rows[name]
        truth = fb_clocked[name]
        lo, hi = (x * prof.wall_s for x in r.share_ci)
        counted = r.samples / prof.samples * prof.wall_s
        cp = cumulative.get(name, 0.0)
        worst = max(worst, abs(r.time_s / truth - 1.0))
        print(f"{name:<12} {truth * 1e3:7.1f}ms {r.time_s * 1e3:8.1f}ms "
              f"[{lo * 1e3:7.1f}, {hi * 1e3:7.1f}]ms {r.time_s / truth:6.3f}"
              f" {counted * 1e3:7.1f}ms {counted / truth:6.3f}"
              f" {cp * 1e3:7.1f}ms {cp / cp_clocked[name]:6.3f}")
    print(f"fastbench's largest error: {worst:.1%} (target <= 10%)")


if __name__ == "__main__":
    main()
