"""Timing a callable, a block or a statement with the native loop: measure, Timer, timeit.

This face re-exports what the rest of fastbench and its users import from the modules:
the settings of a run and their checks (:mod:`.config`), timed targets and their call floors
(:mod:`.targets`), the order of a run (:mod:`.sampling`), :func:`measure` (:mod:`.callables`),
statements (:mod:`.statement`), :class:`Timer` (:mod:`.timer`) and the clock types (the
module :mod:`.clocks`; the function is ``fastbench.clocks``). The loop itself, the clocks and the loops-per-sample
search are native (fastbench._core); nothing here times anything with a Python clock.
"""

from __future__ import annotations

from ..measurement import Measurement
from .clocks import ClockSpec, ClockTable, resolve_clock
from .config import DEFAULT_DURATION_S, DEFAULT_SAMPLE_S, RunConfig, run_config
from .callables import measure
from .sampling import gc_paused, run_target
from .statement import statement_target, timeit
from .targets import Target, callable_target
from .timer import Timer

__all__ = [
    "DEFAULT_DURATION_S",
    "DEFAULT_SAMPLE_S",
    "ClockSpec",
    "ClockTable",
    "Measurement",
    "RunConfig",
    "Target",
    "Timer",
    "callable_target",
    "gc_paused",
    "measure",
    "resolve_clock",
    "run_config",
    "run_target",
    "statement_target",
    "timeit",
]
