"""Parsing of cachegrind's and callgrind's output files: the event totals and the caches
valgrind says it simulated. Text in, numbers out; runs nothing.
"""

from __future__ import annotations

import re

from .geometry import CacheGeometry

__all__ = ["output_command", "parse_output"]

_DESC = re.compile(r"^desc:\s+(I1|D1|LL) cache:\s+(\d+) B, (\d+) B, "
                   r"(?:(\d+)-way associative|(direct-mapped))\s*$")


def parse_output(text: str) -> tuple[dict[str, int], dict[str, CacheGeometry]]:
    """The totals and the simulated caches from a cachegrind or callgrind output file.

    Totals are the ``summary:`` line (``totals:`` where there is none), one number per
    name on the ``events:`` line; trailing zeros may be left out, as the format allows.
    Caches come from the ``desc: I1 cache: 32768 B, 64 B, 8-way associative`` lines.

    Raises
    ------
    ValueError
        If there is no ``events:`` line, or no ``summary:``/``totals:`` line.
    """
    names: list[str] | None = None
    summary: list[int] | None = None
    totals: list[int] | None = None
    geometry: dict[str, CacheGeometry] = {}
    for line in text.splitlines():
        if line.startswith("events:") and names is None:
            names = line.split()[1:]
        elif line.startswith("summary:"):
            summary = [int(x) for x in line.split()[1:]]
        elif line.startswith("totals:"):
            totals = [int(x) for x in line.split()[1:]]
        elif line.startswith("desc:"):
            m = _DESC.match(line)
            if m:
                assoc = 1 if m.group(5) else int(m.group(4))
                geometry[m.group(1)] = CacheGeometry(int(m.group(2)), assoc, int(m.group(3)))
    numbers = summary if summary is not None else totals
    if names is None or numbers is None:
        raise ValueError("no 'events:' and 'summary:' lines: not a complete valgrind output file")
    if len(numbers) > len(names):
        raise ValueError(f"{len(numbers)} totals for {len(names)} events")
    numbers = numbers + [0] * (len(names) - len(numbers))
    return dict(zip(names, numbers)), geometry


def output_command(text: str) -> str | None:
    """The command line of the program counted, from the output file's ``cmd:`` line (after
    exec calls valgrind followed, the last program run); None where there is none."""
    for line in text.splitlines():
        if line.startswith("cmd:"):
            return line[len("cmd:"):].strip()
    return None
