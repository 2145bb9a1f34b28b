"""The native observer's build lock: a build killed outright left torch's ``lock`` file, on
which every later build waited forever. fastbench's own lock names its process, so a dead
builder's locks are removed, and a live builder is waited for only so long. (torch's lock
itself is plain: torch creates it with O_EXCL and waits while it exists.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from fastbench.pytorch.observer import build_lock


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_dead_builders_locks_are_removed(tmp_path: Path) -> None:
    (tmp_path / "lock").write_text("")  # torch's, left by a build killed with SIGKILL
    (tmp_path / "fastbench-build.pid").write_text(f"{_dead_pid()}\n")
    with build_lock(tmp_path, wait_s=5.0) as held:
        assert held
        assert not (tmp_path / "lock").exists()
        assert (tmp_path / "fastbench-build.pid").read_text().strip() == str(os.getpid())
    assert not (tmp_path / "fastbench-build.pid").exists()


def test_a_torch_lock_without_a_fastbench_owner_is_stale(tmp_path: Path) -> None:
    (tmp_path / "lock").write_text("")
    with build_lock(tmp_path, wait_s=5.0) as held:
        assert held and not (tmp_path / "lock").exists()


def test_a_live_builder_is_waited_for_a_bounded_time(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / "lock").write_text("")
        (tmp_path / "fastbench-build.pid").write_text(f"{sleeper.pid}\n")
        with build_lock(tmp_path, wait_s=0.5) as held:
            assert not held
        # The live builder's files are left to it.
        assert (tmp_path / "lock").exists() and (tmp_path / "fastbench-build.pid").exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    # Once it is gone, its lock is stale.
    with build_lock(tmp_path, wait_s=5.0) as held:
        assert held


def test_a_builder_finishing_while_waited_for_hands_over(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    (tmp_path / "fastbench-build.pid").write_text(f"{sleeper.pid}\n")
    start = time.monotonic()
    try:
        with build_lock(tmp_path, wait_s=60.0) as held:
            assert held
    finally:
        sleeper.wait()
    assert time.monotonic() - start < 60.0
