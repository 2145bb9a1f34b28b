"""Analyse a PyTorch model: the FLOP and byte counting consumer of :mod:`.dispatch`. Each
aten op the dispatch layer delivers, with its module and pass, is counted with ``aten_ops``;
beside the counts come parameters by storage, the tensors autograd saves, storage lifetimes
(the inference and training peaks) and the coverage of the count.

Owns the tallies and the assembly of the result; running the model and attributing ops to
modules is :mod:`.dispatch`'s, per-op arithmetic :mod:`.aten_ops`', the result type
:mod:`fastbench.analysis.model_analysis`'. Imports torch: the package loads it only when
``analyze`` is called.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from ..analysis.costs import Count
from ..analysis.model_analysis import (Coverage, MemoryEstimate, ModelAnalysis, ModuleRow,
                                       Parameters, UncountedOp)
from . import aten_ops
from .dispatch import Dispatcher, Modules, OpEvent, tensors

__all__ = ["analyze"]

GRAD_MODES = ("grad", "no_grad", "inference_mode")
_MAX_SHAPES_KEPT = 8


def _storage_key(t: torch.Tensor) -> int:
    """The address of ``t``'s storage: unique among the storages alive now, and only those
    (a freed storage's address goes to the next one allocated); see ``_Storages``."""
    return int(t.untyped_storage()._cdata)


class _Storages:
    """Keys for storages that stay unique for as long as this object lives.

    A storage's address alone does not do: once a storage is freed the allocator hands its
    address to a later one, which would then inherit the first one's birth and size (an
    inference peak below the model's own output, and a different answer on every call).
    Each storage keyed here is held by a weak reference, which keeps its small ``StorageImpl``
    record allocated (not its data, freed as usual), so no later storage can take its address.
    Tensors without a storage of their own (sparse, nested) have no key: lifetimes leave
    them out.
    """

    def __init__(self) -> None:
        self._held: dict[int, StorageWeakRef] = {}

    def key(self, t: torch.Tensor) -> int | None:
        if t.layout != torch.strided:
            return None
        try:
            storage = t.untyped_storage()
        except (NotImplementedError, RuntimeError):
            return None
        key = int(storage._cdata)
        if key not in self._held:
            self._held[key] = StorageWeakRef(storage)
        return key


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


# -- storage lifetimes ------------------------------------------------------------------------
@dataclass
class _Life:
    """One storage on the op timeline: the step of the op that made it, its size, and the
    last step (forward only, and any pass) that read or wrote it."""

    born: int
    nbytes: int
    last_forward: int
    last: int

    def use(self, step: int, backward: bool) -> None:
        self.last = step
        if not backward:
            self.last_forward = step


def _keys(storages: _Storages, group: Iterable[torch.Tensor]) -> set[int]:
    return {k for k in map(storages.key, group) if k is not None}


def _peak(spans: Iterable[tuple[int, int | None, int]]) -> int:
    """The most bytes alive at once over ``(born, freed, nbytes)`` spans: alive from step
    ``born`` up to, not including, step ``freed`` (None: to the end)."""
    delta: dict[int, int] = defaultdict(int)
    for born, freed, nbytes in spans:
        delta[born] += nbytes
        if freed is not None:
            delta[freed] -= nbytes
    live = peak = 0
    for step in sorted(delta):
        live += delta[step]
        peak = max(peak, live)
    return peak


# -- counting ---------------------------------------------------------------------------------
class _Tally:
    """The consumer of the dispatch layer's events: counts per (module, pass), op calls,
    uncounted ops and storage lifetimes.

    Each op is a step on one timeline, the forward's then the backward's. A storage is born
    at the op that first wrote it and, in the estimates, freed right after the last op that
    used it: what eager execution does once nothing else holds it.
    """

    def __init__(self, storages: _Storages, excluded_storages: set[int]) -> None:
        self.forward: dict[str, Count] = defaultdict(Count)
        self.backward: dict[str, Count] = defaultdict(Count)
        self.ops: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.unknown_shapes: dict[str, list[tuple[int, ...]]] = defaultdict(list)
        self.unknown_floating: dict[str, bool] = defaultdict(bool)
        self.storages = storages
        self.excluded = excluded_storages   # parameters, buffers, inputs: counted apart
        self.step = 0
        self.lives: dict[int, _Life] = {}
        self.forward_end = 0                # the forward's last step
        self.backward_run = False
        self.saved: dict[int, int] = {}      # storages autograd saved for backward -> bytes
        self.grads: set[int] = set()         # the parameters' gradients: counted apart

    def record(self, e: OpEvent) -> None:
        namespace = e.func.namespace
        if namespace == "prim":
            return
        qual = e.name
        self.ops[qual] += 1
        count = aten_ops.count_op(e.func, e.args, e.kwargs, e.outputs)
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
            parts = aten_ops.count_parts(e.func, e.args, e.kwargs, e.outputs)
            for sub, c in (parts or {}).items():
                if sub:  # to the submodule the unfused path would do it in
                    path = f"{e.module}.{sub}" if e.module else sub
                    table[path] = table[path] + c
                    count = Count(count.macs - c.macs,
                                  count.elementwise_flops - c.elementwise_flops,
                                  count.bytes_read, count.bytes_written)
            table[e.module] = table[e.module] + count
        self._lifetimes(e.args, e.kwargs, e.outputs, backward)

    def _lifetimes(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any,
                   backward: bool) -> None:
        self.step += 1
        for t in tensors((args, kwargs)):
            key = self.storages.key(t)
            life = None if key is None else self.lives.get(key)
            if life is not None:
                life.use(self.step, backward)
        for t in tensors(out):
            self._born(t, backward)

    def _born(self, t: torch.Tensor, backward: bool) -> None:
        key = self.storages.key(t)
        if key is None or key in self.excluded:
            return
        life = self.lives.get(key)
        if life is None:
            self.lives[key] = _Life(self.step, t.untyped_storage().nbytes(), self.step, self.step)
        else:
            life.use(self.step, backward)

    def save(self, t: torch.Tensor) -> None:
        """``t`` was saved for backward (autograd's pack hook)."""
        key = self.storages.key(t)
        if key is not None and key not in self.excluded:
            self.saved.setdefault(key, t.untyped_storage().nbytes())

    def end_forward(self) -> None:
        self.forward_end = self.step

    def begin_backward(self, seeds: Sequence[torch.Tensor]) -> None:
        """The outputs' gradients, made before the backward's first op."""
        self.backward_run = True
        self.step += 1
        for t in seeds:
            self._born(t, True)

    def end_backward(self, grads: Sequence[torch.Tensor | None]) -> None:
        """The parameters' gradients the backward returned."""
        self.grads |= {k for k in (self.storages.key(g) for g in grads if g is not None)
                       if k is not None}

    def inference_peak(self, keep: set[int]) -> int:
        """The most intermediate storage alive at once in the forward, each freed right after
        its last use in the forward (those in ``keep``, the model's outputs, live on)."""
        return _peak((life.born, None if key in keep else life.last_forward + 1, life.nbytes)
                     for key, life in self.lives.items() if life.born <= self.forward_end)

    def training_peak(self, keep: set[int], output_grad_bytes: int) -> int:
        """The most activation storage alive at once over the forward and backward of a
        training step: intermediates, saved tensors and the activations' gradients (not the
        parameters' gradients, counted apart).

        Saved tensors live until their last use in the backward, and at least until the
        backward starts; the outputs (``keep``) to the end. Without a recorded backward the
        step ends where the backward would start, with the outputs' gradients
        (``output_grad_bytes``) beside everything the forward left alive."""
        fe = self.forward_end
        spans = []
        for key, life in self.lives.items():
            if key in self.grads and life.born > fe:
                continue
            if key in keep:
                freed: int | None = None
            elif key in self.saved:
                freed = max(life.last + 1, fe + 2) if self.backward_run else None
            else:
                freed = life.last + 1
            spans.append((life.born, freed, life.nbytes))
        if not self.backward_run:
            spans.append((fe + 1, None, output_grad_bytes))
        # Saved tensors no op of the forward wrote (a constant the model keeps outside its
        # parameters and buffers) are held all along.
        spans += [(0, None, nbytes) for key, nbytes in self.saved.items() if key not in self.lives]
        return _peak(spans)


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


def _without_graph(t: torch.Tensor) -> torch.Tensor:
    """What the saved-tensor hook keeps of ``t``: its data without its autograd history.

    Kept whole, a tensor whose grad_fn is the node saving it (an op that saves its own
    output, such as relu) would make a cycle through C++ that the garbage collector cannot
    see, keeping every analysed graph and its activations alive. Autograd restores the
    grad_fn from its own record when it unpacks. The detach of a plain tensor is kept out
    of the op stream (it is ours, not the model's); a tensor subclass needs its own."""
    if t.grad_fn is None:
        return t
    if type(t) is not torch.Tensor:
        return t.detach()
    with torch._C._DisableTorchDispatch():
        return t.detach()


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
        ``.grad`` of the parameters is not touched. The training memory estimate then
        follows the backward's own tensors too.
    grad_mode : {"grad", "no_grad", "inference_mode"}
        The autograd mode of the forward. Counts and the inference peak are the same in all
        three; "grad" also measures the activations saved for backward (the training memory
        estimate).
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
    MetaDeviceUnsupported
        On the meta device, an op needs tensor values (``nonzero``, boolean-mask indexing,
        ``.item()``): the message names it; build the model and inputs on cpu instead.
    """
    _check(model, inputs, backward, grad_mode)
    kwargs = dict(kwargs or {})
    params = _parameters(model)
    storages = _Storages()
    input_tensors = tensors((list(inputs), kwargs))
    tally = _Tally(storages, _keys(storages, (*model.parameters(), *model.buffers(),
                                              *input_tensors)))
    dispatcher = Dispatcher(model, tally.record, decompose=_decompose)

    def pack(t: torch.Tensor) -> torch.Tensor:
        tally.save(t)
        return _without_graph(t)

    saving = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t) \
        if grad_mode == "grad" else contextlib.nullcontext()
    with _grad_mode(grad_mode), saving:
        output = dispatcher.forward(*inputs, **kwargs)
    tally.end_forward()
    outputs = tensors(output)
    keep = _keys(storages, outputs)
    roots = _roots(outputs)
    notes: list[str] = []
    backward_count: Count | None = None
    if backward:
        backward_count = _run_backward(dispatcher, roots, tally, notes)
    rows = _rows(model, dispatcher.modules, tally)
    forward_total = sum(tally.forward.values(), Count())
    # One gradient per unique trainable element (tied weights share theirs).
    trainable_bytes = sum(_unique_bytes_by_dtype(
        [p for p in model.parameters() if p.requires_grad]).values())
    # A training step exists where gradients were on and some output can carry one back.
    trains = grad_mode == "grad" and bool(roots)
    training_peak = tally.training_peak(keep, sum(t.numel() * t.element_size() for t in roots))
    memory = MemoryEstimate(params.bytes, params.buffer_bytes, trainable_bytes,
                            sum(tally.saved.values()) if trains else None,
                            tally.inference_peak(keep),
                            sum(t.numel() * t.element_size() for t in input_tensors),
                            training_peak if trains else None)
    uncounted = tuple(UncountedOp(n, c, tuple(tally.unknown_shapes[n]), tally.unknown_floating[n])
                      for n, c in sorted(tally.unknown.items()))
    devices = sorted({str(t.device) for t in input_tensors})
    return ModelAnalysis(
        model=type(model).__name__,
        inputs=tuple((tuple(int(s) for s in t.shape), _dtype_name(t.dtype)) for t in input_tensors),
        device=",".join(devices), grad_mode=grad_mode, forward=forward_total,
        backward=backward_count, parameters=params, memory=memory, modules=rows,
        coverage=Coverage(dict(sorted(tally.ops.items())), uncounted), notes=tuple(notes))


def _roots(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The outputs a backward starts from: those that require grad and can carry one."""
    return [t for t in outputs if t.requires_grad and (t.is_floating_point() or t.is_complex())]


def _run_backward(dispatcher: Dispatcher, roots: list[torch.Tensor], tally: _Tally,
                  notes: list[str]) -> Count:
    """Gradients of the outputs (seeded with ones) with respect to the trainable parameters,
    counted; torch.autograd.grad leaves every ``.grad`` as it was."""
    params = [p for p in {id(p): p for p in dispatcher.model.parameters()}.values()
              if p.requires_grad]
    if not roots or not params:
        notes.append("backward not counted: " + ("no output requires grad" if not roots
                                                 else "no trainable parameters"))
        return Count()
    seeds = [torch.ones_like(t) for t in roots]
    tally.begin_backward(seeds)
    with dispatcher.recording():
        grads = torch.autograd.grad(roots, params, seeds, allow_unused=True)
    tally.end_backward(grads)
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


