"""Verdicts over blocks of paired rounds (``judge_blocks``): the t test over the blocks'
estimates, checked against scipy on hand-made blocks, and its error rates on synthetic
rounds whose blocks carry an offset of their own (as identical objects placed elsewhere in
memory do), where a test over the rounds alone calls identical code different."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.comparison import judge, judge_blocks
from fastbench.stats import hodges_lehmann


def _blocks(rng: np.random.Generator, k: int, n: int, ratio: float, offset_sd: float,
            noise_sd: float, fresh: bool = True) -> tuple[list[list[float]], list[list[float]]]:
    """``k`` blocks of ``n`` paired rounds around 100 µs: the candidate ``ratio`` times the
    baseline's time, off by a lognormal offset of SD ``offset_sd`` fixed within each block
    (drawn anew each block when ``fresh``: new objects; else once: one set of objects for
    all), every time with lognormal noise of SD ``noise_sd``."""
    base, cand = [], []
    off = np.exp(rng.normal(0.0, offset_sd))
    for _ in range(k):
        level = 100e-6 * np.exp(rng.normal(0.0, 0.05))      # the block's host speed: shared
        if fresh:
            off = np.exp(rng.normal(0.0, offset_sd))        # the candidate's object: its own
        base.append(list(level * np.exp(rng.normal(0.0, noise_sd, n))))
        cand.append(list(level * ratio * off * np.exp(rng.normal(0.0, noise_sd, n))))
    return base, cand


@pytest.mark.parametrize("estimator", ["median", "hodges-lehmann"])
def test_the_t_test_over_the_blocks_estimates(estimator: str) -> None:
    rng = np.random.default_rng(3)
    base, cand = _blocks(rng, 6, 9, 1.08, 0.01, 0.02)
    center = np.median if estimator == "median" else hodges_lehmann
    d = np.asarray([center(np.log(a) - np.log(b)) for a, b in zip(base, cand)])
    r = judge_blocks("a", {"a": base, "b": cand}, 0.05, 0.01, "holm", estimator)["b"]
    t = sps.ttest_1samp(d, 0.0)
    half = sps.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    assert r.speedup == pytest.approx(np.exp(d.mean()), rel=1e-12)
    assert r.p_value == pytest.approx(t.pvalue, rel=1e-9)
    assert r.speedup_ci == pytest.approx((np.exp(d.mean() - half), np.exp(d.mean() + half)),
                                         rel=1e-12)
    assert r.verdict == "slower"  # the candidate takes 1.08 times the baseline's time
    assert r.n_a == r.n_b == 6
    assert "6 blocks" in r.test


def test_corrected_across_candidates_and_refuses_ragged_blocks() -> None:
    rng = np.random.default_rng(4)
    base, c1 = _blocks(rng, 5, 8, 1.0, 0.0, 0.02)
    _, c2 = _blocks(rng, 5, 8, 1.0, 0.0, 0.02)
    alone = {n: judge_blocks("a", {"a": base, n: c}, 0.05, 0.01, "holm")[n]
             for n, c in (("b", c1), ("c", c2))}
    both = judge_blocks("a", {"a": base, "b": c1, "c": c2}, 0.05, 0.01, "holm")
    ps = sorted((alone[n].p_value, n) for n in alone)
    # Holm with two: the smaller p doubled, the larger at least that and at least its own.
    assert both[ps[0][1]].p_value == pytest.approx(min(1.0, 2 * ps[0][0]))
    assert both[ps[1][1]].p_value == pytest.approx(max(min(1.0, 2 * ps[0][0]), ps[1][0]))
    with pytest.raises(ValueError, match="blocks"):
        judge_blocks("a", {"a": base, "b": c1[:4]}, 0.05, 0.01, "holm")


@pytest.mark.slow
def test_identical_objects_with_offsets_of_their_own_are_not_called_different() -> None:
    # An identical candidate object runs off by an offset of its own (SD 2%) that all its
    # rounds share. One set of objects judged over its rounds: identical code called
    # different whenever the offset passes about 1% (over a third of the trials). Fresh
    # objects each block, judged over the blocks: about alpha of the trials at most. A true
    # 5% slowdown is still found nearly always.
    rng = np.random.default_rng(5)
    trials = 300
    over_blocks = over_rounds = found = 0
    for _ in range(trials):
        base, cand = _blocks(rng, 10, 20, 1.0, 0.02, 0.02)
        r = judge_blocks("a", {"a": base, "b": cand}, 0.05, 0.01, "holm")["b"]
        over_blocks += r.verdict in ("faster", "slower")
        base, cand = _blocks(rng, 10, 20, 1.0, 0.02, 0.02, fresh=False)
        flat = {"a": [x for b in base for x in b], "b": [x for b in cand for x in b]}
        rr = judge("a", flat, True, 0.05, 0.01, "holm", "hodges-lehmann")["b"]
        over_rounds += rr.verdict in ("faster", "slower")
        base, cand = _blocks(rng, 10, 20, 1.05, 0.02, 0.02)
        found += judge_blocks("a", {"a": base, "b": cand}, 0.05, 0.01, "holm")["b"].verdict \
            == "slower"
    # Binomial(300, 0.05) exceeds 26 with probability about 0.001.
    assert over_blocks <= 26, over_blocks
    assert over_rounds >= trials // 3, over_rounds
    assert found >= 0.9 * trials, found
