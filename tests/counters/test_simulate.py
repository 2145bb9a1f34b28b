"""fastbench.counters.simulation: simulated counters of real runs under valgrind, the errors a
caller sees before and during a run, and a result that survives a results file.

Real runs need valgrind and skip without it; each costs a Python start-up under valgrind
(about 2 s), so the workloads are small and a callable's two runs go in parallel.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

import _valgrind_workloads as work  # tests/ is on sys.path: pytest's rootdir-relative import
import fastbench
from fastbench import machine
from fastbench.counters.simulation import (
    CacheGeometry,
    SimulatedCounts,
    SimulationTimeout,
    SimulationUnavailable,
    detect_geometry,
    geometry_problem,
    simulate,
    simulate_statement,
)
from fastbench.counters.simulation.target import script_shebang
from fastbench.errors import FastbenchError

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


@pytest.mark.slow  # a real valgrind run: seconds
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


@pytest.mark.slow  # a real valgrind run: seconds
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


@pytest.mark.slow  # a real valgrind run: seconds
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


@pytest.mark.slow  # a real valgrind run: seconds
@needs_valgrind
def test_streaming_a_large_buffer_misses_the_d1_more() -> None:
    small = simulate(work.stream_bytes, 4 * KIB)
    large = simulate(work.stream_bytes, 64 * MIB)
    lines = 64 * MIB // 64
    assert large["L1-dcache-load-misses"] > lines / 2  # about one miss per line read
    assert large["L1-dcache-load-misses"] > 100 * max(small["L1-dcache-load-misses"], 1.0)
    assert large["LLC-misses"] > small["LLC-misses"]


@pytest.mark.slow  # a real valgrind run: seconds
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
    from fastbench.counters.simulation.target import callable_spec

    # pybind11 gives its functions a binding-internal __qualname__; the module's attribute
    # is what the fresh process imports.
    assert callable_spec(_core.make_spin) == ("fastbench._core", "make_spin", None)
    assert callable_spec(work.sum_range) == ("_valgrind_workloads", "sum_range", None)


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
    with pytest.raises(ValueError, match="layout must be >= 0"):
        simulate(_module_level, layout=-1)
    with pytest.raises(ValueError, match="layout must be >= 0"):
        simulate_statement("pass", layout=-1)
    with pytest.raises(ValueError, match="a command lays out its own heap"):
        simulate(["true"], layout=2)
    with pytest.raises(TypeError, match="layout must be an int"):
        simulate(_module_level, layout=1.5)  # type: ignore[arg-type]


@pytest.mark.slow  # a real valgrind run: seconds
@needs_valgrind
def test_a_missing_program_is_file_not_found() -> None:
    with pytest.raises(FileNotFoundError, match="no-such-program-here"):
        simulate(["no-such-program-here"])


@pytest.mark.slow  # a real valgrind run: seconds
@needs_valgrind
def test_a_failing_command_reports_its_stderr() -> None:
    with pytest.raises(FastbenchError, match=r"exited with status 3(.|\n)*boom on stderr"):
        simulate(["sh", "-c", "echo boom on stderr >&2; exit 3"])


@pytest.mark.slow  # a real valgrind run: seconds
@needs_valgrind
def test_a_failing_callable_reports_its_traceback() -> None:
    with pytest.raises(FastbenchError,
                       match=r"fail \(1 call\) exited with status 1(.|\n)*RuntimeError: "
                             "workload failed on purpose"):
        simulate(work.fail)


@pytest.mark.slow  # a real valgrind run: seconds
@needs_valgrind
def test_a_run_past_its_timeout_is_killed() -> None:
    with pytest.raises(SimulationTimeout, match="timeout_s=0.5"):
        simulate(["sleep", "60"], timeout_s=0.5)


@pytest.mark.slow  # a real valgrind run: seconds
@needs_valgrind
def test_explicit_caches_are_simulated() -> None:
    r = simulate(["true"], caches={"D1": (16 * KIB, 4, 64), "LL": (2 * MIB, 16, 64)})
    assert r.geometry["D1"] == CacheGeometry(16 * KIB, 4, 64)
    assert r.geometry["LL"] == CacheGeometry(2 * MIB, 16, 64)
    assert "--D1=16384,4,64" in r.command


# -- results files ----------------------------------------------------------------------------


@pytest.mark.slow  # a real valgrind run: seconds
@needs_valgrind
def test_save_load_round_trip(python_pass: SimulatedCounts, tmp_path: Path) -> None:
    path = tmp_path / "sim.json"
    fastbench.save(python_pass, path)
    loaded = fastbench.load(path)
    assert isinstance(loaded, SimulatedCounts) and loaded == python_pass
    assert str(loaded).splitlines()[0] == "simulated by valgrind cachegrind (not hardware counts)"
    assert loaded.to_dict()["label"] == python_pass.label


def _shim(directory: Path) -> Path:
    """A ``python`` on PATH that is a shell script exec'ing the real interpreter, as pyenv's
    shims and virtualenv wrappers are."""
    shim = directory / "python"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    shim.chmod(0o755)
    return shim


def test_a_script_program_is_told_apart_from_a_binary(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shim = _shim(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert script_shebang("python") == (str(shim), "#!/bin/sh")  # found on PATH
    assert script_shebang(str(shim)) == (str(shim), "#!/bin/sh")
    assert script_shebang(sys.executable) is None  # an ELF binary
    assert script_shebang("no-such-program-here") is None


@pytest.mark.slow  # a real valgrind run: seconds
@needs_valgrind
def test_a_python_shim_script_is_followed_to_the_interpreter(
        python_pass: SimulatedCounts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shim = _shim(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    r = simulate(["python", "-c", "pass"])
    # The shell's exec is followed: the counts are the interpreter's, those of running it
    # directly (start-up repeats to within a few hundred instructions of 4e7).
    assert r.events["Ir"] == pytest.approx(python_pass.events["Ir"], rel=0.01)
    assert "--trace-children=yes" in r.command
    note = next(n for n in r.notes if "is a script" in n)
    assert str(shim) in note and f"{sys.executable} -c pass" in note
