"""What a region of code costs in memory: its exact peak resident set size, the Python heap
peak, the CUDA peak, a labelled timeline, and the peak per call of a callable.

A face: the results are :mod:`.usage`, the process readings :mod:`.readings`, the tracker
and its nesting :mod:`.tracker`, the memory per call :mod:`.per_call`. No timer
(``elapsed_s`` is a coarse wall-clock figure), never prints, and never imports torch.
"""

from __future__ import annotations

from ..units import format_bytes as format_size
from .per_call import CallMemory, call_memory

# The tracker's constants stay importable from here, outside __all__.
from .tracker import DEFAULT_INTERVAL_S as DEFAULT_INTERVAL_S
from .tracker import METHOD_EXACT as METHOD_EXACT
from .tracker import METHODS as METHODS
from .tracker import RESERVED_LABELS as RESERVED_LABELS
from .tracker import MemoryTracker, track
from .usage import MemoryUsage, Snapshot

__all__ = [
    "CallMemory",
    "MemoryTracker",
    "MemoryUsage",
    "Snapshot",
    "call_memory",
    "format_size",
    "track",
]
