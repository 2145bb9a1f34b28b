"""`fastbench stat -- CMD`: count events over a command's runs, like ``perf stat``, with an
optional valgrind simulation; exits with the command's status when a run fails (128 + N
when signal N killed it, as a shell does) and with EXIT_NOT_FOUND when the command does
not exist.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from ..counters import simulate
from ..counters.command import exit_status, stat_command
from ..results import save
from .output import out

__all__ = ["EXIT_NOT_FOUND", "cmd_stat"]

# Exit status of `stat` when the command does not exist (the shell's convention)
EXIT_NOT_FOUND = 127


def cmd_stat(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise ValueError("no command given: fastbench stat [-e EVENTS] [-r N] -- CMD ARGS...")
    events = [e.strip() for e in ",".join(args.events).split(",") if e.strip()] or None
    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if show:
            end = "\n" if done == total else ""
            print(f"\rfastbench stat: run {done}/{total}", end=end, file=sys.stderr, flush=True)

    try:
        result = stat_command(cmd, events, repeat=args.repeat, progress=progress)
    except FileNotFoundError:
        print(f"error: command not found: {cmd[0]}", file=sys.stderr)
        return EXIT_NOT_FOUND
    lines = result.lines()
    if args.simulate:
        sim = simulate(cmd)
        result = replace(result, simulated=sim.to_dict())
        lines += ["", *str(sim).splitlines()]
    out(lines)
    if args.output:
        save(result, args.output)
        out(f"saved to {args.output}")
    failed = [rc for rc in result.returncodes if rc != 0]
    return exit_status(failed[-1]) if failed else 0
