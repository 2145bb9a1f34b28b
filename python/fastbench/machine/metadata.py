"""The run metadata recorded beside every result: machine facts, noise checks, numpy and
its BLAS, the fastbench version, a UTC timestamp and the git commit of the working
directory. Gathers facts only; it never measures, never prints and never raises for a fact
it cannot find.
"""

from __future__ import annotations

import subprocess
import warnings
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .._version import __version__
from .facts import machine_info
from .noise import noise_checks

__all__ = ["machine_metadata"]

# `git` must never hold up a save: a network file system or a huge repository can make
# `git status` slow, and then the commit is simply not recorded.
_GIT_TIMEOUT_S = 2.0


def _git(*args: str) -> str | None:
    """stdout of ``git args`` in the working directory, or None if it fails in any way."""
    try:
        done = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):  # no git, no cwd, timeout
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _git_info() -> dict[str, Any] | None:
    commit = _git("rev-parse", "HEAD")
    if not commit:  # not a work tree, no commit yet, no git, or an unsafe directory
        return None
    # Untracked files do not count: a results file saved inside the repository would
    # otherwise mark every later run dirty.
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _blas() -> dict[str, str | None] | None:
    """numpy's BLAS from ``show_config(mode="dicts")`` (numpy >= 1.26), else None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = np.show_config(mode="dicts")
    except Exception:  # noqa: BLE001 - older numpy has no `mode`; metadata must not fail a save
        return None
    deps = config.get("Build Dependencies") if isinstance(config, dict) else None
    blas = deps.get("blas") if isinstance(deps, dict) else None
    if not isinstance(blas, dict):
        return None
    name, version = blas.get("name"), blas.get("version")
    return {
        "name": name if isinstance(name, str) else None,
        "version": version if isinstance(version, str) else None,
    }


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def machine_metadata() -> dict[str, Any]:
    """Describe this machine and software stack, as recorded in every results file.

    Returns
    -------
    dict
        JSON-ready facts: ``cpu_model`` (str), ``logical_cores`` (int),
        ``physical_cores`` (int or None), ``caches`` (list of dicts with ``level``,
        ``kind``, ``size_bytes``, ``line_bytes``, ``shared_by_cpus``), ``flags`` (sorted
        list of str), ``clocksource`` (str or None), ``noise_checks`` (list of dicts with
        ``name``, ``value``, ``status``), ``python_implementation``, ``python_version``,
        ``platform``, ``hostname`` (str), ``numpy_version`` (str), ``blas`` (dict with
        ``name`` and ``version``, or None when numpy does not say), ``fastbench_version``
        (str), ``timestamp`` (ISO-8601, UTC) and ``git``: ``{"commit": sha,
        "dirty": bool}`` for the working directory's repository, ``dirty`` meaning
        tracked files differ from the commit, or None outside a git work tree or
        without git. Never raises for facts it cannot find.
    """
    meta = machine_info().to_dict()
    checks = noise_checks()
    clocksource = next((c for c in checks if c.name == "clocksource"), None)
    meta["clocksource"] = (
        clocksource.value if clocksource is not None and clocksource.status != "unknown" else None
    )
    meta["noise_checks"] = [{"name": c.name, "value": c.value, "status": c.status} for c in checks]
    meta["numpy_version"] = np.__version__
    meta["blas"] = _blas()
    meta["fastbench_version"] = __version__
    meta["timestamp"] = _utc_now()
    meta["git"] = _git_info()
    return meta
