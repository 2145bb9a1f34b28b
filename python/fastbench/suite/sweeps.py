"""Sweeps: one callable measured across a parameter, as a curve with intervals. Batch size
(latency, a latency percentile, throughput, the throughput knee, the largest batch inside a
latency budget), thread count (speedup and strong-scaling efficiency) and any size with a
power-law fit of time against it. Each point is one :func:`fastbench.measure` run of single
calls; the points run in a shuffled order. Results are records with text lines; nothing prints.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._checks import check_choice, check_fraction, check_int, check_seconds
from ..measurement import Measurement
from ..report.lines import TextLines, brief_repr
from ..report.table import table
from ..report.warnings import WarningRecord
from ..stats import median_ratio_ci, quantile_ci, quantile_ci_min_samples
from ..timing.callables import measure
from ..units import format_ns
from .fit import PowerLawFit, Prediction, power_law_fit

__all__ = [
    "KNEE_TOLERANCE",
    "ORDERS",
    "BatchPoint",
    "BatchSweep",
    "ParameterPoint",
    "ParameterSweep",
    "ThreadPoint",
    "ThreadSweep",
    "batch_sweep",
    "largest_within_budget",
    "parameter_sweep",
    "thread_sweep",
    "throughput_knee",
]

# The throughput knee is the smallest batch whose throughput is within this fraction of the
# largest throughput measured (see throughput_knee).
KNEE_TOLERANCE = 0.10

# The order the points are measured in: a seeded shuffle (the default), or as given.
ORDERS = ("shuffled", "given")

Pair = tuple[float, float]


def _pair(v: Any) -> Pair | None:
    return None if v is None else (float(v[0]), float(v[1]))


def _list(v: Pair | None) -> list[float] | None:
    return None if v is None else [v[0], v[1]]


def _ci_text(ci: Pair | None, fmt: Callable[[float], str]) -> str:
    return "-" if ci is None else f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def _s(seconds: float) -> str:
    return format_ns(seconds * 1e9, 4)


def throughput_knee(batches: Sequence[int], throughputs: Sequence[float],
                    tolerance: float = KNEE_TOLERANCE) -> int:
    """The smallest batch whose throughput is at least ``(1 - tolerance)`` times the largest.

    Why this definition and not a Kneedle point: the question a batch size answers is "how
    small a batch gets nearly all the throughput", and since latency grows with the batch,
    the smallest such batch costs the least latency. The rule reads in the units of the
    question, does not depend on how the batch grid is spaced or scaled (Kneedle normalises
    both axes to the range measured and finds a "knee" even on a straight line), and gives
    the same answer for exact and measured curves whenever no throughput lies near the
    threshold.

    Parameters
    ----------
    batches : sequence of int
        Batch sizes, in any order.
    throughputs : sequence of float
        Samples per second at each batch.
    tolerance : float
        In (0, 1): 0.1 for "within 10% of the best".

    Returns
    -------
    int
        The knee batch.

    Raises
    ------
    ValueError
        Empty or unequal inputs, or a tolerance outside (0, 1).
    """
    tol = check_fraction("tolerance", tolerance, example="0.1 for within 10%")
    if not batches or len(batches) != len(throughputs):
        raise ValueError(f"batches and throughputs must be non-empty and of equal length, "
                         f"got {len(batches)} and {len(throughputs)}")
    best = max(throughputs)
    return min(b for b, t in zip(batches, throughputs) if t >= (1.0 - tol) * best)


def largest_within_budget(batches: Sequence[int], latencies_s: Sequence[float],
                          budget_s: float) -> int | None:
    """The largest batch whose latency is at most ``budget_s``; None when none is."""
    inside = [b for b, lat in zip(batches, latencies_s) if lat <= budget_s]
    return max(inside) if inside else None


@dataclass(frozen=True)
class _Settings:
    """The measure() settings of every point of a sweep."""

    repeat: int
    warmup: int
    duration_s: float | None
    max_time_s: float | None


def _options(repeat: Any, warmup: Any, duration_s: Any, max_time_s: Any, order: Any,
             seed: Any) -> _Settings:
    """The settings of every point, checked before any point runs."""
    check_choice("order", order, ORDERS)
    check_int("seed", seed, 0)
    return _Settings(check_int("repeat", repeat, 1), check_int("warmup", warmup, 0),
                     None if duration_s is None else check_seconds("duration_s", duration_s),
                     None if max_time_s is None else check_seconds("max_time_s", max_time_s))


def _order(count: int, order: str, seed: int) -> list[int]:
    """Indices of the points in the order they are measured."""
    idx = list(range(count))
    if order == "shuffled":
        # A slow drift of the machine's speed (heat, a neighbour) would otherwise bend a
        # curve measured from left to right in one direction.
        random.Random(seed).shuffle(idx)
    return idx


def _measure(call: Callable[[], Any], options: _Settings, name: str) -> Measurement:
    if not callable(call):
        raise TypeError(f"the call for {name} must be callable, got {type(call).__name__}")
    # One call per sample: latency and its percentiles are per call, not averages of loops.
    return measure(call, loops=1, name=name, repeat=options.repeat, warmup=options.warmup,
                   duration_s=options.duration_s, max_time_s=options.max_time_s)


def _point_warnings(label: str, m: Measurement) -> list[str]:
    out: list[str] = []
    for w in m.warnings:
        if isinstance(w, WarningRecord):
            out.append(WarningRecord(f"{label}: {w.message}", w.code, w.severity))
        else:
            out.append(f"{label}: {w}")
    return out


def _distinct_positive_ints(name: str, values: Sequence[Any], minimum: int) -> list[int]:
    out = [check_int(name, v, 1) for v in values]
    if len(out) < minimum:
        raise ValueError(f"{name} must hold at least {minimum} value(s), got {len(out)}")
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must not repeat a value, got {out}")
    return out


def _ci_s(m: Measurement) -> Pair | None:
    ci = m.median_ci_ns
    return None if ci is None else (ci[0] * 1e-9, ci[1] * 1e-9)


# -- batch size -------------------------------------------------------------------------------

@dataclass(frozen=True)
class BatchPoint:
    """One batch size measured.

    Attributes
    ----------
    batch : int
        Samples per call.
    latency_median_s : float
        Median seconds per call (over the quiet-phase samples, ``Measurement.median_ns``).
    latency_median_ci_s : (float, float) or None
        Its 95% interval.
    latency_percentile_s : float
        The sweep's percentile of the seconds per call, over every sample (interference
        included: a tail is what it describes).
    latency_percentile_ci_s : (float, float) or None
        Its distribution-free 95% interval (:func:`fastbench.stats.quantile_ci`); None with
        too few samples.
    throughput_per_s : float
        ``batch / latency_median_s``: samples per second.
    throughput_ci_per_s : (float, float) or None
        ``batch`` over the median's interval, reversed.
    samples_s : tuple of float
        Seconds per call of every counted sample, in the order taken.
    """

    batch: int
    latency_median_s: float
    latency_median_ci_s: Pair | None
    latency_percentile_s: float
    latency_percentile_ci_s: Pair | None
    throughput_per_s: float
    throughput_ci_per_s: Pair | None
    samples_s: tuple[float, ...] = ()

    @property
    def n_samples(self) -> int:
        return len(self.samples_s)

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "latency_median_s": self.latency_median_s,
                "latency_median_ci_s": _list(self.latency_median_ci_s),
                "latency_percentile_s": self.latency_percentile_s,
                "latency_percentile_ci_s": _list(self.latency_percentile_ci_s),
                "throughput_per_s": self.throughput_per_s,
                "throughput_ci_per_s": _list(self.throughput_ci_per_s),
                "samples_s": list(self.samples_s)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BatchPoint:
        return cls(int(d["batch"]), float(d["latency_median_s"]),
                   _pair(d.get("latency_median_ci_s")), float(d["latency_percentile_s"]),
                   _pair(d.get("latency_percentile_ci_s")), float(d["throughput_per_s"]),
                   _pair(d.get("throughput_ci_per_s")),
                   tuple(float(s) for s in d.get("samples_s", ())))


@dataclass(frozen=True)
class BatchSweep(TextLines):
    """Latency and throughput against batch size (:func:`batch_sweep`).

    Attributes
    ----------
    points : tuple of BatchPoint
        By increasing batch.
    percentile : float
        The latency percentile reported, in (0, 1) (0.9 for p90).
    latency_budget_s : float or None
        The budget the percentile is held to.
    knee_batch : int
        The smallest batch within ``knee_tolerance`` of the best throughput
        (:func:`throughput_knee`), on the medians.
    knee_tolerance : float
    budget_batch : int or None
        The largest batch whose latency percentile (point estimate) is within the budget;
        None without a budget or when no batch is.
    order : tuple of int
        The batches in the order they were measured.
    warnings : tuple of str
        Each point's measurement warnings (prefixed with its batch), and the sweep's own:
        a percentile without an interval, a percentile interval that straddles the budget,
        a knee at the largest batch (the throughput may still be rising).
    """

    points: tuple[BatchPoint, ...]
    percentile: float
    latency_budget_s: float | None
    knee_batch: int
    knee_tolerance: float
    budget_batch: int | None
    order: tuple[int, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def batches(self) -> tuple[int, ...]:
        return tuple(p.batch for p in self.points)

    @property
    def percentile_name(self) -> str:
        return f"p{100 * self.percentile:g}"

    def __repr__(self) -> str:
        return brief_repr(self, f"{len(self.points)} batch sizes, knee at batch "
                                f"{self.knee_batch}, {self.percentile_name}")

    def lines(self) -> list[str]:
        pct = self.percentile_name
        rows = [(str(p.batch), _s(p.latency_median_s), _ci_text(p.latency_median_ci_s, _s),
                 _s(p.latency_percentile_s), _ci_text(p.latency_percentile_ci_s, _s),
                 f"{p.throughput_per_s:,.4g}",
                 _ci_text(p.throughput_ci_per_s, lambda v: f"{v:,.4g}"))
                for p in self.points]
        out = ["batch sweep (latency per call, throughput in samples/s, 95% CIs):"]
        out.extend(table(("batch", "median", "CI", pct, f"{pct} CI", "throughput", "CI"),
                         rows, align="rrrrrrr"))
        out.append(f"  throughput knee: batch {self.knee_batch} (the smallest within "
                   f"{self.knee_tolerance:.0%} of the best throughput)")
        if self.latency_budget_s is not None:
            found = ("none" if self.budget_batch is None else f"batch {self.budget_batch}")
            out.append(f"  largest batch with {pct} <= {_s(self.latency_budget_s)}: {found}")
        out.extend(f"  warning: {w}" for w in self.warnings)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"points": [p.to_dict() for p in self.points], "percentile": self.percentile,
                "latency_budget_s": self.latency_budget_s, "knee_batch": self.knee_batch,
                "knee_tolerance": self.knee_tolerance, "budget_batch": self.budget_batch,
                "order": list(self.order), "warnings": [str(w) for w in self.warnings]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BatchSweep:
        budget = d.get("latency_budget_s")
        chosen = d.get("budget_batch")
        return cls(tuple(BatchPoint.from_dict(p) for p in d["points"]), float(d["percentile"]),
                   None if budget is None else float(budget), int(d["knee_batch"]),
                   float(d.get("knee_tolerance", KNEE_TOLERANCE)),
                   None if chosen is None else int(chosen),
                   tuple(int(b) for b in d.get("order", ())),
                   tuple(str(w) for w in d.get("warnings", ())))


def batch_sweep(make_call: Callable[[int], Callable[[], Any]], batch_sizes: Sequence[int], *,
                latency_budget_s: float | None = None, percentile: float = 0.9,
                knee_tolerance: float = KNEE_TOLERANCE, repeat: int = 100, warmup: int = 1,
                duration_s: float | None = 0.2, max_time_s: float | None = None,
                order: str = "shuffled", seed: int = 0) -> BatchSweep:
    """Measure a call at each batch size: latency, a latency percentile, throughput.

    Parameters
    ----------
    make_call : callable
        ``make_call(batch)`` returns a zero-argument callable that processes ``batch``
        samples per call. It is called just before its batch is measured, so only one
        batch's inputs need to be alive at a time.
    batch_sizes : sequence of int
        Distinct positive batch sizes (at least one).
    latency_budget_s : float, optional
        Seconds per call the percentile must stay within; gives ``budget_batch``.
    percentile : float
        The latency quantile, in (0, 1): 0.9 for p90. Its interval needs
        ``quantile_ci_min_samples(percentile)`` samples (35 for p90, 72 for p95).
    knee_tolerance : float
        In (0, 1); see :func:`throughput_knee`.
    repeat : int
        Minimum samples (one call each) per batch.
    warmup : int
        Warmup samples per batch, kept apart.
    duration_s : float or None
        Minimum seconds of counted samples per batch (``fastbench.measure``'s); None stops
        at ``repeat``.
    max_time_s : float, optional
        Time budget per batch, in seconds.
    order : {"shuffled", "given"}
        Measure the batches in a seeded random order (default), so a slow drift of the
        machine's speed does not bend the curve one way, or in the order given.
    seed : int
        The shuffle's seed (>= 0).

    Returns
    -------
    BatchSweep

    Raises
    ------
    TypeError, ValueError
        A setting of the wrong type or out of range, a batch size that is not a positive
        int, repeated batch sizes, or a ``make_call`` result that is not callable.
    Exception
        Whatever the calls raise propagates.
    """
    batches = _distinct_positive_ints("batch_sizes", batch_sizes, 1)
    q = check_fraction("percentile", percentile, example="0.9 for p90")
    tol = check_fraction("knee_tolerance", knee_tolerance, example="0.1 for within 10%")
    budget = (None if latency_budget_s is None
              else check_seconds("latency_budget_s", latency_budget_s))
    options = _options(repeat, warmup, duration_s, max_time_s, order, seed)
    sequence = _order(len(batches), order, seed)
    measured: dict[int, Measurement] = {}
    warnings: list[str] = []
    for i in sequence:
        b = batches[i]
        measured[b] = _measure(make_call(b), options, f"batch={b}")
    points = []
    pct = f"p{100 * q:g}"
    for b in sorted(batches):
        m = measured[b]
        warnings.extend(_point_warnings(f"batch {b}", m))
        med_s = m.median_ns * 1e-9
        med_ci = _ci_s(m)
        qci = quantile_ci(m.samples_ns, q)
        if qci is None:
            warnings.append(WarningRecord(
                f"batch {b}: {pct} has no interval: {m.n} samples, "
                f"{quantile_ci_min_samples(q)} needed", "few-samples"))
        points.append(BatchPoint(
            batch=b, latency_median_s=med_s, latency_median_ci_s=med_ci,
            latency_percentile_s=m.percentile_ns(100.0 * q) * 1e-9,
            latency_percentile_ci_s=None if qci is None else (qci[0] * 1e-9, qci[1] * 1e-9),
            throughput_per_s=b / med_s,
            throughput_ci_per_s=None if med_ci is None else (b / med_ci[1], b / med_ci[0]),
            samples_s=tuple(float(s) * 1e-9 for s in m.samples_ns)))
    knee = throughput_knee([p.batch for p in points], [p.throughput_per_s for p in points], tol)
    if knee == points[-1].batch and len(points) > 1:
        warnings.append(WarningRecord(
            f"the throughput knee is the largest batch measured ({knee}): throughput may "
            "still be rising; measure larger batches", "knee-at-edge"))
    chosen = None
    if budget is not None:
        chosen = largest_within_budget([p.batch for p in points],
                                       [p.latency_percentile_s for p in points], budget)
        for p in points:
            ci = p.latency_percentile_ci_s
            if ci is not None and ci[0] <= budget < ci[1]:
                warnings.append(WarningRecord(
                    f"batch {p.batch}: the {pct} interval [{_s(ci[0])}, {_s(ci[1])}] "
                    f"straddles the budget {_s(budget)}: whether it fits is not settled",
                    "budget-undecided"))
    return BatchSweep(tuple(points), q, budget, knee, tol, chosen,
                      tuple(batches[i] for i in sequence), tuple(warnings))


# -- thread count -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ThreadPoint:
    """One thread count measured.

    Attributes
    ----------
    threads : int
    median_s : float
        Median seconds per call (quiet-phase samples).
    median_ci_s : (float, float) or None
        Its 95% interval.
    speedup : float
        Median time at the smallest count over the median time here.
    speedup_ci : (float, float) or None
        95% interval of that ratio of medians (:func:`fastbench.stats.median_ratio_ci`);
        None at the smallest count itself or with fewer than 6 samples.
    efficiency : float
        Strong-scaling efficiency: ``speedup / (threads / smallest count)``; 1 is perfect.
    efficiency_ci : (float, float) or None
        The speedup's interval scaled the same way.
    samples_s : tuple of float
        Seconds per call of every counted sample.
    """

    threads: int
    median_s: float
    median_ci_s: Pair | None
    speedup: float
    speedup_ci: Pair | None
    efficiency: float
    efficiency_ci: Pair | None
    samples_s: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"threads": self.threads, "median_s": self.median_s,
                "median_ci_s": _list(self.median_ci_s), "speedup": self.speedup,
                "speedup_ci": _list(self.speedup_ci), "efficiency": self.efficiency,
                "efficiency_ci": _list(self.efficiency_ci), "samples_s": list(self.samples_s)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ThreadPoint:
        return cls(int(d["threads"]), float(d["median_s"]), _pair(d.get("median_ci_s")),
                   float(d["speedup"]), _pair(d.get("speedup_ci")), float(d["efficiency"]),
                   _pair(d.get("efficiency_ci")),
                   tuple(float(s) for s in d.get("samples_s", ())))


@dataclass(frozen=True)
class ThreadSweep(TextLines):
    """Time, speedup and efficiency against thread count (:func:`thread_sweep`).

    Attributes
    ----------
    points : tuple of ThreadPoint
        By increasing thread count; the first is the reference.
    order : tuple of int
        The counts in the order measured.
    restored_threads : int or None
        The count set back at the end (from ``get_threads``), or None.
    warnings : tuple of str
    """

    points: tuple[ThreadPoint, ...]
    order: tuple[int, ...] = ()
    restored_threads: int | None = None
    warnings: tuple[str, ...] = ()

    def __repr__(self) -> str:
        threads = ", ".join(str(p.threads) for p in self.points)
        return brief_repr(self, f"{len(self.points)} thread counts ({threads})")

    def lines(self) -> list[str]:
        base = self.points[0].threads
        rows = [(str(p.threads), _s(p.median_s), _ci_text(p.median_ci_s, _s),
                 f"{p.speedup:.3f}x", _ci_text(p.speedup_ci, lambda v: f"{v:.3f}"),
                 f"{p.efficiency:.1%}", _ci_text(p.efficiency_ci, lambda v: f"{v:.1%}"))
                for p in self.points]
        out = [f"thread sweep (speedup over {base} thread(s), efficiency = speedup / "
               f"(threads / {base}), 95% CIs):"]
        out.extend(table(("threads", "median", "CI", "speedup", "CI", "efficiency", "CI"),
                         rows, align="rrrrrrr"))
        out.extend(f"  warning: {w}" for w in self.warnings)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"points": [p.to_dict() for p in self.points], "order": list(self.order),
                "restored_threads": self.restored_threads,
                "warnings": [str(w) for w in self.warnings]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ThreadSweep:
        restored = d.get("restored_threads")
        return cls(tuple(ThreadPoint.from_dict(p) for p in d["points"]),
                   tuple(int(n) for n in d.get("order", ())),
                   None if restored is None else int(restored),
                   tuple(str(w) for w in d.get("warnings", ())))


def thread_sweep(fn: Callable[[], Any], threads: Sequence[int], *,
                 set_threads: Callable[[int], Any],
                 get_threads: Callable[[], int] | None = None, repeat: int = 100,
                 warmup: int = 1, duration_s: float | None = 0.2,
                 max_time_s: float | None = None, order: str = "shuffled",
                 seed: int = 0) -> ThreadSweep:
    """Measure ``fn()`` at each thread count: time, speedup and strong-scaling efficiency.

    Parameters
    ----------
    fn : callable
        Zero-argument work of a fixed size (strong scaling).
    threads : sequence of int
        Distinct positive counts; the smallest is the reference of the speedup.
    set_threads : callable
        ``set_threads(n)`` is called before measuring at ``n`` threads
        (``torch.set_num_threads`` for PyTorch's intra-op pool).
    get_threads : callable, optional
        Returns the count in force; read before the first point and set back with
        ``set_threads`` at the end, also when a measurement raises.
    repeat, warmup, duration_s, max_time_s, order, seed
        As :func:`batch_sweep`, per thread count.

    Returns
    -------
    ThreadSweep

    Raises
    ------
    TypeError, ValueError
        A setting of the wrong type or out of range, a count that is not a positive int,
        repeated counts, or ``fn`` / ``set_threads`` not callable.
    Exception
        Whatever ``fn`` or ``set_threads`` raises propagates (after the restore).

    Notes
    -----
    The speedup's interval is that of a ratio of two independent medians (Bonett & Price
    2002, through :func:`fastbench.stats.median_ratio_ci`), on the quiet-phase samples the
    medians are taken over. Samples at different counts are independent runs of the same
    work, which is what it assumes.
    """
    counts = _distinct_positive_ints("threads", threads, 1)
    for name, f in (("fn", fn), ("set_threads", set_threads)):
        if not callable(f):
            raise TypeError(f"{name} must be callable, got {type(f).__name__}")
    if get_threads is not None and not callable(get_threads):
        raise TypeError(f"get_threads must be callable or None, got {type(get_threads).__name__}")
    options = _options(repeat, warmup, duration_s, max_time_s, order, seed)
    sequence = _order(len(counts), order, seed)
    original = None if get_threads is None else check_int("get_threads()", get_threads(), 1)
    measured: dict[int, Measurement] = {}
    try:
        for i in sequence:
            n = counts[i]
            set_threads(n)
            measured[n] = _measure(fn, options, f"threads={n}")
    finally:
        if original is not None:
            set_threads(original)
    ordered = sorted(counts)
    base_n = ordered[0]
    base = measured[base_n]
    points: list[ThreadPoint] = []
    warnings: list[str] = []
    for n in ordered:
        m = measured[n]
        warnings.extend(_point_warnings(f"{n} thread(s)", m))
        speedup = base.median_ns / m.median_ns
        ideal = n / base_n
        ci = (None if n == base_n
              else median_ratio_ci(base.quiet_samples_ns, m.quiet_samples_ns))
        points.append(ThreadPoint(
            threads=n, median_s=m.median_ns * 1e-9, median_ci_s=_ci_s(m), speedup=speedup,
            speedup_ci=ci, efficiency=speedup / ideal,
            efficiency_ci=None if ci is None else (ci[0] / ideal, ci[1] / ideal),
            samples_s=tuple(float(s) * 1e-9 for s in m.samples_ns)))
    return ThreadSweep(tuple(points), tuple(counts[i] for i in sequence), original,
                       tuple(warnings))


# -- any parameter ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParameterPoint:
    """One parameter value measured.

    Attributes
    ----------
    value : int, float or str
        The value given to ``make_call`` (as ``str`` when it is not a number or a str).
    x : float
        The size it stands for in the fit (the value itself, or the caller's ``x``).
    median_s : float
        Median seconds per call (quiet-phase samples).
    median_ci_s : (float, float) or None
        Its 95% interval.
    samples_s : tuple of float
    """

    value: int | float | str
    x: float
    median_s: float
    median_ci_s: Pair | None
    samples_s: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "x": self.x, "median_s": self.median_s,
                "median_ci_s": _list(self.median_ci_s), "samples_s": list(self.samples_s)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ParameterPoint:
        return cls(_plain_value(d["value"]), float(d["x"]), float(d["median_s"]),
                   _pair(d.get("median_ci_s")),
                   tuple(float(s) for s in d.get("samples_s", ())))


def _plain_value(v: Any) -> int | float | str:
    if isinstance(v, (bool, np.bool_)):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    return v if isinstance(v, str) else str(v)


@dataclass(frozen=True)
class ParameterSweep(TextLines):
    """Time against a parameter, with a power-law fit (:func:`parameter_sweep`).

    Attributes
    ----------
    points : tuple of ParameterPoint
        In the order the values were given.
    x_label : str
    fit : PowerLawFit
        Median seconds per call against ``x``.
    order : tuple of int
        Indices of the values in the order measured.
    warnings : tuple of str
    """

    points: tuple[ParameterPoint, ...]
    x_label: str
    fit: PowerLawFit
    order: tuple[int, ...] = ()
    warnings: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return brief_repr(self, f"{len(self.points)} values of {self.x_label}, time ∝ "
                                f"{self.x_label}^{self.fit.exponent:.3f}")

    def lines(self) -> list[str]:
        rows = [(str(p.value), f"{p.x:.4g}", _s(p.median_s), _ci_text(p.median_ci_s, _s),
                 _s(self.fit.predict(p.x))) for p in self.points]
        out = [f"parameter sweep (time per call against {self.x_label}, 95% CIs):"]
        out.extend(table(("value", self.x_label, "median", "CI", "fit"), rows,
                         align="rrrrr"))
        out.extend("  " + line for line in self.fit.lines())
        out.extend(f"  warning: {w}" for w in self.warnings)
        return out

    def prediction(self, x: float, confidence: float | None = None) -> Prediction:
        """The fit's time per call at size ``x`` (seconds) with the prediction interval of
        a new measurement there, marked as an extrapolation beyond the measured sizes
        (:meth:`PowerLawFit.prediction`)."""
        return self.fit.prediction(x, confidence, unit="s")

    def to_dict(self) -> dict[str, Any]:
        return {"points": [p.to_dict() for p in self.points], "x_label": self.x_label,
                "fit": self.fit.to_dict(), "order": list(self.order),
                "warnings": [str(w) for w in self.warnings]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ParameterSweep:
        return cls(tuple(ParameterPoint.from_dict(p) for p in d["points"]),
                   str(d.get("x_label", "n")), PowerLawFit.from_dict(d["fit"]),
                   tuple(int(i) for i in d.get("order", ())),
                   tuple(str(w) for w in d.get("warnings", ())))


def parameter_sweep(make_call: Callable[[Any], Callable[[], Any]], values: Sequence[Any], *,
                    x: Sequence[float] | None = None, x_label: str = "n", repeat: int = 100,
                    warmup: int = 1, duration_s: float | None = 0.2,
                    max_time_s: float | None = None, order: str = "shuffled",
                    seed: int = 0) -> ParameterSweep:
    """Measure a call at each parameter value and fit a power law of time against size.

    Parameters
    ----------
    make_call : callable
        ``make_call(value)`` returns the zero-argument callable to time at ``value``; it is
        called just before that value is measured.
    values : sequence
        At least 3 values.
    x : sequence of float, optional
        The size of each value for the fit (FLOPs, bytes), positive and finite; by default
        the values themselves, which must then be positive numbers.
    x_label : str
        What x is, for the text ("n", "FLOPs").
    repeat, warmup, duration_s, max_time_s, order, seed
        As :func:`batch_sweep`, per value.

    Returns
    -------
    ParameterSweep
        With ``fit``: :func:`~fastbench.suite.fit.power_law_fit` of the median seconds per
        call against x (its 95% exponent interval and :meth:`PowerLawFit.big_o`).

    Raises
    ------
    TypeError, ValueError
        Fewer than 3 values, an ``x`` of another length, an x that is not a positive finite
        number, a setting of the wrong type or out of range.
    Exception
        Whatever the calls raise propagates.
    """
    vals = list(values)
    if len(vals) < 3:
        raise ValueError(f"parameter_sweep needs at least 3 values for a fit, got {len(vals)}")
    sizes = vals if x is None else list(x)
    if len(sizes) != len(vals):
        raise ValueError(f"x must give one size per value: {len(vals)} values, {len(sizes)} x")
    xs: list[float] = []
    for i, s in enumerate(sizes):
        if isinstance(s, bool) or not isinstance(s, (int, float, np.integer, np.floating)):
            what = "values (used as x)" if x is None else "x"
            raise TypeError(f"{what} must be numbers, got {type(s).__name__} {s!r} at {i}; "
                            "pass x= with the size of each value")
        if not (math.isfinite(float(s)) and float(s) > 0.0):
            raise ValueError(f"x must be positive and finite, got {s!r} at {i}")
        xs.append(float(s))
    options = _options(repeat, warmup, duration_s, max_time_s, order, seed)
    sequence = _order(len(vals), order, seed)
    measured: dict[int, Measurement] = {}
    for i in sequence:
        measured[i] = _measure(make_call(vals[i]), options, f"{x_label}={vals[i]}")
    points = []
    warnings: list[str] = []
    for i, v in enumerate(vals):
        m = measured[i]
        warnings.extend(_point_warnings(f"{x_label}={v}", m))
        points.append(ParameterPoint(_plain_value(v), xs[i], m.median_ns * 1e-9, _ci_s(m),
                                     tuple(float(s) * 1e-9 for s in m.samples_ns)))
    fit = power_law_fit(xs, [p.median_s for p in points], x_label=x_label)
    return ParameterSweep(tuple(points), str(x_label), fit, tuple(sequence), tuple(warnings))
