"""Tests for fastbench.timing.sampling: the run samples on while interference phases hold most
of ``duration_s``, until quiet phases fill half of it, three durations have passed or the
budget ends; a quiet run is not extended. A fake target supplies samples of known duration.
"""

from __future__ import annotations

import pytest

from fastbench.timing.config import run_config
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
