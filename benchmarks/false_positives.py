"""False positives of A/A comparisons, inside one process and across separate invocations.

In-process (--part in-process): each trial compares a workload with itself. fastbench
measures both sides interleaved and judges them with its paired test (alpha 0.05, min_effect
1%). Beside it, the same question decided the ways other tools do on two back-to-back
measurements: pyperf's t-test on the values, and pytest-benchmark's "min moved > 5%".
Target: fastbench's rate <= alpha + 2 points.

Across invocations (--part cross-run), as a user saving results and comparing them does:
each pair is two separate `fastbench timeit -o FILE` invocations of identical code, compared
by `fastbench compare A.json B.json`; once with one run per side and once with
`--processes 5`. The script works in a cache directory of its own and runs `fastbench
variation` first. A single run a side is judged against how the saved single runs of the
same statement varied so far (the run log, which every `timeit -o` feeds): the first pairs
can only say "cannot tell", later ones judge against an estimate with more degrees of
freedom. Beside it, `python -m pyperf timeit --fast -o`
twice and `python -m pyperf compare_to`. A third invocation per pair runs the same statement
10% slower (range(1100) instead of range(1000)); comparing it with the first gives the
detection rate. Targets: A/A false positives <= 5% in both fastbench modes; the 10% slowdown
found in >= 90% of pairs with --processes 5.

With --interleaved, each pair also measures both statements in `fastbench compare --run
--processes 5` invocations, the design for a gate that can run the baseline beside the
candidate: once with `--pairing workers` (each statement in workers of its own, A B B A ...,
the i-th workers of the two paired) and once with `--pairing rounds` (both statements side
by side in each of the 5 workers, each worker's two medians paired).

With --fresh-history, each pair works in a cache directory of its own, with no stored
variation and no run log: a first comparison on a machine. One run a side can then only say
"cannot tell"; several runs a side are judged by Welch's test on their run medians alone.

Run on a quiet machine:
    python benchmarks/false_positives.py                      # both parts
    python benchmarks/false_positives.py --part cross-run --pairs 20
    python benchmarks/false_positives.py --part interleaved --pairs 20
    python benchmarks/false_positives.py --part cross-run --one-run-only --no-pyperf --pairs 40
    python benchmarks/false_positives.py --part cross-run --fresh-history --no-pyperf --pairs 10
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy import stats as sps

import fastbench

from _anchors import positive_int, script_args

ALPHA = 0.05
SAMPLES = 20
MIN_TIME_S = 0.005
STMT = "sum(r)"
SETUP = "r = range(1000)"
SETUP_SLOW = "r = range(1100)"  # the same statement doing 10% more work
VERDICTS = ("no significant difference", "cannot tell", "faster", "slower")


def in_process(trials: int) -> None:
    data = [random.random() for _ in range(400)]

    def workload() -> list[float]:
        return sorted(data)

    fb_fp = pyperf_fp = ptb_fp = 0
    start = time.monotonic()
    for i in range(trials):
        c = fastbench.compare({"baseline": workload, "candidate": workload}, rounds=SAMPLES,
                              min_time_s=MIN_TIME_S, alpha=ALPHA)
        fb_fp += c.verdicts["candidate"] != "no significant difference"
        a = fastbench.measure(workload, repeat=SAMPLES, min_time_s=MIN_TIME_S).samples_ns
        b = fastbench.measure(workload, repeat=SAMPLES, min_time_s=MIN_TIME_S).samples_ns
        pyperf_fp += bool(sps.ttest_ind(a, b, equal_var=True).pvalue < ALPHA)
        ptb_fp += bool(abs(b.min() / a.min() - 1.0) > 0.05)
        if (i + 1) % 10 == 0:
            print(f"  {i + 1}/{trials} trials, {time.monotonic() - start:.0f} s", flush=True)
    print()
    print(f"A/A false-positive rate in one process over {trials} trials ({SAMPLES} samples a "
          f"side, workload sorted(400 floats) ~ a few µs)")
    print(f"  fastbench.compare (paired sign test, alpha {ALPHA}, min_effect 1%): "
          f"{fb_fp / trials * 100:5.1f}%   (target <= {ALPHA * 100 + 2:.0f}%)")
    print(f"  pyperf compare_to style (t-test on two runs):          {pyperf_fp / trials * 100:5.1f}%")
    print(f"  pytest-benchmark style (min moved > 5%):               {ptb_fp / trials * 100:5.1f}%")


def _run(argv: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode not in (0, 3):  # 3: fastbench compare found a slowdown
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def _fastbench(args: list[str], env: dict[str, str]) -> str:
    return _run([sys.executable, "-m", "fastbench", *args], env)


def _verdict(compare_output: str, candidate: str) -> str:
    """The verdict of the candidate's row in `fastbench compare`'s table."""
    for line in compare_output.splitlines():
        if line.strip().startswith(candidate + " "):
            for verdict in VERDICTS:
                if line.rstrip().endswith(verdict):
                    return verdict
    raise SystemExit(f"no verdict for {candidate} in:\n{compare_output}")


def _timeit(path: Path, setup: str, env: dict[str, str], processes: int | None) -> None:
    extra = [] if processes is None else ["--processes", str(processes)]
    _fastbench(["timeit", "-o", str(path), "-s", setup, *extra, STMT], env)


def _pyperf(path: Path, setup: str, env: dict[str, str]) -> None:
    _run([sys.executable, "-m", "pyperf", "timeit", "--fast", "-q", "-o", str(path),
          "-s", setup, STMT], env)


PAIRINGS = ("workers", "rounds")


def _interleaved(setup_b: str, env: dict[str, str], pairing: str) -> str:
    """The verdict of one `fastbench compare --run A B --processes 5 --pairing P`: A is STMT
    over range(1000), B the same statement over ``setup_b``'s range."""
    out = _fastbench(["compare", "--processes", "5", "--pairing", pairing,
                      "-s", "ra = range(1000)", "-s", setup_b.replace("r =", "rb ="),
                      "--run", "sum(ra)", "sum(rb)"], env)
    return _verdict(out, "[1]")


SAVED_MODES: dict[str, int | None] = {"one run a side": None, "--processes 5": 5}


def cross_run(pairs: int, use_pyperf: bool, interleaved: bool = False,
              saved: tuple[str, ...] = tuple(SAVED_MODES), fresh: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="fastbench-fp-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "FASTBENCH_CACHE_DIR": str(work / "cache")}
        env.pop("FASTBENCH_RUN_VARIATION", None)
        if fresh:
            print("each pair in a cache directory of its own: no `fastbench variation`, no run "
                  "log, as a first comparison on a machine\n", flush=True)
        else:
            t0 = time.monotonic()
            print(_fastbench(["variation"], env).rstrip())
            print(f"  (fastbench variation took {time.monotonic() - t0:.0f} s)\n", flush=True)
        modes = {m: p for m, p in SAVED_MODES.items() if m in saved}
        counts = {m: {"aa": dict.fromkeys(VERDICTS, 0), "slow": dict.fromkeys(VERDICTS, 0)}
                  for m in modes}
        pyperf_aa = pyperf_slow = 0
        paired = {p: {"aa": dict.fromkeys(VERDICTS, 0), "slow": dict.fromkeys(VERDICTS, 0)}
                  for p in PAIRINGS}
        start = time.monotonic()
        for i in range(pairs):
            if fresh:
                env = {**env, "FASTBENCH_CACHE_DIR": str(work / f"cache-{i}")}
            for mode, processes in modes.items():
                a, b, c = (work / f"{i}-{processes}-{x}.json" for x in "abc")
                _timeit(a, SETUP, env, processes)
                _timeit(b, SETUP, env, processes)
                _timeit(c, SETUP_SLOW, env, processes)
                counts[mode]["aa"][_verdict(_fastbench(["compare", str(a), str(b)], env),
                                            b.name)] += 1
                counts[mode]["slow"][_verdict(_fastbench(["compare", str(a), str(c)], env),
                                              c.name)] += 1
            if use_pyperf:
                pa, pb, pc = (work / f"{i}-pyperf-{x}.json" for x in "abc")
                _pyperf(pa, SETUP, env)
                _pyperf(pb, SETUP, env)
                _pyperf(pc, SETUP_SLOW, env)
                cmp = [sys.executable, "-m", "pyperf", "compare_to"]
                pyperf_aa += "not significant" not in _run([*cmp, str(pa), str(pb)], env)
                pyperf_slow += "not significant" not in _run([*cmp, str(pa), str(pc)], env)
            if interleaved:
                for pairing, got in paired.items():
                    got["aa"][_interleaved(SETUP, env, pairing)] += 1
                    got["slow"][_interleaved(SETUP_SLOW, env, pairing)] += 1
            print(f"  {i + 1}/{pairs} pairs, {time.monotonic() - start:.0f} s", flush=True)
    print()
    if counts or use_pyperf:
        history = ", each pair with no history" if fresh else ""
        print(f"across invocations, {pairs} pairs of `fastbench timeit -o` of {STMT!r} "
              f"({SETUP!r}), compared by `fastbench compare A.json B.json`{history}:")
    for mode, got in counts.items():
        aa, slow = got["aa"], got["slow"]
        fp = (aa["faster"] + aa["slower"]) / pairs * 100
        found = slow["slower"] / pairs * 100
        target = "   (target <= 5%; 10% slowdown found >= 90%)" if mode != "one run a side" \
            else "   (target <= 5%)"
        print(f"  fastbench, {mode:<15} A/A false positives {fp:5.1f}%  "
              f"[{aa['faster'] + aa['slower']} of {pairs}; cannot tell {aa['cannot tell']}, "
              f"no significant difference {aa['no significant difference']}];  "
              f"10% slowdown found {found:5.1f}% [{slow['slower']} of {pairs}]{target}")
    if interleaved:
        print(f"in one invocation, {pairs} pairs of {STMT!r} over range(1000) against "
              "range(1000) (A/A) and range(1100) (10% slower):")
    for pairing, got in paired.items() if interleaved else ():
        aa, slow = got["aa"], got["slow"]
        print(f"  fastbench compare --run --processes 5 --pairing {pairing:<7} (paired t): "
              f"A/A false positives {(aa['faster'] + aa['slower']) / pairs * 100:5.1f}% "
              f"[{aa['faster'] + aa['slower']} of {pairs}];  10% slowdown found "
              f"{slow['slower'] / pairs * 100:5.1f}% [{slow['slower']} of {pairs}]")
    if use_pyperf:
        print(f"  pyperf timeit --fast + compare_to: A/A significant {pyperf_aa / pairs * 100:5.1f}%"
              f" [{pyperf_aa} of {pairs}];  10% slowdown significant "
              f"{pyperf_slow / pairs * 100:5.1f}% [{pyperf_slow} of {pairs}]")


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trials", nargs="?", type=positive_int, default=100,
                        help="in-process trials (default 100)")
    parser.add_argument("--pairs", type=positive_int, default=20,
                        help="cross-run pairs of invocations (default 20)")
    parser.add_argument("--part", choices=["all", "in-process", "cross-run", "interleaved"],
                        default="all", help="interleaved: only the --interleaved runs")
    parser.add_argument("--no-pyperf", action="store_true", help="leave pyperf out")
    parser.add_argument("--one-run-only", action="store_true",
                        help="cross-run: only the one-run-a-side mode (and pyperf unless "
                        "--no-pyperf)")
    parser.add_argument("--interleaved", action="store_true",
                        help="also compare the statements in --run --processes 5 invocations, "
                        "with each --pairing")
    parser.add_argument("--fresh-history", action="store_true",
                        help="cross-run: each pair in a cache directory of its own (no stored "
                        "variation, no run log), as a first comparison on a machine")


def main() -> None:
    args = script_args(__doc__, options)
    if args.part in ("all", "in-process"):
        in_process(args.trials)
    if args.part in ("all", "cross-run"):
        if args.part == "all":
            print()
        modes = ("one run a side",) if args.one_run_only else tuple(SAVED_MODES)
        cross_run(args.pairs, not args.no_pyperf, args.interleaved, modes, args.fresh_history)
    if args.part == "interleaved":
        cross_run(args.pairs, False, True, saved=())


if __name__ == "__main__":
    main()
