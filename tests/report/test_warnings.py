"""Tests for fastbench.report.warnings: a WarningRecord is the str it always was, plus a
code and a severity that survive copying and pickling; bad codes and severities are errors."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from fastbench.report import SEVERITIES, WarningRecord


def test_it_is_the_text_as_a_str() -> None:
    w = WarningRecord("high variation: ±12% of the median", "high-variation")
    assert isinstance(w, str)
    assert w == "high variation: ±12% of the median"
    assert "variation" in w and w.startswith("high")
    assert f"warning: {w}" == "warning: high variation: ±12% of the median"
    assert str(w) == "high variation: ±12% of the median"
    assert len(w) == len("high variation: ±12% of the median")
    assert hash(w) == hash("high variation: ±12% of the median")
    assert json.dumps([w]) == json.dumps(["high variation: ±12% of the median"])


def test_code_severity_and_message() -> None:
    w = WarningRecord("few samples", "too-few-samples")
    assert (w.code, w.severity) == ("too-few-samples", "warning")
    e = WarningRecord("counters missing", "counters-unavailable", severity="info")
    assert e.severity == "info"
    assert type(w.message) is str and w.message == "few samples"
    assert w.to_dict() == {"code": "too-few-samples", "severity": "warning",
                           "message": "few samples"}


def test_severities() -> None:
    assert SEVERITIES == ("info", "warning", "error")
    for severity in SEVERITIES:
        assert WarningRecord("m", "c", severity).severity == severity


@pytest.mark.parametrize("severity", ["warn", "ERROR", "", None, 2])
def test_bad_severity_is_an_error(severity: object) -> None:
    with pytest.raises(ValueError, match=r"\[WarningRecord\] severity must be one of "
                                         r"\('info', 'warning', 'error'\), got "):
        WarningRecord("m", "c", severity)  # type: ignore[arg-type]


@pytest.mark.parametrize("code", ["", None, 3])
def test_bad_code_is_an_error(code: object) -> None:
    with pytest.raises(ValueError, match=r"\[WarningRecord\] code must be a non-empty str"):
        WarningRecord("m", code)  # type: ignore[arg-type]


@pytest.mark.parametrize("message", ["", None, b"bytes"])
def test_bad_message_is_an_error(message: object) -> None:
    with pytest.raises(ValueError, match=r"\[WarningRecord\] message must be a non-empty str"):
        WarningRecord(message, "c")  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_keeps_code_and_severity(protocol: int) -> None:
    w = WarningRecord("drift between rounds", "drift", "error")
    back = pickle.loads(pickle.dumps(w, protocol=protocol))
    assert type(back) is WarningRecord
    assert back == w and (back.code, back.severity) == ("drift", "error")


def test_copies_keep_code_and_severity() -> None:
    w = WarningRecord("outliers", "outliers", "info")
    for other in (copy.copy(w), copy.deepcopy(w)):
        assert other == "outliers" and (other.code, other.severity) == ("outliers", "info")
