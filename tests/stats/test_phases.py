"""Interference phases: windows slowed as a block are found, scattered noise is not, and a
Measurement reports the median of the quiet phases (sampling on while phases hold most of a
run is tested in test_sampling.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.stats as sps

from fastbench.measurement import Measurement, measurement_warnings
from fastbench.stats.phases import MIN_TOLERANCE, quiet_phases, timing_phases, window_for

WINDOW = 50


def _phased(windows: int, slow: dict[int, float], seed: int, sigma: float = 0.02,
            level: float = 1000.0) -> np.ndarray:
    """Lognormal samples around ``level``; window j multiplied by slow[j] when listed."""
    rng = np.random.default_rng(seed)
    x = level * rng.lognormal(0.0, sigma, windows * WINDOW)
    for j, factor in slow.items():
        x[j * WINDOW:(j + 1) * WINDOW] *= factor
    return x


def _truth(windows: int, slow: dict[int, float]) -> np.ndarray:
    return np.repeat([j not in slow for j in range(windows)], WINDOW)


# -- the pure function ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(5))
def test_blocks_of_slow_windows_are_found_exactly(seed: int) -> None:
    slow = {**{j: 1.5 for j in range(10, 30)}, **{j: 1.1 for j in range(50, 60)}}
    x = _phased(100, slow, seed)
    p = quiet_phases(x, WINDOW)
    assert p.windows == 100
    np.testing.assert_array_equal(p.quiet, _truth(100, slow))
    assert p.disturbed_share == pytest.approx(0.3)
    # the quiet samples are untouched lognormal(0, 0.02) draws around 1000: median 1000
    assert np.median(x[p.quiet]) == pytest.approx(1000.0, rel=0.005)
    # disturbed samples: 20 windows at 1.5x, 10 at 1.1x: their median lies in the 1.5x block
    assert p.slowdown(x) == pytest.approx(1.5, rel=0.02)


def test_the_quiet_level_holds_when_most_of_the_run_is_disturbed() -> None:
    slow = {j: 1.3 for j in range(100) if j % 5 != 0}  # 80% of the windows disturbed
    x = _phased(100, slow, seed=7)
    p = quiet_phases(x, WINDOW)
    np.testing.assert_array_equal(p.quiet, _truth(100, slow))
    assert np.median(x) == pytest.approx(1300.0, rel=0.01)  # what the raw median reports
    assert np.median(x[p.quiet]) == pytest.approx(1000.0, rel=0.005)


@pytest.mark.parametrize("sigma", [0.01, 0.1, 0.3])
def test_scattered_noise_is_not_split_into_phases(sigma: float) -> None:
    shares = []
    for seed in range(20):
        x = _phased(100, {}, seed, sigma=sigma)
        p = quiet_phases(x, WINDOW)
        shares.append(p.disturbed_share)
        assert np.median(x[p.quiet]) == pytest.approx(np.median(x), rel=0.01)
    # windows beyond the fastest one by six standard errors are rare without interference
    assert np.mean(shares) < 0.05


def test_tolerance_grows_with_the_noise_of_a_window_median() -> None:
    quiet = quiet_phases(_phased(100, {}, 1, sigma=0.005), WINDOW)
    noisy = quiet_phases(_phased(100, {}, 1, sigma=0.3), WINDOW)
    assert quiet.tolerance == MIN_TOLERANCE
    # 6 standard errors of the median of 50 lognormal(0, 0.3) draws: 6 * 1.2533 * 0.3 / sqrt(50),
    # relative to the level, the 5th percentile of the window medians (1.645 errors below
    # 1000)
    se = 1.2533 * 0.3 / np.sqrt(WINDOW)
    assert noisy.tolerance == pytest.approx(6 * se / (1 - 1.645 * se), rel=0.05)


@pytest.mark.parametrize("seed", range(5))
def test_one_fast_window_does_not_set_the_level(seed: int) -> None:
    # 66 windows at the undisturbed 1000, 33 disturbed at 1.2x, and one that ran 7% fast (a
    # frequency burst): the smallest window median is that one's, 930, within 2% of which no
    # other window lies; the 5th smallest is an undisturbed window's.
    slow = {j: 1.2 for j in range(0, 100, 3) if j != 42}
    fast = 43
    x = _phased(100, {**slow, fast: 0.93}, seed, sigma=0.01)
    p = quiet_phases(x, WINDOW)
    assert p.level == pytest.approx(1000.0, rel=0.005)
    np.testing.assert_array_equal(p.quiet, _truth(100, slow))   # the fast one is quiet too
    assert np.median(x[p.quiet]) == pytest.approx(1000.0, rel=0.005)


def test_a_steady_drift_is_not_taken_for_interference() -> None:
    # the workload slows by 10% over the run, window after window: a drift, not phases
    x = _phased(100, {j: 1.0 + 0.1 * j / 99 for j in range(100)}, seed=8, sigma=0.005)
    p = quiet_phases(x, WINDOW)
    assert p.trend > 0.8 and p.windows == 100
    assert not p.found  # every sample quiet: the median is the plain median
    # its Kendall tau against scipy's (no ties among the window medians)
    medians = np.median(x.reshape(100, WINDOW), axis=1)
    assert p.trend == pytest.approx(sps.kendalltau(np.arange(100), medians).statistic)


def test_an_episode_at_the_end_is_still_a_phase() -> None:
    # the last 30% of the run 1.3x slower: a step, tau ~0.4, found as interference
    slow = {j: 1.3 for j in range(70, 100)}
    p = quiet_phases(_phased(100, slow, seed=9), WINDOW)
    assert 0.2 < p.trend < 0.8
    np.testing.assert_array_equal(p.quiet, _truth(100, slow))


def test_few_windows_leave_every_sample_quiet() -> None:
    x = _phased(7, {3: 2.0}, seed=0)
    p = quiet_phases(x, WINDOW)
    assert p.windows == 0 and not p.found and p.disturbed_share == 0.0
    assert p.slowdown(x) == 1.0


def test_the_remainder_joins_the_last_window() -> None:
    slow = {9: 1.5}
    x = np.append(_phased(10, slow, seed=2), [1500.0] * 7)  # 7 more samples, still slow
    p = quiet_phases(x, WINDOW)
    assert p.windows == 10 and p.quiet.size == x.size
    np.testing.assert_array_equal(p.quiet, np.append(_truth(10, slow), [False] * 7))


def test_bad_input_is_refused() -> None:
    good = _phased(10, {}, seed=0)
    with pytest.raises(ValueError, match="empty"):
        quiet_phases([], WINDOW)
    with pytest.raises(ValueError, match="non-finite"):
        quiet_phases(np.append(good, np.nan), WINDOW)
    with pytest.raises(ValueError, match="positive"):
        quiet_phases(np.append(good, 0.0), WINDOW)
    with pytest.raises(ValueError, match="one-dimensional"):
        quiet_phases(good.reshape(10, -1), WINDOW)
    with pytest.raises(ValueError, match="window must be >= 8"):
        quiet_phases(good, 4)
    with pytest.raises(TypeError, match="window must be an int"):
        quiet_phases(good, 50.0)
    with pytest.raises(ValueError, match="min_tolerance"):
        quiet_phases(good, WINDOW, min_tolerance=-0.1)
    with pytest.raises(ValueError, match="samples has 3 values"):
        quiet_phases(good, WINDOW).slowdown([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="sample_s"):
        window_for(0.0)


def test_windows_last_about_ten_milliseconds() -> None:
    assert window_for(1e-4) == 100
    assert window_for(3e-4) == 34  # ceil(33.3)
    assert window_for(0.5) == 8  # never below 8 samples
    # per-call ns times loops, the fast tenth of the samples: ~1 µs calls, 100 loops
    x = _phased(200, {j: 2.0 for j in range(0, 200, 2)}, seed=3)
    assert timing_phases(x, loops=100).window == window_for(np.quantile(x, 0.1) * 100 * 1e-9)
    assert 100 <= timing_phases(x, loops=100).window <= 105
    assert timing_phases(np.append(x, 0.0), loops=1).windows == 0  # zeros: no phases


# -- the Measurement -----------------------------------------------------------------------------
def _measurement(samples: np.ndarray, loops: int) -> Measurement:
    return Measurement(samples_ns=samples, loops=loops, warmup_samples_ns=np.empty(0),
                       clock="tsc", overhead_ns=0.0, overhead_mad_ns=0.0, call_floor_ns=0.0,
                       call_floor_mad_ns=0.0)


def test_measurement_reports_the_quiet_median_and_keeps_every_sample() -> None:
    slow = {j: 1.8 for j in range(100) if (j // 10) % 2}  # every other 500 samples
    x = _phased(100, slow, seed=4) / 1000.0  # 1 ns per call, 1e5 loops: 100 µs samples
    m = _measurement(x, loops=100_000)
    assert m.n == x.size
    quiet = m.phases.quiet  # windows of ~10 ms straddle the 100-sample phases a little
    assert quiet.mean() == pytest.approx(0.5, abs=0.05)
    assert m.median_ns == float(np.median(x[quiet]))
    assert m.raw_median_ns == float(np.median(x))
    assert m.median_ns == pytest.approx(1.0, rel=0.01)
    low, high = m.median_ci_ns  # type: ignore[misc]
    assert low <= m.median_ns <= high and high < 1.01
    assert f"median of {quiet.sum():,} quiet-phase samples of {x.size:,} ×" in str(m)
    warnings = measurement_warnings(m)
    pattern = re.compile(r"interference: (49|50|51)\.\d% of the samples ran in phases 1\.(7[5-9]|8[0-5])x")
    assert any(pattern.match(w) for w in warnings), warnings


def test_no_warning_when_the_phases_barely_move_the_median() -> None:
    # a tenth of the run 1.5x slower: the median of all samples moves by ~0.1%
    x = _phased(100, {j: 1.5 for j in range(40, 50)}, seed=6, sigma=0.01)
    m = _measurement(x, loops=100)
    assert m.phases.disturbed_share >= 0.09
    assert m.raw_median_ns / m.median_ns - 1 < 0.01
    assert not any(w.startswith("interference") for w in measurement_warnings(m))


def test_measurement_without_phases_is_the_plain_median() -> None:
    x = _phased(100, {}, seed=5, sigma=0.001)
    m = _measurement(x, loops=100)
    assert m.median_ns == m.raw_median_ns == float(np.median(x))
    assert "quiet-phase" not in str(m)
    assert not any(w.startswith("interference") for w in measurement_warnings(m))
