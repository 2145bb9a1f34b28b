"""fastbench conv2d (im2col and direct) against an im2col + numpy matmul (OpenBLAS) reference
on ResNet-like shapes, float32, all cores, in alternating blocks of calls (each after the same
pause and untimed call, about 0.1 s long, five per side; see _anchors.alternating_blocks).
Times are each side's median call; ratio = reference time / fastbench time block by block
beside each other, the median over blocks (_anchors.paired_block_ratio; > 1: fastbench
faster), so a slow phase of the machine spanning a pair cancels. Target >= 1.0x.
Run on a quiet machine: python benchmarks/conv_vs_numpy.py
"""

from __future__ import annotations

import statistics

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from fastbench.roofline import kernels

from _anchors import alternating_blocks, paired_block_ratio, script_args

BLOCKS = 5
# (n, c_in, h, w), (c_out, kh, kw), stride, padding, groups
SHAPES = [
    ((1, 64, 56, 56), (64, 3, 3), 1, 1, 1),
    ((1, 128, 28, 28), (128, 3, 3), 1, 1, 1),
    ((1, 256, 14, 14), (256, 3, 3), 1, 1, 1),
    ((1, 64, 56, 56), (256, 1, 1), 1, 0, 1),
    ((1, 3, 224, 224), (64, 7, 7), 2, 3, 1),
    ((8, 64, 56, 56), (64, 3, 3), 1, 1, 1),
    ((1, 32, 112, 112), (32, 3, 3), 1, 1, 32),
]


def reference(x: np.ndarray, w: np.ndarray, stride: int, pad: int, groups: int) -> np.ndarray:
    """im2col with numpy (a strided window view, copied) and one matmul per group."""
    n, c_in, _, _ = x.shape
    c_out, cpg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    oh, ow = win.shape[2], win.shape[3]
    # (n, groups, cpg·kh·kw, oh·ow) columns, (groups, c_out/groups, cpg·kh·kw) weights
    cols = np.ascontiguousarray(win.reshape(n, groups, cpg, oh, ow, kh, kw)
                                .transpose(0, 1, 2, 5, 6, 3, 4)).reshape(n, groups, -1, oh * ow)
    wg = w.reshape(groups, c_out // groups, -1)
    return np.matmul(wg, cols).reshape(n, c_out, oh, ow)


def main() -> None:
    print("ms per call, median of alternating blocks; ratio = numpy im2col+matmul / fastbench")
    print(f"  {'shape':<44}{'numpy':>9}{'auto':>9}{'im2col':>9}{'direct':>9}{'ratio':>8}{'best':>8}")
    for (n, c, h, wd), (co, kh, kw), stride, pad, groups in SHAPES:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
        w = rng.standard_normal((co, c // groups, kh, kw)).astype(np.float32)
        want = reference(x, w, stride, pad, groups)
        runs = {
            "numpy": lambda: reference(x, w, stride, pad, groups),
            "auto": lambda: kernels.conv2d(x, w, stride=stride, padding=pad, groups=groups),
            "im2col": lambda: kernels.conv2d(x, w, stride=stride, padding=pad, groups=groups,
                                             algo="im2col"),
            "direct": lambda: kernels.conv2d(x, w, stride=stride, padding=pad, groups=groups,
                                             algo="direct"),
        }
        for name in ("auto", "im2col", "direct"):
            got = runs[name]()
            err = np.abs(got - want).max() / (np.abs(want).max() + 1)
            assert err < 1e-3, (name, err)
        times = alternating_blocks(runs, blocks=BLOCKS)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        ratio = {k: paired_block_ratio(times, "numpy", k, BLOCKS) for k in ("auto", "im2col", "direct")}
        label = f"{n}x{c}x{h}x{wd} -> {co} {kh}x{kw} s{stride} p{pad}" + (f" g{groups}" if groups > 1 else "")
        print(f"  {label:<44}{med['numpy']:>9.2f}{med['auto']:>9.2f}{med['im2col']:>9.2f}"
              f"{med['direct']:>9.2f}{ratio['auto']:>8.2f}{max(ratio['im2col'], ratio['direct']):>8.2f}")
    print("  ratio: against the default algo (auto: direct below 64 taps, else im2col); "
          "best: against the faster of im2col and direct")


if __name__ == "__main__":
    script_args(__doc__)
    main()
