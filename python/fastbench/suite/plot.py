"""The suite's figures: bars with interval error bars, a Pareto scatter with its front, and
x-y curves (latency against throughput per variant), each written to an image file.

Drawing only; the numbers come from suite results. matplotlib (the ``plot`` extra) is
imported when a figure is made, never at import, and through its object API on the Agg
canvas: pyplot's current figure and the user's chosen backend are left as they were.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_bars", "plot_curves", "plot_pareto"]

_HIGHLIGHT = "tab:orange"
_NORMAL = "tab:blue"
_DOMINATED = "0.7"


def _figure(size: tuple[float, float]) -> tuple[Figure, Axes]:
    """A figure on its own Agg canvas, with one axes: no pyplot, no backend switch."""
    try:
        # matplotlib itself first: its submodules may already be loaded, and importing one
        # of those by its full name would not notice a blocked (None) parent.
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError('suite plots need matplotlib: pip install "fastbench[plot]"') from e
    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    out = Path(path)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    return out


def _check_ci(name: str, value: float, ci: tuple[float, float] | None) -> tuple[float, float]:
    """(below, above) error-bar lengths of ``ci`` around ``value``; (0, 0) without one."""
    if ci is None:
        return 0.0, 0.0
    lo, hi = float(ci[0]), float(ci[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"the interval of {name!r} must be finite (low, high) with "
                         f"low <= high, got {ci!r}")
    # An interval that does not hold its point (a ratio's median outside a bootstrap
    # interval, rounding) draws a zero-length side rather than a negative one.
    return max(value - lo, 0.0), max(hi - value, 0.0)


def plot_bars(names: Sequence[str], values: Sequence[float],
              cis: Sequence[tuple[float, float] | None] | None,
              path: str | os.PathLike[str], *, ylabel: str, title: str | None = None,
              baseline: str | None = None) -> Path:
    """Write a bar chart with asymmetric error bars from intervals.

    Parameters
    ----------
    names : sequence of str
        One bar each, in order.
    values : sequence of float
        Bar heights, finite.
    cis : sequence of (low, high) or None, or None
        Each bar's interval (None: no error bar); None for no error bars at all.
    path : str or path-like
        The image file; matplotlib picks the format from the suffix (".png", ".svg").
    ylabel : str
        The value's name and unit ("latency (ms)").
    title : str, optional
    baseline : str, optional
        The name of the bar to highlight (drawn in another colour, "(baseline)" added to
        its label).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        Lengths that differ, no bars, a value that is not finite, an interval with low >
        high, or a ``baseline`` not among the names.
    ImportError
        matplotlib is not installed: ``pip install "fastbench[plot]"``.
    """
    labels = [str(n) for n in names]
    heights = [float(v) for v in values]
    intervals: list[tuple[float, float] | None] = (
        [None] * len(labels) if cis is None else list(cis))
    if not labels or len(heights) != len(labels) or len(intervals) != len(labels):
        raise ValueError(f"names, values and cis must have the same non-zero length, got "
                         f"{len(labels)}, {len(heights)} and {len(intervals)}")
    bad = [n for n, v in zip(labels, heights) if not math.isfinite(v)]
    if bad:
        raise ValueError(f"values must be finite; not for {bad}")
    if baseline is not None and baseline not in labels:
        raise ValueError(f"baseline {baseline!r} is not one of the names {labels}")
    errs = [_check_ci(n, v, c) for n, v, c in zip(labels, heights, intervals)]
    fig, ax = _figure((max(4.0, 0.8 * len(labels) + 2.0), 4.5))
    colors = [_HIGHLIGHT if n == baseline else _NORMAL for n in labels]
    xs = list(range(len(labels)))
    ax.bar(xs, heights, color=colors,
           yerr=[[e[0] for e in errs], [e[1] for e in errs]], capsize=4,
           error_kw={"elinewidth": 1.0, "ecolor": "black"})
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{n}\n(baseline)" if n == baseline else n for n in labels],
                       rotation=30 if len(labels) > 6 else 0, fontsize=8)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def plot_pareto(points: Mapping[str, tuple[float, float]],
                cis: Mapping[str, tuple[tuple[float, float], tuple[float, float]]] | None,
                front: Sequence[str], path: str | os.PathLike[str], *, xlabel: str,
                ylabel: str, knee: str | None = None) -> Path:
    """Write a Pareto scatter: every variant with 2-D error bars, the front as a step line.

    Parameters
    ----------
    points : mapping of name to (x, y)
        Each variant's two metrics (for example latency and error), finite.
    cis : mapping of name to ((x_low, x_high), (y_low, y_high)), or None
        Intervals of either metric; a name missing here gets no error bars.
    front : sequence of str
        The names on the Pareto front (as the caller computed it, in any order). They are
        drawn in colour and joined by a step line in increasing x; the others are greyed.
    path : str or path-like
        The image file.
    xlabel, ylabel : str
        The metrics' names and units.
    knee : str, optional
        A front point to mark as the knee (a star, named in the legend).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        No points, a coordinate that is not finite, a front or knee name that is not a
        point, or a bad interval.
    ImportError
        matplotlib is not installed: ``pip install "fastbench[plot]"``.
    """
    if not points:
        raise ValueError("plot_pareto needs at least one point")
    coords = {str(k): (float(v[0]), float(v[1])) for k, v in points.items()}
    bad = [k for k, (x, y) in coords.items() if not (math.isfinite(x) and math.isfinite(y))]
    if bad:
        raise ValueError(f"points must have finite coordinates; not {bad}")
    on_front = [str(n) for n in front]
    unknown = [n for n in on_front if n not in coords]
    if unknown:
        raise ValueError(f"front names {unknown} are not among the points {sorted(coords)}")
    if knee is not None and knee not in coords:
        raise ValueError(f"knee {knee!r} is not among the points {sorted(coords)}")
    intervals = {} if cis is None else {str(k): v for k, v in cis.items()}
    fig, ax = _figure((7.0, 5.0))
    front_set = set(on_front)
    for name, (x, y) in coords.items():
        color = _NORMAL if name in front_set else _DOMINATED
        ci = intervals.get(name)
        xerr: Any = None
        yerr: Any = None
        if ci is not None:
            ex, ey = _check_ci(name, x, ci[0]), _check_ci(name, y, ci[1])
            xerr, yerr = [[ex[0]], [ex[1]]], [[ey[0]], [ey[1]]]
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt="o", color=color, ecolor=color,
                    elinewidth=1.0, capsize=3, zorder=3 if name in front_set else 2)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 5), fontsize=8,
                    color="black" if name in front_set else "0.5")
    if on_front:
        ordered = sorted((coords[n] for n in on_front), key=lambda p: (p[0], p[1]))
        ax.step([p[0] for p in ordered], [p[1] for p in ordered], where="post",
                color=_NORMAL, lw=1.5, label="Pareto front")
    if knee is not None:
        kx, ky = coords[knee]
        ax.scatter([kx], [ky], marker="*", s=220, color=_HIGHLIGHT, zorder=4,
                   label=f"knee: {knee}")
    ax.margins(0.1)  # room for the labels of the outermost points
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if on_front or knee is not None:
        ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return _save(fig, path)


def plot_curves(curves: Mapping[str, Sequence[tuple[float, float]]],
                path: str | os.PathLike[str], *, xlabel: str, ylabel: str,
                logx: bool = False, logy: bool = False) -> Path:
    """Write one line with markers per curve (latency against throughput per variant, or
    any x-y curves), in the order each curve's points are given.

    Parameters
    ----------
    curves : mapping of name to sequence of (x, y)
        Each curve's points, finite (positive on a log axis).
    path : str or path-like
        The image file.
    xlabel, ylabel : str
    logx, logy : bool
        Logarithmic axes.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        No curves, an empty curve, a coordinate that is not finite, or one not positive on
        a log axis.
    ImportError
        matplotlib is not installed: ``pip install "fastbench[plot]"``.
    """
    if not curves:
        raise ValueError("plot_curves needs at least one curve")
    data: dict[str, tuple[list[float], list[float]]] = {}
    for name, pts in curves.items():
        xs = [float(p[0]) for p in pts]
        ys = [float(p[1]) for p in pts]
        if not xs:
            raise ValueError(f"curve {name!r} has no points")
        if not all(math.isfinite(v) for v in xs + ys):
            raise ValueError(f"curve {name!r} has a coordinate that is not finite")
        for axis, vals, on in (("x", xs, logx), ("y", ys, logy)):
            if on and min(vals) <= 0.0:
                raise ValueError(f"curve {name!r} has {axis} <= 0 on a log {axis} axis")
        data[str(name)] = (xs, ys)
    fig, ax = _figure((7.0, 5.0))
    for name, (xs, ys) in data.items():
        ax.plot(xs, ys, marker="o", lw=1.5, label=name)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, path)
