"""Text for machine facts and noise checks: the ``Label:  value`` lines of ``fastbench
info`` and the ``[status] name  value  -> advice`` lines of its noise checks.

Returns lists of lines and never prints; the facts themselves are :mod:`fastbench.machine`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..machine.facts import CacheLevel, MachineInfo
from ..machine.noise import STATUSES, NoiseCheck
from ..units import format_bytes

__all__ = ["format_machine", "format_noise_checks"]

# Flags worth a reader's attention: vector width and the TSC properties fastbench's
# clock relies on. Shown in this order when present.
_NOTABLE_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16",
    "amx_tile", "asimd", "sve", "sve2",
    "constant_tsc", "nonstop_tsc", "rdtscp", "hypervisor",
)  # fmt: skip


def _cache_label(cache: CacheLevel) -> str:
    suffix = {"Data": "d", "Instruction": "i"}.get(cache.kind, "")
    return f"L{cache.level}{suffix}"


def _format_caches(levels: Iterable[CacheLevel]) -> str:
    parts = [f"{_cache_label(c)} {format_bytes(c.size_bytes, exact=True)}" for c in levels]
    return ", ".join(parts) if parts else "unknown"


def _format_flags(flags: frozenset[str]) -> str:
    if not flags:
        return "unknown"
    notable = [f for f in _NOTABLE_FLAGS if f in flags]
    return f"{' '.join(notable) or '-'} ({len(flags)} flags in total)"


def format_machine(info: MachineInfo) -> list[str]:
    """Describe a machine in aligned ``Label:  value`` lines.

    Parameters
    ----------
    info : MachineInfo
        The facts to describe.

    Returns
    -------
    list of str
        One line each for CPU, cores, caches, notable flags, Python, platform and
        hostname; caches read like "L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 32 MiB".
    """
    physical = "unknown" if info.physical_cores is None else str(info.physical_cores)
    rows = [
        ("CPU", info.cpu_model),
        ("Cores", f"{info.logical_cores} logical, {physical} physical"),
        ("Caches", _format_caches(info.caches)),
        ("Flags", _format_flags(info.flags)),
        ("Python", f"{info.python_implementation} {info.python_version}"),
        ("Platform", info.platform),
        ("Hostname", info.hostname),
    ]
    # One space after the widest label, not report.table's two: the text `fastbench info`
    # has always printed.
    width = max(len(label) for label, _ in rows) + 1  # +1 for the colon
    return [f"{label + ':':<{width}} {value}" for label, value in rows]


def format_noise_checks(checks: Sequence[NoiseCheck]) -> list[str]:
    """Describe noise checks as aligned ``[status] name  value  -> advice`` lines.

    Parameters
    ----------
    checks : sequence of NoiseCheck
        The checks to describe, in display order.

    Returns
    -------
    list of str
        One line per check, e.g. ``"  [ok]      clocksource          tsc"``; the
        status, name and value columns line up, and advice follows ``->`` only for
        checks that have some.
    """
    if not checks:
        return []
    # The status column is as wide as the widest possible status, so the lines of two
    # runs line up; it is one space from the name (not report.table's two).
    tag_width = max(len(f"[{s}]") for s in STATUSES)
    name_width = max(len(c.name) for c in checks)
    lines = []
    for check in checks:
        line = f"  {'[' + check.status + ']':<{tag_width}} {check.name:<{name_width}}  "
        line += check.value
        if check.advice:
            line += f"  -> {check.advice}"
        lines.append(line)
    return lines
