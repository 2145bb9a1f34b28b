"""What a core's arithmetic pipes promise per cycle: a table keyed by CPU vendor, family and
model, with the source of every row, and the FLOP/cycle a peak kernel should reach on it.

Pure data and arithmetic: the caller passes the vendor, family and model (the native core's
``cpu_features()``); nothing here measures, imports the native core or prints. A model the
table does not know gets figures from its ISA only, and says so.

Sources, cited per row:
- AMD, Software Optimization Guide for AMD Family 17h Processors (pub. 55723), for Family
  17h Models 30h and Greater (56305), for Family 19h (56665), for Family 19h Models 10h and
  Greater (57647), for Family 1Ah (58455): section "Floating-Point Unit".
- Intel, 64 and IA-32 Architectures Optimization Reference Manual (248966), the chapters on
  each microarchitecture (execution ports of the FP/vector units).
- A. Fog, Instruction tables and The microarchitecture of Intel, AMD and VIA CPUs.
- uops.info measured throughputs (vfmadd231ps, vaddps, vdpbf16ps, vpdpbusd per width).
- Intel, Optimization Reference Manual (248966), chapter "Intel Advanced Matrix Extensions":
  one tdpbf16ps or tdpbusd tile product every 16 cycles per core (1,024 bf16 FLOP and 2,048
  int8 OPS per cycle).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

__all__ = ["Microarch", "PipeRates", "TABLE", "TILE_BITS", "expected_flops_per_cycle",
           "lookup"]

# The vector_bits of a tile (AMX) product: one tile register, 16 rows of 64 bytes (the
# native core's kTileBits).
TILE_BITS = 16 * 64 * 8


@dataclass(frozen=True)
class PipeRates:
    """Instructions of one vector width a core issues per cycle.

    ``fma`` FMAs alone; ``add`` adds alone; ``fma_add`` FMAs and adds together (equal to
    ``fma`` where adds share the FMA ports, as on Intel before Golden Cove; the sum of both
    where separate add pipes sit beside the FMA pipes, as on AMD Zen).
    """

    fma: float
    add: float
    fma_add: float


@dataclass(frozen=True)
class Microarch:
    """One row of the table: a core and what its pipes do per cycle.

    ``rates`` maps a vector width in bits (256, 512) to its ``PipeRates``; a width the core
    lacks is absent. ``bf16_dot`` is ``vdpbf16ps`` zmm instructions per cycle, ``int8_dot``
    maps a width to ``vpdpbusd`` instructions per cycle; ``tile_bf16`` and ``tile_int8`` are
    AMX ``tdpbf16ps`` and ``tdpbusd`` instructions per cycle; None or absent where not known
    or not present. ``known`` is False for the fallback rows chosen by ISA alone.
    """

    name: str
    vendor: str
    family: int
    models: tuple[tuple[int, int], ...]  # inclusive model ranges
    fma_units: int                       # FMA pipes
    fma_width_bits: int                  # the datapath width of each FMA pipe
    split_512: bool                      # 512-bit ops run as two halves (half rate)
    add_units: int                       # separate FADD pipes beside the FMA pipes
    rates: Mapping[int, PipeRates]
    source: str
    bf16_dot: float | None = None
    int8_dot: Mapping[int, float] = field(default_factory=dict)
    tile_bf16: float | None = None
    tile_int8: float | None = None
    caveat: str = ""
    known: bool = True

    def describe(self) -> str:
        """One line: the core, its FMA units and width, the add pipes, the source."""
        split = ", 512-bit ops split into two 256-bit halves" if self.split_512 else ""
        adds = (f", {self.add_units} separate FADD pipes" if self.add_units
                else ", adds share the FMA ports")
        tiles = ", AMX tiles" if self.tile_bf16 is not None else ""
        return (f"{self.name}: {self.fma_units} FMA units of {self.fma_width_bits} bits{split}"
                f"{adds}{tiles} ({self.source})" + (f"; {self.caveat}" if self.caveat else ""))


_AMD = "AuthenticAMD"
_INTEL = "GenuineIntel"
_ZEN_YMM = PipeRates(fma=2, add=2, fma_add=4)  # FP0/FP1 FMA, FP2/FP3 FADD
_SOG17 = "AMD Software Optimization Guide for Family 17h (55723), 2.11; Agner Fog"
_SOG17_30 = ("AMD Software Optimization Guide for Family 17h Models 30h+ (56305), 2.11; "
             "Agner Fog")
_SOG19 = "AMD Software Optimization Guide for Family 19h (56665), 2.11; Agner Fog"
_SOG19_10 = ("AMD Software Optimization Guide for Family 19h Models 10h+ (57647), 2.11; "
             "uops.info")
_SOG1A = "AMD Software Optimization Guide for Family 1Ah (58455), 2.11; uops.info"
_ORM = "Intel Optimization Reference Manual (248966)"
_AMX_PER_CYCLE = 1 / 16  # a tile product every 16 cycles (ORM, "Intel AMX")

# Golden Cove and later: FADD units on ports 1 and 5 beside the FMAs on 0 and 1 (ymm); zmm
# uses ports 0+1 fused and 5. AMX: one tile product every 16 cycles.
_SAPPHIRE_RAPIDS = Microarch(
    "Sapphire / Emerald / Granite Rapids", _INTEL, 6,
    ((0x8F, 0x8F), (0xCF, 0xCF), (0xAD, 0xAE)), 2, 512, False, 2,
    {256: PipeRates(fma=2, add=2, fma_add=3), 512: PipeRates(fma=2, add=2, fma_add=2)},
    f"{_ORM}, Golden Cove / Sapphire Rapids microarchitecture and Intel AMX; uops.info",
    int8_dot={512: 2, 256: 2}, tile_bf16=_AMX_PER_CYCLE, tile_int8=_AMX_PER_CYCLE)

TABLE: tuple[Microarch, ...] = (
    # Zen and Zen+: two 128-bit FMA and two 128-bit FADD pipes; a ymm op takes two.
    Microarch("Zen / Zen+", _AMD, 0x17, ((0x00, 0x2F),), 2, 128, False, 2,
              {256: PipeRates(fma=1, add=1, fma_add=2)}, _SOG17),
    Microarch("Zen 2", _AMD, 0x17, ((0x30, 0xFF),), 2, 256, False, 2, {256: _ZEN_YMM},
              _SOG17_30),
    # Hygon Dhyana is Zen under another vendor string and family.
    Microarch("Hygon Dhyana (Zen)", "HygonGenuine", 0x18, ((0x00, 0xFF),), 2, 128, False, 2,
              {256: PipeRates(fma=1, add=1, fma_add=2)}, _SOG17),
    Microarch("Zen 3", _AMD, 0x19, ((0x00, 0x0F), (0x20, 0x5F)), 2, 256, False, 2,
              {256: _ZEN_YMM}, _SOG19),
    # Zen 4 executes a zmm op as two 256-bit halves on the same pipes: half the zmm rate.
    Microarch("Zen 4", _AMD, 0x19, ((0x10, 0x1F), (0x60, 0xAF)), 2, 256, True, 2,
              {256: _ZEN_YMM, 512: PipeRates(fma=1, add=1, fma_add=2)}, _SOG19_10,
              bf16_dot=1, int8_dot={512: 1, 256: 2}),
    # Zen 5 desktop and server cores have full 512-bit datapaths.
    Microarch("Zen 5", _AMD, 0x1A, ((0x00, 0x1F), (0x40, 0x4F)), 2, 512, False, 2,
              {256: _ZEN_YMM, 512: PipeRates(fma=2, add=2, fma_add=4)}, _SOG1A,
              bf16_dot=2),
    # Mobile Zen 5 (Strix Point, Krackan, Strix Halo) keeps Zen 4's 256-bit datapath.
    Microarch("Zen 5 (mobile, 256-bit datapath)", _AMD, 0x1A, ((0x20, 0x2F), (0x60, 0x7F)), 2,
              256, True, 2, {256: _ZEN_YMM, 512: PipeRates(fma=1, add=1, fma_add=2)}, _SOG1A,
              bf16_dot=1),
    # Haswell and Broadwell: FMA on ports 0 and 1, FADD on port 1 only.
    Microarch("Haswell / Broadwell", _INTEL, 6,
              ((0x3C, 0x3C), (0x3F, 0x3F), (0x45, 0x47), (0x3D, 0x3D), (0x4F, 0x4F),
               (0x56, 0x56)), 2, 256, False, 0, {256: PipeRates(fma=2, add=1, fma_add=2)},
              f"{_ORM}, Haswell microarchitecture; Agner Fog"),
    Microarch("Skylake / Kaby / Coffee / Comet Lake (client)", _INTEL, 6,
              ((0x4E, 0x4E), (0x5E, 0x5E), (0x8E, 0x8E), (0x9E, 0x9E), (0xA5, 0xA6)), 2, 256,
              False, 0, {256: PipeRates(fma=2, add=2, fma_add=2)},
              f"{_ORM}, Skylake client microarchitecture; uops.info"),
    # Skylake-SP, Cascade Lake-SP, Cooper Lake: ports 0+1 fused and port 5 for zmm.
    Microarch("Skylake-SP / Cascade Lake-SP", _INTEL, 6, ((0x55, 0x55),), 2, 512, False, 0,
              {256: PipeRates(fma=2, add=2, fma_add=2), 512: PipeRates(fma=2, add=2, fma_add=2)},
              f"{_ORM}, Skylake server microarchitecture; uops.info", int8_dot={512: 2, 256: 2},
              caveat="Xeon Bronze, Silver and some Gold 5xxx have one 512-bit FMA unit (half "
                     "the zmm rate); vpdpbusd is Cascade Lake's (VNNI), bf16 Cooper Lake's"),
    Microarch("Ice Lake-SP", _INTEL, 6, ((0x6A, 0x6A), (0x6C, 0x6C)), 2, 512, False, 0,
              {256: PipeRates(fma=2, add=2, fma_add=2), 512: PipeRates(fma=2, add=2, fma_add=2)},
              f"{_ORM}, Ice Lake server microarchitecture; uops.info", int8_dot={512: 2, 256: 2}),
    _SAPPHIRE_RAPIDS,
    Microarch("Alder / Raptor Lake P-core", _INTEL, 6,
              ((0x97, 0x97), (0x9A, 0x9A), (0xB7, 0xB7), (0xBA, 0xBA), (0xBF, 0xBF)), 2, 256,
              False, 2, {256: PipeRates(fma=2, add=2, fma_add=3)},
              f"{_ORM}, Golden Cove microarchitecture; uops.info", int8_dot={256: 2},
              caveat="hybrid: E-cores (Gracemont) issue one ymm FMA per cycle; threads placed "
                     "on them lower the figure"),
)


def _unknown(family: int, model: int, hypervisor: bool) -> str:
    under = (" (a hypervisor may report a model of its own)" if hypervisor else "")
    return f"unknown microarchitecture: family {family:#x} model {model:#x}{under}"


def _fallback(vendor: str, family: int, model: int, isa: str, hypervisor: bool) -> Microarch:
    """A row from the ISA alone: two FMA instructions per cycle at each width the ISA has,
    adds sharing their ports (the least any AVX2 core with two FMA pipes promises). AMX
    tiles exist only on Sapphire Rapids and later server cores (Golden Cove and after), so
    an unknown model with them takes that row's figures, saying so."""
    if isa == "amx" and vendor == _INTEL:
        return replace(_SAPPHIRE_RAPIDS, models=(), known=False,
                       name=f"{_SAPPHIRE_RAPIDS.name} (by its AMX tiles)",
                       caveat=f"{_unknown(family, model, hypervisor)}; AMX tiles mark a "
                              "Sapphire Rapids-class core, whose figures are used")
    two = PipeRates(fma=2, add=2, fma_add=2)
    rates: dict[int, PipeRates] = {}
    if isa in ("avx2", "avx512", "amx"):
        rates[256] = two
    if isa in ("avx512", "amx"):
        rates[512] = two
    return Microarch(f"generic {isa}", vendor, family, (), 2 if rates else 0,
                     max(rates, default=0), False, 0, rates,
                     "the ISA only: two FMA pipes per core assumed",
                     caveat=f"{_unknown(family, model, hypervisor)}; expected figures from "
                            "the ISA only", known=False)


def lookup(vendor: str, family: int, model: int, isa: str = "avx2", *,
           hypervisor: bool = False) -> Microarch:
    """The row for this CPU, or a fallback from ``isa`` ("portable", "avx2", "avx512",
    "amx") with ``known`` False and a caveat naming the family and model it did not find
    (and, under a ``hypervisor``, that the model may be the hypervisor's own)."""
    for row in TABLE:
        if row.vendor == vendor and row.family == family and any(
                lo <= model <= hi for lo, hi in row.models):
            return row
    return _fallback(vendor, family, model, isa, hypervisor)


def expected_flops_per_cycle(arch: Microarch, dtype: str, vector_bits: int, *,
                             fma_per_iter: int = 1, add_per_iter: int = 0) -> float | None:
    """FLOP (or int8 OPS) per cycle per core that chains of this width should reach on
    ``arch``: None where the table has no figure (portable scalars, a width the core lacks,
    a dot product of unknown throughput).

    A loop trip of ``fma_per_iter`` FMAs and ``add_per_iter`` adds takes the longest of
    fma / rate.fma, add / rate.add and (fma + add) / rate.fma_add cycles; an FMA counts 2
    FLOPs per lane, an add 1. ``bfloat16`` counts 4 FLOPs per float32 lane of
    ``vdpbf16ps``, ``int8`` 8 OPS per int32 lane of ``vpdpbusd``. A tile product
    (``vector_bits`` ``TILE_BITS``) counts 16 x 16 accumulators of 32 bf16 (64 int8)
    multiply-adds: 16,384 FLOPs (32,768 OPS).
    """
    if vector_bits <= 0:
        return None
    if vector_bits == TILE_BITS:
        tile = {"bfloat16": (arch.tile_bf16, 32), "int8": (arch.tile_int8, 64)}
        rate, depth = tile.get(dtype, (None, 0))
        return None if rate is None else rate * 16 * 16 * depth * 2
    if dtype == "bfloat16":
        return None if arch.bf16_dot is None else arch.bf16_dot * vector_bits / 32 * 4
    if dtype == "int8":
        rate = arch.int8_dot.get(vector_bits)
        return None if rate is None else rate * vector_bits / 32 * 8
    lanes = vector_bits / (32 if dtype == "float32" else 64)
    r = arch.rates.get(vector_bits)
    if r is None:
        return None
    cycles = fma_per_iter / r.fma
    if add_per_iter:
        cycles = max(cycles, add_per_iter / r.add, (fma_per_iter + add_per_iter) / r.fma_add)
    return (2 * fma_per_iter + add_per_iter) * lanes / cycles
