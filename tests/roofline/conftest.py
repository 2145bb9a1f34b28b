"""The synthetic roofline the roofline tests place workloads on and plot."""

from __future__ import annotations

import pytest

from fastbench.roofline import Roofline


@pytest.fixture
def synthetic() -> Roofline:
    """Peak 200 GFLOP/s f32, 100 f64; DRAM 25 GB/s, L1 400 GB/s: ridge points 8 and 0.5."""
    return Roofline(
        compute={"fma float32": 200.0, "fma+add float32": 150.0, "gemm float32": 180.0,
                 "fma float64": 100.0},
        memory={"L1": 400.0, "L2": 200.0, "L3": 100.0, "DRAM": 25.0},
        threads=2, quick=True, machine={"cpu_model": "synthetic"},
    )
