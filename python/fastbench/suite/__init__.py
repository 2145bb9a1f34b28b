"""The benchmark suite: named variants of one job (a baseline and its quantized, pruned,
channels-last... versions) measured interleaved and reported with latency percentiles,
throughput per batch size, accuracy or any metric, memory, energy and FLOPs, each with its
interval, against the baseline with a paired verdict; Pareto fronts and knees over any
objectives; sweeps of batch size, threads or any parameter; MLPerf-style load scenarios.

- :func:`run` -> :class:`SuiteResult` (``result[name]``, ``result.pareto(...)``) — ``runner.py``,
  ``result.py``; the fair-comparison checks are ``fairness.py``.
- :mod:`.energy` — RAPL (powercap or perf) where readable, else a labelled estimate.
- :mod:`.pareto` — fronts, domination, knees; :mod:`.fit` — power-law fits with the
  exponent's interval and predictions with their prediction interval; :mod:`.sweeps` —
  batch, thread and parameter sweeps; :mod:`.scenarios` — SingleStream, Offline and Server loads; :mod:`.plot` — the figures.

Framework-free: a variant that is a ``torch.nn.Module`` is handled through
``fastbench.pytorch.suite_support``, imported only when torch is in use.
"""

from __future__ import annotations

from .energy import (DEFAULT_WATTS_PER_CORE, CorePowerModel, Energy, EnergyMeter, EnergySource,
                     energy_source, measure_energy)
from .fairness import KINDS, UnfairComparison
from .fit import PowerLawFit, Prediction, power_law_fit
from .pareto import dominated_by, knee, pareto_front
from .records import (OBJECTIVES, Latency, MemoryFigures, MetricValue, Speedup, Throughput,
                      VariantRecord)
from .result import Normalized, SuiteResult, efficiency_score
from .runner import run
from .scenarios import (OfflineResult, RateSearch, ServerResult, SingleStreamResult,
                        early_stopping, early_stopping_min_queries, max_server_rate, offline,
                        server, single_stream)
from .sweeps import (BatchSweep, ParameterSweep, ThreadSweep, batch_sweep, parameter_sweep,
                     thread_sweep)

__all__ = [
    "DEFAULT_WATTS_PER_CORE",
    "KINDS",
    "OBJECTIVES",
    "BatchSweep",
    "CorePowerModel",
    "Energy",
    "EnergyMeter",
    "EnergySource",
    "Latency",
    "MemoryFigures",
    "MetricValue",
    "Normalized",
    "OfflineResult",
    "ParameterSweep",
    "PowerLawFit",
    "Prediction",
    "RateSearch",
    "ServerResult",
    "SingleStreamResult",
    "Speedup",
    "SuiteResult",
    "ThreadSweep",
    "Throughput",
    "UnfairComparison",
    "VariantRecord",
    "batch_sweep",
    "dominated_by",
    "early_stopping",
    "early_stopping_min_queries",
    "efficiency_score",
    "energy_source",
    "knee",
    "max_server_rate",
    "measure_energy",
    "offline",
    "parameter_sweep",
    "pareto_front",
    "power_law_fit",
    "run",
    "server",
    "single_stream",
    "thread_sweep",
]
