"""The public path ``fastbench.kernels``: the calibration kernels (GEMM, bf16 GEMM, conv2d,
bandwidth, FMA and dot-product peaks). They live in :mod:`fastbench.roofline.kernels`, beside the roofline they calibrate;
this module only hands their names on.
"""

from __future__ import annotations

from .roofline.kernels import (BANDWIDTH_KINDS, BandwidthResult, PeakResult, bandwidth, conv2d,
                               gemm, gemm_bf16, gemm_bf16_isa, gemm_isa, peak_flops,
                               to_bfloat16)

__all__ = ["BANDWIDTH_KINDS", "BandwidthResult", "PeakResult", "bandwidth", "conv2d", "gemm",
           "gemm_bf16", "gemm_bf16_isa", "gemm_isa", "peak_flops", "to_bfloat16"]
