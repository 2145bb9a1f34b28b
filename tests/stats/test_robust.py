"""Tests for fastbench.stats.robust (median_mad) against numpy and scipy: odd and even
lengths, ties, a single value, any array-like, and the empty input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats.robust import median_mad

_RNG = np.random.default_rng(11)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 101, 1000])
def test_median_mad_matches_numpy_and_scipy(n: int) -> None:
    x = _RNG.lognormal(np.log(1000.0), 0.3, n)
    med, mad = median_mad(x)
    assert med == float(np.median(x))
    assert mad == pytest.approx(float(sps.median_abs_deviation(x, scale=1.0)), rel=1e-15)
    assert isinstance(med, float) and isinstance(mad, float)


def test_odd_length_by_hand() -> None:
    # Sorted 1 2 4 7 9: median 4; |x - 4| = 3 2 0 3 5 -> sorted 0 2 3 3 5, MAD 3.
    assert median_mad([7.0, 1.0, 4.0, 9.0, 2.0]) == (4.0, 3.0)


def test_even_length_by_hand() -> None:
    # Sorted 1 2 4 10: median (2 + 4) / 2 = 3; |x - 3| = 2 1 1 7 -> sorted 1 1 2 7, MAD 1.5.
    assert median_mad([10.0, 1.0, 4.0, 2.0]) == (3.0, 1.5)
    assert median_mad([1.0, 2.0, 4.0, 10.0]) == (
        float(np.median([1.0, 2.0, 4.0, 10.0])),
        float(sps.median_abs_deviation([1.0, 2.0, 4.0, 10.0], scale=1.0)),
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [([5.0], (5.0, 0.0)), ([3.0, 3.0, 3.0, 3.0], (3.0, 0.0)),
     ([1.0, 1.0, 1.0, 50.0], (1.0, 0.0)), ([-2.0, 0.0, 2.0], (0.0, 2.0))],
    ids=["one", "constant", "majority-tied", "negative"],
)
def test_ties_and_small_inputs(values: list[float], expected: tuple[float, float]) -> None:
    assert median_mad(values) == expected
    assert median_mad(values)[1] == float(sps.median_abs_deviation(values, scale=1.0))


@pytest.mark.parametrize("values", [[3, 1, 2], (3.0, 1.0, 2.0), np.array([3, 1, 2], np.int64),
                                    np.array([3.0, 1.0, 2.0], np.float32)],
                         ids=["list-of-int", "tuple", "int64", "float32"])
def test_any_array_like(values: Any) -> None:
    assert median_mad(values) == (2.0, 1.0)


@pytest.mark.parametrize("values", [[], np.empty(0)])
def test_empty_is_an_error(values: Any) -> None:
    with pytest.raises(ValueError, match="at least one value"):
        median_mad(values)
