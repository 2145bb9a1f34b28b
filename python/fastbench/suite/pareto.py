"""Pareto fronts of named points over two or more objectives, each minimized or maximized:
which variants no other beats on every objective (:func:`pareto_front`), who beats the rest
(:func:`dominated_by`), and the front's knee, the best-balanced trade-off (:func:`knee`).
Pure functions of numbers; nothing here measures, plots or prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .._checks import check_choice, check_finite

__all__ = ["SENSES", "dominated_by", "knee", "pareto_front"]

# How each objective counts: "min" (latency, memory, energy: less is better) or "max"
# (accuracy, throughput: more is better).
SENSES = ("min", "max")

# A front point must lie at least this far (in normalized units, where the front spans
# [0, 1] on each objective) on the ideal side of the chord to be a knee: collinear points
# land within rounding of the chord and are no knee.
_KNEE_MIN_DISTANCE = 1e-9


def _minimized(points: Mapping[str, Sequence[float]],
               senses: Sequence[str]) -> tuple[list[str], NDArray[np.float64]]:
    """The names and an (n, k) array of the points with every objective turned into one to
    minimize ("max" columns negated), after checking both arguments."""
    if not isinstance(points, Mapping):
        raise TypeError(f"points must be a mapping of name -> values, got {type(points).__name__}")
    if isinstance(senses, str) or not isinstance(senses, Sequence):
        raise TypeError(f"senses must be a sequence such as ('min', 'max'), got {senses!r}")
    if len(senses) < 2:
        raise ValueError(f"a Pareto front needs 2 or more objectives, got {len(senses)} "
                         f"sense(s) {tuple(senses)!r}")
    signs = np.array([1.0 if check_choice(f"senses[{i}]", s, SENSES) == "min" else -1.0
                      for i, s in enumerate(senses)])
    names = list(points)
    rows = []
    for name in names:
        values = points[name]
        if isinstance(values, str) or not isinstance(values, (Sequence, np.ndarray)):
            raise TypeError(f"points[{name!r}] must be a sequence of numbers, got {values!r}")
        if len(values) != len(senses):
            raise ValueError(f"points[{name!r}] has {len(values)} value(s), expected "
                             f"{len(senses)} (one per sense {tuple(senses)!r})")
        rows.append([check_finite(f"points[{name!r}][{j}]", v) for j, v in enumerate(values)])
    matrix = np.array(rows, dtype=np.float64).reshape(len(names), len(senses))
    return names, matrix * signs


def _dominators(matrix: NDArray[np.float64], j: int) -> NDArray[np.bool_]:
    """Which rows dominate row ``j`` (all minimized): as good on every objective and
    strictly better on one. A row identical to ``j`` does not dominate it."""
    row = matrix[j]
    dominates: NDArray[np.bool_] = np.all(matrix <= row, axis=1) & np.any(matrix < row, axis=1)
    return dominates


def pareto_front(points: Mapping[str, Sequence[float]], senses: Sequence[str]) -> list[str]:
    """The names no other point dominates.

    Point ``a`` dominates ``b`` when ``a`` is at least as good as ``b`` on every objective
    and strictly better on at least one. Identical points do not dominate each other, so
    both stay on the front (or both leave it).

    Parameters
    ----------
    points : mapping of str to sequence of float
        Each name's values, one per objective, in any units (each objective in one unit
        across the points).
    senses : sequence of {"min", "max"}
        Per objective, whether less ("min": latency_s, memory_bytes) or more ("max":
        accuracy) is better; at least two.

    Returns
    -------
    list of str
        The non-dominated names, in the order of ``points``; empty for no points.

    Raises
    ------
    TypeError
        If ``points`` is not a mapping, a value is not a number, or ``senses`` is a string.
    ValueError
        If there are fewer than 2 senses, a sense is not in :data:`SENSES`, a point's
        number of values differs from the number of senses, or a value is not finite.
    """
    names, matrix = _minimized(points, senses)
    return [name for j, name in enumerate(names) if not _dominators(matrix, j).any()]


def dominated_by(points: Mapping[str, Sequence[float]],
                 senses: Sequence[str]) -> dict[str, list[str]]:
    """For every dominated name, the names that dominate it.

    Parameters
    ----------
    points, senses
        As :func:`pareto_front`.

    Returns
    -------
    dict of str to list of str
        Only the dominated names (the front's are absent), each with its dominators; keys
        and lists in the order of ``points``.

    Raises
    ------
    TypeError, ValueError
        As :func:`pareto_front`.
    """
    names, matrix = _minimized(points, senses)
    out: dict[str, list[str]] = {}
    for j, name in enumerate(names):
        who = np.flatnonzero(_dominators(matrix, j))
        if who.size:
            out[name] = [names[i] for i in who]
    return out


def knee(points: Mapping[str, Sequence[float]], senses: Sequence[str],
         front: Sequence[str] | None = None) -> str | None:
    """The knee of the Pareto front: the front point that trades the objectives off best.

    Each objective is turned into one to minimize and scaled to [0, 1] over the front's
    points (0 the front's best value, 1 its worst; an objective equal on the whole front
    scales to 0). Then:

    - two objectives: the two extreme points, best on one objective each, sit at (0, 1)
      and (1, 0), and the knee is the point farthest from the chord joining them on the
      side of the ideal point (0, 0), the largest ``(1 - x - y) / sqrt(2)``: where the
      curve bends most, as Kneedle takes the point farthest from the line through a
      curve's ends (Satopää et al. 2011, "Finding a 'kneedle' in a haystack", ICDCS
      workshops; Das 1999, "On characterizing the 'knee' of the Pareto curve based on
      normal-boundary intersection", Structural Optimization 18). When no point lies
      on the ideal side (a straight or concave front), no interior point beats the
      extremes as a compromise and there is no knee: None.
    - three or more: the front point closest (Euclidean) to the ideal point (0, ..., 0),
      where every objective would be at its best value on the front at once.

    With fewer than 3 distinct points on the front there is nothing between the extremes
    to call a knee, and the answer is None. Ties go to the first name in ``points`` order,
    so identical points give their first name.

    Parameters
    ----------
    points, senses
        As :func:`pareto_front`.
    front : sequence of str, optional
        The front's names, as :func:`pareto_front` returns them (pass them to save
        computing the front again); by default computed from ``points``.

    Returns
    -------
    str or None
        The knee's name, or None as above.

    Raises
    ------
    TypeError, ValueError
        As :func:`pareto_front`; ValueError also if a name in ``front`` is not in
        ``points``.
    """
    names, matrix = _minimized(points, senses)
    if front is None:
        members = [j for j in range(len(names)) if not _dominators(matrix, j).any()]
    else:
        if isinstance(front, str):
            raise TypeError(f"front must be a sequence of names, got the string {front!r}")
        index = {name: j for j, name in enumerate(names)}
        unknown = [name for name in front if name not in index]
        if unknown:
            raise ValueError(f"front names {unknown!r} are not among the points {names!r}")
        members = sorted({index[name] for name in front})
    sub = matrix[members]
    if len(np.unique(sub, axis=0)) < 3:
        return None
    low = sub.min(axis=0)
    span = sub.max(axis=0) - low
    scaled = (sub - low) / np.where(span > 0.0, span, 1.0)
    if scaled.shape[1] == 2:
        distance = (1.0 - scaled[:, 0] - scaled[:, 1]) / math.sqrt(2.0)
        best = int(np.argmax(distance))          # argmax takes the first of equal values
        return names[members[best]] if distance[best] > _KNEE_MIN_DISTANCE else None
    return names[members[int(np.argmin(np.linalg.norm(scaled, axis=1)))]]
