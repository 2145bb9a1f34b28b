"""The run metadata recorded beside every result: machine facts (total memory included),
noise checks, numpy and its BLAS, torch's version and threads when torch is already
imported, the fastbench version, a UTC timestamp and the git commit of the working directory.
Gathers facts only; it never measures, never prints, never imports torch and never raises
for a fact it cannot find.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from datetime import datetime, timezone
from typing import Any

import numpy as np
import psutil

from .._version import __version__
from .facts import machine_info
from .noise import noise_checks

__all__ = ["machine_metadata"]

# `git` must never hold up a save: a network file system or a huge repository can make
# `git status` slow, and then the commit is simply not recorded.
_GIT_TIMEOUT_S = 2.0

# Saving a result inside a repository someone else prepared (a downloaded project, a
# shared directory) must not run their commands. `git status` honours the repository's own
# configuration, and three parts of it run programs: core.fsmonitor (a hook git runs on
# every status), the clean/process commands of filter drivers (run for files whose stat
# data changed, to hash their content) and the post-index-change hook (run when status
# refreshes the index). The overrides below switch each off for our calls only; the filter
# drivers have arbitrary names, so every configured one is switched off by name (see
# _filter_overrides). Status also skips looking inside submodules, which would run `git
# status` there under the submodule's own configuration; a submodule moved to another
# commit still counts. Reading the configuration (`git config`) and `git rev-parse HEAD`
# run nothing. Untracked files and diff/textconv drivers do not come into it (status with
# --untracked-files=no and --porcelain runs no diff of contents).
_SAFE_GIT = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",  # no hook is found there
    "--no-optional-locks",  # status does not write the index: no post-index-change hook
)


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
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):  # no git, no cwd, timeout
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _filter_overrides() -> list[str] | None:
    """``-c`` options that empty the commands of every filter driver configured (in any
    scope, includes followed), so that git hashes files as they are; None when the
    configuration cannot be read."""
    try:
        done = subprocess.run(
            ["git", *_SAFE_GIT, "config", "-z", "--get-regexp",
             r"^filter\..*\.(clean|smudge|process)$"],
            capture_output=True, timeout=_GIT_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode not in (0, 1):  # 1: no filter driver is configured
        return None
    drivers: dict[str, None] = {}
    for entry in done.stdout.split(b"\0"):
        key = entry.partition(b"\n")[0].decode("utf-8", "surrogateescape")
        if key.startswith("filter."):  # filter.<driver, which may hold dots>.<command>
            drivers[key[len("filter."):].rpartition(".")[0]] = None
    if any("=" in name for name in drivers):  # `-c` would cut the name there
        return None
    out: list[str] = []
    for name in drivers:
        for option in ("clean=", "smudge=", "process=", "required=false"):
            out += ["-c", f"filter.{name}.{option}"]
    return out


def _git_info() -> dict[str, Any] | None:
    commit = _git(*_SAFE_GIT, "rev-parse", "HEAD")
    if not commit:  # not a work tree, no commit yet, no git, or an unsafe directory
        return None
    filters = _filter_overrides()
    # Untracked files do not count: a results file saved inside the repository would
    # otherwise mark every later run dirty.
    status = None if filters is None else _git(
        *_SAFE_GIT, *filters, "status", "--porcelain", "--untracked-files=no",
        "--ignore-submodules=dirty")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


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
