"""Tests for fastbench.profiling.diff on synthetic profiles with known truth: a module made
20% slower is flagged and the unchanged items are not, an A/A pair flags nothing, in the
large majority of seeded trials; the test, interval and correction against scipy and
hand-worked values; the floor that keeps small changes out; items new in one profile.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from _synthetic_profiles import MODEL, OVERHEAD, synthetic_profile
from fastbench.profiling.diff import MIN_CHANGE, ProfileDiff, diff
from fastbench.profiling.result import NOT_IN_OP, OUTSIDE, Cell, Profile

TRIALS = 200
# Items whose time does not change when "encoder.mlp" slows down (self times: its parent
# "encoder" keeps its own ops).
UNCHANGED = {("module", m) for m in ("encoder", "encoder.attn", "head", OUTSIDE)} | {
    ("op", o) for o in ("aten::_softmax", "aten::native_layer_norm", "aten::copy_",
                        NOT_IN_OP)} | {("family", f) for f in ("normalization",
                                                               "data movement", NOT_IN_OP)}


def _flagged(d: ProfileDiff) -> set[tuple[str, str]]:
    return {(c.by, c.name) for c in d.flagged}


def test_a_module_slowed_20_percent_is_flagged_in_most_trials() -> None:
    found = clean = 0
    for seed in range(TRIALS):
        rng = np.random.default_rng(seed)
        n_a, n_b = (int(n) for n in rng.integers(20, 31, 2))
        a = synthetic_profile(rng, steps=n_a, cv=0.03)
        b = synthetic_profile(rng, steps=n_b, cv=0.03, slower={"encoder.mlp": 1.2})
        flagged = _flagged(diff(a, b))
        found += ("module", "encoder.mlp") in flagged
        clean += not flagged & UNCHANGED
    # Measured: 200 of 200 found, 200 of 200 without a false flag.
    assert found >= 0.9 * TRIALS
    assert clean >= 0.9 * TRIALS


def test_an_aa_pair_flags_nothing_in_most_trials() -> None:
    quiet = 0
    for seed in range(TRIALS):
        rng = np.random.default_rng(10_000 + seed)
        n_a, n_b = (int(n) for n in rng.integers(20, 31, 2))
        d = diff(synthetic_profile(rng, steps=n_a), synthetic_profile(rng, steps=n_b))
        quiet += not d.flagged
    # Holm keeps the chance of any false flag per pair under 5%: measured 199 of 200.
    assert quiet >= 0.9 * TRIALS


def test_the_slowed_module_reads_right() -> None:
    rng = np.random.default_rng(7)
    a = synthetic_profile(rng, steps=25)
    b = synthetic_profile(rng, steps=25, slower={"encoder.mlp": 1.2})
    d = diff(a, b, labels=("main", "branch"))
    (mlp,) = [c for c in d.changes if c.by == "module" and c.name == "encoder.mlp"]
    truth_a = sum(m for _, mod, _, m in MODEL if mod == "encoder.mlp")
    assert mlp.ratio is not None and mlp.ratio_ci is not None
    assert mlp.ratio_ci[0] < 1.2 < mlp.ratio_ci[1]
    assert mlp.delta_ci is not None and mlp.delta_ci[0] < 0.2 * truth_a < mlp.delta_ci[1]
    assert mlp.verdict == "slower" and mlp.label == "module: encoder.mlp"
    assert mlp.share_b > mlp.share_a
    assert d.step is not None and d.step.flagged and d.step.delta_s > 0
    text = str(d)
    assert text.startswith("profile diff: main (25 steps) -> branch (25 steps)\n  step ")
    assert "module: encoder.mlp" in text
    tested = len(d.changes) - 1
    rest = tested - len([c for c in d.flagged if c.by != "step"])
    assert f"{tested} items tested (" in text
    assert f"the other {rest} showed no significant change of at least 1.0% of main's step" \
        in text


def test_welch_interval_and_ratio_against_scipy_and_hand_formulas() -> None:
    rng = np.random.default_rng(1)
    a = synthetic_profile(rng, steps=12, cv=0.05)
    b = synthetic_profile(rng, steps=17, cv=0.05, slower={"head": 1.1})
    d = diff(a, b, alpha=0.1)
    xa, xb = a.times("module")["head"], b.times("module")["head"]
    (head,) = [c for c in d.changes if c.by == "module" and c.name == "head"]
    assert head.p_value == pytest.approx(stats.ttest_ind(xa, xb, equal_var=False).pvalue,
                                         rel=1e-9)
    va, vb = np.var(xa, ddof=1) / xa.size, np.var(xb, ddof=1) / xb.size
    df = (va + vb) ** 2 / (va ** 2 / (xa.size - 1) + vb ** 2 / (xb.size - 1))
    half = stats.t.ppf(0.95, df) * math.sqrt(va + vb)          # a 90% interval
    delta = xb.mean() - xa.mean()
    assert head.delta_s == pytest.approx(delta, rel=1e-12)
    assert head.delta_ci == pytest.approx((delta - half, delta + half), rel=1e-9)
    assert head.ratio == pytest.approx(xb.mean() / xa.mean(), rel=1e-12)
    assert head.share_a == pytest.approx(xa.sum() / a.step_times.sum(), rel=1e-12)
    assert head.time_b_s == pytest.approx(xb.mean(), rel=1e-12)
    # The step is compared on its own times.
    assert d.step is not None
    assert d.step.p_value == pytest.approx(
        stats.ttest_ind(a.step_times, b.step_times, equal_var=False).pvalue, rel=1e-9)


def _holm(p: list[float]) -> list[float]:
    """Holm's step-down, written out: the i-th smallest times (m - i), running maximum."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def test_p_values_are_corrected_across_every_item_tested() -> None:
    rng = np.random.default_rng(2)
    a = synthetic_profile(rng, steps=20)
    b = synthetic_profile(rng, steps=20, slower={"encoder.attn": 1.05})
    d = diff(a, b)
    raw = [c.p_value for c in d.changes]
    assert [c.p_adjusted for c in d.changes] == pytest.approx(_holm(raw), rel=1e-12)
    none = diff(a, b, correction="none")
    assert [c.p_adjusted for c in none.changes] == [c.p_value for c in none.changes]
    bh = diff(a, b, correction="bh")
    assert [c.p_adjusted for c in bh.changes] == pytest.approx(
        list(stats.false_discovery_control(raw, method="bh")), rel=1e-9)
    # Only the tables asked for are tested, plus the step.
    only_ops = diff(a, b, by="op")
    assert {c.by for c in only_ops.changes} == {"step", "op"}
    assert len(only_ops.changes) == 1 + len(a.times("op"))


def test_a_tiny_op_changed_3_percent_is_significant_but_not_news() -> None:
    """0.1% of the step at +3%, measured very precisely: the test finds it, the floor of
    1% of the step keeps it out of the flagged changes."""
    model = (("aten::addmm", "fc", "forward", 10e-3), ("aten::add", "fc", "forward", 10e-6))
    rng = np.random.default_rng(4)

    def profile(add_factor: float) -> Profile:
        cells = []
        for op, module, phase, mean in model:
            f = add_factor if op == "aten::add" else 1.0
            cells.append(Cell(op, "", module, "", phase,
                              mean * f * rng.lognormal(0.0, 0.002, 30), calls=30))
        steps = np.sum([c.times for c in cells], axis=0)
        return Profile(tuple(cells), steps, steps, OVERHEAD)

    a, b = profile(1.0), profile(1.03)
    d = diff(a, b, by=("op",))
    (add,) = [c for c in d.changes if c.name == "aten::add"]
    assert add.p_adjusted < 1e-6 and not add.flagged
    assert abs(add.delta_s) < MIN_CHANGE * a.step_time_s
    (again,) = [c for c in diff(a, b, by=("op",), min_change=0.0).changes
                if c.name == "aten::add"]
    assert again.flagged and again.verdict == "slower"


def test_items_new_or_gone_in_one_profile() -> None:
    rng = np.random.default_rng(5)
    a = synthetic_profile(rng, steps=20)
    b = synthetic_profile(rng, steps=20)
    # B gains an op (a new dropout in "head"), and loses "aten::copy_".
    extra = Cell("aten::native_dropout", "", "head", "", "forward",
                 1e-3 * rng.lognormal(0.0, 0.03, 20), calls=20)
    kept = tuple(c for c in b.cells if c.op != "aten::copy_") + (extra,)
    steps = np.sum([c.times for c in kept], axis=0)
    b = replace(b, cells=kept, step_times=steps, profiled_step_times=steps)
    d = diff(a, b, by=("op",))
    (new,) = [c for c in d.changes if c.name == "aten::native_dropout"]
    assert new.time_a_s == 0.0 and new.share_a == 0.0 and new.ratio is None
    assert new.flagged and new.verdict == "slower"
    (gone,) = [c for c in d.changes if c.name == "aten::copy_"]
    assert gone.time_b_s == 0.0 and gone.ratio == 0.0 and gone.ratio_ci is None
    assert gone.flagged and gone.verdict == "faster"
    # Slower first, then the gains, largest first.
    order = [c.name for c in d.flagged]
    assert order.index("aten::native_dropout") < order.index("aten::copy_")
    assert [c.delta_s > 0 for c in d.flagged] == sorted((c.delta_s > 0 for c in d.flagged),
                                                        reverse=True)
    text = str(d)
    assert "new" in text.split("op: aten::native_dropout")[0].splitlines()[-1]


def test_too_few_steps_flag_nothing_and_say_so() -> None:
    rng = np.random.default_rng(6)
    a = synthetic_profile(rng, steps=5)
    b = synthetic_profile(rng, steps=5, slower={"encoder.mlp": 2.0})
    d = diff(a, b)
    assert not d.flagged
    assert "too few steps to judge: 5 and 5 (at least 6 per profile)" in d.warnings[0]
    assert "warning: too few steps" in str(d)


def test_round_trip_through_a_dict() -> None:
    rng = np.random.default_rng(8)
    d = diff(synthetic_profile(rng), synthetic_profile(rng, slower={"head": 1.3}))
    again = ProfileDiff.from_dict(d.to_dict())
    assert again == d and str(again) == str(d)


def test_bad_arguments() -> None:
    rng = np.random.default_rng(9)
    a = synthetic_profile(rng, steps=8)
    with pytest.raises(TypeError, match="b must be a fastbench Profile"):
        diff(a, a.to_dict())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="by must be one of"):
        diff(a, a, by=("op", "layer"))
    with pytest.raises(ValueError, match="by must name each table once"):
        diff(a, a, by=("op", "op"))
    with pytest.raises(ValueError, match="alpha must be in"):
        diff(a, a, alpha=1.5)
    with pytest.raises(ValueError, match="correction must be one of"):
        diff(a, a, correction="bonferroni")
    with pytest.raises(ValueError, match=r"min_change must be a fraction of the step"):
        diff(a, a, min_change=-0.1)
    with pytest.raises(TypeError, match="labels must be two str"):
        diff(a, a, labels=("A",))  # type: ignore[arg-type]
    empty = replace(a, cells=(), step_times=np.zeros(0), profiled_step_times=np.zeros(0))
    with pytest.raises(ValueError, match="a holds no step"):
        diff(empty, a)
