"""The statistical sampling profiler of any Python callable or script, with or without a
framework: a daemon thread reads every Python thread's stack (``sys._current_frames``) at
jittered intervals. Each sample counts the time since the one before, and each function's
and line's share of that time estimates its share of the wall time, with a Wilson interval
from the samples. Owns the sampler, SampleProfile (tables, text, folded stacks, dict round
trip); no framework import and no printing here.
"""

from __future__ import annotations

import functools
import math
import os
import random
import runpy
import sys
import threading
import time
import types
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .._checks import check_bool, check_choice, check_int, check_seconds
from ..errors import FastbenchError
from ..report.lines import TextLines, note_lines
from ..report.table import table
from ..stats.proportion import weighted_wilson_interval, wilson_interval
from ..units import format_ns, format_rel

__all__ = ["MIN_INTERVAL_S", "FunctionInfo", "SampleProfile", "SampleRow", "SampleRows",
           "Sampler", "ScriptFailed", "ThreadInfo", "sample", "sample_script"]

# The shortest interval accepted. One tick walks every thread's stack holding the GIL (about
# 10 µs of CPU for one shallow thread, more with more and deeper threads) and a sleeping
# thread wakes tens of µs late
# (Linux's default timer slack is 50 µs, prctl(2) PR_SET_TIMERSLACK): below 100 µs the
# sampler would mostly measure itself and hold the GIL a large part of the time.
MIN_INTERVAL_S = 1e-4

# Each wait is the interval times a uniform draw in [1 - J, 1 + J]: a fixed period can lock
# onto a periodic workload (a loop whose iteration is a multiple of the period) and see the
# same phase every time; randomised intervals remove that aliasing (Mytkowicz et al.,
# "Evaluating the Accuracy of Java Profilers", PLDI 2010). The mean rate is unchanged.
_JITTER = 0.5

# The switch interval during sampling, as a fraction of the sampling interval: a thread that
# runs Python holds the GIL until another thread has waited this long (sys.setswitchinterval),
# so with the default 5 ms a 1 ms sampler would fire late and at the holder's pace. Never
# raised above the value in force, never set below the floor (each forced switch costs).
_SWITCH_FRACTION = 0.1
_SWITCH_FLOOR_S = 1e-5

# A sample whose stack is empty once the profiler's own frames are dropped (the sample loop
# between two calls, runpy before a script's first line) counts under this name, so that
# every thread's self shares still sum to one.
_NO_FRAME = "(between calls)"

# Achieved rates below this fraction of the requested one get a note in the report.
_LOW_RATE = 0.5
# Fewer samples of the profiled thread than this get a note: the intervals are wide.
_FEW_SAMPLES = 100
# A tick more than this many intervals after the one before was kept out (the GIL, load).
_LATE_FACTOR = 3.0
# More of the sampled time than this in such ticks gets a note saying where it went.
_LATE_NOTE = 0.02

_DATA_VERSION = 1  # to_dict format; 1: first version


def _own_file() -> str:
    return sys._getframe().f_code.co_filename


# Frames of this module (the sample loop, the Sampler's enter/exit) never reach a table.
_OWN_FILE = _own_file()


@dataclass(frozen=True)
class FunctionInfo:
    """A function seen in the samples: ``name`` is "module:qualified name" (the module as
    ``__name__`` gives it, "__main__" for a script), ``file`` and ``first_line`` where its
    code starts."""

    name: str
    file: str
    first_line: int


@dataclass(frozen=True)
class ThreadInfo:
    """A thread seen in the samples: its name (``threading.Thread.name``, or "thread <id>"
    for one started outside ``threading``), its identifier and how many samples saw it."""

    name: str
    ident: int
    samples: int


@dataclass(frozen=True)
class SampleRow:
    """One row of a table: a function (``name`` "module:function") or a line (``name``
    "file:line", ``function`` the one it belongs to), its ``samples`` among the thread's
    samples, ``share`` = the time those samples count over the time all of the thread's
    samples count (:meth:`SampleProfile.sample_weights_s`) with its 95% Wilson interval
    ``share_ci`` (:func:`fastbench.stats.weighted_wilson_interval`), and ``time_s`` = share
    x the run's wall time."""

    name: str
    share: float
    share_ci: tuple[float, float]
    samples: int
    time_s: float
    file: str
    line: int
    function: str


class SampleRows(tuple[SampleRow, ...], TextLines):
    """Rows of one table (:meth:`SampleProfile.top`), largest first; printed as the table.
    ``by`` is "function" or "line"."""

    by: str = "function"

    def __new__(cls, rows: Iterable[SampleRow], by: str = "function") -> SampleRows:
        self = super().__new__(cls, tuple(rows))
        self.by = by
        return self

    def lines(self) -> list[str]:
        return _row_table(self, self.by == "line")


# A stack is a tuple of (function index, line) pairs, root first.
_Stack = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class SampleProfile(TextLines):
    """What the sampler saw: every sample's stack per thread, and the sampler's own cost.

    ``samples`` counts the sampler's ticks; at each tick every sampled thread gives one
    record ``(tick, thread index, stack index)``. ``tick_times_s`` holds each tick's
    deadline (the last it passed, for a late one), from the start; each tick counts the
    time since the tick before it (``sample_weights_s``). Shares are of that time
    over the samples of one thread (the profiled thread, the one that called
    :func:`sample`, by default): a function's *self* share counts the samples whose
    innermost frame it is, its *total* share those with it anywhere on the stack (once per
    sample, however deep the recursion).

    This is a wall-clock profile: a thread waiting on a lock or in native code that released
    the GIL is seen where it waits, at the Python line that called in. Native code that
    holds the GIL (``sorted`` of a long list, an extension that never releases it) keeps the
    sampler out until it returns; the tick that follows then ends a long stretch and counts
    all of it at the line the thread was on when it let the GIL go: most often the one that
    called in, though the freeing of what a function returns lands in its caller. Counting
    every sample alike would leave that time out: ``sorted`` taking 6% of a run read 0.6%
    so.
    """

    target: str
    interval_s: float
    wall_s: float
    overhead_cpu_s: float
    switch_interval_s: float
    calls: int
    profiled_thread: int
    threads: tuple[ThreadInfo, ...]
    functions: tuple[FunctionInfo, ...]
    stacks: tuple[_Stack, ...]
    tick_times_s: tuple[float, ...]
    records: tuple[tuple[int, int, int], ...]
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    # -- the run --------------------------------------------------------------------------

    @property
    def samples(self) -> int:
        """Ticks of the sampler: the samples of the profiled thread."""
        return len(self.tick_times_s)

    @property
    def rate_hz(self) -> float:
        """Achieved sampling rate, samples per second of wall time."""
        return self.samples / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def overhead_per_sample_s(self) -> float:
        """The sampler's CPU time per sample (its thread's ``time.thread_time``)."""
        return self.overhead_cpu_s / self.samples if self.samples else 0.0

    @property
    def overhead_fraction(self) -> float:
        """The sampler's CPU time as a fraction of the run's wall time: at most this much of
        the run was the sampler holding the GIL."""
        return self.overhead_cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    def thread_samples(self) -> dict[str, int]:
        """Samples per thread, by thread name."""
        return {t.name: t.samples for t in self.threads}

    @property
    def sample_weights_s(self) -> tuple[float, ...]:
        """The time each tick counts: from the tick before it (the first, from the start).
        Ticks are stamped with their deadline, so these are the jittered intervals; a tick
        the GIL kept out past several deadlines counts all of them."""
        if "weights" not in self._cache:
            ticks = self.tick_times_s
            self._cache["weights"] = tuple(
                max(t - (ticks[i - 1] if i else 0.0), 0.0) for i, t in enumerate(ticks))
        weights: tuple[float, ...] = self._cache["weights"]
        return weights

    @property
    def longest_gap_s(self) -> float:
        """The longest time one tick counts (0 without ticks)."""
        return max(self.sample_weights_s, default=0.0)

    def late_fraction(self, factor: float = _LATE_FACTOR) -> float:
        """The fraction of the sampled time counted by ticks more than ``factor`` intervals
        after the tick before them: time the sampler was kept out (native code holding the
        GIL, a loaded machine)."""
        weights = self.sample_weights_s
        total = sum(weights)
        if total <= 0.0:
            return 0.0
        return sum(w for w in weights if w > factor * self.interval_s) / total

    # -- tables ---------------------------------------------------------------------------

    def top(self, n: int = 10, by: str = "function", kind: str = "total",
            thread: str | None = None) -> SampleRows:
        """The ``n`` largest rows, largest share first.

        Parameters
        ----------
        n : int
            How many rows (at least 1).
        by : {"function", "line"}
            Functions ("module:function") or lines ("file:line").
        kind : {"total", "self"}
            Samples with the item anywhere on the stack, or as the innermost frame.
        thread : str, optional
            A thread's name; the profiled thread by default.

        Raises
        ------
        ValueError
            On an unknown ``by``, ``kind`` or thread name; TypeError if ``n`` is not an int.
        """
        count = check_int("n", n, 1)
        by = check_choice("by", by, ("function", "line"))
        rows = self._table(by, check_choice("kind", kind, ("total", "self")),
                           self._thread_index(thread))
        return SampleRows(rows[:count], by)

    def _thread_index(self, thread: str | None) -> int:
        if thread is None:
            return self.profiled_thread
        for i, info in enumerate(self.threads):
            if info.name == thread:
                return i
        raise ValueError(f"thread must be one of {[t.name for t in self.threads]}, "
                         f"got {thread!r}")

    def _table(self, by: str, kind: str, thread: int) -> list[SampleRow]:
        key = f"{by}/{kind}/{thread}"
        if key not in self._cache:
            self._cache[key] = self._build_table(by, kind, thread)
        rows: list[SampleRow] = self._cache[key]
        return rows

    def _build_table(self, by: str, kind: str, thread: int) -> list[SampleRow]:
        weights = self.sample_weights_s
        per_stack: dict[int, list[float]] = {}  # stack -> [samples, time, time²]
        for tick, t, stack_index in self.records:
            if t == thread:
                w = weights[tick]
                sums = per_stack.setdefault(stack_index, [0.0, 0.0, 0.0])
                sums[0] += 1
                sums[1] += w
                sums[2] += w * w
        total = [sum(v[i] for v in per_stack.values()) for i in range(3)]
        found: dict[tuple[int, int], list[float]] = {}  # (function, line or -1) -> sums
        depth: dict[tuple[int, int], int] = {}  # the shallowest depth an item was seen at
        for stack_index, sums in per_stack.items():
            stack = self.stacks[stack_index]
            for item, level in self._items(stack, by, kind).items():
                into = found.setdefault(item, [0.0, 0.0, 0.0])
                for i in range(3):
                    into[i] += sums[i]
                depth[item] = min(level, depth.get(item, level))
        # Ties (a caller whose every sample is in one callee) list the caller first.
        order = sorted(found, key=lambda item: (-found[item][1], -found[item][0], depth[item],
                                                item))
        return [self._row(func, line, found[func, line], total) for func, line in order]

    def _items(self, stack: _Stack, by: str, kind: str) -> dict[tuple[int, int], int]:
        """What one stack counts for, each (function, line or -1) once, with its depth: a
        recursive function, or a line seen twice, counts once per sample."""
        if not stack:
            return {(-1, -1): 0}
        if kind == "self":
            func, line = stack[-1]
            return {(func, line if by == "line" else -1): len(stack) - 1}
        items: dict[tuple[int, int], int] = {}
        if by == "function":
            for level, (func, _) in enumerate(stack):
                items.setdefault((func, -1), level)
            return items
        seen: set[tuple[str, int]] = set()
        for level, (func, line) in enumerate(stack):
            where = (self.functions[func].file, line)
            if where not in seen:
                seen.add(where)
                items[func, line] = level
        return items

    def _row(self, func: int, line: int, sums: list[float], total: list[float]) -> SampleRow:
        hits = int(sums[0])
        if total[1] > 0.0:
            share = sums[1] / total[1]
            ci = weighted_wilson_interval(sums[1], sums[2], total[1], total[2])
        else:  # every tick at time 0: nothing to weigh, count them
            share = hits / total[0]
            ci = wilson_interval(hits, int(total[0]))
        if func < 0:
            return SampleRow(_NO_FRAME, share, ci, hits, share * self.wall_s, "", 0, _NO_FRAME)
        info = self.functions[func]
        name = info.name if line < 0 else f"{info.file}:{line}"
        return SampleRow(name, share, ci, hits, share * self.wall_s, info.file,
                          info.first_line if line < 0 else line, info.name)

    # -- exports --------------------------------------------------------------------------

    def folded_stacks(self, thread: str | None = None, lines: bool = False) -> str:
        """Stacks in the folded format of flame graphs (Brendan Gregg's ``flamegraph.pl``,
        speedscope, inferno): one ``root;...;leaf value`` line per distinct stack, the value
        the time its samples count (``sample_weights_s``) in whole microseconds, at least 1,
        so that the graph's widths are the tables' shares.

        Parameters
        ----------
        thread : str, optional
            One thread's stacks only; by default every thread's, each stack rooted at its
            thread's name so that each thread is its own tower.
        lines : bool
            Name frames "module:function:line" instead of "module:function".

        Returns
        -------
        str
            Lines sorted by stack; the values sum to the time the samples shown count (all
            threads' records, or the one thread's samples), within a microsecond per line. A
            sample between profiled calls is the frame "(between calls)".
        """
        check_bool("lines", lines)
        only = None if thread is None else self._thread_index(thread)
        weights = self.sample_weights_s
        times: dict[str, float] = {}
        for tick, t, stack_index in self.records:
            if only is not None and t != only:
                continue
            frames = [self._frame_label(func, line, lines) for func, line in
                      self.stacks[stack_index]] or [_NO_FRAME]
            if only is None:
                frames.insert(0, _fold_safe(self.threads[t].name))
            key = ";".join(frames)
            times[key] = times.get(key, 0.0) + weights[tick]
        return "".join(f"{stack} {max(1, round(seconds * 1e6))}\n"
                       for stack, seconds in sorted(times.items()))

    def _frame_label(self, func: int, line: int, lines: bool) -> str:
        name = self.functions[func].name
        return _fold_safe(f"{name}:{line}" if lines else name)

    def to_dict(self) -> dict[str, Any]:
        """The profile as JSON-able plain data (:meth:`from_dict` reads it back)."""
        return {
            "version": _DATA_VERSION,
            "target": self.target,
            "interval_s": self.interval_s,
            "wall_s": self.wall_s,
            "overhead_cpu_s": self.overhead_cpu_s,
            "switch_interval_s": self.switch_interval_s,
            "calls": self.calls,
            "profiled_thread": self.profiled_thread,
            "threads": [[t.name, t.ident, t.samples] for t in self.threads],
            "functions": [[f.name, f.file, f.first_line] for f in self.functions],
            "stacks": [[[func, line] for func, line in s] for s in self.stacks],
            "tick_times_s": list(self.tick_times_s),
            "records": [list(r) for r in self.records],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SampleProfile:
        """A profile from :meth:`to_dict`'s data.

        Raises
        ------
        ValueError
            If a field is missing, of the wrong shape, or points outside its table.
        """
        try:
            if data["version"] != _DATA_VERSION:
                raise ValueError(f"version {data['version']!r} is not {_DATA_VERSION}")
            threads = tuple(ThreadInfo(str(n), int(i), int(s)) for n, i, s in data["threads"])
            functions = tuple(FunctionInfo(str(n), str(f), int(ln))
                              for n, f, ln in data["functions"])
            stacks = tuple(tuple((int(f), int(ln)) for f, ln in s) for s in data["stacks"])
            ticks = tuple(float(t) for t in data["tick_times_s"])
            records = tuple((int(k), int(t), int(s)) for k, t, s in data["records"])
            profile = cls(str(data["target"]), float(data["interval_s"]), float(data["wall_s"]),
                          float(data["overhead_cpu_s"]), float(data["switch_interval_s"]),
                          int(data["calls"]), int(data["profiled_thread"]), threads, functions,
                          stacks, ticks, records)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"SampleProfile data is malformed: {exc}") from None
        # Times within what a profile can hold (a day of sampling, intervals of at most a
        # second): beyond them shares and intervals overflow when shown.
        times = (profile.interval_s, profile.wall_s, profile.overhead_cpu_s,
                 profile.switch_interval_s, *ticks)
        if not (all(math.isfinite(t) and 0.0 <= t <= 1e6 for t in times)
                and 0.0 < profile.interval_s <= 1.0 and profile.calls >= 0):
            raise ValueError("SampleProfile data is malformed: a time out of range (each from "
                             "0 to 1e6 s, the interval above 0 and at most 1 s)")
        bad = ([r for r in records if not (0 <= r[0] < len(ticks) and 0 <= r[1] < len(threads)
                                           and 0 <= r[2] < len(stacks))][:1]
               + [s for s in stacks if any(not 0 <= f < len(functions) for f, _ in s)][:1])
        if bad or not 0 <= profile.profiled_thread < len(threads):
            raise ValueError(f"SampleProfile data is malformed: an index out of range {bad[:1]}")
        return profile

    # -- text -----------------------------------------------------------------------------

    def lines(self, n: int = 10) -> list[str]:
        """The report: the run, the sampler's cost, the threads, then the top ``n``
        functions by total share and lines by self share of the profiled thread."""
        thread = self.threads[self.profiled_thread]
        out = [f"Sampling profile of {self.target}: {self.samples} samples in "
               f"{format_ns(self.wall_s * 1e9)}"
               + (f" ({self.calls} calls)" if self.calls else ""),
               f"  sampling: {self.rate_hz:.0f} Hz achieved, every "
               f"{format_ns(self.interval_s * 1e9)} ± {_JITTER:.0%} requested "
               f"({1.0 / self.interval_s:.0f} Hz); each sample counts the interval before "
               f"it, a late one every deadline it passed (at most "
               f"{format_ns(self.longest_gap_s * 1e9)})",
               f"  sampler overhead: {format_ns(self.overhead_per_sample_s * 1e9)} CPU per "
               f"sample, {format_rel(self.overhead_fraction)} of the run (GIL switch interval "
               f"{format_ns(self.switch_interval_s * 1e9)} while sampling)",
               "  threads: " + ", ".join(
                   f"{t.name} {t.samples}" + (" (profiled)" if i == self.profiled_thread else "")
                   for i, t in enumerate(self.threads))]
        out.append(f"Functions by total share of {thread.name}'s sampled time "
                   "(95% Wilson interval):")
        out += ["  " + line for line in self.top(n, "function", "total").lines()]
        out.append(f"Lines by self share of {thread.name}'s sampled time:")
        out += ["  " + line for line in self.top(n, "line", "self").lines()]
        notes = []
        if self.samples < _FEW_SAMPLES:
            notes.append(f"only {self.samples} samples: shares are rough (run longer or "
                         "sample more often)")
        late = self.late_fraction()
        if late > _LATE_NOTE:
            notes.append(f"{format_rel(late)} of the sampled time fell in gaps over "
                         f"{_LATE_FACTOR:g}x the interval: the sampler was kept out, by native "
                         "code holding the GIL or a loaded machine; each sample after such a gap "
                         "counts all of it, at the line the thread was on when it let the GIL "
                         "go (the one that called in)")
        if self.rate_hz < _LOW_RATE / self.interval_s:
            notes.append(f"the sampler reached {format_rel(self.rate_hz * self.interval_s)} of "
                         "the requested rate: the machine is loaded or the interval too short")
        return out + note_lines(notes)


def _fold_safe(name: str) -> str:
    """A frame name the folded format can hold: no ';' (the frame separator) or newline."""
    return name.replace(";", ":").replace("\n", " ")


def _row_table(rows: Sequence[SampleRow], lines: bool) -> list[str]:
    cells = [[f"{r.share * 100:.1f}%",
              f"[{r.share_ci[0] * 100:.1f}, {r.share_ci[1] * 100:.1f}]",
              str(r.samples), format_ns(r.time_s * 1e9),
              r.function + (f"  {_short(r.file)}:{r.line}" if r.file else "")]
             for r in rows]
    what = "function, line" if lines else "function, first line"
    return table(["share", "95% CI %", "samples", "time", what], cells, indent="",
                 align="rrrrl")


def _short(path: str) -> str:
    """A file's path relative to the working directory when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


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
