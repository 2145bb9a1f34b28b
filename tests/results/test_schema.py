"""Tests for fastbench.results.schema, through load(): a file whose data no fastbench could
have written (a negative time, a loop count of 2.7, an infinite floor, a list where an
object belongs) is refused when read, with the file and the field named, instead of loading
and giving a wrong number or a raw AttributeError later.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import fastbench
from _results_helpers import BUILDERS, synthetic, write_json
from fastbench import results
from fastbench.results import ResultsFileError, kinds


def _saved_doc(tmp_path: Path, obj: Any) -> dict[str, Any]:
    path = tmp_path / "seed.json"
    results.save(obj, path)
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def _load_error(path: Path) -> str:
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    return str(info.value)


# -- the measurement: what the users found loading silently --------------------------


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("loops", 0, "data['loops'] must be a positive integer, got 0"),
        ("loops", -5, "data['loops'] must be a positive integer, got -5"),
        ("loops", "12", "data['loops'] must be a positive integer, got '12'"),
        ("loops", 2.7, "data['loops'] must be a positive integer, got 2.7"),
        ("loops", True, "data['loops'] must be a positive integer, got true"),
        ("loops", 2**64, "data['loops'] must be a positive integer of at most 2**63 - 1, "
                         "got 18446744073709551616"),
        ("samples_ns", [10.0, -1.0], "data['samples_ns'][1] must be a non-negative finite "
                                     "number, got -1.0"),
        ("samples_ns", [10.0, "11"], "data['samples_ns'][1] must be a non-negative finite "
                                     "number, got '11'"),
        ("samples_ns", None, "data['samples_ns'] must be a list of non-negative finite "
                             "numbers, got null"),
        ("warmup_samples_ns", None, "data['warmup_samples_ns'] must be a list of "
                                    "non-negative finite numbers, got null"),
        ("warmup_samples_ns", [-3.0], "data['warmup_samples_ns'][0] must be a non-negative "
                                      "finite number, got -3.0"),
        ("overhead_ns", -0.5, "data['overhead_ns'] must be a non-negative finite number, "
                              "got -0.5"),
        ("call_floor_ns", None, "data['call_floor_ns'] must be a non-negative finite "
                                "number, got null"),
        ("elapsed_s", -1, "data['elapsed_s'] must be a non-negative finite number, got -1"),
        ("calibration_trials", 1.5, "data['calibration_trials'] must be a non-negative "
                                    "integer, got 1.5"),
        ("target_rel_ci", 0.0, "data['target_rel_ci'] must be a positive finite number, "
                               "got 0.0"),
        ("stop_reason", "bored", "data['stop_reason'] must be one of 'repeat', "
                                 "'duration_s', 'target_rel_ci', 'max_time_s', got 'bored'"),
        ("warnings", "careful", "data['warnings'] must be a list, got 'careful'"),
        ("counters", [1, 2], "data['counters'] must be an object, got a JSON array"),
        ("counters", {"loops": 1, "per_sample": {"cycles": [1.0, "x"]}},
         "data['counters']['per_sample']['cycles'][1] must be a finite number, got 'x'"),
        ("memory", {"peak_increase_bytes": [], "method": "VmHWM"},
         "data['memory']['peak_increase_bytes'] must hold at least 1 tracked call, got an "
         "empty list"),
        ("run_lengths", [10, 5], "data['run_loops'] must hold one entry per run of "
                                 "data['run_lengths'] (2), got 0"),
        ("run_variation_df", 0, "data['run_variation_df'] must be a positive integer, got 0"),
    ],
)
def test_load_names_the_file_and_field_of_an_impossible_measurement(
    tmp_path: Path, field: str, value: Any, problem: str
) -> None:
    doc = _saved_doc(tmp_path, synthetic())
    doc["data"][field] = value
    path = write_json(tmp_path / "run1.json", doc)
    assert _load_error(path) == f"{path} has malformed 'measurement' data: {problem}"


def test_runs_must_add_up_to_the_samples(tmp_path: Path) -> None:
    doc = _saved_doc(tmp_path, synthetic())
    n = len(doc["data"]["samples_ns"])
    doc["data"]["run_lengths"], doc["data"]["run_loops"] = [n - 1, 2], [10, 10]
    path = write_json(tmp_path / "runs.json", doc)
    assert _load_error(path).endswith(f"data['run_lengths'] must add up to the {n} samples "
                                      f"of data['samples_ns'], got {n + 1}")


@pytest.mark.parametrize("literal", ["1e999", "-1e999"])
@pytest.mark.parametrize("field", ["call_floor_ns", "loops", "overhead_mad_ns"])
def test_numbers_too_large_for_a_float_are_refused(tmp_path: Path, field: str,
                                                   literal: str) -> None:
    """1e999 is valid JSON and parses as infinity: a floor of inf loaded silently, and loops
    of inf raised a raw OverflowError with no file name."""
    doc = _saved_doc(tmp_path, {"a": synthetic()})
    doc["data"]["a"][field] = "@@"
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc).replace('"@@"', literal), encoding="utf-8")
    assert _load_error(path) == (f"{path}: data['a'][{field!r}] is a number too large for a "
                                 "float (it reads as infinity), which no results file holds")


def test_an_inf_among_plain_samples_is_found(tmp_path: Path) -> None:
    doc = _saved_doc(tmp_path, synthetic())
    text = json.dumps(doc).replace('"samples_ns": [', '"samples_ns": [1.5, 1e400, ', 1)
    path = tmp_path / "inf.json"
    path.write_text(text, encoding="utf-8")
    assert _load_error(path).endswith("data['samples_ns'][1] is a number too large for a "
                                      "float (it reads as infinity), which no results file "
                                      "holds")


# -- every other kind ---------------------------------------------------------------------------

# kind -> (mutation of its to_dict data, the problem load() must name)
_IMPOSSIBLE: dict[str, tuple[Any, str]] = {
    "measurements": (lambda d: d["b"].update(loops=0),
                     "data['b']['loops'] must be a positive integer, got 0"),
    "comparison": (lambda d: d["measurements"]["b"].update(samples_ns=[-1.0]),
                   "data['measurements']['b']['samples_ns'][0] must be a non-negative finite "
                   "number, got -1.0"),
    "instruction_count": (lambda d: d.update(calls=2.5),
                          "data['calls'] must be a positive integer, got 2.5"),
    "instruction_comparison": (lambda d: d["results"]["b"].update(tolerance=-0.1),
                               "data['results']['b']['tolerance'] must be a non-negative "
                               "finite number, got -0.1"),
    "stat": (lambda d: d.update(elapsed_s=[0.1, -0.2]),
             "data['elapsed_s'][1] must be a number in [0, 1e+09], got -0.2"),
    "simulated_counts": (lambda d: d["totals"].update(Ir=-9000),
                         "data['totals']['Ir'] must be a non-negative integer, got -9000"),
    "roofline": (lambda d: d["memory"].update(DRAM=0.0),
                 "data['memory']['DRAM'] must be a positive finite number, got 0.0"),
    "model_analysis": (lambda d: d["modules"][0]["forward"].update(macs=1.5),
                       "data['modules'][0]['forward']['macs'] must be a non-negative "
                       "integer, got 1.5"),
    "profile": (lambda d: d["cells"][0].update(times=[1e-4]),
                "data['cells'][0]['times'] must hold one time per step of "
                "data['step_times'] (8), got 1"),
    "profile_diff": (lambda d: d["changes"][0].update(p_adjusted=1.5),
                     "data['changes'][0]['p_adjusted'] must be a number in [0, 1], got 1.5"),
    "sample_profile": (lambda d: d.update(interval_s=0.0),
                       "data['interval_s'] must be a positive finite number, got 0.0"),
    "suite": (lambda d: d.update(baseline="nobody"),
              "data['baseline'] must name one of the variants (base, fast), got 'nobody'"),
}


def test_every_builtin_kind_has_an_impossible_case() -> None:
    assert set(_IMPOSSIBLE) | {"measurement"} == set(kinds.BUILTIN_KINDS)


@pytest.mark.parametrize("kind", sorted(_IMPOSSIBLE))
def test_load_names_the_file_and_field_of_every_kind(tmp_path: Path, kind: str) -> None:
    doc = _saved_doc(tmp_path, BUILDERS[kind][0]())
    assert doc["kind"] == kind
    mutate, problem = _IMPOSSIBLE[kind]
    mutate(doc["data"])
    path = write_json(tmp_path / f"{kind}.json", doc)
    assert _load_error(path) == f"{path} has malformed {kind!r} data: {problem}"


@pytest.mark.parametrize("kind", ["comparison", "instruction_comparison"])
def test_a_comparison_must_hold_its_baseline(tmp_path: Path, kind: str) -> None:
    """The report looks the baseline up among the variants: a KeyError later, before."""
    doc = _saved_doc(tmp_path, BUILDERS[kind][0]())
    doc["data"]["baseline"] = "nobody"
    path = write_json(tmp_path / "nobase.json", doc)
    variants = "measurements" if kind == "comparison" else "counts"
    assert _load_error(path).endswith(f"data['baseline'] must name one of "
                                      f"data[{variants!r}], got 'nobody'")


def test_a_stat_result_needs_an_exit_status_per_run(tmp_path: Path) -> None:
    doc = _saved_doc(tmp_path, BUILDERS["stat"][0]())
    doc["data"]["returncodes"] = [0]
    path = write_json(tmp_path / "stat.json", doc)
    assert _load_error(path).endswith("data['returncodes'] must hold one exit status per run "
                                      "of data['elapsed_s'] (2), got 1")


# -- messages stay short and safe ----------------------------------------------------------------


def test_messages_do_not_print_huge_or_nested_values(tmp_path: Path) -> None:
    doc = _saved_doc(tmp_path, synthetic())
    doc["data"]["loops"] = [[[[list(range(1000))]]]]
    doc["data"]["clock"] = 7
    doc["data"]["name"] = "x" * 10_000
    path = write_json(tmp_path / "big.json", doc)
    message = _load_error(path)
    assert message.endswith("data['loops'] must be a positive integer, got a JSON array")
    doc["data"]["loops"] = 10**400
    message = _load_error(write_json(path, doc))
    assert message.endswith("data['loops'] must be a positive integer of at most "
                            "2**63 - 1, got an integer of 401 digits")


def test_a_registered_kinds_raw_errors_become_results_file_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's from_data that fails on odd data with AttributeError or OverflowError: the
    error still names the file."""
    monkeypatch.setattr(kinds, "_USER_KINDS", dict(kinds._USER_KINDS))

    class Box:
        def __init__(self, size: int) -> None:
            self.size = size

    results.register_kind("box", Box, lambda b: {"size": b.size},
                          lambda d: Box(int(d.get("size") * 10.0**308)))
    path = tmp_path / "box.json"
    results.save(Box(3), path)
    for data, raised in (([1, 2], "AttributeError"), ({"size": 10}, "OverflowError")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["data"] = data
        write_json(path, doc)
        with pytest.raises(ResultsFileError, match=rf"^{re.escape(str(path))} has malformed "
                                                   r"'box' data: ") as info:
            results.load(path)
        assert type(info.value.__cause__).__name__ == raised


def test_real_measurements_still_load(tmp_path: Path) -> None:
    """The checks accept what fastbench writes: a measured callable, counters or not."""
    m = fastbench.measure(lambda: None, repeat=20, warmup=1, max_time_s=1.0)
    path = tmp_path / "real.json"
    results.save({"m": m}, path)
    assert results.load(path)["m"].to_dict() == m.to_dict()
