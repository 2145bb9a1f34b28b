"""fastbench.stats.signedrank: the Hodges-Lehmann estimate against the median of every Walsh
average written out, the signed-rank interval against Walsh averages picked by critical
values from a brute-force null distribution and from published tables, its inversion of
scipy's exact signed-rank test, its coverage and width in simulation, and the paired
estimator of compare_samples."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats import compare_samples, hodges_lehmann, median_ci, signed_rank_ci
from fastbench.stats.signedrank import EXACT_MAX_N, signed_rank_lower_count


def _walsh(x: np.ndarray) -> np.ndarray:
    n = x.size
    return np.sort([(x[i] + x[j]) / 2 for i in range(n) for j in range(i, n)])


def _brute_lower_count(n: int, confidence: float) -> int:
    """C from the null distribution of T+ counted over all 2^n sign patterns."""
    sums = [sum(r for r, s in zip(range(1, n + 1), signs) if s)
            for signs in itertools.product((0, 1), repeat=n)]
    tail = (1 - confidence) / 2
    counts = np.bincount(sums) / 2 ** n
    cdf = np.cumsum(counts)
    return int(np.count_nonzero(cdf <= tail * (1 + 1e-12)))


@pytest.mark.parametrize("n", [1, 2, 3, 10, 31, 64, 257])
def test_hodges_lehmann_is_the_median_of_the_walsh_averages(n: int) -> None:
    rng = np.random.default_rng(n)
    for x in (rng.standard_normal(n), rng.integers(-3, 4, n).astype(float),  # ties
              rng.standard_cauchy(n)):
        assert hodges_lehmann(x) == pytest.approx(float(np.median(_walsh(x))), abs=1e-12)


@pytest.mark.parametrize("n", range(1, 15))
def test_lower_count_matches_the_brute_force_null_distribution(n: int) -> None:
    for confidence in (0.9, 0.95, 0.99):
        assert signed_rank_lower_count(n, confidence) == _brute_lower_count(n, confidence)


# Two-sided 5% critical values of Wilcoxon's T (reject when T <= value), as printed in
# tables (e.g. Hollander, Wolfe & Chicken, table A.4; the interval leaves T + 1 averages out
# on each side.
_TABLE_05 = {6: 0, 7: 2, 8: 3, 9: 5, 10: 8, 11: 10, 12: 13, 13: 17, 14: 21, 15: 25, 16: 29,
             17: 34, 18: 40, 19: 46, 20: 52, 25: 89, 30: 137}


@pytest.mark.parametrize("n, t", sorted(_TABLE_05.items()))
def test_lower_count_matches_published_critical_values(n: int, t: int) -> None:
    assert signed_rank_lower_count(n, 0.95) == t + 1


def test_normal_approximation_takes_over_within_one_average_of_the_exact_count() -> None:
    # Past EXACT_MAX_N the count comes from the normal approximation: there it is within one
    # Walsh average of the exact count (the subset-sum table, built here directly).
    n = EXACT_MAX_N + 1
    table = np.zeros(n * (n + 1) // 2 + 1)
    table[0] = 1.0
    for rank in range(1, n + 1):
        table[rank:] = (table[rank:] + table[:-rank].copy()) / 2
        table[:rank] /= 2
    exact = int(np.count_nonzero(np.cumsum(table) <= 0.025 * (1 + 1e-12)))
    assert abs(signed_rank_lower_count(n, 0.95) - exact) <= 1


@pytest.mark.parametrize("n", [6, 7, 20, 57, 300])
def test_interval_is_the_walsh_averages_the_critical_values_pick(n: int) -> None:
    x = np.random.default_rng(100 + n).standard_normal(n)
    w = _walsh(x)
    c = signed_rank_lower_count(n, 0.95)
    assert signed_rank_ci(x) == (w[c - 1], w[w.size - c])
    assert signed_rank_ci(x[:5]) is None  # no interval below 6 values at 95%


@pytest.mark.parametrize("n", [8, 15, 30])
def test_interval_inverts_scipys_exact_signed_rank_test(n: int) -> None:
    # A center inside the interval is not rejected at 5%; one just outside it is.
    x = np.random.default_rng(7 * n).standard_normal(n) + 0.3
    lo, hi = signed_rank_ci(x)
    p = lambda d: sps.wilcoxon(x - d, method="exact").pvalue  # noqa: E731
    span = hi - lo
    assert p(lo + 1e-6 * span) > 0.05 and p(hi - 1e-6 * span) > 0.05
    assert p(lo - 1e-6 * span) <= 0.05 and p(hi + 1e-6 * span) <= 0.05


@pytest.mark.slow
@pytest.mark.parametrize("draw", ["normal", "laplace", "t3"])
def test_interval_covers_the_center_of_symmetric_noise(draw: str) -> None:
    rng = np.random.default_rng({"normal": 1, "laplace": 2, "t3": 3}[draw])
    gen = {"normal": lambda: rng.standard_normal(40), "laplace": lambda: rng.laplace(size=40),
           "t3": lambda: rng.standard_t(3, 40)}[draw]
    center, sims = 0.7, 2000
    covered = 0
    for _ in range(sims):
        lo, hi = signed_rank_ci(center + gen())
        covered += lo <= center <= hi
    assert 0.93 <= covered / sims <= 0.97


def test_interval_is_about_a_fifth_narrower_than_the_sign_tests_under_normal_noise() -> None:
    # Asymptotic efficiencies against the t interval: 3/pi (signed rank), 2/pi (sign test):
    # widths in the ratio sqrt(2/3) = 0.82.
    rng = np.random.default_rng(11)
    ratios = []
    for _ in range(300):
        x = rng.standard_normal(200)
        s_lo, s_hi = signed_rank_ci(x)
        m_lo, m_hi = median_ci(x)
        ratios.append((s_hi - s_lo) / (m_hi - m_lo))
    assert 0.75 <= float(np.mean(ratios)) <= 0.89


def test_large_samples_need_no_table_of_averages() -> None:
    # 10^5 values: 5 x 10^9 Walsh averages, found by bisection without building them.
    x = np.random.default_rng(5).standard_normal(100_000) + 2.0
    lo, hi = signed_rank_ci(x)
    est = hodges_lehmann(x)
    assert lo < est < hi and abs(est - 2.0) < 0.02 and hi - lo < 0.02


def test_compare_samples_with_the_hodges_lehmann_estimator() -> None:
    rng = np.random.default_rng(3)
    b = rng.lognormal(0.0, 0.05, 400) * 1e3
    a = b * np.exp(0.10 + rng.normal(0.0, 0.03, 400))  # the candidate 10.5% faster
    hl = compare_samples(a, b, paired=True, estimator="hodges-lehmann")
    r = np.log(a / b)
    assert hl.test == "wilcoxon signed-rank"
    assert hl.speedup == pytest.approx(math.exp(hodges_lehmann(r)))
    lo, hi = signed_rank_ci(r)
    assert hl.speedup_ci == pytest.approx((math.exp(lo), math.exp(hi)))
    assert hl.p_value == pytest.approx(float(sps.wilcoxon(r).pvalue))
    assert hl.verdict == "faster" and hl.speedup_ci[0] < math.exp(0.10) < hl.speedup_ci[1]
    sign = compare_samples(a, b, paired=True)
    assert sign.test == "sign test"
    width = lambda c: math.log(c.speedup_ci[1] / c.speedup_ci[0])  # noqa: E731
    assert width(hl) < width(sign)


def test_hodges_lehmann_estimator_is_refused_unpaired_or_misspelled() -> None:
    a, b = np.full(10, 2.0), np.full(10, 1.0)
    with pytest.raises(ValueError, match="is for paired comparisons"):
        compare_samples(a, b, estimator="hodges-lehmann")
    with pytest.raises(ValueError, match="estimator must be one of median, hodges-lehmann"):
        compare_samples(a, b, paired=True, estimator="mean")
