"""Static facts about the machine: CPU model, core counts, caches with their geometry, and
feature flags, plus the parsers for the kernel's size and CPU-list formats.

Linux first: everything comes from /proc and /sys (through :mod:`.sysfs`, under ``root``
so tests can fake the tree). Elsewhere every reader degrades to None / "unknown" / empty
instead of raising. Nothing here measures, prints or imports the rest of fastbench.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from .sysfs import CACHE_DIR, ROOT, cpuinfo_field, glob, read_text, trailing_int

__all__ = [
    "CacheLevel",
    "MachineInfo",
    "caches",
    "core_counts",
    "cpu_flags",
    "cpu_model",
    "machine_info",
    "parse_cpu_list",
    "parse_size_bytes",
]


@dataclass(frozen=True)
class CacheLevel:
    """One cache seen by CPU 0, as the kernel's cacheinfo describes it.

    Attributes
    ----------
    level : int
        1 for L1, 2 for L2, ...
    kind : str
        "Data", "Instruction" or "Unified" (the kernel's ``type`` file, verbatim).
    size_bytes : int
        Capacity in bytes.
    line_bytes : int or None
        Coherency line size in bytes, None when the kernel does not say.
    shared_by_cpus : int or None
        Number of logical CPUs sharing this cache, None when unknown.
    ways : int or None
        Associativity (``ways_of_associativity``), None when the kernel does not say or
        writes 0 (which it does for caches it cannot describe).
    """

    level: int
    kind: str
    size_bytes: int
    line_bytes: int | None
    shared_by_cpus: int | None
    ways: int | None = None


@dataclass(frozen=True)
class MachineInfo:
    """Static facts about the machine a benchmark ran on.

    Attributes
    ----------
    cpu_model : str
        Marketing name of the CPU, or "unknown".
    logical_cores : int
        Logical CPUs (hardware threads) the OS reports.
    physical_cores : int or None
        Physical cores, None when the OS does not say (common in VMs).
    caches : tuple of CacheLevel
        Caches seen by CPU 0, sorted by level then kind; empty when unknown.
    flags : frozenset of str
        CPU feature flags ("avx2", "hypervisor", ...); empty when unknown.
    python_implementation : str
        E.g. "CPython".
    python_version : str
        E.g. "3.11.7".
    platform : str
        ``platform.platform()``.
    hostname : str
        Network name of the machine, or "unknown".
    """

    cpu_model: str
    logical_cores: int
    physical_cores: int | None
    caches: tuple[CacheLevel, ...]
    flags: frozenset[str]
    python_implementation: str
    python_version: str
    platform: str
    hostname: str

    def to_dict(self) -> dict[str, Any]:
        """Return the facts as JSON-ready plain data (flags as a sorted list).

        Returns
        -------
        dict
            Keys are the attribute names; caches become a list of dicts with ``level``,
            ``kind``, ``size_bytes``, ``line_bytes`` and ``shared_by_cpus``.
        """
        # The cache keys are those of every results file written so far; the associativity
        # is for the cache simulation and stays out of the recorded metadata.
        return {
            "cpu_model": self.cpu_model,
            "logical_cores": self.logical_cores,
            "physical_cores": self.physical_cores,
            "caches": [
                {"level": c.level, "kind": c.kind, "size_bytes": c.size_bytes,
                 "line_bytes": c.line_bytes, "shared_by_cpus": c.shared_by_cpus}
                for c in self.caches
            ],
            "flags": sorted(self.flags),
            "python_implementation": self.python_implementation,
            "python_version": self.python_version,
            "platform": self.platform,
            "hostname": self.hostname,
        }


# --------------------------------------------------------------------------------------
# Parsers for kernel text formats
# --------------------------------------------------------------------------------------

_SIZE_SUFFIX_BYTES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size_bytes(text: str) -> int:
    """Parse a cacheinfo size such as "32K", "1024K", "32M" or "8192".

    The kernel writes sizes in binary units with a one-letter suffix
    (Documentation/ABI/testing/sysfs-devices-system-cpu); a bare number is bytes.

    Parameters
    ----------
    text : str
        The size string; surrounding whitespace and a trailing "B"/"iB" are allowed.

    Returns
    -------
    int
        The size in bytes.

    Raises
    ------
    ValueError
        If ``text`` is not a non-negative integer with an optional K/M/G suffix.
    """
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if match is None:
        raise ValueError(
            f"[parse_size_bytes] {text!r} is not a size like '32K', '32M' or '8192'"
        )
    return int(match.group(1)) * _SIZE_SUFFIX_BYTES[match.group(2).upper()]


def parse_cpu_list(text: str) -> frozenset[int]:
    """Parse a kernel CPU list such as "0", "0-1" or "0-3,8-11".

    This is the format of ``shared_cpu_list``, ``isolated`` and ``online`` in sysfs
    (Documentation/admin-guide/cputopology.rst). An empty string is an empty set.

    Parameters
    ----------
    text : str
        Comma-separated CPU numbers and inclusive ``first-last`` ranges.

    Returns
    -------
    frozenset of int
        The CPU numbers.

    Raises
    ------
    ValueError
        If an item is not a number or a range with first <= last.
    """
    cpus: set[int] = set()
    for item in text.strip().split(","):
        item = item.strip()
        if not item:
            continue
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if match is None:
            raise ValueError(f"[parse_cpu_list] {item!r} in {text!r} is not 'N' or 'N-M'")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ValueError(f"[parse_cpu_list] range {item!r} in {text!r} runs backwards")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


# --------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------


def cpu_model(root: Path = ROOT) -> str:
    """Return the CPU's model name.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /proc from (tests pass a fake tree).

    Returns
    -------
    str
        "model name" from /proc/cpuinfo, else ``platform.processor()``, else
        ``platform.machine()``, else "unknown".
    """
    model = cpuinfo_field(read_text(root / "proc/cpuinfo"), "model name")
    return model or platform.processor() or platform.machine() or "unknown"


def core_counts() -> tuple[int, int | None]:
    """Return the number of logical CPUs and of physical cores.

    Returns
    -------
    tuple of (int, int or None)
        Logical CPUs (at least 1) and physical cores (None when the OS does not say).
    """
    logical: int | None = psutil.cpu_count(logical=True)
    physical: int | None = psutil.cpu_count(logical=False)
    return (logical or os.cpu_count() or 1), physical


def _positive_int(text: str | None) -> int | None:
    """``text`` as an int when it is one above 0, else None (optional cacheinfo files)."""
    try:
        value = int(text) if text else 0
    except ValueError:
        return None
    return value if value > 0 else None


def _cache_level(index_dir: Path) -> CacheLevel | None:
    level, kind, size = (read_text(index_dir / name) for name in ("level", "type", "size"))
    if level is None or kind is None or size is None:
        return None
    try:
        line_text = read_text(index_dir / "coherency_line_size")
        shared_text = read_text(index_dir / "shared_cpu_list")
        return CacheLevel(
            level=int(level),
            kind=kind,
            size_bytes=parse_size_bytes(size),
            line_bytes=int(line_text) if line_text else None,
            shared_by_cpus=len(parse_cpu_list(shared_text)) if shared_text else None,
            # Unknown rather than fatal: the cache is still there without its ways.
            ways=_positive_int(read_text(index_dir / "ways_of_associativity")),
        )
    except ValueError:
        return None


def caches(root: Path = ROOT) -> list[CacheLevel]:
    """Return the caches CPU 0 sees, from /sys/devices/system/cpu/cpu0/cache/index*/.

    The one reader of cacheinfo in fastbench: size, line size, sharing and associativity.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /sys from (tests pass a fake tree).

    Returns
    -------
    list of CacheLevel
        Sorted by level, then kind ("Data" before "Instruction"); empty when the kernel
        does not expose cacheinfo (non-Linux, some ARM boards and VMs). Entries whose
        level, type or size is missing or malformed are skipped.
    """
    found = (_cache_level(d) for d in sorted(glob(root / CACHE_DIR, "index*"), key=trailing_int))
    return sorted((c for c in found if c is not None), key=lambda c: (c.level, c.kind))


def _flags_from_cpuinfo(cpuinfo: str | None) -> frozenset[str]:
    # x86 calls the line "flags", arm64 calls it "Features".
    text = cpuinfo_field(cpuinfo, "flags") or cpuinfo_field(cpuinfo, "Features") or ""
    return frozenset(text.split())


def cpu_flags(root: Path = ROOT) -> frozenset[str]:
    """Return the CPU feature flags from /proc/cpuinfo.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /proc from (tests pass a fake tree).

    Returns
    -------
    frozenset of str
        x86 "flags" (or arm64 "Features") of the first CPU; empty when unknown.
    """
    return _flags_from_cpuinfo(read_text(root / "proc/cpuinfo"))


def _hostname() -> str:
    return platform.node() or "unknown"


def machine_info(root: Path = ROOT) -> MachineInfo:
    """Collect the static facts about this machine.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /proc and /sys from (tests pass a fake tree).

    Returns
    -------
    MachineInfo
        Never raises for a missing or unreadable file; such facts are "unknown",
        None or empty.
    """
    logical, physical = core_counts()
    return MachineInfo(
        cpu_model=cpu_model(root),
        logical_cores=logical,
        physical_cores=physical,
        caches=tuple(caches(root)),
        flags=cpu_flags(root),
        python_implementation=platform.python_implementation(),
        python_version=platform.python_version(),
        platform=platform.platform(),
        hostname=_hostname(),
    )
