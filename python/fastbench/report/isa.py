"""Text for the instruction set found at run time: SIMD features (the bf16 and int8 dot
product extensions and AMX tiles too), the ISA the kernels run and the core's row of the microarchitecture
table, and the TSC facts behind the clocks. Returns lines and never prints; the detection is
the native core's.
"""

from __future__ import annotations

from .. import _core
from ..machine import microarch

__all__ = ["isa_lines"]

_ISA = ("sse2", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni",
        "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")


def isa_lines() -> list[str]:
    """Instruction-set features found at run time, and the TSC facts behind the clocks."""
    f = _core.cpu_features()
    if not f.x86:
        return ["  not x86: portable code paths only"]
    have = [name for name in _ISA if getattr(f, name)]
    lacking = [name for name in _ISA if not getattr(f, name)]
    lines = [f"  SIMD: {' '.join(have) or 'none'}" + (f" (absent: {' '.join(lacking)})" if lacking else "")]
    capped = (f" (capped at {_core.active_isa()})"
              if _core.active_isa() != _core.best_isa() else "")
    bf16 = ("tiles" if _core.active_isa() == "amx"
            else "yes" if _core.has_avx512_bf16() else "no")
    int8 = ("tiles" if _core.has_amx_int8()
            else "yes" if _core.has_avx512_vnni() or _core.has_avx_vnni() else "no")
    lines.append(f"  kernels: {_core.best_isa()}{capped}; bf16 dot {bf16}, int8 dot {int8}")
    arch = microarch.lookup(f.vendor, f.family, f.model, _core.best_isa(),
                            hypervisor=f.hypervisor)
    lines.append(f"  cores: {arch.describe() if arch.known else arch.caveat}")
    if f.amx_tile and _core.best_isa() != "amx":
        lines.append("  AMX: the CPU has tiles, but the OS did not grant this process their "
                     "state (Linux 5.16 or later asks arch_prctl); tile paths are off")
    rdtscp, invariant, hypervisor = ("yes" if flag else "no"
                                     for flag in (f.rdtscp, f.invariant_tsc, f.hypervisor))
    lines.append(f"  TSC: rdtscp {rdtscp}, invariant {invariant}; hypervisor {hypervisor}")
    lines.append("  (SIMD paths are chosen at run time; the build targets baseline x86-64)")
    return lines
