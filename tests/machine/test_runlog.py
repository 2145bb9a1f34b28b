"""The run log (fastbench.machine.runlog): the replicate store of a machine. What it writes,
what it reads back, how it keeps its size, and that concurrent savers lose nothing."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastbench.machine import runlog
from fastbench.machine.runlog import (KEEP_RUNS, RunLog, replicate_store, run_log_path,
                                      series_key)


@pytest.fixture
def log_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FASTBENCH_RUN_LOG", "1")
    return tmp_path


def test_figures_come_back_in_order_once_each(log_on: Path) -> None:
    store = replicate_store()
    w, v = series_key("abc", 1), series_key("abc", 5)
    assert w != v and w.endswith("processes=1")
    assert store.figures(w) == ()
    assert store.add([(w, 10.0), (w, 12.0), (v, 5.0)]) == 3
    assert store.add([(w, 12.0), (w, 11.0), ("", 3.0), (w, math.nan), (w, -1.0)]) == 1
    assert store.figures(w) == (10.0, 12.0, 11.0)
    assert store.figures(v) == (5.0,)
    assert run_log_path().parent == log_on
    assert run_log_path().name.startswith("replicates-")


def test_the_newest_figures_are_kept_and_a_large_log_is_compacted(
        log_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runlog, "_COMPACT_BYTES", 4000)
    store = RunLog()
    for i in range(KEEP_RUNS + 30):
        store.add([("w", 100.0 + i), ("v", 1.0 + i)])
    assert store.figures("w") == tuple(100.0 + i for i in range(30, KEEP_RUNS + 30))
    lines = run_log_path().read_text().splitlines()
    assert len(lines) < 2 * KEEP_RUNS + 30  # compacted at least once along the way


def test_compaction_is_bounded_by_lines_and_keeps_the_newest_series(
        log_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the size limit with more series than fit, a compaction keeps the series saved
    to most recently, so the next saves append instead of rewriting the log each time."""
    monkeypatch.setattr(runlog, "_COMPACT_BYTES", 20_000)
    monkeypatch.setattr(runlog, "_KEEP_LINES", 50)
    store = RunLog()
    sizes = []
    for i in range(400):
        store.add([(f"series-{i}", 1.0 + i)])
        sizes.append(run_log_path().stat().st_size)
    rewrites = sum(1 for a, b in zip(sizes, sizes[1:]) if b < a)
    assert 1 <= rewrites <= 400 * 90 // 20_000 + 1  # about once per 20 kB of lines
    assert store.figures("series-399") == (400.0,)
    assert store.figures("series-0") == ()  # the oldest series went


def test_broken_lines_are_skipped(log_on: Path) -> None:
    store = RunLog()
    store.add([("w", 10.0)])
    with open(run_log_path(), "a") as f:
        f.write("not json\n" + json.dumps({"series": "w"}) + "\n{\"series\": \"w\", ")
    store.add([("w", 11.0)])
    assert store.figures("w") == (10.0, 11.0)


def test_off_means_nothing_written_or_read(log_on: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replicate_store().add([("w", 10.0)])
    monkeypatch.setenv("FASTBENCH_RUN_LOG", "0")
    assert replicate_store().add([("w", 11.0)]) == 0
    assert replicate_store().figures("w") == ()
    monkeypatch.setenv("FASTBENCH_RUN_LOG", "1")
    assert replicate_store().figures("w") == (10.0,)


_WRITER = """
import sys
import fastbench.machine.runlog as r
r._COMPACT_BYTES = 6000
store = r.RunLog()
me = sys.argv[1]
for i in range(100):
    store.add([(f"writer-{me}", 1.0 + i)])
"""


def test_concurrent_writers_lose_nothing_while_the_log_is_compacted(log_on: Path) -> None:
    """Eight processes append 100 figures each while the log crosses its size limit again
    and again: every series ends with its newest KEEP_RUNS figures, in order."""
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(k)]) for k in range(8)]
    deadline = time.monotonic() + 120
    for p in procs:
        assert p.wait(timeout=max(deadline - time.monotonic(), 1)) == 0
    store = RunLog()
    for k in range(8):
        assert store.figures(f"writer-{k}") == tuple(1.0 + i for i in range(100 - KEEP_RUNS, 100))


def test_a_grown_log_is_read_on_and_a_replaced_one_whole(log_on: Path) -> None:
    """Read once, then only what was appended: the figures are those of a whole read at
    every step, a line not yet ended counts once it is, and a file put in the log's place
    (as compaction does) is read again from its start."""
    store = RunLog()
    path = store.path
    store.add([("a", 1.0), ("b", 2.0)])
    assert store.figures("a") == (1.0,)
    with open(path, "ab") as f:  # another process appends, the second line unfinished
        f.write(b'{"series": "a", "median_ns": 3.0, "at": ""}\n{"series": "b", "med')
    assert (store.figures("a"), store.figures("b")) == ((1.0, 3.0), (2.0,))
    with open(path, "ab") as f:
        f.write(b'ian_ns": 4.0, "at": ""}\n')
    assert store.figures("b") == (2.0, 4.0)
    whole = runlog._read(path)
    assert whole is not None and {k: tuple(v) for k, v in whole.runs.items()} == {
        "a": (1.0, 3.0), "b": (2.0, 4.0)}
    replaced = path.with_name("other.jsonl")
    replaced.write_text('{"series": "c", "median_ns": 9.0, "at": ""}\n' * 3)
    replaced.replace(path)
    assert (store.figures("a"), store.figures("c")) == ((), (9.0, 9.0, 9.0))
