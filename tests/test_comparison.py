"""Tests for fastbench.compare: the interleaved schedule (checked by recording the call
order: two variants alternate, more go in a fresh random order each round, so none has a fixed
predecessor), paired verdicts against native spins of known duration (including A/A runs
that must find nothing), the multiple-testing correction recomputed from the samples, the
time budget, the Comparison record's round trips, and compare_measurements on synthetic
lognormal samples with a known shift.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from scipy import stats as sps

import fastbench
from fastbench import Comparison, Measurement, _core, compare, compare_measurements
from fastbench.timing.sampling import order_design, round_order
from fastbench.stats import SampleComparison, adjust_pvalues, compare_samples

NO_DIFF = "no significant difference"
# Short samples and modest rounds: enough pairs for a verdict, little wall time.
QUICK: dict[str, Any] = {"rounds": 15, "min_time_s": 0.003}


def _noop() -> None:
    pass


def _logger(log: list[str], name: str) -> Callable[[], None]:
    def variant() -> None:
        log.append(name)

    return variant


def _synthetic(samples: Any, name: str = "") -> Measurement:
    return Measurement(
        samples_ns=np.asarray(samples, dtype=np.float64),
        loops=1000,
        warmup_samples_ns=np.empty(0),
        clock="tsc",
        overhead_ns=0.5,
        overhead_mad_ns=0.1,
        call_floor_ns=20.0,
        call_floor_mad_ns=1.0,
        name=name,
    )


def _true_ns(ns: float) -> float:
    """The least disturbed of several short native timings of the spin: a timing only grows
    when the thread is preempted, and a window of 20 spins (tens of µs) is rarely hit, where
    the mean of 1000 (a millisecond) on a busy machine is inflated by whatever share of the
    core the thread lost."""
    return min(_core.spin_duration_ns(ns, reps=20) for _ in range(10))


# -- argument checks --------------------------------------------------------------------------
def test_variants_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="mapping"):
        compare([_noop, _noop])  # type: ignore[arg-type]


@pytest.mark.parametrize("variants", [{}, {"baseline": _noop}])
def test_needs_two_variants(variants: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="at least two variants"):
        compare(variants)


def test_unknown_baseline_names_the_variants() -> None:
    with pytest.raises(ValueError, match=r"'main'.*\(old, new\)"):
        compare({"old": _noop, "new": _noop}, baseline="main")


@pytest.mark.parametrize("bad", [42, None, b"pass", ["pass"]])
def test_variant_neither_callable_nor_str(bad: Any) -> None:
    with pytest.raises(TypeError, match="'cand'"):
        compare({"baseline": _noop, "cand": bad}, rounds=6, min_time_s=0.002)


def test_bad_correction() -> None:
    with pytest.raises(ValueError, match="correction"):
        compare({"baseline": _noop, "cand": _noop}, correction="bonferroni",
                rounds=6, min_time_s=0.002)


@pytest.mark.parametrize("bad", [{"correction": "bonferroni"}, {"alpha": 2.0},
                                 {"min_effect": -0.5}], ids=["correction", "alpha", "min_effect"])
def test_bad_settings_rejected_before_measuring(bad: dict[str, Any]) -> None:
    # A typo in correction/alpha/min_effect must not cost a whole (possibly long) run
    # before it is reported: like the other settings, they are to be checked up front.
    log: list[str] = []
    variants = {"baseline": _logger(log, "baseline"), "cand": _logger(log, "cand")}
    with pytest.raises(ValueError):
        compare(variants, rounds=6, loops=1, warmup=0, min_time_s=0.002, **bad)
    assert log == [], f"the variants ran {len(log)} times before the error"


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [({"alpha": "0.05"}, TypeError, "alpha must be a number, got str"),
     ({"min_effect": None}, TypeError, "min_effect must be a number, got NoneType"),
     ({"min_effect": 1.0}, ValueError, "min_effect must be in [0, 1), got 1.0"),
     ({"alpha": 1.0}, ValueError, "alpha must be in (0, 1), got 1.0"),
     ({"correction": "bonferroni"}, ValueError,
      "correction must be one of ('holm', 'bh', 'none'), got 'bonferroni'"),
     ({"rounds": 2.5}, TypeError, "rounds must be an int, got float 2.5"),
     ({"rounds": 0}, ValueError, "rounds must be >= 1, got 0")],
)
def test_bad_setting_messages(bad: dict[str, Any], error: type[Exception], message: str) -> None:
    log: list[str] = []
    variants = {"baseline": _logger(log, "baseline"), "cand": _logger(log, "cand")}
    with pytest.raises(error) as info:
        compare(variants, loops=1, warmup=0, min_time_s=0.002, **{"rounds": 6, **bad})
    assert str(info.value) == message
    assert log == []


def test_compare_measurements_checks_its_settings() -> None:
    base, cand = _synthetic(100.0 + np.arange(10.0)), _synthetic(90.0 + np.arange(10.0))
    with pytest.raises(TypeError, match="alpha must be a number"):
        compare_measurements(base, {"cand": cand}, alpha="0.05")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="correction must be one of"):
        compare_measurements(base, {"cand": cand}, correction="sidak")


@pytest.mark.parametrize("rounds", [0, -3])
def test_rounds_below_one(rounds: int) -> None:
    with pytest.raises(ValueError):
        compare({"baseline": _noop, "cand": _noop}, rounds=rounds)


def test_rounds_error_names_rounds() -> None:
    # compare's parameter is `rounds`; an error about "repeat" points at nothing the caller
    # (or `fastbench compare --rounds 0`) passed.
    with pytest.raises(ValueError, match="rounds"):
        compare({"baseline": _noop, "cand": _noop}, rounds=0)


def test_non_str_variant_names() -> None:
    # Names are documented as str; other keys must give a clear TypeError (or work), never
    # a bare KeyError from inside the run.
    try:
        c = compare({1: _noop, 2: _noop}, baseline=1, rounds=6, min_time_s=0.002)  # type: ignore[dict-item, arg-type]
    except TypeError as exc:
        assert "str" in str(exc)
    else:
        assert len(c.measurements) == 2 and len(c.results) == 1


# -- the schedule -----------------------------------------------------------------------------
def test_two_variants_alternate() -> None:
    rng = np.random.default_rng(0)
    orders = [round_order(["a", "b"], r, rng) for r in range(6)]
    assert orders == [["a", "b"], ["b", "a"]] * 3
    assert order_design(2).startswith("alternating")


def _predecessors(sequence: list[str]) -> dict[str, Counter[str]]:
    """For each name, how often each name came right before it in ``sequence``."""
    before: dict[str, Counter[str]] = {n: Counter() for n in set(sequence)}
    for prev, cur in zip(sequence, sequence[1:]):
        before[cur][prev] += 1
    return before


@pytest.mark.parametrize("k", [3, 4, 6])
def test_more_variants_have_no_fixed_predecessor(k: int) -> None:
    """Every round holds each name once, and over many rounds each name follows every other
    as often as a uniformly random order predicts: within a round a name at position > 0
    (probability (k-1)/k) follows each of the k-1 others alike, and across a round's edge it
    follows any of the k names (itself included) with probability 1/k each. The counts are
    tested against those probabilities (chi-square, fixed seed). A fixed order rotated by one
    fails this: a name follows the same one in k-1 of k rounds."""
    names = [f"v{i}" for i in range(k)]
    rng = np.random.default_rng(1)
    rounds = 400 * k
    sequence: list[str] = []
    for r in range(rounds):
        order = round_order(names, r, rng)
        assert sorted(order) == names
        sequence += order
    within = (k - 1) / k * (1 / (k - 1))  # share of calls after a given other name, in-round
    edge = 1 / k * (1 / k)                # ... across a round's edge
    for name, counts in _predecessors(sequence).items():
        calls = sum(counts.values())
        expected = [calls * (within + edge if other != name else edge) for other in names]
        observed = [counts[other] for other in names]
        total = sum(expected)
        expected = [e * calls / total for e in expected]
        assert sps.chisquare(observed, expected).pvalue > 1e-3, (name, observed, expected)
        assert max(counts[o] for o in names if o != name) / calls < 1.5 * (within + edge)
    assert order_design(k) == "a fresh random order each round"


def test_rounds_are_interleaved_without_a_fixed_predecessor() -> None:
    log: list[str] = []
    names = ["a", "b", "c", "d"]
    rounds = 80
    c = compare({n: _logger(log, n) for n in names}, baseline="a", rounds=rounds,
                loops=1, warmup=0, min_time_s=0.002)
    assert c.rounds == rounds
    assert c.design == "rounds in one process, a fresh random order each round"
    # With loops=1 each sample is exactly one call; anything before the rounds (there
    # should be nothing: the floors call a no-op) is ignored.
    tail = log[-rounds * len(names):]
    for r in range(rounds):
        assert sorted(tail[r * len(names):(r + 1) * len(names)]) == names
    assert len(log) == rounds * len(names)
    # A fixed order rotated by one gives each variant one predecessor in 3 of 4 calls; a
    # random order about 5 in 16 (see above).
    for name, counts in _predecessors(tail).items():
        assert max(counts.values()) / sum(counts.values()) < 0.5, (name, counts)


# -- paired results ---------------------------------------------------------------------------
def test_paired_result_structure() -> None:
    spin = _core.make_spin(1000.0)
    c = compare({"base": spin, "x": _core.make_spin(1000.0), "y": lambda: None},
                baseline="base", rounds=8, min_time_s=0.002)
    assert c.baseline == "base"
    assert c.paired is True
    assert c.correction == "holm"
    assert c.stop_reason == "rounds"
    assert c.rounds == 8
    assert list(c.measurements) == ["base", "x", "y"]
    assert list(c.results) == ["x", "y"]  # every candidate, not the baseline
    for name, m in c.measurements.items():
        assert m.n == 8 and m.name == name
        assert m.stop_reason == "repeat"
    for r in c.results.values():
        assert r.paired and r.test == "sign test"
        assert r.n_a == r.n_b == 8
    assert c.verdicts == {n: r.verdict for n, r in c.results.items()}
    # The no-op lambda is much faster than the 1 µs spin: speedup > 1 means faster.
    y = c.results["y"]
    assert y.speedup > 1.5
    assert y.verdict == "faster"
    assert c.measurements["y"].call_floor_kind == "python"
    assert c.measurements["x"].call_floor_kind == "native"


def _assert_known_ratio(r: Any, expected: float, direction: str) -> None:
    """What a comparison of a known ratio must get right on any machine, quiet or busy: its
    interval holds the true ratio (3% slack for the oracle's own timing), the verdict never
    points the wrong way, and an interval that resolves the effect (narrower than half of it)
    gives the right verdict. A busy host widens the interval, and then "no significant
    difference" is the honest answer; a quiet one narrows it, and then the verdict must come."""
    assert r.speedup_ci is not None
    lo, hi = r.speedup_ci
    assert lo / 1.03 <= expected <= hi * 1.03, (expected, r.speedup_ci)
    assert r.verdict in (direction, NO_DIFF), r.verdict
    effect = abs(1.0 - expected)
    if hi / lo - 1.0 < effect / 2:
        assert r.verdict == direction, (r.verdict, r.speedup_ci)
        assert r.speedup == pytest.approx(expected, rel=0.05)
    if r.verdict == direction:
        assert (r.rel_diff_pct > 0) == (direction == "slower")


def test_known_slowdown_of_native_spins() -> None:
    base, cand = _core.make_spin(1000.0), _core.make_spin(1100.0)
    c = compare({"1.0us": base, "1.1us": cand}, baseline="1.0us", **QUICK)
    expected = _true_ns(1000.0) / _true_ns(1100.0)
    _assert_known_ratio(c.results["1.1us"], expected, "slower")


def test_known_speedup_of_native_spins() -> None:
    base, cand = _core.make_spin(1100.0), _core.make_spin(1000.0)
    c = compare({"1.1us": base, "1.0us": cand}, baseline="1.1us", **QUICK)
    expected = _true_ns(1100.0) / _true_ns(1000.0)
    _assert_known_ratio(c.results["1.0us"], expected, "faster")


def test_ten_percent_slowdown_found_whenever_the_interval_resolves_it() -> None:
    base, cand = _core.make_spin(1000.0), _core.make_spin(1100.0)
    expected = _true_ns(1000.0) / _true_ns(1100.0)
    for _ in range(5):
        c = compare({"base": base, "cand": cand}, baseline="base", **QUICK)
        _assert_known_ratio(c.results["cand"], expected, "slower")


@pytest.mark.slow
def test_known_slowdown_of_native_spins_side_by_side_in_worker_processes() -> None:
    setup = ("from fastbench import _core\n"
             "base, cand = _core.make_spin(1000.0), _core.make_spin(1100.0)")
    c = compare({"base": "base()", "cand": "cand()"}, baseline="base", setup=setup,
                processes=3, pairing="rounds", **QUICK)
    assert (c.stop_reason, c.rounds, c.paired) == ("processes-rounds", 3, True)
    assert [m.runs for m in c.measurements.values()] == [3, 3]
    assert "paired within each of 3 worker processes" in str(c)
    _assert_known_ratio(c.results["cand"], _true_ns(1000.0) / _true_ns(1100.0), "slower")


def test_an_unknown_pairing_is_refused_before_any_worker_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    def popen(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(subprocess, "Popen", popen)
    with pytest.raises(ValueError, match=r"pairing must be one of \('workers', 'rounds'\), "
                       "got 'pairs'"):
        compare({"a": "pass", "b": "pass"}, baseline="a", processes=2, pairing="pairs")


def test_a_a_comparisons_find_nothing() -> None:
    # Two distinct spin objects of the same duration: any verdict is a false positive.
    # With alpha = 0.05 and min_effect = 1%, at most a few of 20 may slip through.
    verdicts = [
        compare({"baseline": _core.make_spin(1000.0), "same": _core.make_spin(1000.0)},
                **QUICK).verdicts["same"]
        for _ in range(20)
    ]
    assert all(v in (NO_DIFF, "faster", "slower") for v in verdicts)
    assert verdicts.count(NO_DIFF) >= 16, verdicts


def _disturbed(normal_ns: float, disturbed_ns: float, rounds: set[int],
               loops: int) -> Callable[[], None]:
    """A Python callable spinning ``normal_ns``, or ``disturbed_ns`` during the given rounds
    (as when a neighbour preempts one sample). Every variant does the same bookkeeping."""
    normal, disturbed = _core.make_spin(normal_ns), _core.make_spin(disturbed_ns)
    calls = [0]

    def variant() -> None:
        r = calls[0] // loops
        calls[0] += 1
        (disturbed if r in rounds else normal)()

    return variant


def test_two_disturbed_rounds_do_not_hide_a_clear_slowdown() -> None:
    # The candidate is 2x slower in every round; in 2 of 15 rounds the baseline's sample
    # is disturbed (6x slower, as a preempted sample on a busy machine). 13 of 15 pairs
    # say "slower" and the sign-test interval of the speedup lies wholly below 1, but the
    # Wilcoxon signed-rank test gives the two outliers the top ranks (W+ = 14 + 15), so
    # p ~ 0.06 and the verdict must not fall back to "no significant difference". (A 2x
    # gap keeps the set-up intact when the host slows a single sample by half.)
    loops, hit = 200, {3, 9}
    c = compare({"baseline": _disturbed(1000.0, 6000.0, hit, loops),
                 "cand": _disturbed(2000.0, 2000.0, hit, loops)},
                rounds=15, loops=loops, warmup=0, min_time_s=0.002)
    r = c.results["cand"]
    ratios = c.measurements["baseline"].samples_ns / c.measurements["cand"].samples_ns
    assert ratios[3] > 1.0 and ratios[9] > 1.0, ratios  # the disturbed rounds are there
    # The oracle is the sign test on the pairs as they came out: on a quiet host 13 of 15
    # say "slower" (p = 0.007); a busy host may disturb a further round, and the verdict
    # must still follow the pairs, never the signed-rank test the outliers mislead.
    slower = int(np.sum(ratios < 1.0))
    p_sign = sps.binomtest(slower, len(ratios)).pvalue
    if p_sign < 0.05:
        assert r.speedup_ci is not None and r.speedup_ci[1] < 1.0
        assert r.speedup < 0.6
        assert r.verdict == "slower", (slower, r.p_value, r.speedup_ci)
    else:
        assert r.verdict == NO_DIFF, (slower, r.p_value)


# -- multiple testing -------------------------------------------------------------------------
def _three_candidates(correction: str) -> Comparison:
    return compare(
        {
            "baseline": _core.make_spin(1000.0),
            "same": _core.make_spin(1000.0),
            "close": _core.make_spin(1020.0),
            "slow": _core.make_spin(1200.0),
        },
        correction=correction, rounds=12, min_time_s=0.002,
    )


def _raw(c: Comparison) -> dict[str, SampleComparison]:
    """Uncorrected paired comparisons, recomputed from the samples (sample i = round i)."""
    base = c.measurements[c.baseline].samples_ns
    return {name: compare_samples(base, c.measurements[name].samples_ns, paired=True)
            for name in c.results}


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_correction_matches_adjust_pvalues(correction: str) -> None:
    c = _three_candidates(correction)
    assert c.correction == correction
    raw = _raw(c)
    adjusted = adjust_pvalues([r.p_value for r in raw.values()], method=correction)
    for (name, r), p in zip(raw.items(), adjusted):
        got = c.results[name]
        assert got.p_value == pytest.approx(float(p), rel=1e-12, abs=0.0)
        assert got.p_value >= r.p_value
        assert got.p_wilcoxon == r.p_wilcoxon  # the secondary p-value stays unadjusted
        want = r.with_p_value(float(p)).to_dict()  # verdict re-judged
        taken_back = [w for w in got.warnings if "not once p is corrected" in w]
        assert taken_back == ([] if want["verdict"] == r.verdict else taken_back[:1])
        assert {**got.to_dict(), "warnings": want["warnings"]} == want


def test_correction_none_leaves_p_values_alone() -> None:
    c = _three_candidates("none")
    for name, r in _raw(c).items():
        assert c.results[name].to_dict() == r.to_dict()
        assert c.results[name].p_value == r.p_value


def test_a_verdict_the_correction_takes_back_says_so() -> None:
    # Worked by hand: 12 paired rounds, 10 with the candidate 4% faster and 2 with it 1%
    # slower. The exact sign test gives p = 2 * P(Bin(12, 1/2) >= 10) = 2 * 79/4096 = 0.0386
    # and the 96% sign interval of the median log-ratio is [d(3), d(10)] = [log 1.04,
    # log 1.04], clear of 1: "faster" on its own. A second candidate with p = 1 makes Holm's
    # correction double the smaller p to 0.0771 >= 0.05: no verdict, and the table must say
    # why its interval still lies clear of 1.
    from fastbench.comparison.judging import _corrected

    base = np.full(12, 1040.0)
    fast = np.array([1000.0] * 10 + [1050.4] * 2)
    same = base.copy()
    alone = compare_samples(base, fast, paired=True)
    assert alone.p_value == pytest.approx(2 * 79 / 4096, rel=1e-9)
    assert alone.verdict == "faster"
    assert alone.speedup_ci is not None and alone.speedup_ci[0] > 1.0
    got = _corrected({"fast": alone, "same": compare_samples(base, same, paired=True)}, "holm")
    r = got["fast"]
    assert r.p_value == pytest.approx(4 * 79 / 4096, rel=1e-9)
    assert r.verdict == NO_DIFF
    assert r.speedup_ci == alone.speedup_ci
    assert [w for w in r.warnings if "not once p is corrected for 2 candidates" in w]
    assert not [w for w in got["same"].warnings if "corrected" in w]
    # Beside a candidate faster in all 12 rounds (p = 2/4096), Holm multiplies the smaller
    # p by 2 and the larger by 1: 0.0386 stays below 0.05, and nothing is added.
    every = compare_samples(base, np.full(12, 1000.0), paired=True)
    kept = _corrected({"fast": alone, "every": every}, "holm")["fast"]
    assert kept.p_value == pytest.approx(alone.p_value, rel=1e-9)
    assert kept.verdict == "faster" and kept.warnings == alone.warnings


# -- time budget ------------------------------------------------------------------------------
def test_max_time_ends_the_rounds_early() -> None:
    c = compare({"baseline": _core.make_spin(1000.0), "cand": _core.make_spin(1000.0)},
                rounds=10_000, min_time_s=0.002, max_time_s=0.1)
    assert c.stop_reason == "max_time_s"
    assert 1 <= c.rounds < 10_000
    for m in c.measurements.values():
        assert m.n == c.rounds
        assert m.budget_exhausted
    for r in c.results.values():
        assert r.n_a == r.n_b == c.rounds
    assert "the time budget ended the run" in str(c)


def test_max_time_not_reached() -> None:
    c = compare({"baseline": _noop, "cand": _noop}, rounds=6, min_time_s=0.002, max_time_s=60.0)
    assert (c.stop_reason, c.rounds) == ("rounds", 6)


# -- statements -------------------------------------------------------------------------------
def test_statement_variants_with_setup_and_globals() -> None:
    data = list(range(300))
    c = compare(
        {"sum": "sum(data)", "loop": "t = 0\nfor x in data:\n    t += x"},
        baseline="sum", setup="import math", globals={"data": data},
        rounds=8, min_time_s=0.002,
    )
    for name in ("sum", "loop"):
        assert c.measurements[name].call_floor_kind == "statement"
        assert c.measurements[name].n == 8
    assert c.results["loop"].verdict == "slower"  # a Python loop over 300 ints vs sum()
    assert c.results["loop"].speedup < 1.0


def test_statement_and_callable_mixed() -> None:
    c = compare({"baseline": "pass", "fn": _core.make_spin(1000.0)}, rounds=6, min_time_s=0.002)
    assert c.measurements["baseline"].call_floor_kind == "statement"
    assert c.measurements["fn"].call_floor_kind == "native"


def test_statement_syntax_error() -> None:
    with pytest.raises(SyntaxError):
        compare({"baseline": "pass", "bad": "x = "}, rounds=6, min_time_s=0.002)


# -- the record -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return compare({"baseline": _core.make_spin(1000.0), "slow": _core.make_spin(1200.0),
                    "noop": _noop}, rounds=8, min_time_s=0.002)


def test_to_dict_from_dict_round_trip(comparison: Comparison) -> None:
    data = comparison.to_dict()
    through_json = json.loads(json.dumps(data, allow_nan=False))
    for restored in (Comparison.from_dict(data), Comparison.from_dict(through_json)):
        assert restored.to_dict() == data
        assert restored.verdicts == comparison.verdicts
        assert str(restored) == str(comparison)
        for name, m in comparison.measurements.items():
            assert np.array_equal(restored.measurements[name].samples_ns, m.samples_ns)


def test_from_dict_missing_key(comparison: Comparison) -> None:
    data = comparison.to_dict()
    del data["baseline"]
    with pytest.raises(ValueError, match="baseline"):
        Comparison.from_dict(data)


def test_save_load_round_trip(comparison: Comparison, tmp_path: Path) -> None:
    path = tmp_path / "ab.json"
    fastbench.save(comparison, path)
    assert json.loads(path.read_text(encoding="utf-8"))["kind"] == "comparison"
    loaded = fastbench.load(path)
    assert isinstance(loaded, Comparison)
    assert loaded.to_dict() == comparison.to_dict()


def test_load_any_refuses_a_comparison(comparison: Comparison, tmp_path: Path) -> None:
    path = tmp_path / "ab.json"
    fastbench.save(comparison, path)
    with pytest.raises(fastbench.ResultsFileError, match="comparison"):
        fastbench.load_any(path)


def test_str_names_every_variant_and_verdict(comparison: Comparison) -> None:
    text = str(comparison)
    assert text.startswith("baseline: baseline (paired over 8 interleaved rounds")
    assert "holm-corrected p" in text
    for name in comparison.measurements:
        assert name in text
    for verdict in comparison.verdicts.values():
        assert verdict in text
    assert comparison.verdicts["noop"] == "faster"


# -- saved measurements -----------------------------------------------------------------------
_RNG = np.random.default_rng(2024)
BASE = _RNG.lognormal(np.log(1000.0), 0.03, 40)
SLOWER = _RNG.lognormal(np.log(1100.0), 0.03, 40)  # 10% slower
FASTER = _RNG.lognormal(np.log(1000.0 / 1.1), 0.03, 35)  # 10% faster


@pytest.mark.parametrize(("cand", "verdict"), [(SLOWER, "slower"), (FASTER, "faster")])
def test_compare_measurements_known_shift(cand: Any, verdict: str) -> None:
    # Two single runs, 10% apart, on a machine whose runs vary by 2%.
    base_m, cand_m = _synthetic(BASE), _synthetic(cand)
    c = compare_measurements(base_m, {"cand": cand_m}, baseline_name="base", run_variation=0.02)
    assert (c.baseline, c.paired, c.stop_reason) == ("base", False, "saved")
    assert c.rounds == 1  # one run a side
    assert list(c.measurements) == ["base", "cand"]
    r = c.results["cand"]
    assert r.verdict == verdict
    assert not r.paired and r.level == "variation" and r.test == "t against run-to-run variation"
    assert r.speedup == pytest.approx(np.median(BASE) / np.median(cand), rel=1e-12)
    # The difference of the log medians against two runs' variation plus each run's own
    # standard error (its 95% interval / 2 / 1.96), normal since 2% is given, not estimated.
    se = np.sqrt(2 * 0.02**2 + (base_m.rel_ci / 1.959964) ** 2 + (cand_m.rel_ci / 1.959964) ** 2)
    d = np.log(np.median(BASE) / np.median(cand))
    assert r.p_value == pytest.approx(2 * sps.norm.sf(abs(d) / se), rel=1e-9)
    assert "separate runs, judged against a run-to-run variation of 2.0%" in str(c)


def test_compare_measurements_of_single_runs_without_a_known_variation_cannot_tell() -> None:
    c = compare_measurements(_synthetic(BASE), {"cand": _synthetic(SLOWER)})
    assert c.verdicts == {"cand": "cannot tell"}
    assert "run-to-run variation on this machine unknown" in str(c)
    assert "save another result of each version" in str(c)
    assert "`fastbench variation`" in str(c)
    assert "identity unknown for the baseline and candidate" in str(c)  # built by hand


def test_compare_measurements_leaves_out_interference_phases() -> None:
    # The baseline ran 60% of its time in a phase 1.5x slower, in whole windows;
    # the candidate is 10% slower than the baseline's quiet level.
    rng = np.random.default_rng(5)
    base = rng.lognormal(np.log(1050.0), 0.01, 3000)  # ~1.05 ms samples: windows of 10
    base[500:2300] *= 1.5
    cand = rng.lognormal(np.log(1155.0), 0.01, 3000)
    c = compare_measurements(_synthetic(base), {"cand": _synthetic(cand)}, baseline_name="base",
                             run_variation=0.02)
    quiet = c.measurements["base"].quiet_samples_ns
    assert quiet.size == 1200
    r = c.results["cand"]
    assert r.speedup == pytest.approx(np.median(quiet) / np.median(cand), rel=1e-4)
    assert r.speedup == pytest.approx(1 / 1.1, rel=0.01)
    assert r.verdict == "slower"
    assert np.median(base) > np.median(cand)  # every sample would have said "faster"


def test_compare_measurements_several_candidates_corrected() -> None:
    cands = {"slower": _synthetic(SLOWER), "faster": _synthetic(FASTER)}
    c = compare_measurements(_synthetic(BASE), cands, run_variation=0.02)
    single = {name: compare_measurements(_synthetic(BASE), {name: m}, run_variation=0.02)
              for name, m in cands.items()}
    raw = [single[name].results[name].p_value for name in cands]
    assert [r.p_value for r in c.results.values()] == pytest.approx(
        list(adjust_pvalues(raw)), rel=1e-12)
    assert c.verdicts == {"slower": "slower", "faster": "faster"}


def test_compare_measurements_needs_candidates() -> None:
    with pytest.raises(ValueError, match="candidate"):
        compare_measurements(_synthetic(BASE), {})


def test_compare_measurements_candidate_named_like_baseline() -> None:
    with pytest.raises(ValueError, match="'base'"):
        compare_measurements(_synthetic(BASE), {"base": _synthetic(SLOWER)}, baseline_name="base")


def test_compare_measurements_of_a_replaced_copy_sees_its_samples() -> None:
    # A copy made with dataclasses.replace after the original's figures were computed: a
    # 2x slowdown must be found, not the original's cached median.
    from dataclasses import replace

    base = _synthetic(BASE)
    assert base.median_ns == pytest.approx(float(np.median(BASE)))  # fills its cache
    slower = replace(base, samples_ns=BASE * 2.0)
    c = compare_measurements(base, {"double": slower}, baseline_name="base", run_variation=0.02)
    r = c.results["double"]
    assert r.speedup == pytest.approx(0.5, rel=1e-12)
    assert r.verdict == "slower"
    assert base.median_ns == pytest.approx(float(np.median(BASE)))


@pytest.mark.parametrize(("baseline", "candidates", "message"), [
    (5, {"cand": None}, "^baseline must be a Measurement .*got int$"),
    ({"base": None}, {}, "^baseline must be a Measurement .*got dict$"),
    (None, {}, "^baseline must be a Measurement .*got NoneType$"),
    ("BASE", [], "^baseline must be a Measurement .*got str$"),
])
def test_compare_measurements_rejects_a_baseline_that_is_not_a_measurement(
        baseline: Any, candidates: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        compare_measurements(baseline, candidates)


def test_compare_measurements_rejects_candidates_that_are_not_measurements() -> None:
    base = _synthetic(BASE)
    with pytest.raises(TypeError, match=r"^candidates must be a mapping .*got Measurement$"):
        compare_measurements(base, _synthetic(SLOWER))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^candidate 'cand' must be a Measurement, got list$"):
        compare_measurements(base, {"cand": list(SLOWER)})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"^candidate names must be str, got int 1$"):
        compare_measurements(base, {1: _synthetic(SLOWER)})  # type: ignore[dict-item]


def test_compare_warmup_stops_at_the_time_budget() -> None:
    # Each variant's warmup of 10**12 samples would run for days; the budget ends it. The
    # callables raise after 30 s so that a warmup ignoring the budget fails instead of hanging.
    deadline = time.monotonic() + 30.0

    def fn() -> None:
        if time.monotonic() > deadline:
            raise RuntimeError("the warmup ran past the time budget")

    c = compare({"baseline": fn, "same": fn}, warmup=10**12, rounds=8, loops=100,
                max_time_s=0.3)
    for m in c.measurements.values():
        assert 1 <= len(m.warmup_samples_ns) < 10**12


def test_compare_rounds_beyond_two_to_the_forty_name_the_argument() -> None:
    with pytest.raises(ValueError, match="rounds"):
        compare({"baseline": _noop, "same": _noop}, rounds=2**64)


def test_separate_workers_that_find_nothing_name_the_pairing_that_could() -> None:
    from fastbench.comparison.judging import _with_rounds_hint

    def runs(scale: float) -> Measurement:
        return Measurement.from_runs([_synthetic(BASE * scale * f)
                                      for f in (1.0, 1.02, 0.99, 1.01, 0.98)])

    base = runs(1.0)
    # How whole results vary here, as replicates of identical code would teach it.
    same = compare_measurements(base, {"same": runs(1.001)}, run_variation=0.01).results["same"]
    slower = compare_measurements(base, {"slow": runs(1.5)}, run_variation=0.01).results["slow"]
    assert (same.verdict, slower.verdict) == (NO_DIFF, "slower")
    # Without it, results measured apart cannot be told apart, however their runs agree.
    unknown = compare_measurements(base, {"slow": runs(1.5)}).results["slow"]
    assert unknown.verdict == "cannot tell"
    # Saved results of several runs that find nothing point to the paired design.
    assert "--pairing rounds" in same.warnings[-1] and "one invocation" in same.warnings[-1]
    assert "--versions" in same.warnings[-1]
    assert not any("--pairing rounds" in w for w in slower.warnings)
    hinted = _with_rounds_hint(same)
    assert hinted.warnings[:-1] == same.warnings
    assert "pairing='rounds'" in hinted.warnings[-1]
    assert _with_rounds_hint(slower) is slower
    # A single run a side says "cannot tell" with the processes it needs, not this hint.
    single = compare_measurements(_synthetic(BASE), {"same": _synthetic(BASE * 1.001)},
                                  run_variation=0.03).results["same"]
    assert not any("--pairing rounds" in w for w in single.warnings)


def test_the_first_variant_is_the_baseline_by_default() -> None:
    """As the tour writes it: compare({"a": f, "b": g}) judges b against a (pyperf's order,
    and the course's baseline_time / optimized_time)."""
    data = list(range(200))
    c = compare({"a": lambda: sorted(data), "b": lambda: sorted(data, reverse=True)},
                rounds=8, min_time_s=0.0005)
    assert c.baseline == "a" and list(c.results) == ["b"]
    with pytest.raises(ValueError, match="baseline 'z' is not among the variants"):
        compare({"a": len, "b": len}, baseline="z", rounds=6)


def test_a_corrected_p_never_turns_cannot_tell_into_a_verdict() -> None:
    """Holm over two candidates recomputes each verdict from its corrected p; one that could
    not be told (no variation known for separate results) stays "cannot tell"."""
    def runs(scale: float) -> Measurement:
        return Measurement.from_runs([_synthetic(BASE * scale * f)
                                      for f in (1.0, 1.02, 0.99, 1.01, 0.98)])

    c = compare_measurements(runs(1.0), {"same": runs(1.001), "slow": runs(1.5)})
    assert c.verdicts == {"same": "cannot tell", "slow": "cannot tell"}
    assert all(r.speedup_ci is None for r in c.results.values())
