"""Text for an A/B comparison: per variant its median and CI, per candidate the speedup with
its CI, p-value and verdict, then effect sizes and warnings. Returns lines and never prints;
the verdicts are :mod:`fastbench.comparison`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_ns
from .table import table

if TYPE_CHECKING:
    from ..comparison import Comparison
    from ..measurement import Measurement
    from ..stats import SampleComparison

__all__ = ["comparison_lines"]


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
