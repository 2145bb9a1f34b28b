"""Measuring in worker processes, the parent's side: starting the workers one after the
other, waiting for them, their failures, and the order in which the variants of a
comparison take turns. The jobs they run (what to measure, named so that a fresh Python can
import it) are jobs.py's, re-exported here; the child's side is worker.py; nothing here
times anything.

What a worker does: ``sys.executable`` starts fresh (a new process, never a fork), in the
parent's working directory and environment, with stdin closed and stdout and stderr going
to files; it puts the parent's ``sys.path`` first, imports the callable by module and
qualified name (re-running the ``__main__`` script under the name ``__mp_main__`` when the
callable, an argument or a global comes from it, as multiprocessing's spawn does), unpickles
the arguments (importing those given as :class:`ImportRef`), and makes one
``fastbench.measure`` (or ``fastbench.timeit``) call with the options as given: it chooses
its loops, warms up, takes its samples and writes the Measurement as JSON. A rounds job
(:func:`rounds_job`) does the same for several variants side by side, one sample of each per
round as ``compare`` does in one process, and writes each one's Measurement. It sets nothing
that changes the measurement (only faulthandler, so that a crash or a timeout leaves the
Python stack in its stderr).

What it costs: ``processes=N`` takes about N times one measurement in this process (each
worker runs with the same defaults: ``duration_s`` of samples plus calibration, warmup and
the call floors), plus, per worker, an interpreter start and the imports of fastbench, of
numpy and scipy (which the summary of the samples needs) and of the target: about 0.5-1 s.
In exchange the spread between workers shows how much a result depends on the process it
ran in (memory layout, hash seed, allocator state), which the samples of one process cannot
show; pyperf runs 20 workers by default for this reason.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

from .._checks import check_int, check_seconds
from .._children import DIE_WITH_PARENT, ENV_PARENT, temporary_directory, terminating
from ..errors import FastbenchError, file_tail
from ..measurement import Measurement
from .config import MAX_PROCESSES
from .jobs import (CALLABLE_OPTIONS, ROUNDS_OPTIONS, STATEMENT_OPTIONS, ImportRef, WorkerJob,
                   callable_job, importable, rounds_job, statement_job)

__all__ = ["CALLABLE_OPTIONS", "ROUNDS_OPTIONS", "STATEMENT_OPTIONS", "ImportRef", "Launch",
           "Started", "Who", "WorkerError", "WorkerJob", "callable_job", "finish_worker",
           "importable", "interleaved_order", "kill_worker", "rounds_job", "run_interleaved",
           "run_together", "run_workers", "start_worker", "statement_job", "write_specs"]

# After a timeout the worker gets SIGUSR1 (faulthandler prints its stack) and this long to
# write it, then its process group gets SIGKILL.
_DUMP_WAIT_S = 0.3
# How long a kill waits for the rest of the group (what the workload started) to be gone.
_GROUP_EXIT_WAIT_S = 2.0
# The parent puts its sys.path first before fastbench is imported, so the worker runs this
# very fastbench even where a fresh interpreter would find another one (or none): a source
# tree put on sys.path by a script or a test runner. The spec's outer layer is plain data
# for that reason.
# First of all it asks to die with the process that started it (fastbench._children).
_BOOTSTRAP = DIE_WITH_PARENT + f"""\
import os
_fastbench_die_with_parent(int(os.environ.get({ENV_PARENT!r}, "0")))
""" + """\
import pickle, sys
with open(sys.argv[1], "rb") as f:
    path = pickle.load(f)["sys_path"]
sys.path[:] = path + [p for p in sys.path if p not in path]
from fastbench.timing.worker import main
sys.exit(main(sys.argv[1:]))
"""


class WorkerError(FastbenchError):
    """A worker process failed; nothing it or the workers before it measured is returned.

    The message says which worker (its index among those of its variant, and the variant's
    name), how it failed and ends with the tail of its stderr.

    Attributes
    ----------
    index : int or None
        0-based index of the worker among the ``processes`` of its variant (the message
        counts from 1); None when no worker had started.
    variant : str or None
        The job's name in :func:`run_workers` and :func:`run_together`, its key in
        :func:`run_interleaved`.
    status : str or None
        "exception" (the measurement raised), "import" (the callable, the ``__main__``
        script or an argument could not be imported), "exit" (non-zero exit status without
        a Python exception), "signal" (killed by a signal: a crash), "timeout" (killed after
        ``timeout_s``) or "no-result" (exit status 0 but no result written).
    returncode : int or None
        The exit status; negative for a signal, as :mod:`subprocess` gives it; None after a
        timeout (the worker was killed).
    stderr : str
        The last lines of the worker's stderr.
    """

    def __init__(self, message: str, *, index: int | None = None, variant: str | None = None,
                 status: str | None = None, returncode: int | None = None,
                 stderr: str = "") -> None:
        super().__init__(message)
        self.index = index
        self.variant = variant
        self.status = status
        self.returncode = returncode
        self.stderr = stderr


# -- where a worker starts -------------------------------------------------------------------
@dataclass(frozen=True)
class Launch:
    """Where a worker process starts: its interpreter, working directory and environment
    (the parent's by default). Versions of the code run in their own checkout, and under
    their own interpreter where one is given (fastbench.timing.versions).

    Attributes
    ----------
    python : str
        The interpreter ("" for this one, ``sys.executable``).
    cwd : str or None
        The working directory (None: the parent's).
    env : mapping of str to str, optional
        Variables set in the worker's environment on top of the parent's.
    """

    python: str = ""
    cwd: str | None = None
    env: Mapping[str, str] | None = None


_HERE = Launch()


# -- the order of the workers ----------------------------------------------------------------
def interleaved_order(names: Sequence[str], processes: int) -> list[str]:
    """The order in which the workers of several variants run: rounds of one worker per
    variant, alternately in the given order and reversed (A B B A A B ...).

    A slow phase of the host then lands on every variant about equally, and no variant
    always runs first or last in a round.

    Parameters
    ----------
    names : sequence of str
        The variants, each once.
    processes : int
        Workers per variant (>= 1).

    Returns
    -------
    list of str
        ``processes * len(names)`` names.

    Raises
    ------
    TypeError
        A name is not a str, or ``processes`` is not an int.
    ValueError
        No names, a name twice, or ``processes`` < 1.
    """
    count = check_int("processes", processes, 1, say_positive=False,
                      maximum=MAX_PROCESSES)
    order = list(names)
    if not order:
        raise ValueError("names is empty; pass at least one variant name")
    for n in order:
        if not isinstance(n, str):
            raise TypeError(f"names must be str, got {type(n).__name__} {n!r}")
    twice = sorted({n for n in order if order.count(n) > 1})
    if twice:
        raise ValueError(f"names must differ, got {twice[0]!r} more than once")
    rounds = [order if r % 2 == 0 else order[::-1] for r in range(count)]
    return [n for r in rounds for n in r]


# -- running workers -------------------------------------------------------------------------
_loading_main = False
_NESTED_START = ("workers were started while a worker re-ran the __main__ script: guard the "
                 "script's top-level code with `if __name__ == \"__main__\":` so that "
                 "importing it only defines the functions")


@contextmanager
def loading_main_script() -> Iterator[None]:
    """Marks the worker's re-run of the ``__main__`` script, during which starting workers
    is refused (multiprocessing's spawn refuses the same way): without an
    ``if __name__ == "__main__":`` guard every worker would start workers of its own."""
    global _loading_main
    _loading_main = True
    try:
        yield
    finally:
        _loading_main = False


def run_workers(job: WorkerJob, processes: int, *, timeout_s: float | None = 600.0,
                progress: Callable[[int, int, str], None] | None = None) -> list[Measurement]:
    """Measure ``job`` in ``processes`` fresh worker processes, one after the other.

    What a worker does and costs is in this module's docstring.

    Parameters
    ----------
    job : WorkerJob
        From :func:`callable_job` or :func:`statement_job`.
    processes : int
        Number of workers (>= 1).
    timeout_s : float or None
        Seconds each worker may run before it and its process group are killed; None for no
        limit.
    progress : callable, optional
        Called as ``progress(i, total, name)`` before the i-th worker (from 1) of ``total``
        starts.

    Returns
    -------
    list of Measurement
        One per worker, in the order they ran.

    Raises
    ------
    WorkerError
        A worker failed (the message says which, how, and quotes its stderr); the workers
        after it do not run.
    TypeError, ValueError
        A bad ``job``, ``processes``, ``timeout_s`` or ``progress``.
    KeyboardInterrupt
        Ctrl-C: the running worker is killed first.
    """
    return run_interleaved({_job_name(job): job}, processes, timeout_s=timeout_s,
                           progress=progress)[_job_name(job)]


def run_interleaved(jobs: Mapping[str, WorkerJob], processes: int, *,
                    timeout_s: float | None = 600.0,
                    progress: Callable[[int, int, str], None] | None = None,
                    launches: Mapping[str, Launch] | None = None,
                    ) -> dict[str, list[Measurement]]:
    """Measure each job in ``processes`` workers, the variants taking turns in the order of
    :func:`interleaved_order` (A B B A ...), one worker at a time.

    Parameters
    ----------
    jobs : mapping of str to WorkerJob
        The variants by name.
    processes : int
        Workers per variant (>= 1).
    timeout_s : float or None
        Seconds each worker may run before it and its process group are killed; None for no
        limit.
    progress : callable, optional
        Called as ``progress(i, total, name)`` before the i-th worker (from 1) of ``total``
        starts, ``name`` being its variant.
    launches : mapping of str to Launch, optional
        Where each variant's workers start (its interpreter, directory, environment); the
        parent's for a variant not named.

    Returns
    -------
    dict of str to list of Measurement
        Each variant's Measurements in the order its workers ran, in the order of ``jobs``.

    Raises
    ------
    WorkerError
        A worker failed (the message says which, how, and quotes its stderr); no worker
        starts after it and nothing is returned. Also when called while a worker re-runs
        the ``__main__`` script (its top-level code lacks an ``if __name__ ==
        "__main__":`` guard).
    TypeError, ValueError
        A bad ``jobs``, ``processes``, ``timeout_s`` or ``progress``.
    KeyboardInterrupt
        Ctrl-C: the running worker is killed first.
    """
    if _loading_main:
        raise WorkerError(_NESTED_START)
    if not isinstance(jobs, Mapping):
        raise TypeError(f"jobs must be a dict of name to WorkerJob, got {type(jobs).__name__}")
    if not jobs:
        raise ValueError("jobs is empty; pass at least one variant: {name: WorkerJob}")
    for key, job in jobs.items():
        if not isinstance(job, WorkerJob):
            raise TypeError(f"jobs[{key!r}] must be a WorkerJob (from callable_job or "
                            f"statement_job), got {type(job).__name__}")
    order = interleaved_order(list(jobs), processes)
    count = len(order) // len(jobs)
    timeout = None if timeout_s is None else check_seconds("timeout_s", timeout_s)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, got {type(progress).__name__}")
    return _run_in_order(jobs, order, count, timeout, progress, Measurement.from_dict,
                         launches)


def run_together(job: WorkerJob, processes: int, *, timeout_s: float | None = 600.0,
                 progress: Callable[[int, int, str], None] | None = None,
                 ) -> dict[str, list[Measurement]]:
    """Measure the variants of a :func:`rounds_job` side by side in each of ``processes``
    fresh workers, one worker after the other.

    The i-th Measurement of every variant comes from the i-th worker: the variants shared
    its process and its minutes, so the ratio of their medians in one worker is free of
    what makes processes differ (the pairs ``compare(..., pairing="rounds")`` tests).

    Parameters
    ----------
    job : WorkerJob
        From :func:`rounds_job`.
    processes : int
        Number of workers (>= 1).
    timeout_s : float or None
        Seconds each worker may run before it and its process group are killed; None for no
        limit.
    progress : callable, optional
        Called as ``progress(i, total, name)`` before the i-th worker (from 1) of ``total``
        starts, ``name`` being the job's.

    Returns
    -------
    dict of str to list of Measurement
        Each variant's Measurements in the order the workers ran, in the order of the job's
        variants.

    Raises
    ------
    WorkerError
        A worker failed (the message says which, how, and quotes its stderr); no worker
        starts after it and nothing is returned.
    TypeError, ValueError
        A bad ``job``, ``processes``, ``timeout_s`` or ``progress``.
    KeyboardInterrupt
        Ctrl-C: the running worker is killed first.
    """
    if not isinstance(job, WorkerJob) or job.kind != "rounds":
        raise TypeError(f"job must be a WorkerJob from rounds_job, got {type(job).__name__}"
                        + (f" of kind {job.kind!r}" if isinstance(job, WorkerJob) else ""))
    if _loading_main:
        raise WorkerError(_NESTED_START)
    order = interleaved_order([job.name], processes)
    timeout = None if timeout_s is None else check_seconds("timeout_s", timeout_s)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, got {type(progress).__name__}")
    names = [v.name for v in job.variants]

    def read(data: Mapping[str, Any]) -> dict[str, Measurement]:
        got = data["rounds"]
        return {name: Measurement.from_dict(got[name]) for name in names}

    per_worker = _run_in_order({job.name: job}, order, len(order), timeout, progress,
                               read)[job.name]
    return {name: [w[name] for w in per_worker] for name in names}


_T = TypeVar("_T")


def write_specs(jobs: Mapping[str, WorkerJob], tmp: Path) -> dict[str, Path]:
    """Each job's spec file in ``tmp``: the plain sys.path the bootstrap reads first, and
    the pickled job."""
    specs: dict[str, Path] = {}
    for j, (key, job) in enumerate(jobs.items()):
        specs[key] = tmp / f"spec{j}.pickle"
        spec = {"sys_path": list(job.sys_path),
                "job": pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)}
        specs[key].write_bytes(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
    return specs


def _run_in_order(jobs: Mapping[str, WorkerJob], order: list[str], count: int,
                  timeout: float | None, progress: Callable[[int, int, str], None] | None,
                  read: Callable[[Any], _T],
                  launches: Mapping[str, Launch] | None = None) -> dict[str, list[_T]]:
    """One worker per entry of ``order`` (a key of ``jobs``), one after the other, each
    result read from its JSON by ``read``; by key, in the order they ran."""
    results: dict[str, list[_T]] = {key: [] for key in jobs}
    with terminating(), temporary_directory("workers") as tmp_name:
        tmp = Path(tmp_name)
        specs = write_specs(jobs, tmp)
        for step, key in enumerate(order):
            if progress is not None:
                progress(step + 1, len(order), key)
            who = Who(len(results[key]), count, key)
            launch = (launches or {}).get(key, _HERE)
            results[key].append(_run_worker(specs[key], tmp, step, timeout, who, read, launch))
    return results


def _job_name(job: object) -> str:
    if not isinstance(job, WorkerJob):
        raise TypeError(f"job must be a WorkerJob (from callable_job or statement_job), got "
                        f"{type(job).__name__}")
    return job.name


@dataclass(frozen=True)
class Who:
    """Which worker this is, for messages: its index among those of its variant."""

    index: int
    count: int
    variant: str

    def __str__(self) -> str:
        return f"worker {self.index + 1} of {self.count} for {self.variant!r}"


@dataclass
class Started:
    """A worker process started by :func:`start_worker`, and where it writes."""

    proc: subprocess.Popen[bytes]
    out: Path
    stderr_path: Path
    who: Who


def start_worker(spec: Path, tmp: Path, step: int, who: Who, launch: Launch = _HERE, *,
                 extra_args: Sequence[str] = (), pass_fds: Sequence[int] = ()) -> Started:
    """Start one worker on ``spec`` (it writes ``result<step>.json`` in ``tmp``), without
    waiting for it."""
    out = tmp / f"result{step}.json"
    stderr_path = tmp / f"stderr{step}"
    argv = [launch.python or sys.executable, "-c", _BOOTSTRAP, str(spec), str(out), *extra_args]
    env = {**os.environ, **(launch.env or {}), ENV_PARENT: str(os.getpid())}
    with open(tmp / f"stdout{step}", "wb") as stdout, open(stderr_path, "wb") as stderr:
        # A session of its own: a timeout or Ctrl-C kills whatever the workload started too,
        # and the terminal's Ctrl-C reaches only this process, which then kills the worker.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                start_new_session=True, cwd=launch.cwd, env=env,
                                pass_fds=tuple(pass_fds))
    return Started(proc, out, stderr_path, who)


def finish_worker(w: Started, timeout_s: float | None, read: Callable[[Any], _T]) -> _T:
    """Wait for a started worker (killing it and its group past ``timeout_s``) and read its
    result; WorkerError when it failed."""
    try:
        code = w.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_worker(w, dump_stack=True)
        tail = file_tail(w.stderr_path)
        raise WorkerError(
            f"{w.who} did not finish within worker_timeout_s={timeout_s:g} s and was killed "
            "with its process group; pass a larger worker_timeout_s (None for no limit) or a "
            "shorter run (duration_s, repeat, max_time_s)" + _quoted(tail),
            index=w.who.index, variant=w.who.variant, status="timeout", stderr=tail,
        ) from None
    except BaseException:
        kill_worker(w, dump_stack=False)
        raise
    if code == 0:
        try:
            return read(json.loads(w.out.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            tail = file_tail(w.stderr_path)
            why = (f"an unreadable result ({exc})" if w.out.exists() else
                   "no result (did the workload call os._exit(0)?)")
            raise WorkerError(f"{w.who} exited with status 0 but wrote {why}" + _quoted(tail),
                              index=w.who.index, variant=w.who.variant, status="no-result",
                              returncode=0, stderr=tail) from None
    raise _failure(w.who, code, w.out, file_tail(w.stderr_path))


def kill_worker(w: Started, *, dump_stack: bool) -> None:
    """Kill a started worker and its process group (SIGUSR1 first, for its stack)."""
    _kill(w.proc, dump_stack=dump_stack)


def _run_worker(spec: Path, tmp: Path, step: int, timeout_s: float | None, who: Who,
                read: Callable[[Any], _T], launch: Launch = _HERE) -> _T:
    return finish_worker(start_worker(spec, tmp, step, who, launch), timeout_s, read)


def _kill(proc: subprocess.Popen[bytes], *, dump_stack: bool) -> None:
    """Kill the worker's process group (SIGUSR1 first, for its stack, when asked)."""
    if dump_stack and proc.poll() is None and hasattr(signal, "SIGUSR1"):
        try:
            os.kill(proc.pid, signal.SIGUSR1)  # faulthandler prints every thread's stack
            proc.wait(timeout=_DUMP_WAIT_S)   # it does not exit: this only gives it time
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # no process groups (Windows): the worker alone
            proc.kill()
    except OSError:  # gone already, with its group
        pass
    proc.wait()
    _await_group_exit(proc.pid)


def _await_group_exit(pgid: int, limit_s: float = _GROUP_EXIT_WAIT_S) -> None:
    """Wait, briefly, until every process of the killed group has exited.

    SIGKILL is delivered asynchronously: reaping the worker says nothing of the children it
    started, which on a loaded machine can take a while to be scheduled and die. A caller that
    has caught the error should find the workload's processes gone, so this waits until each
    member is a zombie or gone. Zombies count as exited: their new parent reaps them when it
    will (some container inits only every few seconds). Without /proc, where zombies cannot be
    told apart, it waits for the group to be empty, at most ``limit_s`` either way.
    """
    if not hasattr(os, "killpg"):
        return
    members = _group_members(pgid)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if members is not None:
            members = [pid for pid in members if _process_state(pid, pgid) not in (None, "Z")]
            if not members:
                return
        else:
            try:
                os.killpg(pgid, 0)
            except OSError:  # none left (or none ours to signal): nothing to wait for
                return
        time.sleep(0.005)


def _process_state(pid: int, pgid: int) -> str | None:
    """The state letter of ``pid`` from /proc, or None if it is gone or left the group."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # the name may hold spaces
    except (OSError, IndexError):
        return None
    # After the name: state, ppid, pgrp. A pid reused by a process of another group is gone.
    return fields[0].decode() if int(fields[2]) == pgid else None


def _group_members(pgid: int) -> list[int] | None:
    """The pids of the process group, read from /proc; None where there is no /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    if "self" not in entries:
        return None
    return [int(e) for e in entries if e.isdigit() and _process_state(int(e), pgid) is not None]


def _failure(who: Who, code: int, out: Path, tail: str) -> WorkerError:
    """The error of a worker that exited non-zero: what it reported in ``out`` if it could
    (an exception, and the stage it was at), else its exit status or signal."""
    try:
        record = json.loads(out.read_text(encoding="utf-8"))["worker_error"]
        status = str(record["status"])
        message = f"{who} failed while {record['stage']}: {record['error']}"
    except (OSError, ValueError, TypeError, KeyError):
        if code < 0:
            try:
                signame = signal.Signals(-code).name
            except ValueError:
                signame = f"signal {-code}"
            status, message = "signal", f"{who} was killed by {signame}"
        else:
            status = "exit"
            message = f"{who} exited with status {code} before writing its result"
    return WorkerError(message + _quoted(tail), index=who.index, variant=who.variant,
                       status=status, returncode=code, stderr=tail)


def _quoted(tail: str) -> str:
    return f"; its stderr ended with:\n{tail}" if tail else "; its stderr was empty"
