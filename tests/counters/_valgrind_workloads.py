"""Workloads for tests/counters/test_simulate.py, which simulate() imports by name in a
fresh process.

Kept apart from the test module, and free of imports, so each run under valgrind imports
this small file rather than pytest and fastbench (start-up under valgrind costs seconds).
"""

from __future__ import annotations

_LINE_BYTES = 64


def sum_range(n: int) -> int:
    """Sum of range(n): the instructions grow linearly with n."""
    return sum(range(n))


def stream_bytes(size_bytes: int) -> int:
    """Stream over a fresh buffer of ``size_bytes``: zero it, then read one byte per line.

    bytearray(n) writes n zero bytes; the strided slice then reads one byte of every
    64-byte line, so a buffer far beyond the caches misses the D1 about once per line on
    each pass, and one that fits in the D1 hardly at all.
    """
    buf = bytearray(size_bytes)
    return sum(buf[::_LINE_BYTES])


def fail() -> None:
    raise RuntimeError("workload failed on purpose")


class Counter:
    """A picklable object: simulate(Counter.add, Counter(1), 2) is how to simulate a method."""

    def __init__(self, start: int) -> None:
        self.start = start

    def add(self, n: int) -> int:
        return self.start + n
