"""The peak activation memory of one call of a PyTorch model, measured: every allocation and
free torch's allocators make during the call, read from the profiler's memory events
(``profile_memory``) and summed in time order; the top of that running sum is the most memory
the call held at once beyond what was allocated before it (its intermediates, the kernels'
workspaces and its output). No estimate here (the analyzer's is :mod:`.analyzer`'s) and no
RSS (that is :mod:`fastbench.memory`'s: after warmup the allocator reuses freed memory, so a
steady-state call adds no RSS however much it allocates).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

import torch

__all__ = ["METHOD", "ActivationPeak", "activation_peak", "peak_of"]

METHOD = "torch allocator events (profile_memory)"


@dataclass(frozen=True)
class ActivationPeak:
    """The most bytes one call held at once beyond what was allocated before it.

    Attributes
    ----------
    peak_bytes : int or None
        The peak, in bytes (None when it could not be measured, with ``reason``).
    method : str
        How it was read (:data:`METHOD`).
    events : int
        Allocation and free events seen in the call.
    reason : str
        Why there is no peak ("" when there is one).
    """

    peak_bytes: int | None
    method: str = METHOD
    events: int = 0
    reason: str = ""


def peak_of(changes: Iterable[tuple[int, int]]) -> int:
    """The top of the running sum of ``(time_ns, bytes)`` allocator changes (an allocation
    positive, a free negative) taken in time order, and 0 when it never rises above the
    start. At equal times the frees go first: the allocator had the memory back by then."""
    live = peak = 0
    for _, nbytes in sorted(changes, key=lambda c: (c[0], c[1])):
        live += nbytes
        peak = max(peak, live)
    return peak


def _profiler_running() -> bool:
    try:
        return bool(torch.autograd.profiler._is_profiler_enabled)
    except AttributeError:  # a torch without the flag: assume none is running
        return False


@contextlib.contextmanager
def _kineto_quiet() -> Iterator[None]:
    """The process's stderr (file descriptor 2) on /dev/null while torch's profiler starts
    or stops: its tracing library writes a line there each time ("USDT: ... profiler_start"),
    and no setting turns that off. Only those two moments are silenced, never the call: what
    another thread writes to stderr in them is lost."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def activation_peak(fn: Callable[..., Any], args: tuple[Any, ...] = (),
                    kwargs: Mapping[str, Any] | None = None, *, warmup: int = 1) -> ActivationPeak:
    """Measure the peak activation memory of ``fn(*args, **kwargs)``.

    ``warmup`` untracked calls come first (lazy state, packed weights, caches), then one call
    runs under torch's profiler with ``profile_memory=True``; its output is still held when
    the profiler stops, so it counts. Allocations are logical (a tensor's bytes as the
    allocator hands them out), on every device, so a CUDA model's figure is its device
    memory plus the little the host allocates.

    Returns
    -------
    ActivationPeak
        With ``peak_bytes`` None and the reason when another profiler is running or this
        torch's profiler gives no memory events.

    Raises
    ------
    Exception
        Whatever ``fn`` raises propagates unchanged.
    """
    keywords = dict(kwargs or {})
    for _ in range(warmup):
        fn(*args, **keywords)
    if _profiler_running():
        return ActivationPeak(None, reason="another torch profiler is running in this process")
    gc.collect()
    prof = torch.autograd.profiler.profile(profile_memory=True)
    with _kineto_quiet():
        prof.__enter__()
    try:
        out = fn(*args, **keywords)
    finally:
        with _kineto_quiet():
            prof.__exit__(None, None, None)
    del out
    try:
        events = [(int(e.start_ns()), int(e.nbytes())) for e in prof.kineto_results.events()
                  if e.name() == "[memory]"]
    except (AttributeError, RuntimeError) as e:  # the events' API moved or the run failed
        return ActivationPeak(None, reason=f"this torch's profiler gives no memory events "
                                           f"({type(e).__name__}: {e})")
    return ActivationPeak(peak_of(events), events=len(events))
