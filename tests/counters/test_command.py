"""fastbench stat: counters over a command, its children included, summarised over runs.

Software events give known truths here: page faults of a command that touches a known
amount of fresh memory, CPU time of a command that burns a known amount of it.
"""

from __future__ import annotations

import json
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scipy import stats as sps

import fastbench
from fastbench import _core
from fastbench.counters.command import DEFAULT_EVENTS, EventStat, StatResult, stat_command

PY = sys.executable
PAGE = 4096


def _touch(mib: int) -> list[str]:
    # bytes * n writes every byte of a fresh buffer: one minor fault per page.
    return [PY, "-c", f"x = b'a' * ({mib} << 20)"]


def test_page_faults_grow_by_the_pages_touched() -> None:
    base = stat_command([PY, "-c", "pass"], ["page-faults"], repeat=3)
    big = stat_command(_touch(64), ["page-faults"], repeat=3)
    extra = big.means["page-faults"] - base.means["page-faults"]
    pages = (64 << 20) / PAGE
    # malloc may use huge pages or pre-fault a little: within 10% of one fault per page.
    assert extra == pytest.approx(pages, rel=0.1)


def test_children_are_counted() -> None:
    # The parent only starts a child that touches 32 MiB (8192 pages): without inheritance
    # the count would be the parent's start-up alone, about a tenth of that.
    parent = [PY, "-c", f"import subprocess, sys; subprocess.run({_touch(32)!r}, check=True)"]
    direct = stat_command(_touch(32), ["page-faults"], repeat=2)
    via_child = stat_command(parent, ["page-faults"], repeat=2)
    assert via_child.means["page-faults"] > direct.means["page-faults"]


def test_task_clock_of_a_cpu_bound_command() -> None:
    burn = [PY, "-c", "import time\nwhile time.process_time() < 0.3: pass"]
    r = stat_command(burn, ["task-clock"], repeat=2)
    # At least the 0.3 s of CPU time the command waits for, at most that plus start-up.
    assert 0.3e9 <= r.means["task-clock"] <= 0.3e9 + 0.5e9
    assert r.derived["cpus_utilized"] == pytest.approx(
        r.means["task-clock"] * 1e-9 / (sum(r.elapsed_s) / r.repeat))


def test_unavailable_events_are_listed_with_their_reason() -> None:
    probe = _core.probe_event("instructions")
    if probe.available:
        pytest.skip("this machine counts instructions; the unavailable path needs a PMU-less one")
    r = stat_command([PY, "-c", "pass"], repeat=1)
    assert r.unavailable["instructions"] == probe.reason
    assert set(r.events) | set(r.unavailable) == set(DEFAULT_EVENTS)
    text = "\n".join(r.lines())
    assert text.count("<not counted>") == len(r.unavailable)
    with pytest.raises(fastbench.CountersUnavailable, match="instructions"):
        stat_command([PY, "-c", "pass"], ["instructions"], repeat=1, missing="raise")


def test_interval_is_students_t() -> None:
    values = (10.0, 12.0, 11.0, 15.0)
    e = EventStat("page-faults", values, 1.0, False)
    lo, hi = sps.t.interval(0.95, len(values) - 1, loc=sum(values) / 4, scale=sps.sem(values))
    assert e.ci == pytest.approx((lo, hi), rel=1e-12)
    assert EventStat("x", (3.0,), 1.0, False).ci is None


def test_round_trip_and_lines_on_synthetic_result(tmp_path: Path) -> None:
    r = StatResult(
        command=("prog", "--flag"),
        events={"task-clock": EventStat("task-clock", (2e6, 2.2e6), 1.0, False),
                "instructions": EventStat("instructions", (4e6, 4e6), 0.5, True),
                "cycles": EventStat("cycles", (2e6, 2e6), 0.5, True)},
        unavailable={"branches": "no hardware PMU exposed"},
        elapsed_s=(0.004, 0.004),
        returncodes=(0, 2),
    )
    assert r.derived["ipc"] == pytest.approx(2.0)
    assert r.derived["cpus_utilized"] == pytest.approx(2.1e6 * 1e-9 / 0.004)
    text = "\n".join(r.lines())
    assert "# 2.00 insn per cycle" in text and "(running 50%, scaled)" in text
    assert "<not counted>" in text and "no hardware PMU exposed" in text
    assert "exited non-zero in 1 of 2 runs" in text
    path = tmp_path / "stat.json"
    fastbench.save(r, path)
    assert fastbench.load(path) == r


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"cmd": []}, ValueError), ({"cmd": ["true"], "repeat": 0}, ValueError),
    ({"cmd": ["true"], "events": ["cyclez"]}, ValueError),
    ({"cmd": ["true"], "missing": "ignore"}, ValueError),
    ({"cmd": ["/nonexistent/program"]}, FileNotFoundError),
])
def test_bad_arguments(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        stat_command(**kwargs)  # type: ignore[arg-type]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "fastbench", "stat", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_prints_saves_and_passes_the_exit_status(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    r = _cli("-r", "2", "-e", "task-clock,page-faults", "-o", str(out), "--", PY, "-c", "pass")
    assert r.returncode == 0, r.stderr
    assert "task-clock" in r.stdout and "page-faults" in r.stdout and "time elapsed" in r.stdout
    loaded = fastbench.load(out)
    assert isinstance(loaded, StatResult) and loaded.repeat == 2
    assert json.loads(out.read_text())["kind"] == "stat"
    failing = _cli("-r", "1", "-e", "task-clock", "--", PY, "-c", "import sys; sys.exit(4)")
    assert failing.returncode == 4
    assert "exited non-zero" in failing.stdout


def test_cli_errors_are_one_line() -> None:
    r = _cli("-e", "cyclez", "--", "true")
    assert r.returncode == 1 and "did you mean 'cycles'" in r.stderr
    r = _cli()
    assert r.returncode == 1 and "no command given" in r.stderr
    r = _cli("--", "/nonexistent/program")
    assert r.returncode == 127 and "command not found: /nonexistent/program" in r.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_cli_simulate_adds_labelled_simulated_counts(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    r = _cli("-r", "1", "-e", "task-clock", "--simulate", "-o", str(out), "--", "true")
    assert r.returncode == 0, r.stderr
    assert "simulated by valgrind cachegrind (not hardware counts)" in r.stdout
    saved = json.loads(out.read_text())
    instructions = saved["data"]["simulated"]["events"]["Ir"]
    assert instructions > 1000  # true runs the dynamic loader and libc start-up
    loaded = fastbench.load(out)
    assert isinstance(loaded, StatResult) and loaded.simulated is not None


@pytest.mark.parametrize(("signal_name", "status"), [("SIGKILL", 137), ("SIGSEGV", 139)])
def test_cli_reports_a_child_killed_by_a_signal_as_128_plus_the_signal(
        signal_name: str, status: int) -> None:
    # No core file: the child lowers its own core limit before it kills itself.
    suicide = ("import os, resource, signal; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
               f"os.kill(os.getpid(), signal.{signal_name})")
    r = _cli("-r", "1", "-e", "task-clock", "--", PY, "-c", suicide)
    assert r.returncode == status, r.stderr
    assert f"killed by {signal_name}" in r.stdout
    result = stat_command([PY, "-c", suicide], ["task-clock"], repeat=1)
    assert result.returncodes == (-getattr(signal, signal_name),)  # subprocess's convention


_INTERRUPTED_STAT = """
import os, sys, time
from fastbench.counters.command import stat_command
pidfile = sys.argv[1]
try:
    stat_command(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 30"], ["task-clock"], repeat=1)
except KeyboardInterrupt:
    pid = int(open(pidfile).read())
    # Wait until the child has died: then it is either reaped (gone) or a zombie (Z).
    deadline = time.monotonic() + 20
    while True:
        try:
            with open(f"/proc/{pid}/status") as f:
                state = next(ln.split()[1] for ln in f if ln.startswith("State:"))
        except FileNotFoundError:
            state = "gone"
        if state in ("Z", "gone") or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    print(state)
"""


def test_interrupted_stat_reaps_its_child(tmp_path: Path) -> None:
    # SIGINT goes to fastbench alone (not to the process group), as when the command
    # ignores Ctrl-C: fastbench must kill the command and wait for it, leaving no zombie.
    pidfile = tmp_path / "pid"
    proc = subprocess.Popen([PY, "-c", _INTERRUPTED_STAT, str(pidfile)], stdout=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while not pidfile.exists() or not pidfile.read_text().endswith("\n"):
            assert time.monotonic() < deadline and proc.poll() is None, "the command never started"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert out.strip() == "gone"


def test_cli_interrupted_stat_exits_130_and_reaps_its_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    proc = subprocess.Popen([PY, "-m", "fastbench", "stat", "-r", "1", "-e", "task-clock", "--",
                             "sh", "-c", f"echo $$ > {pidfile}; exec sleep 30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not pidfile.exists() or not pidfile.read_text().endswith("\n"):
            assert time.monotonic() < deadline and proc.poll() is None, "the command never started"
            time.sleep(0.01)
        child = int(pidfile.read_text())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130 and "interrupted" in err
    # fastbench has exited: a child it left unreaped would now be an orphan (a zombie under an
    # init that does not reap, or still sleeping if never killed).
    assert not Path(f"/proc/{child}").exists() or \
        "State:\tZ" not in Path(f"/proc/{child}/status").read_text()
