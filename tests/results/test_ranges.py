"""Files that loaded, then crashed a renderer or showed an impossible value: each holds a
value outside the range its field can take, and is refused at load with a
ResultsFileError naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

import fastbench
from _results_helpers import BUILDERS, write_json
from fastbench.results import ResultsFileError


def _set(*path: Any, value: Any) -> Callable[[Any], None]:
    def edit(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value
    return edit


def _delete(*path: Any) -> Callable[[Any], None]:
    def edit(data: Any) -> None:
        for key in path[:-1]:
            data = data[key]
        del data[path[-1]]
    return edit


CASES = [
    # kind, edit of the file's data, what the error names; the crash it caused before
    ("measurement", _set("clock_resolution_ns", value=1e308), "clock_resolution_ns"),  # Overflow
    ("measurement", _set("samples_ns", value=[0.0] * 30), "samples_ns"),  # medians must be > 0
    ("measurement", _set("call_floor_ns", value=1e12), "call_floor_ns"),  # net -1e12 ns
    ("measurement", _set("run_variation", value=1e308), "run_variation"),  # "inf%"
    ("measurement", _set("samples_ns", value=[5e-324] * 30), "samples_ns"),  # Overflow
    ("instruction_count", _set("per_call", value=-5.0), "per_call"),  # printed negative
    ("instruction_count", _set("runs", value=[-5.0]), "runs"),
    ("suite", _set("variants", 0, "latency", "median_ci", value=[2.0, 1.0]), "interval"),
    ("suite", _delete("variants", 0, "latency", "percentiles", "p99"), "p99"),  # KeyError
    ("suite", _set("variants", 0, "energy", "watts_per_core", value=None), "watts_per_core"),
    ("suite", _set("variants", 0, "energy", "ci", value=[0.003, 0.001]), "low <= high"),
    ("roofline", _set("compute", value={}), "compute"),  # KeyError from str()
    ("roofline", _set("memory", value={}), "memory"),
    ("profile", _set("step_times", value=[1e308] * 8), "step_times"),  # Overflow from str()
    # Found by the fuzz test (tests/results/test_loader_fuzz.py): each printed "inf".
    ("simulated_counts", _set("events", "D1mw", value=1e308), "D1mw"),  # "L1d miss inf%"
    ("profile_diff", _set("changes", 0, "delta_s", value=1e308), "delta_s"),  # "+inf ns"
    ("profile_diff", _set("changes", 0, "share_b", value=-1e308), "share_b"),  # "-inf%"
    ("suite", _set("variants", 0, "latency", "percentiles", "p99", 0, value=1e308),
     "latency p99"),  # "inf ns"
    # Found once a stat result printed its report: summarize overflowed on its wall times.
    ("stat", _set("elapsed_s", value=[0.5, 1e308]), "elapsed_s"),
    ("stat", _set("events", "instructions", "values", value=[1e308]), "values"),
]


@pytest.mark.parametrize("kind, edit, field", CASES,
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_a_value_outside_its_range_is_refused_naming_the_file(
        tmp_path: Path, kind: str, edit: Callable[[Any], None], field: str) -> None:
    obj = BUILDERS[kind][0]()
    path = tmp_path / "good.json"
    fastbench.save(obj, path)
    fastbench.load(path)  # valid to begin with
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc["data"])
    bad = write_json(tmp_path / "bad.json", doc)
    with pytest.raises(ResultsFileError) as info:
        fastbench.load(bad)
    assert str(bad) in str(info.value) and field in str(info.value), str(info.value)
