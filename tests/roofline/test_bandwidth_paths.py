"""fastbench.roofline.kernels.bandwidth on every ISA path this CPU runs: the kernel takes the
widest vectors the ISA cap allows (AVX-512 where present) in cache-sized working sets and
names them; the element-wise results of each path are checked in tests/cpp/test_bandwidth.cpp."""

from __future__ import annotations

from typing import Iterator

import pytest

from fastbench import _core
from fastbench.roofline import kernels

ISAS = tuple(_core.isa_names())
# The register widths this CPU runs: AMX tiles move no memory streams, so bandwidth's widest
# path is avx512 under an amx cap too.
WIDEST = ISAS[min(ISAS.index(_core.best_isa()), ISAS.index("avx512"))]
RUNNABLE = ISAS[:ISAS.index(WIDEST) + 1]


@pytest.fixture
def restore_cap() -> Iterator[None]:
    before = _core._isa_cap()
    yield
    _core._set_isa_cap(before)


@pytest.mark.parametrize("isa", RUNNABLE)
def test_bandwidth_runs_the_widest_path_the_cap_allows(isa: str, restore_cap: None) -> None:
    _core._set_isa_cap(isa)
    for kind in kernels.BANDWIDTH_KINDS:
        r = kernels.bandwidth(kind, 3 * 8 * 1024, threads=1, min_time_s=0.001)
        assert r.isa == isa, (kind, r.isa)
        assert r.gb_per_s > 0 and r.passes >= 3


def test_uncapped_bandwidth_uses_avx512_where_the_cpu_has_it() -> None:
    r = kernels.bandwidth("read", 16 * 1024, threads=1, min_time_s=0.001)
    assert r.isa == WIDEST
    if WIDEST != "avx512":
        pytest.skip(f"this CPU runs {_core.best_isa()}: the AVX-512 path cannot run here")


@pytest.mark.parametrize("isa", RUNNABLE)
def test_streaming_kinds_past_the_caches_run_16_byte_loops(isa: str, restore_cap: None) -> None:
    _core._set_isa_cap(isa)
    r = kernels.bandwidth("triad", 33 << 20, threads=1, min_time_s=0.001)
    assert r.isa == ("portable" if isa == "portable" else "avx2")
    assert kernels.bandwidth("read", 33 << 20, threads=1, min_time_s=0.001).isa == isa


@pytest.mark.parametrize("isa", RUNNABLE)
def test_bandwidth_runs_the_width_asked_for(isa: str) -> None:
    # A working set in L1: the loops are those asked for, below the widest allowed too.
    r = kernels.bandwidth("triad", 24 << 10, 1, 0.002, isa=isa)
    assert r.isa == isa and r.gb_per_s > 0


def test_bandwidth_refuses_a_width_above_what_runs_here(restore_cap: None) -> None:
    _core._set_isa_cap("portable")
    with pytest.raises(ValueError, match="above what runs here"):
        kernels.bandwidth("triad", 24 << 10, 1, 0.002, isa="avx2")
    with pytest.raises(ValueError, match="isa must be None or one of"):
        kernels.bandwidth("triad", 24 << 10, 1, 0.002, isa="sse9")


def test_bandwidth_has_no_tile_path() -> None:
    with pytest.raises(ValueError, match="isa is 'amx', above what runs here"):
        kernels.bandwidth("triad", 24 << 10, 1, 0.002, isa="amx")
