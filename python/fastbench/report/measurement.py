"""Text for one measurement: its statistics line and the figures behind it (net time,
floors, samples and outliers, counters, memory, stop reason, warnings). Returns lines and
never prints; the statistics are :mod:`fastbench.measurement`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_ns
from .counters import sample_counter_lines

if TYPE_CHECKING:
    from ..measurement import Measurement

__all__ = ["measurement_lines"]


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
