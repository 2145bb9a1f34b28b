"""Shared fixtures: the clocks usable here, a TSC requirement that skips with a reason, and
a guard that restores the cyclic GC's state so one test cannot leak it into the next; and
Ctrl-C deliverable to the test session, whatever started it.
"""

from __future__ import annotations

import gc
import os
import signal
from typing import Iterator

import pytest

from fastbench import _core


def pytest_configure(config: pytest.Config) -> None:
    """The tests of interruption press Ctrl-C (SIGINT to this process or to a child). A job
    started in the background of a non-interactive shell (`.ci/run &`, nohup) inherits
    SIGINT ignored, and Python keeps an ignored SIGINT ignored, in this process and in every
    child it starts: no Ctrl-C would arrive. Python's own handler is put back here; the
    children get the default disposition at exec and install theirs."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A cache directory of the test session's own, no run-to-run variation given by the
    environment, and the run log off: what a developer's machine has measured or set never
    reaches a test, and what one test saves never changes how another's runs are judged
    (the run log's tests turn it on in a directory of their own)."""
    names = ("FASTBENCH_CACHE_DIR", "FASTBENCH_RUN_VARIATION", "FASTBENCH_RUN_LOG")
    saved = {k: os.environ.get(k) for k in names}
    os.environ["FASTBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("fastbench-cache"))
    os.environ.pop("FASTBENCH_RUN_VARIATION", None)
    os.environ["FASTBENCH_RUN_LOG"] = "0"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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
