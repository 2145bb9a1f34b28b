"""Text for an A/B comparison: per variant its median and CI, per candidate the speedup with
its CI, p-value and verdict, then effect sizes and warnings. Returns lines and never prints;
the verdicts are :mod:`fastbench.comparison`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_ns, format_rel
from .lines import printable
from .table import table

if TYPE_CHECKING:
    from ..comparison import Comparison, InstructionComparison
    from ..counters import InstructionCount
    from ..measurement import Measurement
    from ..stats import SampleComparison

__all__ = ["comparison_lines", "instruction_comparison_lines"]


def _ci_text(ci: tuple[float, float] | None, fmt: str) -> str:
    return "n/a" if ci is None else f"[{ci[0]:{fmt}}, {ci[1]:{fmt}}]"


def _p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def comparison_lines(c: Comparison) -> list[str]:
    """The A/B table: per variant its median and CI; per candidate speedup, p and verdict."""
    base = c.measurements[c.baseline]
    how = _how(c)
    corr = "" if len(c.results) < 2 or c.correction == "none" else f", {c.correction}-corrected p"
    # Names, versions, designs and warnings may come from a results file: each is shown
    # with its control characters escaped, newlines included (printable).
    lines = [f"baseline: {printable(c.baseline)} ({how}{corr})"]
    if c.versions:
        lines.append("versions: " + ", ".join(f"{printable(name)} = {printable(spec)}"
                                              for name, spec in c.versions.items()))
    if c.design:
        lines.append(f"design: {printable(c.design)}")
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
        parts = _effect_parts(r)
        if parts:
            lines.append(f"  {printable(name)}: " + ", ".join(parts))
    for name, r in c.results.items():
        lines += [f"  {printable(name)}: {printable(w)}" for w in r.warnings]
    for name, m in c.measurements.items():
        lines += [f"  {printable(name)}: {printable(w)}" for w in m.warnings]
    if c.stop_reason == "max_time_s":
        lines.append(f"  note: the time budget ended the run after {c.rounds} rounds")
    return lines


def _how(c: Comparison) -> str:
    """How the verdicts were reached, for the header line."""
    if c.stop_reason == "processes":
        return (f"paired over {c.rounds} interleaved worker processes per variant, "
                "t test on the run medians")
    if c.stop_reason == "versions":
        return (f"versions of the code, paired over {c.rounds} interleaved worker processes "
                "each, t test on the run medians")
    if c.stop_reason == "versions-duet":
        return (f"versions of the code in {c.rounds} duets (both at once, one per core), "
                "paired t test on the run medians")
    if c.stop_reason == "processes-rounds":
        return (f"paired within each of {c.rounds} worker processes, the variants side by "
                "side in rounds; t test on the run medians")
    if c.paired:
        return f"paired over {c.rounds} interleaved rounds in one process, sign test"
    levels = {r.level for r in c.results.values()}
    if levels == {"runs"}:
        return "separate results of several runs each, Welch t test on the run medians"
    if levels == {"samples"}:
        return "unpaired saved samples, Mann-Whitney U"
    known = [r.run_variation for r in c.results.values()
             if r.level == "variation" and r.run_variation is not None]
    if known:
        return (f"separate runs, judged against a run-to-run variation of "
                f"{format_rel(max(known))}")
    return "separate runs, run-to-run variation on this machine unknown"


def _effect_parts(r: SampleComparison) -> list[str]:
    """Effect sizes and the secondary p-values of one candidate, for the detail line (none
    for a side of fewer than 3 runs, where they say nothing)."""
    if r.level != "samples" and min(r.n_a, r.n_b) < 3:
        return []
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
    if rel is None:
        return "n/a"
    return f"± {format_rel(rel)} ({m.runs} runs)" if m.runs > 1 else f"± {format_rel(rel)} in-run"


def instruction_comparison_lines(c: InstructionComparison) -> list[str]:
    """The instruction-count table: per variant its count per call, per candidate the change
    and the verdict, then what counts cannot see."""
    base = c.counts[c.baseline]
    lines = [f"baseline: {printable(c.baseline)} (instructions per call, {base.label}; a "
             f"change beyond ±{format_rel(c.tolerance)} is a difference)"]
    layouts = any(len(m.runs) > 1 for m in c.counts.values())
    rows = [[c.baseline, f"{base.per_call:,.1f}", *_layout_range(base, layouts),
             _cycles(base.estimated_cycles), "", ""]]
    for name, r in c.results.items():
        m = c.counts[name]
        rows.append([name, f"{m.per_call:,.1f}", *_layout_range(m, layouts),
                     _cycles(m.estimated_cycles), f"{r.rel_diff_pct:+.3f}%", r.verdict])
    head = ["variant", "instructions", *(["over layouts"] if layouts else []), "est. cycles",
            "change", "verdict"]
    lines += table(head, rows)
    # What counts cannot see is the same sentence for every candidate: said once.
    warnings = dict.fromkeys(w for r in c.results.values() for w in r.warnings)
    return lines + [f"  note: {printable(w)}" for w in warnings]


def _layout_range(m: InstructionCount, shown: bool) -> list[str]:
    """The range of a count's runs (one per heap layout), where any variant has several."""
    if not shown:
        return []
    if len(m.runs) == 1:
        return ["1 layout"]
    return [f"{min(m.runs):,.1f}-{max(m.runs):,.1f} ({len(m.runs)})"]


def _cycles(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"
