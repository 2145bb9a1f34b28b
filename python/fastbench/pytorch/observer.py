"""The native op observer (``observer.cpp``): built on first use against the installed torch
with ``torch.utils.cpp_extension`` (a C++ compiler and ninja are needed; about 10 s once per
torch version, cached in torch's extensions directory, ``TORCH_EXTENSIONS_DIR``), then
loaded in a fraction of a second. Where it cannot be built the profiler falls back to its
Python dispatch-mode collector and says why (:func:`unavailable_reason`);
``FASTBENCH_NATIVE_OBSERVER=0`` in the environment makes it fall back without trying.

A build killed outright leaves torch's ``lock`` file behind, on which every later build
would wait forever (torch's lock records no owner). So fastbench holds a lock of its own
around the build, ``fastbench-build.pid`` beside torch's, holding its process id: a lock
whose process is gone is stale, and then so is torch's, and both are removed; a build still
running in another process is waited for at most :data:`BUILD_WAIT_S`, after which the
profiler falls back to the dispatch collector and says why.

The build itself runs in a child process (:mod:`._observer_build`) that stops ninja and its
compilers when fastbench is stopped (Ctrl-C, SIGTERM, SIGHUP) or killed outright.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from .._children import alive, terminating

__all__ = ["load", "unavailable_reason"]

_SOURCE = Path(__file__).with_name("observer.cpp")
# How long to wait for another process's build before falling back (a build takes ~10 s).
BUILD_WAIT_S = 180.0
# The longest a build may take before the profiler gives up on it and falls back.
BUILD_TIMEOUT_S = 600.0
_POLL_S = 0.2
_EXT: Any = None
_REASON: str | None = None


def _name(torch_version: str) -> str:
    """The extension's name: a build per source and torch version, so an upgraded torch or
    an edited source never loads a stale build."""
    digest = hashlib.sha1(_SOURCE.read_bytes() + torch_version.encode()).hexdigest()[:12]
    return f"fastbench_observer_{digest}"


def load() -> Any:
    """The built observer module, or None where it cannot be built here (the reason is
    :func:`unavailable_reason`). Built once per process at most; a failure is not retried."""
    global _EXT, _REASON
    if _EXT is not None or _REASON is not None:
        return _EXT
    if os.environ.get("FASTBENCH_NATIVE_OBSERVER", "1") == "0":
        _REASON = "FASTBENCH_NATIVE_OBSERVER=0 is set"
        return None
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as e:
        _REASON = f"torch.utils.cpp_extension cannot be imported ({e})"
        return None
    name = _name(torch.__version__)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # compiler-version advice from torch's builder
            directory = Path(cpp_extension._get_build_directory(name, verbose=False))
            with build_lock(directory) as held:
                if not held:
                    _REASON = (f"another process has been building the native observer in "
                               f"{directory} for over {BUILD_WAIT_S:g} s")
                    return None
                if not _built(cpp_extension, name):
                    print("fastbench: building the profiler's native op observer for torch "
                          f"{torch.__version__} (once; about 10 s)...", file=sys.stderr,
                          flush=True)
                    failed = _build(name)
                    if failed:
                        _REASON = (f"the native observer could not be built ({failed}); it "
                                   "needs a C++ compiler and ninja (pip install ninja)")
                        return None
                _EXT = cpp_extension.load(name=name, sources=[str(_SOURCE)],
                                          extra_cflags=["-O2", "-DNDEBUG"], verbose=False)
    except Exception as e:   # no compiler, no ninja, headers missing: say so, fall back
        first = str(e).strip().splitlines()
        _REASON = (f"the native observer could not be built ({type(e).__name__}: "
                   f"{first[0] if first else ''}); it needs a C++ compiler and ninja "
                   f"(pip install ninja)")
        return None
    return _EXT


def _build(name: str) -> str:
    """Build the observer in a child process (:mod:`._observer_build`) that takes ninja and
    the compilers with it when this process dies or is stopped; "" when built, else the
    reason it was not."""
    cmd = [sys.executable, "-m", "fastbench.pytorch._observer_build", str(os.getpid()), name,
           str(_SOURCE)]
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    with terminating():  # its handler ends this process after the build is stopped below
        try:
            _, err = child.communicate(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _stop_build(child)
            return f"the build took over {BUILD_TIMEOUT_S:g} s"
        except BaseException:   # Ctrl-C, SIGTERM, SIGHUP: the build stops with this process
            _stop_build(child)
            raise
    if child.returncode != 0:
        lines = err.strip().splitlines()
        return lines[-1] if lines else f"the build exited with status {child.returncode}"
    return ""


def _stop_build(child: subprocess.Popen[str]) -> None:
    """SIGTERM to the build (which stops ninja's compilers), then SIGKILL to what is left of
    its process group."""
    with contextlib.suppress(OSError):
        child.terminate()
    try:
        child.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=5.0)


def _owner(lock: Path) -> int | None:
    """The process id a fastbench lock holds (None when unreadable)."""
    try:
        return int(lock.read_text().strip())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def build_lock(directory: Path, wait_s: float | None = None) -> Any:
    """Hold fastbench's build lock in ``directory`` for the block (yields True), removing
    a stale one and torch's stale ``lock``; yields False when another live process held it
    for ``wait_s`` (default :data:`BUILD_WAIT_S`)."""
    wait = BUILD_WAIT_S if wait_s is None else wait_s
    directory.mkdir(parents=True, exist_ok=True)
    ours, torchs = directory / "fastbench-build.pid", directory / "lock"
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = os.open(ours, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            owner = _owner(ours)
            if owner is None:  # being written this instant, or garbage: give it a moment
                try:
                    age = time.time() - ours.stat().st_mtime
                except FileNotFoundError:
                    continue
                stale = age > 5.0
            else:
                stale = owner == os.getpid() or not alive(owner)
            if stale:
                with contextlib.suppress(FileNotFoundError):
                    ours.unlink()
                continue
            if time.monotonic() >= deadline:
                yield False
                return
            time.sleep(_POLL_S)
            continue
        break
    try:
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")
        # No fastbench process builds here but this one: a torch lock left now is a dead
        # build's (torch's lock names no owner, and would be waited on forever).
        with contextlib.suppress(FileNotFoundError):
            torchs.unlink()
        yield True
    finally:
        with contextlib.suppress(FileNotFoundError):
            ours.unlink()


def _built(cpp_extension: Any, name: str) -> bool:
    try:
        root = Path(cpp_extension._get_build_directory(name, verbose=False))
    except Exception:
        return False
    return any(root.glob(f"{name}*.so"))


def unavailable_reason() -> str | None:
    """Why the native observer is not in use (None when it loaded or was not tried)."""
    return _REASON
