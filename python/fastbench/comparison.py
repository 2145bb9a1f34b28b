"""A/B comparison: variants measured interleaved, judged by paired tests, one verdict each.

Owns the round-robin schedule, the judgement and the Comparison record. Each round takes one
sample of every variant in a rotated order (round r starts at variant r mod k), so slow
drifts of the machine reach all variants alike and no variant always runs first. Statistics
come from fastbench.stats; targets and their floors from fastbench.timing. The record does
not register itself as a results-file kind: fastbench.results names it in its table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Literal, Mapping, Sequence, overload

import numpy as np
from numpy.typing import NDArray

from ._checks import check_choice, check_finite, check_fraction, check_int
from .counters import CountComparison, InstructionCount, compare_counts
from .counters import count_instructions, count_statement_instructions
from .machine import known_run_variation, results_key
from .measurement import Measurement
from .stats import SampleComparison, adjust_pvalues, compare_samples
from .stats.runs import RUN_TOLERANCE, compare_runs
from .timing import Target, callable_target, run_config, statement_target
from .timing.sampling import run_rounds
from .timing.targets import learned_variation
from .timing.callables import METRICS, instruction_runs
from .timing.config import MAX_COUNT
from .timing.workers import (callable_job, rounds_job, run_interleaved, run_together,
                              statement_job)

# How compare(..., processes=N) pairs the variants: workers of their own, or side by side in
# every worker.
PAIRINGS = ("workers", "rounds")

__all__ = ["Comparison", "InstructionComparison", "compare", "compare_instruction_counts",
           "compare_measurements"]



CORRECTIONS = ("holm", "bh", "none")


@dataclass(frozen=True, eq=False)
class Comparison:
    """Candidates against a baseline: their measurements and one verdict per candidate.

    Attributes
    ----------
    baseline : str
        Name of the baseline variant.
    measurements : dict of str to Measurement
        Every variant's measurement; for an interleaved run, sample i of each variant comes
        from round i.
    results : dict of str to SampleComparison
        Per candidate, against the baseline: speedup (baseline / candidate) with its CI,
        p-values (``p_value`` corrected for multiple candidates), effect sizes, verdict.
    paired : bool
        True when rounds pair the samples (interleaved runs), False for saved results.
    correction : str
        Multiple-testing correction of ``p_value``: "holm", "bh" or "none".
    rounds : int
        Rounds completed (samples per variant when paired).
    stop_reason : str
        "rounds" (all requested rounds ran), "max_time_s" (the budget ended them),
        "processes" (variants measured in interleaved worker processes; ``rounds`` counts
        the processes per variant), "processes-rounds" (all variants side by side in each
        of ``rounds`` worker processes) or "saved" (compared from existing measurements).
    """

    baseline: str
    measurements: dict[str, Measurement]
    results: dict[str, SampleComparison]
    paired: bool
    correction: str
    rounds: int
    stop_reason: str

    @property
    def verdicts(self) -> dict[str, str]:
        """Candidate name -> "faster", "slower", "no significant difference" or "cannot
        tell" (separate single runs whose difference is within the run-to-run variation)."""
        return {name: r.verdict for name, r in self.results.items()}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; :meth:`from_dict` restores it."""
        return {
            "baseline": self.baseline,
            "measurements": {k: m.to_dict() for k, m in self.measurements.items()},
            "results": {k: r.to_dict() for k, r in self.results.items()},
            "paired": self.paired,
            "correction": self.correction,
            "rounds": self.rounds,
            "stop_reason": self.stop_reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """Rebuild a Comparison from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            If a key is missing or a part is malformed.
        """
        try:
            return cls(
                baseline=str(data["baseline"]),
                measurements={str(k): Measurement.from_dict(v)
                              for k, v in data["measurements"].items()},
                results={str(k): SampleComparison.from_dict(v)
                         for k, v in data["results"].items()},
                paired=bool(data["paired"]),
                correction=str(data["correction"]),
                rounds=int(data["rounds"]),
                stop_reason=str(data["stop_reason"]),
            )
        except KeyError as exc:
            raise ValueError(f"Comparison data lacks {exc}") from None

    def __str__(self) -> str:
        from .report.text import comparison_lines

        return "\n".join(comparison_lines(self))


@dataclass(frozen=True, eq=False)
class InstructionComparison:
    """Candidates against a baseline on instructions per call (``metric="instructions"``).

    Attributes
    ----------
    baseline : str
        Name of the baseline variant.
    counts : dict of str to InstructionCount
        Every variant's count.
    results : dict of str to CountComparison
        Per candidate: the relative change of its count and the verdict, "faster",
        "slower" or "within tolerance" (:func:`fastbench.counters.compare_counts`), with
        what a count cannot see.
    tolerance : float
        Relative change within which two counts are the same (0.005: ±0.5%).
    """

    baseline: str
    counts: dict[str, InstructionCount]
    results: dict[str, CountComparison]
    tolerance: float

    @property
    def verdicts(self) -> dict[str, str]:
        """Candidate name -> "faster", "slower" or "within tolerance"."""
        return {name: r.verdict for name, r in self.results.items()}

    @property
    def measurements(self) -> dict[str, InstructionCount]:
        """The counts (the name ``Comparison`` uses for its measurements)."""
        return self.counts

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; :meth:`from_dict` restores it."""
        return {"baseline": self.baseline,
                "counts": {k: c.to_dict() for k, c in self.counts.items()},
                "results": {k: r.to_dict() for k, r in self.results.items()},
                "tolerance": self.tolerance}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InstructionComparison:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            If a key is missing or a part is malformed.
        """
        try:
            return cls(
                baseline=str(data["baseline"]),
                counts={str(k): InstructionCount.from_dict(v) for k, v in data["counts"].items()},
                results={str(k): CountComparison.from_dict(v)
                         for k, v in data["results"].items()},
                tolerance=float(data["tolerance"]),
            )
        except KeyError as exc:
            raise ValueError(f"InstructionComparison data lacks {exc}") from None

    def __str__(self) -> str:
        from .report.text import instruction_comparison_lines

        return "\n".join(instruction_comparison_lines(self))


def compare_instruction_counts(
    baseline: InstructionCount,
    candidates: Mapping[str, InstructionCount],
    *,
    baseline_name: str = "baseline",
    tolerance: float = 0.005,
) -> InstructionComparison:
    """Judge instruction counts (saved or fresh) against a baseline's, within ``tolerance``.

    Raises
    ------
    ValueError
        No candidates, a candidate named like the baseline, counts of different sources,
        or a tolerance out of range.
    """
    if not candidates:
        raise ValueError("compare_instruction_counts needs at least one candidate")
    if baseline_name in candidates:
        raise ValueError(f"a candidate is named like the baseline ({baseline_name!r})")
    return InstructionComparison(
        baseline=baseline_name,
        counts={baseline_name: baseline, **candidates},
        results={name: compare_counts(baseline, c, tolerance=tolerance)
                 for name, c in candidates.items()},
        tolerance=tolerance,
    )


def _check_judgement(alpha: float, min_effect: float, correction: str) -> None:
    check_choice("correction", correction, CORRECTIONS)
    check_fraction("alpha", alpha)
    if not 0.0 <= check_finite("min_effect", min_effect) < 1.0:
        raise ValueError(f"min_effect must be in [0, 1), got {min_effect!r}")


def judge(
    baseline: str,
    samples: Mapping[str, Any],
    paired: bool,
    alpha: float,
    min_effect: float,
    correction: str,
    estimator: str = "median",
) -> dict[str, SampleComparison]:
    """Compare each candidate's samples with the baseline's, then correct the p-values
    (``correction`` across the candidates); the suite judges its rounds with it too, with
    the Hodges-Lehmann ``estimator`` (see :func:`fastbench.stats.compare_samples`)."""
    _check_judgement(alpha, min_effect, correction)
    results = {
        name: compare_samples(samples[baseline], s, paired=paired, alpha=alpha,
                              min_effect=min_effect, estimator=estimator)
        for name, s in samples.items() if name != baseline
    }
    return _corrected(results, correction)


def _corrected(results: dict[str, SampleComparison],
               correction: str) -> dict[str, SampleComparison]:
    """``results`` with their p-values corrected for the number of candidates. A candidate
    whose verdict the correction took back (a difference on its own p, none on the corrected
    one) says so: its interval is its own and still lies clear of 1."""
    if correction == "none" or len(results) < 2:
        return results
    adjusted = adjust_pvalues([r.p_value for r in results.values()], method=correction)
    out = {}
    for (name, r), p in zip(results.items(), adjusted):
        corrected = r.with_p_value(float(p))
        if r.verdict in ("faster", "slower") and corrected.verdict != r.verdict:
            corrected = replace(corrected, warnings=(*corrected.warnings, (
                f"{r.verdict} on its own (p {r.p_value:.3g}), but not once p is corrected "
                f"for {len(results)} candidates ({correction}: {corrected.p_value:.3g} >= "
                f"alpha {r.alpha:g}); the speedup's interval is this candidate's alone, not "
                "corrected, so it can lie clear of 1")))
        out[name] = corrected
    return out


def _target(name: str, variant: Any, clock: str, setup: str,
            glob: dict[str, Any]) -> Target:
    if isinstance(variant, str):
        return statement_target(variant, setup, glob, clock, name=name)
    return callable_target(variant, (), {}, clock, name=name)


@overload
def compare(variants: Mapping[str, Callable[[], Any] | str], *,
            metric: Literal["instructions"], tolerance: float = ..., baseline: str = ...,
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
            metric: Literal["time"] = ..., tolerance: float = ..., baseline: str = ...,
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
    baseline: str = "baseline",
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
    measured first. Then each round takes one sample of every variant, in the order of the
    previous round rotated by one, so that drift of the machine hits all variants alike.
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
    baseline : str
        Which variant the others are compared with.
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
    )


def _variation(measurements: Sequence[Measurement],
               given: float | None) -> tuple[float | None, int | None, str]:
    """The run-to-run variation to judge single runs against, its degrees of freedom and
    what it is: the one given, else what the run log learned of the single runs' workloads
    on this machine, else the largest the measurements carry, else this machine's."""
    if given is not None:
        value = check_finite("run_variation", given)
        if not 0.0 <= value < 1.0:
            raise ValueError(f"run_variation must be a fraction in [0, 1) such as 0.03 for 3%, "
                             f"got {given!r}")
        return value, None, "runs here (as given)"
    workloads = sorted({m.workload for m in measurements if m.runs == 1 and m.workload})
    learned = learned_variation(*workloads)
    if learned is not None:
        what = "this benchmark's" if len(workloads) == 1 else "these benchmarks'"
        return learned.sd, learned.df, f"{what} {learned.runs} saved runs here"
    carried = [m for m in measurements if m.run_variation is not None]
    if carried:
        worst = max(carried, key=lambda m: m.run_variation or 0.0)
        return worst.run_variation, worst.run_variation_df, "runs on this machine"
    here = known_run_variation()
    return (None, None, "runs on this machine") if here is None else \
        (here.rel_sd, here.df, "runs on this machine")


def _within(m: Measurement) -> float:
    """A single run's relative standard error of its median, from its own 95% interval
    (zero for several runs, whose spread already holds it)."""
    if m.runs > 1 or m.rel_ci is None:
        return 0.0
    return m.rel_ci / 1.959964


def judge_runs(
    baseline_name: str,
    measurements: Mapping[str, Measurement],
    *,
    paired: bool,
    alpha: float,
    min_effect: float,
    correction: str,
    run_variation: float | None = None,
) -> dict[str, SampleComparison]:
    """Each candidate's runs against the baseline's (:func:`fastbench.stats.runs.compare_runs`
    on the run medians), then the p-values corrected across candidates."""
    _check_judgement(alpha, min_effect, correction)
    variation, df, source = _variation(list(measurements.values()), run_variation)
    base = measurements[baseline_name]
    results = {}
    for name, m in measurements.items():
        if name == baseline_name:
            continue
        sd, sd_df, whose = (None, None, "") if paired else _between(base, m)
        a, b, note = _undisturbed(base, m, paired)
        r = compare_runs(
            a, b, paired=paired, alpha=alpha,
            min_effect=min_effect, run_variation=variation, variation_df=df,
            within_a=_within(base), within_b=_within(m), variation_source=source,
            between_variation=sd, between_df=sd_df, between_source=whose)
        results[name] = r if not note else replace(r, warnings=(*r.warnings, note))
    return _corrected(results, correction)


def _undisturbed(a: Measurement, b: Measurement,
                 paired: bool) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    """The run medians a comparison judges: each side's undisturbed runs
    (``Measurement.quiet_runs``); paired, the pairs whose runs both are. And a note on what
    was left out ("" when nothing was)."""
    if paired and a.runs == b.runs:
        keep = a.quiet_runs & b.quiet_runs
        left = int(keep.size - np.count_nonzero(keep))
        note = "" if not left else (
            f"{left} of {keep.size} pairs left out: a process of the pair ran more than "
            f"{RUN_TOLERANCE:.0%} slower than its side's others from start to end")
        return a.run_medians_ns[keep], b.run_medians_ns[keep], note
    left_a = a.runs - int(np.count_nonzero(a.quiet_runs))
    left_b = b.runs - int(np.count_nonzero(b.quiet_runs))
    note = "" if not (left_a or left_b) else (
        f"processes left out as disturbed (more than {RUN_TOLERANCE:.0%} slower than their "
        f"side's others from start to end): {left_a} of {a.runs} baseline, "
        f"{left_b} of {b.runs} candidate")
    return a.quiet_run_medians_ns, b.quiet_run_medians_ns, note


def _between(a: Measurement, b: Measurement) -> tuple[float | None, int | None, str]:
    """How whole results of several runs vary between invocations here, its degrees of
    freedom and whose results it is: what the run log learned from at least 3 saved results
    of these workloads with the same processes; (None, None, "") without."""
    if a.runs < 3 or b.runs < 3 or not a.workload or not b.workload:
        return None, None, ""
    learned = learned_variation(*sorted({results_key(a.workload, a.runs),
                                         results_key(b.workload, b.runs)}))
    if learned is None or learned.runs < 3:
        return None, None, ""
    return (learned.sd, learned.df,
            f"this benchmark's {learned.runs} saved results of {a.runs} and {b.runs} processes")


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
    count = check_int("processes", processes, 1, say_positive=False)
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


def _with_rounds_hint(r: SampleComparison) -> SampleComparison:
    """A verdict of separate workers that found nothing, with the pairing that could: the
    speed level of each worker is in its pair's ratio, where side by side it cancels."""
    if r.verdict != "no significant difference":
        return r
    hint = ("pairing='rounds' (--pairing rounds) measures the variants side by side in every "
            "worker, where what sets one process's speed apart cancels in their ratio")
    return replace(r, warnings=(*r.warnings, hint))


def _with_together_hint(r: SampleComparison) -> SampleComparison:
    """A verdict of saved results of several runs that found nothing, with the design that
    can find less: both versions in one invocation, side by side in every worker."""
    if r.verdict != "no significant difference" or min(r.n_a, r.n_b) < 3:
        return r
    hint = ("where both versions can run in one invocation, `fastbench compare --run "
            "--processes 5 --pairing rounds` (compare(..., processes=5, pairing='rounds')) "
            "measures them side by side in every worker, where the host's slower phases "
            "cancel in their ratio: on a 2-vCPU VM it found a 10% slowdown in 9 of 10 pairs "
            "where saved results of 5 processes a side found it in 6 of 20")
    return replace(r, warnings=(*r.warnings, hint))


def _check_measurements(baseline: object, candidates: object) -> None:
    """TypeError unless ``baseline`` is a Measurement and ``candidates`` maps str names to
    Measurements (instruction counts go to compare_instruction_counts)."""
    if not isinstance(baseline, Measurement):
        raise TypeError(f"baseline must be a Measurement (from measure, timeit or load), got "
                        f"{type(baseline).__name__}")
    if not isinstance(candidates, Mapping):
        raise TypeError(f"candidates must be a mapping of name to Measurement, such as "
                        f"{{'new': m}}, got {type(candidates).__name__}")
    for name, m in candidates.items():
        if not isinstance(name, str):
            raise TypeError(f"candidate names must be str, got {type(name).__name__} {name!r}")
        if not isinstance(m, Measurement):
            raise TypeError(f"candidate {name!r} must be a Measurement, got {type(m).__name__}")


def compare_measurements(
    baseline: Measurement,
    candidates: Mapping[str, Measurement],
    *,
    baseline_name: str = "baseline",
    alpha: float = 0.05,
    min_effect: float = 0.01,
    correction: str = "holm",
    run_variation: float | None = None,
) -> Comparison:
    """Judge measurements taken apart (saved results, separate calls) against a baseline.

    Separate measurements are separate runs, and runs differ by more than the samples inside
    one run show: the machine runs whole invocations at speed levels a few percent apart.
    So each measurement contributes its runs' medians (``Measurement.run_medians_ns``: one
    per worker process, or one for a single run), never its samples as independent draws,
    and :func:`fastbench.stats.runs.compare_runs` decides:

    - several runs per side (at least 3, e.g. saved with ``processes=5``): Welch's t test
      on the log run medians, widened to how whole results of these workloads with as many
      processes vary between invocations where the run log holds 3 or more of them (the
      runs of one result shared its invocation; :func:`fastbench.stats.runs.compare_runs`'s
      ``between_variation``);
    - a single run on a side: the difference must exceed the run-to-run variation:
      ``run_variation`` when given; else what this machine's run log learned of the
      workload from its saved single runs (:mod:`fastbench.machine.runlog`; the spread of
      consecutive runs, :func:`fastbench.stats.runs.successive_spread`, with its degrees of
      freedom, so two saved runs can only say "cannot tell"); else the largest the
      measurements carry (known when they were taken); else what ``fastbench variation``
      stored for this machine (or ``FASTBENCH_RUN_VARIATION``). Otherwise the verdict is
      ``"cannot tell"``, with a warning saying how much runs vary and how many processes
      would tell; without any known variation, always ``"cannot tell"``.

    Parameters
    ----------
    run_variation : float, optional
        Relative standard deviation between runs of the same code (0.03 for 3%).
    alpha, min_effect, correction
        As in :func:`compare`.

    Raises
    ------
    TypeError
        ``baseline`` is not a Measurement, ``candidates`` not a mapping of str to
        Measurement, or ``alpha``, ``min_effect`` or ``run_variation`` not a number.
    ValueError
        No candidates, a candidate named like the baseline, ``alpha`` outside (0, 1),
        ``min_effect`` or ``run_variation`` outside [0, 1), or an unknown ``correction``.
    """
    _check_measurements(baseline, candidates)
    if not candidates:
        raise ValueError("compare_measurements needs at least one candidate")
    if baseline_name in candidates:
        raise ValueError(f"a candidate is named like the baseline ({baseline_name!r})")
    measurements = {baseline_name: baseline, **candidates}
    return Comparison(
        baseline=baseline_name,
        measurements=dict(measurements),
        results={name: _with_together_hint(r) for name, r in judge_runs(
            baseline_name, measurements, paired=False, alpha=alpha, min_effect=min_effect,
            correction=correction, run_variation=run_variation).items()},
        paired=False,
        correction=correction,
        rounds=min(m.runs for m in measurements.values()),
        stop_reason="saved",
    )
