"""`fastbench timeit`: time a statement, like ``python -m timeit``, and print its statistics;
optionally save the measurement.
"""

from __future__ import annotations

import argparse

from ..report.text import instruction_count_lines, measurement_lines
from ..results import save
from ..timing import timeit
from .options import count_options
from .output import out

__all__ = ["cmd_timeit"]


def cmd_timeit(args: argparse.Namespace) -> int:
    stmt = "\n".join(args.stmt) or "pass"
    setup = "\n".join(args.setup) or "pass"
    counting = count_options(args)
    if args.metric == "instructions":
        count = timeit(stmt, setup=setup, metric="instructions", processes=args.processes,
                       **counting)
        out(instruction_count_lines(count))
        _save(count, args.output)
        return 0
    m = timeit(stmt, setup=setup, globals={}, warmup=args.warmup, min_time_s=args.min_time,
               repeat=args.repeat, duration_s=args.duration or None, loops=args.number,
               clock=args.clock,
               max_time_s=args.max_time, target_rel_ci=args.target_rel_ci,
               processes=args.processes)
    out(measurement_lines(m))
    _save(m, args.output)
    return 0


def _save(result: object, path: str | None) -> None:
    if path is not None:
        save(result, path)
        out(f"saved to {path}")
