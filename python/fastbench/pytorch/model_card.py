"""The model card of a PyTorch model in one call (:func:`profile_model`): parameters, FLOPs
and MACs, latency per call (median, p95, p99, each with its interval), throughput, the
measured peak memory of a call, training memory by component, achieved GFLOP/s and the
roofline verdict of the whole call.

Assembles what fastbench already has and re-implements none of it: counts and memory
estimates are the analyzer's (:mod:`.analyzer`), time and memory per call ``measure``'s,
quantile intervals :mod:`fastbench.stats.quantiles`', the verdict the roofline's
(``calibrate`` and ``Roofline.place``). Optimizer state is the one figure worked out here,
from the optimizer's own settings. Imports torch.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, Sequence

import torch

from .._checks import check_bool, check_int
from ..analysis.model_analysis import MemoryEstimate, ModelAnalysis
from ..measurement import Measurement
from ..report.lines import TextLines, brief_repr, note_lines
from ..report.table import table
from ..report.warnings import WarningRecord
from ..roofline import Placement, Roofline, calibrate
from ..stats.quantiles import quantile_ci, quantile_ci_min_samples
from ..timing import DEFAULT_DURATION_S, measure, run_config
from ..units import format_bytes, format_count, format_ns, format_rel
from .analyzer import analyze
from .dispatch import tensors
from .suite_support import intra_op_threads

__all__ = ["OPTIMIZERS", "LatencyFigure", "ModelCard", "TrainingMemory", "profile_model"]

# Optimizers named by a string, and the parameter-sized state each keeps per trainable
# element: plain SGD nothing, SGD with momentum its momentum buffer, Adam and AdamW the
# first and second moments (torch.optim's exp_avg and exp_avg_sq).
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}
_NAMES = {"sgd": "SGD without momentum", "momentum": "SGD with momentum", "adam": "Adam",
          "adamw": "AdamW"}
# The interval of every latency figure; the median's is Measurement.median_ci_ns, at 95%.
CONFIDENCE = 0.95
# Tail quantiles the card reports beside the median.
_TAILS = (("p95", 0.95), ("p99", 0.99))
# The card's version in to_dict; bump with a comment when its fields change.
# 1: first layout.
CARD_VERSION = 1


# -- the record -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LatencyFigure:
    """One latency figure per call: its label ("median", "p95", "p99"), its value and its
    95% interval in seconds (None when the samples are too few for one)."""

    label: str
    seconds: float
    ci_s: tuple[float, float] | None
    min_samples: int          # the fewest samples that give the interval

    def text(self) -> str:
        ci = ("n/a (needs {:,} samples)".format(self.min_samples) if self.ci_s is None
              else f"[{format_ns(self.ci_s[0] * 1e9)}, {format_ns(self.ci_s[1] * 1e9)}]")
        return f"{self.label} {format_ns(self.seconds * 1e9)} {ci}"


@dataclass(frozen=True)
class TrainingMemory:
    """Memory of one training step by component, in bytes (the analyzer's estimate, with
    the optimizer's state worked out from the optimizer).

    ``peak_activations_bytes`` is the analyzer's ``training_peak_bytes``: the most
    activation storage alive at once over the step (tensors saved for backward, the
    transient intermediates and the activations' gradients); ``saved_activations_bytes``
    the part autograd saved for backward. ``optimizer_bytes`` is None when no optimizer was
    given, or its kind is not one whose state fastbench knows (``optimizer`` then names it).
    """

    optimizer: str | None            # a description: "Adam", "SGD (momentum 0.9)", ...
    optimizer_slots: int | None      # parameter-sized copies the state holds; None: unknown
    params_bytes: int
    buffers_bytes: int
    gradients_bytes: int
    optimizer_bytes: int | None
    saved_activations_bytes: int
    peak_activations_bytes: int
    inputs_bytes: int

    @property
    def total_bytes(self) -> int | None:
        """Every component summed; None when the optimizer's state is unknown."""
        if self.optimizer_bytes is None:
            return None
        return (self.params_bytes + self.buffers_bytes + self.gradients_bytes
                + self.optimizer_bytes + self.peak_activations_bytes + self.inputs_bytes)

    def components(self) -> dict[str, int | None]:
        """Component name -> bytes, in the card's order."""
        return {"parameters": self.params_bytes, "gradients": self.gradients_bytes,
                "optimizer state": self.optimizer_bytes,
                "activations (peak)": self.peak_activations_bytes,
                "buffers": self.buffers_bytes, "inputs": self.inputs_bytes}

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        d["total_bytes"] = self.total_bytes
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrainingMemory:
        opt_bytes, slots, name = d["optimizer_bytes"], d["optimizer_slots"], d["optimizer"]
        return cls(None if name is None else str(name), None if slots is None else int(slots),
                   int(d["params_bytes"]), int(d["buffers_bytes"]), int(d["gradients_bytes"]),
                   None if opt_bytes is None else int(opt_bytes),
                   int(d["saved_activations_bytes"]), int(d["peak_activations_bytes"]),
                   int(d["inputs_bytes"]))


def _placement_to_dict(p: Placement) -> dict[str, Any]:
    d: dict[str, Any] = {f.name: getattr(p, f.name) for f in fields(p)}
    d["warnings"] = [w.to_dict() if isinstance(w, WarningRecord)
                     else {"message": str(w), "code": "roofline", "severity": "warning"}
                     for w in p.warnings]
    d["above_roof_causes"] = list(p.above_roof_causes)
    return d


def _placement_from_dict(d: Mapping[str, Any]) -> Placement:
    def opt_int(v: Any) -> int | None:
        return None if v is None else int(v)

    return Placement(
        float(d["flops"]), float(d["bytes"]), float(d["seconds"]), float(d["intensity"]),
        float(d["achieved_gflops"]), float(d["attainable_gflops"]), float(d["fraction"]),
        str(d["bound"]), str(d["compute_ceiling"]), str(d["memory_ceiling"]),
        float(d["ridge_point"]), opt_int(d.get("threads")), opt_int(d.get("roofline_threads")),
        tuple(WarningRecord(str(w["message"]), str(w["code"]), str(w["severity"]))
              for w in d.get("warnings", ())),
        opt_int(d.get("working_set_bytes")),
        tuple(str(c) for c in d.get("above_roof_causes", ())))


@dataclass(frozen=True)
class ModelCard(TextLines):
    """A model's card: what it holds, what one call computes, how long it takes and what
    it costs in memory, and where it sits on the machine's roofline.

    ``print(card)`` gives the card; ``to_dict``/``from_dict`` its plain-data form. The
    figures are properties over the records kept: ``analysis`` (the analyzer's counts and
    memory estimate, forward, and backward when ``backward``), ``measurement`` (the timed
    calls, one call per sample unless ``min_time_s`` was given, with the measured memory of
    a call in ``measurement.memory``), ``training`` (memory by component) and ``placement``
    (the roofline verdict of the whole call, None where not placed: ``notes`` say why).

    Latency: the median is the measurement's (over its quiet-phase samples, with the
    distribution-free interval of :func:`fastbench.stats.median_ci`); p95 and p99 are over
    every sample, interference included (a tail is what callers meet), each with the
    order-statistic interval of :func:`fastbench.stats.quantiles.quantile_ci`. Throughput is
    ``batch_size`` over the median latency, its interval the median's, inverted.
    """

    model: str
    device: str
    batch_size: int
    backward: bool
    call: str                        # what one timed call ran, e.g. "forward (no_grad)"
    optimizer: str | None            # as described in ``training``; None when not given
    training_mode: bool              # the model's .training when profiled
    threads: int                     # torch's intra-op threads during the timing
    analysis: ModelAnalysis
    measurement: Measurement
    training: TrainingMemory | None  # None: no output carries a gradient
    placement: Placement | None
    notes: tuple[str, ...] = ()

    # -- counts -------------------------------------------------------------------------
    @property
    def params(self) -> int:
        """Unique parameter elements (tied weights once), as ``sum(p.numel())`` counts
        the untied ones."""
        return self.analysis.parameters.total

    @property
    def param_bytes(self) -> int:
        return self.analysis.parameters.bytes

    @property
    def flops(self) -> int:
        """FLOPs per timed call: the forward, plus the backward when ``backward`` (the
        optimizer step is not counted)."""
        return self.analysis.flops

    @property
    def macs(self) -> int:
        return self.analysis.macs

    @property
    def forward_flops(self) -> int:
        return self.analysis.forward.flops

    @property
    def forward_macs(self) -> int:
        return self.analysis.forward.macs

    # -- time -----------------------------------------------------------------------------
    @property
    def median_s(self) -> float:
        """Median latency of one call in seconds."""
        return self.measurement.median_ns * 1e-9

    @property
    def latency(self) -> tuple[LatencyFigure, ...]:
        """The median, p95 and p99 of the latency per call, each with its 95% interval."""
        m = self.measurement
        ci = m.median_ci_ns
        out = [LatencyFigure("median", self.median_s,
                             None if ci is None else (ci[0] * 1e-9, ci[1] * 1e-9),
                             quantile_ci_min_samples(0.5, CONFIDENCE))]
        for label, q in _TAILS:
            qci = quantile_ci(m.samples_ns, q, CONFIDENCE)
            out.append(LatencyFigure(label, m.percentile_ns(100 * q) * 1e-9,
                                     None if qci is None else (qci[0] * 1e-9, qci[1] * 1e-9),
                                     quantile_ci_min_samples(q, CONFIDENCE)))
        return tuple(out)

    def latency_of(self, label: str) -> LatencyFigure:
        """The latency figure labelled ``label`` ("median", "p95" or "p99")."""
        for figure in self.latency:
            if figure.label == label:
                return figure
        raise KeyError(f"no latency figure {label!r}; the card has median, p95 and p99")

    @property
    def throughput(self) -> float:
        """Samples per second: ``batch_size`` over the median latency."""
        return self.batch_size / self.median_s

    @property
    def throughput_ci(self) -> tuple[float, float] | None:
        """95% interval of the throughput: the median's interval, inverted."""
        ci = self.latency[0].ci_s
        return None if ci is None else (self.batch_size / ci[1], self.batch_size / ci[0])

    @property
    def achieved_gflops(self) -> float:
        """Counted FLOPs per call over the median latency, in GFLOP/s."""
        return self.flops / self.median_s / 1e9

    @property
    def achieved_gflops_ci(self) -> tuple[float, float] | None:
        ci = self.latency[0].ci_s
        return None if ci is None else (self.flops / ci[1] / 1e9, self.flops / ci[0] / 1e9)

    # -- verdict ----------------------------------------------------------------------------
    @property
    def bound(self) -> str | None:
        """"memory-bound" or "compute-bound" on the roofline; None when not placed."""
        return None if self.placement is None else self.placement.bound

    @property
    def fraction_of_attainable(self) -> float | None:
        return None if self.placement is None else self.placement.fraction

    # -- output -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return brief_repr(self, f"{self.model!r} batch {self.batch_size} on {self.device}: "
                                f"{format_ns(self.measurement.median_ns)} per call, "
                                f"{format_count(self.flops, 'FLOPs')}")

    def lines(self) -> list[str]:
        a, m = self.analysis, self.measurement
        mode = "train" if self.training_mode else "eval"
        inputs = ", ".join(f"{'x'.join(map(str, s)) or 'scalar'} {dt}" for s, dt in a.inputs)
        p = a.parameters
        dtypes = ", ".join(f"{k} {format_bytes(v)}" for k, v in p.bytes_by_dtype.items())
        out = [f"model card: {self.model}, {self.call}, {mode} mode, on {self.device}, "
               f"{self.threads} thread{'s' if self.threads != 1 else ''}"]
        rows: list[tuple[str, str]] = [
            ("input", f"{inputs} (batch {self.batch_size})"),
            ("parameters", f"{p.total:,} ({p.trainable:,} trainable), {format_bytes(p.bytes)}"
                           + (f" ({dtypes})" if dtypes else "")),
            ("FLOPs per call", f"{format_count(self.flops, 'FLOPs')} = 2 x "
                               f"{format_count(self.macs, 'MACs')} + "
                               f"{format_count(a.elementwise_flops, 'FLOPs')} elementwise"
                               + ("" if a.complete else " (a floor: see coverage)")),
        ]
        if a.backward is not None:
            rows.append(("", f"forward {format_count(a.forward.flops, 'FLOPs')} "
                             f"({format_count(a.forward.macs, 'MACs')}), backward "
                             f"{format_count(a.backward.flops, 'FLOPs')} "
                             f"({format_count(a.backward.macs, 'MACs')})"))
        figures = self.latency
        rows.append(("latency per call", figures[0].text()))
        rows += [("", f.text()) for f in figures[1:]]
        tci = self.throughput_ci
        rows.append(("throughput", f"{format_count(self.throughput, digits=4)} samples/s"
                     + ("" if tci is None else
                        f" [{format_count(tci[0], digits=4)}, {format_count(tci[1], digits=4)}]")))
        gci = self.achieved_gflops_ci
        rows.append(("achieved", f"{self.achieved_gflops:,.3g} GFLOP/s"
                     + ("" if gci is None else f" [{gci[0]:,.3g}, {gci[1]:,.3g}]")))
        pl = self.placement
        if pl is not None:
            rows.append(("roofline", f"{pl.bound} at {pl.intensity:,.3g} FLOP/byte: "
                                     f"{format_rel(pl.fraction)} of the attainable "
                                     f"{pl.attainable_gflops:,.3g} GFLOP/s ({pl.compute_ceiling}, "
                                     f"{pl.memory_ceiling})"))
        else:
            rows.append(("roofline", "not placed (see the notes)"))
        rows.append(("peak memory", self._memory_text()))
        width = max(len(label) for label, _ in rows) + 2
        out += [f"  {label:<{width}}{text}" for label, text in rows]
        out += self._training_lines()
        out.append(f"  (95% intervals; {m.n:,} timed samples of {m.loops:,} "
                   f"call{'s' if m.loops != 1 else ''} each over {m.elapsed_s:.3g} s, "
                   f"{m.clock} clock)")
        out.append(f"  ({a.convention})")
        out += [f"  warning: {w}" for w in m.warnings]
        if pl is not None:
            out += [f"  warning: {w}" for w in pl.warnings]
        return out + note_lines(self.notes)

    def _memory_text(self) -> str:
        t, est = self.training, self.analysis.memory
        estimate = (f"estimated peak activations {format_bytes(t.peak_activations_bytes)}"
                    if self.backward and t is not None
                    else f"estimated peak intermediates {format_bytes(est.inference_peak_bytes)}")
        mem = self.measurement.memory
        if mem is None:
            return f"not measured; {estimate}"
        text = (f"measured {format_bytes(mem.median_peak_increase_bytes, sign=True)} RSS "
                f"(median of {mem.calls} calls, max "
                f"{format_bytes(mem.max_peak_increase_bytes, sign=True)}"
                # The allocator keeps freed blocks: a call served from them adds no RSS.
                + (", served from memory the allocator already held)"
                   if mem.max_peak_increase_bytes <= 0 else ")"))
        if mem.python_peak_bytes is not None:
            text += f", Python heap {format_bytes(mem.median_python_peak_bytes or 0)}"
        if mem.cuda_peak_bytes is not None:
            text += f", CUDA peak {format_bytes(max(mem.cuda_peak_bytes))}"
        return f"{text}; {estimate}"

    def _training_lines(self) -> list[str]:
        t = self.training
        if t is None:
            return ["  training memory: not estimated (no output carries a gradient)"]
        total = t.total_bytes
        est = self.analysis.memory
        if total is None:
            head = (f"  training memory ({t.optimizer}: optimizer state not known; with "
                    if t.optimizer is not None else "  training memory (no optimizer given; with ")
            head += ", ".join(f"{_NAMES[k]} {format_bytes(est.training_bytes(k) or 0)}"
                              for k in ("sgd", "momentum", "adam")) + "):"
        else:
            head = f"  training memory with {t.optimizer}: {format_bytes(total)}"
        parts = t.components().items()
        if total:
            out = [head] + table(("component", "bytes", "%"),
                                 [(name, format_bytes(n or 0), f"{100 * (n or 0) / total:.1f}%")
                                  for name, n in parts], indent="    ", align="lrr")
        else:
            out = [head] + table(("component", "bytes"),
                                 [(name, "n/a" if n is None else format_bytes(n))
                                  for name, n in parts], indent="    ", align="lr")
        out.append(f"    (activations: saved for backward "
                   f"{format_bytes(t.saved_activations_bytes)}, with the intermediates and "
                   "activation gradients alive beside them at the peak"
                   + ("" if t.optimizer_slots is None else
                      f"; optimizer state {t.optimizer_slots} x the trainable parameters")
                   + ")")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``ModelCard.from_dict`` restores it. ``figures`` repeats
        the derived figures for readers of the file; ``from_dict`` recomputes them."""
        figures: dict[str, Any] = {
            "params": self.params, "param_bytes": self.param_bytes, "flops": self.flops,
            "macs": self.macs, "forward_flops": self.forward_flops,
            "forward_macs": self.forward_macs,
            "latency_s": {f.label: {"value": f.seconds,
                                    "ci": None if f.ci_s is None else list(f.ci_s)}
                          for f in self.latency},
            "throughput_per_s": self.throughput,
            "throughput_ci_per_s": None if self.throughput_ci is None else list(self.throughput_ci),
            "achieved_gflops": self.achieved_gflops, "bound": self.bound,
            "fraction_of_attainable": self.fraction_of_attainable,
            "training_bytes": None if self.training is None else self.training.total_bytes,
        }
        return {
            "card_version": CARD_VERSION, "model": self.model, "device": self.device,
            "batch_size": self.batch_size, "backward": self.backward, "call": self.call,
            "optimizer": self.optimizer, "training_mode": self.training_mode,
            "threads": self.threads, "notes": list(self.notes), "figures": figures,
            "analysis": self.analysis.to_dict(), "measurement": self.measurement.to_dict(),
            "training": None if self.training is None else self.training.to_dict(),
            "placement": None if self.placement is None else _placement_to_dict(self.placement),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ModelCard:
        """Rebuild from ``to_dict`` output.

        Raises
        ------
        ValueError
            "not a model card: ..." naming what is missing or malformed.
        """
        if not isinstance(d, Mapping):
            raise ValueError(f"not a model card: expected an object, got {type(d).__name__}")
        try:
            training, placement = d["training"], d["placement"]
            return cls(
                str(d["model"]), str(d["device"]), int(d["batch_size"]), bool(d["backward"]),
                str(d["call"]),
                None if d["optimizer"] is None else str(d["optimizer"]),
                bool(d["training_mode"]), int(d["threads"]),
                ModelAnalysis.from_dict(d["analysis"]), Measurement.from_dict(d["measurement"]),
                None if training is None else TrainingMemory.from_dict(training),
                None if placement is None else _placement_from_dict(placement),
                tuple(str(n) for n in d.get("notes", ())))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a model card: {e!r}") from e


# -- arguments --------------------------------------------------------------------------------
def _inputs(example_input: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The model's positional and keyword arguments: a tensor is the one argument, a tuple
    or list the positional ones, a dict the keyword ones."""
    if isinstance(example_input, torch.Tensor):
        args: tuple[Any, ...] = (example_input,)
        kwargs: dict[str, Any] = {}
    elif isinstance(example_input, (tuple, list)):
        args, kwargs = tuple(example_input), {}
    elif isinstance(example_input, Mapping):
        args, kwargs = (), {str(k): v for k, v in example_input.items()}
    else:
        raise TypeError("example_input must be a tensor, a tuple or list of the model's "
                        "positional arguments, or a dict of its keyword arguments; got "
                        f"{type(example_input).__name__}")
    found = tensors((list(args), kwargs))
    if not found:
        raise ValueError("example_input holds no tensor: give the model's input, e.g. "
                         "torch.randn(batch, features)")
    meta = [t for t in found if t.device.type == "meta"]
    if meta:
        raise ValueError("example_input is on the meta device, which holds no data and "
                         "cannot be timed: build the model and its input on a real device "
                         "(fastbench.analysis.analyze counts a meta model without running it)")
    return args, kwargs


def _describe_inputs(args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    parts = [f"{'x'.join(map(str, t.shape)) or 'scalar'} {str(t.dtype).removeprefix('torch.')}"
             for t in tensors((list(args), dict(kwargs)))]
    return ", ".join(parts)


def _batch_size(args: Sequence[Any], kwargs: Mapping[str, Any], given: Any,
                notes: list[str]) -> int:
    if given is not None:
        return check_int("batch_size", given, 1)
    first = tensors((list(args), dict(kwargs)))[0]
    if first.dim() == 0:
        notes.append("the first input is a scalar tensor: the batch is taken as 1 "
                     "(pass batch_size= to say otherwise)")
        return 1
    n = int(first.shape[0])
    if n < 1:
        raise ValueError(f"example_input's first tensor has an empty first dimension "
                         f"(shape {tuple(first.shape)}): give a batch of at least one sample")
    return n


def _trainable(params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [p for p in {id(p): p for p in params}.values() if p.requires_grad]


def _group_slots(optimizer: torch.optim.Optimizer, group: Mapping[str, Any]) -> int | None:
    """Parameter-sized state per element kept for the parameters of ``group``; None for an
    optimizer whose state is not known here."""
    if isinstance(optimizer, torch.optim.SGD):
        return 1 if group.get("momentum", 0) else 0
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        # exp_avg and exp_avg_sq, and max_exp_avg_sq with amsgrad.
        return 3 if group.get("amsgrad", False) else 2
    return None


def _describe_optimizer(optimizer: torch.optim.Optimizer) -> str:
    name = type(optimizer).__name__
    groups = optimizer.param_groups
    if isinstance(optimizer, torch.optim.SGD):
        momenta = sorted({float(g.get("momentum", 0)) for g in groups})
        return f"{name} (" + ("no momentum" if momenta == [0.0] else
                              "momentum " + ", ".join(f"{m:g}" for m in momenta)) + ")"
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return name + (" (amsgrad)" if any(g.get("amsgrad", False) for g in groups) else "")
    return name


def _optimizer_state(optimizer: torch.optim.Optimizer) -> tuple[int | None, int | None]:
    """Bytes of the parameter-sized state ``optimizer`` keeps once it has stepped, from its
    groups' settings (per group, each trainable parameter once), and the slots when every
    group has the same; (None, None) for an optimizer not known here. Scalar counters
    (Adam's ``step``, a few bytes per tensor) are left out."""
    total = 0
    slots: set[int] = set()
    seen: set[int] = set()
    for group in optimizer.param_groups:
        s = _group_slots(optimizer, group)
        if s is None:
            return None, None
        slots.add(s)
        for p in group["params"]:
            if id(p) in seen or not p.requires_grad:
                continue
            seen.add(id(p))
            total += s * p.numel() * p.element_size()
    return total, (slots.pop() if len(slots) == 1 else None)


def _check_optimizer(optimizer: Any, model: torch.nn.Module) -> str | torch.optim.Optimizer | None:
    if optimizer is None:
        return None
    if isinstance(optimizer, str):
        key = optimizer.lower()
        if key not in _SLOTS:
            raise ValueError(f"optimizer must be one of {', '.join(map(repr, OPTIMIZERS))} or a "
                             f"torch.optim.Optimizer, got {optimizer!r}")
        return key
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError("optimizer must be a torch.optim.Optimizer, one of "
                        f"{', '.join(map(repr, OPTIMIZERS))}, or None; got "
                        f"{type(optimizer).__name__}")
    owned = {id(p) for p in model.parameters()}
    foreign = sum(1 for g in optimizer.param_groups for p in g["params"] if id(p) not in owned)
    if foreign:
        raise ValueError(f"optimizer holds {foreign} tensor(s) that are not parameters of the "
                         "model: build it over model.parameters()")
    return optimizer


# -- running ----------------------------------------------------------------------------------
def _roots(output: Any) -> list[torch.Tensor]:
    """The outputs a backward starts from, as the analyzer takes them."""
    return [t for t in tensors(output)
            if t.requires_grad and (t.is_floating_point() or t.is_complex())]


def _sync(device: torch.device) -> Callable[[], None]:
    """What makes a call's time include its device work: CUDA runs asynchronously, so the
    timed call waits for it; on the CPU nothing is needed."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _probe(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
           backward: bool, described: str) -> None:
    """One call of the model on the example input, so that a rejected input is said plainly
    (and not from inside the analyzer or the timing loop)."""
    try:
        if backward:
            with torch.enable_grad():
                output = model(*args, **kwargs)
        else:
            with torch.no_grad():
                model(*args, **kwargs)
            return
    except Exception as e:
        raise ValueError(f"the model rejected example_input ({described}): "
                         f"{type(e).__name__}: {e}") from e
    if not _roots(output):
        raise ValueError(f"backward=True needs an output that carries a gradient, but no output "
                         f"of {type(model).__name__} on example_input ({described}) requires "
                         "grad: are all its parameters frozen (requires_grad=False)?")


def _step(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
          backward: bool, optimizer: torch.optim.Optimizer | None,
          device: torch.device) -> Callable[[], None]:
    """The timed call: the forward, or a training step (forward, backward seeded with ones
    as the analyzer's, the optimizer's step, gradients set to None)."""
    sync = _sync(device)
    if not backward:
        def forward() -> None:
            model(*args, **kwargs)
            sync()
        return forward

    def train_step() -> None:
        roots = _roots(model(*args, **kwargs))
        torch.autograd.backward(roots, [torch.ones_like(t) for t in roots])
        if optimizer is not None:
            optimizer.step()
        # As a training loop does, so that no step adds its gradients to the last one's.
        model.zero_grad(set_to_none=True)
        sync()
    return train_step


def _placement_dtype(analysis: ModelAnalysis, notes: list[str]) -> str:
    """The compute ceiling's dtype: the parameters' (the arithmetic runs at their width),
    else the first floating input's, else float32."""
    dtypes = [*analysis.parameters.bytes_by_dtype,
              *(dt for _, dt in analysis.inputs)]
    floating = [dt for dt in dtypes if dt.startswith(("float", "bfloat"))]
    dtype = floating[0] if floating else "float32"
    if dtype not in ("float32", "float64"):
        notes.append(f"the model computes in {dtype}; the roofline has float32 and float64 "
                     "ceilings only, and it is placed against float32's")
        dtype = "float32"
    return dtype


def _place(analysis: ModelAnalysis, measurement: Measurement, training: TrainingMemory | None,
           roofline: Roofline, backward: bool, threads: int,
           notes: list[str]) -> Placement | None:
    """The whole call on ``roofline``: its counted FLOPs and bytes over its median time."""
    if analysis.flops <= 0 or analysis.bytes <= 0:
        notes.append("not placed on the roofline: no FLOPs counted for the call")
        return None
    dtype = _placement_dtype(analysis, notes)
    if f"fma {dtype}" not in roofline.compute:
        notes.append(f"not placed on the roofline: it has no {dtype} ceiling "
                     f"(calibrated: {', '.join(roofline.compute)})")
        return None
    # The data the call touches decides which memory level's ceiling binds it.
    working_set = (training.total_bytes if backward and training is not None
                   and training.total_bytes is not None else analysis.memory.inference_bytes)
    return roofline.place(measurement, flops=analysis.flops, bytes=analysis.bytes, dtype=dtype,
                          threads=threads, working_set_bytes=max(int(working_set), 1))


def _training_memory(est: MemoryEstimate,
                     optimizer: str | torch.optim.Optimizer | None) -> TrainingMemory | None:
    """The analyzer's training estimate by component, with the optimizer's state."""
    if est.training_peak_bytes is None or est.activations_bytes is None:
        return None
    name: str | None
    if optimizer is None:
        name, slots, state = None, None, None
    elif isinstance(optimizer, str):
        # The analyzer's own per-optimizer figure: slots x the trainable parameters' bytes.
        key = "adam" if optimizer == "adamw" else optimizer
        name, slots, state = _NAMES[optimizer], _SLOTS[optimizer], est.optimizer_bytes(key)
    else:
        name = _describe_optimizer(optimizer)
        state, slots = _optimizer_state(optimizer)
    return TrainingMemory(name, slots, est.params_bytes, est.buffers_bytes, est.gradients_bytes,
                          state, est.activations_bytes, est.training_peak_bytes,
                          est.inputs_bytes)


def profile_model(model: Any, example_input: Any, backward: bool = False,
                  optimizer: Any = None, *, threads: int | None = None,
                  min_time_s: float | None = None, duration_s: float = DEFAULT_DURATION_S,
                  repeat: int = 100, warmup: int = 3, max_time_s: float | None = 30.0,
                  batch_size: int | None = None, roofline: Roofline | bool | None = None,
                  memory: bool = True, copy_model: bool = True) -> ModelCard:
    """The model card of ``model`` on ``example_input``: parameters, FLOPs/MACs, latency
    (median, p95, p99 with 95% intervals), throughput, the peak memory of a call, training
    memory by component, achieved GFLOP/s and the roofline verdict.

    Parameters
    ----------
    model : torch.nn.Module
        Profiled in its current mode: call ``model.eval()`` first for inference figures.
    example_input : tensor, tuple/list of positional arguments, or dict of keyword ones
        One call's input, on the model's device. The batch size is the first tensor's first
        dimension (``batch_size`` overrides it).
    backward : bool
        False: one timed call is the forward under ``torch.no_grad()``. True: one timed call
        is a training step, forward, backward (every output that requires grad seeded with
        ones, as the analyzer counts it), the optimizer's step when ``optimizer`` is an
        instance, and ``zero_grad(set_to_none=True)``; FLOPs are then forward + backward.
    optimizer : torch.optim.Optimizer, {"sgd", "momentum", "adam", "adamw"}, or None
        Decides the optimizer state in the training memory: plain SGD keeps none, SGD with
        momentum one copy of the trainable parameters, Adam and AdamW two (three with
        ``amsgrad``), read from an instance's groups. A string estimates the state only;
        an instance over the model's parameters is also stepped in each timed training
        step. Other optimizers are timed, their state reported as not known.
    threads : int, optional
        torch's intra-op threads during the profile (restored after); by default as they
        are. The roofline is calibrated on the same number.
    min_time_s : float, optional
        By default every timed sample is one call, so p95 and p99 are those of single
        calls. Given, calls are batched until a sample lasts this long (for calls near the
        clock's resolution); the tail figures are then those of per-sample means, narrower
        than single calls' (the card notes it).
    duration_s, repeat, warmup, max_time_s : as for :func:`fastbench.measure`
        At least ``repeat`` samples over at least ``duration_s`` seconds after ``warmup``
        samples, within ``max_time_s`` (default 30 s: a slow model stops there with fewer
        samples). p95's interval needs 72 samples, p99's 368.
    batch_size : int, optional
        Samples per call for the throughput.
    roofline : Roofline, bool or None
        Where the verdict is placed: None or True calibrate this machine's
        (``fastbench.roofline.calibrate(threads, quick=True)``, cached per machine), a
        ``Roofline`` is used as it is, False places nothing.
    memory : bool
        Measure the peak memory of a call (``fastbench.measure(memory=True)``: after the
        timed samples, one untracked call, then 3 tracked ones).
    copy_model : bool
        With ``backward``: profile a deep copy of the model (and of the optimizer
        instance, with its state), so that the steps timed change neither the model's
        weights, its ``.grad`` nor the optimizer's state. False profiles the model itself
        (saves the memory of a copy; the weights then move with every step timed).

    Returns
    -------
    ModelCard
        ``print(card)`` gives the card.

    Raises
    ------
    TypeError
        ``model`` is not a ``torch.nn.Module``, ``example_input`` or ``optimizer`` is of
        another type, or a setting has the wrong type.
    ValueError
        An unknown optimizer name, an optimizer over other tensors than the model's
        parameters, an input without tensors or on the meta device, an input the model
        rejects (the message names the input and the model's error), ``backward`` with no
        output that requires grad, a model that cannot be deep-copied, a setting out of range.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_bool("backward", backward)
    check_bool("memory", memory)
    check_bool("copy_model", copy_model)
    if threads is not None:
        check_int("threads", threads, 1, say_positive=False)
    # The timing settings are checked before the model runs, not after its analysis.
    run_config(warmup, 1e-4 if min_time_s is None else min_time_s, repeat,
               1 if min_time_s is None else None, "auto", True, max_time_s,
               duration_s=duration_s)
    if roofline is not None and not isinstance(roofline, (Roofline, bool)):
        raise TypeError(f"roofline must be a Roofline, True, False or None; got "
                        f"{type(roofline).__name__}")
    args, kwargs = _inputs(example_input)
    opt = _check_optimizer(optimizer, model)
    notes: list[str] = []
    size = _batch_size(args, kwargs, batch_size, notes)
    described = _describe_inputs(args, kwargs)
    device = tensors((list(args), kwargs))[0].device
    target, target_opt = model, opt if isinstance(opt, torch.optim.Optimizer) else None
    if backward and copy_model:
        try:
            target, target_opt = copy.deepcopy((model, target_opt))
        except Exception as e:
            raise ValueError(f"the model could not be deep-copied for the training steps "
                             f"({type(e).__name__}: {e}); pass copy_model=False to profile "
                             "the model itself (its weights then change)") from e
        notes.append("the training steps ran on a deep copy of the model"
                     + (" and its optimizer" if target_opt is not None else "")
                     + ": its weights, gradients and optimizer state are as they were")
    with intra_op_threads(threads) as ran_on:
        _probe(target, args, kwargs, backward, described)
        analysis = analyze(target, *args, backward=backward, grad_mode="grad", kwargs=kwargs)
        step = _step(target, args, kwargs, backward, target_opt if backward else None, device)
        grad_context = contextlib.nullcontext() if backward else torch.no_grad()
        with grad_context:
            # One call per sample unless min_time_s asks for batches: the percentiles are
            # then those of single calls, the tail a caller meets.
            measurement = measure(step, warmup=warmup, repeat=repeat, duration_s=duration_s,
                                  min_time_s=min_time_s if min_time_s is not None else 1e-4,
                                  loops=None if min_time_s is not None else 1,
                                  max_time_s=max_time_s, memory=memory,
                                  name=f"{type(model).__name__} "
                                       + ("training step" if backward else "forward"))
        training = _training_memory(analysis.memory, opt)
        placement: Placement | None = None
        if device.type != "cpu":
            notes.append(f"not placed on the roofline: it is this machine's CPU roofline and "
                         f"the model ran on {device}")
        elif roofline is not False:
            roof = roofline if isinstance(roofline, Roofline) else calibrate(threads=ran_on,
                                                                             quick=True)
            placement = _place(analysis, measurement, training, roof, backward, ran_on, notes)
    return ModelCard(type(model).__name__, str(device), size, backward,
                     _call(backward, target_opt),
                     None if training is None else training.optimizer,
                     bool(model.training), ran_on, analysis, measurement, training, placement,
                     tuple(notes + _notes(model, backward, opt, measurement, analysis,
                                          training)))


def _call(backward: bool, optimizer: torch.optim.Optimizer | None) -> str:
    """What one timed call runs, as the card's title says it."""
    if not backward:
        return "forward (no_grad)"
    stepped = "" if optimizer is None else f" + {type(optimizer).__name__} step"
    return f"training step (forward + backward{stepped})"


def _notes(model: torch.nn.Module, backward: bool, opt: str | torch.optim.Optimizer | None,
           measurement: Measurement, analysis: ModelAnalysis,
           training: TrainingMemory | None) -> list[str]:
    """What the figures leave out or assume, said on the card."""
    notes: list[str] = []
    if not backward and model.training:
        notes.append("the model is in training mode (dropout active, batch norms updating "
                     "their statistics): call model.eval() first for inference figures")
    if backward and isinstance(opt, torch.optim.Optimizer):
        notes.append("FLOPs count the forward and backward; the optimizer's arithmetic is "
                     "not counted, its time is in the step")
    if isinstance(opt, str):
        notes.append("the optimizer's step is not timed: it was given by name, which sizes "
                     "its state only (pass a torch.optim.Optimizer to time it)")
    elif opt is not None and not backward:
        notes.append("the optimizer's step is not timed: backward=False times the forward")
    if training is not None and opt is not None and training.optimizer_bytes is None:
        notes.append(f"the state of {training.optimizer} is not known to fastbench: the "
                     "training total leaves it out")
    if measurement.loops > 1:
        notes.append(f"each sample timed {measurement.loops:,} calls: p95 and p99 are those of "
                     "per-sample means, narrower than single calls' (leave min_time_s unset "
                     "for single calls)")
    if not analysis.complete:
        names = ", ".join(u.name for u in analysis.coverage.uncounted if u.floating)
        notes.append(f"FLOPs are a floor: ops without a formula produced floating-point "
                     f"results ({names})")
    return notes + list(analysis.notes)
