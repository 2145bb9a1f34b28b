"""Timing a callable: :func:`measure`, and the memory of one call measured after its timed
samples. Argument checks are config.py's, the order of the run sampling.py's; nothing here
reads a Python clock.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Literal, Sequence, overload

from .._checks import check_bool, check_choice, check_int
from ..counters import InstructionCount, count_instructions
from ..measurement import Measurement
from ..memory import call_memory
from .config import DEFAULT_DURATION_S, DEFAULT_SAMPLE_S, MAX_PROCESSES, RunConfig, run_config
from .sampling import gc_paused, run_target
from .targets import callable_target
from .workers import WorkerJob, callable_job, importable, run_workers

METRICS = ("time", "instructions")

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


def in_workers(job: WorkerJob, processes: object, timeout_s: float | None,
               name: str | None) -> Measurement:
    """``job`` run in ``processes`` worker processes, one after the other, as one Measurement
    of several runs (:meth:`Measurement.from_runs`)."""
    count = check_int("processes", processes, 1, say_positive=False,
                      maximum=MAX_PROCESSES)
    return Measurement.from_runs(run_workers(job, count, timeout_s=timeout_s), name=name)


def instruction_runs(processes: object) -> int:
    """The heap layouts ``processes`` asks an instruction count for: one when None."""
    if processes is None:
        return 1
    return check_int("processes", processes, 1, say_positive=False, maximum=MAX_PROCESSES)


def _instructions(fn: Callable[..., Any] | str, args: tuple[Any, ...], kwargs: dict[str, Any],
                  processes: int | None, name: str | None, max_calls: int | None = None,
                  notice: Callable[[str], None] | None = None) -> InstructionCount:
    """measure(metric="instructions"): the count of one call of ``fn(*args)``."""
    if kwargs:
        raise TypeError("metric='instructions' passes positional arguments only (the call is "
                        f"rebuilt in a fresh process); got keyword arguments {sorted(kwargs)}")
    runs = instruction_runs(processes)
    target = importable(fn).resolve() if isinstance(fn, str) else fn
    if not callable(target):
        raise TypeError(f"fn must be callable, got {type(target).__name__}")
    return count_instructions(target, *args, runs=runs, name=name, max_calls=max_calls,
                              notice=notice)


def check_instruction_options(metric: str, max_calls: object, notice: object) -> None:
    """ValueError when an option of instruction counts is given to a timing."""
    given = [k for k, v in (("max_calls", max_calls), ("notice", notice)) if v is not None]
    if metric != "instructions" and given:
        raise ValueError(f"{', '.join(given)} bound{'s' if len(given) == 1 else ''} an "
                         "instruction count: pass metric='instructions', or leave "
                         f"{' and '.join(given)} out")


@overload
def measure(fn: Callable[..., Any] | str, /, *args: Any, metric: Literal["instructions"],
            max_calls: int | None = ..., notice: Callable[[str], None] | None = ...,
            **kwargs: Any) -> InstructionCount: ...


@overload
def measure(fn: Callable[..., Any] | str, /, *args: Any, metric: Literal["time"] = "time",
            **kwargs: Any) -> Measurement: ...


def measure(
    fn: Callable[..., Any] | str,
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
    processes: int | None = None,
    worker_timeout_s: float | None = 600.0,
    metric: str = "time",
    max_calls: int | None = None,
    notice: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> Measurement | InstructionCount:
    """Time ``fn(*args, **kwargs)`` with the native loop.

    The arguments are bound once; each sample reads the clock, calls ``fn`` ``loops``
    times through the vectorcall protocol, and reads the clock again.

    Parameters
    ----------
    fn : callable, or str with ``processes``
        What to time. Its own keyword arguments go in ``**kwargs``; use
        ``functools.partial`` for keywords that clash with the ones below. With
        ``processes``, a module-level function or a ``"module:function"`` string.
    warmup : int
        Samples run before the counted ones and kept apart (``warmup_samples_ns``); fewer
        (at least one) when ``max_time_s`` runs out first. At most 2**40, as ``repeat`` and
        ``loops``.
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
        Time budget in seconds for the warmup and the counted samples together; sampling
        stops when it is spent (``stop_reason == "max_time_s"``). At least one counted sample
        is always taken.
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
    processes : int, optional
        Run the measurement in this many fresh worker processes, one after the other, each
        doing what one call of ``measure`` does here with the same settings (calibration,
        warmup, samples), so it costs about ``processes`` times as long. ``fn`` must then be
        importable (a module-level function, or ``"module:function"``) and its arguments
        picklable or :func:`fastbench.timing.workers.importable` names. The result holds
        every run (``Measurement.runs``): its median is the geometric mean of the runs'
        medians and its interval comes from their spread, the run as a random effect, so it
        says how far the next invocation may land, which one run's samples cannot. Use 5 or
        more for a verdict across saved results. Counters and memory come from the first
        worker.
    worker_timeout_s : float or None
        With ``processes``: seconds one worker may take before it is killed (None: no limit).
    metric : {"time", "instructions"}
        "instructions" counts instructions per call (user space) instead of timing, and
        returns a :class:`fastbench.counters.InstructionCount`: through the PMU
        (``instructions`` via perf_event, in this process's native loop) where one is
        exposed, otherwise under valgrind in a fresh process (``fn`` importable, positional
        arguments picklable), labelled "simulated", with a cycle estimate from the simulated
        cache misses. Counts do not move with the host's speed; they cannot see stalls
        beyond the cache model, frequency or other threads, and they depend on the heap's
        layout: ``processes=N`` counts in N layouts (``runs=N`` of
        :func:`fastbench.counters.count_instructions`), whose spread a comparison judges
        against. The timing options do not apply.
    max_calls : int, optional
        With ``metric="instructions"``: the most calls counted per run (a slow call is
        otherwise counted at least 10 times: about 70x its native time each under valgrind).
    notice : callable, optional
        With ``metric="instructions"``: called with one line (e.g. ``print``) before a
        simulated count expected to take 10 s or more, giving its expected cost.

    Returns
    -------
    Measurement, or InstructionCount with ``metric="instructions"``
        With ``summary`` and ``warnings`` (high variation, few samples, bimodal, drift,
        clock fallback, unmet precision target).

    Raises
    ------
    TypeError
        ``fn`` is not callable, a count or duration has the wrong type, or ``memory`` is
        not a bool.
    ValueError
        A count below its minimum or above 2**40, a non-finite or non-positive duration, a
        target outside (0, 1), an unknown clock.
    ClockUnavailable
        The requested clock cannot be used here.
    KeyboardInterrupt
        Ctrl-C, noticed between samples.
    WorkerError
        With ``processes``: a worker failed (its status and stderr are in the message).
    Exception
        Whatever ``fn`` raises propagates unchanged, with its traceback, after cleanup.
    """
    if check_choice("metric", metric, METRICS) == "instructions":
        return _instructions(fn, args, kwargs, processes, name, max_calls, notice)
    check_instruction_options(metric, max_calls, notice)
    if processes is not None:
        options = dict(warmup=warmup, min_time_s=min_time_s, repeat=repeat,
                       duration_s=duration_s, loops=loops, clock=clock, disable_gc=disable_gc,
                       max_time_s=max_time_s, target_rel_ci=target_rel_ci, counters=counters,
                       counters_missing=counters_missing, memory=memory)
        # Checked here, so a bad setting fails before any worker starts.
        run_config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s,
                   target_rel_ci, duration_s, counters, counters_missing)
        check_bool("memory", memory)
        job = callable_job(fn, tuple(args), dict(kwargs), options=options, name=name)
        return in_workers(job, processes, worker_timeout_s, name)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    cfg = run_config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s,
                     target_rel_ci, duration_s, counters, counters_missing)
    track_memory = check_bool("memory", memory)
    m = run_target(callable_target(fn, tuple(args), dict(kwargs), cfg.clock, name), cfg)
    return with_memory(m, fn, tuple(args), dict(kwargs), cfg) if track_memory else m
