"""fastbench GEMM against numpy's matmul (OpenBLAS here), float32 and float64, interleaved;
fastbench's bf16 GEMM against torch.matmul on bf16 CPU tensors when torch is installed.

For each shape and thread count the two run in alternating blocks of calls (nine each,
each after the same pause and untimed call, about 0.1 s long; see
_anchors.alternating_blocks). GFLOP/s are from each side's median call. "ratio" is the
median over blocks of the anchor's block median over fastbench's beside it
(_anchors.paired_block_ratio), so a slow phase of the machine spanning a pair cancels:
> 1 means fastbench is faster. "best" is the same with each block's fastest call, the
figure least touched by interference (timeit's reasoning). "% peak" is fastbench's fastest
call against the calibrated peak: fastbench.kernels.peak_flops of the widest ISA, timed with
every register width the CPU has (zmm and ymm; some cores run zmm FMAs at half rate) and
the fastest kept, the best of three runs; for bf16 the vdpbf16ps peak.
numpy's BLAS reads its thread count (OPENBLAS_NUM_THREADS) when it loads, so each thread
count runs in a child process of this script with the variable set.
Targets: >= 0.95x OpenBLAS at n >= 512 for both dtypes on AVX2 machines; on AVX-512
machines >= 85% of the peak at n >= 1024 for float32 and float64 on 1 and 2 threads and
>= 1.0x numpy on every shape; bf16 >= 1.0x torch's bf16 matmul at n >= 1024.
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


def _peak(dtype: str, threads: int) -> tuple[float, str]:
    """The calibrated peak in GFLOP/s: every register width up to the widest ISA, the fastest
    of three runs each; and the widths timed."""
    from fastbench import _core
    from fastbench.roofline import kernels

    widths = ["avx512", "avx2"] if _core.active_isa() == "avx512" else [_core.active_isa()]
    if dtype == "bfloat16":
        widths = widths[:1]
    best = max(kernels.peak_flops(dtype, threads=threads, min_time_s=0.2, isa=isa).gflops
               for isa in widths for _ in range(3))
    return best, "/".join(widths)


def _row(label: str, times: dict[str, list[float]], anchor: str, flops: float,
         peak: float) -> str:
    ratio = paired_block_ratio(times, anchor, "fastbench", BLOCKS)
    best = paired_block_ratio(times, anchor, "fastbench", BLOCKS, within=min)
    fb, other = times["fastbench"], times[anchor]
    g_fb = flops / statistics.median(fb) / 1e9
    g_other = flops / statistics.median(other) / 1e9
    g_best = flops / min(fb) / 1e9
    return (f"  {label:<20}{g_fb:>11.1f}{g_other:>11.1f}{ratio:>8.2f}{best:>8.2f}"
            f"{g_best / peak:>8.0%}")


def run(threads: int) -> None:
    import numpy as np

    import fastbench
    from fastbench import _core
    from fastbench.roofline import kernels

    f = _core.cpu_features()
    print(f"CPU {f.brand or f.vendor}: family {f.family:#x} model {f.model:#x}, widest ISA "
          f"{_core.best_isa()}, AVX512_BF16 {'yes' if f.avx512_bf16 else 'no'}")
    for dtype in ("float32", "float64"):
        peak, widths = _peak(dtype, threads)
        print(f"{dtype}, {threads} thread(s): peak {peak:.1f} GFLOP/s ({widths}); "
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
            print(_row(f"{m}x{n}x{k}", times, "numpy", 2.0 * m * n * k, peak))
        print()
    run_bf16(threads)
    del fastbench


def run_bf16(threads: int) -> None:
    """bf16 inputs, float32 sums: fastbench.kernels.gemm_bf16 against torch.matmul."""
    try:
        import torch
    except ImportError:
        print("bfloat16: torch is not installed, no anchor to compare with\n")
        return
    import numpy as np

    from fastbench import _core
    from fastbench.roofline import kernels

    if not _core.cpu_features().avx512_bf16:
        print(f"bfloat16: no AVX512_BF16 on this CPU (gemm_bf16 widens to float32, path "
              f"{kernels.gemm_bf16_isa()}); skipped\n")
        return
    torch.set_num_threads(threads)
    peak, _ = _peak("bfloat16", threads)
    print(f"bfloat16, {threads} thread(s): vdpbf16ps peak {peak:.1f} GFLOP/s; gemm_bf16 path "
          f"{kernels.gemm_bf16_isa()}; torch {torch.__version__} bf16 matmul "
          f"(float32 output from fastbench, bf16 from torch)")
    print(f"  {'m x n x k':<20}{'fastbench':>11}{'torch':>11}{'ratio':>8}{'best':>8}"
          f"{'% peak':>8}")
    for m, n, k in SHAPES:
        ta = torch.randn(m, k).bfloat16()
        tb = torch.randn(k, n).bfloat16()
        a = ta.view(torch.int16).numpy().view(np.uint16)
        b = tb.view(torch.int16).numpy().view(np.uint16)
        out = np.empty((m, n), dtype=np.float32)
        kernels.gemm_bf16(a, b, out, threads=threads)
        torch.matmul(ta, tb)
        times = alternating_blocks({
            "torch": lambda: torch.matmul(ta, tb),
            "fastbench": lambda: kernels.gemm_bf16(a, b, out, threads=threads)}, blocks=BLOCKS)
        print(_row(f"{m}x{n}x{k}", times, "torch", 2.0 * m * n * k, peak))
    print()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--threads":
        run(int(sys.argv[2]))
        return
    print("GFLOP/s, median of interleaved rounds (fastbench.kernels.gemm vs numpy.matmul, "
          "gemm_bf16 vs torch.matmul)\n")
    for threads in (1, 2):
        # numpy's BLAS reads its thread count when it loads: one child process per count.
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
               "MKL_NUM_THREADS": str(threads)}
        subprocess.run([sys.executable, __file__, "--threads", str(threads)], env=env, check=True)


if __name__ == "__main__":
    main()
