"""The fake tree of a KVM guest in Docker, shared by the tests of the facts and the noise
checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from _machine_helpers import CPUINFO_X86, fake_cache, write


@pytest.fixture
def vm_root(tmp_path: Path) -> Path:
    """A fake tree shaped like a KVM guest in Docker: tsc, no cpufreq, paranoid 2."""
    write(tmp_path, "proc/cpuinfo", CPUINFO_X86)
    fake_cache(tmp_path, 0, "1", "Data", "32K", "0")
    fake_cache(tmp_path, 1, "1", "Instruction", "32K", "0")
    fake_cache(tmp_path, 2, "2", "Unified", "512K", "0")
    fake_cache(tmp_path, 3, "3", "Unified", "32768K", "0-1")
    clock = "sys/devices/system/clocksource/clocksource0"
    write(tmp_path, f"{clock}/current_clocksource", "tsc\n")
    write(tmp_path, f"{clock}/available_clocksource", "tsc kvm-clock \n")
    write(tmp_path, "proc/1/cgroup", "0::/\n")
    write(tmp_path, ".dockerenv", "")
    write(tmp_path, "proc/sys/kernel/perf_event_paranoid", "2\n")
    write(tmp_path, "proc/sys/kernel/randomize_va_space", "2\n")
    write(tmp_path, "sys/devices/system/cpu/isolated", "\n")
    return tmp_path
