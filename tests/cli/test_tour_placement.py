"""The tour's roofline placements as text: each workload on the level its working set fits,
and a point above its ceiling printed with the warning that says why."""

from __future__ import annotations

from fastbench.cli.tour import _placement_lines
from fastbench.roofline import Roofline


def _roof() -> Roofline:
    """Two threads, 32 KiB L1 and 1 MiB L2 per core, 32 MiB shared L3; FMA ceilings of avx2
    on a CPU that offers avx512."""
    return Roofline(
        compute={"fma float32": 200.0, "fma float64": 100.0},
        memory={"L1": 400.0, "L2": 200.0, "L3": 100.0, "DRAM": 25.0}, threads=2, quick=True,
        machine={"cpu_model": "synthetic", "best_isa": "avx512",
                 "caches": ["L1 Data 32768", "L2 Unified 1048576", "L3 Unified 33554432"]},
        notes=("fma float32: 24.0 FLOP/cycle per core (avx2, core at 3.50 GHz)",))


def test_tour_places_the_triad_on_dram_and_prints_why_it_is_above_the_roof() -> None:
    # The triad's 5 sweeps of 32 MiB at 35.25 GB/s: 141% of the 25 GB/s DRAM ceiling, as the
    # tour measured on a 32 MiB L3; the GEMM at 108% of its FMA ceiling.
    triad_s = 5 * (32 << 20) / 35.25e9
    gemm_s = 2 * 256**3 / 216e9
    lines = _placement_lines(_roof(), gemm_s, triad_s)
    text = "\n".join(lines)
    gemm_at = next(i for i, ln in enumerate(lines) if ln.startswith("- fastbench GEMM"))
    triad_at = next(i for i, ln in enumerate(lines) if ln.startswith("- numpy"))
    assert lines[gemm_at].endswith("512 KiB of operands and result: placed on L2")
    assert lines[triad_at].endswith("96 MiB of arrays): placed on DRAM")
    gemm_warning = [ln for ln in lines[gemm_at:triad_at] if ln.startswith("  warning:")]
    triad_warning = [ln for ln in lines[triad_at:] if ln.startswith("  warning:")]
    assert len(gemm_warning) == 1 and "8% above the fma float32 ceiling" in gemm_warning[0]
    assert "measured with avx2 vectors while this CPU offers avx512" in gemm_warning[0]
    assert len(triad_warning) == 1 and "41% above the DRAM bandwidth ceiling" in triad_warning[0]
    assert "within 4x of L3 (32 MiB)" in triad_warning[0]
    assert "141% of the attainable" in text and "108% of the attainable" in text


def test_tour_prints_no_warning_for_points_under_the_roof() -> None:
    lines = _placement_lines(_roof(), 2 * 256**3 / 150e9, 5 * (32 << 20) / 20e9)
    assert not any("warning" in ln for ln in lines)
    assert any("75% of the attainable" in ln for ln in lines)
    assert any("80% of the attainable" in ln for ln in lines)
