"""Tests for fastbench.stats.samples on synthetic samples with known answers: the median's
confidence interval against an exact binomial derivation done here, and input checks.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats import as_samples, median_ci


def _coverage(n: int, k: int) -> float:
    """Coverage of [x_(k), x_(n-k+1)] for the median: 1 - 2 P(B <= k-1), B ~ binom(n, 1/2)."""
    return float(1.0 - 2.0 * sps.binom.cdf(k - 1, n, 0.5))


def _exact_coverage(n: int, k: int) -> Fraction:
    return 1 - 2 * Fraction(sum(comb(n, i) for i in range(k)), 2**n)


def _expected_k(n: int, confidence: float) -> int:
    """The documented rule: the largest k >= 1 whose coverage is at least ``confidence``
    (0 when even k = 1, the whole sample range, falls short)."""
    target = Fraction(confidence)
    k, below = 0, 0  # below = 2**n P(B <= k-1)
    while k + 1 <= (n + 1) // 2:
        below_next = below + comb(n, k)  # 2**n P(B <= k): sets the coverage of k + 1
        if 1 - 2 * Fraction(below_next, 2**n) < target:
            break
        k, below = k + 1, below_next
    return k


def _shuffled(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values in random order, and the same values sorted (x_(1)..x_(n))."""
    ordered = 10.0 + 1.5 * np.arange(n)
    return np.random.default_rng(seed).permutation(ordered), ordered


CASES = [
    (n, conf)
    for conf in (0.95, 0.9, 0.99, 0.5)
    for n in (6, 7, 8, 9, 10, 11, 17, 20, 30, 31, 50, 100, 101, 257, 1000)
]


@pytest.mark.parametrize(("n", "confidence"), CASES)
def test_median_ci_is_the_documented_order_statistics(n: int, confidence: float) -> None:
    samples, ordered = _shuffled(n, seed=n)
    k = _expected_k(n, confidence)
    ci = median_ci(samples, confidence)
    if k == 0:
        assert ci is None
        return
    assert ci == (ordered[k - 1], ordered[n - k])
    # The chosen interval covers at least `confidence`, the next tighter one does not.
    assert _coverage(n, k) >= confidence
    assert _coverage(n, k + 1) < confidence


@pytest.mark.parametrize(
    ("n", "confidence"),
    [
        # Coverage equals the confidence exactly: dyadic fractions, exact in floating point.
        (2, 0.5),  # [x_(1), x_(2)] covers 1 - 2/4
        (3, 0.75),  # [x_(1), x_(3)] covers 1 - 2/8
        (4, 0.875),  # [x_(1), x_(4)] covers 1 - 2/16
        (6, 0.96875),  # [x_(1), x_(6)] covers 1 - 2/64
        (8, 0.9296875),  # [x_(2), x_(7)] covers 1 - 2*9/256
    ],
)
def test_median_ci_coverage_equal_to_confidence_counts_as_enough(
    n: int, confidence: float
) -> None:
    # "the largest k whose coverage ... is at least confidence": equality qualifies.
    k = _expected_k(n, confidence)
    assert k >= 1 and _exact_coverage(n, k) == Fraction(confidence)
    samples, ordered = _shuffled(n, seed=n)
    assert median_ci(samples, confidence) == (ordered[k - 1], ordered[n - k])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_median_ci_none_for_five_or_fewer_samples_at_95(n: int) -> None:
    assert median_ci(np.arange(n, dtype=float), 0.95) is None


def test_median_ci_six_samples_at_95_is_the_range() -> None:
    # 1 - 2/64 = 0.969 >= 0.95, so k = 1.
    assert median_ci([5.0, 1.0, 4.0, 2.0, 6.0, 3.0]) == (1.0, 6.0)


def test_median_ci_default_confidence_is_95() -> None:
    samples, _ = _shuffled(40, seed=1)
    assert median_ci(samples) == median_ci(samples, 0.95)


def test_median_ci_with_ties_and_ints() -> None:
    assert median_ci([7] * 20) == (7.0, 7.0)
    low, high = median_ci(list(range(1, 31)))  # type: ignore[misc]
    # n = 30 at 95%: k = 10 (P(B <= 9) = 0.0214 <= 0.025 < P(B <= 10) = 0.0494).
    assert (low, high) == (10.0, 21.0)
    assert isinstance(low, float) and isinstance(high, float)


def test_median_ci_covers_true_median_at_the_stated_rate() -> None:
    # Monte Carlo on a skewed distribution with a known median (exponential: ln 2).
    rng = np.random.default_rng(12345)
    n, trials = 25, 2000
    true_median = np.log(2.0)
    hits = 0
    for _ in range(trials):
        ci = median_ci(rng.exponential(size=n), 0.95)
        assert ci is not None
        hits += ci[0] <= true_median <= ci[1]
    k = _expected_k(n, 0.95)
    expected = _coverage(n, k)
    sigma = np.sqrt(expected * (1 - expected) / trials)
    assert abs(hits / trials - expected) < 4 * sigma


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")])
def test_median_ci_confidence_outside_open_unit_interval(confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        median_ci([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], confidence)


@pytest.mark.parametrize("confidence", ["0.95", None, True, [0.95]])
def test_median_ci_confidence_must_be_a_number(confidence: object) -> None:
    with pytest.raises(TypeError, match="confidence must be a number"):
        median_ci([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], confidence)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [[], [[1.0, 2.0], [3.0, 4.0]], [1.0, float("nan")]])
def test_median_ci_validates_samples(bad: object) -> None:
    with pytest.raises(ValueError):
        median_ci(bad)


# -- as_samples -------------------------------------------------------------------------------
def test_as_samples_returns_1d_float64() -> None:
    arr = as_samples([3, 1, 2])
    assert arr.dtype == np.float64 and arr.ndim == 1
    np.testing.assert_array_equal(arr, [3.0, 1.0, 2.0])
    tup = as_samples((1.5,))
    np.testing.assert_array_equal(tup, [1.5])


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ([], "empty"),
        (np.array([]), "empty"),
        ([[1.0, 2.0]], "one-dimensional"),
        (np.ones((2, 3)), "one-dimensional"),
        (3.0, "one-dimensional"),
        ([1.0, float("nan")], "non-finite"),
        ([float("inf"), 1.0], "non-finite"),
        ([-np.inf], "non-finite"),
    ],
)
def test_as_samples_rejects(bad: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        as_samples(bad)


def test_as_samples_names_the_input_in_errors() -> None:
    with pytest.raises(ValueError, match="^timings is empty$"):
        as_samples([], name="timings")
    with pytest.raises(ValueError, match="2 non-finite"):
        as_samples([np.nan, 1.0, np.inf])
