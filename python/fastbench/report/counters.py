"""Text for event counters: which events this machine can count (and why not the others),
the counts per call of a measurement's counted samples, and instruction counts. Returns lines and never prints;
the counting is :mod:`fastbench.counters`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from ..counters import EventAvailability, InstructionCount, SampleCounts

__all__ = ["counter_lines", "instruction_count_lines", "sample_counter_lines"]


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


def instruction_count_lines(c: InstructionCount) -> list[str]:
    """An instruction count: per call, where it comes from, its runs, the cycle estimate,
    the events behind it and its notes."""
    lines = [f"{c.name}: {c}" if c.name else str(c)]
    runs = ", ".join(f"{r:,.1f}" for r in c.runs)
    lines.append(f"  {len(c.runs)} run(s) of {c.calls:,} calls: {runs} per call "
                 f"(spread {c.spread:.2g}); {c.wall_s:.1f} s")
    if c.estimated_cycles is not None:
        lines.append(f"  estimated cycles per call: {c.estimated_cycles:,.0f} (weights of "
                     "simulated cache misses and mispredictions; an estimate, not a measurement)")
    shown = {k: v for k, v in c.events.items() if k not in ("Ir", "instructions") and v}
    if shown:
        lines.append("  per call: " + ", ".join(f"{k} {v:,.1f}" for k, v in shown.items()))
    lines += [f"  note: {n}" for n in c.notes]
    return lines
