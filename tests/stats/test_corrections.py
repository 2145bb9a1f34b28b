"""Tests for fastbench.stats.corrections (adjust_pvalues): Holm by hand, Benjamini-Hochberg
against scipy, order, monotonicity and bounds, and the input checks.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats import adjust_pvalues


def test_adjust_pvalues_holm_by_hand() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; running max.
    got = adjust_pvalues([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(got, [0.03, 0.06, 0.06, 0.02], rtol=1e-12)
    # Ties: 0.2 * 3 = 0.6, 0.2 * 2 = 0.4 -> 0.6, 0.5 * 1 -> 0.6 (running max).
    np.testing.assert_allclose(adjust_pvalues([0.5, 0.2, 0.2], "holm"), [0.6, 0.6, 0.6])
    # Clipped: 0.4 * 3 = 1.2 -> 1, then the running max keeps 1.
    assert adjust_pvalues([0.45, 0.4, 0.5]).tolist() == [1.0, 1.0, 1.0]
    assert adjust_pvalues([0.3]).tolist() == [0.3]


def test_adjust_pvalues_bh_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    for size in (1, 2, 5, 40):
        p = np.concatenate([rng.uniform(0, 0.05, size), rng.uniform(0, 1, size)])
        np.testing.assert_allclose(
            adjust_pvalues(p, "bh"), sps.false_discovery_control(p, method="bh"), rtol=1e-12
        )


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_adjust_pvalues_order_monotone_and_bounded(method: str) -> None:
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 0.2, 30)
    adj = adjust_pvalues(p, method)
    perm = rng.permutation(30)
    np.testing.assert_allclose(adjust_pvalues(p[perm], method), adj[perm], rtol=1e-15)
    order = np.argsort(p)
    assert np.all(np.diff(adj[order]) >= 0)
    assert np.all(adj >= p) and np.all(adj <= 1)
    assert adj.dtype == np.float64


@pytest.mark.parametrize(
    ("bad", "method", "match"),
    [
        ([], "holm", "empty"),
        ([[0.1, 0.2]], "holm", "one-dimensional"),
        ([0.1, float("nan")], "holm", "non-finite"),
        ([0.1, 1.2], "holm", r"\[0, 1\]"),
        ([-0.1], "bh", r"\[0, 1\]"),
        ([0.1], "bonferroni", "method"),
    ],
)
def test_adjust_pvalues_rejects(bad: object, method: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        adjust_pvalues(bad, method)


def test_adjust_pvalues_names_the_methods() -> None:
    with pytest.raises(ValueError) as info:
        adjust_pvalues([0.1], "bonferroni")
    assert str(info.value) == "method must be one of ('holm', 'bh'), got 'bonferroni'"
