"""Tests for fastbench.stats.proportion: the Wilson score interval against a value worked by
hand, against scipy's implementation over a grid, at the edges (0 and n successes, whose
bounds have closed forms), and its argument checks; its weighted form against the plain one
at equal weights, a case worked by hand, and its coverage on simulated weighted trials.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats.proportion import weighted_wilson_interval, wilson_interval

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


# -- weighted trials -------------------------------------------------------------------------

@pytest.mark.parametrize(("k", "n", "w"), [(30, 100, 1.0), (0, 12, 2.5), (12, 12, 0.001),
                                           (1, 7, 3.0)])
def test_equal_weights_give_the_plain_interval(k: int, n: int, w: float) -> None:
    got = weighted_wilson_interval(k * w, k * w * w, n * w, n * w * w)
    assert got == pytest.approx(wilson_interval(k, n), abs=1e-12)


def test_unequal_weights_match_the_hand_worked_interval() -> None:
    # Successes weigh 3 and 3, failures 1, 1, 1, 1: W = 10, p = 0.6, S_in = 18, S = 22.
    # Plug-in: v = (0.16 * 18 + 0.36 * 4) / 100 = 0.0432, n = 0.24 / 0.0432 = 5.556;
    # Kish: n = 100 / 22 = 4.5455, the smaller. Wilson at p = 0.6, n = 4.5455:
    # z²/n = 0.845121, center = (0.6 + 0.422561) / 1.845121 = 0.554198,
    # half = 1.959964 / 1.845121 * sqrt(0.24 / 4.5455 + 0.845121 / 18.1818)
    #      = 1.062241 * 0.315089 = 0.334701 -> [0.219497, 0.888899].
    low, high = weighted_wilson_interval(6.0, 18.0, 10.0, 22.0)
    assert low == pytest.approx(0.219497, abs=2e-6)
    assert high == pytest.approx(0.888899, abs=2e-6)
    # Six trials of unequal weight tell less than six equal ones (wider than 4 of 6's
    # interval) and more than the two heavy ones alone (narrower than 1 of 2's).
    assert high - low > np.subtract(*wilson_interval(4, 6)[::-1])
    assert high - low < np.subtract(*wilson_interval(1, 2)[::-1])


@pytest.mark.parametrize("p", [0.05, 0.3, 0.7])
def test_weighted_interval_covers_the_weighted_share(p: float) -> None:
    # 200 trials, one in ten weighing 10 times the others (which weigh 0.5-1.5), each a
    # success with probability p independently of its weight: the weighted share's
    # expectation is p. At 95% nominal, 400 trials cover 380 on average (binomial SD 4.4);
    # fewer than 364 is over 3.5 SD below.
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(400):
        w = np.where(rng.random(200) < 0.1, 10.0, rng.uniform(0.5, 1.5, 200))
        x = rng.random(200) < p
        low, high = weighted_wilson_interval(w[x].sum(), (w[x] ** 2).sum(), w.sum(),
                                             (w * w).sum())
        covered += low <= p <= high
    assert covered >= 364, covered


@pytest.mark.parametrize("args, words", [
    ((-1.0, 1.0, 10.0, 10.0), "weights must be >= 0"),
    ((1.0, 1.0, 0.0, 1.0), "weights must be >= 0 with positive totals"),
    ((11.0, 11.0, 10.0, 10.0), "exceed the totals"),
    ((1.0, math.nan, 10.0, 10.0), "square_in must be a finite number"),
])
def test_weighted_bad_arguments_name_themselves(args: tuple[float, ...], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        weighted_wilson_interval(*args)
