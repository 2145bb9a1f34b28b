"""`fastbench compare`: saved results files against a baseline file (matched by benchmark
name), statements measured in interleaved rounds (--run), or a statement in several versions
of the code (--versions); then the gate (fastbench.comparison.gate) decides the exit status:
EXIT_SLOWER when --fail-slower finds a significant slowdown, EXIT_UNDECIDED under --strict
when it cannot judge a candidate. --json writes every verdict as data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from ..comparison import (EXIT_SLOWER, EXIT_UNDECIDED, Comparison, InstructionComparison,
                          compare, compare_instruction_counts, compare_measurements,
                          compare_versions, gate)
from ..counters import InstructionCount
from ..measurement import Measurement
from ..report.text import comparison_lines, instruction_comparison_lines
from ..report.progress import progress_bar
from ..results import ResultsFileError, load, load_any, save
from ..results.kinds import unique_name
from ..results.verdicts import verdicts_document, write_verdicts
from ..report.lines import printable
from .options import count_options
from .output import out

__all__ = ["EXIT_SLOWER", "EXIT_UNDECIDED", "cmd_compare", "parse_version_args"]

# Workers per version of `compare --versions` when --processes is not given.
VERSION_PROCESSES = 10


def parse_version_args(items: Sequence[str]) -> dict[str, str]:
    """``NAME=SPEC`` arguments as a mapping, in order.

    Raises
    ------
    ValueError
        An item without ``=``, an empty name or spec, a name given twice.
    """
    versions: dict[str, str] = {}
    for item in items:
        name, eq, spec = item.partition("=")
        if not eq or not name or not spec:
            raise ValueError(f"--versions takes NAME=SPEC (main=git:main, pr=.), got {item!r}")
        if name in versions:
            raise ValueError(f"--versions names {name!r} twice")
        versions[name] = spec
    return versions


def _saved_counts(paths: Sequence[str]) -> dict[str, InstructionCount] | None:
    """The instruction counts of saved files, by file name; None when the first file holds
    no instruction count (then they are timings)."""
    def loaded(path: str) -> object:
        try:
            return load(path)
        except ResultsFileError:
            return None  # another tool's file: timings

    first = loaded(paths[0])
    if not isinstance(first, InstructionCount):
        return None
    counts = {Path(paths[0]).name: first}
    for path in paths[1:]:
        got = loaded(path)
        if not isinstance(got, InstructionCount):
            raise ValueError(f"{paths[0]} holds an instruction count but {path} does not: "
                             "compare counts with counts, timings with timings")
        counts[unique_name(Path(path).name, set(counts))] = got
    return counts


def _file_comparisons(paths: Sequence[str], args: argparse.Namespace) -> list[Comparison]:
    """Compare saved results: the first file is the baseline, matched by benchmark name.

    Files holding one measurement each are compared whatever their names; otherwise each
    benchmark of the baseline file is compared with the same name in the other files.
    """
    loaded = [(Path(p).name, load_any(p)) for p in paths]
    (base_label, base), cands = loaded[0], loaded[1:]

    def judge(baseline: Measurement, found: dict[str, Measurement], label: str) -> Comparison:
        return compare_measurements(baseline, found, baseline_name=label, alpha=args.alpha,
                                    min_effect=args.min_effect, correction=args.correction,
                                    run_variation=variation)

    variation = None if args.run_variation is None else args.run_variation / 100.0

    if len(base) == 1 and all(len(c) == 1 for _, c in cands):
        singles: dict[str, Measurement] = {}
        for label, c in cands:
            key = label if label not in singles and label != base_label else f"{label}#{len(singles) + 2}"
            singles[key] = next(iter(c.values()))
        return [judge(next(iter(base.values())), singles, base_label)]
    if not base:
        raise ValueError(f"{base_label} holds no measurement: nothing to compare")
    found_all = []
    skipped = []
    for name, m in base.items():
        found = {label: c[name] for label, c in cands if name in c}
        if found:
            found_all.append(judge(m, found, f"{name} @ {base_label}"))
        else:
            skipped.append(name)
    if not found_all:
        # Nothing compared is never a pass: a --fail-slower gate would otherwise let any
        # change through once the benchmarks are renamed or a candidate file is empty.
        empty = [label for label, c in cands if not c]
        shown = ", ".join(sorted(base)[:5]) + (", ..." if len(base) > 5 else "")
        held = "; ".join(f"{label} holds " + (", ".join(sorted(c)[:5]) if c else "no measurement")
                         for label, c in cands)
        raise ValueError(
            f"nothing compared: no benchmark of {base_label} ({shown}) is in a candidate file "
            f"({held}); " + ("save measurements into the empty file" if empty else
                             "name the benchmarks alike in every file"))
    for name in skipped:
        out(f"{name}: in no candidate file, skipped")
    return found_all


def _versions_comparison(args: argparse.Namespace) -> Comparison:
    """compare --versions: one statement in several versions of the code."""
    if args.files:
        raise ValueError("give either result files or --versions with --run, not both")
    if not args.run or len(args.run) != 1:
        raise ValueError("--versions measures one statement: give it with --run STMT "
                         "(and its imports with -s SETUP)")
    if args.metric != "time" or args.pairing != "workers":
        raise ValueError("--versions measures time, pairing the versions' workers (--design "
                         "chooses how); --metric and --pairing do not apply")
    return compare_versions(
        parse_version_args(args.versions), args.run[0], "\n".join(args.setup) or "pass",
        processes=VERSION_PROCESSES if args.processes is None else args.processes,
        design=args.design, install=args.install, min_time_s=args.min_time,
        max_time_s=args.max_time, clock=args.clock, alpha=args.alpha,
        min_effect=args.min_effect, correction=args.correction,
        progress=progress_bar(sys.stderr, "versions"))


def _comparisons(args: argparse.Namespace) -> tuple[list[Comparison | InstructionComparison], str]:
    """What the command line asks to compare, compared; and what it was ("files", "run",
    "versions")."""
    tolerance = args.tolerance / 100.0
    comparisons: list[Comparison | InstructionComparison]
    counting = count_options(args)  # --max-calls without --metric instructions: refused
    if args.versions:
        return [_versions_comparison(args)], "versions"
    if args.design != "auto" or args.install is not None:
        raise ValueError("--design and --install go with --versions")
    if args.run and args.metric == "instructions":
        if args.pairing != "workers":
            raise ValueError("--metric instructions does not take --pairing: each statement "
                             "is counted in processes of its own")
        variants = {f"[{i}] {stmt}": stmt for i, stmt in enumerate(args.run)}
        ic = compare(variants, metric="instructions", tolerance=tolerance,
                     setup="\n".join(args.setup) or "pass", processes=args.processes,
                     **counting)
        comparisons = [ic]
        if args.output is not None:
            save(ic, args.output)
        return comparisons, "run"
    if args.run:
        if args.files:
            raise ValueError("give either result files or --run statements, not both")
        if len(args.run) < 2:
            raise ValueError("--run needs at least two statements (or one with --versions)")
        variants = {f"[{i}] {stmt}": stmt for i, stmt in enumerate(args.run)}
        setup = "\n".join(args.setup) or "pass"
        c = compare(variants, rounds=args.rounds, min_time_s=args.min_time,
                    max_time_s=args.max_time, clock=args.clock, alpha=args.alpha,
                    min_effect=args.min_effect, correction=args.correction, setup=setup,
                    globals={}, processes=args.processes, pairing=args.pairing)
        if args.output is not None:
            save(c, args.output)
        return [c], "run"
    if args.processes is not None:
        raise ValueError("--processes measures --run statements; saved files hold the runs "
                         "they were measured with (fastbench timeit --processes N -o FILE)")
    if args.pairing != "workers":
        raise ValueError("--pairing goes with --run --processes N; saved files were "
                         "measured apart")
    if len(args.files) < 2:
        raise ValueError("compare needs a baseline file and at least one candidate file "
                         "(or --run STMT STMT ..., or --versions A=SPEC B=SPEC --run STMT)")
    if args.output is not None:  # before anything is loaded, rather than not saving
        raise ValueError("-o saves the comparison of --run statements; a comparison of "
                         "saved files is not saved (the files hold its inputs)")
    counts = _saved_counts(args.files)
    if counts is None:
        return list(_file_comparisons(args.files, args)), "files"
    (base_name, base), *rest = counts.items()
    return [compare_instruction_counts(base, dict(rest), baseline_name=base_name,
                                       tolerance=tolerance)], "files"


def cmd_compare(args: argparse.Namespace) -> int:
    if args.output is not None and args.versions:
        raise ValueError("-o saves --run comparisons; --versions writes its verdicts with --json")
    comparisons, kind = _comparisons(args)
    if not any(c.results for c in comparisons):  # whatever the path, never a silent pass
        raise ValueError("nothing compared: no candidate was judged against the baseline")
    for i, done in enumerate(comparisons):
        lines = (instruction_comparison_lines(done) if isinstance(done, InstructionComparison)
                 else comparison_lines(done))
        out(([""] if i else []) + lines)
    if args.output is not None and args.run:
        out(f"saved to {args.output}")
    decided = gate(comparisons, args.fail_slower, strict=args.strict)
    if args.json is not None:
        write_verdicts(args.json, verdicts_document(comparisons, decided, kind=kind))
        out(f"verdicts written to {args.json}")
    if args.fail_slower is not None or args.strict:  # a gate was asked for: say what it saw
        for line in decided.lines():
            print(printable(line), file=sys.stderr)
    return decided.exit_code
