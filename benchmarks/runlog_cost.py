"""What a save costs the run log as it grows: saves of distinct workloads (one new series
each, the worst case for the log's size) in a fresh cache directory, timed in blocks, with
the log's size after each block. The log is compacted past 2 MiB down to its newest series,
so the cost of a save must stay flat (no save rewrites the whole log every time), and the
slowest save of a block is one compaction.

Also: several processes saving at once while the log is compacted (each to series of its
own, few enough that compaction keeps every one), then how many series end with their newest
figures, none lost.

    python benchmarks/runlog_cost.py
    python benchmarks/runlog_cost.py --saves 20000 --writers 8
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from _anchors import positive_int, script_args

_WRITER = """
import sys
from fastbench.machine.runlog import RunLog
k = int(sys.argv[1])
log = RunLog()
for i in range(100):
    log.add([(f"writer-{k}", 1.0 + i)] + [(f"filler-{k}-{j}-" + "x" * 60, 1.0 + i) for j in range(40)])
"""


def _options(parser):  # type: ignore[no-untyped-def]
    parser.add_argument("--saves", type=positive_int, default=40000,
                        help="saves of distinct workloads (default 40000)")
    parser.add_argument("--writers", type=positive_int, default=8,
                        help="processes saving at once in the second part (default 8)")


def main() -> None:
    args = script_args(__doc__, _options)
    os.environ["FASTBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="runlog-cost-")
    from fastbench.machine.runlog import KEEP_RUNS, RunLog

    log = RunLog()
    block = max(args.saves // 10, 1)
    times: list[float] = []
    print(f"{args.saves} saves of distinct workloads, in blocks of {block}:")
    for i in range(args.saves):
        t = time.perf_counter()
        log.add([(f"series-{i:08d}-" + "x" * 40, 1000.0 + i)])
        times.append(time.perf_counter() - t)
        if (i + 1) % block == 0:
            recent = sorted(times[-block:])
            print(f"  saves to {i + 1:6d}: log {log.path.stat().st_size / 2**20:5.2f} MiB, "
                  f"median {1e3 * recent[block // 2]:6.2f} ms, "
                  f"p99 {1e3 * recent[min(block - 1, block * 99 // 100)]:6.2f} ms, "
                  f"slowest {1e3 * recent[-1]:6.1f} ms", flush=True)

    os.environ["FASTBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="runlog-writers-")
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(k)])
             for k in range(args.writers)]
    for p in procs:
        p.wait()
    log = RunLog()
    want = tuple(1.0 + i for i in range(100 - KEEP_RUNS, 100))
    got = {f"{k}/{j}": log.figures(f"filler-{k}-{j}-" + "x" * 60)
           for k in range(args.writers) for j in range(40)}
    got.update({str(k): log.figures(f"writer-{k}") for k in range(args.writers)})
    kept = sum(g == want for g in got.values())
    for k, g in got.items():
        if g != want:
            print(f"  writer {k}: {len(g)} figures, {g[:3]} ... {g[-3:]}")
    print(f"{args.writers} processes saving 100 results of 41 series each at once (the log "
          f"compacted on the way): {kept} of {len(got)} series kept their newest {KEEP_RUNS} "
          "figures in order "
          f"(log {log.path.stat().st_size / 2**20:.2f} MiB)")


if __name__ == "__main__":
    main()
