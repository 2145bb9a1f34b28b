"""fastbench GEMM against numpy's matmul (OpenBLAS here), float32 and float64, interleaved.

For each shape and thread count the two run in alternating blocks of calls (nine each,
each after the same pause and untimed call, about 0.1 s long; see
_anchors.alternating_blocks). GFLOP/s are from each side's median call. "ratio" is the
median over blocks of numpy's block median over fastbench's beside it
(_anchors.paired_block_ratio), so a slow phase of the machine spanning a pair cancels:
> 1 means fastbench is faster. "best" is the same with each block's fastest call, the
figure least touched by interference (timeit's reasoning). "% peak" is fastbench's fastest
call against the FMA peak of fastbench.kernels.peak_flops, the best of three runs.
numpy's BLAS reads its thread count (OPENBLAS_NUM_THREADS) when it loads, so each thread
count runs in a child process of this script with the variable set.
Targets: >= 0.95x OpenBLAS at n >= 512 for both dtypes; >= 85% of the FMA peak at n = 2048.
Run on a quiet machine: python benchmarks/gemm_vs_blas.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

from _anchors import alternating_blocks, paired_block_ratio

BLOCKS = 9
SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
          (1000, 1000, 1000), (257, 511, 129), (4096, 64, 4096), (64, 4096, 1024)]


def run(threads: int) -> None:
    import numpy as np

    import fastbench
    from fastbench.roofline import kernels

    for dtype in ("float32", "float64"):
        peak = max(kernels.peak_flops(dtype, threads=threads, min_time_s=0.2).gflops
                   for _ in range(3))
        print(f"{dtype}, {threads} thread(s): FMA peak {peak:.1f} GFLOP/s; "
              f"gemm path {kernels.gemm_isa()}")
        print(f"  {'m x n x k':<20}{'fastbench':>11}{'numpy':>11}{'ratio':>8}{'best':>8}"
              f"{'% peak':>8}")
        for m, n, k in SHAPES:
            rng = np.random.default_rng(0)
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            out = np.empty((m, n), dtype=dtype)
            out2 = np.empty((m, n), dtype=dtype)
            kernels.gemm(a, b, out, threads=threads)
            np.matmul(a, b, out=out2)
            times = alternating_blocks({
                "numpy": lambda: np.matmul(a, b, out=out2),
                "fastbench": lambda: kernels.gemm(a, b, out, threads=threads)}, blocks=BLOCKS)
            ratio = paired_block_ratio(times, "numpy", "fastbench", BLOCKS)
            best = paired_block_ratio(times, "numpy", "fastbench", BLOCKS, within=min)
            fb, npy = times["fastbench"], times["numpy"]
            flops = 2.0 * m * n * k
            g_fb = flops / statistics.median(fb) / 1e9
            g_np = flops / statistics.median(npy) / 1e9
            g_best = flops / min(fb) / 1e9
            print(f"  {f'{m}x{n}x{k}':<20}{g_fb:>11.1f}{g_np:>11.1f}{ratio:>8.2f}{best:>8.2f}"
                  f"{g_best / peak:>8.0%}")
        print()
    del fastbench


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--threads":
        run(int(sys.argv[2]))
        return
    print("GFLOP/s, median of interleaved rounds (fastbench.kernels.gemm vs numpy.matmul)\n")
    for threads in (1, 2):
        # numpy's BLAS reads its thread count when it loads: one child process per count.
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
               "MKL_NUM_THREADS": str(threads)}
        subprocess.run([sys.executable, __file__, "--threads", str(threads)], env=env, check=True)


if __name__ == "__main__":
    main()
