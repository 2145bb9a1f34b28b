"""Timing a block: :class:`Timer` reads the native clock on entry and exit of a ``with``
block. For anything shorter than tens of microseconds, fastbench.measure is the tool.
"""

from __future__ import annotations

from .. import _core
from ..units import format_ns
from .clocks import resolve_clock


class Timer:
    """Time a block: ``with fastbench.Timer() as t: ...`` then ``t.elapsed`` in milliseconds
    (the unit of most blocks worth timing this way), or with the unit in the name:
    ``elapsed_ns``, ``elapsed_ms`` (the same figure as ``elapsed``), ``elapsed_s``;
    ``repr(t)`` reads ``Timer(elapsed=1.234 ms, clock='tsc')``.

    Reads the native clock (fenced TSC where "auto" picks it) on entry and exit. The
    figure includes the cost of one clock read pair and one Python-level call (about
    0.1-0.3 µs): use :func:`measure` for anything shorter than tens of microseconds.
    """

    def __init__(self, clock: str = "auto") -> None:
        self.clock = resolve_clock(clock)
        self._start: int | None = None
        self._elapsed_ns: float | None = None

    def __enter__(self) -> Timer:
        self._elapsed_ns = None
        self._start = _core.read_start(self.clock)
        return self

    def __exit__(self, *exc: object) -> None:
        stop = _core.read_stop(self.clock)
        if self._start is None:
            raise RuntimeError("Timer exited without being entered")
        self._elapsed_ns = _core.ticks_to_ns(self.clock, stop - self._start)

    @property
    def elapsed_ns(self) -> float:
        """Elapsed time in ns; while the block runs, the time so far.

        Raises
        ------
        RuntimeError
            If the timer was never entered.
        """
        if self._elapsed_ns is not None:
            return self._elapsed_ns
        if self._start is None:
            raise RuntimeError("Timer was not started: use it as `with Timer() as t:`")
        return _core.ticks_to_ns(self.clock, _core.read_stop(self.clock) - self._start)

    @property
    def elapsed(self) -> float:
        """Elapsed time in milliseconds: ``elapsed_ms`` (``elapsed_ns`` and ``elapsed_s``
        name theirs)."""
        return self.elapsed_ms

    @property
    def elapsed_ms(self) -> float:
        """Elapsed time in milliseconds."""
        return self.elapsed_ns * 1e-6

    @property
    def elapsed_s(self) -> float:
        """Elapsed time in seconds."""
        return self.elapsed_ns * 1e-9

    def __repr__(self) -> str:
        # Reads no clock: the repr of a running timer must not depend on when it is shown.
        if self._elapsed_ns is not None:
            state = f"elapsed={format_ns(self._elapsed_ns)}"
        elif self._start is not None:
            state = "running"
        else:
            state = "not started"
        return f"Timer({state}, clock={self.clock!r})"
