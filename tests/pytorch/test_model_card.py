"""The model card against oracles that do not go through it: parameters against
``sum(p.numel())``, FLOPs of linear layers against 2 x batch x in x out, optimizer state
against its formula and against a real optimizer's state after one step, the latency
quantiles against the samples they come from, throughput against batch / latency, the
memory of a call against a known allocation, the printed card against its figures, and the
errors a user meets."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastbench.pytorch.model_card import ModelCard, profile_model  # noqa: E402
from fastbench.roofline import Roofline  # noqa: E402
from fastbench.stats.quantiles import quantile_ci  # noqa: E402
from fastbench.units import format_bytes, format_count, format_ns  # noqa: E402

nn = torch.nn
F32 = 4
BATCH, IN, HIDDEN, OUT = 8, 32, 64, 16
# Short runs on one thread: a loaded machine and a second intra-op thread that has to wait
# for a busy core would only make the figures noisier, never the oracles wrong.
FAST: dict[str, Any] = dict(duration_s=0.02, repeat=20, warmup=1, threads=1, memory=False,
                            roofline=False)


def _mlp(bias: bool = False) -> torch.nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(IN, HIDDEN, bias=bias), nn.Linear(HIDDEN, OUT, bias=bias)).eval()


def _x() -> torch.Tensor:
    return torch.randn(BATCH, IN)


def _synthetic() -> Roofline:
    """Peak 200 GFLOP/s float32, DRAM 25 GB/s: ridge point 8 FLOP/byte."""
    return Roofline(compute={"fma float32": 200.0, "fma float64": 100.0},
                    memory={"L1": 400.0, "L2": 200.0, "L3": 100.0, "DRAM": 25.0},
                    threads=1, quick=True, machine={"cpu_model": "synthetic"})


# -- counts -----------------------------------------------------------------------------------
def test_parameters_match_numel() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.LayerNorm(HIDDEN),
                          nn.Linear(HIDDEN, OUT)).eval()
    card = profile_model(model, _x(), **FAST)
    assert card.params == sum(p.numel() for p in model.parameters())
    assert card.param_bytes == sum(p.numel() * p.element_size() for p in model.parameters())


def test_forward_flops_of_linear_layers_match_the_hand_formula() -> None:
    card = profile_model(_mlp(), _x(), **FAST)
    # 2 x batch x in x out per bias-free linear layer, nothing else.
    assert card.flops == 2 * BATCH * IN * HIDDEN + 2 * BATCH * HIDDEN * OUT
    assert card.macs == BATCH * (IN * HIDDEN + HIDDEN * OUT)
    assert card.analysis.backward is None and not card.backward


def test_training_flops_add_the_backward_of_each_layer() -> None:
    card = profile_model(_mlp(), _x(), backward=True, **FAST)
    forward = BATCH * (IN * HIDDEN + HIDDEN * OUT)
    # Backward: the weight gradient of each layer (batch x in x out each) and the input
    # gradient of the second (the first layer's input needs none).
    backward = BATCH * IN * HIDDEN + 2 * BATCH * HIDDEN * OUT
    assert card.forward_macs == forward
    assert card.macs == forward + backward
    assert card.flops == 2 * (forward + backward)


# -- optimizer state --------------------------------------------------------------------------
def _state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of the parameter-sized tensors in a real optimizer's state (the scalar step
    counters left out, as the card leaves them out)."""
    return sum(v.numel() * v.element_size() for state in optimizer.state.values()
               for k, v in state.items() if isinstance(v, torch.Tensor) and k != "step")


OPTIMIZER_CASES = [
    (lambda ps: torch.optim.SGD(ps, lr=0.1), 0),
    (lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), 1),
    (lambda ps: torch.optim.Adam(ps), 2),
    (lambda ps: torch.optim.AdamW(ps), 2),
    (lambda ps: torch.optim.Adam(ps, amsgrad=True), 3),
]


@pytest.mark.parametrize(("make", "slots"), OPTIMIZER_CASES,
                         ids=["sgd", "sgd-momentum", "adam", "adamw", "adam-amsgrad"])
def test_optimizer_state_matches_formula_and_a_real_step(make: Any, slots: int) -> None:
    model = _mlp(bias=True)
    param_bytes = sum(p.numel() * F32 for p in model.parameters())
    card = profile_model(model, _x(), optimizer=make(model.parameters()), **FAST)
    assert card.training is not None
    assert card.training.optimizer_bytes == slots * param_bytes
    assert card.training.optimizer_slots == slots
    # A real optimizer after one real step holds exactly that state.
    real = make(model.parameters())
    model(_x()).sum().backward()
    real.step()
    assert _state_bytes(real) == card.training.optimizer_bytes


@pytest.mark.parametrize(("name", "slots"), [("sgd", 0), ("momentum", 1), ("adam", 2),
                                             ("AdamW", 2)])
def test_optimizer_named_by_a_string(name: str, slots: int) -> None:
    model = _mlp(bias=True)
    card = profile_model(model, _x(), optimizer=name, **FAST)
    t = card.training
    assert t is not None
    assert t.gradients_bytes == t.params_bytes == sum(p.numel() * F32 for p in model.parameters())
    assert t.optimizer_bytes == slots * t.params_bytes
    # The total is the analyzer's own training estimate, component by component.
    est = card.analysis.memory
    key = "adam" if name.lower() == "adamw" else name
    assert t.total_bytes == est.training_bytes(key)
    assert t.total_bytes == sum(v for v in t.components().values() if v is not None)
    assert t.peak_activations_bytes == est.training_peak_bytes
    assert t.saved_activations_bytes == est.activations_bytes


def test_per_group_state_and_frozen_parameters() -> None:
    """Momentum on one group only, and a frozen layer: the state covers what is trained."""
    model = _mlp(bias=False)
    first, second = model[0].weight, model[1].weight
    second.requires_grad_(False)
    opt = torch.optim.SGD([{"params": [first], "momentum": 0.9},
                           {"params": [second], "momentum": 0.0}], lr=0.1)
    card = profile_model(model, _x(), optimizer=opt, **FAST)
    assert card.training is not None
    assert card.training.optimizer_bytes == first.numel() * F32
    assert card.training.optimizer_slots is None   # the groups differ
    assert card.training.gradients_bytes == first.numel() * F32


def test_unknown_optimizer_instance_is_timed_with_its_state_unknown() -> None:
    model = _mlp()
    card = profile_model(model, _x(), backward=True,
                         optimizer=torch.optim.RMSprop(model.parameters()), **FAST)
    assert card.training is not None and card.training.optimizer_bytes is None
    assert card.training.total_bytes is None
    assert "RMSprop step" in card.call
    assert any("not known" in n for n in card.notes)


# -- training steps -----------------------------------------------------------------------------
def test_training_profile_leaves_model_and_optimizer_as_they_were() -> None:
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    card = profile_model(model, _x(), backward=True, optimizer=opt, **FAST)
    assert "Adam step" in card.call
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())
    assert len(opt.state) == 0


def test_copy_model_false_steps_the_model_itself() -> None:
    """The optimizer's step really runs in each timed step: without the copy, the weights
    move."""
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    profile_model(model, _x(), backward=True, optimizer=opt, copy_model=False, **FAST)
    assert not all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())   # zero_grad(set_to_none=True)


# -- time -------------------------------------------------------------------------------------
def test_latency_quantiles_come_from_the_samples() -> None:
    card = profile_model(_mlp(), _x(), **{**FAST, "repeat": 400})
    m = card.measurement
    assert m.loops == 1 and m.n >= 400
    median, p95, p99 = card.latency
    assert (median.label, p95.label, p99.label) == ("median", "p95", "p99")
    assert median.seconds == pytest.approx(m.median_ns * 1e-9)
    assert p95.seconds == pytest.approx(np.percentile(m.samples_ns, 95) * 1e-9)
    assert p99.seconds == pytest.approx(np.percentile(m.samples_ns, 99) * 1e-9)
    for fig, q in ((p95, 0.95), (p99, 0.99)):
        ci = quantile_ci(m.samples_ns, q)
        assert ci is not None and fig.ci_s is not None
        assert fig.ci_s == pytest.approx((ci[0] * 1e-9, ci[1] * 1e-9))
        assert fig.ci_s[0] <= fig.seconds <= fig.ci_s[1]
    assert median.seconds <= p95.seconds <= p99.seconds


def test_throughput_is_batch_over_latency() -> None:
    card = profile_model(_mlp(), _x(), **{**FAST, "roofline": _synthetic()})
    assert card.batch_size == BATCH
    assert card.throughput == pytest.approx(BATCH / card.median_s, rel=1e-12)
    lo, hi = card.latency_of("median").ci_s or (math.nan, math.nan)
    assert card.throughput_ci == pytest.approx((BATCH / hi, BATCH / lo), rel=1e-12)
    assert card.throughput_ci[0] <= card.throughput <= card.throughput_ci[1]
    assert card.achieved_gflops == pytest.approx(card.flops / card.median_s / 1e9, rel=1e-12)
    pl = card.placement
    assert pl is not None
    assert pl.achieved_gflops == pytest.approx(card.achieved_gflops, rel=1e-9)
    assert pl.fraction == pytest.approx(pl.achieved_gflops / pl.attainable_gflops)
    # Two bias-free linear layers at 8 x 32 -> 64 -> 16 in float32: 1.4 FLOP/byte, far
    # below the synthetic ridge point of 8.
    assert pl.intensity == pytest.approx(card.analysis.intensity)
    assert card.bound == "memory-bound"


def test_batch_size_given_and_batched_calls_noted() -> None:
    card = profile_model(_mlp(), _x(), batch_size=3, **{**FAST, "min_time_s": 2e-3})
    assert card.batch_size == 3
    assert card.measurement.loops > 1
    assert any("per-sample means" in n for n in card.notes)


def test_threads_are_restored() -> None:
    before = torch.get_num_threads()
    card = profile_model(_mlp(), _x(), **{**FAST, "threads": 1})
    assert card.threads == 1
    assert torch.get_num_threads() == before


# -- memory -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_measured_peak_memory_sees_a_known_allocation() -> None:
    """A 64 MiB output (beyond glibc's largest mmap threshold, 32 MiB, so each call maps and
    returns it afresh) shows in the measured peak RSS of every call."""
    model = nn.Linear(1, 16384, bias=False).eval()
    x = torch.randn(1024, 1)
    card = profile_model(model, x, **{**FAST, "memory": True, "repeat": 3})
    mem = card.measurement.memory
    if mem is None or not mem.exact:
        pytest.skip("exact peak RSS is not readable here")
    out_bytes = 1024 * 16384 * F32
    assert card.analysis.memory.inference_peak_bytes == out_bytes
    assert 0.9 * out_bytes <= mem.median_peak_increase_bytes <= 2 * out_bytes


# -- the printed card and its data --------------------------------------------------------------
def test_printed_card_holds_its_figures() -> None:
    model = _mlp()
    card = profile_model(model, _x(), backward=True, optimizer=torch.optim.Adam(model.parameters()),
                         **{**FAST, "roofline": _synthetic()})
    text = str(card)
    t = card.training
    assert t is not None and t.total_bytes is not None
    for figure in (f"{card.params:,}", format_count(card.flops, "FLOPs"),
                   format_ns(card.median_s * 1e9), format_count(card.throughput, digits=4),
                   f"training memory with Adam: {format_bytes(t.total_bytes)}",
                   format_bytes(t.optimizer_bytes or 0), card.bound or "?",
                   "latency per call", "p95", "p99", f"(batch {BATCH})",
                   "training step (forward + backward + Adam step)"):
        assert figure in text, figure
    assert text.startswith("model card: Sequential")


def test_to_dict_round_trip() -> None:
    model = _mlp()
    card = profile_model(model, _x(), backward=True, optimizer="adam",
                         **{**FAST, "roofline": _synthetic()})
    d = json.loads(json.dumps(card.to_dict()))
    again = ModelCard.from_dict(d)
    assert str(again) == str(card)
    assert again.to_dict() == d
    assert d["figures"]["params"] == card.params
    assert d["figures"]["latency_s"]["median"]["value"] == card.median_s
    with pytest.raises(ValueError, match="not a model card"):
        ModelCard.from_dict({"model": "x"})


def test_inference_in_training_mode_is_noted() -> None:
    card = profile_model(_mlp().train(), _x(), **FAST)
    assert card.call == "forward (no_grad)" and card.training_mode
    assert any("model.eval()" in n for n in card.notes)


def test_reachable_from_the_package() -> None:
    import fastbench.pytorch
    assert fastbench.pytorch.profile_model is profile_model
    assert "profile_model" in fastbench.pytorch.__all__


@pytest.mark.slow
def test_calibrates_the_roofline_when_none_is_given() -> None:
    card = profile_model(_mlp(), _x(), **{**FAST, "roofline": None})
    assert card.placement is not None
    assert card.placement.roofline_threads == 1 == card.threads
    assert card.bound in ("memory-bound", "compute-bound")


# -- errors -------------------------------------------------------------------------------------
def test_not_a_module() -> None:
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got function"):
        profile_model(lambda x: x, _x(), **FAST)


def test_unknown_optimizer_name() -> None:
    with pytest.raises(ValueError, match=r"optimizer must be one of 'sgd', 'momentum', 'adam', "
                                         r"'adamw' or a torch.optim.Optimizer, got 'rmsprop'"):
        profile_model(_mlp(), _x(), optimizer="rmsprop", **FAST)
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer"):
        profile_model(_mlp(), _x(), optimizer=0.1, **FAST)


def test_optimizer_over_other_parameters() -> None:
    other = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="not parameters of the model"):
        profile_model(_mlp(), _x(), optimizer=torch.optim.SGD(other.parameters(), lr=0.1), **FAST)


def test_input_the_model_rejects_is_named() -> None:
    bad = torch.randn(3, 7)
    with pytest.raises(ValueError, match=r"the model rejected example_input \(3x7 float32\): "
                                         r"RuntimeError: .*") as info:
        profile_model(_mlp(), bad, **FAST)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_bad_inputs() -> None:
    with pytest.raises(TypeError, match="example_input must be a tensor"):
        profile_model(_mlp(), np.zeros((2, IN)), **FAST)
    with pytest.raises(ValueError, match="holds no tensor"):
        profile_model(_mlp(), (1, 2), **FAST)
    with pytest.raises(ValueError, match="meta device"):
        profile_model(_mlp(), torch.randn(2, IN, device="meta"), **FAST)
    with pytest.raises(ValueError, match="empty first dimension"):
        profile_model(_mlp(), torch.randn(0, IN), **FAST)
    with pytest.raises(TypeError, match="backward must be True or False"):
        profile_model(_mlp(), _x(), backward=1, **FAST)
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        profile_model(_mlp(), _x(), **{**FAST, "repeat": 0})
    with pytest.raises(ValueError, match="min_time_s must be finite and > 0"):
        profile_model(_mlp(), _x(), **{**FAST, "min_time_s": -1.0})
    with pytest.raises(TypeError, match="roofline must be a Roofline"):
        profile_model(_mlp(), _x(), **{**FAST, "roofline": "quick"})


def test_backward_without_a_trainable_output() -> None:
    model = _mlp().requires_grad_(False)
    with pytest.raises(ValueError, match="no output .* requires grad"):
        profile_model(model, _x(), backward=True, **FAST)
