"""The one argparse parser of the fastbench command line: a subcommand per action, each
bound to its module's ``cmd_<name>``. Declares arguments only; shared option groups are
:mod:`.options`'.
"""

from __future__ import annotations

import argparse

from .. import __version__
from ..timing import DEFAULT_DURATION_S, DEFAULT_SAMPLE_S
from .analyze import cmd_analyze
from .compare import EXIT_SLOWER, EXIT_UNDECIDED, cmd_compare
from .info import cmd_info
from .profile import cmd_profile
from .options import (add_clock, add_max_time, add_metric, add_min_time, add_output,
                      add_processes, add_setup, output_path, percent)
from .roofline import cmd_roofline
from .stat import cmd_stat
from .suite import cmd_suite
from .timeit import cmd_timeit
from .tour import cmd_tour
from .variation import VARIATION_PROCESSES, cmd_variation

__all__ = ["COMPARE_EPILOG", "build_parser"]

COMPARE_EPILOG = f"""\
exit status:
  0  compared, and no candidate failed the gate
  1  an error: a file that cannot be read, nothing compared, a version that cannot be
     checked out or installed, a worker that failed
  2  a usage error
  {EXIT_SLOWER}  --fail-slower PCT: a candidate significantly slower by more than PCT%
  {EXIT_UNDECIDED}  --strict: a candidate the gate cannot judge ("cannot tell", or an interval
     that still allows a slowdown beyond PCT%); without --strict it is said on stderr

examples:
  fastbench compare before.json after.json --fail-slower 5
  fastbench compare --versions main=git:main pr=. -s "from mypkg import f" --run "f()"
"""


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``fastbench [--version] [--debug] COMMAND ...``; each subcommand sets
    ``func`` to the function that runs it."""
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
    add_setup(p, "setup statement (repeatable)")
    p.add_argument("-n", "--number", type=int, default=None, help="loops per sample (default: calibrated)")
    p.add_argument("-r", "--repeat", type=int, default=100,
                   help="minimum counted samples (default 100)")
    p.add_argument("-w", "--warmup", type=int, default=1, help="warmup samples (default 1)")
    add_min_time(p, DEFAULT_SAMPLE_S)
    p.add_argument("--duration", type=float, default=DEFAULT_DURATION_S,
                   help=f"minimum seconds of counted samples (default {DEFAULT_DURATION_S:g}; "
                   "0 stops at --repeat)")
    add_clock(p)
    add_max_time(p, "time budget in seconds")
    p.add_argument("--target-rel-ci", type=float, default=None,
                   help="sample until the median's 95%% CI is within this fraction (e.g. 0.01)")
    add_processes(p, "run the measurement in N fresh worker processes, one after the other "
                  "(about N times as long); the interval then covers run-to-run variation. "
                  "With --metric instructions: count in N heap layouts")
    add_metric(p)
    add_output(p, "save the measurement to this JSON file")
    p.set_defaults(func=cmd_timeit)

    p = sub.add_parser(
        "compare", help="A/B: saved results, statements interleaved, or versions of the code",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compare BASE.json with CAND.json ... (saved by fastbench, pyperf or "
        "pytest-benchmark), measure --run statements interleaved, or measure one --run "
        "statement in several --versions of the code (git refs, directories, interpreters) "
        "in one invocation. The first is the baseline.",
        epilog=COMPARE_EPILOG)
    p.add_argument("files", nargs="*", help="baseline file, then candidate files")
    p.add_argument("--run", nargs="+", metavar="STMT",
                   help="statements to measure (first = baseline); with --versions, one")
    add_setup(p, "setup for --run (repeatable)")
    p.add_argument("--versions", nargs="+", metavar="NAME=SPEC",
                   help="versions of the code to measure --run in, the first the baseline: "
                   "SPEC is git:REF (checked out into a temporary worktree), a directory "
                   "(. is the working tree as it is) or python:PATH (another interpreter)")
    p.add_argument("--design", default="auto", choices=["auto", "interleaved", "duet"],
                   help="with --versions: duets (two versions at once, one per core, cores "
                   "swapped each duet), interleaved workers (one at a time), or auto "
                   "(default: duets where two cores are free)")
    p.add_argument("--install", metavar="CMD", default=None,
                   help="with --versions: a shell command run in each version's directory "
                   "to make it importable; what it puts in $FASTBENCH_VERSION_TARGET goes "
                   "first on the version's path (e.g. '\"$FASTBENCH_PYTHON\" -m pip install "
                   "--no-deps --target \"$FASTBENCH_VERSION_TARGET\" .')")
    p.add_argument("--rounds", type=int, default=100, help="interleaved rounds for --run (default 100)")
    add_min_time(p, 0.001)
    add_max_time(p, "time budget for the rounds")
    add_clock(p)
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--min-effect", type=float, default=0.01,
                   help="smallest relative difference called a change (default 0.01)")
    p.add_argument("--correction", default="holm", choices=["holm", "bh", "none"])
    add_processes(p, "with --run: measure the statements in N worker processes (see "
                  "--pairing) and judge the paired run medians (t test); with --versions, "
                  "workers (duets) per version (default 10); with --metric instructions, "
                  "count each in N heap layouts and judge against their spread")
    p.add_argument("--pairing", default="workers", choices=["workers", "rounds"],
                   help="with --processes: 'workers' (default) measures each statement in "
                   "workers of its own, interleaved A B B A ...; 'rounds' measures all of them "
                   "side by side in every worker, so what makes one process faster than the "
                   "next cancels in their ratio")
    add_metric(p)
    p.add_argument("--tolerance", type=percent, default=0.5, metavar="PCT",
                   help="with --metric instructions: the change in %% that counts as a "
                   "difference (default 0.5)")
    p.add_argument("--run-variation", type=percent, default=None, metavar="PCT",
                   help="how much whole results vary here, in %% (default: learned from the "
                   "replicates of each side saved here, else what the files carry or "
                   "`fastbench variation` measured)")
    p.add_argument("--fail-slower", type=percent, default=None, metavar="PCT",
                   help=f"exit {EXIT_SLOWER} if a candidate is significantly slower by more "
                   "than PCT%%; a candidate the gate cannot judge is said on stderr")
    p.add_argument("--strict", action="store_true",
                   help=f"exit {EXIT_UNDECIDED} when the gate cannot judge a candidate "
                   "('cannot tell', or an interval that allows a slowdown beyond --fail-slower)")
    p.add_argument("--json", type=output_path, metavar="FILE", default=None,
                   help="write every verdict, interval, p value, warning code, both "
                   "identities and the gate's decision to FILE as JSON")
    add_output(p, "save the --run comparison to this JSON file")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "variation", help="measure how much separate runs vary on this machine, and remember it",
        description="Time a small workload in N fresh processes, one after the other, and keep "
        "the spread of their medians for this machine: results measured here carry it, and "
        "comparisons of saved results are judged against it until replicates of their own "
        "code (identical results saved here) say how much they vary.")
    p.add_argument("--processes", type=int, default=VARIATION_PROCESSES,
                   help=f"worker processes (default {VARIATION_PROCESSES}, at least 3; "
                   "about 1.3 s each)")
    p.add_argument("--no-store", action="store_true", help="measure and print only")
    p.set_defaults(func=cmd_variation)

    p = sub.add_parser("tour", help="a first run: info, then a few measurements")
    add_output(p, "also write the report to this file")
    p.set_defaults(func=cmd_tour)

    p = sub.add_parser(
        "roofline", help="calibrate this machine's compute and memory ceilings",
        description="Measure FMA peak, FMA+ADD peak and GEMM (GFLOP/s) and STREAM triad "
        "bandwidth per cache level (GB/s); the result is cached per machine and fastbench "
        "version.")
    p.add_argument("--quick", action="store_true", help="a few seconds: one size per level")
    p.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    p.add_argument("--no-cache", action="store_true", help="measure even if a cached result exists")
    p.add_argument("--plot", type=output_path, metavar="FILE",
                   help="write a log-log roofline plot (needs matplotlib)")
    add_output(p, "save the roofline to this JSON file")
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
    p.add_argument("--fallback", choices=["cpu"], default=None,
                   help="where the meta device cannot build or run the model (an op that needs "
                   "tensor values, such as nonzero in a detector), build and analyse it on this "
                   "device instead, with a note")
    p.add_argument("--backward", action="store_true", help="also count the backward pass")
    p.add_argument("--grad-mode", default="grad", choices=["grad", "no_grad", "inference_mode"])
    p.add_argument("--eval", action="store_true", help="put the model in eval mode first")
    p.add_argument("--depth", type=int, default=2,
                   help="module depth shown in the table (default 2; -1 for all)")
    p.add_argument("--roofline", action="store_true",
                   help="place each module on this machine's roofline (a quick calibration, cached)")
    add_output(p, "save the analysis to this JSON file")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser(
        "profile", help="where the time goes: a PyTorch model per op/module, or any script",
        description="MODULE:FACTORY: build the model on cpu and profile --steps calls (each op "
        "timed, attributed to its module and family, judged on the roofline, the profiler's "
        "cost subtracted and its observer effect measured). `-- python script.py ARGS`: run "
        "a script under the sampling profiler (time per function and line, with intervals). "
        "`diff A.json B.json`: which items changed between two saved profiles.")
    p.add_argument("target", nargs="?", metavar="MODULE:FACTORY | diff | python",
                   help="what to profile")
    p.add_argument("--input-shape", action="append", default=[], metavar="SHAPE",
                   help="an input's shape, e.g. 1,3,224,224 (repeatable; default: the "
                   "factory's example_input)")
    p.add_argument("--input-dtype", action="append", default=[], metavar="DTYPE",
                   help="torch dtype of each input (default float32; int64 for token ids)")
    p.add_argument("--batch", type=int, default=None,
                   help="batch size of the factory's example input (default 1)")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument of the factory (repeatable)")
    p.add_argument("--backward", action="store_true",
                   help="a step is forward and backward (of the output's sum)")
    p.add_argument("--steps", type=int, default=20, help="profiled steps (default 20)")
    p.add_argument("--collector", choices=["auto", "native", "dispatch"], default="auto",
                   help="what times the ops: the native RecordFunction observer (built on "
                   "first use; needs a C++ compiler and ninja) or the Python dispatch mode "
                   "(default auto: native where it builds)")
    p.add_argument("--top", type=int, default=10, help="rows shown with --by (default 10)")
    p.add_argument("--by", choices=["op", "op_shapes", "module", "family", "region"],
                   default=None,
                   help="show one table (default: the whole report)")
    p.add_argument("--trace", type=output_path, metavar="FILE",
                   help="write a Chrome/Perfetto trace (JSON; .gz compresses)")
    p.add_argument("--folded", type=output_path, metavar="FILE",
                   help="write folded stacks for flame graphs")
    add_output(p, "save the profile to this JSON file")
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser(
        "suite", help="variants of one model: latency, throughput, accuracy, memory, energy",
        description="FILE.py:VARIANTS names a factory returning a dict with 'variants' (name -> "
        "callable or nn.Module) and 'inputs', optionally 'baseline', 'eval_data', 'metric', "
        "'batch_sizes', 'allow'. The variants are timed interleaved; each is reported with "
        "latency percentiles, throughput, its metric, memory, energy and a speedup verdict, "
        "then the Pareto front.")
    p.add_argument("target", metavar="FILE.py:VARIANTS", help="the factory of the suite")
    p.add_argument("--batch", metavar="B1,B2,...", help="batch sizes, e.g. 1,8,32")
    p.add_argument("--metric", metavar="MODULE:FUNCTION",
                   help="metric(variant, eval_data) -> float or per-example scores")
    p.add_argument("--baseline", help="the baseline variant (default: the factory's, else "
                   "'baseline')")
    p.add_argument("--threads", type=int, help="torch intra-op threads for the run")
    p.add_argument("--rounds", type=int, help="interleaved rounds per batch size (default 100)")
    p.add_argument("--duration", dest="duration_s", type=float,
                   help="timed seconds per variant and batch size, at least (default 1)")
    p.add_argument("--max-time", dest="max_time_s", type=float,
                   help="budget of the timed rounds in seconds (default 120)")
    p.add_argument("--settle-calls", dest="settle_calls", type=int,
                   help="untimed calls of a variant before each of its timed calls, so it is "
                   "timed warm after its own call rather than after another variant's "
                   "(default 0)")
    p.add_argument("--blocks", type=int,
                   help="blocks of rounds, each on fresh copies of the module variants, the "
                   "verdict a t test over them (default 10 with a module among the variants, "
                   "else 1)")
    p.add_argument("--seed", type=int, help="seed of the rounds' random order (default 0)")
    p.add_argument("--pareto", default="latency,accuracy", metavar="OBJ1,OBJ2[,...]",
                   help="objectives of the Pareto front (default latency,accuracy; also "
                   "p99, throughput, memory, size, energy, flops, params, speedup)")
    p.add_argument("--no-energy", action="store_true", help="skip the energy measurement")
    p.add_argument("--no-memory", action="store_true", help="skip the memory tracking")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument of the factory (repeatable)")
    p.add_argument("--plot", type=output_path, metavar="FILE.png",
                   help="draw the figures: FILE-latency.png, FILE-pareto.png and, with several "
                   "batch sizes, FILE-throughput.png (needs matplotlib)")
    add_output(p, "save the suite to this JSON file")
    p.set_defaults(func=cmd_suite)

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
    add_output(p, "save the result to this JSON file")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    p.set_defaults(func=cmd_stat)

    # --debug is read after the subcommand too (`fastbench timeit --debug 1/0`). SUPPRESS
    # leaves the attribute unset when a subcommand is not given it, so a --debug before
    # the subcommand is not overwritten by the subcommand's default.
    for command in sub.choices.values():
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show tracebacks on errors")
    return parser
