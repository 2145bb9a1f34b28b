"""The run log: the figure of every result saved on this machine, by series, in the order
saved. A series is one identity of the code (``Identity.key``) measured with one number of
processes, so the figures of a series are replicates: the same code, the same inputs, the
same machine. How much they differ is how much whole results of that code vary here, which
comparisons of saved results judge against; a change of the code starts a new series and
is never counted as variation.

One JSON line per saved result in ``replicates-<fingerprint>.jsonl`` in the cache
directory: ``{"series", "median_ns", "at"}``. Appends and compaction hold a lock file, so
concurrent savers lose nothing. ``FASTBENCH_RUN_LOG=0`` turns it off (nothing is written or
read). The log is one implementation of :class:`ReplicateStore`; nothing here measures,
judges or prints.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections import OrderedDict, defaultdict, deque
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Protocol

from .variation import cache_dir, fingerprint

__all__ = ["ENV_RUN_LOG", "KEEP_RUNS", "ReplicateStore", "RunLog", "replicate_store",
           "run_log_enabled", "run_log_path", "series_key"]

# Environment variable that turns the run log off when set to 0.
ENV_RUN_LOG = "FASTBENCH_RUN_LOG"
# Figures kept per series: the newest, so the estimate follows the machine as it is now.
KEEP_RUNS = 20
# The log is compacted when it grows beyond this size, down to at most _KEEP_LINES lines
# (the series saved to most recently first), so a compaction happens at most once per
# megabyte or so of saves, whatever the number of series: its cost stays bounded.
_COMPACT_BYTES = 2 * 2**20
_KEEP_LINES = 8000


def run_log_enabled() -> bool:
    """False when ``FASTBENCH_RUN_LOG`` is 0 (or "off", "false", "no")."""
    return os.environ.get(ENV_RUN_LOG, "1").strip().lower() not in ("0", "off", "false", "no")


def run_log_path() -> Path:
    """This machine's run log file."""
    return cache_dir() / f"replicates-{fingerprint()}.jsonl"


def series_key(identity_key: str, processes: int) -> str:
    """The series of results of one identity measured with ``processes`` worker processes
    (1 for a single run): their figures vary between invocations by an amount that
    depends on how many processes each averages."""
    return f"{identity_key}|processes={processes}"


class ReplicateStore(Protocol):
    """Where replicates are kept: the run log today, the results history tomorrow."""

    def add(self, figures: Iterable[tuple[str, float]]) -> int:
        """Append ``(series, median_ns)`` figures; returns how many were new."""

    def figures(self, series: str) -> tuple[float, ...]:
        """The figures of a series, oldest first."""


@dataclass
class _Read:
    """What was read of a log: the file (path, inode), how far (``offset``, just past the last
    complete line), the bytes before that point (to tell the same file grown from another
    file at the same inode), its size and mtime then, and the figures."""

    path: str
    inode: int
    offset: int
    tail: bytes
    size: int
    mtime_ns: int
    runs: OrderedDict[str, deque[float]]


# The last log read. A log that only grew since (appends) is read from where reading
# stopped, so a save costs what it appends, not the whole log; a compacted log (a new
# file) is read again whole.
_last: _Read | None = None
_TAIL = 64


def _fold(runs: OrderedDict[str, deque[float]], lines: Iterable[bytes]) -> None:
    """Add the figures of complete log lines to ``runs``: the newest KEEP_RUNS of each
    series, the series in the order they were last saved to; unreadable lines skipped."""
    for line in lines:
        try:
            entry = json.loads(line)
            key, median = str(entry["series"]), float(entry["median_ns"])
        except (ValueError, TypeError, KeyError):
            continue
        if key and math.isfinite(median) and median > 0.0:
            if key not in runs:
                runs[key] = deque(maxlen=KEEP_RUNS)
            runs[key].append(median)
            runs.move_to_end(key)


def _read(path: Path, since: _Read | None = None) -> _Read | None:
    """The log's figures: read on from ``since`` where the file is the one it read, only
    grown; else whole. None for an absent or unreadable file. A last line not yet ended
    (a writer in the middle of it) is left for the next read."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            grown = (since is not None and since.path == str(path) and since.inode == st.st_ino
                     and st.st_size >= since.offset)
            if grown and since is not None:
                if (st.st_size, st.st_mtime_ns) == (since.size, since.mtime_ns):
                    return since
                f.seek(since.offset - len(since.tail))
                grown = f.read(len(since.tail)) == since.tail
            if grown and since is not None:
                runs, start = since.runs, since.offset
            else:
                runs, start = OrderedDict(), 0
                f.seek(0)
            data = f.read(max(st.st_size - start, 0))
    except OSError:
        return None
    end = data.rfind(b"\n") + 1
    _fold(runs, data[:end].splitlines())
    offset = start + end
    if end:
        tail = data[max(end - _TAIL, 0):end]
        if len(tail) < _TAIL and since is not None and runs is since.runs:
            tail = (since.tail + tail)[-_TAIL:]
    else:
        tail = since.tail if since is not None and runs is since.runs else b""
    return _Read(str(path), st.st_ino, offset, tail, st.st_size, st.st_mtime_ns, runs)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the log's lock file (a file of its own: compaction replaces the log, and a
    writer that had opened the old one would append to a file nobody reads)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+b") as lock:
        try:
            import fcntl
        except ImportError:  # no POSIX locks (Windows): best effort
            yield
            return
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


class RunLog:
    """The run log of this machine (:func:`run_log_path`), as a :class:`ReplicateStore`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = run_log_path() if path is None else path

    def _logged(self) -> Mapping[str, deque[float]]:
        global _last
        done = _read(self.path, _last)
        if done is None:
            return {}
        _last = done
        return done.runs

    def figures(self, series: str) -> tuple[float, ...]:
        return tuple(self._logged().get(series, ())) if series else ()

    def add(self, figures: Iterable[tuple[str, float]]) -> int:
        """Append figures; a figure its series already holds (the same result saved again)
        is not written twice. Never raises for a log that cannot be written: it is an aid
        to later comparisons, never a reason for a save to fail."""
        wanted = [(k, float(m)) for k, m in figures
                  if k and math.isfinite(m) and m > 0.0]
        if not wanted:
            return 0
        try:
            with _locked(self.path):
                known = self._logged()
                added: dict[str, list[float]] = defaultdict(list)
                at = datetime.now(timezone.utc).isoformat(timespec="seconds")
                lines = []
                for key, median in wanted:
                    if median not in known.get(key, ()) and median not in added[key]:
                        added[key].append(median)
                        lines.append(json.dumps({"series": key, "median_ns": median, "at": at}))
                if not lines:
                    return 0
                text = "\n".join(lines) + "\n"
                with open(self.path, "a+b") as f:
                    # A line a killed writer left unfinished is ended first: it costs only itself.
                    if f.tell() > 0:
                        f.seek(-1, os.SEEK_END)
                        if f.read(1) != b"\n":
                            text = "\n" + text
                    f.write(text.encode("utf-8"))
                if self.path.stat().st_size > _COMPACT_BYTES:
                    self._compact()
        except OSError:
            return 0
        return len(lines)

    def _compact(self) -> None:
        """Rewrite the log (atomically, under the lock) with the newest KEEP_RUNS figures of
        the series saved to most recently, at most _KEEP_LINES lines in all."""
        done = _read(self.path)
        runs = done.runs if done is not None else OrderedDict()
        kept: list[tuple[str, deque[float]]] = []
        lines = 0
        for key in reversed(runs):
            if lines + len(runs[key]) > _KEEP_LINES:
                break
            kept.append((key, runs[key]))
            lines += len(runs[key])
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".replicates-", suffix=".jsonl")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                for key, medians in reversed(kept):
                    for median in medians:
                        f.write(json.dumps({"series": key, "median_ns": median, "at": ""}) + "\n")
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


class _Off:
    """The store when the run log is off: holds nothing, keeps nothing."""

    def add(self, figures: Iterable[tuple[str, float]]) -> int:
        return 0

    def figures(self, series: str) -> tuple[float, ...]:
        return ()


def replicate_store() -> ReplicateStore:
    """Where this machine's replicates are kept: its run log, or an empty store when
    ``FASTBENCH_RUN_LOG`` is 0."""
    return RunLog() if run_log_enabled() else _Off()
