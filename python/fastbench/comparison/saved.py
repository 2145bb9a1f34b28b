"""Results measured apart (saved files, separate calls) judged against a baseline:
:func:`compare_measurements`. Each result is one invocation; the difference is judged
against how much whole results of the same code vary here (:mod:`.judging`).
"""

from __future__ import annotations

from typing import Mapping

from ..measurement import Measurement
from .judging import _with_together_hint, judge_runs
from .records import Comparison

__all__ = ["compare_measurements"]


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

    Separate measurements are separate invocations, and invocations differ by more than the
    samples (or the processes) inside one show: a shared machine runs whole invocations at
    speed levels a few percent apart. So each measurement contributes its runs' medians
    (``Measurement.run_medians_ns``: one per worker process, or one for a single run),
    never its samples as independent draws, and the difference of the two results is judged
    against how much whole results of the same code vary here, learned in this order:

    1. ``run_variation`` when given;
    2. the replicates of each side: results of the same identity (``Measurement.identity``:
       the same code, arguments, commit and versions) and as many processes, saved on this
       machine (:mod:`fastbench.replicates`), pooled within each identity and never across
       a change of the code, with their degrees of freedom;
    3. the largest the measurements carry (known when they were taken);
    4. this machine's run-to-run variation (``fastbench variation``, or
       ``FASTBENCH_RUN_VARIATION``).

    Several runs per side (at least 3, e.g. saved with ``processes=5``): Welch's t test on
    the log run medians, widened to that variation where it is larger
    (:func:`fastbench.stats.runs.compare_runs`' ``between_variation``). A single run on a
    side: a t test against it. With no variation known, the verdict is "cannot tell", with
    what would tell; with one known but a difference within it, a single run says "cannot
    tell" and says the change it could tell. Each result's warnings say whether the sides
    are of identical code, or what differs between their identities.

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
