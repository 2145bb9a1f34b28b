"""fastbench.counters.events: names, availability with reasons, counted regions, derived metrics."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import time

import pytest

import fastbench
from fastbench import _core
from fastbench.counters import CounterResult, EventCount, check_events, events

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="perf_event is Linux-only")


def _count(name: str, value: float) -> EventCount:
    return EventCount(name, value, int(value), 100, 100, 1.0, False, 0.0)


def test_derived_metrics_from_known_counts() -> None:
    r = CounterResult({n: _count(n, v) for n, v in {
        "instructions": 3000.0, "cycles": 1500.0, "branches": 400.0, "branch-misses": 10.0,
        "cache-references": 200.0, "cache-misses": 50.0}.items()}, calls=10)
    d = r.derived
    assert d["ipc"] == 2.0 and d["cycles_per_instruction"] == 0.5
    assert d["branch_miss_pct"] == 2.5 and d["cache_miss_pct"] == 25.0
    assert d["instructions_per_call"] == 300.0 and d["cycles_per_call"] == 150.0


def test_derived_metrics_need_their_inputs() -> None:
    r = CounterResult({"task-clock": _count("task-clock", 5.0)})
    assert r.derived == {}
    assert r["task-clock"] == 5.0 and r.values == {"task-clock": 5.0}


def test_unknown_names_suggest_the_closest() -> None:
    with pytest.raises(ValueError, match=r"did you mean 'cycles'\?.*valid names: .*instructions"):
        check_events(["cylces"])
    with pytest.raises(TypeError):
        check_events("cycles")
    with pytest.raises(ValueError):
        check_events([])
    assert check_events(["r00c0", "4:0x3c", "task-clock"]) == ["r00c0", "4:0x3c", "task-clock"]


def test_bad_policy_and_calls() -> None:
    with pytest.raises(ValueError):
        fastbench.counters.count(["task-clock"], missing="ignore")
    with pytest.raises(ValueError):
        fastbench.counters.count(["task-clock"], calls=0)


@linux_only
def test_available_lists_every_known_event_with_a_reason_when_missing() -> None:
    table = fastbench.counters.available()
    assert [a.name for a in table] == fastbench.counters.event_names()
    for a in table:
        assert a.available == (a.reason == "")


@linux_only
def test_task_clock_counts_a_known_spin() -> None:
    _core.spin(1e3)  # TSC calibration outside the counted region
    # The oracle is this thread's CPU time, the quantity task-clock counts: spin until 20 ms
    # of it have passed (a wall-clock spin gets less CPU time on a shared core).
    cpu0 = time.thread_time_ns()
    with fastbench.counters.count(["task-clock"], missing="skip") as c:
        while time.thread_time_ns() - cpu0 < 20_000_000:
            _core.spin(1e6)
    cpu_ns = time.thread_time_ns() - cpu0
    if "task-clock" in c.skipped:
        pytest.skip(c.skipped["task-clock"])
    assert 0.9 * 20e6 <= c.values["task-clock"] <= cpu_ns + 2e6
    assert c.result.counts["task-clock"].running_fraction == pytest.approx(1.0)
    # A software event is never on a hardware counter: read(2), and the result says why.
    assert c.result.read_path == "read"
    assert c.result.read_path_reason.startswith("software events are not on hardware counters")
    assert "task-clock" in c.result.read_path_reason


@linux_only
def test_the_empty_region_is_calibrated_once_per_event_set(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = _core.calibrate_read_overhead

    def counting(group: _core.CounterGroup, reps: int = 101) -> list[_core.CounterOverhead]:
        calls.append(reps)
        return real(group, reps)

    monkeypatch.setattr(events, "_overhead_cache", {})
    monkeypatch.setattr(_core, "calibrate_read_overhead", counting)
    for _ in range(3):
        with fastbench.counters.count(["task-clock", "page-faults"], missing="skip") as c:
            pass
    if c.skipped:
        pytest.skip(str(c.skipped))
    assert len(calls) == 1
    first = c.result.counts["task-clock"].overhead
    with fastbench.counters.count(["page-faults"], missing="skip"):
        pass
    assert len(calls) == 2  # another set calibrates its own
    with fastbench.counters.count(["task-clock", "page-faults"], missing="skip") as again:
        pass
    assert again.result.counts["task-clock"].overhead == first


@linux_only
def test_missing_events_raise_with_reasons_or_are_skipped() -> None:
    _core._inject_open_errno(errno.ENOENT, 1)  # the first open (the first event) fails
    try:
        with pytest.raises(fastbench.CountersUnavailable) as info:
            with fastbench.counters.count(["page-faults", "task-clock"]):
                pass
    finally:
        _core._inject_open_errno(0, 0)
    assert info.value.missing == {"page-faults": "no hardware PMU exposed (typical of VMs and containers)"}
    assert "missing='skip'" in str(info.value)

    _core._inject_open_errno(errno.EACCES, 1)
    try:
        with fastbench.counters.count(["page-faults", "task-clock"], missing="skip") as c:
            _core.spin(1e6)
    finally:
        _core._inject_open_errno(0, 0)
    assert "perf_event_paranoid" in c.skipped["page-faults"]
    assert "page-faults" not in c.values and "task-clock" in c.values


def test_result_before_the_block_ends_is_an_error() -> None:
    c = fastbench.counters.count(["task-clock"])
    with pytest.raises(RuntimeError):
        _ = c.result


_SOFTWARE = ["task-clock", "page-faults", "context-switches"]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@linux_only
def test_finished_count_closes_its_perf_descriptors() -> None:
    with fastbench.counters.count(_SOFTWARE, missing="skip") as first:  # calibrates the set
        pass
    if first.skipped:
        pytest.skip(str(first.skipped))
    before = _open_fds()
    kept = []
    for _ in range(50):
        with fastbench.counters.count(_SOFTWARE) as c:
            _core.spin(1e4)
        kept.append(c)
    # Each open group holds at least one descriptor per event (150 here): a finished one none.
    assert _open_fds() - before <= 3
    assert all(set(k.values) == set(_SOFTWARE) for k in kept)  # the results stay readable


_MANY_KEPT = """
import resource, sys
import fastbench
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
kept = []
for _ in range(400):
    with fastbench.counters.count(%r) as c:
        pass
    kept.append(c)
print(len(kept), sorted(kept[-1].values))
""" % (_SOFTWARE,)


@linux_only
def test_kept_count_results_do_not_exhaust_file_descriptors() -> None:
    with fastbench.counters.count(_SOFTWARE, missing="skip") as probe:
        pass
    if probe.skipped:
        pytest.skip(str(probe.skipped))
    # 64 descriptors: the 20th kept result would fail with EMFILE if each kept its group open.
    r = subprocess.run([sys.executable, "-c", _MANY_KEPT], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "400"
