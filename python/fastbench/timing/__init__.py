"""Timing a callable, a block or a statement with the native loop: measure, Timer, timeit.

This face re-exports what the rest of fastbench and its users import from the modules:
the settings of a run and their checks (:mod:`.config`), timed targets and their call floors
(:mod:`.targets`), the order of a run (:mod:`.sampling`), :func:`measure` (:mod:`.callables`),
statements (:mod:`.statement`), worker processes for ``processes=N`` (:mod:`.workers`, the
child's side :mod:`.worker`), the machine's run-to-run variation (:mod:`.variation`),
:class:`Timer` (:mod:`.timer`) and the clock types (the
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
from .variation import measure_run_variation
from .workers import ImportRef, WorkerError, importable

__all__ = [
    "DEFAULT_DURATION_S",
    "DEFAULT_SAMPLE_S",
    "ClockSpec",
    "ClockTable",
    "ImportRef",
    "Measurement",
    "RunConfig",
    "Target",
    "Timer",
    "WorkerError",
    "callable_target",
    "gc_paused",
    "importable",
    "measure",
    "measure_run_variation",
    "resolve_clock",
    "run_config",
    "run_target",
    "statement_target",
    "timeit",
]
