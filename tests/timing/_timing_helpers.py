"""Shared by the timing tests: quick run settings and a callable that records its calls."""

from __future__ import annotations

import gc
from typing import Any

FAST: dict[str, Any] = {"min_time_s": 0.002, "repeat": 7, "duration_s": None}


class Recorder:
    """A Python callable that counts its calls and records the first few argument sets."""

    def __init__(self) -> None:
        self.calls = 0
        self.seen: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.gc_enabled: set[bool] = set()

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1
        if len(self.seen) < 5:
            self.seen.append((args, kwargs))
            self.gc_enabled.add(gc.isenabled())
