"""Measurements of several runs (worker processes): Measurement.from_runs, the run-level
median and interval, the headline that says what its interval covers, the round trip, and
compare_measurements judging separate runs by run-level statistics."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from fastbench import Measurement, compare_measurements
from fastbench.measurement import RUN_SPREAD_WARN


def _run(level_ns: float, seed: int, n: int = 200, loops: int = 100, **extra: Any) -> Measurement:
    rng = np.random.default_rng(seed)
    fields: dict[str, Any] = dict(
        samples_ns=level_ns * np.exp(rng.normal(0.0, 0.005, n)), loops=loops,
        warmup_samples_ns=np.asarray([level_ns * 1.2]), clock="tsc", overhead_ns=0.5,
        overhead_mad_ns=0.1, call_floor_ns=20.0, call_floor_mad_ns=1.0, name="work")
    fields.update(extra)
    return Measurement(**fields)


LEVELS = (1000.0, 1030.0, 985.0, 1010.0, 995.0)


def test_from_runs_keeps_every_sample_and_says_which_run_took_it() -> None:
    runs = [_run(x, i, n=100 + i, loops=100 + i) for i, x in enumerate(LEVELS)]
    m = Measurement.from_runs(runs)
    assert m.runs == 5 and m.n == sum(r.n for r in runs)
    assert m.run_lengths == tuple(r.n for r in runs)
    assert m.run_loops == tuple(r.loops for r in runs)
    for got, run in zip(m.run_samples_ns(), runs):
        np.testing.assert_array_equal(got, run.samples_ns)
    np.testing.assert_allclose(m.run_medians_ns, [np.median(r.samples_ns) for r in runs])
    assert m.elapsed_s == sum(r.elapsed_s for r in runs)


def test_run_level_median_and_interval() -> None:
    m = Measurement.from_runs([_run(x, i) for i, x in enumerate(LEVELS)])
    logs = np.log(m.run_medians_ns)
    assert m.median_ns == pytest.approx(math.exp(logs.mean()))
    half = sps.t(4).ppf(0.975) * logs.std(ddof=1) / math.sqrt(5)
    lo, hi = m.median_ci_ns or (0.0, 0.0)
    assert lo == pytest.approx(math.exp(logs.mean() - half))
    assert hi == pytest.approx(math.exp(logs.mean() + half))
    # The within-run interval of the pooled samples would be far narrower than the truth.
    pooled = Measurement.from_dict({**m.to_dict(), "run_lengths": [], "run_loops": []})
    assert (pooled.rel_ci or 0.0) < 0.2 * (m.rel_ci or 0.0)


def test_round_trip_keeps_the_runs() -> None:
    m = Measurement.from_runs([_run(x, i) for i, x in enumerate(LEVELS)])
    back = Measurement.from_dict(m.to_dict())
    assert back.run_lengths == m.run_lengths and back.run_loops == m.run_loops
    assert back.median_ns == m.median_ns and back.median_ci_ns == m.median_ci_ns


@pytest.mark.parametrize("bad", [{"run_lengths": [1, 2], "run_loops": [1, 1]},
                                 {"run_lengths": [100, 100], "run_loops": [1]}])
def test_inconsistent_runs_are_refused(bad: dict[str, Any]) -> None:
    data = {**_run(1000.0, 1, n=200).to_dict(), **bad}
    with pytest.raises(ValueError, match="run_lengths"):
        Measurement.from_dict(data)


def test_from_runs_refuses_mixed_clocks_and_nesting() -> None:
    with pytest.raises(ValueError, match="different clocks"):
        Measurement.from_runs([_run(1000.0, 1), _run(1000.0, 2, clock="steady")])
    nested = Measurement.from_runs([_run(1000.0, 1), _run(1000.0, 2)])
    with pytest.raises(ValueError, match="already hold several runs"):
        Measurement.from_runs([nested, _run(1000.0, 3)])


def test_large_spread_between_runs_is_warned() -> None:
    calm = Measurement.from_runs([_run(x, i) for i, x in enumerate((1000.0, 1002.0, 999.0))])
    assert not [w for w in calm.warnings if getattr(w, "code", "") == "run-spread"]
    wild = Measurement.from_runs([_run(x, i) for i, x in enumerate((1000.0, 1150.0, 900.0))])
    assert (wild.run_spread or 0.0) > RUN_SPREAD_WARN
    assert [w for w in wild.warnings if getattr(w, "code", "") == "run-spread"]


def test_headline_says_what_the_interval_covers() -> None:
    one = _run(1000.0, 1, n=2000)
    text = str(one)
    assert "within this run" in text and "not measured" in text
    assert "± 0.0%" not in text  # a tiny within-run interval keeps its digits
    known = str(_run(1000.0, 1, run_variation=0.042))
    assert "runs here vary by about 4.2%" in known
    several = str(Measurement.from_runs([_run(x, i) for i, x in enumerate(LEVELS)]))
    assert "over 5 processes" in several


def test_separate_single_runs_need_a_difference_beyond_the_run_variation() -> None:
    a, b = _run(1000.0, 1), _run(1040.0, 2)  # 4% apart, each run very precise on its own
    assert compare_measurements(a, {"b": b}).verdicts == {"b": "cannot tell"}
    assert compare_measurements(a, {"b": b}, run_variation=0.05).verdicts == {"b": "cannot tell"}
    assert compare_measurements(a, {"b": b}, run_variation=0.005).verdicts == {"b": "slower"}
    # What the measurements carry is used when none is given.
    carried = _run(1040.0, 2, run_variation=0.05, run_variation_df=9)
    c = compare_measurements(a, {"b": carried})
    assert c.verdicts == {"b": "cannot tell"} and c.results["b"].run_variation == 0.05


def test_several_runs_per_side_are_judged_by_their_spread() -> None:
    base = Measurement.from_runs([_run(x, i) for i, x in enumerate(LEVELS)])
    same = Measurement.from_runs([_run(x * 1.002, 10 + i) for i, x in enumerate(LEVELS[::-1])])
    slow = Measurement.from_runs([_run(x * 1.15, 20 + i) for i, x in enumerate(LEVELS)])
    c = compare_measurements(base, {"same": same, "slow": slow})
    assert c.verdicts == {"same": "no significant difference", "slow": "slower"}
    assert {r.level for r in c.results.values()} == {"runs"}
