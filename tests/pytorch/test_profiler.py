"""fastbench.profile on PyTorch code, against models whose modules take known times: each
calls fastbench's native spin (forward, and twice as long in backward), directly or inside a
custom op, and times its own body, so the truth of every module's time in every step is
known even where a busy host stretches the spins."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import fastbench  # noqa: E402
from fastbench import _core  # noqa: E402
from fastbench.profiling import NOT_IN_OP, OUTSIDE, Profile, amdahl, profile  # noqa: E402
from fastbench.pytorch.profiler import Profiler, calibrate_overhead  # noqa: E402

# Every spinner body as it ran: (module, phase, start ns, end ns) on perf_counter_ns, the
# profiler's clock. A preempted spin is longer, and so is its entry here.
LOG: list[tuple[str, str, int, int]] = []


@torch.library.custom_op("fastbench_test::spin", mutates_args=())
def spin(x: torch.Tensor, ns: float, name: str) -> torch.Tensor:
    _core.spin(ns)
    return x.clone()


@spin.register_fake
def _(x: torch.Tensor, ns: float, name: str) -> torch.Tensor:
    return torch.empty_like(x)


def _spin_backward(ctx, grad):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter_ns()
    out = spin(grad, ctx.backward_ns, ctx.name)
    LOG.append((ctx.name, "backward", t0, time.perf_counter_ns()))
    return out, None, None


def _spin_setup(ctx, inputs, output):  # type: ignore[no-untyped-def]
    ctx.backward_ns = 2.0 * inputs[1]
    ctx.name = inputs[2]


spin.register_autograd(_spin_backward, setup_context=_spin_setup)


class SpinFunction(torch.autograd.Function):
    """Spins ``ns`` in forward and twice that in backward, in Python between ops: the cost
    of calling it is a few µs (an autograd Function and a clone), against tens of µs for a
    custom op, so the spin is nearly all of the module's time."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, ns: float, name: str) -> torch.Tensor:  # type: ignore[override]
        ctx.ns, ctx.name = ns, name
        _core.spin(ns)
        return x.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:  # type: ignore[override]
        t0 = time.perf_counter_ns()
        _core.spin(2.0 * ctx.ns)
        out = grad.clone()
        LOG.append((ctx.name, "backward", t0, time.perf_counter_ns()))
        return out, None, None


class Spinner(nn.Module):
    """A module that takes ``ms`` (times a random factor in [1 - jitter, 1 + jitter] drawn
    per call) in forward and twice that in backward, and logs each body's time. The jitter
    makes steps differ, as real steps do, so the expected share is known while each
    profile's estimate varies. With ``as_op`` the spin runs inside a custom op (seen as an
    op of its own)."""

    def __init__(self, ms: float, rng: np.random.Generator, jitter: float = 0.2,
                 as_op: bool = False, name: str = "") -> None:
        super().__init__()
        self.ms = ms
        self.rng = rng
        self.jitter = jitter
        self.as_op = as_op
        self.name = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ns = self.ms * self.rng.uniform(1 - self.jitter, 1 + self.jitter) * 1e6
        t0 = time.perf_counter_ns()
        out = spin(x, ns, self.name) if self.as_op else SpinFunction.apply(x, ns, self.name)
        LOG.append((self.name, "forward", t0, time.perf_counter_ns()))
        return out


class KnownSplit(nn.Module):
    def __init__(self, ms: tuple[float, ...], rng: np.random.Generator,
                 jitter: float = 0.05, as_op: bool = False) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[Spinner(m, rng, jitter, as_op, f"blocks.{i}")
                                      for i, m in enumerate(ms)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


MS = (2.0, 4.0, 6.0, 8.0)   # forward ms; backward twice as long


@pytest.fixture(autouse=True)
def _one_thread() -> Any:
    """One intra-op thread: with two, a step waits at every parallel op for whichever thread
    shares its core with other work, so on a loaded machine step times split into fast and
    slow ones and medians of 20 alternating steps can differ by tens of percent."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _need_native() -> None:
    """Skip where the native observer cannot be built (no C++ compiler or ninja)."""
    from fastbench.pytorch import observer
    if observer.load() is None:
        pytest.skip(f"the native observer is not available: {observer.unavailable_reason()}")


@pytest.fixture
def collector(request: pytest.FixtureRequest) -> str:
    if request.param == "native":
        _need_native()
    return str(request.param)


# Both collectors: the native observer (C++ RecordFunction callbacks, built on first use; the
# first step runs under the dispatch layer and is left out) and the Python dispatch mode.
both_collectors = pytest.mark.parametrize("collector", ["native", "dispatch"], indirect=True)


def _module_shares(p: Profile) -> dict[str, tuple[float, float, float]]:
    rows = {r.name: r for r in p.rows("module")}
    return {f"blocks.{i}": (rows[f"blocks.{i}"].share, *rows[f"blocks.{i}"].share_ci)
            for i in range(len(MS))}


def _profile_steps(model: nn.Module, step: Any, steps: int,
                   collector: str) -> tuple[Profile, list[tuple[int, int]]]:
    """``step()`` run ``steps`` times in ``with profile(model)``: the profile, and the span
    of each step it reports (start and end ns, perf_counter_ns)."""
    LOG.clear()
    marks = []
    with profile(model, roofline=False, collector=collector) as prof:
        marks.append(time.perf_counter_ns())
        for _ in range(steps):
            step()
            prof.step()
            marks.append(time.perf_counter_ns())
    return prof.result, _spans(prof.result, marks)


def _spans(p: Profile, marks: list[int]) -> list[tuple[int, int]]:
    """The span of each step ``p`` reports, from the marks taken at each step's end (the
    first mark: the start of the first step)."""
    first, left_out = p.meta["first_step"], set(p.meta["left_out"])
    spans = [(marks[k], marks[k + 1]) for k in range(first, len(marks) - 1)
             if k - first not in left_out]
    assert len(spans) == p.steps
    return spans


def _logged(spans: list[tuple[int, int]], module: str, phase: str) -> np.ndarray:
    """Seconds the spinner bodies of ``module`` in ``phase`` took in each reported step."""
    out = np.zeros(len(spans))
    for name, ph, t0, t1 in LOG:
        if name == module and ph == phase:
            for k, (a, b) in enumerate(spans):
                if a <= t0 < b:
                    out[k] += (t1 - t0) * 1e-9
    return out


def _unlogged(p: Profile, spans: list[tuple[int, int]], phases: tuple[str, ...]) -> np.ndarray:
    """Seconds of each step that no spinner body in ``phases`` logged (the calls around the
    bodies, a collection, a preemption between two bodies)."""
    bodies = sum(_logged(spans, f"blocks.{i}", ph) for i in range(len(MS)) for ph in phases)
    return np.maximum(p.step_times - bodies, 0.0)


def _subtracted(p: Profile) -> float:
    """The observer cost the profile subtracted, as a share of its net steps."""
    return float(np.sum(p.profiled_step_times)) / float(np.sum(p.step_times)) - 1.0


def _profiled(p: Profile, module: str, phase: str) -> np.ndarray:
    """Seconds the profile gives ``module`` in ``phase`` in each step (ops and between)."""
    cells = [c.times for c in p.cells if c.module == module and c.phase == phase]
    return np.sum(cells, axis=0) if cells else np.zeros(p.steps)


@both_collectors
def test_forward_shares_match_known_spins(collector: str) -> None:
    """Each module's time, the spin op and the time around it, against its own body's
    timing: summed over steps, at most 2 points of the step below it; in a step at most 300
    µs (the cost of calling the module) over it beyond the time no body logged in that step
    (a collection or a preemption between two bodies belongs to the module it fell in: one
    step here gave 6 ms of it to blocks.0), and in the median step at most 300 µs over it.
    Without load the bodies take 2, 4, 6 and 8 ms, and the shares are 10/20/30/40%."""
    model = KnownSplit(MS, np.random.default_rng(1), as_op=True)
    x = torch.zeros(4)
    with torch.no_grad():
        p, spans = _profile_steps(model, lambda: model(x), 12, collector)
    steps_total = float(np.sum(p.step_times))
    unlogged = _unlogged(p, spans, ("forward",))
    for i, (share, lo, hi) in enumerate(_module_shares(p).values()):
        name = f"blocks.{i}"
        truth, got = _logged(spans, name, "forward"), _profiled(p, name, "forward")
        assert (truth.sum() - got.sum()) / steps_total < 0.02, (name, got, truth)
        assert np.all(got - truth <= unlogged + 300e-6), (name, got, truth, unlogged)
        assert share == pytest.approx(got.sum() / steps_total, rel=1e-9)
        assert lo <= share <= hi
        assert -50e-6 < np.median(got - truth) < 300e-6, (name, got, truth)
    # Every op ran in forward, in the module that called it.
    spins = [c for c in p.cells if c.op == "fastbench_test::spin"]
    assert {c.module for c in spins} == {f"blocks.{i}" for i in range(len(MS))}
    assert {c.phase for c in spins} == {"forward"}
    assert all(c.calls == p.steps for c in spins)


@both_collectors
def test_backward_is_attributed_to_the_module_that_ran_forward(collector: str) -> None:
    model = KnownSplit(MS, np.random.default_rng(2), as_op=True)
    x = torch.zeros(4, requires_grad=True)
    p, spans = _profile_steps(model, lambda: model(x).sum().backward(), 8, collector)
    steps_total = float(np.sum(p.step_times))
    for i in range(len(MS)):
        name = f"blocks.{i}"
        fwd = [c for c in p.cells if c.op == "fastbench_test::spin" and c.module == name
               and c.phase == "forward"]
        bwd = [c for c in p.cells if c.op == "fastbench_test::spin" and c.module == name
               and c.phase == "backward"]
        assert len(fwd) == 1 and len(bwd) == 1, (i, fwd, bwd)
        for phase, cell in (("forward", fwd[0]), ("backward", bwd[0])):
            truth = _logged(spans, name, phase)
            # The spin op inside the body: all of it but the body's Python (tens of µs).
            assert np.all(cell.times <= truth + 50e-6), (name, phase, cell.times, truth)
            assert abs(cell.times.sum() - truth.sum()) / steps_total < 0.02
    shares = _module_shares(p)
    # A share's denominator is the net step: the subtracted observer cost, calibrated
    # beforehand on other ops, missed by up to about a quarter on a loaded host (see
    # test_overhead_subtraction_recovers_the_unprofiled_step).
    subtracted = _subtracted(p)
    for i in range(len(MS)):
        name = f"blocks.{i}"
        truth = _logged(spans, name, "forward").sum() + _logged(spans, name, "backward").sum()
        assert abs(shares[name][0] - truth / steps_total) < 0.02 + 0.25 * subtracted


@both_collectors
def test_time_between_ops_belongs_to_the_running_module_forward_and_backward(
        collector: str) -> None:
    """The spins run in Python, between ops: forward inside the module's call, backward in
    the autograd node its forward built (before the clone that node runs)."""
    model = KnownSplit(MS, np.random.default_rng(7))
    x = torch.zeros(4, requires_grad=True)
    p, spans = _profile_steps(model, lambda: model(x).sum().backward(), 6, collector)
    steps_total = float(np.sum(p.step_times))
    unlogged = _unlogged(p, spans, ("forward", "backward"))  # each step outside every body
    for i in range(len(MS)):
        name = f"blocks.{i}"
        for phase in ("forward", "backward"):
            truth, got = _logged(spans, name, phase), _profiled(p, name, phase)
            assert (truth.sum() - got.sum()) / steps_total < 0.02, (name, phase)
            # The body and the calls around it: the module call or the engine's node (tens
            # of µs), and in a step at most all the time no body logged (a collection, a slow
            # host phase: 1-3.7 ms of a 60 ms step here, up to 1.5 ms of it in one node),
            # less the observer's calibrated cost, which another module's share of the step
            # can have been charged too much of and on a loaded host can exceed what the ops
            # cost (-178 µs seen). Time given to the wrong module or phase moves a step by a
            # whole spin of another, 2 ms or more.
            excess = got - truth
            assert np.all(excess <= unlogged + 250e-6), (name, phase, excess, unlogged)
            assert np.median(excess) > -1e-3 * min(MS) / 2, (name, phase, got, truth)


def _true_module_times(ms: tuple[float, ...], calls: int = 15) -> list[float]:
    """Each module's mean time, timed without the profiler: its spin and the cost of calling
    it (an autograd Function, a clone, the module call: tens of µs, real time of the
    module). The jitter is symmetric, so the mean of a jittered module is this."""
    x = torch.zeros(4)
    out = []
    with torch.no_grad():
        for m in ms:
            module = Spinner(m, np.random.default_rng(0), jitter=0.0)
            times = []
            for _ in range(calls):
                t = time.perf_counter()
                module(x)
                times.append(time.perf_counter() - t)
            out.append(float(np.median(times)))
    return out


@pytest.mark.slow
def test_share_intervals_cover_the_truth() -> None:
    """Each step's spins are drawn anew (±45%), so the expected share of a module is known:
    its mean time over the step's, both timed without the profiler. Across 120 profiles the
    95% intervals cover it in about 93% of cases here (the profile's run-level shifts of a
    few tens of µs per module are not in an interval taken across its steps). Target: at
    least 90%; with 480 intervals the count's own spread is about 1.2 points, so a true 93%
    falls below 90% about once in 200 runs. The truth is timed again before each profile, so
    that it and the profile share the host's phase: timed once at the start, a slow spell of
    the host then or during the profiles moved every interval against it (a CI run on a host
    that also slowed a 10 ms FMA peak 7x covered 256 of 480)."""
    covered = total = 0
    for trial in range(120):
        t = _true_module_times(MS, calls=3)
        truth = [ti / sum(t) for ti in t]
        model = KnownSplit(MS, np.random.default_rng(100 + trial), jitter=0.45)
        with torch.no_grad():
            p = profile(model, torch.zeros(4), steps=15, warmup=1, roofline=False)
        for i, (share, lo, hi) in enumerate(_module_shares(p).values()):
            covered += lo <= truth[i] <= hi
            total += 1
    assert covered / total >= 0.90, covered / total


@both_collectors
def test_context_form_with_steps_and_regions(collector: str) -> None:
    model = KnownSplit((1.0, 1.0), np.random.default_rng(3))
    x = torch.zeros(4)
    LOG.clear()
    marks = []
    with torch.no_grad(), profile(model, roofline=False, collector=collector) as prof:
        marks.append(time.perf_counter_ns())
        for _ in range(6):
            with prof.region("data loading"):
                t0 = time.perf_counter_ns()
                _core.spin(2e6)
                x = torch.zeros(4)
                LOG.append(("data loading", "", t0, time.perf_counter_ns()))
            model(x)
            prof.step()
            marks.append(time.perf_counter_ns())
    assert isinstance(prof, Profiler)
    # The native observer leaves out the first step, which counts FLOPs.
    assert prof.steps == (5 if collector == "native" else 6) - len(prof.meta["left_out"])
    assert prof.meta["collector"] == collector
    spans = _spans(prof.result, marks)
    total = float(np.sum(prof.step_times))
    loading = _logged(spans, "data loading", "").sum() / total
    forward = sum(_logged(spans, f"blocks.{i}", "forward").sum() for i in range(2)) / total
    # Without load: 2 ms of 4 ms in the named region, the model's forward the rest. Each
    # region holds its logged bodies, less what the subtracted observer cost may miss by,
    # and what runs around them, up to the step's time that no body logged (the loop's own
    # code, and what a loaded host adds to it).
    regions = {r.name: r for r in prof.rows("region")}
    subtracted = _subtracted(prof.result)
    unlogged = max(0.0, 1.0 - loading - forward)
    for name, logged in (("data loading", loading), ("model forward", forward)):
        share = regions[name].share
        assert logged - 0.02 - subtracted <= share <= logged + 0.02 + unlogged + subtracted, \
            (name, share, logged, unlogged, subtracted)
    modules = {r.name: r for r in prof.rows("module")}
    # Outside any module: the region's spin and whatever the loop runs between the module
    # calls (more on a loaded host), never the spins inside the modules.
    assert OUTSIDE in modules and loading - 0.02 <= modules[OUTSIDE].share <= 1 - forward + 0.02
    # The region's zeros op runs outside any module.
    zeros = [c for c in prof.cells if c.op == "aten::zeros"]
    assert zeros and all(c.module == OUTSIDE and c.region == "data loading" for c in zeros)
    text = str(prof)
    assert "by region" in text and "data loading" in text


class SlowFirstCall(nn.Module):
    """One spinner of 5 ms behind 1.5 ms of the model's own Python on its first call only
    (a lazy set-up, or a host that held the thread then): in the first step the spinner is
    entered 1.5 ms after the last op and 5 ms before its own, in later steps right away."""

    def __init__(self, rng: np.random.Generator) -> None:
        super().__init__()
        self.inner = Spinner(5.0, rng, 0.05, False, "inner")
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 1:
            _core.spin(1.5e6)
        return self.inner(x)


@both_collectors
def test_module_times_hold_when_the_first_step_ran_slower(collector: str) -> None:
    """Every step's module entries and exits are its own: the native observer's steps stamp
    them too, and never take their places from the first step, where the delay put the
    spinner's entry 1.5 ms after the last op (placed as far from it in a later step, the
    spinner would lose that much to the model)."""
    with torch.no_grad():
        # A first profile in the process: its own first step pays one-off costs of the
        # profiler's paths (milliseconds), which can hide the model's delay.
        warm = SlowFirstCall(np.random.default_rng(8))
        _profile_steps(warm, lambda: warm(torch.zeros(4)), 2, collector)
        model = SlowFirstCall(np.random.default_rng(8))
        p, spans = _profile_steps(model, lambda: model(torch.zeros(4)), 8, collector)
    truth, got = _logged(spans, "inner", "forward"), _profiled(p, "inner", "forward")
    assert -50e-6 < np.median(got - truth) < 300e-6, (got, truth)
    root = _profiled(p, "", "forward")
    assert np.median(root) < 100e-6, root   # the model's own code: a counter and a call
    assert all("forward" not in m.__dict__ for m in model.modules())   # unwrapped


class FreshEachCall(nn.Module):
    """A spinner, then an ``nn.ReLU`` built anew in every forward: a module the profiler
    cannot stamp in later steps."""

    def __init__(self, rng: np.random.Generator) -> None:
        super().__init__()
        self.inner = Spinner(1.0, rng, 0.05, False, "inner")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.ReLU()(self.inner(x))


def test_steps_whose_modules_cannot_be_stamped_replay_the_first_steps() -> None:
    """The fresh ReLU is missing from the later steps' stamps, so their module events are
    the first step's, replayed (placed as far from the ops as there, so only as true as
    that step was typical; test_timeline works the replay and the stamps' cost by hand),
    and the spinner keeps the ``forward`` it had (an instance attribute) after the
    profile."""
    _need_native()
    model = FreshEachCall(np.random.default_rng(9))
    own = model.inner.forward
    model.inner.forward = own   # an instance attribute, as a library's wrapper would set
    with torch.no_grad():
        p, _ = _profile_steps(model, lambda: model(torch.zeros(4)), 8, "native")
    assert p.meta["collector"] == "native"
    inner = _profiled(p, "inner", "forward")
    clone = [c.times for c in p.cells if c.op == "aten::clone" and c.module == "inner"]
    assert len(clone) == 1 and np.all(inner >= clone[0])
    relu = [c for c in p.cells if c.op == "aten::relu"]
    assert relu and all(c.module == "<ReLU>" for c in relu)
    np.testing.assert_allclose(np.sum([c.times for c in p.cells], axis=0), p.step_times,
                               rtol=1e-9)
    assert model.inner.__dict__["forward"] is own and "forward" not in model.__dict__


@both_collectors
def test_cells_sum_to_the_net_step(collector: str) -> None:
    rng = np.random.default_rng(4)
    model = KnownSplit(MS, rng)
    with torch.no_grad():
        p = profile(model, torch.zeros(4), steps=5, roofline=False, collector=collector)
    total = np.sum([c.times for c in p.cells], axis=0)
    np.testing.assert_allclose(total, p.step_times, rtol=1e-9)
    assert np.all(p.step_times <= p.profiled_step_times)
    for by in ("op", "module", "family", "region"):
        assert sum(r.share for r in p.rows(by)) == pytest.approx(1.0, rel=1e-9)


class SmallOps(nn.Module):
    """150 small ops (a 16x512 by 512x512 product, a bias, a ReLU: tens of µs each), where
    observing adds about a quarter to the step."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.randn(512, 512) / 512 ** 0.5
        self.b = torch.zeros(512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(50):
            x = (x @ self.w + self.b).relu()
        return x


@both_collectors
def test_overhead_subtraction_recovers_the_unprofiled_step(collector: str) -> None:
    """The step net of the subtracted cost against the step timed without the profiler
    (alternating steps, so a busy host shifts both): about 2-6% apart with the dispatch
    collector on the quiet Zen hosts this was written on, about 1% with the native one; a
    loaded machine makes the profiler's own code run from colder caches than its calibration
    saw. On a Golden Cove-class VM the dispatch collector added 55-76% to the step and its
    net step missed by -22% to +20% (the cost per op, calibrated beforehand on other ops,
    moved that much between calibrations); the native one added 6-13% and missed by at most
    4%. So the miss is bounded by 15% or three quarters of the observer's cost, whichever is
    larger: no subtraction, or a double one, still fails where the observer's cost is large."""
    model = SmallOps()
    x = torch.randn(16, 512)
    # The cost is calibrated once per process: measure it now, not under whatever load an
    # earlier test of this process left.
    calibrate_overhead(refresh=True, collector=collector)
    with torch.no_grad():
        p = profile(model, x, steps=20, roofline=False, collector=collector)
    assert p.observer_effect is not None
    if collector == "dispatch":
        assert p.observer_effect > 1.05   # the cost is real
    assert np.median(p.profiled_step_times) > np.median(p.step_times)   # and subtracted
    assert p.attributed_ratio == pytest.approx(
        np.median(p.step_times) / np.median(p.unprofiled_step_times), rel=1e-9)
    # The least disturbed steps each way: a busy host only ever adds time, and adds more to
    # the longer profiled steps (a preemption lands in a longer step more often).
    unprofiled = _least(p.unprofiled_step_times)
    observer = _least(p.profiled_step_times) / unprofiled - 1.0
    assert abs(_least(p.step_times) / unprofiled - 1.0) < max(0.15, 0.75 * observer)
    add = [c for c in p.cells if c.op == "aten::add"]
    assert add and add[0].calls == 50 * p.steps   # steps the host disturbed are left out


def _least(times: np.ndarray) -> float:
    """The mean of the fastest quarter of the steps: what a step takes when the host leaves
    it alone."""
    t = np.sort(np.asarray(times))
    return float(np.mean(t[:max(len(t) // 4, 1)]))


class TinyOps(nn.Module):
    """300 ops on 8-element tensors (a product, a sum with a number, a ReLU: about 1-2 µs
    each), where observing natively adds about a third to the step."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.ones(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(100):
            x = (x * self.w + 1.0).relu()
        return x


def test_native_overhead_subtraction_recovers_a_step_of_tiny_ops() -> None:
    """Ops of 1-2 µs, each costing a few hundred ns to observe: the profiled step net of the
    subtracted cost came within 2% of the unprofiled step on the Zen hosts this was written
    on, but from 21% below to 18% above it on a Golden Cove-class VM, whose observer added
    35-48% to the step: the cost per op is calibrated before the profile, on other ops, and
    there it moved by a fifth from one calibration to the next. What holds on both is that
    the net step misses the unprofiled one by less than three quarters of the observer's
    cost: the subtraction neither leaves that cost in nor takes it out twice.

    The subtraction can be no truer than the calibration it uses, so the bound also allows
    for how far a second calibration, taken right after the profile, moves: a calibration
    that a busy host doubled once took the cost out twice (net 29.2% below the unprofiled
    step, the observer 29.3%)."""
    _need_native()
    before = calibrate_overhead(refresh=True, collector="native")
    with torch.no_grad():
        p = profile(TinyOps(), torch.zeros(8), steps=20, roofline=False, collector="native")
    after = calibrate_overhead(refresh=True, collector="native")
    assert p.meta["collector"] == "native"
    assert np.median(p.profiled_step_times) > 1.1 * np.median(p.step_times)
    unprofiled = _least(p.unprofiled_step_times)
    observer = _least(p.profiled_step_times) / unprofiled - 1.0   # about 0.3
    assert observer > 0.1
    # The cost charged per step is mostly a range per op and the calls inside ops: their
    # sum may read differently in the second calibration (here 159-545 ns a range, 0-365 ns
    # an inner call, from one calibration to the next), and the subtraction by as much.
    def per_op(o: Any) -> float:
        return float(o.per_op_s + o.per_inner_call_s)

    moved = abs(per_op(after) / per_op(before) - 1.0)
    subtracted = (_least(p.profiled_step_times) - _least(p.step_times)) / unprofiled
    assert abs(_least(p.step_times) / unprofiled - 1.0) < 0.75 * observer + moved * subtracted
    ops = {c.op for c in p.cells if c.op != NOT_IN_OP}
    assert ops == {"aten::mul", "aten::add", "aten::relu"}
    assert all(c.calls == 100 * p.steps for c in p.cells if c.op in ops)
    assert not any("not counted" in w for w in p.warnings)   # all met in the first step


def test_overhead_is_measured_and_positive() -> None:
    o = calibrate_overhead()
    assert 0 < o.per_op_inside_s < o.per_op_s < 1e-3
    assert o.per_module_s > 0
    _need_native()
    n = calibrate_overhead(collector="native")
    assert 0 < n.per_op_inside_s < n.per_op_s < o.per_op_s
    # The native collector's timed steps stamp modules with a wrapper, not hooks.
    assert 0 < n.per_module_s < o.per_module_s
    assert 0 <= n.per_inner_call_s < o.per_op_s


def test_without_the_native_observer_the_dispatch_collector_times_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from fastbench.pytorch import observer
    monkeypatch.setattr(observer, "load", lambda: None)
    monkeypatch.setattr(observer, "unavailable_reason", lambda: "no C++ compiler here")
    model = KnownSplit((0.2, 0.2), np.random.default_rng(8))
    with torch.no_grad():
        p = profile(model, torch.zeros(4), steps=3, roofline=False)
        assert p.meta["collector"] == "dispatch"
        assert any("no C++ compiler here" in w for w in p.warnings)
        with pytest.raises(fastbench.FastbenchError, match="no C.. compiler here"):
            profile(model, torch.zeros(4), steps=3, roofline=False, collector="native")
    with pytest.raises(ValueError, match="collector"):
        profile(model, torch.zeros(4), steps=3, collector="python")


def test_a_block_of_one_step_is_timed_by_the_dispatch_collector() -> None:
    model = KnownSplit((0.5, 0.5), np.random.default_rng(9))
    with torch.no_grad(), profile(model, roofline=False) as prof:
        model(torch.zeros(4))
    assert prof.steps == 1 and prof.meta["collector"] == "dispatch"
    assert any("one step" in w for w in prof.warnings)
    assert {c.module for c in prof.cells} >= {"blocks.0", "blocks.1"}


def test_shapes_first_met_after_the_first_step_are_timed_and_flagged() -> None:
    _need_native()
    lin = nn.Linear(16, 8)
    with torch.no_grad(), profile(lin, roofline=False, collector="native") as prof:
        for n in (4, 4, 6, 6):
            lin(torch.randn(n, 16))
            prof.step()
    mm = {c.shapes: c for c in prof.cells if c.op == "aten::addmm"}
    seen = next(c for shapes, c in mm.items() if "(4, 16)" in shapes)
    late = next(c for shapes, c in mm.items() if "(6, 16)" in shapes)
    assert seen.flops > 0 and seen.module == ""
    assert late.flops == 0 and late.calls == 2 and late.module == ""
    assert any("aten::addmm" in w and "not counted" in w for w in prof.warnings)


@both_collectors
def test_flops_come_from_the_formulas(collector: str) -> None:
    lin = nn.Linear(64, 32)
    x = torch.randn(16, 64)
    with torch.no_grad():
        p = profile(lin, x, steps=3, roofline=False, collector=collector)
    mm = [c for c in p.cells if c.op == "aten::addmm"]
    assert len(mm) == 1
    assert mm[0].flops == 2 * 16 * 64 * 32 + 16 * 32   # multiply-adds, then the bias
    assert mm[0].module == "" and mm[0].shapes.startswith("(32,)")
    # The FLOPs of a family are its ops' (which family takes the most time is the host's to
    # say: ops of a few microseconds trade places under load).
    families = {r.name: r for r in p.rows("family")}
    assert families["matrix multiplication"].flops == mm[0].flops
    assert all(r.flops == 0 for name, r in families.items() if name != "matrix multiplication")


def test_composites_met_whole_under_inference_mode_are_counted_by_their_pieces() -> None:
    # inference_mode hands composites such as aten::linear to the profiler whole: with no
    # formula of their own they counted 0 FLOPs; their decomposition counts what the
    # analyzer counts.
    from fastbench.analysis import analyze
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
    x = torch.randn(16, 64)
    with torch.inference_mode():
        p = profile(model, x, steps=3, roofline=False)
    per_step = sum(r.flops for r in p.rows("op"))  # each row's FLOPs are per step
    assert per_step == pytest.approx(analyze(model, x, grad_mode="grad").forward.flops,
                                     rel=1e-12)


def test_a_fused_encoder_layer_is_counted_and_judged_by_its_roof() -> None:
    # The fused op of nn.TransformerEncoderLayer in eval under no_grad: counted as the
    # analyzer counts it, so its row has FLOPs and a compute or memory verdict, not "0
    # FLOPs, overhead-bound" (its calls run far longer than a call's own cost).
    from fastbench.analysis import analyze
    from fastbench.roofline import Roofline
    r = Roofline(compute={"fma float32": 100.0}, memory={"DRAM": 10.0}, threads=1,
                 quick=True, machine={})
    torch.manual_seed(4)
    layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, batch_first=True).eval()
    x = torch.randn(8, 64, 128)
    with torch.no_grad():
        p = profile(layer, x, steps=3, roofline=r)
    row = next(r_ for r_ in p.rows("op") if r_.name == "aten::_transformer_encoder_layer_fwd")
    expected = analyze(layer, x, grad_mode="grad").forward
    assert row.flops / row.calls == pytest.approx(expected.flops, rel=1e-12)
    assert row.bound in ("compute-bound", "memory-bound")


def test_roofline_verdicts_and_bottlenecks() -> None:
    from fastbench.roofline import Roofline
    r = Roofline(compute={"fma float32": 100.0}, memory={"DRAM": 10.0}, threads=1,
                 quick=True, machine={})
    lin = nn.Linear(256, 256)
    x = torch.randn(64, 256)
    with torch.no_grad():
        p = profile(lin, x, steps=4, roofline=r)
    row = next(r_ for r_ in p.rows("op") if r_.name == "aten::addmm")
    flops = 2 * 64 * 256 * 256 + 64 * 256
    # Hand-worked roof: the larger of FLOPs at 100 GFLOP/s and bytes at 10 GB/s.
    roof = max(flops / 100e9, row.bytes / 10e9)
    assert row.roof_time_s == pytest.approx(roof, rel=1e-9)
    assert row.roof_fraction == pytest.approx(min(roof / row.time_s, 1.0), rel=1e-9)
    assert row.bound in ("compute-bound", "memory-bound", "overhead-bound")
    b = p.bottlenecks(3)
    assert len(b) >= 1
    assert b[0].saving_s >= b[-1].saving_s
    top = b[0]
    assert top.at_factor_speedup == pytest.approx(amdahl(top.row.share, 2.0))


def test_projection_matches_amdahl() -> None:
    rng = np.random.default_rng(5)
    model = KnownSplit(MS, rng)
    with torch.no_grad():
        p = profile(model, torch.zeros(4), steps=10, roofline=False)
    share = next(r.share for r in p.rows("module") if r.name == "blocks.3")
    proj = p.project({"blocks.3": 2.0})
    assert proj.speedup == pytest.approx(amdahl(share, 2.0), rel=1e-9)
    lo, hi = proj.speedup_ci
    assert lo < proj.speedup < hi
    # A parent's factor covers its children; the larger factor wins where keys overlap.
    whole = p.project({"blocks": math.inf})
    assert whole.projected_step_time_s < 0.05 * p.step_time_s
    both = p.project({"blocks": 1.5, "blocks.3": 3.0})
    assert both.speedup > p.project({"blocks": 1.5}).speedup
    with pytest.raises(ValueError, match="no item"):
        p.project({"nonexistent": 2.0})


def test_profile_round_trips_through_a_results_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(6)
    with torch.no_grad():
        p = profile(KnownSplit((0.2, 0.2), rng), torch.zeros(4), steps=3, roofline=False)
    q = Profile.from_dict(p.to_dict())
    assert [r.name for r in q.rows("module")] == [r.name for r in p.rows("module")]
    np.testing.assert_allclose(q.step_times, p.step_times)


def test_errors() -> None:
    with pytest.raises(TypeError, match="callable"):
        profile(42, 1)
    with pytest.raises(ValueError, match="steps"):
        profile(lambda: None, steps=1)
    prof = Profiler(None, roofline=False)
    with pytest.raises(fastbench.FastbenchError, match="inside"):
        prof.step()
    with pytest.raises(fastbench.FastbenchError, match="once the"):
        prof.top()


@both_collectors
def test_op_rows_by_shapes_split_an_op_by_its_inputs(collector: str) -> None:
    a, b = nn.Linear(32, 16), nn.Linear(16, 16)
    model = nn.Sequential(a, nn.ReLU(), b)
    with torch.no_grad():
        p = profile(model, torch.randn(8, 32), steps=3, roofline=False, collector=collector)
    by_op = {r.name: r for r in p.rows("op")}
    by_shapes = {r.name: r for r in p.rows("op_shapes") if r.name.startswith("aten::addmm")}
    # Two Linear layers of different widths: one op, two sets of input shapes.
    assert len(by_shapes) == 2
    assert sum(r.time_s for r in by_shapes.values()) == pytest.approx(
        by_op["aten::addmm"].time_s, rel=1e-9)
    assert any("(8, 32)" in name for name in by_shapes)


def test_a_step_left_out_takes_its_unprofiled_pair_with_it() -> None:
    """profile(fn) alternates an unprofiled and a profiled call of each step; one profiled
    call stretched by 60 ms (as if the host stopped it) is left out, and so is the
    unprofiled call of its pair: the step counts stay equal, and the unprofiled times kept
    are those of the kept pairs (each call times its own 2 ms spin, the truth)."""
    inner: list[float] = []
    x = torch.randn(8, 8)

    def step() -> None:
        t0 = time.perf_counter()
        # 2 warmup calls, then per step an unprofiled and a profiled call; the first pair
        # is dropped, so call 14 is the 5th reported profiled step (index 4) and call
        # 2j + 5 is the unprofiled step j.
        if len(inner) == 13:
            time.sleep(0.06)
        _core.spin(2e6)
        torch.add(x, x)
        inner.append(time.perf_counter() - t0)

    p = profile(step, steps=20, roofline=False, trace=False)
    left_out = p.meta["left_out"]
    assert 4 in left_out   # at most one more step, one the host stretched, goes too
    assert p.profiled_step_times.size == p.unprofiled_step_times.size == 20 - len(left_out)
    own = np.delete(np.asarray(inner[4::2][:20]), left_out)
    assert np.allclose(p.unprofiled_step_times, own, rtol=0.05, atol=2e-4)
    assert p.observer_effect_ci is not None
