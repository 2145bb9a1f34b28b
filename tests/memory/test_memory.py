"""Tests for the fastbench.memory face: its public names and format_size, the byte
formatter it re-exports from fastbench.units.
"""

from __future__ import annotations

import pytest

import fastbench
from fastbench import memory
from fastbench.memory import format_size
from fastbench.units import format_bytes

MiB = 1 << 20


@pytest.mark.parametrize(("value", "sign", "text"), [
    (0, False, "0 B"), (0, True, "0 B"), (5, True, "+5 B"), (1023, False, "1023 B"),
    (1024, False, "1 KiB"), (1536, False, "1.5 KiB"), (100 * MiB, False, "100 MiB"),
    (100 * MiB + 12, False, "100.0 MiB"), (-3 * MiB, True, "-3 MiB"),
    (int(2.5 * (1 << 30)), True, "+2.5 GiB"), (1_000_000.4, False, "976.6 KiB"),
])
def test_format_size(value: float, sign: bool, text: str) -> None:
    assert format_size(value, sign) == text


def test_public_names() -> None:
    assert fastbench.memory is memory
    assert "memory" in fastbench.__all__
    assert set(memory.__all__) == {"CallMemory", "MemoryTracker", "MemoryUsage", "Snapshot",
                                   "call_memory", "format_size", "track"}


def test_format_size_is_the_units_formatter() -> None:
    assert format_size is format_bytes


def test_tracker_constants_stay_importable() -> None:
    from fastbench.memory import DEFAULT_INTERVAL_S, METHOD_EXACT, METHODS, RESERVED_LABELS

    assert METHODS == ("auto", "clear_refs", "sampling") and DEFAULT_INTERVAL_S == 1e-3
    assert METHOD_EXACT == "VmHWM after clear_refs" and RESERVED_LABELS == ("start", "end")
