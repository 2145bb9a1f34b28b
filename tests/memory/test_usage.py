"""Tests for fastbench.memory's results: MemoryUsage's report lines and its dict round trip,
on regions tracked here.
"""

from __future__ import annotations

import json

import pytest

from _memory_helpers import MiB
from fastbench.memory import MemoryUsage, format_size, track


def test_lines_and_str_show_the_timeline() -> None:
    with track() as m:
        b = bytearray(5 * MiB)
        m.snapshot("filled")
        del b
    text = str(m)
    assert text == "\n".join(m.lines()) == str(m.result)
    assert text.startswith(f"peak RSS {format_size(m.peak_rss_bytes)}: ")
    assert f"({m.method}; " in text
    assert "Python heap peak (tracemalloc, Python allocators only): +5.0 MiB" in text
    rows = [line.split()[0] for line in m.lines()[2:]]
    assert rows == ["label", "start", "filled", "end"]


def test_to_dict_round_trip() -> None:
    with track() as m:
        m.snapshot("one")
    data = json.loads(json.dumps(m.to_dict(), allow_nan=False))
    assert data["peak_increase_bytes"] == m.peak_increase_bytes
    assert [s["label"] for s in data["timeline"]] == ["start", "one", "end"]
    assert MemoryUsage.from_dict(data) == m.result
    del data["timeline"][1:]
    with pytest.raises(ValueError, match="start and end"):
        MemoryUsage.from_dict(data)
    with pytest.raises(ValueError, match="lacks method"):
        MemoryUsage.from_dict({k: v for k, v in m.to_dict().items() if k != "method"})
