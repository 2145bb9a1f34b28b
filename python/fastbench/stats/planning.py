"""Sample-size planning: how many samples a precision (:func:`required_samples`) or a power
(:func:`samples_for_power`) needs, from Student's and the noncentral t distributions. Pure
functions; nothing here measures.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._checks import check_finite, check_fraction
from ._scipy import sps
from .samples import as_samples

# The most samples an answer may call for: 2**53 (about 9e15; at a nanosecond each, over
# three months of sampling), beyond which float64 no longer counts them one by one. A
# precision or an effect that needs more gets a ValueError, not an overflow or a number
# nobody can use.
MAX_SAMPLES = 2**53


def _planned(root: float, factor: float, what: str) -> float:
    """``factor * root**2``, the normal-quantile answer a search starts from; ValueError
    naming ``what`` when it is beyond MAX_SAMPLES (``root`` may be inf after a division by
    a tiny number, and its square overflow)."""
    if not root <= math.sqrt(MAX_SAMPLES / factor):  # also catches inf and NaN
        square = root * root * factor
        estimate = f"about {square:.2g}" if math.isfinite(square) else "more than 1e308"
        raise ValueError(f"{what} needs {estimate} samples, more than any run can take "
                         "(at most 2**53); ask for a coarser one")
    return factor * root ** 2


def required_samples(samples: Any, rel_precision: float, confidence: float = 0.95) -> int:
    """Samples needed for the mean's confidence interval to reach a relative precision.

    Finds the smallest ``n >= 2`` with ``t(1 - alpha/2, n - 1) cv / sqrt(n) <= rel_precision``,
    i.e. a Student t half-width of at most ``rel_precision * mean``, treating the sample's
    coefficient of variation ``cv = stdev / mean`` (ddof=1) as the truth. The search starts
    at the normal-quantile answer ``(z cv / rel_precision)^2`` (a lower bound, as t > z) and
    steps up, since t depends on n.

    Parameters
    ----------
    samples : array_like
        A pilot sample, at least 2 finite values with a positive mean (e.g. times in ns).
    rel_precision : float
        Wanted half-width as a fraction of the mean, in (0, 1): 0.01 for +-1%.
    confidence : float
        Coverage of the interval, in (0, 1).

    Returns
    -------
    int
        Number of samples (at least 2; exactly 2 when the pilot has no spread).

    Raises
    ------
    TypeError
        If ``rel_precision`` or ``confidence`` is not a number.
    ValueError
        If ``rel_precision`` or ``confidence`` is outside (0, 1), if there are fewer than 2
        samples, if the mean is not positive, if the samples are invalid, or if the precision
        needs more than ``MAX_SAMPLES`` (2**53) samples.
    """
    x = as_samples(samples)
    rel = check_fraction("rel_precision", rel_precision)
    check_fraction("confidence", confidence)
    if x.size < 2:
        raise ValueError(f"required_samples needs at least 2 samples, got {x.size}")
    mean = float(np.mean(x))
    if not mean > 0.0:
        raise ValueError(f"required_samples needs a positive mean, got {mean!r}")
    cv = float(np.std(x, ddof=1)) / mean
    if not math.isfinite(cv):
        raise ValueError("required_samples: the samples overflow float64 arithmetic")
    if cv == 0.0:
        return 2
    q = 0.5 + confidence / 2.0
    n = max(2, math.floor(_planned(float(sps().norm.ppf(q)) * cv / rel, 1.0,
                                   f"rel_precision {rel_precision!r} with a cv of {cv:.3g}")))
    while float(sps().t.ppf(q, n - 1)) * cv / math.sqrt(n) > rel:
        n += 1
    return n


def _t_test_power(n: int, cv: float, effect: float, alpha: float, paired: bool) -> float:
    """Exact power of the two-sided t-test, from the noncentral t distribution."""
    if paired:
        df, nc = n - 1, effect * math.sqrt(n) / cv
    else:
        df, nc = 2 * n - 2, effect * math.sqrt(n / 2.0) / cv
    crit = float(sps().t.ppf(1.0 - alpha / 2.0, df))
    return float(sps().nct.sf(crit, df, nc) + sps().nct.cdf(-crit, df, nc))


def samples_for_power(
    cv: float,
    effect: float,
    power: float = 0.8,
    alpha: float = 0.05,
    paired: bool = False,
    correlation: float = 0.0,
) -> int:
    """Samples per group for a two-sided t-test to detect a relative difference of means.

    Unpaired: two groups of n with the same standard deviation ``cv * mean``; Student's
    test with ``2n - 2`` degrees of freedom and noncentrality ``effect sqrt(n/2) / cv``.
    Paired: the one-sample test on n differences, whose relative spread is
    ``cv_d = sqrt(2 (1 - correlation)) cv``, with ``n - 1`` degrees of freedom and
    noncentrality ``effect sqrt(n) / cv_d``. Power is computed exactly from the noncentral
    t distribution (``scipy.stats.nct``; Cohen 1988, *Statistical Power Analysis*, ch. 2)
    and n is the smallest with at least the wanted power, found by stepping from the
    normal approximation ``n = k ((z_{1-alpha/2} + z_power) cv / effect)^2`` (k = 2 unpaired,
    1 paired with cv_d).

    compare_samples uses rank tests; their efficiency relative to the t-test is 3/pi (about
    0.955) for normal data and at least 0.864 for any continuous distribution (Hodges &
    Lehmann 1956), so add about 5% for normal data. For heavy-tailed timings they need fewer.

    Parameters
    ----------
    cv : float
        Coefficient of variation of one sample (stdev / mean), positive; e.g. ``Summary.cv``.
    effect : float
        Relative difference of the means to detect, e.g. 0.02 for 2%; the sign is ignored.
    power : float
        Wanted probability of a significant result, in (0, 1).
    alpha : float
        Two-sided significance level, in (0, 1).
    paired : bool
        Paired design (same inputs, interleaved runs) instead of two independent groups.
    correlation : float
        Correlation between paired samples, in [-1, 1); only for ``paired=True``.

    Returns
    -------
    int
        Samples per group (pairs when paired), at least 2.

    Raises
    ------
    TypeError
        If ``cv``, ``effect``, ``power``, ``alpha`` or ``correlation`` is not a number.
    ValueError
        If ``cv`` is not positive and finite, ``effect`` is zero or not finite, ``power`` or
        ``alpha`` is outside (0, 1), ``correlation`` is outside [-1, 1), a correlation is
        given for an unpaired design, or the effect needs more than ``MAX_SAMPLES`` (2**53)
        samples per group.
    """
    cv_f = check_finite("cv", cv)
    if cv_f <= 0.0:
        raise ValueError(f"cv must be positive, got {cv!r}")
    eff = abs(check_finite("effect", effect))
    if eff == 0.0:
        raise ValueError("effect must be non-zero")
    pw = check_fraction("power", power)
    al = check_fraction("alpha", alpha)
    rho = check_finite("correlation", correlation)
    if not (-1.0 <= rho < 1.0):
        raise ValueError(f"correlation must be in [-1, 1), got {correlation!r}")
    if not paired and rho != 0.0:
        raise ValueError("correlation applies only to paired designs (paired=True)")

    spread = math.sqrt(2.0 * (1.0 - rho)) * cv_f if paired else cv_f
    z = float(sps().norm.ppf(1.0 - al / 2.0)) + float(sps().norm.ppf(pw))
    approx = _planned(z * spread / eff, 1.0 if paired else 2.0,
                      f"effect {effect!r} with a cv of {cv_f:.3g}")
    n = max(2, math.ceil(approx))
    # Power grows with n: step up to the first n that reaches it, then down while n - 1
    # still does (the normal answer is usually 1-2 below the exact one).
    while _t_test_power(n, spread, eff, al, paired) < pw:
        n += 1
    while n > 2 and _t_test_power(n - 1, spread, eff, al, paired) >= pw:
        n -= 1
    return n
