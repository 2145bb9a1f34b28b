"""Duets: two jobs measured at the same time, each in a worker of its own pinned to a core of
its own, their counted samples started together (each waits, prepared and warmed up, for
the go), the cores swapped from one duet to the next. What a shared host does to both at
once (another tenant, the hypervisor, a slow phase) lands on both samples of a pair and
cancels in their ratio; what one core suffers alone is spread over both jobs by the swaps
(Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy in the Cloud", ICPE
2020). The parent's side only: the worker's is worker.py's ``--sync``.
"""

from __future__ import annotations

import os
import select
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

import psutil

from .._checks import check_int, check_seconds
from .._children import temporary_directory, terminating
from ..measurement import Measurement
from .workers import (Launch, Started, Who, WorkerError, WorkerJob, finish_worker, kill_worker,
                      start_worker, write_specs)

__all__ = ["duet_cores", "run_duets"]

# A core is free for a duet when another program keeps it busy less than this share of the
# time (sampled over _BUSY_SAMPLE_S before the duets start).
_FREE_BELOW = 0.5
_BUSY_SAMPLE_S = 0.25
# How long a worker that has exited is given to leave its result or error.
_EXITED_WAIT_S = 10.0


def duet_cores() -> tuple[tuple[int, int] | None, str]:
    """Two cores this process may run on that nothing else keeps busy, and why (or why
    not): ``((a, b), "cores 0 and 1 are free")`` or ``(None, reason)``."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is None or not hasattr(os, "sched_setaffinity"):
        return None, "this platform cannot pin a process to a core"
    allowed = sorted(getaffinity(0))
    if len(allowed) < 2:
        return None, "this process may run on one core only"
    try:
        busy = psutil.cpu_percent(interval=_BUSY_SAMPLE_S, percpu=True)
    except (OSError, RuntimeError) as exc:
        return None, f"how busy the cores are cannot be read ({exc})"
    free = [c for c in allowed if c < len(busy) and busy[c] < 100.0 * _FREE_BELOW]
    if len(free) < 2:
        shown = ", ".join(f"core {c} {busy[c]:.0f}% busy" for c in allowed if c < len(busy))
        return None, f"fewer than two cores are free ({shown})"
    return (free[0], free[1]), f"cores {free[0]} and {free[1]} are free"


def _pin(pid: int, cpu: int) -> None:
    try:
        os.sched_setaffinity(pid, {cpu})
    except (OSError, AttributeError):  # gone already, or not allowed: it runs unpinned
        pass


def _close(fds: Sequence[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _await_ready(started: list[Started], ready: dict[int, int],
                 deadline: float | None, timeout_s: float | None) -> None:
    """Wait until every partner said it is ready (one byte on its pipe); a partner that
    exits first raises its own error."""
    pending = dict(ready)  # fd -> index into started
    while pending:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0.0:
            w = started[next(iter(pending.values()))]
            raise WorkerError(
                f"{w.who} was not ready to sample within worker_timeout_s={timeout_s:g} s",
                index=w.who.index, variant=w.who.variant, status="timeout")
        readable, _, _ = select.select(list(pending), [], [], min(left or 0.5, 0.5))
        for fd in readable:
            i = pending.pop(fd)
            if os.read(fd, 1) != b"r":  # end of file: the worker exited before it was ready
                w = started[i]
                finish_worker(w, _EXITED_WAIT_S, lambda data: data)
                raise WorkerError(f"{w.who} exited before its samples began", index=w.who.index,
                                  variant=w.who.variant, status="no-result")


def _duet(specs: Mapping[str, Path], names: Sequence[str], index: int, count: int,
          cpus: tuple[int, int], tmp: Path, timeout_s: float | None,
          launches: Mapping[str, Launch]) -> list[Measurement]:
    started: list[Started] = []
    parent_ends: list[int] = []
    ready: dict[int, int] = {}
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        for j, name in enumerate(names):
            go_r, go_w = os.pipe()
            ready_r, ready_w = os.pipe()
            parent_ends += [go_w, ready_r]
            try:
                w = start_worker(specs[name], tmp, 2 * index + j, Who(index, count, name),
                                 launches.get(name, Launch()),
                                 extra_args=("--sync", str(go_r), str(ready_w)),
                                 pass_fds=(go_r, ready_w))
            finally:
                _close((go_r, ready_w))
            started.append(w)
            ready[ready_r] = j
            _pin(w.proc.pid, cpus[(j + index) % 2])  # swapped every duet
        _await_ready(started, ready, deadline, timeout_s)
        for fd in parent_ends[0::2]:
            os.write(fd, b"g")
        results = []
        for w in started:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
            results.append(finish_worker(w, left, Measurement.from_dict))
        return results
    except BaseException:
        for w in started:
            kill_worker(w, dump_stack=False)
        raise
    finally:
        _close(parent_ends)


def run_duets(jobs: Mapping[str, WorkerJob], duets: int, *, cpus: tuple[int, int],
              timeout_s: float | None = 600.0,
              progress: Callable[[int, int, str], None] | None = None,
              launches: Mapping[str, Launch] | None = None) -> dict[str, list[Measurement]]:
    """Measure two jobs in ``duets`` duets, one duet after the other.

    In each duet both jobs start in fresh workers, the first pinned to ``cpus[0]`` and the
    second to ``cpus[1]`` (swapped in every other duet); each prepares its target (loops,
    floors, warmup), says it is ready and waits; once both are, both take their counted
    samples at once. The i-th Measurements of the two jobs come from the i-th duet: a pair.

    Parameters
    ----------
    jobs : mapping of str to WorkerJob
        Exactly two callable or statement jobs.
    duets : int
        Duets to run (>= 1).
    cpus : (int, int)
        The two cores (:func:`duet_cores` finds two free ones).
    timeout_s : float or None
        Seconds a duet may take before both workers are killed.
    progress : callable, optional
        Called as ``progress(i, total, "duet")`` before the i-th duet (from 1).
    launches : mapping of str to Launch, optional
        Where each job's workers start.

    Returns
    -------
    dict of str to list of Measurement
        Each job's Measurements, duet by duet.

    Raises
    ------
    WorkerError
        A worker failed (its partner is killed); no duet starts after it.
    TypeError, ValueError
        Not two callable or statement jobs, a bad count, cores or timeout.
    """
    if not isinstance(jobs, Mapping) or len(jobs) != 2:
        raise ValueError("a duet measures exactly two jobs")
    for key, job in jobs.items():
        if not isinstance(job, WorkerJob) or job.kind not in ("callable", "statement"):
            raise TypeError(f"jobs[{key!r}] must be a callable or statement WorkerJob")
    count = check_int("duets", duets, 1, say_positive=False)
    if (not isinstance(cpus, tuple) or len(cpus) != 2 or cpus[0] == cpus[1]
            or not all(isinstance(c, int) and c >= 0 for c in cpus)):
        raise ValueError(f"cpus must be two different core numbers, got {cpus!r}")
    timeout = None if timeout_s is None else check_seconds("timeout_s", timeout_s)
    names = list(jobs)
    out: dict[str, list[Measurement]] = {name: [] for name in names}
    with terminating(), temporary_directory("workers") as tmp_name:
        tmp = Path(tmp_name)
        specs = write_specs(jobs, tmp)
        for i in range(count):
            if progress is not None:
                progress(i + 1, count, "duet")
            pair = _duet(specs, names, i, count, cpus, tmp, timeout, launches or {})
            for name, m in zip(names, pair):
                out[name].append(m)
    return out
