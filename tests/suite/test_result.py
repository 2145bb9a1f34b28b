"""fastbench.suite.result on records built by hand (nothing measured): the efficiency score
with hand-worked numbers in both readings of the accuracy delta, the memory
footprint (weights as stored + the activation peak) and the reduction with its provenance,
the objectives and figure that use it, and saved results old and new with their range
checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import fastbench
from fastbench.suite import MemoryFigures, MetricValue, Speedup, SuiteResult, VariantRecord
from fastbench.suite.result import efficiency_score, score_text
from fastbench.suite.runner import latency_of, throughput_of

MB = 1_000_000


def _record(name: str, time_s: float, memory: MemoryFigures, *, speedup: float = 1.0,
            delta: float | None = None) -> VariantRecord:
    samples = [time_s * (1 + 0.01 * k) for k in range(-5, 6)]
    lat = latency_of(1, samples)
    s = (Speedup(1.0, None, "baseline") if delta is None
         else Speedup(speedup, (0.9 * speedup, 1.1 * speedup), "faster", 0.001))
    metric = MetricValue("accuracy", 0.9 + (delta or 0.0), None, None, delta, None)
    return VariantRecord(name, "module", lat, {1: lat}, {1: throughput_of(1, samples)}, s,
                         {1: s}, metric, memory)


def _table() -> SuiteResult:
    """A table of 400 MB, 100 MB and 40 MB models; the first two measured, the
    third's activation peak only estimated; every per-call increase 0 (steady state)."""
    base = MemoryFigures(0.0, 300 * MB, 0, 400 * MB, "VmHWM", 0, 100 * MB, "allocator", 90 * MB)
    int8 = MemoryFigures(0.0, 0, 0, 100 * MB, "VmHWM", 75 * MB, 25 * MB, "allocator", 20 * MB)
    tiny = MemoryFigures(0.0, 20 * MB, 5 * MB, 25 * MB, "VmHWM", 0, None, "", 15 * MB)
    return SuiteResult({"fp32": _record("fp32", 2e-3, base),
                        "int8": _record("int8", 1.6e-3, int8, speedup=1.25, delta=-0.005),
                        "tiny": _record("tiny", 1e-3, tiny, speedup=2.0, delta=-0.02)},
                       "fp32", (1,))


# -- the efficiency score ----------------------------------------------------------------------

def test_efficiency_score_reads_the_delta_as_a_fraction_by_default() -> None:
    # 1.25 x 4 / (1 + 0.005) = 5 / 1.005
    assert efficiency_score(1.25, 4, -0.005) == pytest.approx(4.975124, rel=1e-6)
    # Read in points: 5 / (1 + 0.5)
    assert efficiency_score(1.25, 4, -0.005, delta_unit="points") == pytest.approx(10 / 3)
    # A gain counts as a loss does (|delta|); missing figures count as 1 and 0.
    assert efficiency_score(1.25, 4, 0.005) == efficiency_score(1.25, 4, -0.005)
    assert efficiency_score(2.0, None, None) == 2.0
    with pytest.raises(ValueError, match="delta_unit must be one of fraction, points"):
        efficiency_score(1.0, 1.0, 0.0, delta_unit="percent")


def test_the_suite_scores_in_the_unit_it_is_given_and_says_which() -> None:
    r = _table()
    n = r.normalized("int8")
    assert n.compression == pytest.approx(4.0)
    assert n.efficiency == pytest.approx(5 / 1.005)
    assert "Score: speedup x compression / (1 + |accuracy delta|), the delta as a fraction" \
        in str(r)
    points = SuiteResult(r.variants, "fp32", (1,), delta_unit="points")
    assert points.normalized("int8").efficiency == pytest.approx(5 / 1.5)
    assert points.score_name == score_text("points") and "percentage points" in str(points)
    with pytest.raises(ValueError, match="delta_unit"):
        SuiteResult(r.variants, "fp32", (1,), delta_unit="pt")
    # A custom score keeps its own name.
    custom = SuiteResult(r.variants, "fp32", (1,), score_name="mine",
                         score=lambda rec, base, n: 7.0)
    assert custom.normalized("int8").efficiency == 7.0 and custom.score_name == "mine"


# -- the memory footprint ----------------------------------------------------------------------

def test_footprint_is_weights_as_stored_plus_the_activation_peak() -> None:
    r = _table()
    base, int8, tiny = (r[n].memory for n in ("fp32", "int8", "tiny"))
    assert base.footprint_bytes == 400 * MB and base.footprint_basis == \
        "weights + measured activation peak"
    # The int8 model's weights are packed, not parameters: they count.
    assert int8.weights_bytes == 75 * MB and int8.footprint_bytes == 100 * MB
    # Without a measured peak the analyzer's estimate stands in, and says so.
    assert tiny.activations == (15 * MB, "estimated") and tiny.footprint_bytes == 40 * MB
    assert MemoryFigures(0.0, 10, 2).footprint_basis == "weights only (no activation figure)"
    assert MemoryFigures(0.0).footprint_bytes is None and MemoryFigures(0.0).footprint_basis == ""


def test_memory_reduction_is_the_footprints_ratio_with_its_provenance() -> None:
    r = _table()
    n = r.normalized("int8")
    assert n.memory_reduction == pytest.approx(4.0)
    assert n.memory_reduction_basis == "footprints: weights + measured activation peak"
    assert not n.memory_reduction_estimated
    t = r.normalized("tiny")
    assert t.memory_reduction == pytest.approx(10.0)
    assert t.memory_reduction_estimated
    assert t.memory_reduction_basis == ("footprints: baseline weights + measured activation "
                                        "peak, variant weights + estimated activation peak")
    # A callable has no footprint: no reduction, and no basis claimed.
    bare = SuiteResult({"a": _record("a", 1e-3, MemoryFigures(0.0)),
                        "b": _record("b", 1e-3, MemoryFigures(0.0), speedup=1.0, delta=0.0)},
                       "a", (1,))
    assert bare.normalized("b").memory_reduction is None
    assert bare.normalized("b").memory_reduction_basis == ""


def test_the_table_shows_the_footprint_and_the_per_call_increase_apart() -> None:
    text = str(_table())
    head = next(line for line in text.splitlines() if line.strip().startswith("Model"))
    assert "Memory" in head and "Per-call increase" in head
    row = next(line for line in text.splitlines() if line.strip().startswith("tiny"))
    assert "38.1 MiB (est.)" in row and "0 B" in row       # 40 MB, estimated activations
    assert "int8: 95.4 MiB = weights 71.5 MiB (packed 71.5 MiB) + activations measured " \
           "23.8 MiB, analyzer's estimate 19.1 MiB" in text
    assert "4.00x" in text and "10.00x (est.)" in text


def test_objectives_and_the_memory_figure_use_the_footprint(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    r = _table()
    assert r.objective("int8", "memory") == 100 * MB
    assert r.objective("int8", "memory_increase") == 0.0
    assert r.pareto(("latency", "memory")) == ["tiny"]
    from fastbench.suite import plot

    drawn: dict[str, Any] = {}

    def fake_bars(names: list[str], values: list[float], cis: object, path: Path,
                  **kw: Any) -> Path:
        drawn.update(names=names, values=values, **kw)
        return path
    monkeypatch.setattr(plot, "plot_bars", fake_bars)
    r.plot_comparison(tmp_path / "m.png", figure="memory")
    assert drawn["values"] == pytest.approx([400 * MB / 2**20, 100 * MB / 2**20, 40 * MB / 2**20])
    assert drawn["ylabel"] == "memory footprint (MiB)"
    r.plot_comparison(tmp_path / "m.png", figure="memory_increase")
    assert drawn["values"] == [0.0, 0.0, 0.0]


# -- saved results -----------------------------------------------------------------------------

def test_round_trip_keeps_the_new_figures(tmp_path: Path) -> None:
    r = _table()
    back = SuiteResult.from_dict(json.loads(json.dumps(r.to_dict())))
    for name in r:
        assert back[name].memory == r[name].memory
    assert back.delta_unit == "fraction"
    assert back.normalized("tiny") == r.normalized("tiny")
    fastbench.save(r, tmp_path / "suite.json")
    again = fastbench.load(tmp_path / "suite.json")
    assert again["int8"].memory.packed_bytes == 75 * MB
    assert again.normalized("int8").efficiency == pytest.approx(5 / 1.005)


def test_an_older_file_without_the_new_fields_still_loads(tmp_path: Path) -> None:
    data = _table().to_dict()
    old = copy.deepcopy(data)
    del old["delta_unit"]
    old["score_name"] = "speedup x compression / (1 + |accuracy delta in points|)"
    for v in old["variants"]:
        for k in ("packed_bytes", "activation_peak_bytes", "activation_method",
                  "activation_estimate_bytes"):
            del v["memory"][k]
    r = SuiteResult.from_dict(old)
    m = r["int8"].memory
    assert m.packed_bytes is None and m.activation_peak_bytes is None
    assert m.footprint_basis == "weights only (no activation figure)"
    # Its scores were in points, and stay so.
    assert r.delta_unit == "points" and r.normalized("int8").efficiency == pytest.approx(5 / 1.5)
    path = tmp_path / "old.json"
    fastbench.save(r, path)
    raw = json.loads(path.read_text())
    del raw["data"]["delta_unit"]
    path.write_text(json.dumps(raw))
    assert fastbench.load(path).delta_unit == "points"


@pytest.mark.parametrize("key, value, match", [
    ("activation_peak_bytes", -1, "whole number of bytes"),
    ("activation_peak_bytes", 1.5, "whole number of bytes"),
    ("activation_estimate_bytes", "big", "whole number of bytes"),
    ("packed_bytes", True, "whole number of bytes"),
    ("packed_bytes", 1e31, "whole number of bytes"),
    ("param_bytes", float("nan"), "whole number of bytes"),
    ("peak_increase_bytes", float("inf"), "finite number"),
])
def test_memory_figures_are_range_checked_on_load(key: str, value: object, match: str) -> None:
    data = _table().to_dict()
    data["variants"][1]["memory"][key] = value
    with pytest.raises(ValueError, match=match):
        SuiteResult.from_dict(data)


def test_an_unknown_delta_unit_is_refused_on_load() -> None:
    data = _table().to_dict()
    data["delta_unit"] = "percent"
    with pytest.raises(ValueError, match="delta_unit"):
        SuiteResult.from_dict(data)
