"""The run log (fastbench.machine.runlog): what saving single-run results writes, what it
reads back, and the comparisons that judge single runs against it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import fastbench
from fastbench import Measurement, compare_measurements
from fastbench.machine import runlog
from fastbench.machine.runlog import (
    KEEP_RUNS,
    logged_runs,
    record_runs,
    results_key,
    run_log_path,
)
from fastbench.results import load, save


@pytest.fixture
def log_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FASTBENCH_RUN_LOG", "1")
    return tmp_path


def _single(median_ns: float, workload: str = "statement:abc", n: int = 41) -> Measurement:
    """A single-run measurement whose median is ``median_ns`` (a few samples around it)."""
    wobble = np.array([(-1.0) ** i for i in range(n - 1)] + [0.0])  # median exactly 0
    samples = median_ns * (1.0 + 0.0005 * wobble)
    return Measurement(samples_ns=samples, loops=10, warmup_samples_ns=np.empty(0),
                       clock="steady", overhead_ns=0.0, overhead_mad_ns=0.0, call_floor_ns=0.0,
                       call_floor_mad_ns=0.0, name="bench", workload=workload)


def test_runs_come_back_in_order_once_each(log_on: Path) -> None:
    assert logged_runs("w") == ()
    assert record_runs([("w", 10.0), ("w", 12.0), ("v", 5.0)]) == 3
    assert record_runs([("w", 12.0), ("w", 11.0), ("", 3.0), ("w", math.nan), ("w", -1.0)]) == 1
    assert logged_runs("w") == (10.0, 12.0, 11.0)
    assert logged_runs("v") == (5.0,)
    assert run_log_path().parent == log_on


def test_the_newest_runs_are_kept_and_a_large_log_is_compacted(
        log_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runlog, "_COMPACT_BYTES", 4000)
    for i in range(KEEP_RUNS + 30):
        record_runs([("w", 100.0 + i), ("v", 1.0 + i)])
    assert logged_runs("w") == tuple(100.0 + i for i in range(30, KEEP_RUNS + 30))
    lines = run_log_path().read_text().splitlines()
    assert len(lines) < 2 * KEEP_RUNS + 30  # compacted at least once along the way


def test_broken_lines_are_skipped(log_on: Path) -> None:
    record_runs([("w", 10.0)])
    with open(run_log_path(), "a") as f:
        f.write("not json\n" + json.dumps({"workload": "w"}) + "\n{\"workload\": \"w\", ")
    record_runs([("w", 11.0)])
    assert logged_runs("w") == (10.0, 11.0)


def test_off_means_nothing_written_or_read(log_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record_runs([("w", 10.0)])
    monkeypatch.setenv("FASTBENCH_RUN_LOG", "0")
    assert record_runs([("w", 11.0)]) == 0
    assert logged_runs("w") == ()
    monkeypatch.setenv("FASTBENCH_RUN_LOG", "1")
    assert logged_runs("w") == (10.0,)


def test_saving_feeds_the_log_single_runs_and_whole_results_apart(log_on: Path) -> None:
    save(_single(1000.0), log_on / "a.json")
    save({"x": _single(1010.0), "y": _single(2000.0, "statement:other")}, log_on / "b.json")
    save([_single(1020.0), _single(990.0, "")], log_on / "c.json")  # "": an unknown workload
    several = Measurement.from_runs([_single(1000.0), _single(1030.0), _single(970.0)])
    save(several, log_on / "d.json")
    save(_single(1000.0), log_on / "e.json")  # the same result again
    assert logged_runs("statement:abc") == (1000.0, 1010.0, 1020.0)
    assert logged_runs("statement:other") == (2000.0,)
    # A result of 3 processes goes under its own key: its run-level median, the geometric
    # mean of its runs' medians.
    assert results_key("statement:abc", 3) == "statement:abc|processes=3"
    assert logged_runs("statement:abc|processes=3") == (several.median_ns,)
    assert several.median_ns == pytest.approx((1000.0 * 1030.0 * 970.0) ** (1 / 3))
    assert load(log_on / "a.json").workload == "statement:abc"  # type: ignore[union-attr]


def test_workload_keys_name_the_work() -> None:
    t = dict(duration_s=0.02, min_time_s=0.001)
    a = fastbench.timeit("sum(r)", "r = range(100)", **t)
    b = fastbench.timeit("sum(r)", "r = range(100)", **t)
    c = fastbench.timeit("sum(r)", "r = range(110)", **t)
    assert a.workload == b.workload != c.workload and a.workload.startswith("statement:")
    f = fastbench.measure(sorted, [3, 1, 2], **t)
    g = fastbench.measure(sorted, (3, 1, 2), **t)
    h = fastbench.measure(sorted, [3, 1, 2, 0], **t)
    assert f.workload == h.workload != g.workload  # argument types, not values
    assert Measurement.from_dict(f.to_dict()).workload == f.workload
    old = f.to_dict()
    del old["workload"]
    assert Measurement.from_dict(old).workload == ""  # files from before keys were kept


def test_single_runs_are_judged_against_their_workloads_log(log_on: Path) -> None:
    rng = np.random.default_rng(21)
    medians = 1000.0 * np.exp(rng.normal(0.0, 0.05, 12))
    for i, x in enumerate(medians):
        save(_single(float(x)), log_on / f"r{i}.json")
    a, b = load(log_on / "r10.json"), load(log_on / "r11.json")
    assert isinstance(a, Measurement) and isinstance(b, Measurement)
    c = compare_measurements(a, {"b": b})
    r = c.results["b"]
    steps = np.diff(np.log(medians))
    want = math.sqrt(float(np.sum(steps**2)) / (2 * steps.size))
    assert r.level == "variation" and r.run_variation == pytest.approx(want, rel=1e-9)
    assert a.run_variation is None  # built by hand here: it carries nothing
    # A difference a single run cannot tell names where the variation came from.
    if r.verdict == "cannot tell":
        assert any("this benchmark's 12 saved runs here vary by about" in w
                   for w in r.warnings)
    # A difference far beyond it is found; a variation given by hand still wins.
    fast = _single(float(medians[-1]) * 0.5)
    assert compare_measurements(a, {"fast": fast}).results["fast"].verdict == "faster"
    given = compare_measurements(a, {"b": b}, run_variation=0.001).results["b"]
    assert given.run_variation == 0.001


def test_two_saved_runs_can_only_say_cannot_tell(log_on: Path) -> None:
    save(_single(1000.0), log_on / "a.json")
    save(_single(1300.0), log_on / "b.json")
    a, b = load(log_on / "a.json"), load(log_on / "b.json")
    assert isinstance(a, Measurement) and isinstance(b, Measurement)
    r = compare_measurements(a, {"b": b}).results["b"]
    assert r.verdict == "cannot tell"  # the pair is all the log knows: t with 1 df
    assert any("this benchmark's 2 saved runs here" in w for w in r.warnings)


def _result(level_ns: float, seed: int, runs: int = 5, spread: float = 0.005) -> Measurement:
    """A result of ``runs`` processes around ``level_ns``: each run's median drawn with a
    relative SD of ``spread`` (the processes of one invocation)."""
    rng = np.random.default_rng(seed)
    return Measurement.from_runs([_single(float(level_ns * math.exp(rng.normal(0.0, spread))))
                                  for _ in range(runs)])


def test_results_of_several_processes_are_judged_against_how_saved_results_vary(
        log_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each invocation shifts its whole result by an offset of about 4% that its 5 runs
    (0.5% apart) share. Two results 6% apart look very different to Welch's test on their
    runs; against the spread of the 12 saved results they are not."""
    rng = np.random.default_rng(7)
    offsets = [*rng.normal(0.0, 0.04, 10), 0.0, 0.06]
    for i, off in enumerate(offsets):
        save(_result(1000.0 * math.exp(off), seed=100 + i), log_on / f"r{i}.json")
    a, b = load(log_on / "r10.json"), load(log_on / "r11.json")
    assert isinstance(a, Measurement) and isinstance(b, Measurement) and a.runs == 5
    figures = np.log(logged_runs(results_key(a.workload, 5)))
    assert figures.size == 12
    judged = compare_measurements(a, {"b": b}).results["b"]
    steps = np.diff(figures)
    sd = math.sqrt(float(np.sum(steps**2)) / (2 * steps.size))
    assert judged.level == "runs" and "against the spread of saved results" in judged.test
    assert judged.verdict == "no significant difference"
    assert any(f"vary by about {sd * 100:.1f}% between invocations" in w
               for w in judged.warnings)
    # The interval is sqrt(2) times that spread wide on each side, on t with its df.
    lo, hi = judged.speedup_ci or (0.0, 0.0)
    assert math.log(hi / lo) / 2 > 1.959964 * math.sqrt(2) * sd
    # Without the log, the runs alone call it slower, and say what they cannot see.
    monkeypatch.setenv("FASTBENCH_RUN_LOG", "0")
    alone = compare_measurements(a, {"b": b}).results["b"]
    assert alone.verdict == "slower" and alone.test == "welch t (run medians)"
    assert any("shared one invocation" in w for w in alone.warnings)
