"""The fastbench command line: one argparse parser, a cmd_<name> function per subcommand.

Owns parsing, printing and exit codes; the work is done by the library. Errors print one
`error:` line on stderr (the traceback only with --debug) and exit non-zero.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from dataclasses import replace
from typing import Callable, Sequence

from pathlib import Path

from .. import __version__, _core, counters, roofline, machine
from ..roofline import kernels
from ..timing.clocks import clocks
from ..comparison import Comparison, compare, compare_measurements
from ..errors import FastbenchError
from ..measurement import Measurement
from ..report.text import (analysis_placement_lines, clock_lines, comparison_lines, counter_lines,
                     isa_lines, measurement_lines)
from ..results import load_any, save
from ..counters.command import stat_command
from ..timing import DEFAULT_DURATION_S, DEFAULT_SAMPLE_S, measure, timeit
from ..units import format_ns

# Exit status of `stat` when the command does not exist (the shell's convention)
EXIT_NOT_FOUND = 127
# Exit status of `compare` when a significant slowdown beyond --fail-slower was found
# (1 is any error, 2 a usage error).
EXIT_SLOWER = 3


def _out(lines: Sequence[str] | str = "") -> None:
    text = lines if isinstance(lines, str) else "\n".join(lines)
    print(text, flush=True)


def info_lines() -> list[str]:
    """Everything `fastbench info` prints."""
    lines = [f"fastbench {__version__}", "", "Machine"]
    lines += ["  " + line for line in machine.format_machine(machine.machine_info())]
    lines += ["", "Instruction set", *isa_lines(), "", "Clocks", *clock_lines(clocks())]
    lines += ["", "Event counters (perf_event, user space)", *counter_lines(counters.available())]
    lines += ["", "Noise checks", *machine.format_noise_checks(machine.noise_checks())]
    return lines


def cmd_info(args: argparse.Namespace) -> int:
    _out(info_lines())
    return 0


def cmd_timeit(args: argparse.Namespace) -> int:
    stmt = "\n".join(args.stmt) or "pass"
    setup = "\n".join(args.setup) or "pass"
    m = timeit(stmt, setup=setup, globals={}, warmup=args.warmup, min_time_s=args.min_time,
               repeat=args.repeat, duration_s=args.duration or None, loops=args.number,
               clock=args.clock,
               max_time_s=args.max_time, target_rel_ci=args.target_rel_ci)
    _out(measurement_lines(m))
    if args.output:
        save(m, args.output)
        _out(f"saved to {args.output}")
    return 0


def _slowdowns(comparisons: Sequence[Comparison], fail_slower: float | None) -> list[str]:
    """Candidates found significantly slower by more than ``fail_slower`` percent."""
    if fail_slower is None:
        return []
    return [f"{name} ({r.rel_diff_pct:+.2f}%)" for c in comparisons for name, r in c.results.items()
            if r.verdict == "slower" and r.rel_diff_pct > fail_slower]


def _file_comparisons(paths: Sequence[str], args: argparse.Namespace) -> list[Comparison]:
    """Compare saved results: the first file is the baseline, matched by benchmark name.

    Files holding one measurement each are compared whatever their names; otherwise each
    benchmark of the baseline file is compared with the same name in the other files.
    """
    loaded = [(Path(p).name, load_any(p)) for p in paths]
    (base_label, base), cands = loaded[0], loaded[1:]

    def judge(baseline: Measurement, found: dict[str, Measurement], label: str) -> Comparison:
        return compare_measurements(baseline, found, baseline_name=label, alpha=args.alpha,
                                    min_effect=args.min_effect, correction=args.correction)

    if len(base) == 1 and all(len(c) == 1 for _, c in cands):
        singles: dict[str, Measurement] = {}
        for label, c in cands:
            key = label if label not in singles and label != base_label else f"{label}#{len(singles) + 2}"
            singles[key] = next(iter(c.values()))
        return [judge(next(iter(base.values())), singles, base_label)]
    out = []
    for name, m in base.items():
        found = {label: c[name] for label, c in cands if name in c}
        if found:
            out.append(judge(m, found, f"{name} @ {base_label}"))
        else:
            _out(f"{name}: in no candidate file, skipped")
    return out


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
        from ..counters import simulate  # valgrind's runner loads only when asked for

        sim = simulate(cmd)
        result = replace(result, simulated=sim.to_dict())
        lines += ["", *str(sim).splitlines()]
    _out(lines)
    if args.output:
        save(result, args.output)
        _out(f"saved to {args.output}")
    failed = [rc for rc in result.returncodes if rc != 0]
    return failed[-1] if failed else 0


def cmd_compare(args: argparse.Namespace) -> int:
    if args.run:
        if args.files:
            raise ValueError("give either result files or --run statements, not both")
        if len(args.run) < 2:
            raise ValueError("--run needs at least two statements")
        variants = {f"[{i}] {stmt}": stmt for i, stmt in enumerate(args.run)}
        setup = "\n".join(args.setup) or "pass"
        c = compare(variants, baseline=next(iter(variants)), rounds=args.rounds,
                    min_time_s=args.min_time, max_time_s=args.max_time, clock=args.clock,
                    alpha=args.alpha, min_effect=args.min_effect, correction=args.correction,
                    setup=setup, globals={})
        comparisons = [c]
        if args.output:
            save(c, args.output)
    else:
        if len(args.files) < 2:
            raise ValueError("compare needs a baseline file and at least one candidate file "
                             "(or --run STMT STMT ...)")
        comparisons = _file_comparisons(args.files, args)
    for i, c in enumerate(comparisons):
        _out(([""] if i else []) + comparison_lines(c))
    if args.output and args.run:
        _out(f"saved to {args.output}")
    slower = _slowdowns(comparisons, args.fail_slower)
    if slower:
        print(f"error: significantly slower by more than {args.fail_slower}%: "
              f"{', '.join(slower)}", file=sys.stderr)
        return EXIT_SLOWER
    return 0


def _tour_analysis(roof: roofline.Roofline, batch: int = 8) -> list[str]:
    """The three small models counted from layer specs (no framework), placed on the
    roofline; with torch, the same models counted again from their aten ops; a region's peak
    memory."""
    import numpy as np

    from .. import memory
    from ..analysis import format_count, specs
    from ..analysis.layers import analyze_layers

    lines = [f"- layer specs (no framework), batch {batch}, one training step; roofline bound "
             "from the step's FLOPs and bytes (float32, DRAM):"]
    steps = {}
    for name, build in specs.SPECS.items():
        spec, shape = build(batch)
        la = analyze_layers(spec, shape, backward=True)
        steps[name] = la
        c = la.total
        attainable = roof.attainable(c.intensity, "float32", "DRAM")
        bound = roof.bound(c.intensity, "float32", "DRAM")
        lines.append(f"  {name:<18} {la.params:>9,} params  {format_count(c.macs, 'MACs'):>12}  "
                     f"{format_count(c.flops, 'FLOPs'):>12}  {format_count(c.bytes, 'B'):>10}  "
                     f"{c.intensity:6.1f} FLOP/B  >= {format_ns(c.flops / attainable)} ({bound})")
    lines += ["- the transformer block, layer by layer:"]
    lines += ["  " + line for line in steps["transformer_block"].lines()]
    if importlib.util.find_spec("torch") is None:
        lines.append("- PyTorch is not installed: with it, fastbench.analysis.analyze and "
                     "`fastbench analyze` count any nn.Module from the aten ops it runs")
    else:
        from ..analysis import analyze
        from ..pytorch import models

        lines.append("- the same models in PyTorch, counted from the aten ops they run "
                     "(fastbench.analysis.analyze, forward + backward):")
        for name, la in steps.items():
            model = getattr(models, name)()
            a = analyze(model, *model.example_input(batch), backward=True)
            same = "equal" if a.macs == la.macs and a.params == la.params else "DIFFERENT"
            lines.append(f"  {name:<18} {a.params:>9,} params  {format_count(a.macs, 'MACs'):>12}  "
                         f"{format_count(a.flops, 'FLOPs'):>12}  MACs and params {same}; "
                         f"{sum(a.coverage.ops.values())} aten calls, "
                         f"{'complete' if a.complete else 'INCOMPLETE'}")
    with memory.track() as m:
        block = np.ones(64 << 17)          # 64 MiB of float64, touched
        m.snapshot("allocated")
        del block
    lines.append("- fastbench.memory.track() around allocating and freeing 64 MiB of numpy:")
    lines += ["  " + line for line in m.lines()]
    return lines


def _tour_workloads() -> list[tuple[str, Callable[[], object]]]:
    data = list(range(1000, 0, -1))
    return [("sorted(1000 ints)", lambda: sorted(data)), ("sum(range(1000))", lambda: sum(range(1000)))]


def _tour_placements(roof: roofline.Roofline) -> list[str]:
    """A GEMM and a triad, measured and placed on the roofline."""
    import numpy as np

    n = 256
    a = np.ones((n, n), dtype=np.float32)
    out = np.empty_like(a)
    m = measure(kernels.gemm, a, a, out, name="gemm 256")
    # Each operand read once and the result written once: the least traffic GEMM can do.
    gemm = roof.place(m, flops=2.0 * n**3, bytes=3.0 * n * n * 4, dtype="float32", level="L2")
    size = 1 << 22  # 4 Mi elements per array: 96 MiB moved, far beyond the caches
    x, y, z = (np.ones(size) for _ in range(3))
    m = measure(lambda: np.add(y, np.multiply(z, 3.0, out=x), out=x), name="numpy triad")
    # Two ufunc passes: x = 3·z reads z and writes x, x = y + x reads y and x and writes x.
    triad = roof.place(m, flops=2.0 * size, bytes=5.0 * size * 8, dtype="float64", level="DRAM")
    return ["- fastbench GEMM n=256 float32, operands in L2", *gemm.lines(),
            "- numpy x = y + 3·z on 4 Mi float64 (two ufunc passes, 5 sweeps of 32 MiB)",
            *triad.lines()]


def cmd_roofline(args: argparse.Namespace) -> int:
    r = roofline.calibrate(threads=args.threads, quick=args.quick, cache=not args.no_cache)
    _out(r.lines())
    if args.plot:
        _out(f"plot written to {roofline.plot(r, args.plot)}")
    if args.output:
        save(r, args.output)
        _out(f"saved to {args.output}")
    return 0


def _factory_kwargs(items: Sequence[str]) -> dict[str, object]:
    """``KEY=VALUE`` pairs; values are Python literals where they parse as one, else strings."""
    import ast

    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"--arg takes KEY=VALUE, got {item!r}")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def cmd_analyze(args: argparse.Namespace) -> int:
    from ..analysis import analyze
    from ..pytorch import loading

    factory = loading.resolve_factory(args.model)
    model = loading.build_model(factory, args.device, _factory_kwargs(args.arg))
    shapes = [loading.parse_shape(s) for s in args.input_shape]
    inputs = loading.build_inputs(model, shapes, args.input_dtype, args.device, args.batch)
    if args.eval:
        model.eval()
    a = analyze(model, *inputs, backward=args.backward, grad_mode=args.grad_mode)
    _out(a.lines(max_depth=None if args.depth < 0 else args.depth))
    if args.roofline:
        roof = roofline.calibrate(quick=True)
        _out(["", "Roofline placement (attainable speed from each module's FLOPs and bytes, "
              f"{roof.threads} threads, DRAM bandwidth)"])
        _out(analysis_placement_lines(a, roof, max_depth=1 if args.depth < 0 else args.depth))
    if args.output:
        save(a, args.output)
        _out(f"saved to {args.output}")
    return 0


def cmd_tour(args: argparse.Namespace) -> int:
    lines = ["fastbench tour: what this machine offers and how fastbench measures it", ""]
    lines += info_lines()
    _out(lines)
    timed = ["", "Timing two small workloads (fastbench.measure, native loop)"]
    _out(timed)
    for label, fn in _tour_workloads():
        block = [f"- {label}", *measurement_lines(measure(fn, name=label))]
        _out(block)
        timed += block
    spin_ns = 1000.0
    m = measure(_core.make_spin(spin_ns), name="native 1 µs spin")
    truth = _core.spin_duration_ns(spin_ns)
    block = [
        "- native spin of known duration (accuracy check)",
        *measurement_lines(m),
        f"  true duration {truth:.1f} ns; net error {(m.net_median_ns / truth - 1) * 100:+.2f}%",
    ]
    _out(block)
    timed += block
    data = list(range(300, 0, -1))
    block = ["", "A/B comparison (fastbench.compare: interleaved rounds, paired test)"]
    _out(block)
    c = compare({"sorted(copy)": lambda: sorted(data), "list.sort(copy)": lambda: list(data).sort(),
                 "sorted(copy) again": lambda: sorted(data)},
                baseline="sorted(copy)", rounds=12, min_time_s=0.003)
    block += comparison_lines(c)
    _out(comparison_lines(c))
    timed += block
    block = ["", "Roofline (fastbench.roofline.calibrate(quick=True), then two workloads placed)"]
    _out(block)
    roof = roofline.calibrate(quick=True)
    placed = roof.lines() + _tour_placements(roof)
    _out(placed)
    timed += block + placed
    block = ["", "Model analysis (fastbench.analysis: FLOPs, MACs, bytes, parameters; "
             "fastbench.memory: peak memory)"]
    _out(block)
    analysed = _tour_analysis(roof)
    _out(analysed)
    timed += block + analysed
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
    p.add_argument("-r", "--repeat", type=int, default=100,
                   help="minimum counted samples (default 100)")
    p.add_argument("-w", "--warmup", type=int, default=1, help="warmup samples (default 1)")
    p.add_argument("--min-time", type=float, default=DEFAULT_SAMPLE_S,
                   help=f"seconds per sample (default {DEFAULT_SAMPLE_S:g})")
    p.add_argument("--duration", type=float, default=DEFAULT_DURATION_S,
                   help=f"minimum seconds of counted samples (default {DEFAULT_DURATION_S:g}; "
                   "0 stops at --repeat)")
    p.add_argument("--clock", default="auto", choices=["auto", "tsc", "steady"])
    p.add_argument("--max-time", type=float, default=None, help="time budget in seconds")
    p.add_argument("--target-rel-ci", type=float, default=None,
                   help="sample until the median's 95%% CI is within this fraction (e.g. 0.01)")
    p.add_argument("-o", "--output", help="save the measurement to this JSON file")
    p.set_defaults(func=cmd_timeit)

    p = sub.add_parser("compare", help="A/B: compare saved results, or statements interleaved",
                       description="Compare BASE.json with CAND.json ... (saved by fastbench, "
                       "pyperf or pytest-benchmark), or measure --run statements interleaved. "
                       f"Exits {EXIT_SLOWER} when --fail-slower finds a significant slowdown.")
    p.add_argument("files", nargs="*", help="baseline file, then candidate files")
    p.add_argument("--run", nargs="+", metavar="STMT", help="statements to measure (first = baseline)")
    p.add_argument("-s", "--setup", action="append", default=[], help="setup for --run (repeatable)")
    p.add_argument("--rounds", type=int, default=100, help="interleaved rounds for --run (default 100)")
    p.add_argument("--min-time", type=float, default=0.001, help="seconds per sample (default 0.001)")
    p.add_argument("--max-time", type=float, default=None, help="time budget for the rounds")
    p.add_argument("--clock", default="auto", choices=["auto", "tsc", "steady"])
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--min-effect", type=float, default=0.01,
                   help="smallest relative difference called a change (default 0.01)")
    p.add_argument("--correction", default="holm", choices=["holm", "bh", "none"])
    p.add_argument("--fail-slower", type=float, default=None, metavar="PCT",
                   help=f"exit {EXIT_SLOWER} if a candidate is significantly slower by more than PCT%%")
    p.add_argument("-o", "--output", help="save the --run comparison to this JSON file")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("tour", help="a first run: info, then a few measurements")
    p.add_argument("-o", "--output", help="also write the report to this file")
    p.set_defaults(func=cmd_tour)

    p = sub.add_parser(
        "roofline", help="calibrate this machine's compute and memory ceilings",
        description="Measure FMA peak, FMA+ADD peak and GEMM (GFLOP/s) and STREAM triad "
        "bandwidth per cache level (GB/s); the result is cached per machine and fastbench "
        "version.")
    p.add_argument("--quick", action="store_true", help="a few seconds: one size per level")
    p.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    p.add_argument("--no-cache", action="store_true", help="measure even if a cached result exists")
    p.add_argument("--plot", help="write a log-log roofline plot (needs matplotlib)")
    p.add_argument("-o", "--output", help="save the roofline to this JSON file")
    p.set_defaults(func=cmd_roofline)

    p = sub.add_parser(
        "analyze", help="FLOPs, MACs, bytes, parameters and memory of a PyTorch model",
        description="Build MODULE:FACTORY (e.g. fastbench.analysis.models:resnet50 or "
        "./net.py:Net), run it once on the inputs and count every aten op per module. Needs "
        "torch. --device meta analyses a large model without allocating it.")
    p.add_argument("model", metavar="MODULE:FACTORY")
    p.add_argument("--input-shape", action="append", default=[], metavar="SHAPE",
                   help="an input's shape, e.g. 1,3,224,224 (repeat for several inputs; default: "
                   "the factory's example_input)")
    p.add_argument("--input-dtype", action="append", default=[], metavar="DTYPE",
                   help="torch dtype of each input (default float32; int64 for token ids)")
    p.add_argument("--batch", type=int, default=None,
                   help="batch size of the factory's example input (default 1)")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument of the factory (repeatable), e.g. attention=explicit")
    p.add_argument("--device", default="meta", help="device to build on (default meta)")
    p.add_argument("--backward", action="store_true", help="also count the backward pass")
    p.add_argument("--grad-mode", default="grad", choices=["grad", "no_grad", "inference_mode"])
    p.add_argument("--eval", action="store_true", help="put the model in eval mode first")
    p.add_argument("--depth", type=int, default=2,
                   help="module depth shown in the table (default 2; -1 for all)")
    p.add_argument("--roofline", action="store_true",
                   help="place each module on this machine's roofline (a quick calibration, cached)")
    p.add_argument("-o", "--output", help="save the analysis to this JSON file")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser(
        "stat", help="count events over a command, like perf stat",
        description="Run CMD --repeat times with counters inherited by its processes and "
        "threads; print each event's mean ± 95%% CI, running fraction, derived metrics, and "
        "one line per event that cannot be counted here with the reason. Exits with the "
        "command's status when a run fails.")
    p.add_argument("-e", "--events", action="append", default=[],
                   help="comma-separated events (default: perf stat's set); see fastbench info")
    p.add_argument("-r", "--repeat", type=int, default=5, help="runs of the command (default 5)")
    p.add_argument("--simulate", action="store_true",
                   help="also run it once under valgrind cachegrind: exact instruction counts "
                   "and simulated cache misses, with the cache sizes fastbench detects")
    p.add_argument("-o", "--output", help="save the result to this JSON file")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    p.set_defaults(func=cmd_stat)
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
