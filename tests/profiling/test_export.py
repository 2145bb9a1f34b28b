"""Tests for fastbench.profiling.export: the Chrome trace checked against the Trace Event
Format (it loads with the json module, every event has its required fields, times are the
nanosecond inputs in microseconds, each child lies within its parent in file order), and
folded stacks against hand-worked lines.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastbench.profiling.export import (PROCESS_ID, chrome_trace, folded_stacks,
                                        write_chrome_trace, write_folded)
from fastbench.profiling.result import NOT_IN_OP, OUTSIDE, Cell, Overhead, Profile, TraceEvent

# (name, cat, start_ns, dur_ns, thread, args, expected parent's name or None)
_TIMELINE: list[tuple[str, str, int, int, int, dict[str, Any], str | None]] = [
    ("step 0", "step", 0, 10_000_000, 0, {}, None),
    ("data loading", "region", 0, 1_000_500, 0, {}, "step 0"),
    ("aten::copy_", "op", 200_000, 700_000, 0, {"module": OUTSIDE}, "data loading"),
    ("", "module", 1_000_500, 7_999_500, 0, {"phase": "forward"}, "step 0"),
    ("layer1", "module", 1_100_000, 3_900_000, 0, {}, "(model)"),
    # The same interval as its parent: file order alone tells the viewer which encloses.
    ("layer1.0", "module", 1_100_000, 3_900_000, 0, {}, "layer1"),
    ("layer1.0.conv1", "module", 1_200_000, 1_800_000, 0, {}, "layer1.0"),
    ("aten::convolution", "op", 1_200_000, 1_800_000, 0,
     {"shapes": "(1, 3, 8, 8), (4, 3, 3, 3)", "flops": np.float64(1.5e6)}, "layer1.0.conv1"),
    ("aten::relu", "op", 3_100_000, 400_250, 0, {"flops": float("nan")}, "layer1.0"),
    ("aten::addmm", "op", 5_100_000, 3_800_001, 0, {"shapes": ((8, 4), (4, 2))}, "(model)"),
    ("aten::convolution_backward", "op", 9_100_000, 700_000, 0,
     {"phase": "backward", "module": "layer1.0.conv1"}, "step 0"),
    ("step 1", "step", 10_000_000, 5_000_000, 0, {}, None),
    ("aten::addmm", "op", 10_000_001, 4_000_000, 0, {}, "step 1"),
    ("aten::copy_", "op", 500_000, 123_457, 1, {"module": OUTSIDE}, None),
]


def _profile(events: tuple[TraceEvent, ...] | None = None) -> Profile:
    if events is None:
        rng = np.random.default_rng(3)
        shuffled = [_TIMELINE[i] for i in rng.permutation(len(_TIMELINE))]
        events = tuple(TraceEvent(n, c, s, d, t, a) for n, c, s, d, t, a, _ in shuffled)
    step_times = np.array([10e-3, 5e-3])
    cell = Cell("aten::addmm", "(8, 4), (4, 2)", "", "", "forward", step_times.copy(), 2)
    return Profile((cell,), step_times, step_times * 1.1,
                   Overhead(2e-6, 1e-6, 3e-6, 1e-6), events=events,
                   meta={"name": "toy", "thread_names": {"1": "data loader"}})


def _no_constants(name: str) -> Any:
    raise AssertionError(f"{name} is not JSON a browser's JSON.parse reads")


def _loaded(path: Path) -> dict[str, Any]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.loads(f.read(), parse_constant=_no_constants)
    assert isinstance(doc, dict)
    return doc


def _ns(us: float) -> int:
    return int(round(us * 1000))


@pytest.mark.parametrize("name", ["trace.json", "trace.json.gz"])
def test_trace_loads_and_has_the_required_fields(tmp_path: Path, name: str) -> None:
    prof = _profile()
    written = write_chrome_trace(prof, tmp_path / name)
    assert written == tmp_path / name
    doc = _loaded(tmp_path / name)
    assert doc == json.loads(json.dumps(chrome_trace(prof)))
    assert doc["displayTimeUnit"] == "ms"
    assert doc["otherData"]["meta"]["name"] == "toy"
    events = doc["traceEvents"]
    for e in events:
        assert {"name", "ph", "pid", "tid"} <= set(e), e
        assert isinstance(e["name"], str) and e["pid"] == PROCESS_ID
        assert isinstance(e["tid"], int)
        assert e["ph"] in ("X", "M")
        if e["ph"] == "X":
            assert {"ts", "dur", "cat", "args"} <= set(e)
            assert isinstance(e["ts"], float) and isinstance(e["dur"], float)
            assert e["dur"] >= 0
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == len(_TIMELINE)
    meta = {(e["name"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    assert meta[("process_name", 0)] == {"name": "fastbench profile: toy"}
    assert meta[("thread_name", 0)] == {"name": "thread 0"}
    assert meta[("thread_name", 1)] == {"name": "data loader"}


def test_times_are_the_nanoseconds_in_microseconds() -> None:
    complete = [e for e in chrome_trace(_profile())["traceEvents"] if e["ph"] == "X"]
    for name, cat, start, dur, thread, _, _ in _TIMELINE:
        shown = "(model)" if cat == "module" and name == "" else name
        match = [e for e in complete if e["name"] == shown and e["cat"] == cat
                 and e["tid"] == thread and _ns(e["ts"]) == start]
        assert len(match) == 1, (name, start)
        assert match[0]["ts"] == pytest.approx(start / 1000.0, abs=1e-9)
        assert match[0]["dur"] == pytest.approx(dur / 1000.0, abs=1e-9)
    # Sub-microsecond parts survive: 1_000_500 ns is 1000.5 µs, 123_457 ns 123.457 µs.
    assert any(e["ts"] == 1000.5 for e in complete)
    assert any(e["dur"] == 123.457 for e in complete)


def test_children_lie_within_their_parents_in_file_order() -> None:
    """The viewer's rule: on one thread, an event that starts before the open one ends is
    its child and must end by its end. Parents found that way are the timeline's."""
    complete = [e for e in chrome_trace(_profile())["traceEvents"] if e["ph"] == "X"]
    parents: dict[tuple[str, int, int], str | None] = {}
    for tid in {e["tid"] for e in complete}:
        stack: list[dict[str, Any]] = []
        last = -1
        for e in (e for e in complete if e["tid"] == tid):
            start, end = _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])
            assert start >= last, "events of a thread must be sorted by start"
            last = start
            while stack and _ns(stack[-1]["ts"]) + _ns(stack[-1]["dur"]) <= start:
                stack.pop()
            if stack:
                parent_end = _ns(stack[-1]["ts"]) + _ns(stack[-1]["dur"])
                assert end <= parent_end, f"{e['name']} overruns {stack[-1]['name']}"
            parents[(e["name"], tid, start)] = stack[-1]["name"] if stack else None
            stack.append(e)
    for name, cat, start, _, thread, _, parent in _TIMELINE:
        shown = "(model)" if cat == "module" and name == "" else name
        assert parents[(shown, thread, start)] == parent, name


def test_backward_ops_keep_their_module_and_pass_in_args() -> None:
    complete = [e for e in chrome_trace(_profile())["traceEvents"] if e["ph"] == "X"]
    (bwd,) = [e for e in complete if e["name"] == "aten::convolution_backward"]
    assert bwd["args"] == {"phase": "backward", "module": "layer1.0.conv1"}
    (conv,) = [e for e in complete if e["name"] == "aten::convolution"]
    assert conv["args"]["flops"] == 1.5e6 and type(conv["args"]["flops"]) is float
    (relu,) = [e for e in complete if e["name"] == "aten::relu"]
    assert relu["args"]["flops"] is None          # NaN has no JSON form
    (mm,) = [e for e in complete if e["name"] == "aten::addmm" and e["ts"] < 10_000]
    assert mm["args"]["shapes"] == [[8, 4], [4, 2]]


def test_a_profile_without_events_gives_a_trace_of_metadata_only(tmp_path: Path) -> None:
    doc = chrome_trace(_profile(events=()))
    assert [e["ph"] for e in doc["traceEvents"]] == ["M", "M", "M"]
    assert "no timeline events" in doc["otherData"]["note"]


def test_negative_duration_and_wrong_types_are_refused(tmp_path: Path) -> None:
    bad = _profile(events=(TraceEvent("aten::mm", "op", 10, -1),))
    with pytest.raises(ValueError, match=r"op event 'aten::mm' at 10 ns with a negative "
                                         r"duration \(-1 ns\)"):
        chrome_trace(bad)
    with pytest.raises(TypeError, match="profile must be a fastbench Profile"):
        chrome_trace({"traceEvents": []})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="profile must be a fastbench Profile"):
        folded_stacks(None)  # type: ignore[arg-type]


def test_unwritable_paths_raise_os_errors_naming_the_path(tmp_path: Path) -> None:
    prof = _profile()
    missing = tmp_path / "nowhere" / "trace.json"
    with pytest.raises(FileNotFoundError, match=rf"cannot write the Chrome trace to "
                                                rf"{missing}: its directory .* does not exist"):
        write_chrome_trace(prof, missing)
    with pytest.raises(IsADirectoryError, match="it is a directory; give a file name"):
        write_folded(prof, tmp_path)
    if os.geteuid() != 0:   # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        try:
            with pytest.raises(PermissionError, match=rf"cannot write the folded stacks to "
                                                      rf"{locked / 'f.txt'}: .*writable path"):
                write_folded(prof, locked / "f.txt")
        finally:
            locked.chmod(0o700)
    assert sorted(p.name for p in tmp_path.iterdir()) == (["locked"] if os.geteuid() != 0
                                                          else [])


def test_an_existing_file_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text("x" * 100_000, encoding="utf-8")
    write_chrome_trace(_profile(events=()), path)
    assert _loaded(path)["displayTimeUnit"] == "ms"
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json"]


# -- folded stacks ---------------------------------------------------------------------------


def _cell(op: str, module: str, region: str, phase: str, times: list[float]) -> Cell:
    return Cell(op, "", module, region, phase, np.array(times), calls=len(times))


def test_folded_stacks_against_hand_worked_lines(tmp_path: Path) -> None:
    cells = (
        # Two shapes of one op in one module: one stack, added before rounding.
        _cell("aten::convolution", "layer1.0.conv1", "", "forward", [1.0e-3, 1.2e-3]),
        _cell("aten::convolution", "layer1.0.conv1", "", "forward", [0.35e-6, 0.35e-6]),
        _cell("aten::convolution_backward", "layer1.0.conv1", "", "backward",
              [2.0e-3, 2.0004e-3]),
        _cell(NOT_IN_OP, "layer1.0", "", "forward", [30e-6, 10e-6]),
        _cell("aten::addmm", "", "", "forward", [0.5e-3, 0.5e-3]),
        _cell("aten::copy_", OUTSIDE, "", "", [7e-6, 8e-6]),
        _cell("aten::copy_", OUTSIDE, "data; loading", "", [100e-6, 100e-6]),
        _cell("aten::relu", "layer1", "", "forward", [0.2e-6, 0.2e-6]),    # 0.4 µs: left out
        _cell(NOT_IN_OP, OUTSIDE, "", "", [-3e-6, 1e-6]),                  # below 0: left out
    )
    steps = np.sum([c.times for c in cells], axis=0)
    prof = Profile(cells, steps, steps, Overhead(0.0, 0.0, 0.0, 0.0))
    want = [
        "data, loading;outside any module;aten::copy_ 200",
        "model backward;(model);layer1;layer1.0;layer1.0.conv1;aten::convolution_backward 4000",
        "model forward;(model);aten::addmm 1000",
        "model forward;(model);layer1;layer1.0;(not in an op) 40",
        "model forward;(model);layer1;layer1.0;layer1.0.conv1;aten::convolution 2201",
        "outside any module;aten::copy_ 15",
    ]
    assert folded_stacks(prof) == "".join(line + "\n" for line in want)
    path = write_folded(prof, tmp_path / "stacks.folded")
    assert path.read_text(encoding="utf-8").splitlines() == want
    # The format's own parse: the count after the last space, frames split on ";".
    for line in want:
        stack, count = line.rsplit(" ", 1)
        assert int(count) > 0 and all(stack.split(";"))
