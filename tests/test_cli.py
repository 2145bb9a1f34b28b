"""The command line, run as a user would: `python -m fastbench` in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fastbench

STAT_LINE = re.compile(
    r"^\d[\d.]* (ns|µs|ms|s) ± (\d+\.\d%|n/a) \(median of \d+ samples? × [\d,]+ loops, "
    r"(tsc|steady) clock\)$",
    re.MULTILINE,
)


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "fastbench", *args],
        capture_output=True, text=True, timeout=timeout, env=env, check=False,
    )


def test_version() -> None:
    r = run("--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"fastbench {fastbench.__version__}"


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("fastbench")
    if not script.exists():
        pytest.skip("the console script lives outside this interpreter's bin directory")
    r = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and fastbench.__version__ in r.stdout


def test_no_command_prints_usage_and_fails() -> None:
    r = run()
    assert r.returncode == 2
    assert "usage:" in r.stdout


def test_info_shows_every_section() -> None:
    r = run("info")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for heading in ("Machine", "Instruction set", "Clocks", "Noise checks"):
        assert re.search(rf"^{heading}$", out, re.MULTILINE), heading
    table = fastbench.clocks()
    assert f"auto -> {table.auto}:" in out
    for spec in table:
        assert re.search(rf"^  {spec.name}\s+(yes|no)\s", out, re.MULTILINE), spec.name
    for check in ("clocksource", "perf_event_paranoid", "load"):
        assert re.search(rf"\[(ok|warn|unknown)\]\s+{check}\s", out), check


def test_timeit_prints_the_statistics_line() -> None:
    r = run("timeit", "-s", "r = range(50)", "-r", "7", "--min-time", "0.002", "sum(r)")
    assert r.returncode == 0, r.stderr
    assert STAT_LINE.search(r.stdout), r.stdout
    assert "median of 7 samples" in r.stdout
    assert "net of call floor" in r.stdout


def test_timeit_fixed_loops() -> None:
    r = run("timeit", "-n", "123", "-r", "6", "--clock", "steady", "x = 1")
    assert r.returncode == 0, r.stderr
    assert "× 123 loops, steady clock" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("timeit", "1/0"), "error: ZeroDivisionError: division by zero"),
        (("timeit", "1 +"), "error: SyntaxError"),
        (("timeit", "-r", "0", "pass"), "error: ValueError: repeat must be >= 1, got 0"),
    ],
)
def test_errors_are_one_line_without_traceback(args: tuple[str, ...], message: str) -> None:
    r = run(*args)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(message)
    assert "Traceback" not in r.stderr


def test_debug_shows_the_traceback() -> None:
    r = run("--debug", "timeit", "1/0")
    assert r.returncode != 0
    assert "Traceback" in r.stderr and "ZeroDivisionError" in r.stderr


def test_tour_runs_and_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "tour.txt"
    r = run("tour", "-o", str(out))
    assert r.returncode == 0, r.stderr
    report = out.read_text(encoding="utf-8")
    for section in ("Clocks", "Noise checks", "sorted(1000 ints)", "sum(range(1000))", "native spin"):
        assert section in r.stdout and section in report, section
    assert len(STAT_LINE.findall(report)) >= 3
    m = re.search(r"net error ([+-]\d+\.\d+)%", report)
    assert m is not None
    assert abs(float(m.group(1))) < 25.0  # generous: the tour runs on any machine
