"""The perf_event layer of the native core, through its binding: availability with reasons,
software counts of known work, multiplex arithmetic, injected failures, the read path
(rdpmc or read(2)) and why."""

from __future__ import annotations

import errno
import math
import mmap
import sys
import time
from pathlib import Path

import pytest

from fastbench import _core

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="perf_event is Linux-only")


def test_scale_count_arithmetic() -> None:
    full = _core.scale_count(1000, 200, 200)
    assert (full.counted, full.value, full.running_fraction, full.scaled) == (True, 1000.0, 1.0, False)
    half = _core.scale_count(1000, 200, 100)
    assert half.counted and half.scaled
    assert half.value == pytest.approx(2000.0) and half.running_fraction == pytest.approx(0.5)
    never = _core.scale_count(0, 200, 0)
    assert not never.counted and math.isnan(never.value)  # never a silent zero


def test_subtract_overhead_clamps() -> None:
    assert _core.subtract_overhead(10.0, 3.0) == (7.0, False)
    assert _core.subtract_overhead(3.0, 10.0) == (0.0, True)
    with pytest.raises(ValueError):
        _core.subtract_overhead(1.0, -1.0)


def test_known_names_and_unknown_name() -> None:
    names = _core.known_event_names()
    for name in ("cycles", "instructions", "task-clock", "page-faults", "context-switches"):
        assert name in names
    with pytest.raises(ValueError, match="unknown event"):
        _core.probe_event("cycels")


@linux_only
def test_software_event_is_available() -> None:
    probe = _core.probe_event("task-clock")
    if not probe.available:
        pytest.skip(f"task-clock unavailable here: {probe.reason}")
    assert probe.error == 0 and probe.reason == ""


@linux_only
def test_hardware_event_is_available_or_says_why() -> None:
    probe = _core.probe_event("cycles")
    if probe.available:
        assert probe.reason == ""
    else:
        assert probe.error != 0 and probe.reason
        if probe.error == errno.ENOENT:
            assert "no hardware PMU" in probe.reason


@linux_only
@pytest.mark.parametrize(
    ("err", "phrase"),
    [(errno.ENOENT, "no hardware PMU"), (errno.EACCES, "perf_event_paranoid"),
     (errno.EPERM, "perf_event_paranoid"), (errno.EINVAL, "unsupported"),
     (errno.ENOSYS, "not available")],
)
def test_injected_errno_gives_the_documented_reason(err: int, phrase: str) -> None:
    _core._inject_open_errno(err, 1)
    try:
        probe = _core.probe_event("task-clock")
    finally:
        _core._inject_open_errno(0, 0)
    assert not probe.available and probe.error == err
    assert phrase in probe.reason
    assert phrase in _core.perf_open_error_reason(err)


@linux_only
def test_permission_advice_never_asks_for_the_level_already_set() -> None:
    # Lowering perf_event_paranoid to 2 helps only when it is above 2: at 2 or below the
    # refusal came from something else, and the advice must say so.
    try:
        level = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        pytest.skip("perf_event_paranoid cannot be read here")
    reason = _core.perf_open_error_reason(errno.EACCES)
    assert f"perf_event_paranoid is {level}:" in reason
    if level <= 2:
        assert "sysctl" not in reason and "something else refused" in reason
    else:
        assert "kernel.perf_event_paranoid=2" in reason


def _group_or_skip(names: list[str]) -> _core.CounterGroup:
    group = _core.CounterGroup(names)
    if not group.any_available:
        pytest.skip("no event of " + ", ".join(names) + " opens here: "
                    + "; ".join(e.reason for e in group.events))
    return group


@linux_only
def test_task_clock_of_a_known_spin() -> None:
    _core.spin(1e3)  # the first spin calibrates the TSC; keep that out of the count
    group = _group_or_skip(["task-clock"])
    # The oracle is this thread's CPU time around the counted region, the quantity
    # task-clock counts. A 20 ms wall-clock spin gets less of it on a busy machine (11.95 ms
    # of task-clock was seen), so spin until 20 ms of CPU time have passed instead.
    cpu0 = time.thread_time_ns()
    group.start()
    while time.thread_time_ns() - cpu0 < 20_000_000:
        _core.spin(1e6)
    group.stop()
    cpu_ns = time.thread_time_ns() - cpu0
    (reading,) = group.read()
    assert reading.counted
    # The thread-time window encloses the counted one by two system calls (microseconds).
    assert 0.9 * cpu_ns <= reading.value <= cpu_ns + 1e6


@linux_only
def test_page_faults_of_fresh_pages() -> None:
    pages = 256
    group = _group_or_skip(["page-faults"])
    region = mmap.mmap(-1, pages * mmap.PAGESIZE)
    try:
        group.start()
        for i in range(pages):
            region[i * mmap.PAGESIZE] = 1
        group.stop()
    finally:
        region.close()
    (reading,) = group.read()
    assert reading.counted and reading.value >= 0.9 * pages


@linux_only
def test_missing_hardware_is_a_state_not_an_exception() -> None:
    group = _core.CounterGroup(["cycles", "task-clock"])
    cycles, task = group.events
    if cycles.available:
        pytest.skip("this machine exposes a PMU")
    assert cycles.reason and not task.reason
    group.start()
    _core.spin(1e6)
    group.stop()
    r_cycles, r_task = group.read()
    assert not r_cycles.available and not r_cycles.counted and r_cycles.reason
    assert r_task.counted and r_task.value > 0


def test_counter_group_rejects_unknown_names() -> None:
    with pytest.raises(ValueError):
        _core.CounterGroup(["task-clock", "no-such-event"])
    with pytest.raises(ValueError):
        _core.CounterGroup([])


def test_read_before_start_is_an_error_not_a_crash() -> None:
    group = _core.CounterGroup(["task-clock"])
    with pytest.raises(RuntimeError, match="start"):
        group.read()


# -- the read path: rdpmc or read(2), and why ---------------------------------------------------
# A real rdpmc read needs a hardware PMU that lets user space execute rdpmc; VMs without a PMU
# (hardware events fail with ENOENT) cannot exercise it, so its arithmetic is tested natively
# on synthetic page snapshots (tests/cpp/test_perf.cpp) and the hardware test below skips.
SOFTWARE_REASON = "software events are not on hardware counters (mmap index 0): task-clock, page-faults"


@linux_only
def test_software_events_read_with_read_and_say_why() -> None:
    group = _group_or_skip(["task-clock", "page-faults"])
    assert group.read_path == "read" and group.read_path_reason == SOFTWARE_REASON
    assert not group.prefers_read
    group.start()
    _core.spin(2e6)
    running = group.read()  # software events never have a counter index: read(2)
    assert group.read_path == "read" and group.read_path_reason == SOFTWARE_REASON
    group.stop()
    stopped = group.read()
    assert group.read_path == "read" and group.read_path_reason == SOFTWARE_REASON
    assert running[0].counted and running[0].value > 0
    assert stopped[0].value >= running[0].value and stopped[1].value >= running[1].value


@linux_only
def test_forcing_read_keeps_counting() -> None:
    group = _group_or_skip(["task-clock"])
    group.prefer_read()
    assert group.prefers_read and group.read_path == "read"
    assert group.read_path_reason == "read(2) forced by prefer_read"
    _core.spin(1e3)  # the first spin calibrates the TSC
    group.start()
    _core.spin(20e6)
    group.stop()
    (reading,) = group.read()
    assert group.read_path == "read" and group.read_path_reason == "read(2) forced by prefer_read"
    # CPU time: at most the 20 ms of wall time (less when the machine is busy).
    assert reading.counted and 0 < reading.value <= 60e6
    group.prefer_read(False)
    assert not group.prefers_read and group.read_path_reason.startswith("software events")


@linux_only
def test_time_counter_ops_leaves_the_group_stopped_and_counting() -> None:
    group = _group_or_skip(["task-clock", "page-faults"])
    cost = _core.time_counter_ops(group, 5, 20)
    assert cost.reps == 5 and cost.batch == 20 and cost.read_path == group.read_path
    for ns in (cost.read_ns, cost.region_ns, cost.syscall_ns):
        assert math.isfinite(ns) and ns > 0
    before = group.read()[0].value
    _core.spin(2e6)
    assert group.read()[0].value == before  # stopped
    group.start()
    _core.spin(2e6)
    group.stop()
    assert group.read()[0].value > 0  # a fresh region after the timing still counts
    with pytest.raises(ValueError, match="time_counter_ops"):
        _core.time_counter_ops(group, 0, 1)


@linux_only
def test_inherit_reads_with_read() -> None:
    group = _core.CounterGroup(["task-clock"], True)
    if not group.any_available:
        pytest.skip("task-clock unavailable here")
    assert group.read_path == "read" and "inherit" in group.read_path_reason


@linux_only
def test_no_event_opened_reads_with_read() -> None:
    _core._inject_open_errno(errno.ENOENT, 1)
    try:
        group = _core.CounterGroup(["task-clock"])
    finally:
        _core._inject_open_errno(0, 0)
    assert group.read_path == "read" and group.read_path_reason == "no event opened"


@linux_only
def test_hardware_events_read_with_rdpmc_or_say_why() -> None:
    group = _core.CounterGroup(["instructions", "cycles"])
    if not all(e.available for e in group.events):
        pytest.skip("hardware events cannot be opened here: "
                    + "; ".join(e.reason for e in group.events if not e.available))
    group.start()
    _core.spin(1e6)
    first = group.read()
    assert group.read_path in ("rdpmc", "read")
    assert (group.read_path_reason == "") == (group.read_path == "rdpmc")
    group.prefer_read()
    second = group.read()
    assert group.read_path == "read"
    group.stop()
    for a, b in zip(first, second):
        assert a.raw <= b.raw and a.time_enabled_ns <= b.time_enabled_ns
