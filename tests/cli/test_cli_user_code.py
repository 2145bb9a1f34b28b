"""The command line finds the user's modules in the current directory, as `python -m timeit`
does, in this process and in worker processes; and `--max-calls` and the notice of a long
instruction count. Runs the installed console script (`fastbench`), whose sys.path[0] is its
own bin directory, in a temporary directory holding a module.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("fastbench")
pytestmark = pytest.mark.skipif(not SCRIPT.exists(),
                                reason="the console script lives outside this interpreter's "
                                "bin directory")

WORK = """\
import time


def f():
    return sum(range(100))


def g():
    return sum(range(1000))


def slow():
    time.sleep(0.2)
"""
QUICK = ("--duration", "0", "-r", "5", "--min-time", "1e-4")


def fastbench(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing else finds it
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**env, "PYTHONIOENCODING": "utf-8"},
                          check=False)


@pytest.fixture
def here(tmp_path: Path) -> Path:
    (tmp_path / "work.py").write_text(WORK)
    return tmp_path


def test_timeit_imports_a_module_of_the_current_directory(here: Path) -> None:
    r = fastbench(here, "timeit", "-s", "from work import f", "f()", *QUICK)
    assert r.returncode == 0, r.stderr
    assert "ModuleNotFoundError" not in r.stderr and "within this run" in r.stdout


@pytest.mark.slow  # two worker processes
def test_worker_processes_import_it_too(here: Path) -> None:
    r = fastbench(here, "timeit", "-s", "from work import f", "f()", "--processes", "2",
                  *QUICK)
    assert r.returncode == 0, r.stderr
    assert "over 2 processes" in r.stdout, r.stdout


def test_compare_runs_statements_that_import_it(here: Path) -> None:
    r = fastbench(here, "compare", "--run", "f()", "g()", "-s", "from work import f, g",
                  "--rounds", "6", "--min-time", "1e-4")
    assert r.returncode == 0, r.stderr
    assert "[1] g()" in r.stdout


def test_elsewhere_the_module_is_not_found(here: Path, tmp_path_factory: pytest.TempPathFactory
                                           ) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    r = fastbench(elsewhere, "timeit", "-s", "from work import f", "f()", *QUICK)
    assert r.returncode == 1
    assert "error: ModuleNotFoundError: No module named 'work'" in r.stderr


def test_max_calls_needs_the_instruction_metric(here: Path) -> None:
    r = fastbench(here, "timeit", "--max-calls", "3", "f()")
    assert r.returncode == 1
    assert "--max-calls bounds an instruction count: add --metric instructions" in r.stderr


@pytest.mark.slow  # one count under valgrind: about 5 s
def test_a_long_count_states_its_cost_and_max_calls_bounds_it(here: Path) -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (apt install valgrind)")
    # slow() sleeps 0.2 s: expected cost = start-up + 1 call x 0.2 s x the slowdown, over
    # 10 s, so it is said first; the sleep itself is not slowed, so it takes a few seconds.
    r = fastbench(here, "timeit", "--metric", "instructions", "--max-calls", "1",
                  "-s", "from work import slow", "slow()", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "note: counting slow() under valgrind: expect about " in r.stderr
    assert re.search(r"1 calls x \d[\d.]* m?s x ", r.stderr)  # 200 ms or more, timed here
    assert "instructions" in r.stdout
