"""fastbench.machine.microarch: known rows give the documented per-cycle figures (vendor
optimization guides, uops.info), every row names its source, an unknown model says so and
falls back to its ISA, and the FLOP/cycle arithmetic for FMA, FMA+ADD, bf16 and int8 chains."""

from __future__ import annotations

import pytest

from fastbench.machine import microarch
from fastbench.machine.microarch import expected_flops_per_cycle, lookup

AMD, INTEL = "AuthenticAMD", "GenuineIntel"


@pytest.mark.parametrize("vendor, family, model, name", [
    (AMD, 0x17, 0x31, "Zen 2"),             # EPYC Rome
    (AMD, 0x17, 0x71, "Zen 2"),             # Ryzen 3000 (Matisse)
    (AMD, 0x19, 0x01, "Zen 3"),             # EPYC Milan
    (AMD, 0x19, 0x21, "Zen 3"),             # Ryzen 5000 (Vermeer)
    (AMD, 0x19, 0x11, "Zen 4"),             # EPYC Genoa
    (AMD, 0x19, 0x61, "Zen 4"),             # Ryzen 7000 (Raphael)
    (AMD, 0x1A, 0x02, "Zen 5"),             # EPYC Turin
    (AMD, 0x1A, 0x44, "Zen 5"),             # Ryzen 9000 (Granite Ridge)
    (AMD, 0x1A, 0x24, "Zen 5 (mobile, 256-bit datapath)"),  # Strix Point
    (INTEL, 6, 0x55, "Skylake-SP / Cascade Lake-SP"),
    (INTEL, 6, 0x6A, "Ice Lake-SP"),
    (INTEL, 6, 0x8F, "Sapphire / Emerald / Granite Rapids"),
    (INTEL, 6, 0xCF, "Sapphire / Emerald / Granite Rapids"),
    (INTEL, 6, 0xAD, "Sapphire / Emerald / Granite Rapids"),
    (INTEL, 6, 0x97, "Alder / Raptor Lake P-core"),
    (INTEL, 6, 0xB7, "Alder / Raptor Lake P-core"),
])
def test_known_models_find_their_row(vendor: str, family: int, model: int, name: str) -> None:
    row = lookup(vendor, family, model)
    assert row.known and row.name == name
    assert row.source  # every row cites where its figures come from


@pytest.mark.parametrize("vendor, family, model, dtype, bits, want", [
    # Zen 3: two 256-bit FMA pipes: 2 x 8 lanes x 2 = 32 float32 FLOP/cycle (AMD SOG 19h).
    (AMD, 0x19, 0x01, "float32", 256, 32.0),
    (AMD, 0x19, 0x01, "float64", 256, 16.0),
    # Zen 4 splits zmm: one 512-bit FMA a cycle, the same 32 as ymm (AMD SOG 19h 10h+).
    (AMD, 0x19, 0x11, "float32", 512, 32.0),
    (AMD, 0x19, 0x11, "float32", 256, 32.0),
    # Zen 5 server/desktop: two full 512-bit FMA pipes: 64 float32, 32 float64.
    (AMD, 0x1A, 0x02, "float32", 512, 64.0),
    (AMD, 0x1A, 0x02, "float64", 512, 32.0),
    # Ice Lake-SP and Sapphire Rapids: two 512-bit FMA units (ports 0+1 and 5).
    (INTEL, 6, 0x6A, "float32", 512, 64.0),
    (INTEL, 6, 0x8F, "float64", 512, 32.0),
    # Alder Lake P-core: no AVX-512 (fused off), two 256-bit FMAs.
    (INTEL, 6, 0x97, "float32", 256, 32.0),
    (INTEL, 6, 0x97, "float32", 512, None),
    # Zen 4 vdpbf16ps zmm, one a cycle: 16 lanes x 2 pairs x 2 = 64; vpdpbusd zmm 128 OPS.
    (AMD, 0x19, 0x11, "bfloat16", 512, 64.0),
    (AMD, 0x19, 0x11, "int8", 512, 128.0),
    # Zen 5 runs two vdpbf16ps zmm a cycle.
    (AMD, 0x1A, 0x02, "bfloat16", 512, 128.0),
    # Zen 3 has no bf16 dot product; portable scalars have no figure anywhere.
    (AMD, 0x19, 0x01, "bfloat16", 512, None),
    (AMD, 0x19, 0x11, "float32", 0, None),
])
def test_known_rows_give_the_documented_fma_figures(vendor: str, family: int, model: int,
                                                   dtype: str, bits: int,
                                                   want: float | None) -> None:
    row = lookup(vendor, family, model)
    assert expected_flops_per_cycle(row, dtype, bits, fma_per_iter=12) == want


def test_zen4_splits_512_bit_ops_and_zen5_does_not() -> None:
    zen4, zen5 = lookup(AMD, 0x19, 0x11), lookup(AMD, 0x1A, 0x02)
    assert zen4.split_512 and zen4.fma_width_bits == 256
    assert not zen5.split_512 and zen5.fma_width_bits == 512
    assert zen4.fma_units == zen5.fma_units == 2 and zen4.add_units == zen5.add_units == 2
    assert "split into two 256-bit halves" in zen4.describe()


def test_fma_add_mix_uses_the_separate_add_pipes_on_zen_only() -> None:
    # 8 FMAs + 6 adds of 8 float32 lanes = (16 + 6) x 8 = 176 FLOPs a trip.
    zen3 = lookup(AMD, 0x19, 0x01)       # FMAs on 2 pipes, adds on 2 others: 4 cycles
    assert expected_flops_per_cycle(zen3, "float32", 256, fma_per_iter=8,
                                    add_per_iter=6) == pytest.approx(176 / 4)
    skx = lookup(INTEL, 6, 0x55)         # adds share the two FMA ports: 7 cycles
    assert expected_flops_per_cycle(skx, "float32", 256, fma_per_iter=8,
                                    add_per_iter=6) == pytest.approx(176 / 7)
    adl = lookup(INTEL, 6, 0x97)         # three ports for both: 14 / 3 cycles
    assert expected_flops_per_cycle(adl, "float32", 256, fma_per_iter=8,
                                    add_per_iter=6) == pytest.approx(176 / (14 / 3))
    # Zen 4 zmm: one FMA and one add a cycle; 12 + 12 of 16 lanes: (24 + 12) x 16 / 12.
    zen4 = lookup(AMD, 0x19, 0x11)
    assert expected_flops_per_cycle(zen4, "float32", 512, fma_per_iter=12,
                                    add_per_iter=12) == pytest.approx(48.0)


@pytest.mark.parametrize("vendor, family, model", [
    (AMD, 0x1F, 0x00), (INTEL, 6, 0x01), (INTEL, 0x13, 0x01), ("CentaurHauls", 6, 0x0F),
])
def test_an_unknown_model_says_so_and_falls_back_to_its_isa(vendor: str, family: int,
                                                            model: int) -> None:
    row = lookup(vendor, family, model, "avx512")
    assert not row.known
    assert row.caveat == (f"unknown microarchitecture: family {family:#x} model {model:#x}; "
                          "expected figures from the ISA only")
    assert expected_flops_per_cycle(row, "float32", 512, fma_per_iter=16) == 64.0
    assert expected_flops_per_cycle(row, "bfloat16", 512) is None
    avx2 = lookup(vendor, family, model, "avx2")
    assert expected_flops_per_cycle(avx2, "float32", 512) is None
    assert expected_flops_per_cycle(avx2, "float64", 256, fma_per_iter=12) == 16.0
    assert lookup(vendor, family, model, "portable").rates == {}


def test_tile_products_of_amx_cores() -> None:
    # Sapphire Rapids: one tdpbf16ps (16 x 16 sums of 32 bf16 products) every 16 cycles:
    # 16 * 16 * 32 * 2 / 16 = 1024 FLOP/cycle; tdpbusd (64 int8 products) 2048 OPS/cycle.
    spr = lookup(INTEL, 6, 0x8F)
    assert expected_flops_per_cycle(spr, "bfloat16", microarch.TILE_BITS,
                                    fma_per_iter=4) == pytest.approx(1024.0)
    assert expected_flops_per_cycle(spr, "int8", microarch.TILE_BITS) == pytest.approx(2048.0)
    assert expected_flops_per_cycle(spr, "float32", microarch.TILE_BITS) is None
    assert "AMX tiles" in spr.describe()
    # Zen 4 has no tiles.
    assert expected_flops_per_cycle(lookup(AMD, 0x19, 0x11), "bfloat16",
                                    microarch.TILE_BITS) is None


def test_an_unknown_intel_model_with_tiles_takes_the_sapphire_rapids_figures() -> None:
    # A hypervisor reporting family 6 model 0xa7 (Rocket Lake's number, a core without AMX)
    # for a CPU with AMX tiles: the tiles mark a Sapphire Rapids-class core.
    row = lookup(INTEL, 6, 0xA7, "amx", hypervisor=True)
    assert not row.known and row.name.startswith("Sapphire / Emerald / Granite Rapids")
    assert row.caveat.startswith("unknown microarchitecture: family 0x6 model 0xa7 (a "
                                 "hypervisor may report a model of its own); AMX tiles")
    assert expected_flops_per_cycle(row, "float32", 512, fma_per_iter=16) == 64.0
    assert expected_flops_per_cycle(row, "bfloat16", microarch.TILE_BITS) == 1024.0
    # Without tiles the same model falls back to its ISA, and says nothing of a hypervisor
    # unless there is one.
    plain = lookup(INTEL, 6, 0xA7, "avx512")
    assert plain.name == "generic avx512" and "hypervisor" not in plain.caveat
    assert expected_flops_per_cycle(plain, "bfloat16", microarch.TILE_BITS) is None


def test_rows_do_not_overlap() -> None:
    seen: dict[tuple[str, int, int], str] = {}
    for row in microarch.TABLE:
        for lo, hi in row.models:
            assert lo <= hi, row.name
            for model in range(lo, hi + 1):
                key = (row.vendor, row.family, model)
                assert key not in seen, f"{row.name} and {seen.get(key)} share {key}"
                seen[key] = row.name
