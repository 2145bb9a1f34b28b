"""The roofline plot: ceilings and placements on log-log axes, written to an image file.

Drawing only; the figures come from a calibrated ``Roofline``. matplotlib (the ``plot``
extra) is imported when a plot is made, never at import.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from .model import Placement, Roofline

__all__ = ["plot", "point_label"]

# Short words for Placement.above_roof_causes (model.ABOVE_ROOF_CAUSES), for labels.
_CAUSE_WORDS = {"narrower-vectors": "a ceiling of narrower vectors",
                "faster-level": "data in a faster level", "wrong-count": "a wrong count",
                "level-no-faster": "a cache level measured no faster than the next",
                "low-ceiling": "a ceiling calibrated on a slowed machine"}


def point_label(label: str, placement: Placement) -> str:
    """A point's label on the plot: its share of the attainable speed, and for a point more
    than 5% above its binding ceiling "ABOVE ROOF" and its likely causes
    (``Placement.above_roof_causes``)."""
    text = f"{label} ({placement.fraction:.0%})"
    if placement.above_roof is not None:
        text += " ABOVE ROOF: " + ", ".join(placement.above_roof_causes)
    return text


def plot(roofline: Roofline, path: str | os.PathLike[str], *,
         points: Mapping[str, Placement] | Sequence[tuple[str, Placement]] = (),
         dtype: str = "float32") -> Path:
    """Write a log-log roofline plot (ceilings labelled, placements as points) to ``path``.

    Parameters
    ----------
    roofline : Roofline
        The ceilings to draw.
    path : str or path-like
        The image file; matplotlib picks the format from the suffix (".png", ".svg").
    points : mapping of label to Placement, or sequence of (label, Placement)
        Workloads to mark, labelled with their share of the attainable speed. A point more
        than 5% above its binding ceiling is drawn as a red cross, labelled "ABOVE ROOF"
        with its likely causes, and listed in the legend.
    dtype : {"float32", "float64"}
        Whose compute ceilings to draw.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ImportError
        matplotlib is not installed: ``pip install "fastbench[plot]"``.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError('roofline plots need matplotlib: pip install "fastbench[plot]"') from e
    items = list(points.items()) if isinstance(points, Mapping) else list(points)
    peak = roofline.peak_gflops(dtype)
    ridges = roofline.ridge_points(dtype)
    lo = min([0.01, *(p.intensity / 2 for _, p in items)])
    hi = max([4 * max(ridges.values(), default=1.0), *(p.intensity * 2 for _, p in items)])
    xs = np.logspace(math.log10(lo), math.log10(hi), 200)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for level, bw in roofline.memory.items():
        ax.plot(xs, np.minimum(peak, bw * xs), lw=1.5, label=f"{level} {bw:,.0f} GB/s")
    for name, value in roofline.compute.items():
        if name.endswith(dtype):
            ax.axhline(value, ls="--", lw=1, color="gray")
            ax.text(xs[0], value * 1.04, f"{name} {value:,.0f} GFLOP/s", fontsize=8)
    for label, p in items:
        ax.annotate(point_label(label, p), (p.intensity, p.achieved_gflops),
                    textcoords="offset points", xytext=(5, 5), fontsize=8,
                    color="firebrick" if p.above_roof is not None else "black")
        if p.above_roof is None:
            ax.scatter([p.intensity], [p.achieved_gflops], zorder=3)
        else:
            # A point above its ceiling is drawn apart and named in the legend: the plot
            # must not show a broken roof as a fast workload.
            ax.scatter([p.intensity], [p.achieved_gflops], zorder=3, marker="X", s=60,
                       color="firebrick", label=f"{label}: above its ceiling, likely "
                       f"{' or '.join(_CAUSE_WORDS[c] for c in p.above_roof_causes)}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"roofline {dtype}, {roofline.threads} threads, "
                 f"{roofline.machine.get('cpu_model', '')}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    out = Path(path)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out
