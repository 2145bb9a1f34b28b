"""The public path ``fastbench.kernels``: the calibration kernels (GEMM, conv2d, bandwidth,
FMA peak). They live in :mod:`fastbench.roofline.kernels`, beside the roofline they calibrate;
this module only hands their names on.
"""

from __future__ import annotations

from .roofline.kernels import (BANDWIDTH_KINDS, BandwidthResult, PeakResult, bandwidth, conv2d,
                               gemm, gemm_isa, peak_flops)

__all__ = ["BANDWIDTH_KINDS", "BandwidthResult", "PeakResult", "bandwidth", "conv2d", "gemm",
           "gemm_isa", "peak_flops"]
