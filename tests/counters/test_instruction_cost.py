"""fastbench.counters.instructions: what a simulated count costs, said before a long one
(estimate_count_s, cost_notice, notice=), and max_calls, the bound on the calls counted.

The estimate is checked against its formula on hand-worked inputs; the notice and the bound
against a stand-in for valgrind that records what it was asked (no valgrind needed); one
slow test counts for real and checks that the instructions counted scale with the calls
allowed.
"""

from __future__ import annotations

import math
import shutil
from types import SimpleNamespace
from typing import Any

import pytest

import _instruction_workloads as work  # tests/counters is on sys.path (pytest's rootdir import)
from fastbench.counters import count_instructions, count_statement_instructions
from fastbench.counters import count_cost as cost
from fastbench.counters import instructions as ins
from fastbench.units import format_ns


@pytest.fixture
def hand_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    """Round figures in place of the measured ones, so the expected costs work by hand."""
    monkeypatch.setattr(cost, "VALGRIND_SLOWDOWN", 50.0)
    monkeypatch.setattr(cost, "VALGRIND_STARTUP_S", 2.0)


@pytest.mark.parametrize("per_call_ns, calls, runs, parallel, expected_s", [
    (0.0, 10, 1, 1, 2.0),                 # nothing but the start-up
    (1e6, 10, 1, 1, 2.0 + 50 * 0.01),     # 10 calls of 1 ms: 0.01 s natively, x 50
    (100e6, 10, 1, 1, 2.0 + 50 * 1.0),    # 10 calls of 100 ms: 52 s
    (2e6, 10, 5, 2, 3 * (2.0 + 1.0)),     # 5 runs, 2 at a time: 3 waves of 3 s
    (2e6, 10, 4, 4, 1 * (2.0 + 1.0)),     # all 4 at once: one wave
    (2e6, 10, 3, 1, 3 * (2.0 + 1.0)),     # one at a time
])
def test_the_estimate_follows_its_formula(hand_constants: None, per_call_ns: float, calls: int,
                                          runs: int, parallel: int, expected_s: float) -> None:
    assert cost.estimate_count_s(per_call_ns, calls, runs, parallel) == pytest.approx(
        expected_s, rel=1e-12)


def test_the_notice_states_the_cost_and_how_it_is_made_up(hand_constants: None) -> None:
    # 5 runs, 2 at a time, of 10 calls of 95 ms: 3 x (2 + 10 x 0.095 x 50) = 148.5 s.
    line = cost.cost_notice("work", 95e6, 10, 5, 2)
    assert line.startswith(f"counting work under valgrind: expect about "
                           f"{format_ns(148.5e9, 2)}, ")
    assert "(2 s start-up + 10 calls x 95.0 ms x 50 (valgrind's slowdown)) x 3 runs" in line
    assert "max_calls (--max-calls) below 10" in line
    # One call: nothing to cut.
    assert "max_calls" not in cost.cost_notice("work", 95e6, 1, 1, 1)


class FakeValgrind:
    """Stands in for the simulation: records each request among the events a test reads, and
    returns an instruction count of ``per_call`` per call."""

    def __init__(self, events: list[tuple[str, Any]], per_call: float = 1000.0) -> None:
        self.events, self.per_call = events, per_call

    def __call__(self, *args: Any, calls: int, **kwargs: Any) -> SimpleNamespace:
        self.events.append(("count", calls))
        return SimpleNamespace(events={"Ir": self.per_call}, valgrind_version="3.19.0",
                               notes=())


@pytest.fixture
def fake_valgrind(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    monkeypatch.setattr(ins, "valgrind_path", lambda: "/usr/bin/valgrind")
    monkeypatch.setattr(ins, "simulate", FakeValgrind(events))
    monkeypatch.setattr(ins, "simulate_statement", FakeValgrind(events))
    return events


def test_the_notice_comes_before_the_count_starts(fake_valgrind: list[tuple[str, Any]],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost, "LONG_COUNT_S", 0.0)  # every count is long
    got = count_instructions(sum, range(100), runs=3, source="simulated",
                             notice=lambda line: fake_valgrind.append(("notice", line)))
    assert [kind for kind, _ in fake_valgrind] == ["notice", "count", "count", "count"]
    line = fake_valgrind[0][1]
    assert line.startswith("counting sum under valgrind: expect about ")
    assert f"{got.calls} calls x " in line
    fake_valgrind.clear()
    count_statement_instructions("sum(r)", "r = range(100)", calls=20, source="simulated",
                                 notice=lambda line: fake_valgrind.append(("notice", line)))
    assert [kind for kind, _ in fake_valgrind] == ["notice", "count"]
    assert "counting sum(r) under valgrind" in fake_valgrind[0][1]


def test_a_short_count_says_nothing(fake_valgrind: list[tuple[str, Any]],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost, "LONG_COUNT_S", math.inf)
    count_instructions(sum, range(100), calls=5, source="simulated",
                       notice=lambda line: fake_valgrind.append(("notice", line)))
    assert fake_valgrind == [("count", 5)]


def test_max_calls_bounds_the_calls_counted(fake_valgrind: list[tuple[str, Any]]) -> None:
    # sum(range(100)) takes about a microsecond: 20 ms would be 10000 calls (the cap), fewer
    # on a busy machine, never fewer than 10.
    free = count_instructions(sum, range(100), source="simulated")
    assert 10 <= free.calls <= 10_000 and fake_valgrind == [("count", free.calls)]
    fake_valgrind.clear()
    bounded = count_instructions(sum, range(100), source="simulated", max_calls=7)
    assert bounded.calls == 7 and fake_valgrind == [("count", 7)]
    fake_valgrind.clear()
    stmt = count_statement_instructions("sum(r)", "r = range(100)", source="simulated",
                                        max_calls=3, runs=2)
    assert stmt.calls == 3 and fake_valgrind == [("count", 3), ("count", 3)]
    # A bound above the most that is ever picked leaves the pick as it is.
    fake_valgrind.clear()
    loose = count_instructions(sum, range(100), source="simulated", max_calls=10**6)
    assert 10 <= loose.calls <= 10_000


def test_bad_bounds_and_notices_fail_before_anything_runs(
        fake_valgrind: list[tuple[str, Any]]) -> None:
    with pytest.raises(ValueError, match="max_calls must be >= 1"):
        count_instructions(sum, range(3), max_calls=0, source="simulated")
    with pytest.raises(TypeError, match="max_calls"):
        count_instructions(sum, range(3), max_calls=2.5, source="simulated")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="calls=20 exceeds max_calls=10"):
        count_statement_instructions("pass", calls=20, max_calls=10, source="simulated")
    with pytest.raises(TypeError, match="notice must be callable"):
        count_instructions(sum, range(3), notice="stderr", source="simulated")  # type: ignore[arg-type]
    assert fake_valgrind == []


def test_the_bound_reaches_counts_made_through_measure_timeit_and_compare(
        fake_valgrind: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    import fastbench

    monkeypatch.setattr(ins, "_resolve_source", lambda source: ("simulated", ""))
    assert fastbench.measure(sum, range(100), metric="instructions", max_calls=4).calls == 4
    assert fastbench.timeit("sum(r)", "r = range(100)", metric="instructions",
                            max_calls=5).calls == 5
    c = fastbench.compare({"a": (sum, (range(100),)), "b": "sum(range(100))"},
                          metric="instructions", max_calls=6)
    assert fake_valgrind == [("count", 4), ("count", 5), ("count", 6), ("count", 6)]
    assert c.counts["a"].calls == c.counts["b"].calls == 6


@pytest.mark.slow  # two real counts under valgrind: about 10 s
def test_the_instructions_counted_scale_with_the_calls_allowed() -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (apt install valgrind)")
    few = count_instructions(work.spin, 100, max_calls=5, source="simulated")
    many = count_instructions(work.spin, 100, max_calls=50, source="simulated")
    assert (few.calls, many.calls) == (5, 50)
    # work.spin allocates nothing, so every call executes the same instructions: the total
    # counted (per call x calls) grows 10x with 10x the calls, but for the one-off cost of
    # the first call spread over them (measured: 9.95x).
    assert (many.per_call * many.calls) / (few.per_call * few.calls) == pytest.approx(
        10.0, rel=0.05)
