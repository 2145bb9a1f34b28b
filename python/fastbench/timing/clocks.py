"""The clocks fastbench can time with, as measured on this machine.

Owns clock selection ("auto", "tsc", "steady") and the clocks table; the measuring itself
(TSC calibration, resolution, read cost) happens once per process in the native core.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterator

from .. import _core
from ..errors import ClockUnavailable
from ..report.lines import brief_repr

CLOCK_NAMES = ("steady", "tsc")


@dataclass(frozen=True)
class ClockSpec:
    """Measured facts about one clock.

    Attributes
    ----------
    name : str
        "steady" (std::chrono::steady_clock) or "tsc" (time-stamp counter).
    available : bool
        Whether fastbench can time with it here; ``note`` says why not.
    steady, invariant : bool
        Never goes backwards at a constant rate; for the TSC, the CPUID invariant bit.
    frequency_hz : float
        Ticks per second (the TSC's is calibrated against steady_clock).
    resolution_ns : float
        Smallest non-zero step seen between back-to-back reads.
    read_overhead_ns, pair_overhead_ns : float
        Cost of one start read, and of a start read plus a stop read.
    calibration_spread : float
        For the TSC, (max - min) / median of the calibration windows; 0 for steady.
    note : str
        How reads are done, or why the clock is unavailable.
    """

    name: str
    available: bool
    steady: bool
    invariant: bool
    frequency_hz: float
    resolution_ns: float
    read_overhead_ns: float
    pair_overhead_ns: float
    calibration_spread: float
    note: str


@dataclass(frozen=True)
class ClockTable:
    """Every clock, and which one ``clock="auto"`` picks and why."""

    clocks: tuple[ClockSpec, ...]
    auto: str
    auto_reason: str

    def __repr__(self) -> str:
        names = ", ".join(spec.name for spec in self.clocks)
        return brief_repr(self, f"auto {self.auto!r} of {names}")

    def __iter__(self) -> Iterator[ClockSpec]:
        return iter(self.clocks)

    def __getitem__(self, name: str) -> ClockSpec:
        for spec in self.clocks:
            if spec.name == name:
                return spec
        raise KeyError(f"no clock named {name!r}; clocks are {', '.join(CLOCK_NAMES)}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "clocks": [asdict(c) for c in self.clocks],
            "auto": self.auto,
            "auto_reason": self.auto_reason,
        }


def _spec(name: str) -> ClockSpec:
    info = _core.clock_info(name)
    spread = 0.0
    if name == "tsc" and info.available:
        spread = _core.tsc_calibration().spread_rel
    return ClockSpec(
        name=info.name,
        available=info.available,
        steady=info.steady,
        invariant=info.invariant,
        frequency_hz=info.frequency_hz,
        resolution_ns=info.resolution_ns,
        read_overhead_ns=info.read_overhead_ns,
        pair_overhead_ns=info.pair_overhead_ns,
        calibration_spread=spread,
        note=info.note,
    )


def clocks() -> ClockTable:
    """Return the clocks table of this machine.

    The first call measures each clock (TSC calibration takes about 0.1 s); later calls
    return the cached figures.

    Returns
    -------
    ClockTable
        One ClockSpec per clock, plus the clock that ``"auto"`` selects and the reason.
    """
    auto, reason = _core.auto_clock()
    return ClockTable(clocks=tuple(_spec(n) for n in CLOCK_NAMES), auto=auto, auto_reason=reason)


def resolve_clock(clock: str) -> str:
    """Map a user's clock choice to a usable clock name.

    Raises
    ------
    TypeError
        If ``clock`` is not a string.
    ValueError
        If the name is unknown.
    ClockUnavailable
        If the clock exists but cannot be used here (the message gives the reason).
    """
    if not isinstance(clock, str):
        raise TypeError(f"clock must be a str, got {type(clock).__name__}")
    if clock == "auto":
        return str(_core.auto_clock()[0])
    if clock not in CLOCK_NAMES:
        raise ValueError(f"unknown clock {clock!r}; expected 'auto', 'steady' or 'tsc'")
    info = _core.clock_info(clock)
    if not info.available:
        raise ClockUnavailable(f"clock {clock!r} is not available here: {info.note}")
    return clock
