"""fastbench GEMM on its zmm kernels against its ymm kernels, interleaved.

Where a core runs 512-bit FMAs at full rate, the zmm kernels should be faster; where it
splits them into two 256-bit halves (AMD Zen 4), both widths have the same FMA peak and
gemm runs ymm kernels instead: float32 the AVX2 kernel (6x16), float64 a 6x16 tile that needs
AVX-512VL's 32 ymm registers ("ymm-vl"; the AVX2 kernel's 16 registers hold 6x8).
fastbench.kernels.gemm_isa(dtype) names the path each dtype takes by default. This script
checks that choice on the CPU in front of it: for each thread count, dtype and size, the
AVX2 kernels (the ISA cap at avx2), for float64 the ymm-vl tile (forced on, whatever the
core) and the zmm kernels (forced on) run in alternating blocks (_anchors.alternating_blocks).
"zmm/ymm" is the median over blocks of the ymm kernel's fastest call (ymm-vl for float64,
AVX2 for float32) over the zmm kernels' fastest call beside it (_anchors.paired_block_ratio
with min): above 1 the zmm kernels are faster; "vl/avx2" is float64's ymm-vl tile against
the AVX2 kernel the same way. "95% CI" is the distribution-free interval of a median
(fastbench.stats.median_ci). The last column says whether the default kernel is the faster
of each pair, or at parity where the interval spans 1.
Needs AVX-512; elsewhere it says so and exits. Run on a quiet machine:
    python benchmarks/gemm_widths.py
    python benchmarks/gemm_widths.py --threads 1 --sizes 1024 --blocks 11
"""

from __future__ import annotations

import argparse
import statistics
from typing import Callable

import numpy as np
from _anchors import (alternating_blocks, block_values, paired_block_ratios, positive_int,
                      ratio_interval, script_args)

from fastbench import _core
from fastbench.roofline import kernels


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=positive_int, nargs="+", default=[1, 2])
    parser.add_argument("--sizes", type=positive_int, nargs="+", default=[512, 1024, 2048],
                        help="n of the n x n x n products")
    parser.add_argument("--dtypes", nargs="+", choices=("float32", "float64"),
                        default=["float32", "float64"])
    parser.add_argument("--blocks", type=positive_int, default=9)


# The kernels compared, each as the hooks that select it: the ISA cap, or a width forced on.
KERNELS = ("avx2", "ymm-vl", "zmm")


def on_kernel(kernel: str, fn: Callable[[], object]) -> Callable[[], None]:
    """``fn`` run on gemm's ``kernel``: "avx2" under the ISA cap, "ymm-vl" (float64's ymm
    tile on the AVX-512 path) and "zmm" forced on whatever the core; the process's settings
    restored after each call."""
    def run() -> None:
        if kernel == "avx2":
            _core._set_isa_cap("avx2")
        elif kernel == "ymm-vl":
            _core._gemm_ymm_tiles(True)
        else:
            _core._gemm_zmm_at_half_rate(True)
        try:
            fn()
        finally:
            _core._set_isa_cap(_core.best_isa())
            _core._gemm_ymm_tiles(False)
            _core._gemm_zmm_at_half_rate(False)
    return run


def default_kernel(dtype: str) -> str:
    """The kernel gemm runs for ``dtype`` with no hook set, told by its register tile."""
    f64 = dtype == "float64"
    tile = _core.gemm_blocking(f64)
    if _core.gemm_isa(f64) != "avx512":
        return "avx2"
    return "zmm" if (tile.mr, tile.nr) in ((12, 32), (8, 24)) else "ymm-vl"


def compare(times: dict[str, list[float]], faster: str, slower: str, blocks: int,
            default: str) -> str:
    """The median ratio of ``slower``'s fastest call over ``faster``'s beside it, its
    interval and whether ``default`` is the faster of the two (or at parity)."""
    ratios = paired_block_ratios(times, slower, faster, blocks, within=min)
    ratio = statistics.median(ratios)
    ci = ratio_interval(ratios)
    if ci is None:
        return f"{ratio:>7.3f} {'':>16}  too few blocks for an interval"
    won = faster if ci[0] > 1 else slower if ci[1] < 1 else None
    verdict = ("parity" if won is None else f"{won} faster" if default not in (faster, slower)
               else "default faster" if won == default else "default SLOWER")
    interval = f"[{ci[0]:.3f}, {ci[1]:.3f}]"
    return f"{ratio:>7.3f} {interval:>16}  {verdict}"


def main() -> None:
    args = script_args(__doc__, options)
    f = _core.cpu_features()
    defaults = {dt: default_kernel(dt) for dt in args.dtypes}
    print(f"CPU {f.brand or f.vendor}: family {f.family:#x} model {f.model:#x}, widest ISA "
          f"{_core.best_isa()}; gemm's default kernels here: "
          + ", ".join(f"{dt} {k}" for dt, k in defaults.items()))
    if _core.isa_names().index(_core.best_isa()) < _core.isa_names().index("avx512"):
        print("no AVX-512 on this CPU: gemm has only its AVX2 kernels here; nothing to compare")
        return
    print("GFLOP/s from each side's fastest call per block, median over blocks")
    print(f"  {'threads':>7} {'dtype':<8}{'n':>6}{'avx2':>8}{'ymm-vl':>8}{'zmm':>8}"
          f"  {'zmm/ymm':>7} {'95% CI':>16}  verdict   | {'vl/avx2':>7} {'95% CI':>16}  verdict")
    for threads in args.threads:
        for dtype in args.dtypes:
            for n in args.sizes:
                rng = np.random.default_rng(0)
                a = rng.standard_normal((n, n)).astype(dtype)
                b = rng.standard_normal((n, n)).astype(dtype)
                out = np.empty((n, n), dtype=dtype)

                def call(t: int = threads) -> None:
                    kernels.gemm(a, b, out, threads=t)

                names = [k for k in KERNELS if k != "ymm-vl" or dtype == "float64"]
                times = alternating_blocks({k: on_kernel(k, call) for k in names},
                                           blocks=args.blocks)
                gf = {k: 2.0 * n ** 3 / 1e9
                      / statistics.median(block_values(times, k, args.blocks, min))
                      for k in times}
                ymm = "ymm-vl" if dtype == "float64" else "avx2"
                widths = compare(times, "zmm", ymm, args.blocks, defaults[dtype])
                vl = (compare(times, "ymm-vl", "avx2", args.blocks, defaults[dtype])
                      if dtype == "float64" else "")
                cells = "".join(f"{gf[k]:>8.1f}" if k in gf else f"{'-':>8}" for k in KERNELS)
                print(f"  {threads:>7} {dtype:<8}{n:>6}{cells}  {widths}"
                      + (f"  | {vl}" if vl else ""), flush=True)


if __name__ == "__main__":
    main()
