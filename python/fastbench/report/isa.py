"""Text for the instruction set found at run time: SIMD features, and the TSC facts behind
the clocks. Returns lines and never prints; the detection is the native core's.
"""

from __future__ import annotations

from .. import _core

__all__ = ["isa_lines"]

_ISA = ("sse2", "sse4_2", "avx", "avx2", "fma", "avx512f")


def isa_lines() -> list[str]:
    """Instruction-set features found at run time, and the TSC facts behind the clocks."""
    f = _core.cpu_features()
    if not f.x86:
        return ["  not x86: portable code paths only"]
    have = [name for name in _ISA if getattr(f, name)]
    lacking = [name for name in _ISA if not getattr(f, name)]
    lines = [f"  SIMD: {' '.join(have) or 'none'}" + (f" (absent: {' '.join(lacking)})" if lacking else "")]
    rdtscp, invariant, hypervisor = ("yes" if flag else "no"
                                     for flag in (f.rdtscp, f.invariant_tsc, f.hypervisor))
    lines.append(f"  TSC: rdtscp {rdtscp}, invariant {invariant}; hypervisor {hypervisor}")
    lines.append("  (SIMD paths are chosen at run time; the build targets baseline x86-64)")
    return lines
