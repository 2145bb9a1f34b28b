"""fastbench.pytorch.aten_ops: the counts of single ops worked out by hand from what the op
computes: nn.MultiheadAttention's fused and unfused paths alike in every autograd mode,
grid_sampler_2d, upsample_bicubic2d and torchvision's RoI Align (through a stand-in with
torchvision's schema where torchvision is not installed)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from fastbench.analysis import analyze  # noqa: E402
from fastbench.analysis import formulas as F  # noqa: E402
from fastbench.analysis.costs import Count  # noqa: E402
from fastbench.pytorch import aten_ops  # noqa: E402
from fastbench.pytorch.dispatch import Dispatcher, OpEvent  # noqa: E402

E = F.ELEMENTWISE_FLOPS
MODES = ("grad", "no_grad", "inference_mode")


# -- nn.MultiheadAttention ----------------------------------------------------------------------
class _SelfAttention(nn.Module):
    def __init__(self, d: int, heads: int, bias: bool = True, **call: Any) -> None:
        super().__init__()
        self.mha = nn.MultiheadAttention(d, heads, batch_first=True, bias=bias)
        self.call = call

    def forward(self, x: torch.Tensor) -> Any:
        return self.mha(x, x, x, **self.call)


def _by_mode(model: nn.Module, x: torch.Tensor) -> dict[str, Any]:
    return {mode: analyze(model, x, grad_mode=mode) for mode in MODES}


@pytest.mark.parametrize("b, t, d, h, expected", [
    (2, 32, 64, 4, (1_310_720, 69_632)),
    # The shape that counted 1,179,648 elementwise FLOPs under no_grad, 1,114,112 under grad.
    (1, 128, 512, 8, (150_994_944, 1_114_112)),
])
def test_mha_with_weights_counts_alike_in_every_grad_mode(
        b: int, t: int, d: int, h: int, expected: tuple[int, int]) -> None:
    # The fused path used to scale every score; torch scales Q in both paths (q * sqrt(1/E)
    # unfused, _transform_bias_rescale_qkv fused): one multiply per query element.
    torch.manual_seed(0)
    model = _SelfAttention(d, h, need_weights=True).eval()
    results = _by_mode(model, torch.randn(b, t, d))
    assert "_native_multi_head_attention" in results["no_grad"].coverage.ops
    assert "_native_multi_head_attention" not in results["grad"].coverage.ops
    tokens, scores = b * t, b * h * t * t
    macs = tokens * d * 3 * d + 2 * scores * (d // h) + tokens * d * d   # in, QK^T, A.V, out
    elementwise = (tokens * 3 * d                  # in-projection bias
                   + tokens * d * E["scale"]       # Q scaled by 1/sqrt(head_dim)
                   + scores * E["softmax"]
                   + tokens * d                    # out-projection bias
                   + scores * E["mean"])           # weights averaged over the heads
    assert (macs, elementwise) == expected
    for mode, a in results.items():
        assert (a.forward.macs, a.forward.elementwise_flops) == expected, mode


@pytest.mark.parametrize("call", [
    {"need_weights": True}, {"need_weights": True, "average_attn_weights": False},
    {"need_weights": False}, {"need_weights": True, "attn_mask": True},
    {"need_weights": False, "key_padding_mask": True},
    {"need_weights": True, "attn_mask": True, "key_padding_mask": True},
], ids=["weights", "per-head weights", "no weights", "bool mask", "padding mask",
        "both masks"])
def test_mha_counts_alike_in_every_grad_mode(call: dict[str, Any]) -> None:
    torch.manual_seed(1)
    b, t, d, h = 2, 6, 32, 4                 # d != h * t: a scale per score would show
    kwargs = dict(call)
    if "attn_mask" in kwargs:
        kwargs["attn_mask"] = torch.zeros(t, t, dtype=torch.bool)
    if kwargs.get("key_padding_mask"):
        kwargs["key_padding_mask"] = torch.zeros(b, t, dtype=torch.bool)
    results = _by_mode(_SelfAttention(d, h, **kwargs).eval(), torch.randn(b, t, d))
    assert "_native_multi_head_attention" in results["no_grad"].coverage.ops
    counts = {m: (a.forward.macs, a.forward.elementwise_flops) for m, a in results.items()}
    assert len(set(counts.values())) == 1, counts


def test_mha_matrix_products_agree_with_torch_flop_counter() -> None:
    torch.manual_seed(2)
    model = _SelfAttention(64, 4, need_weights=True).eval()
    x = torch.randn(2, 16, 64)
    counter = FlopCounterMode(display=False)
    with counter:
        model(x)          # autograd on: the unfused path, which torch's counter knows
    for mode in MODES:
        assert 2 * analyze(model, x, grad_mode=mode).forward.macs == counter.get_total_flops()


def test_mha_without_bias_given_both_masks_counts_the_merge_torch_discards() -> None:
    # The one documented difference: in eval under no_grad, MultiheadAttention merges
    # attn_mask and key_padding_mask for its fused path before it checks for the input
    # projection's bias; without one it discards the merge and runs the unfused path, which
    # merges again. The first merge ran, so it is counted: one add per (batch, head, query,
    # key) under no_grad and inference_mode only.
    torch.manual_seed(3)
    b, t, d, h = 2, 6, 32, 4
    model = _SelfAttention(d, h, bias=False, need_weights=False,
                           attn_mask=torch.zeros(t, t, dtype=torch.bool),
                           key_padding_mask=torch.zeros(b, t, dtype=torch.bool)).eval()
    results = _by_mode(model, torch.randn(b, t, d))
    grad = results["grad"].forward.elementwise_flops
    for mode in ("no_grad", "inference_mode"):
        assert results[mode].forward.macs == results["grad"].forward.macs
        assert results[mode].forward.elementwise_flops - grad == b * h * t * t * E["add"]


# -- grid_sampler_2d -------------------------------------------------------------------------
class _Warp(nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        return nn.functional.grid_sample(x, grid, mode=self.mode, align_corners=True)


@pytest.mark.parametrize("mode, per_output, per_location", [
    ("bilinear", 4 + 3, 6 + 2 + 4 + 4), ("nearest", 0, 6 + 2), ("bicubic", 5 * 7, 6 + 2 + 2 + 50),
])
def test_grid_sampler_2d_counts_by_hand(mode: str, per_output: int, per_location: int) -> None:
    n, c, h, w, ho, wo = 2, 3, 8, 10, 5, 7
    x, grid = torch.randn(n, c, h, w), torch.rand(n, ho, wo, 2) * 2 - 1
    expected = n * c * ho * wo * per_output + n * ho * wo * per_location
    for grad_mode in MODES:
        a = analyze(_Warp(mode), x, grid, grad_mode=grad_mode)
        assert a.complete and a.forward.elementwise_flops == expected, grad_mode
        assert a.forward.bytes_read == 4 * (n * c * h * w + n * ho * wo * 2)
    assert F.grid_sample((n, c, h, w), (n, ho, wo, 2), mode=mode).forward == a.forward


def test_grid_sampler_2d_backward_counts_the_gradients_asked_for() -> None:
    n, c, h, w, ho, wo = 1, 4, 6, 6, 3, 5
    outputs, locations = n * c * ho * wo, n * ho * wo

    def backward(x_grad: bool, grid_grad: bool) -> int:
        x = torch.randn(n, c, h, w, requires_grad=x_grad)
        grid = (torch.rand(n, ho, wo, 2) * 2 - 1).requires_grad_(grid_grad)
        events: list[OpEvent] = []
        d = Dispatcher(_Warp("bilinear"), events.append)
        y = d.forward(x, grid)
        with d.recording():
            torch.autograd.grad(y, [t for t in (x, grid) if t.requires_grad], torch.ones_like(y))
        (e,) = [e for e in events if e.name == "grid_sampler_2d_backward"]
        c_ = aten_ops.count_op(e.func, e.args, e.kwargs, e.outputs)
        assert c_ is not None
        return c_.elementwise_flops

    recompute = locations * 16
    assert backward(True, False) == recompute + outputs * 8      # 4 weighted scatter-adds
    assert backward(False, True) == recompute + outputs * 24 + locations * 2
    assert backward(True, True) == recompute + outputs * (8 + 24) + locations * 2
    assert F.grid_sample((n, c, h, w), (n, ho, wo, 2)).backward.elementwise_flops \
        == backward(True, True)


# -- upsample_bicubic2d ----------------------------------------------------------------------
def test_upsample_bicubic2d_counts_by_hand() -> None:
    class Up(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.interpolate(x, scale_factor=2, mode="bicubic")

    x = torch.randn(1, 3, 4, 5, requires_grad=True)
    a = analyze(Up(), x, grad_mode="inference_mode")
    outputs = 3 * 8 * 10
    # 16 taps: four 4-tap row sums and one column sum, each 4 mul + 3 add.
    assert a.complete and a.forward.elementwise_flops == outputs * 5 * (4 + 3)
    events: list[OpEvent] = []
    d = Dispatcher(Up(), events.append)
    y = d.forward(x)
    with d.recording():
        torch.autograd.grad(y, x, torch.ones_like(y))
    (e,) = [e for e in events if e.name == "upsample_bicubic2d_backward"]
    # 16 weighted scatter-adds (mul, add) per output gradient.
    assert aten_ops.count_op(e.func, e.args, e.kwargs, e.outputs) == \
        Count(0, outputs * 16 * 2, 4 * outputs, 4 * 3 * 4 * 5)


# -- torchvision's RoI Align -----------------------------------------------------------------
_LIBRARY: list[Any] = []    # keeps a stand-in's registration alive


def _registered(name: str) -> bool:
    try:
        getattr(torch.ops.torchvision, name).default
    except (AttributeError, RuntimeError):
        return False
    return True


@pytest.fixture(scope="module")
def roi_align() -> tuple[Any, Any]:
    """torchvision's roi_align and its backward: the real ops where torchvision imports, else
    stand-ins with torchvision's schema (the count needs the shapes and the boxes only)."""
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - absent, or built for another torch
        pass
    if not _registered("roi_align"):
        lib = torch.library.Library("torchvision", "FRAGMENT")
        lib.define("roi_align(Tensor input, Tensor rois, float spatial_scale, "
                   "SymInt pooled_height, SymInt pooled_width, int sampling_ratio, "
                   "bool aligned) -> Tensor")
        lib.define("_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, "
                   "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, "
                   "SymInt channels, SymInt height, SymInt width, int sampling_ratio, "
                   "bool aligned) -> Tensor")

        def forward(x: Any, rois: Any, scale: float, ph: int, pw: int, sr: int,
                    aligned: bool) -> Any:
            return x.new_zeros(rois.shape[0], x.shape[1], ph, pw)

        def backward(g: Any, rois: Any, scale: float, ph: int, pw: int, n: int, c: int, h: int,
                     w: int, sr: int, aligned: bool) -> Any:
            return g.new_zeros(n, c, h, w)

        lib.impl("roi_align", forward, "CompositeExplicitAutograd")
        lib.impl("_roi_align_backward", backward, "CompositeExplicitAutograd")
        _LIBRARY.append(lib)
    return torch.ops.torchvision.roi_align.default, torch.ops.torchvision._roi_align_backward.default


def _count(op: Any, *args: Any) -> Count | None:
    """``op`` run through the dispatch layer, counted as the analyzer counts it."""
    class Call(nn.Module):
        def forward(self, *xs: Any) -> Any:
            return op(*xs, *args[len(xs):])

    events: list[OpEvent] = []
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    Dispatcher(Call(), events.append).forward(*tensors)
    (e,) = [e for e in events if e.func is op]
    assert e.func.namespace == "torchvision"
    return aten_ops.count_op(e.func, e.args, e.kwargs, e.outputs)


def test_roi_align_counts_by_hand(roi_align: tuple[Any, Any]) -> None:
    forward, _ = roi_align
    n, c, h, w, k, ph, pw, sr = 2, 16, 20, 24, 5, 7, 7, 2
    x, rois = torch.randn(n, c, h, w), torch.tensor([[0, 1.0, 1.0, 9.0, 9.0]] * k)
    got = _count(forward, x, rois, 0.5, ph, pw, sr, False)
    samples = k * ph * pw * sr * sr
    # Per output element and sample: 4 taps weighted (7) and averaged (1); per sample point
    # of a box: position (4), floor (2), fractions (4), tap weights (4).
    assert got == Count(0, c * samples * 8 + samples * 14, 4 * (n * c * h * w + k * 5),
                        4 * k * c * ph * pw)
    assert F.roi_align((n, c, h, w), k, (ph, pw), sr).forward == got


def test_roi_align_adaptive_sampling_follows_each_box(roi_align: tuple[Any, Any]) -> None:
    # sampling_ratio=0: ceil(box size / bins) samples per axis and box, as torchvision's kernel.
    forward, _ = roi_align
    c, ph, pw = 3, 2, 2
    x = torch.randn(1, c, 16, 16)
    rois = torch.tensor([[0, 0.0, 0.0, 7.0, 3.0],      # 7 x 3: ceil(3.5) x ceil(1.5) = 4 x 2
                         [0, 1.0, 1.0, 1.2, 1.2],      # under 1 pixel: clamped to 1 -> 1 x 1
                         [0, 2.0, 2.0, 10.0, 6.0]])    # 8 x 4 at scale 0.5: 4 x 2 -> 2 x 1
    per_bin = {1.0: 4 * 2 + 1 * 1 + 4 * 2, 0.5: 2 * 1 + 1 * 1 + 2 * 1}
    for scale, samples in per_bin.items():
        got = _count(forward, x, rois, scale, ph, pw, 0, False)
        assert got is not None
        assert got.elementwise_flops == ph * pw * samples * (c * 8 + 14), scale
    # aligned=True shifts by half a pixel and does not clamp: an empty box takes no samples.
    empty = torch.tensor([[0, 3.0, 3.0, 3.0, 3.0]])
    assert _count(forward, x, empty, 1.0, ph, pw, 0, True) == Count(
        0, 0, 4 * (x.numel() + 5), 4 * c * ph * pw)


def test_roi_align_on_meta_counts_fixed_sampling_only(roi_align: tuple[Any, Any]) -> None:
    forward, _ = roi_align
    x, rois = torch.empty(1, 4, 8, 8, device="meta"), torch.empty(3, 5, device="meta")
    fixed = _count(forward, x, rois, 1.0, 2, 2, 2, False)
    assert fixed is not None and fixed.elementwise_flops == 3 * 2 * 2 * 4 * (4 * 8 + 14)
    # Adaptive sampling depends on the boxes' values, which meta tensors do not hold.
    assert _count(forward, x, rois, 1.0, 2, 2, 0, False) is None


def test_roi_align_backward_counts_by_hand(roi_align: tuple[Any, Any]) -> None:
    _, backward = roi_align
    n, c, h, w, k, ph, pw, sr = 1, 8, 10, 10, 4, 3, 3, 2
    grad, rois = torch.randn(k, c, ph, pw), torch.tensor([[0, 0.0, 0.0, 6.0, 6.0]] * k)
    got = _count(backward, grad, rois, 1.0, ph, pw, n, c, h, w, sr, False)
    samples = k * ph * pw * sr * sr
    # g / samples per output gradient, 4 weighted scatter-adds per sample, positions again.
    assert got == Count(0, k * c * ph * pw + c * samples * 8 + samples * 14,
                        4 * (grad.numel() + k * 5), 4 * n * c * h * w)
    assert F.roi_align((n, c, h, w), k, (ph, pw), sr).backward == got


def test_other_namespaces_count_only_by_qualified_name() -> None:
    # An op of another namespace is never counted by an aten formula of the same name.
    if not hasattr(torch.ops.fastbench_test, "relu"):
        lib = torch.library.Library("fastbench_test", "FRAGMENT")
        lib.define("relu(Tensor x) -> Tensor")
        lib.impl("relu", lambda x: x.clone(), "CompositeExplicitAutograd")
        _LIBRARY.append(lib)
    op = torch.ops.fastbench_test.relu.default
    x = torch.randn(4)
    assert aten_ops.count_op(op, (x,), {}, op(x)) is None
    assert aten_ops.count_op(torch.ops.aten.relu.default, (x,), {}, x.relu()) == \
        Count(0, 4, 16, 16)


@pytest.mark.parametrize("norm_first, activation", [(False, "relu"), (True, "gelu")])
def test_the_fused_encoder_layer_counts_as_its_unfused_path(norm_first: bool,
                                                            activation: str) -> None:
    # In eval under no_grad (or inference_mode) nn.TransformerEncoderLayer runs one fused
    # op, _transformer_encoder_layer_fwd, which counted nothing: "0 FLOPs, overhead-bound"
    # for 89% of a step. Its count must equal the unfused path's (grad mode), op for op,
    # and the hand count: QKV, scores, A.V and output projection, the feed-forward pair,
    # biases, softmax, activation, two residual adds and two layer norms.
    torch.manual_seed(3)
    b, t, d, h, f = 2, 12, 32, 4, 64
    layer = nn.TransformerEncoderLayer(d, h, dim_feedforward=f, batch_first=True,
                                       norm_first=norm_first, activation=activation).eval()
    results = _by_mode(layer, torch.randn(b, t, d))
    assert "_transformer_encoder_layer_fwd" in results["no_grad"].coverage.ops
    assert "_transformer_encoder_layer_fwd" not in results["grad"].coverage.ops
    tokens, scores = b * t, b * h * t * t
    macs = tokens * d * 3 * d + 2 * scores * (d // h) + tokens * d * d + 2 * tokens * d * f
    elementwise = (tokens * 3 * d + tokens * d          # the projections' biases
                   + scores * (E["scale"] + E["softmax"])
                   + tokens * (f + d)                   # the feed-forward biases
                   + tokens * f * E[activation]
                   + 2 * tokens * d * E["add"] + 2 * tokens * d * E["layer_norm"])
    for mode, a in results.items():
        assert (a.forward.macs, a.forward.elementwise_flops) == (macs, elementwise), mode
