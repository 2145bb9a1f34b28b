"""The memory cost of a tracked region as results: labelled Snapshots of its timeline and the
MemoryUsage summary, their report lines and their dict round trip. Plain data; the
readings and the tracking are :mod:`.readings` and :mod:`.tracker`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from .._checks import check_int
from ..report.lines import TextLines, brief_repr, note_lines
from ..report.table import table
from ..units import format_bytes

__all__ = ["MemoryUsage", "Snapshot", "make_snapshot"]


def _optional(value: int | None, sign: bool = False) -> str:
    return "-" if value is None else format_bytes(value, sign)


def _optional_int(name: str, value: Any) -> int | None:
    return None if value is None else check_int(name, value)


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


def make_snapshot(label: str, t_s: float, rss: int, peak: int, py_current: int | None,
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
        out.append(make_snapshot(
            str(item["label"]), float(item["t_s"]), check_int("rss_bytes", item["rss_bytes"]),
            check_int("peak_rss_bytes_so_far", item["peak_rss_bytes_so_far"]),
            _optional_int("python_current_bytes", item["python_current_bytes"]),
            _optional_int("python_peak_bytes", item["python_peak_bytes"]),
            _optional_int("cuda_allocated_bytes", item["cuda_allocated_bytes"]),
            out[-1] if out else None, out[0] if out else None,
        ))
    return tuple(out)


@dataclass(frozen=True)
class MemoryUsage(TextLines):
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

    def __repr__(self) -> str:
        return brief_repr(self, f"peak RSS {format_bytes(self.peak_rss_bytes)} "
                                f"({format_bytes(self.peak_increase_bytes, sign=True)}), "
                                f"{self.method}, {self.elapsed_s:.3g} s")

    def lines(self) -> list[str]:
        """A summary line per figure, then the timeline table."""
        out = [
            f"peak RSS {format_bytes(self.peak_rss_bytes)}: "
            f"{format_bytes(self.peak_increase_bytes, sign=True)} over "
            f"{format_bytes(self.rss_before_bytes)} at the start, "
            f"{format_bytes(self.rss_after_bytes)} at the end "
            f"({self.method}; {self.elapsed_s:.3f} s)",
        ]
        if self.python_peak_bytes is not None:
            out.append(f"  Python heap peak (tracemalloc, Python allocators only): "
                       f"{format_bytes(self.python_peak_bytes, sign=True)}")
        if self.cuda_peak_bytes is not None:
            out.append(f"  CUDA peak allocated (torch): {format_bytes(self.cuda_peak_bytes)}")
        rows = [[s.label, f"{s.t_s * 1e3:.1f} ms", format_bytes(s.rss_bytes),
                 format_bytes(s.rss_delta_bytes, sign=True),
                 format_bytes(s.rss_since_start_bytes, sign=True),
                 format_bytes(s.peak_rss_bytes_so_far),
                 _optional(s.python_current_bytes, sign=True),
                 _optional(s.python_peak_bytes, sign=True),
                 _optional(s.cuda_allocated_bytes)]
                for s in self.timeline]
        out += table(["label", "t", "RSS", "Δ prev", "Δ start", "peak so far",
                      "Python now", "Python peak", "CUDA"], rows, align="l" + "r" * 8)
        out += note_lines(self.notes)
        return out

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
            rss_before_bytes=check_int("rss_before_bytes", data["rss_before_bytes"]),
            rss_after_bytes=check_int("rss_after_bytes", data["rss_after_bytes"]),
            peak_rss_bytes=check_int("peak_rss_bytes", data["peak_rss_bytes"]),
            python_peak_bytes=_optional_int("python_peak_bytes", data.get("python_peak_bytes")),
            cuda_peak_bytes=_optional_int("cuda_peak_bytes", data.get("cuda_peak_bytes")),
            method=str(data["method"]),
            exact=bool(data["exact"]),
            elapsed_s=float(data["elapsed_s"]),
            timeline=_timeline_from_dicts(data["timeline"]),
            notes=tuple(str(n) for n in data.get("notes", ())),
        )
