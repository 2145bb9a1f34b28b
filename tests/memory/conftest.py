"""Every memory test leaves the process as it found it: no tracker running, no sampling
thread alive."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from fastbench.memory import tracker


@pytest.fixture(autouse=True)
def _no_tracker_left() -> Any:
    yield
    assert tracker._ACTIVE == []  # every test leaves the stack empty
    assert not any(t.name == "fastbench-rss-sampler" for t in threading.enumerate())
