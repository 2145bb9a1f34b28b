"""Statistics across runs: the run (a process, an invocation) as a random effect.

The samples inside one run are not independent draws of what a user wants to know: a shared
machine runs whole invocations at speed levels a few percent apart, so two runs of identical
code differ by more than the within-run intervals allow. Here each run contributes one
value, its median, and the uncertainty comes from how those values vary: the centre of
several runs with its t interval (:func:`run_level`), and two sets of runs compared
(:func:`compare_runs`) by a t test on their log medians, or, with a single run on a side,
against the run-to-run variation known for the machine. Pure functions; running the
processes is fastbench.timing's, storing the machine's variation fastbench.machine's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_finite, check_fraction
from ._scipy import sps
from .samples import as_samples
from .twosample import (CANNOT_TELL, MIN_RUNS, SampleComparison, _cliffs_delta, _effect_sizes,
                        _mannwhitney, _verdict, _welch_log)

__all__ = ["RUN_TOLERANCE", "ReplicateSpread", "RunLevel", "compare_runs", "detectable_change",
           "processes_needed", "quiet_runs", "replicate_spread", "run_level", "run_spread"]

# The power the processes suggestion aims at, for a difference of the size asked about.
_POWER = 0.8
# Suggested processes are kept within these bounds.
_PROCESSES_RANGE = (3, 100)


@dataclass(frozen=True)
class RunLevel:
    """The centre of several runs' medians, with its interval.

    Attributes
    ----------
    runs : int
        Number of runs.
    center : float
        Geometric mean of the run medians (runs differ by speed factors, so their logs are
        averaged).
    ci : (float, float) or None
        ``exp(mean ± t(runs - 1) · sd / sqrt(runs))`` on the log medians at ``confidence``;
        None with a single run.
    spread : float or None
        Standard deviation of the log medians (about the relative standard deviation between
        runs: 0.03 for runs 3% apart); None with a single run.
    confidence : float
    """

    runs: int
    center: float
    ci: tuple[float, float] | None
    spread: float | None
    confidence: float


def _logs(medians: Any, name: str) -> NDArray[np.float64]:
    x = as_samples(medians, name=name)
    if not np.all(x > 0.0):
        raise ValueError(f"{name} must be positive (run medians are times)")
    return np.log(x)


# A run whose median lies more than this far above the level of the undisturbed runs ran in
# a slow phase of the host from start to end: left out of the run-level figure. Ten-process
# results of sorted() of 150 ints on a 2-vCPU Zen 4 VM (32 of them, 320 processes): 37
# processes (12%) ran at 1.11-2.3x the fastest of their result, 5 of 10 in the worst one;
# the others lay at 704-774 ns. The geometric mean of all ten spread 18% between results
# (SD 7.5%), that of the undisturbed ones 2.7% (SD 0.7%).
RUN_TOLERANCE = 0.10


def quiet_runs(medians: Any, tolerance: float = RUN_TOLERANCE) -> NDArray[np.bool_]:
    """Which runs ran undisturbed: those whose median is within ``tolerance`` above the
    level, as :func:`fastbench.stats.phases.quiet_phases` does for windows inside a run.

    A shared host slows whole processes (a second or more of another tenant's work), never
    speeds them up, so the level is the fastest run's median; or, where fewer than half of
    the runs lie within ``tolerance`` of it, the fastest that has half of them within
    ``tolerance`` above it, so that one run that ran fast cannot leave the others out and at
    least half are always kept. Runs faster than the level are kept too. Below 3 runs there
    is no level to judge against and every run is kept.

    Raises
    ------
    ValueError
        Empty, non-finite or non-positive medians, or a negative tolerance.
    """
    logs = _logs(medians, "medians")
    tol = check_finite("tolerance", tolerance)
    if tol < 0.0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    if logs.size < 3:
        return np.ones(logs.size, dtype=bool)
    width = math.log1p(tol) + 1e-12
    ordered = np.sort(logs)
    within = np.searchsorted(ordered, ordered + width, side="right")  # runs <= each + width
    level = float(ordered[np.flatnonzero(2 * within >= logs.size)[0]])
    return np.asarray(logs <= level + width, dtype=bool)


def run_spread(medians: Any) -> float | None:
    """Standard deviation (ddof=1) of the log run medians; None with fewer than 2 runs."""
    logs = _logs(medians, "medians")
    return float(np.std(logs, ddof=1)) if logs.size > 1 else None


@dataclass(frozen=True)
class ReplicateSpread:
    """How much whole results of identical code vary, from its replicates.

    Attributes
    ----------
    sd : float
        Relative standard deviation between results (of their log figures).
    df : int
        Degrees of freedom the estimate is worth (a chi-square with the same variance).
    runs : int
        Figures it came from.
    series : int
        Series (identities) with at least two figures that contributed.
    """

    sd: float
    df: int
    runs: int
    series: int


def replicate_spread(*series: Any) -> ReplicateSpread | None:
    """Result-to-result standard deviation from replicates of identical code.

    Each series holds the figures (run medians, or run-level figures of several processes)
    of one identity of the code, in the order they were saved; the figures of a series
    differ only by how the machine ran each invocation. The estimate is von Neumann's mean
    square successive difference on the logs, ``sum(d²) / (2 · steps)``, pooled over the
    series, so a slow drift of the machine over days adds little; no series is ever
    compared with another, so a change of the code, which starts a new series, is never
    counted as variation.

    For normal figures the estimate's variance is ``(3n - 4) / (n - 1)²`` · sd⁴ for n of
    them (von Neumann 1941), so a series is worth ``2 (n - 1)² / (3n - 4)`` degrees of
    freedom (1 for two, about 2n/3 for many); the pooled estimate sums them.

    Returns None when no series has two figures.

    Raises
    ------
    ValueError
        A series holds non-finite or non-positive figures.
    """
    steps: list[NDArray[np.float64]] = []
    df = 0.0
    runs = 0
    for i, values in enumerate(series):
        x = np.asarray(values, dtype=np.float64)
        if x.size == 0:
            continue
        logs = _logs(x, f"series {i}")
        runs += int(logs.size)
        if logs.size > 1:
            steps.append(np.diff(logs))
            n = logs.size
            df += 2.0 * (n - 1) ** 2 / (3.0 * n - 4.0)
    if not steps:
        return None
    d = np.concatenate(steps)
    sd = math.sqrt(float(np.sum(d * d)) / (2.0 * d.size))
    return ReplicateSpread(sd=sd, df=max(1, int(round(df))), runs=runs, series=len(steps))


def detectable_change(se: float, df: int | None, alpha: float = 0.05,
                      power: float = 0.8) -> float:
    """The relative change a two-sided test with standard error ``se`` (of a log ratio)
    and ``df`` degrees of freedom finds with ``power``: ``exp((t(1 - alpha/2) + t(power))
    · se) - 1`` (inf for an unknown error)."""
    if not math.isfinite(se):
        return math.inf
    dist = sps().norm if df is None else sps().t(df)
    z = float(dist.ppf(1.0 - alpha / 2.0)) + float(dist.ppf(power))
    return math.expm1(min(z * se, 700.0))


def run_level(medians: Any, confidence: float = 0.95) -> RunLevel:
    """The centre of per-run medians and its t interval, the run as a random effect.

    Raises
    ------
    ValueError
        Empty, non-finite or non-positive medians, or ``confidence`` outside (0, 1).
    """
    level = check_fraction("confidence", confidence)
    logs = _logs(medians, "medians")
    k = int(logs.size)
    center = math.exp(float(logs.mean()))
    if k < 2:
        return RunLevel(k, center, None, None, level)
    sd = float(np.std(logs, ddof=1))
    q = float(sps().t.ppf(0.5 + level / 2.0, k - 1))
    half = q * sd / math.sqrt(k)
    return RunLevel(k, center, (center * math.exp(-half), center * math.exp(half)), sd, level)


def processes_needed(run_variation: float, effect: float, alpha: float = 0.05) -> int:
    """Processes per side for a run-level t test to find a relative difference ``effect``
    with 80% power at ``alpha`` when runs vary by ``run_variation`` (relative SD):
    ``2 (z(1 - alpha/2) + z(0.8))² sd² / log(1 + effect)²``, within [3, 100]."""
    z = float(sps().norm.ppf(1.0 - alpha / 2.0)) + float(sps().norm.ppf(_POWER))
    delta = math.log1p(max(effect, 1e-6))
    n = math.ceil(2.0 * z * z * run_variation * run_variation / (delta * delta))
    return int(min(max(n, _PROCESSES_RANGE[0]), _PROCESSES_RANGE[1]))


def _pooled_sd(*sides: NDArray[np.float64]) -> tuple[float, int] | None:
    """SD pooled over the sides with at least MIN_RUNS runs, and its degrees of freedom."""
    used = [x for x in sides if x.size >= MIN_RUNS]
    if not used:
        return None
    df = sum(x.size - 1 for x in used)
    ss = sum(float(np.sum((x - x.mean()) ** 2)) for x in used)
    return math.sqrt(ss / df), df


def compare_runs(
    a: Any,
    b: Any,
    *,
    paired: bool = False,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    confidence: float = 0.95,
    run_variation: float | None = None,
    variation_df: int | None = None,
    within_a: float = 0.0,
    within_b: float = 0.0,
    variation_source: str = "runs on this machine",
    between_variation: float | None = None,
    between_df: int | None = None,
    between_source: str = "",
    require_between: bool = False,
) -> SampleComparison:
    """Compare baseline runs ``a`` with candidate runs ``b``: one median per run and side.

    The speedup is ``exp(mean(log a) - mean(log b))`` (paired: the mean log-ratio), > 1 when
    the candidate is faster. Which test decides depends on what the runs can tell:

    - paired runs (``a[i]`` and ``b[i]`` ran next to each other, as ``compare(processes=N)``
      interleaves them): the t test on the log-ratios, N - 1 degrees of freedom; level "runs";
    - at least ``MIN_RUNS`` (3) runs on each side: Welch's t test on the log medians; level
      "runs". The runs of one side shared an invocation (its minutes of the host), so two
      sides measured apart also differ by what moves whole invocations, which neither
      side's spread shows. ``between_variation`` is how much whole results of such runs
      vary between invocations (relative SD of their run-level figure, ``between_df`` its
      degrees of freedom): where ``sqrt(2)`` times it exceeds Welch's standard error, it
      takes its place, with its degrees of freedom. Without it the verdict is "cannot
      tell" when ``require_between`` is set (saved results), else Welch's alone, with a
      note;
    - otherwise (a single run on a side): the difference is judged against the run-to-run
      variation: ``run_variation`` when given (the machine's, measured by fastbench or given
      by the user; ``variation_df`` its degrees of freedom, None for a known value), else the
      standard deviation pooled over a side with ``MIN_RUNS`` runs or more. The variance of
      the difference is ``sd² (1/n_a + 1/n_b) + within_a² + within_b²`` (``within_*``: a
      single run's own relative standard error). Level "variation": a difference that is
      not beyond it is ``"cannot tell"``, never "no significant difference", with a warning
      saying how much runs vary and how many processes would tell. Without any known
      variation the verdict is "cannot tell" outright.

    The verdict rule is :func:`fastbench.stats.compare_samples`': ``p < alpha`` and a speedup
    beyond ``1 + min_effect`` with its whole interval on that side of 1.

    Parameters
    ----------
    a, b : array_like
        Run medians (positive times), one per run.
    paired : bool
        Analyse ``(a[i], b[i])`` as pairs (equal lengths).
    alpha, min_effect, confidence : float
        As in :func:`fastbench.stats.compare_samples`.
    run_variation : float, optional
        Relative standard deviation between runs of the same code on this machine (0.03 for 3%).
    variation_df : int, optional
        Degrees of freedom of ``run_variation`` when it was estimated (processes - 1).
    within_a, within_b : float
        Relative standard error of a single run's median, from its own samples.
    variation_source : str
        Whose runs ``run_variation`` describes, as the "cannot tell" warning says it
        ("runs on this machine", "this benchmark's 12 saved runs here").
    between_variation, between_df, between_source : optional
        Unpaired sides of several runs: the relative SD between whole results measured in
        separate invocations, its degrees of freedom, and whose results it comes from.
    require_between : bool
        Unpaired sides of several runs without ``between_variation`` cannot be told apart
        ("cannot tell"): whole invocations of a shared machine move together by more than
        the runs inside one show.

    Raises
    ------
    TypeError
        A setting is not a number.
    ValueError
        Empty, non-finite or non-positive medians, paired sides of different lengths, or a
        setting out of range.
    """
    log_a, log_b = _logs(a, "a"), _logs(b, "b")
    al = check_fraction("alpha", alpha)
    level = check_fraction("confidence", confidence)
    eff = check_finite("min_effect", min_effect)
    if eff < 0.0:
        raise ValueError(f"min_effect must be >= 0, got {min_effect!r}")
    if run_variation is not None and not check_finite("run_variation", run_variation) >= 0.0:
        raise ValueError(f"run_variation must be >= 0, got {run_variation!r}")
    if variation_df is not None and variation_df < 1:
        raise ValueError(f"variation_df must be >= 1, got {variation_df!r}")
    wa, wb = check_finite("within_a", within_a), check_finite("within_b", within_b)
    if paired and log_a.size != log_b.size:
        raise ValueError(f"paired runs need equal lengths, got {log_a.size} and {log_b.size}")
    na, nb = int(log_a.size), int(log_b.size)
    notes: list[str] = []
    if paired or (na >= MIN_RUNS and nb >= MIN_RUNS):
        d, se, df, test, measured = _run_test(log_a, log_b, paired)
        mode = "runs"
        if min(na, nb) < MIN_RUNS:
            notes.append(f"too few runs for a verdict: {min(na, nb)} (at least {MIN_RUNS} "
                         "processes per side needed)")
        elif not paired:
            se, df, test = _between_invocations(se, df, test, between_variation, between_df,
                                                between_source, notes, require_between)
    else:
        mode, test = "variation", "t against run-to-run variation"
        d = float(log_a.mean() - log_b.mean())
        source = _variation(log_a, log_b, run_variation, variation_df)
        if source is None:
            measured, se, df = None, math.inf, None
            notes.append(
                f"{CANNOT_TELL}: how much separate runs vary on this machine is not known, so "
                "one run per side cannot tell a change from a slower or faster run; save "
                "another result of each version (identical code: its replicates), run "
                "`fastbench variation` once to measure this machine, or measure both in one "
                "invocation (compare, or `fastbench compare --versions`)")
        else:
            measured, df = source
            se = math.sqrt(measured ** 2 * (1.0 / na + 1.0 / nb) + wa ** 2 + wb ** 2)
    speedup = math.exp(d)
    if se == 0.0:
        p, ci = (1.0 if d == 0.0 else 0.0), (speedup, speedup)
    elif math.isfinite(se):
        dist = sps().norm if df is None else sps().t(df)
        p = float(2.0 * dist.sf(abs(d) / se))
        q = float(dist.ppf(0.5 + level / 2.0))
        ci = (math.exp(d - q * se), math.exp(d + q * se))
    else:
        p, ci = 1.0, None
    n = min(na, nb)
    verdict = _verdict(p, al, speedup, eff, ci, n if mode == "runs" else max(n, 1), mode)
    if mode == "runs" and not math.isfinite(se):
        verdict = CANNOT_TELL  # unpaired runs whose invocations' variation is not known
    if mode == "runs" and verdict == "no significant difference" and 0.0 < se < math.inf:
        notes.append(_unseen_note(se, df, al, measured))
    if mode == "variation" and verdict == CANNOT_TELL and measured is not None:
        needed = processes_needed(measured, max(eff, abs(speedup - 1.0)), al)
        told = detectable_change(se, df, al)
        notes.append(f"{CANNOT_TELL}: {variation_source} vary by about {measured * 100:.1f}%, "
                     f"so a change of about {told * 100:.1f}% or more could be told; "
                     f"measure with processes={needed}, or both versions in one invocation")
    xa, xb = np.exp(log_a), np.exp(log_b)
    cohens_d, hedges_g = _effect_sizes(xa, xb)
    p_wilcoxon = None
    if paired and np.count_nonzero(log_a - log_b) > 0:
        p_w = float(sps().wilcoxon(log_a - log_b).pvalue)
        p_wilcoxon = p_w if math.isfinite(p_w) else None
    center_a, center_b = math.exp(float(log_a.mean())), math.exp(float(log_b.mean()))
    return SampleComparison(
        paired=bool(paired), test=test, n_a=na, n_b=nb, median_a=center_a, median_b=center_b,
        speedup=speedup, speedup_ci=ci, confidence=level,
        rel_diff_pct=(center_b / center_a - 1.0) * 100.0, p_value=p, p_wilcoxon=p_wilcoxon,
        p_mannwhitney=_mannwhitney(xa, xb), p_welch=_welch_log(log_a, log_b),
        cohens_d=cohens_d, hedges_g=hedges_g, cliffs_delta=_cliffs_delta(xa, xb),
        alpha=al, min_effect=eff, verdict=verdict, warnings=tuple(notes), level=mode,
        run_variation=measured,
    )


def _between_invocations(se: float, df: int | None, test: str, between: float | None,
                         between_df: int | None, source: str, notes: list[str],
                         required: bool = False) -> tuple[float, int | None, str]:
    """Welch's standard error, or the one from how whole results vary between invocations
    where that is larger; a note either way. Without the latter and ``required``, an
    infinite error (the verdict is then "cannot tell")."""
    if between is None and required:
        notes.append(
            f"{CANNOT_TELL}: each side's runs shared one invocation, and how much whole "
            "invocations of this code vary here is not known (no replicate of either side "
            "is saved on this machine, and `fastbench variation` has not measured it); "
            f"inside their invocations the runs alone would tell a change of about "
            f"{detectable_change(se, df) * 100:.1f}%. Save a second result of each version "
            "(identical code), run `fastbench variation`, or measure both versions in one "
            "invocation (`fastbench compare --versions`, or compare(..., processes=N))")
        return math.inf, df, test
    if between is None:
        notes.append("each side's runs shared one invocation, so the test sees the spread "
                     "inside each and not how whole invocations move; replicates of each "
                     "side (results of identical code saved here) teach it that")
        return se, df, test
    if not (math.isfinite(between) and between >= 0.0):
        raise ValueError(f"between_variation must be >= 0, got {between!r}")
    if between_df is not None and between_df < 1:
        raise ValueError(f"between_df must be >= 1, got {between_df!r}")
    wider = between * math.sqrt(2.0)
    what = f"{source} " if source else "whole results "
    if wider > se:
        notes.append(f"{what}vary by about {between * 100:.1f}% between invocations, more "
                     "than the runs inside each show: the difference was judged against that")
        return wider, between_df, f"{test} against the spread of saved results"
    return se, df, test


def _unseen_note(se: float, df: int | None, alpha: float, spread: float | None) -> str:
    """What "no significant difference" between sets of runs rules out: the change this test
    finds with 80% power (:func:`detectable_change`)."""
    unseen = detectable_change(se, df, alpha, _POWER) * 100.0
    vary = "" if spread is None else f" at the {spread * 100:.1f}% spread of these runs"
    return (f"no significant difference rules out only a change of about {unseen:.1f}% or more "
            f"(80% power{vary}); a smaller one needs more processes")


def _run_test(log_a: NDArray[np.float64], log_b: NDArray[np.float64],
              paired: bool) -> tuple[float, float, int | None, str, float | None]:
    """(log speedup, its standard error, degrees of freedom, test name, run SD) of a t test
    on run medians: paired on the log-ratios, else Welch's."""
    if paired:
        r = log_a - log_b
        k = r.size
        sd = float(np.std(r, ddof=1)) if k > 1 else math.inf
        # The SD of a log-ratio holds two runs' variation: one run's is sd / sqrt(2).
        return float(r.mean()), sd / math.sqrt(k), max(k - 1, 1), "paired t (run medians)", \
            sd / math.sqrt(2.0) if k > 1 else None
    va, vb = float(np.var(log_a, ddof=1)), float(np.var(log_b, ddof=1))
    na, nb = log_a.size, log_b.size
    se2 = va / na + vb / nb
    if se2 > 0.0:
        df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    else:
        df = float(na + nb - 2)
    pooled = math.sqrt(((na - 1) * va + (nb - 1) * vb) / (na + nb - 2))
    return (float(log_a.mean() - log_b.mean()), math.sqrt(se2), max(int(df), 1),
            "welch t (run medians)", pooled)


def _variation(log_a: NDArray[np.float64], log_b: NDArray[np.float64],
               run_variation: float | None,
               variation_df: int | None) -> tuple[float, int | None] | None:
    """The run-to-run SD to judge against and its degrees of freedom (None: known exactly)."""
    if run_variation is not None:
        return float(run_variation), variation_df
    return _pooled_sd(log_a, log_b)
