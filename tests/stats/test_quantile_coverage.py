"""Coverage of the quantile intervals on simulated latencies whose true quantiles are known:
the exact interval covers at least its nominal level (and as often as the binomial says),
the interpolated one sits within 93-97% for a nominal 95% in every cell, where the exact
one reaches 98% for tail quantiles of short samples."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Callable

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from fastbench.stats.quantiles import quantile_ci

CONFIDENCE = 0.95
SIMS = 4000
# Monte Carlo standard error of a coverage near 95% from SIMS simulations: 0.0034, so the
# 93-97% band is about +-5.8 standard errors around the nominal level.
SE = math.sqrt(CONFIDENCE * (1.0 - CONFIDENCE) / SIMS)
SIZES = (100, 400, 1000)
QUANTILES = (0.5, 0.9, 0.95, 0.99)

Draw = Callable[[np.random.Generator, tuple[int, int]], NDArray[np.float64]]
# Latency-like shapes with closed-form quantiles: lognormal(0, 1) has Q(q) = exp(z_q); the
# Lomax (Pareto II) of shape 3 that numpy's pareto draws has Q(q) = (1 - q)^(-1/3) - 1.
SHAPES: dict[str, tuple[Draw, Callable[[float], float]]] = {
    "lognormal": (lambda rng, shape: rng.lognormal(0.0, 1.0, shape),
                  lambda q: math.exp(NormalDist().inv_cdf(q))),
    "pareto": (lambda rng, shape: rng.pareto(3.0, shape),
               lambda q: (1.0 - q) ** (-1.0 / 3.0) - 1.0),
}


def _cells(n: int) -> list[float]:
    """The quantiles n samples allow at 95%: the p99 needs 368 (0.99^n <= 0.025)."""
    return [q for q in QUANTILES if q ** n <= (1.0 - CONFIDENCE) / 2.0]


def _interpolate(sorted_rows: NDArray[np.float64], position: float) -> NDArray[np.float64]:
    """Each row's value at a fractional 0-based order-statistic position."""
    i = min(int(math.floor(position)), sorted_rows.shape[1] - 2)
    frac = position - i
    return sorted_rows[:, i] + frac * (sorted_rows[:, i + 1] - sorted_rows[:, i])


def _coverage(shape: str, n: int) -> dict[tuple[str, float], float]:
    """Coverage of the true quantile by both methods, for each quantile n allows.

    Both methods return (interpolations between neighbouring) order statistics at positions
    that depend only on n, q and the confidence, so the interval of every simulated sample
    comes from the positions read off the sample 0, 1, ..., n-1; a few rows are checked
    against quantile_ci called on the sample itself."""
    draw, true_quantile = SHAPES[shape]
    rng = np.random.default_rng(n)
    rows = np.sort(draw(rng, (SIMS, n)), axis=1)
    ranks = np.arange(float(n))
    out = {}
    for q in _cells(n):
        truth = true_quantile(q)
        for method in ("exact", "interpolated"):
            positions = quantile_ci(ranks, q, CONFIDENCE, method=method)
            assert positions is not None
            low = _interpolate(rows, positions[0])
            high = _interpolate(rows, positions[1])
            for k in range(0, SIMS, SIMS // 8):
                direct = quantile_ci(rng.permutation(rows[k]), q, CONFIDENCE, method=method)
                assert direct == pytest.approx((low[k], high[k]), rel=1e-12)
            out[(method, q)] = float(np.mean((low <= truth) & (truth <= high)))
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("n", SIZES)
def test_coverage(shape: str, n: int) -> None:
    coverage = _coverage(shape, n)
    for q in _cells(n):
        # Exact: the bracket holds when l <= B <= u - 1 with B ~ Binomial(n, q), whatever
        # the distribution; scipy's binomial gives that coverage, which is >= 95%.
        ranks = np.arange(float(n))
        bounds = quantile_ci(ranks, q, CONFIDENCE)
        assert bounds is not None
        l, u = int(bounds[0]) + 1, int(bounds[1]) + 1
        theory = float(stats.binom.cdf(u - 1, n, q) - stats.binom.cdf(l - 1, n, q))
        assert theory >= CONFIDENCE
        exact = coverage[("exact", q)]
        assert exact >= CONFIDENCE - 3.0 * SE, (n, q, exact)
        assert abs(exact - theory) <= 4.0 * SE, (n, q, exact, theory)
        interpolated = coverage[("interpolated", q)]
        assert 0.93 <= interpolated <= 0.97, (n, q, interpolated)


@pytest.mark.parametrize(("n", "q"), [(100, 0.95), (1000, 0.99)])
def test_discreteness_makes_the_exact_interval_overcover(n: int, q: float) -> None:
    """Why the interpolated method exists: at these cells the exact interval's binomial
    coverage is above 97% (98.3% and 97.6%), outside the 93-97% band."""
    bounds = quantile_ci(np.arange(float(n)), q, CONFIDENCE)
    assert bounds is not None
    l, u = int(bounds[0]) + 1, int(bounds[1]) + 1
    theory = float(stats.binom.cdf(u - 1, n, q) - stats.binom.cdf(l - 1, n, q))
    assert theory > 0.97


@pytest.mark.parametrize("q", [0.05, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("n", [6, 20, 72, 400])
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95])
def test_interpolated_lies_inside_the_exact_interval(q: float, n: int, confidence: float) -> None:
    """Each interpolated bound lies between the exact bound and its inner neighbour, and the
    interpolated interval exists exactly when the exact one does."""
    x = np.sort(np.random.default_rng(n).lognormal(size=n))
    exact = quantile_ci(x, q, confidence)
    interpolated = quantile_ci(x, q, confidence, method="interpolated")
    if exact is None:
        assert interpolated is None
        return
    assert interpolated is not None
    lo = int(np.searchsorted(x, exact[0]))
    hi = int(np.searchsorted(x, exact[1]))
    assert exact[0] <= interpolated[0] <= x[lo + 1]
    assert x[hi - 1] <= interpolated[1] <= exact[1]
    assert interpolated[0] <= interpolated[1]


def test_hettmansperger_sheather_weight_at_the_median() -> None:
    """At q = 1/2 Nyblom's weight reduces to Hettmansperger & Sheather's
    lam = (n - d) I / (d + (n - 2d) I), I = (g_d - (1 - alpha)) / (g_d - g_{d+1}), with
    g_d = 1 - 2 P(B <= d - 1) the coverage of [x_(d), x_(n-d+1)]. Worked for n = 10 at
    95%: P(B <= 1) = 11/1024 and P(B <= 2) = 56/1024, so d = 2, g_2 = 0.978515625,
    g_3 = 0.890625, I = 0.028515625 / 0.087890625 = 0.32444, lam = 8 I / (2 + 6 I)
    = 2.59556 / 3.94667 = 0.65766; on the values 1..10 the bounds are 2 + lam and 9 - lam."""
    g2 = 1.0 - 2.0 * 11 / 1024
    g3 = 1.0 - 2.0 * 56 / 1024
    i = (g2 - 0.95) / (g2 - g3)
    lam = 8.0 * i / (2.0 + 6.0 * i)
    assert lam == pytest.approx(0.65766, abs=1e-5)
    x = np.random.default_rng(1).permutation(np.arange(1.0, 11.0))
    assert quantile_ci(x, 0.5, method="interpolated") == pytest.approx((2.0 + lam, 9.0 - lam))


def test_unknown_method() -> None:
    with pytest.raises(ValueError, match="method must be one of"):
        quantile_ci([1.0, 2.0, 3.0], 0.5, method="bootstrap")
