"""Per-call overhead of fastbench.measure against timeit (and pyperf), and clock read costs.

Overhead is what a tool adds to every call it times: for `lambda: None` it is nearly the
whole figure; for a native spin it is the figure minus the spin's true duration (timed
natively, with no call around it). Target: fastbench / timeit <= 1.00.
Run on a quiet machine: python benchmarks/overhead.py
"""

from __future__ import annotations

import time

import fastbench
from fastbench import _core

from _anchors import pyperf_note, pyperf_per_call_ns, script_args, timeit_per_call_ns


def _row(label: str, fb_ns: float, ti_ns: float, pp_ns: float | None) -> str:
    pp = f"{pp_ns:9.2f}" if pp_ns is not None else "        -"
    ratio_pp = f"{fb_ns / pp_ns:7.2f}" if pp_ns else "      -"
    return f"{label:<28}{fb_ns:10.2f}{ti_ns:10.2f}{pp}{fb_ns / ti_ns:10.2f}{ratio_pp}"


def main() -> None:
    print(f"fastbench {fastbench.__version__}; clock: {fastbench.clocks().auto_reason}")
    print(pyperf_note())
    print()
    print(f"{'per-call overhead (ns)':<28}{'fastbench':>10}{'timeit':>10}{'pyperf':>9}"
          f"{'fb/timeit':>10}{'fb/pyperf':>10}")

    noop = lambda: None  # noqa: E731 - the standard empty workload
    m = fastbench.measure(noop, repeat=30, min_time_s=0.02)
    _, ti_med = timeit_per_call_ns(noop)
    pp = pyperf_per_call_ns(noop, loops=m.loops)
    print(_row("lambda: None", m.median_ns, ti_med, pp))

    spin_ns = 100.0
    spin = _core.make_spin(spin_ns)
    truth_before = _core.spin_duration_ns(spin_ns, 100_000)
    m = fastbench.measure(spin, repeat=30, min_time_s=0.02)
    _, ti_med = timeit_per_call_ns(spin)
    pp = pyperf_per_call_ns(spin, loops=m.loops)
    truth = 0.5 * (truth_before + _core.spin_duration_ns(spin_ns, 100_000))
    print(_row(f"native spin ({truth:.0f} ns true)", m.median_ns - truth, ti_med - truth,
               None if pp is None else pp - truth))
    print()

    print("clock read cost (ns per read, native loop of 1000 reads, median of 11 batches)")
    kinds = ["rdtsc", "lfence_rdtsc", "rdtscp", "rdtscp_lfence", "tsc_pair", "steady", "steady_pair"]
    if not _core.tsc_usable():
        kinds = ["steady", "steady_pair"]
    for kind in kinds:
        print(f"  {kind:<16}{_core.read_cost_ns(kind, 1000):8.2f}")
    pc = fastbench.measure(time.perf_counter, repeat=30, min_time_s=0.02)
    print(f"  {'time.perf_counter() from Python (raw per call)':<16}  {pc.median_ns:8.2f}")
    if _core.tsc_usable():
        pair = _core.read_cost_ns("tsc_pair", 1000)
        print(f"  fenced TSC start/stop pair: {pair:.1f} ns (target <= 50 ns)")


if __name__ == "__main__":
    script_args(__doc__)
    main()
