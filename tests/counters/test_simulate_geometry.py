"""fastbench.counters.simulation.geometry: the cache geometry cachegrind accepts, the nearest
accepted one to a real cache, and the geometry detected from a fake sysfs tree, which must
be the caches fastbench.machine reads from the same tree. No valgrind needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fastbench import machine
from fastbench.counters.simulation import (
    CacheGeometry,
    adjust_geometry,
    detect_geometry,
    geometry_problem,
)

KIB, MIB = 1024, 1024 * 1024


def test_a_valid_geometry_is_kept() -> None:
    assert adjust_geometry("D1", 32 * KIB, 8, 64) == (CacheGeometry(32 * KIB, 8, 64), [])
    assert adjust_geometry("D1", 48 * KIB, 12, 64) == (CacheGeometry(48 * KIB, 12, 64), [])


def test_associativity_moves_to_keep_the_size() -> None:
    g, notes = adjust_geometry("LL", 36 * MIB, 16, 64)  # 36864 sets
    assert g == CacheGeometry(36 * MIB, 18, 64) and g.sets == 32768
    assert len(notes) == 1
    assert "36864 sets, not a power of two" in notes[0]
    assert "associativity 16-way -> 18-way" in notes[0] and "size" not in notes[0].split(":")[-1]
    g, _ = adjust_geometry("LL", 30 * MIB, 20, 64)  # 24576 sets: 15-way keeps 30 MiB
    assert g == CacheGeometry(30 * MIB, 15, 64)


def test_size_shrinks_when_no_nearby_associativity_fits() -> None:
    g, notes = adjust_geometry("LL", 38 * MIB + 512 * KIB, 11, 64)  # 38.5 MiB: 77 x 8192 lines
    assert g == CacheGeometry(38 * MIB, 19, 64)
    assert "size 39424 KiB -> 38 MiB" in notes[0] and "11-way -> 19-way" in notes[0]


def test_unknown_or_odd_values_are_assumed_and_noted() -> None:
    g, notes = adjust_geometry("LL", 8 * MIB, None, None)
    assert g == CacheGeometry(8 * MIB, 8, 64)
    assert notes == ["LL: line size unknown; assumed 64 B",
                     "LL: associativity unknown (no ways_of_associativity in sysfs); assumed 8-way"]
    g, notes = adjust_geometry("D1", 32 * KIB, 8, 48)
    assert g.line_bytes == 32 and "48 B is not a power of two" in notes[0]
    g, notes = adjust_geometry("D1", 32 * KIB, 8, 16)
    assert g.line_bytes == 32 and "below valgrind's minimum of 32 B" in notes[0]
    with pytest.raises(ValueError, match="fewer than two"):
        adjust_geometry("D1", 64, 1, 64)


@pytest.mark.parametrize("assoc", [1, 2, 3, 5, 7, 8, 11, 12, 15, 16, 20, 24])
def test_every_adjusted_geometry_is_accepted(assoc: int) -> None:
    for size in [24 * KIB, 32 * KIB, 48 * KIB, 80 * KIB, 1280 * KIB, 3 * MIB, 30 * MIB, 105 * MIB]:
        g, _ = adjust_geometry("LL", size, assoc, 64)
        assert geometry_problem(g) is None, (size, assoc, g)
        assert size / 2 < g.size_bytes <= size
        assert assoc / 2 <= g.assoc <= 2 * assoc


def _fake_cache(root: Path, index: int, level: int, kind: str, size: str,
                ways: int | None, shared: str = "0") -> None:
    d = root / "sys/devices/system/cpu/cpu0/cache" / f"index{index}"
    d.mkdir(parents=True)
    files = {"level": str(level), "type": kind, "size": size, "coherency_line_size": "64",
             "shared_cpu_list": shared}
    if ways is not None:
        files["ways_of_associativity"] = str(ways)
    for name, text in files.items():
        (d / name).write_text(text + "\n")


def test_detect_geometry_reads_sysfs_and_notes_what_it_changed(tmp_path: Path) -> None:
    _fake_cache(tmp_path, 0, 1, "Data", "48K", 12)
    _fake_cache(tmp_path, 1, 1, "Instruction", "32K", None)
    _fake_cache(tmp_path, 2, 2, "Unified", "1280K", 10)
    _fake_cache(tmp_path, 3, 3, "Unified", "30720K", 20, shared="0-15")
    geometry, notes = detect_geometry(tmp_path)
    assert geometry == {"I1": CacheGeometry(32 * KIB, 8, 64), "D1": CacheGeometry(48 * KIB, 12, 64),
                        "LL": CacheGeometry(30 * MIB, 15, 64)}
    assert "LL = L3; L2 not simulated (cachegrind models I1, D1 and one last level)" in notes
    assert any(n.startswith("LL = L3, shared by 16 CPUs") for n in notes)
    assert any(n.startswith("I1: associativity unknown") for n in notes)
    assert any(n.startswith("LL: 30 MiB 20-way") and "20-way -> 15-way" in n for n in notes)


def test_detect_geometry_without_sysfs_leaves_valgrind_to_choose(tmp_path: Path) -> None:
    geometry, notes = detect_geometry(tmp_path)
    assert geometry == {}
    assert notes == [f"{n}: not described in sysfs; valgrind's own detection is used"
                     for n in ("I1", "D1", "LL")]


def test_detected_geometry_is_the_caches_machine_reads(tmp_path: Path) -> None:
    # Geometries cachegrind accepts as they are (a power-of-two number of sets): 32 KiB
    # 8-way and 48 KiB 12-way with 64 B lines have 64 sets, 32 MiB 16-way has 32768.
    _fake_cache(tmp_path, 0, 1, "Data", "48K", 12)
    _fake_cache(tmp_path, 1, 1, "Instruction", "32K", 8)
    _fake_cache(tmp_path, 2, 2, "Unified", "1024K", 16)
    _fake_cache(tmp_path, 3, 3, "Unified", "32M", 16, shared="0-7")
    levels = {(c.level, c.kind): c for c in machine.caches(tmp_path)}
    geometry, _ = detect_geometry(tmp_path)
    for name, key in (("D1", (1, "Data")), ("I1", (1, "Instruction")), ("LL", (3, "Unified"))):
        cache = levels[key]
        assert (geometry[name].size_bytes, geometry[name].assoc, geometry[name].line_bytes) == (
            cache.size_bytes, cache.ways, cache.line_bytes), name
    assert geometry["D1"] == CacheGeometry(48 * KIB, 12, 64)
    assert geometry["LL"] == CacheGeometry(32 * MIB, 16, 64)


def test_an_adjusted_geometry_still_starts_from_the_size_machine_reads(tmp_path: Path) -> None:
    _fake_cache(tmp_path, 0, 1, "Data", "32K", 8)
    _fake_cache(tmp_path, 1, 3, "Unified", "36M", 16)  # 36864 sets: not a power of two
    (cache,) = [c for c in machine.caches(tmp_path) if c.level == 3]
    assert (cache.size_bytes, cache.ways) == (36 * MIB, 16)
    geometry, notes = detect_geometry(tmp_path)
    assert geometry["LL"] == adjust_geometry("LL", cache.size_bytes, cache.ways,
                                             cache.line_bytes)[0]
    assert any(n.startswith("LL: 36 MiB 16-way with 64 B lines has 36864 sets") for n in notes)
