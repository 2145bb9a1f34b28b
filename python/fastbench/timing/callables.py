"""Timing a callable: :func:`measure`, and the memory of one call measured after its timed
samples. Argument checks are config.py's, the order of the run sampling.py's; nothing here
reads a Python clock.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from .._checks import check_bool
from ..measurement import Measurement
from ..memory import call_memory
from .config import DEFAULT_DURATION_S, DEFAULT_SAMPLE_S, RunConfig, run_config
from .sampling import gc_paused, run_target
from .targets import callable_target

# memory=True: untracked calls, then calls tracked one by one (median and max reported).
MEMORY_WARMUP = 1
MEMORY_CALLS = 3


def with_memory(m: Measurement, fn: Callable[..., Any], args: tuple[Any, ...],
                kwargs: dict[str, Any], cfg: RunConfig) -> Measurement:
    """``m`` with the peak memory per call of ``fn``, tracked after the timed samples (so
    tracking never runs inside them), with the GC paused as it was for them."""
    with gc_paused(cfg.disable_gc):
        return replace(m, memory=call_memory(fn, args, kwargs, calls=MEMORY_CALLS,
                                             warmup=MEMORY_WARMUP))


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
    return with_memory(m, fn, tuple(args), dict(kwargs), cfg) if track_memory else m
