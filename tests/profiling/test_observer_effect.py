"""The profile's observer effect and its interval, on hand-built step times: the interval is
the order-statistic interval of the median paired ratio (for 10 pairs the 2nd and 9th of the
sorted ratios, binomial coverage 1 - 2 * 11/1024 = 97.9%), and the printed words follow it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from _synthetic_profiles import synthetic_profile
from fastbench.profiling.result import Profile


def _profile(profiled: list[float], unprofiled: list[float] | None) -> Profile:
    base = synthetic_profile(np.random.default_rng(0), steps=len(profiled))
    prof = replace(base, profiled_step_times=np.asarray(profiled, dtype=np.float64))
    return prof if unprofiled is None else prof.with_unprofiled(unprofiled)


def test_the_interval_is_the_2nd_and_9th_of_ten_sorted_paired_ratios() -> None:
    ratios = [1.10, 0.97, 1.02, 1.30, 0.99, 1.05, 1.01, 0.95, 1.08, 1.03]
    unprofiled = [0.010 + 0.001 * i for i in range(10)]  # a drifting machine
    profiled = [u * r for u, r in zip(unprofiled, ratios)]
    prof = _profile(profiled, unprofiled)
    low, high = prof.observer_effect_ci
    # Sorted: 0.95 0.97 0.99 1.01 1.02 1.03 1.05 1.08 1.10 1.30.
    assert low == pytest.approx(0.97) and high == pytest.approx(1.10)
    # The point figure stays the ratio of the medians.
    assert prof.observer_effect == pytest.approx(np.median(profiled) / np.median(unprofiled))
    line = next(x for x in prof.lines() if "observer effect" in x)
    assert "[0.970, 1.100]" in line and "no effect this run can tell" in line


def test_a_drift_shared_by_each_pair_cancels_while_the_medians_would_not() -> None:
    # The machine slows by 40% halfway; each profiled step costs 3% more than its pair.
    unprofiled = [0.010] * 5 + [0.014] * 5
    profiled = [u * 1.03 for u in unprofiled]
    unprofiled[4] = 0.014  # one unprofiled step caught the slow spell early
    prof = _profile(profiled, unprofiled)
    assert prof.observer_effect < 1.0  # medians alone would say the profiler speeds it up
    low, high = prof.observer_effect_ci
    assert low == pytest.approx(1.03) and high == pytest.approx(1.03)
    line = next(x for x in prof.lines() if "observer effect" in x)
    assert line.rstrip().endswith("of the unprofiled step") and "[1.030, 1.030]" in line
    assert "cannot" not in line and "no effect" not in line


def test_profiled_steps_faster_than_their_pairs_are_called_out() -> None:
    unprofiled = [0.020] * 8
    profiled = [0.018, 0.0185, 0.019, 0.0178, 0.0182, 0.0181, 0.0183, 0.0179]
    prof = _profile(profiled, unprofiled)
    assert prof.observer_effect_ci[1] < 1.0
    line = next(x for x in prof.lines() if "observer effect" in x)
    assert "the profiler cannot cause" in line


@pytest.mark.parametrize(("steps", "unprofiled"),
                         [(10, None), (10, [0.01] * 9), (5, [0.01] * 5)])
def test_no_interval_without_one_pair_per_step_or_with_too_few(
        steps: int, unprofiled: list[float] | None) -> None:
    prof = _profile([0.011] * steps, unprofiled)
    assert prof.observer_effect_ci is None
    line = [x for x in prof.lines() if "observer effect" in x]
    assert all("CI" not in x for x in line)


def test_the_headline_gives_the_mean_step_the_tables_divide() -> None:
    # Steps of 10, 10, 10 and 30 ms: the median is 10 ms, the mean 15 ms. Every share and
    # saving below the headline is of the mean, so the headline must give it too.
    base = synthetic_profile(np.random.default_rng(0), steps=4)
    prof = replace(base, step_times=np.array([0.010, 0.010, 0.010, 0.030]))
    assert prof.step_time_s == pytest.approx(0.015)
    line = next(x for x in prof.lines() if "step time" in x)
    assert "10.00 ms median, 15.00 ms mean" in line
