"""The benchmark scripts' command lines: each one answers ``--help`` with its usage and what it
measures, and refuses an option it does not know, before measuring anything. Most of them run
for minutes, so a script that ignored its arguments would start measuring instead and run
into the timeout here."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
# Far more than a script needs to print its usage (about a second, imports included), far
# less than any of them measures for.
TIMEOUT_S = 60


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False, cwd=BENCHMARKS.parent)


def test_every_script_is_checked() -> None:
    assert len(SCRIPTS) >= 15, [p.name for p in SCRIPTS]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_help_prints_usage_and_what_it_measures(script: Path) -> None:
    done = _run(script, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: {script.name}"), done.stdout[:500]
    doc = ast.get_docstring(ast.parse(script.read_text()))
    assert doc, f"{script.name} has no docstring to describe it"
    first_line = doc.splitlines()[0].strip()
    assert " ".join(first_line.split()) in " ".join(done.stdout.split())


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_an_unknown_option_is_refused(script: Path) -> None:
    done = _run(script, "--no-such-option")
    assert done.returncode == 2, (done.stdout[-1000:], done.stderr[-1000:])
    assert "unrecognized arguments: --no-such-option" in done.stderr


def test_script_arguments_are_checked() -> None:
    done = _run(BENCHMARKS / "sensitivity.py", "0")
    assert done.returncode == 2
    assert "trials" in done.stderr
    done = _run(BENCHMARKS / "stability.py", "--series", "soon")
    assert done.returncode == 2
    assert "--series" in done.stderr
