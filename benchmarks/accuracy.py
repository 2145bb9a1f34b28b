"""Accuracy of fastbench against a native spin of known duration, beside stdlib timeit.

The spin busy-waits on the TSC, fenced at both ends; its true duration is timed natively
(many spins in one native loop, no call around them). fastbench reports net_median_ns
(raw median minus the no-op call floor); timeit reports its best per-loop time, the figure
`python -m timeit` prints. Targets: fastbench error <= 2% at >= 1 µs, <= 10% at 100 ns.
Run on a quiet machine: python benchmarks/accuracy.py
"""

from __future__ import annotations

import fastbench
from fastbench import _core

from _anchors import script_args, timeit_per_call_ns

TARGETS = {100.0: 10.0, 1_000.0: 2.0, 10_000.0: 2.0, 1_000_000.0: 2.0}


def true_duration_ns(ns: float) -> float:
    reps = max(10, int(5e7 / max(ns, 1.0)))  # about 50 ms of spinning
    return _core.spin_duration_ns(ns, reps)


def main() -> None:
    print(f"fastbench {fastbench.__version__}; clock: {fastbench.clocks().auto_reason}")
    print()
    print(f"{'spin':>8}{'true ns':>12}{'fastbench':>12}{'err %':>8}{'target':>8}"
          f"{'timeit':>12}{'err %':>8}  verdict")
    for ns, target in TARGETS.items():
        spin = _core.make_spin(ns)
        before = true_duration_ns(ns)
        m = fastbench.measure(spin, repeat=30, min_time_s=0.02)
        best, _ = timeit_per_call_ns(spin, repeat=7 if ns >= 1e6 else 15)
        truth = 0.5 * (before + true_duration_ns(ns))
        fb_err = (m.net_median_ns / truth - 1.0) * 100.0
        ti_err = (best / truth - 1.0) * 100.0
        verdict = "ok" if abs(fb_err) <= target else "MISSED"
        print(f"{fastbench.units.format_ns(ns, 3):>8}{truth:12.1f}{m.net_median_ns:12.1f}"
              f"{fb_err:+8.2f}{'±' + format(target, '.0f') + '%':>8}{best:12.1f}{ti_err:+8.2f}"
              f"  {verdict}")


if __name__ == "__main__":
    script_args(__doc__)
    main()
