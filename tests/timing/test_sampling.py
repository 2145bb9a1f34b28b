"""Tests for fastbench.timing.sampling: the run samples on while interference phases hold most
of ``duration_s``, until quiet phases fill half of it, three durations have passed or the
budget ends; a quiet run is not extended. A fake target supplies samples of known duration.
The warmup ends with the time budget, and counts beyond 2**40 are refused before any run.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import fastbench
from fastbench.timing.config import MAX_COUNT, run_config
from fastbench.timing.sampling import _wait_out_interference


# -- sampling on while interference holds the run ------------------------------------------------
class _FakeTarget:
    """Samples of 1 µs-scale calls x 100 loops following ``pattern(i)`` (ns per call), i
    counting them; each sample spends its own duration."""

    loops = 100

    def __init__(self, pattern) -> None:  # type: ignore[no-untyped-def]
        self.pattern = pattern
        self.taken = 0

    def sample(self, n: int, max_time_s: float = 0.0) -> tuple[list[float], bool, float]:
        out: list[float] = []
        spent = 0.0
        while len(out) < n and not (max_time_s > 0.0 and spent >= max_time_s):
            out.append(self.pattern(self.taken))
            spent += out[-1] * self.loops * 1e-9
            self.taken += 1
        return out, False, spent


def _run(pattern, duration_s: float, max_time_s: float | None = None):  # type: ignore[no-untyped-def]
    target = _FakeTarget(pattern)
    cfg = run_config(0, 1e-4, 1, None, "auto", True, max_time_s, duration_s=duration_s)
    samples, _, elapsed = target.sample(10**9, duration_s)
    elapsed, exhausted = _wait_out_interference(target, cfg, samples, elapsed)  # type: ignore[arg-type]
    return samples, elapsed, exhausted


def _one_in(k: int):  # type: ignore[no-untyped-def]
    """Windows of 100 samples: one in k at 1000 ns per call (10 ms), the others 1.5x slower."""
    return lambda i: 1000.0 if (i // 100) % k == 0 else 1500.0


def test_sampling_goes_on_until_quiet_phases_fill_half_the_duration() -> None:
    # a cycle is 10 ms quiet + 15 ms disturbed; 0.5 s of quiet ends 49 cycles + 10 ms in
    samples, elapsed, exhausted = _run(_one_in(2), 1.0)
    assert not exhausted
    assert 1.235 <= elapsed <= 1.235 + 0.101  # checked every tenth of duration_s
    assert elapsed == pytest.approx(sum(samples) * 100 * 1e-9)


def test_sampling_stops_at_three_durations_or_the_budget() -> None:
    _, elapsed, exhausted = _run(_one_in(10), 1.0)  # 7% quiet: 3 s give 0.21 s of it
    assert elapsed == pytest.approx(3.0, abs=2e-4) and not exhausted
    _, elapsed, exhausted = _run(_one_in(10), 1.0, max_time_s=1.5)
    assert elapsed == pytest.approx(1.5, abs=2e-4) and exhausted


def test_a_quiet_run_is_not_extended() -> None:
    _, elapsed, exhausted = _run(lambda i: 1000.0 + (i % 7), 1.0)
    assert elapsed == pytest.approx(1.0, abs=2e-4) and not exhausted


# -- the warmup within the budget, counts within range -------------------------------------------
def test_warmup_stops_when_the_time_budget_is_spent() -> None:
    # A warmup of 10**12 samples would run for days; the budget must end it. The callable
    # raises after 30 s so that a warmup ignoring the budget fails instead of hanging.
    deadline = time.monotonic() + 30.0

    def fn() -> None:
        if time.monotonic() > deadline:
            raise RuntimeError("the warmup ran past the time budget")

    started = time.monotonic()
    m = fastbench.measure(fn, warmup=10**12, repeat=5, duration_s=None, max_time_s=0.3,
                          loops=100)
    assert m.stop_reason == "max_time_s"
    assert 1 <= len(m.warmup_samples_ns) < 10**12
    assert len(m.samples_ns) >= 1
    assert time.monotonic() - started < 30.0


def test_warmup_within_the_budget_leaves_the_counted_samples_their_minimum() -> None:
    m = fastbench.measure(lambda: None, warmup=3, repeat=4, duration_s=None, max_time_s=5.0,
                          loops=10)
    assert len(m.warmup_samples_ns) == 3 and len(m.samples_ns) == 4
    assert m.stop_reason == "repeat"


@pytest.mark.parametrize("name, value", [
    ("loops", np.uint64(2**64 - 1)), ("loops", 2**40 + 1), ("repeat", 2**64),
    ("warmup", 2**64), ("repeat", np.uint64(2**63)),
])
def test_counts_beyond_two_to_the_forty_name_the_argument_and_range(name: str,
                                                                    value: object) -> None:
    settings: dict[str, object] = {"warmup": 1, "repeat": 5, "loops": None}
    settings[name] = value
    with pytest.raises(ValueError, match=rf"{name} must be from \d+ to {MAX_COUNT}, got {value}"):
        run_config(settings["warmup"], 1e-4, settings["repeat"], settings["loops"], "auto", True,
                   None)
    with pytest.raises(ValueError, match=rf"{name} must be from \d+ to {MAX_COUNT}"):
        fastbench.measure(lambda: None, **settings)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match=rf"{name} must be from \d+ to {MAX_COUNT}"):
        fastbench.timeit("pass", **settings)  # type: ignore[arg-type]


def test_counts_at_two_to_the_forty_are_accepted() -> None:
    cfg = run_config(MAX_COUNT, 1e-4, MAX_COUNT, np.uint64(MAX_COUNT), "auto", True, None)
    assert cfg.warmup == cfg.repeat == cfg.loops == 2**40
