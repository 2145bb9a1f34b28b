"""Where the command line writes its report: stdout, line by line, flushed at once so that a
long command shows each part as it finishes. Progress and errors go to stderr elsewhere.
A reader that goes away (``| head``, a pager closed early) is :class:`StdoutClosed`, which
``main`` ends quietly.
"""

from __future__ import annotations

import sys
from typing import Sequence

from ..report.lines import printable

__all__ = ["StdoutClosed", "flush", "out"]


class StdoutClosed(Exception):
    """The reader of stdout went away (EPIPE): nothing more can be shown."""


def out(lines: Sequence[str] | str = "") -> None:
    """Print ``lines`` (one str, or a sequence joined by newlines) and flush. Control
    characters other than the newlines are shown escaped (:func:`printable`): what a results
    file or user code put in a report cannot act on the terminal.

    Raises
    ------
    StdoutClosed
        The reader of stdout went away.
    """
    text = printable(lines if isinstance(lines, str) else "\n".join(lines), keep="\n")
    try:
        print(text, flush=True)
    except BrokenPipeError as exc:
        raise StdoutClosed from exc


def flush() -> None:
    """Flush stdout (what argparse and others printed without flushing).

    Raises
    ------
    StdoutClosed
        The reader of stdout went away.
    """
    try:
        sys.stdout.flush()
    except BrokenPipeError as exc:
        raise StdoutClosed from exc
