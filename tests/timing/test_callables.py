"""Tests for fastbench.timing.callables: measure (and timeit where it shares measure's settings)
and the Measurement it returns.

Durations are checked against work of known length (the native busy-wait from
``_core.make_spin``, whose true duration ``_core.spin_duration_ns`` gives) with generous
bands; statistics against numpy on the same samples; bookkeeping (loops, samples, calls)
exactly, by counting calls.
"""

from __future__ import annotations

import functools
import gc
import mmap
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from typing import Any

import numpy as np
import pytest

import fastbench
from fastbench import Measurement, _core, measure, timeit
from fastbench.stats import median_ci

from _timing_helpers import FAST, Recorder  # beside this file: pytest puts it on sys.path


def _synthetic(samples: Any, **extra: Any) -> Measurement:
    fields: dict[str, Any] = {
        "samples_ns": np.asarray(samples, dtype=np.float64),
        "loops": 1000,
        "warmup_samples_ns": np.asarray([5.0, 4.0]),
        "clock": "steady",
        "overhead_ns": 0.5,
        "overhead_mad_ns": 0.1,
        "call_floor_ns": 20.0,
        "call_floor_mad_ns": 1.0,
    }
    fields.update(extra)
    return Measurement(**fields)


# -- durations against known work -------------------------------------------------------------
# On a shared VM a neighbour can preempt a run and inflate its figures, so a timing check
# gets up to ATTEMPTS tries and passes if one of them lands in its (generous) band.
ATTEMPTS = 3


@pytest.mark.parametrize("ns", [1e3, 1e4, 1e6], ids=["1us", "10us", "1ms"])
def test_native_spin_net_median_matches_true_duration(ns: float, clock_name: str) -> None:
    # Short samples, so that few of them are hit when the VM is busy; the reference is the
    # least disturbed of several short native timings.
    spin = _core.make_spin(ns)
    ratios = []
    for _ in range(ATTEMPTS):
        m = measure(spin, clock=clock_name, min_time_s=0.0005, repeat=15, duration_s=None)
        assert m.clock == clock_name
        assert m.call_floor_kind == "native"
        true_ns = min(_core.spin_duration_ns(ns, reps=max(1, int(2e5 / ns))) for _ in range(5))
        ratios.append(m.net_median_ns / true_ns)
        if 0.75 <= ratios[-1] <= 1.25:
            break
    assert 0.75 <= ratios[-1] <= 1.25, ratios


def test_call_floor_kind() -> None:
    assert measure(lambda: None, **FAST).call_floor_kind == "python"
    assert measure(Recorder(), **FAST).call_floor_kind == "python"
    assert measure(functools.partial(divmod, 7), 2, **FAST).call_floor_kind == "python"
    assert measure(len, [1, 2, 3], **FAST).call_floor_kind == "native"
    assert measure([].copy, **FAST).call_floor_kind == "native"
    assert measure(_core.make_spin(10.0), **FAST).call_floor_kind == "native"


def test_a_measurement_carries_its_clock_step(clock_name: str) -> None:
    # The clock's own probe (the smallest step between back-to-back reads) says how finely
    # a sample can be read; the measurement keeps it, and its interval is at least that
    # step, spread over the sample's calls, either side of the median.
    m = measure(lambda: None, clock=clock_name, **FAST)
    step = _core.clock_info(clock_name).resolution_ns
    assert m.clock_resolution_ns == step > 0.0
    ci = m.median_ci_ns
    assert ci is not None
    assert ci[0] <= m.median_ns - step / m.loops and ci[1] >= m.median_ns + step / m.loops
    assert timeit("pass", clock=clock_name, **FAST).clock_resolution_ns == step


def test_python_call_floor_is_small_and_positive() -> None:
    m = measure(lambda: None, **FAST)
    assert 0.0 < m.call_floor_ns < 10_000.0
    assert 0.0 <= m.overhead_ns < m.call_floor_ns


@pytest.mark.parametrize("min_time_s", [0.005, 0.02])
def test_loop_calibration_honours_min_time(min_time_s: float) -> None:
    spin_ns = 1e5
    spin = _core.make_spin(spin_ns)
    failures = []
    for _ in range(ATTEMPTS):
        true_ns = min(_core.spin_duration_ns(spin_ns, reps=5) for _ in range(3))
        needed = math.ceil(min_time_s * 1e9 / true_ns)
        m = measure(spin, min_time_s=min_time_s, repeat=5, duration_s=None)
        assert m.calibration_trials >= 1
        shortest_ns = float(np.min(m.samples_ns * m.loops))
        # No lower bound on loops: on a busy machine each sample takes longer in wall time,
        # so fewer loops reach min_time_s, which is what the samples are checked against.
        if shortest_ns >= 0.9 * min_time_s * 1e9 and m.loops <= 3 * needed:
            break
        failures.append((shortest_ns, m.loops, needed))
    else:
        pytest.fail(f"(shortest sample ns, loops, loops needed) per attempt: {failures}")


def test_elapsed_covers_the_counted_samples() -> None:
    m = measure(_core.make_spin(1e5), loops=20, repeat=5, duration_s=None, min_time_s=0.002)
    total_s = float(np.sum(m.samples_ns * m.loops)) * 1e-9
    assert 0.99 * total_s <= m.elapsed_s < total_s + 1.0


# -- bookkeeping ------------------------------------------------------------------------------
def test_fixed_loops_honoured_exactly() -> None:
    rec = Recorder()
    m = measure(rec, loops=37, warmup=2, repeat=5, duration_s=None)
    assert m.loops == 37
    assert m.calibration_trials == 0
    assert rec.calls == 37 * (2 + 5)  # the floors call a no-op, never fn


@pytest.mark.parametrize("warmup", [0, 1, 3])
def test_warmup_samples_counted_and_kept_apart(warmup: int) -> None:
    m = measure(_core.make_spin(1e3), warmup=warmup, **FAST)
    assert m.warmup_samples_ns.shape == (warmup,)
    assert m.samples_ns.shape == (FAST["repeat"],)


def test_warmup_samples_are_the_first_ones() -> None:
    # The first 2 x 10 calls (the warmup) are slow, every later call is fast.
    slow, fast = _core.make_spin(2e5), _core.make_spin(1e4)
    calls = [0]

    def fn() -> None:
        calls[0] += 1
        (slow if calls[0] <= 20 else fast)()

    m = measure(fn, loops=10, warmup=2, repeat=5, duration_s=None)
    assert m.warmup_samples_ns.min() > 5 * np.median(m.samples_ns)
    assert m.warmup_samples_ns.min() >= 0.9 * 2e5


@pytest.mark.parametrize("repeat", [1, 2, 11])
def test_repeat_gives_that_many_samples(repeat: int) -> None:
    m = measure(_core.make_spin(1e3), min_time_s=0.002, repeat=repeat, duration_s=None)
    assert m.n == repeat == m.samples_ns.size
    assert not m.budget_exhausted


def test_max_time_stops_early() -> None:
    m = measure(_core.make_spin(1e6), loops=1, repeat=100_000, duration_s=None, max_time_s=0.02, warmup=0)
    assert m.budget_exhausted
    assert 1 <= m.n < 1000
    assert 0.02 <= m.elapsed_s < 2.0


def test_max_time_always_takes_one_sample() -> None:
    m = measure(_core.make_spin(1e5), loops=2, repeat=5, duration_s=None, max_time_s=1e-9)
    assert m.n == 1
    assert m.budget_exhausted


def test_max_time_not_reached() -> None:
    m = measure(_core.make_spin(1e3), loops=10, repeat=5, duration_s=None, max_time_s=10.0)
    assert m.n == 5 and not m.budget_exhausted


def test_duration_keeps_sampling_after_repeat() -> None:
    m = measure(_core.make_spin(1e4), loops=10, repeat=5, duration_s=0.2, warmup=0)
    assert m.stop_reason == "duration_s" and not m.budget_exhausted
    assert m.elapsed_s >= 0.2
    # Each sample is 10 x 10 µs of spin, so 0.2 s holds up to 2000 of them.
    assert 5 < m.n <= 2000


def test_duration_is_capped_by_the_budget() -> None:
    m = measure(_core.make_spin(1e4), loops=10, repeat=5, duration_s=5.0, max_time_s=0.1,
                warmup=0)
    assert m.stop_reason == "max_time_s" and m.budget_exhausted
    assert 0.1 <= m.elapsed_s < 1.0 and m.n > 5


def test_repeat_beyond_duration_is_honoured() -> None:
    m = measure(_core.make_spin(1e4), loops=10, repeat=50, duration_s=1e-3, warmup=0)
    assert (m.n, m.stop_reason) == (50, "repeat")


def test_name_defaults_to_qualname() -> None:
    def my_function() -> None:
        pass

    assert measure(my_function, **FAST).name.endswith("my_function")
    assert measure(my_function, name="label", **FAST).name == "label"


def test_numpy_integers_accepted_as_counts() -> None:
    m = measure(_core.make_spin(1e3), loops=np.int64(4), repeat=np.int32(3), duration_s=None, min_time_s=0.002)
    assert (m.loops, m.n) == (4, 3)


# -- arguments --------------------------------------------------------------------------------
def test_args_and_kwargs_reach_fn() -> None:
    rec = Recorder()
    marker = object()
    measure(rec, 1, "two", marker, key=3.0, other=marker, loops=2, warmup=0, repeat=2, duration_s=None)
    assert rec.calls == 4
    assert all(s == ((1, "two", marker), {"key": 3.0, "other": marker}) for s in rec.seen)
    assert rec.seen[0][0][2] is marker


def test_kwarg_named_fn_reaches_fn() -> None:
    seen: list[Any] = []

    def target(fn: Any) -> None:
        seen.append(fn)

    m = measure(target, fn="value", loops=3, warmup=0, repeat=1, duration_s=None)
    assert seen == ["value"] * 3
    assert m.call_floor_kind == "python"


@pytest.mark.parametrize(
    "kwargs",
    [{"a0": 2}, {"a1": 2, "b": 3}, {"class": 1}, {"not-an-identifier": 1}],
    ids=["a0", "a1", "keyword", "non-identifier"],
)
def test_any_kwarg_names_with_positional_args(kwargs: dict[str, Any]) -> None:
    # The Python call floor must accept exactly what fn accepts, whatever the names.
    rec = Recorder()
    m = measure(rec, 1, 2, loops=2, warmup=0, repeat=1, duration_s=None, **kwargs)
    assert rec.seen[0] == ((1, 2), kwargs)
    assert m.call_floor_kind == "python"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"warmup": -1}, ValueError),
        ({"repeat": 0}, ValueError),
        ({"repeat": -3}, ValueError),
        ({"loops": 0}, ValueError),
        ({"repeat": 1.5}, TypeError),
        ({"repeat": True}, TypeError),
        ({"warmup": False}, TypeError),
        ({"loops": 2.0}, TypeError),
        ({"repeat": "7"}, TypeError),
        ({"min_time_s": float("nan")}, ValueError),
        ({"min_time_s": float("inf")}, ValueError),
        ({"min_time_s": 0}, ValueError),
        ({"min_time_s": -1}, ValueError),
        ({"min_time_s": "0.1"}, TypeError),
        ({"min_time_s": True}, TypeError),
        ({"max_time_s": float("inf")}, ValueError),
        ({"max_time_s": float("nan")}, ValueError),
        ({"max_time_s": 0.0}, ValueError),
        ({"duration_s": 0.0}, ValueError),
        ({"duration_s": float("nan")}, ValueError),
        ({"duration_s": "1"}, TypeError),
        ({"clock": "bogus"}, ValueError),
        ({"clock": 1}, TypeError),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: type[Exception]) -> None:
    rec = Recorder()
    with pytest.raises(error):
        measure(rec, **kwargs)
    assert rec.calls == 0  # checked before anything runs


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"repeat": 0}, ValueError, "repeat must be >= 1, got 0"),
        ({"loops": -2}, ValueError, "loops must be >= 1, got -2"),
        ({"warmup": -1}, ValueError, "warmup must be >= 0, got -1"),
        ({"repeat": 1.5}, TypeError, "repeat must be an int, got float 1.5"),
        ({"min_time_s": 0}, ValueError, "min_time_s must be finite and > 0 seconds, got 0"),
        ({"duration_s": "1"}, TypeError, "duration_s must be a number of seconds, got str"),
        ({"target_rel_ci": 1.0}, ValueError,
         "target_rel_ci must be in (0, 1) (e.g. 0.01 for ±1%), got 1.0"),
        ({"counters_missing": "ignore"}, ValueError,
         "counters_missing must be one of ('raise', 'skip'), got 'ignore'"),
    ],
)
def test_bad_argument_messages_name_the_argument(kwargs: dict[str, Any], error: type[Exception],
                                                 message: str) -> None:
    rec = Recorder()
    with pytest.raises(error) as info:
        measure(rec, **kwargs)
    assert str(info.value) == message
    assert rec.calls == 0


@pytest.mark.parametrize("fn", [None, 42, "print"])
def test_non_callable_fn(fn: Any) -> None:
    with pytest.raises(TypeError, match="callable"):
        measure(fn)


# -- errors raised by fn, gc ------------------------------------------------------------------
@pytest.mark.parametrize("fail_at_call", [1, 150], ids=["in-calibration", "in-run"])
def test_exception_from_fn_propagates_unchanged(fail_at_call: int, gc_restored: None) -> None:
    err = LookupError("raised by fn")
    calls = [0]

    def failing_fn() -> None:
        calls[0] += 1
        if calls[0] == fail_at_call:
            raise err

    loops = None if fail_at_call == 1 else 10
    gc.enable()
    with pytest.raises(LookupError) as info:
        measure(failing_fn, loops=loops, warmup=0, repeat=100, duration_s=None, min_time_s=0.002)
    assert info.value is err
    assert type(info.value) is LookupError
    assert "failing_fn" in [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert calls[0] == fail_at_call  # stopped at once
    assert gc.isenabled()


def test_gc_disabled_during_run_and_restored(gc_restored: None) -> None:
    gc.enable()
    rec = Recorder()
    measure(rec, **FAST)
    assert rec.gc_enabled == {False}
    assert gc.isenabled()


def test_gc_stays_disabled_if_it_was(gc_restored: None) -> None:
    gc.disable()
    measure(Recorder(), **FAST)
    assert not gc.isenabled()
    with pytest.raises(ZeroDivisionError):
        measure(lambda: 1 / 0, **FAST)
    assert not gc.isenabled()


def test_gc_left_alone_when_not_disabling(gc_restored: None) -> None:
    gc.enable()
    rec = Recorder()
    measure(rec, disable_gc=False, **FAST)
    assert rec.gc_enabled == {True}
    assert gc.isenabled()


@pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals and kill(1)")
def test_keyboard_interrupt_stops_a_long_run(gc_restored: None) -> None:
    # The SIGINT comes from another process, as Ctrl-C would: timing a callable holds the
    # GIL for the whole run, so a Python thread in this process could not send it in time.
    gc.enable()
    spin = _core.make_spin(1e6)
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    killer = None
    try:
        start = time.monotonic()
        killer = subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -INT {os.getpid()}"])
        with pytest.raises(KeyboardInterrupt):
            # Without the interrupt this would run ~1000 s; max_time_s caps it at 8 s.
            measure(spin, repeat=100_000, duration_s=None, min_time_s=0.01, max_time_s=8.0)
        elapsed = time.monotonic() - start
    finally:
        if killer is not None:
            if killer.poll() is None:
                killer.kill()  # no late SIGINT if the run ended some other way
            killer.wait(10)
        signal.signal(signal.SIGINT, old_handler)
    assert elapsed < 5.0
    assert gc.isenabled()
    assert measure(spin, **FAST).n == FAST["repeat"]


# -- Measurement ------------------------------------------------------------------------------
def _check_summary(m: Measurement) -> None:
    s = m.samples_ns
    assert m.n == s.size
    assert m.median_ns == pytest.approx(np.median(s), rel=1e-12)
    assert m.mean_ns == pytest.approx(np.mean(s), rel=1e-12)
    assert m.stdev_ns == pytest.approx(np.std(s, ddof=1), rel=1e-12)
    assert m.min_ns == s.min() and m.max_ns == s.max()
    qs = (5, 25, 50, 75, 95, 99)
    expected = dict(zip((f"p{q}" for q in qs), np.percentile(s, qs)))
    assert m.percentiles_ns == pytest.approx(expected, rel=1e-12)
    assert m.percentile_ns(37.5) == pytest.approx(np.percentile(s, 37.5), rel=1e-12)
    assert m.net_median_ns == m.median_ns - m.call_floor_ns
    assert m.median_ci_ns == median_ci(s)


def test_measurement_summary_on_real_samples() -> None:
    _check_summary(measure(_core.make_spin(1e4), **FAST))


@pytest.mark.parametrize("n", [1, 2, 5, 6, 30, 101])
def test_measurement_summary_on_synthetic_samples(n: int) -> None:
    samples = np.random.default_rng(n).lognormal(mean=7.0, sigma=0.3, size=n)
    m = _synthetic(samples)
    if n == 1:
        assert m.stdev_ns == 0.0
        assert m.median_ns == m.min_ns == m.max_ns == samples[0]
        return
    _check_summary(m)


def test_measurement_known_values() -> None:
    m = _synthetic([1.0, 2.0, 3.0, 4.0, 10.0])
    assert (m.median_ns, m.mean_ns, m.min_ns, m.max_ns) == (3.0, 4.0, 1.0, 10.0)
    assert m.stdev_ns == pytest.approx(math.sqrt(((1 + 4 + 9 + 16 + 100) - 5 * 16) / 4))
    assert m.percentile_ns(25) == 2.0
    assert m.net_median_ns == 3.0 - 20.0


@pytest.mark.parametrize("q", [-1.0, 100.5, float("nan")])
def test_percentile_out_of_range(q: float) -> None:
    with pytest.raises(ValueError):
        _synthetic([1.0, 2.0]).percentile_ns(q)


def test_rel_ci_is_half_width_over_median() -> None:
    samples = np.arange(1.0, 31.0) * 100.0
    m = _synthetic(samples)
    low, high = median_ci(samples)  # type: ignore[misc]
    assert m.median_ci_ns == (low, high)
    assert m.rel_ci == pytest.approx((high - low) / 2.0 / np.median(samples))


@pytest.mark.parametrize("n", [1, 5])
def test_no_ci_below_six_samples(n: int) -> None:
    m = _synthetic(np.arange(1.0, n + 1.0))
    assert m.median_ci_ns is None
    assert m.rel_ci is None
    assert "± n/a" in str(m)
    assert f"median of {n} {'sample' if n == 1 else 'samples'} ×" in str(m)


def test_str_exact_for_synthetic_samples() -> None:
    samples = np.arange(1.0, 31.0) * 100.0  # median 1550 ns
    low, high = median_ci(samples)  # type: ignore[misc]
    rel = (high - low) / 2.0 / 1550.0 * 100.0
    assert 10.0 <= rel < 100.0  # printed with no decimal, two significant digits
    m = _synthetic(samples, loops=12345, clock="tsc")
    assert str(m) == (f"1.550 µs ± {rel:.0f}% within this run; run-to-run variation here not "
                      "measured (median of 30 samples × 12,345 loops, tsc clock)")


STR_PATTERN = re.compile(
    r"^\d[\d.]* (ns|µs|ms|s) ± ([\d.]+%|< 0\.001%) within this run; [^(]+"
    r"\(median of 30 samples × [\d,]+ loops, (tsc|steady) clock\)$"
)


def test_str_of_real_measurement() -> None:
    m = measure(_core.make_spin(1e3), min_time_s=0.002, repeat=30, duration_s=None)
    assert STR_PATTERN.match(str(m)), str(m)


def test_to_dict_from_dict_round_trip() -> None:
    m = measure(_core.make_spin(1e3), warmup=2, name="spin", **FAST)
    data = m.to_dict()
    through_json = json.loads(json.dumps(data))
    for restored in (Measurement.from_dict(data), Measurement.from_dict(through_json)):
        assert restored.to_dict() == data
        assert np.array_equal(restored.samples_ns, m.samples_ns)
        assert np.array_equal(restored.warmup_samples_ns, m.warmup_samples_ns)
        assert restored.samples_ns.dtype == np.float64
        assert str(restored) == str(m)
        assert restored.median_ci_ns == m.median_ci_ns


def test_from_dict_defaults_for_optional_keys() -> None:
    m = Measurement.from_dict(
        {
            "samples_ns": [1, 2, 3],
            "loops": 4,
            "clock": "steady",
            "overhead_ns": 1,
            "call_floor_ns": 2,
        }
    )
    assert np.array_equal(m.samples_ns, [1.0, 2.0, 3.0])
    assert m.warmup_samples_ns.size == 0
    assert (m.name, m.call_floor_kind) == ("", "python")
    assert (m.calibration_trials, m.budget_exhausted, m.elapsed_s) == (0, False, 0.0)


@pytest.mark.parametrize("key", ["samples_ns", "loops", "clock", "overhead_ns", "call_floor_ns"])
def test_from_dict_missing_key(key: str) -> None:
    data = _synthetic([1.0, 2.0]).to_dict()
    del data[key]
    with pytest.raises(ValueError, match=key):
        Measurement.from_dict(data)


@pytest.mark.parametrize("samples", [[], [1.0, float("nan")], [float("inf")], [[1.0, 2.0]]])
def test_from_dict_bad_samples(samples: Any) -> None:
    data = _synthetic([1.0, 2.0]).to_dict()
    data["samples_ns"] = samples
    with pytest.raises(ValueError, match="samples_ns"):
        Measurement.from_dict(data)


def test_measurement_is_frozen() -> None:
    m = _synthetic([1.0])
    with pytest.raises(AttributeError):
        m.loops = 2  # type: ignore[misc]


# -- adaptive sampling: target_rel_ci and max_time_s ---------------------------------------------
def test_target_rel_ci_reached() -> None:
    # A 2 µs native spin is steady enough for ±2% well within the budget; a busy VM gets
    # ATTEMPTS tries.
    spin = _core.make_spin(2e3)
    seen = []
    for _ in range(ATTEMPTS):
        m = measure(spin, target_rel_ci=0.02, repeat=10, duration_s=None, min_time_s=0.002, max_time_s=5.0)
        seen.append((m.stop_reason, m.rel_ci, m.n))
        if m.stop_reason == "target_rel_ci":
            break
    assert m.stop_reason == "target_rel_ci", seen
    assert m.rel_ci is not None and m.rel_ci <= 0.02
    assert m.n >= 10
    assert m.target_rel_ci == 0.02
    assert not m.budget_exhausted
    assert not [w for w in m.warnings if w.startswith("precision target")]


def test_unreachable_target_stops_at_the_budget() -> None:
    t0 = time.monotonic()
    m = measure(_core.make_spin(2e3), target_rel_ci=1e-7, repeat=10, duration_s=None, min_time_s=0.002,
                max_time_s=0.3)
    wall_s = time.monotonic() - t0
    assert m.stop_reason == "max_time_s"
    assert m.budget_exhausted
    assert m.n > 10  # sampled beyond `repeat` while the target was unmet
    # The warmup samples spend the budget first; the counted ones get what is left.
    warmup_s = float(m.warmup_samples_ns.sum()) * m.loops * 1e-9
    assert 0.3 * 0.99 <= m.elapsed_s + warmup_s <= 3.0
    assert wall_s < 10.0
    assert m.target_rel_ci == 1e-7
    assert [w for w in m.warnings if w.startswith("precision target not reached")]
    # Every sample is kept: elapsed_s covers them all.
    total_s = float(np.sum(m.samples_ns * m.loops)) * 1e-9
    assert 0.99 * total_s <= m.elapsed_s < total_s + 1.0


def test_max_time_without_target() -> None:
    m = measure(_core.make_spin(2e3), repeat=100_000, duration_s=None, min_time_s=0.002, max_time_s=0.05)
    assert m.stop_reason == "max_time_s"
    assert 1 <= m.n < 100_000
    assert m.target_rel_ci is None
    assert not [w for w in m.warnings if w.startswith("precision target")]


def test_without_target_or_budget_stops_at_repeat() -> None:
    m = measure(_core.make_spin(1e3), repeat=8, duration_s=None, min_time_s=0.002)
    assert (m.stop_reason, m.n, m.target_rel_ci) == ("repeat", 8, None)


@pytest.mark.parametrize(
    ("target", "error"),
    [(0, ValueError), (0.0, ValueError), (1, ValueError), (1.0, ValueError), (-0.1, ValueError),
     (float("nan"), ValueError), (float("inf"), ValueError), ("x", TypeError), (True, TypeError),
     ([0.01], TypeError)],
)
def test_invalid_target_rel_ci(target: Any, error: type[Exception]) -> None:
    rec = Recorder()
    with pytest.raises(error, match="target_rel_ci"):
        measure(rec, target_rel_ci=target, **FAST)
    with pytest.raises(error, match="target_rel_ci"):
        timeit("pass", target_rel_ci=target, **FAST)
    assert rec.calls == 0  # checked before anything runs


def test_timeit_accepts_target_rel_ci() -> None:
    seen = []
    for _ in range(ATTEMPTS):
        m = timeit("sum(r)", setup="r = range(200)", target_rel_ci=0.05, repeat=10, duration_s=None,
                   min_time_s=0.002, max_time_s=5.0)
        seen.append((m.stop_reason, m.rel_ci))
        if m.stop_reason == "target_rel_ci":
            break
    assert m.stop_reason == "target_rel_ci", seen
    assert m.rel_ci is not None and m.rel_ci <= 0.05
    assert m.target_rel_ci == 0.05
    assert m.call_floor_kind == "statement"


def test_timeit_callable_passes_target_rel_ci_on() -> None:
    m = timeit(_core.make_spin(1e3), target_rel_ci=1e-7, repeat=6, duration_s=None, min_time_s=0.002,
               max_time_s=0.05)
    assert (m.target_rel_ci, m.stop_reason) == (1e-7, "max_time_s")
    assert m.call_floor_kind == "native"


def test_budget_ending_before_repeat_is_reported_with_a_target() -> None:
    # `repeat` is the minimum sample count when a target is given. If max_time_s ends the
    # first `repeat` samples early, the budget stopped sampling, target or not: the
    # Measurement must say so as it does without a target.
    kwargs: dict[str, Any] = {"loops": 1, "warmup": 0, "repeat": 20, "max_time_s": 0.008}
    spin = _core.make_spin(1e6)  # 1 ms per sample: about 8 fit in the budget
    plain = measure(spin, **kwargs)
    assert plain.n < 20 and plain.stop_reason == "max_time_s"
    m = measure(spin, target_rel_ci=0.5, **kwargs)
    assert m.n < 20
    assert m.stop_reason == "max_time_s", (m.n, m.rel_ci)
    assert m.budget_exhausted


# -- memory=True ------------------------------------------------------------------------------
MiB = 1 << 20


def _exact_memory_here() -> bool:
    with fastbench.memory.track(python_heap=False) as m:
        pass
    return m.exact


needs_exact_memory = pytest.mark.skipif(
    not _exact_memory_here(),
    reason="/proc/self/clear_refs cannot reset the peak RSS here (not Linux >= 4.0, or no "
           "permission): peaks are sampled lower bounds",
)


PAGE = mmap.PAGESIZE


def _allocate_40_mib() -> None:
    """40 MiB of fresh resident pages and 40 MiB on the Python heap, whatever the allocator
    holds: a 40 MiB anonymous mapping written page by page (RSS; a heap allocation could
    reuse pages that earlier tests left resident, and then RSS would not grow), and a zeroed
    40 MiB bytes object (traced by tracemalloc; CPython takes it from calloc, which leaves
    fresh pages untouched)."""
    pages = mmap.mmap(-1, 40 * MiB)
    pages[::PAGE] = b"\1" * (40 * MiB // PAGE)
    heap = bytes(40 * MiB)
    del heap
    pages.close()


def test_memory_is_none_by_default() -> None:
    assert measure(Recorder(), **FAST).memory is None
    assert timeit("pass", **FAST).memory is None


@needs_exact_memory
def test_measure_memory_of_a_40_mib_call() -> None:
    m = measure(_allocate_40_mib, memory=True, **FAST)
    assert m.memory is not None
    cm = m.memory
    assert (cm.calls, cm.warmup_calls, cm.exact) == (3, 1, True)
    assert 0.95 * 40 * MiB <= cm.median_peak_increase_bytes <= 1.10 * 40 * MiB
    assert cm.median_peak_increase_bytes <= cm.max_peak_increase_bytes <= 1.10 * 40 * MiB
    assert cm.median_python_peak_bytes is not None
    assert 40 * MiB <= cm.median_python_peak_bytes < 41 * MiB
    assert m.n == FAST["repeat"]  # the timing itself is unchanged


def test_memory_calls_come_after_the_timed_ones() -> None:
    rec = Recorder()
    m = measure(rec, 7, loops=2, warmup=1, repeat=3, duration_s=None, memory=True)
    assert rec.calls == 2 * (1 + 3) + 1 + 3  # timed (warmup + samples), then 1 + 3 tracked
    assert all(seen == ((7,), {}) for seen in rec.seen)
    assert m.memory is not None and m.memory.calls == 3


def test_memory_calls_run_with_the_gc_setting_of_the_timed_ones() -> None:
    seen: list[bool] = []
    measure(lambda: seen.append(gc.isenabled()), loops=1, warmup=0, repeat=1, duration_s=None,
            disable_gc=True, memory=True)
    assert seen == [False] * 5  # 1 timed, 1 warmup, 3 tracked
    assert gc.isenabled()


@pytest.mark.parametrize("flag", [1, "yes", None])
def test_memory_flag_must_be_a_bool(flag: Any) -> None:
    rec = Recorder()
    with pytest.raises(TypeError, match="memory must be True or False"):
        measure(rec, memory=flag, **FAST)
    with pytest.raises(TypeError, match="memory must be True or False"):
        timeit("pass", memory=flag, **FAST)
    assert rec.calls == 0  # checked before anything runs


def test_timeit_statement_memory() -> None:
    rec = Recorder()
    glob = {"record": rec}
    m = timeit("record(); b = bytearray(n)", setup="n = 40 * 2**20", globals=glob, loops=1,
               warmup=0, repeat=3, duration_s=None, memory=True)
    assert rec.calls == 3 + 1 + 3  # the statement runs once per tracked call
    assert m.memory is not None and m.memory.python_peak_bytes is not None
    # bytearray(n) is zero-filled: traced and resident.
    assert all(40 * MiB <= v < 41 * MiB for v in m.memory.python_peak_bytes)
    if m.memory.exact:
        assert 0.95 * 40 * MiB <= m.memory.median_peak_increase_bytes <= 1.10 * 40 * MiB


def test_timeit_callable_passes_memory_on() -> None:
    rec = Recorder()
    m = timeit(rec, loops=1, warmup=0, repeat=2, duration_s=None, memory=True)
    assert rec.calls == 2 + 1 + 3
    assert m.memory is not None


def test_report_prints_the_memory_line() -> None:
    from fastbench.report.text import measurement_lines

    m = measure(Recorder(), memory=True, **FAST)
    assert m.memory is not None
    lines = measurement_lines(m)
    assert lines[4:4 + len(m.memory.lines())] == m.memory.lines()
    assert lines[4].startswith("  memory per call (median of 3 tracked calls after 1 warmup, ")
    assert not any("memory per call" in line
                   for line in measurement_lines(measure(Recorder(), **FAST)))
