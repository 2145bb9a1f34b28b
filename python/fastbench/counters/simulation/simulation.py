"""simulate() and simulate_statement(): count instructions and simulate caches and branches
of a command, a callable or a statement under valgrind, from checking the arguments to the
result. The geometry, the target, the valgrind processes and the output each have their own
module; this one only puts them together and, for a callable or a statement, subtracts the
run that made no call.
"""

from __future__ import annotations

import os
import pickle
import shlex
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Mapping

from ..._checks import check_int, check_seconds
from ..._children import temporary_directory, terminating
from ...errors import FastbenchError
from .counts import TOOLS, SimulatedCounts
from .geometry import CacheGeometry, detect_geometry, explicit_geometry
from .output import output_command
from .runner import Run, finish, kill, start, tool_options, valgrind_path, valgrind_version
from .target import (
    DRIVER,
    TargetArg,
    callable_spec,
    check_program,
    command_argv,
    script_shebang,
    statement_source,
)

__all__ = ["simulate", "simulate_statement"]

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


def _explicit_caches(caches: Mapping[str, tuple[int, int, int]] | None,
                     tool: str) -> dict[str, CacheGeometry]:
    if caches is not None and tool != "cachegrind":
        raise ValueError(f"caches applies to cachegrind only; {tool} simulates no caches")
    return explicit_geometry(caches) if caches is not None else {}


def _refuse_nested() -> None:
    if os.environ.get(_CHILD_ENV):
        raise FastbenchError(
            "simulate() was called inside a simulated process: the script that defines the "
            "target runs again there, so guard its top-level code with "
            "`if __name__ == \"__main__\":`"
        )


def _geometry(tool: str, explicit: Mapping[str, CacheGeometry]
              ) -> tuple[dict[str, CacheGeometry], list[str]]:
    """The caches to simulate (explicit ones over detected ones) and the detection's notes."""
    if tool != "cachegrind":
        return {}, []
    detected, detect_notes = detect_geometry()
    return {**detected, **explicit}, [n for n in detect_notes if n[:2] not in explicit]


class _Runs:
    """The valgrind runs of one simulation, their files in one temporary directory; every
    run still going is killed, and the directory removed, when the block ends."""

    def __init__(self, valgrind: str, tool: str, geometry: Mapping[str, CacheGeometry]) -> None:
        self.valgrind, self.tool, self.geometry = valgrind, tool, geometry
        self.runs: list[Run] = []
        self._tmp = temporary_directory("valgrind")
        self.dir = Path(self._tmp.name)
        self._signals = terminating()  # SIGTERM, SIGHUP: the runs killed, the files removed

    def __enter__(self) -> _Runs:
        self._signals.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            for run in self.runs:
                kill(run)
        finally:
            try:
                self._tmp.cleanup()
            finally:
                self._signals.__exit__(exc_type, exc, tb)

    def launch(self, tag: str, what: str, workload: list[str],
               env: Mapping[str, str] | None, *, follow_exec: bool = False) -> Run:
        """Start ``workload`` under valgrind. ``follow_exec`` traces the programs it execs
        (and every child process, each writing files of its own, named by process id); the
        run's files are then those of the workload's process, after its last exec."""
        out, log = self.dir / f"out{tag}", self.dir / f"log{tag}"
        if follow_exec:  # valgrind writes %p as the process id
            options = [*tool_options(self.tool, self.dir / f"out{tag}.%p",
                                     self.dir / f"log{tag}.%p", self.geometry),
                       "--trace-children=yes"]
        else:
            options = tool_options(self.tool, out, log, self.geometry)
        argv_run = [self.valgrind, *options, *workload]
        run = start(what, argv_run, out, log, self.dir / f"stderr{tag}", env)
        if follow_exec:  # valgrind runs the workload in its own process: the same pid
            run.out_path = self.dir / f"out{tag}.{run.proc.pid}"
            run.log_path = self.dir / f"log{tag}.{run.proc.pid}"
        self.runs.append(run)
        return run

    def other_processes(self, run: Run) -> int:
        """Processes other than ``run``'s own that wrote output (``follow_exec`` only)."""
        stem = run.out_path.name.rsplit(".", 1)[0]
        return sum(1 for p in self.dir.glob(f"{stem}.*") if p != run.out_path)


def _counted_command(run: Run) -> str | None:
    try:
        return output_command(run.out_path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def _script_note(program: str, path: str, shebang: str, counted: str | None,
                 others: int) -> str:
    """What a command whose program is a script counted: valgrind followed its exec calls."""
    text = (f"{program} is a script ({path}, {shebang!r}), not a binary: valgrind followed "
            "its exec calls (--trace-children=yes)")
    if counted is not None and path in counted.split():
        text += (f" and counted its interpreter, {counted!r}, which never exec'd another "
                 "program: work the script runs in child processes is not counted")
    else:
        text += (" and counted the program the command's process ran last"
                 + (f", {counted!r}" if counted else ""))
    if others:
        text += (f"; not counted: {others} other process{'es' if others != 1 else ''} it "
                 "started (such as a version manager's helpers)")
    return text + "; pass the binary itself (for Python, sys.executable) to count it alone"


def simulate(
    target: TargetArg,
    *args: Any,
    calls: int = 1,
    tool: str = "cachegrind",
    caches: Mapping[str, tuple[int, int, int]] | None = None,
    timeout_s: float = 600.0,
    layout: int = 0,
) -> SimulatedCounts:
    """Count instructions, and simulate cache misses and branch mispredictions, under valgrind.

    The answer where the hardware has no PMU to ask (most VMs and containers): instruction
    counts are exact and repeat from run to run; cache misses come from cachegrind's model
    of two cache levels (I1/D1 and LL) with the geometry fastbench reads from sysfs, and
    branch mispredictions from its model of a simple predictor. They are simulated, not
    measured: the result's ``label`` says so and every report shows it.

    A command runs once under valgrind; the result holds the totals of its process (its
    child processes are not counted). Where the command's program is a script (a ``#!``
    file, such as pyenv's ``python`` shim) rather than a binary, valgrind follows its exec
    calls (``--trace-children=yes``), the result counts the program the process ran last
    (the real interpreter, for a shim that execs it), and a note says so, naming it.
    A callable runs in a fresh ``sys.executable`` under valgrind, twice: once importing it
    and calling it 0 times, once calling it ``calls`` times; the result is the difference
    divided by ``calls``, per call, so interpreter start-up, imports and argument
    unpickling cancel. One-off costs of the first call
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
    layout : int
        A callable only: the heap's arrangement before the calls. 0 (default) leaves it
        as importing the target and unpickling the arguments left it; k >= 1 first
        allocates a fixed mix of objects (1 B to 4 KiB, about half freed again) drawn
        from seed k, in both runs, so code that allocates starts from other free blocks.
        Counts under several layouts show how much the count owes to the heap.

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
        An unknown tool, ``calls`` < 1, ``timeout_s`` <= 0, ``layout`` < 0 or with a
        command, an empty command, a cache geometry cachegrind cannot simulate (the
        message suggests the nearest it can), or ``caches`` with callgrind.
    FileNotFoundError
        The command's program does not exist.
    """
    calls, timeout = _check_args(tool, calls, timeout_s)
    seed = check_int("layout", layout, 0)
    explicit = _explicit_caches(caches, tool)
    if isinstance(target, (str, list, tuple)):
        if args:
            raise TypeError("args are passed to a callable; put a command's arguments in "
                            "the command list")
        if calls != 1:
            raise ValueError("calls applies to a callable; a command runs once")
        if seed:
            raise ValueError("layout applies to a callable or a statement; a command lays "
                             "out its own heap")
        argv = command_argv(target)
        _refuse_nested()
        valgrind = valgrind_path()
        check_program(argv[0])
        geometry, notes = _geometry(tool, explicit)
        version = valgrind_version(valgrind)
        deadline = time.monotonic() + timeout
        script = script_shebang(argv[0])
        with _Runs(valgrind, tool, geometry) as runs:
            what = f"command {shlex.join(argv)!r}"
            run = runs.launch("1", what, argv, None, follow_exec=script is not None)
            totals, simulated_geometry = finish(run, deadline, timeout)
            if script is not None:
                notes.append(_script_note(argv[0], *script, _counted_command(run),
                                          runs.other_processes(run)))
        events = {k: float(v) for k, v in totals.items()}
        return SimulatedCounts(
            tool=tool, target=shlex.join(argv), events=events, per_call=False,
            calls=1, totals=totals, geometry=simulated_geometry, notes=tuple(notes),
            valgrind_version=version, command=tuple(run.argv),
        )
    if not callable(target):
        raise TypeError(f"target must be a command (list of str, or str) or a callable, got "
                        f"{type(target).__name__}")
    module, qualname, main_path = callable_spec(target)
    try:
        args_blob = pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - pickling raises many types
        raise TypeError(f"the arguments must be picklable to reach the simulated process: "
                        f"{type(exc).__name__}: {exc}") from None
    spec = {"module": module, "qualname": qualname, "main_path": main_path, "args": args_blob,
            "layout": seed}
    return _simulate_in_python(f"{module}:{qualname}", "import only", spec, calls, tool,
                               explicit, timeout)


def simulate_statement(
    stmt: str,
    setup: str = "pass",
    *,
    calls: int = 1,
    tool: str = "cachegrind",
    caches: Mapping[str, tuple[int, int, int]] | None = None,
    timeout_s: float = 600.0,
    layout: int = 0,
) -> SimulatedCounts:
    """Count instructions per execution of a statement string, under valgrind.

    The statement runs as :func:`timeit.timeit` runs it: compiled into a function whose
    body is ``setup`` once, then ``stmt`` in a ``for`` loop (names from ``setup`` are
    locals). That function runs in a fresh ``sys.executable`` under valgrind, twice, with
    the same setup: once with 0 iterations, once with ``calls``; the result is the
    difference divided by ``calls``, so start-up and setup cancel and each iteration's
    ``for`` step is counted with the statement. Both run in a fresh namespace: ``setup``
    imports what ``stmt`` needs. The environment and caveats are those of :func:`simulate`.

    Parameters
    ----------
    stmt : str
        The statement (several lines are fine).
    setup : str
        Run once before the loop, in both runs.
    calls : int
        Executions of ``stmt`` in the measured run (>= 1).
    tool : {"cachegrind", "callgrind"}
        As for :func:`simulate`.
    caches : mapping, optional
        As for :func:`simulate` (cachegrind only).
    timeout_s : float
        Wall-time limit in seconds for the whole simulation; the runs are killed when it
        passes.
    layout : int
        The heap's arrangement before the setup, as for :func:`simulate`.

    Returns
    -------
    SimulatedCounts
        Per-call events; ``target`` reads ``statement '<stmt>'``.

    Raises
    ------
    SimulationUnavailable
        valgrind is not installed.
    SimulationTimeout
        A run did not finish within ``timeout_s``.
    FastbenchError
        The statement or its setup raised under valgrind (the message ends with its
        traceback), or valgrind failed; also when called inside a simulated process.
    TypeError
        ``stmt`` or ``setup`` is not a str; a malformed ``caches``.
    SyntaxError
        ``stmt`` or ``setup`` does not compile (checked before valgrind starts).
    ValueError
        An unknown tool, ``calls`` < 1, ``timeout_s`` <= 0, ``layout`` < 0, a cache
        geometry cachegrind cannot simulate, or ``caches`` with callgrind.
    """
    calls, timeout = _check_args(tool, calls, timeout_s)
    seed = check_int("layout", layout, 0)
    explicit = _explicit_caches(caches, tool)
    source = statement_source(stmt, setup)
    return _simulate_in_python(f"statement {stmt!r}", "setup only",
                               {"statement": source, "layout": seed}, calls, tool, explicit,
                               timeout)


def _simulate_in_python(name: str, what_none: str, spec_base: Mapping[str, Any], calls: int,
                        tool: str, explicit: Mapping[str, CacheGeometry],
                        timeout: float) -> SimulatedCounts:
    """The driver under valgrind twice, with 0 calls and with ``calls``, in parallel; the
    per-call difference. ``spec_base`` names the callable or holds the statement's source."""
    _refuse_nested()
    valgrind = valgrind_path()
    geometry, notes = _geometry(tool, explicit)
    version = valgrind_version(valgrind)
    env = {**_SINGLE_THREADED, **os.environ, "PYTHONHASHSEED": "0",
           "PYTHONDONTWRITEBYTECODE": "1", _CHILD_ENV: "1"}
    deadline = time.monotonic() + timeout
    with _Runs(valgrind, tool, geometry) as runs:
        started = []
        for tag, n in (("0", 0), ("1", calls)):
            spec_path = runs.dir / f"spec{tag}"
            spec = {"sys_path": [p for p in sys.path if isinstance(p, str)], **spec_base,
                    "calls": n}
            spec_path.write_bytes(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
            what = f"{name} ({what_none if n == 0 else f'{n} call' + 's' * (n != 1)})"
            started.append(runs.launch(tag, what, [sys.executable, "-c", DRIVER,
                                                   str(spec_path)], env))
        baseline, _ = finish(started[0], deadline, timeout)
        totals, simulated_geometry = finish(started[1], deadline, timeout)

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
