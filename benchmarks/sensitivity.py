"""Sensitivity: the smallest injected slowdown fastbench.compare detects within 2 s, and a 1%
change found by counting instructions.

Time: baseline a native spin of 1 µs, candidate the same spin made 1%, 2%, 5% and 10%
longer. Each comparison gets 2 s of wall time in all (calibration, warmup and floors
included; the rounds get what is left). A slowdown counts as detected when the verdict is
"slower". Target: detected in >= 90% of trials at +2% or less.

Instructions: a pure-Python loop of 100 iterations against the same loop with 101 (1% more
work), compared with metric="instructions" (the PMU where one is exposed, else valgrind).
Targets: found in 10 of 10 trials; one instruction-mode measurement under 10 s of wall time.
Then once with processes=5 (five heap layouts a side): the same change, and how far the
layouts move a function that allocates (sorted of 150 ints) and one that does not.
Run on a quiet machine: python benchmarks/sensitivity.py [TRIALS]   (default 10)
"""

from __future__ import annotations

import time

import fastbench
from fastbench import _core

from _anchors import positive_int, script_args
from _workloads import loop100, loop101, sorted150

BUDGET_S = 2.0
PREPARE_S = 0.1  # calibration, warmup and floors of two 1 µs variants take about 0.05 s
LEVELS = (0.01, 0.02, 0.05, 0.10)


def main() -> None:
    args = script_args(__doc__, lambda p: p.add_argument(
        "trials", nargs="?", type=positive_int, default=10,
        help="comparisons per level of slowdown (default 10)"))
    trials = args.trials
    base_ns = 1000.0
    print(f"baseline spin {_core.spin_duration_ns(base_ns):.1f} ns true; "
          f"{trials} trials per level, {BUDGET_S:.0f} s per comparison")
    smallest, unbroken = None, True
    for level in reversed(LEVELS):
        detected, walls = 0, []
        for _ in range(trials):
            start = time.monotonic()
            c = fastbench.compare(
                {"baseline": _core.make_spin(base_ns),
                 "candidate": _core.make_spin(base_ns * (1 + level))},
                rounds=100_000, min_time_s=0.005, max_time_s=BUDGET_S - PREPARE_S,
            )
            walls.append(time.monotonic() - start)
            detected += c.verdicts["candidate"] == "slower"
        rate = detected / trials
        unbroken = unbroken and rate >= 0.9
        if unbroken:
            smallest = level  # this and every larger slowdown were detected
        print(f"  +{level * 100:4.1f}%: detected {detected}/{trials} ({rate * 100:.0f}%), "
              f"{c.rounds} rounds, wall {min(walls):.2f}-{max(walls):.2f} s per comparison")
    found = "none" if smallest is None else f"+{smallest * 100:.0f}%"
    print(f"smallest slowdown detected in >= 90% of trials: {found} (target +2% or better)")
    instructions(trials)
    layouts()


def instructions(trials: int) -> None:
    print()
    detected, walls, one = 0, [], []
    for _ in range(trials):
        start = time.monotonic()
        c = fastbench.compare({"loop100": loop100, "loop101": loop101}, baseline="loop100",
                              metric="instructions")
        walls.append(time.monotonic() - start)
        one += [m.wall_s for m in c.measurements.values()]
        detected += c.verdicts["loop101"] == "slower"
    r = c.results["loop101"]
    counts = {name: m.per_call for name, m in c.measurements.items()}
    source = c.measurements["loop100"].source
    print(f"instructions ({source}): loop of 100 vs 101 iterations, {counts['loop100']:,.0f} vs "
          f"{counts['loop101']:,.0f} per call ({r.rel_diff_pct:+.2f}%)")
    print(f"  1% change found in {detected}/{trials} trials (target 10 of 10); one measurement "
          f"took {min(one):.1f}-{max(one):.1f} s (target under 10 s), a comparison "
          f"{min(walls):.1f}-{max(walls):.1f} s")



def layouts() -> None:
    start = time.monotonic()
    c = fastbench.compare({"loop100": loop100, "loop101": loop101}, baseline="loop100",
                          metric="instructions", processes=5)
    wall = time.monotonic() - start
    spans = {name: f"{min(m.runs):,.1f}-{max(m.runs):,.1f}"
             for name, m in c.measurements.items()}
    print(f"  with processes=5 (5 heap layouts a side): {c.verdicts['loop101']}, "
          f"{c.results['loop101'].rel_diff_pct:+.2f}% (loop100 {spans['loop100']}, loop101 "
          f"{spans['loop101']}); {wall:.1f} s")
    sort = fastbench.measure(sorted150, metric="instructions", processes=5)
    runs = ", ".join(f"{r:,.1f}" for r in sort.runs)
    print(f"  sorted of 150 ints in 5 layouts: {runs} per call, spread "
          f"{100 * sort.spread:.2f}% (loop100's: "
          f"{100 * c.measurements['loop100'].spread:.2f}%)")


if __name__ == "__main__":
    main()
