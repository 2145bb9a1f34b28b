"""Run-to-run stability: the spread of the reported figure for a ~1 µs workload over 10
separate invocations (fresh processes), fastbench against timeit and pytest-benchmark style.

Each invocation reports: fastbench.measure's median (over its quiet-phase samples, as
reports print it; for reference, the raw median of every sample and the min);
fastbench.measure(processes=10), the run-level figure of 10 worker processes (about 13 s);
fastbench.measure(metric="instructions"), instructions per call (under valgrind where no PMU
is exposed); timeit's best of 5 repeats after autorange (what `python -m timeit` prints);
and the pytest-benchmark default, the min over rounds of calibrated iterations (5 µs minimum
round time, about 1 s in all). The spread is (max - min) / median over the invocations.
Targets: fastbench with processes=10 <= 3% and narrower than timeit and pytest-benchmark in
the same run; the instruction count <= 0.1%.
Beside each spread, the trend: Spearman's rank correlation of the figure with the invocation's
order and its p-value. A trend (p < 0.05) means the figure drifted over the run's minutes
(most often the host's speed changing): no figure taken inside one invocation (processes=10
spans about 13 s) can average that part of the spread out.
Run on a quiet machine: python benchmarks/stability.py

Where the processes mode's spread comes from: python benchmarks/stability.py --series 600
runs fresh processes back to back for that many seconds, each one measurement as a worker of
processes=10 makes, alternating with a process that takes the same samples in 5 chunks, each
after a new random heap layout (the instruction mode's pads); the first kind also measures
another pure-Python workload. It prints the spread between processes, how far the other
workload moves with it, the spread's correlation in time, the spread of 10-process results
taken back to back against results whose 10 processes are spread over 2-8 times as long
(what spreading the workers over minutes would give), the spread heap layouts leave, and,
resampling the processes as independent draws, how often 10 invocations of processes=N stay
within 3%.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
import timeit
from typing import Any

from _anchors import script_args

INVOCATIONS = 10
PROCESSES = 10
TOOLS = ("fastbench", "fastbench raw median", "fastbench min", "fastbench processes=10",
         "fastbench instructions", "timeit", "pytest-benchmark")
UNITS = {"fastbench instructions": "instr"}
TARGETS = {"fastbench processes=10": 3.0, "fastbench instructions": 0.1}

# Module level, so worker processes (and valgrind's fresh Python) can import it by name; this
# file imports nothing heavy at the top for the same reason.
DATA = list(range(150, 0, -1))


def sort150() -> list[int]:
    return sorted(DATA)


def pytest_benchmark_style_min_ns(fn) -> float:  # type: ignore[no-untyped-def]
    """pytest-benchmark's defaults: iterations calibrated so a round lasts >= 5 µs (on a
    perf_counter of this resolution), rounds for about 1 s, report the min."""
    iterations = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        if time.perf_counter() - t0 >= 5e-6:
            break
        iterations *= 2
    best, deadline = float("inf"), time.perf_counter() + 1.0
    rounds = 0
    while time.perf_counter() < deadline or rounds < 5:
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter() - t0) / iterations)
        rounds += 1
    return best * 1e9


def worker() -> None:
    import fastbench

    fn = sort150
    m = fastbench.measure(fn)
    runs = fastbench.measure(fn, processes=PROCESSES)
    t0 = time.monotonic()
    count = fastbench.measure(fn, metric="instructions")
    count_s = time.monotonic() - t0
    timer = timeit.Timer(fn)
    loops, _ = timer.autorange()
    ti = min(timer.repeat(5, loops)) / loops * 1e9
    print(json.dumps({"fastbench": m.median_ns, "fastbench raw median": m.raw_median_ns,
                      "fastbench min": m.min_ns, "fastbench processes=10": runs.median_ns,
                      "fastbench instructions": count.per_call,
                      "instruction source": count.source, "instruction seconds": count_s,
                      "between-process spread": runs.run_spread or 0.0,
                      "processes left out": int(runs.runs - runs.quiet_runs.sum()), "timeit": ti,
                      "pytest-benchmark": pytest_benchmark_style_min_ns(fn),
                      "seconds": m.elapsed_s, "disturbed": m.phases.disturbed_share}))


def reference() -> int:
    """Another pure-Python workload of about 1 µs (dict, list and integer work, no sort), to
    see whether a process's or a phase's speed moves every workload alike."""
    table: dict[int, int] = {}
    for i in range(40):
        table[i & 7] = table.get(i & 7, 0) + i * 3
    return sum(table.values())


def one_process(padded: bool) -> None:
    """One worker-like measurement; with ``padded``, 5 chunks each under a new heap layout."""
    import os

    import fastbench
    from fastbench.timing.config import DEFAULT_DURATION_S

    if not padded:
        print(json.dumps({"median": fastbench.measure(sort150).median_ns,
                          "reference": fastbench.measure(reference).median_ns}))
        return
    from fastbench.counters.simulation.target import layout_pad

    kept, medians = [], []
    for _ in range(5):
        kept.append(layout_pad(1 + int.from_bytes(os.urandom(2), "little")))
        medians.append(fastbench.measure(sort150, duration_s=DEFAULT_DURATION_S / 5).median_ns)
    print(json.dumps({"median": statistics.geometric_mean(medians), "chunks": medians}))


def _spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def _cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values)


def _result(medians: list[float]) -> float:
    """What processes=N reports of these process medians: the geometric mean of those the
    host did not slow throughout (fastbench.stats.runs.quiet_runs)."""
    from fastbench.stats.runs import quiet_runs, run_level

    keep = quiet_runs(medians)
    return run_level([x for x, k in zip(medians, keep) if k]).center


def series(seconds: float) -> None:
    rows: list[dict[str, Any]] = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for mode in ("plain", "padded"):
            out = subprocess.run([sys.executable, __file__, "--one", mode], capture_output=True,
                                 text=True, check=True).stdout
            rows.append({"mode": mode, "t": time.monotonic() - t0, **json.loads(out)})
    plain = [float(r["median"]) for r in rows if r["mode"] == "plain"]
    padded = [float(r["median"]) for r in rows if r["mode"] == "padded"]
    elapsed = time.monotonic() - t0
    n, step = len(plain), 2 * elapsed / len(rows)
    if n < 3:
        sys.exit(f"only {n} processes of each kind in {seconds:g} s: pass more seconds "
                 "(600 gives about 100)")
    print(f"{n} processes of each kind over {elapsed:.0f} s, workload sorted(150 ints)")
    for name, v in (("one layout", plain), ("5 heap layouts", padded)):
        print(f"  per-process medians, {name}: CV {_cv(v):.2%},"
              f" {min(v):.1f}-{max(v):.1f} ns, median {statistics.median(v):.1f} ns")
    chunks = [r["chunks"] for r in rows if r["mode"] == "padded"]
    within = statistics.fmean(_cv(c) for c in chunks)
    print(f"  within one process, the 5 layouts' medians: CV {within:.2%} (chunk noise included)")
    ref = [float(r["reference"]) for r in rows if r["mode"] == "plain"]
    ratio = [a / b for a, b in zip(plain, ref)]
    from scipy.stats import pearsonr

    print(f"  a reference workload in the same processes: CV {_cv(ref):.2%}; correlation with"
          f" the workload {pearsonr(plain, ref)[0]:+.2f}; CV of the ratio {_cv(ratio):.2%}")
    mean = statistics.fmean(plain)
    dev = [x - mean for x in plain]
    var = sum(a * a for a in dev)
    lags = ", ".join(f"lag {k}: {sum(a * b for a, b in zip(dev, dev[k:])) / var:+.2f}"
                     for k in (1, 2, 5, 10) if k < n)
    print(f"  autocorrelation of successive processes (one layout): {lags}")
    print("  10-process results (geometric mean of the undisturbed processes' medians, as"
          " processes=10 reports), back to back and spread out:")
    for stride in (1, 2, 4, 8):
        window = 10 * stride
        sds, count = [], 0
        for off in range(stride):  # every stride-th process of consecutive windows
            results = [_result(plain[a + off:a + window:stride])
                       for a in range(0, n - window + 1, window)]
            if len(results) >= 3:
                sds.append((statistics.stdev(results) / statistics.median(results)) ** 2)
                count += len(results)
        if sds:
            sd = (sum(sds) / len(sds)) ** 0.5
            print(f"    over {window * step:4.0f} s: SD between results {sd:.2%}, so a range of"
                  f" about {3.08 * sd:.1%} over 10 invocations ({count} results)")
    rng = random.Random(1)
    print("  processes drawn independently from those above, 2000 runs of 10 invocations:")
    for name, v in (("one layout", plain), ("5 heap layouts", padded)):
        for processes in (10, 20, 40):
            ranges = [_spread([_result(rng.choices(v, k=processes))
                               for _ in range(10)]) for _ in range(2000)]
            within3 = sum(r <= 0.03 for r in ranges) / len(ranges)
            print(f"    {name}, processes={processes}: median range"
                  f" {statistics.median(ranges):.2%}, within 3% in {within3:.0%}")


def main() -> None:
    runs = []
    for i in range(INVOCATIONS):
        out = subprocess.run([sys.executable, __file__, "--worker"], capture_output=True,
                             text=True, check=True).stdout
        runs.append(json.loads(out))
        r = runs[-1]
        print(f"  invocation {i + 1}: "
              + ", ".join(f"{k} {r[k]:.1f} {UNITS.get(k, 'ns')}" for k in TOOLS)
              + f"; fastbench sampled {r['seconds']:.2f} s, {r['disturbed']:.1%} in interference;"
              f" processes differed by {r['between-process spread']:.1%}"
              f" ({r['processes left out']} of {PROCESSES} left out as slowed throughout);"
              " instruction count "
              f"({r['instruction source']}) took {r['instruction seconds']:.1f} s", flush=True)
    print()
    from scipy.stats import spearmanr

    print(f"spread over {INVOCATIONS} invocations, (max - min) / median, workload sorted(150 ints), about 1 µs;"
          " trend: Spearman's rho with the invocation order (p)")
    drifted = []
    for tool in TOOLS:
        values = [r[tool] for r in runs]
        spread = _spread(values) * 100
        target = f"   (target <= {TARGETS[tool]:g}%)" if tool in TARGETS else ""
        if len(set(values)) > 1:
            rho, p = spearmanr(range(len(values)), values)
            trend = f"trend {rho:+.2f} (p {p:.3f})"
            if p < 0.05:
                drifted.append(tool)
        else:
            trend = "no trend (all equal)"
        print(f"  {tool:<24}{spread:7.3f}%   median {statistics.median(values):.1f} "
              f"{UNITS.get(tool, 'ns'):<6} {trend}{target}")
    if drifted:
        print(f"  drift: {', '.join(drifted)} moved with the invocation order (p < 0.05), a change over "
              "the run's minutes (most often the host's speed) that no single invocation averages out")


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--series", type=float, metavar="SECONDS",
                        help="where the processes mode's spread comes from: fresh processes "
                             "back to back for this many seconds (see above)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--one", choices=("plain", "padded"), help=argparse.SUPPRESS)


if __name__ == "__main__":
    args = script_args(__doc__, options)
    if args.worker:
        worker()
    elif args.one is not None:
        one_process(args.one == "padded")
    elif args.series is not None:
        series(args.series)
    else:
        main()
