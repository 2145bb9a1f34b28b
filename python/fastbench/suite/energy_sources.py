"""Where package energy is read from: the RAPL counters behind powercap sysfs and the perf
``power`` PMU, the wrap arithmetic of a powercap counter, and :func:`energy_source`, which
opens the first way that works here or says, way by way, why none could be read. Readers
only: the meter, the estimate and the per-call result are in :mod:`.energy`. Nothing here
prints; a missing or refused counter is a reason string, not an error.
"""

from __future__ import annotations

import ctypes
import errno
import math
import os
import platform
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

from .._checks import check_choice, check_int

__all__ = [
    "METHODS",
    "PERF_POWER_ROOT",
    "POWERCAP_ROOT",
    "EnergySource",
    "energy_delta_uj",
    "energy_source",
]

METHODS = ("rapl-powercap", "rapl-perf", "estimated")
WAYS = ("powercap", "perf")

POWERCAP_ROOT = Path("/sys/class/powercap")
PERF_POWER_ROOT = Path("/sys/bus/event_source/devices/power")
PERF_PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")


# --- counter arithmetic ----------------------------------------------------------------


def energy_delta_uj(before_uj: int, after_uj: int, max_range_uj: int) -> int:
    """Energy between two reads of a powercap ``energy_uj`` counter, across one wrap.

    The counter shows values from 0 to ``max_energy_range_uj`` inclusive and then starts
    again from 0. The kernel computes both files with the same conversion
    (drivers/powercap/intel_rapl_common.c: ``get_max_energy_counter`` is
    ``rapl_unit_xlate(rd, ENERGY_UNIT, ENERGY_STATUS_MASK, 0)``, the largest value of the
    32-bit MSR counter in microjoules; Documentation/ABI/testing/sysfs-class-powercap:
    "max_energy_range_uj: Range of the above energy counter in micro-joules"). So a reading
    below the previous one means the counter passed its maximum and wrapped once::

        delta = after - before                        if after >= before
        delta = after - before + max_range_uj + 1     otherwise

    The hardware counter steps by one energy unit (15.3 or 61 uJ), so the true modulus is
    ``max_range_uj`` plus one unit; ``+ 1`` is the smallest modulus the microjoule values
    allow, which undercounts by less than one unit per wrap (below the counter's
    resolution, once every minutes). More than one wrap between two reads cannot be
    detected: read more often than ``max_range_uj / power`` (see :data:`.energy.POLL_S`).

    Parameters
    ----------
    before_uj, after_uj : int
        Two readings of ``energy_uj``, in microjoules, each in [0, ``max_range_uj``].
    max_range_uj : int
        The zone's ``max_energy_range_uj``, in microjoules (positive).

    Returns
    -------
    int
        The energy between the readings, in microjoules (>= 0).

    Raises
    ------
    TypeError
        An argument is not an int.
    ValueError
        ``max_range_uj`` is not positive, or a reading lies outside [0, ``max_range_uj``].
    """
    max_range = check_int("max_range_uj", max_range_uj, 1)
    before = check_int("before_uj", before_uj, 0, maximum=max_range)
    after = check_int("after_uj", after_uj, 0, maximum=max_range)
    if after >= before:
        return after - before
    return after - before + max_range + 1


# --- readers ---------------------------------------------------------------------------


class EnergyReader(Protocol):
    """A cumulative energy counter: ``read_j()`` gives joules since the reader opened."""

    needs_polling: bool

    def read_j(self) -> float: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class _Zone:
    path: Path
    name: str
    max_range_uj: int


class _PowercapReader:
    """Sum of the package zones' ``energy_uj``, unwrapped: every read adds each zone's
    increase since the previous read, so wraps are handled as long as reads come more
    often than the wrap period (an open :class:`.energy.EnergyMeter` polls every
    :data:`.energy.POLL_S`)."""

    needs_polling = True

    def __init__(self, zones: Sequence[_Zone]) -> None:
        self._zones = tuple(zones)
        self._lock = threading.Lock()
        self._last_uj = [_read_uj(z.path / "energy_uj") for z in self._zones]
        self._total_uj = 0

    def read_j(self) -> float:
        with self._lock:  # the poller and the measuring thread both read
            for i, zone in enumerate(self._zones):
                now_uj = _read_uj(zone.path / "energy_uj")
                self._total_uj += energy_delta_uj(self._last_uj[i], now_uj, zone.max_range_uj)
                self._last_uj[i] = now_uj
            return self._total_uj * 1e-6

    def close(self) -> None:
        pass


class _PerfReader:
    """Sum of the perf ``power/energy-pkg/`` counters, one per package. The kernel's RAPL
    PMU keeps a 64-bit count and folds the MSR's 32-bit wraps in itself
    (arch/x86/events/rapl.c polls it with an hrtimer), so no polling is needed here."""

    needs_polling = False

    def __init__(self, fds: Sequence[int], scale_j: float) -> None:
        self._fds = tuple(fds)
        self._scale_j = scale_j
        self._start = [_read_count(fd) for fd in self._fds]

    def read_j(self) -> float:
        counts = [_read_count(fd) - s for fd, s in zip(self._fds, self._start)]
        return float(sum(counts)) * self._scale_j

    def close(self) -> None:
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = ()


def _read_uj(path: Path) -> int:
    return int(path.read_text(encoding="ascii").strip())


def _read_count(fd: int) -> int:
    data = os.read(fd, 8)
    if len(data) != 8:
        raise OSError(errno.EIO, f"short read of a perf counter ({len(data)} bytes)")
    count: int = struct.unpack("<Q", data)[0]
    return count


# --- powercap --------------------------------------------------------------------------


def _open_powercap(root: Path) -> tuple[_PowercapReader | None, tuple[str, ...], str]:
    """The reader of the package zones under ``root``, their names, or the reason none."""
    if not root.is_dir():
        return None, (), (f"no {root} (no RAPL exposed: typical in a VM or container, or "
                          "the intel_rapl_msr driver is not loaded)")
    try:
        candidates = sorted(root.glob("intel-rapl:*"), key=lambda p: p.name)
    except OSError as exc:
        return None, (), f"cannot list {root}: {exc.strerror or exc}"
    zones: list[_Zone] = []
    for path in candidates:
        if path.name.count(":") != 1:  # intel-rapl:0:0 and below are subzones
            continue
        try:
            name = (path / "name").read_text(encoding="ascii").strip()
        except OSError:
            continue
        if not name.startswith("package-"):  # psys covers more than the package
            continue
        try:
            max_range = int((path / "max_energy_range_uj").read_text(encoding="ascii"))
            _read_uj(path / "energy_uj")
        except PermissionError:
            return None, (), (
                f"{path / 'energy_uj'} is readable by root only (Linux restricts it since "
                "November 2020 against the Platypus attack, CVE-2020-8694): run as root or "
                "grant read access (chmod o+r, or a udev rule)")
        except OSError as exc:
            return None, (), f"cannot read {path}: {exc.strerror or exc}"
        except ValueError:
            return None, (), f"{path} holds a counter that is not an integer"
        if max_range <= 0:
            return None, (), f"{path}/max_energy_range_uj is {max_range}, not positive"
        zones.append(_Zone(path, name, max_range))
    if not zones:
        return None, (), (f"{root} has no intel-rapl package zone (RAPL is not exposed: "
                          "typical in a VM)")
    try:
        reader = _PowercapReader(zones)
    except (OSError, ValueError) as exc:
        return None, (), f"cannot read the package counters: {exc}"
    return reader, tuple(f"{z.path.name} {z.name}" for z in zones), ""


# --- perf ------------------------------------------------------------------------------


class _PerfEventAttr(ctypes.Structure):
    """struct perf_event_attr up to PERF_ATTR_SIZE_VER5 (112 bytes), as in
    include/uapi/linux/perf_event.h; the bit fields (disabled, inherit, ... ) are one u64
    ``flags`` here, all zero: enabled at once, nothing excluded (the RAPL PMU refuses
    exclusions and sampling)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
        ("branch_sample_type", ctypes.c_uint64),
        ("sample_regs_user", ctypes.c_uint64),
        ("sample_stack_user", ctypes.c_uint32),
        ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64),
        ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16),
        ("reserved_2", ctypes.c_uint16),
    ]


_PERF_ATTR_SIZE_VER5 = 112
_SYS_PERF_EVENT_OPEN_X86_64 = 298
_PERF_FLAG_FD_CLOEXEC = 8


def _perf_event_open(pmu_type: int, config: int, cpu: int) -> int:
    """A system-wide counter of (``pmu_type``, ``config``) on ``cpu``: its fd, or OSError."""
    attr = _PerfEventAttr()
    attr.type = pmu_type
    attr.size = _PERF_ATTR_SIZE_VER5
    attr.config = config
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = int(libc.syscall(ctypes.c_long(_SYS_PERF_EVENT_OPEN_X86_64), ctypes.byref(attr),
                          ctypes.c_int(-1), ctypes.c_int(cpu), ctypes.c_int(-1),
                          ctypes.c_ulong(_PERF_FLAG_FD_CLOEXEC)))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def _perf_config(root: Path, event: str) -> int:
    """The ``config`` value of ``event`` ("event=0x02"), placed by the PMU's format files
    ("config:0-7"); ValueError when a term cannot be placed."""
    config = 0
    for term in event.split(","):
        key, sep, value = term.strip().partition("=")
        number = int(value, 0) if sep else 1
        spec = (root / "format" / key).read_text(encoding="ascii").strip() \
            if (root / "format" / key).is_file() else "config:0-7" if key == "event" else ""
        field, _, ranges = spec.partition(":")
        if field != "config" or not ranges:
            raise ValueError(f"term {term!r} has format {spec!r}, not a config field")
        shift_in = 0
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            lo = int(low)
            width = int(high) - lo + 1 if high else 1
            config |= ((number >> shift_in) & ((1 << width) - 1)) << lo
            shift_in += width
    return config


def _cpus(text: str) -> list[int]:
    """CPU numbers of a cpumask list ("0,48" or "0-1")."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if part:
            low, _, high = part.partition("-")
            cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def _paranoid_text() -> str:
    try:
        return f"now {PERF_PARANOID.read_text(encoding='ascii').strip()}"
    except OSError:
        return "unknown"


def _open_perf(root: Path) -> tuple[_PerfReader | None, tuple[str, ...], str]:
    """The reader of ``power/energy-pkg/`` on one CPU per package, or the reason none."""
    if not (root / "type").is_file():
        return None, (), f"no {root} (no RAPL perf PMU: typical in a VM)"
    event_file = root / "events" / "energy-pkg"
    if not event_file.is_file():
        return None, (), f"the power PMU has no energy-pkg event ({event_file} is absent)"
    try:
        pmu_type = int((root / "type").read_text(encoding="ascii"))
        config = _perf_config(root, event_file.read_text(encoding="ascii").strip())
        scale_file = root / "events" / "energy-pkg.scale"
        scale_j = float(scale_file.read_text(encoding="ascii")) if scale_file.is_file() \
            else 2.0**-32
        unit_file = root / "events" / "energy-pkg.unit"
        unit = unit_file.read_text(encoding="ascii").strip() if unit_file.is_file() \
            else "Joules"
        cpus = _cpus((root / "cpumask").read_text(encoding="ascii")) \
            if (root / "cpumask").is_file() else [0]
    except (OSError, ValueError) as exc:
        return None, (), f"cannot read the power PMU's description in {root}: {exc}"
    if unit != "Joules":
        return None, (), f"energy-pkg counts in {unit!r}, not Joules"
    if not math.isfinite(scale_j) or scale_j <= 0:
        return None, (), f"energy-pkg.scale is {scale_j}, not a positive number"
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None, (), (f"perf_event_open is called here for Linux on x86-64 only, not "
                          f"{platform.system()} on {platform.machine()}")
    fds: list[int] = []
    try:
        for cpu in cpus or [0]:
            fds.append(_perf_event_open(pmu_type, config, cpu))
        reader = _PerfReader(fds, scale_j)
    except Exception as exc:  # any failure is a reason, never the caller's exception
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        return None, (), _perf_reason(exc)
    return reader, tuple(f"power/energy-pkg/ cpu{c}" for c in cpus or [0]), ""


def _perf_reason(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM):
        return (f"perf_event_open refused ({errno.errorcode[exc.errno]}): a system-wide power "
                f"event needs perf_event_paranoid <= 0 ({_paranoid_text()}) or CAP_PERFMON")
    if isinstance(exc, OSError) and exc.errno is not None:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
        return f"perf_event_open failed ({name}: {os.strerror(exc.errno)})"
    return f"perf_event_open failed: {type(exc).__name__}: {exc}"


# --- the source ------------------------------------------------------------------------


class EnergySource:
    """What energy is measured with: a RAPL reader, or nothing and the reasons why.

    Attributes
    ----------
    method : str
        "rapl-powercap", "rapl-perf" or "estimated" (no reader: energy is estimated).
    zones : tuple of str
        What is summed ("intel-rapl:0 package-0", "power/energy-pkg/ cpu0"); empty when
        estimated.
    reasons : tuple of str
        One "way: why" entry for each way that was tried and could not be read.
    """

    def __init__(self, method: str, reader: EnergyReader | None, zones: Sequence[str] = (),
                 reasons: Sequence[str] = ()) -> None:
        self.method = check_choice("method", method, METHODS)
        if (reader is None) != (method == "estimated"):
            raise ValueError(f"an EnergySource of method {method!r} needs "
                             f"{'no' if method == 'estimated' else 'a'} reader")
        self._reader = reader
        self.zones = tuple(zones)
        self.reasons = tuple(reasons)

    @property
    def estimated(self) -> bool:
        """Whether energy is estimated (no RAPL reader)."""
        return self._reader is None

    @property
    def needs_polling(self) -> bool:
        """Whether the counter wraps and must be read at least every :data:`.energy.POLL_S`."""
        return self._reader is not None and self._reader.needs_polling

    @property
    def reason(self) -> str:
        """Why RAPL is not used ("RAPL not readable: powercap: ...; perf: ..."); "" when
        measured."""
        if not self.estimated:
            return ""
        if not self.reasons:
            return "RAPL not tried (no way was preferred)"
        return "RAPL not readable: " + "; ".join(self.reasons)

    def read_j(self) -> float:
        """Cumulative package energy since the source opened, in joules.

        Raises
        ------
        ValueError
            The source is estimated: there is no counter to read.
        OSError
            The counter could not be read.
        """
        if self._reader is None:
            raise ValueError(f"no RAPL counter to read: {self.reason}")
        return self._reader.read_j()

    def close(self) -> None:
        """Release the counters (perf file descriptors); reading afterwards is an error."""
        if self._reader is not None:
            self._reader.close()

    def __enter__(self) -> EnergySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lines(self) -> list[str]:
        """Text lines: the method and the zones summed, or the reasons none was read."""
        if self.estimated:
            return [f"energy: estimated ({self.reason})"]
        return [f"energy: {self.method}, sum of " + ", ".join(self.zones)]

    def __repr__(self) -> str:
        return (f"EnergySource(method={self.method!r}, zones={self.zones!r}, "
                f"reasons={self.reasons!r})")


def energy_source(*, prefer: Sequence[str] = WAYS, powercap_root: Path | str = POWERCAP_ROOT,
                  perf_root: Path | str = PERF_POWER_ROOT) -> EnergySource:
    """The first way of reading package energy that works here, in the order ``prefer``.

    Never raises for missing or refused counters: the source is then "estimated" and its
    ``reasons`` say, for each way tried, why it could not be read (absent in a VM; powercap
    ``energy_uj`` root-only since the Platypus fix, CVE-2020-8694; perf refused by
    ``perf_event_paranoid``). Package zones are summed over sockets; DRAM and psys zones are
    not included.

    Parameters
    ----------
    prefer : sequence of str
        Ways to try, in order: "powercap" (/sys/class/powercap/intel-rapl:N, used by the
        intel_rapl driver on Intel and AMD) and "perf" (the ``power`` PMU's
        ``energy-pkg`` event, system-wide). Empty: estimate without trying.
    powercap_root, perf_root : path
        Where the powercap class and the perf power PMU live (for tests).

    Returns
    -------
    EnergySource
        Close it (or use it in a ``with``) to release perf file descriptors.

    Raises
    ------
    ValueError
        ``prefer`` names a way other than "powercap" and "perf".
    """
    ways = [check_choice("prefer", way, WAYS) for way in prefer]
    reasons: list[str] = []
    for way in ways:
        if way == "powercap":
            reader: EnergyReader | None
            reader, zones, why = _open_powercap(Path(powercap_root))
            method = "rapl-powercap"
        else:
            reader, zones, why = _open_perf(Path(perf_root))
            method = "rapl-perf"
        if reader is not None:
            return EnergySource(method, reader, zones, reasons)
        reasons.append(f"{way}: {why}")
    return EnergySource("estimated", None, (), reasons)
