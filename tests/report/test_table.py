"""Tests for fastbench.report.table: column widths, alignment, indent, trailing spaces and
the errors of a malformed table, against lines written out by hand."""

from __future__ import annotations

import dataclasses

import pytest

from fastbench.report.table import Table, table


def test_columns_are_as_wide_as_their_widest_cell_two_spaces_apart() -> None:
    t = Table(("a", "bb"), (("1", "2"), ("333", "4")), "lr")
    assert t.text() == [
        "  a    bb",
        "  1     2",
        "  333   4",
    ]


def test_default_alignment_is_left_and_trailing_spaces_are_dropped() -> None:
    t = Table(("key", "value"), (("a", "v"), ("long key", "")))
    assert t.text() == [
        "  key       value",
        "  a         v",
        "  long key",
    ]


def test_right_alignment_pads_on_the_left() -> None:
    t = Table(("name", "ns"), (("x", "5"), ("y", "12345")), align="lr")
    assert t.text() == [
        "  name     ns",
        "  x         5",
        "  y     12345",
    ]


def test_header_wider_than_every_cell_sets_the_width() -> None:
    t = Table(("n", "speedup"), (("1", "2"),), align="rr")
    assert t.text(indent="") == [
        "n  speedup",
        "1        2",
    ]


def test_indent_prefixes_every_line() -> None:
    t = Table(("a", "b"), (("1", "2"),))
    assert t.text(indent="    ") == ["    a  b", "    1  2"]
    assert t.text(indent="") == ["a  b", "1  2"]


def test_no_rows_is_the_header_alone() -> None:
    assert Table(("one", "two"), ()).text() == ["  one  two"]


def test_width_counts_characters_not_bytes() -> None:
    t = Table(("time", "x"), (("1.5 µs", "a"), ("2 ns", "b")))
    assert t.text() == [
        "  time    x",
        "  1.5 µs  a",
        "  2 ns    b",
    ]


def test_of_turns_every_cell_into_text() -> None:
    t = Table.of(["n", 2], [[1, 2.5], [None, True]], align="rl")
    assert t.headers == ("n", "2")
    assert t.rows == (("1", "2.5"), ("None", "True"))
    assert t.text() == [
        "     n  2",
        "     1  2.5",
        "  None  True",
    ]


def test_table_function_renders_like_the_model() -> None:
    headers, rows = ["a", "b"], [["10", "x"], ["2", "yy"]]
    assert table(headers, rows, indent=" ", align="rl") == \
        Table.of(headers, rows, "rl").text(" ") == [
            "  a  b",
            " 10  x",
            "  2  yy",
        ]


def test_row_of_the_wrong_length_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"\[Table\] row 1 has 1 cells, expected 2"):
        Table(("a", "b"), (("1", "2"), ("3",)))
    with pytest.raises(ValueError, match=r"\[Table\] row 0 has 3 cells, expected 2"):
        table(["a", "b"], [["1", "2", "3"]])


@pytest.mark.parametrize("align", ["l", "lrl", "lc", "LR", "r "])
def test_bad_alignment_is_an_error(align: str) -> None:
    with pytest.raises(ValueError, match=r"\[Table\] align must be 2 letters of 'l' or 'r', "
                                         rf"got {align!r}"):
        Table(("a", "b"), (("1", "2"),), align)


def test_table_is_frozen() -> None:
    t = Table(("a",), (("1",),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.align = "r"  # type: ignore[misc]
