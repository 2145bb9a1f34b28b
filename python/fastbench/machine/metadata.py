"""The run metadata recorded beside every result: machine facts (total memory included),
noise checks, numpy and its BLAS, torch's version and threads when torch is already
imported, the fastbench version, a UTC timestamp and the git commit of the working directory.
Gathers facts only; it never measures, never prints, never imports torch and never raises
for a fact it cannot find.
"""

from __future__ import annotations

import sys
import warnings
from datetime import datetime, timezone
from typing import Any

import numpy as np
import psutil

from .._version import __version__
from .facts import machine_info
from .git import git_state
from .noise import noise_checks

__all__ = ["machine_metadata"]

def _git_info() -> dict[str, Any] | None:
    """The working directory's commit and whether tracked files changed, or None outside a
    work tree (read safely: :func:`fastbench.machine.git.git_state`)."""
    state = git_state(diff=False)
    return None if state is None else {"commit": state.commit, "dirty": state.dirty}


def _memory_total_bytes() -> int | None:
    """Physical memory of the machine in bytes (psutil: MemTotal on Linux), or None."""
    try:
        total = int(psutil.virtual_memory().total)
    except Exception:  # noqa: BLE001 - metadata must not fail a save
        return None
    return total if total > 0 else None


def _torch() -> dict[str, Any] | None:
    """torch's version and intra-op threads, when the program has imported torch already
    (importing it here would cost seconds and change the process being measured)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        version = str(torch.__version__)
        threads = int(torch.get_num_threads())
    except Exception:  # noqa: BLE001 - a half-imported or stubbed torch: record nothing
        return None
    return {"version": version, "num_threads": threads}


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
        (str), ``memory_total_bytes`` (int, the machine's physical memory, or None),
        ``torch`` (``{"version": str, "num_threads": int}`` when torch was already
        imported, else None; never imported for this), ``timestamp`` (ISO-8601, UTC)
        and ``git``: ``{"commit": sha, "dirty": bool or None}`` for the working
        directory's repository, ``dirty`` meaning tracked files differ from the commit
        (None when git could not tell), or None outside a git work tree or without
        git. Never raises for facts it cannot find.

    Notes
    -----
    git runs with the repository's command-running settings switched off (core.fsmonitor,
    hooks, filter drivers) and without looking inside submodules, so a repository
    prepared by someone else cannot run commands when a result is saved in it.
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
    meta["memory_total_bytes"] = _memory_total_bytes()
    meta["torch"] = _torch()
    meta["fastbench_version"] = __version__
    meta["timestamp"] = _utc_now()
    meta["git"] = _git_info()
    return meta
