"""Energy per call: the powercap wrap arithmetic on synthetic counter sequences, a fake
powercap tree and a fake perf PMU driven by the test (per-call joules and the idle
subtraction against hand computations), the reasons given when RAPL cannot be read, the
CPU-time estimate against process CPU time read by the test, and a real RAPL read where
this machine allows one.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import random
import struct
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from fastbench.suite import energy, energy_sources
from fastbench.suite.energy import (CorePowerModel, Energy, EnergyMeter, block_interval,
                                    energy_delta_uj,
                                    energy_source, format_joules, idle_power_w,
                                    measure_energy, measure_energy_interleaved)

# --- wrap-around arithmetic --------------------------------------------------------------


def test_delta_without_wrap_is_the_difference() -> None:
    assert energy_delta_uj(100, 250, 1000) == 150
    assert energy_delta_uj(0, 1000, 1000) == 1000  # from the bottom to the top: no wrap
    assert energy_delta_uj(777, 777, 1000) == 0


def test_delta_across_one_wrap() -> None:
    # Values 0..1000 inclusive: 900 -> 1000 is 100 steps, 1000 -> 0 one step, 0 -> 100 100.
    assert energy_delta_uj(900, 100, 1000) == 100 + 1 + 100


def test_delta_at_the_exact_boundary() -> None:
    assert energy_delta_uj(1000, 0, 1000) == 1  # the top, then the wrap to 0
    assert energy_delta_uj(1000, 1000, 1000) == 0
    assert energy_delta_uj(1, 0, 1000) == 1000  # all the way round but one step


def test_deltas_of_a_synthetic_counter_sum_to_the_energy_put_in() -> None:
    rng = random.Random(7)
    max_range = 65_535
    modulus = max_range + 1  # the counter shows 0..max_range, then 0 again
    increments = [rng.randrange(0, modulus) for _ in range(500)]  # each below one period
    readings = [12_345]
    for inc in increments:
        readings.append((readings[-1] + inc) % modulus)
    total = sum(energy_delta_uj(a, b, max_range) for a, b in zip(readings, readings[1:]))
    assert total == sum(increments)
    assert sum(inc for inc in increments) > 10 * modulus  # it did wrap, many times


def test_delta_refuses_readings_outside_the_range() -> None:
    with pytest.raises(ValueError, match="after_uj"):
        energy_delta_uj(0, 1001, 1000)
    with pytest.raises(ValueError, match="before_uj"):
        energy_delta_uj(-1, 5, 1000)
    with pytest.raises(ValueError, match="max_range_uj"):
        energy_delta_uj(0, 0, 0)
    with pytest.raises(TypeError, match="before_uj"):
        energy_delta_uj(1.5, 2, 1000)  # type: ignore[arg-type]


# --- a fake powercap tree ----------------------------------------------------------------


class FakeMachine:
    """A powercap tree in a temporary directory and the module's clock and sleep: sleeping
    and calling advance the clock and add known energy to the counters."""

    def __init__(self, root: Path, max_range_uj: dict[str, int],
                 idle_uw: dict[str, int], start_uj: dict[str, int]) -> None:
        self.root = root
        self.now_s = 0.0
        self.idle_uw = idle_uw
        self.max_range = max_range_uj
        self.value = dict(start_uj)
        for zone, max_range in max_range_uj.items():
            (root / zone).mkdir(parents=True)
            (root / zone / "max_energy_range_uj").write_text(f"{max_range}\n")
            self._write(zone)

    def name(self, zone: str, name: str) -> None:
        (self.root / zone / "name").write_text(name + "\n")

    def _write(self, zone: str) -> None:
        # Atomic, so a reader (the meter's polling thread) never sees a half-written file.
        tmp = self.root / zone / "energy_uj.tmp"
        tmp.write_text(f"{self.value[zone]}\n")
        os.replace(tmp, self.root / zone / "energy_uj")

    def add(self, zone: str, uj: int) -> None:
        self.value[zone] = (self.value[zone] + uj) % (self.max_range[zone] + 1)
        self._write(zone)

    def run(self, seconds: float, extra_uj: dict[str, int]) -> None:
        """``seconds`` pass: every zone gets its idle power, plus ``extra_uj``."""
        self.now_s += seconds
        for zone, idle in self.idle_uw.items():
            self.add(zone, round(idle * seconds) + extra_uj.get(zone, 0))

    def sleep(self, seconds: float) -> None:
        self.run(seconds, {})

    def clock(self) -> float:
        return self.now_s


CALL_S = 0.01
IDLE_UW = {"intel-rapl:0": 6_000_000, "intel-rapl:1": 4_000_000,
           "intel-rapl:0:0": 3_000_000, "intel-rapl:2": 20_000_000}
CALL_UJ = {"intel-rapl:0": 1_500, "intel-rapl:1": 500,
           "intel-rapl:0:0": 99_999, "intel-rapl:2": 77_777}


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeMachine:
    """Two packages (package-0 starts 1 J below its wrap), a DRAM subzone and a psys zone
    that must not be summed."""
    m = FakeMachine(tmp_path / "powercap",
                    max_range_uj={"intel-rapl:0": 9_999_999, "intel-rapl:1": 262_143_328_850,
                                  "intel-rapl:0:0": 65_532_610_987,
                                  "intel-rapl:2": 262_143_328_850},
                    idle_uw=IDLE_UW,
                    start_uj={"intel-rapl:0": 8_999_999, "intel-rapl:1": 5,
                              "intel-rapl:0:0": 0, "intel-rapl:2": 0})
    m.name("intel-rapl:0", "package-0")
    m.name("intel-rapl:1", "package-1")
    m.name("intel-rapl:0:0", "dram")
    m.name("intel-rapl:2", "psys")
    monkeypatch.setattr(energy, "_now_s", m.clock)
    monkeypatch.setattr(energy, "_sleep_s", m.sleep)
    return m


def test_powercap_source_sums_the_package_zones_only(machine: FakeMachine) -> None:
    with energy_source(powercap_root=machine.root) as source:
        assert source.method == "rapl-powercap"
        assert not source.estimated and source.reason == ""
        assert source.zones == ("intel-rapl:0 package-0", "intel-rapl:1 package-1")
        assert source.read_j() == 0.0
        machine.run(0.5, {})  # 3 J + 2 J of idle; package-0 wraps on the way
        assert source.read_j() == pytest.approx(5.0, rel=1e-12)


def test_reads_between_wraps_keep_the_whole_energy(machine: FakeMachine) -> None:
    # package-0 wraps every 10 J: 25 steps of 3 J wrap it 7 times; each read is within one.
    with energy_source(powercap_root=machine.root) as source:
        for _ in range(25):
            machine.add("intel-rapl:0", 3_000_000)
            source.read_j()
        assert source.read_j() == pytest.approx(75.0, rel=1e-12)


def test_idle_power_is_the_package_draw_while_sleeping(machine: FakeMachine) -> None:
    with energy_source(powercap_root=machine.root) as source:
        # 2.5 s in POLL_S chunks: package 6 W + 4 W; DRAM and psys not counted.
        assert idle_power_w(source, seconds=2.5) == pytest.approx(10.0, rel=1e-12)


def test_measured_energy_per_call_is_net_of_idle(machine: FakeMachine) -> None:
    calls = []

    def fn() -> None:
        calls.append(1)
        machine.run(CALL_S, CALL_UJ)

    with energy_source(powercap_root=machine.root) as source:
        result = measure_energy(fn, blocks=5, min_block_s=0.05, idle_s=0.5, source=source)
    # Per call: package-0 1500 uJ and package-1 500 uJ above their idle 6 W + 4 W.
    assert result.method == "rapl-powercap" and not result.estimated and result.reason == ""
    assert result.idle_w == pytest.approx(10.0, rel=1e-12)
    assert result.joules_per_call == pytest.approx(0.002, rel=1e-9)
    assert result.ci is not None
    assert result.ci[0] == pytest.approx(0.002, rel=1e-9)
    assert result.ci[1] == pytest.approx(0.002, rel=1e-9)
    assert result.blocks == 5
    # A block lasts >= 0.05 s at 0.01 s a call; calibration ran 1 call, then one block.
    assert result.calls_per_block * CALL_S >= 0.05
    assert len(calls) == 1 + result.calls_per_block + 5 * result.calls_per_block
    # The fake clock moves 0.01 s a call: 2 mJ over 10 ms is 0.2 W above idle.
    assert result.seconds_per_call == pytest.approx(CALL_S, rel=1e-9)
    assert result.watts == pytest.approx(0.2, rel=1e-9)
    assert result.watts_per_core is None
    assert "estimated" not in result.text()


def test_interleaved_blocks_share_one_baseline(machine: FakeMachine) -> None:
    order: list[str] = []

    def variant(name: str, uj: int, seconds: float) -> Callable[[], None]:
        def fn() -> None:
            order.append(name)
            machine.run(seconds, {"intel-rapl:1": uj})
        return fn

    with energy_source(powercap_root=machine.root) as source:
        result = measure_energy_interleaved(
            {"small": variant("small", 300, 0.01), "big": variant("big", 9_000, 0.02)},
            blocks=4, min_block_s=0.05, source=source)
    assert list(result) == ["small", "big"]
    assert result["small"].joules_per_call == pytest.approx(300e-6, rel=1e-9)
    assert result["big"].joules_per_call == pytest.approx(9_000e-6, rel=1e-9)
    assert result["small"].idle_w == result["big"].idle_w == pytest.approx(10.0, rel=1e-12)
    assert result["small"].blocks == result["big"].blocks == 4
    assert result["small"].seconds_per_call == pytest.approx(0.01, rel=1e-9)
    assert result["big"].seconds_per_call == pytest.approx(0.02, rel=1e-9)
    assert result["big"].watts == pytest.approx(9_000e-6 / 0.02, rel=1e-9)
    # After calibration, rounds alternate which variant goes first.
    k_small, k_big = result["small"].calls_per_block, result["big"].calls_per_block
    rounds = order[len(order) - 4 * (k_small + k_big):]
    firsts = []
    at = 0
    for _ in range(4):
        firsts.append(rounds[at])
        at += k_small + k_big
    assert firsts == ["small", "big", "small", "big"]


def test_interleaved_checks_its_functions() -> None:
    with pytest.raises(ValueError, match="empty"):
        measure_energy_interleaved({})
    with pytest.raises(TypeError, match=r"fns\['x'\] must be callable"):
        measure_energy_interleaved({"x": 3})  # type: ignore[dict-item]


def test_gross_energy_without_an_idle_baseline(machine: FakeMachine) -> None:
    def fn() -> None:
        machine.run(CALL_S, CALL_UJ)

    with energy_source(powercap_root=machine.root) as source:
        result = measure_energy(fn, blocks=3, idle_s=0, source=source)
    # 10 W x 0.01 s + 2 mJ.
    assert result.idle_w is None
    assert result.joules_per_call == pytest.approx(0.102, rel=1e-9)


def test_meter_wraps_a_region_the_caller_runs(machine: FakeMachine) -> None:
    with energy_source(powercap_root=machine.root) as source:
        meter = EnergyMeter(source, idle_w=10.0)
        meter.start()
        machine.run(0.5, {"intel-rapl:0": 250_000, "intel-rapl:1": 50_000})
        assert meter.stop() == pytest.approx(0.3, rel=1e-9)
        assert meter.elapsed_s == pytest.approx(0.5)
        with pytest.raises(RuntimeError, match="without start"):
            meter.stop()


def test_open_region_polls_across_many_wraps(machine: FakeMachine,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # 5 x 6 J on a counter that wraps every 10 J: only reads in between can see all of it.
    monkeypatch.setattr(energy, "POLL_S", 0.001)
    with energy_source(powercap_root=machine.root) as source:
        reads = []
        reader = source._reader
        assert reader is not None
        read_j = reader.read_j

        def counted() -> float:
            reads.append(1)
            return read_j()

        monkeypatch.setattr(reader, "read_j", counted)
        meter = EnergyMeter(source, idle_s=0)
        meter.start()
        for _ in range(5):
            before = len(reads)
            machine.add("intel-rapl:0", 6_000_000)
            deadline = time.monotonic() + 30.0  # waits for the poller, never times it
            while len(reads) < before + 2 and time.monotonic() < deadline:
                time.sleep(0.001)
            assert len(reads) >= before + 2, "the polling thread did not read the counter"
        assert meter.stop() == pytest.approx(30.0, rel=1e-12)
        assert meter._poller is None  # the thread ended with the region


# --- unreadable RAPL -> the estimate, labelled ------------------------------------------


def test_missing_tree_gives_the_estimate_with_reasons(tmp_path: Path) -> None:
    source = energy_source(powercap_root=tmp_path / "absent", perf_root=tmp_path / "nopmu")
    assert source.estimated and source.method == "estimated"
    assert source.reason.startswith("RAPL not readable: ")
    assert f"powercap: no {tmp_path / 'absent'}" in source.reason
    assert f"perf: no {tmp_path / 'nopmu'}" in source.reason
    assert "VM" in source.reason
    with pytest.raises(ValueError, match="no RAPL counter"):
        source.read_j()
    with pytest.raises(ValueError, match="idle power needs a RAPL counter"):
        idle_power_w(source, 0.1)


def test_tree_without_package_zones(tmp_path: Path) -> None:
    (tmp_path / "intel-rapl:0").mkdir()
    (tmp_path / "intel-rapl:0" / "name").write_text("psys\n")
    source = energy_source(prefer=("powercap",), powercap_root=tmp_path)
    assert source.estimated
    assert "no intel-rapl package zone" in source.reason


def test_root_only_counter_is_explained(machine: FakeMachine,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # The test may run as root, which chmod cannot stop: refuse the read itself.
    def refuse(path: Path) -> int:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(energy_sources, "_read_uj", refuse)
    source = energy_source(prefer=("powercap",), powercap_root=machine.root)
    assert source.estimated
    assert "readable by root only" in source.reason
    assert "CVE-2020-8694" in source.reason
    assert "intel-rapl:0/energy_uj" in source.reason


def fake_pmu(root: Path, *, event: str = "event=0x02", fmt: str = "config:0-7",
             cpumask: str = "0", pmu_type: str = "4095") -> Path:
    (root / "events").mkdir(parents=True)
    (root / "format").mkdir()
    (root / "type").write_text(pmu_type + "\n")
    (root / "cpumask").write_text(cpumask + "\n")
    (root / "format" / "event").write_text(fmt + "\n")
    (root / "events" / "energy-pkg").write_text(event + "\n")
    (root / "events" / "energy-pkg.scale").write_text("2.3283064365386962890625e-10\n")
    (root / "events" / "energy-pkg.unit").write_text("Joules\n")
    return root


def test_perf_open_failure_is_a_reason_not_an_exception(tmp_path: Path) -> None:
    # PMU type 4095 does not exist: the real perf_event_open fails (or, off x86-64 Linux,
    # is not attempted); either way the caller gets an estimate and the reason.
    pmu = fake_pmu(tmp_path / "power")
    source = energy_source(prefer=("perf",), perf_root=pmu)
    assert source.estimated
    assert source.reason.startswith("RAPL not readable: perf: ")
    assert "perf_event_open" in source.reason


@pytest.fixture
def x86_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")


@pytest.mark.usefixtures("x86_linux")
def test_perf_refused_names_paranoid_and_capability(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pmu_type: int, config: int, cpu: int) -> int:
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(energy_sources, "_perf_event_open", refused)
    source = energy_source(prefer=("perf",), perf_root=fake_pmu(tmp_path / "power"))
    assert source.estimated
    assert "EACCES" in source.reason
    assert "perf_event_paranoid <= 0" in source.reason and "CAP_PERFMON" in source.reason


@pytest.mark.usefixtures("x86_linux")
def test_any_perf_failure_is_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(pmu_type: int, config: int, cpu: int) -> int:
        raise RuntimeError("libc has no syscall")

    monkeypatch.setattr(energy_sources, "_perf_event_open", broken)
    source = energy_source(prefer=("perf",), perf_root=fake_pmu(tmp_path / "power"))
    assert source.estimated
    assert "RuntimeError: libc has no syscall" in source.reason


@pytest.mark.usefixtures("x86_linux")
def test_perf_reader_sums_packages_and_scales(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[tuple[int, int, int]] = []
    writers: list[int] = []

    def fake_open(pmu_type: int, config: int, cpu: int) -> int:
        opened.append((pmu_type, config, cpu))
        read_fd, write_fd = os.pipe()
        writers.append(write_fd)
        os.write(write_fd, struct.pack("<Q", 1000 * (cpu + 1)))  # read when the reader opens
        return read_fd

    monkeypatch.setattr(energy_sources, "_perf_event_open", fake_open)
    pmu = fake_pmu(tmp_path / "power", event="event=0xab", fmt="config:0-3,8-11",
                   cpumask="0,48")
    try:
        with energy_source(prefer=("perf",), perf_root=pmu) as source:
            assert source.method == "rapl-perf" and not source.estimated
            # 0xab split over bits 0-3 (0xb) and 8-11 (0xa).
            assert opened == [(4095, 0xA0B, 0), (4095, 0xA0B, 48)]
            # cpu0 counts 2^32 more (1 J at 2^-32 J a count), cpu48 2^31 more (0.5 J).
            os.write(writers[0], struct.pack("<Q", 1000 + 2**32))
            os.write(writers[1], struct.pack("<Q", 49000 + 2**31))
            assert source.read_j() == pytest.approx(1.5, rel=1e-15)
    finally:
        for fd in writers:
            os.close(fd)


def test_perf_event_attr_matches_the_kernel_layout() -> None:
    # include/uapi/linux/perf_event.h, PERF_ATTR_SIZE_VER5: byte offsets of the fields.
    expected = {"type": 0, "size": 4, "config": 8, "sample_period": 16, "sample_type": 24,
                "read_format": 32, "flags": 40, "wakeup_events": 48, "bp_type": 52,
                "config1": 56, "config2": 64, "branch_sample_type": 72,
                "sample_regs_user": 80, "sample_stack_user": 88, "clockid": 92,
                "sample_regs_intr": 96, "aux_watermark": 104, "sample_max_stack": 108}
    attr = energy._PerfEventAttr
    assert ctypes.sizeof(attr) == 112
    for name, offset in expected.items():
        assert getattr(attr, name).offset == offset, name


def test_unreadable_rapl_gives_a_labelled_estimate(tmp_path: Path) -> None:
    source = energy_source(powercap_root=tmp_path / "absent", perf_root=tmp_path / "nopmu")
    result = measure_energy(lambda: sum(range(200)), blocks=3, min_block_s=0.005,
                            source=source, watts_per_core=4.0)
    assert result.estimated and result.method == "estimated"
    assert result.watts_per_core == 4.0 and result.idle_w is None
    assert result.reason == source.reason
    assert f"(estimated: RAPL not readable: powercap: no {tmp_path / 'absent'}" \
        in result.text()


# --- the estimate --------------------------------------------------------------------------


def spin_cpu(seconds: float) -> tuple[float, float]:
    """Busy for ``seconds`` of process CPU time; returns the CPU clock at both ends."""
    start = time.process_time()
    x = 0
    while time.process_time() - start < seconds:
        for i in range(1000):
            x += i * i
    return start, time.process_time()


def test_estimate_is_watts_per_core_times_cpu_time() -> None:
    meter = EnergyMeter(energy_source(prefer=()), watts_per_core=7.0)
    assert meter.source.reason == "RAPL not tried (no way was preferred)"
    outer_start = time.process_time()
    meter.start()
    inner_start, inner_end = spin_cpu(0.05)
    joules = meter.stop()
    outer_end = time.process_time()
    # The meter's CPU-time reads lie between the test's outer and inner ones.
    assert 7.0 * (inner_end - inner_start) <= joules <= 7.0 * (outer_end - outer_start)
    assert meter.model == CorePowerModel(7.0, "given")


def test_measure_energy_estimate_follows_the_calls_cpu_time() -> None:
    spent: list[float] = []

    def fn() -> None:
        start, end = spin_cpu(0.002)
        spent.append(end - start)

    result = measure_energy(fn, blocks=3, min_block_s=0.01, source=energy_source(prefer=()),
                            watts_per_core=5.0)
    in_blocks = spent[-result.blocks * result.calls_per_block:]
    inner_j = 5.0 * sum(in_blocks) / len(in_blocks)
    # Each block's CPU time holds its calls' (>= inner) plus a loop and two clock reads,
    # tiny beside 2 ms of work (1.5x is generous).
    assert inner_j <= result.joules_per_call <= 1.5 * inner_j
    assert result.ci is not None and result.ci[0] <= result.joules_per_call <= result.ci[1]


def test_default_model_and_its_checks() -> None:
    model = CorePowerModel()
    assert model.watts_per_core == energy.DEFAULT_WATTS_PER_CORE == 5.0
    assert "EPYC 9654" in model.source
    assert model.joules(2.0) == 10.0
    with pytest.raises(ValueError, match="watts_per_core"):
        CorePowerModel(0.0)
    with pytest.raises(ValueError, match="watts_per_core"):
        CorePowerModel(float("nan"))
    with pytest.raises(ValueError, match="watts_per_core"):
        measure_energy(lambda: None, watts_per_core=-1.0, source=energy_source(prefer=()))


# --- the result ------------------------------------------------------------------------


def test_energy_text_and_round_trip() -> None:
    measured = Energy(0.00123, (0.00123 * 0.96, 0.00123 * 1.04), "rapl-powercap", False,
                      idle_w=12.5, blocks=10, calls_per_block=40)
    assert measured.text() == "1.23 mJ ± 4.0%"
    estimated = Energy(2.5e-6, None, "estimated", True, "RAPL not readable: x",
                       watts_per_core=5.0, blocks=1, calls_per_block=3)
    assert estimated.text() == "2.50 µJ (estimated: RAPL not readable: x)"
    timed = Energy(0.004, None, "estimated", True, "x", watts_per_core=5.0, blocks=2,
                   calls_per_block=5, seconds_per_call=0.002)
    for e in (measured, estimated, timed):
        assert Energy.from_dict(json.loads(json.dumps(e.to_dict()))) == e
        assert e.lines()[0] == f"energy per call: {e.text()}"
    assert measured.seconds_per_call is None and measured.watts is None
    assert timed.watts == pytest.approx(2.0)
    assert "  the blocks ran 2.000 ms a call, back to back: 2 W" in timed.lines()
    # A record saved before the time per call was kept loads without it.
    old = timed.to_dict()
    del old["seconds_per_call"]
    assert Energy.from_dict(old).seconds_per_call is None


def test_energy_is_never_unlabelled() -> None:
    with pytest.raises(ValueError, match="reason"):
        Energy(1.0, None, "estimated", True)
    with pytest.raises(ValueError, match="contradicts"):
        Energy(1.0, None, "rapl-perf", True, "x")
    with pytest.raises(ValueError, match="method"):
        Energy(1.0, None, "guess", False)
    # An estimate states its model: a file with watts_per_core null or negative is refused.
    with pytest.raises(ValueError, match="watts_per_core > 0"):
        Energy(1.0, None, "estimated", True, "x")
    with pytest.raises(ValueError, match="watts_per_core > 0"):
        Energy(1.0, None, "estimated", True, "x", watts_per_core=-1.0)


@pytest.mark.parametrize("joules, text", [(0.00123, "1.23 mJ"), (2.5e-7, "250 nJ"),
                                          (1500.0, "1.50 kJ"), (0.9996, "1.00 J"),
                                          (-0.002, "-2.00 mJ"), (0.0, "0 J")])
def test_format_joules(joules: float, text: str) -> None:
    assert format_joules(joules) == text


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="prefer"):
        energy_source(prefer=("msr",))
    with pytest.raises(ValueError, match="blocks"):
        measure_energy(lambda: None, blocks=1)
    with pytest.raises(TypeError, match="fn must be callable"):
        measure_energy(42)  # type: ignore[arg-type]


# --- real RAPL ---------------------------------------------------------------------------


def _real_rapl_unreadable() -> str:
    """Why this machine's RAPL counter cannot be read ("" when it can)."""
    path = Path("/sys/class/powercap/intel-rapl:0/energy_uj")
    try:
        path.read_text()
    except OSError as exc:
        return f"{path} is not readable here ({exc.strerror}): no real RAPL read"
    return ""


def test_real_rapl_read() -> None:
    why = _real_rapl_unreadable()
    if why:
        pytest.skip(why)
    with energy_source(prefer=("powercap",)) as source:
        assert not source.estimated, source.reason
        # Any package draws power: between 0 and 2 kW per package is all this can say.
        idle = idle_power_w(source, seconds=0.2)
        assert 0.0 < idle < 2000.0 * len(source.zones)


def test_an_energy_interval_stays_positive_and_a_wide_one_is_flagged() -> None:
    # Blocks net of the idle power: one reads below zero. The Student t interval of their
    # mean (t(0.975, 3) = 3.1824) reaches below zero, as a real run once stored
    # [-0.000905, 0.002766] J; bounded at 0, and shown as an upper bound, not "± 197%".
    values = np.array([-0.0004, 0.0021, 0.0002, 0.0018])
    mean, ci = block_interval(values)
    assert mean == pytest.approx(0.000925)
    half = 3.182446 * float(values.std(ddof=1)) / 2.0
    assert ci is not None and ci[0] == 0.0 and ci[1] == pytest.approx(mean + half)
    e = Energy(mean, ci, "rapl-powercap", False, blocks=4, calls_per_block=10)
    assert not e.resolved
    assert "not resolved above the idle power" in e.text() and "±" not in e.text()
    # A narrow one keeps its ± form.
    mean, ci = block_interval(np.array([0.00100, 0.00102, 0.00098, 0.00101]))
    assert ci is not None and ci[0] > 0
    assert Energy(mean, ci, "rapl-powercap", False).resolved
    # Loading: an older file's negative low end is bounded; an inverted interval is refused.
    old = e.to_dict() | {"ci": [-0.000905, 0.002766]}
    assert Energy.from_dict(old).ci == (0.0, 0.002766)
    with pytest.raises(ValueError, match="0 <= low <= high"):
        Energy.from_dict(e.to_dict() | {"ci": [0.003, 0.001]})
