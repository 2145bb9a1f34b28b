"""How this process's memory is read: VmRSS and VmHWM from /proc/self/status, the kernel's
peak reset through /proc/self/clear_refs, a sampling thread where those are missing, and
torch's CUDA module when the caller already imported torch (never imported here). No
nesting logic and no results (those are :mod:`.tracker` and :mod:`.usage`).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import psutil

__all__ = ["RssSampler", "read_status", "reset_peak", "torch_cuda"]

# proc(5): writing "5" to clear_refs resets the peak RSS (VmHWM) to the current RSS
# (Linux >= 4.0; older kernels answer EINVAL).
_CLEAR_REFS = "/proc/self/clear_refs"
_STATUS = "/proc/self/status"
_KIB = 1024


def read_status() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process from /proc/self/status, in bytes.

    Raises
    ------
    OSError
        The file cannot be read or lacks either field (not Linux).
    """
    # Raw reads in small chunks: a text-mode file would allocate an 8 KiB buffer, which
    # tracemalloc would count in the region being measured.
    fd = os.open(_STATUS, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 2048):
            chunks.append(chunk)
    finally:
        os.close(fd)
    found: dict[str, int] = {}
    for line in b"".join(chunks).splitlines():
        key, _, rest = line.partition(b":")
        if key in (b"VmRSS", b"VmHWM"):
            found[key.decode()] = int(rest.split()[0]) * _KIB  # proc(5): kB means 1024 B
    if len(found) != 2:
        raise OSError(f"{_STATUS} has no VmRSS/VmHWM lines")
    return found["VmRSS"], found["VmHWM"]


def reset_peak() -> str:
    """Reset the kernel's peak RSS to the current RSS; "" on success, else the reason."""
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as f:
            f.write("5")
        read_status()
    except OSError as exc:  # absent (not Linux), EACCES, EINVAL (Linux < 4.0)
        return f"{exc.strerror or exc} ({exc.filename or _CLEAR_REFS})"
    return ""


def torch_cuda() -> Any:
    """``torch.cuda`` when the caller already imported torch and CUDA is usable, else None."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        return cuda if cuda is not None and cuda.is_available() else None
    except Exception:  # a half-initialised CUDA runtime must not break memory tracking
        return None


class RssSampler:
    """A daemon thread reading the RSS every ``interval_s`` and keeping the highest value.

    Samples miss peaks shorter than the interval (and the thread waits for the GIL while
    Python code runs), so the result is a lower bound.
    """

    def __init__(self, interval_s: float) -> None:
        self._process = psutil.Process()
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._peak = 0
        self.read()
        self._thread = threading.Thread(target=self._run, name="fastbench-rss-sampler",
                                        daemon=True)
        self._thread.start()

    def read(self) -> tuple[int, int]:
        """(RSS now, highest RSS seen so far including now), in bytes."""
        rss = int(self._process.memory_info().rss)
        with self._lock:
            self._peak = max(self._peak, rss)
            return rss, self._peak

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.read()

    def stop(self) -> None:
        """End the thread (the tracker's "end" snapshot was the final reading)."""
        self._stop.set()
        self._thread.join()
