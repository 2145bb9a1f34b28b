"""The native op observer (``observer.cpp``): built on first use against the installed torch
with ``torch.utils.cpp_extension`` (a C++ compiler and ninja are needed; about 10 s once per
torch version, cached in torch's extensions directory, ``TORCH_EXTENSIONS_DIR``), then
loaded in a fraction of a second. Where it cannot be built the profiler falls back to its
Python dispatch-mode collector and says why (:func:`unavailable_reason`);
``FASTBENCH_NATIVE_OBSERVER=0`` in the environment makes it fall back without trying.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from pathlib import Path
from typing import Any

__all__ = ["load", "unavailable_reason"]

_SOURCE = Path(__file__).with_name("observer.cpp")
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
            if not _built(cpp_extension, name):
                print("fastbench: building the profiler's native op observer for torch "
                      f"{torch.__version__} (once; about 10 s)...", file=sys.stderr, flush=True)
            _EXT = cpp_extension.load(name=name, sources=[str(_SOURCE)],
                                      extra_cflags=["-O2", "-DNDEBUG"], verbose=False)
    except Exception as e:   # no compiler, no ninja, headers missing: say so, fall back
        first = str(e).strip().splitlines()
        _REASON = (f"the native observer could not be built ({type(e).__name__}: "
                   f"{first[0] if first else ''}); it needs a C++ compiler and ninja "
                   f"(pip install ninja)")
        return None
    return _EXT


def _built(cpp_extension: Any, name: str) -> bool:
    try:
        root = Path(cpp_extension._get_build_directory(name, verbose=False))
    except Exception:
        return False
    return any(root.glob(f"{name}*.so"))


def unavailable_reason() -> str | None:
    """Why the native observer is not in use (None when it loaded or was not tried)."""
    return _REASON
