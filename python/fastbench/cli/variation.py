"""`fastbench variation`: measure how much separate runs of the same code vary on this machine
(worker processes one after the other), print it and remember it for this machine.
"""

from __future__ import annotations

import argparse
import sys

from ..machine import variation_path
from ..report.progress import progress_bar
from ..timing.variation import VARIATION_PROCESSES, measure_run_variation
from ..units import format_ns, format_rel
from .output import out

__all__ = ["VARIATION_PROCESSES", "cmd_variation"]


def cmd_variation(args: argparse.Namespace) -> int:
    rv = measure_run_variation(args.processes, store=not args.no_store,
                               progress=progress_bar(sys.stderr, "variation"))
    medians = ", ".join(format_ns(x) for x in rv.run_medians_ns)
    out([f"run-to-run variation: {format_rel(rv.rel_sd)} (relative SD of the medians of "
         f"{rv.processes} processes, {rv.workload})",
         f"  run medians: {medians}"])
    if args.no_store:
        out("  not stored (--no-store)")
    else:
        out(f"  stored for this machine in {variation_path()}; results measured here carry "
            "it, and comparisons of saved results are judged against it until replicates "
            "of their own code (identical results saved here) say how much they vary")
    return 0
