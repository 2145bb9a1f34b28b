"""Every process fastbench starts dies with it, and its temporary directories go too.

Three ways a parent goes away, three answers:

- SIGTERM or SIGHUP (``timeout``, a cancelled CI job, a closed terminal): while children
  run, :func:`terminating` turns either signal into :class:`Terminated`, an exception, so
  the cleanup that runs on Ctrl-C runs here too (children killed with their process groups,
  temporary directories and worktrees removed); the command line then dies of the same
  signal. A signal the program ignores (``nohup``) or handles itself is left alone.
- SIGKILL, or a crash: nothing runs in the parent. Each child asks the kernel to kill it when
  its parent dies (``PR_SET_PDEATHSIG``, Linux): worker processes in their bootstrap, other
  commands (valgrind) through :func:`dying_with_parent`, a launcher that asks and then
  executes the command (the request survives ``execve``). A child whose parent died before
  it asked exits at once.
- The temporary directories such a parent leaves are named with its process id
  (:func:`temporary_directory`); :func:`sweep` removes those whose process is gone, and
  runs before each new set of children.

Leaf module: the standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any, Iterator, Sequence

__all__ = ["DIE_WITH_PARENT", "ENV_PARENT", "Terminated", "alive", "dying_with_parent",
           "make_temporary_directory", "sweep", "temporary_directory", "terminating"]

# The environment variable that tells a worker which process started it.
ENV_PARENT = "FASTBENCH_PARENT_PID"

# Python source that asks for SIGKILL when the parent dies (prctl 1 = PR_SET_PDEATHSIG), then
# checks that the parent is still the one that started it. No-op where prctl is missing.
DIE_WITH_PARENT = """\
def _fastbench_die_with_parent(parent):
    import ctypes, os, signal
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    if prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0 and parent and os.getppid() != parent:
        os._exit(70)
"""

_LAUNCHER = DIE_WITH_PARENT + """\
import os, sys
_fastbench_die_with_parent(int(sys.argv[1]))
os.execvp(sys.argv[2], sys.argv[2:])
"""

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived while fastbench's children ran. A BaseException, like
    KeyboardInterrupt, so that ``except Exception`` in user code does not swallow it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def terminating(redeliver: bool = True) -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Terminated` inside the block (main thread only, and
    only where the signal's handler is the default one); the handlers are restored after.
    When :class:`Terminated` leaves the block that installed them, the cleanup on its way
    (children killed, directories removed) has run, and with ``redeliver`` the process then
    dies of the signal, as it would have without fastbench's handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}
    for sig in _SIGNALS:
        if signal.getsignal(sig) is signal.SIG_DFL:
            previous[sig] = signal.signal(sig, _raise)
    try:
        yield
    except Terminated as exc:
        if not (redeliver and exc.signum in previous):
            raise
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        previous = {}
        sys.stderr.flush()
        os.kill(os.getpid(), exc.signum)  # the default action: this process ends here
        raise  # not reached where the default action is to end the process
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def dying_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` started through a launcher that makes it die with this process (Linux);
    ``argv`` itself elsewhere."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-c", _LAUNCHER, str(os.getpid()), *argv]


_OWNED = re.compile(r"^fastbench-[a-z]+-(\d+)-")


def temporary_directory(kind: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary directory ``fastbench-<kind>-<pid>-...``, which :func:`sweep` removes
    once this process is gone, should it die without removing it."""
    sweep()
    return tempfile.TemporaryDirectory(prefix=f"fastbench-{kind}-{os.getpid()}-")


def make_temporary_directory(kind: str) -> str:
    """:func:`temporary_directory`'s name made with ``mkdtemp`` (the caller removes it)."""
    sweep()
    return tempfile.mkdtemp(prefix=f"fastbench-{kind}-{os.getpid()}-")


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (one that has exited, not yet
    reaped by its parent, holds nothing but its entry)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in (b"Z", b"X")


def sweep(root: str | None = None) -> list[Path]:
    """Remove the temporary directories of fastbench processes that are gone; returns them.
    A directory of another user, or one that cannot be removed, is left alone."""
    base = Path(root or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in entries:
        m = _OWNED.match(entry.name)
        if m is None or int(m.group(1)) == os.getpid() or alive(int(m.group(1))):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or (
                    uid is not None and entry.stat(follow_symlinks=False).st_uid != uid):
                continue
            shutil.rmtree(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed
