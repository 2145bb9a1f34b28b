"""fastbench.kernels: GEMM and conv2d against numpy references on many shapes, bandwidth and
peak kernels on their invariants, every kernel on every ISA path the machine has (capped
through the core's one ISA hook), and every bad-input path (a clear exception, never a
crash)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest

from fastbench import _core
from fastbench.machine import microarch
from fastbench.roofline import Roofline, kernels

RNG = np.random.default_rng(1234)
DTYPES = [np.float32, np.float64]
# m, n, k: 1x1, primes, tall/skinny, below one block, around the micro-tile and block edges.
SHAPES = [(1, 1, 1), (7, 13, 29), (31, 17, 3), (2, 3, 1), (257, 1, 64), (1, 300, 5),
          (6, 16, 256), (13, 33, 300), (97, 101, 103), (250, 130, 520), (64, 64, 64)]


def _tolerance(dtype: type, k: int) -> float:
    """Relative error bound growing with the reduction length K."""
    return 4.0 * max(k, 1) * float(np.finfo(dtype).eps)


def _reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) @ b.astype(np.float64)


def _check_close(got: np.ndarray, want: np.ndarray, dtype: type, k: int) -> None:
    scale = np.abs(want).max() + 1.0
    err = np.abs(got.astype(np.float64) - want).max() / scale
    assert err <= _tolerance(dtype, k), (err, _tolerance(dtype, k))


# -- ISA paths --------------------------------------------------------------------------------
ISAS = _core.isa_names()  # narrowest first
# The widest path every kernel implements (conv2d's); the peak, GEMM and bandwidth go wider.
WIDEST_KERNEL_ISA = "avx2"


@contextmanager
def _isa_capped(isa: str) -> Iterator[None]:
    """Every kernel capped at ``isa`` inside the block; the previous cap restored after."""
    before = _core._isa_cap()
    _core._set_isa_cap(isa)
    try:
        yield
    finally:
        _core._set_isa_cap(before)


def _narrowest(*names: str) -> str:
    return min(names, key=ISAS.index)


# Caps that give distinct paths on this machine (capping above best_isa changes nothing).
CAPS = [isa for isa in ISAS if ISAS.index(isa) <= ISAS.index(_core.best_isa())]
# Register widths: AMX tiles hold bf16 and int8 products only, so float kernels and the
# float peak run avx512 under the amx level.
VECTOR_CAPS = [isa for isa in CAPS if isa != "amx"]
FLOAT_WIDEST = "avx512"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_matches_numpy(dtype: type, m: int, n: int, k: int, threads: int) -> None:
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    got = kernels.gemm(a, b, threads=threads)
    assert got.dtype == dtype and got.shape == (m, n)
    _check_close(got, _reference(a, b), dtype, k)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_portable_path_matches_too(dtype: type) -> None:
    a = RNG.standard_normal((45, 70)).astype(dtype)
    b = RNG.standard_normal((70, 39)).astype(dtype)
    with _isa_capped("portable"):
        assert kernels.gemm_isa() == "portable"
        got = kernels.gemm(a, b, threads=2)
    _check_close(got, _reference(a, b), dtype, 70)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_alpha_beta_and_out(dtype: type) -> None:
    a = RNG.standard_normal((20, 30)).astype(dtype)
    b = RNG.standard_normal((30, 10)).astype(dtype)
    c0 = RNG.standard_normal((20, 10)).astype(dtype)
    out = c0.copy()
    back = kernels.gemm(a, b, out, alpha=0.5, beta=2.0)
    assert back is out
    _check_close(out, 0.5 * _reference(a, b) + 2.0 * c0, dtype, 30)
    nan = np.full((20, 10), np.nan, dtype=dtype)
    kernels.gemm(a, b, nan, beta=0.0)  # beta 0 ignores what out held, NaN included
    _check_close(nan, _reference(a, b), dtype, 30)


def _at_offset(shape: tuple[int, int], dtype: type, offset: int) -> np.ndarray:
    """A C-contiguous array starting ``offset`` elements after a 64-byte boundary."""
    item = np.dtype(dtype).itemsize
    count = shape[0] * shape[1]
    raw = np.empty(count * item + 128, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + offset * item
    view = raw[start:start + count * item].view(dtype).reshape(shape)
    assert view.ctypes.data % 64 == offset * item
    return view


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_output_at_every_offset_in_a_cache_line(dtype: type, threads: int) -> None:
    # Rows whole cache lines long let gemm shift its tiles onto line boundaries: the first
    # tile of every row starts before C and must store only C's own columns, at any offset.
    # Narrow products are shifted only where no sliver is added; 1088 columns (34 or more
    # slivers with every kernel) are shifted at every offset.
    line = 64 // np.dtype(dtype).itemsize
    for m, n, k in [(13, 4 * line, 37), (30, 2 * line + line, 300), (7, line * 5, 9),
                    (5, 1088, 19)]:
        a = RNG.standard_normal((m, k)).astype(dtype)
        b = RNG.standard_normal((k, n)).astype(dtype)
        want = _reference(a, b)
        for offset in range(line):
            out = _at_offset((m, n), dtype, offset)
            c0 = RNG.standard_normal((m, n)).astype(dtype)
            out[...] = c0
            kernels.gemm(a, b, out, threads=threads)
            _check_close(out, want, dtype, k)
            out[...] = c0
            kernels.gemm(a, b, out, alpha=-1.5, beta=0.5, threads=threads)
            _check_close(out, -1.5 * want + 0.5 * c0, dtype, k)


def test_gemm_never_writes_outside_out() -> None:
    # Guard cells on both sides of an out whose first tile starts before it.
    for dtype in DTYPES:
        line = 64 // np.dtype(dtype).itemsize
        m, n, k = 9, 3 * line, 40
        whole = _at_offset((1, m * n + 2 * line), dtype, 0)[0]
        whole[...] = 7.0
        out = whole[line + 3:line + 3 + m * n].reshape(m, n)  # 3 elements into a line
        a = RNG.standard_normal((m, k)).astype(dtype)
        b = RNG.standard_normal((k, n)).astype(dtype)
        kernels.gemm(a, b, out, threads=2)
        _check_close(out, _reference(a, b), dtype, k)
        assert np.all(whole[:line + 3] == 7.0) and np.all(whole[line + 3 + m * n:] == 7.0)


def test_gemm_reads_non_contiguous_inputs() -> None:
    a = RNG.standard_normal((40, 60))[:, ::2]  # 40 x 30, strided
    b = RNG.standard_normal((20, 30)).T  # 30 x 20, Fortran order
    got = kernels.gemm(a, b)
    _check_close(got, _reference(a, b), np.float64, 30)


def test_gemm_empty_k_scales_out() -> None:
    a = np.empty((3, 0))
    b = np.empty((0, 4))
    out = np.ones((3, 4))
    kernels.gemm(a, b, out, beta=3.0)
    assert np.all(out == 3.0)


@pytest.mark.parametrize("call, error, match", [
    (lambda: kernels.gemm([[1.0]], np.ones((1, 1))), TypeError, "numpy array"),
    (lambda: kernels.gemm(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64)), TypeError, "dtype"),
    (lambda: kernels.gemm(np.ones((2, 2)), np.ones((2, 2), np.float32)), TypeError, "one dtype"),
    (lambda: kernels.gemm(np.ones(4), np.ones((4, 1))), ValueError, "dimensions"),
    (lambda: kernels.gemm(np.ones((2, 3)), np.ones((4, 2))), ValueError, "do not agree"),
    (lambda: kernels.gemm(np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 3))), ValueError, "shape"),
    (lambda: kernels.gemm(np.ones((2, 3)), np.ones((3, 2)), np.ones((2, 4))[:, ::2]),
     ValueError, "C-contiguous"),
    (lambda: kernels.gemm(np.ones((2, 3)), np.ones((3, 2)), beta=1.0), ValueError, "out"),
    (lambda: kernels.gemm(np.ones((2, 3)), np.ones((3, 2)), threads=0), ValueError, "threads"),
])
def test_gemm_bad_inputs(call: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()  # type: ignore[operator]


def test_gemm_read_only_out_is_refused() -> None:
    out = np.zeros((2, 2))
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        kernels.gemm(np.ones((2, 2)), np.ones((2, 2)), out)


def test_raw_binding_refuses_what_would_crash() -> None:
    with pytest.raises(TypeError):
        _core.gemm_f32(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)))  # float64 arrays
    with pytest.raises(ValueError, match=r"\[gemm\] shapes"):
        f = np.ones((2, 3), np.float32)
        _core.gemm_f32(f, f, np.ones((2, 3), np.float32))


# -- conv2d ---------------------------------------------------------------------------------
def _conv_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, stride: tuple[int, int],
                    padding: tuple[int, int], dilation: tuple[int, int], groups: int) -> np.ndarray:
    """Direct definition in float64: every output is a dot product over its receptive field."""
    n, c_in, h, wd = x.shape
    c_out, cpg, kh, kw = w.shape
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    xp = np.zeros((n, c_in, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n, c_out, oh, ow))
    opg = c_out // groups
    for o in range(c_out):
        g = o // opg
        xs = xp[:, g * cpg:(g + 1) * cpg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j].astype(np.float64))
        if bias is not None:
            y[:, o] += bias[o]
    return y


CONV_CASES = [
    # (n, c_in, h, w), (c_out, kh, kw), stride, padding, dilation, groups, bias
    ((1, 3, 8, 8), (4, 3, 3), 1, 1, 1, 1, True),
    ((2, 4, 9, 7), (6, 1, 1), 1, 0, 1, 1, False),
    ((1, 4, 11, 13), (8, 3, 2), (2, 3), (1, 0), 1, 2, True),
    ((3, 6, 10, 10), (6, 3, 3), 1, 2, 2, 6, True),      # depthwise, dilated
    ((1, 2, 5, 5), (3, 5, 5), 1, 0, 1, 1, False),        # kernel as large as the input
    ((1, 8, 16, 16), (4, 3, 3), 2, 1, 1, 2, False),
    ((2, 3, 15, 12), (5, 7, 7), 2, 3, 1, 1, True),       # ResNet stem, small
]


@pytest.mark.parametrize("algo", ["auto", "im2col", "direct"])
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_matches_the_definition(algo: str, case: tuple, threads: int) -> None:  # type: ignore[type-arg]
    (n, c_in, h, w), (c_out, kh, kw), stride, padding, dilation, groups, with_bias = case
    x = RNG.standard_normal((n, c_in, h, w)).astype(np.float32)
    wt = RNG.standard_normal((c_out, c_in // groups, kh, kw)).astype(np.float32)
    bias = RNG.standard_normal(c_out).astype(np.float32) if with_bias else None
    got = kernels.conv2d(x, wt, bias, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, algo=algo, threads=threads)
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    want = _conv_reference(x, wt, bias, pair(stride), pair(padding), pair(dilation), groups)
    assert got.shape == want.shape and got.dtype == np.float32
    k = (c_in // groups) * kh * kw
    _check_close(got, want, np.float32, k)


@pytest.mark.parametrize("case", CONV_CASES[:4])
def test_conv2d_portable_direct_path_matches_too(case: tuple) -> None:  # type: ignore[type-arg]
    (n, c_in, h, w), (c_out, kh, kw), stride, padding, dilation, groups, with_bias = case
    x = RNG.standard_normal((n, c_in, h, w)).astype(np.float32)
    wt = RNG.standard_normal((c_out, c_in // groups, kh, kw)).astype(np.float32)
    bias = RNG.standard_normal(c_out).astype(np.float32) if with_bias else None
    with _isa_capped("portable"):
        assert _core.conv2d_isa() == "portable"
        got = kernels.conv2d(x, wt, bias, stride=stride, padding=padding, dilation=dilation,
                             groups=groups, algo="direct", threads=2)
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    want = _conv_reference(x, wt, bias, pair(stride), pair(padding), pair(dilation), groups)
    _check_close(got, want, np.float32, (c_in // groups) * kh * kw)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"x": np.ones((1, 3, 4, 4))}, TypeError, "float32"),
    ({"x": np.ones((3, 4, 4), np.float32)}, ValueError, "dimensions"),
    ({"groups": 2}, ValueError, "group"),
    ({"algo": "winograd"}, ValueError, "algo"),
    ({"stride": 0}, ValueError, "stride"),
    ({"padding": -1}, ValueError, "padding"),
    ({"stride": (1, 2, 3)}, TypeError, "pair"),
    ({"w": np.ones((2, 3, 9, 9), np.float32)}, ValueError, "conv2d"),  # kernel beyond input
    ({"bias": np.ones(5, np.float32)}, ValueError, "bias"),
    ({"threads": -1}, ValueError, "threads"),
])
def test_conv2d_bad_inputs(kwargs: dict, error: type[Exception], match: str) -> None:  # type: ignore[type-arg]
    args = {"x": np.ones((1, 3, 4, 4), np.float32), "w": np.ones((2, 3, 3, 3), np.float32)}
    args.update({k: v for k, v in kwargs.items() if k in ("x", "w")})
    rest = {k: v for k, v in kwargs.items() if k not in ("x", "w")}
    with pytest.raises(error, match=match):
        kernels.conv2d(args["x"], args["w"], **rest)


# -- bandwidth and peak ---------------------------------------------------------------------
@pytest.mark.parametrize("kind, arrays, bytes_per_element",
                         [("read", 1, 8), ("write", 1, 8), ("copy", 2, 16), ("scale", 2, 16),
                          ("add", 3, 24), ("triad", 3, 24)])
def test_bandwidth_counts_bytes_as_stream(kind: str, arrays: int, bytes_per_element: int) -> None:
    nbytes = 3 * 64 * 1024
    r = kernels.bandwidth(kind, nbytes, threads=1, min_time_s=0.005)
    assert r.kind == kind and r.arrays == arrays and r.passes >= 1
    elements = r.bytes_per_pass / bytes_per_element
    assert elements * 8 * arrays == pytest.approx(r.working_set_bytes, rel=0.01)
    assert r.gb_per_s > 0 and r.best_s <= r.median_s
    assert r.gb_per_s == pytest.approx(r.bytes_per_pass / r.best_s / 1e9, rel=1e-6)


def test_bandwidth_l1_is_faster_than_dram() -> None:
    small = kernels.bandwidth("read", 16 * 1024, threads=1, min_time_s=0.02)
    large = kernels.bandwidth("read", 256 << 20, threads=1, min_time_s=0.05)
    assert small.gb_per_s > large.gb_per_s


@pytest.mark.parametrize("call, error, match", [
    (lambda: kernels.bandwidth("stream", 1 << 20), ValueError, "kind"),
    (lambda: kernels.bandwidth("copy", 0), ValueError, "nbytes"),
    (lambda: kernels.bandwidth("copy", 100), ValueError, "bandwidth"),
    (lambda: kernels.bandwidth("copy", 1 << 60), ValueError, "bandwidth"),
    (lambda: kernels.bandwidth("copy", 1 << 20, min_time_s=float("nan")), ValueError, "bandwidth"),
    (lambda: kernels.peak_flops("float16"), ValueError, "dtype"),
    (lambda: kernels.peak_flops("float32", threads=0), ValueError, "threads"),
])
def test_bandwidth_and_peak_bad_inputs(call: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()  # type: ignore[operator]


def _peak_paths() -> list[tuple[str, str]]:
    """(dtype, isa) for every peak path this CPU can run: each float width, bf16 and int8."""
    paths = [(dt, isa) for dt in ("float32", "float64") for isa in VECTOR_CAPS]
    if _core.active_isa() == "amx":
        paths.append(("bfloat16", "amx"))
    if _core.has_amx_int8():
        paths.append(("int8", "amx"))
    if _core.has_avx512_bf16():
        paths.append(("bfloat16", "avx512"))
    if _core.has_avx512_vnni():
        paths.append(("int8", "avx512"))
    if _core.has_avx_vnni():
        paths.append(("int8", "avx2"))
    return paths


@pytest.mark.parametrize("dtype, isa", _peak_paths())
def test_every_peak_path_gives_a_positive_rate_and_its_instruction(dtype: str, isa: str) -> None:
    r = kernels.peak_flops(dtype, threads=1, min_time_s=0.01, isa=isa)
    assert r.isa == isa and r.dtype == dtype and r.flops_per_s > 0
    bits = {"amx": microarch.TILE_BITS, "avx512": 512, "avx2": 256, "portable": 0}[isa]
    assert r.vector_bits == bits
    assert {microarch.TILE_BITS: "tmm", 512: "zmm", 256: "ymm", 0: "scalar"}[bits] in r.instruction
    assert r.microarch  # the table row (or the fallback) it was judged against
    if bits:
        # Every SIMD path has a figure from the table on a known core, or the ISA fallback.
        assert r.expected_flops_per_cycle > 0 or dtype in ("bfloat16", "int8")
    else:
        assert r.expected_flops_per_cycle == 0 and r.efficiency is None


@pytest.mark.skipif(_core.best_isa() not in ("avx512", "amx"), reason="no AVX-512 on this CPU")
@pytest.mark.parametrize("dtype", ["bfloat16", "int8"])
def test_dot_peaks_refuse_clearly_when_capped_below_avx512(dtype: str) -> None:
    if dtype == "int8" and _core.cpu_features().avx_vnni:
        pytest.skip("AVX-VNNI runs int8 on ymm below the cap")
    need = "AVX512_BF16" if dtype == "bfloat16" else "AVX512_VNNI or AVX-VNNI"
    with _isa_capped("avx2"):
        with pytest.raises(ValueError, match=rf"{dtype} needs {need}, which the ISA cap "
                                             "'avx2' turns off"):
            kernels.peak_flops(dtype, threads=1, min_time_s=0.01)


@pytest.mark.skipif(_core.cpu_features().avx512_bf16, reason="this CPU has AVX512_BF16")
def test_bf16_peak_says_the_cpu_lacks_avx512_bf16() -> None:
    with pytest.raises(ValueError, match="bfloat16 needs AVX512_BF16, which this CPU lacks"):
        kernels.peak_flops("bfloat16", threads=1, min_time_s=0.01)


@pytest.mark.parametrize("kwargs, match", [
    ({"dtype": "float16"}, "dtype must be one of float32, float64, bfloat16, int8"),
    ({"dtype": "float32", "isa": "sse2"}, "isa must be None or one of portable"),
    ({"dtype": "int8", "add_mix": True}, "add_mix is for float32 and float64"),
])
def test_peak_flops_rejects_bad_dtype_isa_and_mix(kwargs: dict, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=match):
        kernels.peak_flops(threads=1, min_time_s=0.01, **kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_peak_flops_is_positive_and_near_what_the_isa_promises(dtype: str) -> None:
    r = kernels.peak_flops(dtype, threads=1, min_time_s=0.05)
    assert r.flops_per_s > 0 and 0.3e9 < r.core_hz < 8e9
    if r.expected_flops_per_cycle > 0:
        assert r.flops_per_cycle > 0
        # Above the ISA's promise is a bug. A busy machine lowers both the FLOP rate and a
        # measured clock (a preempted window reads slow), so the clock is the fastest of
        # several readings: preemption never makes one read fast.
        hz = max([r.core_hz] + [_core.core_hz(0.02) for _ in range(5)])
        assert r.flops_per_s / hz <= 1.5 * r.expected_flops_per_cycle


# -- one ISA dispatch for every kernel ----------------------------------------------------------
def _reported_isas() -> dict[str, str]:
    """The ISA each kernel names for the path it runs now."""
    return {
        "gemm": kernels.gemm_isa(),
        "conv2d": _core.conv2d_isa(),
        "bandwidth": kernels.bandwidth("triad", 3 * 16 * 1024, threads=1, min_time_s=0.001).isa,
        "peak_flops": kernels.peak_flops("float64", threads=1, min_time_s=0.001).isa,
    }


def _runs_capped(reported: str, active: str) -> bool:
    """Below avx512 every kernel runs the capped path itself; on an avx512 path a kernel
    may keep to avx2 where zmm does not pay (it names what it ran); none of these has a
    tile path, so under amx they run avx512 (or avx2)."""
    return (reported == _narrowest(active, WIDEST_KERNEL_ISA)
            or (active in ("avx512", "amx") and reported == "avx512"))


@pytest.mark.parametrize("cap", ISAS)
def test_every_kernel_runs_and_names_the_same_capped_isa(cap: str) -> None:
    active = _narrowest(cap, _core.best_isa())
    with _isa_capped(cap):
        assert _core.active_isa() == active
        reported = _reported_isas()
    assert all(_runs_capped(isa, active) for isa in reported.values()), reported
    # The peak has chains of every register width (and float chains are widest on zmm).
    assert reported["peak_flops"] == _narrowest(active, FLOAT_WIDEST)


def test_uncapped_kernels_run_their_widest_path_the_cpu_allows() -> None:
    assert _core._isa_cap() == ISAS[-1]  # no test leaves a cap behind
    reported = _reported_isas()
    assert all(_runs_capped(isa, _core.best_isa()) for isa in reported.values()), reported
    assert reported["peak_flops"] == _narrowest(_core.best_isa(), FLOAT_WIDEST)
    if _core.best_isa() == "amx":
        assert kernels.peak_flops("bfloat16", threads=1, min_time_s=0.001).isa == "amx"


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_results_agree_across_isas(dtype: type) -> None:
    a = RNG.standard_normal((61, 150)).astype(dtype)
    b = RNG.standard_normal((150, 45)).astype(dtype)
    c0 = RNG.standard_normal((61, 45)).astype(dtype)
    want = 0.5 * _reference(a, b) - 1.5 * c0
    results = {}
    for cap in CAPS:
        with _isa_capped(cap):
            out = c0.copy()
            kernels.gemm(a, b, out, alpha=0.5, beta=-1.5, threads=2)
        _check_close(out, want, dtype, 150)
        results[cap] = out.astype(np.float64)
    for got in results.values():  # against each other, within the same bound
        _check_close(got, results["portable"], dtype, 150)


@pytest.mark.parametrize("algo", ["im2col", "direct"])
def test_conv2d_results_agree_across_isas(algo: str) -> None:
    x = RNG.standard_normal((2, 8, 13, 17)).astype(np.float32)
    wt = RNG.standard_normal((12, 8, 3, 3)).astype(np.float32)
    bias = RNG.standard_normal(12).astype(np.float32)
    want = _conv_reference(x, wt, bias, (1, 1), (1, 1), (1, 1), 1)
    results = {}
    for cap in CAPS:
        with _isa_capped(cap):
            got = kernels.conv2d(x, wt, bias, padding=1, algo=algo, threads=2)
        _check_close(got, want, np.float32, 8 * 9)
        results[cap] = got.astype(np.float64)
    for got in results.values():
        _check_close(got, results["portable"], np.float32, 8 * 9)


def test_bandwidth_and_peak_count_the_same_work_on_every_isa() -> None:
    per_isa = {}
    for cap in CAPS:
        with _isa_capped(cap):
            bw = kernels.bandwidth("add", 3 * 32 * 1024, threads=1, min_time_s=0.002)
            pk = kernels.peak_flops("float32", threads=1, min_time_s=0.002)
        assert bw.gb_per_s > 0 and pk.flops_per_s > 0
        # Only the SIMD paths promise a FLOP/cycle figure.
        assert (pk.expected_flops_per_cycle > 0) == (pk.isa != "portable")
        per_isa[cap] = (bw.working_set_bytes, bw.bytes_per_pass, bw.write_allocate_bytes_per_pass)
    assert len(set(per_isa.values())) == 1, per_isa


def test_set_isa_cap_rejects_an_unknown_name_and_keeps_the_cap() -> None:
    before = _core._isa_cap()
    for bad in ("avx2+fma", "AVX2", "sse2", ""):
        with pytest.raises(ValueError, match=r"\[_set_isa_cap\] ISA is '.*', expected portable"):
            _core._set_isa_cap(bad)
    assert _core._isa_cap() == before


def test_roofline_written_with_the_old_isa_names_still_loads() -> None:
    # Files written before the one naming scheme say "avx2+fma" for GEMM and the FMA peak.
    data = {
        "compute": {"float32": 100.0}, "memory": {"DRAM": 20.0}, "threads": 1, "quick": True,
        "machine": {"cpu_model": "x", "logical_cores": 2, "caches": [], "gemm_isa": "avx2+fma"},
        "notes": ["float32 peak: 30.0 FLOP/cycle per core of 32 (avx2+fma, core at 3.00 GHz)"],
    }
    r = Roofline.from_dict(json.loads(json.dumps(data)))
    assert r.machine["gemm_isa"] == "avx2+fma" and "avx2+fma" in r.notes[0]
