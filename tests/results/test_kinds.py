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
from pathlib import Path
from typing import Any

import pytest

import fastbench
from _results_helpers import BUILDERS, measurement_of_kinds, write_json
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
    fastbench.save([measurement_of_kinds("x"), measurement_of_kinds("x", 1)], path)
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
                                        r"'profile' \(Profile\); "
                                        r"'profile_diff' \(ProfileDiff\); "
                                        r"'sample_profile' \(SampleProfile\); "
                                        r"'suite' \(SuiteResult\); "
                                        r"'other' \(_Other\)$"):
        fastbench.save(42, tmp_path / "x.json")


@pytest.mark.parametrize("kind", ["comparison", "roofline", "model_analysis"])
def test_builtin_kind_data_must_be_an_object(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema_version": 2, "kind": kind, "data": [1, 2]}),
                    encoding="utf-8")
    with pytest.raises(fastbench.ResultsFileError,
                       match=rf"bad\.json has malformed '{kind}' data: data must be an "
                             rf"object, got a JSON array$"):
        fastbench.load(path)
