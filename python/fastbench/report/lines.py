"""The text form that result types share: ``TextLines`` (``str()`` joins ``lines()``),
``brief_repr`` (the one-line ``repr()`` of a result), ``note_lines`` (one "note:" line per
note) and ``printable`` (a string from a file or from user code made safe to show on a
terminal). Leaf module: no fastbench imports, no layout (tables are :mod:`.table`), no
printing.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["BRIEF_REPR_CHARS", "TextLines", "brief_repr", "note_lines", "printable"]

# The longest repr() of a result: one line a console shows whole, never a dump of its data.
BRIEF_REPR_CHARS = 240

# Characters a terminal acts on rather than shows: the C0 controls (ESC starts the sequences
# that move the cursor, erase lines and recolour; CR returns to the line's start), DEL, the
# C1 controls (CSI, 0x9b, is ESC [ in one byte), and the bidirectional overrides and
# isolates that reorder what follows them on screen.
_CONTROLS = ([*range(0x20), 0x7F, *range(0x80, 0xA0)]
             + [0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _CONTROLS}
_TABLES: dict[str, dict[int, str]] = {}


def printable(text: str, keep: str = "") -> str:
    """``text`` with every control character written out as an escape (``\\x1b`` for ESC,
    ``\\n`` for a newline, ``\\u202e`` for a right-to-left override), except those in
    ``keep``. Strings from results files and user code go through it before they are shown,
    so none can move the cursor, rewrite a line already shown or start a line of its own."""
    table = _TABLES.get(keep)
    if table is None:
        table = _TABLES[keep] = {c: e for c, e in _ESCAPES.items() if chr(c) not in keep}
        table.update({ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"})
        for c in keep:
            table.pop(ord(c), None)
    return text.translate(table)


def brief_repr(obj: object, summary: str) -> str:
    """The ``repr()`` of a result: ``<TypeName summary>`` on one line of at most
    :data:`BRIEF_REPR_CHARS` characters, control characters escaped and a long summary cut
    with "...". Result classes define ``__repr__`` in their own body to call it (a
    dataclass would otherwise generate one that dumps every field, arrays included)."""
    head = f"<{type(obj).__name__}"
    text = printable(" ".join(summary.split()))
    room = BRIEF_REPR_CHARS - len(head) - 2
    if len(text) > room:
        text = text[:room - 3].rstrip() + "..."
    return f"{head} {text}>" if text else f"{head}>"


class TextLines:
    """Base of results printed as text lines: ``lines()`` gives them, ``str()`` joins them
    with newlines. Subclasses define ``lines``; each result also defines ``__repr__`` with
    :func:`brief_repr`."""

    def lines(self) -> list[str]:
        raise NotImplementedError

    def __str__(self) -> str:
        return "\n".join(self.lines())


def note_lines(notes: Iterable[str], indent: str = "  ") -> list[str]:
    """One ``{indent}note: {note}`` line per note, in order, control characters escaped."""
    return [f"{indent}note: {printable(n)}" for n in notes]
