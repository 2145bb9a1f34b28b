"""fastbench.suite.run on variants whose truth is known: native spins of set durations (the
ordering and speedups), deterministic classifiers on synthetic labels (accuracies and their
deltas exactly), fairness checks that raise on each kind of mismatch, and the record's
round trip through a results file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fastbench
from fastbench import _core, stats
from fastbench.suite import SuiteResult, UnfairComparison, run


X = np.zeros((8, 4), dtype=np.float32)


def _quick(**kw: object) -> dict[str, object]:
    """Settings that keep a suite short: few rounds, no duration floor, no energy or memory."""
    return {"rounds": 40, "duration_s": 0.0, "warmup": 1, "memory": False, "energy": False,
            **kw}


class _Spin:
    """A callable of known duration: a native spin of ``us`` microseconds."""

    def __init__(self, us: float) -> None:
        self.us = us
        self._spin = _core.make_spin(us * 1e3)

    def __call__(self, x: object) -> np.ndarray:
        self._spin()
        return np.zeros((8, 3), dtype=np.float32)


@pytest.mark.slow
def test_spins_ordered_and_speedups_within_their_intervals() -> None:
    result = run({"base": _Spin(400), "half": _Spin(200), "same": _Spin(400)}, X,
                 baseline="base", **_quick(rounds=60))
    base, half, same = result["base"], result["half"], result["same"]
    # The spins wait on the clock: their latencies sit at or just above the set durations.
    assert base.latency.median_s >= 400e-6 * 0.98
    assert half.latency.median_s < base.latency.median_s
    # Known ratio 2 (the call's few µs of overhead pull it a little below).
    assert half.speedup.ci is not None
    assert half.speedup.ci[0] <= 2.0 * 1.01 and half.speedup.ci[1] >= 2.0 * 0.9
    assert half.speedup.verdict == "faster"
    assert same.speedup.verdict in ("no significant difference",)
    # Percentiles are ordered and each lies inside its own interval.
    for rec in (base, half, same):
        values = [rec.latency.percentile(p) for p in ("p50", "p90", "p95", "p99")]
        assert values == sorted(values)
        lo, hi = rec.latency.median_ci  # type: ignore[misc]
        assert lo <= rec.latency.median_s <= hi
    # Throughput is the batch over the mean latency of the same samples.
    t = half.throughput[8]
    assert t.samples_per_s == pytest.approx(8 / np.mean(half.latency.samples_s), rel=1e-9)
    assert t.ci is not None and t.ci[0] <= t.samples_per_s <= t.ci[1]


def _classifier(labels: np.ndarray, wrong: np.ndarray, classes: int = 3) -> object:
    """A deterministic classifier: one-hot of the true label, except on ``wrong`` examples
    where it names the next class."""
    def predict(x: np.ndarray) -> np.ndarray:
        n = x.shape[0]
        y = labels[:n].copy()
        y[wrong[:n]] = (y[wrong[:n]] + 1) % classes
        return np.eye(classes, dtype=np.float32)[y]
    return predict


def test_non_finite_outputs_are_never_counted_correct(tmp_path: Path) -> None:
    # All labels 0: the argmax of a NaN row is 0, so a model gone NaN would score 100%.
    # Here 25 of 100 rows are NaN, 5 hold an infinity (argmax 0 as well), the rest are right:
    # accuracy 70%, 30 outputs not finite, and the warning comes first.
    n = 100
    labels = np.zeros(n, dtype=np.int64)

    def broken(x: np.ndarray) -> np.ndarray:
        out = np.eye(3, dtype=np.float32)[np.zeros(x.shape[0], dtype=np.int64)]
        out[:25] = np.nan
        out[25:30, 1] = np.inf
        out[25:30, 0] = np.inf
        return out

    def good(x: np.ndarray) -> np.ndarray:
        return np.eye(3, dtype=np.float32)[np.zeros(x.shape[0], dtype=np.int64)]

    xs = np.zeros((n, 4), dtype=np.float32)
    r = run({"base": good, "broken": broken}, xs[:8], baseline="base", eval_data=(xs, labels),
            **_quick(rounds=6))
    m = r["broken"].metric
    assert m is not None and r["base"].metric is not None
    assert r["base"].metric.value == 1.0 and r["base"].metric.non_finite == 0
    assert m.value == pytest.approx(0.70) and m.non_finite == 30 and m.examples == n
    assert r.warnings[0].startswith("broken: 30 of 100 outputs are not finite")
    fastbench.save(r, tmp_path / "suite.json")
    again = fastbench.load(tmp_path / "suite.json")
    assert again["broken"].metric.non_finite == 30
    assert again.warnings == r.warnings


def test_accuracies_and_paired_delta_of_known_classifiers() -> None:
    rng = np.random.default_rng(3)
    n = 2000
    labels = rng.integers(0, 3, n)
    order = rng.permutation(n)
    wrong_base = np.zeros(n, bool)
    wrong_base[order[:300]] = True          # 85% right
    wrong_better = wrong_base.copy()
    wrong_better[order[:100]] = False       # the same examples, 100 of them fixed: 90% right
    xs = np.zeros((n, 4), dtype=np.float32)
    variants = {"base": _classifier(labels, wrong_base), "better": _classifier(labels, wrong_better)}
    result = run(variants, xs[:8], baseline="base", eval_data=(xs, labels), **_quick(rounds=10))
    base, better = result["base"].metric, result["better"].metric
    assert base is not None and better is not None
    assert base.name == "accuracy" and base.examples == n
    assert base.value == pytest.approx(0.85) and better.value == pytest.approx(0.90)
    assert better.delta == pytest.approx(0.05)
    lo, hi = better.delta_ci  # type: ignore[misc]
    # Paired: only the 100 fixed examples differ, so the delta's interval is narrow and
    # excludes 0 (sd of a 0/1 difference with p = 0.05: sqrt(0.05 * 0.95 / 2000) = 0.0049).
    assert lo <= 0.05 <= hi and lo > 0.03 and hi < 0.07
    assert base.ci is not None and base.ci[0] < 0.85 < base.ci[1]
    # Normalized: the score divides by 1 + |delta|, the delta a fraction (1.05), or in
    # points (1 + 5) when asked.
    norm = result.normalized("better")
    assert norm.accuracy_delta == pytest.approx(0.05)
    assert norm.efficiency == pytest.approx(norm.speedup.value / 1.05)
    points = run(variants, xs[:8], baseline="base", eval_data=(xs, labels), delta_unit="points",
                 **_quick(rounds=10)).normalized("better")
    assert points.efficiency == pytest.approx(points.speedup.value / 6.0)


def test_custom_metric_float_and_per_example() -> None:
    def quality(variant: object, data: np.ndarray) -> float:
        return 2.0 if variant is fast else 1.0

    def per_example(variant: object, data: np.ndarray) -> np.ndarray:
        return data * (2.0 if variant is fast else 1.0)

    fast = _Spin(20)
    variants = {"baseline": _Spin(40), "fast": fast}
    r = run(variants, X, eval_data=np.arange(1.0, 101.0), metric=quality, **_quick(rounds=8))
    assert r["fast"].metric.value == 2.0 and r["fast"].metric.ci is None  # type: ignore[union-attr]
    assert r["fast"].metric.delta == 1.0  # type: ignore[union-attr]
    r = run(variants, X, eval_data=np.arange(1.0, 101.0), metric=per_example, **_quick(rounds=8))
    m = r["fast"].metric
    assert m is not None and m.name == "per_example" and m.examples == 100
    assert m.value == pytest.approx(101.0) and m.delta == pytest.approx(50.5)


class _Fake:
    """An array-like input of given shape, dtype and device (what the checks read)."""

    def __init__(self, shape: tuple[int, ...], dtype: str = "float32", device: str = "cpu"):
        self.shape, self.dtype, self.device = shape, dtype, device


def _echo(x: object) -> object:
    return x


@pytest.mark.parametrize("kind, other", [
    ("shape", _Fake((8, 5))),
    ("dtype", _Fake((8, 4), "float64")),
    ("batch", _Fake((16, 4))),
    ("device", _Fake((8, 4), device="cuda:0")),
])
def test_fairness_raises_on_each_kind_unless_allowed(kind: str, other: _Fake) -> None:
    variants = {"baseline": _echo, "other": _echo}
    with pytest.raises(UnfairComparison, match=kind if kind != "shape" else "shapes"):
        run(variants, _Fake((8, 4)), variant_inputs={"other": other}, **_quick(rounds=2))
    r = run(variants, _Fake((8, 4)), variant_inputs={"other": other}, allow={"other": kind},
            **_quick(rounds=6))
    assert kind in r.allowed["other"]
    assert f"other differs from the baseline in {kind}" in str(r)


def test_fairness_threads_and_output_dtype_with_torch() -> None:
    torch = pytest.importorskip("torch")
    lin = torch.nn.Linear(4, 3).eval()
    x = torch.zeros(8, 4)
    before = torch.get_num_threads()

    def changes_threads(t: object) -> object:
        torch.set_num_threads(1 if before > 1 else 2)
        return lin(t)

    with pytest.raises(UnfairComparison, match="threads"):
        run({"baseline": lin, "t": changes_threads}, x, **_quick(rounds=2))
    assert torch.get_num_threads() == before

    def bf16(t: object) -> object:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return lin(t)

    with pytest.raises(UnfairComparison, match="output dtypes float32 vs bfloat16"):
        run({"baseline": lin, "bf16": bf16}, x, **_quick(rounds=2))
    r = run({"baseline": lin, "bf16": bf16}, x, allow={"bf16": "dtype"}, **_quick(rounds=6))
    assert r.allowed == {"bf16": ("dtype",)}


# torch.ao.quantization's dynamic quantization warns that it moves to torchao and that
# quantized tensors are deprecated; it still runs.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_module_facts_from_the_analyzer_and_state_dict() -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10)).eval()
    q = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    x = torch.randn(4, 256)
    r = run({"fp32": model, "int8": q}, x, baseline="fp32", allow={"int8": "dtype"},
            **_quick(rounds=6, memory=True, energy=True))
    fp = r["fp32"]
    params = 256 * 256 + 256 + 256 * 10 + 10
    assert fp.params == params and fp.memory.param_bytes == 4 * params
    # One forward at batch 4: 2 FLOPs per MAC of the two matrix products.
    assert fp.macs == 4 * (256 * 256 + 256 * 10) and fp.flops is not None and fp.flops >= 2 * fp.macs
    assert fp.memory.serialized_bytes is not None and fp.memory.serialized_bytes > 4 * params
    # The int8 copy ships its weights in a quarter of the bytes (plus scales, biases kept in
    # float and the pickle's own overhead): well over 2x smaller.
    n = r.normalized("int8")
    assert n.compression is not None and 2.5 < n.compression < 4.0
    # The footprint: the int8 weights are packed, not parameters, and count (int8 weights,
    # float32 biases, a scale and zero point per layer); the activation peak of a call is
    # measured, the analyzer's estimate beside it (batch 4: two 4 x 256 float tensors).
    i8 = r["int8"].memory
    assert i8.param_bytes == 0
    assert i8.packed_bytes == (256 * 256 + 256 * 10) + 4 * (256 + 10) + 2 * 12
    assert fp.memory.activation_estimate_bytes == 2 * 4 * 256 * 4
    assert fp.memory.activation_peak_bytes is not None
    assert fp.memory.activation_peak_bytes >= 4 * 10 * 4          # the output at least
    assert fp.memory.footprint_bytes == 4 * params + fp.memory.activation_peak_bytes
    assert n.memory_reduction is not None and n.memory_reduction > 2.0
    assert n.memory_reduction_basis == "footprints: weights + measured activation peak"
    # No RAPL in a VM: the energy is an estimate, and says so.
    e = fp.energy
    assert e is not None
    assert e.estimated == (e.method == "estimated")
    assert ("estimated" in e.text()) == e.estimated


def test_pareto_knee_and_round_trip(tmp_path: object) -> None:
    rng = np.random.default_rng(0)
    n = 400
    labels = rng.integers(0, 3, n)
    order = rng.permutation(n)

    def wrong(k: int) -> np.ndarray:
        w = np.zeros(n, bool)
        w[order[:k]] = True
        return w

    xs = np.zeros((n, 4), dtype=np.float32)

    def variant(us: float, k: int) -> object:
        spin = _core.make_spin(us * 1e3)
        predict = _classifier(labels, wrong(k))

        def call(x: np.ndarray) -> np.ndarray:
            spin()
            return predict(x)  # type: ignore[operator]
        return call

    # (latency, accuracy): slow/accurate, mid, fast/inaccurate, and one slower and less
    # accurate than both big and mid (by margins no noise can reverse).
    variants = {"big": variant(600, 20), "mid": variant(300, 40), "small": variant(100, 120),
                "bad": variant(800, 80)}
    r = run(variants, xs[:8], baseline="big", eval_data=(xs, labels), **_quick(rounds=30))
    assert r.pareto(("latency", "accuracy")) == ["big", "mid", "small"]
    assert r.dominated(("latency", "accuracy"))["bad"] == ["big", "mid"]
    path = tmp_path / "suite.json"  # type: ignore[operator]
    fastbench.save(r, path)
    back = fastbench.load(path)
    assert isinstance(back, SuiteResult)
    assert back.pareto(("latency", "accuracy")) == ["big", "mid", "small"]
    assert back["mid"].latency.samples_s == r["mid"].latency.samples_s
    assert json.loads(path.read_text())["kind"] == "suite"
    assert str(back).splitlines()[0] == str(r).splitlines()[0]


def test_arguments_checked_before_anything_runs() -> None:
    calls = []

    def f(x: object) -> None:
        calls.append(x)

    with pytest.raises(ValueError, match="baseline 'nope'"):
        run({"a": f}, X, baseline="nope")
    with pytest.raises(TypeError, match="variant 'b' must be a callable"):
        run({"baseline": f, "b": 3}, X)
    with pytest.raises(ValueError, match="allow: unknown kind 'colour'"):
        run({"baseline": f}, X, allow="colour")
    with pytest.raises(ValueError, match="metric needs eval_data"):
        run({"baseline": f}, X, metric=lambda v, d: 1.0)
    with pytest.raises(ValueError, match="pass batch_sizes"):
        run({"baseline": f}, lambda b: X)
    with pytest.raises(ValueError, match="estimator must be one of median, hodges-lehmann"):
        run({"baseline": f}, X, estimator="mean")
    assert calls == []


@pytest.mark.parametrize("estimator", ["hodges-lehmann", "median"])
def test_speedup_is_the_chosen_estimate_of_the_rounds_log_ratios(estimator: str) -> None:
    # Round i of the two variants is a pair: the speedup and its interval are those of the
    # per-round log-ratios, worked out here from the recorded samples.
    kw = {} if estimator == "hodges-lehmann" else {"estimator": estimator}
    result = run({"base": _Spin(120), "fast": _Spin(100)}, X, baseline="base",
                 **_quick(rounds=30, **kw))
    r = np.log(np.asarray(result["base"].latency.samples_s)
               / np.asarray(result["fast"].latency.samples_s))
    est = stats.hodges_lehmann(r) if estimator == "hodges-lehmann" else float(np.median(r))
    lo, hi = (stats.signed_rank_ci(r) if estimator == "hodges-lehmann"
              else stats.median_ci(r))  # type: ignore[misc]
    speedup = result["fast"].speedup
    assert speedup.value == pytest.approx(np.exp(est), rel=1e-12)
    assert speedup.ci == pytest.approx((np.exp(lo), np.exp(hi)), rel=1e-12)
    assert result.settings["estimator"] == estimator


def test_batch_sizes_from_a_fixed_input_and_from_a_builder() -> None:
    seen: list[int] = []

    def f(x: np.ndarray) -> None:
        seen.append(x.shape[0])

    r = run({"baseline": f}, np.zeros((3, 2)), batch_sizes=[1, 5], **_quick(rounds=3))
    assert set(seen) == {1, 5} and set(r["baseline"].throughput) == {1, 5}
    seen.clear()
    run({"baseline": f}, lambda b: np.zeros((b, 2)), batch_sizes=[2, 4], **_quick(rounds=3))
    assert set(seen) == {2, 4}


class _Cached:
    """A call whose cost depends on what ran before it, as a model whose weights another
    model's call evicted: 300 µs after another variant's call, 100 µs after its own."""

    last: list[object] = [None]

    def __init__(self) -> None:
        self._cold, self._warm = _core.make_spin(300e3), _core.make_spin(100e3)

    def __call__(self, x: object) -> None:
        (self._warm if _Cached.last[0] is self else self._cold)()
        _Cached.last[0] = self


@pytest.mark.parametrize("settle, low_us, high_us", [(0, 300, 330), (1, 100, 130)])
def test_settle_calls_time_a_variant_after_its_own_call(settle: int, low_us: float,
                                                        high_us: float) -> None:
    # Interleaved rounds of three put another variant's call before a timed call (cold) in
    # 8 of 9 calls: a random order puts a variant last in one round and first in the next in
    # 1 of 9; one settling call per round puts the variant's own call there (warm). Medians sit at
    # the spin set for that state, a little above for the call's overhead.
    r = run({"baseline": _Cached(), "b": _Cached(), "c": _Cached()}, X, settle_calls=settle,
            **_quick(rounds=20))
    for name in ("baseline", "b", "c"):
        assert low_us * 1e-6 <= r[name].latency.median_s <= high_us * 1e-6
    assert r.settings["settle_calls"] == settle


class _AfterBig:
    """Variants sharing a cache: a call right after the big variant's runs cold (``cold_us``),
    after any other warm (``us``)."""

    last: list[object] = [None]

    def __init__(self, us: float, cold_us: float | None = None, big: bool = False) -> None:
        self.big = big
        self._warm = _core.make_spin(us * 1e3)
        self._cold = _core.make_spin((cold_us or us) * 1e3)

    def __call__(self, x: object) -> np.ndarray:
        prev = _AfterBig.last[0]
        cold = isinstance(prev, _AfterBig) and prev.big and prev is not self
        (self._cold if cold else self._warm)()
        _AfterBig.last[0] = self
        return np.zeros((8, 3), dtype=np.float32)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identical_copies_after_a_big_variant_read_alike(seed: int) -> None:
    # Three identical variants (100 µs, 300 µs right after the big one's call) and a big one.
    # A fixed order rotated each round puts one of the three right after the big one in 3 of
    # 4 rounds: its lower quartile reads 300 µs against the others' 100 µs, a 3x "difference"
    # between identical code. In a fresh random order each follows the big one in about 5 of
    # 16 calls, so every lower quartile is the warm 100 µs (a little above for the call's
    # overhead). The quartile, not the median: a host busy enough to stretch half the spins
    # (they wait on the clock, so a preemption lengthens them) moves a median, while
    # stretching only ever adds time, and a quarter of undisturbed warm calls is enough.
    r = run({"baseline": _AfterBig(100, 300), "copy1": _AfterBig(100, 300),
             "copy2": _AfterBig(100, 300), "big": _AfterBig(400, big=True)}, X, seed=seed,
            **_quick(rounds=60))

    def quartile(name: str) -> float:
        return float(np.quantile(r[name].latency.samples_s, 0.25))

    base = quartile("baseline")
    assert 100e-6 <= base <= 160e-6
    for name in ("copy1", "copy2"):
        assert 0.8 <= quartile(name) / base <= 1.25, (name, r[name].latency)
    assert r.settings["order"] == "a fresh random order each round"


def test_energy_blocks_time_per_call_and_the_note_when_it_strays() -> None:
    """A 300 µs spin's energy blocks run at least 300 µs a call (the spin waits on the clock);
    the report says so only where that time strays more than 10% from the latency median,
    with the power the blocks drew (hand-worked below)."""
    import dataclasses

    from fastbench.suite import result as suite_result
    from fastbench.suite.energy import Energy

    r = run({"base": _Spin(300), "half": _Spin(150)}, X, baseline="base",
            **_quick(rounds=6, energy=True))
    for name, us in (("base", 300), ("half", 150)):
        e = r[name].energy
        assert e is not None and e.seconds_per_call is not None
        assert e.seconds_per_call >= us * 1e-6
    assert suite_result.ENERGY_TIME_TOLERANCE == 0.10
    base = r["base"]
    median = base.latency.median_s

    def with_time(seconds: float) -> SuiteResult:
        energy = Energy(0.003, None, "estimated", True, "no RAPL", watts_per_core=5.0, blocks=2,
                        calls_per_block=4, seconds_per_call=seconds)
        variants = {**r.variants, "base": dataclasses.replace(base, energy=energy)}
        return dataclasses.replace(r, variants=variants)

    def notes(res: SuiteResult) -> list[str]:  # base's only: half's own times are as measured
        return [line for line in res.lines() if line.startswith("  note: base: the energy")]

    assert notes(with_time(median * 1.05)) == []
    # 3 mJ a call over 1.5 x the median: 2 / median W.
    slow = notes(with_time(median * 1.5))
    assert len(slow) == 1 and "the energy blocks ran its calls back to back" in slow[0]
    assert f"{0.003 / (median * 1.5):.3g} W" in slow[0]
    assert notes(with_time(median * 0.5)) != []


@pytest.mark.parametrize("blocks, rounds, expected", [
    (10, 100, 10), (10, 40, 8), (10, 15, 3), (10, 14, 1), (4, 100, 4), (1, 100, 1)])
def test_block_count(blocks: int, rounds: int, expected: int) -> None:
    # At least 5 rounds a block, and a t test over blocks needs 3 of them.
    from fastbench.suite.runner import block_count
    assert block_count(blocks, rounds) == expected


def _recording_modules(torch: object) -> tuple[type, list[object]]:
    """A module class whose calls put the called object on a list (kept alive there, so two
    distinct objects never share an id)."""
    calls: list[object] = []

    class Recording(torch.nn.Module):  # type: ignore[attr-defined,misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)  # type: ignore[attr-defined]

        def forward(self, x: object) -> object:
            calls.append(self)
            return self.lin(x)

    return Recording, calls


def test_each_block_times_fresh_copies_of_the_modules() -> None:
    torch = pytest.importorskip("torch")
    recording, calls = _recording_modules(torch)
    a, b = recording().eval(), recording().eval()
    r = run({"baseline": a, "b": b}, torch.zeros(8, 4), analyze=False,
            **_quick(rounds=30, blocks=3))
    assert r.settings["blocks"] == 3 and r.settings["block_rounds"] == {"8": [10, 10, 10]}
    assert r.settings["fresh_copies"] == ["baseline", "b"] and r.settings["kept"] == {}
    assert "in 3 blocks, each on fresh copies of the modules" in str(r)
    copies = [o for o in {id(o): o for o in calls}.values() if o is not a and o is not b]
    # Three copies of each module, each called for its block's 10 rounds and its warm-up.
    assert len(copies) == 6
    for c in copies:
        assert sum(o is c for o in calls) >= 10
    assert sum(_same(c, a) for c in copies) == sum(_same(c, b) for c in copies) == 3
    assert len(r["b"].latency.samples_s) == 30


def _same(copy: object, original: object) -> bool:
    return bool((copy.lin.weight == original.lin.weight).all())  # type: ignore[attr-defined]


def test_modules_block_by_default_and_callables_do_not() -> None:
    torch = pytest.importorskip("torch")
    lin = torch.nn.Linear(4, 3).eval()
    r = run({"baseline": lin, "b": lin}, torch.zeros(8, 4), analyze=False, **_quick())
    assert r.settings["blocks"] == 8  # 40 rounds: 8 blocks of 5
    s = run({"baseline": _Spin(20), "b": _Spin(20)}, X, **_quick())
    assert s.settings["blocks"] == 1 and "blocks" not in str(s).splitlines()[0]


def test_a_module_that_cannot_be_copied_is_timed_as_given_and_said() -> None:
    torch = pytest.importorskip("torch")
    recording, calls = _recording_modules(torch)

    class Stuck(recording):  # type: ignore[misc,valid-type]
        def __deepcopy__(self, memo: object) -> object:
            raise TypeError("holds a handle")

    stuck = Stuck().eval()
    r = run({"baseline": recording().eval(), "stuck": stuck}, torch.zeros(8, 4),
            analyze=False, **_quick(rounds=15, blocks=3))
    assert r.settings["fresh_copies"] == ["baseline"]
    why = "it cannot be deep-copied (TypeError: holds a handle)"
    assert r.settings["kept"] == {"stuck": why}
    assert f"timed as given in every block: stuck ({why})" in str(r)
    assert not any(isinstance(o, Stuck) and o is not stuck for o in calls)


# torch.compile's import warns of torch.jit's deprecations.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_fresh_copy_refuses_compiled_and_oversized_modules() -> None:
    torch = pytest.importorskip("torch")
    from fastbench.pytorch.suite_support import fresh_copy
    lin = torch.nn.Linear(64, 64)
    made, why = fresh_copy(lin)
    assert made is not lin and why == "" and torch.equal(made.weight, lin.weight)
    assert made.weight.data_ptr() != lin.weight.data_ptr()
    made, why = fresh_copy(lin, share=1e-12)  # 16.6 KB of weights against none to spare
    assert made is None and "more than 0% of the memory available" in why
    made, why = fresh_copy(torch.compile(lin))
    assert made is None and "torch.compile" in why


def test_the_speedup_over_blocks_is_the_mean_of_the_blocks_estimates() -> None:
    # Blocks of callables (nothing to copy): the verdict is the t test over the blocks'
    # Hodges-Lehmann estimates of their rounds' log-ratios, worked out here from the samples.
    r = run({"base": _Spin(120), "fast": _Spin(100)}, X, baseline="base",
            **_quick(rounds=30, blocks=5))
    sizes = r.settings["block_rounds"]["8"]
    assert len(sizes) == 5 and sum(sizes) == 30
    assert r.settings["kept"] == {"base": "not a module", "fast": "not a module"}
    edges = np.cumsum([0, *sizes])
    logs = np.log(np.asarray(r["base"].latency.samples_s)
                  / np.asarray(r["fast"].latency.samples_s))
    d = np.asarray([stats.hodges_lehmann(logs[i:j]) for i, j in zip(edges[:-1], edges[1:])])
    from scipy import stats as sps
    half = float(sps.t.ppf(0.975, 4)) * d.std(ddof=1) / np.sqrt(5)
    assert r["fast"].speedup.value == pytest.approx(np.exp(d.mean()), rel=1e-12)
    assert r["fast"].speedup.ci == pytest.approx((np.exp(d.mean() - half),
                                                  np.exp(d.mean() + half)), rel=1e-12)
    assert r["fast"].speedup.verdict == "faster"
