"""``@fastbench.profiled``: a decorator that times every call of any function and tracks its
peak memory, gathering the calls into one :class:`.call_profile.CallProfile` per function,
read (and printed) on demand. Framework-free; the statistics live in the result.

It is not ``fastbench.profile``: ``fastbench.profile(fn)`` already runs a PyTorch step
function 20 times and returns its op profile, so that name cannot also mean "decorate".
"""

from __future__ import annotations

import functools
import threading
from contextlib import nullcontext
from typing import Any, Callable, Generic, TypeVar, overload

from .. import _core
from .._checks import check_bool
from ..memory.tracker import MemoryTracker, track
from ..timing.clocks import resolve_clock
from .call_profile import CallProfile

__all__ = ["ProfiledFunction", "profiled"]

R = TypeVar("R")


class ProfiledFunction(Generic[R]):
    """A function wrapped by :func:`profiled`: called like it, and keeps what each call
    took. ``profile`` is the :class:`CallProfile` of the calls so far (``print(f.profile)``);
    ``reset()`` forgets them. Safe to call from several threads at once."""

    def __init__(self, fn: Callable[..., R], name: str, memory: bool, clock: str) -> None:
        functools.update_wrapper(self, fn)
        self.__wrapped__ = fn
        self._name = name
        self._memory = memory
        self._clock = clock
        self._lock = threading.Lock()
        self._times_ns: list[float] = []
        self._peaks: list[int] = []
        self._method = ""
        self._exact = True
        self._failed = 0

    def __call__(self, *args: Any, **kwargs: Any) -> R:
        tracker: MemoryTracker | None = track(python_heap=False) if self._memory else None
        try:
            # The tracker's own work (resetting the kernel's peak, reading it back) is done
            # outside the two clock reads: it is in no call's time.
            with tracker if tracker is not None else nullcontext():
                start = _core.read_start(self._clock)
                try:
                    result = self.__wrapped__(*args, **kwargs)
                finally:
                    elapsed_ns = _core.ticks_to_ns(self._clock,
                                                   _core.read_stop(self._clock) - start)
        except BaseException:
            with self._lock:
                self._failed += 1
            raise
        self._record(elapsed_ns, tracker)
        return result

    def _record(self, elapsed_ns: float, tracker: MemoryTracker | None) -> None:
        with self._lock:
            self._times_ns.append(float(elapsed_ns))
            if tracker is not None:
                usage = tracker.result
                self._peaks.append(usage.peak_increase_bytes)
                self._method = usage.method
                self._exact = self._exact and usage.exact

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        # Decorating a method: bind the instance, keep one profile for every instance.
        return self if obj is None else functools.partial(self, obj)

    @property
    def profile(self) -> CallProfile:
        """The calls so far, as a :class:`CallProfile` (a snapshot: later calls do not
        change it)."""
        with self._lock:
            return CallProfile(self._name, tuple(self._times_ns),
                               tuple(self._peaks) if self._memory else None,
                               self._method, self._exact, self._clock, self._failed)

    def reset(self) -> None:
        """Forget every call recorded so far."""
        with self._lock:
            self._times_ns.clear()
            self._peaks.clear()
            self._exact = True
            self._failed = 0

    def __repr__(self) -> str:
        return f"<profiled {self._name}: {len(self._times_ns)} calls>"


@overload
def profiled(fn: Callable[..., R], *, name: str | None = ..., memory: bool = ...,
             clock: str = ...) -> ProfiledFunction[R]: ...
@overload
def profiled(fn: None = ..., *, name: str | None = ..., memory: bool = ...,
             clock: str = ...) -> Callable[[Callable[..., R]], ProfiledFunction[R]]: ...


def profiled(fn: Callable[..., R] | None = None, *, name: str | None = None,
             memory: bool = True, clock: str = "auto"
             ) -> ProfiledFunction[R] | Callable[[Callable[..., R]], ProfiledFunction[R]]:
    """Time every call of a function and track its peak memory; read the calls on demand.

    ``@fastbench.profiled`` (or ``@fastbench.profiled(memory=False)``) wraps any function,
    PyTorch or not. Each call is timed on the native clock (as :class:`fastbench.Timer`
    reads it) and, with ``memory``, runs in its own :func:`fastbench.memory.track` region
    (the peak RSS above the RSS before the call; the Python heap is not traced, since
    tracemalloc would slow the calls down). ``f.profile`` is a :class:`CallProfile`: the
    median, p90 and p99 of the times and of the peaks with 95% distribution-free
    intervals; ``print(f.profile)`` prints them, ``f.reset()`` starts over. Calls that
    raise are counted and left out of the figures.

    Each call costs two clock reads (well under a microsecond) inside its time; tracking
    memory adds tens of microseconds per call outside it (writing ``/proc/self/clear_refs``
    and reading ``VmHWM``): pass ``memory=False`` for functions called millions of times.
    A single call's time includes whatever the machine did meanwhile; for a verdict on a
    short function use :func:`fastbench.measure`.

    Parameters
    ----------
    fn : callable, optional
        The function (the bare decorator form).
    name : str, optional
        What the report calls it; default the function's qualified name.
    memory : bool
        Track each call's peak memory (default True).
    clock : str
        As for :class:`fastbench.Timer` ("auto" picks the fenced TSC where it is usable).

    Returns
    -------
    ProfiledFunction, or a decorator making one when ``fn`` is omitted.

    Raises
    ------
    TypeError
        ``fn`` is not callable, ``name`` not a str or ``memory`` not a bool.
    ValueError
        An unknown clock.

    Examples
    --------
    >>> @fastbench.profiled                                  # doctest: +SKIP
    ... def step(n):
    ...     return sum(range(n))
    >>> for _ in range(50): step(10_000)                     # doctest: +SKIP
    >>> print(step.profile)                                  # doctest: +SKIP
    """
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    check_bool("memory", memory)
    resolved = resolve_clock(clock)

    def wrap(f: Callable[..., R]) -> ProfiledFunction[R]:
        if not callable(f):
            raise TypeError(f"profiled() decorates a function, got {type(f).__name__}")
        label = name if name is not None else getattr(f, "__qualname__", None) or repr(f)
        return ProfiledFunction(f, label, memory, resolved)

    return wrap if fn is None else wrap(fn)
