"""Tests for fastbench.stats.proportion: the Wilson score interval against a value worked by
hand, against scipy's implementation over a grid, at the edges (0 and n successes, whose
bounds have closed forms), and its argument checks.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from fastbench.stats.proportion import wilson_interval

Z95 = 1.959963984540054  # the 97.5% normal quantile


def test_thirty_of_a_hundred_matches_the_hand_worked_interval() -> None:
    # p = 0.3, z² = 3.841459, 1 + z²/n = 1.0384146
    # center = (0.3 + 0.0192073) / 1.0384146 = 0.3073987
    # half   = 1.959964 / 1.0384146 * sqrt(0.0021 + 0.0000960365) = 1.887458 * 0.0468619
    #        = 0.0884499 -> [0.218949, 0.395849]
    low, high = wilson_interval(30, 100)
    assert low == pytest.approx(0.218949, abs=2e-6)
    assert high == pytest.approx(0.395849, abs=2e-6)


@pytest.mark.parametrize("n", [1, 7, 40, 100, 1000])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_agrees_with_scipy_binomtest_wilson(n: int, confidence: float) -> None:
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        ci = sps.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
        low, high = wilson_interval(k, n, confidence)
        assert (low, high) == pytest.approx((ci.low, ci.high), abs=1e-12), (k, n)


def test_edges_have_their_closed_forms() -> None:
    # At k = 0: low = 0 and high = z² / (n + z²); k = n mirrors it.
    n = 100
    assert wilson_interval(0, n) == (0.0, pytest.approx(Z95**2 / (n + Z95**2), rel=1e-12))
    low, high = wilson_interval(n, n)
    assert high == 1.0 and low == pytest.approx(n / (n + Z95**2), rel=1e-12)


def test_contains_the_estimate_and_narrows_with_more_trials() -> None:
    widths = []
    for n in (10, 100, 1000, 10000):
        low, high = wilson_interval(n // 4, n)
        assert low < 0.25 < high
        widths.append(high - low)
    # The width shrinks as 1/sqrt(n): each tenfold n narrows it by about sqrt(10).
    for wide, narrow in zip(widths, widths[1:]):
        assert wide / narrow == pytest.approx(math.sqrt(10), rel=0.15)


@pytest.mark.parametrize("args, error, words", [
    ((5, 0), ValueError, "trials must be positive"),
    ((-1, 10), ValueError, "successes must be from 0 to trials (10), got"),
    ((11, 10), ValueError, "successes must be from 0 to trials (10), got"),
    ((1.5, 10), TypeError, "successes must be an int"),
    ((1, 10, 1.0), ValueError, "confidence must be in (0, 1)"),
    ((1, 10, "95%"), TypeError, "confidence must be a number"),
])
def test_bad_arguments_name_themselves(args: tuple[object, ...], error: type[Exception],
                                       words: str) -> None:
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        wilson_interval(*args)  # type: ignore[arg-type]
