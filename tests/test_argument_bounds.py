"""Arguments that once hung, ran out of memory or did seconds of work before failing: each is
refused at the public edge, before any work, with the parameter's real name. Where "before
any work" matters, the work that would come first is replaced by a function that fails the
test if it is reached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastbench
from fastbench import compare_instruction_counts, roofline, suite
from fastbench.counters import InstructionCount
from fastbench.results import ResultsFileError


def _never() -> None:
    raise AssertionError("the work ran before the arguments were checked")


def test_a_sample_time_beyond_a_minute_is_refused() -> None:
    # min_time_s=1e9 ran until interrupted: every sample waits for it.
    with pytest.raises(ValueError, match=r"min_time_s must be at most 60 seconds"):
        fastbench.measure(_never, min_time_s=1e9)


@pytest.mark.parametrize("call", [
    lambda: fastbench.measure("os:getpid", processes=10**6),
    lambda: fastbench.compare({"a": "pass", "b": "pass"}, processes=10**6),
    lambda: fastbench.measure("os:getpid", metric="instructions", processes=10**6),
])
def test_a_million_processes_is_refused(call: object) -> None:
    with pytest.raises(ValueError, match=r"processes must be from 1 to 10000, got 1000000"):
        call()  # type: ignore[operator]


def test_a_server_rate_or_run_that_cannot_fit_is_refused() -> None:
    # server(f, 1e12) tried to allocate 7.28 TiB of arrival times.
    with pytest.raises(ValueError, match=r"rate_qps must be at most 1e\+07"):
        suite.server(_never, 1e12)
    with pytest.raises(ValueError, match=r"asks for 100,000,000 queries"):
        suite.server(_never, 1e6, min_duration_s=100.0, max_time_s=200.0)
    with pytest.raises(ValueError, match=r"min_duration_s=100.0 cannot be reached"):
        suite.server(_never, 10.0, min_duration_s=100.0)
    with pytest.raises(ValueError, match=r"min_queries must be from 2 to 10000000"):
        suite.server(_never, 10.0, min_queries=10**9)


def test_instruction_counts_must_be_given_by_name() -> None:
    ic = InstructionCount(name="x", per_call=1000.0, runs=(1000.0,), source="pmu", calls=10,
                          estimated_cycles=None, events={}, wall_s=0.1)
    # Was: TypeError: argument of type 'InstructionCount' is not iterable.
    with pytest.raises(TypeError, match=r"candidates must be a mapping of name to "
                                        r"InstructionCount \(e.g. \{'new': count\}\)"):
        compare_instruction_counts(ic, ic)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="baseline must be an InstructionCount"):
        compare_instruction_counts({"a": ic}, {"b": ic})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not one: \['b'\]"):
        compare_instruction_counts(ic, {"b": 3})  # type: ignore[dict-item]


def test_a_placement_is_checked_before_the_roofline_is_calibrated(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from fastbench.roofline import calibration

    monkeypatch.setattr(calibration, "calibrate", lambda **_: _never())
    for bad in ({"flops": -1.0, "bytes": 8.0, "seconds": 1.0},
                {"flops": 1.0, "bytes": 0.0, "seconds": 1.0},
                {"flops": 1.0, "bytes": 8.0, "seconds": float("nan")},
                {"flops": 1.0, "bytes": 8.0}):
        with pytest.raises(ValueError):
            roofline.place(**bad)  # type: ignore[arg-type]


def test_a_negative_power_is_refused_before_the_suite_times_anything() -> None:
    calls: list[int] = []

    def variant(x: np.ndarray) -> np.ndarray:
        calls.append(1)
        return x

    with pytest.raises(ValueError, match=r"watts_per_core must be > 0 W, got -1"):
        suite.run({"baseline": variant}, np.zeros(4), watts_per_core=-1)
    assert calls == []


def test_a_fifo_is_not_read_as_a_results_file(tmp_path: Path) -> None:
    # Opening a FIFO waits for a writer: `fastbench compare A.json FIFO` blocked forever.
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    with pytest.raises(ResultsFileError, match=r"results.json is a FIFO, not a results file"):
        fastbench.load(fifo)
    with pytest.raises(ResultsFileError, match="is a directory"):
        fastbench.load(tmp_path)
    saved = tmp_path / "a.json"
    fastbench.save(fastbench.Measurement(
        samples_ns=np.linspace(1000.0, 1010.0, 20), loops=10, warmup_samples_ns=np.empty(0),
        clock="tsc", overhead_ns=0.5, overhead_mad_ns=0.1, call_floor_ns=20.0,
        call_floor_mad_ns=1.0, name="a"), saved)
    done = subprocess.run([sys.executable, "-m", "fastbench", "compare", str(saved), str(fifo)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "is a FIFO, not a results file" in done.stderr
