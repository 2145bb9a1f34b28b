"""A benchmark suite's result: :class:`SuiteResult` holds each variant's record (:mod:`.records`:
latency, throughput, metric, memory, energy, FLOPs, speedup with the paired verdict),
derives the normalized metrics (compression, memory reduction, energy ratio, efficiency
score), Pareto fronts and knees, prints the table and draws the figures. Nothing here
measures: :mod:`.run` does.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..report.lines import TextLines, brief_repr, printable
from ..report.table import table
from ..stats import SampleComparison
from ..units import format_bytes, format_count, format_ns
from .energy import Energy
from .pareto import dominated_by, knee, pareto_front
from .records import (ESTIMATED, MEASURED, OBJECTIVES, PERCENTILES, Interval, Latency,
                      MemoryFigures, MetricValue, Speedup, Throughput, VariantRecord, _finite,
                      _listed, _pair, _seconds)

__all__ = ["DELTA_UNITS", "OBJECTIVES", "PERCENTILES", "Latency", "MemoryFigures", "MetricValue",
           "Normalized", "SuiteResult", "Throughput", "VariantRecord", "efficiency_score",
           "score_text"]

# The latency percentiles every record carries, label -> quantile.

@dataclass(frozen=True)
class Normalized:
    """One variant against the baseline.

    Attributes
    ----------
    speedup : Speedup
    compression : float or None
        Baseline size / variant size (serialized, else parameter and buffer bytes).
    memory_reduction : float or None
        Baseline memory footprint / the variant's (:attr:`MemoryFigures.footprint_bytes`);
        ``memory_reduction_basis`` says which figures both are made of, and
        ``memory_reduction_estimated`` whether an activation figure in it is the analyzer's
        estimate rather than measured.
    accuracy_delta, accuracy_delta_ci : float, (low, high) or None
        The metric's change (paired bootstrap interval).
    energy_ratio, energy_ratio_ci : float, (low, high) or None
        Variant energy per call / baseline's; the interval from the two energies' intervals
        (Fieller-free: the ratio of the bounds, conservative). ``energy_estimated`` says
        whether either side is an estimate.
    efficiency : float or None
        The efficiency score (see :func:`efficiency_score`, or the suite's ``score``).
    """

    speedup: Speedup
    compression: float | None
    memory_reduction: float | None
    accuracy_delta: float | None
    accuracy_delta_ci: Interval | None
    energy_ratio: float | None
    energy_ratio_ci: Interval | None
    energy_estimated: bool
    efficiency: float | None
    memory_reduction_basis: str = ""
    memory_reduction_estimated: bool = False


# How the efficiency score reads the accuracy delta: as the fraction it is (the usual
# definition: -0.005 is half a point lost), or in percentage points (-0.005 read as 0.5).
DELTA_UNITS = ("fraction", "points")
# The built-in score's name before the unit was a setting (it read the delta in points).
_POINTS_SCORE_NAME = "speedup x compression / (1 + |accuracy delta in points|)"


def _delta_unit(unit: object) -> str:
    if unit not in DELTA_UNITS:
        raise ValueError(f"delta_unit must be one of {', '.join(DELTA_UNITS)}, got {unit!r}")
    return str(unit)


def score_text(delta_unit: str = "fraction") -> str:
    """The built-in score's formula in words, with the unit its accuracy delta is read in."""
    unit = ("the delta as a fraction (1 point = 0.01)" if _delta_unit(delta_unit) == "fraction"
            else "the delta in percentage points (1 point = 1)")
    return f"speedup x compression / (1 + |accuracy delta|), {unit}"


def efficiency_score(speedup: float, compression: float | None,
                     accuracy_delta: float | None, *, delta_unit: str = "fraction") -> float:
    """``speedup * compression / (1 + |accuracy_delta|)``, the normalized efficiency score.

    Parameters
    ----------
    speedup, compression : float
        Baseline time / variant time, baseline size / variant size (None counts as 1).
    accuracy_delta : float or None
        The metric's change against the baseline as a fraction (-0.005: half a point of
        accuracy lost); None counts as 0.
    delta_unit : {"fraction", "points"}
        "fraction" (the default, the usual definition) uses the delta as given:
        ``efficiency_score(1.25, 4, -0.005)`` is 5 / 1.005 = 4.975. "points" reads it in
        percentage points (times 100), so that losing one point halves the score:
        5 / 1.5 = 3.333.

    Raises
    ------
    ValueError
        An unknown ``delta_unit``.
    """
    scale = 1.0 if _delta_unit(delta_unit) == "fraction" else 100.0
    delta = 0.0 if accuracy_delta is None else scale * abs(accuracy_delta)
    return speedup * (1.0 if compression is None else compression) / (1.0 + delta)


Score = Callable[[VariantRecord, VariantRecord, "Normalized"], float]


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0 or a < 0:
        return None
    return a / b


def _reduction_basis(base: MemoryFigures, rec: MemoryFigures) -> tuple[str, bool]:
    """What a memory reduction is made of ("" without footprints on both sides), and
    whether an activation figure in it is estimated."""
    b, r = base.footprint_basis, rec.footprint_basis
    if not b or not r:
        return "", False
    text = f"footprints: {b}" if b == r else f"footprints: baseline {b}, variant {r}"
    estimated = any(m.activations is not None and m.activations[1] == ESTIMATED
                    for m in (base, rec))
    return text, estimated


def _ci_text(value: float, ci: Interval | None, fmt: Callable[[float], str]) -> str:
    if ci is None:
        return fmt(value)
    half = max(abs(ci[1] - value), abs(value - ci[0]))
    rel = half / abs(value) if value else math.inf
    return f"{fmt(value)} ± {100 * rel:.1f}%" if rel < 10 else f"{fmt(value)} [{fmt(ci[0])}, {fmt(ci[1])}]"


# How far the time per call in the energy blocks may stray from the latency median before the
# report says so: their energy is per call as those blocks ran them.
ENERGY_TIME_TOLERANCE = 0.10


@dataclass(frozen=True, eq=False)
class SuiteResult(TextLines):
    """A benchmark suite's records, one per variant, and the settings they were taken under.

    ``result[name]`` is a :class:`VariantRecord`; ``result.normalized(name)`` its figures
    against the baseline; ``result.pareto(("latency", "accuracy"))`` the names on the front.
    """

    variants: dict[str, VariantRecord]
    baseline: str
    batch_sizes: tuple[int, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    allowed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    score_name: str = score_text("fraction")
    score: Score | None = None
    delta_unit: str = "fraction"

    def __post_init__(self) -> None:
        unit = _delta_unit(self.delta_unit)
        # The built-in score's name follows the unit it reads the delta in.
        if self.score is None and self.score_name in (*map(score_text, DELTA_UNITS),
                                                      _POINTS_SCORE_NAME):
            object.__setattr__(self, "score_name", score_text(unit))

    # -- access ------------------------------------------------------------------------
    def __getitem__(self, name: str) -> VariantRecord:
        try:
            return self.variants[name]
        except KeyError:
            raise KeyError(f"no variant {name!r} in this suite ({', '.join(self.variants)})") from None

    def __iter__(self) -> Any:
        return iter(self.variants)

    def __len__(self) -> int:
        return len(self.variants)

    @property
    def names(self) -> list[str]:
        return list(self.variants)

    # -- normalized figures ---------------------------------------------------------------
    def normalized(self, name: str) -> Normalized:
        """The figures of ``name`` against the baseline."""
        rec, base = self[name], self[self.baseline]
        compression = _ratio(base.memory.size_bytes, rec.memory.size_bytes)
        reduction = _ratio(base.memory.footprint_bytes, rec.memory.footprint_bytes)
        basis, basis_estimated = _reduction_basis(base.memory, rec.memory)
        delta = None if rec.metric is None else (0.0 if name == self.baseline else rec.metric.delta)
        delta_ci = None if rec.metric is None else rec.metric.delta_ci
        e_ratio = e_ci = None
        estimated = False
        if rec.energy is not None and base.energy is not None:
            estimated = rec.energy.estimated or base.energy.estimated
            e_ratio = _ratio(rec.energy.joules_per_call, base.energy.joules_per_call)
            if rec.energy.ci is not None and base.energy.ci is not None and base.energy.ci[0] > 0:
                e_ci = (max(rec.energy.ci[0], 0.0) / base.energy.ci[1],
                        rec.energy.ci[1] / base.energy.ci[0])
        n = Normalized(rec.speedup, compression, reduction, delta, delta_ci, e_ratio, e_ci,
                       estimated, None, basis if reduction is not None else "",
                       basis_estimated and reduction is not None)
        value = (self.score(rec, base, n) if self.score is not None
                 else efficiency_score(rec.speedup.value, compression, delta,
                                       delta_unit=self.delta_unit))
        return replace(n, efficiency=float(value))

    # -- Pareto ----------------------------------------------------------------------------
    def objective(self, name: str, objective: str) -> float | None:
        """One variant's value of an objective of :data:`OBJECTIVES`."""
        rec = self[name]
        if objective == "latency":
            return rec.latency.median_s
        if objective == "p99":
            return rec.latency.percentile("p99")
        if objective == "throughput":
            return rec.throughput[max(rec.throughput)].samples_per_s
        if objective in ("accuracy", "metric"):
            return None if rec.metric is None else rec.metric.value
        if objective == "memory":
            footprint = rec.memory.footprint_bytes
            return None if footprint is None else float(footprint)
        if objective == "memory_increase":
            return rec.memory.peak_increase_bytes
        if objective == "size":
            size = rec.memory.size_bytes
            return None if size is None else float(size)
        if objective == "energy":
            return None if rec.energy is None else rec.energy.joules_per_call
        if objective == "flops":
            return None if rec.flops is None else float(rec.flops)
        if objective == "params":
            return None if rec.params is None else float(rec.params)
        if objective == "speedup":
            return rec.speedup.value
        raise ValueError(f"unknown objective {objective!r}; choose from {', '.join(OBJECTIVES)}")

    def _points(self, objectives: Sequence[str]) -> tuple[dict[str, list[float]], list[str]]:
        if isinstance(objectives, str) or len(objectives) < 2:
            raise ValueError(f"a Pareto front needs two or more objectives, got {objectives!r}")
        senses = []
        for o in objectives:
            if o not in OBJECTIVES:
                raise ValueError(f"unknown objective {o!r}; choose from {', '.join(OBJECTIVES)}")
            senses.append(OBJECTIVES[o][0])
        points: dict[str, list[float]] = {}
        for name in self.variants:
            values = [self.objective(name, o) for o in objectives]
            if any(v is None for v in values):
                missing = [o for o, v in zip(objectives, values) if v is None]
                raise ValueError(f"variant {name!r} has no {', '.join(missing)}: the front cannot "
                                 "include it (measure it, or choose other objectives)")
            points[name] = [float(v) for v in values if v is not None]
        return points, senses

    def pareto(self, objectives: Sequence[str] = ("latency", "accuracy")) -> list[str]:
        """Names on the Pareto front of ``objectives`` (each minimized or maximized as
        :data:`OBJECTIVES` says), in the suite's order."""
        points, senses = self._points(objectives)
        return pareto_front(points, senses)

    def dominated(self, objectives: Sequence[str] = ("latency", "accuracy")) -> dict[str, list[str]]:
        """Each dominated variant -> the variants that dominate it."""
        points, senses = self._points(objectives)
        return dominated_by(points, senses)

    def knee(self, objectives: Sequence[str] = ("latency", "accuracy")) -> str | None:
        """The knee of the front (see :func:`fastbench.suite.pareto.knee`), or None."""
        points, senses = self._points(objectives)
        return knee(points, senses)

    # -- text --------------------------------------------------------------------------------
    def _blocks_text(self) -> str:
        """How the rounds were blocked, as the header says it ("" for one block)."""
        blocks = self.settings.get("blocks")
        if not isinstance(blocks, int) or isinstance(blocks, bool) or blocks < 2:
            return ""
        fresh = self.settings.get("fresh_copies")
        return (f" in {blocks} blocks"
                + (", each on fresh copies of the modules" if fresh else "")
                + ", judged over the blocks")

    def __repr__(self) -> str:
        batches = ", ".join(map(str, self.batch_sizes))
        return brief_repr(self, f"{len(self.variants)} variants, baseline {self.baseline!r}, "
                                f"batch {batches}")

    def lines(self) -> list[str]:
        first = self.batch_sizes[0]
        out = [f"suite: {len(self.variants)} variants, baseline {self.baseline!r}, batch "
               f"{', '.join(map(str, self.batch_sizes))}"
               + (f", {self.settings['threads']} threads" if self.settings.get("threads") else "")
               + (f", {self.settings.get('rounds')} interleaved rounds" if "rounds" in self.settings else "")
               + (f" ({self.settings['order']})" if self.settings.get("order") else "")
               + self._blocks_text()]
        kept = self.settings.get("kept")
        if isinstance(kept, Mapping):
            shown = {n: why for n, why in kept.items() if why != "not a module"}
            if shown:
                out.append("  timed as given in every block: " + "; ".join(
                    f"{printable(str(n))} ({printable(str(why))})" for n, why in shown.items()))
        metric_name = next((r.metric.name for r in self.variants.values() if r.metric), "metric")
        head = ["Model", f"Time (batch {first})", "p99", "Memory", "Per-call increase",
                metric_name.capitalize(), "Energy", "Speedup"]
        rows = []
        for name, rec in self.variants.items():
            lat = rec.latency
            p99, p99_ci = lat.percentiles["p99"]
            increase = ("-" if rec.memory.peak_increase_bytes is None
                        else format_bytes(rec.memory.peak_increase_bytes))
            metric = "-" if rec.metric is None else _metric_text(rec.metric)
            energy = "-" if rec.energy is None else rec.energy.text(reason=False)
            if name == self.baseline:
                speed = "baseline"
            else:
                s = rec.speedup
                speed = (f"{s.value:.3f}x" + (f" [{s.ci[0]:.3f}, {s.ci[1]:.3f}]" if s.ci else "")
                         + f" {s.verdict}")
            rows.append([name, _ci_text(lat.median_s, lat.median_ci, _seconds),
                         _seconds(p99) + ("" if p99_ci else " (too few for an interval)"),
                         _footprint_text(rec.memory), increase, metric, energy, speed])
        out += table(head, rows)
        out.append("  Memory: the model's footprint, its weights as stored + the peak activation "
                   "memory of a call (measured; \"est.\" where the analyzer's estimate stands "
                   "in). Per-call increase: peak RSS a call adds over the memory before it. "
                   "Time: median of single calls, 95% interval (order statistics).")
        out += self._memory_lines()
        if len(self.batch_sizes) > 1 or first != 1:
            out.append("  throughput (samples/s, 95% interval):")
            for name, rec in self.variants.items():
                out.append(f"    {name}: " + ", ".join(
                    f"batch {b} {_ci_text(t.samples_per_s, t.ci, lambda v: format_count(v))}"
                    for b, t in sorted(rec.throughput.items())))
        out += self._normalized_lines()
        for name, kinds in self.allowed.items():
            if kinds:
                out.append(f"  note: {name} differs from the baseline in {', '.join(kinds)} "
                           "(allowed)")
        estimates = {(r.energy.reason, r.energy.watts_per_core) for r in self.variants.values()
                     if r.energy is not None and r.energy.estimated}
        for why, watts in sorted(estimates, key=str):
            out.append(f"  note: energy estimated as {watts:g} W per busy core x the process's "
                       f"CPU time (dynamic power only; the interval leaves out the model's "
                       f"error), because {why}")
        out += self._energy_time_notes()
        for name, rec in self.variants.items():
            out += [f"  note: {name}: {n}" for n in rec.notes]
        out += [f"  warning: {w}" for w in self.warnings]
        return out

    def _memory_lines(self) -> list[str]:
        """What each footprint is made of, the measured activation peak beside the
        analyzer's estimate, and the serialized size."""
        shown = {n: r.memory for n, r in self.variants.items()
                 if r.memory.footprint_bytes is not None}
        if not shown:
            return []
        out = [f"  memory footprint (activation peak of a call at batch {self.batch_sizes[0]}):"]
        for name, m in shown.items():
            weights = m.weights_bytes or 0
            text = (f"    {name}: {format_bytes(m.footprint_bytes or 0)} = weights "
                    f"{format_bytes(weights)}")
            if m.packed_bytes:
                text += f" (packed {format_bytes(m.packed_bytes)})"
            parts = []
            if m.activation_peak_bytes is not None:
                parts.append(f"measured {format_bytes(m.activation_peak_bytes)}")
            if m.activation_estimate_bytes is not None:
                parts.append(("analyzer's estimate " if parts else "estimated ")
                             + format_bytes(m.activation_estimate_bytes)
                             + ("" if parts else " (not measured)"))
            text += " + activations " + (", ".join(parts) if parts else "unknown")
            if m.serialized_bytes is not None:
                text += f"; serialized {format_bytes(m.serialized_bytes)}"
            out.append(text)
        return out

    def _energy_time_notes(self) -> list[str]:
        """A note for each variant whose energy blocks ran its calls more than
        ENERGY_TIME_TOLERANCE away from its latency median (first batch size): the energy is
        per call as those back-to-back blocks ran them (their power beside it)."""
        out = []
        for name, rec in self.variants.items():
            energy, median_s = rec.energy, rec.latency.median_s
            if energy is None or energy.seconds_per_call is None or median_s <= 0:
                continue
            if abs(energy.seconds_per_call / median_s - 1.0) <= ENERGY_TIME_TOLERANCE:
                continue
            watts = energy.watts
            power = "" if watts is None else f", {watts:.3g} W"
            out.append(f"  note: {name}: the energy blocks ran its calls back to back at "
                       f"{_seconds(energy.seconds_per_call)} a call{power}, against a latency "
                       f"median of {_seconds(median_s)} one call at a time; its energy per "
                       "call is theirs")
        return out

    def _normalized_lines(self) -> list[str]:
        if len(self.variants) < 2:
            return []
        head = ["vs baseline", "Speedup", "Compression", "Memory", "Accuracy delta",
                "Energy ratio", "Score"]
        rows = []
        bases: dict[str, list[str]] = {}
        for name in self.variants:
            if name == self.baseline:
                continue
            n = self.normalized(name)
            delta = "-" if n.accuracy_delta is None else (
                f"{100 * n.accuracy_delta:+.2f} pt" + (
                    f" [{100 * n.accuracy_delta_ci[0]:+.2f}, {100 * n.accuracy_delta_ci[1]:+.2f}]"
                    if n.accuracy_delta_ci else ""))
            energy = "-" if n.energy_ratio is None else (
                f"{n.energy_ratio:.3f}" + (f" [{n.energy_ratio_ci[0]:.2f}, {n.energy_ratio_ci[1]:.2f}]"
                                           if n.energy_ratio_ci else "")
                + (" (estimated)" if n.energy_estimated else ""))
            memory = "-" if n.memory_reduction is None else (
                f"{n.memory_reduction:.2f}x" + (" (est.)" if n.memory_reduction_estimated else ""))
            if n.memory_reduction_basis:
                bases.setdefault(n.memory_reduction_basis, []).append(name)
            rows.append([name, f"{n.speedup.value:.3f}x",
                         "-" if n.compression is None else f"{n.compression:.2f}x", memory,
                         delta, energy, "-" if n.efficiency is None else f"{n.efficiency:.3f}"])
        out = ["", *table(head, rows)]
        if len(bases) == 1:
            out.append(f"  Memory: baseline footprint / the variant's ({next(iter(bases))}).")
        else:
            out += [f"  Memory of {', '.join(names)}: baseline footprint / the variant's "
                    f"({basis})." for basis, names in bases.items()]
        return [*out, f"  Score: {self.score_name}."]

    # -- figures ---------------------------------------------------------------------------
    def plot_comparison(self, path: str | os.PathLike[str], *, figure: str = "latency") -> Path:
        """Bars with error bars of one figure per variant ("latency", "throughput",
        "accuracy", "energy", "memory": the footprint, or "memory_increase": the peak increase
        per call); the baseline's bar is marked."""
        from .plot import plot_bars

        names = self.names
        values: list[float] = []
        cis: list[Interval | None] = []
        for name in names:
            rec = self[name]
            if figure == "latency":
                values.append(rec.latency.median_s * 1e3)
                ci = rec.latency.median_ci
                cis.append(None if ci is None else (ci[0] * 1e3, ci[1] * 1e3))
            elif figure == "throughput":
                t = rec.throughput[max(rec.throughput)]
                values.append(t.samples_per_s)
                cis.append(t.ci)
            elif figure in ("accuracy", "metric"):
                values.append(np.nan if rec.metric is None else rec.metric.value)
                cis.append(None if rec.metric is None else rec.metric.ci)
            elif figure == "energy":
                values.append(np.nan if rec.energy is None else rec.energy.joules_per_call * 1e3)
                cis.append(None if rec.energy is None or rec.energy.ci is None
                           else (rec.energy.ci[0] * 1e3, rec.energy.ci[1] * 1e3))
            elif figure == "memory":
                footprint = rec.memory.footprint_bytes
                values.append(np.nan if footprint is None else footprint / 2**20)
                cis.append(None)
            elif figure == "memory_increase":
                peak = rec.memory.peak_increase_bytes
                values.append(np.nan if peak is None else peak / 2**20)
                cis.append(None)
            else:
                raise ValueError(f"figure must be latency, throughput, accuracy, energy, "
                                 f"memory or memory_increase; got {figure!r}")
        label = {"latency": "median latency (ms)", "throughput": "samples/s",
                 "accuracy": "metric", "metric": "metric", "energy": "energy per call (mJ)",
                 "memory": "memory footprint (MiB)",
                 "memory_increase": "peak increase per call (MiB)"}[figure]
        return plot_bars(names, values, cis, path, ylabel=label, baseline=self.baseline,
                         title=f"{label} per variant")

    def plot_pareto(self, path: str | os.PathLike[str],
                    objectives: tuple[str, str] = ("latency", "accuracy")) -> Path:
        """The two objectives' scatter with the front drawn, dominated variants greyed and the
        knee marked."""
        from .plot import plot_pareto

        points, _ = self._points(objectives)
        front = self.pareto(objectives)
        return plot_pareto({n: (p[0], p[1]) for n, p in points.items()}, None, front, path,
                           xlabel=f"{objectives[0]} ({OBJECTIVES[objectives[0]][1]})",
                           ylabel=f"{objectives[1]} ({OBJECTIVES[objectives[1]][1]})",
                           knee=self.knee(objectives))

    def plot_latency_throughput(self, path: str | os.PathLike[str]) -> Path:
        """Per variant, median latency against throughput over the batch sizes."""
        from .plot import plot_curves

        curves = {name: [(rec.throughput[b].samples_per_s, rec.latency_by_batch[b].median_s * 1e3)
                         for b in sorted(rec.throughput)]
                  for name, rec in self.variants.items()}
        return plot_curves(curves, path, xlabel="throughput (samples/s)",
                           ylabel="median latency (ms)", logx=True, logy=True)

    # -- files -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; :meth:`from_dict` restores it (a custom ``score``
        callable is not saved: its values are, under ``efficiency``)."""
        return {
            "version": 1,
            "baseline": self.baseline,
            "batch_sizes": list(self.batch_sizes),
            "variants": [r.to_dict() for r in self.variants.values()],
            "efficiency": {n: self.normalized(n).efficiency for n in self.variants},
            "settings": dict(self.settings),
            "allowed": {k: list(v) for k, v in self.allowed.items()},
            "warnings": list(self.warnings),
            "score_name": self.score_name,
            "delta_unit": self.delta_unit,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SuiteResult:
        """Rebuild from :meth:`to_dict` output. A file without ``delta_unit`` was written
        when the built-in score read the accuracy delta in points, and keeps that reading.

        Raises
        ------
        ValueError
            A key is missing, an unknown ``delta_unit``, or the baseline is not among the
            variants.
        """
        try:
            variants = [VariantRecord.from_dict(v) for v in data["variants"]]
            saved = {str(k): v for k, v in (data.get("efficiency") or {}).items()}
            unit = _delta_unit(data.get("delta_unit", "points"))
            name = str(data.get("score_name", score_text(unit)))
            result = cls(
                variants={v.name: v for v in variants},
                baseline=str(data["baseline"]),
                batch_sizes=tuple(int(b) for b in data["batch_sizes"]),
                settings=dict(data.get("settings") or {}),
                allowed={str(k): tuple(v) for k, v in (data.get("allowed") or {}).items()},
                warnings=tuple(str(w) for w in data.get("warnings", ())),
                score_name=name, delta_unit=unit,
            )
        except KeyError as exc:
            raise ValueError(f"suite data lacks {exc}") from None
        if result.baseline not in result.variants:
            raise ValueError(f"suite data: baseline {result.baseline!r} is not among the variants")
        if saved and name not in (*map(score_text, DELTA_UNITS), _POINTS_SCORE_NAME):
            # A custom score's values were saved; keep them as the score.
            return SuiteResult(**{**result.__dict__,
                                  "score": lambda rec, base, n: float(saved.get(rec.name) or 0.0)})
        return result


def _footprint_text(m: MemoryFigures) -> str:
    """The footprint for the table: "-" without one, "est." where the activation peak is the
    analyzer's estimate, "weights only" where no activation figure is known."""
    footprint = m.footprint_bytes
    if footprint is None:
        return "-"
    act = m.activations
    return format_bytes(footprint) + ("" if act is not None and act[1] == MEASURED
                                      else " (est.)" if act is not None else " (weights only)")


def _metric_text(m: MetricValue) -> str:
    fraction = 0.0 <= m.value <= 1.0 and m.name == "accuracy"
    def fmt(v: float) -> str:
        return f"{100 * v:.2f}%" if fraction else f"{v:.4g}"
    if m.ci is None:
        return fmt(m.value)
    return f"{fmt(m.value)} [{fmt(m.ci[0])}, {fmt(m.ci[1])}]"
