"""The records of a benchmark suite: per variant its latency (median and percentiles with
order-statistic intervals), throughput per batch size, metric with its bootstrap interval and
paired delta to the baseline, memory (the model's footprint and the increase per call),
energy, FLOPs, and speedup with the paired verdict; :class:`SuiteResult` holds them all,
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

__all__ = ["DELTA_UNITS", "OBJECTIVES", "PERCENTILES", "Latency", "MemoryFigures", "MetricValue",
           "Normalized", "SuiteResult", "Throughput", "VariantRecord", "efficiency_score",
           "score_text"]

# The latency percentiles every record carries, label -> quantile.
PERCENTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}
# What a Pareto front can be drawn over: objective -> (sense, what it reads).
OBJECTIVES = {
    "latency": ("min", "median latency of a call at the first batch size (s)"),
    "p99": ("min", "99th-percentile latency (s)"),
    "throughput": ("max", "samples/s at the largest batch size"),
    "accuracy": ("max", "the metric (accuracy by default)"),
    "metric": ("max", "the metric (accuracy by default)"),
    "memory": ("min", "memory footprint: weights + peak activations of a call (bytes)"),
    "memory_increase": ("min", "peak memory increase per call (bytes)"),
    "size": ("min", "serialized size, else parameter and buffer bytes"),
    "energy": ("min", "energy per call (J)"),
    "flops": ("min", "FLOPs per call"),
    "params": ("min", "parameters"),
    "speedup": ("max", "speedup over the baseline"),
}
Interval = tuple[float, float]


def _pair(v: Any) -> Interval | None:
    """An interval from a file: None, or [low, high] of finite numbers with low <= high."""
    if v is None:
        return None
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise ValueError(f"an interval must be [low, high], got {v!r}")
    low, high = (_finite(x, "an interval's end") for x in v)
    if low > high:
        raise ValueError(f"an interval must have low <= high, got [{low!r}, {high!r}]")
    return low, high


# No figure of a suite (seconds, joules, FLOPs, parameters, ratios) comes near this; a file
# that holds one holds no result, and converting it (seconds to ns) would overflow.
_MAX_NUMBER = 1e30


def _finite(v: Any, what: str, minimum: float | None = None, *, above: bool = False) -> float:
    """A number from a file: finite, at most 1e30 in size, and at least (or above)
    ``minimum`` when given."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or abs(v) > _MAX_NUMBER:
        raise ValueError(f"{what} must be a finite number within ±{_MAX_NUMBER:g}, "
                         f"got {v!r:.40}")
    if minimum is not None and (v <= minimum if above else v < minimum):
        raise ValueError(f"{what} must be {'>' if above else '>='} {minimum:g}, got {v!r}")
    return float(v)


def _batch(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"a batch size must be an int >= 1, got {v!r}")
    return v


def _listed(v: Interval | None) -> list[float] | None:
    """An interval as JSON writes it."""
    return None if v is None else [float(v[0]), float(v[1])]


@dataclass(frozen=True)
class Latency:
    """Per-call latency of one variant at one batch size.

    Attributes
    ----------
    batch : int
    samples_s : tuple of float
        Every timed call (one per sample unless calls were batched), in seconds, in the
        order taken.
    median_s : float
    median_ci : (low, high) or None
        95% interval of the median (order statistics).
    percentiles : dict
        "p50", "p90", "p95", "p99" -> (value, 95% interval or None when the samples are
        too few for one: p95 needs 72, p99 368).
    """

    batch: int
    samples_s: tuple[float, ...]
    median_s: float
    median_ci: Interval | None
    percentiles: dict[str, tuple[float, Interval | None]]

    def percentile(self, label: str) -> float:
        """The value of "p50", "p90", "p95" or "p99"."""
        return self.percentiles[label][0]

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "samples_s": list(self.samples_s),
                "median_s": self.median_s, "median_ci": _listed(self.median_ci),
                "percentiles": {k: [v, _listed(ci)] for k, (v, ci) in self.percentiles.items()}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Latency:
        samples = tuple(_finite(x, "a latency sample", 0.0, above=True) for x in d["samples_s"])
        if not samples:
            raise ValueError("a latency holds no samples")
        percentiles = {str(k): (_finite(v[0], f"latency {k}", 0.0, above=True), _pair(v[1]))
                       for k, v in d["percentiles"].items()}
        missing = [k for k in PERCENTILES if k not in percentiles]
        if missing:
            raise ValueError(f"a latency lacks the percentiles {', '.join(missing)}")
        return cls(_batch(d["batch"]), samples,
                   _finite(d["median_s"], "a latency median", 0.0, above=True),
                   _pair(d["median_ci"]), percentiles)


@dataclass(frozen=True)
class Throughput:
    """Samples per second at one batch size: ``batch`` over the mean latency of a call (the
    rate of calls back to back), with the interval the Student interval of the mean gives."""

    batch: int
    samples_per_s: float
    ci: Interval | None

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "samples_per_s": self.samples_per_s, "ci": _listed(self.ci)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Throughput:
        return cls(_batch(d["batch"]),
                   _finite(d["samples_per_s"], "a throughput", 0.0, above=True), _pair(d["ci"]))


@dataclass(frozen=True)
class MetricValue:
    """The quality metric of one variant.

    Attributes
    ----------
    name : str
        "accuracy" for the default, else the metric callable's name.
    value : float
        The metric, or the mean of its per-example scores.
    ci : (low, high) or None
        BCa bootstrap interval over examples (None for a metric returning one float).
    examples : int or None
        Examples scored (None for a single float).
    delta, delta_ci : float, (low, high) or None
        Against the baseline: ``value - baseline value``, and its paired bootstrap interval
        (examples resampled jointly) when both gave per-example scores on the same examples.
    non_finite : int
        Examples whose output held NaN or infinity (default accuracy only; counted wrong).
    """

    name: str
    value: float
    ci: Interval | None = None
    examples: int | None = None
    delta: float | None = None
    delta_ci: Interval | None = None
    non_finite: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "ci": _listed(self.ci),
                "examples": self.examples, "delta": self.delta,
                "delta_ci": _listed(self.delta_ci), "non_finite": self.non_finite}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MetricValue:
        non_finite = int(d.get("non_finite", 0))
        if non_finite < 0:
            raise ValueError(f"metric.non_finite must be a count >= 0, got {non_finite}")
        return cls(str(d["name"]), float(d["value"]), _pair(d.get("ci")),
                   None if d.get("examples") is None else int(d["examples"]),
                   None if d.get("delta") is None else float(d["delta"]), _pair(d.get("delta_ci")),
                   non_finite)


# Where a footprint's activation figure comes from.
MEASURED, ESTIMATED = "measured", "estimated"


@dataclass(frozen=True)
class MemoryFigures:
    """Memory of one variant (None where not known).

    The model's **footprint** is its weights as stored (parameters, buffers and weights packed
    outside them) plus the peak activation memory of one call: what the model needs in
    memory to run, the figure the suite's Memory column, ``memory_reduction``, the memory
    plot and the "memory" objective use. The peak increase per call is another figure: the
    RSS a call adds over the memory before it, 0 for a model in steady state (its
    activations reuse memory the allocator kept).

    Attributes
    ----------
    peak_increase_bytes : float or None
        Median peak increase of one call over the memory before it
        (:func:`fastbench.memory.call_memory`, its ``method``).
    param_bytes, buffer_bytes : int or None
        A module's parameters and buffers (tied weights once).
    serialized_bytes : int or None
        ``torch.save(module.state_dict())``: what a deployment ships, packed quantized
        weights included.
    method : str
        How the peak increase was read ("" when not measured).
    packed_bytes : int or None
        Weights a module keeps outside its parameters and buffers, as stored (a dynamically
        quantized layer's packed int8 weights and bias, with their scales).
    activation_peak_bytes : int or None
        The most memory one call held at once beyond what was allocated before it
        (intermediates, workspaces, output), measured (``activation_method``).
    activation_method : str
        How the activation peak was measured ("" when not measured).
    activation_estimate_bytes : int or None
        The analyzer's estimate of the same peak (each intermediate freed after its last use).
    """

    peak_increase_bytes: float | None = None
    param_bytes: int | None = None
    buffer_bytes: int | None = None
    serialized_bytes: int | None = None
    method: str = ""
    packed_bytes: int | None = None
    activation_peak_bytes: int | None = None
    activation_method: str = ""
    activation_estimate_bytes: int | None = None

    @property
    def size_bytes(self) -> int | None:
        """The serialized size, else parameter plus buffer bytes, else None."""
        if self.serialized_bytes is not None:
            return self.serialized_bytes
        if self.param_bytes is None:
            return None
        return self.param_bytes + (self.buffer_bytes or 0)

    @property
    def weights_bytes(self) -> int | None:
        """Parameters, buffers and packed weights as stored, or None without parameters."""
        if self.param_bytes is None:
            return None
        return self.param_bytes + (self.buffer_bytes or 0) + (self.packed_bytes or 0)

    @property
    def activations(self) -> tuple[int, str] | None:
        """The activation peak of a call and where it comes from: the measured one
        (``"measured"``), else the analyzer's estimate (``"estimated"``), else None."""
        if self.activation_peak_bytes is not None:
            return self.activation_peak_bytes, MEASURED
        if self.activation_estimate_bytes is not None:
            return self.activation_estimate_bytes, ESTIMATED
        return None

    @property
    def footprint_bytes(self) -> int | None:
        """The weights plus the activation peak (:attr:`activations`); the weights alone
        when no activation figure is known; None without weights (a callable)."""
        weights = self.weights_bytes
        if weights is None:
            return None
        act = self.activations
        return weights + (0 if act is None else act[0])

    @property
    def footprint_basis(self) -> str:
        """What :attr:`footprint_bytes` is made of: "weights + measured activation peak",
        "weights + estimated activation peak", "weights only (no activation figure)", or ""
        without a footprint."""
        if self.weights_bytes is None:
            return ""
        act = self.activations
        if act is None:
            return "weights only (no activation figure)"
        return f"weights + {act[1]} activation peak"

    def to_dict(self) -> dict[str, Any]:
        return {"peak_increase_bytes": self.peak_increase_bytes, "param_bytes": self.param_bytes,
                "buffer_bytes": self.buffer_bytes, "serialized_bytes": self.serialized_bytes,
                "method": self.method, "packed_bytes": self.packed_bytes,
                "activation_peak_bytes": self.activation_peak_bytes,
                "activation_method": self.activation_method,
                "activation_estimate_bytes": self.activation_estimate_bytes}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryFigures:
        """Rebuild from :meth:`to_dict` output; a file written before the footprint's
        figures (packed weights, activation peaks) loads with them None."""
        def count(k: str) -> int | None:
            v = d.get(k)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not math.isfinite(v) or not 0 <= v <= _MAX_NUMBER or v != int(v):
                raise ValueError(f"memory.{k} must be a whole number of bytes in [0, "
                                 f"{_MAX_NUMBER:g}], got {v!r:.40}")
            return int(v)
        peak = d.get("peak_increase_bytes")
        return cls(None if peak is None else _finite(peak, "memory.peak_increase_bytes"),
                   count("param_bytes"), count("buffer_bytes"), count("serialized_bytes"),
                   str(d.get("method", "")), count("packed_bytes"),
                   count("activation_peak_bytes"), str(d.get("activation_method", "")),
                   count("activation_estimate_bytes"))


@dataclass(frozen=True)
class Speedup:
    """A variant's speedup over the baseline (baseline time / variant time; > 1 is faster),
    from the paired rounds: over blocks (``settings["blocks"]`` > 1), the mean of the blocks'
    estimates with the t interval over them; in one block, the Hodges-Lehmann estimate of the
    per-round log-ratios with its signed-rank interval (or the median with its sign-test
    interval, as chosen by ``suite.run(estimator=)``, which also picks each block's
    estimate); the Holm-corrected p-value and the verdict. The baseline's own is 1 with
    verdict "baseline"."""

    value: float
    ci: Interval | None
    verdict: str
    p_value: float | None = None

    @classmethod
    def of(cls, c: SampleComparison) -> Speedup:
        return cls(float(c.speedup), _pair(c.speedup_ci), c.verdict, float(c.p_value))

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci": _listed(self.ci), "verdict": self.verdict,
                "p_value": self.p_value}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Speedup:
        p = d.get("p_value")
        return cls(float(d["value"]), _pair(d.get("ci")), str(d["verdict"]),
                   None if p is None else float(p))


@dataclass(frozen=True)
class VariantRecord:
    """Everything the suite measured of one variant.

    ``latency`` and ``speedup`` are at the first batch size; ``latency_by_batch``,
    ``throughput`` and ``speedup_by_batch`` hold every batch size.
    """

    name: str
    kind: str                                   # "module" or "callable"
    latency: Latency
    latency_by_batch: dict[int, Latency]
    throughput: dict[int, Throughput]
    speedup: Speedup
    speedup_by_batch: dict[int, Speedup]
    metric: MetricValue | None = None
    memory: MemoryFigures = field(default_factory=MemoryFigures)
    energy: Energy | None = None
    flops: int | None = None
    macs: int | None = None
    params: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def accuracy(self) -> MetricValue | None:
        """The metric (accuracy by default)."""
        return self.metric

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.name!r} ({self.kind}): median "
                                f"{_seconds(self.latency.median_s)} at batch {self.latency.batch}, "
                                f"speedup {self.speedup.value:.3g}x ({self.speedup.verdict})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "latency": self.latency.to_dict(),
            "latency_by_batch": {str(b): v.to_dict() for b, v in self.latency_by_batch.items()},
            "throughput": {str(b): v.to_dict() for b, v in self.throughput.items()},
            "speedup": self.speedup.to_dict(),
            "speedup_by_batch": {str(b): v.to_dict() for b, v in self.speedup_by_batch.items()},
            "metric": None if self.metric is None else self.metric.to_dict(),
            "memory": self.memory.to_dict(),
            "energy": None if self.energy is None else self.energy.to_dict(),
            "flops": self.flops, "macs": self.macs, "params": self.params,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VariantRecord:
        def opt(k: str) -> int | None:
            return None if d.get(k) is None else int(d[k])
        return cls(
            name=str(d["name"]), kind=str(d["kind"]), latency=Latency.from_dict(d["latency"]),
            latency_by_batch={int(b): Latency.from_dict(v)
                              for b, v in d["latency_by_batch"].items()},
            throughput={int(b): Throughput.from_dict(v) for b, v in d["throughput"].items()},
            speedup=Speedup.from_dict(d["speedup"]),
            speedup_by_batch={int(b): Speedup.from_dict(v)
                              for b, v in d["speedup_by_batch"].items()},
            metric=None if d.get("metric") is None else MetricValue.from_dict(d["metric"]),
            memory=MemoryFigures.from_dict(d.get("memory") or {}),
            energy=None if d.get("energy") is None else Energy.from_dict(d["energy"]),
            flops=opt("flops"), macs=opt("macs"), params=opt("params"),
            notes=tuple(str(n) for n in d.get("notes", ())),
        )


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


def _seconds(s: float) -> str:
    return format_ns(s * 1e9)


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
