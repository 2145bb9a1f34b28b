"""Measurements of several runs (worker processes): Measurement.from_runs, the run-level
median and interval, the headline that says what its interval covers, the round trip, and
compare_measurements judging separate runs by run-level statistics."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from fastbench import Measurement, compare_measurements
from fastbench.measurement import RUN_SPREAD_WARN
from fastbench.units import format_ns


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


def test_several_runs_per_side_are_judged_by_their_spread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))  # no variation measured here
    base = Measurement.from_runs([_run(x, i) for i, x in enumerate(LEVELS)])
    same = Measurement.from_runs([_run(x * 1.002, 10 + i) for i, x in enumerate(LEVELS[::-1])])
    slow = Measurement.from_runs([_run(x * 1.15, 20 + i) for i, x in enumerate(LEVELS)])
    # Invocations known to move no more than their runs show (run_variation=0): the runs
    # decide. Without any such knowledge results measured apart cannot be told apart.
    c = compare_measurements(base, {"same": same, "slow": slow}, run_variation=0.0)
    assert c.verdicts == {"same": "no significant difference", "slow": "slower"}
    assert {r.level for r in c.results.values()} == {"runs"}
    unknown = compare_measurements(base, {"same": same, "slow": slow})
    assert unknown.verdicts == {"same": "cannot tell", "slow": "cannot tell"}


# -- processes the host slowed from start to end ---------------------------------------------
SLOWED = (1000.0, 1004.0, 996.0, 1880.0, 1002.0, 998.0)  # the fourth ran 1.88x slow throughout


def test_a_process_slowed_throughout_is_left_out_of_the_figure_and_said() -> None:
    m = Measurement.from_runs([_run(x, i) for i, x in enumerate(SLOWED)])
    np.testing.assert_array_equal(m.quiet_runs, [True, True, True, False, True, True])
    kept = np.log(m.run_medians_ns[m.quiet_runs])
    assert m.median_ns == pytest.approx(math.exp(kept.mean()), rel=1e-12)
    half = sps.t(4).ppf(0.975) * kept.std(ddof=1) / math.sqrt(5)
    lo, hi = m.median_ci_ns or (0.0, 0.0)
    assert lo == pytest.approx(math.exp(kept.mean() - half), rel=1e-12)
    assert hi == pytest.approx(math.exp(kept.mean() + half), rel=1e-12)
    assert m.run_spread == pytest.approx(kept.std(ddof=1), rel=1e-12)
    # Said in the headline and in an info warning that names the run and the figure with it.
    assert "over 5 undisturbed of 6 processes" in str(m)
    (note,) = [w for w in m.warnings if getattr(w, "code", "") == "disturbed-runs"]
    everything = math.exp(float(np.mean(np.log(m.run_medians_ns))))
    assert note.startswith("disturbed processes: 1 of 6 ran more than 10% slower")
    assert f"{everything / 1000:.3f} µs" in note and not [
        w for w in m.warnings if getattr(w, "code", "") == "run-spread"]
    # A file keeps the text alone; reading it back codes it again.
    back = Measurement.from_dict(m.to_dict())
    assert [getattr(w, "code", "") for w in back.warnings] == [
        getattr(w, "code", "") for w in m.warnings]


def _slowed_runs(rng: np.random.Generator, level_ns: float, processes: int, seed: int,
                 slowed: float) -> Measurement:
    """A processes=N result on a host like the one the tolerance was set on: each process
    1% apart from the others, and with probability ``slowed`` run 1.1-2.3x slow throughout."""
    levels = level_ns * np.exp(rng.normal(0.0, 0.01, processes))
    hit = rng.random(processes) < slowed
    levels[hit] *= rng.uniform(1.1, 2.3, int(hit.sum()))
    return Measurement.from_runs([_run(x, seed + i, n=64) for i, x in enumerate(levels)])


@pytest.mark.slow
def test_saved_results_of_five_processes_with_slowed_processes_keep_their_verdicts() -> None:
    # 15% of the processes slowed (12% were, measured), 5 a side, compared as saved results are.
    # Identical code: "slower" or "faster" at most in the 5% the test allows (with the
    # binomial margin of 100 trials); a 10% slowdown: found in at least 90 of 100 (93 with
    # this seed). Judged on every process, the slowed ones spread each side by tens of
    # percent, and 10% was found in 23 of the same 100.
    rng = np.random.default_rng(16)
    trials, wrong, found = 100, 0, 0
    for t in range(trials):
        a = _slowed_runs(rng, 1000.0, 5, 1000 * t, 0.15)
        same = _slowed_runs(rng, 1000.0, 5, 1000 * t + 100, 0.15)
        slow = _slowed_runs(rng, 1100.0, 5, 1000 * t + 200, 0.15)
        # Invocations that move no more than their runs (run_variation=0): what is tested
        # here is how slowed processes are left out of each side.
        c = compare_measurements(a, {"same": same, "slow": slow}, correction="none",
                                 run_variation=0.0)
        wrong += c.verdicts["same"] in ("slower", "faster")
        found += c.verdicts["slow"] == "slower"
    assert wrong <= sps.binom.ppf(0.9999, trials, 0.05)
    assert found >= 90


def test_paired_runs_leave_out_a_pair_with_a_slowed_process() -> None:
    # compare(processes=N) pairs the i-th process of each side; a pair one of whose processes
    # the host slowed throughout is left out, and the test runs on the other pairs.
    from fastbench.comparison import judge_runs

    base = Measurement.from_runs([_run(x, i) for i, x in enumerate(SLOWED)])  # 4th slowed
    cand = Measurement.from_runs([_run(x * 1.05, 10 + i) for i, x in enumerate(
        (1000.0, 1004.0, 996.0, 1001.0, 1002.0, 998.0))])
    r = judge_runs("base", {"base": base, "cand": cand}, paired=True, alpha=0.05,
                   min_effect=0.01, correction="none")["cand"]
    assert (r.n_a, r.n_b) == (5, 5)
    keep = np.array([True, True, True, False, True, True])
    ratios = np.log(base.run_medians_ns[keep]) - np.log(cand.run_medians_ns[keep])
    assert r.speedup == pytest.approx(math.exp(ratios.mean()), rel=1e-12)
    assert r.verdict == "slower"
    assert any(w.startswith("1 of 6 pairs left out") for w in r.warnings)


def _phased(level_ns: float, slow_windows: int, seed: int) -> Measurement:
    """2000 samples of 1000 calls at ``level_ns`` (100 µs a sample: windows of 100 samples,
    20 of them), the first ``slow_windows`` windows 4% slower."""
    rng = np.random.default_rng(seed)
    x = level_ns * np.exp(rng.normal(0.0, 0.002, 2000))
    x[: 100 * slow_windows] *= 1.04
    return _run(level_ns, seed, samples_ns=x, loops=1000)


def test_interference_of_several_runs_is_judged_within_each_run() -> None:
    # Run A at 100 ns has 12 of 20 windows 4% slower; run B at 108 ns (within the 10% that
    # keeps a process) has 2. Within each run the disturbed phases ran 1.04x slower. Pooled,
    # A's 1200 disturbed samples (104 ns) sit below B's 1800 quiet ones (108 ns), which hold
    # the pooled quiet median: 104 / 108 = 0.96, "0.96x slower".
    a, b = _phased(100.0, 12, 1), _phased(108.0, 2, 2)
    m = Measurement.from_runs([a, b])
    assert m.phases.slowdown(m.samples_ns) == pytest.approx(104 / 108, rel=0.01)
    assert m.quiet_runs.all()
    text = [w for w in m.warnings if w.startswith("interference")]
    assert len(text) == 1 and "1.04x slower than their process's quiet ones" in text[0]
    # With the disturbed phases, A's median is 104 and B's 108: the figure would be their
    # geometric mean, 2% above the 103.9 ns of the quiet phases.
    raw = math.exp(np.mean(np.log([np.median(a.samples_ns), np.median(b.samples_ns)])))
    assert raw == pytest.approx(math.sqrt(104 * 108), rel=0.005)
    assert m.median_ns == pytest.approx(math.sqrt(100 * 108), rel=0.005)
    assert f"the figure would be {format_ns(raw)}" in text[0]
