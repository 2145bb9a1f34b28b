"""The ablation builds of the GEMM core (benchmarks/gemm_ablation.py) skip what they say.

Each mask is compiled into the benchmark's program and run in its `check` mode on every ISA
path this CPU runs, for float32, float64 and bf16: the first product must equal a plain
triple loop exactly; once the ablation starts, with A and B scaled by 2 and 4, a build that
skips C must leave C as it was, one that skips nothing the product needs must give exactly 8
times the first product, and one that skips a packing it needs must not.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from fastbench import _core

ROOT = Path(__file__).resolve().parents[2]
ISAS = ["portable", "avx2", "avx512", "amx"]


def _ablation_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its _anchors, as a script finds it
    spec = importlib.util.spec_from_file_location(
        "gemm_ablation", ROOT / "benchmarks" / "gemm_ablation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")), reason="no C++ compiler")
def test_each_ablation_build_skips_exactly_its_parts(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    ablation = _ablation_module(monkeypatch)
    runs = ISAS[:ISAS.index(_core.best_isa()) + 1]
    # Nothing skipped, each packing alone, and C (the masks gemm.cpp defines: 1, 2, 4).
    programs = ablation.build(tmp_path, masks=[0, 1, 2, 4], opt="-O1")
    failures = []
    for mask, exe in programs.items():
        for isa in runs:
            for dtype in ("float32", "float64", "bfloat16"):
                done = subprocess.run([str(exe), "check", dtype, isa], capture_output=True,
                                      text=True, check=False, timeout=120)
                if done.returncode != 0 or done.stdout.strip() != "check ok":
                    failures.append(f"mask {mask} {isa}: {done.stdout.strip()}"
                                    f"{done.stderr.strip()}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")), reason="no C++ compiler")
def test_openblas_anchor_computes_the_same_product(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenBLAS that numpy bundles, loaded into the program, gives the triple loop's
    product exactly (so its call is right), C rows padded or not; `time` then prints one
    ratio against it per block, and a library without CBLAS is refused."""
    ablation = _ablation_module(monkeypatch)
    blas = ablation.numpy_openblas()
    if blas is None:
        pytest.skip("numpy bundles no OpenBLAS here")
    exe = ablation.build(tmp_path, masks=[0], opt="-O1")[0]
    for dtype in ("float32", "float64"):
        done = subprocess.run([str(exe), "check", dtype, _core.best_isa(), blas],
                              capture_output=True, text=True, check=False, timeout=120)
        assert done.stdout.strip() == "check ok", done.stdout + done.stderr
        for pad in (0, 8):
            peak, against = ablation.run_once(exe, dtype, (96, 80, 64), 2, 3, pad, blas)
            assert len(peak) == 3 and len(against) == 3
            assert all(r > 0 for r in peak + against)
    not_blas = tmp_path / "not_blas.so"
    not_blas.write_bytes(b"")  # not a shared library: dlopen fails, so no gemm is found
    done = subprocess.run([str(exe), "check", "float64", _core.best_isa(), str(not_blas)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 1 and "no CBLAS gemm" in done.stdout
