"""GEMM on every path this CPU runs (the zmm kernels, float64's ymm tile of AVX-512VL, AVX2,
portable) against numpy over edge
tiles, the bf16 GEMM against a float64 product of the bf16-rounded inputs on its tile (AMX),
vdpbf16ps and widened paths, bf16 rounding against hand-worked values, and conv2d's im2col on the zmm
GEMM against a numpy im2col."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, ContextManager, Iterator

import numpy as np
import pytest

from fastbench import _core
from fastbench.roofline import kernels

RNG = np.random.default_rng(4321)
HAS_AVX512 = _core.best_isa() in ("avx512", "amx")  # amx: AVX-512 and tiles
HAS_BF16 = HAS_AVX512 and _core.cpu_features().avx512_bf16
HAS_TILES = _core.best_isa() == "amx"
# Around the tiles of every kernel (zmm 12x32 float / 8x24 double, AVX-512VL ymm 6x16 double,
# AVX2 ymm 6x16 / 6x8, portable 4x8 / 4x4), 1xN, Nx1, k = 1, and k past one k block (512).
SHAPES = [(1, 1, 1), (1, 97, 13), (97, 1, 13), (40, 70, 1), (12, 32, 8), (11, 31, 9),
          (13, 33, 17), (8, 24, 5), (9, 25, 3), (24, 48, 64), (25, 49, 65), (61, 150, 45),
          (30, 100, 520), (3, 40, 1030)]


@contextmanager
def _isa_capped(isa: str) -> Iterator[None]:
    before = _core._isa_cap()
    _core._set_isa_cap(isa)
    try:
        yield
    finally:
        _core._set_isa_cap(before)


@contextmanager
def _hook(setter: Callable[[bool], None], on: bool) -> Iterator[None]:
    """A process-wide gemm test hook set to ``on`` inside the block, back to ``not on`` after."""
    setter(on)
    try:
        yield
    finally:
        setter(not on)


def _zmm_kernels() -> ContextManager[None]:
    """gemm's zmm kernels inside the block, even on a core whose 512-bit FMAs are half rate."""
    return _hook(_core._gemm_zmm_at_half_rate, True)


def _ymm_tiles() -> ContextManager[None]:
    """Inside the block, the kernels a core with half-rate zmm FMAs (Zen 4) runs on the AVX-512
    path, on any AVX-512 core: float64's 6x16 ymm tile, float32's AVX2 kernel."""
    return _hook(_core._gemm_ymm_tiles, True)


def _bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def _check(got: np.ndarray, want: np.ndarray, scale: np.ndarray, k: int, eps: float) -> None:
    """Elementwise error within 4 (k + 2) eps of the sum of the terms' magnitudes."""
    err = np.abs(got.astype(np.float64) - want)
    bound = 4.0 * (k + 2) * eps * (scale + 1e-30)
    assert (err <= bound).all(), float((err / (scale + 1e-30)).max())


def _gemm_against_numpy(dtype: type, m: int, n: int, k: int, threads: int) -> None:
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    c0 = RNG.standard_normal((m, n)).astype(dtype)
    out = c0.copy()
    kernels.gemm(a, b, out, alpha=0.5, beta=-1.0, threads=threads)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = 0.5 * (a64 @ b64) - c0
    scale = 0.5 * (np.abs(a64) @ np.abs(b64)) + np.abs(c0)
    _check(out, want, scale, k, float(np.finfo(dtype).eps))


@pytest.mark.skipif(not HAS_AVX512, reason="no AVX-512 on this CPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_avx512_path_matches_numpy(dtype: type, m: int, n: int, k: int,
                                        threads: int) -> None:
    with _zmm_kernels():
        assert kernels.gemm_isa() == "avx512"
        _gemm_against_numpy(dtype, m, n, k, threads)


@pytest.mark.skipif(not HAS_AVX512, reason="no AVX-512 on this CPU")
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_float64_ymm_tile_matches_numpy(m: int, n: int, k: int, threads: int) -> None:
    with _ymm_tiles():
        assert kernels.gemm_isa("float64") == "avx512" and kernels.gemm_isa() == "avx2"
        blocking = _core.gemm_blocking(True)
        assert (blocking.mr, blocking.nr) == (6, 16)
        _gemm_against_numpy(np.float64, m, n, k, threads)


def _panels_only() -> ContextManager[None]:
    """gemm's Goto nest (whole B panels packed first) even for tiles of few rows."""
    return _hook(_core._gemm_stream_b, False)


# Tiles of at most 128 rows (zmm kernels) or 64 (AVX2) stream B a sliver at a time: several
# k blocks (512 each), edge slivers, row counts on either side of both limits, one and two
# threads (each thread streams its half of the columns).
STREAMED = [(64, 1030, 1100), (128, 300, 600), (129, 300, 40), (5, 2049, 513), (100, 33, 7),
            (65, 200, 30)]


@pytest.mark.parametrize("path", ["avx512", "avx512 ymm", "avx2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n,k", STREAMED)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_streamed_b_matches_numpy_and_the_panel_nest(path: str, dtype: type, m: int, n: int,
                                                          k: int, threads: int) -> None:
    isa, ymm = path.split()[0], path.endswith(" ymm")
    if _core.isa_names().index(isa) > _core.isa_names().index(_core.best_isa()):
        pytest.skip(f"no {isa} on this CPU")
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    c0 = RNG.standard_normal((m, n)).astype(dtype)
    with _isa_capped(isa), (_ymm_tiles() if ymm else _zmm_kernels()):
        # float32 runs the AVX2 kernel there, with A packed by the zmm transposes.
        want = "avx2" if ymm and dtype is np.float32 else isa
        assert kernels.gemm_isa(np.dtype(dtype).name) == want
        streamed = c0.copy()
        kernels.gemm(a, b, streamed, alpha=2.0, beta=0.5, threads=threads)
        with _panels_only():
            panels = c0.copy()
            kernels.gemm(a, b, panels, alpha=2.0, beta=0.5, threads=threads)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = 2.0 * (a64 @ b64) + 0.5 * c0
    scale = 2.0 * (np.abs(a64) @ np.abs(b64)) + 0.5 * np.abs(c0)
    eps = float(np.finfo(dtype).eps)
    _check(streamed, want, scale, k, eps)
    _check(panels, want, scale, k, eps)


@pytest.mark.parametrize("cap", ["avx2", "portable"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_narrower_paths_match_numpy(cap: str, dtype: type, threads: int) -> None:
    if _core.isa_names().index(cap) > _core.isa_names().index(_core.best_isa()):
        pytest.skip(f"no {cap} on this CPU")
    with _isa_capped(cap), _zmm_kernels():
        assert kernels.gemm_isa() == cap  # the cap holds whatever the zmm preference
        for m, n, k in SHAPES[::2]:
            _gemm_against_numpy(dtype, m, n, k, threads)


@pytest.mark.skipif(not HAS_AVX512, reason="no AVX-512 on this CPU")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_avx512_path_reads_transposed_and_strided_inputs(dtype: type) -> None:
    a = RNG.standard_normal((45, 70)).astype(dtype).T  # 70x45, Fortran order
    b = RNG.standard_normal((90, 66)).astype(dtype)[::2, ::3]  # 45x22, strided
    with _zmm_kernels():
        got = kernels.gemm(a, b, threads=2)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    _check(got, a64 @ b64, np.abs(a64) @ np.abs(b64), 45, float(np.finfo(dtype).eps))


def test_gemm_names_the_path_that_pays_uncapped() -> None:
    """Zen 4 (AMD family 0x19) runs 512-bit FMAs as two 256-bit halves: its GEMM keeps to ymm
    kernels, measured faster there (float32's AVX2 kernel; float64's 6x16 tile, which needs
    AVX-512VL's 32 registers); other AVX-512 cores run the zmm kernels (AMX tiles hold no
    float FMAs, so the float GEMM runs zmm beside them)."""
    f = _core.cpu_features()
    zen4 = f.vendor == "AuthenticAMD" and f.family == 0x19
    best = "avx512" if HAS_AVX512 else _core.best_isa()
    assert kernels.gemm_isa() == ("avx2" if best == "avx512" and zen4 else best)
    assert kernels.gemm_isa("float64") == best
    if best == "avx512":
        blocking = _core.gemm_blocking(True)
        assert (blocking.mr, blocking.nr) == ((6, 16) if zen4 else (8, 24))
    with pytest.raises(ValueError, match="float32"):
        kernels.gemm_isa("bfloat16")


# -- bf16 ---------------------------------------------------------------------------------------
def test_to_bfloat16_rounds_to_nearest_even() -> None:
    one = np.float32(1.0)
    half_ulp = np.float32(2.0 ** -8)  # half a bf16 ulp at 1.0 (7 fraction bits)
    x = np.array([1.0, one + half_ulp, one + 3 * half_ulp, one + half_ulp * 1.5, -2.5,
                  np.inf, -np.inf, 3.4e38, 1e-40], dtype=np.float32)
    # 1+2^-8 is a tie: to even (1.0); 1+3*2^-8 ties up to 1+2^-6 (even); 1+1.5*2^-8 rounds up
    # to 1+2^-7; -2.5 is exact; 3.4e38 rounds past the largest bf16 to infinity; a subnormal
    # keeps its upper bits.
    want = [0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC020, 0x7F80, 0xFF80, 0x7F80, 0x0001]
    assert kernels.to_bfloat16(x).tolist() == want
    nan = kernels.to_bfloat16(np.array([np.nan, -np.nan], dtype=np.float32))
    assert np.isnan(_bf16_values(nan)).all()
    with pytest.raises(TypeError, match="x must be a float32 numpy array"):
        kernels.to_bfloat16(np.zeros(3))


def test_to_bfloat16_agrees_with_torch() -> None:
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(10000).astype(np.float32) * np.float32(1e3)
    want = torch.from_numpy(x).bfloat16().view(torch.int16).numpy().view(np.uint16)
    assert (kernels.to_bfloat16(x) == want).all()


def _gemm_bf16_against_reference(m: int, n: int, k: int, threads: int) -> None:
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b_bits = kernels.to_bfloat16(RNG.standard_normal((k, n)).astype(np.float32))
    c0 = RNG.standard_normal((m, n)).astype(np.float32)
    out = c0.copy()
    # a as float32 (rounded inside), b as bf16 bits.
    kernels.gemm_bf16(a, b_bits, out, alpha=2.0, beta=0.5, threads=threads)
    a64 = _bf16_values(kernels.to_bfloat16(a)).astype(np.float64)
    b64 = _bf16_values(b_bits).astype(np.float64)
    want = 2.0 * (a64 @ b64) + 0.5 * c0
    scale = 2.0 * (np.abs(a64) @ np.abs(b64)) + 0.5 * np.abs(c0)
    _check(out, want, scale, k, float(np.finfo(np.float32).eps))


@pytest.mark.skipif(not HAS_BF16, reason="no AVX512_BF16 on this CPU")
@pytest.mark.parametrize("m,n,k", SHAPES + [(6, 64, 2), (7, 65, 2049)])
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_bf16_vdpbf16ps_path_matches_the_rounded_float_product(m: int, n: int, k: int,
                                                                    threads: int) -> None:
    with _isa_capped("avx512"):  # below the tiles, where there are any
        assert kernels.gemm_bf16_isa() == "avx512_bf16"
        _gemm_bf16_against_reference(m, n, k, threads)


# bf16's vdpbf16ps kernel streams B for a tile of one unit of rows (as many as half of L2
# holds) and at least 16 slivers of 64 columns: k pieces that split a pair (odd pieces, odd
# k), several k blocks (1024 each), an edge sliver, and two threads, each streaming its half
# of the columns (over 960 each).
BF16_STREAMED = [(64, 2100, 1100), (5, 2049, 513), (24, 2050, 7), (100, 2100, 2051),
                 (1, 2049, 3)]


@pytest.mark.skipif(not HAS_BF16, reason="no AVX512_BF16 on this CPU")
@pytest.mark.parametrize("m,n,k", BF16_STREAMED)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_bf16_streamed_b_matches_the_panel_nest_exactly(m: int, n: int, k: int,
                                                            threads: int) -> None:
    a = kernels.to_bfloat16(RNG.standard_normal((m, k)).astype(np.float32))
    b = kernels.to_bfloat16(RNG.standard_normal((k, n)).astype(np.float32))
    c0 = RNG.standard_normal((m, n)).astype(np.float32)
    with _isa_capped("avx512"):
        streamed = c0.copy()
        kernels.gemm_bf16(a, b, streamed, alpha=2.0, beta=0.5, threads=threads)
        with _panels_only():
            panels = c0.copy()
            kernels.gemm_bf16(a, b, panels, alpha=2.0, beta=0.5, threads=threads)
    # The same kernel sums the same k blocks in the same order either way.
    assert np.array_equal(streamed, panels)
    a64, b64 = _bf16_values(a).astype(np.float64), _bf16_values(b).astype(np.float64)
    _check(streamed, 2.0 * (a64 @ b64) + 0.5 * c0, 2.0 * (np.abs(a64) @ np.abs(b64))
           + 0.5 * np.abs(c0), k, float(np.finfo(np.float32).eps))


# Around the 32x32 tile block and the 32-value chunks of k, past a k sub-block (256), and
# past a k block (4096: the next block adds to what the first wrote).
TILE_SHAPES = [(32, 32, 32), (31, 33, 63), (33, 31, 65), (1, 1, 1), (64, 96, 288),
               (65, 95, 257), (5, 200, 700), (200, 5, 31), (40, 33, 4200)]


@pytest.mark.skipif(not HAS_TILES, reason="no AMX tiles on this CPU (or no grant of their state)")
@pytest.mark.parametrize("m,n,k", SHAPES + TILE_SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_bf16_tile_path_matches_the_rounded_float_product(m: int, n: int, k: int,
                                                               threads: int) -> None:
    assert kernels.gemm_bf16_isa() == "amx_bf16"
    _gemm_bf16_against_reference(m, n, k, threads)


def _on_a_cache_line(rows: int, cols: int) -> np.ndarray:
    """A zeroed (rows, cols) uint16 array whose first element starts a 64-byte line."""
    room = np.zeros(rows * cols + 32, dtype=np.uint16)
    skip = (-room.ctypes.data % 64) // 2
    return room[skip:skip + rows * cols].reshape(rows, cols)


@pytest.mark.skipif(not HAS_TILES, reason="no AMX tiles on this CPU (or no grant of their state)")
@pytest.mark.parametrize("m,n,k", [(64, 96, 256), (128, 40, 544), (70, 33, 64), (96, 200, 1000),
                                   (64, 40, 4352)])
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_bf16_tile_path_reads_a_on_cache_lines_in_place(m: int, n: int, k: int,
                                                              threads: int) -> None:
    # A starting on a cache line with rows whole lines apart (k a multiple of 32) is read by
    # the tiles where it lies, whole units of 64 rows at a time; the rest is copied.
    a = _on_a_cache_line(m, k)
    a[:] = kernels.to_bfloat16(RNG.standard_normal((m, k)).astype(np.float32))
    assert a.ctypes.data % 64 == 0
    b = kernels.to_bfloat16(RNG.standard_normal((k, n)).astype(np.float32))
    got = kernels.gemm_bf16(a, b, threads=threads)
    a64, b64 = _bf16_values(a).astype(np.float64), _bf16_values(b).astype(np.float64)
    _check(got, a64 @ b64, np.abs(a64) @ np.abs(b64), k, float(np.finfo(np.float32).eps))


@pytest.mark.skipif(not HAS_TILES, reason="no AMX tiles on this CPU (or no grant of their state)")
def test_gemm_bf16_tile_path_gives_exact_sums_of_small_integers() -> None:
    # Integers up to 8 are exact in bf16 and their products' sums (below 2^24) exact in
    # float32: the tiles must give numpy's integer product to the last bit, beta included.
    m, n, k = 70, 90, 300
    a = RNG.integers(-8, 9, (m, k)).astype(np.float32)
    b = RNG.integers(-8, 9, (k, n)).astype(np.float32)
    c0 = RNG.integers(-100, 100, (m, n)).astype(np.float32)
    out = c0.copy()
    kernels.gemm_bf16(a, kernels.to_bfloat16(b), out, beta=1.0, threads=2)
    want = a.astype(np.int64) @ b.astype(np.int64) + c0.astype(np.int64)
    assert (out.astype(np.int64) == want).all()


@pytest.mark.skipif(not HAS_TILES, reason="no AMX tiles on this CPU (or no grant of their state)")
@pytest.mark.parametrize("m,n,k,on_a_line", [(1500, 1000, 32, False), (1504, 1056, 64, True),
                                             (60, 300, 96, False)])
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_bf16_tile_path_writes_every_element_of_c_large_or_small(
        m: int, n: int, k: int, on_a_line: bool, threads: int) -> None:
    # With beta 0, C is written with streaming stores (whole lines, plain stores at the
    # unaligned ends of each row) on two threads or when larger than 3/8 of L2 (6 MB here,
    # more than any core's L2), else with plain stores. Either way every element is written
    # once, exactly: integers up to 8 give sums exact in float32. C starts as NaN, so a
    # skipped element shows.
    a = RNG.integers(-8, 9, (m, k)).astype(np.float32)
    b = RNG.integers(-8, 9, (k, n)).astype(np.float32)
    out = np.empty((m, n), dtype=np.float32)
    if on_a_line:  # rows whole lines apart from a line: no unaligned ends
        room = np.empty(m * n + 16, dtype=np.float32)
        skip = (-room.ctypes.data % 64) // 4
        out = room[skip:skip + m * n].reshape(m, n)
    out.fill(np.nan)
    kernels.gemm_bf16(a, kernels.to_bfloat16(b), out, alpha=2.0, threads=threads)
    want = 2.0 * (a.astype(np.float64) @ b.astype(np.float64))
    assert np.array_equal(out, want)


@pytest.mark.parametrize("cap", ["avx2", "portable"])
def test_gemm_bf16_widened_path_matches_the_rounded_float_product(cap: str) -> None:
    if _core.isa_names().index(cap) > _core.isa_names().index(_core.best_isa()):
        pytest.skip(f"no {cap} on this CPU")
    with _isa_capped(cap):
        assert kernels.gemm_bf16_isa() == cap
        for m, n, k in SHAPES[::3]:
            _gemm_bf16_against_reference(m, n, k, threads=2)


def test_gemm_bf16_with_out_sharing_the_buffer_of_an_input_matches_the_product() -> None:
    # bf16 bits of a (m, k) stored in the same buffer the float32 result is written to: the
    # product must be of a as it was, as numpy's matmul would give.
    m = n = k = 96
    buf = np.zeros(m * n, dtype=np.float32)
    a_bits = buf.view(np.uint16)[: m * k].reshape(m, k)
    a_bits[:] = kernels.to_bfloat16(RNG.standard_normal((m, k)).astype(np.float32))
    b_bits = kernels.to_bfloat16(RNG.standard_normal((k, n)).astype(np.float32))
    a64 = _bf16_values(a_bits.copy()).astype(np.float64)
    want = a64 @ _bf16_values(b_bits).astype(np.float64)
    out = buf.reshape(m, n)
    kernels.gemm_bf16(a_bits, b_bits, out, threads=2)
    scale = np.abs(a64) @ np.abs(_bf16_values(b_bits).astype(np.float64))
    _check(out, want, scale, k, float(np.finfo(np.float32).eps))


def test_gemm_bf16_reads_torch_bf16_bits() -> None:
    torch = pytest.importorskip("torch")
    a = torch.randn(33, 20).bfloat16()
    b = torch.randn(20, 17).bfloat16()
    got = kernels.gemm_bf16(a.view(torch.int16).numpy().view(np.uint16),
                            b.view(torch.int16).numpy().view(np.uint16))
    want = a.double().numpy() @ b.double().numpy()
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call, error, match", [
    (lambda: kernels.gemm_bf16(np.zeros((2, 3)), np.zeros((3, 2), np.float32)), TypeError,
     "a has dtype float64, expected float32"),
    (lambda: kernels.gemm_bf16(np.zeros((2, 3), np.uint16), np.zeros((4, 2), np.uint16)),
     ValueError, "do not agree"),
    (lambda: kernels.gemm_bf16(np.zeros(3, np.uint16), np.zeros((3, 2), np.uint16)),
     ValueError, "a has 1 dimensions"),
    (lambda: kernels.gemm_bf16(np.zeros((2, 3), np.uint16), np.zeros((3, 2), np.uint16),
                               np.zeros((2, 2))), TypeError, "out has dtype float64"),
    (lambda: kernels.gemm_bf16(np.zeros((2, 3), np.uint16), np.zeros((3, 2), np.uint16),
                               beta=1.0), ValueError, "beta != 0 needs an out"),
    (lambda: kernels.gemm_bf16([[1.0]], np.zeros((1, 1), np.uint16)), TypeError,
     "a must be a numpy array"),
])
def test_gemm_bf16_bad_inputs(call: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()  # type: ignore[operator]


# -- conv2d -------------------------------------------------------------------------------------
def _im2col_conv(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """Stride 1, no groups: numpy's im2col lowering and a float64 matmul."""
    n, c, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    cols = cols.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, oh * ow)
    return (w.reshape(co, -1).astype(np.float64) @ cols).reshape(n, co, oh, ow)


@pytest.mark.skipif(not HAS_AVX512, reason="no AVX-512 on this CPU")
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_im2col_on_the_avx512_gemm_matches_numpy(threads: int) -> None:
    x = RNG.standard_normal((2, 5, 17, 19)).astype(np.float32)
    w = RNG.standard_normal((30, 5, 3, 3)).astype(np.float32)
    with _zmm_kernels():
        assert kernels.gemm_isa() == "avx512"
        got = kernels.conv2d(x, w, padding=1, algo="im2col", threads=threads)
    want = _im2col_conv(x, w, 1)
    scale = _im2col_conv(np.abs(x), np.abs(w), 1)
    _check(got, want, scale, 5 * 9, float(np.finfo(np.float32).eps))
