"""The statistical sampling profiler of any Python callable or script, with or without a
framework: a daemon thread reads every Python thread's stack (``sys._current_frames``) at
jittered intervals. Each sample counts the time since the one before, and each function's
and line's share of that time estimates its share of the wall time, with a Wilson interval
from the samples. Owns the sampler and the running of callables and scripts under it; the
result, SampleProfile (tables, text, folded stacks, dict round trip), is in
:mod:`.sample_result` and re-exported here. No framework import and no printing here.
"""

from __future__ import annotations

import functools
import os
import random
import runpy
import sys
import threading
import time
import types
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

from .._checks import check_bool, check_seconds
from ..errors import FastbenchError
from .sample_result import (_JITTER, FunctionInfo, SampleProfile, SampleRow, SampleRows,
                            ThreadInfo, _Stack)

__all__ = ["MIN_INTERVAL_S", "FunctionInfo", "SampleProfile", "SampleRow", "SampleRows",
           "Sampler", "ScriptFailed", "ThreadInfo", "sample", "sample_script"]

# The shortest interval accepted. One tick walks every thread's stack holding the GIL (about
# 10 µs of CPU for one shallow thread, more with more and deeper threads) and a sleeping
# thread wakes tens of µs late
# (Linux's default timer slack is 50 µs, prctl(2) PR_SET_TIMERSLACK): below 100 µs the
# sampler would mostly measure itself and hold the GIL a large part of the time.
MIN_INTERVAL_S = 1e-4

# The switch interval during sampling, as a fraction of the sampling interval: a thread that
# runs Python holds the GIL until another thread has waited this long (sys.setswitchinterval),
# so with the default 5 ms a 1 ms sampler would fire late and at the holder's pace. Never
# raised above the value in force, never set below the floor (each forced switch costs).
_SWITCH_FRACTION = 0.1
_SWITCH_FLOOR_S = 1e-5


def _own_file() -> str:
    return sys._getframe().f_code.co_filename


# Frames of this module (the sample loop, the Sampler's enter/exit) never reach a table.
_OWN_FILE = _own_file()


class Sampler:
    """Samples every Python thread's stack while it runs: ``with Sampler() as s: ...`` then
    ``s.result()``. The thread that enters is the profiled one, and its stacks start at the
    frame holding the ``with`` (what is above it is the same in every sample).

    Parameters
    ----------
    interval_s : float
        Mean time between samples in seconds (each wait is drawn within ±50% of it, see
        below); at least :data:`MIN_INTERVAL_S`.
    threads : bool
        Sample every Python thread (True) or the profiled thread alone.

    Notes
    -----
    While sampling, ``sys.setswitchinterval`` is lowered to a tenth of the interval (never
    raised, never below 10 µs) so the sampler gets the GIL promptly from a thread running
    Python, and restored afterwards. A thread running pure Python still lets the GIL go
    only where the interpreter checks for a switch request (calls, loop back-edges), so its
    samples land there: in a tight loop the loop's head line takes most of them. Function
    shares are unaffected; lines are exact only up to that granularity. Native code that
    releases the GIL (numpy, torch, I/O) is sampled at once, at the line that called it.
    Native code that holds it delays the next sample until it returns; that sample counts
    the whole wait (each sample counts the time since the one before), at the line that
    called in.
    """

    def __init__(self, interval_s: float = 0.001, threads: bool = True) -> None:
        self._interval_s = _check_interval(interval_s)
        self._all_threads = check_bool("threads", threads)
        self._state = "new"
        self._result: SampleProfile | None = None
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._target = "a block"
        self._calls = 0
        # Set by _start, read by the sampling thread.
        self._profiled = 0
        self._root: types.FrameType | None = None
        self._root_included = True
        self._entry_file: str | None = None
        self._t0 = 0.0
        self._t1 = 0.0
        self._saved_switch_s = 0.0
        self._switch_s = 0.0
        self._overhead_cpu_s = 0.0
        self._ticks: list[float] = []
        self._records: list[tuple[int, int, int]] = []
        self._stack_ids: dict[_Stack, int] = {}
        self._func_ids: dict[int, int] = {}
        self._codes: list[types.CodeType] = []  # keeps each id(code) key's code alive
        self._functions: list[FunctionInfo] = []
        self._thread_ids: dict[int, int] = {}
        self._thread_names: list[str] = []
        self._error: BaseException | None = None

    def __enter__(self) -> Sampler:
        self._start(sys._getframe(1), include_root=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def result(self) -> SampleProfile:
        """The profile, once sampling has stopped.

        Raises
        ------
        RuntimeError
            Before the ``with`` block has ended.
        """
        if self._result is None:
            raise RuntimeError("Sampler.result() is available once the with block has ended")
        return self._result

    # -- start and stop (the profiled thread) ----------------------------------------------

    def _start(self, root: types.FrameType, include_root: bool,
               entry_file: str | None = None) -> None:
        if self._state != "new":
            raise RuntimeError("a Sampler samples once: make a new one for another run")
        self._state = "running"
        self._profiled = threading.get_ident()
        self._root, self._root_included = root, include_root
        self._entry_file = entry_file
        self._saved_switch_s = sys.getswitchinterval()
        self._switch_s = max(min(self._saved_switch_s, self._interval_s * _SWITCH_FRACTION),
                             _SWITCH_FLOOR_S)
        sys.setswitchinterval(self._switch_s)
        self._switch_s = sys.getswitchinterval()  # as stored: whole microseconds
        self._thread = threading.Thread(target=self._run, name="fastbench sampler",
                                        daemon=True)
        self._t0 = time.perf_counter()
        self._thread.start()

    def _stop(self) -> None:
        if self._state != "running" or self._thread is None:
            return
        self._t1 = time.perf_counter()
        self._stop_event.set()
        self._thread.join()
        sys.setswitchinterval(self._saved_switch_s)
        # A tick that fired while this thread was stopping saw the stop itself (the join):
        # the run ends at the stop request, and so do its samples.
        end_s = self._t1 - self._t0
        kept = len(self._ticks)
        while kept and self._ticks[kept - 1] >= end_s:
            kept -= 1
        del self._ticks[kept:]
        while self._records and self._records[-1][0] >= kept:
            self._records.pop()
        self._state = "done"
        self._root = None  # the caller's frame and its locals are not kept alive
        if self._error is not None:
            raise RuntimeError(f"the sampler thread failed: {self._error!r}") from self._error
        self._result = self._profile()

    def _profile(self) -> SampleProfile:
        per_thread = Counter(t for _, t, _ in self._records)
        threads = tuple(ThreadInfo(name, ident, per_thread[i]) for (ident, i), name in
                        zip(self._thread_ids.items(), self._thread_names))
        stacks = [s for s, _ in sorted(self._stack_ids.items(), key=lambda kv: kv[1])]
        return SampleProfile(
            self._target, self._interval_s, self._t1 - self._t0, self._overhead_cpu_s,
            self._switch_s, self._calls, self._thread_ids.get(self._profiled, 0), threads,
            tuple(self._functions), tuple(stacks), tuple(self._ticks), tuple(self._records))

    # -- the sampling thread ----------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # reported by _stop, never lost in a daemon thread
            self._error = exc

    def _loop(self) -> None:
        own = threading.get_ident()
        # The profiled thread gets its index first, so it is there even if no tick fires.
        self._thread_index(self._profiled)
        jitter = random.Random(0x5A3F1E)  # reproducible draws, independent of user seeds
        interval = self._interval_s
        # The deadlines are a renewal process that never waits on the workload, so the stack
        # seen at each, weighted by the interval ending there, estimates the time in each
        # stack without bias. A tick kept out past one or more deadlines (by a thread
        # holding the GIL, or the machine's load) stands for all of them: the holder ran
        # through them and its stack is what the tick sees. It is stamped with the last
        # deadline it passed, so it counts up to there, and the deadlines go on from that
        # one, never in a burst. Restarting the schedule at the late tick instead would
        # give the holder, on average, half an interval of the code before it each time.
        deadline = self._t0 + interval * jitter.uniform(1 - _JITTER, 1 + _JITTER)
        while not self._stop_event.wait(max(deadline - time.perf_counter(), 0.0)):
            cpu0 = time.thread_time()
            now = time.perf_counter()
            stamp = deadline
            deadline += interval * jitter.uniform(1 - _JITTER, 1 + _JITTER)
            while deadline <= now:
                stamp = deadline
                deadline += interval * jitter.uniform(1 - _JITTER, 1 + _JITTER)
            self._tick(own, stamp - self._t0)
            self._overhead_cpu_s += time.thread_time() - cpu0

    def _tick(self, own: int, t_s: float) -> None:
        tick = len(self._ticks)
        self._ticks.append(t_s)
        frames = sys._current_frames()
        try:
            for ident, frame in frames.items():
                if ident == own or (not self._all_threads and ident != self._profiled):
                    continue
                profiled = ident == self._profiled
                stack = self._stack(frame, self._root if profiled else None)
                stack_id = self._stack_ids.setdefault(stack, len(self._stack_ids))
                self._records.append((tick, self._thread_index(ident), stack_id))
        finally:
            del frames  # frames hold their locals: not one kept past the tick

    def _stack(self, leaf: types.FrameType, root: types.FrameType | None) -> _Stack:
        found: list[tuple[int, int]] = []  # leaf first
        entry = self._entry_file if root is not None else None
        outermost_entry = -1
        frame: types.FrameType | None = leaf
        while frame is not None:
            if frame is root and not self._root_included:
                break
            code = frame.f_code
            if code.co_filename != _OWN_FILE:
                func = self._func_ids.get(id(code))
                if func is None:
                    func = self._new_function(code, frame)
                if entry is not None and (code.co_filename == entry or
                                          code.co_filename.startswith(entry + os.sep)):
                    outermost_entry = len(found)
                found.append((func, frame.f_lineno or code.co_firstlineno))
            if frame is root:
                break
            frame = frame.f_back
        if entry is not None:
            # A script's stacks start at its own outermost frame (its <module>, or a zip
            # application's __main__): what runs it (runpy reading and compiling the file)
            # is the runner's, between calls.
            del found[outermost_entry + 1:]
        found.reverse()
        return tuple(found)

    def _new_function(self, code: types.CodeType, frame: types.FrameType) -> int:
        module = frame.f_globals.get("__name__", "")
        qualname = getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+
        prefix = module if isinstance(module, str) and module else Path(code.co_filename).name
        index = len(self._functions)
        self._functions.append(FunctionInfo(f"{prefix}:{qualname}", code.co_filename,
                                            code.co_firstlineno))
        self._codes.append(code)
        self._func_ids[id(code)] = index
        return index

    def _thread_index(self, ident: int) -> int:
        index = self._thread_ids.get(ident)
        if index is None:
            names = {t.ident: t.name for t in threading.enumerate()}
            index = len(self._thread_names)
            self._thread_ids[ident] = index
            self._thread_names.append(names.get(ident, f"thread {ident}"))
        return index


def _check_interval(interval_s: Any) -> float:
    interval = check_seconds("interval_s", interval_s)
    if interval < MIN_INTERVAL_S:
        raise ValueError(f"interval_s must be at least {MIN_INTERVAL_S:g} s, the shortest the "
                         f"sampler can keep (each sample walks every stack holding the GIL), "
                         f"got {interval_s!r}")
    return interval


def sample(fn: Callable[..., Any], *args: Any, duration_s: float = 1.0,
           interval_s: float = 0.001, threads: bool = True, **kwargs: Any) -> SampleProfile:
    """Profile ``fn(*args, **kwargs)`` by sampling: call it again and again for
    ``duration_s`` (at least once) while a sampler records every thread's stack.

    Parameters
    ----------
    fn : callable
        The code to profile, any Python callable.
    *args, **kwargs
        Passed to ``fn`` on every call (so ``fn`` cannot take keywords named
        ``duration_s``, ``interval_s`` or ``threads``: wrap it in a lambda).
    duration_s : float
        Seconds of calling (> 0); the last call may end later.
    interval_s : float
        Mean time between samples, seconds (at least :data:`MIN_INTERVAL_S`).
    threads : bool
        Sample every Python thread, not only the calling one.

    Returns
    -------
    SampleProfile
        Stacks start at ``fn``; a sample between two calls is "(between calls)".

    Raises
    ------
    TypeError
        If ``fn`` is not callable or a setting has the wrong type.
    ValueError
        If ``duration_s`` or ``interval_s`` is not a finite positive number of seconds, or
        ``interval_s`` is below :data:`MIN_INTERVAL_S`.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable (a function to profile), got "
                        f"{type(fn).__name__} {fn!r}")
    duration = check_seconds("duration_s", duration_s)
    sampler = Sampler(interval_s=interval_s, threads=threads)
    sampler._target = _callable_name(fn)
    return _call_loop(sampler, functools.partial(fn, *args, **kwargs), duration, None)


def sample_script(path: str | os.PathLike[str], argv: Sequence[str] = (),
                  duration_s: float | None = None, interval_s: float = 0.001,
                  threads: bool = True) -> SampleProfile:
    """Profile a Python script as ``python path *argv`` would run it: ``__name__`` is
    ``"__main__"``, ``sys.argv`` is ``[path, *argv]`` and the script's folder comes first on
    ``sys.path`` (both restored afterwards).

    Parameters
    ----------
    path : str or PathLike
        The script file.
    argv : sequence of str
        Its command-line arguments.
    duration_s : float, optional
        Run the script again and again until this many seconds have passed (at least once),
        for a script too short to give enough samples; by default it runs once.
    interval_s, threads
        As for :func:`sample`.

    Returns
    -------
    SampleProfile
        Stacks start at the script's ``<module>`` frame ("__main__:<module>").

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    TypeError, ValueError
        On a bad setting, as :func:`sample`.
    ScriptFailed
        The script exited with a non-zero status or raised: the exception holds the profile
        of what ran (``profile``), the status Python would have exited with (``status``)
        and what the script raised (``cause``). ``SystemExit`` with status 0 or None ends
        the run normally, and Ctrl-C propagates as it is.

    A process the script forks runs the script's code on from the fork; when that code
    ends there, the process exits with the script's status, and never returns into the
    profiler (only the process that started the profile reports and saves it).
    """
    script = Path(path)
    if not script.is_file():
        raise FileNotFoundError(f"path: no script file at {str(script)!r} (give the path of a "
                                ".py file)")
    if isinstance(argv, str) or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"argv must be a sequence of str, got {argv!r}")
    # No duration: one run (the loop stops after its first call once 0 s have passed).
    duration = 0.0 if duration_s is None else check_seconds("duration_s", duration_s)
    sampler = Sampler(interval_s=interval_s, threads=threads)
    sampler._target = str(script)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        return _call_loop(sampler, functools.partial(_run_script, str(script), os.getpid()),
                          duration, str(script), keep_on_failure=True)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


class ScriptFailed(FastbenchError):
    """A profiled script exited with a non-zero status or raised; ``profile`` is the profile
    of what ran, ``status`` the exit status Python would have given (the ``sys.exit`` code,
    1 for an exception), ``cause`` what the script raised."""

    def __init__(self, profile: SampleProfile, cause: BaseException) -> None:
        self.profile, self.cause = profile, cause
        self.status = exit_status(cause)
        what = (f"exited with status {self.status}" if isinstance(cause, SystemExit)
                else f"raised {type(cause).__name__}: {cause}")
        super().__init__(f"the profiled script {what}")


def exit_status(exc: BaseException) -> int:
    """The status Python exits with when ``exc`` ends the program: ``SystemExit``'s code
    (None is 0, an int itself, anything else 1 after printing it), else 1."""
    if not isinstance(exc, SystemExit) or exc.code is None:
        return 0 if isinstance(exc, SystemExit) else 1
    return exc.code if isinstance(exc.code, int) else 1


def _end_child(exc: BaseException | None) -> None:
    """In a process the script forked, its code ended here: exit as Python would, without
    returning into the profiler (which would report and save over its parent's profile)."""
    status = 0 if exc is None else exit_status(exc)
    if exc is not None and not isinstance(exc, SystemExit):
        import traceback
        traceback.print_exception(exc)
    elif isinstance(exc, SystemExit) and exc.code is not None and not isinstance(exc.code, int):
        print(exc.code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _run_script(path: str, owner: int) -> None:
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:  # sys.exit() / sys.exit(0) is how scripts end normally
        if os.getpid() != owner:
            _end_child(exc)
        if exc.code not in (None, 0):
            raise
    except BaseException as exc:
        if os.getpid() != owner:
            _end_child(exc)
        raise
    else:
        if os.getpid() != owner:
            _end_child(None)


def _call_loop(sampler: Sampler, call: Callable[[], Any], duration_s: float,
               entry_file: str | None, keep_on_failure: bool = False) -> SampleProfile:
    """Call ``call`` until ``duration_s`` has passed (at least once) under ``sampler``;
    this frame is the root of the profiled thread's stacks and is itself left out. With
    ``keep_on_failure``, an exception of ``call`` (not Ctrl-C) is :class:`ScriptFailed`
    holding the profile up to it."""
    sampler._start(sys._getframe(), include_root=False, entry_file=entry_file)
    failure: BaseException | None = None
    try:
        end = time.perf_counter() + duration_s
        while True:
            try:
                call()
            except (Exception, SystemExit) as exc:
                if not keep_on_failure:
                    raise
                failure = exc
                break
            sampler._calls += 1
            if time.perf_counter() >= end:
                break
    finally:
        sampler._stop()
    if failure is not None:
        raise ScriptFailed(sampler.result(), failure) from failure
    return sampler.result()


def _callable_name(fn: Callable[..., Any]) -> str:
    target = fn.func if isinstance(fn, functools.partial) else fn
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or type(target).__name__
    return f"{module}:{name}" if module else str(name)
