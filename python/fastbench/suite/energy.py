"""Energy per call of a function, in joules with a 95% interval: measured from the CPU
package's RAPL counters where they can be read (powercap sysfs, then the perf ``power``
PMU), otherwise estimated from the process's CPU time and a per-core power model, and then
always labelled "estimated" with the reason RAPL could not be read. Never an unlabelled
number. Nothing here prints; a missing or refused counter is a reason string, not an error.
The counters themselves are opened and read in :mod:`.energy_sources`.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .._checks import check_choice, check_finite, check_int, check_seconds
from ..report.lines import TextLines, brief_repr
from ..stats.summary import mean_ci
from ..units import format_ns, format_rel
from . import energy_sources
from .energy_sources import METHODS, EnergySource, energy_delta_uj, energy_source
# Read (and, two of them, replaced) here by tests.
from .energy_sources import _PerfEventAttr, _perf_event_open, _read_uj  # noqa: F401

__all__ = [
    "DEFAULT_WATTS_PER_CORE",
    "METHODS",
    "POLL_S",
    "CorePowerModel",
    "Energy",
    "EnergyMeter",
    "EnergySource",
    "energy_delta_uj",
    "energy_source",
    "format_joules",
    "idle_power_w",
    "measure_energy",
    "measure_energy_interleaved",
]

# How often an open measurement reads a wrapping counter. The powercap counter wraps after
# max_energy_range_uj: 2^32 energy units, 262 kJ with Intel's usual 61 uJ unit (22 min at
# 200 W) and 65.5 kJ with the 15.3 uJ unit of AMD Zen and Intel server DRAM domains (3 min
# at 360 W). Two wraps between two reads cannot be told from one, so reads must come well
# inside the shortest period: once a second leaves a margin of two orders of magnitude.
POLL_S = 1.0

# The default power of one busy core, in watts: the package TDP shared over its cores, for
# current server CPUs (see CorePowerModel).
DEFAULT_WATTS_PER_CORE = 5.0
_DEFAULT_MODEL_SOURCE = ("package TDP / cores of server CPUs: EPYC 9654 360 W / 96 = 3.75 W, "
                         "EPYC 7763 280 W / 64 = 4.4 W, Xeon 8480+ 350 W / 56 = 6.25 W, "
                         "Xeon 8380 270 W / 40 = 6.75 W; 5 W is their middle")

_JOULE_UNITS = ((1e6, "MJ"), (1e3, "kJ"), (1.0, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ"),
                 (1e-12, "pJ"))

# The clock and the sleep of this module: tests replace them to drive a synthetic counter.
_now_s: Callable[[], float] = time.perf_counter
_sleep_s: Callable[[float], None] = time.sleep
_cpu_s: Callable[[], float] = time.process_time


# --- formatting ------------------------------------------------------------------------


def format_joules(joules: float, digits: int = 3) -> str:
    """Energy in joules with an SI prefix and ``digits`` significant digits.

    Examples: ``format_joules(0.00123) == "1.23 mJ"``, ``format_joules(2.5e-7) ==
    "250 nJ"``, ``format_joules(1500.0) == "1.50 kJ"``.
    """
    if not math.isfinite(joules):
        return f"{joules} J"
    if joules == 0:
        return "0 J"
    rounded = float(f"{joules:.{digits - 1}e}")  # round first: 999.6 mJ becomes 1.00 J
    for scale, unit in _JOULE_UNITS:
        if abs(rounded) >= scale:
            break
    value = rounded / scale
    magnitude = int(math.floor(math.log10(abs(value))))
    return f"{value:.{max(digits - 1 - magnitude, 0)}f} {unit}"



def idle_power_w(source: EnergySource, seconds: float = 0.5) -> float:
    """Package power while this process sleeps, in watts: the baseline subtracted from a
    measured region (energy attributable = measured - idle power x elapsed).

    The baseline is the whole package's draw at the moment of measuring it, so what is
    attributed to a call is the package's increase over idle, which includes load changes
    of other processes during the call.

    Parameters
    ----------
    source : EnergySource
        A measuring source (not estimated).
    seconds : float
        How long to sleep, in seconds; the counter is read every :data:`POLL_S` meanwhile.

    Returns
    -------
    float
        Watts.

    Raises
    ------
    ValueError
        ``source`` is estimated, or ``seconds`` is not positive.
    """
    seconds = check_seconds("seconds", seconds)
    if source.estimated:
        raise ValueError(f"idle power needs a RAPL counter: {source.reason}")
    start_j, start_s = source.read_j(), _now_s()
    end_j, left_s = start_j, seconds
    while left_s > 0:
        _sleep_s(min(left_s, POLL_S))
        left_s -= POLL_S
        end_j = source.read_j()
    end_s = _now_s()
    return (end_j - start_j) / (end_s - start_s) if end_s > start_s else 0.0


# --- the estimate ----------------------------------------------------------------------


@dataclass(frozen=True)
class CorePowerModel:
    """Energy estimated from CPU time: ``joules = CPU seconds x watts_per_core``.

    The default, 5 W per busy core, is a server package's thermal design power shared over
    its cores: AMD EPYC 9654 360 W / 96 cores = 3.75 W, EPYC 7763 280 W / 64 = 4.4 W, Intel
    Xeon Platinum 8480+ 350 W / 56 = 6.25 W, Xeon Platinum 8380 270 W / 40 = 6.75 W. TDP is
    roughly the sustained draw with every core busy, and it includes each core's share of
    the uncore (caches, memory controllers, I/O die), so the figure is the package power
    one busy core is responsible for under full load. Expect it to be off by up to a factor
    of two: one busy core on an idle chip turbos higher and costs more per second, laptop
    and desktop cores differ, and vector-heavy code draws more than scalar code.

    The estimate is the dynamic share only: the package's idle power is not included (a
    measured RAPL figure is net of idle too). CPU time is the process's (all threads,
    :func:`time.process_time`): threads spinning while they wait count as busy, child
    processes and accelerators are not counted.

    Attributes
    ----------
    watts_per_core : float
        Power of one busy core, in watts (positive).
    source : str
        Where the figure comes from.
    """

    watts_per_core: float = DEFAULT_WATTS_PER_CORE
    source: str = _DEFAULT_MODEL_SOURCE

    def __post_init__(self) -> None:
        watts = check_finite("watts_per_core", self.watts_per_core)
        if watts <= 0:
            raise ValueError(f"watts_per_core must be > 0 W, got {self.watts_per_core!r}")
        object.__setattr__(self, "watts_per_core", watts)

    def joules(self, cpu_s: float) -> float:
        """Estimated energy of ``cpu_s`` seconds of CPU time, in joules."""
        return cpu_s * self.watts_per_core


# --- the meter -------------------------------------------------------------------------


class EnergyMeter:
    """Energy of a region the caller runs: ``start()``, the work, ``stop()`` -> joules.

    Measured: the package energy between the two calls minus ``idle_w`` x elapsed time.
    Estimated (no RAPL): the process's CPU time between them x ``watts_per_core``. While a
    region is open on a wrapping counter, a background thread reads it every
    :data:`POLL_S`, so a region may last longer than the counter's wrap period.

    Parameters
    ----------
    source : EnergySource, optional
        Default: :func:`energy_source`, closed by :meth:`close`.
    idle_w : float, optional
        Idle baseline in watts; default: measured now with :func:`idle_power_w` over
        ``idle_s`` (measured sources only).
    idle_s : float
        Seconds of idle measurement when ``idle_w`` is not given; 0 for no baseline (gross
        package energy).
    watts_per_core : float, optional
        Power of a busy core for the estimate; default :data:`DEFAULT_WATTS_PER_CORE`.

    Attributes
    ----------
    source : EnergySource
    idle_w : float or None
        The baseline subtracted (None when estimated or when ``idle_s`` is 0).
    model : CorePowerModel or None
        The model of the estimate (None when measured).
    elapsed_s : float
        Wall time of the last region, in seconds.
    """

    def __init__(self, source: EnergySource | None = None, *, idle_w: float | None = None,
                 idle_s: float = 0.5, watts_per_core: float | None = None) -> None:
        idle_s = _check_nonnegative_s("idle_s", idle_s)
        self._owns_source = source is None
        self.source = energy_source() if source is None else source
        self.model: CorePowerModel | None = None
        self.idle_w: float | None = None
        if self.source.estimated:
            self.model = CorePowerModel() if watts_per_core is None \
                else CorePowerModel(watts_per_core, "given")
        elif idle_w is not None:
            self.idle_w = check_finite("idle_w", idle_w)
        elif idle_s > 0:
            self.idle_w = idle_power_w(self.source, idle_s)
        self.elapsed_s = 0.0
        self._start: tuple[float, float] | None = None
        self._stop_poll = threading.Event()
        self._poller: threading.Thread | None = None

    def start(self) -> None:
        """Open a region: read the counter (or CPU time) and the clock.

        Raises
        ------
        RuntimeError
            A region is already open.
        """
        if self._start is not None:
            raise RuntimeError("EnergyMeter.start() called twice without stop()")
        if self.source.needs_polling:
            self._stop_poll.clear()
            self._poller = threading.Thread(target=self._poll, name="fastbench-energy-poll",
                                            daemon=True)
            self._poller.start()
        reading = _cpu_s() if self.model is not None else self.source.read_j()
        self._start = (reading, _now_s())

    def stop(self) -> float:
        """Close the region: its energy in joules (net of idle, or estimated).

        Raises
        ------
        RuntimeError
            No region is open.
        """
        if self._start is None:
            raise RuntimeError("EnergyMeter.stop() called without start()")
        end_s = _now_s()
        reading = _cpu_s() if self.model is not None else self.source.read_j()
        self._end_poll()
        start_reading, start_s = self._start
        self._start = None
        self.elapsed_s = end_s - start_s
        if self.model is not None:
            return self.model.joules(reading - start_reading)
        return (reading - start_reading) - (self.idle_w or 0.0) * self.elapsed_s

    def close(self) -> None:
        """End any open region's polling and close the source if this meter opened it."""
        self._end_poll()
        self._start = None
        if self._owns_source:
            self.source.close()

    def __enter__(self) -> EnergyMeter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _poll(self) -> None:
        while not self._stop_poll.wait(POLL_S):
            try:
                self.source.read_j()
            except (OSError, ValueError):  # the measuring thread's next read reports it
                return

    def _end_poll(self) -> None:
        if self._poller is not None:
            self._stop_poll.set()
            self._poller.join()
            self._poller = None


def _check_nonnegative_s(name: str, value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    return check_seconds(name, value)


# --- the result ------------------------------------------------------------------------


@dataclass(frozen=True)
class Energy(TextLines):
    """Energy of one call of a function.

    Attributes
    ----------
    joules_per_call : float
        Mean over blocks, in joules: measured net of the idle baseline, or estimated.
    ci : (float, float) or None
        95% Student t interval of the mean over blocks, in joules (None below two blocks).
        For an estimate it covers only the block-to-block variation of CPU time, not the
        error of the power model.
    method : str
        "rapl-powercap", "rapl-perf" or "estimated".
    estimated : bool
        True when no RAPL counter was read.
    reason : str
        Why RAPL was not read ("" when measured).
    idle_w : float or None
        The idle baseline subtracted, in watts (None when estimated or not subtracted).
    watts_per_core : float or None
        The power model's watts per busy core (estimate only).
    blocks : int
        Blocks measured.
    calls_per_block : int
        Calls in each block.
    seconds_per_call : float or None
        Wall time per call in those blocks (mean over blocks), in seconds: the calls ran back
        to back, which can differ from a latency measured one call at a time. None for
        records saved before it was kept.
    """

    joules_per_call: float
    ci: tuple[float, float] | None
    method: str
    estimated: bool
    reason: str = ""
    idle_w: float | None = None
    watts_per_core: float | None = None
    blocks: int = 0
    calls_per_block: int = 0
    seconds_per_call: float | None = None

    @property
    def watts(self) -> float | None:
        """Mean power over the blocks (joules per call over seconds per call), or None."""
        if self.seconds_per_call is None or self.seconds_per_call <= 0:
            return None
        return self.joules_per_call / self.seconds_per_call

    @property
    def resolved(self) -> bool:
        """Whether the interval stays above 0: the energy is told apart from the idle
        power. A wide interval reaching 0 is shown as an upper bound, not as "± 197%"."""
        return self.ci is None or (self.ci[0] > 0 and self.joules_per_call > 0)

    def __post_init__(self) -> None:
        check_choice("method", self.method, METHODS)
        if self.ci is not None and not (0.0 <= self.ci[0] <= self.ci[1] < math.inf):
            raise ValueError(f"an energy interval must be [low, high] with 0 <= low <= high, "
                             f"finite, got {list(self.ci)}")
        if self.estimated != (self.method == "estimated"):
            raise ValueError(f"estimated={self.estimated} contradicts method {self.method!r}")
        if self.estimated and not self.reason:
            raise ValueError("an estimated Energy needs the reason RAPL was not read")
        if self.estimated and not (isinstance(self.watts_per_core, (int, float))
                                   and 0.0 < self.watts_per_core < math.inf):
            raise ValueError(f"an estimated Energy needs the model's watts_per_core > 0, got "
                             f"{self.watts_per_core!r}")
        if not math.isfinite(self.joules_per_call):
            raise ValueError(f"joules_per_call must be finite, got {self.joules_per_call!r}")

    def text(self, *, reason: bool = True) -> str:
        """One line: "1.23 mJ ± 4%", and for an estimate "(estimated: <reason>)" (or
        "(estimated)" alone with ``reason=False``, for a table that states it once)."""
        text = format_joules(self.joules_per_call)
        if self.ci is not None and not self.resolved:
            text = (f"{format_joules(max(self.joules_per_call, 0.0))} (at most "
                    f"{format_joules(self.ci[1])}: not resolved above the idle power)")
        elif self.ci is not None:
            half = (self.ci[1] - self.ci[0]) / 2.0
            text += f" ± {format_rel(half / abs(self.joules_per_call))}"
        if self.estimated:
            text += f" (estimated: {self.reason})" if reason else " (estimated)"
        return text

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.text()} per call, {self.method}")

    def lines(self) -> list[str]:
        """Text lines: the figure, then how it was obtained."""
        out = [f"energy per call: {self.text()}"]
        if self.ci is not None:
            out.append(f"  95% CI [{format_joules(self.ci[0])}, {format_joules(self.ci[1])}]"
                       f" over {self.blocks} blocks of {self.calls_per_block} calls")
        if self.seconds_per_call is not None and self.watts is not None:
            out.append(f"  the blocks ran {format_ns(self.seconds_per_call * 1e9)} a call, back "
                       f"to back: {self.watts:.3g} W")
        if self.estimated:
            out.append(f"  model: {self.watts_per_core:g} W per busy core x process CPU "
                       "time (dynamic power only; the interval excludes the model's error)")
        else:
            idle = "none" if self.idle_w is None else f"{self.idle_w:.3g} W subtracted"
            out.append(f"  measured: {self.method}, package energy; idle baseline: {idle}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {"joules_per_call": self.joules_per_call,
                "ci": None if self.ci is None else [self.ci[0], self.ci[1]],
                "method": self.method, "estimated": self.estimated, "reason": self.reason,
                "idle_w": self.idle_w, "watts_per_core": self.watts_per_core,
                "blocks": self.blocks, "calls_per_block": self.calls_per_block,
                "seconds_per_call": self.seconds_per_call}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Energy:
        """Rebuild from :meth:`to_dict` output; KeyError names a missing key."""
        ci = d["ci"]
        idle = d.get("idle_w")
        wpc = d.get("watts_per_core")
        spc = d.get("seconds_per_call")
        # Files written before intervals were bounded at 0 may hold a negative low end.
        return cls(float(d["joules_per_call"]),
                   None if ci is None else (max(float(ci[0]), 0.0), float(ci[1])),
                   str(d["method"]), bool(d["estimated"]), str(d.get("reason", "")),
                   None if idle is None else float(idle), None if wpc is None else float(wpc),
                   int(d.get("blocks", 0)), int(d.get("calls_per_block", 0)),
                   None if spc is None else float(spc))


# --- measuring -------------------------------------------------------------------------


def measure_energy(fn: Callable[[], object], *, blocks: int = 10, min_block_s: float = 0.05,
                   idle_s: float = 0.5, watts_per_core: float | None = None,
                   source: EnergySource | None = None, max_time_s: float = 60.0) -> Energy:
    """Energy of one call of ``fn``, with a 95% interval over blocks of calls.

    Calls per block are calibrated so a block lasts at least ``min_block_s`` (RAPL updates
    about every millisecond and steps by 15 to 61 uJ, so a block must hold many updates).
    Each block reads the energy counter (or, estimated, the process CPU time) before and
    after its calls; the per-call values of the blocks give the mean and a Student t
    interval. Measured blocks are net of the idle baseline (see :func:`idle_power_w`).

    Parameters
    ----------
    fn : callable
        Called with no arguments.
    blocks : int
        Blocks to measure (>= 2); fewer when ``max_time_s`` would be exceeded (never fewer
        than 2).
    min_block_s : float
        Shortest block, in seconds.
    idle_s : float
        Seconds of idle baseline measurement; 0 to report gross package energy.
    watts_per_core : float, optional
        Power of a busy core for the estimate (default :data:`DEFAULT_WATTS_PER_CORE`);
        ignored when RAPL is read.
    source : EnergySource, optional
        Default: :func:`energy_source` (opened and closed here).
    max_time_s : float
        Time budget for the blocks, in seconds.

    Returns
    -------
    Energy

    Raises
    ------
    TypeError, ValueError
        An argument is out of range.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    return measure_energy_interleaved({"fn": fn}, blocks=blocks, min_block_s=min_block_s,
                                      idle_s=idle_s, watts_per_core=watts_per_core,
                                      source=source, max_time_s=max_time_s)["fn"]


def measure_energy_interleaved(
    fns: Mapping[str, Callable[[], object]], *, blocks: int = 10, min_block_s: float = 0.05,
    idle_s: float = 0.5, watts_per_core: float | None = None,
    source: EnergySource | None = None, max_time_s: float = 60.0,
) -> dict[str, Energy]:
    """Energy of one call of each function, their blocks interleaved.

    As :func:`measure_energy`, with one source and one idle baseline for all: each round
    runs one block of every function, starting one function later each round, so a drift
    of the package's power (temperature, other processes) reaches every function alike.

    Parameters
    ----------
    fns : mapping of str to callable
        Functions by name, each called with no arguments.
    blocks, min_block_s, idle_s, watts_per_core, source
        As for :func:`measure_energy`; ``blocks`` is the number of rounds.
    max_time_s : float
        Time budget for all the rounds, in seconds.

    Returns
    -------
    dict of str to Energy
        In the order of ``fns``.

    Raises
    ------
    TypeError, ValueError
        An argument is out of range, ``fns`` is empty or holds something not callable.
    """
    if not fns:
        raise ValueError("fns must name at least one function, got an empty mapping")
    for name, fn in fns.items():
        if not callable(fn):
            raise TypeError(f"fns[{name!r}] must be callable, got {type(fn).__name__}")
    blocks = check_int("blocks", blocks, 2)
    min_block_s = check_seconds("min_block_s", min_block_s)
    max_time_s = check_seconds("max_time_s", max_time_s)
    if watts_per_core is not None:
        CorePowerModel(watts_per_core)  # checks it before any measuring
    names = list(fns)
    with EnergyMeter(source, idle_s=idle_s, watts_per_core=watts_per_core) as meter:
        calls = {n: _calibrate(fns[n], min_block_s) for n in names}
        per_call_j: dict[str, list[float]] = {n: [] for n in names}
        per_call_s: dict[str, list[float]] = {n: [] for n in names}
        spent_s = 0.0
        for done in range(1, blocks + 1):
            order = names[(done - 1) % len(names):] + names[:(done - 1) % len(names)]
            for n in order:
                fn, k = fns[n], calls[n]
                meter.start()
                for _ in range(k):
                    fn()
                per_call_j[n].append(meter.stop() / k)
                per_call_s[n].append(meter.elapsed_s / k)
                spent_s += meter.elapsed_s
            if done >= 2 and spent_s / done * (done + 1) > max_time_s:
                break
        src = meter.source
        wpc = None if meter.model is None else meter.model.watts_per_core
        out: dict[str, Energy] = {}
        for n in names:
            values = np.asarray(per_call_j[n], dtype=np.float64)
            mean, ci = block_interval(values)
            out[n] = Energy(mean, ci, src.method, src.estimated, src.reason, meter.idle_w, wpc,
                            len(values), calls[n], float(np.mean(per_call_s[n])))
        return out


def block_interval(per_call_j: np.ndarray) -> tuple[float, tuple[float, float] | None]:
    """The mean energy per call over blocks and its 95% Student t interval, bounded below
    by 0: blocks are net of the idle power, so a block can read below zero when the work
    draws little beside it, but the energy a call costs cannot. An interval that reaches 0
    says the energy was not resolved above the idle power (:meth:`Energy.resolved`)."""
    mean = float(per_call_j.mean())
    ci = mean_ci(mean, float(per_call_j.std(ddof=1)), len(per_call_j), 0.95)
    if ci is None:
        return mean, None
    return mean, (max(ci[0], 0.0), max(ci[1], 0.0))


def _calibrate(fn: Callable[[], object], min_block_s: float) -> int:
    """Calls that take at least ``min_block_s`` (the calls made here also warm ``fn`` up)."""
    calls = 1
    while True:
        start_s = _now_s()
        for _ in range(calls):
            fn()
        elapsed_s = _now_s() - start_s
        if elapsed_s >= min_block_s:
            return calls
        # Aim 20% past the target from the rate seen, growing at least 2x and at most 100x.
        wanted = calls * 1.2 * min_block_s / elapsed_s if elapsed_s > 0 else calls * 100
        calls = int(min(max(math.ceil(wanted), 2 * calls), 100 * calls))
