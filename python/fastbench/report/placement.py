"""Text for a model analysis placed on the roofline: per module its FLOPs, bytes, intensity,
memory level, attainable GFLOP/s, bound and the least time the roofline allows, and a
warning when the model runs on other threads than the roofline's. Returns lines and never
prints; the placement is :meth:`fastbench.analysis.ModelAnalysis.place_on`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import format_count, format_ns
from .table import table

if TYPE_CHECKING:
    from ..analysis.model_analysis import ModelAnalysis
    from ..roofline import Roofline

__all__ = ["analysis_placement_lines"]


def analysis_placement_lines(a: ModelAnalysis, roof: Roofline, max_depth: int | None = 1,
                             level: str | None = None, threads: int | None = None) -> list[str]:
    """A model's modules under the roofline: FLOPs, bytes, intensity, the memory level judged
    against (``level``, by default each module's fastest level its bytes fit), attainable
    GFLOP/s, the bound and the roofline's lower bound on the time; then a warning when the
    model runs on other threads than the roofline was calibrated on (``threads``, by default
    PyTorch's ``torch.get_num_threads()`` where torch is imported)."""
    warning = roof.threads_warning(threads)
    return _placement_table(a, roof, max_depth, level) + (
        [] if warning is None else [f"  warning: {warning}"])


def _placement_table(a: ModelAnalysis, roof: Roofline, max_depth: int | None,
                     level: str | None) -> list[str]:
    rows = []
    for p in a.place_on(roof, level=level, max_depth=max_depth):
        rows.append((p.path or "(model)", p.type, format_count(p.flops), format_count(p.bytes, "B"),
                     f"{p.intensity:.3g}", p.level, f"{p.attainable_gflops:,.1f}", p.bound,
                     format_ns(p.min_time_s * 1e9)))
    if not rows:
        return ["  no module does arithmetic"]
    return table(("module", "type", "FLOPs", "bytes", "FLOP/B", "level", "GFLOP/s max", "bound",
                  "time >="), rows)
