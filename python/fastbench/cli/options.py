"""Option groups that several subcommands share (clock, sample time, time budget, setup
statements, output file), so each is spelled, defaulted and explained one way, and the
argument types that check a value as it is parsed (a percentage, an output path), so a bad
one is a usage error before anything runs. Adds arguments to a parser only; the commands
read them.
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
from pathlib import Path
from typing import Any

from ..report.lines import printable

__all__ = ["add_clock", "add_max_time", "add_metric", "add_min_time", "add_output",
           "add_processes", "add_setup", "count_options", "output_path", "percent"]

CLOCKS = ["auto", "tsc", "steady"]


def add_clock(p: argparse.ArgumentParser) -> None:
    """``--clock {auto,tsc,steady}``, default auto."""
    p.add_argument("--clock", default="auto", choices=CLOCKS)


def add_min_time(p: argparse.ArgumentParser, default_s: float) -> None:
    """``--min-time SECONDS``: the duration of one sample."""
    p.add_argument("--min-time", type=float, default=default_s,
                   help=f"seconds per sample (default {default_s:g})")


def add_max_time(p: argparse.ArgumentParser, help: str) -> None:
    """``--max-time SECONDS``: a time budget, none by default."""
    p.add_argument("--max-time", type=float, default=None, help=help)


def add_setup(p: argparse.ArgumentParser, help: str) -> None:
    """``-s/--setup STMT``, repeatable; the statements are joined by newlines."""
    p.add_argument("-s", "--setup", action="append", default=[], help=help)


def add_output(p: argparse.ArgumentParser, help: str) -> None:
    """``-o/--output FILE``: where the result is saved, checked by :func:`output_path` as
    it is parsed."""
    p.add_argument("-o", "--output", type=output_path, metavar="FILE", help=help)


def percent(text: str) -> float:
    """An argparse type: a finite percentage >= 0 ("5" for 5%). NaN would compare false
    with every value, so a threshold of NaN could never be crossed."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 5, got {text!r}") from None
    if not math.isfinite(value) or value < 0.0:
        raise argparse.ArgumentTypeError(f"expected a finite percentage >= 0 such as 5, "
                                         f"got {text!r}")
    return value


def output_path(text: str) -> str:
    """An argparse type: a file the command can write its result to, checked before the
    command runs (a long measurement should not end in "no such directory"). The name must
    not be empty; its directory must exist and be writable; an existing file must be a
    writable regular file (as ``fastbench.save`` needs: it refuses read-only targets)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the output file name is empty; give a path such as "
                                         "result.json")
    path = Path(text)
    directory = path.parent
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"cannot write {text}: the directory {directory} "
                                         f"{what}; create it first or choose another path")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write {text}: no permission to write in "
                                         f"{directory}")
    try:
        info = path.stat()  # through symbolic links, to the file that would be written
    except FileNotFoundError:
        return text  # a new file (or a link to one not made yet)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise argparse.ArgumentTypeError(f"{text} is a directory; give a file name in it, "
                                         f"such as {path / 'result.json'}")
    if not stat.S_ISREG(info.st_mode):
        raise argparse.ArgumentTypeError(f"{text} is not a regular file (a device, pipe or "
                                         "socket); choose another path")
    # The mode bits count too: for root, os.access says every file is writable.
    if not info.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text} is read-only; make it writable (chmod u+w) "
                                         "or choose another path")
    return text


def add_processes(p: argparse.ArgumentParser, help: str) -> None:
    """``--processes N``: worker processes, none (this process) by default."""
    p.add_argument("--processes", type=int, default=None, metavar="N", help=help)


def add_metric(p: argparse.ArgumentParser) -> None:
    """``--metric {time,instructions}``: seconds, or instructions per call (deterministic);
    ``--max-calls N``: the most calls an instruction count makes per run."""
    p.add_argument("--metric", default="time", choices=["time", "instructions"],
                   help="time (default), or instructions per call: the PMU where one is "
                   "exposed, else valgrind (simulated, about 70x slower than the code "
                   "natively, plus a few seconds of start-up; a long count says its "
                   "expected cost first, on stderr); does not move with the host's speed")
    p.add_argument("--max-calls", type=int, default=None, metavar="N",
                   help="with --metric instructions: count at most N calls per run "
                   "(default: calls for about 20 ms natively, at least 10)")


def count_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of an instruction count from ``--max-calls``, with a notice that writes
    the expected cost of a long count to stderr; ValueError for ``--max-calls`` without
    ``--metric instructions``."""
    if args.metric != "instructions":
        if args.max_calls is not None:
            raise ValueError("--max-calls bounds an instruction count: add --metric "
                             "instructions, or leave --max-calls out")
        return {}
    return {"max_calls": args.max_calls, "notice": _to_stderr}


def _to_stderr(line: str) -> None:
    print(printable(f"note: {line}"), file=sys.stderr, flush=True)
