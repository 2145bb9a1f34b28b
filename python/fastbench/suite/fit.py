"""Power-law fits of a cost against a size: ``y = coefficient * x ** exponent`` by least
squares on the log scale, the exponent's confidence interval, the usual order of growth
("O(n^2)") the interval is consistent with, and predictions at a new size with the
prediction interval of a new measurement there, marked when they extrapolate. Numbers in, a
record out: nothing here measures or prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, overload

import numpy as np
from numpy.typing import NDArray

from .._checks import check_fraction
from ..report.lines import TextLines, brief_repr
from ..stats._scipy import sps
from ..units import format_ns

__all__ = ["USUAL_ORDERS", "PowerLawFit", "Prediction", "power_law_fit"]

# The orders of growth big_o() names: constant, square root, linear, n^1.5, quadratic, cubic
# (and n log n, judged apart against n^1 since it is no power).
USUAL_ORDERS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)

_ORDER_TEXT = {0.0: "O(1)", 0.5: "O(n^0.5)", 1.0: "O(n)", 1.5: "O(n^1.5)", 2.0: "O(n^2)",
               3.0: "O(n^3)"}


@dataclass(frozen=True)
class _Line:
    """Least squares of v on u: slope, intercept, the slope's standard error, R^2."""

    slope: float
    intercept: float
    slope_se: float
    r2: float


def _line(u: NDArray[np.float64], v: NDArray[np.float64]) -> _Line:
    du = u - u.mean()
    dv = v - v.mean()
    sxx = float(np.sum(du * du))
    slope = float(np.sum(du * dv)) / sxx
    intercept = float(v.mean()) - slope * float(u.mean())
    resid = v - (intercept + slope * u)
    ss_res = float(np.sum(resid * resid))
    ss_tot = float(np.sum(dv * dv))
    se = math.sqrt(ss_res / (u.size - 2) / sxx)
    # All y equal: the line fits exactly (slope 0) and explains everything there is.
    r2 = 1.0 if ss_tot == 0.0 else max(0.0, 1.0 - ss_res / ss_tot)
    return _Line(slope, intercept, se, r2)


def _interval(line: _Line, n: int, confidence: float) -> tuple[float, float]:
    t = _t(confidence, n - 2)
    return line.slope - t * line.slope_se, line.slope + t * line.slope_se


def _t(confidence: float, dof: int) -> float:
    return float(sps().t.ppf(0.5 + confidence / 2.0, dof))


def _fixed_rss(residual: NDArray[np.float64]) -> float:
    """Residual sum of squares of a one-parameter fit ``v = c + residual`` (c free)."""
    d = residual - residual.mean()
    return float(np.sum(d * d))


@dataclass(frozen=True)
class Prediction(TextLines):
    """What a power-law fit predicts for a new measurement at ``x``
    (:meth:`PowerLawFit.prediction`).

    Attributes
    ----------
    x : float
    value : float
        The fitted line at ``x``: ``coefficient * x ** exponent``, in y's unit. On the log
        scale it is the mean, so for y it is the median of a new measurement.
    interval : (float, float)
        The prediction interval of one new measurement at ``x`` at ``confidence``, from
        the log-log regression: ``exp(log value ± t * s * sqrt(1 + 1/n + (log x - mean
        log x)² / Sxx))``, with ``s`` the residuals' standard deviation (n - 2 degrees of
        freedom) and ``Sxx`` the spread of the fitted log x. It holds the scatter of one
        measurement and the uncertainty of the whole line (exponent and coefficient), and
        widens away from the middle of the points.
    confidence : float
    extrapolation : bool
        Whether ``x`` lies outside the measured range: the interval then assumes the power
        law still holds there, which the points cannot tell.
    measured_range : (float, float)
        The smallest and largest x fitted.
    x_label : str
    unit : str
        y's unit for the text: "s" writes times, "" plain numbers.
    """

    x: float
    value: float
    interval: tuple[float, float]
    confidence: float
    extrapolation: bool
    measured_range: tuple[float, float]
    x_label: str = "n"
    unit: str = ""

    def contains(self, y: float) -> bool:
        """Whether a measurement ``y`` at ``x`` lies inside the prediction interval."""
        return self.interval[0] <= y <= self.interval[1]

    def _y(self, v: float) -> str:
        if self.unit == "s":
            return format_ns(v * 1e9)
        return f"{v:.4g}" + (f" {self.unit}" if self.unit else "")

    def __repr__(self) -> str:
        return brief_repr(self, f"{self._y(self.value)} at {self.x_label} = {self.x:.4g}"
                                + (", extrapolated" if self.extrapolation else ""))

    def lines(self) -> list[str]:
        lo, hi = self.measured_range
        where = (f"extrapolated beyond the measured {self.x_label} {lo:.4g} to {hi:.4g}: "
                 "the power law is assumed to hold there" if self.extrapolation
                 else f"within the measured {self.x_label} {lo:.4g} to {hi:.4g}")
        return [f"predicted at {self.x_label} = {self.x:.4g}: {self._y(self.value)}, "
                f"{self.confidence:.0%} prediction interval [{self._y(self.interval[0])}, "
                f"{self._y(self.interval[1])}] ({where})"]


@dataclass(frozen=True)
class PowerLawFit(TextLines):
    """``y ≈ coefficient * x ** exponent``, fitted on the log scale (:func:`power_law_fit`).

    Attributes
    ----------
    exponent : float
        The slope of log y on log x.
    exponent_ci : (float, float)
        Its confidence interval at ``confidence`` (Student t, n - 2 degrees of freedom).
    coefficient : float
        ``exp(intercept)``: y at x = 1, in y's unit.
    r2 : float
        Coefficient of determination on the log scale (1.0 when all y are equal).
    n_points : int
        Points fitted.
    x_label : str
        What x is ("n", "batch", "FLOPs"), for the text.
    confidence : float
        The interval's coverage.
    x, y : tuple of float
        The points fitted, in the order given (kept for :meth:`big_o` and for plots).
    """

    exponent: float
    exponent_ci: tuple[float, float]
    coefficient: float
    r2: float
    n_points: int
    x_label: str = "n"
    confidence: float = 0.95
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()

    @overload
    def predict(self, x: float) -> float: ...

    @overload
    def predict(self, x: Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]: ...

    def predict(self, x: Any) -> Any:
        """``coefficient * x ** exponent``: a float for a number, an array for a sequence."""
        if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
            return self.coefficient * float(x) ** self.exponent
        return self.coefficient * np.asarray(x, dtype=np.float64) ** self.exponent

    def prediction(self, x: float, confidence: float | None = None, *,
                   unit: str = "") -> Prediction:
        """The prediction for a new measurement at ``x`` with its prediction interval, and
        whether ``x`` extrapolates beyond the measured range (:class:`Prediction`).

        Parameters
        ----------
        x : float
            A size, positive and finite.
        confidence : float, optional
            The interval's coverage (default: the fit's).
        unit : str
            y's unit for the text ("s" for seconds).

        Raises
        ------
        TypeError
            ``x`` is not a number.
        ValueError
            ``x`` is not positive and finite, ``confidence`` is outside (0, 1), or the fit
            keeps no points (one rebuilt from a file without them).
        """
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise TypeError(f"x must be a number, got {type(x).__name__}")
        x0 = float(x)
        if not (math.isfinite(x0) and x0 > 0.0):
            raise ValueError(f"x must be positive and finite, got {x!r}")
        level = self.confidence if confidence is None else check_fraction("confidence",
                                                                          confidence)
        if len(self.x) < 3 or len(self.x) != len(self.y):
            raise ValueError("this fit keeps no points (x, y): a prediction interval needs "
                             "their scatter about the line")
        u, v = np.log(np.asarray(self.x)), np.log(np.asarray(self.y))
        line = _line(u, v)
        n = u.size
        du = u - u.mean()
        sxx = float(np.sum(du * du))
        s = math.sqrt(float(np.sum((v - line.intercept - line.slope * u) ** 2)) / (n - 2))
        u0 = math.log(x0)
        centre = line.intercept + line.slope * u0
        half = _t(level, n - 2) * s * math.sqrt(1.0 + 1.0 / n + (u0 - float(u.mean())) ** 2 / sxx)
        lo, hi = min(self.x), max(self.x)
        return Prediction(x0, math.exp(centre), (math.exp(centre - half), math.exp(centre + half)),
                          level, not lo <= x0 <= hi, (lo, hi), self.x_label, unit)

    @property
    def nlogn_consistent(self) -> bool:
        """Whether ``y ∝ x log x`` is consistent with the points: all x > 1 and the
        interval of the slope of ``log(y / ln x)`` on ``log x`` holds 1."""
        if len(self.x) < 3 or min(self.x) <= 1.0:
            return False
        u = np.log(np.asarray(self.x))
        v = np.log(np.asarray(self.y)) - np.log(u)
        if float(np.ptp(u)) == 0.0:
            return False
        lo, hi = _interval(_line(u, v), u.size, self.confidence)
        return lo <= 1.0 <= hi

    @property
    def nlogn_better(self) -> bool:
        """Whether ``y = c x log x`` leaves smaller log-scale residuals than ``y = c x``
        (both with one free constant); False when some x <= 1 or the points are not kept."""
        if len(self.x) < 3 or min(self.x) <= 1.0:
            return False
        u = np.log(np.asarray(self.x))
        v = np.log(np.asarray(self.y))
        return _fixed_rss(v - u - np.log(u)) < _fixed_rss(v - u)

    def order(self) -> str | None:
        """The usual order of growth the fit is consistent with ("O(n)", "O(n log n)" ...),
        or None (see :meth:`big_o`)."""
        lo, hi = self.exponent_ci
        inside = [k for k in USUAL_ORDERS if lo <= k <= hi]
        if inside:
            best = min(inside, key=lambda k: (abs(k - self.exponent), k))
            if best == 1.0 and self.nlogn_consistent and self.nlogn_better:
                return "O(n log n)"
            return _ORDER_TEXT[best]
        # n log n's local exponent, 1 + 1 / ln x, sits above 1 on any range, so a tight
        # interval can miss 1 while x log x itself fits.
        if self.nlogn_consistent and self.nlogn_better:
            return "O(n log n)"
        return None

    def big_o(self) -> str:
        """The fitted growth in words: "O(n^1.02), consistent with O(n)".

        The order named is the usual one (:data:`USUAL_ORDERS`) inside the exponent's
        interval nearest to the exponent; "O(n log n)" instead of "O(n)" when ``x log x``
        is consistent with the points and fits them better than ``x`` (smaller log-scale
        residuals), which also names it when no usual power is inside the interval. Else
        "no usual order inside the interval".
        """
        fitted = f"O(n^{self.exponent:.3g})"
        found = self.order()
        lo, hi = self.exponent_ci
        if found is None:
            return (f"{fitted}, no usual order inside the interval "
                    f"[{lo:.3g}, {hi:.3g}]")
        return f"{fitted}, consistent with {found}"

    def __repr__(self) -> str:
        lo, hi = self.exponent_ci
        return brief_repr(self, f"time ∝ {self.x_label}^{self.exponent:.3f} "
                                f"[{lo:.3f}, {hi:.3f}] over {self.n_points} points")

    def lines(self) -> list[str]:
        lo, hi = self.exponent_ci
        return [f"time ∝ {self.x_label}^{self.exponent:.3f} "
                f"({self.confidence:.0%} CI [{lo:.3f}, {hi:.3f}], R² {self.r2:.4f}, "
                f"{self.n_points} points): {self.big_o()}"]

    def to_dict(self) -> dict[str, Any]:
        return {"exponent": self.exponent, "exponent_ci": list(self.exponent_ci),
                "coefficient": self.coefficient, "r2": self.r2, "n_points": self.n_points,
                "x_label": self.x_label, "confidence": self.confidence,
                "x": list(self.x), "y": list(self.y)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PowerLawFit:
        """Rebuild from :meth:`to_dict` output; KeyError names a missing key."""
        ci = d["exponent_ci"]
        return cls(float(d["exponent"]), (float(ci[0]), float(ci[1])),
                   float(d["coefficient"]), float(d["r2"]), int(d["n_points"]),
                   str(d.get("x_label", "n")), float(d.get("confidence", 0.95)),
                   tuple(float(v) for v in d.get("x", ())),
                   tuple(float(v) for v in d.get("y", ())))


def _positive(name: str, values: Any) -> NDArray[np.float64]:
    try:
        a = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}"
                        ) from None
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    bad = ~(np.isfinite(a) & (a > 0.0))
    if bad.any():
        raise ValueError(f"{name} must hold positive finite values (a power law is fitted on "
                         f"the log scale); {int(bad.sum())} of {a.size} are not, e.g. "
                         f"{float(a[bad][0])!r}")
    return a


def power_law_fit(x: Sequence[float] | NDArray[np.float64],
                  y: Sequence[float] | NDArray[np.float64], confidence: float = 0.95, *,
                  x_label: str = "n") -> PowerLawFit:
    """Fit ``y = coefficient * x ** exponent`` by least squares of log y on log x.

    Parameters
    ----------
    x : sequence of float
        Sizes (elements, batch, FLOPs), positive and finite, at least two distinct.
    y : sequence of float
        Costs at each size (seconds, bytes ...), positive and finite; same length as ``x``.
    confidence : float
        Coverage of the exponent's interval, in (0, 1).
    x_label : str
        What x is, for the text.

    Returns
    -------
    PowerLawFit
        The exponent with a Student t interval from the slope's standard error
        (``n - 2`` degrees of freedom), the coefficient, and R² on the log scale.

    Raises
    ------
    TypeError
        ``x`` or ``y`` is not numbers, or ``confidence`` is not a number.
    ValueError
        Fewer than 3 points, lengths that differ, a value that is not positive and finite,
        all x equal, or ``confidence`` outside (0, 1).

    Notes
    -----
    Ordinary least squares: every point weighs the same, and per-point uncertainties of y
    (a median's interval) are not used as weights. The interval comes from the scatter of
    the points about the line, which already holds their measurement noise; it assumes that
    scatter is independent and alike on the log scale (a constant relative error), which
    suits timings. A cost with a constant part (a call overhead) bends the log-log line
    down at small x: its exponent is then a local slope.
    """
    level = check_fraction("confidence", confidence)
    xs, ys = _positive("x", x), _positive("y", y)
    if xs.size != ys.size:
        raise ValueError(f"x and y must have the same length, got {xs.size} and {ys.size}")
    if xs.size < 3:
        raise ValueError(f"a power-law fit needs at least 3 points (one degree of freedom "
                         f"for the interval), got {xs.size}")
    u, v = np.log(xs), np.log(ys)
    if float(np.ptp(u)) == 0.0:
        raise ValueError(f"x must hold at least two distinct values, got all {float(xs[0])!r}")
    line = _line(u, v)
    return PowerLawFit(exponent=line.slope, exponent_ci=_interval(line, xs.size, level),
                       coefficient=math.exp(line.intercept), r2=line.r2, n_points=int(xs.size),
                       x_label=str(x_label), confidence=level,
                       x=tuple(float(a) for a in xs), y=tuple(float(b) for b in ys))
