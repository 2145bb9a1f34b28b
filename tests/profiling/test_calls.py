"""``@fastbench.profiled``: every call timed and its peak memory tracked, gathered into one
CallProfile; its statistics against hand-worked order statistics and numpy."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

import fastbench
from fastbench import _core
from fastbench.profiling import CallProfile, ProfiledFunction


def test_each_call_is_timed_and_the_figures_are_over_the_calls() -> None:
    @fastbench.profiled(memory=False)
    def wait(ms: float) -> float:
        _core.spin(ms * 1e6)   # busy-waits on the clock: never returns early
        return ms

    assert isinstance(wait, ProfiledFunction) and wait.__name__ == "wait"
    assert [wait(0.5) for _ in range(12)] == [0.5] * 12
    prof = wait.profile
    assert prof.calls == 12 and prof.peak_increase_bytes is None
    assert min(prof.times_ns) >= 0.5e6 * 0.99
    assert prof.median_ns == pytest.approx(float(np.median(prof.times_ns)))
    wait.reset()
    assert wait.profile.calls == 0 and "no calls yet" in repr(wait.profile)


def test_the_peak_memory_of_each_call_is_tracked() -> None:
    kept: list[mmap.mmap] = []
    size = 16 << 20

    @fastbench.profiled
    def grow() -> None:
        # 16 MiB of fresh pages written and kept: new RSS every call. (np.ones of that size
        # may come from heap memory an earlier test freed and left resident, adding none.)
        block = mmap.mmap(-1, size)
        for page in range(0, size, mmap.PAGESIZE):
            block[page] = 1
        kept.append(block)

    for _ in range(3):
        grow()
    prof = grow.profile
    assert prof.peak_increase_bytes is not None and len(prof.peak_increase_bytes) == 3
    if prof.exact:   # sampled peaks are lower bounds only
        assert all(size * 0.98 <= p <= size + (4 << 20) for p in prof.peak_increase_bytes)
    assert "peak RSS" in str(prof)


def test_calls_that_raise_are_counted_and_left_out() -> None:
    @fastbench.profiled(memory=False, name="flaky")
    def flaky(fail: bool) -> None:
        if fail:
            raise KeyError("boom")

    flaky(False)
    with pytest.raises(KeyError):
        flaky(True)
    prof = flaky.profile
    assert prof.name == "flaky" and prof.calls == 1 and prof.failed_calls == 1
    assert "1 raised (left out)" in str(prof)


def test_median_and_percentiles_with_their_intervals_hand_worked() -> None:
    # Times 1..20 ms: the median is 10.5 ms; its 95% sign-test interval is [x_(6), x_(15)]
    # (P(B <= 5) = 0.0207 <= 0.025 for B ~ Bin(20, 1/2), P(B <= 6) = 0.0577 is not).
    times = tuple(float(v) * 1e6 for v in range(1, 21))
    prof = CallProfile("f", times, tuple(range(20)), "VmHWM after clear_refs", True, "tsc")
    assert prof.median_ns == 10.5e6
    assert prof.median_ci_ns == (6e6, 15e6)
    assert prof.percentile_ns(0.9) == pytest.approx(np.quantile(times, 0.9))  # 18.1 ms
    assert prof.percentile_ns(0.9) == pytest.approx(18.1e6)
    assert prof.percentile_ci_ns(0.99) is None          # 20 calls cannot bound a p99
    assert prof.median_peak_bytes == 9.5 and prof.max_peak_bytes == 19
    text = str(prof)
    assert "10.50 ms" in text and "[6.000 ms, 15.00 ms]" in text and "n/a (needs" in text
    assert CallProfile.from_dict(prof.to_dict()).times_ns == times


def test_methods_and_bad_arguments() -> None:
    class Box:
        @fastbench.profiled(memory=False)
        def twice(self, x: int) -> int:
            return 2 * x

    assert Box().twice(4) == 8 and Box.twice.profile.calls == 1
    with pytest.raises(TypeError, match="memory"):
        fastbench.profiled(memory="yes")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="decorates a function"):
        fastbench.profiled(3)  # type: ignore[call-overload]
