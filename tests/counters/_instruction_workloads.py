"""Workloads for tests/counters/test_instructions.py, which the counting imports by name in
a fresh process under valgrind.

Free of imports but the standard library's itertools (no numpy, no fastbench), so each run
under valgrind imports this small file only and starts in about a second.
"""

from __future__ import annotations

from itertools import repeat

# Appended to by statements whose setup imports this module: an effect the test can see.
SINK: list[int] = []


def spin(k: int) -> int:
    """``k`` iterations of a fixed body on small ints (cached objects, no allocation), so
    the instructions grow by the same amount with each iteration. The loop runs over
    ``repeat(None, k)``, as timeit's does: ``range(k)`` makes a new int object for every
    value past the cached 256, which added about 70 instructions to each iteration beyond
    the 256th (4% more per iteration at k = 400, an R^2 of 0.9989)."""
    x = 0
    for _ in repeat(None, k):
        x = (x * 7 + 3) & 255
    return x


def fail() -> None:
    raise RuntimeError("workload failed on purpose")


def sort_copy(values: list[int]) -> list[int]:
    """A new sorted list: an allocation of ``len(values)`` pointers per call, through the C
    allocator for a list past 64 items (the pools serve blocks up to 512 B), so its path
    depends on where the allocator's free blocks lie."""
    return sorted(values)
