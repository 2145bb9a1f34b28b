"""The result of :func:`fastbench.profiled`: every call of one decorated function, its time
and its peak memory, with the median and percentiles over the calls and their
distribution-free intervals. Plain data: nothing here times, tracks or prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..report.lines import TextLines, brief_repr, note_lines
from ..report.table import table
from ..stats.plain import PlainRecord
from ..stats.quantiles import quantile_ci, quantile_ci_min_samples
from ..units import format_bytes, format_ns

__all__ = ["CALL_PERCENTILES", "CallProfile"]

# The percentiles every report shows, with their 95% intervals where the calls allow one.
CALL_PERCENTILES = (0.5, 0.9, 0.99)
_CONFIDENCE = 0.95


def _quantile(values: tuple[float, ...], q: float) -> float:
    # numpy's default (linear) interpolation between order statistics: the median of an
    # even count is the mean of the middle two, as everywhere else in fastbench.
    return float(np.quantile(np.asarray(values, dtype=np.float64), q))


def _interval(values: tuple[float, ...], q: float) -> tuple[float, float] | None:
    return quantile_ci(values, q, _CONFIDENCE) if len(values) >= 2 else None


@dataclass(frozen=True, eq=False)
class CallProfile(PlainRecord, TextLines):
    """The calls of one function decorated with :func:`fastbench.profiled`.

    Attributes
    ----------
    name : str
        The function's qualified name (or the name given to the decorator).
    times_ns : tuple of float
        Per call that returned, its wall time in ns, read on ``clock`` around the call.
    peak_increase_bytes : tuple of int or None
        Per call that returned, the peak RSS during the call minus the RSS before it, in
        bytes (:func:`fastbench.memory.track`); None when memory was not tracked.
    memory_method : str
        How the peaks were read (``MemoryUsage.method``); "" without memory tracking.
    exact : bool
        False when a peak is a sampled lower bound.
    clock : str
        The clock the calls were timed on.
    failed_calls : int
        Calls that raised: left out of the figures (they may have stopped part way).
    """

    name: str
    times_ns: tuple[float, ...]
    peak_increase_bytes: tuple[int, ...] | None
    memory_method: str
    exact: bool
    clock: str
    failed_calls: int = 0

    @property
    def calls(self) -> int:
        """Calls that returned (the figures are over these)."""
        return len(self.times_ns)

    # -- time ----------------------------------------------------------------------------
    def percentile_ns(self, q: float) -> float:
        """The ``q`` quantile (0.5 the median, 0.99 the p99) of the call times, ns.

        Raises
        ------
        ValueError
            No call returned yet.
        """
        if not self.times_ns:
            raise ValueError(f"{self.name} has not returned from a profiled call yet")
        return _quantile(self.times_ns, q)

    def percentile_ci_ns(self, q: float) -> tuple[float, float] | None:
        """95% distribution-free interval of the ``q`` quantile of the call times
        (:func:`fastbench.stats.quantile_ci`); None with too few calls for one."""
        return _interval(self.times_ns, q)

    @property
    def median_ns(self) -> float:
        return self.percentile_ns(0.5)

    @property
    def median_ci_ns(self) -> tuple[float, float] | None:
        return self.percentile_ci_ns(0.5)

    # -- memory --------------------------------------------------------------------------
    def peak_percentile_bytes(self, q: float) -> float | None:
        """The ``q`` quantile of the per-call peak RSS increase, bytes; None untracked."""
        peaks = self.peak_increase_bytes
        return None if not peaks else _quantile(tuple(float(p) for p in peaks), q)

    def peak_percentile_ci_bytes(self, q: float) -> tuple[float, float] | None:
        """95% interval of that quantile; None untracked or with too few calls."""
        peaks = self.peak_increase_bytes
        return None if not peaks else _interval(tuple(float(p) for p in peaks), q)

    @property
    def median_peak_bytes(self) -> float | None:
        return self.peak_percentile_bytes(0.5)

    @property
    def max_peak_bytes(self) -> int | None:
        return max(self.peak_increase_bytes) if self.peak_increase_bytes else None

    # -- text ----------------------------------------------------------------------------
    def lines(self) -> list[str]:
        """A title line, then one row per figure: median, p90, p99 (each with its 95%
        interval, or why it has none) and the extremes, for time and memory."""
        failed = f", {self.failed_calls} raised (left out)" if self.failed_calls else ""
        out = [f"profiled {self.name}: {self.calls} calls{failed}"]
        if not self.calls:
            return out
        rows = [self._row("time", q, self.percentile_ns(q), self.percentile_ci_ns(q),
                          format_ns) for q in CALL_PERCENTILES]
        rows.append(("time", "max", format_ns(max(self.times_ns)), ""))
        if self.peak_increase_bytes:
            def size(v: float) -> str:
                return format_bytes(v, sign=True)
            for q in CALL_PERCENTILES:
                value = self.peak_percentile_bytes(q)
                rows.append(self._row("peak RSS", q, 0.0 if value is None else value,
                                      self.peak_percentile_ci_bytes(q), size))
            rows.append(("peak RSS", "max", size(self.max_peak_bytes or 0), ""))
        out += table(("figure", "", "value", "95% CI"), rows, align="llrl")
        notes = [f"timed on the {self.clock} clock around each call"]
        if self.peak_increase_bytes is not None:
            lower = "" if self.exact else " (sampled: lower bounds)"
            notes.append(f"peak RSS: the peak during each call above the RSS before it, "
                         f"{self.memory_method}{lower}")
        return out + note_lines(notes)

    def _row(self, what: str, q: float, value: float, ci: tuple[float, float] | None,
             fmt: Any) -> tuple[str, str, str, str]:
        label = "median" if q == 0.5 else f"p{q * 100:g}"
        if ci is not None:
            interval = f"[{fmt(ci[0])}, {fmt(ci[1])}]"
        else:
            interval = f"n/a (needs {quantile_ci_min_samples(q, _CONFIDENCE)} calls)"
        return what, label, fmt(value), interval

    def __repr__(self) -> str:
        if not self.calls:
            return brief_repr(self, f"{self.name}: no calls yet")
        memory = ("" if self.median_peak_bytes is None
                  else f", peak RSS {format_bytes(self.median_peak_bytes, sign=True)}")
        return brief_repr(self, f"{self.name}: {self.calls} calls, median "
                                f"{format_ns(self.median_ns)}{memory}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallProfile:
        """The record :meth:`to_dict` gave."""
        peaks = data.get("peak_increase_bytes")
        return cls(str(data["name"]), tuple(float(t) for t in data["times_ns"]),
                   None if peaks is None else tuple(int(p) for p in peaks),
                   str(data.get("memory_method", "")), bool(data.get("exact", True)),
                   str(data.get("clock", "")), int(data.get("failed_calls", 0)))
