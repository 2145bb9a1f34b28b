"""The fastbench command line: ``main()``, the entry point of the ``fastbench`` console
script and of ``python -m fastbench``.

Owns exit codes and the top-level error handling: errors print one ``error:`` line on stderr
(the traceback only with --debug) and exit non-zero. The parser is :mod:`.parser`, each
subcommand its own module (:mod:`.info`, :mod:`.timeit`, :mod:`.compare`, :mod:`.stat`,
:mod:`.roofline`, :mod:`.analyze`, :mod:`.tour`); the work is done by the library.
"""

from __future__ import annotations

import sys
from typing import Sequence

from ..errors import FastbenchError
from .compare import EXIT_SLOWER
from .parser import build_parser
from .stat import EXIT_NOT_FOUND

__all__ = ["EXIT_INTERRUPTED", "EXIT_NOT_FOUND", "EXIT_SLOWER", "build_parser", "main"]

# Exit status after Ctrl-C (128 + SIGINT, the shell's convention)
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit
    status: 0 on success, 1 on an error, 2 without a command, 130 after Ctrl-C, or the
    command's own status (see EXIT_SLOWER, EXIT_NOT_FOUND)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place that turns errors into exit codes
        if args.debug:
            raise
        kind = "" if isinstance(exc, FastbenchError) else f"{type(exc).__name__}: "
        print(f"error: {kind}{exc}", file=sys.stderr)
        return 1
