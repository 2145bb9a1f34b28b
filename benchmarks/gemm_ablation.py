"""Where fastbench's GEMM loses to the peak: the same products with parts of them skipped.

The GEMM core (src/cpp/gemm.cpp) is compiled here, at run time, into a program of its own
(benchmarks/native/gemm_ablation.cpp) once per variant, each with a mask of parts that the
products skip once one product has filled the packed buffers (FASTBENCH_GEMM_ABLATE):

  full            what fastbench.kernels.gemm (gemm_bf16) runs
  no A packing    A's blocks stay as an earlier product packed them (bf16 on tiles: A is read
                  in place here, as it is for PyTorch's aligned tensors, so this skips nothing)
  no B packing    B's panels likewise (and the slivers a product of few rows streams)
  no packing      both
  no C            each tile's prefetch and update of C go to a tile-sized scratch in L1 (on
                  tiles: the sums stay in their buffer, C is not written)
  kernels only    none of the three: the micro-kernels in the loop nest, on packed panels

Skipping a part gives wrong results on purpose; what is left is timed as it runs in the
product, caches and all, so the points a variant gains over "full" are what the part costs
there: its own time and what its memory traffic does to the kernels. The packed buffers are
kept from one product to the next in these programs, so a skipped packing reads real values
in memory an earlier product wrote (a fresh buffer never written would read the zero page).
Each program measures one core's peak for the dtype (FMA chains; tile products on AMX) and
its products in alternating blocks and prints their ratios; the variants run as separate
processes, in an order that alternates round by round. One thread.

"x OpenBLAS" (float32 and float64, where numpy bundles OpenBLAS): each block of each process
also times OpenBLAS's sgemm/dgemm on one thread, loaded into the same program, on the same
operands and C, right after the variant's products; the column is the median over blocks of
the variant's fastest product over OpenBLAS's (> 1: faster). Beside "full" it is the paired
comparison of gemm_vs_blas.py without Python, pauses or medians of two calls; beside the
other variants, how close to OpenBLAS the product would come without the part skipped.
--ldc-pad P gives C rows of N + P elements, so that a power-of-two N no longer puts every row
of C's tiles on one cache set (both libraries write the padded C).

Needs a C++17 compiler (c++ on PATH, or CXX). Run on a quiet machine:
  python benchmarks/gemm_ablation.py [--dtypes float32 float64 bfloat16] [--shapes 1024x1024x1024]
  python benchmarks/gemm_ablation.py --dtypes float64 --shapes 2048x2048x2048 --ldc-pad 8
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from _anchors import gemm_shape, int_at_least, numpy_openblas, positive_int, script_args

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "src" / "cpp"
HARNESS = Path(__file__).resolve().parent / "native" / "gemm_ablation.cpp"
# The core's sources the harness links besides gemm.cpp, which it includes.
SOURCES = ["cpu.cpp", "isa.cpp", "parallel.cpp", "interrupt.cpp", "peak.cpp", "clock.cpp",
           "timing.cpp"]
# Masks as gemm.cpp defines them: 1 packing A, 2 packing B, 4 C.
VARIANTS = [("full", 0), ("no A packing", 1), ("no B packing", 2), ("no packing", 3),
            ("no C", 4), ("kernels only", 7)]
SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048)]


def build(tmp: Path, masks: list[int] | None = None, opt: str = "-O3") -> dict[int, Path]:
    """One program per mask (default: every variant's), compiled as CMake compiles the core
    (-O3, C++17) unless `opt` says otherwise."""
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        raise SystemExit("no C++ compiler: set CXX or put c++ on PATH")
    programs = {}
    for mask in masks if masks is not None else [mask for _, mask in VARIANTS]:
        exe = tmp / f"ablate{mask}"
        cmd = [cxx, opt, "-std=c++17", f"-DFASTBENCH_GEMM_ABLATE={mask}", f"-I{CORE}",
               str(HARNESS), *(str(CORE / s) for s in SOURCES), "-lpthread", "-ldl", "-o",
               str(exe)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"compiling with mask {mask} failed:\n{done.stderr[-4000:]}")
        programs[mask] = exe
    return programs


def run_once(exe: Path, dtype: str, shape: tuple[int, int, int], reps: int, blocks: int,
             ldc_pad: int = 0, blas: str | None = None) -> tuple[list[float], list[float]]:
    """The per-block ratios one process printed: product over peak, and product over the
    BLAS library's (empty without `blas`)."""
    m, n, k = shape
    cmd = [str(exe), "time", dtype, str(m), str(n), str(k), str(reps), str(blocks),
           str(ldc_pad), *([blas] if blas else [])]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{exe.name} {dtype} {m}x{n}x{k} failed:\n{done.stderr[-4000:]}")
    words = done.stdout.split()
    peak = [float(w) for w in words[1:words.index("gflops")]]
    vs_blas = [float(w) for w in words[words.index("blas") + 1:]] if "blas" in words else []
    return peak, vs_blas


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dtypes", nargs="+", choices=["float32", "float64", "bfloat16"],
                        default=["float32", "float64"])
    parser.add_argument("--shapes", type=gemm_shape, nargs="+", default=SHAPES, metavar="MxNxK")
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="processes per variant, shape and dtype (default 3)")
    parser.add_argument("--blocks", type=positive_int, default=5,
                        help="peak/product blocks per process (default 5)")
    parser.add_argument("--ldc-pad", type=int_at_least(0), default=0, metavar="P",
                        help="elements added to each row of C (default 0)")
    parser.add_argument("--no-blas", action="store_true",
                        help="leave out the OpenBLAS column")


def main() -> None:
    args = script_args(__doc__, options)
    blas = None if args.no_blas else numpy_openblas()
    with tempfile.TemporaryDirectory(prefix="fastbench-ablation-") as tmp:
        print("compiling", len(VARIANTS), "variants of src/cpp/gemm.cpp ...", flush=True)
        programs = build(Path(tmp))
        print("% of the peak measured beside it, one thread; median of the blocks of all "
              "rounds [lowest and highest process median]")
        if blas is None and not args.no_blas:
            print("numpy bundles no OpenBLAS here: no OpenBLAS column")
        pad = f", C rows padded by {args.ldc_pad}" if args.ldc_pad else ""
        for dtype in args.dtypes:
            for shape in args.shapes:
                flop = 2.0 * shape[0] * shape[1] * shape[2]
                reps = max(2, min(20, int(2e11 / flop)))
                ratios: dict[str, list[float]] = {name: [] for name, _ in VARIANTS}
                medians: dict[str, list[float]] = {name: [] for name, _ in VARIANTS}
                vs_blas: dict[str, list[float]] = {name: [] for name, _ in VARIANTS}
                anchor = blas if dtype != "bfloat16" else None
                for r in range(args.rounds):
                    order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
                    for name, mask in order:
                        got, against = run_once(programs[mask], dtype, shape, reps, args.blocks,
                                                args.ldc_pad, anchor)
                        ratios[name] += got
                        medians[name].append(statistics.median(got))
                        vs_blas[name] += against
                full = statistics.median(ratios["full"])
                print(f"\n{dtype} {shape[0]}x{shape[1]}x{shape[2]}{pad}")
                column = f"{'x OpenBLAS':>12}" if anchor else ""
                print(f"  {'variant':<15}{'% peak':>8}{'range':>16}{'vs full':>10}{column}")
                for name, _ in VARIANTS:
                    med = statistics.median(ratios[name])
                    lo, hi = min(medians[name]), max(medians[name])
                    gain = "" if name == "full" else f"{100 * (med - full):+.1f} pt"
                    versus = f"{statistics.median(vs_blas[name]):>12.3f}" if anchor else ""
                    print(f"  {name:<15}{100 * med:>7.1f}%  [{100 * lo:5.1f}, {100 * hi:5.1f}]"
                          f"{gain:>10}{versus}")


if __name__ == "__main__":
    main()
