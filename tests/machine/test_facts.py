"""Tests for fastbench.machine's facts: parsers on synthetic inputs with known answers,
readers against fake /proc and /sys trees under tmp_path, and structure-only smoke tests
on the real machine (which skip where Linux files are absent).
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from _machine_helpers import CPUINFO_ARM, KIB, MIB, fake_cache, write
from fastbench import machine
from fastbench.machine import CacheLevel
from fastbench.report.machine import format_machine


# ---------------------------------------------------------------------------------------
# Parsers
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("32K", 32 * KIB),
        ("1024K", 1024 * KIB),
        ("32M", 32 * MIB),
        ("8192", 8192),
        ("32768K\n", 32 * MIB),
        ("1G", 1024 * MIB),
        ("48KiB", 48 * KIB),
        ("0", 0),
    ],
)
def test_parse_size_bytes(text: str, expected: int) -> None:
    assert machine.parse_size_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "K", "32X", "-1K", "3.5M", "32 K M"])
def test_parse_size_bytes_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="parse_size_bytes"):
        machine.parse_size_bytes(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", {0}),
        ("0-1", {0, 1}),
        ("0-3,8-11", {0, 1, 2, 3, 8, 9, 10, 11}),
        ("2,5\n", {2, 5}),
        ("", set()),
        ("\n", set()),
    ],
)
def test_parse_cpu_list(text: str, expected: set[int]) -> None:
    assert machine.parse_cpu_list(text) == frozenset(expected)


@pytest.mark.parametrize("text", ["a", "3-1", "1-", "0-3;5", "-2"])
def test_parse_cpu_list_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="parse_cpu_list"):
        machine.parse_cpu_list(text)


# ---------------------------------------------------------------------------------------
# Readers on fake trees
# ---------------------------------------------------------------------------------------


def test_cpu_model_from_cpuinfo(vm_root: Path) -> None:
    assert machine.cpu_model(vm_root) == "Test CPU 9000"


def test_cpu_model_falls_back_to_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert machine.cpu_model(tmp_path) == "riscv64"
    monkeypatch.setattr(platform, "machine", lambda: "")
    assert machine.cpu_model(tmp_path) == "unknown"


def test_cpu_flags_x86(vm_root: Path) -> None:
    flags = machine.cpu_flags(vm_root)
    expected = {"fpu", "sse4_2", "avx", "avx2", "fma", "hypervisor", "constant_tsc"}
    assert flags == frozenset(expected)


def test_cpu_flags_arm_features(tmp_path: Path) -> None:
    write(tmp_path, "proc/cpuinfo", CPUINFO_ARM)
    assert machine.cpu_flags(tmp_path) == frozenset({"fp", "asimd", "evtstrm", "aes", "crc32"})


def test_cpu_flags_missing_is_empty(tmp_path: Path) -> None:
    assert machine.cpu_flags(tmp_path) == frozenset()


def test_caches_from_fake_sysfs(vm_root: Path) -> None:
    assert machine.caches(vm_root) == [
        CacheLevel(1, "Data", 32 * KIB, 64, 1),
        CacheLevel(1, "Instruction", 32 * KIB, 64, 1),
        CacheLevel(2, "Unified", 512 * KIB, 64, 1),
        CacheLevel(3, "Unified", 32 * MIB, 64, 2),
    ]


def test_caches_sorted_by_level_and_skip_broken_entries(tmp_path: Path) -> None:
    # index10 must not sort before index2 as a string would; index4 is malformed and
    # index5 lacks its size file, so both are skipped rather than raising.
    fake_cache(tmp_path, 10, "3", "Unified", "16M", "0-3,8-11")
    fake_cache(tmp_path, 2, "2", "Unified", "1M", "0")
    fake_cache(tmp_path, 0, "1", "Data", "48K", "0")
    fake_cache(tmp_path, 4, "x", "Unified", "1M", "0")
    write(tmp_path, "sys/devices/system/cpu/cpu0/cache/index5/level", "2\n")
    write(tmp_path, "sys/devices/system/cpu/cpu0/cache/index5/type", "Unified\n")
    assert machine.caches(tmp_path) == [
        CacheLevel(1, "Data", 48 * KIB, 64, 1),
        CacheLevel(2, "Unified", MIB, 64, 1),
        CacheLevel(3, "Unified", 16 * MIB, 64, 8),
    ]


def test_caches_optional_files_missing(tmp_path: Path) -> None:
    base = "sys/devices/system/cpu/cpu0/cache/index0"
    write(tmp_path, f"{base}/level", "1")
    write(tmp_path, f"{base}/type", "Data")
    write(tmp_path, f"{base}/size", "64K")
    assert machine.caches(tmp_path) == [CacheLevel(1, "Data", 64 * KIB, None, None)]


def test_caches_missing_dir_is_empty(tmp_path: Path) -> None:
    assert machine.caches(tmp_path) == []


def test_machine_info_from_fake_tree(vm_root: Path) -> None:
    info = machine.machine_info(vm_root)
    assert info.cpu_model == "Test CPU 9000"
    assert [c.size_bytes for c in info.caches] == [32 * KIB, 32 * KIB, 512 * KIB, 32 * MIB]
    assert "hypervisor" in info.flags
    data = info.to_dict()
    assert data["flags"] == sorted(info.flags)
    assert data["caches"][3] == {
        "level": 3,
        "kind": "Unified",
        "size_bytes": 32 * MIB,
        "line_bytes": 64,
        "shared_by_cpus": 2,
    }
    assert json.loads(json.dumps(data)) == data


def test_machine_info_empty_tree_degrades(tmp_path: Path) -> None:
    info = machine.machine_info(tmp_path)
    assert info.caches == ()
    assert info.flags == frozenset()
    assert isinstance(info.cpu_model, str) and info.cpu_model



# ---------------------------------------------------------------------------------------
# Smoke tests on the real machine: structure and types only
# ---------------------------------------------------------------------------------------


def test_real_core_counts() -> None:
    logical, physical = machine.core_counts()
    assert isinstance(logical, int) and logical >= 1
    assert physical is None or (isinstance(physical, int) and 1 <= physical <= logical)


def test_real_cpu_model_and_flags() -> None:
    model = machine.cpu_model()
    assert isinstance(model, str) and model
    flags = machine.cpu_flags()
    assert isinstance(flags, frozenset)
    assert all(isinstance(f, str) and f for f in flags)


@pytest.mark.skipif(
    not Path("/sys/devices/system/cpu/cpu0/cache").is_dir(),
    reason="kernel exposes no cacheinfo (/sys/devices/system/cpu/cpu0/cache absent)",
)
def test_real_caches() -> None:
    levels = machine.caches()
    assert levels, "cacheinfo directory exists but no cache level was parsed"
    assert all(isinstance(c, CacheLevel) and c.size_bytes > 0 and c.level >= 1 for c in levels)
    assert levels == sorted(levels, key=lambda c: (c.level, c.kind))


def test_real_machine_info_is_json_ready() -> None:
    info = machine.machine_info()
    data = info.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["logical_cores"] >= 1
    lines = format_machine(info)
    assert lines and all(isinstance(line, str) for line in lines)


# ---------------------------------------------------------------------------------------
# Associativity: read for the cache simulation, kept out of the recorded metadata
# ---------------------------------------------------------------------------------------


def test_caches_read_the_associativity(tmp_path: Path) -> None:
    fake_cache(tmp_path, 0, "1", "Data", "48K", "0", ways="12")
    fake_cache(tmp_path, 1, "1", "Instruction", "32K", "0", ways="0")  # 0: not known
    fake_cache(tmp_path, 2, "2", "Unified", "2M", "0", ways="sixteen")  # malformed
    fake_cache(tmp_path, 3, "3", "Unified", "32M", "0-7")  # no file at all
    assert machine.caches(tmp_path) == [
        CacheLevel(1, "Data", 48 * KIB, 64, 1, ways=12),
        CacheLevel(1, "Instruction", 32 * KIB, 64, 1, ways=None),
        CacheLevel(2, "Unified", 2 * MIB, 64, 1, ways=None),  # kept, without its ways
        CacheLevel(3, "Unified", 32 * MIB, 64, 8, ways=None),
    ]


def test_recorded_cache_keys_do_not_include_the_associativity(tmp_path: Path) -> None:
    fake_cache(tmp_path, 0, "1", "Data", "32K", "0", ways="8")
    data = machine.machine_info(tmp_path).to_dict()
    assert data["caches"] == [{"level": 1, "kind": "Data", "size_bytes": 32 * KIB,
                               "line_bytes": 64, "shared_by_cpus": 1}]
