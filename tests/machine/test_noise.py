"""Tests for fastbench.machine's noise checks: each check on synthetic inputs with known
verdicts, every check against fake /proc and /sys trees under tmp_path, and a
structure-only smoke test on the real machine.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from _machine_helpers import CPUINFO_X86, write
from fastbench import machine
from fastbench.machine import NoiseCheck, noise
from fastbench.report.machine import format_noise_checks


# ---------------------------------------------------------------------------------------
# Noise checks on synthetic inputs
# ---------------------------------------------------------------------------------------


def test_noise_check_rejects_bad_status() -> None:
    with pytest.raises(ValueError, match="status"):
        NoiseCheck("x", "y", "bad")  # type: ignore[arg-type]


def test_check_clocksource_tsc_ok() -> None:
    check = machine.check_clocksource("tsc", "tsc hpet acpi_pm")
    assert check == NoiseCheck("clocksource", "tsc", "ok", "")


def test_check_clocksource_arm_counter_ok() -> None:
    assert machine.check_clocksource("arch_sys_counter", "arch_sys_counter").status == "ok"


def test_check_clocksource_kvm_clock_warns_with_tsc_switch() -> None:
    check = machine.check_clocksource("kvm-clock", "kvm-clock tsc hpet")
    assert check.status == "warn"
    assert check.value == "kvm-clock"
    assert "acceptable" in check.advice
    assert "echo tsc" in check.advice


def test_check_clocksource_hpet_without_tsc() -> None:
    check = machine.check_clocksource("hpet", "hpet acpi_pm")
    assert check.status == "warn"
    assert "does not offer tsc" in check.advice
    assert "echo tsc" not in check.advice


def test_check_clocksource_available_unknown() -> None:
    check = machine.check_clocksource("acpi_pm", None)
    assert check.status == "warn"
    assert "tsc" in check.advice


@pytest.mark.parametrize("current", [None, ""])
def test_check_clocksource_unknown(current: str | None) -> None:
    assert machine.check_clocksource(current, None).status == "unknown"


@pytest.mark.parametrize(
    ("flag", "vendor", "product", "clocks", "expected"),
    [
        (True, None, None, "tsc kvm-clock", ("KVM", ["hypervisor flag", "kvm-clock"])),
        (True, None, None, "tsc", ("VM", ["hypervisor flag"])),
        (False, "QEMU", "Standard PC (Q35 + ICH9, 2009)", "tsc", ("QEMU", ["DMI"])),
        (True, "VMware, Inc.", "VMware Virtual Platform", None,
         ("VMware", ["hypervisor flag", "DMI"])),
        (True, "Microsoft Corporation", "Virtual Machine", "hyperv_clocksource_tsc_page",
         ("Microsoft Hyper-V", ["hypervisor flag", "DMI", "hyperv_clocksource_tsc_page"])),
        (True, "Xen", "HVM domU", "xen tsc", ("Xen", ["hypervisor flag", "DMI", "xen"])),
        (True, "Amazon EC2", "m5.large", "tsc kvm-clock",
         ("Amazon EC2", ["hypervisor flag", "DMI", "kvm-clock"])),
        (None, "Google", "Google Compute Engine", None, ("Google Compute Engine", ["DMI"])),
        # Bare-metal look-alikes: EC2 *.metal and a Microsoft laptop.
        (False, "Amazon EC2", "m5.metal", "tsc hpet", None),
        (False, "Microsoft Corporation", "Surface Laptop 5", "tsc hpet", None),
        (False, "Dell Inc.", "PowerEdge R650", "tsc hpet acpi_pm", None),
        (None, None, None, None, None),
    ],
)  # fmt: skip
def test_detect_hypervisor(
    flag: bool | None,
    vendor: str | None,
    product: str | None,
    clocks: str | None,
    expected: tuple[str, list[str]] | None,
) -> None:
    assert machine.detect_hypervisor(flag, vendor, product, clocks) == expected


@pytest.mark.parametrize(
    ("cgroup", "dockerenv", "containerenv", "expected"),
    [
        ("12:cpu:/docker/0123abcd\n0::/docker/0123abcd", False, False, "docker"),
        ("0::/kubepods/burstable/pod1234/abcd", False, False, "kubernetes"),
        ("0::/", True, False, "docker"),
        ("0::/", False, True, "podman"),
        ("0::/init.scope", False, False, None),
        (None, False, False, None),
    ],
)
def test_detect_container(
    cgroup: str | None, dockerenv: bool, containerenv: bool, expected: str | None
) -> None:
    assert machine.detect_container(cgroup, dockerenv, containerenv) == expected


def test_check_virtualization_vm_warns() -> None:
    check = machine.check_virtualization(("KVM", ["hypervisor flag"]), None, True)
    assert check.status == "warn"
    assert check.value == "KVM (hypervisor flag)"
    assert "hardware counters" in check.advice
    assert "steal time" in check.advice


def test_check_virtualization_container_warns() -> None:
    check = machine.check_virtualization(None, "docker", False)
    assert check.status == "warn"
    assert check.value == "container (docker)"
    assert "perf_event_open" in check.advice


def test_check_virtualization_vm_and_container() -> None:
    check = machine.check_virtualization(("KVM", ["hypervisor flag"]), "docker", True)
    assert check.value == "KVM (hypervisor flag), container (docker)"
    assert "steal time" in check.advice and "perf_event_open" in check.advice


def test_check_virtualization_bare_metal_ok() -> None:
    check = machine.check_virtualization(None, None, False)
    assert (check.value, check.status, check.advice) == ("bare metal", "ok", "")


def test_check_virtualization_unknown_without_flags() -> None:
    assert machine.check_virtualization(None, None, None).status == "unknown"


def test_check_governor() -> None:
    assert machine.check_governor(["performance", "performance"]) == NoiseCheck(
        "governor", "performance", "ok"
    )
    mixed = machine.check_governor(["powersave", "performance", "powersave"])
    assert mixed.status == "warn"
    assert mixed.value == "performance, powersave"
    assert "cpupower frequency-set -g performance" in mixed.advice
    missing = machine.check_governor([])
    assert missing.status == "unknown"
    assert "typical of VMs" in missing.value


@pytest.mark.parametrize(
    ("no_turbo", "boost", "status", "value"),
    [
        ("1", None, "ok", "off (intel_pstate)"),
        ("0", None, "warn", "on (intel_pstate)"),
        (None, "0", "ok", "off (cpufreq boost)"),
        (None, "1", "warn", "on (cpufreq boost)"),
        ("1", "1", "ok", "off (intel_pstate)"),  # intel_pstate is authoritative when present
        ("junk", None, "unknown", "not exposed (typical of VMs)"),
        (None, None, "unknown", "not exposed (typical of VMs)"),
    ],
)
def test_check_turbo(no_turbo: str | None, boost: str | None, status: str, value: str) -> None:
    check = machine.check_turbo(no_turbo, boost)
    assert (check.status, check.value) == (status, value)
    if status == "warn":
        assert "disable" in check.advice


@pytest.mark.parametrize(
    ("load1", "cores", "status"),
    [
        (0.1, 2, "ok"),
        (0.5, 2, "ok"),  # threshold 0.25 * 2 = 0.5 is not exceeded
        (0.6, 2, "warn"),
        (2.5, 2, "warn"),
        (0.2, 1, "ok"),
        (0.3, 1, "warn"),
        (16.0, 64, "ok"),
        (20.0, 64, "warn"),
        (None, 4, "unknown"),
    ],
)
def test_check_load(load1: float | None, cores: int, status: str) -> None:
    check = machine.check_load(load1, cores)
    assert check.status == status
    if status == "warn":
        assert "compete" in check.advice
    if load1 is not None:
        assert f"{load1:.2f}" in check.value and f"{cores} logical" in check.value


def test_check_load_warns_well_before_every_core_is_busy() -> None:
    # 1.95 on 2 CPUs: another process keeps nearly a whole core busy; any benchmark on this
    # machine shares the cores with it.
    busy = machine.check_load(1.95, 2)
    assert busy.status == "warn" and "compete" in busy.advice
    assert machine.check_load(1.0, 2).status == "warn"  # half the machine busy
    assert machine.check_load(1.5, 8).status == "ok"  # under a quarter of 8 CPUs


@pytest.mark.parametrize(
    ("load1", "own", "status"),
    [
        (1.2, 1.0, "ok"),    # the measurement's own thread, plus 0.2 of others
        (1.6, 1.0, "warn"),  # 0.6 of others on 2 CPUs
        (0.5, 3.0, "ok"),    # own bound above the load: nothing is left to the others
    ],
)
def test_check_load_leaves_out_the_checking_process_own_load(load1: float, own: float,
                                                             status: str) -> None:
    check = machine.check_load(load1, 2, own_load=own)
    assert check.status == status
    assert f"up to {min(own, load1):.2f} of it this process's own" in check.value


def test_own_load_is_cpu_seconds_over_the_time_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    times = [os.times_result((12.0, 3.0, 4.5, 1.5, 0.0))]
    monkeypatch.setattr(noise.os, "times", lambda: times[0])
    assert noise._own_load(4) == pytest.approx((12.0 + 3.0 + 4.5 + 1.5) / 60.0)
    times[0] = os.times_result((600.0, 0.0, 0.0, 0.0, 0.0))
    assert noise._own_load(4) == 4.0  # never more than every core


@pytest.mark.parametrize(
    ("value", "status"),
    [("-1", "ok"), ("0", "ok"), ("1", "ok"), ("2", "ok"), ("3", "warn"), ("4", "warn"),
     (None, "unknown"), ("abc", "unknown")],
)  # fmt: skip
def test_check_perf_event_paranoid(value: str | None, status: str) -> None:
    check = machine.check_perf_event_paranoid(value)
    assert check.status == status
    if status == "warn":
        assert "sudo sysctl kernel.perf_event_paranoid=2" in check.advice
        assert "CAP_PERFMON" in check.advice
    if value is None:
        assert check.value == "not Linux or perf_event not available"


@pytest.mark.parametrize(
    ("value", "status", "shown"),
    [("0", "ok", "0 (disabled)"), ("1", "ok", "1 (conservative)"), ("2", "ok", "2 (full)"),
     ("7", "ok", "7"), (None, "unknown", None)],
)  # fmt: skip
def test_check_aslr(value: str | None, status: str, shown: str | None) -> None:
    check = machine.check_aslr(value)
    assert check.status == status
    if shown is not None:
        assert check.value == shown


@pytest.mark.parametrize(
    ("value", "status", "shown"),
    [("", "ok", "none"), ("2-3", "ok", "2-3 (2 CPUs)"), ("1,4-6", "ok", "1,4-6 (4 CPUs)"),
     ("x", "unknown", None), (None, "unknown", None)],
)  # fmt: skip
def test_check_isolated_cpus(value: str | None, status: str, shown: str | None) -> None:
    check = machine.check_isolated_cpus(value)
    assert check.status == status
    if shown is not None:
        assert check.value == shown


def test_ok_checks_carry_no_advice() -> None:
    oks = [
        machine.check_clocksource("tsc", "tsc"),
        machine.check_virtualization(None, None, False),
        machine.check_governor(["performance"]),
        machine.check_turbo("1", None),
        machine.check_load(0.0, 4),
        machine.check_perf_event_paranoid("2"),
        machine.check_aslr("2"),
        machine.check_isolated_cpus("2-3"),
    ]
    assert all(c.status == "ok" and c.advice == "" for c in oks)


CHECK_NAMES = [
    "clocksource",
    "virtualization",
    "governor",
    "turbo",
    "load",
    "perf_event_paranoid",
    "aslr",
    "isolated_cpus",
]


def test_noise_checks_on_fake_vm(vm_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(noise, "_load1", lambda: 0.0)
    checks = {c.name: c for c in machine.noise_checks(vm_root)}
    assert list(checks) == CHECK_NAMES
    assert checks["clocksource"].status == "ok"
    assert checks["virtualization"].status == "warn"
    assert checks["virtualization"].value == "KVM (hypervisor flag, kvm-clock), container (docker)"
    assert checks["governor"].status == "unknown"
    assert checks["turbo"].status == "unknown"
    assert checks["load"].status == "ok"
    assert checks["perf_event_paranoid"] == NoiseCheck("perf_event_paranoid", "2", "ok")
    assert checks["aslr"].value == "2 (full)"
    assert checks["isolated_cpus"].value == "none"


def test_noise_checks_on_fake_tuned_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(noise, "_load1", lambda: 0.0)
    write(tmp_path, "proc/cpuinfo", CPUINFO_X86.replace(" hypervisor", ""))
    clock = "sys/devices/system/clocksource/clocksource0"
    write(tmp_path, f"{clock}/current_clocksource", "tsc\n")
    write(tmp_path, f"{clock}/available_clocksource", "tsc hpet acpi_pm\n")
    write(tmp_path, "sys/class/dmi/id/sys_vendor", "Dell Inc.\n")
    write(tmp_path, "sys/class/dmi/id/product_name", "PowerEdge R650\n")
    for cpu in (0, 1, 10):
        governor = f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
        write(tmp_path, governor, "performance\n")
    write(tmp_path, "sys/devices/system/cpu/intel_pstate/no_turbo", "1\n")
    write(tmp_path, "proc/1/cgroup", "0::/init.scope\n")
    write(tmp_path, "proc/sys/kernel/perf_event_paranoid", "-1\n")
    write(tmp_path, "proc/sys/kernel/randomize_va_space", "0\n")
    write(tmp_path, "sys/devices/system/cpu/isolated", "2-3\n")
    checks = machine.noise_checks(tmp_path)
    assert [c.name for c in checks] == CHECK_NAMES
    assert [c.status for c in checks] == ["ok"] * len(CHECK_NAMES)
    assert checks[1].value == "bare metal"


def test_noise_checks_on_foreign_os(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing under root and no load average: every check is "unknown", none raises.
    monkeypatch.setattr(noise, "_load1", lambda: None)
    checks = machine.noise_checks(tmp_path)
    assert [c.name for c in checks] == CHECK_NAMES
    assert [c.status for c in checks] == ["unknown"] * len(CHECK_NAMES)


def test_governor_warns_when_one_cpu_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(noise, "_load1", lambda: 0.0)
    write(tmp_path, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n")
    write(tmp_path, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "schedutil\n")
    governor = machine.noise_checks(tmp_path)[2]
    assert (governor.name, governor.status) == ("governor", "warn")
    assert governor.value == "performance, schedutil"




def test_real_noise_checks() -> None:
    checks = machine.noise_checks()
    assert [c.name for c in checks] == CHECK_NAMES
    assert all(c.status in ("ok", "warn", "unknown") for c in checks)
    assert all(c.advice == "" for c in checks if c.status == "ok")
    assert len(format_noise_checks(checks)) == len(checks)
