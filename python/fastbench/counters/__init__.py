"""Event counters: perf_event over a region (:mod:`.events`) or per sample of a measurement
(:mod:`.samples`), counters for a whole command (:mod:`.command`, ``fastbench stat``), and
valgrind's simulated counts where no PMU is exposed (:mod:`.simulate`).

A face with the public names. Missing hardware is reported, never turned into a zero:
asking for it raises CountersUnavailable with the reason per event.
"""

from __future__ import annotations

from .events import (
    CounterResult,
    CountersUnavailable,
    EventAvailability,
    EventCount,
    available,
    count,
    event_names,
)
# check_events is for the modules that count (timing), outside __all__.
from .events import check_events as check_events
from .instructions import (
    CountComparison,
    InstructionCount,
    compare_counts,
    count_instructions,
    count_statement_instructions,
)
from .samples import SampleCounts, count_samples
from .simulation import (
    SimulatedCounts,
    SimulationTimeout,
    SimulationUnavailable,
    simulate,
    simulate_statement,
)

__all__ = ["CountComparison", "CounterResult", "CountersUnavailable", "EventAvailability",
           "EventCount", "InstructionCount", "SampleCounts", "SimulatedCounts",
           "SimulationTimeout", "SimulationUnavailable", "available", "compare_counts", "count",
           "count_instructions", "count_samples", "count_statement_instructions",
           "event_names", "simulate", "simulate_statement"]
