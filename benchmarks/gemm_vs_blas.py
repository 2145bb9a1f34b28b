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
the fastest kept, the best of three runs; for bf16 the peak of the path gemm_bf16 runs
(AMX tdpbf16ps tiles where the CPU has them, else vdpbf16ps). "95% CI" is the
distribution-free interval of the median ratio from the order statistics of the block ratios
(fastbench.stats.median_ci; with 9 blocks the 2nd and 8th, 96% coverage). After each table a
summary names the shapes whose interval lies wholly above 1, spans it (parity in this run)
or lies wholly below it.
numpy's BLAS reads its thread count (OPENBLAS_NUM_THREADS) when it loads, so each thread
count runs in a child process of this script with the variable set. The header names the
kernel OpenBLAS chose for this CPU (its core name) where numpy's BLAS is OpenBLAS.
--isa caps fastbench's kernels at an ISA below the widest (as on a machine without the wider
one); with --isa avx2, OpenBLAS is held to its AVX2 kernels too (OPENBLAS_CORETYPE=Haswell,
unless the variable is set), so both sides run as on an AVX2-only machine of this core.
Targets: >= 0.95x OpenBLAS at n >= 512 for both dtypes on AVX2 machines; on AVX-512
machines >= 85% of the peak at n >= 1024 for float32 and float64 on 1 and 2 threads and
>= 1.0x numpy on every shape; bf16 >= 1.0x torch's bf16 matmul at n >= 1024.
Run on a quiet machine:
    python benchmarks/gemm_vs_blas.py
    python benchmarks/gemm_vs_blas.py --threads 1 --dtypes bfloat16 --shapes 1024x1024x1024
    python benchmarks/gemm_vs_blas.py --isa avx2 --dtypes float32 float64
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys

from _anchors import (alternating_blocks, gemm_shape, numpy_openblas, paired_block_ratio,
                      paired_block_ratios, positive_int, ratio_interval, script_args)

BLOCKS = 9
SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
          (1000, 1000, 1000), (257, 511, 129), (4096, 64, 4096), (64, 4096, 1024)]
DTYPES = ("float32", "float64", "bfloat16")
ISAS = ("portable", "avx2", "avx512", "amx")


def blas_core() -> str:
    """The kernel family numpy's OpenBLAS runs ("Haswell", "SkylakeX", ...), or why not known."""
    path = numpy_openblas()
    if path is not None:
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                     "openblas_get_corename64_", "openblas_get_corename"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return f"OpenBLAS core {fn().decode()}"
    return "not OpenBLAS bundled with numpy (core not known)"


def _peak(dtype: str, threads: int) -> tuple[float, str]:
    """The calibrated peak in GFLOP/s: every register width up to the widest ISA, the fastest
    of three runs each; and the widths timed."""
    from fastbench import _core
    from fastbench.roofline import kernels

    names = _core.isa_names()
    active = names.index(_core.active_isa())
    widths = [isa for isa in ("avx512", "avx2") if names.index(isa) <= active] or ["portable"]
    if dtype == "bfloat16":  # the path gemm_bf16 runs: tiles where there are any
        widths = ["amx"] if _core.active_isa() == "amx" else widths[:1]
    best = max(kernels.peak_flops(dtype, threads=threads, min_time_s=0.2, isa=isa).gflops
               for isa in widths for _ in range(3))
    return best, "/".join(widths)


class Table:
    """One dtype's rows against its anchor, and the summary of their intervals."""

    def __init__(self, anchor: str, peak: float, blocks: int) -> None:
        self.anchor, self.peak, self.blocks = anchor, peak, blocks
        self.above: list[str] = []
        self.parity: list[str] = []
        self.below: list[str] = []
        print(f"  {'m x n x k':<20}{'fastbench':>11}{anchor:>11}{'ratio':>8}{'95% CI':>16}"
              f"{'best':>8}{'% peak':>8}")

    def row(self, label: str, times: dict[str, list[float]], flops: float) -> None:
        ratios = paired_block_ratios(times, self.anchor, "fastbench", self.blocks)
        ratio = statistics.median(ratios)
        ci = ratio_interval(ratios)
        best = paired_block_ratio(times, self.anchor, "fastbench", self.blocks, within=min)
        fb, other = times["fastbench"], times[self.anchor]
        g_fb = flops / statistics.median(fb) / 1e9
        g_other = flops / statistics.median(other) / 1e9
        g_best = flops / min(fb) / 1e9
        interval = "n/a" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"
        if ci is not None:
            side = self.above if ci[0] > 1.0 else self.below if ci[1] < 1.0 else self.parity
            side.append(label)
        print(f"  {label:<20}{g_fb:>11.1f}{g_other:>11.1f}{ratio:>8.2f}{interval:>16}{best:>8.2f}"
              f"{g_best / self.peak:>8.0%}")

    def summary(self) -> None:
        for what, labels in (("faster than", self.above), ("at parity with", self.parity),
                             ("slower than", self.below)):
            if labels:
                print(f"  {what} {self.anchor} (95% CI of the ratio): {', '.join(labels)}")
        print()


def run(threads: int, dtypes: list[str], shapes: list[tuple[int, int, int]], blocks: int,
        isa: str | None = None) -> None:
    import numpy as np

    from fastbench import _core
    from fastbench.roofline import kernels

    if isa is not None:
        _core._set_isa_cap(isa)
    f = _core.cpu_features()
    cap = "" if isa is None else f", capped at {_core.active_isa()}"
    print(f"CPU {f.brand or f.vendor}: family {f.family:#x} model {f.model:#x}, widest ISA "
          f"{_core.best_isa()}{cap}, AVX512_BF16 {'yes' if f.avx512_bf16 else 'no'}; "
          f"numpy's BLAS: {blas_core()}")
    for dtype in dtypes:
        if dtype == "bfloat16":
            run_bf16(threads, shapes, blocks)
            continue
        peak, widths = _peak(dtype, threads)
        tile = _core.gemm_blocking(dtype == "float64")
        print(f"{dtype}, {threads} thread(s): peak {peak:.1f} GFLOP/s ({widths}); "
              f"gemm path {kernels.gemm_isa(dtype)}, {tile.mr}x{tile.nr} tile")
        table = Table("numpy", peak, blocks)
        for m, n, k in shapes:
            rng = np.random.default_rng(0)
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            out = np.empty((m, n), dtype=dtype)
            out2 = np.empty((m, n), dtype=dtype)
            kernels.gemm(a, b, out, threads=threads)
            np.matmul(a, b, out=out2)
            times = alternating_blocks({
                "numpy": lambda: np.matmul(a, b, out=out2),
                "fastbench": lambda: kernels.gemm(a, b, out, threads=threads)}, blocks=blocks)
            table.row(f"{m}x{n}x{k}", times, 2.0 * m * n * k)
        table.summary()


def run_bf16(threads: int, shapes: list[tuple[int, int, int]], blocks: int) -> None:
    """bf16 inputs, float32 sums: fastbench.kernels.gemm_bf16 against torch.matmul."""
    try:
        import torch
    except ImportError:
        print("bfloat16: torch is not installed, no anchor to compare with\n")
        return
    import numpy as np

    from fastbench import _core
    from fastbench.roofline import kernels

    if kernels.gemm_bf16_isa() not in ("amx_bf16", "avx512_bf16"):
        print(f"bfloat16: no AVX512_BF16 on this CPU or under the ISA cap (gemm_bf16 widens to "
              f"float32, path {kernels.gemm_bf16_isa()}); skipped\n")
        return
    torch.set_num_threads(threads)
    peak, width = _peak("bfloat16", threads)
    kind = "tdpbf16ps tile" if width == "amx" else "vdpbf16ps"
    print(f"bfloat16, {threads} thread(s): {kind} peak {peak:.1f} GFLOP/s; gemm_bf16 path "
          f"{kernels.gemm_bf16_isa()}; torch {torch.__version__} bf16 matmul "
          f"(float32 output from fastbench, bf16 from torch)")
    table = Table("torch", peak, blocks)
    for m, n, k in shapes:
        ta = torch.randn(m, k).bfloat16()
        tb = torch.randn(k, n).bfloat16()
        a = ta.view(torch.int16).numpy().view(np.uint16)
        b = tb.view(torch.int16).numpy().view(np.uint16)
        out = np.empty((m, n), dtype=np.float32)
        kernels.gemm_bf16(a, b, out, threads=threads)
        torch.matmul(ta, tb)
        times = alternating_blocks({
            "torch": lambda: torch.matmul(ta, tb),
            "fastbench": lambda: kernels.gemm_bf16(a, b, out, threads=threads)}, blocks=blocks)
        table.row(f"{m}x{n}x{k}", times, 2.0 * m * n * k)
    table.summary()


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=positive_int, nargs="+", default=[1, 2],
                        help="thread counts, one child process each (default: 1 2)")
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    parser.add_argument("--shapes", type=gemm_shape, nargs="+", default=SHAPES, metavar="MxNxK")
    parser.add_argument("--blocks", type=positive_int, default=BLOCKS,
                        help=f"alternating blocks per side and shape (default {BLOCKS}; the "
                             "95%% interval needs at least 6)")
    parser.add_argument("--isa", choices=ISAS,
                        help="cap fastbench's kernels at this ISA; avx2 holds OpenBLAS to its "
                             "AVX2 kernels too (default: the widest the CPU has)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)


def main() -> None:
    args = script_args(__doc__, options)
    if args.child:
        run(args.threads[0], args.dtypes, args.shapes, args.blocks, args.isa)
        return
    print("GFLOP/s, median of interleaved rounds (fastbench.kernels.gemm vs numpy.matmul, "
          "gemm_bf16 vs torch.matmul)\n")
    shapes = [f"{m}x{n}x{k}" for m, n, k in args.shapes]
    for threads in args.threads:
        # numpy's BLAS reads its thread count when it loads: one child process per count.
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
               "MKL_NUM_THREADS": str(threads)}
        if args.isa == "avx2":
            env.setdefault("OPENBLAS_CORETYPE", "Haswell")
        isa = ["--isa", args.isa] if args.isa else []
        subprocess.run([sys.executable, __file__, "--child", "--threads", str(threads),
                        "--blocks", str(args.blocks), "--dtypes", *args.dtypes,
                        "--shapes", *shapes, *isa], env=env, check=True)


if __name__ == "__main__":
    main()
