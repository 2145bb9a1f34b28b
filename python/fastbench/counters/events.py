"""Event counters (Linux perf_event) over a region: which events exist here and why not,
counting them around a ``with`` block, and the metrics derived from the counts.

Owns event-name checking, the missing-event policy and derived metrics; opening, reading,
multiplex scaling and overhead arithmetic are native (fastbench._core). Missing hardware is
reported, never turned into a zero: asking for it raises CountersUnavailable with the reason
per event unless ``missing="skip"``, and then the result lists what was skipped and why.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from types import TracebackType
from typing import Sequence

from .. import _core
from ..errors import FastbenchError

__all__ = ["CounterResult", "CountersUnavailable", "EventAvailability", "EventCount",
           "available", "check_events", "count", "event_names"]

_RAW = re.compile(r"^r[0-9a-fA-F]{1,16}$|^[A-Za-z0-9_]+:(0x[0-9a-fA-F]+|\d+)$")
_OVERHEAD_REPS = 31
# What an empty counted region reads, per (events, inherit): calibrated by the first count()
# of that set in this process and reused, so that a count() costs its system calls only.
_overhead_cache: dict[tuple[tuple[str, ...], bool], dict[str, float]] = {}


class CountersUnavailable(FastbenchError):
    """Counters were asked for that cannot be opened here; ``missing`` maps each to its reason."""

    def __init__(self, missing: dict[str, str], option: str = "missing='skip'") -> None:
        self.missing = dict(missing)
        lines = "; ".join(f"{name}: {reason}" for name, reason in missing.items())
        super().__init__(f"counters unavailable: {lines} (pass {option} to count the rest)")


@dataclass(frozen=True)
class EventAvailability:
    """Whether one event can be counted here, and why not."""

    name: str
    available: bool
    reason: str
    opened_as: str


def event_names() -> list[str]:
    """The event names fastbench knows (raw ``rNNNN`` and ``type:config`` work too)."""
    return list(_core.known_event_names())


def check_events(events: Sequence[str]) -> list[str]:
    """Return ``events`` as a list after checking every name.

    Raises
    ------
    TypeError
        If ``events`` is a bare string or holds a non-string.
    ValueError
        If it is empty or a name is unknown (the message suggests the closest known name
        and lists the valid ones).
    """
    if isinstance(events, str) or not all(isinstance(e, str) for e in events):
        raise TypeError("events must be a sequence of event names, e.g. ['instructions', 'cycles']")
    names = list(events)
    if not names:
        raise ValueError("no events given")
    known = event_names()
    for name in names:
        if name not in known and not _RAW.match(name):
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown event {name!r}{hint}; valid names: {', '.join(known)}, "
                             "or rNNNN (raw) or type:config")
    return names


def available() -> list[EventAvailability]:
    """Probe every known event once: available, or the precise reason it is not."""
    out = []
    for name in event_names():
        p = _core.probe_event(name)
        out.append(EventAvailability(name, p.available, p.reason, p.opened_as))
    return out


@dataclass(frozen=True)
class EventCount:
    """One event's count over a region.

    ``value`` is the multiplex-scaled count minus the calibrated cost of an empty counted
    region; ``raw`` is what the kernel counted while the event ran.
    """

    name: str
    value: float
    raw: int
    time_enabled_ns: int
    time_running_ns: int
    running_fraction: float
    scaled: bool
    overhead: float


@dataclass(frozen=True)
class CounterResult:
    """Counts of a region, what was skipped and why, and derived metrics."""

    counts: dict[str, EventCount]
    skipped: dict[str, str] = field(default_factory=dict)
    read_path: str = "read"
    calls: int = 1
    read_path_reason: str = ""

    @property
    def values(self) -> dict[str, float]:
        return {name: c.value for name, c in self.counts.items()}

    def __getitem__(self, name: str) -> float:
        return self.counts[name].value

    @property
    def derived(self) -> dict[str, float]:
        """IPC, cycles per instruction, branch-miss %, cache-miss %, per-call counts, where
        their inputs were counted (and non-zero)."""
        v = self.values
        out: dict[str, float] = {}

        def ratio(key: str, num: str, den: str, scale: float = 1.0) -> None:
            if num in v and den in v and v[den] > 0 and math.isfinite(v[num]):
                out[key] = scale * v[num] / v[den]

        ratio("ipc", "instructions", "cycles")
        ratio("cycles_per_instruction", "cycles", "instructions")
        ratio("branch_miss_pct", "branch-misses", "branches", 100.0)
        ratio("cache_miss_pct", "cache-misses", "cache-references", 100.0)
        for event in ("instructions", "cycles"):
            if event in v:
                out[f"{event}_per_call"] = v[event] / self.calls
        return out


class count:  # noqa: N801 - used as `with fastbench.counters.count([...]) as c:`
    """Count events over a ``with`` block of the calling thread (user space only).

    Parameters
    ----------
    events : sequence of str
        Event names (``event_names()``), ``rNNNN`` or ``type:config``.
    missing : {"raise", "skip"}
        What to do about events that cannot be opened here: raise CountersUnavailable
        naming each with its reason, or count the rest and list them in ``skipped``.
    inherit : bool
        Also count threads the block starts.
    calls : int
        How many calls the block makes, for the per-call metrics.

    After the block, ``result`` (and its shortcuts ``values``, ``derived``, ``skipped``)
    holds the counts, net of what an empty region reads. That overhead is calibrated (median
    of 31 empty regions) by the first ``count`` of each event set in the process and reused.
    """

    def __init__(self, events: Sequence[str], *, missing: str = "raise", inherit: bool = False,
                 calls: int = 1) -> None:
        if missing not in ("raise", "skip"):
            raise ValueError(f"missing must be 'raise' or 'skip', got {missing!r}")
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            raise ValueError(f"calls must be an int >= 1, got {calls!r}")
        self.events = check_events(events)
        self.missing, self.inherit, self.calls = missing, inherit, calls
        self._group: _core.CounterGroup | None = None
        self._result: CounterResult | None = None
        self._overhead: dict[str, float] = {}

    def __enter__(self) -> count:
        group = _core.CounterGroup(self.events, self.inherit)
        lacking = {e.name: e.reason for e in group.events if not e.available}
        if lacking and self.missing == "raise":
            raise CountersUnavailable(lacking)
        key = (tuple(self.events), self.inherit)
        if group.any_available and key not in _overhead_cache:
            _overhead_cache[key] = {o.name: o.median for o in
                                    _core.calibrate_read_overhead(group, _OVERHEAD_REPS)
                                    if o.available}
        self._overhead = dict(_overhead_cache.get(key, {}))
        self._group = group
        group.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        group = self._group
        if group is None:
            return
        # The group is dropped once read, so its perf descriptors (one or more per event)
        # close now rather than when this object dies: kept results would otherwise hold
        # them, and a few hundred exhaust a 1024-descriptor limit (EMFILE).
        self._group = None
        try:
            group.stop()
            readings = group.read()
            read_path, read_path_reason = group.read_path, group.read_path_reason
        finally:
            del group  # the last reference: the native destructor closes the descriptors
        counts, skipped = {}, {}
        for r in readings:
            if not r.available or not r.counted:
                skipped[r.name] = r.reason or "the kernel never scheduled the event (running time 0)"
                continue
            overhead = self._overhead.get(r.name, 0.0)
            value, _ = _core.subtract_overhead(r.value, overhead)
            counts[r.name] = EventCount(r.name, value, r.raw, r.time_enabled_ns,
                                        r.time_running_ns, r.running_fraction, r.scaled, overhead)
        self._result = CounterResult(counts, skipped, read_path, self.calls, read_path_reason)

    @property
    def result(self) -> CounterResult:
        if self._result is None:
            raise RuntimeError("the counted block has not finished")
        return self._result

    @property
    def values(self) -> dict[str, float]:
        return self.result.values

    @property
    def derived(self) -> dict[str, float]:
        return self.result.derived

    @property
    def skipped(self) -> dict[str, str]:
        return self.result.skipped
