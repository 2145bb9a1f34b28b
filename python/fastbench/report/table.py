"""The one table model of fastbench's reports: headers, rows of cells already formatted as
text, and each column's alignment. Text rendering lives here too; HTML will render the same
model. No measuring and no number formatting here (that is :mod:`fastbench.units`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .lines import printable

__all__ = ["Table", "table"]

_ALIGNS = frozenset("lr")


@dataclass(frozen=True)
class Table:
    """A table of text cells.

    Parameters
    ----------
    headers : tuple of str
        One per column.
    rows : tuple of tuple of str
        Each row has one cell per column.
    align : str
        One letter per column, "l" (left) or "r" (right); empty means all left.
    """

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: str = ""

    def __post_init__(self) -> None:
        width = len(self.headers)
        for i, row in enumerate(self.rows):
            if len(row) != width:
                raise ValueError(f"[Table] row {i} has {len(row)} cells, expected {width}")
        if self.align and (len(self.align) != width or not set(self.align) <= _ALIGNS):
            raise ValueError(f"[Table] align must be {width} letters of 'l' or 'r', "
                             f"got {self.align!r}")

    @classmethod
    def of(cls, headers: Sequence[object], rows: Sequence[Sequence[object]],
           align: str = "") -> Table:
        """A table from any cells, each turned into text with ``str``."""
        return cls(tuple(str(h) for h in headers),
                   tuple(tuple(str(c) for c in row) for row in rows), align)

    def text(self, indent: str = "  ") -> list[str]:
        """Lines with columns sized to their widest cell, two spaces apart, each line
        starting with ``indent`` and without trailing spaces. A cell's control characters
        are shown escaped (:func:`~fastbench.report.lines.printable`): a name from a file
        cannot break its row or act on the terminal."""
        shown = [tuple(printable(c) for c in row) for row in (self.headers, *self.rows)]
        widths = [max(len(c) for c in col) for col in zip(*shown)]
        align = self.align or "l" * len(self.headers)

        def line(cells: Sequence[str]) -> str:
            parts = [c.rjust(w) if a == "r" else c.ljust(w)
                     for c, w, a in zip(cells, widths, align)]
            return (indent + "  ".join(parts)).rstrip()

        return [line(r) for r in shown]


def table(headers: Sequence[object], rows: Sequence[Sequence[object]], indent: str = "  ",
          align: str = "") -> list[str]:
    """Render ``headers`` and ``rows`` as text lines (see :meth:`Table.text`)."""
    return Table.of(headers, rows, align).text(indent)
