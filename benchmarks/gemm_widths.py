"""fastbench GEMM on its zmm kernels against its ymm (AVX2) kernels, interleaved.

Where a core runs 512-bit FMAs at full rate, the zmm kernels should be faster; where it
splits them into two 256-bit halves (AMD Zen 4), both widths have the same FMA peak and
gemm runs the AVX2 kernels instead (fastbench._core.gemm_isa() names the path it takes
by default). This script checks that choice on the CPU in front of it: for each thread
count, dtype and size, the AVX2 kernels (the ISA cap at avx2) and the zmm kernels (forced
on, whatever the core) run in alternating blocks (_anchors.alternating_blocks).
"zmm/ymm" is the median over blocks of the AVX2 kernels' fastest call over the zmm
kernels' fastest call beside it (_anchors.paired_block_ratio with min): above 1 the zmm
kernels are faster. "95% CI" is the distribution-free interval of that median
(fastbench.stats.median_ci). The last column says whether the default path is the faster
one, or at parity where the interval spans 1.
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


def on_path(isa: str, fn: Callable[[], object]) -> Callable[[], None]:
    """``fn`` run on gemm's ``isa`` kernels: "avx2" under the ISA cap, "avx512" with the zmm
    kernels forced on; the process's settings restored after each call."""
    def run() -> None:
        if isa == "avx2":
            _core._set_isa_cap("avx2")
        else:
            _core._gemm_zmm_at_half_rate(True)
        try:
            fn()
        finally:
            _core._set_isa_cap(_core.best_isa())
            _core._gemm_zmm_at_half_rate(False)
    return run


def main() -> None:
    args = script_args(__doc__, options)
    f = _core.cpu_features()
    print(f"CPU {f.brand or f.vendor}: family {f.family:#x} model {f.model:#x}, widest ISA "
          f"{_core.best_isa()}; gemm's default path here: {_core.gemm_isa()}")
    if _core.isa_names().index(_core.best_isa()) < _core.isa_names().index("avx512"):
        print("no AVX-512 on this CPU: gemm has only its AVX2 kernels here; nothing to compare")
        return
    default = _core.gemm_isa()
    print("GFLOP/s from each side's fastest call per block, median over blocks")
    print(f"  {'threads':>7} {'dtype':<8}{'n':>6}{'ymm':>9}{'zmm':>9}{'zmm/ymm':>9}"
          f"{'95% CI':>16}  default ({default})")
    for threads in args.threads:
        for dtype in args.dtypes:
            for n in args.sizes:
                rng = np.random.default_rng(0)
                a = rng.standard_normal((n, n)).astype(dtype)
                b = rng.standard_normal((n, n)).astype(dtype)
                out = np.empty((n, n), dtype=dtype)

                def call(t: int = threads) -> None:
                    kernels.gemm(a, b, out, threads=t)

                times = alternating_blocks({"avx2": on_path("avx2", call),
                                            "avx512": on_path("avx512", call)},
                                           blocks=args.blocks)
                gf = {isa: 2.0 * n ** 3 / 1e9
                      / statistics.median(block_values(times, isa, args.blocks, min))
                      for isa in times}
                ratios = paired_block_ratios(times, "avx2", "avx512", args.blocks, within=min)
                ratio = statistics.median(ratios)
                ci = ratio_interval(ratios)
                if ci is None:
                    ci_text, verdict = "", "too few blocks for an interval"
                else:
                    ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]"
                    faster = "avx512" if ci[0] > 1 else "avx2" if ci[1] < 1 else None
                    verdict = ("parity" if faster is None
                               else "the faster" if faster == default else "the SLOWER")
                print(f"  {threads:>7} {dtype:<8}{n:>6}{gf['avx2']:>9.1f}{gf['avx512']:>9.1f}"
                      f"{ratio:>9.3f}{ci_text:>16}  {verdict}", flush=True)


if __name__ == "__main__":
    main()
