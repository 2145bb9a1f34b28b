"""What each PyTorch aten operator costs: MACs, elementwise FLOPs and bytes, from the shapes
of its arguments and results. The table the model analyzer consults for every op it sees.

Owns the mapping from aten ops to counts and the list of ops known to do no arithmetic. Per
element costs come from ``formulas.ELEMENTWISE_FLOPS``, so a layer described by hand and the
same layer run through PyTorch count alike. Imports torch: load it only through the analyzer.

Fused kernels are counted by what they compute, not as zero: the CPU flash attention
(``_scaled_dot_product_flash_attention_for_cpu``), the other SDPA backends and the fused
``nn.MultiheadAttention`` inference path (``_native_multi_head_attention``) and the fused
``nn.TransformerEncoderLayer`` (``_transformer_encoder_layer_fwd``) count the same
projections, products, scaling, softmax, norms and feed-forward as the unfused code they
replace, so a model counts
alike under grad, no_grad and inference_mode. The backward of a fused attention counts the four
gradient products (dQ, dK, dV and dP) as the unfused backward does; flash kernels also
recompute QK^T there, an implementation choice left out of the count.

A few ops of other namespaces that models use have formulas too (torchvision's RoI Align);
they are looked up by qualified name ("torchvision::roi_align").
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping

import torch

from ..analysis.costs import Count
from ..analysis.formulas import ELEMENTWISE_FLOPS
from .dispatch import tensors

__all__ = ["Handler", "NO_ARITHMETIC", "count_op", "is_known", "tensor_bytes", "unique_numel"]

aten = torch.ops.aten
Handler = Callable[[Mapping[str, Any], Any], Count]


# -- shapes and bytes -----------------------------------------------------------------------
def unique_numel(t: torch.Tensor) -> int:
    """Elements a kernel must touch: a broadcast (stride-0) dimension is read once."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= int(size)
    return n


def tensor_bytes(t: torch.Tensor) -> int:
    return unique_numel(t) * int(t.element_size())


def _io_bytes(args: Iterable[Any], out: Any) -> tuple[int, int]:
    """Bytes read (every distinct tensor argument once) and written (every result)."""
    seen: set[int] = set()
    read = 0
    for t in tensors(list(args)):
        if id(t) not in seen:
            seen.add(id(t))
            read += tensor_bytes(t)
    written = sum(tensor_bytes(t) for t in tensors(out))
    return read, written


def _numel(shape: Iterable[int]) -> int:
    return math.prod(int(s) for s in shape)


def _bind(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The op's arguments by schema name, defaults filled in."""
    bound: dict[str, Any] = {}
    for i, a in enumerate(func._schema.arguments):
        if i < len(args) and not a.kwarg_only:
            bound[a.name] = args[i]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        elif a.has_default_value():
            bound[a.name] = a.default_value
        else:
            bound[a.name] = None
    return bound


def _first(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out


def _per_element(key: str) -> int:
    return int(ELEMENTWISE_FLOPS[key])


# -- matrix products ------------------------------------------------------------------------
def _mm(b: Mapping[str, Any], out: Any) -> Count:
    m, k = b["self"].shape
    return Count(macs=int(m) * int(k) * int(b["mat2"].shape[1]))


def _addmm(b: Mapping[str, Any], out: Any) -> Count:
    m, k = b["mat1"].shape
    n = int(b["mat2"].shape[1])
    return Count(macs=int(m) * int(k) * n, elementwise_flops=int(m) * n)   # + bias


def _bmm(b: Mapping[str, Any], out: Any) -> Count:
    batch, m, k = b["self"].shape
    return Count(macs=int(batch) * int(m) * int(k) * int(b["mat2"].shape[2]))


def _baddbmm(b: Mapping[str, Any], out: Any) -> Count:
    batch, m, k = b["batch1"].shape
    n = int(b["batch2"].shape[2])
    return Count(macs=int(batch) * int(m) * int(k) * n, elementwise_flops=int(batch) * int(m) * n)


def _mv(b: Mapping[str, Any], out: Any) -> Count:
    m, k = b["self"].shape
    return Count(macs=int(m) * int(k))


def _addmv(b: Mapping[str, Any], out: Any) -> Count:
    m, k = b["mat"].shape
    return Count(macs=int(m) * int(k), elementwise_flops=int(m))


def _dot(b: Mapping[str, Any], out: Any) -> Count:
    return Count(macs=int(b["self"].numel()))


# -- convolution ----------------------------------------------------------------------------
def _conv_macs(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor, transposed: bool) -> int:
    """MACs of a convolution: every output (every input, when transposed) element takes
    (channels per group) x (kernel volume) products; ``groups`` is in the weight's shape."""
    per = int(w.shape[1]) * _numel(w.shape[2:])
    return int(x.numel() if transposed else out.numel()) * per


def _convolution(b: Mapping[str, Any], out: Any) -> Count:
    y = _first(out)
    macs = _conv_macs(b["input"], b["weight"], y, bool(b["transposed"]))
    return Count(macs=macs, elementwise_flops=y.numel() if b["bias"] is not None else 0)


def _convolution_backward(b: Mapping[str, Any], out: Any) -> Count:
    """Gradients with respect to the input and the weight each take the forward's MACs; the
    bias gradient sums the output gradient. ``output_mask`` says which were computed."""
    g, x, w = b["grad_output"], b["input"], b["weight"]
    mask = list(b["output_mask"])
    fwd = _conv_macs(x, w, g, bool(b["transposed"]))
    return Count(macs=fwd * (int(mask[0]) + int(mask[1])),
                 elementwise_flops=g.numel() * _per_element("sum") if mask[2] else 0)


# -- attention ------------------------------------------------------------------------------
def _sdpa_dims(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, int, int, int]:
    """(batch x query heads, query length, key length, head dims q + v) of (..., L, E) inputs;
    grouped-query attention broadcasts key/value heads over the query heads."""
    bh = _numel(q.shape[:-2])
    return bh, int(q.shape[-2]), int(k.shape[-2]), int(q.shape[-1]) + int(v.shape[-1])


def _attention_count(bh: int, lq: int, lk: int, e: int, masked: bool,
                     scale_scores: bool = True) -> Count:
    """QK^T and A.V in full (non-causal: the convention) over ``bh`` heads with query and
    value head dims summing to ``e``, a softmax per score, one more op per score when a mask
    or causal masking applies, and (``scale_scores``) the 1/sqrt(head_dim) scale per score."""
    scores = bh * lq * lk
    per_score = (_per_element("scale") if scale_scores else 0) + _per_element("softmax") \
        + (_per_element("where") if masked else 0)
    return Count(macs=scores * e, elementwise_flops=scores * per_score)


def _sdpa_cpu(b: Mapping[str, Any], out: Any) -> Count:
    masked = bool(b.get("is_causal")) or b.get("attn_mask") is not None \
        or b.get("attn_bias") is not None
    return _attention_count(*_sdpa_dims(b["query"], b["key"], b["value"]), masked)


def _sdpa_backward(b: Mapping[str, Any], out: Any) -> Count:
    bh, lq, lk, e = _sdpa_dims(b["query"], b["key"], b["value"])
    scores = bh * lq * lk
    return Count(macs=2 * scores * e,
                 elementwise_flops=scores * (1 + _per_element("softmax_backward")))


def _native_mha(b: Mapping[str, Any], out: Any) -> Count:
    """The fused nn.MultiheadAttention inference path: the QKV projection with its bias, the
    attention products and softmax, the output projection with its bias, counted as the unfused
    path (F.multi_head_attention_forward) counts them, op for op.

    Where the 1/sqrt(head_dim) scale falls depends on ``need_weights``, in both paths alike.
    With it, the unfused path multiplies Q before QK^T (``q * sqrt(1/E)``, as the fused
    kernel's ``_transform_bias_rescale_qkv`` does): one multiply per query element. Without
    it, both paths run scaled_dot_product_attention, whose count scales every score."""
    q, k = b["query"], b["key"]
    d, heads = int(b["embed_dim"]), int(b["num_head"])
    bsz, lq, lk = int(q.shape[0]), int(q.shape[1]), int(k.shape[1])
    tokens_q, tokens_kv = bsz * lq, bsz * lk
    need_weights = bool(b["need_weights"])
    proj = Count(macs=(tokens_q + 2 * tokens_kv) * d * d,
                 elementwise_flops=(tokens_q + 2 * tokens_kv) * d)
    attn = _attention_count(bsz * heads, lq, lk, 2 * (d // heads), b["mask"] is not None,
                            scale_scores=not need_weights)
    scale_q = Count(elementwise_flops=tokens_q * d * _per_element("scale")) \
        if need_weights else Count()
    out_proj = Count(macs=tokens_q * d * d, elementwise_flops=tokens_q * d)
    # The weights averaged over the heads (a mean: one op per score).
    weights = Count(elementwise_flops=bsz * heads * lq * lk * _per_element("mean")) \
        if need_weights and b["average_attn_weights"] else Count()
    return proj + scale_q + attn + out_proj + weights


def _encoder_layer_parts(b: Mapping[str, Any], out: Any) -> dict[str, Count]:
    """The fused nn.TransformerEncoderLayer inference path (eval under no_grad or
    inference_mode), counted as the layer's unfused path counts, by the submodule that path
    does each part in: self-attention as F.multi_head_attention_forward without weights
    (:func:`_native_mha`) in ``self_attn``, each feed-forward linear layer with its bias in
    ``linear1`` and ``linear2``, each layer norm in ``norm1`` and ``norm2``, and in the layer
    itself ("") the two residual adds and the activation (ReLU or GELU, a function there).
    Dropout does nothing in eval and counts nothing."""
    src = b["src"]
    d = int(b["embed_dim"])
    tokens = int(src.numel()) // d
    attention = _native_mha({"query": src, "key": src, "embed_dim": d,
                             "num_head": b["num_heads"], "need_weights": False,
                             "mask": b.get("mask"), "average_attn_weights": False}, out)
    hidden = int(b["ffn_weight_1"].shape[0])
    norm = Count(elementwise_flops=tokens * d * _per_element("layer_norm"))
    activation = tokens * hidden * _per_element("gelu" if b["use_gelu"] else "relu")
    return {"self_attn": attention,
            "linear1": Count(macs=tokens * d * hidden, elementwise_flops=tokens * hidden),
            "linear2": Count(macs=tokens * hidden * d, elementwise_flops=tokens * d),
            "norm1": norm, "norm2": norm,
            "": Count(elementwise_flops=2 * tokens * d * _per_element("add") + activation)}


def _transformer_encoder_layer(b: Mapping[str, Any], out: Any) -> Count:
    """The fused nn.TransformerEncoderLayer inference path: the sum of
    :func:`_encoder_layer_parts`."""
    return sum(_encoder_layer_parts(b, out).values(), Count())


# -- sampling at computed positions ----------------------------------------------------------
# torch's GridSamplerInterpolation numbering (aten/src/ATen/native/GridSamplerUtils.h).
_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}


def _grid_sampler_2d(b: Mapping[str, Any], out: Any) -> Count:
    """Interpolation per output element, positions and tap weights per grid location
    (``formulas.grid_sample``)."""
    key = "grid_sample_" + _GRID_MODES[int(b["interpolation_mode"])]
    locations = _numel(b["grid"].shape[:-1])
    return Count(elementwise_flops=_first(out).numel() * _per_element(key)
                 + locations * _per_element(key + "_coords"))


def _grid_sampler_2d_backward(b: Mapping[str, Any], out: Any) -> Count:
    """The positions recomputed, then the input and grid gradients ``output_mask`` asks for."""
    key = "grid_sample_" + _GRID_MODES[int(b["interpolation_mode"])]
    outputs, locations = b["grad_output"].numel(), _numel(b["grid"].shape[:-1])
    mask = list(b["output_mask"])
    flops = locations * _per_element(key + "_coords_backward")
    if mask[0]:
        flops += outputs * _per_element(key + "_backward")
    if mask[1]:
        flops += outputs * _per_element(key + "_grid_backward") \
            + locations * _per_element(key + "_grid_coords_backward")
    return Count(elementwise_flops=flops)


def _roi_samples(b: Mapping[str, Any]) -> int | None:
    """Sample points per bin summed over the boxes. A positive ``sampling_ratio`` fixes them;
    otherwise torchvision takes ``ceil(box size / bins)`` per axis and box, computed here as
    its kernel does (roi_align_kernel.cpp, in the boxes' dtype); None on the meta device,
    where the boxes have no values."""
    rois, sr = b["rois"], int(b["sampling_ratio"])
    if sr > 0:
        return int(rois.shape[0]) * sr * sr
    if rois.device.type == "meta":
        return None
    r = rois.detach()
    scale, offset = float(b["spatial_scale"]), 0.5 if b["aligned"] else 0.0
    width = (r[:, 3] * scale - offset) - (r[:, 1] * scale - offset)
    height = (r[:, 4] * scale - offset) - (r[:, 2] * scale - offset)
    if not b["aligned"]:
        width, height = width.clamp(min=1.0), height.clamp(min=1.0)
    grid_h = torch.ceil(height / int(b["pooled_height"])).clamp(min=0).to(torch.int64)
    grid_w = torch.ceil(width / int(b["pooled_width"])).clamp(min=0).to(torch.int64)
    return int((grid_h * grid_w).sum())


def _roi_align(b: Mapping[str, Any], out: Any) -> Count | None:
    """torchvision's RoI Align (``formulas.roi_align``): per output element and sample point
    4 taps weighted and averaged, per sample point of each box its position and weights."""
    samples = _roi_samples(b)
    if samples is None:
        return None
    bins = int(b["pooled_height"]) * int(b["pooled_width"])
    channels = int(b["input"].shape[1])
    return Count(elementwise_flops=bins * samples * (channels * _per_element("roi_align")
                                                     + _per_element("roi_align_coords")))


def _roi_align_backward(b: Mapping[str, Any], out: Any) -> Count | None:
    """Each output gradient divided by its bin's samples, scattered to the 4 taps of every
    sample; the sample positions recomputed."""
    samples = _roi_samples(b)
    if samples is None:
        return None
    bins = int(b["pooled_height"]) * int(b["pooled_width"])
    channels = int(b["channels"])
    return Count(elementwise_flops=bins * samples * (
        channels * _per_element("roi_align_backward") + _per_element("roi_align_coords_backward"))
        + b["grad"].numel() * _per_element("scale"))


# -- elementwise, reductions, norms, pooling -------------------------------------------------
def _per_output(key: str) -> Handler:
    def count(b: Mapping[str, Any], out: Any) -> Count:
        return Count(elementwise_flops=_first(out).numel() * _per_element(key))
    return count


def _per_input(key: str, arg: str = "self") -> Handler:
    def count(b: Mapping[str, Any], out: Any) -> Count:
        return Count(elementwise_flops=b[arg].numel() * _per_element(key))
    return count


def _gelu(backward: bool) -> Handler:
    def count(b: Mapping[str, Any], out: Any) -> Count:
        key = "gelu_tanh" if b.get("approximate") == "tanh" else "gelu"
        if backward:
            key += "_backward"
        return Count(elementwise_flops=_first(out).numel() * _per_element(key))
    return count


def _hardtanh(backward: bool) -> Handler:
    def count(b: Mapping[str, Any], out: Any) -> Count:
        key = "relu6" if (float(b["min_val"]), float(b["max_val"])) == (0.0, 6.0) else "clamp"
        return Count(elementwise_flops=_first(out).numel()
                     * _per_element(key + ("_backward" if backward else "")))
    return count


def _norm(key: str, training: bool = True) -> Handler:
    """A norm over its input: statistics, normalise and the affine step, which the table
    includes and a norm without weight skips (RMS norm has a scale only)."""
    affine_key = "norm_scale" if key == "rms_norm" else "norm_affine"

    def count(b: Mapping[str, Any], out: Any) -> Count:
        name = key if b.get("training", training) else "batch_norm_eval"
        per = _per_element(name)
        if b.get("weight") is None and name != "batch_norm_eval":
            per -= _per_element(affine_key)
        return Count(elementwise_flops=b["input"].numel() * per)
    return count


def _norm_backward(key: str) -> Handler:
    """The input gradient (the table's backward, less the affine part without weight) when
    ``output_mask`` asks for it, else only the weight and bias gradients."""
    affine_key = "norm_scale" if key == "rms_norm" else "norm_affine"

    def count(b: Mapping[str, Any], out: Any) -> Count:
        mask = list(b["output_mask"])
        affine = b.get("weight") is not None
        name = key if b.get("train", b.get("update", True)) is not False else "batch_norm_eval"
        n = b["grad_out"].numel()
        if mask[0]:
            per = _per_element(name + "_backward")
            if not affine:
                per -= _per_element(affine_key + "_backward")
        elif affine and any(mask[1:]):
            per = _per_element(affine_key + "_params_backward")
        else:
            per = 0
        return Count(elementwise_flops=n * max(per, 0))
    return count


def _pool(key: str, backward: bool) -> Handler:
    """Forward: every output compares or adds its window. Backward: max pooling scatters each
    output gradient to its argmax, average pooling spreads it over its window (per output)."""
    def count(b: Mapping[str, Any], out: Any) -> Count:
        if backward:
            grads = b["grad_output"].numel() if key == "max_pool" else _first(out).numel()
            return Count(elementwise_flops=grads * _per_element(key + "_backward"))
        kernel = b["kernel_size"]
        window = (int(kernel[0]) ** (b["self"].dim() - 2) if len(kernel) == 1  # one size for all
                  else _numel(kernel))
        return Count(elementwise_flops=_first(out).numel() * window * _per_element(key))
    return count


def _adaptive_avg_pool(b: Mapping[str, Any], out: Any) -> Count:
    """Each input element is summed into its window (windows tile the input when the sizes
    divide; overlapping windows of uneven sizes are counted once, a small undercount)."""
    return Count(elementwise_flops=b["self"].numel() * _per_element("avg_pool"))


def _embedding(b: Mapping[str, Any], out: Any) -> Count:
    """A gather: the rows looked up are read (not the whole table), plus the indices."""
    y = _first(out)
    return Count(bytes_read=tensor_bytes(y) + tensor_bytes(b["indices"]),
                 bytes_written=tensor_bytes(y))


def _embedding_bag(b: Mapping[str, Any], out: Any) -> Count:
    """Each looked-up row is added into its bag (sum and mean; max compares as many)."""
    return Count(elementwise_flops=b["indices"].numel() * int(b["weight"].shape[1])
                 * _per_element("add"))


def _embedding_bag_backward(b: Mapping[str, Any], out: Any) -> Count:
    return Count(elementwise_flops=b["indices"].numel() * int(b["grad"].shape[1])
                 * _per_element("embedding_backward"))


# Gates per hidden unit of each recurrent mode (cuDNN/oneDNN numbering: RNN_RELU, RNN_TANH,
# LSTM, GRU) and the per-unit elementwise work of its cell.
_RNN_MODES = {0: (1, "rnn_cell"), 1: (1, "rnn_cell"), 2: (4, "lstm_cell"), 3: (3, "gru_cell")}


def _rnn_layer(backward: bool) -> Handler:
    """One fused recurrent layer (oneDNN's, what nn.LSTM/GRU/RNN run on CPU): every time step
    multiplies the input by W_ih and the hidden state by W_hh into the gates, adds the biases
    and runs the cell. Backward: gradients through both products and for both weights (twice
    the forward's MACs) and the cell's backward."""
    def count(b: Mapping[str, Any], out: Any) -> Count:
        x = b["input"]
        w_ih, w_hh = (b["weight1"], b["weight2"]) if backward else (b["weight0"], b["weight1"])
        steps = x.numel() // int(x.shape[-1])          # time steps x batch
        gates, cell = _RNN_MODES.get(int(b["mode"]), (1, "rnn_cell"))
        units = steps * int(b["hidden_size"])
        macs = steps * (w_ih.numel() + w_hh.numel())
        bias = 2 * gates * units if b["has_biases"] else 0
        if backward:
            return Count(macs=2 * macs, elementwise_flops=units * _per_element(cell + "_backward")
                         + bias * _per_element("bias_backward"))
        return Count(macs=macs, elementwise_flops=units * _per_element(cell)
                     + bias * _per_element("bias"))
    return count


def _nll_loss(backward: bool) -> Handler:
    """Gather the target's log-probability and reduce: one add (forward) or one scaled write
    (backward) per target."""
    def count(b: Mapping[str, Any], out: Any) -> Count:
        return Count(elementwise_flops=b["target"].numel()
                     * _per_element("mean_backward" if backward else "sum"))
    return count


def _embedding_backward(b: Mapping[str, Any], out: Any) -> Count:
    return Count(elementwise_flops=b["grad_output"].numel() * _per_element("add"))


# Ops that move or create data but do no arithmetic. Views move nothing (their bytes are 0).
VIEWS = frozenset("""
    view _unsafe_view reshape _reshape_alias t transpose permute expand unsqueeze squeeze
    select slice split split_with_sizes chunk unbind unflatten flatten alias detach as_strided
    view_as_real view_as_complex diagonal narrow movedim swapaxes lift_fresh expand_as
    _neg_view _conj numpy_T unfold real imag""".split())
NO_ARITHMETIC = VIEWS | frozenset("""
    clone contiguous copy copy_ _to_copy to _copy_from _copy_from_and_resize lift_fresh_copy
    empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros ones
    ones_like new_ones full full_like new_full fill fill_ zero zero_ arange scalar_tensor
    linspace eye tril triu cat stack index index_select gather select_backward slice_backward
    repeat roll flip constant_pad_nd randn rand randint randperm bernoulli bernoulli_
    normal_ uniform_ random_ _local_scalar_dense item is_same_size resize_ set_ masked_select
    nonzero argmax argmin topk sort argsort _unsafe_index index_put index_put_ scatter
    scatter_ masked_scatter detach_ _has_compatible_shallow_copy_type sym_size sym_stride
    sym_numel sym_storage_offset is_nonzero equal eq ne lt le gt ge logical_not logical_and
    logical_or bitwise_and bitwise_or bitwise_not _assert_async _assert_tensor_metadata
    split_with_sizes_copy _unsafe_view_copy reflection_pad1d reflection_pad2d replication_pad2d
    upsample_nearest2d pixel_shuffle pixel_unshuffle channel_shuffle im2col col2im
    _pin_memory record_stream resolve_conj resolve_neg unsafe_split""".split())

_ELEMENTWISE_OUT = {
    "add": "add", "add_": "add", "sub": "sub", "sub_": "sub", "rsub": "sub", "mul": "mul",
    "mul_": "mul", "div": "div", "div_": "div", "neg": "neg", "exp": "exp", "exp_": "exp",
    "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "pow": "pow", "abs": "abs",
    "reciprocal": "div", "relu": "relu", "relu_": "relu", "threshold_backward": "relu_backward",
    "silu": "silu", "silu_": "silu", "silu_backward": "silu_backward", "sigmoid": "sigmoid",
    "sigmoid_backward": "sigmoid_backward", "tanh": "tanh", "tanh_backward": "tanh_backward",
    "hardswish": "hardswish", "hardswish_": "hardswish", "hardswish_backward": "hardswish_backward",
    "hardsigmoid": "hardsigmoid", "hardsigmoid_backward": "hardsigmoid_backward",
    "leaky_relu": "leaky_relu", "leaky_relu_": "leaky_relu",
    "leaky_relu_backward": "leaky_relu_backward", "elu": "elu", "elu_": "elu",
    "elu_backward": "elu_backward", "softplus": "softplus", "softplus_backward": "softplus_backward",
    "mish": "mish", "mish_backward": "mish_backward", "_softmax": "softmax",
    "_safe_softmax": "softmax", "_log_softmax": "log_softmax",
    "_softmax_backward_data": "softmax_backward",
    "_log_softmax_backward_data": "log_softmax_backward", "where": "where",
    "masked_fill": "where", "masked_fill_": "where", "clamp": "clamp", "clamp_": "clamp",
    "clamp_min": "clamp", "clamp_min_": "clamp", "clamp_max": "clamp", "clamp_max_": "clamp",
    "native_dropout": "dropout", "native_dropout_backward": "dropout_backward",
    "_adaptive_avg_pool2d_backward": "avg_pool_backward",
    "_adaptive_avg_pool3d_backward": "avg_pool_backward",
    "addcmul": "mul", "addcdiv": "div", "lerp": "mul", "maximum": "clamp", "minimum": "clamp",
    "sin": "exp", "cos": "exp", "erf": "exp", "sign": "abs", "square": "mul",
    "cumsum": "add",
}
_ELEMENTWISE_EXTRA = {"addcmul": 1, "addcdiv": 1, "lerp": 2}   # the fused add(s)

_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "sum", "amin": "sum", "max": "sum",
               "min": "sum", "var": "sum", "std": "sum", "var_mean": "sum", "std_mean": "sum",
               "logsumexp": "softmax", "norm": "sum", "linalg_vector_norm": "sum", "prod": "sum",
               "_foreach_norm": "sum", "all": "sum", "any": "sum"}

# The statistics reductions pass over the data more than once: variance = mean + squared
# deviations; the weight says how many per-element steps each takes on top of the base op.
_REDUCTION_PASSES = {"var": 3, "std": 3, "var_mean": 3, "std_mean": 3, "norm": 2,
                     "linalg_vector_norm": 2}


def _reduction(name: str) -> Handler:
    key, passes = _REDUCTIONS[name], _REDUCTION_PASSES.get(name, 1)

    def count(b: Mapping[str, Any], out: Any) -> Count:
        x = b.get("self")
        n = x.numel() if isinstance(x, torch.Tensor) else 0
        return Count(elementwise_flops=n * _per_element(key) * passes)
    return count


def _elementwise(name: str, key: str) -> Handler:
    extra = _ELEMENTWISE_EXTRA.get(name, 0)

    def count(b: Mapping[str, Any], out: Any) -> Count:
        n = _first(out).numel() if isinstance(_first(out), torch.Tensor) else 0
        return Count(elementwise_flops=n * (_per_element(key) + extra))
    return count


_SPECIAL: dict[str, Handler] = {
    "mm": _mm, "addmm": _addmm, "bmm": _bmm, "baddbmm": _baddbmm, "mv": _mv, "addmv": _addmv,
    "dot": _dot, "vdot": _dot,
    "convolution": _convolution, "_convolution": _convolution,
    "convolution_backward": _convolution_backward,
    "_scaled_dot_product_flash_attention_for_cpu": _sdpa_cpu,
    "_scaled_dot_product_flash_attention": _sdpa_cpu,
    "_scaled_dot_product_efficient_attention": _sdpa_cpu,
    "_scaled_dot_product_cudnn_attention": _sdpa_cpu,
    "_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_backward,
    "_scaled_dot_product_flash_attention_backward": _sdpa_backward,
    "_scaled_dot_product_efficient_attention_backward": _sdpa_backward,
    "_scaled_dot_product_cudnn_attention_backward": _sdpa_backward,
    "_native_multi_head_attention": _native_mha,
    "_transformer_encoder_layer_fwd": _transformer_encoder_layer,
    "gelu": _gelu(False), "gelu_": _gelu(False), "gelu_backward": _gelu(True),
    "hardtanh": _hardtanh(False), "hardtanh_": _hardtanh(False),
    "hardtanh_backward": _hardtanh(True),
    "native_batch_norm": _norm("batch_norm"), "_native_batch_norm_legit": _norm("batch_norm"),
    "_batch_norm_with_update": _norm("batch_norm"),
    "_native_batch_norm_legit_no_training": _norm("batch_norm", training=False),
    "_batch_norm_no_update": _norm("batch_norm", training=False),
    "native_batch_norm_backward": _norm_backward("batch_norm"),
    "batch_norm_backward": _norm_backward("batch_norm"),
    "native_layer_norm": _norm("layer_norm"), "native_layer_norm_backward": _norm_backward("layer_norm"),
    "native_group_norm": _norm("group_norm"), "native_group_norm_backward": _norm_backward("group_norm"),
    "_fused_rms_norm": _norm("rms_norm"), "_fused_rms_norm_backward": _norm_backward("rms_norm"),
    "max_pool2d_with_indices": _pool("max_pool", False),
    "max_pool3d_with_indices": _pool("max_pool", False),
    "max_pool2d_with_indices_backward": _pool("max_pool", True),
    "max_pool3d_with_indices_backward": _pool("max_pool", True),
    "avg_pool2d": _pool("avg_pool", False), "avg_pool3d": _pool("avg_pool", False),
    "avg_pool2d_backward": _pool("avg_pool", True), "avg_pool3d_backward": _pool("avg_pool", True),
    "_adaptive_avg_pool2d": _adaptive_avg_pool, "_adaptive_avg_pool3d": _adaptive_avg_pool,
    "embedding": _embedding, "embedding_dense_backward": _embedding_backward,
    "_embedding_bag": _embedding_bag, "_embedding_bag_forward_only": _embedding_bag,
    "_embedding_bag_backward": _embedding_bag_backward,
    "_embedding_bag_dense_backward": _embedding_bag_backward,
    "mkldnn_rnn_layer": _rnn_layer(False), "mkldnn_rnn_layer_backward": _rnn_layer(True),
    "nll_loss_forward": _nll_loss(False), "nll_loss_backward": _nll_loss(True),
    "nll_loss2d_forward": _nll_loss(False), "nll_loss2d_backward": _nll_loss(True),
    "_prelu_kernel": _per_output("leaky_relu"),
    "_prelu_kernel_backward": _per_output("leaky_relu_backward"),
    "upsample_bilinear2d": _per_output("upsample_bilinear"),
    "upsample_bilinear2d_backward": _per_input("upsample_bilinear_backward", "grad_output"),
    "upsample_bicubic2d": _per_output("upsample_bicubic"),
    "upsample_bicubic2d_backward": _per_input("upsample_bicubic_backward", "grad_output"),
    "grid_sampler_2d": _grid_sampler_2d, "grid_sampler_2d_backward": _grid_sampler_2d_backward,
}

# Ops of other namespaces, by qualified name. Their formula may return None when the count
# needs values the tensors do not hold (on the meta device).
_OTHER: dict[str, Callable[[Mapping[str, Any], Any], Count | None]] = {
    "torchvision::roi_align": _roi_align,
    "torchvision::_roi_align_backward": _roi_align_backward,
}


def _build_table() -> dict[str, Handler]:
    table = dict(_SPECIAL)
    for name, key in _ELEMENTWISE_OUT.items():
        table.setdefault(name, _elementwise(name, key))
    for name in _REDUCTIONS:
        table.setdefault(name, _reduction(name))
    return table


_TABLE = _build_table()


def _base_name(name: str) -> str:
    """An in-place variant (``sigmoid_``, ``transpose_``) counts as its out-of-place op."""
    if name.endswith("_") and not name.endswith("__") and name not in _TABLE \
            and name not in NO_ARITHMETIC:
        base = name[:-1]
        if base in _TABLE or base in NO_ARITHMETIC:
            return base
    return name


def is_known(name: str) -> bool:
    """Whether the aten op ``name`` has a formula or is known to do no arithmetic (in-place
    variants included)."""
    base = _base_name(name)
    return base in _TABLE or base in NO_ARITHMETIC


def count_op(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
             out: Any) -> Count | None:
    """The cost of one call of ``func`` (an OpOverload: aten, or another namespace's op with
    a formula here, such as ``torchvision::roi_align``): arithmetic from its formula, bytes
    from its arguments and results (views move none). None when the op is unknown, or when
    its count depends on values the tensors do not hold."""
    c: Count | None
    if func.namespace != "aten":
        other = _OTHER.get(f"{func.namespace}::{func.overloadpacket.__name__}")
        if other is None:
            return None
        c = other(_bind(func, args, kwargs), out)
        if c is None:
            return None
    else:
        name = _base_name(func.overloadpacket.__name__)
        if name in VIEWS:
            return Count()
        handler = _TABLE.get(name)
        if handler is None and name not in NO_ARITHMETIC:
            return None
        c = handler(_bind(func, args, kwargs), out) if handler is not None else None
    read, written = _io_bytes(list(args) + list(kwargs.values()), out)
    if c is None:
        return Count(bytes_read=read, bytes_written=written)
    if c.bytes:   # the formula knows the traffic better than the arguments' sizes
        return c
    return Count(c.macs, c.elementwise_flops, read, written)


# Fused ops whose arithmetic the unfused path does in the running module's submodules: their
# count split by submodule (a path relative to the running module, "" for itself).
_PARTS: dict[str, Callable[[Mapping[str, Any], Any], dict[str, Count]]] = {
    "_transformer_encoder_layer_fwd": _encoder_layer_parts,
}


def count_parts(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                out: Any) -> dict[str, Count] | None:
    """The arithmetic of one call of a fused op by the submodule of the running module that
    the unfused path would do it in (a path relative to it, "" for the module itself), as
    :func:`count_op` counts it in total (bytes apart: the fused kernel's traffic is the
    running module's); None for an op that runs in one module."""
    parts = _PARTS.get(func.overloadpacket.__name__) if func.namespace == "aten" else None
    return None if parts is None else parts(_bind(func, args, kwargs), out)


def count_decomposed(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                     out: Any) -> Count | None:
    """An aten op without a formula counted by its decomposition, as the analyzer counts it:
    the pieces run on meta copies of the arguments (no arithmetic, no memory), each counted
    by its formula (and decomposed again where it has none); the bytes are the op's own
    arguments and results. None when the op has no decomposition (a native fused kernel
    needs a formula of its own) or its pieces cannot run on the meta device."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map

    if func.namespace != "aten":
        return None
    total = [Count()]

    class _Sum(TorchDispatchMode):  # type: ignore[misc]
        def __torch_dispatch__(self, f: Any, types: Any, a: tuple[Any, ...] = (),
                               k: Mapping[str, Any] | None = None) -> Any:
            k = k or {}
            if f.namespace == "aten" and not is_known(f.overloadpacket.__name__):
                with self:
                    r = f.decompose(*a, **k)
                if r is not NotImplemented:
                    return r
            result = f(*a, **k)
            c = count_op(f, a, k, result)
            if c is not None:
                total[0] = total[0] + c
            return result

    def meta(x: Any) -> Any:
        return x.to("meta") if isinstance(x, torch.Tensor) else x

    margs, mkwargs = tree_map(meta, (tuple(args), dict(kwargs)))
    try:
        with _Sum():
            r = func.decompose(*margs, **mkwargs)
    except Exception:  # a piece the meta device cannot run: no count rather than a wrong one
        return None
    if r is NotImplemented:
        return None
    read, written = _io_bytes(list(args) + list(kwargs.values()), out)
    return Count(total[0].macs, total[0].elementwise_flops, read, written)

