"""metric="instructions" through measure, timeit, compare and the command line: processes=N
counts in N heap layouts (``runs=N`` of the counting functions), and a comparison judges a
difference against their spread.

The plumbing tests put hand-made counts in place of the counting (nothing runs under
valgrind); one slow test counts for real, through the command line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import _instruction_workloads as work  # tests/ is on sys.path: pytest's rootdir-relative import
import fastbench
from fastbench.comparison import interleaved as comparison
from fastbench.counters import InstructionCount
from fastbench.timing import callables, statement


def _count(name: str, runs: tuple[float, ...]) -> InstructionCount:
    ordered = sorted(runs)
    return InstructionCount(name=name, per_call=ordered[len(ordered) // 2], runs=runs,
                            source="simulated", calls=100, estimated_cycles=None,
                            events={"Ir": ordered[len(ordered) // 2]}, wall_s=1.0)


# Per variant, the counts of its layouts: "same" is the baseline's, "shifted" 1.5% above it
# with ranges that meet (the heap could explain it), "apart" 1.5% above with none that meet.
LAYOUT_RUNS = {
    "base": (1000.0, 990.0, 1010.0, 1005.0, 995.0),
    "same": (1000.0, 990.0, 1010.0, 1005.0, 995.0),
    "shifted": (1015.0, 1008.0, 1030.0, 1020.0, 1012.0),
    "apart": (1015.0, 1011.0, 1030.0, 1020.0, 1012.0),
}


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every call of the counting functions, with its keyword arguments; each returns the
    runs of LAYOUT_RUNS for its name (the first ``runs`` of them)."""
    calls: list[dict[str, Any]] = []

    def fake(target: object, *args: Any, runs: int = 1, name: str | None = None,
             **kwargs: Any) -> InstructionCount:
        calls.append({"target": target, "args": args, "runs": runs, "name": name, **kwargs})
        key = name if name in LAYOUT_RUNS else "base"
        return _count(name or "w", LAYOUT_RUNS[key][:runs])

    for module, attr in ((callables, "count_instructions"),
                         (statement, "count_statement_instructions"),
                         (comparison, "count_instructions"),
                         (comparison, "count_statement_instructions")):
        monkeypatch.setattr(module, attr, fake)
    return calls


def test_measure_and_timeit_count_in_as_many_layouts_as_processes(
        counted: list[dict[str, Any]]) -> None:
    one = fastbench.measure(work.spin, 100, metric="instructions")
    five = fastbench.measure(work.spin, 100, metric="instructions", processes=5)
    assert [c["runs"] for c in counted] == [1, 5]
    assert counted[1]["target"] is work.spin and counted[1]["args"] == (100,)
    assert len(one.runs) == 1 and len(five.runs) == 5
    fastbench.timeit("x = 1", metric="instructions", processes=3)
    assert counted[-1]["runs"] == 3 and counted[-1]["target"] == "x = 1"
    with pytest.raises(ValueError, match="processes must be >= 1"):
        fastbench.measure(work.spin, 100, metric="instructions", processes=0)


def test_compare_counts_every_variant_in_the_same_layouts_and_judges_their_spread(
        counted: list[dict[str, Any]]) -> None:
    variants = {"base": "x = 1", "same": "x = 1", "shifted": "x = 2", "apart": "x = 3"}
    c = fastbench.compare(variants, baseline="base", metric="instructions", processes=5)
    assert [k["runs"] for k in counted] == [5, 5, 5, 5]
    # The baseline's calls are everyone's.
    assert [k["calls"] for k in counted] == [None, 100, 100, 100]
    assert c.verdicts == {"same": "within tolerance", "shifted": "cannot tell",
                          "apart": "slower"}
    assert c.results["shifted"].rel_diff_pct == pytest.approx(1.5)
    # One layout a side: no spread to judge against, so the tolerance alone decides.
    counted.clear()
    single = fastbench.compare(variants, baseline="base", metric="instructions")
    assert [k["runs"] for k in counted] == [1, 1, 1, 1]
    assert single.verdicts["shifted"] == "slower"
    assert any("one heap layout" in w for w in single.results["shifted"].warnings)
    text = str(c)
    assert "cannot tell" in text and "span" in text


@pytest.mark.slow  # real valgrind runs: about 10 s
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_command_line_counts_a_statement_in_several_layouts() -> None:
    """`fastbench timeit --metric instructions --processes 3` counts for real (no PMU here,
    so under valgrind; with a PMU, in this process): three runs, one per layout."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fastbench", "timeit", "--metric", "instructions",
         "--processes", "3", "-s", "xs = list(range(150, 0, -1))", "sorted(xs)"],
        capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "3 run(s) of" in done.stdout
    assert "3 runs in 3 heap layouts" in done.stdout


def test_saved_counts_are_judged_against_their_layouts_on_the_command_line(
        tmp_path: Path) -> None:
    """`fastbench compare A.json B.json` on saved counts: 1.5% more in the median is "cannot
    tell" while the layouts' ranges meet (exit 0, even with --fail-slower 1), and "slower"
    once they part (exit 3 with --fail-slower 1)."""
    paths = {}
    for name, runs in LAYOUT_RUNS.items():
        paths[name] = str(tmp_path / f"{name}.json")
        fastbench.save(_count(name, runs), paths[name])
    env = dict(os.environ, PYTHONIOENCODING="utf-8")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "fastbench", "compare", *args],
                              capture_output=True, text=True, timeout=120, env=env,
                              check=False)

    met = cli(paths["base"], paths["shifted"], "--fail-slower", "1")
    assert met.returncode == 0, met.stderr
    row = next(line for line in met.stdout.splitlines() if line.strip().startswith("shifted"))
    assert "+1.500%" in row and "cannot tell" in row and "1,008.0-1,030.0 (5)" in row
    parted = cli(paths["base"], paths["apart"], "--fail-slower", "1")
    assert parted.returncode == 3
    assert "slower" in parted.stdout and "apart.json" in parted.stderr
