"""A model analysis by family of operation: hand-made module rows with known counts, and
nn.TransformerEncoderLayer against attention's and the feed-forward's MACs worked by hand."""

from __future__ import annotations

import importlib.util

import pytest

from fastbench.analysis.costs import Count
from fastbench.analysis.families import family_of_type, family_shares
from fastbench.analysis.model_analysis import ModuleRow


def _row(path: str, type_: str, macs: int, elementwise: int = 0) -> ModuleRow:
    return ModuleRow(path, type_, 1, (), (), 0, Count(macs, elementwise, 0, 0))


def test_family_names() -> None:
    assert [family_of_type(t) for t in ("MultiheadAttention", "GPT2Attention", "Linear",
                                        "Conv1D", "Conv2d", "LayerNorm", "Embedding",
                                        "MaxPool2d", "GELU", "Sequential")] == [
        "attention", "attention", "linear", "linear", "convolution", "normalization",
        "embedding", "pooling", "activation", None]


def test_own_counts_by_family_with_attention_absorbing_its_projections() -> None:
    rows = [_row("", "Block", 100, 6),            # own: 100 - 60 - 30 = 10 MACs, 6 - 4 = 2
            _row("attn", "SelfAttention", 60, 4),
            _row("attn.proj", "Linear", 20),       # inside attention: counts as attention
            _row("mlp", "Linear", 30)]
    shares = {s.family: s for s in family_shares(rows)}
    assert shares["attention"].count.macs == 60 and shares["attention"].count.flops == 124
    assert shares["linear"].count.macs == 30
    assert shares["other"].count.macs == 10 and shares["other"].count.flops == 22
    assert shares["attention"].share == pytest.approx(124 / 206)
    assert sum(s.share for s in shares.values()) == pytest.approx(1.0)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_transformer_encoder_layer_attention_share_against_hand_worked_macs() -> None:
    import torch

    from fastbench.analysis import analyze

    b, n, d, h, ff = 2, 5, 16, 2, 32
    layer = torch.nn.TransformerEncoderLayer(d, h, dim_feedforward=ff, dropout=0.0,
                                             batch_first=True)
    a = analyze(layer, torch.randn(b, n, d))
    shares = {s.family: s for s in a.families()}
    # Attention: q, k, v projections b*n*d*3d, scores q k^T b*n*n*d, weights times v
    # b*n*n*d, output projection b*n*d*d. Feed-forward: two linears b*n*d*ff each.
    attention_macs = b * n * d * 3 * d + 2 * b * n * n * d + b * n * d * d
    assert shares["attention"].count.macs == attention_macs == 11840
    assert shares["linear"].count.macs == 2 * b * n * d * ff == 10240
    assert shares["normalization"].count.macs == 0
    assert sum(s.count.flops for s in shares.values()) == a.flops
    assert shares["attention"].share == pytest.approx(shares["attention"].count.flops / a.flops)
    text = a.lines()   # the summary is printed by default, whatever max_depth
    assert any(line.split()[:1] == ["attention"] and line.endswith(
        f"{100 * shares['attention'].share:.1f}") for line in text)
    assert any("by family" in line for line in a.lines(max_depth=0))


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_the_fused_inference_path_is_counted_by_part(mode: str) -> None:
    # In eval under no_grad or inference_mode the layer runs one fused kernel
    # (aten::_transformer_encoder_layer_fwd), so no submodule runs; its arithmetic goes to the
    # submodules the unfused path runs it in: the same MACs per module and the same families
    # as with gradients on, worked by hand as above.
    import torch

    from fastbench.analysis import analyze

    b, n, d, h, ff = 2, 5, 16, 2, 32
    layer = torch.nn.TransformerEncoderLayer(d, h, dim_feedforward=ff, batch_first=True).eval()
    x = torch.randn(b, n, d)
    fused = analyze(layer, x, grad_mode=mode)
    assert any("_transformer_encoder_layer_fwd" in op for op in fused.coverage.ops)
    unfused = analyze(layer, x)
    macs = {r.path: r.total.macs for r in fused.modules}
    assert macs == {r.path: r.total.macs for r in unfused.modules}
    assert macs["self_attn"] == b * n * d * 3 * d + 2 * b * n * n * d + b * n * d * d
    assert macs["linear1"] == macs["linear2"] == b * n * d * ff
    assert {s.family: s.count.flops for s in fused.families()} == \
        {s.family: s.count.flops for s in unfused.families()}
    assert fused.flops == unfused.flops
    # The kernel's traffic is the layer's: the parts move nothing of their own, and the
    # roofline places the layer as one kernel, never its parts.
    assert all(r.total.bytes == 0 for r in fused.modules if r.path)
