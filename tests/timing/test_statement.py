"""Tests for fastbench.timing.statement: timeit on statement strings (setup, globals,
multi-line code, syntax errors, exceptions), its call floor, and a callable handed to measure.
Bookkeeping is checked exactly, by counting calls.
"""

from __future__ import annotations

from typing import Any

import pytest

from fastbench import _core, timeit

from _timing_helpers import FAST, Recorder  # beside this file: pytest puts it on sys.path


# -- timeit -----------------------------------------------------------------------------------
def test_timeit_statement_with_setup() -> None:
    big = timeit("sum(r)", setup="r = range(1000)", **FAST)
    small = timeit("sum(r)", setup="r = range(10)", **FAST)
    assert big.call_floor_kind == small.call_floor_kind == "statement"
    assert big.name == "sum(r)"
    assert big.median_ns > 5 * small.median_ns
    assert big.net_median_ns > 0


def test_timeit_statement_with_globals() -> None:
    rec = Recorder()
    glob = {"record": rec, "value": 5}
    m = timeit("record(value)", globals=glob, loops=3, warmup=1, repeat=4, duration_s=None)
    assert rec.calls == 3 * (1 + 4)
    assert rec.seen[0] == ((5,), {})
    assert (m.loops, m.n, m.calibration_trials) == (3, 4, 0)


def test_timeit_setup_runs_outside_the_loop() -> None:
    counts = {"setup": 0, "stmt": 0}
    glob = {"counts": counts}
    timeit(
        "counts['stmt'] += 1",
        setup="counts['setup'] += 1",
        globals=glob,
        loops=50,
        warmup=0,
        repeat=3, duration_s=None,
    )
    assert counts["stmt"] == 50 * 3
    assert 3 <= counts["setup"] < 50


def test_timeit_multiline_statement_and_setup() -> None:
    glob: dict[str, Any] = {"out": []}
    stmt = "a = base * 2\nif a:\n    out.append(a)"
    setup = "import math\nbase = math.floor(2.5)"
    timeit(stmt, setup=setup, globals=glob, loops=2, warmup=0, repeat=1, duration_s=None)
    assert glob["out"] == [4, 4]


@pytest.mark.parametrize(
    ("stmt", "setup"), [("x = ", "pass"), ("pass", "def"), ("return 1", "pass"), ("pass", "x ==")]
)
def test_timeit_syntax_errors(stmt: str, setup: str) -> None:
    with pytest.raises(SyntaxError):
        timeit(stmt, setup, **FAST)


def test_timeit_statement_exception_propagates() -> None:
    with pytest.raises(ZeroDivisionError):
        timeit("1 / 0", **FAST)


def test_timeit_non_string_statement() -> None:
    with pytest.raises(TypeError):
        timeit(42, **FAST)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        timeit("pass", setup=42, **FAST)  # type: ignore[arg-type]


def test_timeit_callable_delegates_to_measure() -> None:
    rec = Recorder()
    m = timeit(rec, loops=5, warmup=0, repeat=2, duration_s=None)
    assert rec.calls == 10
    assert m.call_floor_kind == "python"
    assert timeit(_core.make_spin(1e3), **FAST).call_floor_kind == "native"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"repeat": 0}, ValueError), ({"clock": "bogus"}, ValueError), ({"loops": 1.5}, TypeError)],
)
def test_timeit_bad_arguments(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        timeit("pass", **kwargs)


def test_timeit_clock(clock_name: str) -> None:
    assert timeit("pass", clock=clock_name, **FAST).clock == clock_name
