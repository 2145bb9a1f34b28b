"""Variants measured in one invocation: :func:`compare`, in this process (one sample of each
per round, two alternating and more in a fresh random order each round, so that drifts of
the machine reach all alike and no variant has a fixed predecessor) or in worker
processes (interleaved workers of their own, or side by side in each), and on instruction
counts. Judging is :mod:`.judging`'s; targets and workers are fastbench.timing's.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, overload

from .._checks import check_choice, check_int
from ..counters import InstructionCount
from ..counters import count_instructions, count_statement_instructions
from ..measurement import Measurement
from ..timing import Target, callable_target, run_config, statement_target
from ..timing.callables import METRICS, instruction_runs
from ..timing.config import MAX_COUNT, MAX_PROCESSES
from ..timing.sampling import order_design, run_rounds
from ..timing.workers import (callable_job, rounds_job, run_interleaved, run_together,
                              statement_job)
from .judging import _check_judgement, _with_rounds_hint, judge, judge_runs
from .records import Comparison, InstructionComparison, compare_instruction_counts

__all__ = ["PAIRINGS", "compare"]

# How compare(..., processes=N) pairs the variants: workers of their own, or side by side in
# every worker.
PAIRINGS = ("workers", "rounds")


def _target(name: str, variant: Any, clock: str, setup: str,
            glob: dict[str, Any]) -> Target:
    if isinstance(variant, str):
        return statement_target(variant, setup, glob, clock, name=name)
    return callable_target(variant, (), {}, clock, name=name)


@overload
def compare(variants: Mapping[str, Callable[[], Any] | str], *,
            metric: Literal["instructions"], tolerance: float = ..., baseline: str | None = ...,
            rounds: int = ..., warmup: int = ..., min_time_s: float = ...,
            loops: int | None = ..., clock: str = ..., disable_gc: bool = ...,
            max_time_s: float | None = ..., alpha: float = ..., min_effect: float = ...,
            correction: str = ..., setup: str = ...,
            globals: dict[str, Any] | None = ...,  # noqa: A002
            processes: int | None = ...,
            worker_timeout_s: float | None = ...,
            pairing: str = ...) -> InstructionComparison: ...


@overload
def compare(variants: Mapping[str, Callable[[], Any] | str], *,
            metric: Literal["time"] = ..., tolerance: float = ..., baseline: str | None = ...,
            rounds: int = ..., warmup: int = ..., min_time_s: float = ...,
            loops: int | None = ..., clock: str = ..., disable_gc: bool = ...,
            max_time_s: float | None = ..., alpha: float = ..., min_effect: float = ...,
            correction: str = ..., setup: str = ...,
            globals: dict[str, Any] | None = ...,  # noqa: A002
            processes: int | None = ...,
            worker_timeout_s: float | None = ...,
            pairing: str = ...) -> Comparison: ...


def compare(
    variants: Mapping[str, Callable[[], Any] | str],
    *,
    metric: str = "time",
    tolerance: float = 0.005,
    baseline: str | None = None,
    rounds: int = 100,
    warmup: int = 1,
    min_time_s: float = 0.001,
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
    variants : mapping of str to callable or str
        Zero-argument callables (use ``functools.partial`` or a lambda to bind arguments)
        or statement strings (compiled as by :func:`fastbench.timeit`, with ``setup`` and
        ``globals``).
    baseline : str, optional
        Which variant the others are compared with; by default the first (as in pyperf,
        and as ``baseline_time / optimized_time`` reads).
    rounds : int
        Rounds, hence samples per variant (at least 6 are needed for a verdict).
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

    Returns
    -------
    Comparison, or InstructionComparison with ``metric="instructions"``

    Raises
    ------
    TypeError
        A variant is neither callable nor a string, or a setting has the wrong type (a
        non-int ``rounds``, a non-number ``alpha``).
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
    for name, variant in variants.items():  # every path below takes these two kinds only
        if not (isinstance(variant, str) or callable(variant)):
            raise TypeError(f"variant {name!r} must be a callable or a statement string, "
                            f"got {type(variant).__name__}")
    check_choice("metric", metric, METRICS)
    if metric == "instructions":
        return _compare_instructions(variants, baseline, setup, globals, tolerance, processes)
    check_int("rounds", rounds, 1, say_positive=False, maximum=MAX_COUNT)
    _check_judgement(alpha, min_effect, correction)  # before anything is measured
    cfg = run_config(warmup, min_time_s, rounds, loops, clock, disable_gc, max_time_s)
    check_choice("pairing", pairing, PAIRINGS)
    if processes is not None:
        settings = dict(warmup=warmup, min_time_s=min_time_s, repeat=rounds, loops=loops,
                        clock=clock, disable_gc=disable_gc, max_time_s=max_time_s)
        return _compare_in_workers(variants, baseline, processes, worker_timeout_s, pairing,
                                   settings, setup, globals, alpha, min_effect, correction)
    glob = {} if globals is None else globals
    targets = {n: _target(n, variants[n], cfg.clock, setup, glob) for n in names}
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


def _compare_instructions(variants: Mapping[str, Callable[[], Any] | str], baseline: str,
                          setup: str, glob: dict[str, Any] | None,
                          tolerance: float, processes: object) -> InstructionComparison:
    """compare() on instruction counts, one variant after the other; ``processes`` heap
    layouts each."""
    runs = instruction_runs(processes)
    if glob:
        raise ValueError("metric='instructions' counts statements in a fresh process, which "
                         "gets no globals: import what the statement needs in setup")
    counts: dict[str, InstructionCount] = {}
    calls: int | None = None  # the baseline's choice, then the same for every variant
    for name in [baseline, *(n for n in variants if n != baseline)]:
        variant = variants[name]
        if isinstance(variant, str):
            counts[name] = count_statement_instructions(variant, setup, calls=calls, runs=runs,
                                                        name=name)
        else:
            counts[name] = count_instructions(variant, calls=calls, runs=runs, name=name)
        calls = counts[baseline].calls
    others = {n: c for n, c in counts.items() if n != baseline}
    return compare_instruction_counts(counts[baseline], others, baseline_name=baseline,
                                      tolerance=tolerance)


def _compare_in_workers(
    variants: Mapping[str, Callable[[], Any] | str],
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
    # A worker of its own runs measure()/timeit(), which also take duration_s; side by side,
    # the variants take the rounds' settings as they are.
    options = None if pairing == "rounds" else {**settings, "duration_s": None}
    jobs = {}
    for name, variant in variants.items():
        if isinstance(variant, str):
            jobs[name] = statement_job(variant, setup, glob, options=options, name=name)
        else:
            jobs[name] = callable_job(variant, (), {}, options=options, name=name)
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
