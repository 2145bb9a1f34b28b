"""fastbench.roofline.model: placement arithmetic, ridge points and the bound verdict on a
synthetic roofline, its text and its results-file round trip."""

from __future__ import annotations

import dataclasses

import math
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastbench
from fastbench.measurement import Measurement
from fastbench.roofline import Roofline


def test_ridge_points_and_attainable_follow_the_formula(synthetic: Roofline) -> None:
    r = synthetic
    assert r.peak_gflops("float32") == 200.0  # the FMA peak, not GEMM or a lower mix
    assert r.ridge_points("float32") == {"L1": 0.5, "L2": 1.0, "L3": 2.0, "DRAM": 8.0}
    assert r.ridge_points("float64")["DRAM"] == 4.0
    assert r.attainable(2.0) == 50.0        # 25 GB/s × 2 FLOP/byte
    assert r.attainable(100.0) == 200.0     # capped by the peak
    assert r.attainable(2.0, level="L1") == 200.0
    p = r.place(flops=1e9, bytes=1e6, seconds=0.01, ceiling="gemm float32")
    assert p.attainable_gflops == 180.0 and p.compute_ceiling == "gemm float32"
    with pytest.raises(ValueError, match="fma float16"):
        r.place(flops=1.0, bytes=1.0, seconds=1.0, dtype="float16")
    with pytest.raises(ValueError, match="intensity"):
        r.attainable(0.0)
    with pytest.raises(ValueError, match="level"):
        r.attainable(1.0, level="L4")
    with pytest.raises(ValueError, match="float16"):
        r.peak_gflops("float16")


def test_bound_verdict_flips_at_the_ridge_point(synthetic: Roofline) -> None:
    r = synthetic  # f32 FMA peak 200 over DRAM 25 GB/s: ridge at 8 FLOP/byte
    assert r.bound(7.99) == "memory-bound"
    assert r.bound(8.0) == "compute-bound"  # at the ridge, compute binds
    assert r.bound(1.0, level="L1") == "compute-bound"  # L1's ridge is 0.5
    assert r.bound(7.1, ceiling="gemm float32") == "memory-bound"  # 180 / 25 = 7.2
    assert r.bound(7.5, ceiling="gemm float32") == "compute-bound"


def test_placement_memory_bound(synthetic: Roofline) -> None:
    # A triad on DRAM: 2 FLOPs per 24 bytes; 1e9 elements in 1.2 s.
    p = synthetic.place(flops=2e9, bytes=24e9, seconds=1.2)
    assert p.intensity == pytest.approx(1 / 12)
    assert p.attainable_gflops == pytest.approx(25.0 / 12)
    assert p.achieved_gflops == pytest.approx(2 / 1.2)
    assert p.fraction == pytest.approx((2 / 1.2) / (25 / 12))
    assert p.bound == "memory-bound" and p.memory_ceiling == "DRAM"
    assert p.compute_ceiling == "fma float32" and p.ridge_point == 8.0
    assert "memory-bound" in str(p)


def test_placement_compute_bound_from_a_measurement(synthetic: Roofline) -> None:
    samples = np.full(20, 1e6)  # 1 ms per call
    m = Measurement(samples_ns=samples, loops=1, warmup_samples_ns=np.asarray([1e6]),
                    clock="steady", overhead_ns=0.0, overhead_mad_ns=0.0, call_floor_ns=0.0,
                    call_floor_mad_ns=0.0)
    p = synthetic.place(m, flops=1e8, bytes=1e6, dtype="float64")
    assert p.seconds == pytest.approx(1e-3)
    assert p.achieved_gflops == pytest.approx(100.0)
    assert p.attainable_gflops == 100.0 and p.fraction == pytest.approx(1.0)
    assert p.bound == "compute-bound" and p.compute_ceiling == "fma float64"


@pytest.mark.parametrize("kwargs, match", [
    ({"flops": 1.0, "bytes": 1.0}, "either"),
    ({"flops": 1.0, "bytes": 1.0, "seconds": 1.0, "measurement": "m"}, "either"),
    ({"flops": -1.0, "bytes": 1.0, "seconds": 1.0}, "flops"),
    ({"flops": 1.0, "bytes": 0.0, "seconds": 1.0}, "bytes"),
    ({"flops": 1.0, "bytes": 1.0, "seconds": math.inf}, "seconds"),
    ({"flops": 1.0, "bytes": 1.0, "seconds": 1.0, "level": "HBM"}, "level"),
])
def test_placement_rejects_bad_input(kwargs: dict[str, Any], match: str,
                                     synthetic: Roofline) -> None:
    m = kwargs.pop("measurement", None)
    with pytest.raises(ValueError, match=match):
        synthetic.place(m, **kwargs)


def test_lines_print_ceilings_sizes_ridges_and_notes() -> None:
    r = Roofline(compute={"fma float32": 200.0}, memory={"L1": 400.0, "DRAM": 25.0},
                 threads=1, quick=False, machine={"cpu_model": "synthetic"},
                 sweep=((1536 << 10, 390.0, "L1"), (256 << 20, 25.0, "DRAM")),
                 notes=("first", "second"), calibration_s=1.25)
    assert r.lines() == [
        "  roofline, 1 thread, calibrated in 1.2 s on synthetic",
        "  compute ceilings:",
        "    fma float32                200.0 GFLOP/s",
        "  memory ceilings (STREAM triad, write-allocate not counted; the best working set "
        "of each level):",
        "    L1                         400.0 GB/s   (1536 KiB 390)",
        "    DRAM                        25.0 GB/s   (256 MiB 25)",
        "  ridge points float32 (FLOP/byte): L1 0.50, DRAM 8.00",
        "  note: first",
        "  note: second",
    ]
    assert str(r) == "\n".join(r.lines())


def test_int8_ceiling_prints_in_integer_ops() -> None:
    r = Roofline(compute={"fma float32": 200.0, "dot int8": 900.0}, memory={"DRAM": 25.0},
                 threads=1, quick=False, machine={"cpu_model": "synthetic"})
    ceilings = [line.strip() for line in r.lines() if line.startswith("    ") and "dot" in line]
    assert ceilings == ["dot int8                   900.0 GOPS"]


def test_results_file_round_trip(tmp_path: Path, synthetic: Roofline) -> None:
    r = synthetic
    path = tmp_path / "roof.json"
    fastbench.save(r, path)
    assert fastbench.load(path) == r
    with pytest.raises(ValueError, match="not a roofline"):
        Roofline.from_dict({"compute": {}})


def test_placement_warns_when_the_workload_ran_on_other_threads(synthetic: Roofline) -> None:
    one = synthetic.place(flops=2e9, bytes=24e9, seconds=1.2, threads=1)  # the roof: 2 threads
    assert (one.threads, one.roofline_threads) == (1, 2)
    assert len(one.warnings) == 1 and one.warnings[0].code == "threads-differ"
    assert "ran on 1 thread but the roofline was calibrated on 2" in one.warnings[0]
    assert "calibrate(threads=1)" in one.warnings[0]
    assert f"  warning: {one.warnings[0]}" in one.lines()
    same = synthetic.place(flops=2e9, bytes=24e9, seconds=1.2, threads=2)
    assert same.warnings == () and not any("warning" in ln for ln in same.lines())
    # The figures themselves do not change: only the warning says the roof does not fit.
    assert one.attainable_gflops == same.attainable_gflops
    with pytest.raises(ValueError, match="threads"):
        synthetic.place(flops=1.0, bytes=1.0, seconds=1.0, threads=0)


def test_placement_takes_pytorch_threads_when_torch_is_imported(
        synthetic: Roofline, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in for torch after torch.set_num_threads(1): a model measured on one thread.
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(get_num_threads=lambda: 1))
    p = synthetic.place(flops=2e9, bytes=24e9, seconds=1.2)
    assert p.threads == 1 and p.warnings and "ran on 1 thread" in p.warnings[0]
    assert synthetic.place(flops=2e9, bytes=24e9, seconds=1.2, threads=2).warnings == ()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(get_num_threads=lambda: 2))
    assert synthetic.place(flops=2e9, bytes=24e9, seconds=1.2).warnings == ()


def test_placement_without_torch_or_threads_has_no_thread_warning(
        synthetic: Roofline, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    p = synthetic.place(flops=2e9, bytes=24e9, seconds=1.2)
    assert p.threads is None and p.warnings == ()


def test_model_placement_lines_warn_when_the_threads_differ(synthetic: Roofline) -> None:
    from fastbench.analysis import ModulePlacement
    from fastbench.report.placement import analysis_placement_lines

    class Analysis:  # a model analysis with one module, placed as ModelAnalysis.place_on does
        def place_on(self, roof: Roofline, *, level: str | None, max_depth: int | None
                     ) -> list[ModulePlacement]:
            return [ModulePlacement("", "Linear", 100, 10, 10.0, 50.0, "compute-bound", 2e-9)]

    warned = analysis_placement_lines(Analysis(), synthetic, threads=1)  # type: ignore[arg-type]
    assert warned[-1].startswith("  warning: the workload ran on 1 thread but the roofline")
    plain = analysis_placement_lines(Analysis(), synthetic, threads=2)  # type: ignore[arg-type]
    assert plain == warned[:-1] and any("Linear" in ln for ln in plain)


def test_roofline_warnings_round_trip_and_settled(tmp_path: Path, synthetic: Roofline) -> None:
    from dataclasses import replace

    from fastbench.report.warnings import WarningRecord

    noisy = replace(synthetic, warnings=(WarningRecord("fma float32: readings disagree",
                                                       "unsettled-ceiling"),))
    assert synthetic.settled and not noisy.settled
    path = tmp_path / "noisy.json"
    fastbench.save(noisy, path)
    loaded = fastbench.load(path)
    assert loaded == noisy and loaded.warnings[0].code == "unsettled-ceiling"
    assert "  warning: fma float32: readings disagree" in loaded.lines()


# -- points above their ceiling, and the level a working set fits ------------------------------
def _zen4_like(ceiling_isa: str = "avx2", best_isa: str | None = "avx512") -> Roofline:
    """Two threads; 32 KiB L1 and 1 MiB L2 per core, a shared 32 MiB L3; the FMA ceilings
    measured with ``ceiling_isa`` (as the calibration's notes say) on a CPU that offers
    ``best_isa``."""
    machine: dict[str, Any] = {
        "cpu_model": "synthetic", "gemm_isa": "avx2",
        "caches": ["L1 Data 32768", "L1 Instruction 32768", "L2 Unified 1048576",
                   "L3 Unified 33554432"]}
    if best_isa is not None:
        machine["best_isa"] = best_isa
    return Roofline(
        compute={"fma float32": 200.0, "gemm float32": 180.0, "fma float64": 100.0},
        memory={"L1": 400.0, "L2": 200.0, "L3": 100.0, "DRAM": 25.0},
        threads=2, quick=True, machine=machine,
        notes=(f"fma float32: 23.9 FLOP/cycle per core of 32 expected ({ceiling_isa}, core at "
               "3.50 GHz)", f"fma float64: 12.0 FLOP/cycle per core ({ceiling_isa}, core at "
               "3.50 GHz)"))


def test_point_10_percent_above_a_narrower_compute_ceiling_is_warned_narrower_vectors() -> None:
    r = _zen4_like("avx2", "avx512")
    p = r.place(flops=220e9, bytes=1e9, seconds=1.0, threads=2)  # 220 of 200 GFLOP/s
    assert p.bound == "compute-bound" and p.fraction == pytest.approx(1.1)
    w = p.above_roof
    assert w is not None and w.code == "above-roof" and w in p.warnings
    assert p.above_roof_causes == ("narrower-vectors", "wrong-count")
    assert "10% above the fma float32 ceiling" in w
    assert "measured with avx2 vectors while this CPU offers avx512" in w
    assert f"  warning: {w}" in p.lines() and "above the fma float32 ceiling" in str(p)


def test_point_above_a_ceiling_of_the_widest_vectors_blames_the_flop_count() -> None:
    for r in (_zen4_like("avx512", "avx512"), _zen4_like("avx2", "avx2")):
        p = r.place(flops=220e9, bytes=1e9, seconds=1.0, threads=2)
        assert p.above_roof_causes == ("wrong-count",)
        assert p.above_roof is not None and "FLOP count passed in is too high" in p.above_roof
    # The CPU's widest ISA unknown: a narrower ceiling may be the cause, said as a maybe.
    p = _zen4_like("avx2", None).place(flops=220e9, bytes=1e9, seconds=1.0, threads=2)
    assert p.above_roof_causes == ("narrower-vectors", "wrong-count")
    assert p.above_roof is not None and "the CPU may offer avx512" in p.above_roof


def test_tiles_widen_only_the_bf16_and_int8_ceilings() -> None:
    # An AMX CPU: float ceilings measured on zmm are the widest floats there are; a bf16
    # ceiling measured with vdpbf16ps (zmm) is not the machine's, whose tiles go faster.
    r = _zen4_like("avx512", "amx")
    p = r.place(flops=220e9, bytes=1e9, seconds=1.0, threads=2)
    assert p.above_roof_causes == ("wrong-count",)
    bf16 = dataclasses.replace(
        r, compute={**r.compute, "fma bfloat16": 400.0},
        machine={**r.machine, "ceiling_isas": {"fma bfloat16": "avx512"}})
    q = bf16.place(flops=440e9, bytes=1e9, seconds=1.0, threads=2, ceiling="fma bfloat16")
    assert q.above_roof_causes == ("narrower-vectors", "wrong-count")
    assert q.above_roof is not None and "measured with avx512 vectors while this CPU offers amx" \
        in q.above_roof


def test_point_above_a_level_that_measured_no_faster_than_the_next_says_so() -> None:
    # The L3 ceiling came out below DRAM's (a VM's shared L3): a point placed on L3 above it
    # blames that first, before the byte count.
    r = dataclasses.replace(_zen4_like(), memory={"L1": 400.0, "L2": 200.0, "L3": 27.4,
                                                  "DRAM": 28.9})
    p = r.place(flops=0.05 * 32e9, bytes=32e9, seconds=1.0, threads=2, level="L3")
    assert p.above_roof_causes[0] == "level-no-faster" and p.above_roof_causes[-1] == "wrong-count"
    assert p.above_roof is not None and "L3 ceiling (27.4 GB/s) is no faster than DRAM's" \
        in p.above_roof
    # A level faster than the next says nothing of the kind.
    q = _zen4_like().place(flops=0.05 * 110e9, bytes=110e9, seconds=1.0, threads=2,
                           level="L3")
    assert "level-no-faster" not in q.above_roof_causes


def test_point_3_percent_above_its_ceiling_is_not_warned() -> None:
    r = _zen4_like()
    compute = r.place(flops=206e9, bytes=1e9, seconds=1.0, threads=2)   # 103% of 200
    memory = r.place(flops=1e9, bytes=25.75e9, seconds=1.0, threads=2)  # 103% of DRAM
    for p in (compute, memory):
        assert p.fraction == pytest.approx(1.03)
        assert p.above_roof is None and p.warnings == () and p.above_roof_causes == ()
        assert not any("warning" in ln for ln in p.lines())
    # Just past the 5% tolerance it is.
    assert r.place(flops=210.2e9, bytes=1e9, seconds=1.0, threads=2).above_roof is not None


def test_triad_straddling_l3_is_placed_on_dram_and_blames_the_cached_part() -> None:
    # The tour's numpy triad: 3 x 32 MiB arrays, 5 sweeps of 32 MiB counted, 32 MiB of L3.
    r = _zen4_like()
    size = 1 << 22
    p = r.place(flops=2.0 * size, bytes=5.0 * size * 8, seconds=5.0 * size * 8 / 35.25e9,
                dtype="float64", working_set_bytes=3 * size * 8, threads=2)
    assert p.memory_ceiling == "DRAM" and p.working_set_bytes == 96 << 20
    assert p.fraction == pytest.approx(1.41)
    assert p.above_roof_causes == ("faster-level", "wrong-count")
    assert p.above_roof is not None
    assert "41% above the DRAM bandwidth ceiling" in p.above_roof
    assert "the working set (96 MiB) is within 4x of L3 (32 MiB)" in p.above_roof
    assert "byte count passed in is too high for DRAM" in p.above_roof


def test_point_above_dram_whose_working_set_fits_l2_names_l2() -> None:
    r = _zen4_like()
    # 1 MiB on two threads fits their 2 MiB of L2; judged against DRAM at 2x its bandwidth.
    p = r.place(flops=1e9, bytes=50e9, seconds=1.0, level="DRAM", working_set_bytes=1 << 20,
                threads=2)
    assert p.memory_ceiling == "DRAM" and p.fraction == pytest.approx(2.0)
    assert p.above_roof_causes == ("faster-level", "wrong-count")
    assert p.above_roof is not None and "fits L2 (2 MiB)" in p.above_roof
    assert "level='L2'" in p.above_roof
    # Placed by its working set alone, it is on L2 and below that roof.
    fitted = r.place(flops=1e9, bytes=50e9, seconds=1.0, working_set_bytes=1 << 20, threads=2)
    assert fitted.memory_ceiling == "L2" and fitted.above_roof is None
    # Far from every cache (1 GiB): only the byte count can be wrong.
    big = r.place(flops=1e9, bytes=50e9, seconds=1.0, working_set_bytes=1 << 30, threads=2)
    assert big.memory_ceiling == "DRAM" and big.above_roof_causes == ("wrong-count",)
    # Unknown working set above DRAM: it may fit a faster level; on L1 nothing is faster.
    unknown = r.place(flops=1e9, bytes=50e9, seconds=1.0, threads=2)
    assert unknown.above_roof_causes == ("faster-level", "wrong-count")
    assert unknown.above_roof is not None and "working_set_bytes=" in unknown.above_roof
    l1 = r.place(flops=1e9, bytes=800e9, seconds=1.0, level="L1", threads=2)
    assert l1.fraction == pytest.approx(2.0) and l1.above_roof_causes == ("wrong-count",)


@pytest.mark.parametrize("working_set, level", [
    (1, "L1"), (64 << 10, "L1"), ((64 << 10) + 1, "L2"),       # L1: 32 KiB x 2 threads
    (2 << 20, "L2"), ((2 << 20) + 1, "L3"),                   # L2: 1 MiB x 2 threads
    (32 << 20, "L3"), ((32 << 20) + 1, "DRAM"), (96 << 20, "DRAM"),  # L3: 32 MiB, shared
])
def test_working_set_picks_the_level_it_fits(working_set: int, level: str) -> None:
    r = _zen4_like()
    assert r.level_capacities() == {"L1": 64 << 10, "L2": 2 << 20, "L3": 32 << 20}
    assert r.level_for(working_set) == level
    p = r.place(flops=1e6, bytes=1e6, seconds=1.0, working_set_bytes=working_set, threads=2)
    assert p.memory_ceiling == level and p.working_set_bytes == working_set
    assert p.attainable_gflops == pytest.approx(min(200.0, r.memory[level] * 1.0))


def test_working_set_level_without_cache_sizes_or_ceilings_is_dram(synthetic: Roofline) -> None:
    assert synthetic.level_capacities() == {}  # no sizes recorded
    assert synthetic.level_for(1024) == "DRAM"
    r = _zen4_like()
    no_l1 = Roofline(compute=r.compute, memory={"L2": 200.0, "DRAM": 25.0}, threads=2,
                     quick=True, machine=r.machine)
    assert no_l1.level_for(1024) == "L2" and no_l1.level_for(4 << 20) == "DRAM"
    for bad in (0, -5):
        with pytest.raises(ValueError, match="working_set_bytes"):
            r.place(flops=1.0, bytes=1.0, seconds=1.0, working_set_bytes=bad)
    with pytest.raises(TypeError, match="working_set_bytes"):
        r.place(flops=1.0, bytes=1.0, seconds=1.0, working_set_bytes=1.5)  # type: ignore[arg-type]


def test_ceiling_isa_is_read_from_what_the_calibration_recorded() -> None:
    r = _zen4_like("avx2")
    assert r.ceiling_isa("fma float32") == "avx2" and r.ceiling_isa("gemm float32") == "avx2"
    assert r.widest_isa() == "avx512"
    from dataclasses import replace

    recorded = replace(r, machine={**r.machine, "ceiling_isas": {"fma float32": "avx512"}})
    assert recorded.ceiling_isa("fma float32") == "avx512"
    assert recorded.place(flops=220e9, bytes=1e9, seconds=1.0,
                          threads=2).above_roof_causes == ("wrong-count",)
    for instruction, isa in (("vfmadd231ps zmm", "avx512"), ("vfmadd231pd ymm", "avx2"),
                             ("scalar C++", "portable")):
        noted = replace(r, notes=(f"fma float32: 32.0 FLOP/cycle per core of 32 expected "
                                  f"({instruction}, core at 3.66 GHz)",))
        assert noted.ceiling_isa("fma float32") == isa
    bare = Roofline(compute={"fma float32": 1.0}, memory={"DRAM": 1.0}, threads=1, quick=True,
                    machine={})
    assert bare.ceiling_isa("fma float32") is None and bare.widest_isa() is None


def test_point_above_a_ceiling_that_read_far_below_the_table_blames_the_ceiling_first() -> None:
    # The calibration recorded fma float32 at 51% of the table's FLOP per cycle (two threads
    # at one core's rate): a GEMM placed 74% above it is first a sign of a low ceiling.
    base = _zen4_like("avx512", "avx512")
    r = dataclasses.replace(base, machine={**base.machine,
                                           "ceiling_table_shares": {"fma float32": 0.51}})
    p = r.place(flops=348e9, bytes=1e9, seconds=1.0, threads=2)  # 348 of 200 GFLOP/s
    assert p.above_roof_causes == ("low-ceiling", "wrong-count")
    assert p.above_roof is not None
    assert "the ceiling 'fma float32' itself reached only 51% of the FLOP per cycle" \
        in p.above_roof
    assert r.ceiling_table_share("fma float32") == pytest.approx(0.51)
    # At 95% of the table the ceiling is believed: the count is blamed.
    fine = dataclasses.replace(base, machine={**base.machine,
                                              "ceiling_table_shares": {"fma float32": 0.95}})
    assert fine.place(flops=348e9, bytes=1e9, seconds=1.0,
                      threads=2).above_roof_causes == ("wrong-count",)
    # None recorded (an older roofline, or a GEMM ceiling): nothing said of it.
    assert base.ceiling_table_share("fma float32") is None
    assert base.ceiling_table_share("gemm float32") is None



def test_least_time_takes_the_fastest_level_the_bytes_fit(synthetic: Roofline) -> None:
    from dataclasses import replace

    # No cache sizes recorded: DRAM, 25 GB/s. 2 GFLOP over 1 GB: memory 40 ms, compute 10 ms.
    assert synthetic.least_time(2e9, 1e9) == (pytest.approx(0.04), "DRAM", True)
    # Two threads, L1 32 KiB and L2 1 MiB per core, L3 32 MiB: 40,000 bytes fit L1 (64 KiB
    # for two cores, 400 GB/s): memory 0.1 µs, 1e5 FLOPs at 200 GFLOP/s 0.5 µs.
    cached = replace(synthetic, machine={"caches": ["L1 Data 32768", "L2 Unified 1048576",
                                                    "L3 Unified 33554432"]})
    assert cached.least_time(1e5, 40_000) == (pytest.approx(5e-7), "L1", False)
    # 3 MiB: past both L2s (2 MiB), within L3 (100 GB/s): 31.5 µs of traffic.
    t, level, memory_binds = cached.least_time(1e5, 3 * 2**20)
    assert (level, memory_binds) == ("L3", True) and t == pytest.approx(3 * 2**20 / 100e9)
    # A level given is used; float64's peak is 100 GFLOP/s; no traffic is compute alone.
    assert cached.least_time(1e5, 40_000, level="DRAM")[1:] == ("DRAM", True)
    assert cached.least_time(1e6, 0, "float64") == (pytest.approx(1e-5), None, False)
