"""The PyTorch model analyzer: exact parameter counts, MACs against hand-derived formulas and
torch's own FlopCounterMode, equal counts across attention implementations and autograd modes,
backward attribution, the coverage report, the memory estimate and the result's plain data."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")

import fastbench  # noqa: E402
from fastbench.analysis import ModelAnalysis, TorchUnavailable, analyze, models  # noqa: E402
from fastbench.analysis.costs import Count  # noqa: E402
from fastbench.roofline import Roofline  # noqa: E402

nn = torch.nn
F = torch.nn.functional


def _meta(name: str, **kwargs: object) -> ModelAnalysis:
    factory = models.MODELS[name]
    model = factory(device="meta", **kwargs)
    return analyze(model, *model.example_input(1, device="meta"))


# -- parameters -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, expected", [
    ("resnet18", 11_689_512), ("resnet50", 25_557_032), ("mobilenet_v2", 3_504_872),
    ("vit_b_16", 86_567_656), ("gpt2_small", 124_439_808), ("bert_base", 109_482_240),
])
def test_published_parameter_counts(name: str, expected: int) -> None:
    a = _meta(name)
    assert a.params == expected
    assert a.parameters.trainable == expected and a.parameters.frozen == 0
    assert a.parameters.bytes == 4 * expected
    assert a.complete, a.coverage.lines()


def test_tied_gpt2_head_is_listed_and_counted_once() -> None:
    a = _meta("gpt2_small")
    assert len(a.parameters.tied) == 1
    assert sorted(a.parameters.tied[0]) == ["lm_head.weight", "wte.weight"]
    # Summed name by name, the shared matrix (50257 x 768) counts twice.
    assert a.parameters.naive_total == 124_439_808 + 50257 * 768


def test_weights_tied_by_storage_not_object_count_once() -> None:
    emb = nn.Embedding(10, 4)
    head = nn.Linear(4, 10, bias=False)
    head.weight = nn.Parameter(emb.weight.data)   # same storage, different Parameter
    model = nn.Sequential(emb, head)
    a = analyze(model, torch.zeros(2, 3, dtype=torch.long))
    assert a.params == 40
    assert len(a.parameters.tied) == 1 and len(a.parameters.tied[0]) == 2


def test_frozen_parameters_and_buffers() -> None:
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 4))
    for p in model[0].parameters():
        p.requires_grad_(False)
    a = analyze(model, torch.randn(5, 8))
    assert a.parameters.frozen == 8 * 16 + 16
    assert a.parameters.trainable == 2 * 16 + 16 * 4 + 4
    assert a.parameters.buffers == 16 + 16 + 1          # running mean, var, batch count
    assert a.memory.gradients_bytes == 4 * a.parameters.trainable


# -- MACs against hand-derived formulas ----------------------------------------------------------
def _resnet18_macs(size: int = 224) -> int:
    """Every conv and the classifier of ResNet-18, written out."""
    s = size // 2                                  # after the stride-2 stem
    macs = 64 * 3 * 7 * 7 * s * s
    s //= 2                                        # max pool
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        if stage:
            s //= 2
        for block in range(2):
            first_in = cin if block == 0 else cout
            macs += cout * first_in * 9 * s * s + cout * cout * 9 * s * s
            if block == 0 and first_in != cout:
                macs += cout * first_in * s * s  # 1x1 downsample
        cin = cout
    return macs + 512 * 1000


def _transformer_macs(layers: int, d: int, seq: int, mlp: int, batch: int = 1) -> int:
    """Q, K, V and output projections, QK^T and A.V in full (per sequence), and the MLP, per
    layer."""
    tokens = batch * seq
    return layers * (4 * d * d * tokens + batch * 2 * seq * seq * d + 2 * d * mlp * tokens)


def test_resnet18_macs_exact() -> None:
    a = _meta("resnet18")
    assert a.macs == _resnet18_macs() == 1_814_073_344
    assert a.module("fc").forward.macs == 512 * 1000
    assert a.module("conv1").forward.macs == 64 * 3 * 49 * 112 * 112


def test_gpt2_macs_exact_with_head() -> None:
    a = _meta("gpt2_small")
    t = 128
    assert a.macs == _transformer_macs(12, 768, t, 3072) + 50257 * 768 * t


def test_bert_macs_exact_with_pooler() -> None:
    a = _meta("bert_base")
    assert a.macs == _transformer_macs(12, 768, 128, 3072) + 768 * 768


def test_vit_b16_macs_exact() -> None:
    a = _meta("vit_b_16")
    tokens = 14 * 14 + 1
    patch = 768 * 3 * 16 * 16 * 14 * 14
    assert a.macs == patch + _transformer_macs(12, 768, tokens, 3072) + 768 * 1000


def test_matches_torch_flop_counter_where_it_counts_everything() -> None:
    """torch's FlopCounterMode counts conv and matmul FLOPs (2 per MAC) and nothing else: on a
    CNN without attention it must agree with 2 x our MACs."""
    from torch.utils.flop_counter import FlopCounterMode

    for name in ("resnet18", "mobilenet_v2"):
        model = models.MODELS[name](device="meta")
        x = model.example_input(1, device="meta")
        with FlopCounterMode(display=False) as fc:
            model(*x)
        assert 2 * analyze(model, *x).macs == fc.get_total_flops()


def test_functional_matmul_operator_is_seen() -> None:
    class Gram(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ x.transpose(-2, -1)

    a = analyze(Gram(), torch.randn(3, 5, 7))
    assert a.macs == 3 * 5 * 7 * 5


# -- attention implementations and autograd modes ------------------------------------------------
def _small(name: str, attention: str) -> nn.Module:
    if name == "gpt2":
        return models.gpt2_small(vocab_size=97, max_positions=32, layers=2, width=64, heads=4,
                                 attention=attention, dropout=0.0)
    if name == "bert":
        return models.bert_base(vocab_size=97, max_positions=32, layers=2, width=64, heads=4,
                                attention=attention, dropout=0.0)
    return models.vit_b_16(image_size=32, patch_size=8, layers=2, width=64, heads=4,
                           num_classes=10, attention=attention)


@pytest.mark.parametrize("name", ["gpt2", "bert", "vit"])
def test_counts_equal_across_attention_and_autograd_modes(name: str) -> None:
    torch.manual_seed(0)
    results = {}
    for attention in ("explicit", "sdpa", "mha"):
        model = _small(name, attention).eval()
        inputs = model.example_input(2)
        for mode in ("grad", "no_grad", "inference_mode"):
            results[attention, mode] = analyze(model, *inputs, grad_mode=mode)
    macs = {k: a.macs for k, a in results.items()}
    assert len(set(macs.values())) == 1, macs
    for attention in ("explicit", "sdpa", "mha"):
        flops = {mode: results[attention, mode].flops for mode in ("grad", "no_grad", "inference_mode")}
        assert len(set(flops.values())) == 1, (attention, flops)
    for a in results.values():
        assert a.complete, a.coverage.lines()
    # Elementwise work too: the explicit and SDPA forms scale, (mask and) softmax every score
    # once. Bytes are not compared: they follow the kernels that ran (a fused kernel moves less).
    assert results["explicit", "grad"].flops == results["sdpa", "grad"].flops
    # The fused paths were really taken: SDPA's CPU kernel, and nn.MultiheadAttention's fused
    # inference path in eval under no_grad.
    assert "_scaled_dot_product_flash_attention_for_cpu" in results["sdpa", "grad"].coverage.ops
    assert "_native_multi_head_attention" in results["mha", "no_grad"].coverage.ops
    # And the count is the formula's.
    if name in ("gpt2", "bert"):
        batch, t = inputs[0].shape
        head = 97 * 64 * batch * t if name == "gpt2" else 64 * 64 * batch   # LM head, pooler
        assert macs["sdpa", "grad"] == _transformer_macs(2, 64, t, 256, batch) + head


def test_fused_attention_is_not_zero() -> None:
    q = torch.randn(1, 2, 8, 4)

    class Attn(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.scaled_dot_product_attention(x, x, x, is_causal=True)

    a = analyze(Attn(), q)
    assert a.macs == 2 * 2 * 8 * 8 * 4     # QK^T and A.V over 2 heads, counted in full


# -- backward -----------------------------------------------------------------------------------
def test_resnet18_backward_is_two_forwards_minus_the_stems_input_gradient() -> None:
    model = models.resnet18(device="meta")
    a = analyze(model, *model.example_input(1, device="meta"), backward=True)
    assert a.backward is not None
    stem = 64 * 3 * 49 * 112 * 112
    assert a.backward.macs == 2 * a.forward.macs - stem
    assert a.macs == a.forward.macs + a.backward.macs
    # Attribution: the stem's backward is its weight gradient only, charged to conv1.
    assert a.module("conv1").backward.macs == stem
    assert a.module("fc").backward.macs == 2 * 512 * 1000


def test_grouped_conv_backward_is_sane() -> None:
    model = models.mobilenet_v2(device="meta")
    a = analyze(model, *model.example_input(1, device="meta"), backward=True)
    assert a.backward is not None
    ratio = (a.forward.flops + a.backward.flops) / a.forward.flops
    assert 2.5 <= ratio <= 3.5, ratio
    depthwise = a.module("features.2.conv.3")     # 96 groups of one channel
    assert depthwise.type == "Conv2d"
    assert depthwise.backward.macs == 2 * depthwise.forward.macs


def test_backward_leaves_grads_untouched() -> None:
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    analyze(model, torch.randn(5, 4), backward=True)
    assert all(p.grad is None for p in model.parameters())


def test_module_rows_sum_to_the_total() -> None:
    model = models.small_cnn()
    a = analyze(model, *model.example_input(2), backward=True)
    root = a.module("")
    assert root.forward == a.forward and root.backward == a.backward
    children = [r for r in a.modules if r.depth == 1]
    assert sum((r.total for r in children), Count()).macs == a.macs


# -- coverage -----------------------------------------------------------------------------------
def test_unknown_custom_op_makes_the_result_incomplete() -> None:
    lib = "fastbench_test"

    @torch.library.custom_op(f"{lib}::mystery", mutates_args=())
    def mystery(x: torch.Tensor) -> torch.Tensor:
        return x * 2 + 1

    @mystery.register_fake
    def _(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return mystery(mystery(self.fc(x)))

    a = analyze(Net(), torch.randn(3, 6))
    assert not a.complete
    (u,) = a.coverage.uncounted
    assert u.name == f"{lib}.mystery" and u.calls == 2 and u.output_shapes == ((3, 6),)
    assert u.floating
    assert any("INCOMPLETE" in line for line in a.lines())
    assert a.macs == 6 * 6 * 3               # what was counted is still there


# -- meta versus real, memory --------------------------------------------------------------------
def test_meta_and_real_inputs_count_alike() -> None:
    real = models.resnet18(num_classes=10)
    meta = models.resnet18(num_classes=10, device="meta")
    x = torch.randn(1, 3, 64, 64)
    a, b = analyze(real, x), analyze(meta, x.to("meta"))
    assert a.macs == b.macs == _resnet18_macs(64) - 512 * 1000 + 512 * 10
    assert a.flops == b.flops and a.bytes == b.bytes


def test_saved_activations_and_peak_of_a_small_mlp() -> None:
    model = nn.Sequential(nn.Linear(100, 200), nn.ReLU(), nn.Linear(200, 10))
    a = analyze(model, torch.randn(32, 100))
    # addmm saves its input and weight (the model input and a parameter, both excluded); relu
    # saves its result: the only activation kept for backward.
    assert a.memory.activations_bytes == 32 * 200 * 4
    # Freed after last use: the first linear's output and relu's live together at most.
    assert a.memory.inference_peak_bytes == 2 * 32 * 200 * 4
    params = (100 * 200 + 200 + 200 * 10 + 10) * 4
    assert a.memory.params_bytes == params
    # Training: the same forward peak (relu's result, saved, then lives beside the small
    # output and its gradient: less).
    assert a.memory.training_peak_bytes == 2 * 32 * 200 * 4
    assert a.memory.training_bytes("adam") == 4 * params + 2 * 32 * 200 * 4 + 32 * 100 * 4
    assert a.memory.training_bytes("sgd") == 2 * params + 2 * 32 * 200 * 4 + 32 * 100 * 4


def test_no_grad_forward_has_no_training_estimate() -> None:
    a = analyze(nn.Linear(4, 4), torch.randn(2, 4), grad_mode="no_grad")
    assert a.memory.activations_bytes is None and a.memory.training_bytes() is None


# -- plain data, roofline, errors ----------------------------------------------------------------
def test_round_trip_through_a_results_file(tmp_path: object) -> None:
    a = analyze(models.mlp(), *models.mlp.example_input(4), backward=True)
    path = tmp_path / "a.json"  # type: ignore[operator]
    fastbench.save(a, path)
    b = fastbench.load(path)
    assert isinstance(b, ModelAnalysis)
    assert b == a
    assert str(b) == str(a)


def test_place_on_a_synthetic_roofline() -> None:
    roof = Roofline(compute={"fma float32": 100.0}, memory={"DRAM": 10.0}, threads=1,
                    quick=True, machine={})
    a = analyze(models.mlp(), *models.mlp.example_input(1))
    placed = {p.path: p for p in a.place_on(roof)}
    fc = placed[next(r.path for r in a.modules if r.type == "Linear")]
    assert fc.attainable_gflops == pytest.approx(min(100.0, 10.0 * fc.flops / fc.bytes))
    assert fc.bound == ("memory-bound" if fc.flops / fc.bytes < 10.0 else "compute-bound")
    assert fc.min_time_s == pytest.approx(fc.flops / (fc.attainable_gflops * 1e9))


def test_each_module_is_placed_against_the_fastest_level_its_bytes_fit() -> None:
    # One thread: L1 32 KiB, L2 1 MiB, L3 32 MiB. A module whose inputs, outputs and
    # parameters fit a level could find them all there (the layer before just wrote them),
    # so its least time is judged on that level's ceiling, else it would not be a bound.
    bandwidth = {"L1": 400.0, "L2": 200.0, "L3": 100.0, "DRAM": 10.0}
    roof = Roofline(compute={"fma float32": 100.0}, memory=bandwidth, threads=1, quick=True,
                    machine={"caches": ["L1 Data 32768", "L2 Unified 1048576",
                                        "L3 Unified 33554432"]})
    net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 512), nn.ReLU())
    a = analyze(net, torch.ones(64, 8))
    placed = {p.path: p for p in a.place_on(roof)}
    capacity = {"L1": 32768, "L2": 1048576, "L3": 33554432}
    leaves = {path: p for path, p in placed.items() if path}
    for path, p in leaves.items():
        want = next((lv for lv, cap in capacity.items() if p.bytes <= cap), "DRAM")
        assert p.level == want, (path, p.bytes)
        assert p.attainable_gflops == pytest.approx(min(100.0, bandwidth[want] * p.intensity))
        assert p.min_time_s == pytest.approx(p.flops / (p.attainable_gflops * 1e9))
    # Linear(8, 8) on 64 rows moves 2 KiB + 2 KiB + 288 B: L1. Linear(8, 512) writes
    # 64 x 512 floats (128 KiB): past L1, within L2.
    assert placed["0"].level == "L1" and placed["2"].level == "L2"
    # The Sequential's bytes count each intermediate twice (written, then read): it is the
    # sum of its parts, each on its own level, ReLUs included, and its verdict is that of
    # the parts holding most of that time (Linear(8, 512): 5.2 µs of compute against 0.7
    # of L2 traffic).
    root = placed[""]
    parts = memory_bound = 0.0
    for row in a.modules:
        if row.path:
            c = row.total
            lv = next((lv for lv, cap in capacity.items() if c.bytes <= cap), "DRAM")
            compute, memory = c.flops / 100e9, c.bytes / (bandwidth[lv] * 1e9)
            parts += max(compute, memory)
            memory_bound += memory if memory > compute else 0.0
    assert root.min_time_s == pytest.approx(parts, rel=1e-12)
    assert memory_bound < parts / 2
    assert root.level == "L1+L2" and root.bound == "compute-bound"
    assert placed["3"].bound == "memory-bound"  # the last ReLU alone
    assert root.attainable_gflops == pytest.approx(root.flops / root.min_time_s / 1e9)
    # A level given places every part there.
    dram = a.place_on(roof, level="DRAM")
    assert {p.level for p in dram} == {"DRAM"}
    assert all(p.min_time_s >= placed[p.path].min_time_s for p in dram)
    with pytest.raises(ValueError, match="level must be one of"):
        a.place_on(roof, level="L4")


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="nn.Module"):
        analyze(lambda x: x, torch.ones(1))
    with pytest.raises(ValueError, match="input"):
        analyze(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="grad_mode"):
        analyze(nn.Linear(2, 2), torch.ones(1, 2), grad_mode="fast")
    with pytest.raises(ValueError, match="backward"):
        analyze(nn.Linear(2, 2), torch.ones(1, 2), backward=True, grad_mode="no_grad")


def test_torch_absent_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(TorchUnavailable, match="needs torch"):
        analyze(object(), object())


# -- the framework-free description counts alike ---------------------------------------------------
@pytest.mark.parametrize("name", ["mlp", "small_cnn", "transformer_block"])
def test_layer_specs_and_torch_count_alike(name: str) -> None:
    """Two independent routes, closed-form layer formulas and the aten ops PyTorch runs: the
    same parameters and MACs forward and backward, the same forward FLOPs in eval mode, and
    backward FLOPs within 0.1% (the autograd engine's gradient sums at branch points and
    batch norm's step counter are aten ops the layer formulas leave out)."""
    from fastbench.analysis import specs
    from fastbench.analysis.layers import analyze_layers

    spec, shape = specs.SPECS[name](2)
    model = getattr(models, name)()
    x = torch.randn(shape)
    inference = analyze(model.eval(), x)
    described = analyze_layers(spec, shape)
    assert inference.params == described.params
    assert inference.macs == described.macs
    assert inference.flops == described.flops
    step = analyze(model.train(), x, backward=True)
    described = analyze_layers(spec, shape, backward=True)
    assert step.backward is not None
    assert step.macs == described.macs and step.backward.macs == described.backward.macs
    assert step.backward.flops == pytest.approx(described.backward.flops, rel=1e-3)


def test_recurrent_layers_are_counted_exactly() -> None:
    """nn.LSTM and nn.GRU run one fused oneDNN op per layer on CPU: every time step multiplies
    the input by W_ih and the hidden state by W_hh (4 gates for LSTM, 3 for GRU)."""
    lstm, gru = nn.LSTM(16, 32, batch_first=True), nn.GRU(32, 8, batch_first=True)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm, self.gru = lstm, gru

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.gru(self.lstm(x)[0])[0]

    steps = 3 * 7                                   # batch 3, 7 time steps
    for mode in ("grad", "no_grad"):
        a = analyze(Net(), torch.randn(3, 7, 16), grad_mode=mode, backward=mode == "grad")
        assert a.complete, a.coverage.lines()
        assert a.module("lstm").forward.macs == steps * (4 * 32 * 16 + 4 * 32 * 32)
        assert a.module("gru").forward.macs == steps * (3 * 8 * 32 + 3 * 8 * 8)
        if mode == "grad":
            # Gradients through both products and for both weights: twice the forward, less
            # at most the first step's product with the initial hidden state, which needs no
            # gradient (PyTorch's unfused GRU path skips it; 3 gates x 8 x 8, batch 3).
            assert a.backward is not None
            assert 2 * a.forward.macs - 3 * 3 * 8 * 8 <= a.backward.macs <= 2 * a.forward.macs


def test_common_layers_leave_nothing_uncounted() -> None:
    class Misc(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.ConvTranspose2d(4, 4, 2, stride=2)
            self.gn = nn.GroupNorm(2, 4)
            self.bag = nn.EmbeddingBag(10, 8)
            self.prelu = nn.PReLU()

        def forward(self, x: torch.Tensor, img: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
            z = F.interpolate(self.gn(self.up(img)), scale_factor=2, mode="bilinear")
            loss = F.cross_entropy(self.prelu(x), torch.zeros(x.shape[0], dtype=torch.long))
            return z.sum() + self.bag(idx).sum() + loss + torch.sigmoid_(x.clone()).sum()

    a = analyze(Misc(), torch.randn(5, 16), torch.randn(1, 4, 6, 6),
                torch.randint(0, 10, (3, 4)), backward=True)
    assert a.complete, a.coverage.lines()
    # The transposed conv: every input element times (c_out / groups) x kernel volume.
    assert a.module("up").forward.macs == 4 * 6 * 6 * 4 * 2 * 2
    assert a.module("bag").forward.elementwise_flops == 3 * 4 * 8      # rows added into bags
