"""Versions of the code measured in one invocation and judged pair by pair:
:func:`compare_versions`. Checkouts, installs and the workers' designs (interleaved, duets)
are fastbench.timing.versions'; judging is :mod:`.judging`'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping

from .._checks import check_choice, check_int
from ..measurement import Measurement
from ..timing import run_config
from ..timing.config import DEFAULT_DURATION_S, DEFAULT_SAMPLE_S, MAX_PROCESSES
from ..timing.versions import (DESIGNS, INSTALL_TIMEOUT_S, parse_versions, prepared_versions,
                               run_versions)
from .judging import _check_judgement, identity_notes, judge_runs
from .records import Comparison

__all__ = ["compare_versions"]


def compare_versions(
    versions: Mapping[str, str],
    stmt: str,
    setup: str = "pass",
    *,
    baseline: str | None = None,
    processes: int = 10,
    design: str = "auto",
    install: str | None = None,
    repo: str | None = None,
    warmup: int = 1,
    min_time_s: float = DEFAULT_SAMPLE_S,
    repeat: int = 100,
    duration_s: float | None = DEFAULT_DURATION_S,
    loops: int | None = None,
    clock: str = "auto",
    disable_gc: bool = True,
    max_time_s: float | None = None,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    correction: str = "holm",
    worker_timeout_s: float | None = 600.0,
    install_timeout_s: float = INSTALL_TIMEOUT_S,
    progress: Callable[[int, int, str], None] | None = None,
) -> Comparison:
    """Measure a statement in several versions of the code in one invocation and judge each
    against the baseline: the design for a regression gate on a noisy machine, where saved
    results of separate invocations differ by how the host ran each.

    Each version's workers are fresh processes that run ``setup`` and time ``stmt`` as
    :func:`fastbench.timeit` does, with the version's code first on their path; the i-th
    workers of two versions form a pair, and the verdict is the paired t test on their
    log-ratios (:func:`fastbench.stats.runs.compare_runs`). How they run (``design``):

    - "duet": the two versions at the same time, one worker pinned to each of two free
      cores, both starting their counted samples together and swapping cores every duet:
      what the host does to both lands on both samples of a pair;
    - "interleaved": one worker at a time, A B B A ... (asv's ``continuous``);
    - "auto" (default): duets where there are two versions and two free cores, else
      interleaved. On a 2-vCPU VM duets found smaller changes in less time
      (``benchmarks/versions.py``).

    Parameters
    ----------
    versions : mapping of str to str
        Name to spec, at least two: ``"git:REF"`` (checked out into a temporary worktree of
        the repository holding ``repo``), a directory (``"."``: the working tree as it is,
        uncommitted changes included) or ``"python:PATH"`` (the working directory's code
        run by another interpreter, such as another venv's, to compare environments).
    stmt, setup : str
        What to time, and what runs before (imports of the project, inputs).
    baseline : str, optional
        The version the others are judged against; by default the first.
    processes : int
        Workers (duets) per version: pairs for the test (at least 3).
    install : str, optional
        A shell command that makes a version importable, run in its directory with
        ``$FASTBENCH_VERSION_TARGET`` (an empty directory that then goes first on its path),
        ``$FASTBENCH_PYTHON``, ``$FASTBENCH_VERSION`` and ``$FASTBENCH_VERSION_DIR`` set;
        without it, the version's directory and its ``src/`` go first.
    warmup, min_time_s, repeat, duration_s, loops, clock, disable_gc, max_time_s
        Each worker's, as :func:`fastbench.timeit` takes them.
    alpha, min_effect, correction
        As in :func:`compare`.
    worker_timeout_s, install_timeout_s : float
        Seconds a worker (a duet) and an install may take.
    progress : callable, optional
        ``progress(done, total, what)``, before each preparation and each worker or duet.

    Returns
    -------
    Comparison
        ``versions`` holds the specs, ``design`` how the workers ran and why; each
        version's Measurement carries the identity its workers found (commit, uncommitted
        changes, interpreter and package versions).

    Raises
    ------
    VersionError
        A ref that does not exist, a directory that is not there, an interpreter that
        cannot run the workers, or an install that failed (each names its version); no
        checkout is left behind.
    WorkerError
        A worker failed.
    TypeError, ValueError
        Bad arguments, before anything runs.
    """
    if not isinstance(stmt, str) or not isinstance(setup, str):
        raise TypeError("stmt and setup must be str (Python source)")
    count = check_int("processes", processes, 1, say_positive=False,
                      maximum=MAX_PROCESSES)
    check_choice("design", design, DESIGNS)
    _check_judgement(alpha, min_effect, correction)
    run_config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s, None,
               duration_s)
    if install is not None and not isinstance(install, str):
        raise TypeError(f"install must be a shell command (str), got {type(install).__name__}")
    parsed = parse_versions(versions, repo=repo)
    names = list(parsed)
    base = names[0] if baseline is None else baseline
    if base not in parsed:
        raise ValueError(f"baseline {base!r} is not among the versions ({', '.join(names)})")
    compile(stmt, "<fastbench-stmt>", "exec")
    compile(setup, "<fastbench-setup>", "exec")
    options = dict(warmup=warmup, min_time_s=min_time_s, repeat=repeat, duration_s=duration_s,
                   loops=loops, clock=clock, disable_gc=disable_gc, max_time_s=max_time_s)
    with prepared_versions(parsed, install=install, install_timeout_s=install_timeout_s,
                           progress=progress) as ready:
        done = run_versions(ready, stmt, setup, processes=count, design=design,
                            options=options, timeout_s=worker_timeout_s, progress=progress)
    measurements = {name: Measurement.from_runs(done.runs[name], name=name) for name in names}
    results = judge_runs(base, measurements, paired=True, alpha=alpha, min_effect=min_effect,
                         correction=correction)
    results = {name: replace(r, warnings=(*r.warnings, *identity_notes(measurements[base],
                                                                      measurements[name])))
               for name, r in results.items()}
    return Comparison(
        baseline=base,
        measurements={base: measurements[base],
                      **{n: m for n, m in measurements.items() if n != base}},
        results=results,
        paired=True,
        correction=correction,
        rounds=count,
        stop_reason="versions-duet" if done.design == "duet" else "versions",
        versions={name: v.spec for name, v in parsed.items()},
        design=f"{done.design}: {done.reason}",
    )
