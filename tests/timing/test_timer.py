"""Tests for fastbench.timing.timer: Timer against a native busy-wait of known length, its
states (running, frozen, reused, never entered) and its clock argument.
"""

from __future__ import annotations

import math
import re

import pytest

import fastbench
from fastbench import Timer, _core


# -- Timer ------------------------------------------------------------------------------------
def test_timer_measures_a_native_spin(clock_name: str) -> None:
    best = math.inf
    # The spin waits for the clock, so preemption only makes a block longer: on a busy
    # machine most 2 ms blocks are preempted, so keep trying (up to 50) until one is not.
    for _ in range(50):
        with Timer(clock=clock_name) as t:
            _core.spin(2e6)
        best = min(best, t.elapsed_ns)
        assert t.elapsed_s == t.elapsed_ns * 1e-9
        if best <= 1.25 * 2e6:
            break
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


# -- elapsed_ms and repr ----------------------------------------------------------------------
_UNIT_NS = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}


def test_timer_elapsed_ms() -> None:
    with Timer("steady") as t:
        _core.spin(1e6)
    assert t.elapsed_ms == pytest.approx(t.elapsed_ns / 1e6, rel=1e-12)
    assert t.elapsed_ms == pytest.approx(t.elapsed_s * 1e3, rel=1e-12)
    assert t.elapsed_ms >= 0.9  # at least the 1 ms spin
    with pytest.raises(RuntimeError, match="not started"):
        Timer().elapsed_ms


def test_timer_repr_in_each_state() -> None:
    timer = Timer("steady")
    assert repr(timer) == "Timer(not started, clock='steady')"
    with timer:
        assert repr(timer) == "Timer(running, clock='steady')"
        _core.spin(2e6)
    shown = re.fullmatch(r"Timer\(elapsed=([0-9.]+) (ns|µs|ms|s), clock='steady'\)", repr(timer))
    assert shown is not None, repr(timer)
    # Four significant digits of the frozen figure, in the unit that reads best.
    assert float(shown[1]) * _UNIT_NS[shown[2]] == pytest.approx(timer.elapsed_ns, rel=1e-3)
    assert shown[2] in ("ms", "s")  # a 2 ms spin is not shown in ns or µs


def test_elapsed_is_in_milliseconds_beside_the_explicit_units() -> None:
    with fastbench.Timer() as t:
        _core.spin(2e6)  # a busy-wait of 2 ms on the clock: the block lasts at least that
    assert t.elapsed == t.elapsed_ms == pytest.approx(t.elapsed_ns / 1e6)
    assert t.elapsed_s == pytest.approx(t.elapsed / 1e3)
    assert t.elapsed >= 2.0 * 0.99
