"""Counters per sample of a measurement (``fastbench.measure(fn, counters=[...])``): the
group is read, not restarted, around each sample, and what an empty sample reads is
subtracted. Owns SampleCounts and its dict round trip; the scaling arithmetic is native
(fastbench._core) and event checking is :mod:`.events`'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .. import _core
from ..stats.robust import median_mad
from .events import CounterResult, CountersUnavailable, EventCount, check_events

__all__ = ["SampleCounts", "count_samples"]

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
    """Median of the finite values (NaN marks a sample in which the event never ran); 0.0
    when there is none."""
    finite = [v for v in values if math.isfinite(v)]
    return median_mad(finite)[0] if finite else 0.0
