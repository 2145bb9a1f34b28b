"""fastbench.suite.sweeps on native spins of known duration: the batch curve's knee and budget
choice against the same rules worked by hand on the known latencies, a thread sweep whose
true speedup is known (efficiency 1), power-law exponents of spins in n and n^2, restoring
the thread count, the plain-data round trip and argument errors.

Bounds are generous: a spin's measured median exceeds its set duration by the call and clock
overhead (about 0.1 µs here), and a loaded machine preempts some samples (the medians ignore
them). Nothing asserts a speed.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from fastbench._core import make_spin
from fastbench.suite.sweeps import (BatchSweep, ParameterSweep, ThreadSweep, batch_sweep,
                                    largest_within_budget, parameter_sweep, thread_sweep,
                                    throughput_knee)

FAST: dict[str, Any] = {"repeat": 40, "duration_s": None, "warmup": 1}

# A batch costs BASE + PER_SAMPLE * batch: throughput batch / latency rises toward
# 1 / PER_SAMPLE. With BASE / PER_SAMPLE = 10 the batches below reach 9%, 23%, 52%, 78%, 94%
# and 100% of the best measured throughput: the 10% knee (>= 90% of the best) is 100, and
# no point lies within 4% of that threshold, so noise cannot move it.
BASE_NS = 30_000.0
PER_SAMPLE_NS = 3_000.0
BATCHES = [1, 3, 10, 30, 100, 300]


def _latency_ns(batch: int) -> float:
    return BASE_NS + PER_SAMPLE_NS * batch


def _spin_batch(batch: int) -> Callable[[], None]:
    return make_spin(_latency_ns(batch))


def _hand_knee(tolerance: float) -> int:
    """The knee on the known latencies, worked without the library's rule."""
    throughput = {b: b / _latency_ns(b) for b in BATCHES}
    best = max(throughput.values())
    return sorted(b for b, t in throughput.items() if t >= (1 - tolerance) * best)[0]


def test_batch_sweep_knee_and_budget_match_the_known_curve() -> None:
    sweep = batch_sweep(_spin_batch, BATCHES, latency_budget_s=500e-6, percentile=0.9, **FAST)
    assert sweep.batches == tuple(BATCHES)
    assert sorted(sweep.order) == BATCHES
    assert _hand_knee(0.10) == 100
    assert sweep.knee_batch == _hand_knee(0.10)
    # p90 <= 500 µs: latencies 33, 39, 60, 120, 330 and 930 µs, so 100 is the largest.
    assert sweep.budget_batch == 100
    for p in sweep.points:
        known_s = _latency_ns(p.batch) * 1e-9
        assert known_s * 0.999 <= p.latency_median_s <= known_s * 1.05
        assert p.throughput_per_s == pytest.approx(p.batch / p.latency_median_s)
        assert p.latency_median_ci_s is not None and p.throughput_ci_per_s is not None
        lo, hi = p.latency_median_ci_s
        assert lo <= p.latency_median_s <= hi
        tlo, thi = p.throughput_ci_per_s
        assert tlo == pytest.approx(p.batch / hi) and thi == pytest.approx(p.batch / lo)
        # p90 of every sample is at or above the median, with an interval (>= 35 samples).
        assert p.latency_percentile_s >= p.latency_median_s * 0.999
        assert p.latency_percentile_ci_s is not None
        assert p.n_samples >= 40
    text = "\n".join(sweep.lines())
    assert "throughput knee: batch 100" in text and "p90 <= 500.0 µs: batch 100" in text


def test_knee_moves_with_the_tolerance_as_the_hand_rule_says() -> None:
    # Within 25% (>= 75% of the best): 30 at 78%; within 60% (>= 40%): 10 at 52%, while 3
    # is at 23%.
    assert _hand_knee(0.25) == 30 and _hand_knee(0.6) == 10
    sweep = batch_sweep(_spin_batch, BATCHES, knee_tolerance=0.6, **FAST)
    assert sweep.knee_batch == 10
    assert sweep.budget_batch is None and sweep.latency_budget_s is None


def test_a_budget_below_every_latency_chooses_no_batch() -> None:
    sweep = batch_sweep(_spin_batch, [1, 10], latency_budget_s=10e-6, **FAST)
    assert sweep.budget_batch is None
    assert "largest batch with p90 <= 10.00 µs: none" in "\n".join(sweep.lines())


def test_rising_throughput_warns_that_the_knee_is_at_the_edge() -> None:
    sweep = batch_sweep(_spin_batch, [1, 3, 10], **FAST)
    assert sweep.knee_batch == 10
    assert any(getattr(w, "code", "") == "knee-at-edge" for w in sweep.warnings)


def test_knee_and_budget_rules_on_given_numbers() -> None:
    assert throughput_knee([1, 2, 4, 8], [10.0, 18.0, 19.0, 20.0], 0.1) == 2
    assert throughput_knee([8, 4, 2, 1], [20.0, 19.0, 17.9, 10.0], 0.1) == 4
    assert largest_within_budget([1, 2, 4, 8], [1.0, 2.0, 1.5, 3.0], 2.0) == 4
    assert largest_within_budget([1, 2], [3.0, 4.0], 2.0) is None
    with pytest.raises(ValueError, match="tolerance"):
        throughput_knee([1], [1.0], 1.5)


def test_batch_sweep_round_trips_through_json() -> None:
    sweep = batch_sweep(_spin_batch, [1, 10, 30], latency_budget_s=1e-4, **FAST)
    again = BatchSweep.from_dict(json.loads(json.dumps(sweep.to_dict())))
    assert again == sweep
    assert again.lines() == sweep.lines()


def test_few_samples_leave_the_percentile_without_interval() -> None:
    sweep = batch_sweep(_spin_batch, [1, 3], percentile=0.99, repeat=20, duration_s=None)
    assert all(p.latency_percentile_ci_s is None for p in sweep.points)
    assert sum("p99 has no interval" in w for w in sweep.warnings) == 2


class _FakePool:
    """A thread pool whose work takes TOTAL / n at n threads: the true speedup is n."""

    TOTAL_NS = 800_000.0

    def __init__(self, threads: int = 3) -> None:
        self.threads = threads
        self.calls: list[int] = []
        self._spins = {n: make_spin(self.TOTAL_NS / n) for n in (1, 2, 3, 4, 8)}

    def set_threads(self, n: int) -> None:
        self.calls.append(n)
        self.threads = n

    def get_threads(self) -> int:
        return self.threads

    def work(self) -> None:
        self._spins[self.threads]()


def test_thread_sweep_of_perfect_scaling_has_efficiency_one() -> None:
    pool = _FakePool()
    sweep = thread_sweep(pool.work, [8, 1, 2, 4], set_threads=pool.set_threads,
                         get_threads=pool.get_threads, **FAST)
    assert [p.threads for p in sweep.points] == [1, 2, 4, 8]
    # Every count set once, in the order measured, then the original 3 back.
    assert pool.calls == [*sweep.order, 3] and pool.threads == 3
    assert sweep.restored_threads == 3
    first = sweep.points[0]
    assert first.speedup == 1.0 and first.speedup_ci is None and first.efficiency == 1.0
    for p in sweep.points[1:]:
        # The fixed call overhead (~0.1 µs) is 0.1% of the shortest spin (100 µs).
        assert 0.9 <= p.efficiency <= 1.1
        assert p.speedup == pytest.approx(first.median_s / p.median_s)
        assert p.speedup_ci is not None and p.efficiency_ci is not None
        assert p.speedup_ci[0] <= p.speedup <= p.speedup_ci[1]
        assert p.efficiency_ci[0] == pytest.approx(p.speedup_ci[0] / p.threads)
    again = ThreadSweep.from_dict(json.loads(json.dumps(sweep.to_dict())))
    assert again == sweep
    assert "efficiency" in sweep.lines()[0]


def test_thread_sweep_restores_the_count_when_a_call_fails() -> None:
    pool = _FakePool(threads=4)

    def failing() -> None:
        if pool.threads == 2:
            raise RuntimeError("boom")
        pool.work()

    with pytest.raises(RuntimeError, match="boom"):
        thread_sweep(failing, [1, 2], set_threads=pool.set_threads,
                     get_threads=pool.get_threads, order="given", **FAST)
    assert pool.calls == [1, 2, 4] and pool.threads == 4


@pytest.mark.parametrize("power, values", [(1, [1, 2, 4, 8, 16]), (2, [1, 2, 3, 4, 5])])
def test_parameter_sweep_recovers_the_exponent_of_spins(power: int, values: list[int]) -> None:
    # Spins of 50 µs x n^power (50 µs to 1.25 ms). The fixed overhead of ~0.1 µs per call
    # bends the log-log line by about 1e-3, which a tight interval may not hold: the
    # interval is allowed 0.01 of slack.
    sweep = parameter_sweep(lambda n: make_spin(50_000.0 * n ** power), values, **FAST)
    lo, hi = sweep.fit.exponent_ci
    assert lo - 0.01 <= power <= hi + 0.01
    assert sweep.fit.r2 > 0.999
    assert [p.value for p in sweep.points] == values
    assert [p.x for p in sweep.points] == [float(v) for v in values]
    again = ParameterSweep.from_dict(json.loads(json.dumps(sweep.to_dict())))
    assert again == sweep


def test_parameter_sweep_fits_against_the_given_x() -> None:
    # Values are labels; x gives the work of each (as FLOPs would): time is linear in x.
    work = {"small": 1.0, "medium": 4.0, "large": 16.0}
    sweep = parameter_sweep(lambda name: make_spin(60_000.0 * work[name]), list(work),
                            x=list(work.values()), x_label="FLOPs", **FAST)
    assert [p.value for p in sweep.points] == ["small", "medium", "large"]
    assert 0.97 <= sweep.fit.exponent <= 1.01
    assert sweep.x_label == "FLOPs" and "FLOPs" in "\n".join(sweep.lines())


@pytest.mark.parametrize("call, error, match", [
    (lambda: batch_sweep(_spin_batch, [1, 1]), ValueError, "repeat"),
    (lambda: batch_sweep(_spin_batch, [0]), ValueError, "positive"),
    (lambda: batch_sweep(_spin_batch, [True]), TypeError, "bool"),
    (lambda: batch_sweep(_spin_batch, [1], percentile=90), ValueError, "percentile"),
    (lambda: batch_sweep(_spin_batch, [1], latency_budget_s=-1.0), ValueError, "budget"),
    (lambda: batch_sweep(_spin_batch, [1], order="random"), ValueError, "order"),
    (lambda: batch_sweep(lambda b: None, [1], **FAST), TypeError, "callable"),  # type: ignore
    (lambda: thread_sweep(_FakePool().work, [1], set_threads=None), TypeError,  # type: ignore
     "set_threads"),
    (lambda: parameter_sweep(_spin_batch, [1, 2]), ValueError, "at least 3"),
    (lambda: parameter_sweep(_spin_batch, ["a", "b", "c"]), TypeError, "pass x="),
    (lambda: parameter_sweep(_spin_batch, [1, 2, 3], x=[1.0, 2.0]), ValueError, "one size"),
    (lambda: parameter_sweep(_spin_batch, [1, 2, 3], x=[1.0, 0.0, 2.0]), ValueError,
     "positive"),
])
def test_bad_arguments_are_refused_before_measuring(call: Callable[[], Any],
                                                    error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()


def test_parameter_sweep_predicts_in_seconds_and_marks_extrapolation() -> None:
    # Built from known points (no timing): 1, 2.1, 3.9, 8.2 ms at 1, 2, 4, 8 GFLOPs.
    from fastbench.suite.fit import power_law_fit
    from fastbench.suite.sweeps import ParameterPoint

    xs, ys = [1e9, 2e9, 4e9, 8e9], [1e-3, 2.1e-3, 3.9e-3, 8.2e-3]
    points = tuple(ParameterPoint(x, x, y, None) for x, y in zip(xs, ys))
    fit = power_law_fit(xs, ys, x_label="FLOPs")
    sweep = ParameterSweep(points, "FLOPs", fit)
    p = sweep.prediction(3.2e10)
    assert p == fit.prediction(3.2e10, unit="s")
    assert p.extrapolation and p.interval[0] < p.value < p.interval[1]
    assert "ms" in str(p) and "extrapolated beyond the measured FLOPs" in str(p)
    assert not sweep.prediction(3e9).extrapolation
