"""simulate(): count instructions and simulate caches and branches of a command or a
callable under valgrind, from checking the arguments to the result. The geometry, the
target, the valgrind processes and the output each have their own module; this one only
puts them together and, for a callable, subtracts the run that made no call.
"""

from __future__ import annotations

import os
import pickle
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from ..._checks import check_int, check_seconds
from ...errors import FastbenchError
from .counts import TOOLS, SimulatedCounts
from .geometry import CacheGeometry, detect_geometry, explicit_geometry
from .runner import Run, finish, kill, start, tool_options, valgrind_path, valgrind_version
from .target import DRIVER, TargetArg, callable_spec, check_program, command_argv

__all__ = ["simulate"]

# Set in the driver's environment: a script without an `if __name__ == "__main__":` guard
# would otherwise call simulate() again inside valgrind, and again inside that.
_CHILD_ENV = "FASTBENCH_VALGRIND_CHILD"
# Below this fraction of the start-up's instructions the calls may drown in its variation.
_SMALL_DIFFERENCE = 0.01
# Defaults for a callable's runs (the caller's environment wins): see simulate().
_SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _check_args(tool: object, calls: object, timeout_s: object) -> tuple[int, float]:
    """``calls`` and ``timeout_s`` checked; TypeError or ValueError naming the bad one."""
    # The tools are listed quoted, as this message always has (check_choice writes a tuple).
    if tool not in TOOLS:
        raise ValueError(f"tool must be one of {', '.join(repr(t) for t in TOOLS)}, got {tool!r}")
    count = check_int("calls", calls)
    if count < 1:
        raise ValueError(f"calls must be >= 1, got {count}")
    return count, check_seconds("timeout_s", timeout_s)


def simulate(
    target: TargetArg,
    *args: Any,
    calls: int = 1,
    tool: str = "cachegrind",
    caches: Mapping[str, tuple[int, int, int]] | None = None,
    timeout_s: float = 600.0,
) -> SimulatedCounts:
    """Count instructions, and simulate cache misses and branch mispredictions, under valgrind.

    The answer where the hardware has no PMU to ask (most VMs and containers): instruction
    counts are exact and repeat from run to run; cache misses come from cachegrind's model
    of two cache levels (I1/D1 and LL) with the geometry fastbench reads from sysfs, and
    branch mispredictions from its model of a simple predictor. They are simulated, not
    measured: the result's ``label`` says so and every report shows it.

    A command runs once under valgrind; the result holds the totals of its process (its
    child processes are not followed). A callable runs in a fresh ``sys.executable`` under
    valgrind, twice: once importing it and calling it 0 times, once calling it ``calls``
    times; the result is the difference divided by ``calls``, per call, so interpreter
    start-up, imports and argument unpickling cancel. One-off costs of the first call
    (lazy imports, caches it fills, the adaptive interpreter specialising) are spread over
    the ``calls``; raise ``calls`` to dilute them. Both runs use ``PYTHONHASHSEED=0`` and
    ``PYTHONDONTWRITEBYTECODE=1`` so they do identical work up to the calls, and run in
    parallel. The start-up of a small module repeats to within a few dozen instructions,
    but one importing numpy and scipy can vary by up to about 1e6 of its 4.5e9, and takes
    tens of seconds under valgrind: there the calls must add far more than that, and a
    note says when they add under 1% of the start-up.
    Thread pools get one thread (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
    ``MKL_NUM_THREADS`` = 1 unless set): valgrind runs one thread at a time anyway, and
    idle workers that spin add instructions that vary from run to run (1e7 for numpy's
    OpenBLAS pool).

    Parameters
    ----------
    target : list of str, str or callable
        A command (a str is split with ``shlex.split``), or a callable importable by
        module and qualified name: a module-level function (or class, or classmethod),
        including one of the ``__main__`` script, which is then re-run under the name
        ``__mp_main__`` as multiprocessing does, so its top-level code needs an
        ``if __name__ == "__main__":`` guard. Both runs import the target's module and
        everything it imports: keep workloads in a small module of their own (a script
        that calls simulate() imports fastbench, and with it numpy and scipy).
    *args
        Arguments of the callable, pickled to the new process (so picklable).
    calls : int
        Calls of the callable in the measured run (>= 1); 1 for a command.
    tool : {"cachegrind", "callgrind"}
        cachegrind counts instructions and simulates caches and branches; callgrind
        counts instructions only (``--collect-systime=no``).
    caches : mapping, optional
        ``{"I1": (size_bytes, assoc, line_bytes), "D1": ..., "LL": ...}`` to simulate
        instead of what is detected (cachegrind only); caches left out are detected.
        Each must have a power-of-two number of sets and lines of at least 32 B.
    timeout_s : float
        Wall-time limit in seconds for the whole simulation (valgrind is 20-100x slower
        than native); the runs are killed when it passes.

    Returns
    -------
    SimulatedCounts
        Raw events, perf-style ``counts``, ``derived`` miss rates in percent, the
        geometry cachegrind simulated, notes on any geometry it changed, the valgrind
        version and command line.

    Raises
    ------
    SimulationUnavailable
        valgrind is not installed.
    SimulationTimeout
        A run did not finish within ``timeout_s``.
    FastbenchError
        The workload exited non-zero or was killed by a signal (the message ends with its
        stderr), or valgrind failed (with what it said); also when called inside a
        simulated process.
    TypeError
        A callable that cannot be imported by name (lambda, closure, bound method of an
        object, partial), unpicklable arguments, arguments given to a command, or a
        malformed ``caches``.
    ValueError
        An unknown tool, ``calls`` < 1, ``timeout_s`` <= 0, an empty command, a cache
        geometry cachegrind cannot simulate (the message suggests the nearest it can),
        or ``caches`` with callgrind.
    FileNotFoundError
        The command's program does not exist.
    """
    calls, timeout = _check_args(tool, calls, timeout_s)
    if caches is not None and tool != "cachegrind":
        raise ValueError(f"caches applies to cachegrind only; {tool} simulates no caches")
    explicit = explicit_geometry(caches) if caches is not None else {}
    is_command = isinstance(target, (str, list, tuple))
    if isinstance(target, (str, list, tuple)):
        if args:
            raise TypeError("args are passed to a callable; put a command's arguments in "
                            "the command list")
        if calls != 1:
            raise ValueError("calls applies to a callable; a command runs once")
        argv = command_argv(target)
    elif callable(target):
        module, qualname, main_path = callable_spec(target)
        try:
            args_blob = pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - pickling raises many types
            raise TypeError(f"the arguments must be picklable to reach the simulated process: "
                            f"{type(exc).__name__}: {exc}") from None
    else:
        raise TypeError(f"target must be a command (list of str, or str) or a callable, got "
                        f"{type(target).__name__}")
    if os.environ.get(_CHILD_ENV):
        raise FastbenchError(
            "simulate() was called inside a simulated process: the script that defines the "
            "target runs again there, so guard its top-level code with "
            "`if __name__ == \"__main__\":`"
        )
    valgrind = valgrind_path()
    if is_command:
        check_program(argv[0])

    notes: list[str] = []
    geometry: dict[str, CacheGeometry] = {}
    if tool == "cachegrind":
        detected, detect_notes = detect_geometry()
        geometry = {**detected, **explicit}
        notes.extend(n for n in detect_notes if n[:2] not in explicit)
    version = valgrind_version(valgrind)

    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="fastbench-valgrind-") as tmp_name:
        tmp = Path(tmp_name)
        runs: list[Run] = []

        def launch(tag: str, what: str, workload: list[str],
                   env: Mapping[str, str] | None) -> Run:
            out, log = tmp / f"out{tag}", tmp / f"log{tag}"
            argv_run = [valgrind, *tool_options(tool, out, log, geometry), *workload]
            run = start(what, argv_run, out, log, tmp / f"stderr{tag}", env)
            runs.append(run)
            return run

        try:
            if is_command:
                what = f"command {shlex.join(argv)!r}"
                totals, simulated_geometry = finish(launch("1", what, argv, None),
                                                    deadline, timeout)
                events = {k: float(v) for k, v in totals.items()}
                return SimulatedCounts(
                    tool=tool, target=shlex.join(argv), events=events, per_call=False,
                    calls=1, totals=totals, geometry=simulated_geometry, notes=tuple(notes),
                    valgrind_version=version, command=tuple(runs[0].argv),
                )
            env = {**_SINGLE_THREADED, **os.environ, "PYTHONHASHSEED": "0",
                   "PYTHONDONTWRITEBYTECODE": "1", _CHILD_ENV: "1"}
            name = f"{module}:{qualname}"
            started = []
            for tag, n in (("0", 0), ("1", calls)):
                spec_path = tmp / f"spec{tag}"
                spec = {"sys_path": [p for p in sys.path if isinstance(p, str)],
                        "module": module, "qualname": qualname, "main_path": main_path,
                        "args": args_blob, "calls": n}
                spec_path.write_bytes(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
                what = f"{name} ({'import only' if n == 0 else f'{n} call' + 's' * (n != 1)})"
                started.append(launch(tag, what, [sys.executable, "-c", DRIVER,
                                                  str(spec_path)], env))
            baseline, _ = finish(started[0], deadline, timeout)
            totals, simulated_geometry = finish(started[1], deadline, timeout)
        finally:
            for run in runs:
                kill(run)

    events = {k: (totals[k] - baseline.get(k, 0)) / calls for k in totals}
    negative = [f"{k} {v:+.1f}" for k, v in events.items() if v < 0]
    if negative:
        notes.append(f"per-call differences below zero ({', '.join(negative)}): the calls "
                     "change these events less than the two runs differ by chance; read "
                     "them as about 0, or raise calls")
    added, start_up = totals.get("Ir", 0) - baseline.get("Ir", 0), baseline.get("Ir", 0)
    if start_up > 0 and added < _SMALL_DIFFERENCE * start_up:
        notes.append(f"the calls add {added:,} instructions, "
                     f"{100 * added / start_up:.2g}% of the {start_up:,} of start-up and "
                     "imports; start-up that imports large packages can vary by up to about "
                     "0.02% between runs, so raise calls until the calls dominate")
    return SimulatedCounts(
        tool=tool, target=name, events=events, per_call=True, calls=calls, totals=totals,
        baseline=baseline, geometry=simulated_geometry, notes=tuple(notes),
        valgrind_version=version, command=tuple(started[1].argv),
    )
