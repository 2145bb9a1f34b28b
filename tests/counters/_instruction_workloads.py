"""Workloads for tests/counters/test_instructions.py, which the counting imports by name in
a fresh process under valgrind.

Free of imports (no numpy, no fastbench), so each run under valgrind imports this small
file only and starts in about a second.
"""

from __future__ import annotations

# Appended to by statements whose setup imports this module: an effect the test can see.
SINK: list[int] = []


def spin(k: int) -> int:
    """``k`` iterations of a fixed body on small ints (cached objects, no allocation), so
    the instructions grow by the same amount with each iteration."""
    x = 0
    for _ in range(k):
        x = (x * 7 + 3) & 255
    return x


def fail() -> None:
    raise RuntimeError("workload failed on purpose")
