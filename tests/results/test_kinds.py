"""Tests for fastbench.results.kinds: every kind fastbench writes loads back in a fresh
interpreter that imported only ``fastbench`` (a kind must not depend on its module having
been imported by chance), the table names real classes, and register_kind adds user kinds
after the built-in ones.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastbench
from _results_helpers import write_json
from fastbench import results
from fastbench.results import ResultsFileError, kinds

PY = sys.executable

# Loads the file in a new interpreter and prints the object's class and data as JSON.
_LOAD = """
import json, sys
import fastbench
obj = fastbench.load(sys.argv[1])
if isinstance(obj, dict):
    out = {"type": "dict of " + ",".join(sorted({type(v).__name__ for v in obj.values()})),
           "data": {k: v.to_dict() for k, v in obj.items()}}
else:
    out = {"type": type(obj).__name__, "data": obj.to_dict()}
print(json.dumps(out, sort_keys=True))
"""


def _load_in_fresh_interpreter(path: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    done = subprocess.run([PY, "-c", _LOAD, str(path)], capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _as_json(data: Any) -> Any:
    """``data`` as the child prints it: through JSON, so tuples become lists."""
    return json.loads(json.dumps(data, sort_keys=True))


# -- small real objects of every kind ------------------------------------------------------


def _measurement(name: str = "m", seed: int = 0) -> fastbench.Measurement:
    rng = np.random.default_rng(seed)
    return fastbench.Measurement(
        samples_ns=rng.lognormal(5.0, 0.1, 30), loops=100,
        warmup_samples_ns=rng.lognormal(5.2, 0.1, 2), clock="steady", overhead_ns=0.5,
        overhead_mad_ns=0.01, call_floor_ns=30.0 / 7.0, call_floor_mad_ns=0.1,
        call_floor_kind="python", name=name, calibration_trials=2, elapsed_s=0.25,
    )


def _comparison() -> Any:
    a, b = _measurement("a", 1), _measurement("b", 2)
    return fastbench.compare_measurements(a, {"b": b}, baseline_name="a")


def _stat() -> Any:
    from fastbench.counters.command import StatResult

    return StatResult.from_dict({
        "command": ["prog", "--flag"],
        "events": {"task-clock": {"values": [2.0e6, 2.5e6], "running_fraction": 1.0,
                                  "scaled": False},
                   "instructions": {"values": [4.0e6, 4.1e6], "running_fraction": 0.5,
                                    "scaled": True}},
        "unavailable": {"cycles": "no hardware PMU exposed"},
        "elapsed_s": [0.004, 0.005],
        "returncodes": [0, 3],
        "read_path": "read",
        "simulated": None,
    })


def _simulated_counts() -> Any:
    from fastbench.counters.simulation import SimulatedCounts

    return SimulatedCounts.from_dict({
        "tool": "cachegrind", "target": "prog --flag",
        "events": {"Ir": 1200.5, "Dr": 300.0, "D1mr": 12.25, "Dw": 100.0, "D1mw": 3.0},
        "per_call": True, "calls": 4,
        "totals": {"Ir": 9000, "Dr": 2000}, "baseline": {"Ir": 4198, "Dr": 800},
        "geometry": {"D1": {"size_bytes": 32768, "assoc": 8, "line_bytes": 64}},
        "notes": ["LL not simulated"], "valgrind_version": "3.19.0",
        "command": ["valgrind", "--tool=cachegrind", "prog"],
    })


def _roofline() -> Any:
    return fastbench.roofline.Roofline(
        compute={"fma float32": 210.5, "fma float64": 105.25},
        memory={"L1": 400.0, "DRAM": 18.5},
        threads=2, quick=True, machine={"cpu_model": "Test CPU"},
        sweep=((16384, 400.0, "L1"), (1 << 28, 18.5, "DRAM")),
        notes=("a note",), fastbench_version="0.0-test", created_s=1.7e9, calibration_s=3.5,
    )


def _count(macs: int) -> dict[str, int]:
    return {"macs": macs, "elementwise_flops": 16, "bytes_read": 640, "bytes_written": 64}


def _model_analysis() -> Any:
    return fastbench.analysis.ModelAnalysis.from_dict({
        "model": "toy.Net", "device": "meta", "grad_mode": "grad",
        "inputs": [{"shape": [2, 8], "dtype": "float32"}],
        "forward": _count(128), "backward": _count(256),
        "parameters": {"total": 72, "trainable": 64, "frozen": 8, "buffers": 0, "bytes": 288,
                       "buffer_bytes": 0, "bytes_by_dtype": {"float32": 288}, "tied": [],
                       "naive_total": 72},
        "memory": {"params_bytes": 288, "buffers_bytes": 0, "gradients_bytes": 256,
                   "activations_bytes": 64, "inference_peak_bytes": 64, "inputs_bytes": 64},
        "modules": [{"path": "", "type": "Net", "calls": 1, "input_shapes": [[2, 8]],
                     "output_shapes": [[2, 8]], "params": 72, "forward": _count(128),
                     "backward": _count(256)}],
        "coverage": {"ops": {"aten::addmm": 1, "aten::relu": 1},
                     "uncounted": [{"name": "aten::frobnicate", "calls": 1,
                                    "output_shapes": [[2, 8]], "floating": True}]},
        "notes": ["a note"],
    })


def _instruction_count(name: str, per_call: float) -> Any:
    from fastbench.counters import InstructionCount

    return InstructionCount(name=name, per_call=per_call, runs=(per_call,), source="simulated",
                            calls=100, estimated_cycles=per_call * 1.1,
                            events={"Ir": per_call, "D1mr": 2.0}, wall_s=2.0)


def _instruction_comparison() -> Any:
    return fastbench.compare_instruction_counts(
        _instruction_count("a", 50310.0), {"b": _instruction_count("b", 50817.0)},
        baseline_name="a")


# kind -> (builder, class name the loaded object must have)
BUILDERS: dict[str, tuple[Callable[[], Any], str]] = {
    "measurement": (_measurement, "Measurement"),
    "measurements": (lambda: {"a": _measurement("a", 1), "b": _measurement("b", 2)},
                     "dict of Measurement"),
    "comparison": (_comparison, "Comparison"),
    "instruction_count": (lambda: _instruction_count("loop", 50310.0), "InstructionCount"),
    "instruction_comparison": (_instruction_comparison, "InstructionComparison"),
    "stat": (_stat, "StatResult"),
    "simulated_counts": (_simulated_counts, "SimulatedCounts"),
    "roofline": (_roofline, "Roofline"),
    "model_analysis": (_model_analysis, "ModelAnalysis"),
}


def test_every_builtin_kind_is_tested_here() -> None:
    assert set(BUILDERS) == set(kinds.BUILTIN_KINDS)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_kind_round_trips_through_a_fresh_interpreter(kind: str, tmp_path: Path) -> None:
    build, type_name = BUILDERS[kind]
    obj = build()
    path = tmp_path / f"{kind}.json"
    fastbench.save(obj, path)
    assert json.loads(path.read_text(encoding="utf-8"))["kind"] == kind
    got = _load_in_fresh_interpreter(path)
    assert got["type"] == type_name
    if isinstance(obj, dict):
        expected = {k: v.to_dict() for k, v in obj.items()}
    else:
        expected = obj.to_dict()
    assert got["data"] == _as_json(expected)


def test_a_sequence_of_measurements_is_the_measurements_kind(tmp_path: Path) -> None:
    path = tmp_path / "seq.json"
    fastbench.save([_measurement("x"), _measurement("x", 1)], path)
    got = _load_in_fresh_interpreter(path)
    assert got["type"] == "dict of Measurement"
    assert list(got["data"]) == ["x", "x#2"]


@pytest.mark.parametrize("name", sorted(kinds.BUILTIN_KINDS))
def test_table_names_importable_classes_with_to_dict_and_from_dict(name: str) -> None:
    module_name, sep, class_name = kinds.BUILTIN_KINDS[name].partition(":")
    assert sep and module_name.startswith("fastbench.")
    cls = getattr(importlib.import_module(module_name), class_name)
    assert isinstance(cls, type) and cls.__name__ == class_name
    assert callable(getattr(cls, "to_dict", None))
    assert callable(getattr(cls, "from_dict", None))
    # from_dict is a classmethod: bound to the class, not needing an instance.
    assert getattr(getattr(cls, "from_dict"), "__self__", None) is cls


def test_kinds_module_imports_nothing_of_fastbench() -> None:
    """The table is a leaf: importing it alone must not pull in any result type."""
    code = ("import sys, importlib.util\n"
            "spec = importlib.util.spec_from_file_location('k', sys.argv[1])\n"
            "m = sys.modules['k'] = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(m)\n"
            "print(sorted(n for n in sys.modules if n.startswith('fastbench')))")
    done = subprocess.run([PY, "-c", code, kinds.__file__], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_saving_does_not_import_result_modules() -> None:
    """A kind is matched only against classes already imported: saving a Measurement in a
    fresh interpreter imports none of the other kinds' modules that were not loaded."""
    code = ("import sys, tempfile, os, numpy as np\n"
            "import fastbench\n"
            "before = set(sys.modules)\n"
            "m = fastbench.Measurement(samples_ns=np.full(5, 10.0), loops=1, clock='steady',\n"
            "    warmup_samples_ns=np.empty(0), overhead_ns=0.0, overhead_mad_ns=0.0,\n"
            "    call_floor_ns=0.0, call_floor_mad_ns=0.0)\n"
            "fastbench.save(m, os.path.join(tempfile.mkdtemp(), 'm.json'))\n"
            "print(sorted(n for n in set(sys.modules) - before if n.startswith('fastbench')))")
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_stat_output_loads_in_a_fresh_process(tmp_path: Path) -> None:
    """`fastbench stat -o F` then `fastbench.load(F)` in a new interpreter: the "stat" kind
    used to be known only once fastbench.counters.command happened to be imported."""
    out = tmp_path / "stat.json"
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    r = subprocess.run([PY, "-m", "fastbench", "stat", "-r", "1", "-e", "task-clock",
                        "-o", str(out), "--", PY, "-c", "pass"],
                       capture_output=True, text=True, timeout=120, env=env, check=False)
    assert r.returncode == 0, r.stderr
    got = _load_in_fresh_interpreter(out)
    assert got["type"] == "StatResult"
    assert got["data"]["command"] == [PY, "-c", "pass"]
    assert got["data"]["returncodes"] == [0]
    assert list(got["data"]["events"]) == ["task-clock"]


# -- register_kind ---------------------------------------------------------------------


class Toy:
    """A stand-in for a result type registered by another module."""

    def __init__(self, label: str, ratio: float) -> None:
        self.label = label
        self.ratio = ratio

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "ratio": self.ratio}

    @classmethod
    def from_dict(cls, data: Any) -> Toy:
        if not isinstance(data.get("ratio"), float):
            raise ValueError("Toy ratio must be a float")
        return cls(str(data["label"]), data["ratio"])


@pytest.fixture
def toy_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register Toy on a copy of the registry, so other tests never see it."""
    monkeypatch.setattr(kinds, "_USER_KINDS", dict(kinds._USER_KINDS))
    results.register_kind("toy", Toy, Toy.to_dict, Toy.from_dict)


@pytest.mark.usefixtures("toy_kind")
def test_registered_kind_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "toy.json"
    results.save(Toy("x", 0.1 + 0.2), path)
    assert json.loads(path.read_text(encoding="utf-8"))["kind"] == "toy"
    got = results.load(path)
    assert isinstance(got, Toy)
    assert (got.label, got.ratio) == ("x", 0.1 + 0.2)
    with pytest.raises(TypeError, match="'toy' \\(Toy\\)"):
        results.save(object(), path)
    with pytest.raises(ResultsFileError, match=r"toy\.json holds a 'toy', not measurements"):
        results.load_any(path)


@pytest.mark.usefixtures("toy_kind")
def test_registered_kind_malformed_data(tmp_path: Path) -> None:
    path = tmp_path / "toy.json"
    results.save(Toy("x", 2.0), path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["data"]["ratio"] = "fast"
    write_json(path, doc)
    with pytest.raises(ResultsFileError, match=r"toy\.json has malformed 'toy' data: "
                                               r"Toy ratio must be a float"):
        results.load(path)


@pytest.mark.usefixtures("toy_kind")
def test_register_kind_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="'toy' is already registered"):
        results.register_kind("toy", Toy, Toy.to_dict, Toy.from_dict)
    results.register_kind("toy", Toy, Toy.to_dict, Toy.from_dict, replace=True)
    with pytest.raises(ValueError, match="must not be empty"):
        results.register_kind("", Toy, Toy.to_dict, Toy.from_dict)
    with pytest.raises(TypeError, match="cls must be a class"):
        results.register_kind("t2", Toy("a", 1.0), Toy.to_dict, Toy.from_dict)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be callable"):
        results.register_kind("t2", Toy, "to_dict", Toy.from_dict)  # type: ignore[arg-type]


# -- user kinds against the built-in table ----------------------------------------------


class _Other:
    def to_dict(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_dict(cls, data: Any) -> _Other:
        return cls()


@pytest.mark.parametrize("replace", [False, True])
def test_builtin_kinds_cannot_be_taken_by_another_class(replace: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinds, "_USER_KINDS", dict(kinds._USER_KINDS))
    with pytest.raises(ValueError, match=r"kind 'roofline' is already registered "
                                         r"\(for Roofline\); a built-in kind"):
        kinds.register_kind("roofline", _Other, _Other.to_dict, _Other.from_dict,
                            replace=replace)
    assert kinds._USER_KINDS == {}


def test_kind_lists_are_builtin_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(kinds, "_USER_KINDS", dict(kinds._USER_KINDS))
    kinds.register_kind("other", _Other, _Other.to_dict, _Other.from_dict)
    assert [k.name for k in kinds.kinds()] == [*kinds.BUILTIN_KINDS, "other"]
    with pytest.raises(TypeError, match=r"cannot save a int: supported kinds are "
                                        r"'measurement' \(Measurement\); 'measurements' "
                                        r"\(mapping of str to Measurement, or sequence of "
                                        r"Measurement\); 'comparison' \(Comparison\); "
                                        r"'instruction_count' \(InstructionCount\); "
                                        r"'instruction_comparison' "
                                        r"\(InstructionComparison\); "
                                        r"'stat' \(StatResult\); 'simulated_counts' "
                                        r"\(SimulatedCounts\); 'roofline' \(Roofline\); "
                                        r"'model_analysis' \(ModelAnalysis\); "
                                        r"'other' \(_Other\)$"):
        fastbench.save(42, tmp_path / "x.json")


@pytest.mark.parametrize("kind", ["comparison", "roofline", "model_analysis"])
def test_builtin_kind_data_must_be_an_object(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema_version": 2, "kind": kind, "data": [1, 2]}),
                    encoding="utf-8")
    with pytest.raises(fastbench.ResultsFileError,
                       match=rf"has malformed '{kind}' data: expected a "
                             rf"{kind.replace('_', ' ')} object, got a JSON array"):
        fastbench.load(path)
