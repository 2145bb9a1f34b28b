"""`fastbench info`: the machine, its instruction set, clocks, event counters and noise
checks. Gathers the sections' lines; the facts come from the library.
"""

from __future__ import annotations

import argparse

from .. import __version__, counters, machine
from ..report.machine import format_machine, format_noise_checks
from ..report.text import clock_lines, counter_lines, isa_lines
from ..timing.clocks import clocks
from .output import out

__all__ = ["cmd_info", "info_lines"]


def info_lines() -> list[str]:
    """Everything `fastbench info` prints."""
    lines = [f"fastbench {__version__}", "", "Machine"]
    lines += ["  " + line for line in format_machine(machine.machine_info())]
    lines += ["", "Instruction set", *isa_lines(), "", "Clocks", *clock_lines(clocks())]
    lines += ["", "Event counters (perf_event, user space)", *counter_lines(counters.available())]
    lines += ["", "Noise checks", *format_noise_checks(machine.noise_checks())]
    return lines


def cmd_info(args: argparse.Namespace) -> int:
    out(info_lines())
    return 0
