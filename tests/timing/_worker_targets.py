"""Workloads for tests/timing/test_workers.py, which the worker processes import by name.

Those that take a path append one line to that file the first time they run in a process
(its pid, and what they were given), so a test reads back which processes ran and in what
order, whatever the number of calls the measurement made.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time

# Does not pickle: reaches the workers as an ImportRef.
LOCK = threading.Lock()

_written: set[str] = set()


def _once(path: str, line: str) -> None:
    if path in _written:
        return
    _written.add(path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def record_pid(path: str) -> None:
    _once(path, str(os.getpid()))


def sum_and_record(path: str, label: str, n: int) -> int:
    """sum(range(n)), recording ``label`` and the pid once per process."""
    _once(path, f"{label} {os.getpid()}")
    return sum(range(n))


def describe(path: str, obj: object, *, scale: int = 1) -> None:
    """Records the pid, the type of ``obj`` and ``scale``."""
    _once(path, f"{os.getpid()} {type(obj).__name__} {scale}")


def fail_in_second_process(path: str) -> None:
    """Raises in the second process that runs it (the file then has a line already)."""
    if path not in _written and os.path.exists(path):
        raise RuntimeError("the second process fails")
    _once(path, str(os.getpid()))


def boom() -> None:
    raise ValueError("boom")


def exit_now(code: int) -> None:
    os._exit(code)


def segfault() -> None:
    ctypes.string_at(0)


def hang(path: str) -> None:
    """Starts a child process that sleeps, records both pids, then sleeps itself."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    _once(path, f"{os.getpid()} {child.pid}")
    time.sleep(120)
