"""Tests for fastbench.measurement: the Measurement record built from synthetic samples
(summary against fastbench.stats, warnings from known situations, plain-data round trips,
stop reasons) and relative_half_width's arithmetic. Nothing here measures.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from fastbench import Measurement
from fastbench.measurement import STOP_REASONS, measurement_warnings, relative_half_width
from fastbench.memory import CallMemory
from fastbench.report.text import measurement_lines
from fastbench.report.warnings import WarningRecord
from fastbench.stats import median_ci, summarize

_RNG = np.random.default_rng(7)
STEADY = _RNG.lognormal(np.log(1000.0), 0.01, 30)  # quiet samples around 1 µs, cv ~1%
NOISY = _RNG.lognormal(np.log(1000.0), 0.5, 30)  # cv ~50%

FALLBACK_REASON = "steady: no invariant TSC on this CPU (hypervisor hides it)"
TSC_REASON = "tsc: invariant TSC at 2.4 GHz"


def _synthetic(samples: Any = STEADY, **extra: Any) -> Measurement:
    fields: dict[str, Any] = {
        "samples_ns": np.asarray(samples, dtype=np.float64),
        "loops": 1000,
        "warmup_samples_ns": np.asarray([1200.0]),
        "clock": "tsc",
        "overhead_ns": 0.5,
        "overhead_mad_ns": 0.1,
        "call_floor_ns": 20.0,
        "call_floor_mad_ns": 1.0,
    }
    fields.update(extra)
    return Measurement(**fields)


def _having(warnings: tuple[str, ...], start: str) -> list[str]:
    return [w for w in warnings if w.startswith(start)]


# -- summary ----------------------------------------------------------------------------------
@pytest.mark.parametrize("samples", [STEADY, NOISY, [5.0, 1.0, 3.0], [42.0]],
                         ids=["steady", "noisy", "three", "one"])
def test_summary_is_summarize_of_the_samples(samples: Any) -> None:
    m = _synthetic(samples)
    assert m.summary.to_dict() == summarize(samples).to_dict()
    assert m.summary is m.summary  # computed once


# -- warnings ---------------------------------------------------------------------------------
def test_quiet_measurement_has_no_warnings() -> None:
    assert measurement_warnings(_synthetic(), TSC_REASON) == ()


def test_clock_fallback_warning() -> None:
    found = measurement_warnings(_synthetic(clock="steady"), FALLBACK_REASON)
    assert found == (f"clock fallback: {FALLBACK_REASON}",)


@pytest.mark.parametrize(("clock", "reason"), [("tsc", FALLBACK_REASON), ("steady", TSC_REASON),
                                               ("steady", "")])
def test_no_clock_warning_without_a_fallback(clock: str, reason: str) -> None:
    # The TSC was used, or steady was asked for although auto would have picked the TSC.
    assert not _having(measurement_warnings(_synthetic(clock=clock), reason), "clock fallback")


def test_precision_target_not_reached() -> None:
    m = _synthetic(target_rel_ci=0.001, stop_reason="max_time_s")
    found = _having(measurement_warnings(m), "precision target not reached")
    assert len(found) == 1
    assert f"±{m.rel_ci * 100:.3g}%" in found[0]  # type: ignore[operator]
    assert "> ±0.1% " in found[0]


def test_precision_target_not_reached_without_a_ci() -> None:
    m = _synthetic(STEADY[:3], target_rel_ci=0.01, stop_reason="max_time_s")
    found = _having(measurement_warnings(m), "precision target not reached")
    assert len(found) == 1 and "no CI yet" in found[0]


@pytest.mark.parametrize("target", [1e-5, 1e-7])
def test_precision_warning_shows_a_small_target(target: float) -> None:
    # A target below 0.005% must not be printed as "±0.00%", which reads as no target
    # at all (or as an impossible one).
    m = _synthetic(target_rel_ci=target, stop_reason="max_time_s")
    (found,) = _having(measurement_warnings(m), "precision target not reached")
    shown = re.search(r"> ±([\d.eE+-]+)%", found)
    assert shown is not None, found
    assert float(shown.group(1)) > 0.0, found


@pytest.mark.parametrize(("target", "stop"), [(0.001, "target_rel_ci"), (None, "max_time_s"),
                                              (None, "repeat")])
def test_no_precision_warning(target: float | None, stop: str) -> None:
    m = _synthetic(target_rel_ci=target, stop_reason=stop)
    assert not _having(measurement_warnings(m), "precision target")


@pytest.mark.parametrize("median_ns", [20.0, 22.9, 15.0])
def test_call_overhead_warning_within_floor_noise(median_ns: float) -> None:
    # Floor 20 ns with MAD 1 ns: a net median up to 3 ns is noise.
    m = _synthetic(np.full(12, median_ns))
    found = _having(measurement_warnings(m), "the body costs no more than the call floor")
    assert len(found) == 1
    assert "mostly call overhead" in found[0]


@pytest.mark.parametrize("median_ns", [23.5, 1000.0])
def test_no_call_overhead_warning_for_a_clearly_positive_net(median_ns: float) -> None:
    m = _synthetic(np.full(12, median_ns))
    assert m.net_median_ns > 3.0 * m.call_floor_mad_ns
    assert not _having(measurement_warnings(m), "the body costs")


@pytest.mark.parametrize("median_ns", [0.5, 20.0, 1000.0])
def test_no_call_overhead_warning_when_the_floor_is_unknown(median_ns: float) -> None:
    m = _synthetic(np.full(12, median_ns), call_floor_kind="unknown", call_floor_ns=0.0,
                   call_floor_mad_ns=0.0)
    assert not _having(measurement_warnings(m), "the body costs")


def test_high_variation_warning_from_the_summary() -> None:
    m = _synthetic(NOISY)
    high = _having(m.summary.warnings, "high variation")
    assert len(high) == 1
    found = measurement_warnings(m, TSC_REASON)
    assert high[0] in found
    assert set(m.summary.warnings) <= set(found)


def test_warnings_field_is_not_computed() -> None:
    # The record keeps what it was given; measure() fills it from measurement_warnings.
    assert _synthetic(NOISY).warnings == ()


# -- warnings as records ---------------------------------------------------------------------
def _interfered() -> np.ndarray:
    """1 ns per call x 1e5 loops (100 µs samples); every other 500 samples 1.8x slower."""
    x = np.random.default_rng(4).lognormal(0.0, 0.02, 5000)
    for start in range(500, 5000, 1000):
        x[start:start + 500] *= 1.8
    return x


_NO_FLOOR = {"call_floor_ns": 0.0, "call_floor_mad_ns": 0.0}
_MIXTURE = np.random.default_rng(11).permutation(np.concatenate(
    [np.random.default_rng(12).normal(1000.0, 10.0, 150),
     np.random.default_rng(13).normal(1100.0, 10.0, 150)]))
_TREND = 1000.0 + 0.5 * np.arange(100) + np.random.default_rng(5).normal(0.0, 5.0, 100)

# code, severity, how the sentence begins, and a Measurement (with the clock reason) that
# must carry it.
_WARNING_CASES: list[tuple[str, str, str, Measurement, str]] = [
    ("high-variation", "warning", "high variation: ", _synthetic(NOISY), TSC_REASON),
    ("few-samples", "warning", "few samples: 5 ", _synthetic(STEADY[:5]), TSC_REASON),
    ("outliers", "warning", "4 outlier(s) of 20 samples: ",
     _synthetic(np.concatenate([np.arange(1.0, 17.0), np.full(4, 100.0)]), **_NO_FLOOR),
     TSC_REASON),
    ("multimodal", "warning", "the distribution looks multimodal", _synthetic(_MIXTURE),
     TSC_REASON),
    ("drift", "warning", "the samples drift up", _synthetic(_TREND), TSC_REASON),
    ("interference", "info", "interference: ",
     _synthetic(_interfered(), loops=100_000, **_NO_FLOOR), TSC_REASON),
    ("clock-fallback", "info", "clock fallback: ", _synthetic(clock="steady"), FALLBACK_REASON),
    ("precision-target-unmet", "warning", "precision target not reached: ",
     _synthetic(target_rel_ci=0.001, stop_reason="max_time_s"), TSC_REASON),
    ("call-floor-noise", "warning", "the body costs no more than the call floor's noise",
     _synthetic(np.full(12, 20.0)), TSC_REASON),
]


@pytest.mark.parametrize(("code", "severity", "start", "m", "reason"), _WARNING_CASES,
                         ids=[c[0] for c in _WARNING_CASES])
def test_each_warning_is_a_record_with_its_code(code: str, severity: str, start: str,
                                                m: Measurement, reason: str) -> None:
    found = measurement_warnings(m, reason)
    assert all(isinstance(w, WarningRecord) for w in found)
    (record,) = [w for w in found if w.code == code]
    assert record.startswith(start)
    assert record.severity == severity
    assert re.fullmatch(r"[a-z]+(-[a-z]+)*", record.code)
    assert record.message == str(record) and type(record.message) is str
    # A results file keeps the text alone: reading it back finds the same code and severity.
    restored = Measurement.from_dict({**m.to_dict(), "warnings": [record.message]}).warnings
    assert [(w.code, w.severity) for w in restored] == [(code, severity)]  # type: ignore[attr-defined]


def test_summary_warnings_keep_their_text_and_gain_a_code() -> None:
    m = _synthetic(NOISY)
    found = measurement_warnings(m, TSC_REASON)
    assert [str(w) for w in found[:len(m.summary.warnings)]] == list(m.summary.warnings)
    assert found[0].code == "high-variation"


def test_every_code_is_distinct_and_stable() -> None:
    codes = [code for code, *_ in _WARNING_CASES]
    assert len(set(codes)) == len(codes)
    assert set(codes) == {"high-variation", "few-samples", "outliers", "multimodal", "drift",
                          "interference", "clock-fallback", "precision-target-unmet",
                          "call-floor-noise"}


def test_saved_warnings_are_plain_text_and_come_back_as_records() -> None:
    m = _synthetic(STEADY[:5], clock="steady", target_rel_ci=0.001, stop_reason="max_time_s")
    m = replace(m, warnings=measurement_warnings(m, FALLBACK_REASON))
    assert [w.code for w in m.warnings] == [  # type: ignore[attr-defined]
        "few-samples", "clock-fallback", "precision-target-unmet"]
    data = m.to_dict()
    assert all(type(w) is str for w in data["warnings"])  # the results format: text alone
    through_json = json.loads(json.dumps(data, allow_nan=False))
    assert through_json["warnings"] == data["warnings"]
    restored = Measurement.from_dict(through_json).warnings
    assert restored == m.warnings
    assert [(w.code, w.severity) for w in restored] == [  # type: ignore[attr-defined]
        (w.code, w.severity) for w in m.warnings]  # type: ignore[attr-defined]


def test_unknown_saved_warnings_stay_plain_text() -> None:
    data = _synthetic().to_dict()
    data["warnings"] = ["calibration took 3 tries (from another tool)", "few samples: 5 (x)"]
    restored = Measurement.from_dict(data).warnings
    assert restored == tuple(data["warnings"])
    assert type(restored[0]) is str
    assert isinstance(restored[1], WarningRecord) and restored[1].code == "few-samples"


# -- conversion -------------------------------------------------------------------------------
def test_round_trip_keeps_target_stop_reason_and_warnings() -> None:
    m = _synthetic(NOISY, target_rel_ci=0.005, stop_reason="max_time_s", name="noisy",
                   elapsed_s=1.25, calibration_trials=3)
    m = replace(m, warnings=measurement_warnings(m))
    assert _having(m.warnings, "precision target not reached")
    data = m.to_dict()
    through_json = json.loads(json.dumps(data, allow_nan=False))
    for restored in (Measurement.from_dict(data), Measurement.from_dict(through_json)):
        assert restored.to_dict() == data
        assert restored.warnings == m.warnings
        assert isinstance(restored.warnings, tuple)
        assert restored.target_rel_ci == 0.005
        assert restored.stop_reason == "max_time_s"
        assert restored.budget_exhausted


def test_round_trip_without_target() -> None:
    data = _synthetic().to_dict()
    assert data["target_rel_ci"] is None and data["stop_reason"] == "repeat"
    restored = Measurement.from_dict(data)
    assert restored.target_rel_ci is None and restored.stop_reason == "repeat"


def test_from_dict_rejects_unknown_stop_reason() -> None:
    data = _synthetic().to_dict()
    data["stop_reason"] = "bored"
    with pytest.raises(ValueError, match="stop_reason"):
        Measurement.from_dict(data)


def test_from_dict_defaults_stop_reason_and_target() -> None:
    data = _synthetic().to_dict()
    del data["stop_reason"], data["target_rel_ci"], data["warnings"]
    m = Measurement.from_dict(data)
    assert (m.stop_reason, m.target_rel_ci, m.warnings) == ("repeat", None, ())


@pytest.mark.parametrize("stop", STOP_REASONS)
def test_budget_exhausted_follows_stop_reason(stop: str) -> None:
    assert _synthetic(stop_reason=stop).budget_exhausted == (stop == "max_time_s")


def test_stop_reasons() -> None:
    assert set(STOP_REASONS) == {"repeat", "duration_s", "target_rel_ci", "max_time_s"}


# -- relative_half_width ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ci", "center", "expected"),
    [((90.0, 110.0), 100.0, 0.1), ((1.0, 3.0), 4.0, 0.25), ((1.0, 3.0), -4.0, 0.25),
     ((5.0, 5.0), 5.0, 0.0), ((-3.0, -1.0), -2.0, 0.5)],
)
def test_relative_half_width(ci: tuple[float, float], center: float, expected: float) -> None:
    assert relative_half_width(ci, center) == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(("ci", "center"), [(None, 100.0), ((1.0, 3.0), 0.0), (None, 0.0)])
def test_relative_half_width_none(ci: tuple[float, float] | None, center: float) -> None:
    assert relative_half_width(ci, center) is None


def test_rel_ci_uses_relative_half_width() -> None:
    m = _synthetic()
    assert m.median_ci_ns is not None
    assert m.rel_ci == relative_half_width(m.median_ci_ns, m.median_ns)
    assert _synthetic(STEADY[:5]).rel_ci is None  # no CI below 6 samples


def test_tied_samples_leave_an_interval_of_a_clock_step_per_call() -> None:
    # A clock that moves in 10 ns steps, 16 calls a sample: per-call times come in steps of
    # 0.625 ns. 200 samples, 180 of them at 12,000 ns and the rest one step either side:
    # the order statistics of the 95% interval both fall on 12,000, a width of 0, though
    # each sample is off by up to one step. The interval is 12,000 ± 0.625 ns.
    step = 10.0 / 16
    samples = np.array([12_000.0] * 180 + [12_000.0 - step] * 10 + [12_000.0 + step] * 10)
    ci = median_ci(samples)
    assert ci == (12_000.0, 12_000.0)  # what the order statistics alone say
    m = _synthetic(samples, loops=16, clock_resolution_ns=10.0)
    assert m.median_ci_ns == pytest.approx((12_000.0 - step, 12_000.0 + step), rel=1e-15)
    assert m.rel_ci == pytest.approx(step / 12_000.0, rel=1e-12)
    assert "± 0.0052% within this run" in str(m)
    # Without a known step (another tool's results) the order statistics stand.
    assert _synthetic(samples, loops=16).median_ci_ns == (12_000.0, 12_000.0)


def test_a_wide_interval_is_not_changed_by_the_clock_step() -> None:
    m = _synthetic(NOISY, loops=16, clock_resolution_ns=10.0)
    assert m.median_ci_ns == median_ci(m.quiet_samples_ns)


def test_the_clock_step_round_trips_and_defaults_to_unknown() -> None:
    m = _synthetic(clock_resolution_ns=10.0)
    assert Measurement.from_dict(json.loads(json.dumps(m.to_dict()))).clock_resolution_ns == 10.0
    data = m.to_dict()
    del data["clock_resolution_ns"]
    assert Measurement.from_dict(data).clock_resolution_ns == 0.0


# -- memory -----------------------------------------------------------------------------------
_MEMORY = CallMemory(peak_increase_bytes=(40 << 20, 42 << 20, 41 << 20),
                     python_peak_bytes=(40 << 20, 40 << 20, 40 << 20), cuda_peak_bytes=None,
                     method="VmHWM after clear_refs", exact=True, warmup_calls=1)


def test_memory_defaults_to_none_and_round_trips() -> None:
    assert _synthetic().memory is None
    assert _synthetic().to_dict()["memory"] is None
    m = _synthetic(memory=_MEMORY)
    data = json.loads(json.dumps(m.to_dict(), allow_nan=False))
    assert data["memory"] == {
        "peak_increase_bytes": [40 << 20, 42 << 20, 41 << 20],
        "python_peak_bytes": [40 << 20] * 3, "cuda_peak_bytes": None,
        "method": "VmHWM after clear_refs", "exact": True, "warmup_calls": 1,
    }
    restored = Measurement.from_dict(data)
    assert restored.memory == _MEMORY
    assert restored.to_dict() == data


def test_from_dict_without_memory_key() -> None:
    data = _synthetic().to_dict()
    del data["memory"]  # data written before memory existed
    assert Measurement.from_dict(data).memory is None


@pytest.mark.parametrize(("memory", "error"), [
    ({"method": "m"}, ValueError), ({"peak_increase_bytes": [], "method": "m"}, ValueError),
    ({"peak_increase_bytes": ["1"], "method": "m"}, TypeError), ([1, 2], TypeError),
])
def test_from_dict_rejects_bad_memory(memory: Any, error: type[Exception]) -> None:
    data = _synthetic().to_dict()
    data["memory"] = memory
    with pytest.raises(error):
        Measurement.from_dict(data)


def test_report_lines_include_memory() -> None:
    lines = measurement_lines(_synthetic(memory=_MEMORY))
    assert lines[4:6] == [
        "  memory per call (median of 3 tracked calls after 1 warmup, VmHWM after clear_refs): "
        "peak RSS +41 MiB, max +42 MiB",
        "    Python heap peak (tracemalloc): 40 MiB, max 40 MiB",
    ]
    assert not any("memory" in line for line in measurement_lines(_synthetic()))


# -- copies -----------------------------------------------------------------------------------
def test_replace_with_new_samples_gives_their_figures_and_leaves_the_original_alone() -> None:
    m = _synthetic(STEADY)
    # Every cached figure computed on the original before the copy is made...
    first = (m.median_ns, m.median_ci_ns, m.summary.median, m.run_medians_ns.copy())
    doubled = replace(m, samples_ns=STEADY * 2.0)
    # ...is the doubled samples' own on the copy (median_ci's order statistics double too).
    ci = median_ci(STEADY, 0.95)
    assert ci is not None
    assert doubled.median_ns == pytest.approx(2.0 * float(np.median(STEADY)), rel=1e-12)
    assert doubled.summary.median == pytest.approx(2.0 * float(np.median(STEADY)), rel=1e-12)
    assert doubled.median_ci_ns == pytest.approx((2.0 * ci[0], 2.0 * ci[1]), rel=1e-12)
    assert doubled.run_medians_ns == pytest.approx(2.0 * first[3], rel=1e-12)
    # Computing on the copy does not write into the original.
    assert (m.median_ns, m.median_ci_ns, m.summary.median) == first[:3]
    assert m.median_ns == pytest.approx(float(np.median(STEADY)), rel=1e-12)


def test_replace_before_any_figure_keeps_the_original_own() -> None:
    m = _synthetic(STEADY)
    halved = replace(m, samples_ns=STEADY / 2.0)
    assert halved.median_ns == pytest.approx(float(np.median(STEADY)) / 2.0, rel=1e-12)
    assert m.median_ns == pytest.approx(float(np.median(STEADY)), rel=1e-12)
    assert m.summary.median == pytest.approx(float(np.median(STEADY)), rel=1e-12)
