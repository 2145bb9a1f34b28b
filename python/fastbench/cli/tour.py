"""`fastbench tour`: the newcomer's first run. Prints `info`, then times two small workloads
and a native spin of known duration, compares three variants, calibrates the roofline and
places two workloads on it, analyses three small models, tracks a region's memory and
profiles a training step; it can write the whole report to a file. The measuring is the library's.
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Callable

import numpy as np

from .. import _core, memory, roofline
from ..analysis import analyze, format_count, specs
from ..analysis.layers import LayerAnalysis, analyze_layers
from ..analysis.model_analysis import least_time_bound, least_time_of
from ..comparison import compare
from ..report.text import comparison_lines, measurement_lines
from ..roofline import kernels
from ..timing import measure
from ..units import format_bytes, format_ns
from .info import info_lines
from .output import out
from .roofline import calibration_progress

__all__ = ["cmd_tour"]


def _least_step(roof: roofline.Roofline, la: LayerAnalysis) -> tuple[float, str]:
    """A layer analysis's least time on ``roof``: each layer's forward and backward at the
    fastest level its bytes fit, summed (the step's bytes count every intermediate twice, so
    judged whole they would place it on a slower level than any layer); and its verdict."""
    time, memory, _ = least_time_of(roof, [c for r in la.rows for c in (r.forward, r.backward)])
    return time, least_time_bound(time, memory)


def _tour_analysis(roof: roofline.Roofline, batch: int = 8) -> list[str]:
    """The three small models counted from layer specs (no framework), placed on the
    roofline; with torch, the same models counted again from their aten ops; a region's peak
    memory."""
    lines = [f"- layer specs (no framework), batch {batch}, one training step; the roofline's "
             "least time (float32; each layer's pass against the fastest level its bytes fit, "
             "summed):"]
    steps = {}
    for name, build in specs.SPECS.items():
        spec, shape = build(batch)
        la = analyze_layers(spec, shape, backward=True)
        steps[name] = la
        c = la.total
        least, bound = _least_step(roof, la)
        lines.append(f"  {name:<18} {la.params:>9,} params  {format_count(c.macs, 'MACs'):>12}  "
                     f"{format_count(c.flops, 'FLOPs'):>12}  {format_count(c.bytes, 'B'):>10}  "
                     f"{c.intensity:6.1f} FLOP/B  >= {format_ns(least * 1e9)} ({bound})")
    lines += ["- the transformer block, layer by layer:"]
    lines += ["  " + line for line in steps["transformer_block"].lines()]
    if importlib.util.find_spec("torch") is None:
        lines.append("- PyTorch is not installed: with it, fastbench.analysis.analyze and "
                     "`fastbench analyze` count any nn.Module from the aten ops it runs")
    else:
        from ..pytorch import models  # imports torch

        lines.append("- the same models in PyTorch, counted from the aten ops they run "
                     "(fastbench.analysis.analyze, forward + backward):")
        for name, la in steps.items():
            model = getattr(models, name)()
            a = analyze(model, *model.example_input(batch), backward=True)
            same = "equal" if a.macs == la.macs and a.params == la.params else "DIFFERENT"
            lines.append(f"  {name:<18} {a.params:>9,} params  {format_count(a.macs, 'MACs'):>12}  "
                         f"{format_count(a.flops, 'FLOPs'):>12}  MACs and params {same}; "
                         f"{sum(a.coverage.ops.values())} aten calls, "
                         f"{'complete' if a.complete else 'INCOMPLETE'}")
    with memory.track() as m:
        block = np.ones(64 << 17)          # 64 MiB of float64, touched
        m.snapshot("allocated")
        del block
    lines.append("- fastbench.memory.track() around allocating and freeing 64 MiB of numpy:")
    lines += ["  " + line for line in m.lines()]
    return lines


def _tour_profile(roof: roofline.Roofline) -> list[str]:
    """The small transformer block's training step profiled (with torch); else a Python
    function under the sampling profiler."""
    if importlib.util.find_spec("torch") is None:
        from ..profiling.sampler import sample

        data = list(range(20000, 0, -1))

        def sort_part() -> None:
            sorted(data)

        def sum_part() -> None:
            sum(data)

        def work() -> None:
            sort_part()
            sum_part()

        prof = sample(work, duration_s=1.0)
        return ["- PyTorch is not installed: the sampling profiler (fastbench.sample) on a "
                "Python function instead:", *("  " + line for line in prof.top(5).lines())]
    from ..profiling import profile
    from ..pytorch import models  # imports torch

    model = models.transformer_block()
    x = model.example_input(8)[0]

    def step() -> None:
        model(x).sum().backward()
        model.zero_grad(set_to_none=True)

    prof = profile(step, steps=10, model=model, roofline=roof, trace=False,
                   name="transformer block, batch 8, forward + backward")
    lines: list[str] = prof.lines()[:4]
    lines += ["- by op family (share of the step ± its 95% interval across steps):"]
    lines += ["  " + line for line in prof.top(8, "family").lines()]
    lines += ["- by module:"]
    lines += ["  " + line for line in prof.top(6, "module").lines()]
    lines += ["- worth fixing (step time saved at each item's roof; Amdahl for the step):"]
    lines += ["  " + line for line in prof.bottlenecks(4).lines()]
    proj = prof.project({"family:matrix multiplication": 2.0})
    lines += [f"- if matrix multiplication ran 2x faster: step {proj.speedup:.2f}x "
              f"[{proj.speedup_ci[0]:.2f}, {proj.speedup_ci[1]:.2f}]"]
    return lines


def _tour_workloads() -> list[tuple[str, Callable[[], object]]]:
    data = list(range(1000, 0, -1))
    return [("sorted(1000 ints)", lambda: sorted(data)), ("sum(range(1000))", lambda: sum(range(1000)))]


_GEMM_N = 256
_TRIAD_SIZE = 1 << 22  # 4 Mi float64 per array: 3 x 32 MiB


def _tour_placements(roof: roofline.Roofline) -> list[str]:
    """A GEMM and a triad, measured and placed on the roofline."""
    n = _GEMM_N
    a = np.ones((n, n), dtype=np.float32)
    result = np.empty_like(a)
    gemm = measure(kernels.gemm, a, a, result, name="gemm 256")
    x, y, z = (np.ones(_TRIAD_SIZE) for _ in range(3))
    triad = measure(lambda: np.add(y, np.multiply(z, 3.0, out=x), out=x), name="numpy triad")
    return _placement_lines(roof, gemm.median_ns * 1e-9, triad.median_ns * 1e-9)


def _placement_lines(roof: roofline.Roofline, gemm_s: float, triad_s: float) -> list[str]:
    """The tour's two workloads placed on ``roof`` from their seconds per call, each on the
    level its working set fits, with the warning of a point above its ceiling."""
    n, size = _GEMM_N, _TRIAD_SIZE
    # Each operand read once and the result written once: the least traffic GEMM can do.
    # The data is a (both operands) and the result.
    gemm_ws = 2 * n * n * 4
    gemm = roof.place(flops=2.0 * n**3, bytes=3.0 * n * n * 4, seconds=gemm_s, dtype="float32",
                      working_set_bytes=gemm_ws)
    # Two ufunc passes: x = 3·z reads z and writes x, x = y + x reads y and x and writes x.
    triad_ws = 3 * size * 8
    triad = roof.place(flops=2.0 * size, bytes=5.0 * size * 8, seconds=triad_s,
                       dtype="float64", working_set_bytes=triad_ws)
    return [f"- fastbench GEMM n={n} float32, {format_bytes(gemm_ws)} of operands and result: "
            f"placed on {gemm.memory_ceiling}", *gemm.lines(),
            f"- numpy x = y + 3·z on 4 Mi float64 (two ufunc passes, 5 sweeps of 32 MiB; "
            f"{format_bytes(triad_ws)} of arrays): placed on {triad.memory_ceiling}",
            *triad.lines()]


def _spin_references(spin_ns: float, blocks: int = 10) -> list[float]:
    """Mean duration of a native spin in ``blocks`` blocks of 100 back-to-back spins. The
    spin waits on the clock, so a block can only run long (the thread preempted), never
    short: the least block is the spin's duration."""
    return [_core.spin_duration_ns(spin_ns, reps=100) for _ in range(blocks)]


def _accuracy_lines(net_median_ns: float, refs: list[float]) -> list[str]:
    """The accuracy check's verdict: the measured net median against the least reference
    block, and a note when the blocks spread (a busy host, not a wrong measurement)."""
    truth = min(refs)
    lines = [f"  true duration {truth:.1f} ns (the least of {len(refs)} reference blocks of "
             f"100 spins, before and after); net error {(net_median_ns / truth - 1) * 100:+.2f}%"]
    if max(refs) > 1.05 * truth:
        # A busy host lengthens some reference blocks; none is shorter than the spin itself.
        lines.append(f"  the reference blocks ranged {truth:.1f}-{max(refs):.1f} ns: the host "
                     "was busy, and the error is against the least of them")
    return lines


def cmd_tour(args: argparse.Namespace) -> int:
    lines = ["fastbench tour: what this machine offers and how fastbench measures it", ""]
    lines += info_lines()
    out(lines)
    timed = ["", "Timing two small workloads (fastbench.measure, native loop)"]
    out(timed)
    for label, fn in _tour_workloads():
        block = [f"- {label}", *measurement_lines(measure(fn, name=label))]
        out(block)
        timed += block
    spin_ns = 1000.0
    before = _spin_references(spin_ns)
    m = measure(_core.make_spin(spin_ns), name="native 1 µs spin")
    refs = before + _spin_references(spin_ns)
    block = ["- native spin of known duration (accuracy check)", *measurement_lines(m),
             *_accuracy_lines(m.net_median_ns, refs)]
    out(block)
    timed += block
    data = list(range(300, 0, -1))
    block = ["", "A/B comparison (fastbench.compare: interleaved rounds, paired test)"]
    out(block)
    c = compare({"sorted(copy)": lambda: sorted(data), "list.sort(copy)": lambda: list(data).sort(),
                 "sorted(copy) again": lambda: sorted(data)},
                baseline="sorted(copy)", rounds=12, min_time_s=0.003)
    block += comparison_lines(c)
    out(comparison_lines(c))
    timed += block
    block = ["", "Roofline (fastbench.roofline.calibrate(quick=True), then two workloads placed)"]
    out(block)
    roof = roofline.calibrate(quick=True, progress=calibration_progress())
    placed = roof.lines() + _tour_placements(roof)
    out(placed)
    timed += block + placed
    block = ["", "Model analysis (fastbench.analysis: FLOPs, MACs, bytes, parameters; "
             "fastbench.memory: peak memory)"]
    out(block)
    analysed = _tour_analysis(roof)
    out(analysed)
    timed += block + analysed
    block = ["", "Profile (fastbench.profile: time per op, module and family with intervals, "
             "on the roofline, the profiler's cost subtracted)"]
    out(block)
    profiled = _tour_profile(roof)
    out(profiled)
    timed += block + profiled
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines + timed) + "\n")
        out(f"\nreport written to {args.output}")
    return 0
