"""Tests for fastbench.timing.workers and worker.py: measurements in fresh worker processes
(counted through the pids the workloads record), the order in which variants take turns,
arguments pickled or imported by name, the __main__ script re-run in the workers, and
every way a worker fails (exception, exit, crash, timeout, Ctrl-C, import), refused before
any worker starts where the parent can tell.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import _worker_targets as work  # beside this file: pytest puts it on sys.path
from fastbench.errors import FastbenchError
from fastbench.timing import workers
from fastbench.timing.workers import (
    ImportRef,
    WorkerError,
    WorkerJob,
    callable_job,
    importable,
    interleaved_order,
    rounds_job,
    run_interleaved,
    run_together,
    run_workers,
    statement_job,
)

# Each worker measures for a few milliseconds; starting it and importing costs about 1 s.
QUICK: dict[str, Any] = {"duration_s": None, "repeat": 20, "min_time_s": 1e-4}
# The same for a rounds job, which gives every setting of the rounds.
ROUNDS: dict[str, Any] = {"warmup": 1, "min_time_s": 1e-4, "repeat": 20, "loops": None,
                          "clock": "auto", "disable_gc": True, "max_time_s": None}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _has_line(path: Path) -> bool:
    return path.exists() and path.read_text(encoding="utf-8").endswith("\n")


def _gone(pid: int) -> bool:
    """The process has exited (a zombie not yet reaped by its new parent counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def _all_gone(*pids: int, within_s: float = 10.0) -> bool:
    """Every process has exited, or does within ``within_s``: SIGKILL is delivered
    asynchronously, and a loaded machine may take a while to schedule a killed process."""
    deadline = time.monotonic() + within_s
    while not all(_gone(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- results -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_statement_runs_once_in_each_of_three_fresh_processes(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    glob = {"record": importable("_worker_targets:record_pid"), "path": str(pids)}
    job = statement_job("record(path)", globals=glob, options=QUICK)
    seen: list[tuple[int, int, str]] = []
    ms = run_workers(job, 3, progress=lambda i, n, name: seen.append((i, n, name)))
    assert len(ms) == 3
    for m in ms:
        assert m.n >= 20 and m.samples_ns.shape == (m.n,)
        assert (m.name, m.call_floor_kind, m.stop_reason) == ("record(path)", "statement",
                                                              "repeat")
        assert m.median_ns > 0
    recorded = [int(p) for p in _lines(pids)]
    assert len(recorded) == len(set(recorded)) == 3
    assert os.getpid() not in recorded
    assert seen == [(1, 3, "record(path)"), (2, 3, "record(path)"), (3, 3, "record(path)")]


@pytest.mark.parametrize("fn", [work.describe, "_worker_targets:describe"])
def test_a_callable_by_object_or_by_name_with_pickled_and_imported_arguments(
        fn: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    job = callable_job(fn, (str(out), importable("_worker_targets:LOCK")), {"scale": 3},
                       options={**QUICK, "warmup": 2})
    assert (job.kind, job.module, job.qualname, job.main_path) == (
        "callable", "_worker_targets", "describe", None)
    [m] = run_workers(job, 1)
    pid, type_name, scale = _lines(out)[0].split()
    # The lock was imported in the worker (a lock does not pickle); the kwarg was passed.
    assert (type_name, scale) == (type(work.LOCK).__name__, "3")
    assert int(pid) != os.getpid()
    assert (m.name, m.call_floor_kind, m.n, m.warmup_samples_ns.size) == ("describe", "python",
                                                                          20, 2)


def test_a_name_replaces_the_default(tmp_path: Path) -> None:
    job = statement_job("x + 1", "x = 2", options=QUICK, name="add")
    [m] = run_workers(job, 1)
    assert m.name == "add" and m.n == 20


@pytest.mark.slow
def test_variants_take_turns_and_measure_their_own_work(tmp_path: Path) -> None:
    log = tmp_path / "log"
    jobs = {name: callable_job(work.sum_and_record, (str(log), name, n), options=QUICK)
            for name, n in (("small", 10), ("big", 20_000))}
    results = run_interleaved(jobs, 2)
    assert [ln.split()[0] for ln in _lines(log)] == ["small", "big", "big", "small"]
    assert len({ln.split()[1] for ln in _lines(log)}) == 4
    assert list(results) == ["small", "big"]
    assert [len(v) for v in results.values()] == [2, 2]
    # sum(range(20000)) does 2000x the additions of sum(range(10)): a generous ratio.
    assert min(m.median_ns for m in results["big"]) > 20 * max(
        m.median_ns for m in results["small"])


# -- variants side by side in every worker --------------------------------------------------------
@pytest.mark.slow
def test_a_rounds_job_measures_every_variant_in_each_worker(tmp_path: Path) -> None:
    small_log, big_log = tmp_path / "small", tmp_path / "big"
    jobs = {"small": callable_job(work.sum_and_record, (str(small_log), "small", 10)),
            "big": statement_job("sum_and_record(path, 'big', 20_000)",
                                 globals={"sum_and_record": importable(
                                     "_worker_targets:sum_and_record"), "path": str(big_log)})}
    job = rounds_job(jobs, options=ROUNDS)
    assert (job.kind, [v.name for v in job.variants]) == ("rounds", ["small", "big"])
    seen: list[tuple[int, int, str]] = []
    results = run_together(job, 2, progress=lambda i, n, name: seen.append((i, n, name)))
    assert seen == [(1, 2, "small vs big"), (2, 2, "small vs big")]
    # Both variants ran in each of two fresh processes: the same two pids in both logs.
    small_pids = [ln.split()[1] for ln in _lines(small_log)]
    big_pids = [ln.split()[1] for ln in _lines(big_log)]
    assert small_pids == big_pids and len(set(small_pids)) == 2
    assert str(os.getpid()) not in small_pids
    assert list(results) == ["small", "big"] and [len(v) for v in results.values()] == [2, 2]
    for m in (*results["small"], *results["big"]):
        assert m.n == 20 and m.stop_reason == "repeat"  # one sample per round
    assert [m.call_floor_kind for m in results["big"]] == ["statement"] * 2
    # sum(range(20000)) does 2000x the additions of sum(range(10)): a generous ratio.
    assert min(m.median_ns for m in results["big"]) > 20 * max(
        m.median_ns for m in results["small"])


def test_a_failing_variant_fails_its_rounds_worker() -> None:
    job = rounds_job({"ok": statement_job("pass"), "bad": callable_job(work.boom)},
                     options=ROUNDS)
    with pytest.raises(WorkerError) as info:
        run_together(job, 2)
    err = info.value
    assert (err.index, err.variant, err.status) == (0, "ok vs bad", "exception")
    assert "worker 1 of 2 for 'ok vs bad' failed while measuring: ValueError: boom" in str(err)


def test_rounds_jobs_are_checked_here(no_workers: None) -> None:
    plain = statement_job("pass")
    with pytest.raises(TypeError, match="jobs must be a dict"):
        rounds_job([plain], options=ROUNDS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="jobs is empty"):
        rounds_job({}, options=ROUNDS)
    with pytest.raises(TypeError, match=r"jobs\['b'\] must be a WorkerJob from callable_job"):
        rounds_job({"a": plain, "b": "pass"}, options=ROUNDS)  # type: ignore[dict-item]
    nested = rounds_job({"a": plain}, options=ROUNDS)
    with pytest.raises(TypeError, match="of kind 'rounds'"):
        rounds_job({"a": plain, "b": nested}, options=ROUNDS)
    with pytest.raises(TypeError, match="options lacks loops, max_time_s"):
        rounds_job({"a": plain}, options={k: v for k, v in ROUNDS.items()
                                          if k not in ("loops", "max_time_s")})
    with pytest.raises(TypeError, match="options has 'target_rel_ci'"):
        rounds_job({"a": plain}, options={**ROUNDS, "target_rel_ci": 0.01})
    assert rounds_job({"a": plain}, options={**ROUNDS, "duration_s": 1.0}).options[
        "duration_s"] == 1.0  # the rounds' minimum wall time, optional
    with pytest.raises(TypeError, match="job must be a WorkerJob from rounds_job"):
        run_together(plain, 2)
    with pytest.raises(ValueError, match="processes must be >= 1"):
        run_together(nested, 0)


# -- the order -----------------------------------------------------------------------------------
def test_interleaved_order_alternates_forward_and_reversed_rounds() -> None:
    assert interleaved_order(["A", "B"], 4) == ["A", "B", "B", "A", "A", "B", "B", "A"]
    assert interleaved_order(["A", "B", "C"], 3) == ["A", "B", "C", "C", "B", "A",
                                                     "A", "B", "C"]
    assert interleaved_order(["A", "B", "C"], 1) == ["A", "B", "C"]
    assert interleaved_order(["only"], 3) == ["only"] * 3


@pytest.mark.parametrize(("names", "processes", "error", "match"), [
    (["A", "B"], 0, ValueError, "processes must be >= 1"),
    (["A", "B"], 1.5, TypeError, "processes must be an int"),
    ([], 2, ValueError, "names is empty"),
    (["A", "B", "A"], 2, ValueError, "'A' more than once"),
    (["A", 2], 2, TypeError, "names must be str"),
])
def test_interleaved_order_refuses(names: list[Any], processes: Any, error: type[Exception],
                                   match: str) -> None:
    with pytest.raises(error, match=match):
        interleaved_order(names, processes)


# -- failures in a worker ------------------------------------------------------------------------
def test_an_exception_in_the_workload_is_quoted() -> None:
    with pytest.raises(WorkerError) as info:
        run_workers(callable_job(work.boom, options=QUICK), 2)
    err = info.value
    assert isinstance(err, FastbenchError)
    assert (err.index, err.variant, err.status, err.returncode) == (0, "boom", "exception", 1)
    assert "worker 1 of 2 for 'boom' failed while measuring: ValueError: boom" in str(err)
    assert 'raise ValueError("boom")' in err.stderr  # the traceback's last frame


def test_a_failure_in_a_later_worker_returns_nothing(tmp_path: Path) -> None:
    path = tmp_path / "pids"
    job = callable_job(work.fail_in_second_process, (str(path),), options=QUICK)
    with pytest.raises(WorkerError, match="worker 2 of 3 .* RuntimeError: the second") as info:
        run_workers(job, 3)
    assert info.value.index == 1
    assert len(_lines(path)) == 1  # the third never started


@pytest.mark.parametrize(("code", "status", "match"), [
    (3, "exit", "exited with status 3 before writing its result"),
    (0, "no-result", r"exited with status 0 but wrote no result \(did the workload call "
                     r"os._exit\(0\)\?\)"),
])
def test_an_exit_without_a_result_is_reported(code: int, status: str, match: str) -> None:
    with pytest.raises(WorkerError, match=match) as info:
        run_workers(callable_job(work.exit_now, (code,), options=QUICK), 1)
    assert (info.value.status, info.value.returncode) == (status, code)


def test_a_crash_names_the_signal_and_quotes_the_python_stack() -> None:
    with pytest.raises(WorkerError, match="killed by SIGSEGV") as info:
        run_workers(callable_job(work.segfault, options=QUICK), 1)
    err = info.value
    assert (err.status, err.returncode) == ("signal", -signal.SIGSEGV)
    assert "Segmentation fault" in err.stderr
    assert "segfault" in err.stderr  # faulthandler's stack names the function


@pytest.mark.slow
def test_a_worker_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    path = tmp_path / "pids"
    # Long enough for the worker to start and reach the workload on a loaded machine.
    with pytest.raises(WorkerError, match=r"did not finish within worker_timeout_s=6 s") as info:
        run_workers(callable_job(work.hang, (str(path),), options=QUICK), 2, timeout_s=6)
    assert (info.value.status, info.value.index) == ("timeout", 0)
    assert "in hang" in info.value.stderr  # the stack faulthandler printed before the kill
    worker_pid, child_pid = map(int, _lines(path)[0].split())
    assert _all_gone(worker_pid, child_pid)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_kill_returns_once_what_the_workload_started_has_exited() -> None:
    code = ("import subprocess, time; child = subprocess.Popen(['sleep', '60']); "
            "print(child.pid, flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None
    child_pid = int(proc.stdout.readline())
    assert not _gone(child_pid)
    started = time.monotonic()
    workers._kill(proc, dump_stack=False)
    waited = time.monotonic() - started
    proc.stdout.close()
    # Either both had exited when _kill returned, or it gave up waiting at its limit.
    assert (_gone(proc.pid) and _gone(child_pid)) or waited >= workers._GROUP_EXIT_WAIT_S


def test_ctrl_c_kills_the_running_worker(tmp_path: Path) -> None:
    path = tmp_path / "pids"
    returned = threading.Event()

    def press_ctrl_c() -> None:  # once the worker runs the workload
        while not _has_line(path) and not returned.is_set():
            time.sleep(0.02)
        if not returned.is_set():
            os.kill(os.getpid(), signal.SIGINT)  # this process only: the worker has a session

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_workers(callable_job(work.hang, (str(path),), options=QUICK), 1, timeout_s=60)
    finally:
        returned.set()
        presser.join()
    worker_pid, child_pid = map(int, _lines(path)[0].split())
    assert _all_gone(worker_pid, child_pid)


def test_an_import_ref_the_worker_cannot_resolve_is_an_import_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A module this process has not imported: checked here only for existence; the workers
    # find it through the sys.path they inherit.
    (tmp_path / "fb_worker_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    job = callable_job(work.describe, ("unused", importable("fb_worker_module:MISSING")),
                       options=QUICK)
    with pytest.raises(WorkerError, match="failed while importing the arguments: ImportError: "
                       "ImportRef 'fb_worker_module:MISSING': fb_worker_module has no "
                       "attribute 'MISSING'") as info:
        run_workers(job, 1)
    assert info.value.status == "import"


# -- the __main__ script -------------------------------------------------------------------------
_SCRIPT = """\
from fastbench.timing.workers import callable_job, run_workers

class Box:
    def __init__(self, value):
        self.value = value

def unbox(box):
    return box.value

def main():
    [m] = run_workers(callable_job(unbox, (Box(3),), options={options}), 1)
    print(m.name, m.n)

{call}
"""


def _run_script(tmp_path: Path, call: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "bench.py"
    script.write_text(_SCRIPT.format(options=QUICK, call=call))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path)


def test_a_function_and_class_of_the_main_script_run_in_the_workers(tmp_path: Path) -> None:
    done = _run_script(tmp_path, 'if __name__ == "__main__":\n    main()')
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["unbox", "20"]


def test_an_unguarded_main_script_is_refused_in_the_worker(tmp_path: Path) -> None:
    done = _run_script(tmp_path, "main()")
    assert done.returncode == 1
    assert "WorkerError: worker 1 of 1 for 'unbox' failed while re-running the __main__" \
        in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr


# -- refused in the parent, before any worker starts ---------------------------------------------
@pytest.fixture
def no_workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if a process is started."""
    def popen(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(subprocess, "Popen", popen)
    yield


def _closure() -> Any:
    def inner() -> None:
        pass
    return inner


class _Thing:
    def method(self) -> None:
        pass


@pytest.mark.parametrize(("fn", "match"), [
    (lambda: None, "a lambda has no name"),
    (_closure(), "defined inside a function"),
    (functools.partial(work.boom), "functools.partial"),
    (_Thing().method, "method bound to an object"),
    (3, "fn must be a module-level function"),
])
def test_callables_without_an_importable_name_are_refused(fn: Any, match: str,
                                                          no_workers: None) -> None:
    with pytest.raises(TypeError, match=match) as info:
        callable_job(fn)
    assert "worker processes" in str(info.value) or "fn must" in str(info.value)
    assert "valgrind" not in str(info.value)


@pytest.mark.parametrize(("fn", "error", "match"), [
    ("_worker_targets:no_such_function", ImportError,
     "_worker_targets has no attribute 'no_such_function'"),
    ("fb_no_such_module:f", ImportError, "cannot import module 'fb_no_such_module'"),
    ("_worker_targets:LOCK", TypeError, "not callable"),
    ("_worker_targets.describe", ValueError, "must be 'package.module:attribute'"),
])
def test_named_callables_are_imported_here_first(fn: str, error: type[Exception], match: str,
                                                 no_workers: None) -> None:
    with pytest.raises(error, match=match):
        callable_job(fn)


def test_unpicklable_arguments_are_named(no_workers: None) -> None:
    lock = threading.Lock()
    with pytest.raises(TypeError, match=r"argument 1 \(lock\) cannot be pickled.*importable"):
        callable_job(work.describe, ("path", lock))
    with pytest.raises(TypeError, match=r"keyword argument 'obj' \(lock\) cannot be pickled"):
        callable_job(work.describe, ("path",), {"obj": lock})
    with pytest.raises(TypeError, match=r"global 'lock' \(lock\) cannot be pickled"):
        statement_job("lock.acquire()", globals={"lock": lock, "fine": 1})


def test_import_refs_to_missing_modules_or_attributes_are_refused(no_workers: None) -> None:
    with pytest.raises(ImportError, match="names module 'fb_no_such_module', which is not "
                       "found"):
        callable_job(work.describe, ("p", importable("fb_no_such_module:X")))
    with pytest.raises(ImportError, match="no attribute 'NOPE'"):  # loaded here: checked
        statement_job("x", globals={"x": importable("_worker_targets:NOPE")})


@pytest.mark.parametrize(("target", "error"), [
    ("no_colon", ValueError), ("a:b:c", ValueError), ("a.:b", ValueError), (":b", ValueError),
    (3, TypeError),
])
def test_importable_checks_the_form(target: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="target must be"):
        importable(target)


def test_importable_splits_module_and_attributes() -> None:
    ref = importable("pkg.mod:Outer.attr")
    assert ref == ImportRef("pkg.mod:Outer.attr")
    assert (ref.module, ref.attrs) == ("pkg.mod", ("Outer", "attr"))


def test_statements_and_options_are_checked_here(no_workers: None) -> None:
    with pytest.raises(SyntaxError):
        statement_job("x = ")
    with pytest.raises(SyntaxError):
        statement_job("pass", setup="def")
    with pytest.raises(TypeError, match="stmt must be a str"):
        statement_job(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="options has 'counters', which is not an option of "
                       "timeit"):
        statement_job("pass", options={"counters": ["instructions"]})
    with pytest.raises(TypeError, match="options has 'processes'"):
        callable_job(work.boom, options={"processes": 2})
    with pytest.raises(TypeError, match="'repeat' of fn share a name with measure"):
        callable_job(work.describe, ("p", 1), {"repeat": 3})


def test_run_workers_checks_its_arguments(no_workers: None) -> None:
    job = statement_job("pass", options=QUICK)
    with pytest.raises(ValueError, match="processes must be >= 1"):
        run_workers(job, 0)
    with pytest.raises(ValueError, match="timeout_s must be finite and > 0"):
        run_workers(job, 1, timeout_s=0)
    with pytest.raises(TypeError, match="job must be a WorkerJob"):
        run_workers("pass", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"jobs\['b'\] must be a WorkerJob"):
        run_interleaved({"a": job, "b": "pass"}, 1)  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="jobs is empty"):
        run_interleaved({}, 1)
    with pytest.raises(TypeError, match="progress must be callable"):
        run_workers(job, 1, progress=3)  # type: ignore[arg-type]


def test_a_job_pickles_and_keeps_the_parents_sys_path() -> None:
    import pickle

    job = callable_job(work.describe, ("p", 1), options=QUICK)
    assert pickle.loads(pickle.dumps(job)) == job
    assert isinstance(job, WorkerJob) and job.sys_path[:3] == [
        p for p in sys.path if isinstance(p, str)][:3]
    assert pickle.loads(job.args) == ("p", 1) and pickle.loads(job.kwargs) == {}
    assert job.options == QUICK and job.name == "describe"


def test_the_worker_module_reports_a_wrong_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "fastbench.timing.worker"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "usage: python -m fastbench.timing.worker SPEC OUT" in done.stderr

