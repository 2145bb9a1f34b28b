"""The machine-readable verdicts of `fastbench compare --json` (fastbench.results.verdicts):
the document's parts, a code for every warning fastbench writes on a comparison, and JSON
that holds no value standard JSON cannot."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from fastbench import Measurement, compare, compare_measurements
from fastbench.comparison import gate
from fastbench.identity import Identity
from fastbench.results.verdicts import (VERDICTS_FORMAT, verdicts_document, warning_code,
                                        write_verdicts)

A = Identity(kind="statement", what="sum(r)", code="a" * 32, python="3.11", fastbench="x")


def _single(median_ns: float, identity: Identity | None = None, spread: float = 0.0005,
            n: int = 41) -> Measurement:
    wobble = np.array([(-1.0) ** i for i in range(n - 1)] + [0.0])
    return Measurement(samples_ns=median_ns * (1.0 + spread * wobble), loops=10,
                       warmup_samples_ns=np.empty(0), clock="steady", overhead_ns=0.0,
                       overhead_mad_ns=0.0, call_floor_ns=0.0, call_floor_mad_ns=0.0,
                       identity=identity)


def _runs(level: float, identity: Identity | None = None) -> Measurement:
    return Measurement.from_runs([_single(level * f) for f in (1.0, 1.02, 0.99, 1.01, 0.98)],
                                 identity=identity)


def _every_kind_of_warning() -> list:
    """Comparisons made to say each thing fastbench's comparisons say."""
    b = dataclasses.replace(A, code="b" * 32)
    return [
        compare_measurements(_single(1000.0), {"x": _single(1300.0)}),  # variation unknown
        compare_measurements(_single(1000.0, A), {"x": _single(1010.0, b)},
                             run_variation=0.05),  # within the variation; identities differ
        compare_measurements(_runs(1000.0, A), {"x": _runs(1000.0, A)}),  # identical code
        compare_measurements(_runs(1000.0), {"x": _runs(1001.0), "y": _runs(2000.0)},
                             run_variation=0.0),  # no difference rules out; corrected p
        compare_measurements(_runs(1000.0), {"x": _runs(1001.0)}, run_variation=0.2),
        compare_measurements(_single(1000.0), {"x": _runs(1001.0)}, run_variation=0.01),
    ]


def test_every_warning_fastbench_writes_on_a_comparison_has_a_code() -> None:
    seen = set()
    for c in _every_kind_of_warning():
        for r in c.results.values():
            for w in r.warnings:
                code = warning_code(w)
                assert code != "other", w
                seen.add(code)
    assert {"variation-unknown", "within-variation", "identity-differs", "identity-same",
            "identity-unknown", "detectable-change", "judged-against-invocations",
            "hint-together"} <= seen
    assert warning_code("a sentence of another tool") == "other"


def test_the_document_holds_every_verdict_with_its_interval_tests_and_identities(
        tmp_path: Path) -> None:
    b = dataclasses.replace(A, code="b" * 32)
    saved = compare_measurements(_single(1000.0, A), {"new": _single(1300.0, b)},
                                 run_variation=0.02)
    instr = compare({"a": "sum(range(10))", "b": "sum(range(20))"}, rounds=8,
                    min_time_s=0.0005)
    g = gate([saved, instr], 5.0)
    doc = verdicts_document([saved, instr], g, kind="files")
    write_verdicts(tmp_path / "v.json", doc)
    back = json.loads((tmp_path / "v.json").read_text())
    assert back["format"] == VERDICTS_FORMAT and back["kind"] == "files"
    first = back["comparisons"][0]["candidates"][0]
    assert first["verdict"] == "slower" and first["name"] == "new"
    assert first["speedup_ci"][1] < 1.0 and 0.0 <= first["p_value"] < 0.05
    assert first["baseline_side"]["identity"]["key"] == A.key
    assert first["candidate_side"]["identity"]["code"] == "b" * 32
    assert first["level"] == "variation" and first["run_variation"] == pytest.approx(0.02)
    assert all("code" in w and "text" in w for w in first["warnings"])
    second = back["comparisons"][1]
    assert second["how"] == "rounds" and second["candidates"][0]["test"] == "sign test"
    assert back["gate"]["threshold_pct"] == 5.0
    assert [c["outcome"] for c in back["gate"]["checks"]][0] == "fail"


def test_values_json_cannot_hold_are_null(tmp_path: Path) -> None:
    doc = {"format": VERDICTS_FORMAT, "x": [math.nan, math.inf, 1.5], "y": {"z": -math.inf}}
    write_verdicts(tmp_path / "v.json", doc)
    assert json.loads((tmp_path / "v.json").read_text()) == {
        "format": VERDICTS_FORMAT, "x": [None, None, 1.5], "y": {"z": None}}
