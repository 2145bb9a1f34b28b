"""Regression testing across versions: does a gate catch a real slowdown between two commits,
and does it leave identical code alone?

A tiny package in a temporary git repository: commit A's hot function (a loop of squares,
about 10 µs a call), a commit A' that changes only a README (the same code), and commits
whose loop runs 2%, 5%, 10% and 20% longer. Each trial compares A with one of them, by:

  (a) saved results: `fastbench timeit --processes 5 -o` in the flow a user follows when
      checking out two commits in turn (A, B, A again, B again), then `fastbench compare
      A2.json B2.json --fail-slower 5`; each trial in a fresh cache directory, so the only
      replicates are the trial's own;
  (b) `fastbench.compare_versions` with interleaved workers (A B B A ...);
  (c) `fastbench.compare_versions` with duets (both versions at once, one per core, the
      cores swapped every duet);
  (d) pyperf: `pyperf timeit --fast -o` of each commit, then `pyperf compare_to`;
  (e) asv's rule for `continuous` (Mann-Whitney U on the pooled samples at p < 0.002, and
      a ratio beyond its default factor of 1.1; also shown with factor 1.0) applied to the
      interleaved workers of (b).

Printed per design: how many trials called the candidate slower, faster, no different or
"cannot tell", how many times the gate (--fail-slower 5) failed, and the median seconds a
trial took. Targets: (b) or (c) finds 5% in >= 9 of 10 trials within 60 s of measuring for
a 10 µs statement; every design calls A/A different in <= 1 of 20; (a) calls 20% slower in
>= 9 of 10 and its gate exits 3.

Run on a quiet machine (about three hours with the defaults on a 2-vCPU VM):
    python benchmarks/versions.py
    python benchmarks/versions.py --designs b,c --aa 10 --trials 5     # a quicker look
    python benchmarks/versions.py --designs a --slowdowns 20           # the saved-results target
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scipy import stats as sps

import fastbench
from fastbench.comparison import gate

from _anchors import positive_int, script_args

LOOPS = 350  # about 10 µs a call of work() on a 2-vCPU VM
SLOWDOWNS = (0.02, 0.05, 0.10, 0.20)
STMT = "work()"
SETUP = "from hotpkg import work"
VERDICTS = ("slower", "faster", "no significant difference", "cannot tell")
DESIGNS = {"a": "saved results, --processes 5, A-B-A-B", "b": "--versions, interleaved",
           "c": "--versions, duets", "d": "pyperf timeit --fast + compare_to",
           "e": "asv's rule on (b)'s workers"}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _source(loops: int) -> str:
    return ("def work():\n    s = 0\n    for i in range(%d):\n        s += i * i\n"
            "    return s\n" % loops)


def make_repo(root: Path) -> dict[str, str]:
    """The repository and its commits: {"A": sha, "A'": sha, "+2%": sha, ...}."""
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "bench@example.com")
    _git(root, "config", "user.name", "bench")
    (root / "hotpkg").mkdir()
    (root / "hotpkg" / "__init__.py").write_text(_source(LOOPS))
    (root / "README").write_text("hotpkg\n")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "A")
    commits = {"A": _git(root, "rev-parse", "HEAD")}
    (root / "README").write_text("hotpkg, the same code\n")
    _git(root, "commit", "-qam", "A'")
    commits["A'"] = _git(root, "rev-parse", "HEAD")
    for s in SLOWDOWNS:
        _git(root, "checkout", "-q", commits["A"])
        (root / "hotpkg" / "__init__.py").write_text(_source(round(LOOPS * (1 + s))))
        _git(root, "commit", "-qam", f"+{s:.0%}")
        commits[f"+{s:.0%}"] = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", commits["A"])
    return commits


def _run(argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> \
        subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


def saved_trial(repo: Path, base: str, cand: str, work: Path, env: dict[str, str]) -> tuple[str, int]:
    """(a): A, B, A, B saved with --processes 5, then A2 against B2; (verdict, exit status)."""
    env = {**env, "FASTBENCH_CACHE_DIR": str(work / "cache")}
    files = []
    for i, commit in enumerate((base, cand, base, cand)):
        _git(repo, "checkout", "-q", commit)
        path = work / f"{'AB'[i % 2]}{i // 2 + 1}.json"
        _run([sys.executable, "-m", "fastbench", "timeit", "--processes", "5", "-s", SETUP,
              "-o", str(path), STMT], repo, env)
        files.append(path)
    verdicts = work / "verdicts.json"
    done = _run([sys.executable, "-m", "fastbench", "compare", str(files[2]), str(files[3]),
                 "--fail-slower", "5", "--json", str(verdicts)], repo, env, ok=(0, 3))
    doc = json.loads(verdicts.read_text())
    _git(repo, "checkout", "-q", base)
    return doc["comparisons"][0]["candidates"][0]["verdict"], done.returncode


def versions_trial(repo: Path, base: str, cand: str, design: str,
                   processes: int) -> fastbench.Comparison:
    """(b) and (c): both commits measured in one invocation."""
    return fastbench.compare_versions({"a": f"git:{base}", "b": f"git:{cand}"}, STMT, SETUP,
                                      processes=processes, design=design, repo=str(repo))


def asv_rule(c: fastbench.Comparison, factor: float) -> str:
    """asv continuous's decision on the interleaved workers' samples: a difference when the
    Mann-Whitney U test on all samples gives p < 0.002 and the ratio of the medians is
    beyond ``factor`` (asv's _stats.is_different and _is_result_better)."""
    a = c.measurements["a"].samples_ns
    b = c.measurements["b"].samples_ns
    p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    ratio = float(statistics.median(b) / statistics.median(a))
    if p >= 0.002:
        return "no significant difference"
    if ratio > factor:
        return "slower"
    if ratio < 1.0 / factor:
        return "faster"
    return "no significant difference"


def pyperf_trial(repo: Path, base: str, cand: str, work: Path, env: dict[str, str]) -> str:
    """(d): pyperf timeit --fast of each commit, then compare_to."""
    files = []
    for name, commit in (("pa", base), ("pb", cand)):
        _git(repo, "checkout", "-q", commit)
        path = work / f"{name}.json"
        _run([sys.executable, "-m", "pyperf", "timeit", "--fast", "-q", "-o", str(path),
              "-s", SETUP, STMT], repo, env)
        files.append(path)
    _git(repo, "checkout", "-q", base)
    out = _run([sys.executable, "-m", "pyperf", "compare_to", str(files[0]), str(files[1])],
               repo, env).stdout
    if "not significant" in out.lower():
        return "no significant difference"
    return "slower" if "slower" in out else "faster" if "faster" in out else "no significant difference"


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--designs", default="a,b,c,d,e",
                        help="which designs to run, of a,b,c,d,e (default all)")
    parser.add_argument("--aa", type=positive_int, default=20,
                        help="A/A trials per design (default 20)")
    parser.add_argument("--trials", type=positive_int, default=10,
                        help="trials per slowdown and design (default 10)")
    parser.add_argument("--slowdowns", default="2,5,10,20",
                        help="slowdowns to try, in percent, of 2,5,10,20 (default all)")
    parser.add_argument("--processes-interleaved", type=positive_int, default=10,
                        help="workers per version in (b) (default 10)")
    parser.add_argument("--processes-duet", type=positive_int, default=20,
                        help="duets in (c) (default 20: about the time of (b))")


def main() -> None:
    args = script_args(__doc__, _options)
    designs = [d for d in args.designs.split(",") if d]
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        raise SystemExit(f"unknown design(s) {unknown}; choose from {', '.join(DESIGNS)}")
    if "e" in designs and "b" not in designs:
        designs.insert(designs.index("e"), "b")
    asked = [x for x in args.slowdowns.split(",") if x]
    chosen = [s for s in SLOWDOWNS if f"{s * 100:.0f}" in asked]
    if len(chosen) != len(asked):
        raise SystemExit(f"--slowdowns takes a comma list of "
                         f"{', '.join(f'{s * 100:.0f}' for s in SLOWDOWNS)}")
    pairs = [("A/A", "A'", args.aa)] + [(f"+{s:.0%}", f"+{s:.0%}", args.trials) for s in chosen]
    tally = {d: {label: dict.fromkeys((*VERDICTS, "gate fails"), 0) for label, _, _ in pairs}
             for d in (*designs, "e1")}
    seconds: dict[str, list[float]] = {d: [] for d in designs}
    with tempfile.TemporaryDirectory(prefix="fastbench-versions-bench-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        commits = make_repo(repo)
        env = {**os.environ}
        env.pop("FASTBENCH_RUN_VARIATION", None)
        env.pop("PYTHONPATH", None)
        # compare_versions runs in this process: its cache (replicates, variation) is fresh.
        os.environ["FASTBENCH_CACHE_DIR"] = str(root / "cache-versions")
        print(f"fastbench {fastbench.__version__}; statement {STMT!r} after {SETUP!r}, "
              f"{LOOPS} loops at commit A", flush=True)
        start = time.monotonic()
        for label, name, count in pairs:
            for trial in range(count):
                base, cand = commits["A"], commits[name]
                said: list[str] = []
                asv: list[str] = []
                for d in designs:
                    if d == "e":
                        continue
                    work = root / f"{d}-{label.replace('/', '')}-{trial}"
                    work.mkdir()
                    t0 = time.monotonic()
                    if d == "a":
                        verdict, code = saved_trial(repo, base, cand, work, env)
                        tally[d][label]["gate fails"] += code == 3
                    elif d in ("b", "c"):
                        c = versions_trial(repo, base, cand,
                                           "interleaved" if d == "b" else "duet",
                                           args.processes_interleaved if d == "b"
                                           else args.processes_duet)
                        verdict = c.verdicts["b"]
                        tally[d][label]["gate fails"] += gate(c, 5.0).exit_code == 3
                        if d == "b" and "e" in designs:
                            for key, factor in (("e", 1.1), ("e1", 1.0)):
                                rule = asv_rule(c, factor)
                                tally[key][label][rule] += 1
                                asv.append(f"{key} {rule}")
                    else:
                        verdict = pyperf_trial(repo, base, cand, work, env)
                    seconds[d].append(time.monotonic() - t0)
                    tally[d][label][verdict] += 1
                    said += [f"{d} {verdict}", *asv]  # asv's rule after (b), on its workers
                    asv = []
                # Each trial's verdicts as they come, so a stopped run still shows its figures.
                print(f"  {label} trial {trial + 1}/{count}: {'; '.join(said)}; "
                      f"{time.monotonic() - start:.0f} s in all", flush=True)
    print()
    for d in designs:
        rows = [d] + (["e1"] if d == "e" else [])
        for key in rows:
            title = DESIGNS[d] + (" (factor 1.0)" if key == "e1" else
                                  " (factor 1.1, asv's default)" if key == "e" else "")
            took = "" if d == "e" else \
                f"; median {statistics.median(seconds[d]):.0f} s a trial"
            print(f"({d}) {title}{took}")
            for label, _, count in pairs:
                t = tally[key][label]
                called = t["slower"] + t["faster"]
                what = "called different" if label == "A/A" else "called slower"
                shown = called if label == "A/A" else t["slower"]
                gate_text = "" if d in ("d", "e") else f", gate (--fail-slower 5) failed {t['gate fails']}"
                print(f"  {label:>4}: {what} {shown:2d} of {count} (slower {t['slower']}, "
                      f"faster {t['faster']}, no difference {t['no significant difference']}, "
                      f"cannot tell {t['cannot tell']}){gate_text}")
    print(f"\nin all {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
