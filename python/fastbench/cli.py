"""The fastbench command line: one argparse parser, a cmd_<name> function per subcommand.

Owns parsing, printing and exit codes; the work is done by the library. Errors print one
`error:` line on stderr (the traceback only with --debug) and exit non-zero.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from . import __version__, _core, sysinfo
from .clocks import clocks
from .errors import FastbenchError
from .report import clock_lines, isa_lines, measurement_lines
from .timing import measure, timeit


def _out(lines: Sequence[str] | str = "") -> None:
    text = lines if isinstance(lines, str) else "\n".join(lines)
    print(text, flush=True)


def info_lines() -> list[str]:
    """Everything `fastbench info` prints."""
    lines = [f"fastbench {__version__}", "", "Machine"]
    lines += ["  " + line for line in sysinfo.format_machine(sysinfo.machine_info())]
    lines += ["", "Instruction set", *isa_lines(), "", "Clocks", *clock_lines(clocks())]
    lines += ["", "Noise checks", *sysinfo.format_noise_checks(sysinfo.noise_checks())]
    return lines


def cmd_info(args: argparse.Namespace) -> int:
    _out(info_lines())
    return 0


def cmd_timeit(args: argparse.Namespace) -> int:
    stmt = "\n".join(args.stmt) or "pass"
    setup = "\n".join(args.setup) or "pass"
    m = timeit(stmt, setup=setup, globals={}, warmup=args.warmup, min_time_s=args.min_time,
               repeat=args.repeat, loops=args.number, clock=args.clock)
    _out(measurement_lines(m))
    return 0


def _tour_workloads() -> list[tuple[str, Callable[[], object]]]:
    data = list(range(1000, 0, -1))
    return [("sorted(1000 ints)", lambda: sorted(data)), ("sum(range(1000))", lambda: sum(range(1000)))]


def cmd_tour(args: argparse.Namespace) -> int:
    lines = ["fastbench tour: what this machine offers and how fastbench measures it", ""]
    lines += info_lines()
    _out(lines)
    timed = ["", "Timing two small workloads (fastbench.measure, native loop)"]
    _out(timed)
    for label, fn in _tour_workloads():
        block = [f"- {label}", *measurement_lines(measure(fn, name=label, min_time_s=0.005, repeat=15))]
        _out(block)
        timed += block
    spin_ns = 1000.0
    m = measure(_core.make_spin(spin_ns), name="native 1 µs spin", min_time_s=0.005, repeat=15)
    truth = _core.spin_duration_ns(spin_ns)
    block = [
        "- native spin of known duration (accuracy check)",
        *measurement_lines(m),
        f"  true duration {truth:.1f} ns; net error {(m.net_median_ns / truth - 1) * 100:+.2f}%",
    ]
    _out(block)
    timed += block
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines + timed) + "\n")
        _out(f"\nreport written to {args.output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastbench", description="Honest performance measurement: timing, clocks, noise checks."
    )
    parser.add_argument("--version", action="version", version=f"fastbench {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("info", help="machine, clocks and noise checks")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("timeit", help="time a statement, like python -m timeit")
    p.add_argument("stmt", nargs="*", help="statement(s) to time (joined by newlines)")
    p.add_argument("-s", "--setup", action="append", default=[], help="setup statement (repeatable)")
    p.add_argument("-n", "--number", type=int, default=None, help="loops per sample (default: calibrated)")
    p.add_argument("-r", "--repeat", type=int, default=30, help="counted samples (default 30)")
    p.add_argument("-w", "--warmup", type=int, default=1, help="warmup samples (default 1)")
    p.add_argument("--min-time", type=float, default=0.01, help="seconds per sample (default 0.01)")
    p.add_argument("--clock", default="auto", choices=["auto", "tsc", "steady"])
    p.set_defaults(func=cmd_timeit)

    p = sub.add_parser("tour", help="a first run: info, then a few measurements")
    p.add_argument("-o", "--output", help="also write the report to this file")
    p.set_defaults(func=cmd_tour)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place that turns errors into exit codes
        if args.debug:
            raise
        kind = "" if isinstance(exc, FastbenchError) else f"{type(exc).__name__}: "
        print(f"error: {kind}{exc}", file=sys.stderr)
        return 1
