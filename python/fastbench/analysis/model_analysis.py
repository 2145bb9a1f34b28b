"""The result of analysing a model: totals, per-module rows, parameters by storage, a memory
estimate and the coverage report, with its printed table, its plain-data form and its
placement on a roofline.

Plain data only: no torch here, so a saved analysis loads and prints where torch is absent.
The analyzer that fills it in is :mod:`fastbench.pytorch.analyzer`; the cost records are
:mod:`.costs`'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence

from ..report.lines import TextLines, brief_repr, note_lines
from ..report.table import table
from ..units import format_count
from .costs import CONVENTION, Count, Totals
from .families import FamilyShare, family_shares

__all__ = ["Coverage", "MemoryEstimate", "ModelAnalysis", "ModulePlacement", "ModuleRow",
           "Parameters", "UncountedOp", "least_time_bound", "least_time_of"]

Shape = tuple[int, ...]
OPTIMIZERS = ("sgd", "momentum", "adam")
# Optimizer state per trainable parameter element, in parameter-sized slots: plain SGD keeps
# nothing, SGD with momentum one buffer, Adam and AdamW two (exp_avg, exp_avg_sq).
_OPTIMIZER_SLOTS = {"sgd": 0, "momentum": 1, "adam": 2}


def _shapes(data: Any) -> tuple[Shape, ...]:
    return tuple(tuple(int(s) for s in shape) for shape in data)


def _shape_text(shapes: Sequence[Shape]) -> str:
    return ", ".join("x".join(str(s) for s in shape) or "scalar" for shape in shapes)


def _bytes_text(n: float) -> str:
    return format_count(n, "B")


@dataclass(frozen=True)
class ModuleRow:
    """One module's share: counts include its children's (inclusive), ``params`` counts its
    own and its children's unique elements; shapes are those of its first call."""

    path: str                  # "" for the model itself, else e.g. "layer1.0.conv1"
    type: str
    calls: int
    input_shapes: tuple[Shape, ...]
    output_shapes: tuple[Shape, ...]
    params: int
    forward: Count
    backward: Count = Count()

    @property
    def total(self) -> Count:
        return self.forward + self.backward

    @property
    def depth(self) -> int:
        return 0 if not self.path else self.path.count(".") + 1

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "type": self.type, "calls": self.calls,
                "input_shapes": [list(s) for s in self.input_shapes],
                "output_shapes": [list(s) for s in self.output_shapes],
                "params": self.params, "forward": self.forward.to_dict(),
                "backward": self.backward.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ModuleRow:
        return cls(str(d["path"]), str(d["type"]), int(d["calls"]), _shapes(d["input_shapes"]),
                   _shapes(d["output_shapes"]), int(d["params"]), Count.from_dict(d["forward"]),
                   Count.from_dict(d["backward"]))


@dataclass(frozen=True)
class UncountedOp:
    """An aten op seen without a formula: how often, the shapes it produced, and whether it
    produced floating-point results (and so may have done arithmetic the totals miss)."""

    name: str
    calls: int
    output_shapes: tuple[Shape, ...]
    floating: bool

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "calls": self.calls, "floating": self.floating,
                "output_shapes": [list(s) for s in self.output_shapes]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UncountedOp:
        return cls(str(d["name"]), int(d["calls"]), _shapes(d["output_shapes"]),
                   bool(d["floating"]))


@dataclass(frozen=True)
class Coverage:
    """Every op seen (name -> calls) and the ones without a formula."""

    ops: dict[str, int]
    uncounted: tuple[UncountedOp, ...] = ()

    @property
    def complete(self) -> bool:
        """False when an op that may bear FLOPs went uncounted: the totals are then a floor."""
        return not any(u.floating for u in self.uncounted)

    def lines(self) -> list[str]:
        if not self.uncounted:
            return [f"  coverage: complete ({sum(self.ops.values())} op calls, "
                    f"{len(self.ops)} distinct ops, every one counted)"]
        out = [f"  coverage: {'complete' if self.complete else 'INCOMPLETE'}: "
               f"{len(self.uncounted)} op(s) without a formula"
               + ("" if self.complete else " produced floating-point results; the totals "
                  "leave out whatever arithmetic they did")]
        for u in self.uncounted:
            shapes = _shape_text(u.output_shapes[:3]) + (", ..." if len(u.output_shapes) > 3 else "")
            out.append(f"    aten.{u.name}: {u.calls} call{'s' if u.calls != 1 else ''}, "
                       f"outputs {shapes or 'none'}{'' if u.floating else ' (not floating-point)'}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"complete": self.complete, "ops": dict(self.ops),
                "uncounted": [u.to_dict() for u in self.uncounted]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Coverage:
        return cls({str(k): int(v) for k, v in dict(d["ops"]).items()},
                   tuple(UncountedOp.from_dict(u) for u in d["uncounted"]))


@dataclass(frozen=True)
class Parameters:
    """Parameters counted by underlying storage, so tied or shared weights count once.

    ``tied`` lists groups of names that share storage; ``bytes_by_dtype`` covers the unique
    parameter storage (buffers are separate).
    """

    total: int
    trainable: int
    frozen: int
    buffers: int
    bytes: int
    buffer_bytes: int
    bytes_by_dtype: dict[str, int]
    tied: tuple[tuple[str, ...], ...] = ()
    naive_total: int = 0       # summed over every name, tied weights counted each time

    def lines(self) -> list[str]:
        dtypes = ", ".join(f"{k} {_bytes_text(v)}" for k, v in self.bytes_by_dtype.items())
        out = [f"  parameters: {self.total:,} ({self.trainable:,} trainable, {self.frozen:,} "
               f"frozen), {_bytes_text(self.bytes)}" + (f" ({dtypes})" if dtypes else ""),
               f"  buffers: {self.buffers:,} elements, {_bytes_text(self.buffer_bytes)}"]
        for group in self.tied:
            out.append(f"  tied (counted once): {' = '.join(group)}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "trainable": self.trainable, "frozen": self.frozen,
                "buffers": self.buffers, "bytes": self.bytes, "buffer_bytes": self.buffer_bytes,
                "bytes_by_dtype": dict(self.bytes_by_dtype),
                "tied": [list(g) for g in self.tied], "naive_total": self.naive_total}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Parameters:
        return cls(int(d["total"]), int(d["trainable"]), int(d["frozen"]), int(d["buffers"]),
                   int(d["bytes"]), int(d["buffer_bytes"]),
                   {str(k): int(v) for k, v in dict(d["bytes_by_dtype"]).items()},
                   tuple(tuple(str(n) for n in g) for g in d["tied"]), int(d["naive_total"]))


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory for inference and for one training step, in bytes.

    Intermediate storages are followed op by op, each born at the op that writes it and
    freed right after the last op that uses it (what eager execution does once nothing else
    holds it); inputs, parameters and buffers are counted apart, storages once however many
    views share them. ``inference_peak_bytes`` is the most intermediate storage alive at once
    during the forward, the model's outputs included. ``activations_bytes`` are the tensors
    autograd saved for backward during the analysed forward (unique storages, parameters
    and inputs excluded), measured from the graph. ``training_peak_bytes`` is the most
    activation storage alive at once over a training step: the forward with its saved
    tensors held until the backward uses them, the outputs, their gradients and, when the
    backward was analysed, every gradient it computed for an activation (the parameters'
    gradients are ``gradients_bytes``); without the backward, the step is taken to its
    start, where the saved tensors, the outputs and the outputs' gradients are alive
    together. It is never below ``inference_peak_bytes``, so neither is training below
    inference. Gradients take the trainable parameters' size; optimizer state is per
    ``OPTIMIZERS`` (SGD none, momentum one slot, Adam/AdamW two), in the parameters' dtype.
    """

    params_bytes: int
    buffers_bytes: int
    gradients_bytes: int
    activations_bytes: int | None      # None without a training step, as training_peak_bytes
    inference_peak_bytes: int
    inputs_bytes: int
    training_peak_bytes: int | None    # None: gradients off, or no output requires grad

    def optimizer_bytes(self, optimizer: str = "adam") -> int:
        key = optimizer.lower().replace("adamw", "adam")
        if key not in _OPTIMIZER_SLOTS:
            raise ValueError(f"optimizer must be one of sgd, momentum, adam, adamw; got {optimizer!r}")
        return _OPTIMIZER_SLOTS[key] * self.gradients_bytes

    def training_bytes(self, optimizer: str = "adam") -> int | None:
        """Parameters + buffers + gradients + optimizer state + inputs + the step's peak of
        activations (saved, transient and their gradients)."""
        if self.training_peak_bytes is None:
            return None
        return (self.params_bytes + self.buffers_bytes + self.gradients_bytes
                + self.optimizer_bytes(optimizer) + self.training_peak_bytes + self.inputs_bytes)

    @property
    def inference_bytes(self) -> int:
        return self.params_bytes + self.buffers_bytes + self.inputs_bytes + self.inference_peak_bytes

    def lines(self) -> list[str]:
        out = [f"  memory, inference: {_bytes_text(self.inference_bytes)} = parameters "
               f"{_bytes_text(self.params_bytes)} + buffers {_bytes_text(self.buffers_bytes)} + "
               f"inputs {_bytes_text(self.inputs_bytes)} + peak intermediates "
               f"{_bytes_text(self.inference_peak_bytes)}"]
        if self.training_peak_bytes is None:
            out.append("  memory, training: not estimated (gradients disabled, or no output "
                       "requires grad)")
            return out
        for opt in OPTIMIZERS:
            total = self.training_bytes(opt)
            out.append(f"  memory, training with {opt:<8}: {_bytes_text(total or 0)} = parameters + "
                       f"gradients {_bytes_text(self.gradients_bytes)} + optimizer "
                       f"{_bytes_text(self.optimizer_bytes(opt))} + peak activations "
                       f"{_bytes_text(self.training_peak_bytes)} + buffers and inputs")
        out.append(f"  (peak activations: saved for backward "
                   f"{_bytes_text(self.activations_bytes or 0)}, with the intermediates and "
                   f"activation gradients alive beside them)")
        return out

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "params_bytes": self.params_bytes, "buffers_bytes": self.buffers_bytes,
            "gradients_bytes": self.gradients_bytes, "activations_bytes": self.activations_bytes,
            "inference_peak_bytes": self.inference_peak_bytes, "inputs_bytes": self.inputs_bytes,
            "training_peak_bytes": self.training_peak_bytes,
            "inference_bytes": self.inference_bytes}
        d["training_bytes"] = {opt: self.training_bytes(opt) for opt in OPTIMIZERS}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryEstimate:
        act = None if d["activations_bytes"] is None else int(d["activations_bytes"])
        peak = int(d["inference_peak_bytes"])
        training_peak = d.get("training_peak_bytes")
        if "training_peak_bytes" in d:
            training = None if training_peak is None else int(training_peak)
        else:
            # Written before the training peak was recorded: the forward's peak is at least
            # the saved activations and the inference peak.
            training = None if act is None else max(act, peak)
        return cls(int(d["params_bytes"]), int(d["buffers_bytes"]), int(d["gradients_bytes"]),
                   act, peak, int(d["inputs_bytes"]), training)


# A placement's verdict: memory or compute binds the parts holding most of its least time.
BOUNDS_ANALYSIS = ("memory-bound", "compute-bound")


def least_time_of(roofline: Any, counts: Sequence[Count], dtype: str = "float32",
                  level: str | None = None) -> tuple[float, float, set[str]]:
    """The least time of passes run one after the other (``Roofline.least_time`` of each,
    summed), the part of it that memory binds, and the levels judged against."""
    total = memory = 0.0
    used: set[str] = set()
    for count in counts:
        t, at, memory_binds = roofline.least_time(count.flops, count.bytes, dtype, level)
        total += t
        memory += t if memory_binds else 0.0
        used |= set() if at is None else {at}
    return total, memory, used


def least_time_bound(time: float, memory_bound: float) -> str:
    """The verdict of the parts holding most of a least time (``least_time_of``)."""
    return BOUNDS_ANALYSIS[0] if memory_bound > time / 2 else BOUNDS_ANALYSIS[1]


def _residual(whole: Count, parts: Sequence[Count]) -> Count:
    """What a module computes and moves itself: its inclusive count less its children's
    (never below zero)."""
    return Count(**{f.name: max(getattr(whole, f.name) - sum(getattr(p, f.name) for p in parts), 0)
                    for f in fields(Count)})


@dataclass(frozen=True)
class ModulePlacement:
    """A module under the roofline: the fastest it could run, what binds it, and the memory
    level whose ceiling it was judged against."""

    path: str
    type: str
    flops: int
    bytes: int
    intensity: float
    attainable_gflops: float
    bound: str                 # "memory-bound" or "compute-bound"
    min_time_s: float          # flops / attainable: the roofline's lower bound on its time
    level: str = "DRAM"        # the memory ceiling's level

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "type": self.type, "flops": self.flops, "bytes": self.bytes,
                "intensity": self.intensity if math.isfinite(self.intensity) else None,
                "attainable_gflops": self.attainable_gflops, "bound": self.bound,
                "min_time_s": self.min_time_s, "level": self.level}


@dataclass(frozen=True)
class ModelAnalysis(Totals, TextLines):
    """FLOPs, MACs, bytes, parameters and memory of a model, per module.

    ``macs``, ``flops``, ``elementwise_flops`` and ``bytes`` are totals over every pass
    analysed (the forward, plus the backward when it was asked for); ``forward`` and
    ``backward`` hold each pass. ``params`` counts unique parameter elements (tied weights
    once). ``complete`` is False when an op that may bear FLOPs had no formula; ``coverage``
    names it. The convention is ``costs.CONVENTION``.
    """

    model: str
    inputs: tuple[tuple[Shape, str], ...]     # (shape, dtype) of each input tensor
    device: str
    grad_mode: str                            # "grad", "no_grad" or "inference_mode"
    forward: Count
    backward: Count | None
    parameters: Parameters
    memory: MemoryEstimate
    modules: tuple[ModuleRow, ...]
    coverage: Coverage
    notes: tuple[str, ...] = ()
    convention: str = CONVENTION

    # -- totals ------------------------------------------------------------------------
    @property
    def total(self) -> Count:
        return self.forward + self.backward if self.backward is not None else self.forward

    @property
    def params(self) -> int:
        return self.parameters.total

    @property
    def complete(self) -> bool:
        return self.coverage.complete

    def module(self, path: str) -> ModuleRow:
        """The row of the module at ``path`` ("" is the model)."""
        for row in self.modules:
            if row.path == path:
                return row
        raise KeyError(f"no module {path!r} in the analysis of {self.model}")

    def families(self) -> tuple[FamilyShare, ...]:
        """FLOPs, MACs and bytes by family of operation (attention, linear, convolution,
        normalization, ...) with each family's share of the FLOPs, over every module
        (:func:`fastbench.analysis.families.family_shares`)."""
        return family_shares(self.modules)

    # -- roofline ------------------------------------------------------------------------
    def place_on(self, roofline: Any, *, dtype: str | None = None, level: str | None = None,
                 max_depth: int | None = None) -> list[ModulePlacement]:
        """Each module's least time on ``roofline`` (a ``fastbench.roofline.Roofline``), the
        speed that allows and whether memory or compute bounds it, from its FLOPs and bytes
        (all passes analysed). ``dtype`` picks the compute ceiling (default: the first
        input's floating dtype, else float32). Modules doing no arithmetic are left out.

        ``min_time_s`` is a lower bound. Each pass of a module without children is judged
        against ``level``'s ceiling, by default the fastest level the pass's bytes fit
        (``Roofline.level_for``: its inputs, outputs and parameters could all be there, as
        when the layer before just wrote them; a ReLU over 3.2 MB ran in 38 µs where the
        DRAM ceiling promised at least 187). A module with children is the sum of its
        children's least times and that of what it computes itself: its bytes count each
        intermediate tensor written and read again, which is traffic, not a working set,
        and judged as one it would place the whole against a slower level than any part.
        ``level`` is then the levels its parts were judged against ("L2+L3"), and ``bound``
        the verdict of the parts that hold most of its least time. A module whose children
        hold arithmetic but no bytes ran them in one fused kernel of its own (PyTorch's
        fused ``nn.TransformerEncoderLayer`` in inference: the analyzer gives each part to
        the submodule the unfused path runs it in, the kernel's traffic to the layer): it is
        judged as one, and its children, moving nothing of their own, are left out.
        """
        if dtype is None:
            dtype = next((dt for _, dt in self.inputs if dt.startswith("float")), "float32")
            if dtype not in ("float32", "float64"):
                dtype = "float32"
        if level is not None and level not in roofline.memory:
            raise ValueError(f"level must be one of {', '.join(roofline.memory)}, got {level!r}")
        levels = list(roofline.memory)

        def least(count: Count) -> tuple[float, float, set[str]]:
            return least_time_of(roofline, (count,), dtype, level)

        rows = {r.path: r for r in self.modules}
        children: dict[str, list[str]] = {path: [] for path in rows}
        for path in rows:
            if path:
                parent = path.rpartition(".")[0]
                while parent and parent not in rows:
                    parent = parent.rpartition(".")[0]
                if parent in rows:
                    children[parent].append(path)
        placed: dict[str, tuple[float, float, set[str]]] = {}

        def place(path: str) -> tuple[float, float, set[str]]:
            if path not in placed:
                row, kids = rows[path], children[path]
                fused = (any(rows[k].total.flops for k in kids)
                         and not any(rows[k].total.bytes for k in kids))
                if fused:  # its children's arithmetic ran in one fused kernel of its own
                    parts = [least(row.forward), least(row.backward)]
                else:
                    parts = [place(k) for k in kids] + [
                        least(_residual(row.forward, [rows[k].forward for k in kids])),
                        least(_residual(row.backward, [rows[k].backward for k in kids]))]
                placed[path] = (sum(t for t, _, _ in parts), sum(m for _, m, _ in parts),
                                set().union(*(lv for _, _, lv in parts)))
            return placed[path]

        out = []
        for row in self.modules:
            if max_depth is not None and row.depth > max_depth:
                continue
            c = row.total
            if c.flops == 0 or c.bytes == 0:
                continue
            time, memory_bound, used = place(row.path)
            bound = least_time_bound(time, memory_bound)
            at = "+".join(lv for lv in levels if lv in used) or (level or "DRAM")
            out.append(ModulePlacement(row.path, row.type, c.flops, c.bytes, c.intensity,
                                       c.flops / time / 1e9, bound, time, at))
        return out

    # -- output --------------------------------------------------------------------------
    def __repr__(self) -> str:
        complete = "" if self.complete else " (incomplete)"
        return brief_repr(self, f"{self.model!r}: {format_count(self.flops, 'FLOPs')}{complete}, "
                                f"{format_count(self.params, 'params')}, "
                                f"{len(self.modules)} modules")

    def lines(self, max_depth: int | None = 2) -> list[str]:
        """Totals, the share of each family of operation (attention, linear, ...: over every
        module, whatever ``max_depth``), the per-module table down to ``max_depth`` (None:
        every module), the parameters, the memory estimate and the coverage report."""
        inputs = ", ".join(f"{'x'.join(map(str, s))} {dt}" for s, dt in self.inputs)
        passes = "forward + backward" if self.backward is not None else "forward"
        out = [f"  {self.model} on {self.device}, inputs {inputs or 'none'}, {passes} "
               f"({self.grad_mode})",
               f"  total: {format_count(self.flops, 'FLOPs')} = 2 x {format_count(self.macs, 'MACs')}"
               f" + {format_count(self.elementwise_flops, 'FLOPs')} elementwise; "
               f"{format_count(self.bytes, 'B')} moved, {self.intensity:.3g} FLOP/B"]
        if self.backward is not None:
            out.append(f"  forward:  {self.forward}")
            out.append(f"  backward: {self.backward}")
        if not self.complete:
            out.append("  INCOMPLETE: some ops had no formula; see coverage below")
        out.append(f"  ({self.convention})")
        total_flops = self.flops or 1
        header = ("module", "type", "input", "output", "params", "MACs", "FLOPs", "bytes",
                  "FLOP/B", "%")
        rows: list[tuple[str, ...]] = []
        for row in self.modules:
            if max_depth is not None and row.depth > max_depth:
                continue
            c = row.total
            name = ("  " * row.depth + (row.path.rsplit(".", 1)[-1] if row.path else "(model)"))
            rows.append((name, row.type, _shape_text(row.input_shapes[:1]),
                         _shape_text(row.output_shapes[:1]), format_count(row.params),
                         format_count(c.macs), format_count(c.flops), format_count(c.bytes, "B"),
                         f"{c.intensity:.3g}" if c.bytes else "-",
                         f"{100 * c.flops / total_flops:.1f}"))
        out += self._family_lines()
        out += table(header, rows, align="llllrrrrrr")
        out += self.parameters.lines()
        out += self.memory.lines()
        out += self.coverage.lines()
        return out + note_lines(self.notes)

    def _family_lines(self) -> list[str]:
        shares = self.families()
        if not shares:
            return []
        rows = [(s.family, format_count(s.count.macs), format_count(s.count.flops),
                 format_count(s.count.bytes, "B"), f"{100 * s.share:.1f}") for s in shares]
        return (["  by family (each module's own arithmetic; attention includes its "
                 "projections):"]
                + table(("family", "MACs", "FLOPs", "bytes", "%"), rows, indent="    ",
                        align="lrrrr"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "device": self.device, "grad_mode": self.grad_mode,
            "inputs": [{"shape": list(s), "dtype": dt} for s, dt in self.inputs],
            "convention": self.convention, "complete": self.complete,
            "macs": self.macs, "flops": self.flops, "elementwise_flops": self.elementwise_flops,
            "bytes": self.bytes, "params": self.params,
            "forward": self.forward.to_dict(),
            "backward": None if self.backward is None else self.backward.to_dict(),
            "parameters": self.parameters.to_dict(), "memory": self.memory.to_dict(),
            "modules": [r.to_dict() for r in self.modules], "coverage": self.coverage.to_dict(),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ModelAnalysis:
        try:
            bwd = d["backward"]
            return cls(
                str(d["model"]), tuple((tuple(int(s) for s in i["shape"]), str(i["dtype"]))
                                       for i in d["inputs"]),
                str(d["device"]), str(d["grad_mode"]), Count.from_dict(d["forward"]),
                None if bwd is None else Count.from_dict(bwd),
                Parameters.from_dict(d["parameters"]), MemoryEstimate.from_dict(d["memory"]),
                tuple(ModuleRow.from_dict(r) for r in d["modules"]),
                Coverage.from_dict(d["coverage"]), tuple(str(n) for n in d.get("notes", [])),
                str(d.get("convention", CONVENTION)))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a model analysis: {e!r}") from e
