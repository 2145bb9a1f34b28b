"""Tests for fastbench.timing.timer: Timer against a native busy-wait of known length, its
states (running, frozen, reused, never entered) and its clock argument.
"""

from __future__ import annotations

import math

import pytest

import fastbench
from fastbench import Timer, _core


# -- Timer ------------------------------------------------------------------------------------
def test_timer_measures_a_native_spin(clock_name: str) -> None:
    best = math.inf
    for _ in range(3):
        with Timer(clock=clock_name) as t:
            _core.spin(2e6)
        best = min(best, t.elapsed_ns)
        assert t.elapsed_s == t.elapsed_ns * 1e-9
    assert best == pytest.approx(2e6, rel=0.25)


def test_timer_enter_returns_itself_and_freezes_on_exit() -> None:
    timer = Timer()
    assert timer.clock == fastbench.clocks().auto
    with timer as t:
        assert t is timer
        running = t.elapsed_ns
        assert running >= 0.0
        _core.spin(1e4)
        assert t.elapsed_ns > running  # the time so far, still growing
    frozen = t.elapsed_ns
    _core.spin(1e5)
    assert t.elapsed_ns == frozen


def test_timer_can_be_reused() -> None:
    timer = Timer("steady")
    with timer:
        _core.spin(1e6)
    first = timer.elapsed_ns
    with timer:
        pass
    assert timer.elapsed_ns < first


def test_timer_not_entered() -> None:
    with pytest.raises(RuntimeError):
        Timer().elapsed_ns
    with pytest.raises(RuntimeError):
        Timer().elapsed_s
    with pytest.raises(RuntimeError):
        Timer().__exit__(None, None, None)


def test_timer_records_elapsed_when_block_raises() -> None:
    with pytest.raises(KeyError):
        with Timer() as t:
            _core.spin(1e5)
            raise KeyError("x")
    assert t.elapsed_ns >= 0.9e5


def test_timer_bad_clock() -> None:
    with pytest.raises(ValueError):
        Timer("bogus")
    with pytest.raises(TypeError):
        Timer(1)  # type: ignore[arg-type]
