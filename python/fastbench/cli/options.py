"""Option groups that several subcommands share (clock, sample time, time budget, setup
statements, output file), so each is spelled, defaulted and explained one way. Adds
arguments to a parser only; the commands read them.
"""

from __future__ import annotations

import argparse

__all__ = ["add_clock", "add_max_time", "add_metric", "add_min_time", "add_output",
           "add_processes", "add_setup"]

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
    """``-o/--output FILE``: where the result is saved."""
    p.add_argument("-o", "--output", help=help)


def add_processes(p: argparse.ArgumentParser, help: str) -> None:
    """``--processes N``: worker processes, none (this process) by default."""
    p.add_argument("--processes", type=int, default=None, metavar="N", help=help)


def add_metric(p: argparse.ArgumentParser) -> None:
    """``--metric {time,instructions}``: seconds, or instructions per call (deterministic)."""
    p.add_argument("--metric", default="time", choices=["time", "instructions"],
                   help="time (default), or instructions per call: the PMU where one is "
                   "exposed, else valgrind (simulated); does not move with the host's speed")
