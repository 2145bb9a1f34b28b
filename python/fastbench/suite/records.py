"""The records of one variant in a benchmark suite: its latency (median and percentiles with
order-statistic intervals), throughput per batch size, metric with its bootstrap interval and
paired delta to the baseline, memory (the model's footprint and the increase per call),
speedup with the paired verdict, and the record holding them all (:class:`VariantRecord`),
each with its plain-data form and the ranges checked at load. The suite as a whole, its
normalized metrics and its report are :mod:`.result`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..report.lines import brief_repr
from ..stats import SampleComparison
from ..units import format_bytes, format_ns
from .energy import Energy

__all__ = ["ESTIMATED", "MEASURED", "OBJECTIVES", "PERCENTILES", "Interval", "Latency", "MemoryFigures", "MetricValue",
           "Speedup", "Throughput", "VariantRecord"]

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


def _seconds(s: float) -> str:
    return format_ns(s * 1e9)


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


