"""Statistics across runs (fastbench.stats.runs), judged on synthetic runs with a known run
effect: the run's speed level is a random factor exp(N(0, sd)) shared by all its samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats.runs import (RUN_TOLERANCE, compare_runs, processes_needed, quiet_runs,
                                  run_level, run_spread)

ALPHA = 0.05


def _run_medians(rng: np.random.Generator, runs: int, sd: float, true_ns: float = 1000.0,
                 within: float = 0.002) -> np.ndarray:
    """Medians of ``runs`` runs: each the true time times its run factor, plus a little
    within-run error of its median."""
    return true_ns * np.exp(rng.normal(0.0, sd, runs) + rng.normal(0.0, within, runs))


def _binomial_upper(rate: float, trials: int) -> float:
    """A rate that a correct test stays under in all but 1 in 10,000 runs of this test."""
    return float(sps.binom.ppf(0.9999, trials, rate)) / trials


def test_single_runs_against_the_true_variation_keep_the_false_positive_rate() -> None:
    rng = np.random.default_rng(1)
    trials, sd = 2000, 0.04
    calls = 0
    for _ in range(trials):
        a, b = _run_medians(rng, 1, sd), _run_medians(rng, 1, sd)
        r = compare_runs(a, b, alpha=ALPHA, min_effect=0.0, run_variation=sd)
        assert r.level == "variation"
        calls += r.verdict in ("faster", "slower")
    assert calls / trials <= _binomial_upper(ALPHA, trials)
    assert calls / trials >= 0.02  # a test at alpha does fire at about alpha: 0.05


def test_within_run_samples_alone_would_call_identical_code_different() -> None:
    # What the run-level test replaces: the samples of two runs as independent draws.
    from fastbench.stats import compare_samples

    rng = np.random.default_rng(2)
    wrong = 0
    for _ in range(50):
        level_a, level_b = np.exp(rng.normal(0.0, 0.04, 2))
        a = 1000.0 * level_a * np.exp(rng.normal(0.0, 0.01, 200))
        b = 1000.0 * level_b * np.exp(rng.normal(0.0, 0.01, 200))
        wrong += compare_samples(a, b).verdict != "no significant difference"
        assert compare_runs([np.median(a)], [np.median(b)]).verdict == "cannot tell"
    assert wrong > 25  # most A/A pairs of runs differ "significantly" sample by sample


def test_a_difference_beyond_the_run_variation_is_found() -> None:
    rng = np.random.default_rng(3)
    found = sum(
        compare_runs(_run_medians(rng, 1, 0.02), _run_medians(rng, 1, 0.02, 1250.0),
                     run_variation=0.02).verdict == "slower"
        for _ in range(200))
    assert found >= 190  # a 25% slowdown against runs 2% apart


def test_a_difference_inside_the_run_variation_cannot_be_told() -> None:
    r = compare_runs([1000.0], [1030.0], run_variation=0.04, variation_df=9)
    assert r.verdict == "cannot tell"
    assert any("runs on this machine vary by about 4.0%, so a change of about" in w
               and "measure with processes=" in w for w in r.warnings)
    # t with 9 df on a 3% difference against sqrt(2) * 4%:
    d = math.log(1000.0 / 1030.0)
    assert r.p_value == pytest.approx(2 * sps.t(9).sf(abs(d) / (0.04 * math.sqrt(2))))


def test_unknown_variation_cannot_tell_even_a_large_difference() -> None:
    r = compare_runs([1000.0], [1500.0])
    assert r.verdict == "cannot tell" and r.speedup_ci is None
    assert any("not known" in w for w in r.warnings)


@pytest.mark.parametrize("paired", [False, True])
def test_several_runs_per_side_keep_the_false_positive_rate(paired: bool) -> None:
    rng = np.random.default_rng(4)
    trials, calls = 2000, 0
    for _ in range(trials):
        a, b = _run_medians(rng, 5, 0.04), _run_medians(rng, 5, 0.04)
        r = compare_runs(a, b, paired=paired, alpha=ALPHA, min_effect=0.0)
        assert r.level == "runs" and r.n_a == 5
        calls += r.verdict != "no significant difference"
    assert calls / trials <= _binomial_upper(ALPHA, trials)


def test_several_runs_find_a_ten_percent_slowdown() -> None:
    rng = np.random.default_rng(5)
    found = sum(compare_runs(_run_medians(rng, 5, 0.02), _run_medians(rng, 5, 0.02, 1100.0)
                             ).verdict == "slower" for _ in range(200))
    assert found >= 190


def test_pairing_cancels_a_shared_slow_phase() -> None:
    # Both variants of pair i ran in the same phase of the host: its factor hits both.
    rng = np.random.default_rng(6)
    phase = np.exp(rng.normal(0.0, 0.08, 6))
    a = 1000.0 * phase * np.exp(rng.normal(0.0, 0.002, 6))
    b = 1030.0 * phase * np.exp(rng.normal(0.0, 0.002, 6))
    assert compare_runs(a, b, paired=True).verdict == "slower"
    assert compare_runs(a, b, paired=False).verdict == "no significant difference"


def test_one_side_with_runs_supplies_the_variation_of_the_other() -> None:
    base = [1000.0, 1040.0, 960.0, 1010.0, 990.0]
    r = compare_runs(base, [1500.0])
    assert r.level == "variation" and r.verdict == "slower"
    sd = float(np.std(np.log(base), ddof=1))
    assert r.run_variation == pytest.approx(sd)
    se = sd * math.sqrt(1 / 5 + 1)
    d = float(np.mean(np.log(base))) - math.log(1500.0)
    assert r.p_value == pytest.approx(2 * sps.t(4).sf(abs(d) / se))


def test_run_level_is_the_geometric_mean_with_a_t_interval() -> None:
    x = np.array([100.0, 104.0, 98.0, 101.0])
    lv = run_level(x)
    logs = np.log(x)
    half = sps.t(3).ppf(0.975) * logs.std(ddof=1) / 2.0
    assert lv.center == pytest.approx(float(np.exp(logs.mean())))
    assert lv.ci == pytest.approx((math.exp(logs.mean() - half), math.exp(logs.mean() + half)))
    assert lv.spread == pytest.approx(logs.std(ddof=1)) == run_spread(x)
    assert run_level([5.0]).ci is None and run_spread([5.0]) is None


def test_run_level_interval_covers_the_truth_about_95_percent() -> None:
    rng = np.random.default_rng(7)
    trials = 2000
    covered = 0
    for _ in range(trials):
        lo, hi = run_level(_run_medians(rng, 5, 0.03, within=0.0)).ci or (0.0, 0.0)
        covered += lo <= 1000.0 <= hi
    assert 0.93 <= covered / trials <= 0.97


def test_processes_needed_by_hand() -> None:
    # 2 (1.95996 + 0.84162)^2 0.03^2 / log(1.02)^2 = 36.03 -> 37
    assert processes_needed(0.03, 0.02) == 37
    assert processes_needed(0.02, 0.50) == 3  # clamped below
    assert processes_needed(0.10, 0.001) == 100  # and above


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="paired runs need equal lengths"):
        compare_runs([1.0, 2.0], [1.0], paired=True)
    with pytest.raises(ValueError, match="run_variation must be >= 0"):
        compare_runs([1.0], [1.0], run_variation=-0.1)
    with pytest.raises(ValueError, match="positive"):
        compare_runs([0.0], [1.0])


def test_no_difference_between_runs_says_what_it_rules_out() -> None:
    a = [1000.0, 1070.0, 960.0, 1030.0, 990.0]
    b = [1010.0, 950.0, 1060.0, 1000.0, 1020.0]
    r = compare_runs(a, b)
    assert r.verdict == "no significant difference"
    la, lb = np.log(a), np.log(b)
    va, vb = la.var(ddof=1) / 5, lb.var(ddof=1) / 5
    se = math.sqrt(va + vb)
    df = int((va + vb) ** 2 / (va**2 / 4 + vb**2 / 4))  # Welch-Satterthwaite
    unseen = math.expm1((sps.t(df).ppf(0.975) + sps.t(df).ppf(0.8)) * se) * 100
    assert any(f"rules out only a change of about {unseen:.1f}% or more" in w
               for w in r.warnings)
    # A difference found says nothing of the kind.
    found = compare_runs(a, [x * 1.5 for x in b])
    assert found.verdict == "slower"
    assert not any("rules out" in w for w in found.warnings)


@pytest.mark.slow  # 6000 comparisons: seconds
def test_an_invocation_effect_is_held_by_the_spread_of_whole_results() -> None:
    """Separate invocations shift all their runs together (SD 1.5% here) on top of each
    run's own 1.4%. Welch's test on 5 runs a side sees only the latter and calls identical
    code different far more often than alpha; judged against how whole results vary (the
    known SD of a 5-run result's mean log, so exactly normal), the rate is at most alpha,
    and a true 10% change is still found nearly always."""
    rng = np.random.default_rng(20261128)
    s_inv, s_run, n, trials = 0.015, 0.014, 5, 2000
    between = math.sqrt(s_inv**2 + s_run**2 / n)

    def side(shift: float) -> np.ndarray:
        return 1000.0 * np.exp(shift + rng.normal(0.0, s_inv) + rng.normal(0.0, s_run, n))

    welch = held = found = 0
    for _ in range(trials):
        a, b, slow = side(0.0), side(0.0), side(math.log(1.10))
        welch += compare_runs(a, b).verdict != "no significant difference"
        held += compare_runs(a, b, between_variation=between).verdict != \
            "no significant difference"
        found += compare_runs(a, slow, between_variation=between).verdict == "slower"
    sigma = math.sqrt(0.05 * 0.95 / trials)
    assert welch / trials > 0.15
    assert held / trials < 0.05 + 3 * sigma
    assert found / trials > 0.9


def test_the_spread_of_whole_results_only_ever_widens_the_test() -> None:
    a = np.array([1000.0, 1010.0, 990.0, 1005.0, 995.0])
    b = a * 1.05
    plain = compare_runs(a, b)
    tight = compare_runs(a, b, between_variation=0.0001, between_df=20)
    assert tight.p_value == plain.p_value and tight.test == plain.test
    wide = compare_runs(a, b, between_variation=0.05, between_df=8, between_source="x's")
    assert wide.p_value > plain.p_value and wide.test.endswith("against the spread of saved "
                                                                "results")
    assert any("x's vary by about 5.0% between invocations" in w for w in wide.warnings)
    with pytest.raises(ValueError, match="between_variation"):
        compare_runs(a, b, between_variation=-0.1)


# -- undisturbed runs ---------------------------------------------------------------------------
def test_a_process_the_host_slowed_throughout_is_left_out() -> None:
    # Medians of ten processes from one processes=10 result (ns): one at 1.88x the others.
    medians = [712, 730, 731, 725, 706, 711, 711, 1329, 709, 731]
    np.testing.assert_array_equal(quiet_runs(medians), [m != 1329 for m in medians])


def test_the_level_is_the_fastest_run_and_the_tolerance_ten_percent() -> None:
    assert RUN_TOLERANCE == 0.10
    # Fastest 700: 770 is exactly 10% above it and stays, 771 goes.
    np.testing.assert_array_equal(quiet_runs([700, 770, 771, 705, 720]),
                                  [True, True, False, True, True])
    np.testing.assert_array_equal(quiet_runs([700, 760, 780, 705], tolerance=0.2),
                                  [True, True, True, True])


def test_half_the_runs_are_always_kept() -> None:
    # One run far faster than the rest cannot set the level: only 1 of 7 lies within 10%
    # of 500, while 6 lie within 10% of 1000, which becomes the level; 500 is faster than it
    # and kept too.
    medians = [500, 1000, 1000, 1001, 1002, 1000, 1003]
    np.testing.assert_array_equal(quiet_runs(medians), [True] * 7)
    np.testing.assert_array_equal(quiet_runs(medians + [1150]), [True] * 7 + [False])
    # Five of ten slowed (one result here had 1260-1642 ns against 708-711): the fast five.
    medians = [1642, 1437, 1330, 711, 711, 1280, 1260, 708, 710, 709]
    np.testing.assert_array_equal(quiet_runs(medians), [m < 800 for m in medians])


@pytest.mark.parametrize("medians", [[1000.0], [1000.0, 2000.0]])
def test_below_three_runs_every_run_is_kept(medians: list[float]) -> None:
    assert quiet_runs(medians).all()


@pytest.mark.parametrize("bad", [[], [1.0, -2.0, 3.0], [1.0, float("nan"), 2.0]])
def test_quiet_runs_refuses_what_are_not_times(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        quiet_runs(bad)


def test_quiet_runs_refuses_a_negative_tolerance() -> None:
    with pytest.raises(ValueError, match="tolerance"):
        quiet_runs([1.0, 2.0, 3.0], tolerance=-0.1)
