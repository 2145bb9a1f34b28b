"""Tests for fastbench.memory.track: peaks of regions that allocate known sizes (touched numpy
arrays, bytearrays), the timeline's arithmetic, nested and overlapping trackers, the sampling
fallback, CUDA figures through a stand-in torch module, and every misuse.

Sizes are checked in bands around the allocated size: the kernel's RSS counters are summed
in per-CPU batches and the interpreter allocates a little around any region.
"""

from __future__ import annotations

import math
import sys
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any, Callable

import pytest

from _memory_helpers import SIZE, SMALL, MiB, in_band, needs_exact, touch
from fastbench.memory import MemoryTracker, track
from fastbench.memory import readings


# -- peaks ------------------------------------------------------------------------------------
@needs_exact
def test_freed_allocation_is_seen_as_the_peak() -> None:
    with track() as m:
        a = touch(SIZE)
        del a
    assert m.method == "VmHWM after clear_refs" and m.exact
    assert in_band(m.peak_increase_bytes, SIZE), m.peak_increase_bytes
    assert m.peak_increase_bytes == m.peak_rss_bytes - m.rss_before_bytes
    assert m.peak_rss_bytes - m.rss_after_bytes >= 0.9 * SIZE  # freed before the end
    assert m.elapsed_s > 0 and m.notes == ()


@needs_exact
def test_region_allocating_nothing_reports_little() -> None:
    with track() as m:
        sum(range(1000))
    assert 0 <= m.peak_increase_bytes < SMALL


@needs_exact
def test_held_allocation_is_in_rss_after() -> None:
    with track(python_heap=False) as m:
        kept = touch(SIZE)
    assert in_band(m.rss_after_bytes - m.rss_before_bytes, SIZE)
    assert m.peak_rss_bytes >= m.rss_after_bytes
    assert m.python_peak_bytes is None
    del kept


def test_python_heap_sees_a_bytearray() -> None:
    assert not tracemalloc.is_tracing()
    with track() as m:
        b = bytearray(50 * MiB)
        del b
    assert m.python_peak_bytes is not None
    assert 50 * MiB <= m.python_peak_bytes < 51 * MiB
    assert not tracemalloc.is_tracing()  # started and stopped by the tracker


def test_python_heap_sees_numpy_arrays() -> None:
    # numpy reports its data buffers to tracemalloc (PyTraceMalloc_Track), so they count.
    with track() as m:
        a = touch(50 * MiB)
        del a
    assert m.python_peak_bytes is not None
    assert 50 * MiB <= m.python_peak_bytes < 51 * MiB


def test_already_tracing_is_reset_and_left_running() -> None:
    tracemalloc.start()
    try:
        before = bytearray(30 * MiB)  # traced, live, and the peak so far
        with track() as m:
            b = bytearray(10 * MiB)
            del b
        assert tracemalloc.is_tracing()
        # Counted from the region's start: the 30 MiB held before is not in the figure.
        assert m.python_peak_bytes is not None
        assert 10 * MiB <= m.python_peak_bytes < 11 * MiB
        # reset_peak was called: the peak is now at most 30 + 10 MiB plus a little, and the
        # earlier allocation alone is below it.
        assert tracemalloc.get_traced_memory()[1] < 41 * MiB
        del before
    finally:
        tracemalloc.stop()


def test_python_heap_off() -> None:
    with track(python_heap=False) as m:
        m.snapshot("x")
    assert m.python_peak_bytes is None
    assert all(s.python_current_bytes is None and s.python_peak_bytes is None
               and s.python_delta_bytes is None for s in m.timeline)
    assert not tracemalloc.is_tracing()


# -- timeline ---------------------------------------------------------------------------------
def test_snapshots_in_order_with_deltas_that_add_up() -> None:
    with track() as m:
        first = m.snapshot("before_alloc")
        # Above glibc's largest mmap threshold (32 MiB on 64-bit), so that freeing returns
        # the pages at once; smaller blocks may stay in the heap and in the RSS.
        a = touch(40 * MiB)
        m.snapshot("after_alloc")
        del a
        m.snapshot("after_free")
        m.snapshot("after_free")  # a repeated label is kept
    labels = [s.label for s in m.timeline]
    assert labels == ["start", "before_alloc", "after_alloc", "after_free", "after_free", "end"]
    assert m.timeline[1] is first
    start = m.timeline[0]
    assert start.t_s == 0.0
    assert (start.rss_delta_bytes, start.rss_since_start_bytes) == (0, 0)
    assert (start.python_current_bytes, start.python_peak_bytes) == (0, 0)
    rss = py = 0
    for prev, snap in zip(m.timeline, m.timeline[1:]):
        assert snap.t_s >= prev.t_s
        assert snap.rss_delta_bytes == snap.rss_bytes - prev.rss_bytes
        assert snap.peak_rss_bytes_so_far >= max(prev.peak_rss_bytes_so_far, snap.rss_bytes)
        rss += snap.rss_delta_bytes
        py += snap.python_delta_bytes  # type: ignore[operator]
        assert snap.rss_since_start_bytes == rss == snap.rss_bytes - start.rss_bytes
        assert snap.python_since_start_bytes == py == snap.python_current_bytes
    assert m.timeline[-1].peak_rss_bytes_so_far == m.peak_rss_bytes
    assert m.timeline[-1].python_peak_bytes == m.python_peak_bytes
    alloc, freed = m.timeline[2], m.timeline[3]
    assert in_band(alloc.python_delta_bytes, 40 * MiB, 1.0, 1.01)  # type: ignore[arg-type]
    assert in_band(-freed.python_delta_bytes, 40 * MiB, 0.99, 1.0)  # type: ignore[operator]
    assert m.timeline[-1].python_peak_bytes >= 40 * MiB  # type: ignore[operator]
    if m.exact:
        assert in_band(alloc.rss_delta_bytes, 40 * MiB)
        assert in_band(-freed.rss_delta_bytes, 40 * MiB)




# -- nesting ----------------------------------------------------------------------------------
@needs_exact
def test_outer_keeps_an_inner_peak() -> None:
    with track() as outer:
        with track() as inner:
            a = touch(SIZE)
            del a
        b = bytearray(MiB)
        del b
    assert in_band(inner.peak_increase_bytes, SIZE)
    assert outer.peak_increase_bytes >= 0.95 * SIZE
    assert outer.peak_rss_bytes >= inner.peak_rss_bytes
    assert outer.python_peak_bytes is not None and inner.python_peak_bytes is not None
    assert outer.python_peak_bytes >= inner.python_peak_bytes >= SIZE


@needs_exact
def test_inner_reset_does_not_erase_the_outer_peak_so_far() -> None:
    with track() as outer:
        a = touch(SIZE)
        del a
        with track() as inner:  # resets the kernel's and tracemalloc's peaks
            pass
    assert inner.peak_increase_bytes < SMALL
    assert inner.python_peak_bytes is not None and inner.python_peak_bytes < MiB
    assert outer.peak_increase_bytes >= 0.95 * SIZE
    assert outer.python_peak_bytes is not None and outer.python_peak_bytes >= SIZE


def test_overlapping_regions_hand_tracemalloc_over() -> None:
    # Regions of two threads need not nest: the first may end while the second runs.
    first, second = track(), track()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert tracemalloc.is_tracing()  # the second region still relies on it
    b = bytearray(4 * MiB)
    del b
    second.__exit__(None, None, None)
    assert not tracemalloc.is_tracing()
    assert second.python_peak_bytes is not None and second.python_peak_bytes >= 4 * MiB


# -- the sampling fallback --------------------------------------------------------------------
def test_forced_sampling_is_a_lower_bound() -> None:
    with track(method="sampling") as m:
        a = touch(SIZE)
        time.sleep(0.05)  # held long enough for the 1 ms sampler to see it
        del a
    assert not m.exact
    assert m.method == "sampled RSS every 1 ms (lower bound)"
    assert 50 * MiB < m.peak_increase_bytes <= 1.10 * SIZE
    assert m.peak_rss_bytes >= max(s.rss_bytes for s in m.timeline)


def test_auto_falls_back_where_clear_refs_cannot_be_written(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Any) -> None:
    monkeypatch.setattr(readings, "_CLEAR_REFS", str(tmp_path / "absent" / "clear_refs"))
    with track(interval_s=0.002) as m:
        a = touch(SIZE)
        time.sleep(0.05)
        del a
    assert not m.exact
    assert m.method == "sampled RSS every 2 ms (lower bound)"
    assert len(m.notes) == 1 and m.notes[0].startswith("clear_refs unavailable (")
    assert "No such file or directory" in m.notes[0]
    assert 50 * MiB < m.peak_increase_bytes
    assert "note: clear_refs unavailable" in str(m)


def test_clear_refs_required_raises_where_unavailable(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Any) -> None:
    monkeypatch.setattr(readings, "_CLEAR_REFS", str(tmp_path / "absent" / "clear_refs"))
    tracker = track(method="clear_refs")
    with pytest.raises(OSError, match=r"\[track\] cannot reset the peak RSS: .*method='auto'"):
        with tracker:
            pass
    assert not tracemalloc.is_tracing()


# -- CUDA, through a stand-in for torch --------------------------------------------------------
class FakeCuda:
    """The four torch.cuda calls the tracker makes, over a simulated allocator."""

    def __init__(self, available: bool = True) -> None:
        self.available = available
        self.allocated = 0
        self.peak = 0

    def is_available(self) -> bool:
        return self.available

    def alloc(self, n: int) -> None:
        self.allocated += n
        self.peak = max(self.peak, self.allocated)

    def free(self, n: int) -> None:
        self.allocated -= n

    def reset_peak_memory_stats(self) -> None:
        self.peak = self.allocated

    def max_memory_allocated(self) -> int:
        return self.peak

    def memory_allocated(self) -> int:
        return self.allocated


def _fake_torch(monkeypatch: pytest.MonkeyPatch, available: bool = True) -> FakeCuda:
    cuda = FakeCuda(available)
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    return cuda


def test_cuda_peak_and_timeline(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = _fake_torch(monkeypatch)
    cuda.alloc(1000)  # allocated before the region
    with track(python_heap=False) as m:
        cuda.alloc(500)
        m.snapshot("grown")
        cuda.free(1200)
    assert m.cuda_peak_bytes == 1500
    assert [s.cuda_allocated_bytes for s in m.timeline] == [1000, 1500, 300]
    assert [s.cuda_delta_bytes for s in m.timeline] == [0, 500, -1200]
    assert [s.cuda_since_start_bytes for s in m.timeline] == [0, 500, -700]
    assert "CUDA peak allocated (torch): 1.5 KiB" in str(m)  # 1500 / 1024 = 1.46


def test_nested_cuda_peaks(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = _fake_torch(monkeypatch)
    with track(python_heap=False) as outer:
        cuda.alloc(4096)
        cuda.free(4096)
        with track(python_heap=False) as inner:  # resets torch's peak statistic
            cuda.alloc(100)
            cuda.free(100)
    assert inner.cuda_peak_bytes == 100
    assert outer.cuda_peak_bytes == 4096


def test_no_cuda_figures_without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_torch(monkeypatch, available=False)
    with track() as m:
        pass
    assert m.cuda_peak_bytes is None
    assert all(s.cuda_allocated_bytes is None for s in m.timeline)


def test_torch_is_never_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with track() as m:
        pass
    assert "torch" not in sys.modules
    assert m.cuda_peak_bytes is None


# -- misuse -----------------------------------------------------------------------------------
RESULT_READERS: list[Callable[[MemoryTracker], Any]] = [
    lambda m: m.result, lambda m: m.rss_before_bytes, lambda m: m.rss_after_bytes,
    lambda m: m.peak_rss_bytes, lambda m: m.peak_increase_bytes, lambda m: m.python_peak_bytes,
    lambda m: m.cuda_peak_bytes, lambda m: m.method, lambda m: m.exact, lambda m: m.elapsed_s,
    lambda m: m.timeline, lambda m: m.notes, lambda m: m.lines(), lambda m: m.to_dict(),
]


@pytest.mark.parametrize("read", RESULT_READERS)
def test_figures_before_the_region_ends_raise(read: Callable[[MemoryTracker], Any]) -> None:
    tracker = track()
    with pytest.raises(RuntimeError, match="has not run yet"):
        read(tracker)
    with tracker:
        with pytest.raises(RuntimeError, match="is still running: memory figures exist once"):
            read(tracker)
    read(tracker)  # fine afterwards


def test_str_and_repr_never_raise() -> None:
    tracker = track()
    assert str(tracker) == "<memory tracker: region new>"
    with tracker:
        assert repr(tracker) == "<MemoryTracker running>"
    assert str(tracker).startswith("peak RSS ")


def test_snapshot_outside_the_region() -> None:
    tracker = track()
    with pytest.raises(RuntimeError, match=r"snapshot\('x'\) called before the tracked region"):
        tracker.snapshot("x")
    with tracker:
        pass
    with pytest.raises(RuntimeError, match=r"snapshot\('x'\) called after the tracked region"):
        tracker.snapshot("x")
    assert [s.label for s in tracker.timeline] == ["start", "end"]


@pytest.mark.parametrize(("label", "error", "message"), [
    (5, TypeError, "label must be a str, got int"),
    (None, TypeError, "label must be a str, got NoneType"),
    ("", ValueError, "must not be empty"),
    ("   ", ValueError, "must not be empty"),
    ("two\nlines", ValueError, "one printable line"),
    ("start", ValueError, "'start' is reserved"),
    ("end", ValueError, "'end' is reserved"),
])
def test_bad_labels(label: Any, error: type[Exception], message: str) -> None:
    with track() as m:
        with pytest.raises(error, match=message):
            m.snapshot(label)
    assert [s.label for s in m.timeline] == ["start", "end"]


def test_a_tracker_measures_one_region() -> None:
    tracker = track()
    with tracker:
        with pytest.raises(RuntimeError, match="already measured a region"):
            with tracker:
                pass
    with pytest.raises(RuntimeError, match="already measured a region"):
        with tracker:
            pass
    assert [s.label for s in tracker.timeline] == ["start", "end"]


@needs_exact
def test_a_failed_reading_at_exit_still_ends_the_region(monkeypatch: pytest.MonkeyPatch) -> None:
    tracker = track()
    with pytest.raises(OSError, match="simulated"):
        with tracker:
            def broken() -> tuple[int, int]:
                raise OSError("simulated: /proc vanished")
            monkeypatch.setattr(readings, "read_status", broken)
    assert not tracemalloc.is_tracing()
    with pytest.raises(RuntimeError, match="ended without figures: reading the memory state"):
        tracker.peak_rss_bytes
    with pytest.raises(RuntimeError, match="already measured a region"):
        tracker.__enter__()


def test_exit_without_enter() -> None:
    with pytest.raises(RuntimeError, match="exited without being entered"):
        track().__exit__(None, None, None)


def test_exception_in_the_region_propagates_and_figures_remain() -> None:
    with pytest.raises(KeyError, match="boom"):
        with track() as m:
            m.snapshot("before")
            raise KeyError("boom")
    assert [s.label for s in m.timeline] == ["start", "before", "end"]
    assert not tracemalloc.is_tracing()


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"python_heap": 1}, TypeError, "python_heap must be True or False, got int"),
    ({"method": "exact"}, ValueError, "method must be one of auto, clear_refs, sampling"),
    ({"method": None}, TypeError, "method must be a str"),
    ({"interval_s": "1ms"}, TypeError, "interval_s must be a number"),
    ({"interval_s": True}, TypeError, "interval_s must be a number"),
    ({"interval_s": 0}, ValueError, r"interval_s must be in \(0, 1\]"),
    ({"interval_s": -1e-3}, ValueError, r"interval_s must be in \(0, 1\]"),
    ({"interval_s": math.nan}, ValueError, r"interval_s must be in \(0, 1\]"),
    ({"interval_s": 2.0}, ValueError, r"interval_s must be in \(0, 1\]"),
])
def test_bad_track_arguments(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        track(**kwargs)
