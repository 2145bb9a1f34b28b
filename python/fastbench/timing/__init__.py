"""Timing a callable, a block or a statement with the native loop: measure, Timer, timeit.

Owns argument checking and the order of a run (calibrate, warm up, floors, samples, and
more samples while a precision target is unmet). The loop itself, the clocks and the
loops-per-sample search are native (fastbench._core); nothing here times anything with a
Python clock. fastbench.compare drives the same targets, interleaved.
"""

from __future__ import annotations

import gc
import itertools
import keyword
import math
import textwrap
import types
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from .. import _core
from .._checks import check_bool
from .clocks import resolve_clock
from ..counters import CountersUnavailable, check_events, count_samples
from ..measurement import Measurement, measurement_warnings, relative_half_width
from ..memory import call_memory
from .phases import timing_phases
from ..stats import median_ci

__all__ = ["Measurement", "Timer", "measure", "timeit"]

# Samples taken of each floor (empty native loop, no-op call) at the measured loops count.
_FLOOR_SAMPLES = 9
# Default duration of one sample. Short samples are the point: a burst of interference
# (another process, the hypervisor) then spoils only the few samples it overlaps.
DEFAULT_SAMPLE_S = 1e-4
# Default minimum wall time of the counted samples. The speed of a shared machine wanders
# by several percent over a few hundred milliseconds; a median over a second of short
# samples averages that wander out, where 0.1 s of samples reports whichever phase it hit.
DEFAULT_DURATION_S = 1.0
# With a precision target and no budget, sampling stops after this long all the same.
DEFAULT_ADAPTIVE_BUDGET_S = 10.0
# When interference phases covered more than half of the duration_s sampling, sampling goes
# on (in steps of a tenth of duration_s) until quiet phases add up to half of duration_s, or
# until this many times duration_s have passed, whichever comes first (within max_time_s).
QUIET_EXTENSION = 3.0
# memory=True: untracked calls, then calls tracked one by one (median and max reported).
MEMORY_WARMUP = 1
MEMORY_CALLS = 3


# -- argument checks ------------------------------------------------------------------------
def _check_count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0.0:
        raise ValueError(f"{name} must be finite and > 0 seconds, got {value!r}")
    return seconds


def _check_fraction(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    fraction = float(value)
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"{name} must be in (0, 1) (e.g. 0.01 for ±1%), got {value!r}")
    return fraction


@dataclass(frozen=True)
class RunConfig:
    """Validated settings of a run (see :func:`measure` for their meaning)."""

    warmup: int
    min_time_s: float
    repeat: int
    loops: int | None
    clock: str
    disable_gc: bool
    max_time_s: float | None
    target_rel_ci: float | None = None
    duration_s: float | None = None
    counters: tuple[str, ...] | None = None
    counters_missing: str = "raise"


def run_config(
    warmup: object,
    min_time_s: object,
    repeat: object,
    loops: object,
    clock: object,
    disable_gc: object,
    max_time_s: object,
    target_rel_ci: object = None,
    duration_s: object = None,
    counters: object = None,
    counters_missing: object = "raise",
) -> RunConfig:
    """Check every setting of a run, raising TypeError/ValueError with the reason."""
    return RunConfig(
        warmup=_check_count("warmup", warmup, 0),
        min_time_s=_check_seconds("min_time_s", min_time_s),
        repeat=_check_count("repeat", repeat, 1),
        loops=None if loops is None else _check_count("loops", loops, 1),
        clock=resolve_clock(clock),  # type: ignore[arg-type]  # checked inside
        disable_gc=bool(disable_gc),
        max_time_s=None if max_time_s is None else _check_seconds("max_time_s", max_time_s),
        target_rel_ci=None if target_rel_ci is None else _check_fraction("target_rel_ci", target_rel_ci),
        duration_s=None if duration_s is None else _check_seconds("duration_s", duration_s),
        counters=None if counters is None else tuple(check_events(counters)),  # type: ignore[arg-type]
        counters_missing=_check_missing(counters_missing),
    )


def _with_memory(m: Measurement, fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any], cfg: RunConfig) -> Measurement:
    """``m`` with the peak memory per call of ``fn``, tracked after the timed samples (so
    tracking never runs inside them), with the GC paused as it was for them."""
    with gc_paused(cfg.disable_gc):
        return replace(m, memory=call_memory(fn, args, kwargs, calls=MEMORY_CALLS,
                                             warmup=MEMORY_WARMUP))


def _check_missing(value: object) -> str:
    if value not in ("raise", "skip"):
        raise ValueError(f"counters_missing must be 'raise' or 'skip', got {value!r}")
    return str(value)


@contextmanager
def gc_paused(pause: bool) -> Iterator[None]:
    """Disable the cyclic GC for the block if asked, restoring its previous state."""
    was_enabled = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause and was_enabled:
            gc.enable()


def _median_mad(values: NDArray[np.float64]) -> tuple[float, float]:
    med = float(np.median(values))
    return med, float(np.median(np.abs(values - med)))


# -- targets --------------------------------------------------------------------------------
class Target:
    """One timed thing: its native sampler, a no-op sampler for its call floor, its clock.

    The steps of a run are methods so that :func:`measure` runs them in a row and
    ``fastbench.compare`` interleaves the sampling of several targets.
    """

    def __init__(self, sampler: _core.Sampler, floor: _core.Sampler, clock: str,
                 floor_kind: str, name: str) -> None:
        self.sampler = sampler
        self.floor = floor
        self.clock = clock
        self.floor_kind = floor_kind
        self.name = name
        self.loops = 0
        self.calibration_trials = 0
        self.warmup_ns: NDArray[np.float64] = np.empty(0)
        self.floors: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)

    def prepare(self, cfg: RunConfig) -> None:
        """Choose loops (unless fixed), run the warmup samples, measure both floors."""
        if cfg.loops is None:
            cal = self.sampler.calibrate(cfg.min_time_s)
            self.loops, self.calibration_trials = int(cal.loops), int(cal.trials)
        else:
            self.loops, self.calibration_trials = cfg.loops, 0
        warm = self.sampler.run(self.loops, cfg.warmup).sample_ns if cfg.warmup else []
        self.warmup_ns = np.asarray(warm, dtype=np.float64) / self.loops
        empty = _core.Sampler.empty(self.clock).run(self.loops, _FLOOR_SAMPLES).sample_ns
        noop = self.floor.run(self.loops, _FLOOR_SAMPLES).sample_ns
        self.floors = (*_median_mad(np.asarray(empty, dtype=np.float64) / self.loops),
                       *_median_mad(np.asarray(noop, dtype=np.float64) / self.loops))

    def sample(self, n: int, max_time_s: float = 0.0) -> tuple[list[float], bool, float]:
        """Take up to ``n`` samples: (per-call ns each, budget ran out, elapsed s)."""
        run = self.sampler.run(self.loops, n, max_time_s)
        return [x / self.loops for x in run.sample_ns], bool(run.budget_exhausted), float(run.elapsed_s)

    def measurement(self, samples_ns: list[float], elapsed_s: float, stop_reason: str,
                    cfg: RunConfig) -> Measurement:
        """The Measurement of this target's samples, with its warnings."""
        overhead, overhead_mad, floor, floor_mad = self.floors
        m = Measurement(
            samples_ns=np.asarray(samples_ns, dtype=np.float64),
            loops=self.loops,
            warmup_samples_ns=self.warmup_ns,
            clock=self.clock,
            overhead_ns=overhead,
            overhead_mad_ns=overhead_mad,
            call_floor_ns=floor,
            call_floor_mad_ns=floor_mad,
            call_floor_kind=self.floor_kind,
            name=self.name,
            calibration_trials=self.calibration_trials,
            elapsed_s=elapsed_s,
            target_rel_ci=cfg.target_rel_ci,
            stop_reason=stop_reason,
        )
        return replace(m, warnings=measurement_warnings(m, _core.auto_clock()[1]))


def _fill_duration(target: Target, cfg: RunConfig, samples: list[float],
                   elapsed: float) -> tuple[float, bool]:
    """More samples until ``cfg.duration_s`` of counted sampling has passed, within the
    budget: (elapsed s, whether the budget ended it)."""
    goal = cfg.duration_s or 0.0
    if cfg.max_time_s is not None:
        goal = min(goal, cfg.max_time_s)
    while elapsed < goal and samples:
        per_sample = elapsed / len(samples)
        # The native run stops when the time left is spent; the count only sizes its buffer.
        n = int((goal - elapsed) / max(per_sample, 1e-7) * 1.25) + 8
        more, _, spent = target.sample(min(n, 1_000_000), goal - elapsed)
        samples += more
        elapsed += spent
    return elapsed, cfg.max_time_s is not None and goal == cfg.max_time_s and elapsed >= goal


def _wait_out_interference(target: Target, cfg: RunConfig, samples: list[float],
                           elapsed: float) -> tuple[float, bool]:
    """More samples while interference phases hold more than half of ``duration_s``: until
    the quiet samples span half of it or QUIET_EXTENSION x ``duration_s`` have passed
    (within the budget). Returns (elapsed s, whether the budget ended it)."""
    goal = cfg.duration_s or 0.0
    limit = goal * QUIET_EXTENSION
    if cfg.max_time_s is not None:
        limit = min(limit, cfg.max_time_s)
    while elapsed < limit:
        x = np.asarray(samples)
        quiet_s = float(x[timing_phases(x, target.loops).quiet].sum()) * target.loops * 1e-9
        if quiet_s >= goal / 2.0:
            return elapsed, False
        step = min(goal / 10.0, limit - elapsed)
        more, _, spent = target.sample(int(step / (elapsed / len(samples)) * 1.25) + 8, step)
        samples += more
        elapsed += spent
    return elapsed, cfg.max_time_s is not None and limit == cfg.max_time_s


def _collect(target: Target, cfg: RunConfig) -> Measurement:
    """Counted samples: ``repeat`` of them, then more until ``duration_s`` has passed (and
    more while interference phases held most of it), then more while the precision target
    is unmet."""
    samples, exhausted, elapsed = target.sample(cfg.repeat, cfg.max_time_s or 0.0)
    if exhausted:  # the budget ended even the minimum of `repeat` samples
        return target.measurement(samples, elapsed, "max_time_s", cfg)
    reason = "repeat"
    if cfg.duration_s is not None and elapsed < cfg.duration_s:
        elapsed, exhausted = _fill_duration(target, cfg, samples, elapsed)
        if exhausted:  # a budget shorter than duration_s
            return target.measurement(samples, elapsed, "max_time_s", cfg)
        elapsed, exhausted = _wait_out_interference(target, cfg, samples, elapsed)
        if exhausted:
            return target.measurement(samples, elapsed, "max_time_s", cfg)
        reason = "duration_s"
    if cfg.target_rel_ci is None:
        return target.measurement(samples, elapsed, reason, cfg)
    budget = cfg.max_time_s or DEFAULT_ADAPTIVE_BUDGET_S
    while True:
        quiet = np.asarray(samples)[timing_phases(samples, target.loops).quiet]
        rel = relative_half_width(median_ci(quiet), float(np.median(quiet)))
        if rel is not None and rel <= cfg.target_rel_ci:
            return target.measurement(samples, elapsed, "target_rel_ci", cfg)
        remaining = budget - elapsed
        if remaining <= 0.0:
            return target.measurement(samples, elapsed, "max_time_s", cfg)
        # Grow by a quarter at a time: the CI narrows as 1/sqrt(n), so this converges in a
        # handful of rounds without overshooting the target by much.
        more, _, spent = target.sample(max(5, len(samples) // 4), remaining)
        samples += more
        elapsed += spent


def run_target(target: Target, cfg: RunConfig) -> Measurement:
    """Prepare ``target`` and collect its samples with the GC paused as configured."""
    if cfg.counters is not None and cfg.counters_missing == "raise":
        lacking = {p.name: p.reason for p in map(_core.probe_event, cfg.counters)
                   if not p.available}
        if lacking:  # before the timed samples, not after them
            raise CountersUnavailable(lacking, "counters_missing='skip'")
    with gc_paused(cfg.disable_gc):
        target.prepare(cfg)
        m = _collect(target, cfg)
        if cfg.counters is None:
            return m
        # Counted samples come after the timed ones, so reading the counters never sits
        # between two clock reads; they run the same loops per sample.
        loops = target.loops
        empty = _core.Sampler.empty(target.clock)
        counts = count_samples(lambda: target.sampler.run(loops, 1), cfg.counters, loops=loops,
                               samples=cfg.repeat, missing=cfg.counters_missing,
                               empty_sample=lambda: empty.run(1, 1),
                               missing_option="counters_missing='skip'")
        return replace(m, counters=counts)


# -- the call floor -------------------------------------------------------------------------
_NATIVE_TYPES = (
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)


def _python_noop(nargs: int, kwnames: tuple[str, ...]) -> Callable[..., None]:
    """A Python function that does nothing, taking exactly these arguments."""
    params = [f"_p{i}" for i in range(nargs)]
    plain = all(k.isidentifier() and not keyword.iskeyword(k) and k not in params for k in kwnames)
    if kwnames and plain:
        params += ["*", *(f"{k}=None" for k in kwnames)]
    elif kwnames:
        params.append("**kwargs")  # names a def cannot spell: accept them all
    namespace: dict[str, Any] = {}
    exec(f"def noop({', '.join(params)}):\n    return None\n", namespace)  # noqa: S102
    noop: Callable[..., None] = namespace["noop"]
    return noop


def _call_floor(fn: Callable[..., Any], nargs: int, kwnames: tuple[str, ...]) -> tuple[Any, str]:
    if isinstance(fn, _NATIVE_TYPES):
        return _core.noop, "native"
    return _python_noop(nargs, kwnames), "python"


def _label(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def callable_target(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                    clock: str, name: str | None = None) -> Target:
    """A Target calling ``fn(*args, **kwargs)`` through vectorcall, with its call floor."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    floor_fn, floor_kind = _call_floor(fn, len(args), tuple(kwargs))
    return Target(
        _core.Sampler.calls(fn, args, kwargs, clock),
        _core.Sampler.calls(floor_fn, args, kwargs, clock),
        clock, floor_kind, _label(fn) if name is None else name,
    )


def statement_target(stmt: str, setup: str, glob: dict[str, Any], clock: str,
                     name: str | None = None) -> Target:
    """A Target running ``stmt`` in a compiled inner loop; its floor is ``pass`` there."""
    inner = _compile_inner(stmt, setup, glob, clock)
    floor = _compile_inner("pass", setup, glob, clock)
    return Target(_core.Sampler.inner(inner, clock), _core.Sampler.inner(floor, clock),
                  clock, "statement", stmt if name is None else name)


def measure(
    fn: Callable[..., Any],
    /,
    *args: Any,
    warmup: int = 1,
    min_time_s: float = DEFAULT_SAMPLE_S,
    repeat: int = 100,
    duration_s: float | None = DEFAULT_DURATION_S,
    loops: int | None = None,
    clock: str = "auto",
    disable_gc: bool = True,
    max_time_s: float | None = None,
    target_rel_ci: float | None = None,
    name: str | None = None,
    counters: Sequence[str] | None = None,
    counters_missing: str = "raise",
    memory: bool = False,
    **kwargs: Any,
) -> Measurement:
    """Time ``fn(*args, **kwargs)`` with the native loop.

    The arguments are bound once; each sample reads the clock, calls ``fn`` ``loops``
    times through the vectorcall protocol, and reads the clock again.

    Parameters
    ----------
    fn : callable
        What to time. Its own keyword arguments go in ``**kwargs``; use
        ``functools.partial`` for keywords that clash with the ones below.
    warmup : int
        Samples run before the counted ones and kept apart (``warmup_samples_ns``).
    min_time_s : float
        Minimum duration of one sample in seconds (default 100 µs); ``loops`` is chosen to
        reach it (and at least 1000 clock-resolution steps). Short samples are the default
        on purpose: a burst of interference (another process, the hypervisor) then spoils
        only the few samples it overlaps, which the median ignores, instead of inflating
        long ones. Search: start at 1 loop, scale by the predicted ratio (x2..x100 per
        trial); usually two or three trials.
    repeat : int
        Minimum number of counted samples.
    duration_s : float or None
        Minimum wall time of the counted samples (default 1 s): after ``repeat`` samples,
        sampling goes on until this much time has passed (``stop_reason == "duration_s"``).
        A shared machine's speed wanders by several percent over hundreds of
        milliseconds; spreading the samples over a second makes the median of one run
        agree with the next. ``None`` stops at ``repeat`` samples. ``max_time_s`` caps it.
        When interference phases (stretches in which every sample ran slower, see
        ``Measurement.phases``) held more than half of that time, sampling goes on until
        quiet phases add up to half of ``duration_s``, for at most 3 x ``duration_s`` in
        all. The reported median is over the quiet-phase samples.
    loops : int, optional
        Fixed calls per sample; skips the search.
    clock : {"auto", "tsc", "steady"}
        ``fastbench.clocks()`` tells what "auto" picks and why.
    disable_gc : bool
        Pause the cyclic garbage collector during the run (restored afterwards).
    max_time_s : float, optional
        Time budget in seconds for the counted samples; sampling stops when it is spent
        (``stop_reason == "max_time_s"``). At least one sample is always taken.
    target_rel_ci : float, optional
        Keep sampling until the 95% CI of the median is within ``±target_rel_ci`` of the
        median (e.g. 0.01 for ±1%; ``stop_reason == "target_rel_ci"``) or the budget ends
        (``max_time_s``, 10 s when not given). Batches grow by a quarter of the samples so far.
    name : str, optional
        Label for reports; defaults to the callable's qualified name.
    counters : sequence of str, optional
        Events to count per sample (``fastbench.counters.event_names()``). After the timed
        samples, ``repeat`` more samples of the same loops run with the counters read
        before and after each; ``Measurement.counters`` holds the counts per call (median
        over samples, multiplex-scaled, net of an empty sample's reading) and derived
        metrics. Timed samples never include a counter read.
    counters_missing : {"raise", "skip"}
        An event that cannot be opened here raises ``CountersUnavailable`` naming it and
        the reason, or, with "skip", is listed in ``Measurement.counters.skipped``.
    memory : bool
        Also measure the peak memory of one call (``Measurement.memory``, a
        ``fastbench.memory.CallMemory``): after the timed and counted samples, one
        untracked call, then 3 calls each inside ``fastbench.memory.track()``; the peak RSS
        increase (median and max over the 3) and the Python heap peak per call. Timed
        samples never run under tracking.

    Returns
    -------
    Measurement
        With ``summary`` and ``warnings`` (high variation, few samples, bimodal, drift,
        clock fallback, unmet precision target).

    Raises
    ------
    TypeError
        ``fn`` is not callable, a count or duration has the wrong type, or ``memory`` is
        not a bool.
    ValueError
        A count below its minimum, a non-finite or non-positive duration, a target outside
        (0, 1), an unknown clock.
    ClockUnavailable
        The requested clock cannot be used here.
    KeyboardInterrupt
        Ctrl-C, noticed between samples.
    Exception
        Whatever ``fn`` raises propagates unchanged, with its traceback, after cleanup.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    cfg = run_config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s,
                     target_rel_ci, duration_s, counters, counters_missing)
    track_memory = check_bool("memory", memory)
    m = run_target(callable_target(fn, tuple(args), dict(kwargs), cfg.clock, name), cfg)
    return _with_memory(m, fn, tuple(args), dict(kwargs), cfg) if track_memory else m


# -- statements -----------------------------------------------------------------------------
_INNER_TEMPLATE = """\
def inner(_loops, _start=_start, _stop=_stop, _repeat=_repeat, _clock=_clock):
    {setup}
    _it = _repeat(None, _loops)
    _t0 = _start(_clock)
    for _i in _it:
        {stmt}
    _t1 = _stop(_clock)
    return _t1 - _t0
"""


def _compile_inner(stmt: str, setup: str, glob: dict[str, Any], clock: str) -> Any:
    """Compile ``stmt`` into an inner loop the way the stdlib's timeit does."""
    for label, src in (("stmt", stmt), ("setup", setup)):
        if not isinstance(src, str):
            raise TypeError(f"{label} must be a str, got {type(src).__name__}")
        compile(src, f"<fastbench-{label}>", "exec")  # report syntax errors against the source
    src = _INNER_TEMPLATE.format(
        setup=textwrap.indent(setup, " " * 4).strip() or "pass",
        stmt=textwrap.indent(stmt, " " * 8).strip() or "pass",
    )
    local_ns: dict[str, Any] = {
        "_start": _core.read_start,
        "_stop": _core.read_stop,
        "_repeat": itertools.repeat,
        "_clock": clock,
    }
    exec(compile(src, "<fastbench-timeit>", "exec"), glob, local_ns)  # noqa: S102
    return local_ns["inner"]


_STEPS_TEMPLATE = """\
def steps():
    {setup}
    while True:
        yield
        {stmt}
"""


def _statement_calls(stmt: str, setup: str, glob: dict[str, Any]) -> Callable[[], None]:
    """A callable running ``stmt`` once per call in the scope ``setup`` prepared, as the
    timed inner loop does; ``setup`` runs once, before the first call."""
    src = _STEPS_TEMPLATE.format(
        setup=textwrap.indent(setup, " " * 4).strip() or "pass",
        stmt=textwrap.indent(stmt, " " * 8).strip() or "pass",
    )
    local_ns: dict[str, Any] = {}
    exec(compile(src, "<fastbench-memory>", "exec"), glob, local_ns)  # noqa: S102
    steps = local_ns["steps"]()
    next(steps)  # runs setup and stops before the first statement

    def once() -> None:
        next(steps)

    return once


def timeit(
    stmt: str | Callable[[], Any] = "pass",
    setup: str = "pass",
    globals: dict[str, Any] | None = None,  # noqa: A002 - the stdlib's name
    *,
    warmup: int = 1,
    min_time_s: float = DEFAULT_SAMPLE_S,
    repeat: int = 100,
    duration_s: float | None = DEFAULT_DURATION_S,
    loops: int | None = None,
    clock: str = "auto",
    disable_gc: bool = True,
    max_time_s: float | None = None,
    target_rel_ci: float | None = None,
    memory: bool = False,
) -> Measurement:
    """Time a statement string like :func:`timeit.timeit`, with fastbench's clocks and stats.

    ``stmt`` is compiled into a ``for`` loop inside a function (as the stdlib does) that
    reads the native clock before and after the loop; ``setup`` runs once per sample,
    outside the timed region. The call floor is the same loop around ``pass``. A callable
    ``stmt`` is timed with :func:`measure`. Other parameters are those of :func:`measure`;
    with ``memory=True`` each tracked call runs ``stmt`` once, ``setup`` having run once
    before them outside the tracked regions.

    Raises
    ------
    SyntaxError
        ``stmt`` or ``setup`` does not compile.
    """
    if callable(stmt):
        return measure(
            stmt, warmup=warmup, min_time_s=min_time_s, repeat=repeat, duration_s=duration_s,
            loops=loops, clock=clock, disable_gc=disable_gc, max_time_s=max_time_s,
            target_rel_ci=target_rel_ci, memory=memory,
        )
    cfg = run_config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s,
                     target_rel_ci, duration_s)
    track_memory = check_bool("memory", memory)
    glob = {} if globals is None else globals
    m = run_target(statement_target(stmt, setup, glob, cfg.clock), cfg)
    if not track_memory:
        return m
    return _with_memory(m, _statement_calls(stmt, setup, glob), (), {}, cfg)


class Timer:
    """Time a block: ``with fastbench.Timer() as t: ...`` then ``t.elapsed_ns``.

    Reads the native clock (fenced TSC where "auto" picks it) on entry and exit. The
    figure includes the cost of one clock read pair and one Python-level call (about
    0.1-0.3 µs): use :func:`measure` for anything shorter than tens of microseconds.
    """

    def __init__(self, clock: str = "auto") -> None:
        self.clock = resolve_clock(clock)
        self._start: int | None = None
        self._elapsed_ns: float | None = None

    def __enter__(self) -> Timer:
        self._elapsed_ns = None
        self._start = _core.read_start(self.clock)
        return self

    def __exit__(self, *exc: object) -> None:
        stop = _core.read_stop(self.clock)
        if self._start is None:
            raise RuntimeError("Timer exited without being entered")
        self._elapsed_ns = _core.ticks_to_ns(self.clock, stop - self._start)

    @property
    def elapsed_ns(self) -> float:
        """Elapsed time in ns; while the block runs, the time so far.

        Raises
        ------
        RuntimeError
            If the timer was never entered.
        """
        if self._elapsed_ns is not None:
            return self._elapsed_ns
        if self._start is None:
            raise RuntimeError("Timer was not started: use it as `with Timer() as t:`")
        return _core.ticks_to_ns(self.clock, _core.read_stop(self.clock) - self._start)

    @property
    def elapsed_s(self) -> float:
        """Elapsed time in seconds."""
        return self.elapsed_ns * 1e-9
