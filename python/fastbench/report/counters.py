"""Text for event counters: which events this machine can count (and why not the others),
and the counts per call of a measurement's counted samples. Returns lines and never prints;
the counting is :mod:`fastbench.counters`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from ..counters import EventAvailability, SampleCounts

__all__ = ["counter_lines", "sample_counter_lines"]


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
    # Fixed columns, not a Table: the rows mix counts, ratios and reasons without a header.
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
