"""Tests for fastbench.machine: parsers and checks on synthetic inputs with known answers,
readers against fake /proc and /sys trees under tmp_path, and structure-only smoke tests
on the real machine (which skip where Linux files are absent).
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from fastbench import machine
from fastbench.machine import CacheLevel, MachineInfo, NoiseCheck

KIB = 1024
MIB = 1024 * 1024


def _write(root: Path, relpath: str, text: str) -> None:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _fake_cache(root: Path, index: int, level: str, kind: str, size: str, shared: str) -> None:
    base = f"sys/devices/system/cpu/cpu0/cache/index{index}"
    _write(root, f"{base}/level", f"{level}\n")
    _write(root, f"{base}/type", f"{kind}\n")
    _write(root, f"{base}/size", f"{size}\n")
    _write(root, f"{base}/coherency_line_size", "64\n")
    _write(root, f"{base}/shared_cpu_list", f"{shared}\n")


CPUINFO_X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: Test CPU 9000
flags\t\t: fpu sse4_2 avx avx2 fma hypervisor constant_tsc

processor\t: 1
model name\t: Test CPU 9000
flags\t\t: fpu sse4_2 avx avx2 fma hypervisor constant_tsc
"""

CPUINFO_ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes crc32
CPU implementer\t: 0x41
"""


@pytest.fixture
def vm_root(tmp_path: Path) -> Path:
    """A fake tree shaped like a KVM guest in Docker: tsc, no cpufreq, paranoid 2."""
    _write(tmp_path, "proc/cpuinfo", CPUINFO_X86)
    _fake_cache(tmp_path, 0, "1", "Data", "32K", "0")
    _fake_cache(tmp_path, 1, "1", "Instruction", "32K", "0")
    _fake_cache(tmp_path, 2, "2", "Unified", "512K", "0")
    _fake_cache(tmp_path, 3, "3", "Unified", "32768K", "0-1")
    clock = "sys/devices/system/clocksource/clocksource0"
    _write(tmp_path, f"{clock}/current_clocksource", "tsc\n")
    _write(tmp_path, f"{clock}/available_clocksource", "tsc kvm-clock \n")
    _write(tmp_path, "proc/1/cgroup", "0::/\n")
    _write(tmp_path, ".dockerenv", "")
    _write(tmp_path, "proc/sys/kernel/perf_event_paranoid", "2\n")
    _write(tmp_path, "proc/sys/kernel/randomize_va_space", "2\n")
    _write(tmp_path, "sys/devices/system/cpu/isolated", "\n")
    return tmp_path


# ---------------------------------------------------------------------------------------
# Parsers
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("32K", 32 * KIB),
        ("1024K", 1024 * KIB),
        ("32M", 32 * MIB),
        ("8192", 8192),
        ("32768K\n", 32 * MIB),
        ("1G", 1024 * MIB),
        ("48KiB", 48 * KIB),
        ("0", 0),
    ],
)
def test_parse_size_bytes(text: str, expected: int) -> None:
    assert machine.parse_size_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "K", "32X", "-1K", "3.5M", "32 K M"])
def test_parse_size_bytes_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="parse_size_bytes"):
        machine.parse_size_bytes(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", {0}),
        ("0-1", {0, 1}),
        ("0-3,8-11", {0, 1, 2, 3, 8, 9, 10, 11}),
        ("2,5\n", {2, 5}),
        ("", set()),
        ("\n", set()),
    ],
)
def test_parse_cpu_list(text: str, expected: set[int]) -> None:
    assert machine.parse_cpu_list(text) == frozenset(expected)


@pytest.mark.parametrize("text", ["a", "3-1", "1-", "0-3;5", "-2"])
def test_parse_cpu_list_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError, match="parse_cpu_list"):
        machine.parse_cpu_list(text)


# ---------------------------------------------------------------------------------------
# Readers on fake trees
# ---------------------------------------------------------------------------------------


def test_cpu_model_from_cpuinfo(vm_root: Path) -> None:
    assert machine.cpu_model(vm_root) == "Test CPU 9000"


def test_cpu_model_falls_back_to_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert machine.cpu_model(tmp_path) == "riscv64"
    monkeypatch.setattr(platform, "machine", lambda: "")
    assert machine.cpu_model(tmp_path) == "unknown"


def test_cpu_flags_x86(vm_root: Path) -> None:
    flags = machine.cpu_flags(vm_root)
    expected = {"fpu", "sse4_2", "avx", "avx2", "fma", "hypervisor", "constant_tsc"}
    assert flags == frozenset(expected)


def test_cpu_flags_arm_features(tmp_path: Path) -> None:
    _write(tmp_path, "proc/cpuinfo", CPUINFO_ARM)
    assert machine.cpu_flags(tmp_path) == frozenset({"fp", "asimd", "evtstrm", "aes", "crc32"})


def test_cpu_flags_missing_is_empty(tmp_path: Path) -> None:
    assert machine.cpu_flags(tmp_path) == frozenset()


def test_caches_from_fake_sysfs(vm_root: Path) -> None:
    assert machine.caches(vm_root) == [
        CacheLevel(1, "Data", 32 * KIB, 64, 1),
        CacheLevel(1, "Instruction", 32 * KIB, 64, 1),
        CacheLevel(2, "Unified", 512 * KIB, 64, 1),
        CacheLevel(3, "Unified", 32 * MIB, 64, 2),
    ]


def test_caches_sorted_by_level_and_skip_broken_entries(tmp_path: Path) -> None:
    # index10 must not sort before index2 as a string would; index4 is malformed and
    # index5 lacks its size file, so both are skipped rather than raising.
    _fake_cache(tmp_path, 10, "3", "Unified", "16M", "0-3,8-11")
    _fake_cache(tmp_path, 2, "2", "Unified", "1M", "0")
    _fake_cache(tmp_path, 0, "1", "Data", "48K", "0")
    _fake_cache(tmp_path, 4, "x", "Unified", "1M", "0")
    _write(tmp_path, "sys/devices/system/cpu/cpu0/cache/index5/level", "2\n")
    _write(tmp_path, "sys/devices/system/cpu/cpu0/cache/index5/type", "Unified\n")
    assert machine.caches(tmp_path) == [
        CacheLevel(1, "Data", 48 * KIB, 64, 1),
        CacheLevel(2, "Unified", MIB, 64, 1),
        CacheLevel(3, "Unified", 16 * MIB, 64, 8),
    ]


def test_caches_optional_files_missing(tmp_path: Path) -> None:
    base = "sys/devices/system/cpu/cpu0/cache/index0"
    _write(tmp_path, f"{base}/level", "1")
    _write(tmp_path, f"{base}/type", "Data")
    _write(tmp_path, f"{base}/size", "64K")
    assert machine.caches(tmp_path) == [CacheLevel(1, "Data", 64 * KIB, None, None)]


def test_caches_missing_dir_is_empty(tmp_path: Path) -> None:
    assert machine.caches(tmp_path) == []


def test_machine_info_from_fake_tree(vm_root: Path) -> None:
    info = machine.machine_info(vm_root)
    assert info.cpu_model == "Test CPU 9000"
    assert [c.size_bytes for c in info.caches] == [32 * KIB, 32 * KIB, 512 * KIB, 32 * MIB]
    assert "hypervisor" in info.flags
    data = info.to_dict()
    assert data["flags"] == sorted(info.flags)
    assert data["caches"][3] == {
        "level": 3,
        "kind": "Unified",
        "size_bytes": 32 * MIB,
        "line_bytes": 64,
        "shared_by_cpus": 2,
    }
    assert json.loads(json.dumps(data)) == data


def test_machine_info_empty_tree_degrades(tmp_path: Path) -> None:
    info = machine.machine_info(tmp_path)
    assert info.caches == ()
    assert info.flags == frozenset()
    assert isinstance(info.cpu_model, str) and info.cpu_model


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
        (2.0, 2, "ok"),  # threshold 1 + 0.5 * 2 = 2.0 is not exceeded
        (2.5, 2, "warn"),
        (20.0, 64, "ok"),
        (40.0, 64, "warn"),
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
    monkeypatch.setattr(machine, "_load1", lambda: 0.0)
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
    monkeypatch.setattr(machine, "_load1", lambda: 0.0)
    _write(tmp_path, "proc/cpuinfo", CPUINFO_X86.replace(" hypervisor", ""))
    clock = "sys/devices/system/clocksource/clocksource0"
    _write(tmp_path, f"{clock}/current_clocksource", "tsc\n")
    _write(tmp_path, f"{clock}/available_clocksource", "tsc hpet acpi_pm\n")
    _write(tmp_path, "sys/class/dmi/id/sys_vendor", "Dell Inc.\n")
    _write(tmp_path, "sys/class/dmi/id/product_name", "PowerEdge R650\n")
    for cpu in (0, 1, 10):
        governor = f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
        _write(tmp_path, governor, "performance\n")
    _write(tmp_path, "sys/devices/system/cpu/intel_pstate/no_turbo", "1\n")
    _write(tmp_path, "proc/1/cgroup", "0::/init.scope\n")
    _write(tmp_path, "proc/sys/kernel/perf_event_paranoid", "-1\n")
    _write(tmp_path, "proc/sys/kernel/randomize_va_space", "0\n")
    _write(tmp_path, "sys/devices/system/cpu/isolated", "2-3\n")
    checks = machine.noise_checks(tmp_path)
    assert [c.name for c in checks] == CHECK_NAMES
    assert [c.status for c in checks] == ["ok"] * len(CHECK_NAMES)
    assert checks[1].value == "bare metal"


def test_noise_checks_on_foreign_os(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing under root and no load average: every check is "unknown", none raises.
    monkeypatch.setattr(machine, "_load1", lambda: None)
    checks = machine.noise_checks(tmp_path)
    assert [c.name for c in checks] == CHECK_NAMES
    assert [c.status for c in checks] == ["unknown"] * len(CHECK_NAMES)


def test_governor_warns_when_one_cpu_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine, "_load1", lambda: 0.0)
    _write(tmp_path, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n")
    _write(tmp_path, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "schedutil\n")
    governor = machine.noise_checks(tmp_path)[2]
    assert (governor.name, governor.status) == ("governor", "warn")
    assert governor.value == "performance, schedutil"


# ---------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------


def _synthetic_info(**overrides: object) -> MachineInfo:
    fields: dict[str, object] = {
        "cpu_model": "Test CPU 9000",
        "logical_cores": 16,
        "physical_cores": 8,
        "caches": (
            CacheLevel(1, "Data", 32 * KIB, 64, 2),
            CacheLevel(1, "Instruction", 32 * KIB, 64, 2),
            CacheLevel(2, "Unified", 512 * KIB, 64, 2),
            CacheLevel(3, "Unified", 32 * MIB, 64, 16),
        ),
        "flags": frozenset({"avx2", "fma", "sse4_2", "constant_tsc", "fpu"}),
        "python_implementation": "CPython",
        "python_version": "3.11.7",
        "platform": "Linux-6.1-x86_64",
        "hostname": "bench-01",
    }
    fields.update(overrides)
    return MachineInfo(**fields)  # type: ignore[arg-type]


def _value_column(lines: list[str], values: list[str]) -> set[int]:
    return {line.index(value) for line, value in zip(lines, values)}


def test_format_machine() -> None:
    lines = machine.format_machine(_synthetic_info())
    labels = ["CPU:", "Cores:", "Caches:", "Flags:", "Python:", "Platform:", "Hostname:"]
    assert [line.split()[0] for line in lines] == labels
    by_label = {line.split()[0]: line for line in lines}
    assert by_label["CPU:"].endswith("Test CPU 9000")
    assert by_label["Cores:"].endswith("16 logical, 8 physical")
    assert by_label["Caches:"].endswith("L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 32 MiB")
    assert by_label["Flags:"].endswith("sse4_2 avx2 fma constant_tsc (5 flags in total)")
    assert by_label["Python:"].endswith("CPython 3.11.7")
    assert by_label["Hostname:"].endswith("bench-01")
    values = ["Test CPU 9000", "16 logical", "L1d", "sse4_2", "CPython", "Linux-6.1", "bench-01"]
    assert len(_value_column(lines, values)) == 1


def test_format_machine_unknowns_and_odd_sizes() -> None:
    info = _synthetic_info(
        physical_cores=None,
        caches=(
            CacheLevel(2, "Unified", 1536 * KIB, None, None),
            CacheLevel(1, "Data", 768, None, None),
        ),
        flags=frozenset({"fpu"}),
    )
    by_label = {line.split()[0]: line for line in machine.format_machine(info)}
    assert by_label["Cores:"].endswith("16 logical, unknown physical")
    assert by_label["Caches:"].endswith("L2 1536 KiB, L1d 768 B")
    assert by_label["Flags:"].endswith("- (1 flags in total)")
    bare = _synthetic_info(caches=(), flags=frozenset())
    empty = {line.split()[0]: line for line in machine.format_machine(bare)}
    assert empty["Caches:"].endswith("unknown")
    assert empty["Flags:"].endswith("unknown")


def test_format_noise_checks() -> None:
    checks = [
        NoiseCheck("clocksource", "tsc", "ok"),
        NoiseCheck("virtualization", "KVM (hypervisor flag)", "warn", "use bare metal"),
        NoiseCheck("perf_event_paranoid", "not Linux", "unknown"),
    ]
    lines = machine.format_noise_checks(checks)
    assert len(lines) == 3
    assert lines[0].startswith("  [ok] ")
    assert lines[1].startswith("  [warn] ")
    assert lines[2].startswith("  [unknown] ")
    assert lines[0].rstrip().endswith("tsc")
    assert lines[1].endswith("KVM (hypervisor flag)  -> use bare metal")
    assert "->" not in lines[0] and "->" not in lines[2]
    assert len(_value_column(lines, ["clocksource", "virtualization", "perf_event_paranoid"])) == 1
    assert len(_value_column(lines, ["tsc", "KVM", "not Linux"])) == 1
    assert machine.format_noise_checks([]) == []


# ---------------------------------------------------------------------------------------
# Smoke tests on the real machine: structure and types only
# ---------------------------------------------------------------------------------------


def test_real_core_counts() -> None:
    logical, physical = machine.core_counts()
    assert isinstance(logical, int) and logical >= 1
    assert physical is None or (isinstance(physical, int) and 1 <= physical <= logical)


def test_real_cpu_model_and_flags() -> None:
    model = machine.cpu_model()
    assert isinstance(model, str) and model
    flags = machine.cpu_flags()
    assert isinstance(flags, frozenset)
    assert all(isinstance(f, str) and f for f in flags)


@pytest.mark.skipif(
    not Path("/sys/devices/system/cpu/cpu0/cache").is_dir(),
    reason="kernel exposes no cacheinfo (/sys/devices/system/cpu/cpu0/cache absent)",
)
def test_real_caches() -> None:
    levels = machine.caches()
    assert levels, "cacheinfo directory exists but no cache level was parsed"
    assert all(isinstance(c, CacheLevel) and c.size_bytes > 0 and c.level >= 1 for c in levels)
    assert levels == sorted(levels, key=lambda c: (c.level, c.kind))


def test_real_machine_info_is_json_ready() -> None:
    info = machine.machine_info()
    data = info.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["logical_cores"] >= 1
    lines = machine.format_machine(info)
    assert lines and all(isinstance(line, str) for line in lines)


def test_real_noise_checks() -> None:
    checks = machine.noise_checks()
    assert [c.name for c in checks] == CHECK_NAMES
    assert all(c.status in ("ok", "warn", "unknown") for c in checks)
    assert all(c.advice == "" for c in checks if c.status == "ok")
    assert len(machine.format_noise_checks(checks)) == len(checks)
