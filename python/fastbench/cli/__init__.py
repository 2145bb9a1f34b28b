"""The fastbench command line: ``main()``, the entry point of the ``fastbench`` console
script and of ``python -m fastbench``.

Owns exit codes and the top-level error handling: errors print one ``error:`` line on stderr
(the traceback only with --debug, given before or after the subcommand) and exit non-zero;
a reader of stdout that goes away (``| head``) ends the command quietly with
EXIT_BROKEN_PIPE. Commands that import the user's code find it in the current directory, as
``python -m timeit`` does. The parser is :mod:`.parser`, each
subcommand its own module (:mod:`.info`, :mod:`.timeit`, :mod:`.compare`, :mod:`.stat`,
:mod:`.roofline`, :mod:`.analyze`, :mod:`.tour`); the work is done by the library.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Sequence

from .._children import Terminated
from ..errors import FastbenchError
from ..report.lines import printable
from .compare import EXIT_SLOWER, EXIT_UNDECIDED
from .output import StdoutClosed, flush
from .parser import build_parser
from .stat import EXIT_NOT_FOUND

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "EXIT_NOT_FOUND", "EXIT_SLOWER",
           "EXIT_UNDECIDED", "build_parser", "main"]

# Exit status after Ctrl-C (128 + SIGINT, the shell's convention)
EXIT_INTERRUPTED = 130
# Exit status when the reader of stdout went away (128 + SIGPIPE): what the shell reports
# for a tool that SIGPIPE ended, as `yes | head` does, so `set -o pipefail` sees it alike.
EXIT_BROKEN_PIPE = 141
# The commands that import the user's modules (setup statements, MODULE:FACTORY, a suite's
# factory or metric): the current directory goes first on sys.path for them. The console
# script's sys.path[0] is the directory of the script (the environment's bin/), not the
# current one, so `fastbench timeit -s "from work import f"` missed work.py where
# `python -m fastbench` found it; `python -m timeit` puts the current directory first for
# the same reason. Worker processes and valgrind's interpreter inherit the parent's sys.path.
_USER_CODE_COMMANDS = ("timeit", "compare", "analyze", "profile", "suite")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit
    status: 0 on success, 1 on an error, 2 without a command or on a usage error (argparse
    exits with it), 130 after Ctrl-C, 141 when the reader of stdout went away (nothing is
    printed then), or the command's own status (see EXIT_SLOWER, EXIT_UNDECIDED,
    EXIT_NOT_FOUND)."""
    try:
        try:
            return _run(argv)
        finally:  # after --help and usage errors too: argparse prints without flushing
            flush()
    except StdoutClosed:
        # Python would flush stdout again at exit and report the broken pipe: point it at
        # the null device first (the idiom of the signal module's documentation).
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # a stdout without a descriptor (replaced in-process)
            pass
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    added = _current_directory_first() if args.command in _USER_CODE_COMMANDS else None
    try:
        code: int = args.func(args)
        return code
    except StdoutClosed:
        raise
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated as exc:
        # The children are gone and the temporary files removed: now die of the signal, so
        # that whoever sent it (timeout, a CI runner) sees it as the cause.
        print(f"error: {exc}", file=sys.stderr)
        sys.stderr.flush()
        signal.signal(exc.signum, signal.SIG_DFL)
        os.kill(os.getpid(), exc.signum)
        return 128 + exc.signum
    except Exception as exc:  # noqa: BLE001 - the one place that turns errors into exit codes
        if args.debug:
            raise
        kind = "" if isinstance(exc, FastbenchError) else f"{type(exc).__name__}: "
        # A message may quote a file's field or user code's text: shown escaped.
        print(printable(f"error: {kind}{exc}", keep="\n"), file=sys.stderr)
        return 1
    finally:
        if added is not None and added in sys.path:  # main() called in a program: as it was
            sys.path.remove(added)


def _current_directory_first() -> str | None:
    """Put the current directory first on sys.path, as ``python -m`` does; the entry added,
    or None when it was there already (``python -m fastbench``) or there is none."""
    try:
        here = os.getcwd()
    except OSError:  # removed while we were in it: nothing of the user's to import there
        return None
    if any(p in ("", os.curdir, here) for p in sys.path):
        return None
    sys.path.insert(0, here)
    return here
