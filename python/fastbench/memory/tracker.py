"""Tracking the memory of a region: ``with fastbench.memory.track() as m:``, labelled
snapshots inside it, and the process-wide stack that keeps nested trackers (and trackers of
several threads) right although the kernel's peak is reset for each. Reads through
:mod:`.readings`, returns :class:`.usage.MemoryUsage`; never prints.
"""

from __future__ import annotations

import math
import threading
import time
import tracemalloc
from types import TracebackType
from typing import Any

from .._checks import check_bool
from . import readings
from .usage import MemoryUsage, Snapshot, make_snapshot

__all__ = ["DEFAULT_INTERVAL_S", "METHODS", "METHOD_EXACT", "RESERVED_LABELS", "MemoryTracker",
           "track"]

METHOD_EXACT = "VmHWM after clear_refs"
METHODS = ("auto", "clear_refs", "sampling")
DEFAULT_INTERVAL_S = 1e-3
# Labels the tracker gives its first and last snapshots.
RESERVED_LABELS = ("start", "end")


# Trackers whose region is running, oldest first. The peak reset is process-wide, so every
# tracker must hear about the others: see MemoryTracker.
_ACTIVE: list[MemoryTracker] = []
_LOCK = threading.RLock()


def _check_label(label: Any) -> str:
    if not isinstance(label, str):
        raise TypeError(f"snapshot label must be a str, got {type(label).__name__}")
    if not label.strip():
        raise ValueError("snapshot label must not be empty or blank")
    if not label.isprintable():
        raise ValueError(f"snapshot label must be one printable line, got {label!r}")
    if label in RESERVED_LABELS:
        raise ValueError(f"snapshot label {label!r} is reserved for the timeline's own "
                         f"{' and '.join(RESERVED_LABELS)} snapshots; choose another")
    return label


class MemoryTracker:
    """Measures one region: ``with fastbench.memory.track() as m: ...``, then ``m.result``.

    Created by :func:`track`. While the region runs, ``snapshot(label)`` records a point of
    the timeline; after it ends, the figures are read from ``result`` or the properties
    mirroring it. A tracker measures one region and cannot be entered again.

    Nesting and threads: the kernel's peak (and tracemalloc's and torch's peak statistics)
    are process-wide, so resetting them for an inner region would erase the outer region's
    peak. Running trackers are therefore kept on a process-wide stack, guarded by a lock:
    before a tracker resets the peaks it folds the peaks reached so far into every running
    tracker, and when it ends it passes its own peak to the trackers entered before it
    (whose regions contain its region). An outer tracker thus reports max(its own peak,
    every inner peak). Trackers in several threads are handled the same way; they all
    measure the whole process, not their thread.
    """

    def __init__(self, python_heap: bool, method: str, interval_s: float) -> None:
        self._python_heap = python_heap
        self._method_asked = method
        self._interval_s = interval_s
        self._state = "new"
        self._result: MemoryUsage | None = None
        self._snapshots: list[Snapshot] = []
        self._notes: list[str] = []
        self._exact = True
        self._sampler: readings.RssSampler | None = None
        self._owns_tracemalloc = False
        self._tracing = False
        self._py_entry = 0
        self._cuda: Any = None
        self._rss_floor = 0
        self._py_floor = 0
        self._cuda_floor = 0
        self._t0 = 0.0

    # -- the region ---------------------------------------------------------------------------
    def __enter__(self) -> MemoryTracker:
        with _LOCK:
            if self._state != "new":
                raise RuntimeError("this memory tracker has already measured a region (or is "
                                   "measuring one): create a new one with fastbench.memory.track()")
            for outer in _ACTIVE:  # before the resets below erase what they have seen
                outer._fold_peaks()
            try:
                self._start_rss()
                self._start_cuda()
                self._start_python()  # last: the start snapshot then reads a fresh peak
                self._t0 = time.perf_counter()
                self._snapshots.append(self._take("start"))
            except BaseException:
                self._release()
                raise
            self._state = "running"
            _ACTIVE.append(self)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with _LOCK:
            if self._state != "running":
                raise RuntimeError("memory tracker exited without being entered")
            index = _ACTIVE.index(self)
            try:
                end = self._take("end")
            finally:  # whatever happens, this tracker stops running
                del _ACTIVE[index]
                self._release()
                self._state = "done"
            self._snapshots.append(end)
            for outer in _ACTIVE[:index]:  # entered earlier, still running: they contain us
                outer._rss_floor = max(outer._rss_floor, end.peak_rss_bytes_so_far)
                if outer._tracing and self._tracing and end.python_peak_bytes is not None:
                    outer._py_floor = max(outer._py_floor, end.python_peak_bytes + self._py_entry)
                if outer._cuda is not None and self._cuda is not None:
                    outer._cuda_floor = max(outer._cuda_floor, self._cuda_peak())
            start = self._snapshots[0]
            self._result = MemoryUsage(
                rss_before_bytes=start.rss_bytes,
                rss_after_bytes=end.rss_bytes,
                peak_rss_bytes=end.peak_rss_bytes_so_far,
                python_peak_bytes=end.python_peak_bytes,
                cuda_peak_bytes=None if self._cuda is None else self._cuda_peak(),
                method=self._method_label(),
                exact=self._exact,
                elapsed_s=end.t_s,
                timeline=tuple(self._snapshots),
                notes=tuple(self._notes),
            )

    def snapshot(self, label: str) -> Snapshot:
        """Record the memory state now under ``label`` and return it.

        Parameters
        ----------
        label : str
            A non-empty, printable name; "start" and "end" are reserved. Repeating a label
            is allowed (a loop may snapshot each pass).

        Raises
        ------
        TypeError
            ``label`` is not a str.
        ValueError
            ``label`` is empty, blank, not printable or reserved.
        RuntimeError
            The region is not running (before ``with`` or after it).
        """
        label = _check_label(label)
        with _LOCK:
            if self._state != "running":
                when = "before" if self._state == "new" else "after"
                raise RuntimeError(f"snapshot({label!r}) called {when} the tracked region: "
                                   "call it inside `with fastbench.memory.track() as m:`")
            snap = self._take(label)
            self._snapshots.append(snap)
        return snap

    # -- set-up and readings -----------------------------------------------------------------
    def _start_rss(self) -> None:
        reason = "" if self._method_asked == "sampling" else readings.reset_peak()
        if reason and self._method_asked == "clear_refs":
            raise OSError(f"[track] cannot reset the peak RSS: {reason}; use method='auto' "
                          "to fall back to sampling")
        if self._method_asked == "sampling" or reason:
            if reason:
                self._notes.append(f"clear_refs unavailable ({reason}): the peak is sampled, "
                                   "a lower bound")
            self._exact = False
            self._sampler = readings.RssSampler(self._interval_s)

    def _start_python(self) -> None:
        if not self._python_heap:
            return
        if tracemalloc.is_tracing():
            tracemalloc.reset_peak()  # the outer trackers' peaks were folded above
        else:
            tracemalloc.start()
            self._owns_tracemalloc = True
        self._tracing = True

    def _start_cuda(self) -> None:
        self._cuda = readings.torch_cuda()
        if self._cuda is not None:
            self._cuda.reset_peak_memory_stats()
            self._cuda_floor = int(self._cuda.max_memory_allocated())

    def _release(self) -> None:
        """Stop the sampling thread and the tracing this tracker started."""
        if self._sampler is not None:
            self._sampler.stop()
            self._sampler = None
        if not self._owns_tracemalloc:
            return
        heirs = [t for t in _ACTIVE if t is not self and t._tracing]
        if heirs:  # trackers of other threads still rely on tracing: they stop it
            heirs[-1]._owns_tracemalloc = True
        elif tracemalloc.is_tracing():
            tracemalloc.stop()
        self._owns_tracemalloc = False

    def _rss_now(self) -> tuple[int, int]:
        """(RSS now, peak so far since this tracker's reset or sampling began), in bytes."""
        if self._sampler is not None:
            return self._sampler.read()
        return readings.read_status()

    def _python_now(self) -> tuple[int, int] | None:
        if not self._tracing:
            return None
        if not tracemalloc.is_tracing():
            note = "tracemalloc was stopped inside the region: no Python heap figures"
            if note not in self._notes:
                self._notes.append(note)
            return None
        return tracemalloc.get_traced_memory()

    def _cuda_peak(self) -> int:
        return max(self._cuda_floor, int(self._cuda.max_memory_allocated()))

    def _fold_peaks(self) -> None:
        """Keep the peaks seen so far: another tracker is about to reset the counters."""
        self._rss_floor = max(self._rss_floor, self._rss_now()[1])
        py = self._python_now()
        if py is not None:
            self._py_floor = max(self._py_floor, py[1])
        if self._cuda is not None:
            self._cuda_floor = self._cuda_peak()

    def _take(self, label: str) -> Snapshot:
        t_s = time.perf_counter() - self._t0
        py = self._python_now()  # first: reading /proc below allocates a little
        if py is not None and not self._snapshots:
            self._py_entry = self._py_floor = py[0]
        rss, peak = self._rss_now()
        self._rss_floor = max(self._rss_floor, peak, rss)
        py_current = py_peak = None
        if py is not None:
            self._py_floor = max(self._py_floor, py[1])
            py_current, py_peak = py[0] - self._py_entry, self._py_floor - self._py_entry
        cuda = None if self._cuda is None else int(self._cuda.memory_allocated())
        previous = self._snapshots[-1] if self._snapshots else None
        start = self._snapshots[0] if self._snapshots else None
        return make_snapshot(label, t_s if self._snapshots else 0.0, rss, self._rss_floor,
                         py_current, py_peak, cuda, previous, start)

    def _method_label(self) -> str:
        if self._exact:
            return METHOD_EXACT
        return f"sampled RSS every {self._interval_s * 1e3:g} ms (lower bound)"

    # -- results ------------------------------------------------------------------------------
    @property
    def result(self) -> MemoryUsage:
        """The region's figures.

        Raises
        ------
        RuntimeError
            The region has not ended yet (or never started).
        """
        if self._result is None and self._state == "done":
            raise RuntimeError("the tracked region ended without figures: reading the memory "
                               "state failed at its end")
        if self._result is None:
            when = "is still running" if self._state == "running" else "has not run yet"
            raise RuntimeError(f"the tracked region {when}: memory figures exist once the "
                               "`with fastbench.memory.track() as m:` block has ended")
        return self._result

    @property
    def rss_before_bytes(self) -> int:
        return self.result.rss_before_bytes

    @property
    def rss_after_bytes(self) -> int:
        return self.result.rss_after_bytes

    @property
    def peak_rss_bytes(self) -> int:
        return self.result.peak_rss_bytes

    @property
    def peak_increase_bytes(self) -> int:
        return self.result.peak_increase_bytes

    @property
    def python_peak_bytes(self) -> int | None:
        return self.result.python_peak_bytes

    @property
    def cuda_peak_bytes(self) -> int | None:
        return self.result.cuda_peak_bytes

    @property
    def method(self) -> str:
        return self.result.method

    @property
    def exact(self) -> bool:
        return self.result.exact

    @property
    def elapsed_s(self) -> float:
        return self.result.elapsed_s

    @property
    def timeline(self) -> tuple[Snapshot, ...]:
        return self.result.timeline

    @property
    def notes(self) -> tuple[str, ...]:
        return self.result.notes

    def lines(self) -> list[str]:
        """``MemoryUsage.lines`` of the result (RuntimeError while the region runs)."""
        return self.result.lines()

    def to_dict(self) -> dict[str, Any]:
        """``MemoryUsage.to_dict`` of the result (RuntimeError while the region runs)."""
        return self.result.to_dict()

    def __str__(self) -> str:
        if self._result is None:
            return f"<memory tracker: region {self._state}>"
        return str(self._result)

    def __repr__(self) -> str:
        return f"<MemoryTracker {self._state}>"


def track(*, python_heap: bool = True, method: str = "auto",
          interval_s: float = DEFAULT_INTERVAL_S) -> MemoryTracker:
    """Measure the memory of a region: ``with fastbench.memory.track() as m: ...``.

    On entry the kernel's peak resident set size is reset by writing "5" to
    /proc/self/clear_refs (proc(5), Linux >= 4.0); on exit VmHWM in /proc/self/status is
    the exact peak RSS of the region. The RSS is the whole process's, whichever thread
    allocated. The kernel sums its RSS counters in per-CPU batches, so a reading may lag
    the truth by a few hundred KiB.

    Where clear_refs cannot be written (not Linux, no permission, an older kernel) a
    background thread samples the RSS (psutil) every ``interval_s`` and the peak is the
    highest sample or the final reading: a lower bound, labelled so in ``method``, with
    the reason in ``notes``.

    Parameters
    ----------
    python_heap : bool
        Also trace the Python heap with tracemalloc (``python_peak_bytes``). The tracker
        starts tracemalloc and stops it on exit, unless it was already tracing: then it
        resets its peak and leaves it running. Tracing slows Python allocations down, and
        its bookkeeping (tens of bytes per live allocation) adds to the RSS of regions
        that keep many small objects alive.
    method : {"auto", "clear_refs", "sampling"}
        "auto" uses clear_refs and falls back to sampling; "clear_refs" raises OSError
        where it cannot be used; "sampling" always samples.
    interval_s : float
        Sampling interval in seconds for the fallback (default 1 ms).

    Returns
    -------
    MemoryTracker
        To be entered once. Torch's CUDA peak (``torch.cuda.max_memory_allocated``, reset
        on entry) is recorded only when torch is already imported and CUDA is available;
        torch is never imported here.

    Raises
    ------
    TypeError
        ``python_heap`` is not a bool, ``method`` not a str, ``interval_s`` not a number.
    ValueError
        An unknown ``method``, or ``interval_s`` not finite and in (0, 1] s.
    OSError
        On entry, with ``method="clear_refs"`` where the peak cannot be reset.
    """
    check_bool("python_heap", python_heap)
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, got {type(method).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)):
        raise TypeError(f"interval_s must be a number of seconds, got {type(interval_s).__name__}")
    if not (math.isfinite(interval_s) and 0.0 < interval_s <= 1.0):
        raise ValueError(f"interval_s must be in (0, 1] seconds, got {interval_s!r}")
    return MemoryTracker(python_heap, method, float(interval_s))
