"""File access for the machine facts: the only place in fastbench.machine that touches the
file system. Every reader takes paths under a ``root`` so tests can fake /proc and /sys,
and answers None (or nothing) for a missing or unreadable file instead of raising.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path("/")
CPU_DIR = "sys/devices/system/cpu"
CACHE_DIR = f"{CPU_DIR}/cpu0/cache"
CLOCKSOURCE_DIR = "sys/devices/system/clocksource/clocksource0"


def read_text(path: Path) -> str | None:
    """Return the stripped text of ``path``, or None if it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        # Missing on non-Linux, EACCES for root-only sysfs files, EINVAL for some
        # write-only attributes: all mean "not known here".
        return None


def path_exists(path: Path) -> bool:
    """Whether ``path`` exists; False when it cannot be told."""
    try:
        return path.exists()
    except OSError:  # PermissionError is not swallowed by Path.exists before 3.12
        return False


def glob(directory: Path, pattern: str) -> list[Path]:
    """The paths matching ``pattern`` under ``directory``; empty when it cannot be listed."""
    try:
        return list(directory.glob(pattern))
    except OSError:
        return []


def trailing_int(path: Path) -> int:
    """Sort key for cpu12 / index3 style names, so cpu10 sorts after cpu9."""
    match = re.search(r"(\d+)$", path.name)
    return int(match.group(1)) if match else -1


def cpuinfo_field(cpuinfo: str | None, key: str) -> str | None:
    """Return the value of the first ``key : value`` line in /proc/cpuinfo text."""
    if cpuinfo is None:
        return None
    for line in cpuinfo.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            return value.strip()
    return None
