"""fastbench.report.isa: the SIMD line names the bf16 and int8 dot-product extensions as
/proc/cpuinfo lists them, the kernels line follows the ISA cap, and the cores line gives the
microarchitecture table's row (or says the model is unknown)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastbench import _core
from fastbench.machine import microarch
from fastbench.report.isa import isa_lines


def _cpuinfo_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.split(":")[0].strip() == "flags":
            return set(line.split(":", 1)[1].split())
    return set()


@pytest.mark.skipif(not _core.cpu_features().x86, reason="not x86")
def test_simd_line_names_the_dot_product_extensions_as_cpuinfo_does() -> None:
    flags = _cpuinfo_flags()
    if not flags:
        pytest.skip("no flags line in /proc/cpuinfo (not Linux)")
    simd = next(line for line in isa_lines() if line.strip().startswith("SIMD:"))
    have = simd.split("(absent:")[0].split()
    for flag in ("avx512_bf16", "avx512_vnni", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8"):
        assert (flag in have) == (flag in flags), (flag, simd)
        assert getattr(_core.cpu_features(), flag) == (flag in flags)


@pytest.mark.skipif(not _core.cpu_features().x86, reason="not x86")
def test_kernels_line_follows_the_cap_and_cores_line_the_table() -> None:
    before = _core._isa_cap()
    try:
        _core._set_isa_cap("portable")
        lines = isa_lines()
    finally:
        _core._set_isa_cap(before)
    kernels_line = next(line for line in lines if line.strip().startswith("kernels:"))
    if _core.best_isa() != "portable":
        assert "(capped at portable)" in kernels_line
    assert "bf16 dot no, int8 dot no" in kernels_line
    f = _core.cpu_features()
    row = microarch.lookup(f.vendor, f.family, f.model, _core.best_isa())
    cores = next(line for line in lines if line.strip().startswith("cores:"))
    assert (row.name in cores) if row.known else ("unknown microarchitecture" in cores)
