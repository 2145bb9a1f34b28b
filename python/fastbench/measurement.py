"""The Measurement record: raw samples of one timed target and everything needed to read them.

Owns the record, its summary figures, its warnings (as coded records) and its plain-data
form. Nothing here measures; fastbench.timing produces Measurements, reports and results
files consume them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
from numpy.typing import NDArray

from .counters import SampleCounts
from .memory import CallMemory
from .report.warnings import WarningRecord
from .stats import Summary, median_ci, summarize
from .stats.phases import Phases, timing_phases
from .stats.summary import PERCENTILES
from .units import format_ns

# Why sampling stopped: all `repeat` samples taken, the `target_rel_ci` reached, or the
# `max_time_s` budget spent first.
STOP_REASONS = ("repeat", "duration_s", "target_rel_ci", "max_time_s")

# Warn when at least this share of the samples ran in interference phases and they moved
# the median of all samples by at least this much.
INTERFERENCE_WARN_SHARE = 0.05
INTERFERENCE_WARN_SHIFT = 0.01

# Every warning a Measurement can carry: its code, its severity and how its sentence begins
# (those of fastbench.stats.summarize included). Each warning is coded where it is written;
# this table codes them again when a results file is read, since files keep the text alone
# (tests check that it recognises every sentence the writers produce). "info" marks what the figure already accounts for: the median leaves out the
# interference phases, and steady_clock is correct, only coarser than the TSC.
_WARNING_KINDS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("high-variation", "warning", re.compile(r"high variation: ")),
    ("few-samples", "warning", re.compile(r"few samples: ")),
    ("outliers", "warning", re.compile(r"\d+ outlier\(s\) of \d+ samples: ")),
    ("multimodal", "warning", re.compile(r"the distribution looks multimodal ")),
    ("drift", "warning", re.compile(r"the samples drift (up|down) ")),
    ("interference", "info", re.compile(r"interference: ")),
    ("clock-fallback", "info", re.compile(r"clock fallback: ")),
    ("precision-target-unmet", "warning", re.compile(r"precision target not reached: ")),
    ("call-floor-noise", "warning",
     re.compile(r"the body costs no more than the call floor's noise ")),
)


@dataclass(frozen=True, eq=False)
class Measurement:
    """The result of timing one callable or statement.

    Attributes
    ----------
    samples_ns : ndarray of float64
        Per-call time of each counted sample in ns (sample duration / ``loops``), in the
        order taken. All of them, those of interference phases included (see ``phases``).
    loops : int
        Calls per sample.
    warmup_samples_ns : ndarray of float64
        Per-call times of the warmup samples, kept apart and never summarised.
    clock : str
        Clock used: "tsc" or "steady" (or the foreign tool's clock for imported results).
    overhead_ns, overhead_mad_ns : float
        The native loop's own cost per iteration (empty body, same loops; includes the
        clock pair spread over the loops): median and median absolute deviation.
    call_floor_ns, call_floor_mad_ns : float
        Per-call time of a no-op called the same way (same loop, same arguments): median
        and MAD. ``net_median_ns`` subtracts it.
    call_floor_kind : str
        "python" (a Python no-op with the same parameters), "native" (a C no-op, for
        built-in callables), "statement" (``pass`` in the same inner loop, for timeit) or
        "unknown" (results imported from tools that measure no floor).
    name : str
        A label for reports.
    calibration_trials : int
        Samples spent choosing ``loops`` (0 when ``loops`` was given).
    elapsed_s : float
        Wall time of the counted samples.
    target_rel_ci : float or None
        The precision asked for (relative half-width of the median's 95% CI), if any.
    stop_reason : str
        One of STOP_REASONS: "repeat", "duration_s", "target_rel_ci" or "max_time_s".
    warnings : tuple of str
        Reasons not to trust the figure (high variation, few samples, multimodal, drift,
        clock fallback, a result within the noise of the call floor...). Reports print them.
        Those :func:`measurement_warnings` gives are
        :class:`~fastbench.report.warnings.WarningRecord`: the same text, with a ``code``.
    counters : SampleCounts or None
        Event counts per call when ``measure`` was given ``counters=[...]``.
    memory : CallMemory or None
        Peak memory per call (RSS increase, Python heap) when ``measure`` was given
        ``memory=True``; tracked on separate calls after the timed samples.
    """

    samples_ns: NDArray[np.float64]
    loops: int
    warmup_samples_ns: NDArray[np.float64]
    clock: str
    overhead_ns: float
    overhead_mad_ns: float
    call_floor_ns: float
    call_floor_mad_ns: float
    call_floor_kind: str = "python"
    name: str = ""
    calibration_trials: int = 0
    elapsed_s: float = 0.0
    target_rel_ci: float | None = None
    stop_reason: str = "repeat"
    warnings: tuple[str, ...] = ()
    counters: SampleCounts | None = None
    memory: CallMemory | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    # -- summary figures ------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of counted samples."""
        return int(self.samples_ns.size)

    @property
    def summary(self) -> Summary:
        """``fastbench.stats.summarize`` of the per-call samples (95% confidence)."""
        if "summary" not in self._cache:
            self._cache["summary"] = summarize(self.samples_ns)
        result: Summary = self._cache["summary"]
        return result

    @property
    def phases(self) -> Phases:
        """Which samples ran in quiet phases (``fastbench.stats.phases.quiet_phases``,
        windows of about 10 ms of sampling). Every sample is quiet below 64 samples."""
        if "phases" not in self._cache:
            self._cache["phases"] = timing_phases(self.samples_ns, max(self.loops, 1))
        result: Phases = self._cache["phases"]
        return result

    @property
    def quiet_samples_ns(self) -> NDArray[np.float64]:
        """The samples of quiet phases, in the order taken (all of them when none was found)."""
        if "quiet" not in self._cache:
            self._cache["quiet"] = self.samples_ns[self.phases.quiet]
        quiet: NDArray[np.float64] = self._cache["quiet"]
        return quiet

    @property
    def min_ns(self) -> float:
        return float(self.samples_ns.min())

    @property
    def max_ns(self) -> float:
        return float(self.samples_ns.max())

    @property
    def median_ns(self) -> float:
        """Median per-call time over the quiet-phase samples: the figure reports give.

        Equal to ``raw_median_ns`` when no interference phase was found. Stretches in which
        a shared machine ran every sample slower (another tenant, the hypervisor) would
        otherwise make the median report how much of the run they covered."""
        return float(np.median(self.quiet_samples_ns))

    @property
    def raw_median_ns(self) -> float:
        """Median per-call time over every sample, interference phases included."""
        return float(np.median(self.samples_ns))

    @property
    def mean_ns(self) -> float:
        return float(self.samples_ns.mean())

    @property
    def stdev_ns(self) -> float:
        """Sample standard deviation (ddof=1); 0.0 with a single sample."""
        return float(self.samples_ns.std(ddof=1)) if self.n > 1 else 0.0

    @property
    def net_median_ns(self) -> float:
        """Median per-call time minus the call floor: the cost of the body alone."""
        return self.median_ns - self.call_floor_ns

    @property
    def percentiles_ns(self) -> dict[str, float]:
        """p5, p25, p50, p75, p95 and p99 of the per-call times (linear interpolation)."""
        values = np.percentile(self.samples_ns, PERCENTILES)
        return {f"p{q}": float(v) for q, v in zip(PERCENTILES, values)}

    def percentile_ns(self, q: float) -> float:
        """The ``q``-th percentile (0..100) of the per-call times."""
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"q must be in [0, 100], got {q!r}")
        return float(np.percentile(self.samples_ns, q))

    @property
    def median_ci_ns(self) -> tuple[float, float] | None:
        """Distribution-free 95% CI of ``median_ns`` (over the quiet-phase samples); None
        below 6 samples."""
        if "median_ci" not in self._cache:
            self._cache["median_ci"] = median_ci(self.quiet_samples_ns, 0.95)
        ci: tuple[float, float] | None = self._cache["median_ci"]
        return ci

    @property
    def rel_ci(self) -> float | None:
        """Half-width of the median's 95% CI relative to the median, or None."""
        return relative_half_width(self.median_ci_ns, self.median_ns)

    @property
    def budget_exhausted(self) -> bool:
        """True when ``max_time_s`` ended sampling before its goal."""
        return self.stop_reason == "max_time_s"

    # -- conversion -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``Measurement.from_dict`` restores it exactly."""
        return {
            "name": self.name,
            "samples_ns": [float(x) for x in self.samples_ns],
            "loops": self.loops,
            "warmup_samples_ns": [float(x) for x in self.warmup_samples_ns],
            "clock": self.clock,
            "overhead_ns": self.overhead_ns,
            "overhead_mad_ns": self.overhead_mad_ns,
            "call_floor_ns": self.call_floor_ns,
            "call_floor_mad_ns": self.call_floor_mad_ns,
            "call_floor_kind": self.call_floor_kind,
            "calibration_trials": self.calibration_trials,
            "elapsed_s": self.elapsed_s,
            "target_rel_ci": self.target_rel_ci,
            "stop_reason": self.stop_reason,
            "warnings": [str(w) for w in self.warnings],  # the text alone
            "counters": None if self.counters is None else self.counters.to_dict(),
            "memory": None if self.memory is None else self.memory.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        """Rebuild a Measurement from ``to_dict`` output.

        Raises
        ------
        ValueError
            If a required key is missing, the samples are empty or not finite, or the
            stop reason is unknown.

        Notes
        -----
        Warnings come back as :class:`~fastbench.report.warnings.WarningRecord` with their
        code when fastbench wrote their sentence (recognised by how it begins), and as plain
        str otherwise (another tool's, or a sentence this version does not know).
        """
        required = ("samples_ns", "loops", "clock", "overhead_ns", "call_floor_ns")
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"Measurement data lacks {', '.join(missing)}")
        samples = np.asarray(data["samples_ns"], dtype=np.float64)
        if samples.ndim != 1 or samples.size == 0 or not np.all(np.isfinite(samples)):
            raise ValueError("Measurement samples_ns must be a non-empty list of finite numbers")
        stop_reason = str(data.get("stop_reason", "repeat"))
        if stop_reason not in STOP_REASONS:
            raise ValueError(f"unknown stop_reason {stop_reason!r}; expected one of {STOP_REASONS}")
        target = data.get("target_rel_ci")
        return cls(
            samples_ns=samples,
            loops=int(data["loops"]),
            warmup_samples_ns=np.asarray(data.get("warmup_samples_ns", []), dtype=np.float64),
            clock=str(data["clock"]),
            overhead_ns=float(data["overhead_ns"]),
            overhead_mad_ns=float(data.get("overhead_mad_ns", 0.0)),
            call_floor_ns=float(data["call_floor_ns"]),
            call_floor_mad_ns=float(data.get("call_floor_mad_ns", 0.0)),
            call_floor_kind=str(data.get("call_floor_kind", "python")),
            name=str(data.get("name", "")),
            calibration_trials=int(data.get("calibration_trials", 0)),
            elapsed_s=float(data.get("elapsed_s", 0.0)),
            target_rel_ci=None if target is None else float(target),
            stop_reason=stop_reason,
            warnings=tuple(_saved_warning(str(w)) for w in data.get("warnings", ())),
            counters=None if data.get("counters") is None else SampleCounts.from_dict(data["counters"]),
            memory=None if data.get("memory") is None else CallMemory.from_dict(data["memory"]),
        )

    def __str__(self) -> str:
        rel = self.rel_ci
        spread = f"± {rel * 100:.1f}%" if rel is not None else "± n/a"
        what = "sample" if self.n == 1 else "samples"
        quiet = int(np.count_nonzero(self.phases.quiet))
        if quiet < self.n:
            what = f"quiet-phase samples of {self.n}"
        return (
            f"{format_ns(self.median_ns)} {spread} (median of {quiet} {what} × "
            f"{self.loops:,} loops, {self.clock} clock)"
        )


def relative_half_width(ci: tuple[float, float] | None, center: float) -> float | None:
    """Half the width of ``ci`` relative to ``|center|``; None without a CI or at 0."""
    if ci is None or center == 0:
        return None
    return (ci[1] - ci[0]) / 2.0 / abs(center)


def _kind(text: str) -> tuple[str, str] | None:
    """(code, severity) of one of the sentences of _WARNING_KINDS, or None."""
    for code, severity, start in _WARNING_KINDS:
        if start.match(text):
            return code, severity
    return None


def _saved_warning(text: str) -> str:
    """A saved sentence as its WarningRecord when fastbench wrote it, else the text."""
    kind = _kind(text)
    return text if kind is None else WarningRecord(text, *kind)


def measurement_warnings(m: Measurement, clock_reason: str = "") -> tuple[WarningRecord, ...]:
    """Every reason not to trust ``m``: its sample statistics and its context.

    Parameters
    ----------
    m : Measurement
    clock_reason : str
        Why "auto" chose the clock it did; reported when that is a fallback to steady_clock.

    Returns
    -------
    tuple of WarningRecord
        One sentence each (a ``str``), with its ``code``: "high-variation", "few-samples",
        "outliers", "multimodal", "drift" (from ``m.summary``), "interference",
        "clock-fallback", "precision-target-unmet" or "call-floor-noise"; and its
        ``severity``: "info" for interference and clock-fallback, else "warning".
    """
    found = list(m.summary.warnings)
    phases = m.phases
    moved = m.raw_median_ns / m.median_ns - 1.0 if m.median_ns > 0 else 0.0
    if phases.disturbed_share >= INTERFERENCE_WARN_SHARE and moved >= INTERFERENCE_WARN_SHIFT:
        found.append(WarningRecord(
            f"interference: {phases.disturbed_share:.1%} of the samples ran in phases "
            f"{phases.slowdown(m.samples_ns):.2f}x slower (raw median {format_ns(m.raw_median_ns)}); "
            "the median is over the quiet phases, every sample is kept",
            "interference", "info"))
    if m.clock == "steady" and clock_reason.startswith("steady"):
        found.append(WarningRecord(f"clock fallback: {clock_reason}", "clock-fallback", "info"))
    rel = m.rel_ci
    if m.target_rel_ci is not None and m.stop_reason == "max_time_s":
        got = "no CI yet" if rel is None else f"{rel * 100:.3g}%"
        found.append(WarningRecord(
            f"precision target not reached: median CI ±{got} > ±{m.target_rel_ci * 100:.3g}% "
            "when the time budget ran out", "precision-target-unmet"))
    noise = 3.0 * max(m.call_floor_mad_ns, 0.0)
    if m.call_floor_kind != "unknown" and m.net_median_ns <= noise:
        found.append(WarningRecord(
            f"the body costs no more than the call floor's noise (net {format_ns(m.net_median_ns)}, "
            f"floor {format_ns(m.call_floor_ns)}): the figure is mostly call overhead",
            "call-floor-noise"))
    return tuple(found)
