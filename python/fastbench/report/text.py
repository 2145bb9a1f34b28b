"""Text reports: turn clocks, measurements and machine facts into lines.

Returns strings or lists of lines and never prints; only the CLI prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .. import _core
from ..timing.clocks import ClockTable
from ..counters import EventAvailability, SampleCounts
from ..measurement import Measurement
from ..stats import SampleComparison
from ..units import format_ns
from .table import table

if TYPE_CHECKING:
    from ..analysis.model_analysis import ModelAnalysis
    from ..roofline import Roofline
    from ..comparison import Comparison

_ISA = ("sse2", "sse4_2", "avx", "avx2", "fma", "avx512f")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def clock_lines(clocks: ClockTable) -> list[str]:
    """The clocks table, then which clock "auto" picks and why."""
    rows = []
    for c in clocks:
        if c.available:
            freq = f"{c.frequency_hz / 1e9:.4f} GHz"
            rows.append([c.name, "yes", freq, format_ns(c.resolution_ns, 3),
                         format_ns(c.read_overhead_ns, 3), format_ns(c.pair_overhead_ns, 3),
                         _yes(c.steady), _yes(c.invariant)])
        else:
            rows.append([c.name, "no", "-", "-", "-", "-", _yes(c.steady), _yes(c.invariant)])
    lines = table(["clock", "usable", "frequency", "resolution", "read", "start+stop",
                   "steady", "invariant"], rows)
    for c in clocks:
        if not c.available:
            lines.append(f"  {c.name}: {c.note}")
    lines.append(f"  auto -> {clocks.auto_reason}")
    return lines


def counter_lines(table: Sequence[EventAvailability]) -> list[str]:
    """Which events can be counted here; the others grouped by the reason they cannot."""
    usable = [a.name for a in table if a.available]
    lines = [f"  available: {', '.join(usable) if usable else 'none'}"]
    by_reason: dict[str, list[str]] = {}
    for a in table:
        if not a.available:
            by_reason.setdefault(a.reason, []).append(a.name)
    for reason, names in by_reason.items():
        lines.append(f"  unavailable ({reason}): {', '.join(names)}")
    return lines


def sample_counter_lines(sc: SampleCounts) -> list[str]:
    """Counts per call of a measurement's counted samples, derived metrics, what was skipped."""
    n = max((len(v) for v in sc.per_sample.values()), default=0)
    lines = [f"  counters per call (median of {n} samples × {sc.loops:,} loops"
             f"{', multiplexed and scaled' if sc.scaled else ''}):"]
    for name, value in sc.per_call.items():
        running = sc.running_fraction.get(name, 1.0)
        extra = f"   (running {running:.0%})" if running < 1.0 else ""
        unit = " ns" if name in ("task-clock", "cpu-clock") else ""
        lines.append(f"    {name:<24}{value:>16,.2f}{unit}{extra}")
    for key, value in sc.derived.items():
        lines.append(f"    {key:<24}{value:>16,.3f}")
    for name, reason in sc.skipped.items():
        lines.append(f"    {name:<24}{'not counted':>16}: {reason}")
    path = "rdpmc (user space)" if sc.read_path == "rdpmc" else "read(2)"
    lines.append(f"    read by {path}" + (f": {sc.read_path_reason}" if sc.read_path_reason else ""))
    return lines


def isa_lines() -> list[str]:
    """Instruction-set features found at run time, and the TSC facts behind the clocks."""
    f = _core.cpu_features()
    if not f.x86:
        return ["  not x86: portable code paths only"]
    have = [name for name in _ISA if getattr(f, name)]
    lacking = [name for name in _ISA if not getattr(f, name)]
    lines = [f"  SIMD: {' '.join(have) or 'none'}" + (f" (absent: {' '.join(lacking)})" if lacking else "")]
    lines.append(
        f"  TSC: rdtscp {_yes(f.rdtscp)}, invariant {_yes(f.invariant_tsc)}; "
        f"hypervisor {_yes(f.hypervisor)}"
    )
    lines.append("  (SIMD paths are chosen at run time; the build targets baseline x86-64)")
    return lines


def measurement_lines(m: Measurement) -> list[str]:
    """The statistics line of a measurement and the figures behind it."""
    lines = [str(m)]
    lines.append(
        f"  net of call floor: {format_ns(m.net_median_ns)}   min {format_ns(m.min_ns)}   "
        f"p95 {format_ns(m.percentile_ns(95))}   max {format_ns(m.max_ns)}"
    )
    lines.append(
        f"  floors: call ({m.call_floor_kind}) {format_ns(m.call_floor_ns)} "
        f"± {format_ns(m.call_floor_mad_ns, 2)} MAD, loop {format_ns(m.overhead_ns)} "
        f"± {format_ns(m.overhead_mad_ns, 2)} MAD per iteration"
    )
    flagged = len(m.summary.outliers.indices)
    lines.append(
        f"  {m.n:,} samples over {m.elapsed_s:.2f} s; {flagged:,} outlier(s) "
        f"({flagged / m.n:.1%}: Tukey fences or modified z), counted and kept"
    )
    if m.counters is not None:
        lines += sample_counter_lines(m.counters)
    if m.memory is not None:
        lines += m.memory.lines()
    if m.stop_reason == "max_time_s":
        lines.append("  note: the time budget ended sampling before its goal")
    elif m.stop_reason == "target_rel_ci":
        lines.append(f"  precision target ±{(m.target_rel_ci or 0) * 100:.2f}% reached")
    lines += [f"  warning: {w}" for w in m.warnings]
    return lines


def _ci_text(ci: tuple[float, float] | None, fmt: str) -> str:
    return "n/a" if ci is None else f"[{ci[0]:{fmt}}, {ci[1]:{fmt}}]"


def _p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def comparison_lines(c: Comparison) -> list[str]:
    """The A/B table: per variant its median and CI; per candidate speedup, p and verdict."""
    base = c.measurements[c.baseline]
    how = (f"paired over {c.rounds} interleaved rounds, sign test" if c.paired
           else "unpaired saved samples, Mann-Whitney U")
    corr = "" if len(c.results) < 2 or c.correction == "none" else f", {c.correction}-corrected p"
    lines = [f"baseline: {c.baseline} ({how}{corr})"]
    rows = [[c.baseline, format_ns(base.median_ns), _rel_ci(base), "1 (baseline)", "", "", ""]]
    for name, r in c.results.items():
        m = c.measurements[name]
        rows.append([
            name, format_ns(m.median_ns), _rel_ci(m),
            f"{r.speedup:.3f}x {_ci_text(r.speedup_ci, '.3f')}",
            f"{r.rel_diff_pct:+.2f}%", _p_text(r.p_value), r.verdict,
        ])
    lines += table(["variant", "median", "95% CI", "speedup [95% CI]", "time", "p", "verdict"],
                   rows)
    for name, r in c.results.items():
        lines.append(f"  {name}: " + ", ".join(_effect_parts(r)))
    for name, r in c.results.items():
        lines += [f"  {name}: {w}" for w in r.warnings]
    for name, m in c.measurements.items():
        lines += [f"  {name}: {w}" for w in m.warnings]
    if c.stop_reason == "max_time_s":
        lines.append(f"  note: the time budget ended the run after {c.rounds} rounds")
    return lines


def _effect_parts(r: SampleComparison) -> list[str]:
    """Effect sizes and the secondary p-values of one candidate, for the detail line."""
    parts = [f"Cliff's delta {r.cliffs_delta:+.2f}"]
    if r.hedges_g is not None:
        parts.append(f"Hedges' g {r.hedges_g:+.2f}")
    if r.p_wilcoxon is not None:
        parts.append(f"p Wilcoxon {_p_text(r.p_wilcoxon)}")
    parts.append(f"p Mann-Whitney {_p_text(r.p_mannwhitney)}")
    if r.p_welch is not None:
        parts.append(f"p Welch (log) {_p_text(r.p_welch)}")
    return parts


def _rel_ci(m: Measurement) -> str:
    rel = m.rel_ci
    return "n/a" if rel is None else f"± {rel * 100:.2f}%"


def analysis_placement_lines(a: ModelAnalysis, roof: Roofline, max_depth: int | None = 1,
                             level: str = "DRAM") -> list[str]:
    """A model's modules under the roofline: FLOPs, bytes, intensity, attainable GFLOP/s, the
    bound and the roofline's lower bound on the time."""
    from ..analysis.costs import format_count

    rows = []
    for p in a.place_on(roof, level=level, max_depth=max_depth):
        rows.append((p.path or "(model)", p.type, format_count(p.flops), format_count(p.bytes, "B"),
                     f"{p.intensity:.3g}", f"{p.attainable_gflops:,.1f}", p.bound,
                     format_ns(p.min_time_s * 1e9)))
    if not rows:
        return ["  no module does arithmetic"]
    return table(("module", "type", "FLOPs", "bytes", "FLOP/B", "GFLOP/s max", "bound",
                  "time >="), rows)
