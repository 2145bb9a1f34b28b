"""The sampling profiler's result: SampleProfile, what :mod:`.sampler` saw (every sample's
stack per thread, and the sampler's own cost), with its tables (SampleRows of SampleRow),
text report, folded stacks and dict round trip; FunctionInfo and ThreadInfo name what the
samples saw. No framework import and no printing here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .._checks import check_bool, check_choice, check_int
from ..report.lines import TextLines, brief_repr, note_lines
from ..report.table import table
from ..stats.proportion import weighted_wilson_interval, wilson_interval
from ..units import format_ns, format_rel

__all__ = ["FunctionInfo", "SampleProfile", "SampleRow", "SampleRows", "ThreadInfo"]

# Each wait is the interval times a uniform draw in [1 - J, 1 + J]: a fixed period can lock
# onto a periodic workload (a loop whose iteration is a multiple of the period) and see the
# same phase every time; randomised intervals remove that aliasing (Mytkowicz et al.,
# "Evaluating the Accuracy of Java Profilers", PLDI 2010). The mean rate is unchanged.
_JITTER = 0.5

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

    def __repr__(self) -> str:
        top = f", top {self[0].name!r} {self[0].share:.1%}" if self else ""
        return brief_repr(self, f"{len(self)} rows by {self.by}{top}")

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

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.target!r}: {self.samples:,} samples over "
                                f"{self.wall_s:.3g} s, {len(self.functions)} functions")

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
