"""Text reports: turn clocks, measurements and machine facts into lines.

Returns strings or lists of lines and never prints; only the CLI prints.
"""

from __future__ import annotations

from typing import Sequence

from . import _core
from .clocks import ClockTable
from .timing import Measurement
from .units import format_ns

_ISA = ("sse2", "sse4_2", "avx", "avx2", "fma", "avx512f")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Left-aligned columns sized to their widest cell."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    def line(cells: Sequence[str]) -> str:
        return indent + "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return [line(headers)] + [line(r) for r in rows]


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
    if m.budget_exhausted:
        lines.append("  note: the time budget ended the run before all samples were taken")
    return lines
