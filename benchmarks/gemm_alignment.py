"""fastbench GEMM into outputs at different offsets within a cache line, interleaved.

numpy's large arrays start 16 bytes into a 64-byte line; gemm shifts its tiles of C onto
lines when C's rows are whole lines long, so an output at offset 16 should run as fast as
one at offset 0. Both outputs (same shape, same inputs) are timed in alternating blocks
(_anchors.alternating_blocks); the ratio is offset 16's time over offset 0's, block by
block (_anchors.paired_block_ratio): about 1.0 means the offset costs nothing, above 1.0
that it is slower. numpy's matmul (one thread) into a fresh array is shown beside.
Run on a quiet machine: python benchmarks/gemm_alignment.py
"""

from __future__ import annotations

import os
import statistics

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # read when numpy's BLAS loads: before the import

import numpy as np
from _anchors import alternating_blocks, paired_block_ratio, script_args

from fastbench.roofline import kernels


def at_offset(shape: tuple[int, int], dtype: str, offset_bytes: int) -> np.ndarray:
    """A C-contiguous array starting ``offset_bytes`` after a 64-byte boundary."""
    count = shape[0] * shape[1] * np.dtype(dtype).itemsize
    raw = np.empty(count + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + offset_bytes
    return raw[start:start + count].view(dtype).reshape(shape)


def main() -> None:
    print("GFLOP/s, 1 thread, median of alternating blocks")
    print(f"  {'dtype':<9}{'n':>6}{'offset 0':>10}{'offset 16':>11}{'numpy':>9}{'16 / 0':>9}")
    for dtype in ("float32", "float64"):
        for n in (512, 1024, 2048):
            rng = np.random.default_rng(0)
            a = rng.standard_normal((n, n)).astype(dtype)
            b = rng.standard_normal((n, n)).astype(dtype)
            outs = {off: at_offset((n, n), dtype, off) for off in (0, 16)}
            ref = np.empty((n, n), dtype=dtype)
            times = alternating_blocks({
                "0": lambda: kernels.gemm(a, b, outs[0], threads=1),
                "16": lambda: kernels.gemm(a, b, outs[16], threads=1),
                "numpy": lambda: np.matmul(a, b, out=ref)}, blocks=5)
            med = {k: statistics.median(v) for k, v in times.items()}
            gf = {k: 2.0 * n ** 3 / t / 1e9 for k, t in med.items()}
            ratio = paired_block_ratio(times, "16", "0", 5)
            print(f"  {dtype:<9}{n:>6}{gf['0']:>10.1f}{gf['16']:>11.1f}{gf['numpy']:>9.1f}"
                  f"{ratio:>9.3f}")


if __name__ == "__main__":
    script_args(__doc__)
    main()
