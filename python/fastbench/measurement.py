"""The Measurement record: raw samples of one timed target and everything needed to read them.

Owns the record, its summary figures, its warnings (as coded records) and its plain-data
form. Nothing here measures; fastbench.timing produces Measurements, reports and results
files consume them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .counters import SampleCounts
from .identity import Identity
from .memory import CallMemory
from .report.lines import brief_repr
from .report.warnings import WarningRecord
from .stats import Summary, median_ci, summarize
from .stats.phases import Phases, concatenate_phases, timing_phases
from .stats.runs import RUN_TOLERANCE, quiet_runs, run_level
from .stats.summary import PERCENTILES
from .units import format_ns, format_rel

# Why sampling stopped: all `repeat` samples taken, the `target_rel_ci` reached, or the
# `max_time_s` budget spent first.
STOP_REASONS = ("repeat", "duration_s", "target_rel_ci", "max_time_s")
# The range a time per call can hold in a results file: a femtosecond to about 30 years. A
# value outside it is no measurement, and ratios or formatting of it would overflow.
MIN_SAMPLE_NS = 1e-6
MAX_SAMPLE_NS = 1e18
# The most loops per sample (fastbench.timing.config.MAX_COUNT) and the widest run-to-run
# variation a file may state (1000%).
MAX_LOOPS = 1 << 40
MAX_RUN_VARIATION = 10.0

# Warn when at least this share of the samples ran in interference phases and they moved
# the median of all samples by at least this much.
INTERFERENCE_WARN_SHARE = 0.05
INTERFERENCE_WARN_SHIFT = 0.01
# Warn when the medians of a measurement's runs (worker processes) vary by more than this
# (relative standard deviation between runs).
RUN_SPREAD_WARN = 0.03

# Warnings of single runs that a result of several keeps (the others it finds again from
# the samples of all of them).
_CARRIED_CODES = frozenset({"version-import"})

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
    ("run-spread", "warning", re.compile(r"runs disagree: ")),
    ("disturbed-runs", "info", re.compile(r"disturbed processes: ")),
    ("version-import", "warning", re.compile(r"version import: ")),
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
    clock_resolution_ns : float
        The smallest step the clock read in when the samples were taken (a whole sample's,
        not a call's); 0.0 when not known (another tool's results, older files). A median
        is not located more finely than one step per sample, ``clock_resolution_ns /
        loops`` per call, however many samples tie at it: ``median_ci_ns`` is never
        narrower than that either side.
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
    run_lengths : tuple of int
        With several runs (worker processes, ``processes=N``): how many of ``samples_ns``
        each run took, in order (they sum to ``n``). Empty for a single run.
    run_loops : tuple of int
        Calls per sample of each run (each worker calibrates its own); empty for one run.
    run_variation : float or None
        How much separate runs of the same code vary on this machine (relative standard
        deviation of their medians), as known when the measurement was taken: learned from
        at least 3 saved replicates of its identity (:mod:`fastbench.replicates`), else
        measured by ``fastbench variation`` or given; None when unknown. Reports and comparisons of a single-run
        result use it.
    run_variation_df : int or None
        Degrees of freedom of ``run_variation`` (the processes it was measured with, minus
        one); None for a value given without them.
    workload : str
        Which benchmark this is, as a key that stays the same across versions of the code:
        a hash of the statement and setup, or of the callable's module, qualified name and
        argument types; "" when unknown (another tool's file).
    identity : Identity or None
        What makes it this code (:class:`fastbench.identity.Identity`): the hash of the
        code and of the argument values, the git commit and uncommitted changes, the
        versions of Python, fastbench and the packages used. Results of equal
        ``identity.key`` saved on one machine are replicates (:mod:`fastbench.machine.runlog`),
        from which comparisons learn how much whole results of that code vary; None when
        not known (another tool's file, an older one).

    Notes
    -----
    With several runs the run is a random effect: ``median_ns`` is the geometric mean of
    the runs' medians (each over its quiet-phase samples) and ``median_ci_ns`` their t
    interval (:func:`fastbench.stats.runs.run_level`); the samples of one run only make that
    run's median. With one run, ``median_ci_ns`` is a within-run interval: it says nothing of
    how the next run will come out, which ``run_variation`` does.
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
    run_lengths: tuple[int, ...] = ()
    run_loops: tuple[int, ...] = ()
    run_variation: float | None = None
    run_variation_df: int | None = None
    workload: str = ""
    clock_resolution_ns: float = 0.0
    identity: Identity | None = None
    # Figures computed from the fields above, filled on first use. Not an __init__ argument,
    # so dataclasses.replace() gives the copy an empty cache of its own: a shared one would
    # report the original's figures for the new samples, and fill the original's with the
    # copy's.
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

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
    def runs(self) -> int:
        """Independent runs (worker processes) the samples come from: 1 unless measured with
        ``processes=N`` or merged by :meth:`from_runs`."""
        return max(len(self.run_lengths), 1)

    def run_samples_ns(self) -> list[NDArray[np.float64]]:
        """The samples of each run, in order (one array for a single run)."""
        if not self.run_lengths:
            return [self.samples_ns]
        edges = np.cumsum((0, *self.run_lengths))
        return [self.samples_ns[a:b] for a, b in zip(edges[:-1], edges[1:])]

    @property
    def phases(self) -> Phases:
        """Which samples ran in quiet phases (``fastbench.stats.phases.quiet_phases``,
        windows of about 10 ms of sampling), found in each run on its own. Every sample is
        quiet below 64 samples."""
        if "phases" not in self._cache:
            if not self.run_lengths:
                self._cache["phases"] = timing_phases(self.samples_ns, max(self.loops, 1))
            else:
                self._cache["phases"] = concatenate_phases([
                    timing_phases(x, max(loops, 1))
                    for x, loops in zip(self.run_samples_ns(), self.run_loops)])
        result: Phases = self._cache["phases"]
        return result

    @property
    def run_medians_ns(self) -> NDArray[np.float64]:
        """Each run's median over its quiet-phase samples (one value for a single run)."""
        if "run_medians" not in self._cache:
            quiet = self.phases.quiet
            if not self.run_lengths:
                parts = [self.samples_ns[quiet]]
            else:
                edges = np.cumsum((0, *self.run_lengths))
                parts = [self.samples_ns[a:b][quiet[a:b]] for a, b in zip(edges[:-1], edges[1:])]
            self._cache["run_medians"] = np.array([float(np.median(p)) for p in parts])
        medians: NDArray[np.float64] = self._cache["run_medians"]
        return medians

    @property
    def quiet_runs(self) -> NDArray[np.bool_]:
        """Which runs ran undisturbed (:func:`fastbench.stats.runs.quiet_runs`): all but those
        whose median lies more than 10% above the others', slowed by the host from start to
        end. Every run below 3 runs; one value for a single run."""
        if "quiet_runs" not in self._cache:
            self._cache["quiet_runs"] = quiet_runs(self.run_medians_ns)
        mask: NDArray[np.bool_] = self._cache["quiet_runs"]
        return mask

    @property
    def quiet_run_medians_ns(self) -> NDArray[np.float64]:
        """The medians of the undisturbed runs (``quiet_runs``), in order."""
        return self.run_medians_ns[self.quiet_runs]

    @property
    def run_spread(self) -> float | None:
        """Relative standard deviation between the undisturbed runs' medians (SD of their
        logs); None for a single run."""
        return run_level(self.quiet_run_medians_ns).spread

    @property
    def quiet_samples_ns(self) -> NDArray[np.float64]:
        """The samples of quiet phases, in the order taken (all of them when none was found)."""
        if "quiet" not in self._cache:
            self._cache["quiet"] = self.samples_ns[self.phases.quiet]
        quiet: NDArray[np.float64] = self._cache["quiet"]
        return quiet

    @property
    def min_ns(self) -> float:
        return float(np.min(self.samples_ns))

    @property
    def max_ns(self) -> float:
        return float(np.max(self.samples_ns))

    @property
    def median_ns(self) -> float:
        """Median per-call time over the quiet-phase samples: the figure reports give.

        Equal to ``raw_median_ns`` when no interference phase was found. Stretches in which
        a shared machine ran every sample slower (another tenant, the hypervisor) would
        otherwise make the median report how much of the run they covered. With several
        runs: the geometric mean of the undisturbed runs' medians (``quiet_runs``), for the
        same reason one level up: the host also slows whole processes."""
        if self.run_lengths:
            return run_level(self.quiet_run_medians_ns).center
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
        """95% CI of ``median_ns``. One run: the distribution-free interval over its
        quiet-phase samples (None below 6 samples), a within-run interval, at least one
        clock step per call either side of the median (``clock_resolution_ns``). Several
        runs: the t interval of the undisturbed runs' medians, the run as a random effect."""
        if "median_ci" not in self._cache:
            if self.run_lengths:
                self._cache["median_ci"] = run_level(self.quiet_run_medians_ns).ci
            else:
                self._cache["median_ci"] = _at_least_a_step(
                    median_ci(self.quiet_samples_ns, 0.95), self.median_ns,
                    self.clock_resolution_ns / max(self.loops, 1))
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
            "run_lengths": list(self.run_lengths),
            "run_loops": list(self.run_loops),
            "run_variation": self.run_variation,
            "run_variation_df": self.run_variation_df,
            "workload": self.workload,
            "clock_resolution_ns": self.clock_resolution_ns,
            "identity": None if self.identity is None else self.identity.to_dict(),
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
        samples = check_samples(data["samples_ns"], "samples_ns")
        warmup = check_samples(data.get("warmup_samples_ns", []), "warmup_samples_ns",
                               empty=True)
        loops = _ranged_int(data["loops"], "loops", 1, MAX_LOOPS)
        floors = {k: _ranged(data.get(k, 0.0), k, 0.0, MAX_SAMPLE_NS)
                  for k in ("overhead_ns", "overhead_mad_ns", "call_floor_ns",
                            "call_floor_mad_ns", "clock_resolution_ns")}
        # An empty call's cost can exceed a near-empty call's samples by noise, never by
        # an order of magnitude: beyond that the file holds no floor of this call.
        if floors["call_floor_ns"] > 10.0 * float(samples.max()):
            raise ValueError(f"Measurement call_floor_ns ({floors['call_floor_ns']:g}) is over "
                             "ten times the longest sample: no empty call of this one")
        elapsed = _ranged(data.get("elapsed_s", 0.0), "elapsed_s", 0.0, 1e9)
        trials = _ranged_int(data.get("calibration_trials", 0), "calibration_trials", 0,
                             MAX_LOOPS)
        stop_reason = str(data.get("stop_reason", "repeat"))
        if stop_reason not in STOP_REASONS:
            raise ValueError(f"unknown stop_reason {stop_reason!r}; expected one of {STOP_REASONS}")
        target = data.get("target_rel_ci")
        run_lengths = tuple(int(k) for k in data.get("run_lengths") or ())
        run_loops = tuple(int(k) for k in data.get("run_loops") or ())
        if run_lengths and (sum(run_lengths) != samples.size or len(run_loops) != len(run_lengths)
                            or min(run_lengths) < 1 or min(run_loops) < 1):
            raise ValueError("Measurement run_lengths must be positive and add up to the "
                             "samples, with one positive run_loops entry per run")
        variation = data.get("run_variation")
        variation_df = data.get("run_variation_df")
        if target is not None and not 0.0 < _ranged(target, "target_rel_ci", 0.0, 1.0) < 1.0:
            raise ValueError(f"Measurement target_rel_ci must be in (0, 1), got {target!r}")
        return cls(
            samples_ns=samples,
            loops=loops,
            warmup_samples_ns=warmup,
            clock=str(data["clock"]),
            overhead_ns=floors["overhead_ns"],
            overhead_mad_ns=floors["overhead_mad_ns"],
            call_floor_ns=floors["call_floor_ns"],
            call_floor_mad_ns=floors["call_floor_mad_ns"],
            call_floor_kind=str(data.get("call_floor_kind", "python")),
            name=str(data.get("name", "")),
            calibration_trials=trials,
            elapsed_s=elapsed,
            target_rel_ci=None if target is None else float(target),
            stop_reason=stop_reason,
            warnings=tuple(_saved_warning(str(w)) for w in data.get("warnings", ())),
            counters=None if data.get("counters") is None else SampleCounts.from_dict(data["counters"]),
            memory=None if data.get("memory") is None else CallMemory.from_dict(data["memory"]),
            run_lengths=run_lengths,
            run_loops=run_loops,
            run_variation=None if variation is None else _ranged(
                variation, "run_variation", 0.0, MAX_RUN_VARIATION),
            run_variation_df=None if variation_df is None else _ranged_int(
                variation_df, "run_variation_df", 1, 1 << 20),
            workload=str(data.get("workload", "")),
            clock_resolution_ns=floors["clock_resolution_ns"],
            identity=None if data.get("identity") is None else Identity.from_dict(data["identity"]),
        )

    @classmethod
    def from_runs(cls, runs: Sequence[Measurement], name: str | None = None,
                  identity: Identity | None = None) -> Measurement:
        """One Measurement of several independent runs (worker processes) of the same code.

        The samples are concatenated in run order and ``run_lengths`` / ``run_loops`` say
        which run took which; ``median_ns`` and ``median_ci_ns`` are then run-level figures
        (see the class notes). The floors are the medians over the runs, the elapsed time
        and calibration trials their sums; counters and memory come from the first run;
        the stop reason is "max_time_s" if a budget ended any run; the identity is
        ``identity`` when given (the parent's, which started the workers), else the first
        run's.

        Raises
        ------
        ValueError
            No runs, a run that itself holds several, or runs of different clocks.
        """
        if not runs:
            raise ValueError("from_runs needs at least one Measurement")
        nested = [i for i, m in enumerate(runs) if m.run_lengths]
        if nested:
            raise ValueError(f"runs {nested} already hold several runs; merge single runs")
        clocks = sorted({m.clock for m in runs})
        if len(clocks) > 1:
            raise ValueError(f"runs measured with different clocks: {', '.join(clocks)}")
        first = runs[0]
        reasons = [m.stop_reason for m in runs]
        m = cls(
            samples_ns=np.concatenate([r.samples_ns for r in runs]),
            loops=first.loops,
            warmup_samples_ns=np.concatenate([r.warmup_samples_ns for r in runs]),
            clock=first.clock,
            overhead_ns=float(np.median([r.overhead_ns for r in runs])),
            overhead_mad_ns=float(np.median([r.overhead_mad_ns for r in runs])),
            call_floor_ns=float(np.median([r.call_floor_ns for r in runs])),
            call_floor_mad_ns=float(np.median([r.call_floor_mad_ns for r in runs])),
            call_floor_kind=first.call_floor_kind,
            name=first.name if name is None else name,
            calibration_trials=sum(r.calibration_trials for r in runs),
            elapsed_s=sum(r.elapsed_s for r in runs),
            target_rel_ci=first.target_rel_ci,
            stop_reason="max_time_s" if "max_time_s" in reasons else reasons[0],
            counters=first.counters,
            memory=first.memory,
            run_lengths=tuple(r.n for r in runs) if len(runs) > 1 else (),
            run_loops=tuple(r.loops for r in runs) if len(runs) > 1 else (),
            run_variation=first.run_variation,
            run_variation_df=first.run_variation_df,
            workload=first.workload,
            clock_resolution_ns=max(r.clock_resolution_ns for r in runs),
            identity=first.identity if identity is None else identity,
        )
        # A run's own statistics are summed up again; what a run found about its setting
        # (where a version's code came from) is the whole result's.
        carried = dict.fromkeys(w for r in runs for w in r.warnings
                                if getattr(w, "code", "") in _CARRIED_CODES)
        return replace(m, warnings=(*measurement_warnings(m), *carried))

    def __repr__(self) -> str:
        rel = self.rel_ci
        spread = "" if rel is None else f" ± {format_rel(rel)}"
        name = f"{self.name!r}: " if self.name else ""
        return brief_repr(self, f"{name}{format_ns(self.median_ns)}{spread}, median of "
                                f"{self.n:,} samples x {self.loops:,} loops")

    def __str__(self) -> str:
        rel = self.rel_ci
        what = "sample" if self.n == 1 else "samples"
        quiet = int(np.count_nonzero(self.phases.quiet))
        if quiet < self.n:
            what = f"quiet-phase samples of {self.n:,}"
        loops = f"{self.loops:,}"
        if self.run_loops and min(self.run_loops) != max(self.run_loops):
            loops = f"{min(self.run_loops):,}-{max(self.run_loops):,}"
        detail = f"median of {quiet:,} {what} × {loops} loops, {self.clock} clock"
        if self.run_lengths:
            spread = "± n/a" if rel is None else f"± {format_rel(rel)}"
            between = self.run_spread or 0.0
            kept = int(np.count_nonzero(self.quiet_runs))
            over = f"{self.runs}" if kept == self.runs else f"{kept} undisturbed of {self.runs}"
            return (f"{format_ns(self.median_ns)} {spread} (95% CI over {over} processes, "
                    f"which vary by {format_rel(between)}; {detail})")
        within = "± n/a within this run" if rel is None else f"± {format_rel(rel)} within this run"
        if self.run_variation is None:
            across = "run-to-run variation here not measured"
        else:
            across = f"runs here vary by about {format_rel(self.run_variation)}"
        return f"{format_ns(self.median_ns)} {within}; {across} ({detail})"


def _at_least_a_step(ci: tuple[float, float] | None, center: float,
                     step: float) -> tuple[float, float] | None:
    """``ci`` widened to reach ``step`` below and above ``center``. Samples read from a clock
    that moves in steps tie at its values; with enough ties the order statistics of the
    interval fall on one value and its width on 0, while the median itself is known only to
    about a step (each sample is off by up to one)."""
    if ci is None or step <= 0.0:
        return ci
    return min(ci[0], center - step), max(ci[1], center + step)


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


def _phase_effect(m: Measurement) -> tuple[float, float]:
    """How the disturbed phases ran and what the figure would be with them: the median of the
    disturbed samples over that of the quiet ones, and the median of every sample. With
    several runs, phases are found within each run, so both are taken run by run: each
    run's ratio, combined as a geometric mean weighted by its disturbed samples, and the
    run-level figure of the kept runs' medians over every sample. Pooled across runs, the
    levels of the processes would mix in (disturbed phases of a fast process against quiet
    ones of a slower one read "0.97x slower")."""
    if not m.run_lengths:
        return m.phases.slowdown(m.samples_ns), m.raw_median_ns
    edges = np.cumsum((0, *m.run_lengths))
    quiet = m.phases.quiet
    logs, weights, raw = [], [], []
    for a, b, quiet_median in zip(edges[:-1], edges[1:], m.run_medians_ns):
        x, q = m.samples_ns[a:b], quiet[a:b]
        raw.append(float(np.median(x)))
        disturbed = int(x.size - np.count_nonzero(q))
        if disturbed and disturbed < x.size:
            logs.append(math.log(float(np.median(x[~q])) / float(quiet_median)))
            weights.append(disturbed)
    slowdown = math.exp(float(np.average(logs, weights=weights))) if logs else 1.0
    return slowdown, run_level(np.asarray(raw)[m.quiet_runs]).center


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
    slowdown, raw = _phase_effect(m)
    moved = raw / m.median_ns - 1.0 if m.median_ns > 0 else 0.0
    if phases.disturbed_share >= INTERFERENCE_WARN_SHARE and moved >= INTERFERENCE_WARN_SHIFT:
        if m.run_lengths:
            text = (f"interference: {phases.disturbed_share:.1%} of the samples ran in phases "
                    f"{slowdown:.2f}x slower than their process's quiet ones (with them the "
                    f"figure would be {format_ns(raw)}); each process's median is over its "
                    "quiet phases, every sample is kept")
        else:
            text = (f"interference: {phases.disturbed_share:.1%} of the samples ran in phases "
                    f"{slowdown:.2f}x slower (raw median {format_ns(raw)}); the median is over "
                    "the quiet phases, every sample is kept")
        found.append(WarningRecord(text, "interference", "info"))
    if m.clock == "steady" and clock_reason.startswith("steady"):
        found.append(WarningRecord(f"clock fallback: {clock_reason}", "clock-fallback", "info"))
    rel = m.rel_ci
    if m.target_rel_ci is not None and m.stop_reason == "max_time_s":
        got = "no CI yet" if rel is None else f"{rel * 100:.3g}%"
        found.append(WarningRecord(
            f"precision target not reached: median CI ±{got} > ±{m.target_rel_ci * 100:.3g}% "
            "when the time budget ran out", "precision-target-unmet"))
    left_out = m.run_medians_ns[~m.quiet_runs]
    if left_out.size:
        everything = run_level(m.run_medians_ns).center
        found.append(WarningRecord(
            f"disturbed processes: {left_out.size} of {m.runs} ran more than "
            f"{format_rel(RUN_TOLERANCE)} slower than the others from start to end "
            f"({', '.join(format_ns(float(x)) for x in left_out)} against "
            f"{format_ns(float(np.min(m.run_medians_ns)))}-"
            f"{format_ns(float(np.max(m.quiet_run_medians_ns)))}), the host's doing: left out "
            f"of the figure and its interval, which with them would be {format_ns(everything)}",
            "disturbed-runs", "info"))
    spread = m.run_spread
    if spread is not None and spread > RUN_SPREAD_WARN:
        kept = m.quiet_run_medians_ns
        found.append(WarningRecord(
            f"runs disagree: the medians of the {kept.size} processes vary by "
            f"{format_rel(spread)} (from {format_ns(float(np.min(kept)))} to "
            f"{format_ns(float(np.max(kept)))}); the interval allows for it, but a "
            "quieter machine or more processes would narrow it", "run-spread"))
    noise = 3.0 * max(m.call_floor_mad_ns, 0.0)
    if m.call_floor_kind != "unknown" and m.net_median_ns <= noise:
        found.append(WarningRecord(
            f"the body costs no more than the call floor's noise (net {format_ns(m.net_median_ns)}, "
            f"floor {format_ns(m.call_floor_ns)}): the figure is mostly call overhead",
            "call-floor-noise"))
    return tuple(found)


def _ranged(value: Any, name: str, low: float, high: float) -> float:
    """``value`` as a float within [low, high] (ValueError naming the field otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"Measurement {name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not low <= v <= high:  # NaN fails too
        raise ValueError(f"Measurement {name} must be from {low:g} to {high:g}, got {value!r}")
    return v


def _ranged_int(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"Measurement {name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"Measurement {name} must be from {low} to {high}, got {value}")
    return int(value)


def check_samples(values: Any, name: str, *, empty: bool = False) -> NDArray[np.float64]:
    """Times per call from a file (or another tool's) as a float array, each within
    [:data:`MIN_SAMPLE_NS`, :data:`MAX_SAMPLE_NS`]; ValueError naming ``name`` otherwise."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Measurement {name} must be a list of numbers ({exc})") from None
    if arr.ndim != 1 or (arr.size == 0 and not empty):
        raise ValueError(f"Measurement {name} must be a non-empty list of numbers")
    if arr.size and not (np.all(np.isfinite(arr)) and arr.min() >= MIN_SAMPLE_NS
                         and arr.max() <= MAX_SAMPLE_NS):
        raise ValueError(f"Measurement {name} must hold times per call from "
                         f"{MIN_SAMPLE_NS:g} to {MAX_SAMPLE_NS:g} ns")
    return arr

