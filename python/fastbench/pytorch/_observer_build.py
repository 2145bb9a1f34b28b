"""The native op observer's build, in a process of its own (``python -m
fastbench.pytorch._observer_build PARENT_PID NAME SOURCE``), so that nothing of it outlives
the fastbench process that asked for it.

torch's builder runs ninja, and ninja runs each compiler in a process group of its own: a
parent killed outright (SIGKILL) would leave ninja and the compilers running. Here the
kernel sends this process SIGTERM when its parent dies (``PR_SET_PDEATHSIG``), and on
SIGTERM or SIGHUP (from the kernel, or from a parent that is itself stopping) it passes
SIGTERM to its own process group, where ninja is: ninja then stops its compilers, as on
Ctrl-C, and this process exits. The parent starts it as the leader of a new session.

Exit status 0: built (and loadable); 1: the build failed, its first error line on stderr.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
import warnings
from types import FrameType

# How long ninja is given to stop its compilers before this process exits.
_GRACE_S = 1.0


def _stop(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)  # ninja, which passes it to its compilers
    except OSError:
        pass
    time.sleep(_GRACE_S)
    os._exit(128 + signum)


def _die_with(parent: int) -> None:
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    if prctl(1, int(signal.SIGTERM), 0, 0, 0) == 0 and os.getppid() != parent:
        os._exit(70)  # the parent died before the request took effect


def main(argv: list[str]) -> int:
    parent, name, source = int(argv[0]), argv[1], argv[2]
    _die_with(parent)
    from torch.utils import cpp_extension

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpp_extension.load(name=name, sources=[source], extra_cflags=["-O2", "-DNDEBUG"],
                               verbose=False)
    except Exception as e:  # noqa: BLE001 - reported to the parent, which falls back
        first = str(e).strip().splitlines()
        print(f"{type(e).__name__}: {first[0] if first else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
