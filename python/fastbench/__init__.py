"""fastbench: honest performance measurement for ML and systems code.

The public API is what ``__all__`` lists; ``fastbench._core`` is private.
"""

from __future__ import annotations

from ._version import __version__

try:
    from . import _core
except ImportError as exc:  # pragma: no cover - exercised only on a broken install
    raise ImportError(
        f"fastbench's native core (fastbench._core) failed to import: {exc}. "
        "It is built by the package install: run `pip install .` (or `pip install -e .` "
        "for development) from the source tree; this needs a C++17 compiler and CMake."
    ) from exc

# Each subpackage imports only what is below it, so the order of these lines does not matter
# (tests/test_layout.py imports every module first in a fresh interpreter).
from . import analysis, counters, kernels, memory, profiling, results, roofline, stats, suite
from .timing.clocks import ClockSpec, ClockTable, clocks
from .comparison import (Comparison, GateResult, InstructionComparison, compare,
                         compare_instruction_counts, compare_measurements, compare_versions, gate)
from .counters import CountersUnavailable
from .errors import ClockUnavailable, FastbenchError
from .identity import Identity
from .measurement import Measurement
from .profiling import amdahl, profile, profiled, sample
from .results import ResultsFileError, load, load_any, save
from .timing import Timer, WorkerError, importable, measure, timeit

__all__ = [
    "ClockSpec",
    "ClockTable",
    "ClockUnavailable",
    "Comparison",
    "CountersUnavailable",
    "FastbenchError",
    "GateResult",
    "Identity",
    "InstructionComparison",
    "Measurement",
    "ResultsFileError",
    "Timer",
    "WorkerError",
    "__version__",
    "amdahl",
    "analysis",
    "clocks",
    "compare",
    "compare_instruction_counts",
    "compare_measurements",
    "compare_versions",
    "counters",
    "gate",
    "importable",
    "kernels",
    "load",
    "load_any",
    "measure",
    "memory",
    "profile",
    "profiled",
    "profiling",
    "results",
    "roofline",
    "sample",
    "save",
    "stats",
    "suite",
    "timeit",
]
