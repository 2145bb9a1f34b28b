"""Bootstrap intervals of a mean of per-example scores (0/1 correctness, a graded score):
the BCa interval of one model's mean (:func:`bootstrap_mean_ci`) and of the change between
two models scored on the same examples (:func:`paired_bootstrap_delta_ci`). Pure functions
on score arrays, seeded so the same input always gives the same interval; nothing here
scores, times or prints.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_fraction, check_int
from .samples import as_samples

__all__ = ["bootstrap_mean_ci", "paired_bootstrap_delta_ci"]

# Fewer resamples than this and the tail percentiles BCa reads are mostly Monte Carlo noise
# (Efron & Tibshirani 1993, ch. 19, ask for 1000 or more for percentile intervals).
MIN_RESAMPLES = 100
# Resampled values materialised at once (4-byte indices and 8-byte values): bounds memory
# for long score arrays, as the median bootstrap of .samples does.
_CHUNK_VALUES = 2_000_000


def _scores(values: Any, name: str) -> NDArray[np.float64]:
    """``values`` as a 1-D float array of at least 2 finite scores; bools count as 0/1."""
    raw = np.asarray(values)
    # Correctness often arrives as a bool array (predictions == labels); a mean of it is
    # the accuracy, so here, unlike timing samples, bools are scores.
    if raw.dtype == np.bool_:
        raw = raw.astype(np.float64)
    x = as_samples(raw, name=name)
    if x.size < 2:
        raise ValueError(f"{name} must hold at least 2 scores, got {x.size}")
    return x


def _resampled_means(x: NDArray[np.float64], resamples: int, seed: int) -> NDArray[np.float64]:
    """Means of ``resamples`` resamples of ``x`` with replacement, drawn in chunks."""
    n = x.size
    rng = np.random.default_rng(seed)
    out = np.empty(resamples, dtype=np.float64)
    # 4-byte indices draw and gather faster than numpy's default 8-byte ones.
    index_type = np.int32 if n < 2**31 else np.int64
    rows = max(1, _CHUNK_VALUES // n)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=index_type)
        out[start:stop] = x[idx].mean(axis=1)
    return out


def _mean(x: NDArray[np.float64]) -> float:
    """The mean of ``x``, exactly ``x[0]`` when all values are equal (a float sum of n equal
    values divided by n can be off in the last digit)."""
    return float(x[0]) if float(np.ptp(x)) == 0.0 else float(np.mean(x))


def _bca_mean(x: NDArray[np.float64], level: float, resamples: int,
              seed: int) -> tuple[float, float]:
    """The BCa interval of the mean of ``x`` (Efron 1987; Efron & Tibshirani 1993, ch. 14).

    The bootstrap means are read at the adjusted levels
    ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` for ``z = z_(alpha/2)`` and ``z_(1-alpha/2)``,
    where the bias correction ``z0 = Phi^-1(share of bootstrap means below the mean)`` and
    the acceleration ``a`` is the jackknife skewness: for the mean, the leave-one-out means
    differ from their average by ``(x_i - mean) / (n - 1)``, so
    ``a = sum(d**3) / (6 sum(d**2)**1.5)`` with ``d = x - mean`` (the scale cancels)."""
    mean = _mean(x)
    if float(np.ptp(x)) == 0.0:
        return mean, mean              # all scores equal: every resample has the same mean
    d = x - mean
    ss = float(np.sum(d * d))
    accel = float(np.sum(d * d * d)) / (6.0 * ss**1.5)
    means = _resampled_means(x, resamples, seed)
    # Ties with the mean are common for 0/1 scores (a resample with as many correct answers
    # as the sample); counting them as half below keeps z0 at 0 for a symmetric bootstrap
    # distribution. The share is kept off 0 and 1 so z0 stays finite.
    below = int(np.count_nonzero(means < mean)) + 0.5 * int(np.count_nonzero(means == mean))
    share = min(max(below / resamples, 0.5 / resamples), 1.0 - 0.5 / resamples)
    normal = NormalDist()
    z0 = normal.inv_cdf(share)
    levels = []
    for tail in ((1.0 - level) / 2.0, (1.0 + level) / 2.0):
        w = z0 + normal.inv_cdf(tail)
        denom = 1.0 - accel * w
        # Past w = 1/a the adjustment has run off to +-infinity (the far end of the
        # bootstrap distribution); the formula's sign flip beyond it has no meaning.
        levels.append(normal.cdf(z0 + w / denom) if denom > 0.0 else (1.0 if w > 0 else 0.0))
    low, high = np.percentile(means, [100.0 * levels[0], 100.0 * levels[1]])
    return float(low), float(high)


def bootstrap_mean_ci(values: Any, confidence: float = 0.95, *, resamples: int = 2000,
                      seed: int = 0) -> tuple[float, float]:
    """Bias-corrected and accelerated (BCa) bootstrap interval of the mean of scores.

    BCa corrects the percentile bootstrap for the median bias of the bootstrap distribution
    and for how its spread changes with the mean (the acceleration, from the jackknife), so
    the interval is second-order accurate where the percentile interval is first-order (Efron
    1987, "Better bootstrap confidence intervals", JASA 82, 171-185; Efron & Tibshirani 1993,
    *An Introduction to the Bootstrap*, ch. 14). That matters for accuracies near 0 or 1,
    whose bootstrap distribution is skewed.

    Parameters
    ----------
    values : array_like
        One score per example (1-D, finite, at least 2): 0/1 correctness (bools count as
        0/1) or any graded score, in any unit; the interval is in the same one.
    confidence : float
        Two-sided coverage in (0, 1).
    resamples : int
        Bootstrap resamples (at least 100; 2000 keeps the Monte Carlo error of the tail
        percentiles small).
    seed : int
        Seed of the resampling (>= 0): the same scores and seed give the same interval.

    Returns
    -------
    (low, high)
        The interval of the mean; ``(v, v)`` when every score is ``v``.

    Raises
    ------
    TypeError
        If the scores are not real numbers (or bools), or a setting has the wrong type.
    ValueError
        If there are fewer than 2 scores, they are not one-dimensional or not finite,
        ``confidence`` is outside (0, 1), ``resamples`` < 100 or ``seed`` < 0.
    """
    x = _scores(values, "values")
    level = check_fraction("confidence", confidence, example="0.95")
    count = check_int("resamples", resamples, MIN_RESAMPLES)
    start = check_int("seed", seed, 0)
    return _bca_mean(x, level, count, start)


def paired_bootstrap_delta_ci(baseline: Any, candidate: Any, confidence: float = 0.95, *,
                              resamples: int = 2000,
                              seed: int = 0) -> tuple[float, float, float]:
    """The change of the mean score from ``baseline`` to ``candidate`` on the same examples,
    with its BCa bootstrap interval.

    Both arrays score the same examples in the same order, so examples are resampled
    jointly: the interval is the BCa interval (see :func:`bootstrap_mean_ci`) of the mean of
    the per-example differences ``candidate - baseline``. Pairing removes the variation
    between examples that both models share (an example both get right or both get wrong
    adds nothing), so the interval is much narrower than one from two independent
    bootstraps (Koehn 2004, "Statistical significance tests for machine translation
    evaluation", EMNLP).

    Parameters
    ----------
    baseline, candidate : array_like
        One score per example each (1-D, finite, same length, at least 2); bools count as
        0/1.
    confidence : float
        Two-sided coverage in (0, 1).
    resamples : int
        Bootstrap resamples (at least 100).
    seed : int
        Seed of the resampling (>= 0).

    Returns
    -------
    (delta, low, high)
        ``delta = mean(candidate) - mean(baseline)`` (computed as the mean of the
        differences) and its interval, in the scores' unit; ``(d, d, d)`` when every
        example changes by the same ``d``.

    Raises
    ------
    TypeError
        If the scores are not real numbers (or bools), or a setting has the wrong type.
    ValueError
        If the arrays differ in length, hold fewer than 2 scores, are not one-dimensional or
        not finite, ``confidence`` is outside (0, 1), ``resamples`` < 100 or ``seed`` < 0.
    """
    base = _scores(baseline, "baseline")
    cand = _scores(candidate, "candidate")
    if base.size != cand.size:
        raise ValueError("baseline and candidate must score the same examples, got "
                         f"{base.size} and {cand.size} scores")
    level = check_fraction("confidence", confidence, example="0.95")
    count = check_int("resamples", resamples, MIN_RESAMPLES)
    start = check_int("seed", seed, 0)
    diff = cand - base
    low, high = _bca_mean(diff, level, count, start)
    return _mean(diff), low, high
