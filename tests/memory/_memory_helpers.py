"""What the memory tests share: sizes, a marker for tests that need the exact peak (clear_refs
usable here), and allocations of known size. Not a test module (no test_ prefix).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fastbench.memory import track

MiB = 1 << 20
SIZE = 100 * MiB
SMALL = 10 * MiB  # what a region allocating nothing may still show


def _exact_here() -> bool:
    with track(python_heap=False) as m:
        pass
    return m.exact


needs_exact = pytest.mark.skipif(not _exact_here(), reason="/proc/self/clear_refs cannot reset "
                                 "the peak RSS here (not Linux >= 4.0, or no permission)")


def touch(size_bytes: int) -> Any:
    """A numpy array of ``size_bytes`` whose every page is written (np.ones)."""
    return np.ones(size_bytes // 8, dtype=np.float64)


def in_band(value: float, size: int, low: float = 0.95, high: float = 1.10) -> bool:
    return low * size <= value <= high * size
