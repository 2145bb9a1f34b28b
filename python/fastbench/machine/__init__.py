"""Read-only facts about the machine (CPU, caches, flags) and checks for benchmark noise.

Linux first: everything comes from /proc and /sys, read through ``root`` so tests can fake
the tree. Elsewhere every reader degrades to None / "unknown" instead of raising. Nothing
here measures, prints, or imports the rest of fastbench (other modules import this one).
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import psutil

__all__ = [
    "CacheLevel",
    "MachineInfo",
    "NoiseCheck",
    "Status",
    "caches",
    "check_aslr",
    "check_clocksource",
    "check_governor",
    "check_isolated_cpus",
    "check_load",
    "check_perf_event_paranoid",
    "check_turbo",
    "check_virtualization",
    "core_counts",
    "cpu_flags",
    "cpu_model",
    "detect_container",
    "detect_hypervisor",
    "format_bytes",
    "format_machine",
    "format_noise_checks",
    "machine_info",
    "noise_checks",
    "parse_cpu_list",
    "parse_size_bytes",
]

Status = Literal["ok", "warn", "unknown"]
_STATUSES: tuple[str, ...] = ("ok", "warn", "unknown")

_ROOT = Path("/")
_CPU_DIR = "sys/devices/system/cpu"
_CLOCKSOURCE_DIR = "sys/devices/system/clocksource/clocksource0"


# --------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheLevel:
    """One cache seen by CPU 0, as the kernel's cacheinfo describes it.

    Attributes
    ----------
    level : int
        1 for L1, 2 for L2, ...
    kind : str
        "Data", "Instruction" or "Unified" (the kernel's ``type`` file, verbatim).
    size_bytes : int
        Capacity in bytes.
    line_bytes : int or None
        Coherency line size in bytes, None when the kernel does not say.
    shared_by_cpus : int or None
        Number of logical CPUs sharing this cache, None when unknown.
    """

    level: int
    kind: str
    size_bytes: int
    line_bytes: int | None
    shared_by_cpus: int | None


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
        if self.status not in _STATUSES:
            raise ValueError(
                f"[NoiseCheck] status {self.status!r} is not one of {', '.join(_STATUSES)}"
            )


@dataclass(frozen=True)
class MachineInfo:
    """Static facts about the machine a benchmark ran on.

    Attributes
    ----------
    cpu_model : str
        Marketing name of the CPU, or "unknown".
    logical_cores : int
        Logical CPUs (hardware threads) the OS reports.
    physical_cores : int or None
        Physical cores, None when the OS does not say (common in VMs).
    caches : tuple of CacheLevel
        Caches seen by CPU 0, sorted by level then kind; empty when unknown.
    flags : frozenset of str
        CPU feature flags ("avx2", "hypervisor", ...); empty when unknown.
    python_implementation : str
        E.g. "CPython".
    python_version : str
        E.g. "3.11.7".
    platform : str
        ``platform.platform()``.
    hostname : str
        Network name of the machine, or "unknown".
    """

    cpu_model: str
    logical_cores: int
    physical_cores: int | None
    caches: tuple[CacheLevel, ...]
    flags: frozenset[str]
    python_implementation: str
    python_version: str
    platform: str
    hostname: str

    def to_dict(self) -> dict[str, Any]:
        """Return the facts as JSON-ready plain data (flags as a sorted list).

        Returns
        -------
        dict
            Keys are the attribute names; caches become a list of dicts.
        """
        return {
            "cpu_model": self.cpu_model,
            "logical_cores": self.logical_cores,
            "physical_cores": self.physical_cores,
            "caches": [asdict(cache) for cache in self.caches],
            "flags": sorted(self.flags),
            "python_implementation": self.python_implementation,
            "python_version": self.python_version,
            "platform": self.platform,
            "hostname": self.hostname,
        }


# --------------------------------------------------------------------------------------
# File access: the only place that touches the file system
# --------------------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    """Return the stripped text of ``path``, or None if it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        # Missing on non-Linux, EACCES for root-only sysfs files, EINVAL for some
        # write-only attributes: all mean "not known here".
        return None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # PermissionError is not swallowed by Path.exists before 3.12
        return False


def _glob(directory: Path, pattern: str) -> list[Path]:
    try:
        return list(directory.glob(pattern))
    except OSError:
        return []


def _trailing_int(path: Path) -> int:
    """Sort key for cpu12 / index3 style names, so cpu10 sorts after cpu9."""
    match = re.search(r"(\d+)$", path.name)
    return int(match.group(1)) if match else -1


def _cpuinfo_field(cpuinfo: str | None, key: str) -> str | None:
    """Return the value of the first ``key : value`` line in /proc/cpuinfo text."""
    if cpuinfo is None:
        return None
    for line in cpuinfo.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            return value.strip()
    return None


def _load1() -> float | None:
    """1-minute load average, None where the OS has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


# --------------------------------------------------------------------------------------
# Parsers for kernel text formats
# --------------------------------------------------------------------------------------

_SIZE_SUFFIX_BYTES = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size_bytes(text: str) -> int:
    """Parse a cacheinfo size such as "32K", "1024K", "32M" or "8192".

    The kernel writes sizes in binary units with a one-letter suffix
    (Documentation/ABI/testing/sysfs-devices-system-cpu); a bare number is bytes.

    Parameters
    ----------
    text : str
        The size string; surrounding whitespace and a trailing "B"/"iB" are allowed.

    Returns
    -------
    int
        The size in bytes.

    Raises
    ------
    ValueError
        If ``text`` is not a non-negative integer with an optional K/M/G suffix.
    """
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if match is None:
        raise ValueError(
            f"[parse_size_bytes] {text!r} is not a size like '32K', '32M' or '8192'"
        )
    return int(match.group(1)) * _SIZE_SUFFIX_BYTES[match.group(2).upper()]


def parse_cpu_list(text: str) -> frozenset[int]:
    """Parse a kernel CPU list such as "0", "0-1" or "0-3,8-11".

    This is the format of ``shared_cpu_list``, ``isolated`` and ``online`` in sysfs
    (Documentation/admin-guide/cputopology.rst). An empty string is an empty set.

    Parameters
    ----------
    text : str
        Comma-separated CPU numbers and inclusive ``first-last`` ranges.

    Returns
    -------
    frozenset of int
        The CPU numbers.

    Raises
    ------
    ValueError
        If an item is not a number or a range with first <= last.
    """
    cpus: set[int] = set()
    for item in text.strip().split(","):
        item = item.strip()
        if not item:
            continue
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if match is None:
            raise ValueError(f"[parse_cpu_list] {item!r} in {text!r} is not 'N' or 'N-M'")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ValueError(f"[parse_cpu_list] range {item!r} in {text!r} runs backwards")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


# --------------------------------------------------------------------------------------
# Machine facts
# --------------------------------------------------------------------------------------


def cpu_model(root: Path = _ROOT) -> str:
    """Return the CPU's model name.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /proc from (tests pass a fake tree).

    Returns
    -------
    str
        "model name" from /proc/cpuinfo, else ``platform.processor()``, else
        ``platform.machine()``, else "unknown".
    """
    model = _cpuinfo_field(_read(root / "proc/cpuinfo"), "model name")
    return model or platform.processor() or platform.machine() or "unknown"


def core_counts() -> tuple[int, int | None]:
    """Return the number of logical CPUs and of physical cores.

    Returns
    -------
    tuple of (int, int or None)
        Logical CPUs (at least 1) and physical cores (None when the OS does not say).
    """
    logical: int | None = psutil.cpu_count(logical=True)
    physical: int | None = psutil.cpu_count(logical=False)
    return (logical or os.cpu_count() or 1), physical


def _cache_level(index_dir: Path) -> CacheLevel | None:
    level, kind, size = (_read(index_dir / name) for name in ("level", "type", "size"))
    if level is None or kind is None or size is None:
        return None
    try:
        line_text = _read(index_dir / "coherency_line_size")
        shared_text = _read(index_dir / "shared_cpu_list")
        return CacheLevel(
            level=int(level),
            kind=kind,
            size_bytes=parse_size_bytes(size),
            line_bytes=int(line_text) if line_text else None,
            shared_by_cpus=len(parse_cpu_list(shared_text)) if shared_text else None,
        )
    except ValueError:
        return None


def caches(root: Path = _ROOT) -> list[CacheLevel]:
    """Return the caches CPU 0 sees, from /sys/devices/system/cpu/cpu0/cache/index*/.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /sys from (tests pass a fake tree).

    Returns
    -------
    list of CacheLevel
        Sorted by level, then kind ("Data" before "Instruction"); empty when the kernel
        does not expose cacheinfo (non-Linux, some ARM boards and VMs). Entries whose
        files are missing or malformed are skipped.
    """
    cache_dir = root / _CPU_DIR / "cpu0/cache"
    found = (_cache_level(d) for d in sorted(_glob(cache_dir, "index*"), key=_trailing_int))
    return sorted((c for c in found if c is not None), key=lambda c: (c.level, c.kind))


def _flags_from_cpuinfo(cpuinfo: str | None) -> frozenset[str]:
    # x86 calls the line "flags", arm64 calls it "Features".
    text = _cpuinfo_field(cpuinfo, "flags") or _cpuinfo_field(cpuinfo, "Features") or ""
    return frozenset(text.split())


def cpu_flags(root: Path = _ROOT) -> frozenset[str]:
    """Return the CPU feature flags from /proc/cpuinfo.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /proc from (tests pass a fake tree).

    Returns
    -------
    frozenset of str
        x86 "flags" (or arm64 "Features") of the first CPU; empty when unknown.
    """
    return _flags_from_cpuinfo(_read(root / "proc/cpuinfo"))


def _hostname() -> str:
    return platform.node() or "unknown"


def machine_info(root: Path = _ROOT) -> MachineInfo:
    """Collect the static facts about this machine.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /proc and /sys from (tests pass a fake tree).

    Returns
    -------
    MachineInfo
        Never raises for a missing or unreadable file; such facts are "unknown",
        None or empty.
    """
    logical, physical = core_counts()
    return MachineInfo(
        cpu_model=cpu_model(root),
        logical_cores=logical,
        physical_cores=physical,
        caches=tuple(caches(root)),
        flags=cpu_flags(root),
        python_implementation=platform.python_implementation(),
        python_version=platform.python_version(),
        platform=platform.platform(),
        hostname=_hostname(),
    )


# --------------------------------------------------------------------------------------
# Noise checks: each takes plain inputs so tests can feed synthetic values
# --------------------------------------------------------------------------------------

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


# The benchmark's own thread counts as one runnable task, so allow one task plus half the
# logical CPUs before warning: beyond that, other processes are likely to share a core or
# at least the caches and memory bandwidth with the benchmark.
_LOAD_PER_CORE_WARN = 0.5


def check_load(load1: float | None, logical_cores: int) -> NoiseCheck:
    """Check that the machine is otherwise idle.

    Parameters
    ----------
    load1 : float or None
        1-minute load average (runnable plus uninterruptible tasks), None if unknown.
    logical_cores : int
        Logical CPUs.

    Returns
    -------
    NoiseCheck
        "warn" when ``load1 > 1 + 0.5 * logical_cores``, "ok" below that, "unknown"
        when ``load1`` is None.
    """
    name = "load"
    if load1 is None:
        return NoiseCheck(name, "no load average on this OS", "unknown")
    value = f"{load1:.2f} (1 min) on {logical_cores} logical cores"
    if load1 > 1.0 + _LOAD_PER_CORE_WARN * logical_cores:
        return NoiseCheck(
            name,
            value,
            "warn",
            "other processes compete for the cores, caches and memory bandwidth; "
            "stop them or pin the benchmark to an idle core",
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
    paths = _glob(root / _CPU_DIR, "cpu[0-9]*/cpufreq/scaling_governor")
    read = (_read(p) for p in sorted(paths, key=lambda p: _trailing_int(p.parent.parent)))
    return [g for g in read if g]


def noise_checks(root: Path = _ROOT) -> list[NoiseCheck]:
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
    cpu = root / _CPU_DIR
    current = _read(root / _CLOCKSOURCE_DIR / "current_clocksource")
    available = _read(root / _CLOCKSOURCE_DIR / "available_clocksource")
    x86_flags = _cpuinfo_field(_read(root / "proc/cpuinfo"), "flags")
    hypervisor_flag = None if x86_flags is None else "hypervisor" in x86_flags.split()
    hypervisor = detect_hypervisor(
        hypervisor_flag,
        _read(root / "sys/class/dmi/id/sys_vendor"),
        _read(root / "sys/class/dmi/id/product_name"),
        available,
    )
    container = detect_container(
        _read(root / "proc/1/cgroup"),
        _exists(root / ".dockerenv"),
        _exists(root / "run/.containerenv"),
    )
    return [
        check_clocksource(current, available),
        check_virtualization(hypervisor, container, hypervisor_flag),
        check_governor(_governors(root)),
        check_turbo(_read(cpu / "intel_pstate/no_turbo"), _read(cpu / "cpufreq/boost")),
        check_load(_load1(), core_counts()[0]),
        check_perf_event_paranoid(_read(root / "proc/sys/kernel/perf_event_paranoid")),
        check_aslr(_read(root / "proc/sys/kernel/randomize_va_space")),
        check_isolated_cpus(_read(cpu / "isolated")),
    ]


# --------------------------------------------------------------------------------------
# Human-readable lines (the CLI prints them; this module never prints)
# --------------------------------------------------------------------------------------

# Flags worth a reader's attention: vector width and the TSC properties fastbench's
# clock relies on. Shown in this order when present.
_NOTABLE_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16",
    "amx_tile", "asimd", "sve", "sve2",
    "constant_tsc", "nonstop_tsc", "rdtscp", "hypervisor",
)  # fmt: skip


def format_bytes(size_bytes: int) -> str:
    """Format with the largest binary unit that divides exactly: 32 MiB, 48 KiB, 768 B."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size_bytes >= factor and size_bytes % factor == 0:
            return f"{size_bytes // factor} {unit}"
    return f"{size_bytes} B"


def _cache_label(cache: CacheLevel) -> str:
    suffix = {"Data": "d", "Instruction": "i"}.get(cache.kind, "")
    return f"L{cache.level}{suffix}"


def _format_caches(levels: Iterable[CacheLevel]) -> str:
    parts = [f"{_cache_label(c)} {format_bytes(c.size_bytes)}" for c in levels]
    return ", ".join(parts) if parts else "unknown"


def _format_flags(flags: frozenset[str]) -> str:
    if not flags:
        return "unknown"
    notable = [f for f in _NOTABLE_FLAGS if f in flags]
    return f"{' '.join(notable) or '-'} ({len(flags)} flags in total)"


def format_machine(info: MachineInfo) -> list[str]:
    """Describe a machine in aligned ``Label:  value`` lines.

    Parameters
    ----------
    info : MachineInfo
        The facts to describe.

    Returns
    -------
    list of str
        One line each for CPU, cores, caches, notable flags, Python, platform and
        hostname; caches read like "L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 32 MiB".
    """
    physical = "unknown" if info.physical_cores is None else str(info.physical_cores)
    rows = [
        ("CPU", info.cpu_model),
        ("Cores", f"{info.logical_cores} logical, {physical} physical"),
        ("Caches", _format_caches(info.caches)),
        ("Flags", _format_flags(info.flags)),
        ("Python", f"{info.python_implementation} {info.python_version}"),
        ("Platform", info.platform),
        ("Hostname", info.hostname),
    ]
    width = max(len(label) for label, _ in rows) + 1  # +1 for the colon
    return [f"{label + ':':<{width}} {value}" for label, value in rows]


def format_noise_checks(checks: Sequence[NoiseCheck]) -> list[str]:
    """Describe noise checks as aligned ``[status] name  value  -> advice`` lines.

    Parameters
    ----------
    checks : sequence of NoiseCheck
        The checks to describe, in display order.

    Returns
    -------
    list of str
        One line per check, e.g. ``"  [ok]      clocksource          tsc"``; the
        status, name and value columns line up, and advice follows ``->`` only for
        checks that have some.
    """
    if not checks:
        return []
    tag_width = max(len(f"[{s}]") for s in _STATUSES)
    name_width = max(len(c.name) for c in checks)
    lines = []
    for check in checks:
        line = f"  {'[' + check.status + ']':<{tag_width}} {check.name:<{name_width}}  "
        line += check.value
        if check.advice:
            line += f"  -> {check.advice}"
        lines.append(line)
    return lines
