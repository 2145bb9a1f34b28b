"""Shared helpers of the benchmark scripts: the anchors (stdlib timeit, pyperf) run in-process.

Each returns per-call times in ns for the same callable so that scripts can print
fastbench against them side by side. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time
import timeit as _timeit
from typing import Any, Callable

_runner: Any = None  # pyperf allows one Runner per process


def timeit_per_call_ns(fn: Callable[[], Any], repeat: int = 15) -> tuple[float, float]:
    """(best, median) per-call ns as `python -m timeit` measures: autorange, then repeat."""
    timer = _timeit.Timer(fn)
    loops, _ = timer.autorange()
    per_call = [t / loops * 1e9 for t in timer.repeat(repeat=repeat, number=loops)]
    return min(per_call), statistics.median(per_call)


def pyperf_per_call_ns(fn: Callable[[], Any], loops: int, values: int = 15) -> float | None:
    """Median per-call ns from pyperf's worker loop run in this process, or None."""
    try:
        import pyperf
    except ImportError:
        return None
    global _runner
    if _runner is None:
        _runner = pyperf.Runner()
        _runner.parse_args(["--worker", "-l", str(loops), "-n", str(values), "-w", "1", "--quiet"])
    _runner.args.loops = loops  # arguments parse once per process; loops vary per workload
    with contextlib.redirect_stdout(io.StringIO()):  # the worker prints its own summary
        bench = _runner.bench_func(f"anchor-{id(fn)}-{loops}", fn)
    return float(statistics.median(bench.get_values())) * 1e9


def pyperf_note() -> str:
    try:
        import pyperf
    except ImportError:
        return "pyperf not installed (pip install pyperf): its column is skipped"
    return f"pyperf {pyperf.__version__} worker loop, in this process"


def alternating_blocks(fns: dict[str, Callable[[], Any]], blocks: int = 3, block_s: float = 0.1,
                       pause_s: float = 0.3) -> dict[str, list[float]]:
    """Per-call seconds of each callable, timed in alternating blocks that are alike for all.

    Every block starts after a ``pause_s`` pause and one untimed call, and times calls for
    about ``block_s`` (at least 2, the count fixed per callable from a first call). The pause
    lets OpenBLAS's idle workers stop spinning (they keep a core busy for about 0.1 s after
    a call here, OPENBLAS_THREAD_TIMEOUT, and would take it from the other side's threads);
    the untimed call wakes the side's own threads and the vCPUs the pause put to sleep;
    blocks of ~0.1 s time the work rather than how fast a vCPU wakes.
    """
    calls = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        fn()
        calls[name] = max(2, int(block_s / max(time.perf_counter() - t0, 1e-6)))
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(blocks):
        for name, fn in fns.items():
            time.sleep(pause_s)
            fn()
            for _ in range(calls[name]):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return times


def paired_block_ratios(times: dict[str, list[float]], num: str, den: str, blocks: int,
                        within: Callable[[list[float]], float] = statistics.median) -> list[float]:
    """within(times[num]) / within(times[den]) in each block, block by block.

    ``times`` comes from :func:`alternating_blocks` with the same ``blocks``: each side's list
    holds ``blocks`` runs of equal length, and block i of one side ran right beside block i
    of the other, so a slow phase of the machine that spans both cancels in their ratio.
    ``within`` sums up one block: its median call (default) or ``min``, its fastest.
    """
    return [x / y for x, y in zip(block_values(times, num, blocks, within),
                                  block_values(times, den, blocks, within))]


def block_values(times: dict[str, list[float]], name: str, blocks: int,
                 within: Callable[[list[float]], float] = statistics.median) -> list[float]:
    """within() of each of ``name``'s ``blocks`` blocks in :func:`alternating_blocks`'
    ``times``: its median call (default) or ``min``, its fastest."""
    values = times[name]
    per = len(values) // blocks
    return [within(values[i * per:(i + 1) * per]) for i in range(blocks)]


def paired_block_ratio(times: dict[str, list[float]], num: str, den: str, blocks: int,
                       within: Callable[[list[float]], float] = statistics.median) -> float:
    """Median over blocks of :func:`paired_block_ratios`."""
    return statistics.median(paired_block_ratios(times, num, den, blocks, within))


def ratio_interval(ratios: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval of the median block ratio (order statistics of the blocks,
    fastbench.stats.median_ci); None for fewer than 6 blocks at 95%."""
    from fastbench.stats import median_ci

    return median_ci(ratios, confidence)


def numpy_openblas() -> str | None:
    """The path of the OpenBLAS library bundled with numpy's wheel, or None (another BLAS)."""
    import glob
    import os

    import numpy as np

    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    found = sorted(glob.glob(os.path.join(libs, "*openblas*.so*")))
    return os.path.normpath(found[0]) if found else None


def gemm_shape(text: str) -> tuple[int, int, int]:
    """An argparse type: "MxNxK" as (m, n, k), every dimension positive."""
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"shape {text!r}: expected MxNxK, e.g. 1024x1024x1024") from None
    if min(m, n, k) <= 0:
        raise argparse.ArgumentTypeError(f"shape {text!r}: every dimension must be positive")
    return m, n, k


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an int of at least ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r}: must be at least {low}")
        return value
    return parse


positive_int = int_at_least(1)


def script_args(doc: str | None,
                options: Callable[[argparse.ArgumentParser], None] | None = None,
                argv: list[str] | None = None) -> argparse.Namespace:
    """A benchmark script's command line: ``--help`` prints the script's docstring (what it
    measures, its targets, how to run it) and exits before any measuring; an unknown option
    is an error rather than ignored. ``options`` adds the script's own arguments."""
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if options is not None:
        options(parser)
    return parser.parse_args(argv)
