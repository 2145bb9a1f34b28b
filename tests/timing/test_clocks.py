"""Tests for fastbench.clocks: the clocks table, clock selection, and the clocks themselves
checked against Python's own clocks (monotonicity, the TSC rate, steady_clock identity).
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import types

import numpy as np
import pytest

import fastbench
from fastbench import ClockSpec, ClockTable, ClockUnavailable, FastbenchError, _core

# `fastbench.clocks` is the function; the module lives in sys.modules under the same name.
clocks_module = importlib.import_module("fastbench.timing.clocks")
resolve_clock = clocks_module.resolve_clock


# -- the table --------------------------------------------------------------------------------
def test_table_lists_both_clocks() -> None:
    table = fastbench.clocks()
    assert isinstance(table, ClockTable)
    assert [spec.name for spec in table] == ["steady", "tsc"]
    assert all(isinstance(spec, ClockSpec) for spec in table.clocks)
    assert table["tsc"] is table.clocks[1]
    assert table["steady"] is table.clocks[0]


def test_table_unknown_clock_is_key_error() -> None:
    with pytest.raises(KeyError, match="bogus"):
        fastbench.clocks()["bogus"]


def test_steady_is_always_available_at_one_ghz() -> None:
    steady = fastbench.clocks()["steady"]
    assert steady.available and steady.steady and steady.invariant
    assert steady.frequency_hz == 1e9
    assert steady.calibration_spread == 0.0
    assert steady.note


def test_auto_is_one_of_the_clocks_with_a_reason() -> None:
    table = fastbench.clocks()
    assert table.auto in ("steady", "tsc")
    assert table["steady"].available
    assert table[table.auto].available
    assert isinstance(table.auto_reason, str) and table.auto_reason.strip()
    assert (table.auto, table.auto_reason) == _core.auto_clock()
    assert resolve_clock("auto") == table.auto


def test_tsc_unavailable_means_auto_is_steady_and_says_why() -> None:
    table = fastbench.clocks()
    tsc = table["tsc"]
    assert tsc.available == _core.tsc_usable()
    if tsc.available:
        assert tsc.invariant and tsc.steady
        assert tsc.calibration_spread == _core.tsc_calibration().spread_rel
    else:
        assert table.auto == "steady"
        assert tsc.note and tsc.note in table.auto_reason
        assert tsc.calibration_spread == 0.0


def test_table_to_dict_is_json_serialisable() -> None:
    table = fastbench.clocks()
    data = json.loads(json.dumps(table.to_dict()))
    assert data["auto"] == table.auto
    assert data["auto_reason"] == table.auto_reason
    assert [c["name"] for c in data["clocks"]] == ["steady", "tsc"]
    for spec, row in zip(table, data["clocks"]):
        assert ClockSpec(**row) == spec


def test_table_is_cached() -> None:
    first, second = fastbench.clocks(), fastbench.clocks()
    assert first == second


def test_clock_figures_are_positive_and_small(clock_name: str) -> None:
    spec = fastbench.clocks()[clock_name]
    assert spec.available
    for value in (spec.resolution_ns, spec.read_overhead_ns, spec.pair_overhead_ns):
        assert 0.0 < value < 10_000.0
    # Two reads cost more than one.
    assert spec.pair_overhead_ns > spec.read_overhead_ns


@pytest.mark.parametrize(
    "kind",
    ["steady", "steady_pair", "rdtsc", "lfence_rdtsc", "rdtscp", "rdtscp_lfence", "tsc_pair"],
)
def test_read_cost_of_every_kind_is_positive_and_small(kind: str) -> None:
    if kind not in ("steady", "steady_pair") and not _core.tsc_usable():
        pytest.skip("no usable TSC here")
    assert 0.0 < _core.read_cost_ns(kind, reps=200) < 10_000.0


# -- the clocks themselves --------------------------------------------------------------------
@pytest.mark.parametrize("read", ["read_start", "read_stop", "both"])
def test_clock_reads_never_go_backwards(clock_name: str, read: str) -> None:
    start, stop = _core.read_start, _core.read_stop
    if read == "read_start":
        ticks = [start(clock_name) for _ in range(20_000)]
    elif read == "read_stop":
        ticks = [stop(clock_name) for _ in range(20_000)]
    else:
        ticks = [f(clock_name) for _ in range(10_000) for f in (start, stop)]
    assert np.all(np.diff(np.asarray(ticks, dtype=np.uint64).astype(np.int64)) >= 0)
    assert ticks[-1] > ticks[0]  # and they do advance


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="steady_clock is CLOCK_MONOTONIC only on Linux"
)
def test_steady_ticks_are_clock_monotonic_nanoseconds() -> None:
    # libstdc++'s steady_clock and time.monotonic_ns both read CLOCK_MONOTONIC.
    for _ in range(1000):
        before = time.monotonic_ns()
        ticks = _core.read_start("steady")
        after = time.monotonic_ns()
        assert before <= ticks <= after


def _paired_tsc_read() -> tuple[float, int]:
    """(perf_counter ns, TSC ticks) taken as close together as possible: the tightest of
    several perf_counter brackets around one TSC read, at the bracket's midpoint."""
    best = None
    for _ in range(20):
        a = time.perf_counter_ns()
        t = _core.read_start("tsc")
        b = time.perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, 0.5 * (a + b), t)
    assert best is not None
    return best[1], best[2]


def test_tsc_frequency_agrees_with_python_clock(require_tsc: None) -> None:
    estimates = []
    for _ in range(3):
        ns0, t0 = _paired_tsc_read()
        time.sleep(0.05)
        ns1, t1 = _paired_tsc_read()
        estimates.append((t1 - t0) / ((ns1 - ns0) * 1e-9))
    hz = float(np.median(estimates))
    assert hz == pytest.approx(fastbench.clocks()["tsc"].frequency_hz, rel=0.01)


def test_ticks_to_ns(require_tsc: None) -> None:
    assert _core.ticks_to_ns("steady", 12345.0) == 12345.0
    hz = _core.tsc_calibration().hz
    assert _core.ticks_to_ns("tsc", hz) == pytest.approx(1e9, rel=1e-12)
    assert _core.ticks_to_ns("tsc", 0.0) == 0.0


# -- TSC calibration --------------------------------------------------------------------------
@pytest.mark.parametrize("windows", [3, 4, 5])
def test_calibrate_tsc_spread_fields_are_consistent(require_tsc: None, windows: int) -> None:
    cal = _core.calibrate_tsc(windows=windows, window_s=0.002)
    hz = np.asarray(cal.window_hz)
    assert len(cal.window_hz) == windows
    assert cal.window_s == 0.002
    assert cal.hz == np.median(hz)
    assert cal.spread_rel == pytest.approx((hz.max() - hz.min()) / cal.hz, rel=1e-12)
    mad_rel = np.median(np.abs(hz - cal.hz)) / cal.hz
    assert cal.mad_rel == pytest.approx(mad_rel, rel=1e-12, abs=1e-18)
    assert cal.spread_rel >= cal.mad_rel >= 0.0
    assert cal.hz == pytest.approx(_core.tsc_calibration().hz, rel=0.01)


def test_process_calibration_is_cached_and_matches_table(require_tsc: None) -> None:
    a, b = _core.tsc_calibration(), _core.tsc_calibration()
    assert a.hz == b.hz and a.window_hz == b.window_hz
    assert len(a.window_hz) == 7 and a.window_s == 0.01
    assert a.hz == np.median(a.window_hz)
    assert fastbench.clocks()["tsc"].frequency_hz == a.hz
    assert _core.clock_info("tsc").frequency_hz == a.hz


# -- resolve_clock ----------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [None, 1, b"tsc", ["tsc"]])
def test_resolve_clock_non_str_is_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        resolve_clock(bad)


@pytest.mark.parametrize("bad", ["bogus", "", "TSC", "Steady", "auto "])
def test_resolve_clock_unknown_is_value_error(bad: str) -> None:
    with pytest.raises(ValueError, match="unknown clock"):
        resolve_clock(bad)


def test_resolve_clock_known_names(clock_name: str) -> None:
    assert resolve_clock(clock_name) == clock_name


def test_resolve_clock_unavailable_is_clock_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulate a machine whose TSC is not usable: the core reports it, Python raises.
    fake_info = types.SimpleNamespace(available=False, note="simulated: no invariant TSC")

    def clock_info(name: str) -> object:
        return fake_info if name == "tsc" else _core.clock_info(name)

    fake_core = types.SimpleNamespace(clock_info=clock_info, auto_clock=_core.auto_clock)
    monkeypatch.setattr(clocks_module, "_core", fake_core)
    with pytest.raises(ClockUnavailable, match="simulated: no invariant TSC") as info:
        resolve_clock("tsc")
    assert isinstance(info.value, FastbenchError) and isinstance(info.value, ValueError)
    assert resolve_clock("steady") == "steady"


def test_clock_unavailable_on_this_machine() -> None:
    if _core.tsc_usable():
        pytest.skip("the TSC is usable here; covered by the simulated test")
    with pytest.raises(ClockUnavailable):
        resolve_clock("tsc")


def test_clock_spec_is_frozen() -> None:
    spec = fastbench.clocks()["steady"]
    with pytest.raises(AttributeError):
        spec.frequency_hz = 2.0  # type: ignore[misc]
