"""What a region of code costs in memory: its exact peak resident set size, the Python heap
peak, the CUDA peak, a labelled timeline, and the peak per call of a callable.

Owns the peak-RSS reset and readings (/proc/self/clear_refs and /proc/self/status, or a
sampling thread where those are missing), the stack of nested trackers and the result
types. It is no timer (``elapsed_s`` is a coarse wall-clock figure) and never prints; torch
is never imported here, only used when the caller already imported it.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import sys
import threading
import time
import tracemalloc
from dataclasses import dataclass, fields
from types import TracebackType
from typing import Any, Callable, Mapping, Sequence

import psutil

from .._checks import check_bool, check_int
from ..machine import format_bytes

__all__ = [
    "CallMemory",
    "MemoryTracker",
    "MemoryUsage",
    "Snapshot",
    "call_memory",
    "format_size",
    "track",
]

# proc(5): writing "5" to clear_refs resets the peak RSS (VmHWM) to the current RSS
# (Linux >= 4.0; older kernels answer EINVAL).
_CLEAR_REFS = "/proc/self/clear_refs"
_STATUS = "/proc/self/status"
METHOD_EXACT = "VmHWM after clear_refs"
METHODS = ("auto", "clear_refs", "sampling")
DEFAULT_INTERVAL_S = 1e-3
# Labels the tracker gives its first and last snapshots.
RESERVED_LABELS = ("start", "end")
_KIB = 1024

# Trackers whose region is running, oldest first. The peak reset is process-wide, so every
# tracker must hear about the others: see MemoryTracker.
_ACTIVE: list[MemoryTracker] = []
_LOCK = threading.RLock()


# -- formatting -------------------------------------------------------------------------------
def format_size(size_bytes: float, sign: bool = False) -> str:
    """Bytes in binary units for people: "100 MiB" when exact (as
    ``fastbench.sysinfo.format_bytes`` writes it), else one decimal ("99.6 MiB").

    Parameters
    ----------
    size_bytes : int or float
        A size or a difference of sizes, in bytes; negative values keep their sign.
    sign : bool
        Write "+" before positive values (for deltas).
    """
    if not math.isfinite(size_bytes):
        return f"{size_bytes} B"
    value = int(round(size_bytes))
    prefix = "-" if value < 0 else ("+" if sign and value > 0 else "")
    magnitude = abs(value)
    for unit, factor in (("GiB", _KIB**3), ("MiB", _KIB**2), ("KiB", _KIB)):
        if magnitude >= factor and magnitude % factor:
            return f"{prefix}{magnitude / factor:.1f} {unit}"
        if magnitude >= factor:
            break
    return prefix + format_bytes(magnitude)


def _columns(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str) -> list[str]:
    """Columns sized to their widest cell: the first left-aligned, the others right-aligned."""
    widths = [max(len(c) for c in col) for col in zip(headers, *rows)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) if i == 0 else c.rjust(w)
                 for i, (c, w) in enumerate(zip(cells, widths))]
        return indent + "  ".join(parts).rstrip()

    return [line(headers)] + [line(r) for r in rows]


def _optional(value: int | None, sign: bool = False) -> str:
    return "-" if value is None else format_size(value, sign)


# -- checks -----------------------------------------------------------------------------------
def _int(name: str, value: Any, minimum: int | None = None) -> int:
    return check_int(name, value, minimum)


def _optional_int(name: str, value: Any) -> int | None:
    return None if value is None else _int(name, value)


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


# -- results ----------------------------------------------------------------------------------
def _delta(now: int | None, then: int | None) -> int | None:
    return None if now is None or then is None else now - then


@dataclass(frozen=True)
class Snapshot:
    """The memory state at one labelled point of a tracked region.

    Attributes
    ----------
    label : str
        "start", "end", or the label given to ``MemoryTracker.snapshot``.
    t_s : float
        Seconds since the region started.
    rss_bytes : int
        Resident set size of the process, in bytes.
    peak_rss_bytes_so_far : int
        Highest RSS of the process since the region started, in bytes (a sampled lower
        bound when the tracker's ``exact`` is False).
    python_current_bytes, python_peak_bytes : int or None
        Python-heap bytes traced by tracemalloc: live now, and the highest so far, both
        counted from the value at the region's start (so "start" has 0 and 0). None when
        the Python heap is not tracked.
    cuda_allocated_bytes : int or None
        ``torch.cuda.memory_allocated()`` in bytes; None without torch or CUDA.
    rss_delta_bytes, python_delta_bytes, cuda_delta_bytes : int or None
        Change since the previous snapshot (0 for "start"), in bytes.
    rss_since_start_bytes, python_since_start_bytes, cuda_since_start_bytes : int or None
        Change since the "start" snapshot, in bytes. Each ``*_since_start_bytes`` is the sum
        of the ``*_delta_bytes`` up to and including this snapshot.
    """

    label: str
    t_s: float
    rss_bytes: int
    peak_rss_bytes_so_far: int
    python_current_bytes: int | None
    python_peak_bytes: int | None
    cuda_allocated_bytes: int | None
    rss_delta_bytes: int
    rss_since_start_bytes: int
    python_delta_bytes: int | None
    python_since_start_bytes: int | None
    cuda_delta_bytes: int | None
    cuda_since_start_bytes: int | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (deltas included for readers; ``from_dict`` recomputes them)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


_RAW_SNAPSHOT_KEYS = ("label", "t_s", "rss_bytes", "peak_rss_bytes_so_far",
                      "python_current_bytes", "python_peak_bytes", "cuda_allocated_bytes")


def _snapshot(label: str, t_s: float, rss: int, peak: int, py_current: int | None,
              py_peak: int | None, cuda: int | None, previous: Snapshot | None,
              start: Snapshot | None) -> Snapshot:
    """A Snapshot with its deltas from ``previous`` and ``start`` (itself when both are None)."""
    prev_rss, prev_py, prev_cuda = ((rss, py_current, cuda) if previous is None else
                                    (previous.rss_bytes, previous.python_current_bytes,
                                     previous.cuda_allocated_bytes))
    start_rss, start_py, start_cuda = ((rss, py_current, cuda) if start is None else
                                       (start.rss_bytes, start.python_current_bytes,
                                        start.cuda_allocated_bytes))
    return Snapshot(
        label=label, t_s=t_s, rss_bytes=rss, peak_rss_bytes_so_far=peak,
        python_current_bytes=py_current, python_peak_bytes=py_peak, cuda_allocated_bytes=cuda,
        rss_delta_bytes=rss - prev_rss, rss_since_start_bytes=rss - start_rss,
        python_delta_bytes=_delta(py_current, prev_py),
        python_since_start_bytes=_delta(py_current, start_py),
        cuda_delta_bytes=_delta(cuda, prev_cuda), cuda_since_start_bytes=_delta(cuda, start_cuda),
    )


def _timeline_from_dicts(items: Any) -> tuple[Snapshot, ...]:
    if not isinstance(items, (list, tuple)) or len(items) < 2:
        raise ValueError("a memory timeline needs at least its start and end snapshots")
    out: list[Snapshot] = []
    for item in items:
        if not isinstance(item, Mapping):
            raise TypeError(f"a snapshot must be an object, got {type(item).__name__}")
        missing = [k for k in _RAW_SNAPSHOT_KEYS if k not in item]
        if missing:
            raise ValueError(f"snapshot data lacks {', '.join(missing)}")
        out.append(_snapshot(
            str(item["label"]), float(item["t_s"]), _int("rss_bytes", item["rss_bytes"]),
            _int("peak_rss_bytes_so_far", item["peak_rss_bytes_so_far"]),
            _optional_int("python_current_bytes", item["python_current_bytes"]),
            _optional_int("python_peak_bytes", item["python_peak_bytes"]),
            _optional_int("cuda_allocated_bytes", item["cuda_allocated_bytes"]),
            out[-1] if out else None, out[0] if out else None,
        ))
    return tuple(out)


@dataclass(frozen=True)
class MemoryUsage:
    """The memory cost of one tracked region.

    Attributes
    ----------
    rss_before_bytes, rss_after_bytes : int
        Resident set size of the process at the region's start and end, in bytes.
    peak_rss_bytes : int
        Highest RSS of the process during the region, in bytes: exact (the kernel's VmHWM)
        when ``exact``, else the highest of the samples, a lower bound.
    python_peak_bytes : int or None
        Highest Python-heap use during the region above its value at the start, in bytes,
        as tracemalloc traces it: only allocations made through Python's allocators
        (objects, bytearrays, and numpy arrays, which numpy reports to tracemalloc); not
        native libraries' own ``malloc``. None when not tracked.
    cuda_peak_bytes : int or None
        ``torch.cuda.max_memory_allocated()`` over the region (its peak statistic is reset
        at the start), in bytes: memory already allocated before counts. None when torch
        was not imported or CUDA is not available.
    method : str
        "VmHWM after clear_refs", or "sampled RSS every 1 ms (lower bound)".
    exact : bool
        False when the peak is a sampled lower bound.
    elapsed_s : float
        Duration of the region in seconds.
    timeline : tuple of Snapshot
        "start", the labelled snapshots in the order taken, "end".
    notes : tuple of str
        Why the fallback was used, or why a figure is missing.
    """

    rss_before_bytes: int
    rss_after_bytes: int
    peak_rss_bytes: int
    python_peak_bytes: int | None
    cuda_peak_bytes: int | None
    method: str
    exact: bool
    elapsed_s: float
    timeline: tuple[Snapshot, ...]
    notes: tuple[str, ...] = ()

    @property
    def peak_increase_bytes(self) -> int:
        """Peak RSS minus RSS at the start, in bytes: the memory the region needed from the
        operating system at its worst (memory the allocator already held is reused and not
        counted)."""
        return self.peak_rss_bytes - self.rss_before_bytes

    def lines(self) -> list[str]:
        """A summary line per figure, then the timeline table."""
        out = [
            f"peak RSS {format_size(self.peak_rss_bytes)}: "
            f"{format_size(self.peak_increase_bytes, sign=True)} over "
            f"{format_size(self.rss_before_bytes)} at the start, "
            f"{format_size(self.rss_after_bytes)} at the end "
            f"({self.method}; {self.elapsed_s:.3f} s)",
        ]
        if self.python_peak_bytes is not None:
            out.append(f"  Python heap peak (tracemalloc, Python allocators only): "
                       f"{format_size(self.python_peak_bytes, sign=True)}")
        if self.cuda_peak_bytes is not None:
            out.append(f"  CUDA peak allocated (torch): {format_size(self.cuda_peak_bytes)}")
        rows = [[s.label, f"{s.t_s * 1e3:.1f} ms", format_size(s.rss_bytes),
                 format_size(s.rss_delta_bytes, sign=True),
                 format_size(s.rss_since_start_bytes, sign=True),
                 format_size(s.peak_rss_bytes_so_far),
                 _optional(s.python_current_bytes, sign=True),
                 _optional(s.python_peak_bytes, sign=True),
                 _optional(s.cuda_allocated_bytes)]
                for s in self.timeline]
        out += _columns(["label", "t", "RSS", "Δ prev", "Δ start", "peak so far",
                         "Python now", "Python peak", "CUDA"], rows, "  ")
        out += [f"  note: {n}" for n in self.notes]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``MemoryUsage.from_dict`` restores it."""
        return {
            "rss_before_bytes": self.rss_before_bytes,
            "rss_after_bytes": self.rss_after_bytes,
            "peak_rss_bytes": self.peak_rss_bytes,
            "peak_increase_bytes": self.peak_increase_bytes,
            "python_peak_bytes": self.python_peak_bytes,
            "cuda_peak_bytes": self.cuda_peak_bytes,
            "method": self.method,
            "exact": self.exact,
            "elapsed_s": self.elapsed_s,
            "timeline": [s.to_dict() for s in self.timeline],
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryUsage:
        """Rebuild from ``to_dict`` output.

        Raises
        ------
        ValueError
            A required key is missing or the timeline lacks its start and end.
        TypeError
            A byte count is not an int.
        """
        required = ("rss_before_bytes", "rss_after_bytes", "peak_rss_bytes", "method",
                    "exact", "elapsed_s", "timeline")
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"MemoryUsage data lacks {', '.join(missing)}")
        return cls(
            rss_before_bytes=_int("rss_before_bytes", data["rss_before_bytes"]),
            rss_after_bytes=_int("rss_after_bytes", data["rss_after_bytes"]),
            peak_rss_bytes=_int("peak_rss_bytes", data["peak_rss_bytes"]),
            python_peak_bytes=_optional_int("python_peak_bytes", data.get("python_peak_bytes")),
            cuda_peak_bytes=_optional_int("cuda_peak_bytes", data.get("cuda_peak_bytes")),
            method=str(data["method"]),
            exact=bool(data["exact"]),
            elapsed_s=float(data["elapsed_s"]),
            timeline=_timeline_from_dicts(data["timeline"]),
            notes=tuple(str(n) for n in data.get("notes", ())),
        )


# -- readings ---------------------------------------------------------------------------------
def _read_status() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process from /proc/self/status, in bytes.

    Raises
    ------
    OSError
        The file cannot be read or lacks either field (not Linux).
    """
    # Raw reads in small chunks: a text-mode file would allocate an 8 KiB buffer, which
    # tracemalloc would count in the region being measured.
    fd = os.open(_STATUS, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 2048):
            chunks.append(chunk)
    finally:
        os.close(fd)
    found: dict[str, int] = {}
    for line in b"".join(chunks).splitlines():
        key, _, rest = line.partition(b":")
        if key in (b"VmRSS", b"VmHWM"):
            found[key.decode()] = int(rest.split()[0]) * _KIB  # proc(5): kB means 1024 B
    if len(found) != 2:
        raise OSError(f"{_STATUS} has no VmRSS/VmHWM lines")
    return found["VmRSS"], found["VmHWM"]


def _reset_peak() -> str:
    """Reset the kernel's peak RSS to the current RSS; "" on success, else the reason."""
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as f:
            f.write("5")
        _read_status()
    except OSError as exc:  # absent (not Linux), EACCES, EINVAL (Linux < 4.0)
        return f"{exc.strerror or exc} ({exc.filename or _CLEAR_REFS})"
    return ""


def _torch_cuda() -> Any:
    """``torch.cuda`` when the caller already imported torch and CUDA is usable, else None."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        return cuda if cuda is not None and cuda.is_available() else None
    except Exception:  # a half-initialised CUDA runtime must not break memory tracking
        return None


class _RssSampler:
    """A daemon thread reading the RSS every ``interval_s`` and keeping the highest value.

    Samples miss peaks shorter than the interval (and the thread waits for the GIL while
    Python code runs), so the result is a lower bound.
    """

    def __init__(self, interval_s: float) -> None:
        self._process = psutil.Process()
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._peak = 0
        self.read()
        self._thread = threading.Thread(target=self._run, name="fastbench-rss-sampler",
                                        daemon=True)
        self._thread.start()

    def read(self) -> tuple[int, int]:
        """(RSS now, highest RSS seen so far including now), in bytes."""
        rss = int(self._process.memory_info().rss)
        with self._lock:
            self._peak = max(self._peak, rss)
            return rss, self._peak

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.read()

    def stop(self) -> None:
        """End the thread (the tracker's "end" snapshot was the final reading)."""
        self._stop.set()
        self._thread.join()


# -- the tracker ------------------------------------------------------------------------------
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
        self._sampler: _RssSampler | None = None
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
        reason = "" if self._method_asked == "sampling" else _reset_peak()
        if reason and self._method_asked == "clear_refs":
            raise OSError(f"[track] cannot reset the peak RSS: {reason}; use method='auto' "
                          "to fall back to sampling")
        if self._method_asked == "sampling" or reason:
            if reason:
                self._notes.append(f"clear_refs unavailable ({reason}): the peak is sampled, "
                                   "a lower bound")
            self._exact = False
            self._sampler = _RssSampler(self._interval_s)

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
        self._cuda = _torch_cuda()
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
        return _read_status()

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
        return _snapshot(label, t_s if self._snapshots else 0.0, rss, self._rss_floor,
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


# -- per call ---------------------------------------------------------------------------------
def _median(values: Sequence[int]) -> float:
    return float(statistics.median(values))


def _all_or_none(values: Sequence[int | None]) -> tuple[int, ...] | None:
    """The values, or None when any is missing (a figure is reported for all calls or none)."""
    present = tuple(v for v in values if v is not None)
    return present if len(present) == len(values) else None


def _int_tuple(name: str, values: Any) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    return tuple(_int(name, v) for v in values)


@dataclass(frozen=True)
class CallMemory:
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
        _int("warmup_calls", self.warmup_calls, 0)

    @property
    def calls(self) -> int:
        """Number of tracked calls."""
        return len(self.peak_increase_bytes)

    @property
    def median_peak_increase_bytes(self) -> float:
        """Median over the tracked calls of the peak RSS increase, in bytes."""
        return _median(self.peak_increase_bytes)

    @property
    def max_peak_increase_bytes(self) -> int:
        """Largest peak RSS increase of a tracked call, in bytes."""
        return max(self.peak_increase_bytes)

    @property
    def median_python_peak_bytes(self) -> float | None:
        """Median Python-heap peak per call in bytes, or None."""
        return None if self.python_peak_bytes is None else _median(self.python_peak_bytes)

    @property
    def max_python_peak_bytes(self) -> int | None:
        """Largest Python-heap peak of a tracked call in bytes, or None."""
        return None if self.python_peak_bytes is None else max(self.python_peak_bytes)

    def lines(self) -> list[str]:
        """The report lines: RSS peak per call, Python heap peak, CUDA peak."""
        out = [f"  memory per call (median of {self.calls} tracked calls after "
               f"{self.warmup_calls} warmup, {self.method}): peak RSS "
               f"{format_size(self.median_peak_increase_bytes, sign=True)}, max "
               f"{format_size(self.max_peak_increase_bytes, sign=True)}"]
        if self.python_peak_bytes is not None:
            out.append(f"    Python heap peak (tracemalloc): "
                       f"{format_size(_median(self.python_peak_bytes))}, max "
                       f"{format_size(max(self.python_peak_bytes))}")
        if self.cuda_peak_bytes is not None:
            out.append(f"    CUDA peak allocated: {format_size(_median(self.cuda_peak_bytes))}, "
                       f"max {format_size(max(self.cuda_peak_bytes))}")
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
            warmup_calls=_int("warmup_calls", data.get("warmup_calls", 0), 0),
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
    calls = _int("calls", calls, 1)
    warmup = _int("warmup", warmup, 0)
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
