"""fastbench.analysis.layers: a framework-free ResNet-18 against its known parameter count
and hand-summed MACs, parameter counts and output shapes of every layer kind against torch
modules (when installed), the backward rule for the model's input, the table and the dict,
and every error path."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from fastbench.analysis import formulas as F
from fastbench.analysis.costs import CONVENTION, Count
from fastbench.analysis.layers import (
    ELU, GELU, Activation, AdaptiveAvgPool2d, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNorm3d,
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, Dropout,
    Embedding, Flatten, GroupNorm, Hardsigmoid, Hardswish, Layer, LayerNorm, LeakyReLU, Linear,
    LogSoftmax, MaxPool2d, Mish, MultiHeadAttention, ReLU, ReLU6, Repeat, Residual, RMSNorm,
    Sequential, Sigmoid, SiLU, Softmax, Softplus, Tanh, analyze_layers)


def _basic_block(c_in: int, c_out: int, stride: int) -> Sequential:
    branch = [Conv2d(c_in, c_out, 3, stride, 1, bias=False), BatchNorm2d(c_out), ReLU(),
              Conv2d(c_out, c_out, 3, 1, 1, bias=False), BatchNorm2d(c_out)]
    shortcut = None
    if stride != 1 or c_in != c_out:
        shortcut = Sequential(Conv2d(c_in, c_out, 1, stride, bias=False), BatchNorm2d(c_out))
    return Sequential(Residual(*branch, shortcut=shortcut), ReLU())


def resnet18() -> Sequential:
    return Sequential(
        Conv2d(3, 64, 7, 2, 3, bias=False), BatchNorm2d(64), ReLU(), MaxPool2d(3, 2, 1),
        _basic_block(64, 64, 1), _basic_block(64, 64, 1),
        _basic_block(64, 128, 2), _basic_block(128, 128, 1),
        _basic_block(128, 256, 2), _basic_block(256, 256, 1),
        _basic_block(256, 512, 2), _basic_block(512, 512, 1),
        AdaptiveAvgPool2d(1), Flatten(), Linear(512, 1000),
    )


def test_resnet18_params_and_macs() -> None:
    a = analyze_layers(resnet18(), (1, 3, 224, 224))
    assert a.params == 11_689_512 == resnet18().params
    assert a.output_shape == (1, 1000)
    # Convolution MACs = Cout * Cin * k * k * H_out * W_out, layer by layer:
    stem = 64 * 3 * 7 * 7 * 112 * 112                     # 118,013,952
    layer1 = 4 * (64 * 64 * 9 * 56 * 56)                  # four 3x3 convs at 56x56
    layer2 = (128 * 64 * 9 * 28 * 28                      # strided 3x3
              + 3 * (128 * 128 * 9 * 28 * 28)             # the other three 3x3
              + 128 * 64 * 1 * 28 * 28)                   # 1x1 downsample
    layer3 = 256 * 128 * 9 * 14 * 14 + 3 * (256 * 256 * 9 * 14 * 14) + 256 * 128 * 14 * 14
    layer4 = 512 * 256 * 9 * 7 * 7 + 3 * (512 * 512 * 9 * 7 * 7) + 512 * 256 * 7 * 7
    fc = 512 * 1000
    expected = stem + layer1 + layer2 + layer3 + layer4 + fc
    assert expected == 1_814_073_344
    assert a.macs == expected
    assert a.macs == pytest.approx(1.82e9, rel=0.01)      # the widely quoted "1.8 GMACs"
    assert a.flops == 2 * a.macs + a.elementwise_flops
    assert a.backward == Count() and not a.counts_backward
    convs = [r for r in a.rows if r.type == "Conv2d"]
    assert len(convs) == 20 and sum(r.macs for r in convs) == expected - fc


def test_resnet18_backward() -> None:
    a = analyze_layers(resnet18(), (2, 3, 224, 224), backward=True)
    fwd_macs = 2 * 1_814_073_344
    stem = 2 * 64 * 3 * 7 * 7 * 112 * 112
    assert a.forward.macs == fwd_macs
    # Every conv and linear computes the weight and the input gradient, except the stem,
    # whose input (the image) needs no gradient.
    assert a.backward.macs == 2 * fwd_macs - stem
    assert a.rows[0].backward.macs == stem
    assert a.training and a.counts_backward
    assert a.total == a.forward + a.backward


def test_paths_rows_and_shares() -> None:
    a = analyze_layers(resnet18(), (1, 3, 224, 224))
    paths = [r.path for r in a.rows]
    assert paths[:5] == ["0", "1", "2", "3", "4.0.0"]
    assert "6.0.shortcut.0" in paths and "6.0.add" in paths and "6.1" in paths
    add = a.rows[paths.index("4.0.add")]
    assert add.type == "Add" and add.forward.elementwise_flops == 64 * 56 * 56
    assert sum(r.share for r in a.rows) == pytest.approx(1.0)
    assert sum(r.flops for r in a.rows) == a.flops
    assert sum(r.bytes for r in a.rows) == a.bytes
    row = a.rows[paths.index("3")]
    assert (row.input_shape, row.output_shape) == ((1, 64, 112, 112), (1, 64, 56, 56))


def _transformer(vocab: int = 1000, d: int = 64, heads: int = 4, blocks: int = 2) -> Sequential:
    block = Sequential(
        ("attn_block", Residual(("ln", LayerNorm(d)), ("attn", MultiHeadAttention(d, heads,
                                                                                  causal=True)))),
        ("mlp", Residual(LayerNorm(d), Linear(d, 4 * d), GELU(), Linear(4 * d, d), Dropout(0.1))),
    )
    return Sequential(("embed", Embedding(vocab, d)), ("blocks", Repeat(blocks, block)),
                      ("ln_f", LayerNorm(d)), ("head", Linear(d, vocab, bias=False)))


def test_transformer_totals_equal_the_formulas() -> None:
    b, s, d, v = 2, 16, 64, 1000
    a = analyze_layers(_transformer(), (b, s))
    paths = [r.path for r in a.rows]
    assert "blocks.1.attn_block.attn" in paths and "blocks.0.mlp.add" in paths
    attn = F.attention(b, s, d, 4, causal=True)
    mlp = F.linear(d, 4 * d, batch=(b, s)).forward.macs + F.linear(4 * d, d,
                                                                   batch=(b, s)).forward.macs
    assert a.macs == 2 * (attn.forward.macs + mlp) + b * s * d * v
    params = (v * d + 2 * (2 * d + attn.params + 2 * d + d * 4 * d + 4 * d + 4 * d * d + d)
              + 2 * d + d * v)
    assert a.params == params
    # Forward-only analysis is inference: dropout costs nothing.
    assert a.rows[paths.index("blocks.0.mlp.4")].forward == Count()
    train = analyze_layers(_transformer(), (b, s), training=True)
    assert train.rows[paths.index("blocks.0.mlp.4")].forward.elementwise_flops == \
        b * s * d * F.ELEMENTWISE_FLOPS["dropout"]
    assert a.output_shape == (b, s, v)


def test_first_layer_input_needs_no_gradient() -> None:
    spec = Sequential(ReLU(), Linear(4, 3), ReLU(), Linear(3, 2))
    a = analyze_layers(spec, (5, 4), backward=True)
    relu0, fc1, relu2, fc3 = a.rows
    assert relu0.backward == Count()                     # nothing upstream needs a gradient
    assert fc1.backward.macs == fc1.forward.macs         # weight gradient only
    assert relu2.backward.elementwise_flops == 5 * 3 * F.ELEMENTWISE_FLOPS["relu_backward"]
    assert fc3.backward.macs == 2 * fc3.forward.macs     # weight and input gradients
    cost, out = spec.cost((5, 4), input_grad=False)
    assert out == (5, 2) and cost.backward == a.backward and cost.params == spec.params


def test_batch_norm_mode_follows_training() -> None:
    spec = Sequential(Conv2d(3, 8, 3, padding=1), BatchNorm2d(8))
    n = 2 * 8 * 10 * 10
    inference = analyze_layers(spec, (2, 3, 10, 10))
    assert inference.rows[1].forward.elementwise_flops == n * F.ELEMENTWISE_FLOPS["batch_norm_eval"]
    train = analyze_layers(spec, (2, 3, 10, 10), backward=True)
    assert train.rows[1].forward.elementwise_flops == n * F.ELEMENTWISE_FLOPS["batch_norm"]
    forced = analyze_layers(spec, (2, 3, 10, 10), training=True)
    assert forced.rows[1].forward == train.rows[1].forward and forced.backward == Count()


def test_repeat_and_container_costs() -> None:
    r = Repeat(3, Linear(8, 8))
    assert r.params == 3 * 72
    a = analyze_layers(Sequential(r), (4, 8))
    assert [row.path for row in a.rows] == ["0.0", "0.1", "0.2"]
    cost, out = r.cost((4, 8))
    assert out == (4, 8) and cost.forward.macs == 3 * 4 * 64 and cost.params == 3 * 72
    res = Residual(Linear(8, 8))
    cost, _ = res.cost((4, 8))
    assert cost.forward.elementwise_flops == 4 * 8 + 4 * 8    # bias add and skip add


def test_table_and_dict() -> None:
    a = analyze_layers(resnet18(), (1, 3, 224, 224))
    text = str(a)
    assert CONVENTION in text
    assert text.splitlines()[0].startswith("layer analysis: input (1, 3, 224, 224)")
    assert "MACs" in text and "%FLOPs" in text and "6.0.shortcut.0" in text
    assert a.lines()[-1] == f"  ({CONVENTION})"
    b = analyze_layers(resnet18(), (1, 3, 224, 224), backward=True)
    assert "backward:" in str(b) and "needs no gradient" in str(b)
    d = json.loads(json.dumps(b.to_dict()))
    assert d["params"] == 11_689_512 and d["macs"] == b.macs and d["counts_backward"]
    assert len(d["rows"]) == len(b.rows) and d["convention"] == CONVENTION
    assert d["rows"][0]["backward"]["macs"] == b.rows[0].backward.macs


# -- every layer kind against torch -------------------------------------------------------
CASES: list[tuple[Layer, str, tuple[int, ...]]] = [
    (Linear(12, 7), "nn.Linear(12, 7)", (3, 5, 12)),
    (Linear(12, 7, bias=False), "nn.Linear(12, 7, bias=False)", (12,)),
    (Conv1d(4, 6, 3, stride=2, padding=1, groups=2), "nn.Conv1d(4, 6, 3, 2, 1, groups=2)",
     (2, 4, 11)),
    (Conv2d(4, 8, (3, 5), stride=(2, 1), padding=(1, 2), dilation=1,
            bias=False), "nn.Conv2d(4, 8, (3, 5), (2, 1), (1, 2), bias=False)", (1, 4, 9, 10)),
    (Conv2d(4, 4, 3, padding="same", dilation=2, groups=4),
     "nn.Conv2d(4, 4, 3, padding='same', dilation=2, groups=4)", (1, 4, 9, 9)),
    (Conv3d(2, 4, 3, padding=1), "nn.Conv3d(2, 4, 3, padding=1)", (1, 2, 5, 6, 7)),
    (ConvTranspose1d(4, 6, 4, stride=2, padding=1, groups=2),
     "nn.ConvTranspose1d(4, 6, 4, stride=2, padding=1, groups=2)", (2, 4, 9)),
    (ConvTranspose2d(8, 4, 3, 2, 1, 1), "nn.ConvTranspose2d(8, 4, 3, 2, 1, 1)", (1, 8, 5, 5)),
    (ConvTranspose3d(2, 3, 2, stride=2, bias=False),
     "nn.ConvTranspose3d(2, 3, 2, stride=2, bias=False)", (1, 2, 3, 3, 3)),
    (MultiHeadAttention(32, 4), "nn.MultiheadAttention(32, 4, batch_first=True)", (2, 6, 32)),
    (MultiHeadAttention(32, 4, bias=False),
     "nn.MultiheadAttention(32, 4, bias=False, batch_first=True)", (2, 6, 32)),
    (LayerNorm(16), "nn.LayerNorm(16)", (2, 3, 16)),
    (LayerNorm((3, 16), affine=False), "nn.LayerNorm((3, 16), elementwise_affine=False)",
     (2, 3, 16)),
    (RMSNorm(16), "nn.RMSNorm(16)", (2, 3, 16)),
    (BatchNorm1d(6), "nn.BatchNorm1d(6)", (4, 6, 5)),
    (BatchNorm2d(6, affine=False), "nn.BatchNorm2d(6, affine=False)", (4, 6, 3, 3)),
    (BatchNorm3d(6), "nn.BatchNorm3d(6)", (2, 6, 2, 3, 3)),
    (GroupNorm(3, 6), "nn.GroupNorm(3, 6)", (2, 6, 4, 4)),
    (ReLU(), "nn.ReLU()", (2, 5)), (LeakyReLU(), "nn.LeakyReLU()", (2, 5)),
    (GELU(), "nn.GELU()", (2, 5)), (GELU("tanh"), "nn.GELU('tanh')", (2, 5)),
    (SiLU(), "nn.SiLU()", (2, 5)), (Sigmoid(), "nn.Sigmoid()", (2, 5)),
    (Tanh(), "nn.Tanh()", (2, 5)), (Hardswish(), "nn.Hardswish()", (2, 5)),
    (Hardsigmoid(), "nn.Hardsigmoid()", (2, 5)), (ReLU6(), "nn.ReLU6()", (2, 5)),
    (ELU(), "nn.ELU()", (2, 5)), (Softplus(), "nn.Softplus()", (2, 5)),
    (Mish(), "nn.Mish()", (2, 5)),
    (Softmax(-1), "nn.Softmax(-1)", (2, 5)), (LogSoftmax(1), "nn.LogSoftmax(1)", (2, 5)),
    (MaxPool2d(3, 2, 1), "nn.MaxPool2d(3, 2, 1)", (1, 2, 11, 11)),
    (MaxPool2d(2, ceil_mode=True), "nn.MaxPool2d(2, ceil_mode=True)", (2, 7, 7)),
    (MaxPool2d((3, 2), stride=(1, 2), dilation=(2, 1)),
     "nn.MaxPool2d((3, 2), stride=(1, 2), dilation=(2, 1))", (1, 2, 9, 8)),
    (AvgPool2d(3, 2, 1, ceil_mode=True), "nn.AvgPool2d(3, 2, 1, ceil_mode=True)",
     (1, 2, 10, 10)),
    (AdaptiveAvgPool2d((3, None)), "nn.AdaptiveAvgPool2d((3, None))", (1, 2, 10, 6)),
    (AdaptiveAvgPool2d(1), "nn.AdaptiveAvgPool2d(1)", (1, 2, 7, 7)),
    (Flatten(), "nn.Flatten()", (2, 3, 4, 5)), (Flatten(0, 1), "nn.Flatten(0, 1)", (2, 3, 4)),
    (Dropout(0.2), "nn.Dropout(0.2)", (2, 5)),
]


@pytest.mark.parametrize("spec, module, shape", CASES, ids=[c[1] for c in CASES])
def test_params_and_output_shape_match_torch(spec: Layer, module: str,
                                             shape: tuple[int, ...]) -> None:
    torch = pytest.importorskip("torch")
    m = eval(module, {"nn": torch.nn})
    assert spec.params == sum(p.numel() for p in m.parameters())
    x = torch.randn(shape)
    with torch.no_grad():
        y = m(x, x, x)[0] if isinstance(m, torch.nn.MultiheadAttention) else m(x)
    cost, out = spec.cost(shape)
    assert out == tuple(y.shape)
    assert cost.params == spec.params


def test_embedding_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    m = torch.nn.Embedding(100, 16)
    spec = Embedding(100, 16)
    assert spec.params == sum(p.numel() for p in m.parameters())
    assert spec.cost((4, 7))[1] == tuple(m(torch.zeros(4, 7, dtype=torch.long)).shape)


# -- errors -------------------------------------------------------------------------------
def test_shape_errors_name_the_path_and_both_shapes() -> None:
    spec = Sequential(Linear(4, 8), ("fc", Linear(16, 2)))
    with pytest.raises(ValueError, match=r"layer fc \(Linear\): expected input shape "
                                         r"\(\.\.\., 16\), got \(2, 8\)"):
        analyze_layers(spec, (2, 4))
    nested = Sequential(ReLU(), Sequential(Conv2d(3, 8, 3)))
    with pytest.raises(ValueError, match=r"layer 1\.0 \(Conv2d\): expected input shape "
                                         r"\(N, 3, \*, \*\).*got \(1, 4, 8, 8\)"):
        analyze_layers(nested, (1, 4, 8, 8))
    res = Sequential(Residual(Linear(4, 8)))
    with pytest.raises(ValueError, match=r"layer 0 \(Residual\): the branch output \(2, 8\) "
                                         r"does not match the skip \(2, 4\)"):
        analyze_layers(res, (2, 4))
    with pytest.raises(ValueError, match=r"layer \(model\) \(MaxPool2d\).*\(4, 8\)"):
        analyze_layers(MaxPool2d(2), (4, 8))
    with pytest.raises(ValueError, match=r"layer 0 \(Conv2d\).*smaller than the kernel"):
        analyze_layers(Sequential(Conv2d(3, 8, 5)), (1, 3, 2, 2))
    with pytest.raises(ValueError, match=r"layer 0 \(MultiHeadAttention\).*\(B, S, 32\)"):
        analyze_layers(Sequential(MultiHeadAttention(32, 4)), (2, 32))
    with pytest.raises(ValueError, match=r"\(N, 6, \*, \*\)"):
        BatchNorm2d(6).cost((2, 5, 3, 3))
    with pytest.raises(ValueError, match="start_dim=1 and end_dim=-1"):
        Flatten().cost((5,))
    with pytest.raises(ValueError, match=r"\(\.\.\., 16\)"):
        LayerNorm(16).cost((2, 8))
    with pytest.raises(ValueError, match=r"\(N, 6, \*\)"):
        GroupNorm(3, 6).cost((2, 4, 5))


@pytest.mark.parametrize("build, exc, match", [
    (lambda: Linear(0, 3), ValueError, "Linear: in_features must be positive, got 0"),
    (lambda: Linear(3, 2.0), TypeError, "out_features"),
    (lambda: Linear(3, 2, bias=None), TypeError, "bias"),
    (lambda: Conv2d(3, 8, 3, groups=2), ValueError, "groups=2 must divide in_channels=3"),
    (lambda: Conv2d(4, 8, (3, 3, 3)), ValueError, "kernel_size must be an int or 2 ints"),
    (lambda: Conv2d(4, 8, 3, padding=-1), ValueError, "padding must be >= 0"),
    (lambda: ConvTranspose2d(4, 8, 3, output_padding=-1), ValueError, "output_padding"),
    (lambda: MultiHeadAttention(10, 3), ValueError, "heads=3 must divide d_model=10"),
    (lambda: GroupNorm(3, 8), ValueError, "num_groups=3 must divide num_channels=8"),
    (lambda: LayerNorm(()), ValueError, "normalized_shape"),
    (lambda: BatchNorm2d(0), ValueError, "num_features"),
    (lambda: Activation("swish"), ValueError, "unknown kind 'swish'"),
    (lambda: GELU("fast"), ValueError, "approximate"),
    (lambda: Dropout(1.5), ValueError, r"\[0, 1\]"),
    (lambda: MaxPool2d(0), ValueError, "kernel_size"),
    (lambda: AvgPool2d(2, stride=(1, 2, 3)), ValueError, "stride"),
    (lambda: AdaptiveAvgPool2d((1, 2, 3)), ValueError, "output_size"),
    (lambda: AdaptiveAvgPool2d(0), ValueError, "output_size"),
    (lambda: Embedding(10, 0), ValueError, "embedding_dim"),
    (lambda: Repeat(0, ReLU()), ValueError, "Repeat: n must be positive"),
    (lambda: Repeat(2, "relu"), TypeError, "layer spec"),
    (lambda: Sequential(ReLU(), "relu"), TypeError, "item 1"),
    (lambda: Sequential(("a", ReLU()), ("a", ReLU())), ValueError, "duplicate layer name 'a'"),
    (lambda: Sequential(("a.b", ReLU())), ValueError, "without '.'"),
    (lambda: Residual(ReLU(), shortcut="conv"), TypeError, "shortcut"),
    (lambda: Softmax(1.0), TypeError, "dim"),
])
def test_constructor_errors(build: Callable[[], Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        build()


def test_analyze_layers_argument_errors() -> None:
    with pytest.raises(TypeError, match="spec must be a layer spec"):
        analyze_layers("resnet", (1, 3, 8, 8))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dimension 1 must be positive"):
        analyze_layers(ReLU(), (2, 0))
    with pytest.raises(TypeError, match="input shape"):
        analyze_layers(ReLU(), 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="backward"):
        analyze_layers(ReLU(), (2,), backward=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="training"):
        analyze_layers(ReLU(), (2,), training="yes")  # type: ignore[arg-type]
