"""Tests for fastbench.memory.call_memory and CallMemory: warmup then tracked calls, the
peak of a call of known size, exceptions, argument checks, figures, lines and round trip.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from _memory_helpers import MiB, in_band, needs_exact, touch
from fastbench.memory import CallMemory, call_memory


# -- per call ---------------------------------------------------------------------------------
class Counter:
    def __init__(self, size_bytes: int = 0) -> None:
        self.calls = 0
        self.size_bytes = size_bytes
        self.seen: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1
        self.seen.append((args, kwargs))
        if self.size_bytes:
            a = touch(self.size_bytes)
            del a


def test_call_memory_calls_warmup_then_tracked() -> None:
    fn = Counter()
    cm = call_memory(fn, (1, "a"), {"k": 2}, calls=4, warmup=2)
    assert fn.calls == 6
    assert fn.seen == [((1, "a"), {"k": 2})] * 6
    assert cm.calls == 4 and cm.warmup_calls == 2
    assert len(cm.peak_increase_bytes) == 4
    assert cm.python_peak_bytes is not None and len(cm.python_peak_bytes) == 4
    assert cm.cuda_peak_bytes is None


@needs_exact
def test_call_memory_of_a_40_mib_call() -> None:
    cm = call_memory(Counter(40 * MiB))
    assert cm.exact and cm.method == "VmHWM after clear_refs"
    assert all(in_band(v, 40 * MiB) for v in cm.peak_increase_bytes), cm.peak_increase_bytes
    assert cm.python_peak_bytes is not None
    assert all(40 * MiB <= v < 41 * MiB for v in cm.python_peak_bytes)


def test_call_memory_propagates_exceptions() -> None:
    def fail() -> None:
        raise ZeroDivisionError("inside")

    with pytest.raises(ZeroDivisionError, match="inside"):
        call_memory(fail, warmup=0)
    assert not tracemalloc.is_tracing()


@pytest.mark.parametrize(("fn", "kwargs", "error", "message"), [
    (42, {}, TypeError, "fn must be callable, got int"),
    (print, {"calls": 0}, ValueError, "calls must be positive, got 0"),
    (print, {"calls": 1.5}, TypeError, "calls must be an int, got float"),
    (print, {"warmup": -1}, ValueError, "warmup must be >= 0, got -1"),
    (print, {"warmup": True}, TypeError, "warmup must be an int, got bool"),
    (print, {"method": "guess"}, ValueError, "method must be one of"),
    (print, {"python_heap": "yes"}, TypeError, "python_heap must be True or False"),
])
def test_call_memory_bad_arguments(fn: Any, kwargs: dict[str, Any], error: type[Exception],
                                   message: str) -> None:
    with pytest.raises(error, match=message):
        call_memory(fn, **kwargs)


def test_call_memory_figures_and_lines() -> None:
    cm = CallMemory(peak_increase_bytes=(10 * MiB, 30 * MiB, 20 * MiB),
                    python_peak_bytes=(1024, 3072, 2048), cuda_peak_bytes=None,
                    method="VmHWM after clear_refs", exact=True, warmup_calls=1)
    assert cm.median_peak_increase_bytes == 20 * MiB
    assert cm.max_peak_increase_bytes == 30 * MiB
    assert cm.median_python_peak_bytes == 2048 and cm.max_python_peak_bytes == 3072
    assert cm.lines() == [
        "  memory per call (median of 3 tracked calls after 1 warmup, VmHWM after clear_refs): "
        "peak RSS +20 MiB, max +30 MiB",
        "    Python heap peak (tracemalloc): 2 KiB, max 3 KiB",
    ]
    even = CallMemory((1, 4), None, (10, 20), "m", False, 0)
    assert even.median_peak_increase_bytes == 2.5
    assert even.median_python_peak_bytes is None and even.max_python_peak_bytes is None
    assert even.lines()[1] == "    CUDA peak allocated: 15 B, max 20 B"


def test_call_memory_round_trip_and_validation() -> None:
    cm = CallMemory([3, 1], [5, 6], None, "m", True, 1)  # type: ignore[arg-type]
    assert cm.peak_increase_bytes == (3, 1) and cm.python_peak_bytes == (5, 6)
    data = json.loads(json.dumps(cm.to_dict()))
    assert CallMemory.from_dict(data) == cm
    with pytest.raises(ValueError, match="at least one tracked call"):
        CallMemory((), None, None, "m", True, 0)
    with pytest.raises(ValueError, match="python_peak_bytes has 1 values for 2 tracked calls"):
        CallMemory((1, 2), (1,), None, "m", True, 0)
    with pytest.raises(TypeError, match="peak_increase_bytes must be an int, got float"):
        CallMemory.from_dict({**data, "peak_increase_bytes": [1.5]})
    with pytest.raises(TypeError, match="must be a sequence of ints, got str"):
        CallMemory.from_dict({**data, "cuda_peak_bytes": "12"})
    with pytest.raises(ValueError, match="lacks peak_increase_bytes"):
        CallMemory.from_dict({"method": "m"})
    with pytest.raises(ValueError, match="warmup_calls must be >= 0"):
        CallMemory.from_dict({**data, "warmup_calls": -2})
