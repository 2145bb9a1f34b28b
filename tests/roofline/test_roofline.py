"""fastbench.roofline: placement arithmetic and ridge points on a synthetic roofline, results
files and the per-machine cache (and its invalidation), a real quick calibration, the plot
and the CLI."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastbench
from fastbench import roofline
from fastbench.measurement import Measurement
from fastbench.roofline import Roofline

PY = sys.executable


def _synthetic() -> Roofline:
    # Peak 200 GFLOP/s f32, 100 f64; DRAM 25 GB/s, L1 400 GB/s: ridge points 8 and 0.5.
    return Roofline(
        compute={"fma float32": 200.0, "fma+add float32": 150.0, "gemm float32": 180.0,
                 "fma float64": 100.0},
        memory={"L1": 400.0, "L2": 200.0, "L3": 100.0, "DRAM": 25.0},
        threads=2, quick=True, machine={"cpu_model": "synthetic"},
    )


def test_ridge_points_and_attainable_follow_the_formula() -> None:
    r = _synthetic()
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


def test_placement_memory_bound() -> None:
    # A triad on DRAM: 2 FLOPs per 24 bytes; 1e9 elements in 1.2 s.
    p = _synthetic().place(flops=2e9, bytes=24e9, seconds=1.2)
    assert p.intensity == pytest.approx(1 / 12)
    assert p.attainable_gflops == pytest.approx(25.0 / 12)
    assert p.achieved_gflops == pytest.approx(2 / 1.2)
    assert p.fraction == pytest.approx((2 / 1.2) / (25 / 12))
    assert p.bound == "memory-bound" and p.memory_ceiling == "DRAM"
    assert p.compute_ceiling == "fma float32" and p.ridge_point == 8.0
    assert "memory-bound" in str(p)


def test_placement_compute_bound_from_a_measurement() -> None:
    samples = np.full(20, 1e6)  # 1 ms per call
    m = Measurement(samples_ns=samples, loops=1, warmup_samples_ns=np.asarray([1e6]),
                    clock="steady", overhead_ns=0.0, overhead_mad_ns=0.0, call_floor_ns=0.0,
                    call_floor_mad_ns=0.0)
    p = _synthetic().place(m, flops=1e8, bytes=1e6, dtype="float64")
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
def test_placement_rejects_bad_input(kwargs: dict, match: str) -> None:  # type: ignore[type-arg]
    m = kwargs.pop("measurement", None)
    with pytest.raises(ValueError, match=match):
        _synthetic().place(m, **kwargs)  # type: ignore[arg-type]


def test_results_file_round_trip(tmp_path: Path) -> None:
    r = _synthetic()
    path = tmp_path / "roof.json"
    fastbench.save(r, path)
    assert fastbench.load(path) == r
    with pytest.raises(ValueError, match="not a roofline"):
        Roofline.from_dict({"compute": {}})


def _fake_calibration(monkeypatch: pytest.MonkeyPatch, calls: list[str]) -> None:
    """Kernels replaced by known figures, so calibrate()'s plan and cache can be checked fast."""
    from fastbench.roofline import kernels

    def peak(dtype: str, threads: int | None = None, *, add_mix: bool = False,
             min_time_s: float = 0.1) -> kernels.PeakResult:
        calls.append(f"peak {dtype} {add_mix}")
        base = 100.0 if dtype == "float32" else 50.0
        rate = base * (1.2 if add_mix else 1.0) * 1e9
        return kernels.PeakResult(dtype, "avx2+fma", add_mix, 2, rate, 3e9, rate / 2 / 3e9, 32.0, 0.1)

    def bandwidth(kind: str, nbytes: int, threads: int | None = None,
                  min_time_s: float = 0.05) -> kernels.BandwidthResult:
        calls.append(f"bw {nbytes}")
        gbs = 1000.0 / math.log2(nbytes)  # smaller working sets are faster
        return kernels.BandwidthResult(kind, nbytes, 3, nbytes, nbytes / 3, 1.0, 1.0, gbs, 2, 3,
                                       "avx2")

    monkeypatch.setattr(kernels, "peak_flops", peak)
    monkeypatch.setattr(kernels, "bandwidth", bandwidth)
    monkeypatch.setattr(roofline, "_gemm_gflops", lambda dt, n, t, s: 90.0)


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
    real_machine = roofline._machine
    monkeypatch.setattr(roofline, "_machine", lambda: {**real_machine(), "cpu_model": "other"})
    roofline.calibrate(threads=1, quick=True, progress=False)
    assert len(calls) == 2 * n  # another CPU: measured afresh
    monkeypatch.setattr(roofline, "_machine", real_machine)
    monkeypatch.setattr(roofline, "__version__", "0.0.0-other")
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


def test_real_quick_calibration_is_ordered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    r = roofline.calibrate(quick=True, progress=False)
    assert all(v > 0 for v in r.compute.values()) and all(v > 0 for v in r.memory.values())
    assert r.memory["L1"] > r.memory["DRAM"]  # an order of magnitude apart: robust to noise
    text = "\n".join(r.lines())
    assert "compute ceilings" in text
    for nbytes, gbs, level in r.sweep:  # every working set measured is printed with its level
        assert any(line.strip().startswith(level) and f"{gbs:,.0f}" in line for line in r.lines())


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    r = _synthetic()
    p = r.place(flops=2e9, bytes=24e9, seconds=1.2)
    out = roofline.plot(r, tmp_path / "roof.png", points={"triad": p})
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = r.plot(tmp_path / "again.png", points=[("triad", p)], dtype="float64")
    assert again.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_roofline_prints_saves_and_plots(tmp_path: Path) -> None:
    env_cache = tmp_path / "cache"
    out = tmp_path / "roof.json"
    cmd = [PY, "-m", "fastbench", "roofline", "--quick", "--threads", "1", "-o", str(out)]
    if _has_matplotlib():
        cmd += ["--plot", str(tmp_path / "roof.png")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "FASTBENCH_CACHE_DIR": str(env_cache)})
    assert r.returncode == 0, r.stderr
    assert "compute ceilings" in r.stdout and "DRAM" in r.stdout
    loaded = fastbench.load(out)
    assert isinstance(loaded, Roofline) and loaded.threads == 1 and loaded.quick
    if _has_matplotlib():
        assert (tmp_path / "roof.png").exists()


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
