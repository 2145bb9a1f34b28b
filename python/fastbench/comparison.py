"""A/B comparison: variants measured interleaved, judged by paired tests, one verdict each.

Owns the round-robin schedule, the judgement and the Comparison record. Each round takes one
sample of every variant in a rotated order (round r starts at variant r mod k), so slow
drifts of the machine reach all variants alike and no variant always runs first. Statistics
come from fastbench.stats; targets and their floors from fastbench.timing. The record does
not register itself as a results-file kind: fastbench.results names it in its table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ._checks import check_choice, check_finite, check_fraction, check_int
from .measurement import Measurement
from .stats import SampleComparison, adjust_pvalues, compare_samples
from .timing import Target, callable_target, gc_paused, run_config, statement_target

__all__ = ["Comparison", "compare", "compare_measurements"]

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
        "rounds" (all requested rounds ran), "max_time_s" (the budget ended them) or
        "saved" (compared from existing measurements).
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
        """Candidate name -> "faster", "slower" or "no significant difference"."""
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


def _check_judgement(alpha: float, min_effect: float, correction: str) -> None:
    check_choice("correction", correction, CORRECTIONS)
    check_fraction("alpha", alpha)
    if not 0.0 <= check_finite("min_effect", min_effect) < 1.0:
        raise ValueError(f"min_effect must be in [0, 1), got {min_effect!r}")


def _judge(
    baseline: str,
    samples: Mapping[str, Any],
    paired: bool,
    alpha: float,
    min_effect: float,
    correction: str,
) -> dict[str, SampleComparison]:
    """Compare each candidate's samples with the baseline's, then correct the p-values."""
    _check_judgement(alpha, min_effect, correction)
    results = {
        name: compare_samples(samples[baseline], s, paired=paired, alpha=alpha,
                              min_effect=min_effect)
        for name, s in samples.items() if name != baseline
    }
    if correction != "none" and len(results) > 1:
        adjusted = adjust_pvalues([r.p_value for r in results.values()], method=correction)
        results = {name: r.with_p_value(float(p))
                   for (name, r), p in zip(results.items(), adjusted)}
    return results


def _target(name: str, variant: Any, clock: str, setup: str,
            glob: dict[str, Any]) -> Target:
    if isinstance(variant, str):
        return statement_target(variant, setup, glob, clock, name=name)
    if callable(variant):
        return callable_target(variant, (), {}, clock, name=name)
    raise TypeError(f"variant {name!r} must be a callable or a statement string, "
                    f"got {type(variant).__name__}")


def rotation(names: Sequence[str], round_index: int) -> list[str]:
    """The order of round ``round_index``: the names rotated left by ``round_index mod k``."""
    k = round_index % len(names)
    return [*names[k:], *names[:k]]


def compare(
    variants: Mapping[str, Callable[[], Any] | str],
    *,
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
) -> Comparison:
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
        judged (``stop_reason == "max_time_s"``).
    alpha, min_effect : float
        Significance level, and the smallest relative speedup worth calling a difference.
    correction : {"holm", "bh", "none"}
        Multiple-testing correction when there are several candidates.
    warmup, min_time_s, loops, clock, disable_gc
        As in :func:`fastbench.measure`.

    Returns
    -------
    Comparison

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
    check_int("rounds", rounds, 1, say_positive=False)
    _check_judgement(alpha, min_effect, correction)  # before anything is measured
    cfg = run_config(warmup, min_time_s, rounds, loops, clock, disable_gc, max_time_s)
    glob = {} if globals is None else globals
    targets = {n: _target(n, variants[n], cfg.clock, setup, glob) for n in names}
    samples: dict[str, list[float]] = {n: [] for n in names}
    spent = dict.fromkeys(names, 0.0)
    stop = "rounds"
    with gc_paused(cfg.disable_gc):
        for t in targets.values():
            t.prepare(cfg)
        start = time.monotonic()
        for r in range(cfg.repeat):
            for name in rotation(names, r):
                got, _, elapsed = targets[name].sample(1)
                samples[name] += got
                spent[name] += elapsed
            if cfg.max_time_s and r + 1 < cfg.repeat and time.monotonic() - start >= cfg.max_time_s:
                stop = "max_time_s"
                break
    measurements = {
        n: targets[n].measurement(samples[n], spent[n],
                                  "max_time_s" if stop == "max_time_s" else "repeat", cfg)
        for n in names
    }
    return Comparison(
        baseline=baseline,
        measurements=measurements,
        results=_judge(baseline, samples, True, alpha, min_effect, correction),
        paired=True,
        correction=correction,
        rounds=len(samples[baseline]),
        stop_reason=stop,
    )


def compare_measurements(
    baseline: Measurement,
    candidates: Mapping[str, Measurement],
    *,
    baseline_name: str = "baseline",
    alpha: float = 0.05,
    min_effect: float = 0.01,
    correction: str = "holm",
) -> Comparison:
    """Judge saved measurements (not interleaved) against a baseline, as unpaired samples.

    Each measurement contributes its quiet-phase samples (``Measurement.quiet_samples_ns``,
    all of them when no interference phase was found), so the speedup agrees with the
    medians reports print. The speedup is ``median(baseline) / median(candidate)`` with a
    bootstrap interval, the p-value Mann-Whitney's U test (Welch's t on log times is reported
    beside it).

    Raises
    ------
    TypeError
        ``alpha`` or ``min_effect`` is not a number.
    ValueError
        No candidates, a candidate named like the baseline, ``alpha`` outside (0, 1),
        ``min_effect`` outside [0, 1), or an unknown ``correction``.
    """
    if not candidates:
        raise ValueError("compare_measurements needs at least one candidate")
    if baseline_name in candidates:
        raise ValueError(f"a candidate is named like the baseline ({baseline_name!r})")
    measurements = {baseline_name: baseline, **candidates}
    samples = {n: m.quiet_samples_ns for n, m in measurements.items()}
    return Comparison(
        baseline=baseline_name,
        measurements=dict(measurements),
        results=_judge(baseline_name, samples, False, alpha, min_effect, correction),
        paired=False,
        correction=correction,
        rounds=min(v.size for v in samples.values()),
        stop_reason="saved",
    )
