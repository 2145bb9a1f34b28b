"""`fastbench timeit`: time a statement, like ``python -m timeit``, and print its statistics;
optionally save the measurement.
"""

from __future__ import annotations

import argparse

from ..report.text import measurement_lines
from ..results import save
from ..timing import timeit
from .output import out

__all__ = ["cmd_timeit"]


def cmd_timeit(args: argparse.Namespace) -> int:
    stmt = "\n".join(args.stmt) or "pass"
    setup = "\n".join(args.setup) or "pass"
    m = timeit(stmt, setup=setup, globals={}, warmup=args.warmup, min_time_s=args.min_time,
               repeat=args.repeat, duration_s=args.duration or None, loops=args.number,
               clock=args.clock,
               max_time_s=args.max_time, target_rel_ci=args.target_rel_ci)
    out(measurement_lines(m))
    if args.output:
        save(m, args.output)
        out(f"saved to {args.output}")
    return 0
