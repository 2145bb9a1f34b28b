"""Simulated counters: run a workload under valgrind (cachegrind or callgrind) and parse its
totals. The fallback where no hardware PMU is exposed: exact instruction counts, cache
misses and branch mispredictions simulated with the cache geometry of this machine.

A face: the geometry is :mod:`.geometry`, the result :mod:`.counts`, the output parser
:mod:`.output`, the valgrind processes :mod:`.runner`, the command or callable
:mod:`.target`, and simulate() and simulate_statement() themselves :mod:`.simulation`.
Never reads hardware counters and never prints.
"""

from __future__ import annotations

# FRIENDLY_EVENTS, TOOLS and CACHE_NAMES stay importable from here, outside __all__.
from .counts import FRIENDLY_EVENTS as FRIENDLY_EVENTS
from .counts import TOOLS as TOOLS
from .counts import SimulatedCounts
from .geometry import CACHE_NAMES as CACHE_NAMES
from .geometry import (
    CacheGeometry,
    adjust_geometry,
    detect_geometry,
    geometry_problem,
)
from .output import parse_output
from .runner import SimulationTimeout, SimulationUnavailable
from .simulation import simulate, simulate_statement

__all__ = [
    "CacheGeometry",
    "SimulatedCounts",
    "SimulationTimeout",
    "SimulationUnavailable",
    "adjust_geometry",
    "detect_geometry",
    "geometry_problem",
    "parse_output",
    "simulate",
    "simulate_statement",
]
