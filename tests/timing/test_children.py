"""Every process fastbench starts dies with it: SIGTERM and SIGHUP to a parent running
workers (or valgrind, or the native observer's build) clean up as Ctrl-C does, SIGKILL takes
the children along through the kernel's parent-death signal, and what a killed parent left
in the temporary directory (or the build's locks) does not stop the next run. Checked on
real processes: a parent script measuring a statement in worker processes, counting
instructions under valgrind or building the observer, signalled while its children run."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from fastbench._children import Terminated, dying_with_parent, sweep, terminating

# What the parent runs, and how the moment to signal it is told in the process table: worker
# processes by their bootstrap, valgrind by its tool's name (the counted statement is long
# under simulation: tens of seconds), the observer's build by the compiler proper running
# (under ninja, in a process group of its own). The parent of the build gets a fresh
# extensions directory (TORCH_EXTENSIONS_DIR) under the test's directory.
PARENTS = {
    "workers": ("""
import fastbench
fastbench.timeit("time.sleep(30)", setup="import time", processes=2,
                 worker_timeout_s=None, repeat=1, warmup=0)
""", "fastbench.timing.worker"),
    "valgrind": ("""
from fastbench.counters import count_statement_instructions
count_statement_instructions("sum(range(10**8))")
""", "grind"),
    "observer-build": ("""
from fastbench.pytorch import observer
observer.load()
""", "cc1plus"),
}
# What the next run does, to show that it works.
NEXT = {
    "observer-build": ("from fastbench.pytorch import observer; "
                       "assert observer.load() is not None, observer.unavailable_reason()"),
}
NEXT_RUN = ("import fastbench; fastbench.timeit('pass', processes=1, repeat=5, "
            "duration_s=0.01)")


def _environment(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp_path),
            "TORCH_EXTENSIONS_DIR": str(tmp_path / "extensions")}


def _can_build_the_observer() -> str | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is not installed"
    if shutil.which("ninja") is None and shutil.which("ninja", path=os.path.dirname(
            sys.executable)) is None:
        return "ninja is not installed"
    if shutil.which("c++") is None:
        return "no C++ compiler"
    return None


def _workers(parent: psutil.Process, marker: str) -> list[psutil.Process]:
    try:
        kids = parent.children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [k for k in kids if marker in " ".join(_cmdline(k))]


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def _gone(pids: list[int], limit_s: float = 15.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        time.sleep(0.1)
    return False


def _default_sighup() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _start_parent(tmp_path: Path, what: str) -> tuple[subprocess.Popen[str], list[int]]:
    """The parent, started; and every process under it once the marked one runs."""
    code, marker = PARENTS[what]
    # SIGHUP as a terminal leaves it: a test run started under nohup (or by anything else
    # that ignores SIGHUP) would hand its children an ignored SIGHUP, which fastbench rightly
    # keeps ignoring.
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_environment(tmp_path),
                            preexec_fn=_default_sighup)
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if _workers(parent, marker):
            try:
                return proc, [p.pid for p in parent.children(recursive=True)]
            except psutil.NoSuchProcess:
                pass
        if proc.poll() is not None:
            raise AssertionError(f"the parent ended early: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("no worker started within 60 s")


def _left(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("fastbench-*"))


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
                         ids=["SIGTERM", "SIGHUP", "SIGKILL"])
@pytest.mark.parametrize("what", list(PARENTS))
def test_a_signalled_parent_leaves_no_child_and_no_directory(tmp_path: Path, what: str,
                                                             sig: signal.Signals) -> None:
    if what == "valgrind" and shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    if what == "observer-build" and _can_build_the_observer():
        pytest.skip(f"the observer cannot be built here: {_can_build_the_observer()}")
    proc, workers = _start_parent(tmp_path, what)
    try:
        _signal_and_check(tmp_path, what, sig, proc, workers)
    finally:  # a failed check must not leave the parent and its children running
        if proc.poll() is None:
            for pid in [proc.pid, *workers]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.communicate(timeout=60)


def _signal_and_check(tmp_path: Path, what: str, sig: signal.Signals,
                      proc: subprocess.Popen[str], workers: list[int]) -> None:
    # Workers and valgrind work in a temporary directory of fastbench's; the build in torch's
    # extensions directory. A count runs valgrind more than once, each run in a directory of
    # its own: between two runs there may be none for a moment, so it is awaited.
    temporary = what != "observer-build"
    deadline = time.monotonic() + 10
    while temporary and not _left(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert bool(_left(tmp_path)) == temporary, "the children's directory while they run"
    os.kill(proc.pid, sig)
    proc.communicate(timeout=60)
    # The parent died of the signal itself (after cleaning up, for SIGTERM and SIGHUP).
    assert proc.returncode == -sig
    # Within seconds: a compiler left running would end by itself, but only after its file.
    assert _gone(workers, limit_s=5.0), f"a child ({what}) outlived its parent"
    if sig != signal.SIGKILL:
        assert _left(tmp_path) == []
    else:  # nothing runs in a parent killed outright: the next run sweeps its directory
        assert bool(_left(tmp_path)) == temporary
    # The next run works (a build: despite the locks a killed build left), and leaves
    # nothing behind either.
    done = subprocess.run([sys.executable, "-c", NEXT.get(what, NEXT_RUN)],
                          capture_output=True, text=True, env=_environment(tmp_path),
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert _left(tmp_path) == []


def test_a_launched_command_dies_with_its_parent(tmp_path: Path) -> None:
    # A middle process starts `sleep 60` through the launcher, prints its pid, then is
    # killed outright: the sleep goes too (PR_SET_PDEATHSIG, kept across execve).
    middle = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path[:0] = {sys.path!r}
        from fastbench._children import dying_with_parent
        p = subprocess.Popen(dying_with_parent(["sleep", "60"]))
        print(p.pid, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", middle], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _cmdline(psutil.Process(child))[:1] != ["sleep"]:
        time.sleep(0.05)  # until the launcher has exec'd the command
    assert _cmdline(psutil.Process(child))[:1] == ["sleep"]
    proc.kill()
    proc.wait()
    proc.stdout.close()
    assert _gone([child])


def test_dying_with_parent_keeps_the_command() -> None:
    argv = dying_with_parent(["valgrind", "--tool=cachegrind", "python3"])
    if sys.platform.startswith("linux"):
        assert argv[:2] == [sys.executable, "-c"] and argv[3] == str(os.getpid())
        assert argv[4:] == ["valgrind", "--tool=cachegrind", "python3"]


def test_terminating_turns_sigterm_into_an_exception_and_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as info:
        with terminating(redeliver=False):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler interrupts this
    assert info.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_terminating_leaves_an_ignored_or_handled_signal_alone() -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGHUP, lambda s, f: seen.append(s))
    try:
        with terminating():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
        assert seen == [signal.SIGHUP]
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_sweep_removes_only_directories_of_processes_that_are_gone(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    gone = tmp_path / f"fastbench-workers-{int(dead.stdout)}-abc"
    mine = tmp_path / f"fastbench-workers-{os.getpid()}-abc"
    live = tmp_path / f"fastbench-valgrind-{os.getppid()}-abc"
    other = tmp_path / "fastbench-notes"
    for d in (gone, mine, live, other):
        d.mkdir()
        (d / "spec0.pickle").write_bytes(b"x")
    assert sweep(str(tmp_path)) == [gone]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (mine, live, other))
