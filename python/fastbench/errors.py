"""Exception types of fastbench.

Bad arguments raise the built-in TypeError/ValueError; failures of the measuring domain
(a clock that cannot be used, counters that are missing) derive from FastbenchError.
"""

from __future__ import annotations

from pathlib import Path


class FastbenchError(Exception):
    """Base class of fastbench's domain errors."""


class ClockUnavailable(FastbenchError, ValueError):
    """The requested clock cannot be used on this machine (the message says why)."""


def last_lines(text: str, lines: int = 20, chars: int = 4000) -> str:
    """The last ``lines`` non-blank lines of ``text``, at most its last ``chars`` characters:
    what a failed child process said, short enough to quote in an error message."""
    kept = [ln for ln in text.rstrip().splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])[-chars:]


def file_tail(path: Path, lines: int = 20, chars: int = 4000) -> str:
    """:func:`last_lines` of a text file (a child's stderr), "" when it cannot be read."""
    try:
        return last_lines(path.read_text(encoding="utf-8", errors="replace"), lines, chars)
    except OSError:
        return ""
