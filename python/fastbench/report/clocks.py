"""Text for the clocks: the table of each clock's frequency, resolution and overheads, and
which clock "auto" picks and why. Returns lines and never prints; the clocks themselves are
:mod:`fastbench.timing.clocks`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_ns
from .table import table

if TYPE_CHECKING:
    from ..timing.clocks import ClockTable

__all__ = ["clock_lines"]


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
