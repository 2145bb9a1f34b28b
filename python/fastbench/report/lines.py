"""The text form that result types share: ``TextLines`` (``str()`` joins ``lines()``) and
``note_lines`` (one "note:" line per note). Leaf module: no fastbench imports, no layout
(tables are :mod:`.table`), no printing.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["TextLines", "note_lines"]


class TextLines:
    """Base of results printed as text lines: ``lines()`` gives them, ``str()`` joins them
    with newlines. Subclasses define ``lines``."""

    def lines(self) -> list[str]:
        raise NotImplementedError

    def __str__(self) -> str:
        return "\n".join(self.lines())


def note_lines(notes: Iterable[str], indent: str = "  ") -> list[str]:
    """One ``{indent}note: {note}`` line per note, in order."""
    return [f"{indent}note: {n}" for n in notes]
