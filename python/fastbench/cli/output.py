"""Where the command line writes its report: stdout, line by line, flushed at once so that a
long command shows each part as it finishes. Progress and errors go to stderr elsewhere.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["out"]


def out(lines: Sequence[str] | str = "") -> None:
    """Print ``lines`` (one str, or a sequence joined by newlines) and flush."""
    text = lines if isinstance(lines, str) else "\n".join(lines)
    print(text, flush=True)
