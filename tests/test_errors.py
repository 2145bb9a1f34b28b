"""Tests for the error-message helpers of fastbench.errors: the tail of a child's stderr."""

from __future__ import annotations

from pathlib import Path

from fastbench.errors import file_tail, last_lines


def test_last_lines_keeps_the_last_non_blank_lines_within_the_character_cap() -> None:
    text = "\n".join(f"line {i}" for i in range(30)) + "\n\n  \n"
    assert last_lines(text, lines=3) == "line 27\nline 28\nline 29"
    assert last_lines("a\n\nb\n", lines=20) == "a\nb"
    assert last_lines("x" * 50, lines=20, chars=10) == "x" * 10


def test_file_tail_of_a_missing_file_is_empty(tmp_path: Path) -> None:
    assert file_tail(tmp_path / "absent") == ""
    (tmp_path / "err").write_bytes(b"ok\n\xff bad byte\nlast\n")
    assert file_tail(tmp_path / "err", lines=2) == "\ufffd bad byte\nlast"
