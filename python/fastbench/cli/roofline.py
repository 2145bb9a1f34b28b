"""`fastbench roofline`: calibrate this machine's compute and memory ceilings (with a
progress bar on a terminal's stderr), print them, and optionally plot and save them.
"""

from __future__ import annotations

import argparse
import sys

from .. import roofline
from ..report.progress import Progress, progress_bar
from ..results import save
from .output import out

__all__ = ["calibration_progress", "cmd_roofline"]


def calibration_progress() -> Progress | None:
    """The roofline calibration's bar on stderr when it is a terminal, else None."""
    return progress_bar(sys.stderr, "roofline")


def cmd_roofline(args: argparse.Namespace) -> int:
    r = roofline.calibrate(threads=args.threads, quick=args.quick, cache=not args.no_cache,
                           progress=calibration_progress())
    out(r.lines())
    if args.plot:
        out(f"plot written to {roofline.plot(r, args.plot)}")
    if args.output:
        save(r, args.output)
        out(f"saved to {args.output}")
    return 0
