"""fastbench.roofline.calibration: the plan and its ceilings (kernels replaced by known
figures), the per-machine cache and its invalidation, working sets from the cache sizes,
progress reported without printing, the GEMM ceiling from the native timing loop, and a real
quick calibration."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from fastbench import roofline
from fastbench.machine import CacheLevel, microarch
from fastbench.measurement import Measurement
from fastbench.roofline import calibration, kernels


def _fake_calibration(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    """Kernels replaced by known figures, so calibrate()'s plan and cache can be checked fast."""

    def peak(dtype: str, threads: int | None = None, *, add_mix: bool = False,
             min_time_s: float = 0.1, isa: str | None = None) -> kernels.PeakResult:
        calls.append(f"peak {dtype} {add_mix} {isa}")
        base = {"float32": 100.0, "float64": 50.0, "bfloat16": 400.0, "int8": 800.0}[dtype]
        # zmm wins for float32 and loses for float64 (as when a core splits 512-bit ops).
        faster = (isa == "avx512") == (dtype != "float64")
        rate = base * (1.2 if add_mix else 1.0) * (1.0 if faster else 0.8) * 1e9
        bits = 512 if isa == "avx512" else 256
        # The table's figure is what the width reaches: no peak reads low against it.
        return kernels.PeakResult(dtype, isa or "avx2", add_mix, 2, rate, 3e9, rate / 2 / 3e9,
                                  rate / 2 / 3e9, 0.1, f"fake {'zmm' if bits == 512 else 'ymm'}",
                                  bits)

    def bandwidth(kind: str, nbytes: int, threads: int | None = None,
                  min_time_s: float = 0.05, *, isa: str | None = None) -> kernels.BandwidthResult:
        calls.append(f"bw {nbytes} {isa}")
        gbs = 1000.0 / math.log2(nbytes)  # smaller working sets are faster
        if isa == "avx512":  # zmm loads split in halves: slower than ymm in the caches
            gbs *= 0.9
        return kernels.BandwidthResult(kind, nbytes, 3, nbytes, nbytes / 3, 1.0, 1.0, gbs, 2, 3,
                                       isa or "avx512")

    monkeypatch.setattr(kernels, "peak_flops", peak)
    monkeypatch.setattr(kernels, "bandwidth", bandwidth)
    # Both widths and both dot products, whatever this CPU has.
    monkeypatch.setattr(calibration, "_peak_widths",
                        lambda dt: ["avx512"] if dt in ("bfloat16", "int8") else ["avx512", "avx2"])
    monkeypatch.setattr(calibration, "_gemm_gflops", lambda dt, n, t, s: 90.0)


def test_cache_levels_keep_the_faster_vector_width_and_record_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    r = roofline.calibrate(threads=2, progress=False, cache=False)
    # L1 and L2 are timed on both widths, the faster (ymm here) kept; L3 and DRAM once, on
    # the kernel's own choice of loops.
    sizes = {lv: {n for n, _, level in r.sweep if level == lv} for lv in roofline.LEVELS}
    for lv in ("L1", "L2"):
        for n in sizes[lv]:
            assert f"bw {n} avx512" in calls and f"bw {n} avx2" in calls
        assert r.memory[lv] == pytest.approx(max(1000.0 / math.log2(n) for n in sizes[lv]))
        assert r.machine["ceiling_isas"][lv] == "avx2"
    for lv in ("L3", "DRAM"):
        assert all(f"bw {n} None" in calls for n in sizes[lv])
        assert r.machine["ceiling_isas"][lv] == "avx512"
    assert r.machine["ceiling_isas"]["fma float32"] == "avx512"
    assert r.machine["ceiling_isas"]["fma float64"] == "avx2"
    # Each GEMM ceiling names its own dtype's path (on Zen 4: float32 avx2, float64 avx512).
    assert r.machine["ceiling_isas"]["gemm float32"] == kernels.gemm_isa("float32")
    assert r.machine["ceiling_isas"]["gemm float64"] == kernels.gemm_isa("float64")


def test_a_cache_level_no_faster_than_the_next_is_noted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A VM reporting a large shared L3: its triad runs at DRAM speed (27.4 against 28.9
    # GB/s on a 2-vCPU Granite Rapids-class guest with 480 MiB of reported L3).
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    l3_sizes = set(calibration._level_sizes(2, False)["L3"])
    fake = kernels.bandwidth

    def bandwidth(kind: str, nbytes: int, threads: int | None = None,
                  min_time_s: float = 0.05, *, isa: str | None = None) -> kernels.BandwidthResult:
        r = fake(kind, nbytes, threads, min_time_s, isa=isa)
        if nbytes in l3_sizes:
            r = dataclasses.replace(r, gb_per_s=27.4)
        elif r.gb_per_s < 27.4 * 1.5:  # DRAM sizes
            r = dataclasses.replace(r, gb_per_s=28.9)
        return r

    monkeypatch.setattr(kernels, "bandwidth", bandwidth)
    r = roofline.calibrate(threads=2, progress=False, cache=False)
    assert r.memory["L3"] == 27.4 and r.memory["DRAM"] == 28.9
    note = next(n for n in r.notes if n.startswith("L3 measured"))
    assert "27.4 GB/s, no faster than DRAM (28.9)" in note and "behaved as DRAM" in note
    assert not any(n.startswith("L2 measured") for n in r.notes)


def test_calibrate_plan_ceilings_and_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    steps: list[tuple[int, int]] = []
    r = roofline.calibrate(threads=2, progress=lambda d, t, w: steps.append((d, t)))
    assert r.compute["fma float32"] == pytest.approx(100.0)
    assert r.compute["fma+add float64"] == pytest.approx(60.0)
    assert r.compute["gemm float64"] == 90.0
    assert r.peak_gflops("float32") == pytest.approx(100.0)  # the FMA peak by default
    assert r.peak_gflops("float32", "fma+add float32") == pytest.approx(120.0)
    # Each level's ceiling is its best working set, and the levels come out ordered.
    for level in roofline.LEVELS:
        assert r.memory[level] == max(g for _, g, lv in r.sweep if lv == level)
    assert r.memory["L1"] > r.memory["L2"] > r.memory["L3"] > r.memory["DRAM"]
    assert steps[-1][0] == steps[-1][1] and len(steps) == steps[-1][1] + 1
    n_calls = len(calls)
    again = roofline.calibrate(threads=2, progress=False)
    assert again == r and len(calls) == n_calls  # read from the cache
    roofline.calibrate(threads=2, progress=False, cache=False)
    assert len(calls) == 2 * n_calls  # measured anyway


def test_cache_is_per_cpu_and_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    roofline.calibrate(threads=1, quick=True, progress=False)
    n = len(calls)
    real_machine = calibration._machine
    monkeypatch.setattr(calibration, "_machine", lambda: {**real_machine(), "cpu_model": "other"})
    roofline.calibrate(threads=1, quick=True, progress=False)
    assert len(calls) == 2 * n  # another CPU: measured afresh
    monkeypatch.setattr(calibration, "_machine", real_machine)
    monkeypatch.setattr(calibration, "__version__", "0.0.0-other")
    roofline.calibrate(threads=1, quick=True, progress=False)
    assert len(calls) == 3 * n  # another fastbench version: measured afresh
    # A corrupt cache file is measured over, not trusted.
    monkeypatch.undo()
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    _fake_calibration(monkeypatch, calls)
    path = roofline.cache_path(1, roofline.DTYPES, True)
    path.write_text("{not json")
    before = len(calls)
    roofline.calibrate(threads=1, quick=True, progress=False)
    assert len(calls) > before and json.loads(path.read_text())["cache_version"] == roofline.CACHE_VERSION


def test_bad_calibrate_arguments() -> None:
    with pytest.raises(ValueError, match="dtypes"):
        roofline.calibrate(dtypes=("float16",), cache=False, progress=False)
    with pytest.raises(ValueError, match="threads"):
        roofline.calibrate(threads=0, cache=False, progress=False)
    with pytest.raises(TypeError, match="progress_bar"):  # the library draws no bar itself
        roofline.calibrate(cache=False, progress=True)


def test_calibrate_prints_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                  capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    _fake_calibration(monkeypatch, [])
    seen: list[tuple[int, int, str]] = []
    roofline.calibrate(threads=1, quick=True, cache=False)  # progress=None: none at all
    roofline.calibrate(threads=1, quick=True, cache=False,
                       progress=lambda d, t, w: seen.append((d, t, w)))
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    # quick: per dtype FMA, FMA+ADD and GEMM (6 steps), the bf16 and int8 dot peaks (2),
    # then one working set per level (4).
    assert [d for d, _, _ in seen] == list(range(13)) and {t for _, t, _ in seen} == {12}
    assert seen[0][2] == "FMA peak float32" and seen[2][2] == "GEMM float32 n=512"
    assert [w for _, _, w in seen[6:8]] == ["bf16 dot peak", "int8 dot peak"]
    assert seen[-2][2].startswith("triad DRAM") and seen[-1][2] == "done"


def test_working_sets_come_from_the_cache_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    kib, mib = 1 << 10, 1 << 20
    fake = [CacheLevel(1, "Data", 32 * kib, 64, 2), CacheLevel(1, "Instruction", 64 * kib, 64, 2),
            CacheLevel(2, "Unified", 512 * kib, 64, 2), CacheLevel(3, "Unified", 64 * mib, 64, 4)]
    monkeypatch.setattr(calibration, "caches", lambda: fake)
    # 2 threads: L1 and L2 hold one slice per thread; the L3 shared by 4 CPUs gives these
    # 2 threads half of it (32 MiB); DRAM is 8 x L3 within [256 MiB, 1 GiB].
    assert calibration._level_sizes(2, quick=False) == {
        "L1": [16 * kib, 32 * kib],                    # a quarter and a half of L1, x2
        "L2": [256 * kib, 512 * kib],                  # max(2 L1, L2 / 4) x2, L2 / 2 x2
        "L3": [4 * mib, 32 * mib // 3],                # max(2 L2 x2, 32 MiB / 8), 32 MiB / 3
        "DRAM": [512 * mib],
    }
    # Quick: the larger size in L1 and L2, the smaller in L3 (a shared L3 holds less).
    assert calibration._level_sizes(2, quick=True) == {
        "L1": [32 * kib], "L2": [512 * kib], "L3": [4 * mib], "DRAM": [512 * mib]}
    # A VM reporting its host's 480 MiB L3 as its own: DRAM stops at 1 GiB, not 3.75 GiB.
    big = fake[:3] + [CacheLevel(3, "Unified", 480 * mib, 64, 2)]
    monkeypatch.setattr(calibration, "caches", lambda: big)
    sizes = calibration._level_sizes(2, quick=True)
    assert sizes["DRAM"] == [1 << 30] and sizes["L3"] == [60 * mib]


def test_gemm_ceiling_is_the_median_of_the_native_timing_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Measurement] = []
    kwargs_seen: list[dict[str, Any]] = []
    real = calibration.measure

    def spy(fn: Any, /, *args: Any, **kwargs: Any) -> Measurement:
        kwargs_seen.append(kwargs)
        seen.append(real(fn, *args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(calibration, "measure", spy)
    n = 96
    gflops = calibration._gemm_gflops("float64", n, 1, 0.01)
    assert len(seen) == 1 and seen[0].n >= 3 and seen[0].loops == 1
    assert kwargs_seen[0]["threads"] == 1
    assert gflops == pytest.approx(2.0 * n**3 / seen[0].median_ns)  # GFLOP = FLOP per ns
    # A plausible figure, not a unit slip: no x86 core does more than 32 float64 FLOP a cycle
    # (two 512-bit FMA pipes), nor runs at 6 GHz. A bound from a peak timed beside it failed
    # once: a host pause slowed that 10 ms peak to 8.2 GFLOP/s against 37 for the GEMM.
    assert 0 < gflops < 32 * 6.0


def test_real_quick_calibration_is_ordered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    r = roofline.calibrate(quick=True, progress=False)
    assert all(v > 0 for v in r.compute.values()) and all(v > 0 for v in r.memory.values())
    assert r.memory["L1"] > r.memory["DRAM"]  # an order of magnitude apart: robust to noise
    text = "\n".join(r.lines())
    assert "compute ceilings" in text
    for nbytes, gbs, level in r.sweep:  # every working set measured is printed with its level
        assert any(line.strip().startswith(level) and f"{gbs:,.0f}" in line for line in r.lines())


def _fma_f32_readings(monkeypatch: pytest.MonkeyPatch, readings: list[float],
                      calls: list[str], ymm: float | None = None) -> list[float]:
    """The known figures of _fake_calibration, except that the float32 FMA peak on zmm reads
    ``readings`` in turn (the last one repeated); returns the readings handed out. With
    ``ymm``, float32 FMA chains read as on a core whose table row promises zmm twice ymm's
    FLOP per cycle (64 against 32), ymm at ``ymm`` GFLOP/s every time."""
    _fake_calibration(monkeypatch, calls)
    fake_peak = kernels.peak_flops
    given: list[float] = []

    def peak(dtype: str, threads: int | None = None, *, add_mix: bool = False,
             min_time_s: float = 0.1, isa: str | None = None) -> kernels.PeakResult:
        r = fake_peak(dtype, threads, add_mix=add_mix, min_time_s=min_time_s, isa=isa)
        if dtype != "float32" or add_mix or (isa != "avx512" and ymm is None):
            return r
        if isa == "avx512":
            gflops = readings[min(len(given), len(readings) - 1)]
            given.append(gflops)
        else:
            assert ymm is not None
            gflops = ymm
        per_cycle, expected = r.flops_per_cycle, r.expected_flops_per_cycle
        if ymm is not None:
            per_cycle = gflops * 1e9 / 2 / r.core_hz
            expected = 64.0 if isa == "avx512" else 32.0
        return kernels.PeakResult(dtype, r.isa, add_mix, r.threads, gflops * 1e9, r.core_hz,
                                  per_cycle, expected, r.seconds, r.instruction, r.vector_bits)

    monkeypatch.setattr(kernels, "peak_flops", peak)
    return given


def test_a_ceiling_is_read_until_two_readings_agree(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    # 100 and 140 differ by 29%; 138 agrees with 140 within 5%: settled at the larger.
    given = _fma_f32_readings(monkeypatch, [100.0, 140.0, 138.0, 60.0], calls)
    r = roofline.calibrate(threads=2, quick=True, progress=False)
    assert given == [100.0, 140.0, 138.0]
    assert r.compute["fma float32"] == pytest.approx(140.0)
    assert r.settled and r.warnings == ()
    # Settled: cached and reused.
    n = len(calls)
    assert roofline.calibrate(threads=2, quick=True, progress=False) == r and len(calls) == n
    assert calibration.AGREE_WITHIN == 0.05 and calibration.MAX_READINGS == 5


def test_a_ceiling_that_never_settles_is_warned_about_and_not_reused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    noisy = [205.0, 153.0, 142.0, 276.0, 180.0]  # no two within 5% of each other
    given = _fma_f32_readings(monkeypatch, noisy, calls)
    r = roofline.calibrate(threads=2, quick=True, progress=False)
    assert given == noisy  # MAX_READINGS readings, no more
    assert r.compute["fma float32"] == pytest.approx(276.0)  # the highest
    assert not r.settled and len(r.warnings) == 1
    warning = r.warnings[0]
    assert warning.startswith("fma float32 (avx512): 5 readings (205.0, 153.0, 142.0, 276.0, "
                              "180.0 GFLOP/s)")
    assert "never agreed within 5%" in warning and any("warning: fma float32 (avx512)" in ln
                                                       for ln in r.lines())
    # Stored with its warning, but measured again rather than reused.
    path = roofline.cache_path(2, roofline.DTYPES, True)
    assert json.loads(path.read_text())["roofline"]["warnings"] == [str(warning)]
    n = len(calls)
    again = roofline.calibrate(threads=2, quick=True, progress=False)
    assert len(calls) > n
    assert any("never settled; measured afresh" in note for note in again.notes)


def test_a_deeply_nested_cache_file_is_measured_over(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    path = roofline.cache_path(1, roofline.DTYPES, True)
    path.write_text("[" * 100_000 + "]" * 100_000)
    r = roofline.calibrate(threads=1, quick=True, progress=False)
    assert calls and r.compute["fma float32"] == pytest.approx(100.0)
    assert any(str(path) in n and "RecursionError" in n and "measured afresh" in n
               for n in r.notes)
    assert json.loads(path.read_text())["cache_version"] == roofline.CACHE_VERSION


@pytest.mark.parametrize("roof", [
    {"compute": {"fma float32": 1e999}, "memory": {"DRAM": 10.0}},      # infinite ceiling
    {"compute": {"fma float32": 100.0}, "memory": {"DRAM": -10.0}},     # negative ceiling
    {"compute": [1, 2], "memory": {"DRAM": 10.0}},                      # not a mapping
    {"compute": {"fma float32": 100.0}, "memory": {"DRAM": 10.0}, "threads": 1e999},
])
def test_a_cache_with_impossible_ceilings_is_measured_over(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, roof: dict[str, Any]) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    good = roofline.calibrate(threads=1, quick=True, progress=False)
    path = roofline.cache_path(1, roofline.DTYPES, True)
    data = json.loads(path.read_text())
    data["roofline"].update({"threads": 1, **roof})
    path.write_text(json.dumps(data).replace("Infinity", "1e999"))
    n = len(calls)
    r = roofline.calibrate(threads=1, quick=True, progress=False)
    assert len(calls) > n and r.compute == good.compute
    assert any("unreadable" in note and "measured afresh" in note for note in r.notes)


def test_place_without_a_roofline_calibrates_on_the_workload_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int | None] = []

    def fake_calibrate(threads: int | None = None, **_: Any) -> roofline.Roofline:
        seen.append(threads)
        return roofline.Roofline({"fma float32": 100.0}, {"DRAM": 10.0}, threads or 2, True,
                                 {"cpu_model": "synthetic"})

    monkeypatch.setattr(calibration, "calibrate", fake_calibrate)
    p = roofline.place(flops=1e9, bytes=1e9, seconds=1.0, threads=1)
    assert seen == [1] and p.threads == 1 and p.roofline_threads == 1 and p.warnings == ()


def test_calibration_keeps_the_faster_width_and_says_which_won(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    r = roofline.calibrate(threads=2, quick=True, progress=False)
    # Both widths timed for every FMA ceiling.
    for dt in ("float32", "float64"):
        for mix in (False, True):
            assert {f"peak {dt} {mix} avx512", f"peak {dt} {mix} avx2"} <= set(calls)
    assert r.compute["fma float32"] == pytest.approx(100.0)  # zmm, the faster here
    assert r.compute["fma float64"] == pytest.approx(50.0)   # ymm: zmm read 40
    note64 = next(n for n in r.notes if n.startswith("fma float64:"))
    assert "(fake ymm," in note64 and "the faster width, against avx512 40.0 GFLOP/s" in note64
    note32 = next(n for n in r.notes if n.startswith("fma float32:"))
    assert "(fake zmm," in note32 and "against avx2 80.0 GFLOP/s" in note32


def test_calibration_adds_bf16_and_int8_ceilings_only_where_available(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    r = roofline.calibrate(threads=2, quick=True, progress=False, cache=False)
    assert r.compute["fma bfloat16"] == pytest.approx(400.0)
    assert r.compute["dot int8"] == pytest.approx(800.0)
    assert r.peak_gflops("bfloat16") == pytest.approx(400.0)
    assert any(n.startswith("dot int8:") and "OPS/cycle" in n for n in r.notes)
    # A CPU (or a cap) without them: no such ceilings, nothing timed.
    monkeypatch.setattr(calibration, "_peak_widths",
                        lambda dt: [] if dt in ("bfloat16", "int8") else ["avx2"])
    calls.clear()
    r = roofline.calibrate(threads=2, quick=True, progress=False, cache=False)
    assert "fma bfloat16" not in r.compute and "dot int8" not in r.compute
    assert not any("bfloat16" in c or "int8" in c for c in calls)


def test_peak_widths_follow_the_cap() -> None:
    from fastbench import _core
    before = _core._isa_cap()
    try:
        _core._set_isa_cap("avx2")
        assert "avx512" not in calibration._peak_widths("float32")
        assert calibration._peak_widths("bfloat16") == []
        _core._set_isa_cap("portable")
        assert calibration._peak_widths("float64") == ["portable"]
        assert calibration._dot_dtypes() == []
    finally:
        _core._set_isa_cap(before)
    if _core.best_isa() in ("avx512", "amx"):
        assert calibration._peak_widths("float32") == ["avx512", "avx2"]
    if _core.best_isa() == "amx":
        assert calibration._peak_widths("bfloat16")[0] == "amx"


def _peak(isa: str, gflops: float, flops_per_cycle: float,
          expected: float) -> kernels.PeakResult:
    bits = 512 if isa == "avx512" else 256
    return kernels.PeakResult("float32", isa, False, 1, gflops * 1e9, 3e9, flops_per_cycle,
                              expected, 0.1, "x", bits)


def test_calibration_warns_when_the_table_differs_by_more_than_10_percent() -> None:
    zmm, ymm = _peak("avx512", 96.0, 32.0, 64.0), _peak("avx2", 96.0, 32.0, 32.0)
    # zmm no faster than ymm on a core the table says has full 512-bit pipes.
    text = calibration._table_deviation("fma float32", zmm, {"avx512": zmm, "avx2": ymm}, 1,
                                        split_512=False)
    assert text.startswith("warning: fma float32 reaches 50% of what the table promises "
                           "(32.0 of 64.0 per cycle); likely cause: ")
    assert "zmm ran no faster than ymm" in text and "wrong width" in text
    # Above the table: its row does not fit.
    high = _peak("avx2", 120.0, 40.0, 32.0)
    assert "row does not fit" in calibration._table_deviation("fma float32", high,
                                                              {"avx2": high}, 1, False)
    # Within 10%, or no figure: nothing to say.
    close = _peak("avx2", 90.0, 30.0, 32.0)
    assert calibration._table_deviation("fma float32", close, {"avx2": close}, 1, False) == ""
    none = _peak("avx2", 90.0, 30.0, 0.0)
    assert calibration._table_deviation("fma float32", none, {"avx2": none}, 1, False) == ""
    assert calibration.TABLE_AGREE_WITHIN == 0.10


def test_a_far_faster_path_below_its_figure_is_not_called_the_wrong_width(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # AMX int8 at 84% of its table figure, 7x the zmm dot products at 92% of theirs: the
    # tiles are the right choice, and the note must not say otherwise.
    monkeypatch.setattr(calibration, "core_counts", lambda: (2, 2))
    tiles = kernels.PeakResult("int8", "amx", False, 1, 6.8e12, 4e9, 1712.0, 2048.0, 0.1,
                               "tdpbusd tmm (AMX-INT8)", microarch.TILE_BITS)
    zmm = kernels.PeakResult("int8", "avx512", False, 1, 0.93e12, 4e9, 236.0, 256.0, 0.1,
                             "vpdpbusd zmm (AVX512_VNNI)", 512)
    text = calibration._table_deviation("dot int8", tiles, {"amx": tiles, "avx512": zmm}, 1,
                                        False)
    assert text.startswith("warning: dot int8 reaches 84% of what the table promises")
    assert "wrong width" not in text and "zmm ran no faster" not in text


def _deviation(threads: int, flops_per_cycle: float, cores: tuple[int, int],
               monkeypatch: pytest.MonkeyPatch) -> str:
    """_table_deviation of an AVX2 float32 peak at ``flops_per_cycle`` of 32 per core, on
    ``threads`` and a machine of ``cores`` (logical, physical)."""
    monkeypatch.setattr(calibration, "core_counts", lambda: cores)
    low = _peak("avx2", 50.0, flops_per_cycle, 32.0)
    return calibration._table_deviation("fma float32", low, {"avx2": low}, threads, False)


def test_smt_siblings_are_named_when_threads_exceed_physical_cores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = _deviation(4, 16.0, (4, 2), monkeypatch)
    assert "4 threads on 2 physical cores: SMT siblings" in text


def test_one_cores_rate_is_named_only_when_the_threads_add_up_to_one_core(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 threads at 26% of the figure each: one core's worth (within 10%).
    assert "the 4 threads ran at one core's rate" in _deviation(4, 8.3, (4, 4), monkeypatch)
    # At 60% on 2 threads they did more than one core's work: a slow clock, not a shared core.
    text = _deviation(2, 19.2, (4, 4), monkeypatch)
    assert text and "one core's rate" not in text
    # One thread: nothing to share.
    assert "one core's rate" not in _deviation(1, 16.0, (4, 4), monkeypatch)


def test_a_wider_width_the_table_promises_more_is_read_again_before_it_loses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    # Two agreeing readings slowed to half (a disturbance outlasting both), then the truth.
    given = _fma_f32_readings(monkeypatch, [217.7, 217.0, 445.0, 447.0, 60.0], calls,
                               ymm=240.0)
    r = roofline.calibrate(threads=2, quick=True, progress=False, cache=False)
    assert given == [217.7, 217.0, 445.0, 447.0]
    assert r.compute["fma float32"] == pytest.approx(447.0)
    assert r.machine["ceiling_isas"]["fma float32"] == "avx512"
    assert not any("ran faster than" in note for note in r.notes)
    assert r.settled


def test_a_narrower_width_that_still_wins_is_kept_with_a_warning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    given = _fma_f32_readings(monkeypatch, [217.7, 217.0, 218.0, 216.5], calls, ymm=240.0)
    r = roofline.calibrate(threads=2, quick=True, progress=False, cache=False)
    assert given == [217.7, 217.0, 218.0, 216.5]  # two settled readings, then two more
    assert r.compute["fma float32"] == pytest.approx(240.0)
    assert r.machine["ceiling_isas"]["fma float32"] == "avx2"
    [note] = [n for n in r.notes if "ran faster than" in n]
    assert note.startswith("warning: fma float32: avx2 ran faster than avx512 (240.0 against "
                           "218.0 GFLOP/s, avx512 read twice over), where the table gives "
                           "avx512 2.0x avx2's figure per cycle")
    assert "the ceiling may be low" in note


def test_no_second_reading_where_the_table_promises_the_wider_width_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # _fake_calibration's float64 zmm loses to ymm, and its table figures are equal (a core
    # that splits 512-bit FMAs): the first settled pair of readings decides.
    calls: list[str] = []
    _fake_calibration(monkeypatch, calls)
    r = roofline.calibrate(threads=2, quick=True, progress=False, cache=False)
    assert calls.count("peak float64 False avx512") == 2
    assert r.machine["ceiling_isas"]["fma float64"] == "avx2"
    assert not any("ran faster than" in note for note in r.notes)
    zmm, ymm = _peak("avx512", 90.0, 30.0, 64.0), _peak("avx2", 96.0, 32.0, 32.0)
    assert calibration._wider_promise(zmm, ymm) == pytest.approx(2.0)
    assert calibration._wider_promise(zmm, zmm) is None
    assert calibration._wider_promise(_peak("avx512", 90.0, 30.0, 34.0), ymm) is None
    assert calibration._wider_promise(_peak("avx512", 90.0, 30.0, 0.0), ymm) is None


def _slow_float_spell(monkeypatch: pytest.MonkeyPatch, calls: list[str],
                      lasts: bool) -> list[tuple[int, int, str]]:
    """_fake_calibration, where the float FMA peaks and GEMMs read at half their figures (two
    threads at one core's rate) until the memory steps begin, or throughout with ``lasts``;
    returns the progress calls the calibration will make."""
    _fake_calibration(monkeypatch, calls)
    fake_peak, fake_bandwidth = kernels.peak_flops, kernels.bandwidth
    slow = [True]

    def peak(dtype: str, threads: int | None = None, *, add_mix: bool = False,
             min_time_s: float = 0.1, isa: str | None = None) -> kernels.PeakResult:
        r = fake_peak(dtype, threads, add_mix=add_mix, min_time_s=min_time_s, isa=isa)
        if dtype in ("bfloat16", "int8") or not slow[0]:
            return r
        return kernels.PeakResult(dtype, r.isa, add_mix, r.threads, r.flops_per_s / 2, r.core_hz,
                                  r.flops_per_cycle / 2, r.expected_flops_per_cycle, r.seconds,
                                  r.instruction, r.vector_bits)

    def bandwidth(*args: Any, **kwargs: Any) -> kernels.BandwidthResult:
        slow[0] = lasts
        return fake_bandwidth(*args, **kwargs)

    monkeypatch.setattr(kernels, "peak_flops", peak)
    monkeypatch.setattr(kernels, "bandwidth", bandwidth)
    monkeypatch.setattr(calibration, "_gemm_gflops",
                        lambda dt, n, t, s: 45.0 if slow[0] else 90.0)
    return []


def test_a_peak_far_below_the_table_is_read_again_after_the_other_ceilings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    seen = _slow_float_spell(monkeypatch, calls, lasts=False)
    r = roofline.calibrate(threads=2, quick=True, cache=False,
                           progress=lambda d, t, w: seen.append((d, t, w)))
    # The fake's figures (zmm wins float32, ymm float64; FMA+ADD 1.2x), not the slow spell's.
    assert r.compute["fma float32"] == pytest.approx(100.0)
    assert r.compute["fma+add float32"] == pytest.approx(120.0)
    assert r.compute["fma float64"] == pytest.approx(50.0)
    assert r.compute["fma+add float64"] == pytest.approx(60.0)
    assert r.compute["gemm float32"] == r.compute["gemm float64"] == pytest.approx(90.0)
    assert r.machine["ceiling_isas"]["fma float64"] == "avx2"
    assert ("fma float32 read 50.0 GFLOP/s, 50% of the table's figure; read again after the "
            "other ceilings: 100.0, so the ceiling is 100.0") in r.notes
    assert not any("of what the table promises" in note for note in r.notes)
    # The dot peaks read their figures the first time: read once (one settled pair) only.
    assert calls.count("peak bfloat16 False avx512") == 2
    # 12 steps, then the four float peaks and the two GEMMs again, the total grown to 18.
    assert [d for d, _, _ in seen] == list(range(19))
    assert {t for _, t, _ in seen[:12]} == {12} and {t for _, t, _ in seen[12:]} == {18}
    assert [w for _, _, w in seen[12:]] == [
        "fma float32 again", "fma+add float32 again", "fma float64 again",
        "fma+add float64 again", "GEMM float32 again", "GEMM float64 again", "done"]
    # Compute ceilings keep the order of their steps.
    assert list(r.compute)[:3] == ["fma float32", "fma+add float32", "gemm float32"]


def test_a_peak_still_low_when_read_again_keeps_its_warning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibration, "core_counts", lambda: (2, 2))
    _slow_float_spell(monkeypatch, [], lasts=True)
    r = roofline.calibrate(threads=2, quick=True, progress=False, cache=False)
    assert r.compute["fma float32"] == pytest.approx(50.0)
    assert r.compute["gemm float32"] == pytest.approx(45.0)
    assert ("fma float32 read 50.0 GFLOP/s, 50% of the table's figure; read again after the "
            "other ceilings: 50.0, so the ceiling is 50.0") in r.notes
    [warning] = [n for n in r.notes if n.startswith("warning: fma float32 reaches")]
    assert warning.startswith("warning: fma float32 reaches 50% of what the table promises")
    assert "the 2 threads ran at one core's rate" in warning


def test_calibration_records_each_peaks_share_of_the_table(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def peak(dtype: str, threads: int | None = None, *, add_mix: bool = False,
             min_time_s: float = 0.1, isa: str | None = None) -> kernels.PeakResult:
        # 24 FLOP/cycle where the table says 32: 75%, on every width and every reading.
        return kernels.PeakResult(dtype, isa or "avx2", add_mix, 1, 72e9, 3e9, 24.0, 32.0,
                                  0.1, "fake", 256)

    monkeypatch.setattr(kernels, "peak_flops", peak)
    monkeypatch.setattr(kernels, "bandwidth", lambda kind, n, t=None, s=0.05, *, isa=None:
                        kernels.BandwidthResult(kind, n, 3, n, n / 3, 1.0, 1.0, 10.0 + 1e6 / n,
                                                1, 3, isa or "avx2"))
    monkeypatch.setattr(calibration, "_gemm_gflops", lambda dt, n, t, s: 60.0)
    r = roofline.calibrate(threads=1, quick=True, progress=False, cache=False)
    shares = r.machine["ceiling_table_shares"]
    assert shares["fma float32"] == pytest.approx(0.75)
    assert "gemm float32" not in shares
    p = r.place(flops=100e9, bytes=1e9, seconds=1.0, threads=1)
    assert p.above_roof_causes[0] == "low-ceiling"


def test_tile_peaks_below_their_figure_are_not_read_again() -> None:
    tiles = kernels.PeakResult("int8", "amx", False, 1, 6.8e12, 4e9, 1712.0, 2048.0, 0.1,
                               "tdpbusd tmm (AMX-INT8)", microarch.TILE_BITS)
    assert not calibration._reads_low(tiles)  # 84%: what tiles reach on a quiet core
    assert calibration._reads_low(_peak("avx512", 50.0, 16.0, 32.0))
    assert not calibration._reads_low(_peak("avx512", 90.0, 29.5, 32.0))
    assert not calibration._reads_low(_peak("avx512", 90.0, 29.5, 0.0))  # no figure
