"""Variants measured in one invocation: :func:`compare`, in this process (one sample of each
per round, two alternating and more in a fresh random order each round, so that drifts of
the machine reach all alike and no variant has a fixed predecessor) or in worker
processes (interleaved workers of their own, or side by side in each), and on instruction
counts; a variant is a statement or a call, its arguments bound as ``measure`` binds them.
Judging is :mod:`.judging`'s; targets and workers are fastbench.timing's.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Literal, Mapping, Sequence, Tuple, Union, overload

from .._checks import check_choice, check_int
from ..counters import InstructionCount
from ..counters import count_instructions, count_statement_instructions
from ..measurement import Measurement
from ..timing import Target, callable_target, run_config, statement_target
from ..timing.callables import METRICS, check_instruction_options, instruction_runs
from ..timing.config import MAX_COUNT, MAX_PROCESSES
from ..timing.sampling import order_design, run_rounds
from ..timing.workers import (callable_job, rounds_job, run_interleaved, run_together,
                              statement_job)
from .judging import _check_judgement, _with_rounds_hint, judge, judge_runs
from .records import Comparison, InstructionComparison, compare_instruction_counts

__all__ = ["PAIRINGS", "Variant", "compare"]

# How compare(..., processes=N) pairs the variants: workers of their own, or side by side in
# every worker.
PAIRINGS = ("workers", "rounds")

# What compare() takes as a variant: a statement string, a callable (a functools.partial
# included), or a call with its arguments, (fn, args) or (fn, args, kwargs), as measure(fn,
# *args, **kwargs) binds them.
Variant = Union[str, Callable[..., Any], Tuple[Callable[..., Any], Sequence[Any]],
                Tuple[Callable[..., Any], Sequence[Any], Mapping[str, Any]]]
# A variant after _call(): its statement, or its function and the arguments bound.
_Call = Union[str, Tuple[Callable[..., Any], Tuple[Any, ...], dict[str, Any]]]


def _call(name: str, variant: object) -> _Call:
    """The statement of ``variant``, or its function with its positional and keyword
    arguments: a tuple ``(fn, args[, kwargs])`` split, a ``functools.partial`` unwrapped
    (so the worker processes get an importable function, and the native loop calls ``fn``
    itself), a plain callable with none.

    Raises
    ------
    TypeError
        A tuple that is not ``(fn, args)`` or ``(fn, args, kwargs)`` with a callable
        ``fn``, a tuple or list ``args`` and a mapping of str ``kwargs``; anything else that
        is neither a str nor callable.
    """
    if isinstance(variant, str):
        return variant
    if type(variant) is partial:  # a subclass may change what a call does: called as it is
        return variant.func, tuple(variant.args), dict(variant.keywords)
    if isinstance(variant, tuple):
        form = "(fn, args) or (fn, args, kwargs)"
        if len(variant) not in (2, 3):
            raise TypeError(f"variant {name!r} is a tuple of {len(variant)} items; a call with "
                            f"arguments is {form}, e.g. (sum, (range(100),))")
        fn, args, *rest = variant
        kwargs = rest[0] if rest else None
        if not callable(fn):
            raise TypeError(f"variant {name!r}: the first item of {form} must be callable, "
                            f"got {type(fn).__name__}")
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"variant {name!r}: args, the second item of {form}, must be a "
                            f"tuple or list of positional arguments, got "
                            f"{type(args).__name__} (one argument x is written (x,))")
        if kwargs is None:
            kwargs = {}
        if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
            raise TypeError(f"variant {name!r}: kwargs, the third item of {form}, must be a "
                            f"dict of str to value, got {type(kwargs).__name__}")
        return fn, tuple(args), dict(kwargs)
    if callable(variant):
        return variant, (), {}
    raise TypeError(f"variant {name!r} must be a statement string, a callable, or a call "
                    "with arguments ((fn, args), (fn, args, kwargs) or a functools.partial), "
                    f"got {type(variant).__name__}")


def _target(name: str, call: _Call, clock: str, setup: str,
            glob: dict[str, Any]) -> Target:
    if isinstance(call, str):
        return statement_target(call, setup, glob, clock, name=name)
    fn, args, kwargs = call
    return callable_target(fn, args, kwargs, clock, name=name)


@overload
def compare(variants: Mapping[str, Variant], *,
            metric: Literal["instructions"], tolerance: float = ..., baseline: str | None = ...,
            rounds: int = ..., warmup: int = ..., min_time_s: float = ...,
            duration_s: float | None = ..., loops: int | None = ..., clock: str = ...,
            disable_gc: bool = ...,
            max_time_s: float | None = ..., alpha: float = ..., min_effect: float = ...,
            correction: str = ..., setup: str = ...,
            globals: dict[str, Any] | None = ...,  # noqa: A002
            processes: int | None = ...,
            worker_timeout_s: float | None = ...,
            pairing: str = ..., max_calls: int | None = ...,
            notice: Callable[[str], None] | None = ...) -> InstructionComparison: ...


@overload
def compare(variants: Mapping[str, Variant], *,
            metric: Literal["time"] = ..., tolerance: float = ..., baseline: str | None = ...,
            rounds: int = ..., warmup: int = ..., min_time_s: float = ...,
            duration_s: float | None = ..., loops: int | None = ..., clock: str = ...,
            disable_gc: bool = ...,
            max_time_s: float | None = ..., alpha: float = ..., min_effect: float = ...,
            correction: str = ..., setup: str = ...,
            globals: dict[str, Any] | None = ...,  # noqa: A002
            processes: int | None = ...,
            worker_timeout_s: float | None = ...,
            pairing: str = ..., max_calls: None = ..., notice: None = ...) -> Comparison: ...


def compare(
    variants: Mapping[str, Variant],
    *,
    metric: str = "time",
    tolerance: float = 0.005,
    baseline: str | None = None,
    rounds: int = 100,
    warmup: int = 1,
    min_time_s: float = 0.001,
    duration_s: float | None = None,
    loops: int | None = None,
    clock: str = "auto",
    disable_gc: bool = True,
    max_time_s: float | None = None,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    correction: str = "holm",
    setup: str = "pass",
    globals: dict[str, Any] | None = None,  # noqa: A002 - as in timeit
    processes: int | None = None,
    worker_timeout_s: float | None = 600.0,
    pairing: str = "workers",
    max_calls: int | None = None,
    notice: Callable[[str], None] | None = None,
) -> Comparison | InstructionComparison:
    """Measure variants interleaved and judge each candidate against the baseline.

    Every variant is calibrated (its own loops per sample), warmed up and has its floors
    measured first. Then each round takes one sample of every variant: two alternate (A B,
    B A), more go in a fresh random order each round (seeded), so that drift of the machine
    hits all variants alike and none always follows the same one (whose data in the caches
    would otherwise count as its speed); ``design`` says which.
    Round i of the baseline and round i of a candidate form a pair: the speedup is
    ``exp(median(log(baseline_i / candidate_i)))`` with a distribution-free (sign-test)
    interval, the p-value is the sign test on those log-ratios (Wilcoxon's signed-rank p is
    reported beside it), corrected across candidates (Holm by default). The verdict needs both ``p < alpha`` and a
    speedup beyond ``1 + min_effect`` (or below ``1 / (1 + min_effect)``) with its whole
    interval on that side of 1; see :func:`fastbench.stats.compare_samples`.

    Parameters
    ----------
    variants : mapping of str to callable, call with arguments, or str
        Each variant is a callable timed as ``fn()``; a call with its arguments bound once,
        as :func:`fastbench.measure` binds ``fn(*args, **kwargs)``: a tuple ``(fn, args)``
        or ``(fn, args, kwargs)``, or a ``functools.partial`` (unwrapped into the same);
        or a statement string (compiled as by :func:`fastbench.timeit`, with ``setup`` and
        ``globals``). With ``processes``, ``fn`` must be importable and the arguments
        picklable (or :func:`fastbench.importable` names); ``metric="instructions"``
        takes positional arguments only.
    baseline : str, optional
        Which variant the others are compared with; by default the first (as in pyperf,
        and as ``baseline_time / optimized_time`` reads).
    rounds : int
        Minimum rounds, hence samples per variant (at least 6 are needed for a verdict);
        as ``repeat`` in :func:`fastbench.measure`.
    duration_s : float or None
        Minimum wall time of the rounds in seconds, as in :func:`fastbench.measure`: after
        ``rounds`` rounds, rounds go on until this much time has passed (``stop_reason ==
        "duration_s"``), within ``max_time_s``. None (default) stops at ``rounds``. With
        ``processes``, each worker's samples (or rounds) last at least this long.
    max_time_s : float, optional
        Budget in seconds for the rounds; when spent, the rounds completed so far are
        judged (``stop_reason == "max_time_s"``). Each variant's warmup stops at it too
        (after at least one sample).
    alpha, min_effect : float
        Significance level, and the smallest relative speedup worth calling a difference.
    correction : {"holm", "bh", "none"}
        Multiple-testing correction when there are several candidates.
    warmup, min_time_s, loops, clock, disable_gc
        As in :func:`fastbench.measure`.
    processes : int, optional
        Measure the variants in this many fresh worker processes instead of in this one,
        so that the verdict covers how much results move from process to process. How the
        workers pair the variants is ``pairing``'s; either way the whole costs about
        ``processes`` times one in-process comparison, and the verdict is a paired t test
        on the log-ratios of the paired medians (:func:`fastbench.stats.runs.compare_runs`),
        for which at least 3 processes are needed. Callables must be importable
        (module-level functions); statements must pickle with ``globals``. ``max_time_s``
        then bounds each worker's samples.
    worker_timeout_s : float or None
        With ``processes``: seconds one worker may take before it is killed.
    pairing : {"workers", "rounds"}
        With ``processes``. "workers" (default): each variant in workers of its own,
        interleaved (A B B A A B ..., for k variants the order and its reverse in turn) so
        a slow phase of the host hits all of them; each worker takes ``rounds`` samples of
        its variant, and the i-th workers of two variants form a pair. "rounds": every
        worker measures all the variants side by side, in ``rounds`` rounds as in one
        process, and its medians form the pair. The variants then share each process and
        its minutes, so what makes one process faster than the next cancels in their
        ratio: for ``sum(range(1000))`` against itself on a 2-vCPU VM, per-process medians
        varied by about 5.5% while their ratio within a worker varied by 1.2%, so a few
        processes find a change that separate workers would need dozens for. "workers"
        keeps the variants apart (one cannot warm or fill the caches, the allocator or
        the thread pools of another).
    metric : {"time", "instructions"}
        "instructions" counts the user-space instructions per call of each variant instead
        of timing it (:func:`fastbench.counters.count_instructions`: the PMU where one is
        exposed, else valgrind in a fresh process, so callables must be importable and
        statements get no ``globals``), and returns an :class:`InstructionComparison`:
        a candidate is "faster" or "slower" when its count differs by more than
        ``tolerance`` (default 0.005, ±0.5%), else "within tolerance". Counts do not move
        with the host's speed; they cannot see stalls beyond the cache model, the clock
        frequency or other threads. They do move with the heap's layout: ``processes=N``
        counts every variant in the same N layouts, and a difference whose ranges of
        counts overlap is "cannot tell" (:func:`fastbench.counters.compare_counts`).
    tolerance : float
        With ``metric="instructions"``: the relative change that counts as a difference.
    max_calls, notice
        With ``metric="instructions"``: the most calls counted per run, and a callable told
        the expected cost before a long simulated count (``print`` shows it); see
        :func:`fastbench.counters.count_instructions`.

    Returns
    -------
    Comparison, or InstructionComparison with ``metric="instructions"``

    Raises
    ------
    TypeError
        A variant is neither callable nor a string nor a call with arguments, a tuple
        that is not ``(fn, args)`` or ``(fn, args, kwargs)``, or a setting has the wrong
        type (a non-int ``rounds``, a non-number ``alpha``).
    ValueError
        Fewer than two variants, an unknown baseline, or a setting out of range.
    """
    if not isinstance(variants, Mapping):
        raise TypeError(f"variants must be a mapping of name to callable, got {type(variants).__name__}")
    names = list(variants)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"variant names must be str, got {bad!r}")
    if len(names) < 2:
        raise ValueError(f"compare needs at least two variants, got {len(names)}")
    if baseline is None:
        baseline = names[0]
    if baseline not in variants:
        raise ValueError(f"baseline {baseline!r} is not among the variants ({', '.join(names)}); "
                         "pass baseline=<name>")
    # Every path below takes a statement or a function with its arguments.
    calls = {name: _call(name, variant) for name, variant in variants.items()}
    check_choice("metric", metric, METRICS)
    if metric == "instructions":
        return _compare_instructions(calls, baseline, setup, globals, tolerance, processes,
                                     max_calls, notice)
    check_instruction_options(metric, max_calls, notice)
    check_int("rounds", rounds, 1, say_positive=False, maximum=MAX_COUNT)
    _check_judgement(alpha, min_effect, correction)  # before anything is measured
    cfg = run_config(warmup, min_time_s, rounds, loops, clock, disable_gc, max_time_s,
                     duration_s=duration_s)
    check_choice("pairing", pairing, PAIRINGS)
    if processes is not None:
        settings = dict(warmup=warmup, min_time_s=min_time_s, repeat=rounds, loops=loops,
                        clock=clock, disable_gc=disable_gc, max_time_s=max_time_s,
                        duration_s=duration_s)
        return _compare_in_workers(calls, baseline, processes, worker_timeout_s, pairing,
                                   settings, setup, globals, alpha, min_effect, correction)
    glob = {} if globals is None else globals
    targets = {n: _target(n, calls[n], cfg.clock, setup, glob) for n in names}
    samples, measurements, stop = run_rounds(targets, cfg)
    return Comparison(
        baseline=baseline,
        measurements=measurements,
        results=judge(baseline, samples, True, alpha, min_effect, correction),
        paired=True,
        correction=correction,
        rounds=len(samples[baseline]),
        stop_reason=stop,
        design=f"rounds in one process, {order_design(len(names))}",
    )


def _compare_instructions(variants: Mapping[str, _Call], baseline: str,
                          setup: str, glob: dict[str, Any] | None,
                          tolerance: float, processes: object, max_calls: int | None,
                          notice: Callable[[str], None] | None) -> InstructionComparison:
    """compare() on instruction counts, one variant after the other; ``processes`` heap
    layouts each."""
    runs = instruction_runs(processes)
    if glob:
        raise ValueError("metric='instructions' counts statements in a fresh process, which "
                         "gets no globals: import what the statement needs in setup")
    for name, variant in variants.items():
        if not isinstance(variant, str) and variant[2]:
            raise TypeError(f"variant {name!r}: metric='instructions' passes positional "
                            "arguments only (the call is rebuilt in a fresh process); got "
                            f"keyword arguments {sorted(variant[2])}")
    counts: dict[str, InstructionCount] = {}
    calls: int | None = None  # the baseline's choice, then the same for every variant
    bound = max_calls
    for name in [baseline, *(n for n in variants if n != baseline)]:
        variant = variants[name]
        if isinstance(variant, str):
            counts[name] = count_statement_instructions(
                variant, setup, calls=calls, runs=runs, name=name, max_calls=bound,
                notice=notice)
        else:
            fn, args, _ = variant
            counts[name] = count_instructions(fn, *args, calls=calls, runs=runs, name=name,
                                              max_calls=bound, notice=notice)
        calls = counts[baseline].calls
        bound = None  # the baseline's calls are within it
    others = {n: c for n, c in counts.items() if n != baseline}
    return compare_instruction_counts(counts[baseline], others, baseline_name=baseline,
                                      tolerance=tolerance)


def _compare_in_workers(
    variants: Mapping[str, _Call],
    baseline: str,
    processes: object,
    timeout_s: float | None,
    pairing: str,
    settings: dict[str, Any],
    setup: str,
    glob: dict[str, Any] | None,
    alpha: float,
    min_effect: float,
    correction: str,
) -> Comparison:
    """compare() with the variants measured in worker processes: interleaved workers of
    their own, or all side by side in every worker (``pairing``)."""
    count = check_int("processes", processes, 1, say_positive=False,
                      maximum=MAX_PROCESSES)
    # A worker of its own runs measure()/timeit() with these settings; side by side, the
    # variants take the rounds' settings as they are.
    options = None if pairing == "rounds" else settings
    jobs = {}
    for name, variant in variants.items():
        if isinstance(variant, str):
            jobs[name] = statement_job(variant, setup, glob, options=options, name=name)
        else:
            fn, args, kwargs = variant
            jobs[name] = callable_job(fn, args, kwargs, options=options, name=name)
    if pairing == "rounds":
        runs = run_together(rounds_job(jobs, options=settings), count, timeout_s=timeout_s)
    else:
        runs = run_interleaved(jobs, count, timeout_s=timeout_s)
    measurements = {name: Measurement.from_runs(runs[name], name=name) for name in variants}
    results = judge_runs(baseline, measurements, paired=True, alpha=alpha,
                         min_effect=min_effect, correction=correction)
    if pairing == "workers":
        results = {name: _with_rounds_hint(r) for name, r in results.items()}
    return Comparison(
        baseline=baseline,
        measurements=measurements,
        results=results,
        paired=True,
        correction=correction,
        rounds=count,
        stop_reason="processes-rounds" if pairing == "rounds" else "processes",
    )
