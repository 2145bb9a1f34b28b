"""Robustness figures: how fast long native work stops for Ctrl-C, whether a large thread
count leaves later kernels slow, how long an unpaired comparison of a million samples a side
takes (against the percentile bootstrap it replaces, timed on fewer samples and scaled), how a
gzip bomb is refused, and whether repeated model analyses grow the process.

Run on a quiet machine: python benchmarks/robustness.py
"""

from __future__ import annotations

import gzip
import os
import resource
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

import fastbench
from fastbench import _core, kernels, stats
from fastbench.stats.samples import BOOTSTRAP_RESAMPLES, bootstrap_medians
from fastbench.results import files

from _anchors import script_args


def interrupt_latency_ms(work: Callable[[], object], after_s: float = 0.3) -> float | None:
    """Milliseconds from a SIGINT sent ``after_s`` into ``work`` to its KeyboardInterrupt;
    None when the work finished first."""
    sent = [0.0]

    def fire() -> None:
        time.sleep(after_s)
        sent[0] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=fire)
    thread.start()
    try:
        work()
    except KeyboardInterrupt:
        return (time.perf_counter() - sent[0]) * 1e3
    finally:
        thread.join()
    return None


def median_ms(fn: Callable[[], object], n: int = 7) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def main() -> None:
    print("Ctrl-C during long native work (target: KeyboardInterrupt within 200 ms)")
    big = np.ones((4096, 4096))
    cases: dict[str, Callable[[], object]] = {
        "gemm 4096 float64": lambda: kernels.gemm(big, big),
        "bandwidth triad 64 MiB, min_time_s=30": lambda: kernels.bandwidth(
            "triad", 64 << 20, min_time_s=30),
        "peak_flops float32, min_time_s=30": lambda: kernels.peak_flops("float32",
                                                                          min_time_s=30),
    }
    for name, work in cases.items():
        ms = interrupt_latency_ms(work)
        print(f"  {name:40s} " + ("finished first" if ms is None else f"{ms:6.1f} ms"))

    print("\nThread pool after a call on the most threads allowed "
          f"({_core.max_threads()} here; more is an error)")
    x = np.ones((1024, 1024), np.float32)
    before = median_ms(lambda: kernels.gemm(x, x, threads=2))
    kernels.gemm(x, x, threads=_core.max_threads())
    after = median_ms(lambda: kernels.gemm(x, x, threads=2))
    print(f"  gemm 1024 float32, 2 threads: {before:.1f} ms before, {after:.1f} ms after "
          f"(ratio {after / before:.2f})")

    print("\nUnpaired comparison, a million samples a side")
    rng = np.random.default_rng(1)
    a = rng.lognormal(np.log(1000.0), 0.1, 1_000_000)
    b = rng.lognormal(np.log(1100.0), 0.1, 1_000_000)
    stats.compare_samples(a[:2000], b[:2000], paired=False)  # imports and first-call costs
    t = time.perf_counter()
    r = stats.compare_samples(a, b, paired=False)
    fast = time.perf_counter() - t
    n_boot = 50_000
    rng_boot = np.random.default_rng(0)
    t = time.perf_counter()
    bootstrap_medians(a[:n_boot], rng_boot, BOOTSTRAP_RESAMPLES)
    bootstrap_medians(b[:n_boot], rng_boot, BOOTSTRAP_RESAMPLES)
    boot = (time.perf_counter() - t) * (1_000_000 / n_boot)
    assert r.speedup_ci is not None
    print(f"  compare_samples: {fast:.2f} s (speedup {r.speedup:.4f}, "
          f"95% CI {r.speedup_ci[0]:.4f}-{r.speedup_ci[1]:.4f}); the 2000-resample bootstrap "
          f"it replaces, scaled from {n_boot} samples: about {boot:.0f} s")

    print("\nA 1 GiB gzip bomb")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bomb.json.gz"
        with gzip.open(path, "wb", compresslevel=9) as f:
            chunk = b" " * (1 << 20)
            f.write(b"[")
            for _ in range(1024):
                f.write(chunk)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        try:
            fastbench.load(path)
            outcome = "loaded (!)"
        except fastbench.ResultsFileError as e:
            outcome = f"refused: {str(e)[:80]}..."
        wall = time.perf_counter() - t
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
        print(f"  {path.stat().st_size / 1e6:.1f} MB file: {outcome}")
        print(f"  in {wall:.2f} s, peak RSS grew {grew:.0f} MiB "
              f"(cap {files.MAX_JSON_BYTES >> 20} MiB)")

    try:
        import torch
    except ImportError:
        print("\n(torch not installed: the analysis figure is left out)")
        return
    from fastbench.analysis import analyze

    print("\nRepeated analyze() in its default mode (grad, no backward)")
    model = torch.nn.Sequential(torch.nn.Linear(256, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 256))
    inp = torch.randn(64, 256)
    analyze(model, inp)

    def rss_mib() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    start = rss_mib()
    for _ in range(30):
        analyze(model, inp)
    saved = 64 * 4096 * 4 * 2 / 2**20  # the hidden layer's input to ReLU and its output
    print(f"  RSS growth over 30 calls: {rss_mib() - start:.1f} MiB (keeping each call's "
          f"autograd graph would add about {30 * saved:.0f} MiB)")


if __name__ == "__main__":
    script_args(__doc__)
    main()
