"""The gate (fastbench.comparison.gate): which candidates fail, which it cannot judge, and
the exit statuses, on comparisons whose verdicts and intervals are set by hand."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from fastbench import Measurement
from fastbench.comparison import (EXIT_OK, EXIT_SLOWER, EXIT_UNDECIDED, Comparison,
                                  compare_instruction_counts, gate)
from fastbench.counters import InstructionCount
from fastbench.stats import SampleComparison


def _result(verdict: str, change_pct: float, ci: tuple[float, float] | None) -> SampleComparison:
    speedup = 1.0 / (1.0 + change_pct / 100.0)
    return SampleComparison(
        paired=True, test="paired t (run medians)", n_a=5, n_b=5, median_a=100.0,
        median_b=100.0 * (1 + change_pct / 100), speedup=speedup, speedup_ci=ci,
        confidence=0.95, rel_diff_pct=change_pct, p_value=0.01, p_wilcoxon=None,
        p_mannwhitney=0.01, p_welch=None, cohens_d=None, hedges_g=None, cliffs_delta=0.0,
        alpha=0.05, min_effect=0.01, verdict=verdict, warnings=(), level="runs")


def _comparison(**results: SampleComparison) -> Comparison:
    m = Measurement(samples_ns=np.full(10, 100.0), loops=1, warmup_samples_ns=np.empty(0),
                    clock="steady", overhead_ns=0.0, overhead_mad_ns=0.0, call_floor_ns=0.0,
                    call_floor_mad_ns=0.0)
    return Comparison(baseline="base", measurements={"base": m, **{k: m for k in results}},
                      results=dict(results), paired=True, correction="none", rounds=5,
                      stop_reason="processes")


def test_a_significant_slowdown_beyond_the_threshold_fails() -> None:
    # 20% slower, interval [1/1.25, 1/1.15] of speedup: slower by 15-25%.
    c = _comparison(new=_result("slower", 20.0, (1 / 1.25, 1 / 1.15)))
    g = gate(c, 5)
    assert g.status == "fail" and g.exit_code == EXIT_SLOWER
    assert g.failed[0].candidate == "new" and math.isclose(g.failed[0].worst_pct, 25.0)
    assert "significantly slower by more than 5%: new (+20.00%)" in g.lines()[0]


def test_within_the_threshold_passes_only_when_the_interval_rules_out_more() -> None:
    narrow = _comparison(new=_result("no significant difference", 1.0, (1 / 1.03, 1 / 0.99)))
    assert gate(narrow, 5).status == "pass" and gate(narrow, 5).exit_code == EXIT_OK
    # The same estimate from a noisy measurement: the interval allows 30% slower.
    wide = _comparison(new=_result("no significant difference", 1.0, (1 / 1.30, 1.2)))
    g = gate(wide, 5)
    assert g.status == "undecided" and g.exit_code == EXIT_OK
    assert "allows a slowdown of 30.0%" in g.undecided[0].reason
    assert gate(wide, 5, strict=True).exit_code == EXIT_UNDECIDED
    assert gate(wide, 40).status == "pass"
    # Slower but by less than the threshold, and known to be: a pass.
    small = _comparison(new=_result("slower", 3.0, (1 / 1.04, 1 / 1.02)))
    assert gate(small, 5).status == "pass"


def test_cannot_tell_is_never_a_silent_pass() -> None:
    c = _comparison(new=_result("cannot tell", 19.9, None))
    g = gate(c, 5)
    assert g.status == "undecided" and g.exit_code == EXIT_OK
    (line,) = g.lines()
    assert line.startswith("warning: the gate could not judge 1 of 1 candidate")
    assert "--strict" in line and str(EXIT_UNDECIDED) in line
    strict = gate(c, 5, strict=True)
    assert strict.exit_code == EXIT_UNDECIDED and strict.lines()[0].startswith("error:")
    # Without a threshold only "cannot tell" is undecided; nothing fails.
    assert gate(c).status == "undecided"
    assert gate(_comparison(new=_result("slower", 50.0, (0.6, 0.7)))).status == "pass"


def test_a_failure_outranks_what_could_not_be_judged() -> None:
    c = _comparison(a=_result("slower", 20.0, (0.8, 0.87)), b=_result("cannot tell", 1.0, None))
    g = gate(c, 5, strict=True)
    assert g.exit_code == EXIT_SLOWER and len(g.failed) == 1 and len(g.undecided) == 1
    assert len(g.lines()) == 2
    d = g.to_dict()
    assert d["status"] == "fail" and [x["outcome"] for x in d["checks"]] == ["fail", "undecided"]


def test_instruction_counts() -> None:
    def count(per_call: float) -> InstructionCount:
        return InstructionCount(name="x", per_call=per_call, runs=(per_call,), source="pmu",
                                calls=10, estimated_cycles=None, events={}, wall_s=0.1)

    c = compare_instruction_counts(count(1000.0), {"new": count(1100.0)}, tolerance=0.005)
    assert gate(c, 5).exit_code == EXIT_SLOWER
    assert gate(c, 15).status == "pass"


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_a_bad_threshold_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="fail_slower_pct"):
        gate(_comparison(new=_result("slower", 1.0, (0.9, 0.95))), bad)


def test_only_comparisons_are_judged() -> None:
    with pytest.raises(TypeError, match="gate"):
        gate([object()], 5)  # type: ignore[list-item]
    assert dataclasses.is_dataclass(gate([], 5)) and gate([], 5).status == "pass"
