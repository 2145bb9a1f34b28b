"""Closed-form FLOP, MAC, byte and parameter counts of common layers, forward and backward,
and the one table of elementwise FLOPs per element (``ELEMENTWISE_FLOPS``) that every count
here, and any analyzer built on this module, uses. Pure integer arithmetic on shapes: no
framework import and no measurement here; the ``Count`` and ``Cost`` records live in
costs.py.

Conventions (see also ``costs.CONVENTION``):

- ``macs`` are the multiply-accumulates of linear, matmul, einsum contractions, convolution
  and the two attention products; everything else is ``elementwise_flops``, counted per
  element from ``ELEMENTWISE_FLOPS``. Work done once per row or per channel (a variance's
  rsqrt, a softmax's reciprocal) is lower order and not counted.
- Bytes are the minimum traffic at ``dtype``: every input (activations, weights, bias) read
  once and every output written once. Indices count at int64 width, boolean masks at 1 byte.
- Backward counts the gradients actually computed, derived per operation: the gradient with
  respect to the input (unless ``input_grad=False``, as for a model's first layer) and to
  every parameter. Backward bytes read what the gradient formulas need (the output gradient,
  saved inputs or weights) and write every gradient computed.
"""

from __future__ import annotations

import math
import string
from types import MappingProxyType
from typing import Any, Mapping, Protocol, Sequence

from .._checks import check_int
from .costs import Cost, Count, dtype_bytes

__all__ = [
    "ACTIVATIONS", "ELEMENTWISE_FLOPS", "GRID_SAMPLE_MODES", "INDEX_BYTES",
    "activation", "adaptive_avg_pool", "attention", "attention_parts", "avg_pool",
    "batch_norm", "bmm", "conv", "conv1d", "conv2d", "conv3d", "conv_output_shape",
    "conv_output_size", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "dropout",
    "einsum", "elementwise", "embedding", "grid_sample", "group_norm", "layer_norm", "linear",
    "log_softmax", "matmul", "max_pool", "pool_output_size", "rms_norm", "roi_align",
    "softmax",
]

# Bytes per index of an embedding lookup (torch's int64 indices).
INDEX_BYTES = 8

# FLOPs per element, forward and "<name>_backward". Counting rules, applied throughout:
#   - one arithmetic operation, comparison or select = 1 FLOP;
#   - one transcendental (exp, log, log1p, erf, tanh) = 1 FLOP, as one library call;
#   - a reduction costs 1 per reduced element (n - 1 adds, plus 1 for the divide of a mean);
#   - backward counts the gradient's arithmetic, including the multiply by the output gradient
#     and any recomputation of an intermediate the forward did not keep;
#   - unless a comment says otherwise, the unit is one element of the op's output.
#
# name          fwd  bwd  forward                             | backward
# add            1    0   a + b                               | grads are the output gradient
# sub            1    1   a - b                               | negate for the subtrahend
# mul            1    2   a * b                               | g*b, g*a
# div            1    4   a / b                               | ga = g/b; gb = -ga*a/b (3)
# neg            1    1   -x                                  | -g
# exp            1    1   exp                                 | g*y
# log            1    1   log                                 | g/x
# sqrt           1    2   sqrt                                | g / (2*y)
# rsqrt          1    4   rsqrt                               | -0.5*g*y^3 (y^2, y^3, *g, *-0.5)
# pow            1    3   x^p, scalar p                       | g*p*x^(p-1)
# abs            1    2   |x|                                 | g*sign(x)
# relu           1    1   max(x, 0)                           | select g where y > 0
# leaky_relu     2    2   compare, a*x                        | compare, a*g
# gelu           5    11  0.5*x*(1 + erf(x/sqrt2))            | Phi(x) (4) + x*phi(x) (5), +, *g
# gelu_tanh      9    19  x^3 (2), *a, +x, *c, tanh, +1, *x,  | recompute tanh (6), du/dx (4),
#                         *0.5                                | 0.5(1+t) (2), 1-t^2 (2), 3 muls,
#                                                             | +, *g
# silu           5    9   x * sigmoid(x)                      | s (4), s*(1 + x*(1-s)) (4), *g
# sigmoid        4    3   1 / (1 + exp(-x)): neg, exp, +, /   | g*y*(1-y)
# tanh           1    3   tanh                                | g*(1-y^2)
# hardswish      5    6   x*clamp(x+3, 0, 6)/6                | 2 compares, (2x+3)/6 (3), *g
# hardsigmoid    4    3   clamp(x+3, 0, 6)/6                  | 2 compares, g/6
# relu6          2    2   min(max(x, 0), 6)                   | 2 compares (select g)
# elu            4    3   x > 0 ? x : a*(exp(x) - 1)          | compare, (y + a)*g
# softplus       3    4   threshold compare, exp, log1p       | exp, z/(1+z) (2), *g
# mish           5    14  x * tanh(softplus(x))               | softplus, tanh, sigmoid (4),
#                                                             | 1-t^2 (2), 2 muls, +, *g
# softmax        5    4   max, x - max, exp, sum, divide      | y*(g - sum(g*y)): *, sum, -, *
# log_softmax    5    4   max, x - max, exp, sum, - logsumexp | g - exp(y)*sum(g): exp, sum, *, -
# layer_norm     7    13  mean (1), variance (sub, square,    | input grad 9: recompute x_hat (2),
# batch_norm     7    13  sum: 3), normalise (1), affine (2); | mean(g), g*x_hat, its sum, x_hat*m,
# group_norm     7    13  batch_norm in training mode, with   | 2 subs, *rstd (7); plus the affine
#                         batch statistics                    | part, norm_affine_backward (4)
# batch_norm_eval 2   6   x*scale + shift: running stats and  | input grad g*scale (1) + weight and
#                         affine folded per channel           | bias grads (5, as below)
# rms_norm       4    9   square, mean, *rrms, *weight        | input grad 6: x_hat, g*x_hat, sum,
#                                                             | x_hat*m, sub, *rrms; + weight (3)
# The affine parts included above, left out by a norm without affine parameters:
# norm_affine    2    4   x_hat*w + b                         | g*w (1), weight grad g*x_hat and
#                                                             | sum (2), bias grad sum (1)
# norm_affine_params_backward  5                              | weight and bias grads when the
#                                                             | input needs none: x_hat (2) + 3
# norm_scale     1    3   x_hat*w (rms_norm)                  | g*w (1), weight grad (2)
# norm_scale_params_backward   3                              | x_hat (1) + weight grad (2)
# max_pool       1    1   compare per WINDOW element          | accumulate g at the argmax,
#                                                             | per OUTPUT element
# avg_pool       1    1   per WINDOW element: k-1 adds + 1    | per WINDOW element: add g/k
#                         divide = k per window               | (g/k itself: "scale")
# sum            1    0   per reduced element                 | broadcast of g (a copy)
# mean           1    1   per reduced element (adds + divide) | g/n per input element
# dropout        2    1   mask compare, x*scaled mask         | g*scaled mask (RNG not counted)
# clamp          2    2   min, max                            | 2 compares (select g)
# where          1    2   select                              | 2 selects (one grad per branch)
# scale          1    1   x*c for a scalar c                  | g*c
# bias           1    1   bias add per output element         | bias grad: sum of g over the batch
# embedding      0    1   gather (no arithmetic)              | scatter-add g per gathered element
# upsample_bilinear 9  8  per OUTPUT element: 3 lerps of      | per OUTPUT element: 4 weighted
#                         (sub, mul, add)                     | scatter-adds (mul, add)
# upsample_bicubic 35 32  per OUTPUT element: 16 taps as 5    | per OUTPUT element: 16 weighted
#                         4-tap sums (4 rows, then the column)| scatter-adds (mul, add)
#                         of 4 mul + 3 add each               |
# Sampling at computed positions (grid_sample, RoI Align). The interpolation counts per OUTPUT
# element (per channel); the positions and tap weights, shared by the channels, count once per
# sampled location ("_coords", per GRID location or RoI SAMPLE point), and backward recomputes
# them. Handling of positions outside the input (padding_mode) is not counted, as a
# convolution's zero padding is not. Source: torch's GridSampler.cpp and UpSample.h.
# grid_sample_bilinear 7 8  4 taps weighted (4 mul, 3 add)    | input grad: 4 weighted scatter-adds
# grid_sample_nearest  0 1  gather of 1 tap                   | input grad: 1 scatter-add
# grid_sample_bicubic 35 32 16 taps as upsample_bicubic       | input grad: 16 weighted scatter-adds
# grid_sample_<mode>_grid_backward, per OUTPUT element: the grid gradient, each tap's value
#     times its weight's slope along x and along y, times g, accumulated (3 per tap and
#     axis): bilinear 24, bicubic 96, nearest 0 (a step function has no slope)
# grid_sample_<mode>_coords, per GRID location: bilinear 16: unnormalise x and y (3 each),
#     floor (2), the 4 distances to the cell's sides (4), the 4 tap weights (4); nearest 8:
#     unnormalise (6), round (2); bicubic 60: unnormalise (6), floor (2), fractions (2), 4
#     cubic weights per axis (25 each: get_cubic_upsample_coefficients)
# grid_sample_<mode>_coords_backward: the same recomputed (bicubic also forms the 16 tap
#     weights its input gradient scatters with: 76)
# grid_sample_<mode>_grid_coords_backward, per GRID location with a grid gradient: the chain
#     rule through the unnormalisation (one multiply per axis): 2; bicubic adds the weights'
#     slopes (20 per axis) and their 32 products with the other axis's weights: 74
# roi_align      8    8   per OUTPUT element and SAMPLE point | per OUTPUT element and SAMPLE: 4
#                         of its bin: 4 taps weighted (7) and | weighted scatter-adds (mul, add);
#                         averaged into the bin (1)           | plus g/count per OUTPUT ("scale")
# roi_align_coords 14 14  per RoI SAMPLE point (shared by the channels): position (2 per axis),
#                         floor (2), fractions and their complements (4), the 4 tap weights
#                         (4); recomputed in backward. Source: torchvision's roi_align_kernel.cpp
# Recurrent cells, per hidden unit and time step, on top of the gate MACs (the input and
# hidden contributions accumulate into the gates) and the bias adds ("bias" per gate value):
# lstm_cell     18    22  i, f, o sigmoids (12), g tanh (1),  | do (4), dc (5), df, di, dg (4 each),
#                         c = f*c + i*g (3), h = o*tanh(c) (2)| dc_prev = dc*f (1)
# gru_cell      14    20  r, z sigmoids (8), n = tanh(x_n +   | dn, dz, dr through the same steps,
#                         r*h_n) (3), h = n + z*(h - n) (3)   | dh_prev (roughly 1.4x forward)
# rnn_cell       1     3  tanh or relu                        | g*(1-h^2)
ELEMENTWISE_FLOPS: Mapping[str, int] = MappingProxyType({
    "add": 1, "add_backward": 0,
    "sub": 1, "sub_backward": 1,
    "mul": 1, "mul_backward": 2,
    "div": 1, "div_backward": 4,
    "neg": 1, "neg_backward": 1,
    "exp": 1, "exp_backward": 1,
    "log": 1, "log_backward": 1,
    "sqrt": 1, "sqrt_backward": 2,
    "rsqrt": 1, "rsqrt_backward": 4,
    "pow": 1, "pow_backward": 3,
    "abs": 1, "abs_backward": 2,
    "relu": 1, "relu_backward": 1,
    "leaky_relu": 2, "leaky_relu_backward": 2,
    "gelu": 5, "gelu_backward": 11,
    "gelu_tanh": 9, "gelu_tanh_backward": 19,
    "silu": 5, "silu_backward": 9,
    "sigmoid": 4, "sigmoid_backward": 3,
    "tanh": 1, "tanh_backward": 3,
    "hardswish": 5, "hardswish_backward": 6,
    "hardsigmoid": 4, "hardsigmoid_backward": 3,
    "relu6": 2, "relu6_backward": 2,
    "elu": 4, "elu_backward": 3,
    "softplus": 3, "softplus_backward": 4,
    "mish": 5, "mish_backward": 14,
    "softmax": 5, "softmax_backward": 4,
    "log_softmax": 5, "log_softmax_backward": 4,
    "layer_norm": 7, "layer_norm_backward": 13,
    "batch_norm": 7, "batch_norm_backward": 13,
    "batch_norm_eval": 2, "batch_norm_eval_backward": 6,
    "group_norm": 7, "group_norm_backward": 13,
    "rms_norm": 4, "rms_norm_backward": 9,
    "norm_affine": 2, "norm_affine_backward": 4, "norm_affine_params_backward": 5,
    "norm_scale": 1, "norm_scale_backward": 3, "norm_scale_params_backward": 3,
    "max_pool": 1, "max_pool_backward": 1,
    "avg_pool": 1, "avg_pool_backward": 1,
    "sum": 1, "sum_backward": 0,
    "mean": 1, "mean_backward": 1,
    "dropout": 2, "dropout_backward": 1,
    "clamp": 2, "clamp_backward": 2,
    "where": 1, "where_backward": 2,
    "scale": 1, "scale_backward": 1,
    "bias": 1, "bias_backward": 1,
    "embedding": 0, "embedding_backward": 1,
    "upsample_bilinear": 9, "upsample_bilinear_backward": 8,
    "upsample_bicubic": 35, "upsample_bicubic_backward": 32,
    "grid_sample_bilinear": 7, "grid_sample_bilinear_backward": 8,
    "grid_sample_bilinear_grid_backward": 24, "grid_sample_bilinear_coords": 16,
    "grid_sample_bilinear_coords_backward": 16, "grid_sample_bilinear_grid_coords_backward": 2,
    "grid_sample_nearest": 0, "grid_sample_nearest_backward": 1,
    "grid_sample_nearest_grid_backward": 0, "grid_sample_nearest_coords": 8,
    "grid_sample_nearest_coords_backward": 8, "grid_sample_nearest_grid_coords_backward": 0,
    "grid_sample_bicubic": 35, "grid_sample_bicubic_backward": 32,
    "grid_sample_bicubic_grid_backward": 96, "grid_sample_bicubic_coords": 60,
    "grid_sample_bicubic_coords_backward": 76, "grid_sample_bicubic_grid_coords_backward": 74,
    "roi_align": 8, "roi_align_backward": 8,
    "roi_align_coords": 14, "roi_align_coords_backward": 14,
    "lstm_cell": 18, "lstm_cell_backward": 22,
    "gru_cell": 14, "gru_cell_backward": 20,
    "rnn_cell": 1, "rnn_cell_backward": 3,
})
_E = ELEMENTWISE_FLOPS

ACTIVATIONS: tuple[str, ...] = (
    "relu", "leaky_relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "hardswish",
    "hardsigmoid", "relu6", "elu", "softplus", "mish",
)

Shape = Sequence[int]


# -- validation ---------------------------------------------------------------------------
def _int(name: str, value: Any, minimum: int = 1) -> int:
    return check_int(name, value, minimum)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def _shape(name: str, value: Any, min_ndim: int = 0) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a tuple or list of ints, got {type(value).__name__} "
                        f"{value!r}")
    dims = tuple(_int(f"{name}[{i}]", d) for i, d in enumerate(value))
    if len(dims) < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension"
                         f"{'s' if min_ndim != 1 else ''}, got {dims}")
    return dims


def _per_dim(name: str, value: Any, n: int, minimum: int) -> tuple[int, ...]:
    """An int applied to all ``n`` spatial dims, or a sequence of exactly ``n`` ints."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return (_int(name, value, minimum),) * n
    if len(value) != n:
        raise ValueError(f"{name} must be an int or {n} ints (one per spatial dimension), "
                         f"got {tuple(value)!r}")
    return tuple(_int(f"{name}[{i}]", v, minimum) for i, v in enumerate(value))


def _numel_or_shape(name: str, value: Any) -> int:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return _int(name, value)
    return math.prod(_shape(name, value))


def _broadcast(shapes: Sequence[tuple[int, ...]], what: str) -> tuple[int, ...]:
    """numpy/torch broadcasting of ``shapes``; ValueError naming all of them if it fails."""
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(-ndim, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(sizes) > 1:
            raise ValueError(f"{what}: shapes {', '.join(map(str, shapes))} do not broadcast "
                             f"(dimension {axis} has sizes {sorted(sizes)})")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


# -- linear algebra -----------------------------------------------------------------------
def linear(in_features: int, out_features: int, *, batch: Shape = (), bias: bool = True,
           dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of ``y = x @ W.T + b`` with ``x`` of shape ``(*batch, in_features)``.

    Parameters
    ----------
    in_features, out_features : int
        Input and output widths (elements).
    batch : tuple of int
        Leading dimensions of ``x``, e.g. ``(8, 128)`` for 8 sequences of 128 tokens; ``()``
        for a single vector.
    bias : bool
        Whether a bias of ``out_features`` is added (1 FLOP per output element).
    dtype : str, numpy or torch dtype, or int
        Element type of activations and weights; sets the bytes.
    input_grad : bool
        Whether backward computes the gradient with respect to ``x`` (``g @ W``); the weight
        (``g.T @ x``) and bias (sum of ``g``) gradients are always computed.

    Returns
    -------
    Cost
        MACs ``prod(batch) * in * out`` forward; backward twice that with ``input_grad``,
        once without. ``params = in * out (+ out)``.

    Raises
    ------
    TypeError, ValueError
        Non-int or non-positive sizes, non-bool flags, unknown dtype.
    """
    fin, fout = _int("in_features", in_features), _int("out_features", out_features)
    rows = math.prod(_shape("batch", batch))
    has_bias, in_grad = _flag("bias", bias), _flag("input_grad", input_grad)
    w = dtype_bytes(dtype)
    macs, x_numel, y_numel = rows * fin * fout, rows * fin, rows * fout
    n_weight, n_bias = fin * fout, fout if has_bias else 0
    forward = Count(macs, y_numel * _E["bias"] if has_bias else 0,
                    w * (x_numel + n_weight + n_bias), w * y_numel)
    backward = Count(macs * (2 if in_grad else 1),
                     y_numel * _E["bias_backward"] if has_bias else 0,
                     w * (y_numel + x_numel + (n_weight if in_grad else 0)),
                     w * ((x_numel if in_grad else 0) + n_weight + n_bias))
    return Cost("linear", forward, backward, n_weight + n_bias)


def _matmul_dims(a: tuple[int, ...], b: tuple[int, ...], op: str
                 ) -> tuple[int, int, int, int, tuple[int, ...]]:
    """(batch elements, m, k, n, output shape) of torch.matmul(a, b)."""
    if not a or not b:
        raise ValueError(f"{op}: both operands need at least 1 dimension, got a_shape {a} "
                         f"and b_shape {b}")
    a2 = (1, a[0]) if len(a) == 1 else a
    b2 = (b[0], 1) if len(b) == 1 else b
    m, k, k2, n = a2[-2], a2[-1], b2[-2], b2[-1]
    if k != k2:
        raise ValueError(f"{op}: inner dimensions differ: a_shape {a} ends in {k} but b_shape "
                         f"{b} contracts over {k2}")
    batch = _broadcast([a2[:-2], b2[:-2]], f"{op} batch dimensions of a_shape {a} and b_shape {b}")
    out = batch + ((m,) if len(a) > 1 else ()) + ((n,) if len(b) > 1 else ())
    return math.prod(batch), m, k, n, out


def _product_cost(op: str, macs: int, a_numel: int, b_numel: int, out_numel: int, w: int,
                  a_grad: bool, b_grad: bool) -> Cost:
    forward = Count(macs, 0, w * (a_numel + b_numel), w * out_numel)
    if not (a_grad or b_grad):
        return Cost(op, forward)
    # grad_a = g @ b^T reads b; grad_b = a^T @ g reads a; each is one product of equal size.
    backward = Count(macs * (int(a_grad) + int(b_grad)), 0,
                     w * (out_numel + (b_numel if a_grad else 0) + (a_numel if b_grad else 0)),
                     w * ((a_numel if a_grad else 0) + (b_numel if b_grad else 0)))
    return Cost(op, forward, backward)


def matmul(a_shape: Shape, b_shape: Shape, *, dtype: Any = "float32", a_grad: bool = True,
           b_grad: bool = True) -> Cost:
    """Cost of ``torch.matmul(a, b)``: 1-D operands (a dot product, or a vector promoted to a
    matrix and the extra dimension dropped) and broadcast batch dimensions.

    Parameters
    ----------
    a_shape, b_shape : tuple of int
        Operand shapes.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    a_grad, b_grad : bool
        Which operands backward computes a gradient for; each costs the forward's MACs.
        With broadcasting, the reduction over broadcast batch dimensions is part of that
        product (a longer accumulation), not extra work.

    Returns
    -------
    Cost
        MACs ``prod(broadcast batch) * m * k * n``; no parameters.

    Raises
    ------
    ValueError
        0-d operands, different inner dimensions, batch dimensions that do not broadcast.
    """
    a = _shape("a_shape", a_shape)
    b = _shape("b_shape", b_shape)
    nb, m, k, n, out = _matmul_dims(a, b, "matmul")
    return _product_cost("matmul", nb * m * k * n, math.prod(a), math.prod(b), math.prod(out),
                         dtype_bytes(dtype), _flag("a_grad", a_grad), _flag("b_grad", b_grad))


def bmm(a_shape: Shape, b_shape: Shape, *, dtype: Any = "float32", a_grad: bool = True,
        b_grad: bool = True) -> Cost:
    """Cost of ``torch.bmm``: ``(B, m, k) @ (B, k, n)``, no broadcasting; see ``matmul``.

    Raises
    ------
    ValueError
        Operands that are not 3-D, different batch sizes or inner dimensions.
    """
    a = _shape("a_shape", a_shape)
    b = _shape("b_shape", b_shape)
    if len(a) != 3 or len(b) != 3:
        raise ValueError(f"bmm takes two 3-D shapes (B, m, k) and (B, k, n), got a_shape {a} "
                         f"and b_shape {b}")
    if a[0] != b[0]:
        raise ValueError(f"bmm: batch sizes differ: a_shape {a} and b_shape {b}")
    nb, m, k, n, out = _matmul_dims(a, b, "bmm")
    return _product_cost("bmm", nb * m * k * n, math.prod(a), math.prod(b), math.prod(out),
                         dtype_bytes(dtype), _flag("a_grad", a_grad), _flag("b_grad", b_grad))


def einsum(equation: str, *shapes: Shape, dtype: Any = "float32",
           input_grad: bool = True) -> Cost:
    """Cost of ``torch.einsum(equation, *operands)`` for one or two operands.

    With two operands and a contraction (an index summed away), MACs are the product of the
    sizes of all distinct indices: the iterations of the naive loop nest. Two operands
    without a contraction (outer or elementwise products) cost one multiply per element of
    that loop nest (elementwise FLOPs). One operand costs a sum per element if an index is
    summed away, nothing for a pure permutation or diagonal. Backward computes the gradient
    of every operand (``input_grad=False``: none); for two operands each gradient is an
    einsum over the same indices and so costs the forward's work again.

    Parameters
    ----------
    equation : str
        Explicit (``"bij,bjk->bik"``) or implicit (``"ij,jk"``: the output is the indices
        that appear once, in alphabetical order) form, letters only.
    *shapes : tuple of int
        One shape per operand. A size-1 dimension broadcasts against its index's size.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.

    Raises
    ------
    ValueError
        Ellipsis (``...``), more than two operands (the cost depends on the contraction
        order: split the einsum into pairwise ones), a malformed equation, operand counts or
        ranks that do not match the equation, inconsistent index sizes.
    TypeError
        ``equation`` is not a string.
    """
    if not isinstance(equation, str):
        raise TypeError(f"equation must be a str, got {type(equation).__name__} {equation!r}")
    eq = equation.replace(" ", "")
    if "..." in eq:
        raise ValueError(f"einsum: ellipsis is not supported in {equation!r}; write the "
                         "indices out")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    letters = set(string.ascii_letters)
    for term in terms + ([rhs] if arrow else []):
        if not set(term) <= letters:
            raise ValueError(f"einsum: equation {equation!r} must use letters, commas and one "
                             "'->' only")
    if len(terms) > 2:
        raise ValueError(f"einsum: {len(terms)} operands in {equation!r}; only one or two are "
                         "supported (split it into pairwise einsums: the cost depends on the "
                         "contraction order)")
    if len(shapes) != len(terms):
        raise ValueError(f"einsum: equation {equation!r} has {len(terms)} operand"
                         f"{'s' if len(terms) != 1 else ''}, got {len(shapes)} shape"
                         f"{'s' if len(shapes) != 1 else ''}")
    dims = [_shape(f"shapes[{i}]", s) for i, s in enumerate(shapes)]
    sizes: dict[str, int] = {}
    for i, (term, shape) in enumerate(zip(terms, dims)):
        if len(term) != len(shape):
            raise ValueError(f"einsum: operand {i} is {term!r} ({len(term)} indices) but its "
                             f"shape {shape} has {len(shape)} dimensions")
        for index, size in zip(term, shape):
            seen = sizes.get(index, 1)
            if size != seen and 1 not in (size, seen):
                raise ValueError(f"einsum: index {index!r} has size {seen} and {size} in "
                                 f"{equation!r} with shapes {', '.join(map(str, dims))}")
            sizes[index] = max(seen, size)
    if arrow:
        if len(set(rhs)) != len(rhs) or not set(rhs) <= set(sizes):
            raise ValueError(f"einsum: output {rhs!r} of {equation!r} must name distinct "
                             "indices of the operands")
        output = rhs
    else:
        counts = {c: lhs.count(c) for c in sizes}
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    in_grad = _flag("input_grad", input_grad)
    w = dtype_bytes(dtype)
    loop = math.prod(sizes.values())
    contraction = bool(set(sizes) - set(output))
    out_numel = math.prod(sizes[c] for c in output)
    numels = [math.prod(s) for s in dims]
    if len(dims) == 1:
        flops = loop * _E["sum"] if contraction else 0
        forward = Count(0, flops, w * numels[0], w * out_numel)
        backward = (Count(0, loop * _E["sum_backward"] if contraction else 0, w * out_numel,
                          w * numels[0]) if in_grad else Count())
        return Cost("einsum", forward, backward)
    if contraction:
        return _product_cost("einsum", loop, numels[0], numels[1], out_numel, w, in_grad,
                             in_grad)
    forward = Count(0, loop * _E["mul"], w * sum(numels), w * out_numel)
    backward = (Count(0, loop * _E["mul_backward"], w * (out_numel + sum(numels)),
                      w * sum(numels)) if in_grad else Count())
    return Cost("einsum", forward, backward)


# -- convolution --------------------------------------------------------------------------
def _padding_total(padding: Any, n: int, kernel: tuple[int, ...], dilation: tuple[int, ...],
                   stride: tuple[int, ...], transposed: bool) -> tuple[int, ...]:
    """Total padding (both sides) per spatial dim."""
    if isinstance(padding, str):
        if transposed:
            raise ValueError(f"padding={padding!r} is not supported for transposed "
                             "convolution; give an int or a tuple")
        if padding == "valid":
            return (0,) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"padding='same' needs stride 1, got stride {stride}")
            return tuple(d * (k - 1) for k, d in zip(kernel, dilation))
        raise ValueError(f"padding must be an int, a tuple, 'same' or 'valid', got {padding!r}")
    return tuple(2 * p for p in _per_dim("padding", padding, n, 0))


def _out_size(size: int, kernel: int, stride: int, pad_total: int, dilation: int,
              transposed: bool, output_padding: int) -> int:
    if transposed:
        return (size - 1) * stride - pad_total + dilation * (kernel - 1) + output_padding + 1
    return (size + pad_total - dilation * (kernel - 1) - 1) // stride + 1


def conv_output_size(size: int, kernel: int, stride: int = 1, padding: int | str = 0,
                     dilation: int = 1, transposed: bool = False,
                     output_padding: int = 0) -> int:
    """Output length of one spatial dimension of a convolution, as torch computes it.

    ``floor((size + 2*padding - dilation*(kernel - 1) - 1) / stride) + 1``; transposed:
    ``(size - 1)*stride - 2*padding + dilation*(kernel - 1) + output_padding + 1``.

    Parameters
    ----------
    size, kernel, stride, dilation : int
        Input length, kernel length, stride and dilation (elements).
    padding : int or {"same", "valid"}
        Zero padding on each side; "same" keeps the size (stride 1 only), "valid" is 0.
    transposed : bool
        Whether the convolution is transposed.
    output_padding : int
        Extra length on one side of a transposed convolution's output; smaller than the
        stride or the dilation.

    Raises
    ------
    ValueError
        Non-positive sizes, negative padding, "same" with a stride, output padding outside
        its range or on a plain convolution, an output length <= 0.
    """
    size, kernel = _int("size", size), _int("kernel", kernel)
    stride, dilation = _int("stride", stride), _int("dilation", dilation)
    trans = _flag("transposed", transposed)
    op = _int("output_padding", output_padding, 0)
    _check_output_padding((op,), (stride,), (dilation,), trans)
    total = _padding_total(padding, 1, (kernel,), (dilation,), (stride,), trans)[0]
    out = _out_size(size, kernel, stride, total, dilation, trans, op)
    if out <= 0:
        raise ValueError(f"convolution output size would be {out} (size={size}, "
                         f"kernel={kernel}, stride={stride}, padding={padding!r}, "
                         f"dilation={dilation}); the padded input is smaller than the kernel")
    return out


def _check_output_padding(op: tuple[int, ...], stride: tuple[int, ...],
                          dilation: tuple[int, ...], transposed: bool) -> None:
    if not transposed:
        if any(op):
            raise ValueError(f"output_padding={op} applies to transposed convolution only")
        return
    for o, s, d in zip(op, stride, dilation):
        if o >= s and o >= d:
            raise ValueError(f"output_padding {o} must be smaller than the stride {s} or the "
                             f"dilation {d}")


class _ConvGeometry:
    """Validated shapes of one convolution."""

    def __init__(self, x_shape: Shape, w_shape: Shape, stride: Any, padding: Any,
                 dilation: Any, groups: Any, transposed: Any, output_padding: Any) -> None:
        x = _shape("x_shape", x_shape)
        wt = _shape("w_shape", w_shape)
        self.transposed = _flag("transposed", transposed)
        if len(wt) < 3:
            raise ValueError(f"w_shape must be (out, in/groups, *kernel) with at least one "
                             f"spatial dimension, got {wt}")
        n = len(wt) - 2
        if len(x) not in (n + 1, n + 2):
            raise ValueError(f"x_shape {x} does not fit w_shape {wt}: a {n}-d convolution "
                             f"takes (N, C, *{n} spatial dims) or unbatched (C, *spatial)")
        self.batched = len(x) == n + 2
        self.n = n
        self.batch = x[0] if self.batched else 1
        self.c_in = x[-n - 1]
        self.in_spatial = x[-n:]
        self.kernel = wt[2:]
        self.groups = g = _int("groups", groups)
        self.stride = _per_dim("stride", stride, n, 1)
        self.dilation = _per_dim("dilation", dilation, n, 1)
        self.output_padding = _per_dim("output_padding", output_padding, n, 0)
        _check_output_padding(self.output_padding, self.stride, self.dilation, self.transposed)
        if self.transposed:
            if wt[0] != self.c_in:
                raise ValueError(f"x_shape {x} has {self.c_in} channels but the transposed "
                                 f"weight w_shape {wt} expects {wt[0]} (in, out/groups, ...)")
            if self.c_in % g:
                raise ValueError(f"groups={g} does not divide the {self.c_in} input channels "
                                 f"of x_shape {x}")
            self.c_out = wt[1] * g
        else:
            if wt[1] * g != self.c_in:
                raise ValueError(f"x_shape {x} has {self.c_in} channels but w_shape {wt} with "
                                 f"groups={g} expects {wt[1] * g} (in/groups = {wt[1]})")
            if wt[0] % g:
                raise ValueError(f"groups={g} does not divide the {wt[0]} output channels of "
                                 f"w_shape {wt}")
            self.c_out = wt[0]
        self.weight_numel = math.prod(wt)
        pads = _padding_total(padding, n, self.kernel, self.dilation, self.stride,
                              self.transposed)
        out = tuple(_out_size(*a, self.transposed, o) for a, o in zip(
            zip(self.in_spatial, self.kernel, self.stride, pads, self.dilation),
            self.output_padding))
        if any(o <= 0 for o in out):
            raise ValueError(f"convolution output would be {out} for x_shape {x}, w_shape "
                             f"{wt}, stride {self.stride}, padding {padding!r}, dilation "
                             f"{self.dilation}: the padded input is smaller than the kernel")
        self.out_spatial = out
        self.x_shape = x
        self.out_shape = (((self.batch,) if self.batched else ()) + (self.c_out,) + out)

    @property
    def macs(self) -> int:
        if self.transposed:
            # Every input element scatters into Cout/groups * prod(kernel) outputs.
            return (self.batch * self.c_in * math.prod(self.in_spatial)
                    * (self.c_out // self.groups) * math.prod(self.kernel))
        return (self.batch * self.c_out * math.prod(self.out_spatial)
                * (self.c_in // self.groups) * math.prod(self.kernel))


def conv_output_shape(x_shape: Shape, w_shape: Shape, *, stride: int | Shape = 1,
                      padding: int | Shape | str = 0, dilation: int | Shape = 1,
                      groups: int = 1, transposed: bool = False,
                      output_padding: int | Shape = 0) -> tuple[int, ...]:
    """Output shape of ``conv`` with the same arguments: ``(N, Cout, *out_spatial)``, or
    ``(Cout, *out_spatial)`` for an unbatched input.

    Raises
    ------
    ValueError
        As ``conv``.
    """
    return _ConvGeometry(x_shape, w_shape, stride, padding, dilation, groups, transposed,
                         output_padding).out_shape


def conv(x_shape: Shape, w_shape: Shape, *, stride: int | Shape = 1,
         padding: int | Shape | str = 0, dilation: int | Shape = 1, groups: int = 1,
         bias: bool = True, transposed: bool = False, output_padding: int | Shape = 0,
         dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of an N-d convolution or transposed convolution, with torch's shapes.

    Parameters
    ----------
    x_shape : tuple of int
        ``(N, Cin, *spatial)``, or ``(Cin, *spatial)`` unbatched.
    w_shape : tuple of int
        ``(Cout, Cin/groups, *kernel)``; transposed: ``(Cin, Cout/groups, *kernel)``.
    stride, dilation : int or tuple of int
        Per spatial dimension, or one value for all.
    padding : int, tuple of int, "same" or "valid"
        Zero padding on each side; strings only for plain convolution.
    groups : int
        Divides both channel counts.
    bias : bool
        A bias of Cout elements, added once per output element.
    transposed : bool
        Transposed convolution (the gradient of a convolution with respect to its input).
    output_padding : int or tuple of int
        Transposed only: extra output length on one side.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    input_grad : bool
        Whether backward computes the gradient with respect to ``x``.

    Returns
    -------
    Cost
        Forward MACs ``N * Cout * prod(out_spatial) * Cin/groups * prod(kernel)``
        (transposed: ``N * Cin * prod(in_spatial) * Cout/groups * prod(kernel)``). Backward:
        the weight gradient costs the forward's MACs, and so does the input gradient when
        computed; the bias gradient is a sum of ``g`` (elementwise FLOPs). ``params =
        prod(w_shape) (+ Cout)``.

    Raises
    ------
    ValueError
        Shapes that do not fit (ranks, channels against the weight, groups that do not
        divide the channels), non-positive sizes, bad padding, an output size <= 0.
    """
    geo = _ConvGeometry(x_shape, w_shape, stride, padding, dilation, groups, transposed,
                        output_padding)
    has_bias, in_grad = _flag("bias", bias), _flag("input_grad", input_grad)
    w = dtype_bytes(dtype)
    macs = geo.macs
    x_numel, y_numel = math.prod(geo.x_shape), math.prod(geo.out_shape)
    n_bias = geo.c_out if has_bias else 0
    forward = Count(macs, y_numel * _E["bias"] if has_bias else 0,
                    w * (x_numel + geo.weight_numel + n_bias), w * y_numel)
    backward = Count(macs * (2 if in_grad else 1),
                     y_numel * _E["bias_backward"] if has_bias else 0,
                     w * (y_numel + x_numel + (geo.weight_numel if in_grad else 0)),
                     w * ((x_numel if in_grad else 0) + geo.weight_numel + n_bias))
    op = f"conv_transpose{geo.n}d" if geo.transposed else f"conv{geo.n}d"
    return Cost(op, forward, backward, geo.weight_numel + n_bias)


class _ConvFormula(Protocol):
    def __call__(self, x_shape: Shape, w_shape: Shape, **kwargs: Any) -> Cost: ...


# The kernel's dimensions in a weight shape, by number of spatial dimensions.
_KERNEL_DIMS = {1: "k", 2: "kH, kW", 3: "kD, kH, kW"}


def _conv_nd(n: int, *, transposed: bool) -> _ConvFormula:
    """``conv`` for an ``n``-d kernel, named as torch names it (``conv2d``,
    ``conv_transpose2d``), checking that the weight shape has ``n + 2`` dimensions."""
    name = f"conv_transpose{n}d" if transposed else f"conv{n}d"

    def formula(x_shape: Shape, w_shape: Shape, **kwargs: Any) -> Cost:
        if "transposed" in kwargs:
            raise TypeError(f"{name}() got an unexpected keyword argument 'transposed'")
        w = _shape("w_shape", w_shape)
        if len(w) != n + 2:
            raise ValueError(f"{name} takes a {n + 2}-d weight shape, got w_shape {w}")
        return conv(x_shape, w, transposed=transposed, **kwargs)

    channels = "Cin, Cout/groups" if transposed else "Cout, Cin/groups"
    formula.__name__ = formula.__qualname__ = name
    formula.__doc__ = (f"``conv{'(transposed=True)' if transposed else ''}`` with a {n}-d "
                       f"kernel: w_shape ``({channels}, {_KERNEL_DIMS[n]})``.")
    return formula


conv1d = _conv_nd(1, transposed=False)
conv2d = _conv_nd(2, transposed=False)
conv3d = _conv_nd(3, transposed=False)
conv_transpose1d = _conv_nd(1, transposed=True)
conv_transpose2d = _conv_nd(2, transposed=True)
conv_transpose3d = _conv_nd(3, transposed=True)


# -- attention ----------------------------------------------------------------------------
def _causal_pairs(seq_q: int, seq_kv: int) -> int:
    """Query-key pairs kept by a top-left aligned causal mask (key j <= query i), as torch's
    ``scaled_dot_product_attention(is_causal=True)`` builds it."""
    if seq_q <= seq_kv:
        return seq_q * (seq_q + 1) // 2
    return seq_kv * (seq_kv + 1) // 2 + (seq_q - seq_kv) * seq_kv


def attention_parts(batch: int, seq_q: int, d_model: int, heads: int, *,
                    seq_kv: int | None = None, causal: bool = False, bias: bool = True,
                    kdim: int | None = None, vdim: int | None = None, dtype: Any = "float32",
                    projections: bool = True, input_grad: bool = True) -> dict[str, Cost]:
    """Multi-head attention split into the kernels an unfused implementation runs, in order:
    ``q_proj``, ``k_proj``, ``v_proj`` (with ``projections``), ``scores`` (Q K^T),
    ``scale`` (by 1/sqrt(head_dim)), ``softmax``, ``context`` (A V) and ``out_proj``.

    Convention: the two products count every query-key pair (the full, non-causal
    ``seq_q x seq_kv`` matrix per head) unless ``causal=True``, in which case only the lower
    triangle including the diagonal is counted (key j <= query i, top-left aligned as torch's
    ``is_causal``), in MACs, elementwise FLOPs and bytes alike: the work a causal kernel must
    do. Bytes are those of an unfused implementation that writes the score and probability
    matrices to memory; each part reads its own inputs (a fused kernel moves less).

    Parameters
    ----------
    batch, seq_q : int
        Batch size and query sequence length.
    d_model, heads : int
        Embedding width and number of heads; ``heads`` divides ``d_model``.
    seq_kv : int, optional
        Key/value sequence length (default ``seq_q``: self-attention).
    causal : bool
        Count only the causal (lower) triangle of the score matrix.
    bias : bool
        Biases on the four projections.
    kdim, vdim : int, optional
        Widths of the key and value inputs (default ``d_model``), as in
        ``torch.nn.MultiheadAttention``.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    projections : bool
        Include the four projections; without them the parts take Q, K, V of width
        ``d_model`` directly.
    input_grad : bool
        Whether backward computes the gradient with respect to the inputs (query, key and
        value). Without projections and without input gradient nothing needs a gradient.

    Returns
    -------
    dict of str to Cost
        Parameters (on the projections): ``d*d + kdim*d + vdim*d + d*d`` (+ ``4*d`` with
        bias), ``4*d^2 + 4*d`` for self-attention.

    Raises
    ------
    ValueError
        Non-positive sizes, ``heads`` not dividing ``d_model``, kdim/vdim without
        projections.
    """
    b, sq, d, h = (_int("batch", batch), _int("seq_q", seq_q), _int("d_model", d_model),
                   _int("heads", heads))
    skv = sq if seq_kv is None else _int("seq_kv", seq_kv)
    is_causal, has_bias = _flag("causal", causal), _flag("bias", bias)
    proj, in_grad = _flag("projections", projections), _flag("input_grad", input_grad)
    if d % h:
        raise ValueError(f"heads={h} must divide d_model={d}")
    if not proj and (kdim is not None or vdim is not None):
        raise ValueError("kdim and vdim describe the projection inputs; give them only with "
                         "projections=True")
    kd = d if kdim is None else _int("kdim", kdim)
    vd = d if vdim is None else _int("vdim", vdim)
    w = dtype_bytes(dtype)
    hd = d // h
    pairs = b * h * (_causal_pairs(sq, skv) if is_causal else sq * skv)
    q_numel, k_numel, v_numel, o_numel = b * sq * d, b * skv * d, b * skv * d, b * sq * d
    parts: dict[str, Cost] = {}
    if proj:
        for name, width, seq in (("q_proj", d, sq), ("k_proj", kd, skv), ("v_proj", vd, skv)):
            c = linear(width, d, batch=(b, seq), bias=has_bias, dtype=w, input_grad=in_grad)
            parts[name] = Cost(name, c.forward, c.backward, c.params)
    grads = proj or in_grad     # Q, K, V need gradients when they come from projections
    macs = pairs * hd
    scores_bwd = Count(2 * macs, 0, w * (pairs + q_numel + k_numel), w * (q_numel + k_numel))
    parts["scores"] = Cost("scores", Count(macs, 0, w * (q_numel + k_numel), w * pairs),
                           scores_bwd if grads else Count())
    parts["scale"] = Cost("scale", Count(0, pairs * _E["scale"], w * pairs, w * pairs),
                          Count(0, pairs * _E["scale_backward"], w * pairs, w * pairs)
                          if grads else Count())
    parts["softmax"] = Cost("softmax", Count(0, pairs * _E["softmax"], w * pairs, w * pairs),
                            Count(0, pairs * _E["softmax_backward"], 2 * w * pairs, w * pairs)
                            if grads else Count())
    # grad_P = g @ V^T, grad_V = P^T @ g: two products the size of the forward one.
    context_bwd = Count(2 * macs, 0, w * (o_numel + pairs + v_numel), w * (pairs + v_numel))
    parts["context"] = Cost("context", Count(macs, 0, w * (pairs + v_numel), w * o_numel),
                            context_bwd if grads else Count())
    if proj:
        c = linear(d, d, batch=(b, sq), bias=has_bias, dtype=w, input_grad=True)
        parts["out_proj"] = Cost("out_proj", c.forward, c.backward, c.params)
    return parts


def attention(batch: int, seq_q: int, d_model: int, heads: int, *, seq_kv: int | None = None,
              causal: bool = False, bias: bool = True, kdim: int | None = None,
              vdim: int | None = None, dtype: Any = "float32", projections: bool = True,
              input_grad: bool = True) -> Cost:
    """Total cost of multi-head attention: the sum of ``attention_parts`` (see there for the
    parameters and the causal convention). MACs without causal masking:
    ``B*Sq*d*(d + d + d + d)`` for the projections of self-attention plus
    ``2*B*Sq*Skv*d`` for Q K^T and A V.

    Raises
    ------
    ValueError
        As ``attention_parts``.
    """
    parts = attention_parts(batch, seq_q, d_model, heads, seq_kv=seq_kv, causal=causal,
                            bias=bias, kdim=kdim, vdim=vdim, dtype=dtype,
                            projections=projections, input_grad=input_grad)
    total = Cost("attention", Count(), Count(), 0)
    for part in parts.values():
        total = Cost("attention", total.forward + part.forward,
                     total.backward + part.backward, total.params + part.params)
    return total


# -- normalisation ------------------------------------------------------------------------
def _norm_cost(op: str, kind: str, numel: int, weight_numel: int, has_bias: bool,
               affine: bool, input_grad: bool, w: int, extra_read: int = 0,
               extra_written: int = 0) -> Cost:
    """A norm over ``numel`` elements with a weight of ``weight_numel`` (and as many bias
    elements with ``has_bias``) when ``affine``.

    The norm's ELEMENTWISE_FLOPS entry includes its affine step ("norm_affine": scale and
    shift, or "norm_scale": scale only); without affine that step is left out.
    """
    affine_kind = "norm_affine" if has_bias else "norm_scale"
    params = weight_numel * (2 if has_bias else 1) if affine else 0
    fwd_flops = _E[kind] - (0 if affine else _E[affine_kind])
    forward = Count(0, numel * fwd_flops, w * (numel + params) + extra_read,
                    w * numel + extra_written)
    if input_grad:
        bwd_flops = _E[f"{kind}_backward"] - (0 if affine else _E[f"{affine_kind}_backward"])
    elif affine:
        bwd_flops = _E[f"{affine_kind}_params_backward"]
    else:
        return Cost(op, forward, Count(), 0)
    # Reads g and the saved input, and the weight to form the input gradient.
    weight_read = weight_numel if affine and input_grad else 0
    backward = Count(0, numel * bwd_flops, w * (2 * numel + weight_read),
                     w * ((numel if input_grad else 0) + params))
    return Cost(op, forward, backward, params)


def _normalized(shape: tuple[int, ...], normalized_shape: Any, op: str) -> tuple[int, ...]:
    norm: tuple[int, ...]
    if isinstance(normalized_shape, (str, bytes)) or not isinstance(normalized_shape, Sequence):
        norm = (_int("normalized_shape", normalized_shape),)
    else:
        norm = _shape("normalized_shape", normalized_shape, 1)
    if shape[len(shape) - len(norm):] != norm or len(norm) > len(shape):
        raise ValueError(f"{op}: normalized_shape {norm} must equal the trailing dimensions "
                         f"of shape {shape}")
    return norm


def layer_norm(shape: Shape, normalized_shape: int | Shape, *, affine: bool = True,
               dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of ``torch.nn.functional.layer_norm`` over the trailing ``normalized_shape``.

    Per element: mean, variance, normalise and (with ``affine``) scale and shift, from
    ``ELEMENTWISE_FLOPS["layer_norm"]``; without affine the ``norm_affine`` entries are left
    out.

    Parameters
    ----------
    shape : tuple of int
        Input shape.
    normalized_shape : int or tuple of int
        Trailing dimensions normalised over, as torch: an int is ``(int,)``.
    affine : bool
        Weight and bias of ``normalized_shape`` each (``params = 2 * prod(normalized_shape)``).
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    input_grad : bool
        Whether backward computes the input gradient; without it only the weight and bias
        gradients (which recompute the normalised input) are counted.

    Raises
    ------
    ValueError
        Non-positive sizes, ``normalized_shape`` not the trailing dims of ``shape``.
    """
    x = _shape("shape", shape, 1)
    norm = _normalized(x, normalized_shape, "layer_norm")
    return _norm_cost("layer_norm", "layer_norm", math.prod(x), math.prod(norm), True,
                      _flag("affine", affine), _flag("input_grad", input_grad),
                      dtype_bytes(dtype))


def rms_norm(shape: Shape, normalized_shape: int | Shape, *, affine: bool = True,
             dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of ``torch.nn.functional.rms_norm``: mean square, scale by its reciprocal root,
    and (with ``affine``) a weight of ``normalized_shape`` (no bias). Parameters as
    ``layer_norm``; ``params = prod(normalized_shape)``.

    Raises
    ------
    ValueError
        As ``layer_norm``.
    """
    x = _shape("shape", shape, 1)
    norm = _normalized(x, normalized_shape, "rms_norm")
    return _norm_cost("rms_norm", "rms_norm", math.prod(x), math.prod(norm), False,
                      _flag("affine", affine), _flag("input_grad", input_grad),
                      dtype_bytes(dtype))


def batch_norm(x_shape: Shape, *, affine: bool = True, training: bool = True,
               dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of batch normalisation over channel dim 1 of ``x_shape = (N, C, *spatial)``.

    Training mode computes batch statistics (``ELEMENTWISE_FLOPS["batch_norm"]``) and
    updates the running mean and variance (2*C read and written). Evaluation mode folds the
    running statistics and the affine into one scale and shift per channel
    (``batch_norm_eval``, 2 FLOPs per element with or without affine).

    Parameters
    ----------
    x_shape : tuple of int
        ``(N, C, *spatial)``.
    affine : bool
        Weight and bias of C each (``params = 2*C``); running statistics are buffers, not
        parameters.
    training : bool
        Batch statistics (True) or running statistics (False).
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    input_grad : bool
        Whether backward computes the input gradient.

    Raises
    ------
    ValueError
        Fewer than 2 dims, non-positive sizes, one value per channel in training mode.
    """
    x = _shape("x_shape", x_shape, 2)
    has_affine, train = _flag("affine", affine), _flag("training", training)
    in_grad = _flag("input_grad", input_grad)
    w = dtype_bytes(dtype)
    c, numel = x[1], math.prod(x)
    if train and numel // c == 1:
        raise ValueError(f"batch_norm in training mode needs more than 1 value per channel, "
                         f"got x_shape {x}")
    if train:
        # The running mean and variance are read and updated.
        return _norm_cost("batch_norm", "batch_norm", numel, c, True, has_affine, in_grad, w,
                          extra_read=2 * c * w, extra_written=2 * c * w)
    params = 2 * c if has_affine else 0
    forward = Count(0, numel * _E["batch_norm_eval"], w * (numel + params + 2 * c), w * numel)
    input_part = _E["batch_norm_eval_backward"] - _E["norm_affine_params_backward"]
    flops = ((input_part if in_grad else 0)
             + (_E["norm_affine_params_backward"] if has_affine else 0))
    if not flops:
        return Cost("batch_norm", forward, Count(), params)
    # Reads g; the input gradient g*scale also the weight and the running variance, the
    # weight and bias gradients also x (to recompute x_hat).
    scale_read = ((c if has_affine else 0) + c) if in_grad else 0
    read = numel + scale_read + (numel if has_affine else 0)
    backward = Count(0, numel * flops, w * read,
                     w * ((numel if in_grad else 0) + params))
    return Cost("batch_norm", forward, backward, params)


def group_norm(x_shape: Shape, groups: int, *, affine: bool = True, dtype: Any = "float32",
               input_grad: bool = True) -> Cost:
    """Cost of group normalisation of ``x_shape = (N, C, *spatial)`` in ``groups`` groups of
    channels; per element as ``layer_norm``; ``params = 2*C`` with ``affine``.

    Raises
    ------
    ValueError
        Fewer than 2 dims, non-positive sizes, ``groups`` not dividing C.
    """
    x = _shape("x_shape", x_shape, 2)
    g = _int("groups", groups)
    if x[1] % g:
        raise ValueError(f"groups={g} must divide the {x[1]} channels of x_shape {x}")
    return _norm_cost("group_norm", "group_norm", math.prod(x), x[1], True,
                      _flag("affine", affine), _flag("input_grad", input_grad),
                      dtype_bytes(dtype))


# -- elementwise --------------------------------------------------------------------------
def _unary(op: str, kind: str, numel: int, w: int, input_grad: bool) -> Cost:
    forward = Count(0, numel * _E[kind], w * numel, w * numel)
    if not input_grad:
        return Cost(op, forward)
    # Reads g and one saved tensor (the input or the output, whichever the formula uses).
    return Cost(op, forward, Count(0, numel * _E[f"{kind}_backward"], 2 * w * numel,
                                   w * numel))


def activation(kind: str, numel_or_shape: int | Shape, *, dtype: Any = "float32",
               input_grad: bool = True) -> Cost:
    """Cost of an activation function applied to every element.

    Parameters
    ----------
    kind : str
        One of ``ACTIVATIONS``: relu, leaky_relu, gelu (erf), gelu_tanh, silu, sigmoid,
        tanh, hardswish, hardsigmoid, relu6, elu, softplus, mish.
    numel_or_shape : int or tuple of int
        Number of elements, or the input shape.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    input_grad : bool
        Whether backward runs (an activation has no parameters).

    Raises
    ------
    ValueError
        An unknown kind or non-positive sizes.
    """
    if not isinstance(kind, str) or kind not in ACTIVATIONS:
        raise ValueError(f"unknown activation {kind!r}; expected one of {', '.join(ACTIVATIONS)}")
    return _unary(kind, kind, _numel_or_shape("numel_or_shape", numel_or_shape),
                  dtype_bytes(dtype), _flag("input_grad", input_grad))


def _softmax(op: str, shape: Shape, dim: int, dtype: Any, input_grad: bool) -> Cost:
    x = _shape("shape", shape, 1)
    if isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got bool {dim!r}")
    d = _int("dim", dim, -len(x))
    if d >= len(x):
        raise ValueError(f"dim {dim} is out of range for shape {x} (ndim {len(x)})")
    return _unary(op, op, math.prod(x), dtype_bytes(dtype), _flag("input_grad", input_grad))


def softmax(shape: Shape, dim: int, *, dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of softmax along ``dim``: max, subtract, exp, sum, divide per element
    (``ELEMENTWISE_FLOPS["softmax"]``); backward ``y*(g - sum(g*y))``.

    Raises
    ------
    ValueError
        Non-positive sizes, ``dim`` out of range.
    """
    return _softmax("softmax", shape, dim, dtype, input_grad)


def log_softmax(shape: Shape, dim: int, *, dtype: Any = "float32",
                input_grad: bool = True) -> Cost:
    """Cost of log-softmax along ``dim``; see ``softmax``.

    Raises
    ------
    ValueError
        Non-positive sizes, ``dim`` out of range.
    """
    return _softmax("log_softmax", shape, dim, dtype, input_grad)


def elementwise(kind_or_flops_per_element: str | int, *input_shapes: Shape,
                dtype: Any = "float32", input_grad: bool = True,
                backward_flops_per_element: int | None = None) -> Cost:
    """Cost of an elementwise operation on broadcast inputs (``add``, ``mul``, ``where``...).

    FLOPs are per element of the broadcast output. Backward writes a gradient for every
    input; an input that was broadcast gets its gradient summed over the broadcast
    dimensions (1 FLOP per output element beyond its own size). The gradients of ``add``
    are the output gradient itself: no traffic unless a broadcast needs that sum.

    Parameters
    ----------
    kind_or_flops_per_element : str or int
        A name in ``ELEMENTWISE_FLOPS`` (with a ``<name>_backward`` entry), or FLOPs per
        output element. With an int, backward is counted only if
        ``backward_flops_per_element`` is given.
    *input_shapes : tuple of int
        Shapes of the inputs (at least one); ``()`` is a scalar tensor.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    input_grad : bool
        Whether backward runs.
    backward_flops_per_element : int, optional
        Backward FLOPs per output element, for an int kind.

    Raises
    ------
    ValueError
        An unknown name, no inputs, shapes that do not broadcast, negative FLOPs.
    TypeError
        A kind that is neither str nor int, or ``backward_flops_per_element`` with a name.
    """
    kind = kind_or_flops_per_element
    in_grad = _flag("input_grad", input_grad)
    if isinstance(kind, str):
        if kind not in _E or kind.endswith("_backward") or f"{kind}_backward" not in _E:
            raise ValueError(f"unknown elementwise kind {kind!r}; expected a name in "
                             "ELEMENTWISE_FLOPS or a number of FLOPs per element")
        if backward_flops_per_element is not None:
            raise TypeError("backward_flops_per_element is taken from ELEMENTWISE_FLOPS for "
                            f"{kind!r}; give it only with an int kind")
        fwd, op = _E[kind], kind
        bwd: int | None = _E[f"{kind}_backward"]
    else:
        fwd = _int("kind_or_flops_per_element", kind, 0)
        bwd = (None if backward_flops_per_element is None
               else _int("backward_flops_per_element", backward_flops_per_element, 0))
        op = "elementwise"
    if not input_shapes:
        raise ValueError("elementwise needs at least one input shape")
    shapes = [_shape(f"input_shapes[{i}]", s) for i, s in enumerate(input_shapes)]
    out = _broadcast(shapes, f"elementwise {op}")
    w = dtype_bytes(dtype)
    out_numel = math.prod(out)
    numels = [math.prod(s) for s in shapes]
    forward = Count(0, out_numel * fwd, w * sum(numels), w * out_numel)
    if not in_grad or bwd is None:
        return Cost(op, forward)
    reduce_flops = sum(out_numel - n for n in numels) * _E["sum"]
    if kind == "add":
        broadcast = [n for n in numels if n != out_numel]
        read = out_numel if broadcast else 0
        written = sum(broadcast)
    else:
        read, written = out_numel + sum(numels), sum(numels)
    return Cost(op, forward, Count(0, out_numel * bwd + reduce_flops, w * read, w * written))


# -- pooling ------------------------------------------------------------------------------
def _pool_split(x_shape: Shape, window: Any, what: str) -> tuple[tuple[int, ...], int]:
    """(spatial dims, product of leading dims) of a pooling input: a tuple ``window`` fixes
    the number of spatial dims; an int takes ``x_shape`` as (N, C, *spatial)."""
    x = _shape("x_shape", x_shape, 2)
    if isinstance(window, (str, bytes)) or not isinstance(window, Sequence):
        n = len(x) - 2
        if n < 1:
            raise ValueError(f"x_shape {x} must be (N, C, *spatial) for an int {what}; give a "
                             f"tuple {what} to fix the number of spatial dims")
    else:
        n = len(window)
        if n < 1 or n >= len(x):
            raise ValueError(f"{what} {tuple(window)} has {n} spatial dims; x_shape {x} needs "
                             "those and at least one leading dim")
    return x[-n:], math.prod(x[:-n])


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1    # the last window must start inside the input or the left padding
    return out


def pool_output_size(size: int, kernel: int, stride: int | None = None, padding: int = 0,
                     dilation: int = 1, *, ceil_mode: bool = False) -> int:
    """Output length of one spatial dimension of max or average pooling, as torch computes
    it: ``floor_or_ceil((size + 2*padding - dilation*(kernel - 1) - 1) / stride) + 1``, where
    with ``ceil_mode`` the last window must start inside the input or the left padding.

    Raises
    ------
    ValueError
        Non-positive sizes, padding above half the effective kernel, an output length <= 0.
    """
    _, _, out, _ = _pool_geometry((1, _int("size", size)), (kernel,),
                                  kernel if stride is None else (stride,),
                                  (padding,), (dilation,), ceil_mode, "pooling")
    return out[0]


def _pool_geometry(x_shape: Shape, kernel: Any, stride: Any, padding: Any, dilation: Any,
                   ceil_mode: Any, op: str) -> tuple[int, tuple[int, ...], tuple[int, ...],
                                                     tuple[int, ...]]:
    spatial, lead = _pool_split(x_shape, kernel, "kernel")
    n = len(spatial)
    k = _per_dim("kernel", kernel, n, 1)
    s = k if stride is None else _per_dim("stride", stride, n, 1)
    p = _per_dim("padding", padding, n, 0)
    d = _per_dim("dilation", dilation, n, 1)
    ceil = _flag("ceil_mode", ceil_mode)
    for ki, pi, di in zip(k, p, d):
        if pi > ((ki - 1) * di + 1) // 2:
            raise ValueError(f"{op}: padding {p} must be at most half the effective kernel "
                             f"{tuple((kk - 1) * dd + 1 for kk, dd in zip(k, d))}")
    out = tuple(_pool_out(*a, ceil) for a in zip(spatial, k, s, p, d))
    if any(o <= 0 for o in out):
        raise ValueError(f"{op}: output would be {out} for x_shape {tuple(x_shape)}, kernel "
                         f"{k}, stride {s}, padding {p}, dilation {d}")
    return lead, spatial, out, k


def max_pool(x_shape: Shape, kernel: int | Shape, stride: int | Shape | None = None,
             padding: int | Shape = 0, dilation: int | Shape = 1, *, ceil_mode: bool = False,
             dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of max pooling: 1 compare per window element; backward accumulates the output
    gradient at each window's argmax (1 FLOP per output element).

    Parameters
    ----------
    x_shape : tuple of int
        ``(N, C, *spatial)``; with a tuple ``kernel`` any leading dims, e.g. ``(C, H, W)``.
    kernel, stride, padding, dilation : int or tuple of int
        As torch; ``stride`` defaults to ``kernel``; padding at most half the kernel.
    ceil_mode : bool
        Round the output size up, as torch.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    input_grad : bool
        Whether backward runs. With it the forward also writes the argmax indices (int64),
        as torch does when a gradient is needed.

    Raises
    ------
    ValueError
        Non-positive sizes, too much padding, an output size <= 0, kernel rank not fitting.
    """
    lead, spatial, out, k = _pool_geometry(x_shape, kernel, stride, padding, dilation,
                                           ceil_mode, "max_pool")
    in_grad = _flag("input_grad", input_grad)
    w = dtype_bytes(dtype)
    x_numel, y_numel = lead * math.prod(spatial), lead * math.prod(out)
    window = y_numel * math.prod(k)
    idx = INDEX_BYTES * y_numel if in_grad else 0
    forward = Count(0, window * _E["max_pool"], w * x_numel, w * y_numel + idx)
    if not in_grad:
        return Cost("max_pool", forward)
    return Cost("max_pool", forward, Count(0, y_numel * _E["max_pool_backward"],
                                           w * y_numel + idx, w * x_numel))


def avg_pool(x_shape: Shape, kernel: int | Shape, stride: int | Shape | None = None,
             padding: int | Shape = 0, *, ceil_mode: bool = False, dtype: Any = "float32",
             input_grad: bool = True) -> Cost:
    """Cost of average pooling: per window element 1 FLOP (k - 1 adds and a divide per
    window of k); backward adds ``g/k`` to each window element (``avg_pool_backward`` per
    window element, ``scale`` per output element). Parameters as ``max_pool``.

    Raises
    ------
    ValueError
        As ``max_pool``.
    """
    lead, spatial, out, k = _pool_geometry(x_shape, kernel, stride, padding, 1, ceil_mode,
                                           "avg_pool")
    return _avg_cost("avg_pool", lead * math.prod(spatial), lead * math.prod(out),
                     lead * math.prod(out) * math.prod(k), dtype_bytes(dtype),
                     _flag("input_grad", input_grad))


def _avg_cost(op: str, x_numel: int, y_numel: int, window: int, w: int,
              input_grad: bool) -> Cost:
    forward = Count(0, window * _E["avg_pool"], w * x_numel, w * y_numel)
    if not input_grad:
        return Cost(op, forward)
    return Cost(op, forward, Count(0, window * _E["avg_pool_backward"] + y_numel * _E["scale"],
                                   w * y_numel, w * x_numel))


def adaptive_avg_pool(x_shape: Shape, output_size: int | Sequence[int | None], *,
                      dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of adaptive average pooling to ``output_size``, with torch's windows: output i of
    a dim of length L covers ``[floor(i*L/O), ceil((i+1)*L/O))``. FLOPs as ``avg_pool``,
    summed over the exact windows.

    Parameters
    ----------
    x_shape : tuple of int
        ``(N, C, *spatial)``; with a tuple ``output_size`` any leading dims.
    output_size : int or tuple of int or None
        Output length per spatial dim; None keeps the input's length.

    Raises
    ------
    ValueError
        Non-positive sizes, output size rank not fitting ``x_shape``.
    """
    spatial, lead = _pool_split(x_shape, output_size, "output_size")
    n = len(spatial)
    if isinstance(output_size, (str, bytes)) or not isinstance(output_size, Sequence):
        sizes: tuple[int, ...] = (_int("output_size", output_size),) * n
    else:
        sizes = tuple(sp if o is None else _int(f"output_size[{i}]", o)
                      for i, (o, sp) in enumerate(zip(output_size, spatial)))
    window = lead
    for length, o in zip(spatial, sizes):
        window *= sum(-(-(i + 1) * length // o) - (i * length) // o for i in range(o))
    return _avg_cost("adaptive_avg_pool", lead * math.prod(spatial), lead * math.prod(sizes),
                     window, dtype_bytes(dtype), _flag("input_grad", input_grad))


# -- sampling at computed positions --------------------------------------------------------
GRID_SAMPLE_MODES: tuple[str, ...] = ("bilinear", "nearest", "bicubic")


def grid_sample(input_shape: Shape, grid_shape: Shape, *, mode: str = "bilinear",
                dtype: Any = "float32", input_grad: bool = True,
                grid_grad: bool = True) -> Cost:
    """Cost of ``torch.nn.functional.grid_sample`` of a ``(N, C, H, W)`` input at a
    ``(N, H_out, W_out, 2)`` grid of positions (the warp of RAFT and spatial transformers).

    Per output element (``N*C*H_out*W_out``) the interpolation of its taps: bilinear 4 taps
    weighted (7 FLOPs), bicubic 16 (35), nearest a gather (0). Per grid location
    (``N*H_out*W_out``, shared by the channels) the source position and the tap weights:
    bilinear 16, nearest 8, bicubic 60 (``ELEMENTWISE_FLOPS``, "grid_sample_*"). Positions
    outside the input (``padding_mode``) cost nothing extra. Backward recomputes the
    positions and computes the input gradient (scatter-adds of the weighted output gradient)
    and the grid gradient (each tap's value times its weight's slope), as asked.

    Parameters
    ----------
    input_shape : tuple of int
        ``(N, C, H, W)``.
    grid_shape : tuple of int
        ``(N, H_out, W_out, 2)``.
    mode : {"bilinear", "nearest", "bicubic"}
        The interpolation.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes.
    input_grad, grid_grad : bool
        Which gradients backward computes.

    Returns
    -------
    Cost
        No parameters.

    Raises
    ------
    ValueError
        Non-positive sizes, shapes that are not 4-D, a grid whose last dimension is not 2 or
        whose batch differs from the input's, an unknown mode.
    """
    n, c, h, w = _four_d("input_shape", input_shape)
    gn, ho, wo, two = _four_d("grid_shape", grid_shape)
    if two != 2 or gn != n:
        raise ValueError(f"grid_shape must be (N, H_out, W_out, 2) with N={n} as the input's, "
                         f"got {tuple(grid_shape)}")
    if mode not in GRID_SAMPLE_MODES:
        raise ValueError(f"mode must be one of {', '.join(GRID_SAMPLE_MODES)}, got {mode!r}")
    in_grad, g_grad = _flag("input_grad", input_grad), _flag("grid_grad", grid_grad)
    wb = dtype_bytes(dtype)
    key = f"grid_sample_{mode}"
    outputs, locations, inputs = n * c * ho * wo, n * ho * wo, n * c * h * w
    forward = Count(0, outputs * _E[key] + locations * _E[key + "_coords"],
                    wb * (inputs + 2 * locations), wb * outputs)
    if not (in_grad or g_grad):
        return Cost("grid_sample", forward)
    flops = locations * _E[key + "_coords_backward"]
    if in_grad:
        flops += outputs * _E[key + "_backward"]
    if g_grad:
        flops += outputs * _E[key + "_grid_backward"] + locations * _E[key + "_grid_coords_backward"]
    written = (inputs if in_grad else 0) + (2 * locations if g_grad else 0)
    backward = Count(0, flops, wb * (outputs + inputs + 2 * locations), wb * written)
    return Cost("grid_sample", forward, backward)


def roi_align(input_shape: Shape, num_rois: int, output_size: int | Shape,
              sampling_ratio: int, *, dtype: Any = "float32", input_grad: bool = True) -> Cost:
    """Cost of RoI Align (``torchvision.ops.roi_align``, the pooler of Faster and Mask R-CNN):
    ``num_rois`` boxes over a ``(N, C, H, W)`` feature map, each pooled to ``output_size``
    bins of ``sampling_ratio x sampling_ratio`` bilinear samples averaged.

    Per output element (``num_rois*C*PH*PW``) and sample point: 4 taps weighted (7) and
    averaged into the bin (1). Per sample point of each box (shared by the channels): its
    position and 4 tap weights, 14. Backward (the input gradient; boxes have none) divides
    each output gradient by the samples per bin, scatter-adds it to the 4 taps of every
    sample (8 per sample) and recomputes the positions.

    Parameters
    ----------
    input_shape : tuple of int
        ``(N, C, H, W)``.
    num_rois : int
        Boxes pooled (the rows of torchvision's ``(K, 5)`` boxes tensor).
    output_size : int or (int, int)
        Bins per box, ``(PH, PW)``.
    sampling_ratio : int
        Samples per bin along each axis. torchvision's adaptive choice (``<= 0``,
        ``ceil(box size / bins)``) depends on the boxes' values: count those on real boxes
        through ``fastbench.analysis.analyze``.
    dtype : str, numpy or torch dtype, or int
        Element type; sets the bytes (boxes count at the same width).
    input_grad : bool
        Whether backward computes the feature map's gradient.

    Returns
    -------
    Cost
        No parameters.

    Raises
    ------
    ValueError
        Non-positive sizes or ``sampling_ratio``, an input that is not 4-D.
    """
    n, c, h, w = _four_d("input_shape", input_shape)
    k = _int("num_rois", num_rois)
    ph, pw = _per_dim("output_size", output_size, 2, 1)
    sr = check_int("sampling_ratio", sampling_ratio)
    if sr <= 0:
        raise ValueError(f"sampling_ratio must be positive, got {sampling_ratio}: torchvision's "
                         "adaptive sampling (<= 0) depends on the boxes' values; count it on "
                         "real boxes with fastbench.analysis.analyze")
    wb = dtype_bytes(dtype)
    outputs, samples = k * c * ph * pw, sr * sr
    locations = k * ph * pw * samples
    boxes = 5 * k
    forward = Count(0, outputs * samples * _E["roi_align"] + locations * _E["roi_align_coords"],
                    wb * (n * c * h * w + boxes), wb * outputs)
    if not _flag("input_grad", input_grad):
        return Cost("roi_align", forward)
    backward = Count(0, outputs * (samples * _E["roi_align_backward"] + _E["scale"])
                     + locations * _E["roi_align_coords_backward"],
                     wb * (outputs + boxes), wb * n * c * h * w)
    return Cost("roi_align", forward, backward)


def _four_d(name: str, value: Any) -> tuple[int, int, int, int]:
    dims = _shape(name, value, 4)
    if len(dims) != 4:
        raise ValueError(f"{name} must have 4 dimensions, got {dims}")
    return dims[0], dims[1], dims[2], dims[3]


# -- lookup and regularisation ------------------------------------------------------------
def embedding(num_embeddings: int, dim: int, index_shape: Shape, *,
              dtype: Any = "float32") -> Cost:
    """Cost of an embedding lookup of ``index_shape`` indices into a
    ``(num_embeddings, dim)`` table.

    Forward is a gather: 0 FLOPs, reads the rows gathered and the int64 indices, writes
    ``(*index_shape, dim)``. Backward (the weight gradient; indices have none) zero-fills a
    dense ``(num_embeddings, dim)`` gradient and scatter-adds ``g`` into it: 1 FLOP per
    gathered element.

    Raises
    ------
    ValueError
        Non-positive sizes.
    """
    n, d = _int("num_embeddings", num_embeddings), _int("dim", dim)
    lookups = math.prod(_shape("index_shape", index_shape))
    w = dtype_bytes(dtype)
    gathered = lookups * d
    forward = Count(0, gathered * _E["embedding"], w * gathered + INDEX_BYTES * lookups,
                    w * gathered)
    backward = Count(0, gathered * _E["embedding_backward"],
                     w * gathered + INDEX_BYTES * lookups, w * n * d)
    return Cost("embedding", forward, backward, n * d)


def dropout(shape: Shape, p: float = 0.5, *, training: bool = True, dtype: Any = "float32",
            input_grad: bool = True) -> Cost:
    """Cost of dropout with drop probability ``p``: in training, a mask compare and a
    multiply by the scaled mask per element, writing the output and a 1-byte mask;
    backward multiplies ``g`` by the mask. In evaluation (or with ``p == 0``) it is the
    identity and costs nothing. Random number generation is not counted.

    Raises
    ------
    ValueError
        Non-positive sizes, ``p`` outside [0, 1].
    TypeError
        A non-number ``p``.
    """
    x = _shape("shape", shape)
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"p must be a number, got {type(p).__name__} {p!r}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability p must be in [0, 1], got {p}")
    train, in_grad = _flag("training", training), _flag("input_grad", input_grad)
    if not train or p == 0:
        return Cost("dropout", Count(), Count())
    w, numel = dtype_bytes(dtype), math.prod(x)
    forward = Count(0, numel * _E["dropout"], w * numel, (w + 1) * numel)
    if not in_grad:
        return Cost("dropout", forward)
    return Cost("dropout", forward,
                Count(0, numel * _E["dropout_backward"], (w + 1) * numel, w * numel))
