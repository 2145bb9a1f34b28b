"""What the benchmark suite (:mod:`fastbench.suite`) and the model card need to know of a
PyTorch model beside its analysis: the bytes of its parameters and buffers, of the weights it
keeps packed outside them (a quantized layer's) and of its saved ``state_dict``, its weights'
dtypes and devices, its FLOPs, MACs and estimated activation peak (the analyzer's), its
measured activation peak (:mod:`.activation_memory`'s), torch's intra-op threads, and the
inference mode a module's calls run under. Imports torch; the suite reaches it only when
torch is in use.
"""

from __future__ import annotations

import contextlib
import copy
import io
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import torch

from .activation_memory import ActivationPeak, activation_peak
from .analyzer import analyze

__all__ = ["ActivationPeak", "ModuleFacts", "activation_peak", "fresh_copy", "inference",
           "intra_op_threads", "is_module", "module_facts", "packed_bytes", "set_threads",
           "threads_now", "weights"]


@dataclass(frozen=True)
class ModuleFacts:
    """Sizes and counts of one module (None where they could not be had, with the reason in
    ``notes``). ``packed_bytes`` are the weights kept outside parameters and buffers
    (:func:`packed_bytes`); ``activation_estimate_bytes`` the analyzer's inference peak of
    one forward (intermediates and output, each freed after its last use)."""

    param_bytes: int
    buffer_bytes: int
    params: int
    serialized_bytes: int | None
    flops: int | None
    macs: int | None
    notes: tuple[str, ...]
    packed_bytes: int = 0
    activation_estimate_bytes: int | None = None


def is_module(obj: object) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module``."""
    return isinstance(obj, torch.nn.Module)


def weights(module: Any) -> list[tuple[str, str]]:
    """(dtype, device) of every parameter and floating buffer of ``module``; a dynamically
    quantized layer's packed weights are not parameters and do not show here."""
    out = [(str(p.dtype).removeprefix("torch."), str(p.device)) for p in module.parameters()]
    out += [(str(b.dtype).removeprefix("torch."), str(b.device)) for b in module.buffers()
            if b.is_floating_point()]
    return out


def _nbytes(tensors: Iterator[torch.Tensor]) -> int:
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if id(t) in seen:  # tied weights count once
            continue
        seen.add(id(t))
        total += t.numel() * t.element_size()
    return total


def _stored_bytes(t: torch.Tensor, packed_dtype: Any) -> int:
    """Bytes of ``t`` as its module stores it: a per-channel quantized tensor with its scales
    and zero points; a weight packed as float16 (``packed_dtype``) at 2 bytes an element,
    although unpacking hands it back as float32."""
    if t.is_quantized:
        extra = 0
        if t.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric,
                           torch.per_channel_affine_float_qparams):
            extra = sum(int(q.numel() * q.element_size())
                        for q in (t.q_per_channel_scales(), t.q_per_channel_zero_points()))
        return int(t.numel() * t.element_size()) + extra
    if isinstance(packed_dtype, torch.dtype) and t.is_floating_point():
        return int(t.numel() * packed_dtype.itemsize)
    return int(t.numel() * t.element_size())


def packed_bytes(module: Any) -> int:
    """Bytes of the tensors ``module.state_dict()`` holds beyond its parameters and buffers:
    what a quantized layer keeps packed (torch's dynamically quantized Linear keeps its int8
    weight and its bias in a packed object, not as parameters), with its scales. Each packed
    (weight, bias) pair is counted at the dtype it was packed in (the ``dtype`` entry beside
    it in the state_dict). 0 for a module without any."""
    own = {id(t) for t in (*module.parameters(), *module.buffers())}
    state = module.state_dict(keep_vars=True)
    seen: set[int] = set()
    total = 0
    for key, value in state.items():
        group = value if isinstance(value, (tuple, list)) else (value,)
        packed_dtype = (state.get(key.rsplit(".", 1)[0] + ".dtype")
                        if isinstance(value, (tuple, list)) else None)
        for i, t in enumerate(group):
            if not isinstance(t, torch.Tensor) or id(t) in own or id(t) in seen:
                continue
            seen.add(id(t))
            # The pair is (weight, bias): only the weight is packed at the narrower dtype.
            total += _stored_bytes(t, packed_dtype if i == 0 else None)
    return total


def fresh_copy(module: Any, share: float = 0.25) -> tuple[Any, str]:
    """A deep copy of ``module`` in fresh memory, or None and why it was not made.

    Identical modules whose weights lie in different places do not run at the same speed:
    the suite times each block of its rounds on fresh copies so that where one object
    happened to land is not counted as its variant's speed. Not copied: a compiled module
    (``torch.compile``: a copy would compile again), one whose parameters and buffers take
    more than ``share`` of the memory now available on their device, and one that cannot be
    deep-copied.
    """
    if type(module).__name__ == "OptimizedModule":
        return None, "a torch.compile module (a copy would compile again)"
    tensors = [*module.parameters(), *module.buffers()]
    size = _nbytes(iter(tensors))
    devices = {t.device for t in tensors}
    free: float | None = None
    if any(d.type == "cuda" for d in devices) and torch.cuda.is_available():
        free = float(min(torch.cuda.mem_get_info(d)[0] for d in devices if d.type == "cuda"))
    elif all(d.type == "cpu" for d in devices):
        import psutil
        free = float(psutil.virtual_memory().available)
    if free is not None and size > share * free:
        return None, (f"its weights ({size / 2**20:.0f} MiB) would take more than "
                      f"{share:.0%} of the memory available")
    try:
        return copy.deepcopy(module), ""
    except Exception as e:  # a module holding something that refuses to be copied
        return None, f"it cannot be deep-copied ({type(e).__name__}: {e})"


def module_facts(module: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], *,
                 count_flops: bool = True) -> ModuleFacts:
    """Bytes of parameters and buffers, of the weights packed outside them
    (:func:`packed_bytes`), the size of ``torch.save(module.state_dict())`` (what a
    deployment ships; packed quantized weights included) and, with ``count_flops``, the
    analyzer's FLOPs, MACs and activation peak of one forward on these arguments."""
    notes: list[str] = []
    param_bytes = _nbytes(iter(module.parameters()))
    buffer_bytes = _nbytes(iter(module.buffers()))
    try:
        packed = packed_bytes(module)
    except Exception as e:  # noqa: BLE001 - a size we cannot have is a note, not a failure
        packed = 0
        notes.append(f"packed weights not counted: the state_dict failed ({type(e).__name__}: "
                     f"{e})")
    params = sum(p.numel() for p in {id(p): p for p in module.parameters()}.values())
    serialized: int | None
    try:
        buffer = io.BytesIO()
        torch.save(module.state_dict(), buffer)
        serialized = buffer.tell()
    except Exception as e:  # noqa: BLE001 - a size we cannot have is a note, not a failure
        serialized = None
        notes.append(f"serialized size unknown: torch.save failed ({type(e).__name__}: {e})")
    flops: int | None = None
    macs: int | None = None
    estimate: int | None = None
    if not count_flops:
        return ModuleFacts(param_bytes, buffer_bytes, params, serialized, None, None, tuple(notes),
                           packed)
    try:
        with torch.no_grad():
            analysis = analyze(module, *args, grad_mode="no_grad", kwargs=dict(kwargs))
        flops, macs = int(analysis.flops), int(analysis.macs)
        estimate = int(analysis.memory.inference_peak_bytes)
        if not analysis.complete:
            names = sorted({f"aten.{u.name}" for u in analysis.coverage.uncounted if u.floating})
            notes.append(f"FLOPs are a floor: ops without a formula: {', '.join(names[:5])}"
                         + (" ..." if len(names) > 5 else ""))
    except Exception as e:  # noqa: BLE001 - the analyzer's limits become a note
        notes.append(f"FLOPs not counted: the analyzer failed ({type(e).__name__}: {e})")
    return ModuleFacts(param_bytes, buffer_bytes, params, serialized, flops, macs, tuple(notes),
                       packed, estimate)


def threads_now() -> int:
    """torch's intra-op threads now."""
    return int(torch.get_num_threads())


def set_threads(n: int) -> None:
    """Set torch's intra-op threads."""
    torch.set_num_threads(n)


@contextlib.contextmanager
def intra_op_threads(threads: int | None) -> Iterator[int]:
    """torch's intra-op threads set to ``threads`` (None: as they are), restored after."""
    before = torch.get_num_threads()
    if threads is not None and threads != before:
        torch.set_num_threads(threads)
    try:
        yield torch.get_num_threads()
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def inference(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` wrapped to run under ``torch.no_grad()``: a module's inference call."""
    def call(*args: Any, **kwargs: Any) -> Any:
        with torch.no_grad():
            return fn(*args, **kwargs)
    return call
