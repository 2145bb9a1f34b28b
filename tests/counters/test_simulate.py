"""fastbench._valgrind: simulated counters under valgrind, the cache geometry cachegrind
accepts, output parsing, errors, and results files.

Real runs need valgrind and skip without it; each costs a Python start-up under valgrind
(about 2 s), so the workloads are small and a callable's two runs go in parallel.
"""

from __future__ import annotations

import functools
import shutil
import sys
import threading
from pathlib import Path

import pytest

import _valgrind_workloads as work  # tests/ is on sys.path: pytest's rootdir-relative import
import fastbench
from fastbench import machine
from fastbench.counters.simulate import (
    CacheGeometry,
    SimulatedCounts,
    SimulationTimeout,
    SimulationUnavailable,
    adjust_geometry,
    detect_geometry,
    geometry_problem,
    parse_output,
    simulate,
)
from fastbench.errors import FastbenchError
from fastbench.results import ResultsFileError

NO_VALGRIND = "valgrind is not installed (apt install valgrind); simulated counters need it"
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason=NO_VALGRIND)

KIB, MIB = 1024, 1024 * 1024


@pytest.fixture(scope="module")
def python_pass() -> SimulatedCounts:
    """`python -c pass` under cachegrind, shared by the tests that only read a result."""
    if shutil.which("valgrind") is None:
        pytest.skip(NO_VALGRIND)
    return simulate([sys.executable, "-c", "pass"])


# -- real runs ------------------------------------------------------------------------------


@needs_valgrind
def test_instructions_grow_with_the_work_per_call() -> None:
    small = simulate(work.sum_range, 1000, calls=10)
    large = simulate(work.sum_range, 100_000)
    assert small.per_call and small.calls == 10 and large.calls == 1
    assert 0 < small["instructions"] < large["instructions"]
    # 100x the iterations; the call itself and the first call's one-off costs blur it a little.
    assert 50 < large["instructions"] / small["instructions"] < 150
    # Start-up cancels: each run alone costs tens of millions of instructions.
    assert small.baseline["Ir"] > 10 * small["instructions"]
    assert small.target == "_valgrind_workloads:sum_range"


@needs_valgrind
def test_a_command_counts_its_whole_process(python_pass: SimulatedCounts) -> None:
    r = python_pass
    assert r.simulated and not r.per_call and r.tool == "cachegrind"
    assert r["instructions"] > 1e6 and r.events["Ir"] == r.totals["Ir"]
    assert set(r.events) == {"Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw",
                             "Bc", "Bcm", "Bi", "Bim"}
    assert r["branches"] == r.events["Bc"] + r.events["Bi"]
    assert r["LLC-misses"] == r.events["DLmr"] + r.events["DLmw"]
    assert r["cache-misses"] == r["LLC-misses"] + r.events["ILmr"]
    assert set(r.derived) == {"l1i_miss_pct", "l1d_miss_pct", "ll_miss_pct", "branch_miss_pct"}
    assert all(0.0 <= v <= 100.0 for v in r.derived.values())
    assert r.valgrind_version[0].isdigit() and r.command[1] == "--tool=cachegrind"


@needs_valgrind
def test_the_simulated_caches_are_the_detected_ones(python_pass: SimulatedCounts) -> None:
    expected, notes = detect_geometry()
    assert python_pass.geometry == expected  # as cachegrind reported it in its output
    assert set(notes) <= set(python_pass.notes)
    levels = machine.caches()
    found = {"D1": [c for c in levels if c.level == 1 and c.kind == "Data"],
             "I1": [c for c in levels if c.level == 1 and c.kind == "Instruction"],
             "LL": sorted((c for c in levels if c.level > 1), key=lambda c: c.level)[-1:]}
    for name, caches in found.items():
        if not caches:
            continue
        g = python_pass.geometry[name]
        if any(n.startswith(f"{name}:") for n in python_pass.notes):
            assert geometry_problem(g) is None  # adjusted, and the note says how
        else:
            assert (g.size_bytes, g.line_bytes) == (caches[0].size_bytes, caches[0].line_bytes)


@needs_valgrind
def test_streaming_a_large_buffer_misses_the_d1_more() -> None:
    small = simulate(work.stream_bytes, 4 * KIB)
    large = simulate(work.stream_bytes, 64 * MIB)
    lines = 64 * MIB // 64
    assert large["L1-dcache-load-misses"] > lines / 2  # about one miss per line read
    assert large["L1-dcache-load-misses"] > 100 * max(small["L1-dcache-load-misses"], 1.0)
    assert large["LLC-misses"] > small["LLC-misses"]


@needs_valgrind
def test_callgrind_counts_instructions_only() -> None:
    r = simulate(["true"], tool="callgrind")
    assert r.tool == "callgrind" and r.geometry == {}
    assert set(r.events) == {"Ir"} and r.derived == {}
    assert r.counts == {"instructions": r.events["Ir"]}
    assert r["instructions"] > 1e4
    assert "--collect-systime=no" in r.command
    assert str(r).startswith("simulated by valgrind callgrind (not hardware counts)")


# -- errors ---------------------------------------------------------------------------------


def test_missing_valgrind_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no valgrind on PATH
    with pytest.raises(SimulationUnavailable) as info:
        simulate([sys.executable, "-c", "pass"])
    assert str(info.value) == ("valgrind is not installed; install it (e.g. apt install "
                               "valgrind) to use simulated counters")
    assert isinstance(info.value, FastbenchError)


def _module_level() -> None:
    pass


def test_callables_without_an_importable_name_are_refused() -> None:
    def local() -> None:
        pass

    with pytest.raises(TypeError, match=r"lambda.*module-level function.*or a command"):
        simulate(lambda: None)
    with pytest.raises(TypeError, match="defined inside a function"):
        simulate(local)
    with pytest.raises(TypeError, match=r"bound to an object.*simulate\(Class.method, obj\)"):
        simulate(work.Counter(1).add, 2)
    with pytest.raises(TypeError, match="functools.partial"):
        simulate(functools.partial(work.sum_range, 10))
    with pytest.raises(TypeError, match="picklable"):
        simulate(work.sum_range, threading.Lock())
    with pytest.raises(TypeError, match="command"):
        simulate(42)  # type: ignore[arg-type]


def test_extension_functions_are_named_by_module_and_name() -> None:
    from fastbench import _core
    from fastbench.counters.simulate import _callable_spec

    # pybind11 gives its functions a binding-internal __qualname__; the module's attribute
    # is what the fresh process imports.
    assert _callable_spec(_core.make_spin) == ("fastbench._core", "make_spin", None)
    assert _callable_spec(work.sum_range) == ("_valgrind_workloads", "sum_range", None)


def test_bad_arguments_are_refused_before_running() -> None:
    with pytest.raises(ValueError, match="tool must be one of 'cachegrind', 'callgrind'"):
        simulate(["true"], tool="memcheck")
    with pytest.raises(ValueError, match="calls must be >= 1"):
        simulate(_module_level, calls=0)
    with pytest.raises(ValueError, match="timeout_s"):
        simulate(["true"], timeout_s=0)
    with pytest.raises(TypeError, match="put a command's arguments in the command list"):
        simulate(["echo"], "hello")
    with pytest.raises(ValueError, match="empty"):
        simulate("")
    with pytest.raises(ValueError, match=r"36864 sets is not a power of two.*\(37748736, 18, 64\)"):
        simulate(["true"], caches={"LL": (36 * MIB, 16, 64)})
    with pytest.raises(ValueError, match="unknown cache 'L2'"):
        simulate(["true"], caches={"L2": (MIB, 8, 64)})
    with pytest.raises(ValueError, match="cachegrind only"):
        simulate(["true"], tool="callgrind", caches={"D1": (32 * KIB, 8, 64)})


@needs_valgrind
def test_a_missing_program_is_file_not_found() -> None:
    with pytest.raises(FileNotFoundError, match="no-such-program-here"):
        simulate(["no-such-program-here"])


@needs_valgrind
def test_a_failing_command_reports_its_stderr() -> None:
    with pytest.raises(FastbenchError, match=r"exited with status 3(.|\n)*boom on stderr"):
        simulate(["sh", "-c", "echo boom on stderr >&2; exit 3"])


@needs_valgrind
def test_a_failing_callable_reports_its_traceback() -> None:
    with pytest.raises(FastbenchError,
                       match=r"fail \(1 call\) exited with status 1(.|\n)*RuntimeError: "
                             "workload failed on purpose"):
        simulate(work.fail)


@needs_valgrind
def test_a_run_past_its_timeout_is_killed() -> None:
    with pytest.raises(SimulationTimeout, match="timeout_s=0.5"):
        simulate(["sleep", "60"], timeout_s=0.5)


@needs_valgrind
def test_explicit_caches_are_simulated() -> None:
    r = simulate(["true"], caches={"D1": (16 * KIB, 4, 64), "LL": (2 * MIB, 16, 64)})
    assert r.geometry["D1"] == CacheGeometry(16 * KIB, 4, 64)
    assert r.geometry["LL"] == CacheGeometry(2 * MIB, 16, 64)
    assert "--D1=16384,4,64" in r.command


# -- cache geometry (no valgrind) -------------------------------------------------------------


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


# -- output parsing (no valgrind) -------------------------------------------------------------

CACHEGRIND_OUT = """\
desc: I1 cache:         32768 B, 64 B, 8-way associative
desc: D1 cache:         32768 B, 64 B, direct-mapped
desc: LL cache:         33554432 B, 64 B, 16-way associative
cmd: python -c pass
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim
fl=x.c
fn=main
1 2 3 4 5 6 7 8 9 10 11 12 13 14
summary: 100 2 1 40 5 1 20 3 1 30 4 10 2
"""


def test_parse_cachegrind_output() -> None:
    totals, geometry = parse_output(CACHEGRIND_OUT)
    assert totals["Ir"] == 100 and totals["Bim"] == 2 and len(totals) == 13
    assert geometry == {"I1": CacheGeometry(32768, 8, 64), "D1": CacheGeometry(32768, 1, 64),
                        "LL": CacheGeometry(33554432, 16, 64)}
    r = SimulatedCounts("cachegrind", "cmd", {k: float(v) for k, v in totals.items()},
                        per_call=False, calls=1, totals=totals)
    assert r.derived["l1d_miss_pct"] == pytest.approx(100 * 8 / 60)
    assert r.derived["ll_miss_pct"] == pytest.approx(100 * 3 / 160)
    assert r.derived["branch_miss_pct"] == pytest.approx(100 * 6 / 40)
    assert r["cache-references"] == 2 + 5 + 3
    with pytest.raises(KeyError, match="was not simulated"):
        r["cycles"]


def test_parse_callgrind_output_and_omitted_trailing_zeros() -> None:
    totals, geometry = parse_output("version: 1\nevents: Ir Dr\ntotals: 12345\n")
    assert totals == {"Ir": 12345, "Dr": 0} and geometry == {}
    with pytest.raises(ValueError, match="summary"):
        parse_output("events: Ir\n")


# -- results files ----------------------------------------------------------------------------


@needs_valgrind
def test_save_load_round_trip(python_pass: SimulatedCounts, tmp_path: Path) -> None:
    path = tmp_path / "sim.json"
    fastbench.save(python_pass, path)
    loaded = fastbench.load(path)
    assert isinstance(loaded, SimulatedCounts) and loaded == python_pass
    assert str(loaded).splitlines()[0] == "simulated by valgrind cachegrind (not hardware counts)"
    assert loaded.to_dict()["label"] == python_pass.label


def test_round_trip_of_a_per_call_result(tmp_path: Path) -> None:
    r = SimulatedCounts("cachegrind", "m:f", {"Ir": 1.5, "D1mr": -0.25}, per_call=True,
                        calls=4, totals={"Ir": 106, "D1mr": 9}, baseline={"Ir": 100, "D1mr": 10},
                        geometry={"D1": CacheGeometry(32 * KIB, 8, 64)}, notes=("n",),
                        valgrind_version="3.19.0", command=("valgrind", "x"))
    assert SimulatedCounts.from_dict(r.to_dict()) == r
    fastbench.save(r, tmp_path / "r.json")
    assert fastbench.load(tmp_path / "r.json") == r
    assert "per call" in str(r) and "D1 32 KiB 8-way 64 B lines" in str(r)


def test_malformed_data_is_a_results_file_error(tmp_path: Path) -> None:
    r = SimulatedCounts("callgrind", "true", {"Ir": 5.0}, per_call=False, calls=1,
                        totals={"Ir": 5})
    path = tmp_path / "r.json"
    fastbench.save(r, path)
    text = path.read_text().replace('"tool": "callgrind"', '"tool": "memcheck"')
    path.write_text(text)
    with pytest.raises(ResultsFileError, match="simulated_counts.*memcheck"):
        fastbench.load(path)
    with pytest.raises(ValueError, match="lacks 'events'"):
        SimulatedCounts.from_dict({"tool": "callgrind", "target": "x"})
