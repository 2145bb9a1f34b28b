"""The run log: the median of every single-run result saved on this machine, by workload,
in the order they were taken. It is how fastbench learns how much separate runs of *one*
benchmark vary here, which a machine-wide figure cannot say (a tight integer loop and a
sort of floats, measured the same minute, wander by 6% and 1.5%). Single-run comparisons
judge against it (:mod:`fastbench.comparison`).

One JSON line per run in ``run-log-<fingerprint>.jsonl`` in the cache directory:
``{"workload", "median_ns", "at"}``. ``FASTBENCH_RUN_LOG=0`` turns it off (nothing is
written or read). Nothing here measures or prints.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import defaultdict, deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from .variation import cache_dir, fingerprint

__all__ = ["ENV_RUN_LOG", "KEEP_RUNS", "logged_runs", "record_runs", "results_key",
           "run_log_enabled", "run_log_path"]

# Environment variable that turns the run log off when set to 0.
ENV_RUN_LOG = "FASTBENCH_RUN_LOG"
# Runs kept per workload: the newest, so the estimate follows the machine as it is now.
KEEP_RUNS = 50
# The log is compacted to KEEP_RUNS per workload when it grows beyond this size.
_COMPACT_BYTES = 2 * 2**20


def run_log_enabled() -> bool:
    """False when ``FASTBENCH_RUN_LOG`` is 0 (or "off", "false", "no")."""
    return os.environ.get(ENV_RUN_LOG, "1").strip().lower() not in ("0", "off", "false", "no")


def run_log_path() -> Path:
    """This machine's run log file."""
    return cache_dir() / f"run-log-{fingerprint()}.jsonl"


def _read(path: Path) -> dict[str, deque[float]]:
    """Every workload's logged medians, oldest first (the newest KEEP_RUNS); unreadable
    lines are skipped, an absent or unreadable file is an empty log."""
    runs: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=KEEP_RUNS))
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    entry = json.loads(line)
                    key, median = str(entry["workload"]), float(entry["median_ns"])
                except (ValueError, TypeError, KeyError):
                    continue
                if key and math.isfinite(median) and median > 0.0:
                    runs[key].append(median)
    except OSError:
        pass
    return runs


# The last log read: (path, size, mtime in ns) and what it held, so that measuring and
# saving many times read an unchanged log once.
_last: tuple[tuple[str, int, int], dict[str, tuple[float, ...]]] | None = None


def _logged(path: Path) -> dict[str, tuple[float, ...]]:
    """What :func:`_read` finds in ``path``, read again only when the file changed."""
    global _last
    try:
        st = path.stat()
    except OSError:
        return {}
    stamp = (str(path), st.st_size, st.st_mtime_ns)
    if _last is None or _last[0] != stamp:
        _last = stamp, {k: tuple(v) for k, v in _read(path).items()}
    return _last[1]


def results_key(workload: str, runs: int) -> str:
    """The run log's key for whole results of ``runs`` processes of ``workload``: their
    run-level figures vary between invocations apart from single runs, and by how much
    depends on how many processes each averages."""
    return f"{workload}|processes={runs}"


def logged_runs(workload: str) -> tuple[float, ...]:
    """The logged medians of ``workload`` here, oldest first (at most KEEP_RUNS); empty when
    the log is off, absent or holds none."""
    if not workload or not run_log_enabled():
        return ()
    return _logged(run_log_path()).get(workload, ())


def record_runs(runs: Iterable[tuple[str, float]]) -> int:
    """Append ``(workload, median_ns)`` runs to this machine's log; returns how many were
    written. A run whose workload already logged exactly this median (the same result saved
    again) is not written twice. The log is left alone when it is off or cannot be written:
    it is an aid to later comparisons, never a reason for a save to fail."""
    if not run_log_enabled():
        return 0
    path = run_log_path()
    known = _logged(path)
    added: dict[str, list[float]] = defaultdict(list)
    at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    lines = []
    for workload, median in runs:
        if (workload and math.isfinite(median) and median > 0.0
                and median not in known.get(workload, ()) and median not in added[workload]):
            added[workload].append(median)
            lines.append(json.dumps({"workload": workload, "median_ns": float(median), "at": at}))
    if not lines:
        return 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # One write of whole lines in append mode: concurrent savers do not interleave them.
        # A line a killed writer left unfinished is ended first, so it costs only itself.
        text = "\n".join(lines) + "\n"
        with open(path, "a+b") as f:
            if f.tell() > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    text = "\n" + text
            f.write(text.encode("utf-8"))
        if path.stat().st_size > _COMPACT_BYTES:
            _compact(path, {w: (*known.get(w, ()), *added.get(w, ()))[-KEEP_RUNS:]
                            for w in {*known, *added}})
    except OSError:
        return 0
    return len(lines)


def _compact(path: Path, runs: dict[str, tuple[float, ...]]) -> None:
    """Rewrite the log with the newest KEEP_RUNS runs of each workload (atomically)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".run-log-", suffix=".jsonl")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        for key, medians in runs.items():
            for median in medians:
                f.write(json.dumps({"workload": key, "median_ns": median, "at": ""}) + "\n")
    os.replace(tmp, path)
