"""Event counters (Linux perf_event): which events exist here and why not, counted regions,
and the metrics derived from them.

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
from typing import Callable, Sequence

from .. import _core
from ..errors import FastbenchError

__all__ = ["CounterResult", "CountersUnavailable", "EventAvailability", "EventCount",
           "SampleCounts", "SimulatedCounts", "SimulationTimeout", "SimulationUnavailable",
           "available", "count", "count_samples", "event_names", "simulate"]

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
        group.stop()
        counts, skipped = {}, {}
        for r in group.read():
            if not r.available or not r.counted:
                skipped[r.name] = r.reason or "the kernel never scheduled the event (running time 0)"
                continue
            overhead = self._overhead.get(r.name, 0.0)
            value, _ = _core.subtract_overhead(r.value, overhead)
            counts[r.name] = EventCount(r.name, value, r.raw, r.time_enabled_ns,
                                        r.time_running_ns, r.running_fraction, r.scaled, overhead)
        self._result = CounterResult(counts, skipped, group.read_path, self.calls, group.read_path_reason)

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


# -- counters per sample (fastbench.measure(fn, counters=[...])) ----------------------------
# Empty read-to-read deltas taken to learn what the sampling loop itself adds to a count.
_EMPTY_DELTAS = 31


@dataclass(frozen=True)
class SampleCounts:
    """Counts recorded around each of a measurement's counted samples, per call.

    ``per_sample[event][i]`` is sample ``i``'s count divided by its ``loops`` calls,
    multiplex-scaled within the sample and net of what an empty sample reads (the median
    of empty read-to-read deltas, ``overhead``, per sample). A sample in which the event
    never ran is NaN and left out of the medians.
    """

    loops: int
    per_sample: dict[str, list[float]]
    running_fraction: dict[str, float]
    scaled: bool
    overhead: dict[str, float]
    skipped: dict[str, str] = field(default_factory=dict)
    read_path: str = "read"
    read_path_reason: str = ""

    @property
    def per_call(self) -> dict[str, float]:
        """Median count per call of each event over the samples."""
        return {name: _median_finite(values) for name, values in self.per_sample.items()
                if any(math.isfinite(v) for v in values)}

    @property
    def derived(self) -> dict[str, float]:
        """IPC, cycles per instruction, miss percentages, from the per-call medians."""
        result = CounterResult(
            {name: EventCount(name, v, 0, 0, 0, 1.0, False, 0.0) for name, v in self.per_call.items()}
        )
        return {k: v for k, v in result.derived.items() if not k.endswith("_per_call")}

    def to_dict(self) -> dict[str, object]:
        return {
            "loops": self.loops,
            "per_sample": {k: [None if not math.isfinite(v) else v for v in vs]
                           for k, vs in self.per_sample.items()},
            "running_fraction": dict(self.running_fraction),
            "scaled": self.scaled,
            "overhead": dict(self.overhead),
            "skipped": dict(self.skipped),
            "read_path": self.read_path,
            "read_path_reason": self.read_path_reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> SampleCounts:
        per_sample = data.get("per_sample")
        if not isinstance(per_sample, dict):
            raise ValueError("SampleCounts data lacks per_sample")
        return cls(
            loops=int(data["loops"]),  # type: ignore[call-overload]
            per_sample={str(k): [math.nan if v is None else float(v) for v in vs]
                        for k, vs in per_sample.items()},
            running_fraction={str(k): float(v) for k, v in
                              dict(data.get("running_fraction", {})).items()},  # type: ignore[call-overload]
            scaled=bool(data.get("scaled", False)),
            overhead={str(k): float(v) for k, v in
                      dict(data.get("overhead", {})).items()},  # type: ignore[call-overload]
            skipped={str(k): str(v) for k, v in
                     dict(data.get("skipped", {})).items()},  # type: ignore[call-overload]
            read_path=str(data.get("read_path", "read")),
            read_path_reason=str(data.get("read_path_reason", "")),
        )


def _deltas(before: Sequence[_core.CounterReading],
            after: Sequence[_core.CounterReading]) -> dict[str, tuple[float, float]]:
    """Per counted event: (multiplex-scaled count between two readings, running fraction);
    NaN and 0 when the event did not run in between. The scaling is perf_math's."""
    out = {}
    for b, a in zip(before, after):
        if a.available:
            s = _core.scale_count(a.raw - b.raw, a.time_enabled_ns - b.time_enabled_ns,
                                  a.time_running_ns - b.time_running_ns)
            out[a.name] = (s.value, s.running_fraction) if s.counted else (math.nan, 0.0)
    return out


def count_samples(run_sample: Callable[[], object], events: Sequence[str], *, loops: int,
                  samples: int, missing: str = "raise",
                  empty_sample: Callable[[], object] | None = None,
                  missing_option: str = "missing='skip'") -> SampleCounts:
    """Run ``run_sample`` (one sample of ``loops`` calls) ``samples`` times, reading the
    counters before and after each, and return the counts per call.

    The counters run for the whole loop and are read, not started and stopped, around each
    sample; what the loop adds (its own Python, the read itself, and ``empty_sample``: a
    sample of no work, e.g. one empty native loop) is measured the same way and subtracted.

    Raises
    ------
    CountersUnavailable
        An event cannot be opened here and ``missing`` is "raise".
    """
    if missing not in ("raise", "skip"):
        raise ValueError(f"missing must be 'raise' or 'skip', got {missing!r}")
    group = _core.CounterGroup(check_events(events), False)
    lacking = {e.name: e.reason for e in group.events if not e.available}
    if lacking and missing == "raise":
        raise CountersUnavailable(lacking, missing_option)
    names = [e.name for e in group.events if e.available]
    group.start()
    try:
        empty: dict[str, list[float]] = {n: [] for n in names}
        prev = group.read()
        for _ in range(_EMPTY_DELTAS):
            if empty_sample is not None:
                empty_sample()
            cur = group.read()
            for name, (value, _frac) in _deltas(prev, cur).items():
                empty[name].append(value)
            prev = cur
        overhead = {n: _median_finite(v) for n, v in empty.items()}
        per_sample: dict[str, list[float]] = {n: [] for n in names}
        fraction = {n: 1.0 for n in names}
        prev = group.read()
        for _ in range(samples):
            run_sample()
            cur = group.read()
            for name, (value, frac) in _deltas(prev, cur).items():
                net = _core.subtract_overhead(value, overhead[name])[0] if math.isfinite(value) else value
                per_sample[name].append(net / loops)
                fraction[name] = min(fraction[name], frac)
            prev = cur
    finally:
        group.stop()
    skipped = dict(lacking)
    for name in names:
        if not any(math.isfinite(v) for v in per_sample[name]):
            skipped[name] = "the kernel never scheduled the event (running time 0)"
            del per_sample[name]
    return SampleCounts(loops, per_sample, {n: fraction[n] for n in per_sample},
                        any(f < 1.0 for f in fraction.values()), overhead, skipped,
                        group.read_path, group.read_path_reason)


def _median_finite(values: Sequence[float]) -> float:
    finite = sorted(v for v in values if math.isfinite(v))
    if not finite:
        return 0.0
    mid = len(finite) // 2
    return finite[mid] if len(finite) % 2 else 0.5 * (finite[mid - 1] + finite[mid])


# The valgrind path imports this module's errors, so it is bound last.
from .simulate import (  # noqa: E402
    SimulatedCounts,
    SimulationTimeout,
    SimulationUnavailable,
    simulate,
)
