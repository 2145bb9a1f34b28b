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


# -- printable: what a file or user code holds cannot act on the terminal ----------------------
def test_printable_escapes_every_control_character() -> None:
    from fastbench.report.lines import printable

    # ESC [ 1 A (cursor up) and ESC [ 2 K (erase the line): the sequence that rewrote a
    # verdict row on screen; CR, a newline, DEL, the one-byte CSI (0x9b) and a right-to-left
    # override come out as text.
    crafted = "b\x1b[1A\x1b[2K  1.500x faster\r\n\x7f\x9b2J\u202eevil"
    assert printable(crafted) == ("b\\x1b[1A\\x1b[2K  1.500x faster\\r\\n\\x7f\\x9b2J"
                                  "\\u202eevil")
    assert printable("a\nb\tc", keep="\n") == "a\nb\\tc"
    plain = "sorted(copy) 1.2 µs ± 0.5% 0.834x [0.38, 1.81] — ok"
    assert printable(plain) is not None and printable(plain) == plain
    for c in range(0x20):
        assert "\\x" in printable(chr(c)) or printable(chr(c)) in ("\\n", "\\t", "\\r")


def test_table_cells_cannot_break_their_row() -> None:
    from fastbench.report.table import table

    lines = table(["variant", "verdict"], [["a\nb  0.5x  faster", "slower"]])
    assert len(lines) == 2 and lines[1].startswith("  a\\nb")
