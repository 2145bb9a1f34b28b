"""The native calibration kernels from Python: GEMM, conv2d, memory bandwidth, FMA peak.

Owns argument checking and the numpy side (dtypes, shapes, contiguity, output arrays); the
work runs in the native core with the GIL released. Nothing here times or summarises: the
roofline module does.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from .. import _core
from ..machine import microarch

__all__ = ["BANDWIDTH_KINDS", "BandwidthResult", "PEAK_DTYPES", "PeakResult", "bandwidth",
           "conv2d", "gemm", "gemm_bf16", "gemm_bf16_isa", "gemm_isa", "peak_flops",
           "this_microarch", "to_bfloat16"]

BANDWIDTH_KINDS = ("read", "write", "copy", "scale", "add", "triad")
_GEMM: dict[np.dtype[Any], Callable[..., None]] = {
    np.dtype(np.float32): _core.gemm_f32, np.dtype(np.float64): _core.gemm_f64}
# Guard against requests that would exhaust memory before numpy or the core try.
_MAX_ELEMENTS = 1 << 34


@dataclass(frozen=True)
class BandwidthResult:
    """One bandwidth kernel over one working set.

    Bytes are counted as STREAM counts them: every array element read or written once per
    pass (8 bytes each), without the write-allocate read that a cached store also causes
    (``write_allocate_bytes_per_pass``, reported apart).
    """

    kind: str
    working_set_bytes: int
    arrays: int
    bytes_per_pass: float
    write_allocate_bytes_per_pass: float
    best_s: float
    median_s: float
    gb_per_s: float
    threads: int
    passes: int
    # The loops the passes ran: "avx512" (64-byte vectors), "avx2" (32-byte; 16-byte for
    # copy, scale, add and triad from 32 MiB per thread, past the caches) or "portable".
    isa: str


@dataclass(frozen=True)
class PeakResult:
    """Peak rate of independent FMA chains (plus adds with ``add_mix``), or of bf16 or int8
    dot-product chains (then FLOPs are int8 operations: 8 per int32 lane of vpdpbusd).

    ``expected_flops_per_cycle`` is what the core's pipes promise for these chains, from
    :mod:`fastbench.machine.microarch`'s table (0 where it has no figure: portable scalars,
    an unknown dot-product rate); ``microarch`` names the row used and its source.
    """

    dtype: str
    isa: str  # the path the chains ran: "amx", "avx512", "avx2" or "portable" (see gemm_isa)
    add_mix: bool
    threads: int
    flops_per_s: float
    core_hz: float
    flops_per_cycle: float
    expected_flops_per_cycle: float
    seconds: float
    instruction: str = ""   # "vfmadd231ps zmm", "tdpbf16ps tmm (AMX-BF16)", "scalar C++", ...
    vector_bits: int = 0    # 512, 256, 0 for the portable scalars, microarch.TILE_BITS tiles
    microarch: str = ""     # the table row: name, units, source; caveats where unknown

    @property
    def gflops(self) -> float:
        return self.flops_per_s / 1e9

    @property
    def efficiency(self) -> float | None:
        """Measured / expected FLOP per cycle, None where the table sets no expectation."""
        if self.expected_flops_per_cycle <= 0:
            return None
        return self.flops_per_cycle / self.expected_flops_per_cycle


def _threads(threads: int | None) -> int:
    """``threads`` for the core: 0 for None (all cores), else an int from 1 to
    ``_core.max_threads()`` (8 per CPU this process may run on; the pool of workers keeps
    one per thread ever used, so the cap bounds it), or ValueError naming the range."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads must be None (all cores) or an int >= 1, got {threads!r}")
    most = _core.max_threads()
    if threads > most:
        raise ValueError(f"threads must be None (all cores) or an int from 1 to {most} (8 per "
                         f"CPU this process may run on), got {threads}")
    return int(threads)


def _float_array(x: Any, name: str, ndim: int, dtypes: Sequence[np.dtype[Any]]) -> NDArray[Any]:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(x).__name__}")
    if x.dtype not in dtypes:
        allowed = " or ".join(str(d) for d in dtypes)
        raise TypeError(f"{name} has dtype {x.dtype}, expected {allowed}")
    if x.ndim != ndim:
        raise ValueError(f"{name} has {x.ndim} dimensions (shape {x.shape}), expected {ndim}")
    return x


def gemm_isa(dtype: str = "float32") -> str:
    """The instruction set :func:`gemm` runs for ``dtype`` ("float32" or "float64") on this
    machine: "avx512", "avx2" or "portable".

    Every kernel runs the widest path it has that the CPU and the OS allow, and names it
    with one scheme ("portable", "avx2", "avx512", "amx"; AMX tiles hold no float FMAs, so
    the float GEMM runs "avx512" on a machine with them). A core that runs 512-bit FMAs as two
    256-bit halves (AMD Zen 4) has the same peak with either width, and there ymm kernels
    measured faster: float32 runs the AVX2 kernel ("avx2"), and float64 a 6x16 tile that
    needs the 32 ymm registers of AVX-512VL ("avx512"; the AVX2 kernel's 16 registers hold
    6x8). Results written before this scheme say "avx2+fma" for GEMM and FMA peaks; it is the
    same path.
    """
    if dtype not in ("float32", "float64"):
        raise ValueError(f'dtype must be "float32" or "float64", got {dtype!r}')
    return _core.gemm_isa(dtype == "float64")


def gemm_bf16_isa() -> str:
    """The path :func:`gemm_bf16` runs: "amx_bf16" (AMX ``tdpbf16ps`` tiles, Sapphire Rapids
    and later), "avx512_bf16" (``vdpbf16ps``) or, where the CPU has neither (or the ISA cap
    hides them), the :func:`gemm_isa` of the float32 GEMM it widens both inputs to."""
    return _core.gemm_bf16_isa()


def to_bfloat16(x: NDArray[Any]) -> NDArray[np.uint16]:
    """float32 values rounded to bfloat16, as uint16 arrays of their bits.

    Round to nearest, ties to even, as PyTorch's ``.bfloat16()`` rounds; infinities stay
    infinite, a NaN stays a (quiet) NaN, and a value past the largest bfloat16 becomes
    infinite. The bits are the upper half of the float32 that the bfloat16 value is, so
    ``(bits.astype(np.uint32) << 16).view(np.float32)`` gives the values back.

    Parameters
    ----------
    x : ndarray
        float32 values, any shape.

    Returns
    -------
    ndarray
        uint16, the shape of ``x``.

    Raises
    ------
    TypeError
        Not a float32 numpy array.
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float32:
        raise TypeError(f"x must be a float32 numpy array, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    u = np.ascontiguousarray(x).view(np.uint32)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    bits = rounded.astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():  # rounding could carry a NaN's payload into an infinity: keep it quiet NaN
        bits[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return bits


def _bf16_operand(x: Any, name: str) -> NDArray[np.uint16]:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, got {type(x).__name__}")
    if x.dtype == np.float32:
        x = to_bfloat16(x)
    elif x.dtype != np.uint16:
        raise TypeError(f"{name} has dtype {x.dtype}, expected float32 (rounded to bfloat16) "
                        f"or uint16 (bfloat16 bits)")
    if x.ndim != 2:
        raise ValueError(f"{name} has {x.ndim} dimensions (shape {x.shape}), expected 2")
    return np.ascontiguousarray(x)


def _product_output(a: NDArray[Any], b: NDArray[Any], out: NDArray[Any] | None,
                    dtype: np.dtype[Any], beta: float
                    ) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
    """The (m, n) array a product of ``a`` (m, k) and ``b`` (k, n) is written to (the shapes
    checked to agree): ``out``
    checked (shape, dtype, C order, writeable), or a new one; and the inputs, an input that
    may share memory with ``out`` replaced by a copy (the kernel writes ``out`` block by
    block while it still reads ``a`` and ``b``), as numpy's ``matmul`` does."""
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"shapes {a.shape} and {b.shape} do not agree: a has {k} columns, "
                         f"b has {k2} rows")
    if out is None:
        if beta != 0:
            raise ValueError("beta != 0 needs an out array to scale")
        if m * n > _MAX_ELEMENTS:
            raise MemoryError(f"a {m}x{n} result is too large to allocate")
        return a, b, np.empty((m, n), dtype=dtype)
    out = _float_array(out, "out", 2, (dtype,))
    if out.shape != (m, n):
        raise ValueError(f"out has shape {out.shape}, expected {(m, n)}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous (it is written in place)")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    if np.may_share_memory(a, out):
        a = a.copy()
    if np.may_share_memory(b, out):
        b = b.copy()
    return a, b, out


def gemm_bf16(a: NDArray[Any], b: NDArray[Any], out: NDArray[np.float32] | None = None, *,
              alpha: float = 1.0, beta: float = 0.0,
              threads: int | None = None) -> NDArray[np.float32]:
    """``alpha * a @ b + beta * out`` with bfloat16 inputs, float32 sums and output.

    The multiply-adds run on AMX tiles (``tdpbf16ps``, 32x32 blocks of C) where the CPU has
    them, else AVX512_BF16's ``vdpbf16ps`` (see :func:`gemm_bf16_isa`); elsewhere both
    inputs are widened to float32 and the float32 GEMM runs. A product of two bfloat16 values is exact in float32, so both paths give the
    float32 product of the bfloat16 inputs up to the order of the sums.

    Parameters
    ----------
    a, b : ndarray
        (m, k) and (k, n), each either uint16 holding bfloat16 bits (numpy has no bfloat16;
        a PyTorch bfloat16 tensor ``t`` gives them as ``t.view(torch.int16).numpy()
        .view(np.uint16)``) or float32, rounded to bfloat16 first (:func:`to_bfloat16`).
    out : ndarray, optional
        (m, n) C-contiguous float32, written in place (read too when beta is not 0). A new
        array when omitted.
    alpha, beta : float
        Scale factors; beta 0 ignores what ``out`` held.
    threads : int, optional
        Threads to use, at most ``8 x`` the CPUs this process may run on; None means all
        cores.

    Returns
    -------
    ndarray
        ``out`` (or the new float32 array).

    Raises
    ------
    TypeError
        Not numpy arrays, or a dtype other than uint16/float32 (float32 for ``out``).
    ValueError
        Wrong dimensions, shapes that do not agree, a non-contiguous or read-only ``out``, an
        ``out`` sharing memory with an input, ``beta`` without ``out``, a bad thread count.
    MemoryError
        A result too large to allocate.
    KeyboardInterrupt
        Ctrl-C (or what another signal handler raised), noticed within milliseconds; ``out``
        is then partly written.
    """
    a = _bf16_operand(a, "a")
    b = _bf16_operand(b, "b")
    a, b, out = _product_output(a, b, out, np.dtype(np.float32), beta)
    nthreads = _threads(threads)
    _core.gemm_bf16(a, b, out, alpha, beta, nthreads)
    return out


def gemm(a: NDArray[Any], b: NDArray[Any], out: NDArray[Any] | None = None, *,
         alpha: float = 1.0, beta: float = 0.0, threads: int | None = None) -> NDArray[Any]:
    """``alpha * a @ b + beta * out`` for 2-D float32 or float64 arrays, in the native core.

    Parameters
    ----------
    a, b : ndarray
        (m, k) and (k, n), one dtype (float32 or float64). Non-contiguous inputs are copied
        to C order first; contiguous ones are read in place.
    out : ndarray, optional
        (m, n) C-contiguous array of the same dtype, written in place (read too when beta is
        not 0). A new array when omitted. ``a`` or ``b`` may share memory with it (``out=a``,
        overlapping views): such an input is copied first, as numpy's ``matmul`` does, so the
        result is the product of the inputs as they were.
    alpha, beta : float
        Scale factors; beta 0 ignores what ``out`` held.
    threads : int, optional
        Threads to use, at most ``8 x`` the CPUs this process may run on; None means all
        cores.

    Returns
    -------
    ndarray
        ``out`` (or the new array).

    Raises
    ------
    TypeError
        Not numpy arrays, a dtype other than float32/float64, mixed dtypes.
    ValueError
        Wrong dimensions, shapes that do not agree, a non-contiguous or read-only ``out``,
        ``beta`` without ``out``, a bad thread count.
    MemoryError
        A result too large to allocate.
    KeyboardInterrupt
        Ctrl-C (or what another signal handler raised), noticed within milliseconds; ``out``
        is then partly written.
    """
    allowed = tuple(_GEMM)
    a = _float_array(a, "a", 2, allowed)
    b = _float_array(b, "b", 2, allowed)
    if a.dtype != b.dtype:
        raise TypeError(f"a and b must have one dtype, got {a.dtype} and {b.dtype}")
    a, b, out = _product_output(a, b, out, a.dtype, beta)
    nthreads = _threads(threads)
    _GEMM[a.dtype](np.ascontiguousarray(a), np.ascontiguousarray(b), out, alpha, beta,
                   nthreads)
    return out


def _pair(value: int | Sequence[int], name: str, minimum: int) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)):
        pair: tuple[Any, ...] = (value, value)
    elif isinstance(value, (tuple, list, np.ndarray)):
        pair = tuple(value)
    else:  # a float, a str, ...: not a size in pixels
        pair = ()
    if (len(pair) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                              for v in pair)):
        raise TypeError(f"{name} must be an int or a pair of ints, got "
                        f"{type(value).__name__} {value!r}")
    if any(v < minimum for v in pair):
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if any(v > sys.maxsize for v in pair):
        raise ValueError(f"{name} must be at most {sys.maxsize}, got {value!r}")
    return int(pair[0]), int(pair[1])


def conv2d(x: NDArray[np.float32], weight: NDArray[np.float32],
           bias: NDArray[np.float32] | None = None, *, stride: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
           groups: int = 1, algo: str = "auto",
           threads: int | None = None) -> NDArray[np.float32]:
    """2-D convolution of float32 NCHW data, with PyTorch's ``conv2d`` semantics.

    Parameters
    ----------
    x : ndarray
        (n, c_in, h, w) float32.
    weight : ndarray
        (c_out, c_in / groups, kh, kw) float32.
    bias : ndarray, optional
        (c_out,) float32.
    stride, padding, dilation : int or (int, int)
        Per (height, width); padding is zeros on each side.
    groups : int
        c_in and c_out must both be divisible by it (depthwise: groups == c_in).
    algo : {"auto", "im2col", "direct"}
        Lowering to GEMM, direct loops, or (the default) direct when the GEMM's reduction,
        channels per group × kernel area, is shorter than 64 (depthwise and other thin
        grouped convolutions), im2col otherwise.
    threads : int, optional
        At most ``8 x`` the CPUs this process may run on; None means all cores.

    Returns
    -------
    ndarray
        (n, c_out, out_h, out_w) float32, out = (in + 2·pad − dil·(k − 1) − 1) // stride + 1.

    Raises
    ------
    TypeError
        Not float32 numpy arrays, or badly typed parameters (a float stride).
    ValueError
        Shapes that do not agree, an empty output, a bad algo or thread count.
    KeyboardInterrupt
        Ctrl-C (or what another signal handler raised), noticed within milliseconds.
    """
    f32 = (np.dtype(np.float32),)
    x = _float_array(x, "x", 4, f32)
    weight = _float_array(weight, "weight", 4, f32)
    if bias is not None:
        bias = np.ascontiguousarray(_float_array(bias, "bias", 1, f32))
    if algo not in ("auto", "im2col", "direct"):
        raise ValueError(f"algo must be 'auto', 'im2col' or 'direct', got {algo!r}")
    if (isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1
            or groups > sys.maxsize):
        raise ValueError(f"groups must be an int from 1 to {sys.maxsize}, got {groups!r}")
    return _core.conv2d(np.ascontiguousarray(x), np.ascontiguousarray(weight), bias,
                        _pair(stride, "stride", 1), _pair(padding, "padding", 0),
                        _pair(dilation, "dilation", 1), int(groups), algo, _threads(threads))


def bandwidth(kind: str, nbytes: int, threads: int | None = None,
              min_time_s: float = 0.05, *, isa: str | None = None) -> BandwidthResult:
    """Memory bandwidth of a STREAM-style kernel over a working set of ``nbytes``.

    Parameters
    ----------
    kind : {"read", "write", "copy", "scale", "add", "triad"}
    nbytes : int
        All arrays together, in bytes; sizes below the L1 cache measure L1, far above the
        last-level cache measure DRAM.
    threads : int, optional
        None means all cores; each thread works on its own slice. At most ``8 x`` the CPUs
        this process may run on.
    min_time_s : float
        Seconds of timed passes at least (after one warm pass).
    isa : {"avx512", "avx2", "portable"}, optional
        The widest loops to run; by default the widest the CPU (and the cap) allows. Some
        cores split zmm loads and stores in halves (Zen 4), where ymm can be as fast.

    Returns
    -------
    BandwidthResult
        GB/s (1e9 bytes per second) of the fastest pass, STREAM's byte counting; ``isa``
        names the loops run: the widest vectors the CPU allows (AVX-512 where present), so
        the L1 and L2 figures are the core's, except 16-byte ones for the streaming kinds
        past the caches, which measured faster from DRAM.

    Raises
    ------
    ValueError
        An unknown kind or isa, an isa wider than this CPU (or the cap) allows, a bad size,
        thread count or time.
    KeyboardInterrupt
        Ctrl-C (or what another signal handler raised), noticed within milliseconds.
    """
    if kind not in BANDWIDTH_KINDS:
        raise ValueError(f"kind must be one of {', '.join(BANDWIDTH_KINDS)}, got {kind!r}")
    if (isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 1
            or nbytes > sys.maxsize):
        raise ValueError(f"nbytes must be an int from 1 to {sys.maxsize}, got {nbytes!r}")
    if isa is not None and isa not in _core.isa_names():
        raise ValueError(f"isa must be None or one of {', '.join(_core.isa_names())}, "
                         f"got {isa!r}")
    r = _core.bandwidth(kind, int(nbytes), _threads(threads), float(min_time_s), isa or "")
    return BandwidthResult(r.kind, r.working_set_bytes, r.arrays, r.bytes_per_pass,
                           r.write_allocate_bytes_per_pass, r.best_s, r.median_s, r.gb_per_s,
                           r.threads, r.passes, r.isa)


PEAK_DTYPES = ("float32", "float64", "bfloat16", "int8")


def this_microarch() -> microarch.Microarch:
    """This CPU's row of :mod:`fastbench.machine.microarch`'s table (a fallback from the
    widest ISA where the model is unknown)."""
    f = _core.cpu_features()
    return microarch.lookup(f.vendor, f.family, f.model, _core.best_isa(),
                            hypervisor=f.hypervisor)


def peak_flops(dtype: str = "float32", threads: int | None = None, *, add_mix: bool = False,
               min_time_s: float = 0.1, isa: str | None = None) -> PeakResult:
    """Peak FLOP/s of independent FMA (or dot-product) chains held in registers.

    Parameters
    ----------
    dtype : {"float32", "float64", "bfloat16", "int8"}
        float32 and float64 time FMAs; bfloat16 times AMX ``tdpbf16ps`` tile products where
        the CPU has tiles (16 x 16 float32 sums of 32 bf16 products: 16,384 FLOPs each), else
        AVX512_BF16 ``vdpbf16ps`` (bf16 pairs into float32: 4 FLOPs per lane); int8 times
        AMX ``tdpbusd`` (32,768 operations each), else ``vpdpbusd`` (u8 x s8 quads into
        int32: 8 operations per lane) from AVX512_VNNI on zmm, else AVX-VNNI on ymm.
    threads : int, optional
        None means all cores; at most ``8 x`` the CPUs this process may run on.
    add_mix : bool
        Interleave independent adds with the FMAs (gains where the core has separate add
        pipes, as AMD Zen does). float32 and float64 only.
    min_time_s : float
        Seconds per thread at least (each thread stops once they have passed).
    isa : {"amx", "avx512", "avx2", "portable"}, optional
        The registers to run: tiles, zmm, ymm or scalars. None runs the widest allowed now
        (``_core.active_isa()``). Some cores run zmm FMAs at half rate (Zen 4), so the
        calibration times both widths and keeps the faster. float32 and float64 run zmm on
        "amx" (tiles hold no FMAs), and the result's ``isa`` says so.

    Returns
    -------
    PeakResult
        FLOP/s (2 per FMA lane, 1 per add lane), the measured core clock, FLOP per cycle and
        what this core's pipes promise per cycle (the microarchitecture table).

    Raises
    ------
    ValueError
        An unknown dtype or isa, an isa wider than this CPU (or the cap) allows, add_mix
        with bfloat16 or int8, or a dtype this CPU cannot run: "bfloat16 needs AVX512_BF16,
        which this CPU lacks".
    KeyboardInterrupt
        Ctrl-C (or what another signal handler raised), noticed within milliseconds.
    """
    known = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
             np.dtype(np.int8): "int8"}
    try:
        name = known.get(np.dtype(dtype), str(dtype)) if dtype != "bfloat16" else "bfloat16"
    except TypeError:
        name = str(dtype)
    if name not in PEAK_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(PEAK_DTYPES)}, got {dtype!r}")
    if isa is not None and isa not in _core.isa_names():
        raise ValueError(f"isa must be None or one of {', '.join(_core.isa_names())}, "
                         f"got {isa!r}")
    r = _core.peak_flops(name, _threads(threads), bool(add_mix), float(min_time_s), isa or "")
    arch = this_microarch()
    expected = microarch.expected_flops_per_cycle(arch, r.dtype, r.vector_bits,
                                                  fma_per_iter=r.fma_per_iter,
                                                  add_per_iter=r.add_per_iter)
    return PeakResult(r.dtype, r.isa, r.add_mix, r.threads, r.flops_per_s, r.core_hz,
                      r.flops_per_cycle, expected or 0.0, r.seconds, r.instruction,
                      r.vector_bits, arch.describe())
