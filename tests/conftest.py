"""Shared fixtures: the clocks usable here, a TSC requirement that skips with a reason, and
a guard that restores the cyclic GC's state so one test cannot leak it into the next.
"""

from __future__ import annotations

import gc
from typing import Iterator

import pytest

from fastbench import _core

TSC_SKIP_REASON = "no usable TSC here (needs x86 with rdtscp and an invariant TSC)"


@pytest.fixture
def require_tsc() -> None:
    """Skip the test unless the invariant TSC can be used on this machine."""
    if not _core.tsc_usable():
        pytest.skip(TSC_SKIP_REASON)


@pytest.fixture(params=["steady", "tsc"])
def clock_name(request: pytest.FixtureRequest) -> str:
    """Each clock in turn; "tsc" skips where the TSC is not usable."""
    name: str = request.param
    if name == "tsc" and not _core.tsc_usable():
        pytest.skip(TSC_SKIP_REASON)
    return name


@pytest.fixture
def gc_restored() -> Iterator[None]:
    """Restore the GC's enabled state after the test, whatever the test did to it."""
    was_enabled = gc.isenabled()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()
