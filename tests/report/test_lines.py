"""fastbench.report.lines: ``str()`` of a result is its lines joined, and notes print one
per line."""

from __future__ import annotations

import pytest

from fastbench.report.lines import TextLines, note_lines


class _Two(TextLines):
    def lines(self) -> list[str]:
        return ["first", "  second"]


def test_str_joins_the_lines() -> None:
    assert str(_Two()) == "first\n  second"
    with pytest.raises(NotImplementedError):
        str(TextLines())


def test_note_lines() -> None:
    assert note_lines(["a", "b c"]) == ["  note: a", "  note: b c"]
    assert note_lines(("x",), indent="") == ["note: x"]
    assert note_lines([]) == []
