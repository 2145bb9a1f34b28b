"""The order-statistic interval of a quantile, against hand-worked binomial cases, the
median's own interval at q = 1/2, and its coverage on samples of a known distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastbench.stats import median_ci
from fastbench.stats.quantiles import quantile_ci, quantile_ci_min_samples


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(B <= k), B ~ Binomial(n, p), summed by hand (no scipy)."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1))


def test_hand_worked_median_of_five() -> None:
    # Binomial(5, 1/2): P(B = 0) = 1/32 = 0.03125. At 90% each tail may hold 0.05, so the
    # extremes bracket the median (coverage 1 - 2/32 = 0.9375); at 95% a tail may hold only
    # 0.025 < 1/32 and no interval exists.
    x = [3.0, 1.0, 5.0, 2.0, 4.0]
    assert quantile_ci(x, 0.5, 0.90) == (1.0, 5.0)
    assert quantile_ci(x, 0.5, 0.95) is None


def test_hand_worked_asymmetric_quantile() -> None:
    # q = 0.8, n = 10, 75% (each tail 0.125). Binomial(10, 0.8): P(B <= 6) = 0.1209 <= 0.125
    # < P(B <= 7) = 0.3222, so l - 1 = 6 and l = 7; P(B >= 10) = 0.8^10 = 0.1074 <= 0.125
    # < P(B >= 9) = 0.3758, so u = 10. On the values 1..10: [x_(7), x_(10)] = [7, 10].
    assert _binom_cdf(6, 10, 0.8) == pytest.approx(0.1209, abs=1e-4)
    assert 0.8**10 == pytest.approx(0.1074, abs=1e-4)
    rng = np.random.default_rng(3)
    x = rng.permutation(np.arange(1.0, 11.0))
    assert quantile_ci(x, 0.8, 0.75) == (7.0, 10.0)
    coverage = _binom_cdf(9, 10, 0.8) - _binom_cdf(6, 10, 0.8)
    assert coverage >= 0.75


@pytest.mark.parametrize("n", [6, 7, 20, 101, 1000])
def test_at_one_half_it_is_the_median_interval(n: int) -> None:
    x = np.random.default_rng(n).standard_normal(n)
    assert quantile_ci(x, 0.5) == median_ci(x)


@pytest.mark.parametrize("q", [0.05, 0.5, 0.9, 0.99])
def test_the_interval_is_the_narrowest_equal_tailed_one(q: float) -> None:
    """The bounds are order statistics l and u with both tails at most alpha/2, and moving
    either bound inward would break its tail (checked by hand-summed binomials)."""
    n = 400
    x = np.sort(np.random.default_rng(7).random(n))
    ci = quantile_ci(x, q)
    assert ci is not None
    l = int(np.searchsorted(x, ci[0])) + 1   # 1-based order statistics
    u = int(np.searchsorted(x, ci[1])) + 1
    tail = 0.025
    # x_(l) <= Q fails when B <= l - 1; x_(u) >= Q fails when B >= u.
    assert _binom_cdf(l - 1, n, q) <= tail + 1e-12
    assert _binom_cdf(l, n, q) > tail              # l + 1 would leave too much below
    assert 1 - _binom_cdf(u - 1, n, q) <= tail + 1e-12
    assert 1 - _binom_cdf(u - 2, n, q) > tail      # u - 1 would leave too much above


def test_coverage_on_a_known_distribution() -> None:
    """The 0.9 quantile of Exp(1) is ln 10; the 95% interval from 100 samples covers it in
    at least 95% of trials (the interval is conservative), so at least 90% of 400 here."""
    rng = np.random.default_rng(11)
    truth = math.log(10.0)
    covered = 0
    for _ in range(400):
        ci = quantile_ci(rng.exponential(size=100), 0.9)
        assert ci is not None
        covered += ci[0] <= truth <= ci[1]
    assert covered >= 360


@pytest.mark.parametrize(("q", "needed"), [(0.95, 72), (0.99, 368), (0.5, 6)])
def test_min_samples(q: float, needed: int) -> None:
    # 0.95^72 = 0.0249 <= 0.025 < 0.95^71; 0.99^368 = 0.0248 <= 0.025 < 0.99^367.
    assert quantile_ci_min_samples(q) == needed
    assert quantile_ci(np.arange(float(needed - 1)), q) is None
    assert quantile_ci(np.arange(float(needed)), q) is not None


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="q must be in"):
        quantile_ci([1.0, 2.0], 1.0)
    with pytest.raises(TypeError, match="q must be"):
        quantile_ci([1.0, 2.0], "0.9")
    with pytest.raises(ValueError, match="confidence"):
        quantile_ci([1.0, 2.0], 0.5, 1.5)
    with pytest.raises(ValueError, match="empty"):
        quantile_ci([], 0.5)
