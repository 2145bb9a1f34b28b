"""Tests of fastbench.analysis.models: published parameter counts (full-size models built on
the meta device), output shapes, a numpy reference for the transformer block, and the three
attention implementations agreeing after their weights are copied.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy.special import erf

torch = pytest.importorskip("torch")

from fastbench.pytorch import models as M  # noqa: E402  (needs torch, skipped without it)

# Published counts: torchvision's model docs for the image models, Hugging Face's gpt2 and
# bert-base-uncased checkpoints for the language models.
PUBLISHED = {
    "resnet18": 11_689_512,
    "resnet50": 25_557_032,
    "mobilenet_v2": 3_504_872,
    "vit_b_16": 86_567_656,
    "gpt2_small": 124_439_808,
    "bert_base": 109_482_240,
}

TINY_LM = {"layers": 2, "width": 32, "heads": 4, "max_positions": 32}


def unique_param_count(model: Any) -> int:
    """Elements of the distinct Parameter objects, each counted once however often it is
    registered (by identity: on the meta device there is no storage address to compare)."""
    seen: dict[int, Any] = {}
    for module in model.modules():
        for p in module._parameters.values():
            if p is not None:
                seen[id(p)] = p
    return sum(p.numel() for p in seen.values())


def buffer_elements(model: Any) -> int:
    return sum(b.numel() for b in model.buffers())


# -- parameter counts ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_parameter_counts(name: str) -> None:
    model = M.MODELS[name](device="meta")
    expected = PUBLISHED[name]
    assert unique_param_count(model) == expected
    # parameters() de-duplicates shared Parameters by itself
    assert sum(p.numel() for p in model.parameters()) == expected
    # ... but a state_dict lists the tied GPT-2 head under both its names
    state = sum(t.numel() for t in model.state_dict().values()) - buffer_elements(model)
    tied = 50257 * 768 if name == "gpt2_small" else 0
    assert state == expected + tied


@pytest.mark.parametrize("attention", M.ATTENTION_MODES)
@pytest.mark.parametrize("name", ["vit_b_16", "gpt2_small", "bert_base"])
def test_attention_modes_share_parameter_layout(name: str, attention: str) -> None:
    model = M.MODELS[name](attention=attention, device="meta")
    assert unique_param_count(model) == PUBLISHED[name]
    reference = M.MODELS[name](attention="explicit", device="meta").state_dict()
    state = model.state_dict()
    assert state.keys() == reference.keys()
    assert all(state[k].shape == reference[k].shape for k in state)


def test_small_model_counts_by_hand() -> None:
    # 784*512+512 + 512*512+512 + 512*10+10
    assert unique_param_count(M.mlp(device="meta")) == 669_706
    # bias-free 3x3 convs 3->32->32->64->64 with BN (2 per channel), linear 64->10
    convs = 9 * (3 * 32 + 32 * 32 + 32 * 64 + 64 * 64)
    assert unique_param_count(M.small_cnn(device="meta")) == convs + 2 * (32 + 32 + 64 + 64) + 650
    # LN 2*2d, qkv+out 4d^2+4d, MLP d*4d+4d + 4d*d+d, at d=256
    d = 256
    assert unique_param_count(M.transformer_block(device="meta")) == 12 * d * d + 13 * d


def test_reduced_transformer_counts_follow_the_formula() -> None:
    # per pre/post-norm layer: 12 d^2 + 13 d (two LayerNorms, packed attention, 4x MLP)
    d, layers, vocab, pos = 32, 2, 97, 32
    layer = 12 * d * d + 13 * d
    gpt = M.gpt2_small(vocab, pos, device="meta", layers=layers, width=d, heads=4)
    assert unique_param_count(gpt) == vocab * d + pos * d + layers * layer + 2 * d
    bert = M.bert_base(vocab, device="meta", max_positions=pos, layers=layers, width=d, heads=4)
    embeddings = vocab * d + pos * d + 2 * d + 2 * d
    assert unique_param_count(bert) == embeddings + layers * layer + d * d + d
    vit = M.vit_b_16(10, 32, device="meta", patch_size=8, layers=layers, width=d, heads=4)
    patches = (32 // 8) ** 2
    stem = 3 * 8 * 8 * d + d + d + (patches + 1) * d     # conv_proj, class token, positions
    assert unique_param_count(vit) == stem + layers * layer + 2 * d + d * 10 + 10


def test_gpt2_head_is_tied_to_the_token_embedding() -> None:
    model = M.gpt2_small(vocab_size=53, attention="explicit", **TINY_LM)
    assert model.lm_head.weight is model.wte.weight
    ids = torch.randint(0, 53, (2, 5))
    model(ids).sum().backward()
    # the head's gradient alone reaches rows of tokens that never appear in the input
    unused = sorted(set(range(53)) - set(ids.flatten().tolist()))
    assert torch.count_nonzero(model.wte.weight.grad[unused]) > 0


def test_torchvision_structure_details() -> None:
    r50 = M.resnet50(device="meta")
    first = r50.layer2[0]
    assert first.conv1.stride == (1, 1) and first.conv2.stride == (2, 2)   # v1.5 stride
    assert sum(1 for m in r50.modules() if isinstance(m, M.Bottleneck)) == 3 + 4 + 6 + 3
    assert sum(1 for m in r50.modules() if isinstance(m, M.Bottleneck) and m.downsample) == 4
    r18 = M.resnet18(device="meta")
    assert r18.layer1[0].downsample is None and r18.layer2[0].downsample is not None
    assert all(m.bias is None for m in r18.modules() if isinstance(m, torch.nn.Conv2d))
    mnet = M.mobilenet_v2(device="meta")
    blocks = [m for m in mnet.modules() if isinstance(m, M.InvertedResidual)]
    assert len(blocks) == 17
    # stride-1 repeats of each stage (n - 1 per stage: 0+1+2+3+2+2+0) keep the residual
    assert sum(b.use_res_connect for b in blocks) == 10
    depthwise = [m for m in mnet.modules()
                 if isinstance(m, torch.nn.Conv2d) and m.groups == m.in_channels > 1]
    assert len(depthwise) == 17
    # stem, the unexpanded first block's depthwise, two in each other block, the last 1x1
    assert sum(isinstance(m, torch.nn.ReLU6) for m in mnet.modules()) == 1 + 1 + 16 * 2 + 1


# -- construction arguments ---------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(M.MODELS))
def test_meta_device_reaches_every_layer(name: str) -> None:
    model = M.MODELS[name](device="meta")
    assert model.training
    tensors = list(model.parameters()) + list(model.buffers())
    assert tensors and all(t.device.type == "meta" for t in tensors)


@pytest.mark.parametrize("name", ["mlp", "small_cnn", "transformer_block"])
def test_dtype_reaches_every_layer(name: str) -> None:
    model = M.MODELS[name](dtype=torch.float64)
    floats = [t for t in list(model.parameters()) + list(model.buffers()) if t.is_floating_point()]
    assert floats and all(t.dtype == torch.float64 for t in floats)
    (x,) = M.MODELS[name].example_input(2)
    assert x.dtype == torch.float32                 # the factory's example uses the defaults
    (x,) = model.example_input(2)
    assert x.dtype == torch.float64                 # the model's own follows its dtype
    assert model(x).dtype == torch.float64


@pytest.mark.parametrize("factory, kwargs, error", [
    (M.gpt2_small, {"attention": "flash"}, ValueError),
    (M.vit_b_16, {"attention": None}, ValueError),
    (M.bert_base, {"width": 100, "heads": 12}, ValueError),
    (M.gpt2_small, {"layers": 0}, ValueError),
    (M.gpt2_small, {"dropout": 1.0}, ValueError),
    (M.vit_b_16, {"image_size": 200}, ValueError),
    (M.resnet50, {"num_classes": 10.0}, TypeError),
    (M.mlp, {"hidden": (512, True)}, TypeError),
    (M.transformer_block, {"d_model": 30, "heads": 4}, ValueError),
])
def test_bad_arguments(factory: Any, kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        factory(device="meta", **kwargs)


def test_bad_inputs() -> None:
    gpt = M.gpt2_small(device="meta", **TINY_LM)
    with pytest.raises(ValueError, match="exceed the 32 learned positions"):
        gpt(torch.zeros(1, 33, dtype=torch.int64, device="meta"))
    with pytest.raises(TypeError, match="int64"):
        gpt(torch.zeros(1, 4, device="meta"))
    with pytest.raises(ValueError, match="batch, tokens"):
        gpt(torch.zeros(4, dtype=torch.int64, device="meta"))
    vit = M.vit_b_16(device="meta")
    with pytest.raises(ValueError, match="224"):
        vit(torch.zeros(1, 3, 192, 192, device="meta"))
    with pytest.raises(ValueError, match="batch"):
        M.resnet18.example_input(0)
    with pytest.raises(TypeError, match="batch"):
        M.gpt2_small.example_input(True)


def test_copy_weights_rejects_other_architectures() -> None:
    with pytest.raises(ValueError, match="different sizes"):
        M.copy_weights(M.mlp(hidden=(8,)), M.mlp(hidden=(9,)))
    with pytest.raises(ValueError, match="different architectures"):
        M.copy_weights(M.mlp(hidden=(8,)), M.mlp(hidden=(8, 8)))
    with pytest.raises(TypeError, match="nn.Module"):
        M.copy_weights({}, M.mlp())


# -- example inputs and shapes ------------------------------------------------------------

EXAMPLES = {
    "resnet18": ((3, 224, 224), torch.float32, (1000,)),
    "resnet50": ((3, 224, 224), torch.float32, (1000,)),
    "mobilenet_v2": ((3, 224, 224), torch.float32, (1000,)),
    "vit_b_16": ((3, 224, 224), torch.float32, (1000,)),
    "gpt2_small": ((128,), torch.int64, (128, 50257)),
    "bert_base": ((128,), torch.int64, (128, 768)),
    "mlp": ((784,), torch.float32, (10,)),
    "small_cnn": ((3, 32, 32), torch.float32, (10,)),
    "transformer_block": ((64, 256), torch.float32, (64, 256)),
}


def test_registry_names_every_factory() -> None:
    assert set(M.MODELS) == set(EXAMPLES)
    assert all(getattr(M, name) is factory for name, factory in M.MODELS.items())


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_input_and_output_shape_on_meta(name: str) -> None:
    factory = M.MODELS[name]
    in_shape, in_dtype, out_shape = EXAMPLES[name]
    inputs = factory.example_input(3, device="meta")
    assert isinstance(inputs, tuple) and len(inputs) == 1
    (x,) = inputs
    assert tuple(x.shape) == (3, *in_shape) and x.dtype == in_dtype and x.device.type == "meta"
    out = factory(device="meta")(*inputs)
    if name == "bert_base":
        out, pooled = out
        assert tuple(pooled.shape) == (3, 768)
    assert tuple(out.shape) == (3, *out_shape)


def test_example_input_defaults_to_cpu_and_valid_token_ids() -> None:
    (ids,) = M.gpt2_small.example_input()
    assert ids.device.type == "cpu" and tuple(ids.shape) == (1, 128)
    assert 0 <= int(ids.min()) and int(ids.max()) < 50257
    (ids,) = M.bert_base.example_input(2)
    assert int(ids.max()) < 30522


def test_mlp_matches_numpy() -> None:
    torch.manual_seed(0)
    model = M.mlp(in_features=12, hidden=(7, 5), num_classes=3, dtype=torch.float64)
    x = torch.randn(4, 3, 4, dtype=torch.float64)        # flattened to 12 features
    h = x.reshape(4, 12).numpy()
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    for i, lin in enumerate(linears):
        h = h @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
        if i < len(linears) - 1:
            h = np.maximum(h, 0.0)
    np.testing.assert_allclose(model(x).detach().numpy(), h, rtol=1e-12, atol=1e-12)


def test_small_image_models_run_for_real() -> None:
    torch.manual_seed(0)
    cnn = M.small_cnn(num_classes=7)
    (x,) = cnn.example_input(4)
    out = cnn(x)
    assert tuple(out.shape) == (4, 7) and torch.isfinite(out).all()
    out.sum().backward()
    assert all(p.grad is not None for p in cnn.parameters())
    # ResNets and MobileNetV2 pool globally, so a small image runs through them too
    for factory in (M.resnet18, M.mobilenet_v2):
        model = factory(num_classes=5).eval()
        with torch.no_grad():
            y = model(torch.randn(2, 3, 64, 64))
        assert tuple(y.shape) == (2, 5) and torch.isfinite(y).all()


# -- attention implementations ------------------------------------------------------------

def _numpy_block(block: Any, x: np.ndarray, causal: bool) -> np.ndarray:
    """The pre-norm block written out in float64 numpy from the block's own weights."""
    w = {k: v.detach().numpy() for k, v in block.state_dict().items()}

    def layer_norm(h: np.ndarray, prefix: str) -> np.ndarray:
        mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
        return (h - mu) / np.sqrt(var + 1e-5) * w[prefix + ".weight"] + w[prefix + ".bias"]

    batch, tokens, d = x.shape
    heads = block.attn.num_heads if hasattr(block.attn, "num_heads") else block.attn.heads
    hd = d // heads
    qkv = layer_norm(x, "ln_1") @ w["attn.in_proj_weight"].T + w["attn.in_proj_bias"]
    q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(batch, tokens, heads, hd).transpose(0, 2, 1, 3)
               for i in range(3))
    scores = np.einsum("bhqe,bhke->bhqk", q, k) / math.sqrt(hd)
    if causal:
        scores = np.where(np.triu(np.ones((tokens, tokens), bool), 1), -np.inf, scores)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    attn = np.einsum("bhqk,bhke->bhqe", p, v).transpose(0, 2, 1, 3).reshape(batch, tokens, d)
    x = x + attn @ w["attn.out_proj.weight"].T + w["attn.out_proj.bias"]
    h = layer_norm(x, "ln_2") @ w["mlp.0.weight"].T + w["mlp.0.bias"]
    h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
    return x + h @ w["mlp.2.weight"].T + w["mlp.2.bias"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("attention", M.ATTENTION_MODES)
def test_transformer_block_matches_numpy(attention: str, causal: bool) -> None:
    torch.manual_seed(1)
    block = M.transformer_block(16, 4, 6, attention, causal=causal, dtype=torch.float64).eval()
    with torch.no_grad():       # give the zero-initialised biases real values
        for p in block.parameters():
            p.add_(0.1 * torch.randn_like(p))
    (x,) = block.example_input(3)
    expected = _numpy_block(block, x.numpy(), causal)
    np.testing.assert_allclose(block(x).detach().numpy(), expected, rtol=1e-10, atol=1e-10)


def _tiny(name: str, attention: str) -> Any:
    if name == "gpt2_small":
        return M.gpt2_small(vocab_size=61, attention=attention, dropout=0.0, **TINY_LM)
    if name == "bert_base":
        return M.bert_base(61, attention, dropout=0.0, **TINY_LM)
    if name == "vit_b_16":
        return M.vit_b_16(10, 32, attention, patch_size=8, layers=2, width=32, heads=4)
    return M.transformer_block(32, 4, 9, attention, causal=True)


def _outputs(model: Any, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    out = model(*inputs)
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("no_grad", [False, True])
@pytest.mark.parametrize("name", ["gpt2_small", "bert_base", "vit_b_16", "transformer_block"])
def test_attention_implementations_agree(name: str, no_grad: bool) -> None:
    torch.manual_seed(2)
    reference = _tiny(name, "explicit").eval()
    inputs = reference.example_input(2)
    with torch.no_grad():
        for p in reference.parameters():
            p.add_(0.05 * torch.randn_like(p))
        expected = _outputs(reference, inputs)
    for attention in ("sdpa", "mha"):
        model = _tiny(name, attention).eval()
        M.copy_weights(reference, model)
        if no_grad:
            with torch.no_grad():
                got = _outputs(model, inputs)
        else:
            got = _outputs(model, inputs)
            assert got[0].requires_grad
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["gpt2_small", "bert_base", "vit_b_16"])
def test_attention_gradients_agree(name: str) -> None:
    torch.manual_seed(3)
    reference = _tiny(name, "explicit")
    inputs = reference.example_input(2)
    grads = {}
    for attention in M.ATTENTION_MODES:
        model = _tiny(name, attention)
        M.copy_weights(reference, model)
        _outputs(model, inputs)[0].square().mean().backward()
        grads[attention] = {k: p.grad for k, p in model.named_parameters()}
    for attention in ("sdpa", "mha"):
        assert grads[attention].keys() == grads["explicit"].keys()
        for k, g in grads[attention].items():
            torch.testing.assert_close(g, grads["explicit"][k], rtol=1e-4, atol=1e-6)


def test_mha_takes_the_fused_path_in_eval_under_no_grad(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    fused = torch._native_multi_head_attention

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return fused(*args, **kwargs)

    monkeypatch.setattr(torch, "_native_multi_head_attention", spy)
    model = _tiny("gpt2_small", "mha").eval()
    (ids,) = model.example_input(1)
    model(ids)
    assert calls == []                          # autograd on: the reference path
    with torch.no_grad():
        model(ids)
    assert len(calls) == TINY_LM["layers"]      # one fused call per block


@pytest.mark.parametrize("attention", M.ATTENTION_MODES)
def test_gpt2_is_causal_and_bert_is_not(attention: str) -> None:
    torch.manual_seed(4)
    gpt = _tiny("gpt2_small", attention).eval()
    bert = _tiny("bert_base", attention).eval()
    ids = torch.randint(0, 61, (1, 10))
    changed = ids.clone()
    changed[0, 6] = (ids[0, 6] + 1) % 61
    with torch.no_grad():
        a, b = gpt(ids), gpt(changed)
        torch.testing.assert_close(a[:, :6], b[:, :6], rtol=0, atol=1e-6)
        assert not torch.allclose(a[:, 6:], b[:, 6:])
        (ha, _), (hb, _) = bert(ids), bert(changed)
        assert not torch.allclose(ha[:, :6], hb[:, :6])
