"""Workloads the benchmark scripts time in fresh processes (worker processes, valgrind's
Python): module level so they import by name, and importing nothing, so such a process
starts in about a second even under valgrind. Not collected by pytest.
"""

from __future__ import annotations


def loop100() -> int:
    """100 iterations of a small arithmetic body."""
    s = 0
    for i in range(100):
        s += i * i
    return s


def loop101() -> int:
    """The same body, one iteration more: 1% more work."""
    s = 0
    for i in range(101):
        s += i * i
    return s


_DESCENDING = list(range(150, 0, -1))


def sorted150() -> list[int]:
    """A new sorted list of 150 ints: code that allocates (1.2 KB from the C allocator)."""
    return sorted(_DESCENDING)
