"""The memory of single calls of a callable: each tracked call in its own region after
warmup, summarised as CallMemory (medians and maxima per call) with its report lines and
dict round trip. The tracking itself is :mod:`.tracker`'s.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .._checks import check_int
from ..report.lines import TextLines, brief_repr
from ..stats.robust import median_mad
from ..units import format_bytes
from .tracker import track
from .usage import MemoryUsage

__all__ = ["CallMemory", "call_memory"]


def _all_or_none(values: Sequence[int | None]) -> tuple[int, ...] | None:
    """The values, or None when any is missing (a figure is reported for all calls or none)."""
    present = tuple(v for v in values if v is not None)
    return present if len(present) == len(values) else None


def _int_tuple(name: str, values: Any) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    return tuple(check_int(name, v) for v in values)


@dataclass(frozen=True)
class CallMemory(TextLines):
    """The memory of single calls of a callable, each tracked on its own after warmup.

    Attributes
    ----------
    peak_increase_bytes : tuple of int
        Per tracked call: peak RSS during the call minus RSS before it, in bytes. Memory
        the allocator kept from earlier calls is reused without new RSS and is not counted.
    python_peak_bytes : tuple of int or None
        Per tracked call: the Python-heap peak above its value before the call
        (tracemalloc), in bytes; None when not traced.
    cuda_peak_bytes : tuple of int or None
        Per tracked call: torch's CUDA peak allocated, in bytes; None without CUDA.
    method : str
        How the RSS peak was read (see ``MemoryUsage.method``).
    exact : bool
        False when the RSS peaks are sampled lower bounds.
    warmup_calls : int
        Untracked calls made first (to fill caches and lazy state).
    """

    peak_increase_bytes: tuple[int, ...]
    python_peak_bytes: tuple[int, ...] | None
    cuda_peak_bytes: tuple[int, ...] | None
    method: str
    exact: bool
    warmup_calls: int

    def __post_init__(self) -> None:
        peaks = _int_tuple("peak_increase_bytes", self.peak_increase_bytes)
        if not peaks:
            raise ValueError("CallMemory needs at least one tracked call")
        object.__setattr__(self, "peak_increase_bytes", peaks)
        for name in ("python_peak_bytes", "cuda_peak_bytes"):
            values = getattr(self, name)
            if values is None:
                continue
            values = _int_tuple(name, values)
            if len(values) != len(peaks):
                raise ValueError(f"{name} has {len(values)} values for {len(peaks)} "
                                 "tracked calls")
            object.__setattr__(self, name, values)
        check_int("warmup_calls", self.warmup_calls, 0)

    @property
    def calls(self) -> int:
        """Number of tracked calls."""
        return len(self.peak_increase_bytes)

    @property
    def median_peak_increase_bytes(self) -> float:
        """Median over the tracked calls of the peak RSS increase, in bytes."""
        return median_mad(self.peak_increase_bytes)[0]

    @property
    def max_peak_increase_bytes(self) -> int:
        """Largest peak RSS increase of a tracked call, in bytes."""
        return max(self.peak_increase_bytes)

    @property
    def median_python_peak_bytes(self) -> float | None:
        """Median Python-heap peak per call in bytes, or None."""
        return None if self.python_peak_bytes is None else median_mad(self.python_peak_bytes)[0]

    @property
    def max_python_peak_bytes(self) -> int | None:
        """Largest Python-heap peak of a tracked call in bytes, or None."""
        return None if self.python_peak_bytes is None else max(self.python_peak_bytes)

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.calls} calls: peak RSS "
                                f"{format_bytes(self.median_peak_increase_bytes, sign=True)} "
                                f"median, {format_bytes(self.max_peak_increase_bytes, sign=True)} max")

    def lines(self) -> list[str]:
        """The report lines: RSS peak per call, Python heap peak, CUDA peak."""
        out = [f"  memory per call (median of {self.calls} tracked calls after "
               f"{self.warmup_calls} warmup, {self.method}): peak RSS "
               f"{format_bytes(self.median_peak_increase_bytes, sign=True)}, max "
               f"{format_bytes(self.max_peak_increase_bytes, sign=True)}"]
        if self.python_peak_bytes is not None:
            out.append(f"    Python heap peak (tracemalloc): "
                       f"{format_bytes(median_mad(self.python_peak_bytes)[0])}, max "
                       f"{format_bytes(max(self.python_peak_bytes))}")
        if self.cuda_peak_bytes is not None:
            cuda_median = median_mad(self.cuda_peak_bytes)[0]
            out.append(f"    CUDA peak allocated: {format_bytes(cuda_median)}, "
                       f"max {format_bytes(max(self.cuda_peak_bytes))}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``CallMemory.from_dict`` restores it exactly."""
        return {
            "peak_increase_bytes": list(self.peak_increase_bytes),
            "python_peak_bytes": None if self.python_peak_bytes is None
            else list(self.python_peak_bytes),
            "cuda_peak_bytes": None if self.cuda_peak_bytes is None else list(self.cuda_peak_bytes),
            "method": self.method,
            "exact": self.exact,
            "warmup_calls": self.warmup_calls,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallMemory:
        """Rebuild from ``to_dict`` output.

        Raises
        ------
        ValueError
            A required key is missing, no calls, or the per-call lists differ in length.
        TypeError
            A value is not a list of ints.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"CallMemory data must be an object, got {type(data).__name__}")
        missing = [k for k in ("peak_increase_bytes", "method") if k not in data]
        if missing:
            raise ValueError(f"CallMemory data lacks {', '.join(missing)}")
        py, cuda = data.get("python_peak_bytes"), data.get("cuda_peak_bytes")
        return cls(
            peak_increase_bytes=_int_tuple("peak_increase_bytes", data["peak_increase_bytes"]),
            python_peak_bytes=None if py is None else _int_tuple("python_peak_bytes", py),
            cuda_peak_bytes=None if cuda is None else _int_tuple("cuda_peak_bytes", cuda),
            method=str(data["method"]),
            exact=bool(data.get("exact", True)),
            warmup_calls=check_int("warmup_calls", data.get("warmup_calls", 0), 0),
        )


def call_memory(fn: Callable[..., Any], args: Sequence[Any] = (),
                kwargs: Mapping[str, Any] | None = None, *, calls: int = 3, warmup: int = 1,
                python_heap: bool = True, method: str = "auto") -> CallMemory:
    """Track ``fn(*args, **kwargs)`` call by call: ``warmup`` untracked calls, then ``calls``
    calls each in its own :func:`track` region.

    A full garbage collection runs before each tracked call (outside its region), so garbage
    of the previous call is not freed inside the next one.

    Parameters
    ----------
    fn : callable
    args : sequence, optional
    kwargs : mapping, optional
        Arguments of every call.
    calls : int
        Tracked calls (>= 1).
    warmup : int
        Untracked calls first (>= 0).
    python_heap, method
        As for :func:`track`.

    Returns
    -------
    CallMemory

    Raises
    ------
    TypeError
        ``fn`` is not callable, or a count or flag has the wrong type.
    ValueError
        ``calls`` < 1, ``warmup`` < 0, or an unknown ``method``.
    Exception
        Whatever ``fn`` raises propagates unchanged.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    calls = check_int("calls", calls, 1)
    warmup = check_int("warmup", warmup, 0)
    track(python_heap=python_heap, method=method)  # validates before any call
    arguments = tuple(args)
    keywords = dict(kwargs or {})
    for _ in range(warmup):
        fn(*arguments, **keywords)
    usages: list[MemoryUsage] = []
    for _ in range(calls):
        gc.collect()
        with track(python_heap=python_heap, method=method) as tracker:
            fn(*arguments, **keywords)
        usages.append(tracker.result)
    return CallMemory(
        peak_increase_bytes=tuple(u.peak_increase_bytes for u in usages),
        python_peak_bytes=_all_or_none([u.python_peak_bytes for u in usages]),
        cuda_peak_bytes=_all_or_none([u.cuda_peak_bytes for u in usages]),
        method=usages[-1].method,
        exact=all(u.exact for u in usages),
        warmup_calls=warmup,
    )
