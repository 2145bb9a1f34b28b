"""Verdicts: a candidate's samples or runs judged against the baseline's, the p-values
corrected across candidates, and how much whole results vary here for results measured
apart (the replicates of their identities, else the machine's variation). Pure judgement:
what is measured, and how, is the callers' (:mod:`.interleaved`, :mod:`.saved`,
:mod:`.versions`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .._checks import check_choice, check_finite, check_fraction
from ..machine import known_run_variation
from ..measurement import Measurement
from ..replicates import replicate_variation
from ..stats import SampleComparison, adjust_pvalues, compare_samples
from ..stats.runs import RUN_TOLERANCE, compare_runs
from ..stats.signedrank import hodges_lehmann

__all__ = ["CORRECTIONS", "identity_notes", "judge", "judge_blocks", "judge_runs"]

CORRECTIONS = ("holm", "bh", "none")


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


def judge_blocks(
    baseline: str,
    blocks: Mapping[str, Sequence[Sequence[float]]],
    alpha: float,
    min_effect: float,
    correction: str,
    estimator: str = "hodges-lehmann",
) -> dict[str, SampleComparison]:
    """Compare each candidate with the baseline over blocks of paired rounds, then correct
    the p-values across candidates.

    ``blocks[name][k][i]`` is the time of round ``i`` of block ``k``; round ``i`` of a block
    ran every variant side by side. Each block gives one estimate of the log-ratio (the
    ``estimator`` of its rounds' log-ratios: Hodges-Lehmann or the median) and the verdict is
    the t test over the blocks' estimates (blocks - 1 degrees of freedom). Rounds inside a
    block share whatever the block holds fixed (where each variant's objects lie in memory,
    what the allocator handed out), so they are not independent of it; the blocks are, when
    each starts from fresh objects, and their spread then carries that variation.
    """
    _check_judgement(alpha, min_effect, correction)
    check_choice("estimator", estimator, ("median", "hodges-lehmann"))
    center = hodges_lehmann if estimator == "hodges-lehmann" else np.median
    base = [np.log(np.asarray(b, dtype=np.float64)) for b in blocks[baseline]]
    a_mid = np.asarray([float(np.median(b)) for b in base])
    results = {}
    for name, cand in blocks.items():
        if name == baseline:
            continue
        if len(cand) != len(base):
            raise ValueError(f"{name!r} has {len(cand)} blocks, the baseline {len(base)}")
        logs = [np.log(np.asarray(c, dtype=np.float64)) for c in cand]
        d = np.asarray([float(center(la - lc)) for la, lc in zip(base, logs)])
        # The candidate's block figure is the baseline's over the block's paired estimate, so
        # the mean log-ratio compare_runs tests is the blocks' estimates.
        r = compare_runs(np.exp(a_mid), np.exp(a_mid - d), paired=True, alpha=alpha,
                         min_effect=min_effect)
        notes = tuple(w.replace("more processes", "more blocks").replace("these runs",
                                                                            "these blocks")
                      for w in r.warnings)
        results[name] = replace(
            r, warnings=notes, test=f"paired t over {len(base)} blocks ({estimator} of each "
                                    "block's log-ratios)")
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


def _variation(measurements: Sequence[Measurement],
               given: float | None) -> tuple[float | None, int | None, str]:
    """How much whole results vary here, to judge results measured apart against: its
    relative SD, degrees of freedom and whose it is. The one given; else what the
    replicates of these measurements' identities saved on this machine teach (never
    across a change of the code); else the largest the measurements carry (known when they
    were taken); else this machine's (``fastbench variation``); else unknown."""
    if given is not None:
        value = check_finite("run_variation", given)
        if not 0.0 <= value < 1.0:
            raise ValueError(f"run_variation must be a fraction in [0, 1) such as 0.03 for 3%, "
                             f"got {given!r}")
        return value, None, "results here (as given)"
    learned = replicate_variation(*measurements)
    if learned is not None:
        whose = "this version's" if learned.series == 1 else "these versions'"
        return (learned.sd, learned.df,
                f"{whose} {learned.runs} saved results of identical code here")
    carried = [m for m in measurements if m.run_variation is not None]
    if carried:
        worst = max(carried, key=lambda m: m.run_variation or 0.0)
        return worst.run_variation, worst.run_variation_df, "runs on this machine"
    here = known_run_variation()
    return (None, None, "runs on this machine") if here is None else \
        (here.rel_sd, here.df, "runs on this machine (`fastbench variation`)")


def identity_notes(base: Measurement, cand: Measurement) -> list[str]:
    """What the two identities say about a comparison of results measured apart: the same
    code on both sides (an A/A comparison), what differs between them, or a side whose
    identity is not known."""
    a, b = base.identity, cand.identity
    unknown = [side for side, i in (("baseline", a), ("candidate", b)) if i is None or not i.key]
    if unknown:
        return [f"identity unknown for the {' and '.join(unknown)} (saved by an older fastbench "
                "or another tool, or an argument without a fingerprint): no replicate of it "
                "can teach how much its results vary"]
    assert a is not None and b is not None
    if a.key == b.key:
        return ["identical code on both sides (the same identity): they are replicates of "
                "each other"]
    changed = a.differences(b)
    return [f"versions differ in: {', '.join(changed)}"] if changed else []


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
    on the run medians), then the p-values corrected across candidates. Unpaired (results
    measured apart), whole results are judged against how much results vary here
    (:func:`_variation`): with none known, "cannot tell"."""
    _check_judgement(alpha, min_effect, correction)
    variation, df, source = (None, None, "") if paired else \
        _variation(list(measurements.values()), run_variation)
    base = measurements[baseline_name]
    results = {}
    for name, m in measurements.items():
        if name == baseline_name:
            continue
        a, b, note = _undisturbed(base, m, paired)
        r = compare_runs(
            a, b, paired=paired, alpha=alpha,
            min_effect=min_effect, run_variation=variation, variation_df=df,
            within_a=_within(base), within_b=_within(m), variation_source=source,
            between_variation=variation, between_df=df, between_source=source,
            require_between=not paired)
        notes = ([note] if note else []) + ([] if paired else identity_notes(base, m))
        results[name] = replace(r, warnings=(*r.warnings, *notes)) if notes else r
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
    hint = ("where both versions can run in one invocation, `fastbench compare --versions "
            "A=git:REF B=. --run STMT` (fastbench.compare_versions) measures them side by "
            "side, and `fastbench compare --run --processes 5 --pairing rounds` two "
            "statements in every worker: the host's slower phases then cancel in their ratio")
    return replace(r, warnings=(*r.warnings, hint))
