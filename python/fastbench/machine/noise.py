"""Checks for sources of benchmark noise: clocksource, virtualization, frequency governor,
turbo, load, perf_event_paranoid, ASLR and isolated CPUs, each a NoiseCheck verdict.

Every check takes plain inputs so tests can feed synthetic values; :func:`noise_checks`
reads them from /proc and /sys (through :mod:`.sysfs`). Nothing here measures or prints
(the text is :mod:`fastbench.report.machine`'s).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .facts import core_counts, parse_cpu_list
from .sysfs import (
    CLOCKSOURCE_DIR,
    CPU_DIR,
    ROOT,
    cpuinfo_field,
    glob,
    path_exists,
    read_text,
    trailing_int,
)

__all__ = [
    "STATUSES",
    "NoiseCheck",
    "Status",
    "check_aslr",
    "check_clocksource",
    "check_governor",
    "check_isolated_cpus",
    "check_load",
    "check_perf_event_paranoid",
    "check_turbo",
    "check_virtualization",
    "detect_container",
    "detect_hypervisor",
    "noise_checks",
]

Status = Literal["ok", "warn", "unknown"]
STATUSES: tuple[str, ...] = ("ok", "warn", "unknown")


@dataclass(frozen=True)
class NoiseCheck:
    """The verdict of one check for sources of benchmark noise.

    Attributes
    ----------
    name : str
        Short identifier, e.g. "clocksource".
    value : str
        What was found, or why nothing could be found (for "unknown").
    status : {"ok", "warn", "unknown"}
        "warn" means results on this machine may be noisier than they need to be.
    advice : str
        What to do about a warning; "" when the status is "ok".
    """

    name: str
    value: str
    status: Status
    advice: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(
                f"[NoiseCheck] status {self.status!r} is not one of {', '.join(STATUSES)}"
            )


def _load1() -> float | None:
    """1-minute load average, None where the OS has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


# Clocksources that are cheap to read from user space through the vDSO. arm64's
# arch_sys_counter plays the role tsc plays on x86.
_FAST_CLOCKSOURCES = ("tsc", "arch_sys_counter")


def check_clocksource(current: str | None, available: str | None) -> NoiseCheck:
    """Check that the kernel's clocksource is the TSC.

    Parameters
    ----------
    current : str or None
        Contents of ``current_clocksource``, None if unreadable.
    available : str or None
        Contents of ``available_clocksource`` (space-separated), None if unreadable.

    Returns
    -------
    NoiseCheck
        "ok" for tsc (or arm64's arch_sys_counter); "warn" for anything else, since
        hpet and acpi_pm cannot be read through the vDSO (every clock read becomes a
        system call) and kvm-clock, while acceptable in a VM, is slower to read than
        tsc; "unknown" when ``current`` is None.
    """
    name = "clocksource"
    if not current:
        return NoiseCheck(name, "not exposed (not Linux?)", "unknown")
    if current in _FAST_CLOCKSOURCES:
        return NoiseCheck(name, current, "ok")
    offered = available.split() if available else []
    switch = (
        "switch with `echo tsc | sudo tee /sys/devices/system/clocksource/"
        "clocksource0/current_clocksource`"
    )
    if current == "kvm-clock":
        advice = "kvm-clock is acceptable in a VM but slower to read than tsc"
    else:
        advice = f"{current} is much slower to read than tsc and adds timer overhead"
    if "tsc" in offered:
        advice += f"; {switch}"
    elif available is not None:
        advice += "; this kernel does not offer tsc (it may have marked it unstable)"
    else:
        advice += "; use tsc if available_clocksource lists it"
    return NoiseCheck(name, current, "warn", advice)


# (needle searched in "sys_vendor product_name", label, counts as a VM on its own).
# Amazon EC2 needs the hypervisor flag too, since *.metal instances may report the same
# vendor.
# Google and Microsoft also sell laptops, so their needles are product names.
_DMI_HYPERVISORS: tuple[tuple[str, str, bool], ...] = (
    ("Google Compute Engine", "Google Compute Engine", True),
    ("Amazon EC2", "Amazon EC2", False),
    ("Virtual Machine", "Microsoft Hyper-V", True),
    ("VMware", "VMware", True),
    ("VirtualBox", "VirtualBox", True),
    ("Xen", "Xen", True),
    ("KVM", "KVM", True),
    ("QEMU", "QEMU", True),
    ("Bochs", "Bochs", True),
    ("Parallels", "Parallels", True),
    ("OpenStack", "OpenStack", True),
)

# Paravirtual clocksources name their hypervisor when DMI is hidden (as in containers).
_CLOCKSOURCE_HYPERVISORS: tuple[tuple[str, str], ...] = (
    ("kvm-clock", "KVM"),
    ("hyperv_clocksource", "Microsoft Hyper-V"),
    ("xen", "Xen"),
)


def detect_hypervisor(
    hypervisor_flag: bool | None,
    sys_vendor: str | None,
    product_name: str | None,
    available_clocksource: str | None,
) -> tuple[str, list[str]] | None:
    """Name the hypervisor this machine runs under, if any.

    Parameters
    ----------
    hypervisor_flag : bool or None
        Whether /proc/cpuinfo has the x86 "hypervisor" flag; None if not x86 or unknown.
    sys_vendor, product_name : str or None
        Contents of /sys/class/dmi/id/sys_vendor and product_name.
    available_clocksource : str or None
        Space-separated clocksource names; kvm-clock and friends betray a hypervisor.

    Returns
    -------
    tuple of (str, list of str) or None
        The hypervisor's name ("KVM", "VM" when unnamed) and the evidence found, or
        None when nothing points to a VM.
    """
    dmi = f"{sys_vendor or ''} {product_name or ''}"
    dmi_label: str | None = None
    dmi_is_vm = False
    for needle, label, always_vm in _DMI_HYPERVISORS:
        if needle.lower() in dmi.lower():
            dmi_label, dmi_is_vm = label, always_vm
            break
    sources = available_clocksource.split() if available_clocksource else []
    clock_label: str | None = None
    clock_source: str | None = None
    for prefix, label in _CLOCKSOURCE_HYPERVISORS:
        hit = next((s for s in sources if s.startswith(prefix)), None)
        if hit is not None:
            clock_label, clock_source = label, hit
            break
    evidence: list[str] = []
    if hypervisor_flag:
        evidence.append("hypervisor flag")
    if dmi_label is not None and (dmi_is_vm or hypervisor_flag):
        evidence.append("DMI")
    if clock_source is not None:
        evidence.append(clock_source)
    if not evidence:
        return None
    named = dmi_label if "DMI" in evidence else clock_label
    return (named or "VM"), evidence


_CGROUP_CONTAINERS: tuple[tuple[str, str], ...] = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("libpod", "podman"),
    ("containerd", "containerd"),
    ("lxc", "lxc"),
)


def detect_container(cgroup: str | None, dockerenv: bool, containerenv: bool) -> str | None:
    """Name the container runtime this process runs in, if any.

    Parameters
    ----------
    cgroup : str or None
        Contents of /proc/1/cgroup. Under cgroup v2 with a cgroup namespace it is just
        "0::/", hence the marker files below.
    dockerenv : bool
        Whether /.dockerenv exists (created by Docker).
    containerenv : bool
        Whether /run/.containerenv exists (created by Podman).

    Returns
    -------
    str or None
        "docker", "podman", "kubernetes", "containerd", "lxc", or None if none found.
    """
    for needle, kind in _CGROUP_CONTAINERS:
        if cgroup and needle in cgroup:
            return kind
    if dockerenv:
        return "docker"
    if containerenv:
        return "podman"
    return None


def check_virtualization(
    hypervisor: tuple[str, list[str]] | None,
    container: str | None,
    hypervisor_flag: bool | None,
) -> NoiseCheck:
    """Check whether benchmarks run in a VM or a container rather than on bare metal.

    Parameters
    ----------
    hypervisor : tuple of (str, list of str) or None
        The result of :func:`detect_hypervisor`.
    container : str or None
        The result of :func:`detect_container`.
    hypervisor_flag : bool or None
        Whether the x86 "hypervisor" flag was seen; None when cpu flags are unknown, in
        which case no evidence means "unknown" rather than "bare metal".

    Returns
    -------
    NoiseCheck
        "warn" in a VM (hardware counters are often missing and steal time adds
        noise) or a container (perf_event_open is often blocked); "ok" on bare metal.
    """
    name = "virtualization"
    parts: list[str] = []
    advice: list[str] = []
    if hypervisor is not None:
        label, evidence = hypervisor
        parts.append(f"{label} ({', '.join(evidence)})")
        advice.append(
            "hardware counters are often unavailable in VMs and steal time adds noise; "
            "use bare metal for final numbers"
        )
    if container is not None:
        parts.append(f"container ({container})")
        # Docker's default seccomp profile allows perf_event_open only with
        # CAP_PERFMON or CAP_SYS_ADMIN (moby/moby#43987).
        advice.append("containers often block perf_event_open (docker: --cap-add PERFMON)")
    if parts:
        return NoiseCheck(name, ", ".join(parts), "warn", "; ".join(advice))
    if hypervisor_flag is None:
        return NoiseCheck(name, "no cpu flags or DMI data", "unknown")
    return NoiseCheck(name, "bare metal", "ok")


def check_governor(governors: Sequence[str]) -> NoiseCheck:
    """Check that every CPU uses the "performance" frequency governor.

    Parameters
    ----------
    governors : sequence of str
        ``scaling_governor`` of each CPU that exposes one; empty when none does.

    Returns
    -------
    NoiseCheck
        "ok" when all are "performance"; "warn" otherwise, since other governors
        change the clock frequency under the benchmark; "unknown" when empty.
    """
    name = "governor"
    if not governors:
        return NoiseCheck(name, "not exposed (typical of VMs)", "unknown")
    found = sorted(set(governors))
    value = ", ".join(found)
    if found == ["performance"]:
        return NoiseCheck(name, value, "ok")
    return NoiseCheck(
        name,
        value,
        "warn",
        "frequency scaling changes the clock under the benchmark; "
        "run `sudo cpupower frequency-set -g performance`",
    )


def check_turbo(no_turbo: str | None, boost: str | None) -> NoiseCheck:
    """Check that turbo/boost is disabled.

    Parameters
    ----------
    no_turbo : str or None
        Contents of /sys/devices/system/cpu/intel_pstate/no_turbo ("1" = turbo off).
        Documented in Documentation/admin-guide/pm/intel_pstate.rst.
    boost : str or None
        Contents of /sys/devices/system/cpu/cpufreq/boost ("0" = boost off), used by
        acpi-cpufreq and others (Documentation/admin-guide/pm/cpufreq.rst).

    Returns
    -------
    NoiseCheck
        "ok" when off, "warn" when on (the boost clock depends on temperature and on
        how many cores are busy), "unknown" when neither file is readable.
    """
    name = "turbo"
    if no_turbo in ("0", "1"):
        if no_turbo == "1":
            return NoiseCheck(name, "off (intel_pstate)", "ok")
        return NoiseCheck(
            name,
            "on (intel_pstate)",
            "warn",
            "turbo clocks vary with temperature and load; disable for stable numbers: "
            "`echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo`",
        )
    if boost in ("0", "1"):
        if boost == "0":
            return NoiseCheck(name, "off (cpufreq boost)", "ok")
        return NoiseCheck(
            name,
            "on (cpufreq boost)",
            "warn",
            "boost clocks vary with temperature and load; disable for stable numbers: "
            "`echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost`",
        )
    return NoiseCheck(name, "not exposed (typical of VMs)", "unknown")


# Any other runnable task takes time from a benchmark: a benchmark that uses every core
# (a threaded GEMM, the roofline calibration) loses its share outright, and one on a single
# core still finds the others on its core (the scheduler balances load, not quiet) or on
# its sibling hyperthread, and sharing the last-level cache, the memory bandwidth and the
# power budget. Warn once the others keep more than a quarter of the logical CPUs busy on
# average, far below the load that fills every core: 0.5 on 2 CPUs, 2 on 8, 16 on 64.
_LOAD_PER_CORE_WARN = 0.25
# The load average is the kernel's exponentially weighted mean of the runnable tasks, with a
# 60 s time constant, so a second of this process's CPU time adds at most 1/60 to it.
_LOAD_TIME_CONSTANT_S = 60.0


def _own_load(logical_cores: int) -> float:
    """At most what this process, and the children it has waited for, added to the 1-minute
    load average: its CPU seconds / 60, no more than every core. Saving a result right after
    a long measurement must not call the measurement's own thread another process."""
    t = os.times()
    cpu_s = t.user + t.system + t.children_user + t.children_system
    return min(cpu_s / _LOAD_TIME_CONSTANT_S, float(logical_cores))


def check_load(load1: float | None, logical_cores: int, own_load: float = 0.0) -> NoiseCheck:
    """Check that no other process competes for the machine.

    Parameters
    ----------
    load1 : float or None
        1-minute load average (runnable plus uninterruptible tasks), None if unknown.
    logical_cores : int
        Logical CPUs.
    own_load : float
        How much of ``load1`` the checking process may have added itself (its recent CPU
        time / 60 s at most); :func:`noise_checks` passes that bound.

    Returns
    -------
    NoiseCheck
        "warn" when the others' load, ``load1 - own_load``, exceeds 0.25 per logical CPU
        (0.5 on 2 CPUs): then other tasks keep a quarter of the machine busy and take time,
        cache and memory bandwidth from a benchmark. "ok" below that, "unknown" when
        ``load1`` is None.
    """
    name = "load"
    if load1 is None:
        return NoiseCheck(name, "no load average on this OS", "unknown")
    own = min(max(own_load, 0.0), load1)
    value = f"{load1:.2f} (1 min) on {logical_cores} logical cores"
    if own >= 0.005:
        value += f", up to {own:.2f} of it this process's own"
    if load1 - own > _LOAD_PER_CORE_WARN * logical_cores:
        return NoiseCheck(
            name,
            value,
            "warn",
            "other processes compete for the cores, caches and memory bandwidth (more than "
            f"{_LOAD_PER_CORE_WARN:g} runnable tasks per logical CPU on average); stop them, "
            "or pin the benchmark to an idle core",
        )
    return NoiseCheck(name, value, "ok")


def check_perf_event_paranoid(value: str | None) -> NoiseCheck:
    """Check that perf_event_paranoid allows counting one's own process in user space.

    Parameters
    ----------
    value : str or None
        Contents of /proc/sys/kernel/perf_event_paranoid, None if unreadable.

    Returns
    -------
    NoiseCheck
        "ok" for 2 or lower (2 allows user-space counting of your own processes, which
        is all fastbench needs; Documentation/admin-guide/sysctl/kernel.rst); "warn"
        for 3 or higher (a Debian/Android patch that forbids unprivileged use);
        "unknown" when missing or not an integer.
    """
    name = "perf_event_paranoid"
    if value is None:
        return NoiseCheck(name, "not Linux or perf_event not available", "unknown")
    try:
        level = int(value)
    except ValueError:
        return NoiseCheck(name, f"unreadable value {value!r}", "unknown")
    if level <= 2:
        return NoiseCheck(name, str(level), "ok")
    return NoiseCheck(
        name,
        str(level),
        "warn",
        "unprivileged hardware counters are disabled; "
        "run `sudo sysctl kernel.perf_event_paranoid=2` (or grant CAP_PERFMON)",
    )


_ASLR_MEANINGS = {"0": "disabled", "1": "conservative", "2": "full"}


def check_aslr(value: str | None) -> NoiseCheck:
    """Report address-space layout randomization (informational, never a warning).

    ASLR moves stack and heap between runs, which can shift alignment-sensitive
    timings slightly; it is reported so results can be compared, not changed.

    Parameters
    ----------
    value : str or None
        Contents of /proc/sys/kernel/randomize_va_space, None if unreadable.

    Returns
    -------
    NoiseCheck
        "ok" with the value explained, or "unknown" when unreadable.
    """
    name = "aslr"
    if value is None:
        return NoiseCheck(name, "not exposed (not Linux?)", "unknown")
    meaning = _ASLR_MEANINGS.get(value)
    return NoiseCheck(name, f"{value} ({meaning})" if meaning else value, "ok")


def check_isolated_cpus(value: str | None) -> NoiseCheck:
    """Report CPUs isolated from the scheduler with ``isolcpus`` (informational).

    Parameters
    ----------
    value : str or None
        Contents of /sys/devices/system/cpu/isolated, a CPU list ("" when none are
        isolated), None if unreadable.

    Returns
    -------
    NoiseCheck
        "ok" with the list and count, or "unknown" when unreadable or malformed.
    """
    name = "isolated_cpus"
    if value is None:
        return NoiseCheck(name, "not exposed (not Linux?)", "unknown")
    try:
        cpus = parse_cpu_list(value)
    except ValueError:
        return NoiseCheck(name, f"unreadable value {value!r}", "unknown")
    if not cpus:
        return NoiseCheck(name, "none", "ok")
    return NoiseCheck(name, f"{value} ({len(cpus)} CPUs)", "ok")


def _governors(root: Path) -> list[str]:
    paths = glob(root / CPU_DIR, "cpu[0-9]*/cpufreq/scaling_governor")
    read = (read_text(p) for p in sorted(paths, key=lambda p: trailing_int(p.parent.parent)))
    return [g for g in read if g]


def noise_checks(root: Path = ROOT) -> list[NoiseCheck]:
    """Run every noise check against this machine.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /proc and /sys from (tests pass a fake tree).

    Returns
    -------
    list of NoiseCheck
        In order: clocksource, virtualization, governor, turbo, load,
        perf_event_paranoid, aslr, isolated_cpus. Never raises for missing files.
    """
    cpu = root / CPU_DIR
    current = read_text(root / CLOCKSOURCE_DIR / "current_clocksource")
    available = read_text(root / CLOCKSOURCE_DIR / "available_clocksource")
    x86_flags = cpuinfo_field(read_text(root / "proc/cpuinfo"), "flags")
    hypervisor_flag = None if x86_flags is None else "hypervisor" in x86_flags.split()
    hypervisor = detect_hypervisor(
        hypervisor_flag,
        read_text(root / "sys/class/dmi/id/sys_vendor"),
        read_text(root / "sys/class/dmi/id/product_name"),
        available,
    )
    container = detect_container(
        read_text(root / "proc/1/cgroup"),
        path_exists(root / ".dockerenv"),
        path_exists(root / "run/.containerenv"),
    )
    logical = core_counts()[0]
    return [
        check_clocksource(current, available),
        check_virtualization(hypervisor, container, hypervisor_flag),
        check_governor(_governors(root)),
        check_turbo(read_text(cpu / "intel_pstate/no_turbo"), read_text(cpu / "cpufreq/boost")),
        check_load(_load1(), logical, _own_load(logical)),
        check_perf_event_paranoid(read_text(root / "proc/sys/kernel/perf_event_paranoid")),
        check_aslr(read_text(root / "proc/sys/kernel/randomize_va_space")),
        check_isolated_cpus(read_text(cpu / "isolated")),
    ]
