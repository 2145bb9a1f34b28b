"""Sensitivity: the smallest injected slowdown fastbench.compare detects within 2 s.

Baseline: a native spin of 1 µs. Candidate: the same spin made 1%, 2%, 5% and 10% longer.
Each comparison gets 2 s of wall time in all (calibration, warmup and floors included; the
rounds get what is left). A slowdown counts as detected when the verdict is "slower".
Target: detected in >= 90% of trials at +2% or less.
Run on a quiet machine: python benchmarks/sensitivity.py [TRIALS]   (default 10)
"""

from __future__ import annotations

import sys
import time

import fastbench
from fastbench import _core

BUDGET_S = 2.0
PREPARE_S = 0.1  # calibration, warmup and floors of two 1 µs variants take about 0.05 s
LEVELS = (0.01, 0.02, 0.05, 0.10)


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 10
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


if __name__ == "__main__":
    main()
