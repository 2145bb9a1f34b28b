"""Analyse a PyTorch model: the FLOP and byte counting consumer of :mod:`.dispatch`. Each
aten op the dispatch layer delivers, with its module and pass, is counted with ``aten_ops``;
beside the counts come parameters by storage, the tensors autograd saves, storage lifetimes
(the inference peak) and the coverage of the count.

Owns the tallies and the assembly of the result; running the model and attributing ops to
modules is :mod:`.dispatch`'s, per-op arithmetic :mod:`.aten_ops`', the result type
:mod:`fastbench.analysis.model_analysis`'. Imports torch: the package loads it only when
``analyze`` is called.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from typing import Any, Iterator, Mapping, Sequence

import torch

from ..analysis.costs import Count
from ..analysis.model_analysis import (Coverage, MemoryEstimate, ModelAnalysis, ModuleRow,
                                       Parameters, UncountedOp)
from . import aten_ops
from .dispatch import Dispatcher, Modules, OpEvent, tensors

__all__ = ["analyze"]

GRAD_MODES = ("grad", "no_grad", "inference_mode")
_MAX_SHAPES_KEPT = 8


def _storage_key(t: torch.Tensor) -> int:
    return int(t.untyped_storage()._cdata)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


# -- parameters -------------------------------------------------------------------------------
def _union_length(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for lo, hi in sorted(intervals):
        if hi <= end:
            continue
        total += hi - max(lo, end)
        end = hi
    return total


def _unique_elements(group: Sequence[torch.Tensor]) -> tuple[int, dict[int, list[int]]]:
    """Unique elements over the tensors of ``group`` counted by storage (views and tied
    weights once); also the indices of the tensors sharing each storage."""
    by_storage: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(group):
        by_storage[_storage_key(t)].append(i)
    total = 0
    for idx in by_storage.values():
        spans = []
        for i in idx:
            t = group[i]
            # The span of storage the tensor reaches (its numel when contiguous; a strided
            # view's extent bounds it). Empty tensors reach nothing.
            extent = 0 if t.numel() == 0 else \
                1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride()))
            spans.append((t.storage_offset(), t.storage_offset() + extent))
        total += _union_length(spans)
    return total, by_storage


def _unique_params(params: Sequence[torch.Tensor]) -> int:
    return _unique_elements(list({id(p): p for p in params}.values()))[0]


def _parameters(model: torch.nn.Module) -> Parameters:
    named = list(model.named_parameters(remove_duplicate=False))
    names_by_id: dict[int, list[str]] = defaultdict(list)
    unique: dict[int, torch.Tensor] = {}
    for name, p in named:
        names_by_id[id(p)].append(name)
        unique[id(p)] = p
    distinct = list(unique.values())
    total, by_storage = _unique_elements(distinct)
    trainable = _unique_elements([t for t in distinct if t.requires_grad])[0]
    tied = []
    for idx in by_storage.values():
        names = [n for i in idx for n in names_by_id[id(distinct[i])]]
        if len(names) > 1:
            tied.append(tuple(names))
    by_dtype = _unique_bytes_by_dtype(distinct)
    buffers = list({id(b): b for _, b in model.named_buffers(remove_duplicate=False)}.values())
    return Parameters(total, trainable, total - trainable, _unique_elements(buffers)[0],
                      sum(by_dtype.values()), sum(_unique_bytes_by_dtype(buffers).values()),
                      by_dtype, tuple(tied), sum(p.numel() for _, p in named))


def _unique_bytes_by_dtype(group: Sequence[torch.Tensor]) -> dict[str, int]:
    """Bytes of the unique storage the tensors of ``group`` reach, per dtype."""
    out: dict[str, int] = {}
    for dtype in sorted({t.dtype for t in group}, key=str):
        same = [t for t in group if t.dtype == dtype]
        out[_dtype_name(dtype)] = _unique_elements(same)[0] * same[0].element_size()
    return out


# -- counting ---------------------------------------------------------------------------------
class _Tally:
    """The consumer of the dispatch layer's events: counts per (module, pass), op calls,
    uncounted ops and storage lifetimes."""

    def __init__(self, excluded_storages: set[int]) -> None:
        self.forward: dict[str, Count] = defaultdict(Count)
        self.backward: dict[str, Count] = defaultdict(Count)
        self.ops: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.unknown_shapes: dict[str, list[tuple[int, ...]]] = defaultdict(list)
        self.unknown_floating: dict[str, bool] = defaultdict(bool)
        self.excluded = excluded_storages
        self.step = 0
        self.born: dict[int, tuple[int, int]] = {}     # storage -> (step, bytes)
        self.last_use: dict[int, int] = {}

    def record(self, e: OpEvent) -> None:
        namespace = e.func.namespace
        if namespace == "prim":
            return
        qual = e.name
        self.ops[qual] += 1
        count = (aten_ops.count_op(e.func, e.args, e.kwargs, e.outputs)
                 if namespace == "aten" else None)
        backward = e.phase == "backward"
        if count is None:
            self.unknown[qual] += 1
            outs = tensors(e.outputs)
            shapes = self.unknown_shapes[qual]
            for t in outs:
                if len(shapes) < _MAX_SHAPES_KEPT and tuple(t.shape) not in shapes:
                    shapes.append(tuple(int(s) for s in t.shape))
            if any(t.is_floating_point() or t.is_complex() for t in outs):
                self.unknown_floating[qual] = True
        elif count:
            table = self.backward if backward else self.forward
            table[e.module] = table[e.module] + count
        if not backward:
            self._lifetimes(e.args, e.kwargs, e.outputs)

    def _lifetimes(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any) -> None:
        self.step += 1
        for t in tensors((args, kwargs)):
            key = _storage_key(t)
            if key in self.born:
                self.last_use[key] = self.step
        for t in tensors(out):
            key = _storage_key(t)
            if key in self.excluded:
                continue
            if key not in self.born:
                self.born[key] = (self.step, t.untyped_storage().nbytes())
            self.last_use[key] = self.step

    def peak_live_bytes(self, keep: set[int]) -> int:
        """The most intermediate storage alive at once, if each is freed right after its last
        use (storages in ``keep``, the model's outputs, live to the end)."""
        delta: dict[int, int] = defaultdict(int)
        for key, (born, nbytes) in self.born.items():
            delta[born] += nbytes
            if key not in keep:
                delta[self.last_use.get(key, born) + 1] -= nbytes
        live = peak = 0
        for step in sorted(delta):
            live += delta[step]
            peak = max(peak, live)
        return peak


def _decompose(func: Any) -> bool:
    """Composite aten ops without a formula are decomposed so that their pieces are counted
    (inference_mode dispatches composites such as linear whole)."""
    return bool(func.namespace == "aten" and not aten_ops.is_known(func.overloadpacket.__name__))


@contextlib.contextmanager
def _grad_mode(mode: str) -> Iterator[None]:
    if mode == "grad":
        with torch.enable_grad():
            yield
    elif mode == "no_grad":
        with torch.no_grad():
            yield
    else:
        with torch.inference_mode():
            yield


def _check(model: Any, inputs: Sequence[Any], backward: bool, grad_mode: str) -> None:
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if grad_mode not in GRAD_MODES:
        raise ValueError(f"grad_mode must be one of {', '.join(GRAD_MODES)}, got {grad_mode!r}")
    if backward and grad_mode != "grad":
        raise ValueError(f"backward=True needs grad_mode='grad', got {grad_mode!r}")
    if not tensors(list(inputs)):
        raise ValueError("give the model's inputs: at least one tensor (use device='meta' "
                         "tensors to analyse without allocating)")


def analyze(model: Any, *inputs: Any, backward: bool = False, grad_mode: str = "grad",
            kwargs: Mapping[str, Any] | None = None) -> ModelAnalysis:
    """Count the FLOPs, MACs and bytes of ``model(*inputs, **kwargs)``, per module, with its
    parameters, a memory estimate and the coverage of the count.

    Parameters
    ----------
    model : torch.nn.Module
        Analysed as it is (train or eval mode, its device and dtype). Build it on
        ``device="meta"`` to analyse a large model without allocating its weights.
    *inputs : tensors (or nested lists/tuples/dicts of them)
        Passed to the model; meta tensors work.
    backward : bool
        Also run and count the backward pass: the gradients of every output (each seeded
        with ones) with respect to the trainable parameters, from the real autograd ops.
        ``.grad`` of the parameters is not touched.
    grad_mode : {"grad", "no_grad", "inference_mode"}
        The autograd mode of the forward. Counts are the same in all three; "grad" also
        measures the activations saved for backward (the training memory estimate).
    kwargs : mapping, optional
        Keyword arguments of the model.

    Returns
    -------
    ModelAnalysis

    Raises
    ------
    TypeError
        ``model`` is not an ``nn.Module``.
    ValueError
        No input tensor, an unknown ``grad_mode``, or ``backward`` without grad.
    """
    _check(model, inputs, backward, grad_mode)
    kwargs = dict(kwargs or {})
    params = _parameters(model)
    param_storages = {_storage_key(p) for p in model.parameters()}
    param_storages |= {_storage_key(b) for b in model.buffers()}
    input_tensors = tensors((list(inputs), kwargs))
    input_storages = {_storage_key(t) for t in input_tensors}
    tally = _Tally(param_storages | input_storages)
    dispatcher = Dispatcher(model, tally.record, decompose=_decompose)
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = _storage_key(t)
        if key not in param_storages and key not in input_storages:
            saved.setdefault(key, t.untyped_storage().nbytes())
        return t

    saving = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t) \
        if grad_mode == "grad" else contextlib.nullcontext()
    with _grad_mode(grad_mode), saving:
        output = dispatcher.forward(*inputs, **kwargs)
    outputs = tensors(output)
    peak = tally.peak_live_bytes({_storage_key(t) for t in outputs})
    notes: list[str] = []
    backward_count: Count | None = None
    if backward:
        backward_count = _run_backward(dispatcher, outputs, tally, notes)
    rows = _rows(model, dispatcher.modules, tally)
    forward_total = sum(tally.forward.values(), Count())
    # One gradient per unique trainable element (tied weights share theirs).
    trainable_bytes = sum(_unique_bytes_by_dtype(
        [p for p in model.parameters() if p.requires_grad]).values())
    memory = MemoryEstimate(params.bytes, params.buffer_bytes, trainable_bytes,
                            sum(saved.values()) if grad_mode == "grad" and saved else None,
                            peak, sum(t.numel() * t.element_size() for t in input_tensors))
    uncounted = tuple(UncountedOp(n, c, tuple(tally.unknown_shapes[n]), tally.unknown_floating[n])
                      for n, c in sorted(tally.unknown.items()))
    devices = sorted({str(t.device) for t in input_tensors})
    return ModelAnalysis(
        model=type(model).__name__,
        inputs=tuple((tuple(int(s) for s in t.shape), _dtype_name(t.dtype)) for t in input_tensors),
        device=",".join(devices), grad_mode=grad_mode, forward=forward_total,
        backward=backward_count, parameters=params, memory=memory, modules=rows,
        coverage=Coverage(dict(sorted(tally.ops.items())), uncounted), notes=tuple(notes))


def _run_backward(dispatcher: Dispatcher, outputs: list[torch.Tensor], tally: _Tally,
                  notes: list[str]) -> Count:
    """Gradients of the outputs (seeded with ones) with respect to the trainable parameters,
    counted; torch.autograd.grad leaves every ``.grad`` as it was."""
    params = [p for p in {id(p): p for p in dispatcher.model.parameters()}.values()
              if p.requires_grad]
    roots = [t for t in outputs if t.requires_grad and (t.is_floating_point() or t.is_complex())]
    if not roots or not params:
        notes.append("backward not counted: " + ("no output requires grad" if not roots
                                                 else "no trainable parameters"))
        return Count()
    seeds = [torch.ones_like(t) for t in roots]
    with dispatcher.recording():
        torch.autograd.grad(roots, params, seeds, allow_unused=True)
    return sum(tally.backward.values(), Count())


def _rows(model: torch.nn.Module, modules: Modules, tally: _Tally) -> tuple[ModuleRow, ...]:
    """One row per module in the model's order (plus any built during the forward), counts
    summed over each module's subtree."""
    paths = list(modules.types)
    fwd: dict[str, Count] = defaultdict(Count)
    bwd: dict[str, Count] = defaultdict(Count)
    for own, table in ((fwd, tally.forward), (bwd, tally.backward)):
        for path, c in table.items():
            parts = path.split(".") if path else []
            for i in range(len(parts) + 1):
                key = ".".join(parts[:i])
                own[key] = own[key] + c
    named = dict(model.named_modules())
    rows = []
    for path in paths:
        m = named.get(path)
        params = _unique_params(list(m.parameters())) if m is not None else 0
        rows.append(ModuleRow(path, modules.types[path], modules.calls.get(path, 0),
                              modules.inputs.get(path, ()), modules.outputs.get(path, ()),
                              params, fwd.get(path, Count()), bwd.get(path, Count())))
    return tuple(rows)


