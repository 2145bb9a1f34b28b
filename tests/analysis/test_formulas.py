"""fastbench.analysis.formulas: closed-form counts checked against hand-derived arithmetic,
naive numpy loops and (where installed) torch's shapes and parameter counts; the backward
derivations; and every error path."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from fastbench.analysis import formulas as F
from fastbench.analysis.costs import Count

E = F.ELEMENTWISE_FLOPS


# -- the elementwise table ----------------------------------------------------------------
REQUIRED = ("add sub mul div neg exp log sqrt rsqrt pow abs relu leaky_relu gelu gelu_tanh silu "
            "sigmoid tanh hardswish hardsigmoid relu6 elu softplus mish softmax log_softmax "
            "layer_norm batch_norm batch_norm_eval group_norm rms_norm max_pool avg_pool sum mean "
            "dropout clamp where scale").split()


def test_table_has_every_required_name_and_its_backward() -> None:
    for name in REQUIRED:
        assert name in E, name
        assert f"{name}_backward" in E, name
    for name, value in E.items():
        assert isinstance(value, int) and value >= 0, name
        if not name.endswith("_backward"):
            assert f"{name}_backward" in E, name
    for name in F.ACTIVATIONS:
        assert name in E


def test_table_values_follow_the_documented_counts() -> None:
    assert E["relu"] == 1 and E["sigmoid"] == 4 and E["bias"] == 1
    # sigmoid = neg, exp, add, divide; silu = sigmoid then one multiply.
    assert E["silu"] == E["sigmoid"] + 1
    # mish = x * tanh(softplus(x)).
    assert E["mish"] == E["softplus"] + E["tanh"] + 1
    # A norm: mean (1) + variance (3) + normalise (1) + affine (2).
    assert E["layer_norm"] == 1 + 3 + 1 + 2 == E["batch_norm"] == E["group_norm"]
    assert E["layer_norm"] - E["norm_affine"] == 5
    assert E["rms_norm"] == 2 + 1 + 1
    # Backward of a norm with affine = input gradient + weight/bias gradients.
    assert E["layer_norm_backward"] == 9 + E["norm_affine_backward"]


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        E["relu"] = 2  # type: ignore[index]


# -- linear and matrix products -----------------------------------------------------------
def test_linear_counts_by_hand() -> None:
    c = F.linear(768, 3072, batch=(8, 128))
    rows = 8 * 128
    assert c.forward.macs == rows * 768 * 3072
    assert c.forward.elementwise_flops == rows * 3072            # the bias add
    assert c.forward.flops == 2 * rows * 768 * 3072 + rows * 3072
    assert c.params == 768 * 3072 + 3072
    assert c.forward.bytes_read == 4 * (rows * 768 + 768 * 3072 + 3072)
    assert c.forward.bytes_written == 4 * rows * 3072
    # grad_x = g @ W and grad_W = g.T @ x: twice the forward MACs; grad_b sums g.
    assert c.backward.macs == 2 * rows * 768 * 3072
    assert c.backward.elementwise_flops == rows * 3072
    assert c.backward.bytes_read == 4 * (rows * 3072 + rows * 768 + 768 * 3072)
    assert c.backward.bytes_written == 4 * (rows * 768 + 768 * 3072 + 3072)


def test_linear_backward_without_input_grad_and_bias() -> None:
    c = F.linear(10, 20, batch=(3,), bias=False, input_grad=False, dtype="float16")
    assert c.params == 200
    assert c.forward.macs == 3 * 10 * 20 and c.forward.elementwise_flops == 0
    assert c.backward.macs == c.forward.macs        # grad_W only
    assert c.backward.bytes_written == 2 * 200      # grad_W in float16, no grad_x
    assert F.linear(4, 5).forward.macs == 20        # batch=() is one vector


@pytest.mark.parametrize("a, b", [
    ((5,), (5,)), ((5,), (3, 5, 6)), ((3, 4, 5), (5,)), ((4, 5), (5, 6)),
    ((2, 3, 4, 5), (5, 6)), ((2, 1, 4, 5), (3, 5, 6)), ((7, 4, 5), (7, 5, 2)),
])
def test_matmul_shapes_and_macs_match_numpy(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    out = np.matmul(np.ones(a), np.ones(b))
    c = F.matmul(a, b)
    # Every output element is a dot product over the inner dimension (a[-1]).
    assert c.forward.macs == out.size * a[-1]
    assert c.forward.bytes_written == 4 * out.size
    assert c.forward.bytes_read == 4 * (math.prod(a) + math.prod(b))
    assert c.backward.macs == 2 * c.forward.macs
    assert F.matmul(a, b, b_grad=False).backward.macs == c.forward.macs
    assert F.matmul(a, b, a_grad=False, b_grad=False).backward == Count()


def test_matmul_by_hand() -> None:
    assert F.matmul((2, 3, 4, 5), (5, 6)).forward.macs == 2 * 3 * 4 * 5 * 6
    assert F.matmul((5,), (5,)).forward.macs == 5
    assert F.bmm((8, 16, 32), (8, 32, 4)).forward.macs == 8 * 16 * 32 * 4


@pytest.mark.parametrize("a, b, match", [
    ((3, 4), (5, 6), "inner dimensions"), ((), (3,), "at least 1"),
    ((2, 3, 4), (3, 4, 5), "broadcast"), ((3, 0), (0, 2), "positive"),
])
def test_matmul_errors(a: tuple[int, ...], b: tuple[int, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        F.matmul(a, b)


def test_bmm_errors() -> None:
    with pytest.raises(ValueError, match="3-D"):
        F.bmm((4, 5), (5, 6))
    with pytest.raises(ValueError, match="batch sizes"):
        F.bmm((2, 4, 5), (3, 5, 6))
    with pytest.raises(ValueError, match="inner"):
        F.bmm((2, 4, 5), (2, 4, 6))
    with pytest.raises(TypeError, match="a_shape"):
        F.bmm("245", (2, 4, 6))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a_grad"):
        F.matmul((2, 3), (3, 2), a_grad=1)  # type: ignore[arg-type]


# -- einsum -------------------------------------------------------------------------------
def _naive_einsum(equation: str, *arrays: np.ndarray) -> tuple[Any, int]:
    """Evaluate ``equation`` with one loop nest over all distinct indices, counting the
    products accumulated (one per iteration)."""
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    sizes: dict[str, int] = {}
    for term, arr in zip(terms, arrays):
        sizes.update(zip(term, arr.shape))
    letters = sorted(sizes)
    out = np.zeros([sizes[c] for c in rhs])
    count = 0
    for values in itertools.product(*(range(sizes[c]) for c in letters)):
        at = dict(zip(letters, values))
        prod = 1.0
        for term, arr in zip(terms, arrays):
            prod *= arr[tuple(at[c] for c in term)]
        out[tuple(at[c] for c in rhs)] += prod
        count += 1
    return out, count


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
])
def test_einsum_macs_equal_the_naive_loop(equation: str, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    result, iterations = _naive_einsum(equation, *arrays)
    np.testing.assert_allclose(result, np.einsum(equation, *arrays), rtol=1e-12, atol=1e-12)
    c = F.einsum(equation, *shapes)
    assert c.forward.macs == iterations
    assert c.forward.elementwise_flops == 0
    assert c.backward.macs == 2 * iterations          # one product per operand's gradient
    assert F.einsum(equation, *shapes, input_grad=False).backward == Count()


def test_einsum_implicit_output_and_no_contraction() -> None:
    assert F.einsum("ij,jk", (3, 4), (4, 5)).forward.macs == 3 * 4 * 5
    outer = F.einsum("i,j->ij", (3,), (4,))
    assert outer.forward.macs == 0 and outer.forward.elementwise_flops == 12
    assert outer.backward.elementwise_flops == 2 * 12
    had = F.einsum("ij,ij->ij", (3, 4), (3, 4))
    assert had.forward.elementwise_flops == 12 and had.forward.bytes_written == 4 * 12
    reduce = F.einsum("ij->i", (3, 4))
    assert reduce.forward.elementwise_flops == 12 and reduce.forward.macs == 0
    assert reduce.forward.bytes_written == 4 * 3
    assert F.einsum("ij->ji", (3, 4)).forward.flops == 0
    assert F.einsum("ii", (3, 3)).forward.elementwise_flops == 3    # trace: implicit "ii->"
    # A size-1 dimension broadcasts, as torch allows.
    assert F.einsum("ij,jk->ik", (3, 1), (4, 5)).forward.macs == 3 * 4 * 5


@pytest.mark.parametrize("equation, shapes, exc, match", [
    ("...ij,jk->...ik", [(2, 3, 4), (4, 5)], ValueError, "ellipsis"),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], ValueError, "pairwise"),
    ("ij,jk->ik", [(2, 3)], ValueError, "2 operands"),
    ("ij,jk->ik", [(2, 3), (3, 4, 5)], ValueError, "3 dimensions"),
    ("ij,jk->ik", [(2, 3), (4, 5)], ValueError, "index 'j'"),
    ("ij,jk->iz", [(2, 3), (3, 4)], ValueError, "output"),
    ("ij,jk->ii", [(2, 3), (3, 4)], ValueError, "output"),
    ("i1,jk->ik", [(2, 3), (3, 4)], ValueError, "letters"),
])
def test_einsum_errors(equation: str, shapes: list[tuple[int, ...]], exc: type[Exception],
                       match: str) -> None:
    with pytest.raises(exc, match=match):
        F.einsum(equation, *shapes)


def test_einsum_equation_must_be_str() -> None:
    with pytest.raises(TypeError, match="equation"):
        F.einsum(42, (2, 3))  # type: ignore[arg-type]


# -- convolution --------------------------------------------------------------------------
def test_resnet_stem_conv_by_hand() -> None:
    c = F.conv2d((1, 3, 224, 224), (64, 3, 7, 7), stride=2, padding=3, bias=False)
    assert F.conv_output_shape((1, 3, 224, 224), (64, 3, 7, 7), stride=2,
                               padding=3) == (1, 64, 112, 112)
    assert c.op == "conv2d"
    assert c.forward.macs == 64 * 3 * 7 * 7 * 112 * 112
    assert c.params == 64 * 3 * 7 * 7
    assert c.forward.elementwise_flops == 0
    assert c.forward.bytes_read == 4 * (3 * 224 * 224 + 64 * 3 * 7 * 7)
    assert c.forward.bytes_written == 4 * 64 * 112 * 112
    # The first layer: no gradient for the image, the weight gradient only.
    first = F.conv2d((1, 3, 224, 224), (64, 3, 7, 7), stride=2, padding=3, bias=False,
                     input_grad=False)
    assert first.backward.macs == c.forward.macs
    assert c.backward.macs == 2 * c.forward.macs


def test_conv_bias_and_backward_bytes_by_hand() -> None:
    # 3x3 conv, 16 -> 32 channels, 8x8 input with padding 1: output 8x8.
    c = F.conv2d((2, 16, 8, 8), (32, 16, 3, 3), padding=1)
    out = 2 * 32 * 8 * 8
    assert c.forward.macs == out * 16 * 9
    assert c.forward.elementwise_flops == out                   # bias add
    assert c.backward.elementwise_flops == out                  # bias grad: sum of g
    assert c.params == 32 * 16 * 9 + 32
    x, w = 2 * 16 * 8 * 8, 32 * 16 * 9
    assert c.backward.bytes_read == 4 * (out + x + w)           # g, x (for dW), W (for dx)
    assert c.backward.bytes_written == 4 * (x + w + 32)


def test_grouped_and_depthwise_conv() -> None:
    dw = F.conv2d((8, 32, 56, 56), (32, 1, 3, 3), padding=1, groups=32)
    assert dw.forward.macs == 8 * 32 * 56 * 56 * 1 * 9
    assert dw.params == 32 * 9 + 32
    g = F.conv2d((8, 32, 28, 28), (64, 8, 3, 3), padding=1, groups=4)
    assert g.forward.macs == 8 * 64 * 28 * 28 * 8 * 9
    for c in (dw, g):
        ratio = c.total.flops / c.forward.flops
        assert 2.5 <= ratio <= 3.5, ratio
        no_input = F.conv2d((8, 32, 56, 56), (32, 1, 3, 3), padding=1, groups=32,
                            input_grad=False)
        assert no_input.backward.macs == no_input.forward.macs


def test_transposed_conv_macs_by_hand() -> None:
    c = F.conv_transpose2d((1, 16, 8, 8), (16, 8, 3, 3), stride=2, padding=1,
                           output_padding=1)
    assert F.conv_output_shape((1, 16, 8, 8), (16, 8, 3, 3), stride=2, padding=1,
                               output_padding=1, transposed=True) == (1, 8, 16, 16)
    # Every input element scatters into Cout/groups * kernel outputs.
    assert c.forward.macs == 1 * 16 * 8 * 8 * 8 * 9
    assert c.params == 16 * 8 * 9 + 8
    assert c.op == "conv_transpose2d"
    grouped = F.conv_transpose1d((2, 8, 10), (8, 3, 4), groups=2, bias=False)
    assert grouped.forward.macs == 2 * 8 * 10 * 3 * 4
    assert grouped.params == 8 * 3 * 4


def test_conv_1d_3d_and_unbatched() -> None:
    assert F.conv1d((4, 6, 100), (12, 6, 5)).forward.macs == 4 * 12 * 96 * 6 * 5
    c3 = F.conv3d((1, 2, 8, 8, 8), (4, 2, 3, 3, 3), padding=1)
    assert c3.forward.macs == 4 * 8 * 8 * 8 * 2 * 27
    assert F.conv_output_shape((3, 10, 10), (5, 3, 3, 3)) == (5, 8, 8)
    assert F.conv2d((3, 10, 10), (5, 3, 3, 3)).forward.macs == 5 * 8 * 8 * 3 * 9
    assert F.conv_transpose3d((1, 2, 4, 4, 4), (2, 3, 2, 2, 2), stride=2).forward.macs == \
        2 * 64 * 3 * 8


def _numpy_conv1d_length(n: int, k: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a direct sliding-window conv on a zero-padded array."""
    x = np.pad(np.arange(1.0, n + 1), padding)
    w = np.ones(k)
    out = []
    start = 0
    while start + dilation * (k - 1) < x.size:
        out.append(float(x[start:start + dilation * (k - 1) + 1:dilation] @ w))
        start += stride
    return len(out)


def _numpy_conv_transpose1d_length(n: int, k: int, stride: int, padding: int, dilation: int,
                                   output_padding: int) -> int:
    """Output length of a direct scatter implementation, cropped by the padding."""
    full = np.zeros((n - 1) * stride + dilation * (k - 1) + 1 + output_padding)
    for i in range(n):
        for j in range(k):
            full[i * stride + j * dilation] += 1.0
    return full[padding:full.size - padding].size


@pytest.mark.parametrize("n, k, s, p, d", [
    (10, 3, 1, 0, 1), (10, 3, 2, 1, 1), (11, 4, 3, 2, 1), (9, 3, 1, 0, 2), (7, 7, 1, 3, 1),
    (224, 7, 2, 3, 1), (5, 2, 5, 0, 1), (13, 3, 2, 0, 3),
])
def test_conv_output_size_matches_sliding_window(n: int, k: int, s: int, p: int, d: int) -> None:
    assert F.conv_output_size(n, k, s, p, d) == _numpy_conv1d_length(n, k, s, p, d)


@pytest.mark.parametrize("n, k, s, p, d, op", [
    (5, 3, 1, 0, 1, 0), (5, 3, 2, 1, 1, 1), (8, 4, 2, 1, 1, 0), (6, 3, 3, 0, 2, 2),
    (4, 2, 1, 0, 3, 2),
])
def test_transposed_output_size_matches_scatter(n: int, k: int, s: int, p: int, d: int,
                                                op: int) -> None:
    assert F.conv_output_size(n, k, s, p, d, transposed=True, output_padding=op) == \
        _numpy_conv_transpose1d_length(n, k, s, p, d, op)


def test_conv_same_and_valid_padding() -> None:
    assert F.conv_output_size(10, 4, 1, "same", 2) == 10
    assert F.conv_output_shape((1, 2, 10), (3, 2, 4), padding="same", dilation=2) == (1, 3, 10)
    assert F.conv_output_size(10, 3, 1, "valid") == 8
    with pytest.raises(ValueError, match="stride 1"):
        F.conv_output_size(10, 3, 2, "same")
    with pytest.raises(ValueError, match="'full'"):
        F.conv_output_size(10, 3, 1, "full")


def test_conv_shapes_match_torch() -> None:
    torch = pytest.importorskip("torch")
    fn = torch.nn.functional
    cases: list[dict[str, Any]] = [
        dict(x=(2, 4, 17, 12), w=(6, 2, 3, 5), stride=(2, 1), padding=(1, 2), dilation=1,
             groups=2),
        dict(x=(1, 3, 15, 15), w=(8, 3, 3, 3), stride=2, padding=0, dilation=2, groups=1),
        dict(x=(1, 4, 9, 9), w=(4, 1, 3, 3), stride=1, padding="same", dilation=2, groups=4),
        dict(x=(1, 3, 9, 9), w=(5, 3, 3, 3), stride=1, padding="valid", dilation=1, groups=1),
    ]
    for case in cases:
        x, w = torch.zeros(case.pop("x")), torch.zeros(case.pop("w"))
        expect = tuple(fn.conv2d(x, w, **case).shape)
        assert F.conv_output_shape(tuple(x.shape), tuple(w.shape), **case) == expect
        macs = F.conv2d(tuple(x.shape), tuple(w.shape), bias=False, **case).forward.macs
        assert macs == math.prod(expect) * w.shape[1] * w.shape[2] * w.shape[3]
    tcases: list[dict[str, Any]] = [
        dict(x=(2, 4, 5, 6), w=(4, 3, 3, 3), stride=2, padding=1, output_padding=1, groups=2,
             dilation=1),
        dict(x=(1, 2, 7, 7), w=(2, 5, 4, 2), stride=(3, 1), padding=(2, 0),
             output_padding=(1, 0), groups=1, dilation=1),
        dict(x=(1, 2, 4, 4), w=(2, 2, 3, 3), stride=1, padding=0, output_padding=1, groups=1,
             dilation=2),
    ]
    for case in tcases:
        x, w = torch.zeros(case.pop("x")), torch.zeros(case.pop("w"))
        expect = tuple(fn.conv_transpose2d(x, w, **case).shape)
        assert F.conv_output_shape(tuple(x.shape), tuple(w.shape), transposed=True,
                                   **case) == expect


def test_conv_macs_match_a_direct_numpy_convolution() -> None:
    # A grouped, strided, padded conv computed naively: count the products and compare the
    # values with torch if it is installed.
    rng = np.random.default_rng(1)
    n, cin, cout, g, h, k, s, p = 2, 4, 6, 2, 7, 3, 2, 1
    x = rng.standard_normal((n, cin, h, h))
    w = rng.standard_normal((cout, cin // g, k, k))
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    ho = (h + 2 * p - k) // s + 1
    y = np.zeros((n, cout, ho, ho))
    products = 0
    for b, o, i, j in itertools.product(range(n), range(cout), range(ho), range(ho)):
        grp = o // (cout // g)
        patch = xp[b, grp * (cin // g):(grp + 1) * (cin // g), i * s:i * s + k, j * s:j * s + k]
        y[b, o, i, j] = float((patch * w[o]).sum())
        products += patch.size
    c = F.conv2d(x.shape, w.shape, stride=s, padding=p, groups=g)
    assert c.forward.macs == products
    assert F.conv_output_shape(x.shape, w.shape, stride=s, padding=p, groups=g) == y.shape
    torch = pytest.importorskip("torch")
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=s,
                                     padding=p, groups=g).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(x_shape=(1, 4, 8, 8), w_shape=(8, 3, 3, 3)), ValueError, "4 channels"),
    (dict(x_shape=(1, 6, 8, 8), w_shape=(8, 3, 3, 3), groups=4), ValueError, "groups=4"),
    (dict(x_shape=(1, 6, 8, 8), w_shape=(9, 3, 3, 3), groups=2), ValueError, "divide"),
    (dict(x_shape=(3, 8), w_shape=(8, 3, 3, 3)), ValueError, "does not fit"),
    (dict(x_shape=(1, 3, 2, 2), w_shape=(8, 3, 5, 5)), ValueError, "smaller than the kernel"),
    (dict(x_shape=(1, 3, 8, 8), w_shape=(8, 3, 3, 3), padding=-1), ValueError, "padding"),
    (dict(x_shape=(1, 3, 8, 8), w_shape=(8, 3, 3, 3), stride=0), ValueError, "stride"),
    (dict(x_shape=(1, 3, 8, 8), w_shape=(8, 3, 3, 3), stride=(1, 2, 3)), ValueError, "2 ints"),
    (dict(x_shape=(1, 3, 8, 8), w_shape=(8, 3, 3, 3), output_padding=1), ValueError,
     "transposed"),
    (dict(x_shape=(1, 3, 8, 8), w_shape=(3, 8, 3, 3), transposed=True, stride=2,
          output_padding=2), ValueError, "smaller than the stride"),
    (dict(x_shape=(1, 3, 8, 8), w_shape=(3, 8, 3, 3), transposed=True, padding="same"),
     ValueError, "transposed"),
    (dict(x_shape=(1, 4, 8, 8), w_shape=(3, 8, 3, 3), transposed=True), ValueError,
     "transposed weight"),
    (dict(x_shape=(1, 3, 8, 8), w_shape=(8, 3)), ValueError, "spatial"),
    (dict(x_shape=(1, 3, 8.0, 8), w_shape=(8, 3, 3, 3)), TypeError, r"x_shape\[2\]"),
    (dict(x_shape=(1, 3, 8, 8), w_shape=(8, 3, 3, 3), bias=1), TypeError, "bias"),
    (dict(x_shape=(1, 3, 0, 8), w_shape=(8, 3, 3, 3)), ValueError, "positive"),
])
def test_conv_errors(kwargs: dict[str, Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        F.conv(**kwargs)


def test_conv_wrapper_errors() -> None:
    with pytest.raises(ValueError, match="conv2d takes a 4-d weight"):
        F.conv2d((1, 3, 8), (8, 3, 3))
    with pytest.raises(TypeError, match="transposed"):
        F.conv1d((1, 3, 8), (8, 3, 3), transposed=True)
    with pytest.raises(ValueError, match="output size would be -2"):
        F.conv_output_size(2, 5)     # 2 - 4*1 - 1 = -3, floor(-3/1) + 1 = -2
    with pytest.raises(ValueError, match="dilation"):
        F.conv_output_size(8, 3, 1, 0, 0)


# -- attention ----------------------------------------------------------------------------
def test_attention_by_hand() -> None:
    b, s, d, h = 2, 16, 64, 4
    c = F.attention(b, s, d, h)
    projections = 4 * b * s * d * d
    products = 2 * b * h * s * s * (d // h)      # Q K^T and A V
    assert c.forward.macs == projections + products
    assert c.params == 4 * d * d + 4 * d
    pairs = b * h * s * s
    assert c.forward.elementwise_flops == 4 * b * s * d + pairs * (E["scale"] + E["softmax"])
    parts = F.attention_parts(b, s, d, h)
    assert list(parts) == ["q_proj", "k_proj", "v_proj", "scores", "scale", "softmax",
                           "context", "out_proj"]
    assert sum((p.forward for p in parts.values()), Count()) == c.forward
    assert sum((p.backward for p in parts.values()), Count()) == c.backward
    assert parts["scores"].forward.bytes_written == 4 * pairs
    # Each product's backward computes two products of the same size.
    assert parts["scores"].backward.macs == 2 * parts["scores"].forward.macs
    assert parts["context"].backward.macs == 2 * parts["context"].forward.macs
    assert parts["softmax"].backward.elementwise_flops == pairs * E["softmax_backward"]


def test_attention_causal_counts_the_lower_triangle() -> None:
    b, s, d, h = 1, 16, 32, 2
    full, causal = F.attention_parts(b, s, d, h), F.attention_parts(b, s, d, h, causal=True)
    assert causal["scores"].forward.macs == b * h * (16 * 17 // 2) * (d // h)
    assert causal["q_proj"] == full["q_proj"]
    # Top-left aligned mask (key j <= query i), whatever the lengths.
    for sq, skv in ((3, 5), (5, 3), (4, 4)):
        pairs = int(np.tril(np.ones((sq, skv))).sum())
        c = F.attention_parts(1, sq, 8, 1, seq_kv=skv, causal=True, projections=False)
        assert c["scores"].forward.macs == pairs * 8
        assert c["softmax"].forward.elementwise_flops == pairs * E["softmax"]
    assert F.attention_parts(1, 5, 8, 1, seq_kv=3, causal=True,
                             projections=False)["scores"].forward.macs == (1 + 2 + 3 + 3 + 3) * 8


def test_attention_without_projections_or_grads() -> None:
    c = F.attention(2, 8, 16, 2, projections=False)
    assert c.params == 0 and c.forward.macs == 2 * 2 * 8 * 8 * 16
    assert F.attention(2, 8, 16, 2, projections=False, input_grad=False).backward == Count()
    # With projections the products still need their gradients (for the weights).
    with_proj = F.attention_parts(2, 8, 16, 2, input_grad=False)
    assert with_proj["scores"].backward.macs == 2 * with_proj["scores"].forward.macs
    assert with_proj["q_proj"].backward.macs == with_proj["q_proj"].forward.macs


def test_attention_params_match_torch() -> None:
    torch = pytest.importorskip("torch")
    for kwargs in ({}, {"bias": False}, {"kdim": 32, "vdim": 48}):
        mha = torch.nn.MultiheadAttention(64, 4, **kwargs)
        assert F.attention(1, 4, 64, 4, **kwargs).params == \
            sum(p.numel() for p in mha.parameters()), kwargs


def test_attention_errors() -> None:
    with pytest.raises(ValueError, match="heads=3 must divide d_model=64"):
        F.attention(1, 4, 64, 3)
    with pytest.raises(ValueError, match="projections"):
        F.attention(1, 4, 64, 4, kdim=32, projections=False)
    with pytest.raises(ValueError, match="seq_q"):
        F.attention(1, 0, 64, 4)
    with pytest.raises(TypeError, match="causal"):
        F.attention(1, 4, 64, 4, causal="yes")  # type: ignore[arg-type]


# -- normalisation ------------------------------------------------------------------------
def test_layer_norm_by_hand() -> None:
    n = 8 * 128 * 768
    c = F.layer_norm((8, 128, 768), 768)
    assert c.params == 2 * 768
    assert c.forward.elementwise_flops == n * 7       # mean 1, variance 3, normalise 1, affine 2
    assert c.backward.elementwise_flops == n * 13
    assert c.forward.bytes_read == 4 * (n + 2 * 768) and c.forward.bytes_written == 4 * n
    plain = F.layer_norm((8, 128, 768), (768,), affine=False)
    assert plain.params == 0 and plain.forward.elementwise_flops == n * 5
    assert plain.backward.elementwise_flops == n * 9
    # No input gradient: only the weight and bias gradients (recomputing x_hat).
    params_only = F.layer_norm((8, 128, 768), 768, input_grad=False)
    assert params_only.backward.elementwise_flops == n * E["norm_affine_params_backward"]
    assert params_only.backward.bytes_written == 4 * 2 * 768
    assert F.layer_norm((4, 6), 6, affine=False, input_grad=False).backward == Count()
    assert F.layer_norm((2, 3, 4), (3, 4)).params == 2 * 12


def test_rms_norm_group_norm_batch_norm_by_hand() -> None:
    r = F.rms_norm((4, 10, 64), 64)
    assert r.params == 64 and r.forward.elementwise_flops == 4 * 10 * 64 * 4
    assert F.rms_norm((4, 64), 64, affine=False).forward.elementwise_flops == 4 * 64 * 3
    g = F.group_norm((2, 32, 8, 8), 8)
    assert g.params == 64 and g.forward.elementwise_flops == 2 * 32 * 64 * 7
    bn = F.batch_norm((8, 64, 56, 56))
    n = 8 * 64 * 56 * 56
    assert bn.params == 128 and bn.forward.elementwise_flops == n * 7
    assert bn.backward.elementwise_flops == n * 13
    # Training reads and updates the running statistics (2*C each way).
    assert bn.forward.bytes_read == 4 * (n + 128 + 128)
    assert bn.forward.bytes_written == 4 * (n + 128)
    ev = F.batch_norm((8, 64, 56, 56), training=False)
    assert ev.forward.elementwise_flops == n * 2
    assert ev.backward.elementwise_flops == n * 6
    assert F.batch_norm((8, 64, 56, 56), training=False,
                        affine=False).backward.elementwise_flops == n * 1
    assert F.batch_norm((8, 64), training=False, affine=False,
                        input_grad=False).backward == Count()


def test_norm_params_match_torch() -> None:
    torch = pytest.importorskip("torch")
    nn = torch.nn

    def count(m: Any) -> int:
        return int(sum(p.numel() for p in m.parameters()))

    assert F.layer_norm((2, 5, 7), (5, 7)).params == count(nn.LayerNorm((5, 7)))
    assert F.layer_norm((2, 7), 7, affine=False).params == count(
        nn.LayerNorm(7, elementwise_affine=False))
    assert F.rms_norm((2, 7), 7).params == count(nn.RMSNorm(7))
    assert F.group_norm((2, 12, 4), 3).params == count(nn.GroupNorm(3, 12))
    assert F.batch_norm((2, 12, 4, 4)).params == count(nn.BatchNorm2d(12))
    assert F.batch_norm((2, 12), affine=False).params == count(nn.BatchNorm1d(12, affine=False))


def test_norm_errors() -> None:
    with pytest.raises(ValueError, match="trailing"):
        F.layer_norm((8, 10), 12)
    with pytest.raises(ValueError, match="trailing"):
        F.rms_norm((8,), (2, 8))
    with pytest.raises(ValueError, match="groups=5 must divide the 32 channels"):
        F.group_norm((2, 32, 4, 4), 5)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm((1, 16, 1, 1))
    assert F.batch_norm((1, 16, 1, 1), training=False).params == 32
    with pytest.raises(ValueError, match="at least 2"):
        F.batch_norm((16,))
    with pytest.raises(TypeError, match="affine"):
        F.layer_norm((4, 4), 4, affine=None)  # type: ignore[arg-type]


# -- activations, softmax, elementwise ----------------------------------------------------
@pytest.mark.parametrize("kind", F.ACTIVATIONS)
def test_activations_use_the_table(kind: str) -> None:
    c = F.activation(kind, (4, 5, 6))
    assert c.forward.elementwise_flops == 120 * E[kind]
    assert c.backward.elementwise_flops == 120 * E[f"{kind}_backward"]
    assert c.forward.bytes == 4 * 240 and c.params == 0
    assert F.activation(kind, 120) == c
    assert F.activation(kind, 120, input_grad=False).backward == Count()


def test_activation_errors() -> None:
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        F.activation("swish", 10)
    with pytest.raises(ValueError, match="numel_or_shape"):
        F.activation("relu", 0)
    with pytest.raises(TypeError, match="numel_or_shape"):
        F.activation("relu", 2.5)  # type: ignore[arg-type]


def test_softmax() -> None:
    c = F.softmax((2, 4, 16, 16), -1)
    assert c.forward.elementwise_flops == 2 * 4 * 16 * 16 * 5
    assert c.backward.bytes_read == 4 * 2 * (2 * 4 * 16 * 16)    # g and y
    assert F.log_softmax((3, 7), 1).forward.elementwise_flops == 21 * E["log_softmax"]
    with pytest.raises(ValueError, match="dim 2 is out of range"):
        F.softmax((3, 7), 2)
    with pytest.raises(ValueError, match="dim"):
        F.softmax((3, 7), -3)
    with pytest.raises(TypeError, match="dim"):
        F.softmax((3, 7), True)


def test_elementwise_broadcasting() -> None:
    a, b = (8, 1, 5), (3, 1)
    out = np.broadcast_shapes(a, b)
    assert out == (8, 3, 5)
    add = F.elementwise("add", a, b)
    assert add.forward.elementwise_flops == 120
    assert add.forward.bytes_read == 4 * (40 + 3) and add.forward.bytes_written == 4 * 120
    # Both inputs were broadcast: their gradients are sums of g over the broadcast dims.
    assert add.backward.elementwise_flops == (120 - 40) + (120 - 3)
    same = F.elementwise("add", (4, 4), (4, 4))
    assert same.backward == Count()       # the gradients are the output gradient itself
    mul = F.elementwise("mul", (4, 4), (4, 4))
    assert mul.backward.elementwise_flops == 16 * 2
    assert F.elementwise("where", (4, 4), (4, 4), ()).forward.elementwise_flops == 16
    custom = F.elementwise(3, (10,), backward_flops_per_element=2)
    assert custom.forward.elementwise_flops == 30 and custom.backward.elementwise_flops == 20
    assert F.elementwise(3, (10,)).backward == Count()
    assert F.elementwise("scale", (10,)).op == "scale"


def test_elementwise_errors() -> None:
    with pytest.raises(ValueError, match="do not broadcast"):
        F.elementwise("add", (3, 4), (5, 4))
    with pytest.raises(ValueError, match="unknown elementwise kind 'frobnicate'"):
        F.elementwise("frobnicate", (3,))
    with pytest.raises(ValueError, match="unknown elementwise kind 'relu_backward'"):
        F.elementwise("relu_backward", (3,))
    with pytest.raises(ValueError, match="at least one"):
        F.elementwise("add")
    with pytest.raises(TypeError, match="backward_flops_per_element"):
        F.elementwise("add", (3,), backward_flops_per_element=1)
    with pytest.raises(ValueError, match="kind_or_flops_per_element"):
        F.elementwise(-1, (3,))


# -- pooling ------------------------------------------------------------------------------
def test_max_pool_resnet_by_hand() -> None:
    c = F.max_pool((1, 64, 112, 112), 3, 2, 1)
    out = 64 * 56 * 56
    assert c.forward.elementwise_flops == out * 9
    assert c.backward.elementwise_flops == out * E["max_pool_backward"]
    assert c.forward.bytes_written == 4 * out + 8 * out        # output and int64 argmax
    assert F.max_pool((1, 64, 112, 112), 3, 2, 1, input_grad=False).forward.bytes_written \
        == 4 * out
    assert F.pool_output_size(112, 3, 2, 1) == 56


def test_avg_and_adaptive_pool_by_hand() -> None:
    a = F.avg_pool((2, 8, 8, 8), 2)
    assert a.forward.elementwise_flops == 2 * 8 * 4 * 4 * 4
    assert a.backward.elementwise_flops == 2 * 8 * 4 * 4 * (4 + 1)
    g = F.adaptive_avg_pool((1, 512, 7, 7), 1)
    assert g.forward.elementwise_flops == 512 * 49 and g.forward.bytes_written == 4 * 512
    # Length 10 to 3: windows [0, 4), [3, 7), [6, 10).
    assert F.adaptive_avg_pool((1, 1, 10), (3,)).forward.elementwise_flops == 12
    assert F.adaptive_avg_pool((1, 1, 10, 6), (3, None)).forward.elementwise_flops == 12 * 6


def test_adaptive_windows_match_torch() -> None:
    torch = pytest.importorskip("torch")
    x = np.arange(10.0)
    windows = [(0, 4), (3, 7), (6, 10)]
    expect = [x[a:b].mean() for a, b in windows]
    got = torch.nn.functional.adaptive_avg_pool1d(torch.from_numpy(x)[None, None], 3)
    np.testing.assert_allclose(got.numpy().ravel(), expect)


@pytest.mark.parametrize("size, k, s, p, d, ceil", [
    (112, 3, 2, 1, 1, False), (7, 2, 2, 0, 1, True), (10, 3, 3, 1, 1, True),
    (11, 3, 2, 1, 2, False), (6, 4, 3, 2, 1, True), (5, 5, 1, 0, 1, False),
])
def test_pool_shapes_match_torch(size: int, k: int, s: int, p: int, d: int,
                                 ceil: bool) -> None:
    torch = pytest.importorskip("torch")
    x = torch.zeros(1, 2, size, size)
    y = torch.nn.functional.max_pool2d(x, k, s, p, d, ceil_mode=ceil)
    assert F.pool_output_size(size, k, s, p, d, ceil_mode=ceil) == y.shape[-1]
    c = F.max_pool((1, 2, size, size), k, s, p, d, ceil_mode=ceil)
    assert c.forward.elementwise_flops == y.numel() * k * k
    if d == 1:
        ya = torch.nn.functional.avg_pool2d(x, k, s, p, ceil_mode=ceil)
        assert F.avg_pool((1, 2, size, size), k, s, p,
                          ceil_mode=ceil).forward.bytes_written == 4 * ya.numel()


def test_pool_errors() -> None:
    with pytest.raises(ValueError, match="at most half"):
        F.max_pool((1, 1, 8, 8), 3, 1, 2)
    with pytest.raises(ValueError, match="output would be"):
        F.avg_pool((1, 1, 2, 2), 3)
    with pytest.raises(ValueError, match="kernel"):
        F.max_pool((1, 1, 8, 8), (2, 2, 2, 2))
    with pytest.raises(ValueError, match=r"\(N, C, \*spatial\)"):
        F.max_pool((4, 8), 2)
    with pytest.raises(ValueError, match="output_size"):
        F.adaptive_avg_pool((1, 4, 8, 8), 0)


# -- sampling at computed positions -------------------------------------------------------
def test_sampling_table_follows_the_documented_counts() -> None:
    # A 4-tap weighted sum is 4 mul + 3 add; bicubic takes 4 rows then the column.
    assert E["grid_sample_bilinear"] == 4 + 3
    assert E["upsample_bicubic"] == E["grid_sample_bicubic"] == 5 * (4 + 3)
    # torch's get_cubic_upsample_coefficients per axis: conv2(t + 1) 1 + 6, conv1(t) 5,
    # 1 - t 1, conv1(1 - t) 5, conv2(2 - t) 1 + 6.
    per_axis = 7 + 5 + 1 + 5 + 7
    assert E["grid_sample_bicubic_coords"] == 2 * 3 + 2 + 2 + 2 * per_axis
    # Bilinear position: unnormalise (3 per axis), floor (2), 4 distances, 4 weights.
    assert E["grid_sample_bilinear_coords"] == 2 * 3 + 2 + 4 + 4
    assert E["roi_align"] == 4 + 3 + 1 and E["roi_align_coords"] == 2 * 2 + 2 + 4 + 4


def test_grid_sample_by_hand() -> None:
    n, c, h, w, ho, wo = 2, 3, 8, 10, 5, 7
    outputs, locations, inputs = n * c * ho * wo, n * ho * wo, n * c * h * w   # 210, 70, 480
    g = F.grid_sample((n, c, h, w), (n, ho, wo, 2))
    assert g.params == 0
    assert g.forward == Count(0, 210 * 7 + 70 * 16, 4 * (480 + 140), 4 * 210)
    # Positions again (16), input grad (8) and grid grad (24) per output, chain rule (2).
    assert g.backward == Count(0, 70 * 16 + 210 * (8 + 24) + 70 * 2,
                               4 * (outputs + inputs + 2 * locations), 4 * (inputs + 140))
    only_input = F.grid_sample((n, c, h, w), (n, ho, wo, 2), grid_grad=False)
    assert only_input.backward.elementwise_flops == 70 * 16 + 210 * 8
    assert only_input.backward.bytes_written == 4 * inputs
    assert F.grid_sample((n, c, h, w), (n, ho, wo, 2), input_grad=False,
                         grid_grad=False).backward == Count()
    nearest = F.grid_sample((n, c, h, w), (n, ho, wo, 2), mode="nearest", dtype="float16")
    assert nearest.forward == Count(0, 70 * 8, 2 * (480 + 140), 2 * 210)
    assert nearest.backward.elementwise_flops == 70 * 8 + 210 * 1   # a step: no grid gradient
    bicubic = F.grid_sample((n, c, h, w), (n, ho, wo, 2), mode="bicubic")
    assert bicubic.forward.elementwise_flops == 210 * 35 + 70 * 60
    assert bicubic.backward.elementwise_flops == 70 * 76 + 210 * (32 + 96) + 70 * 74


def test_roi_align_by_hand() -> None:
    # Mask R-CNN's box head: 1000 boxes on a 256-channel 50x68 level, 7x7 bins of 2x2 samples.
    c = F.roi_align((1, 256, 50, 68), 1000, 7, 2)
    outputs, samples = 1000 * 256 * 49, 1000 * 49 * 4
    assert c.params == 0
    assert c.forward == Count(0, 404_152_000, 4 * (256 * 50 * 68 + 1000 * 5), 4 * outputs)
    assert c.forward.elementwise_flops == outputs * 4 * 8 + samples * 14
    assert c.backward == Count(0, outputs * (4 * 8 + 1) + samples * 14,
                               4 * (outputs + 1000 * 5), 4 * 256 * 50 * 68)
    assert F.roi_align((1, 256, 50, 68), 1000, (7, 7), 2, input_grad=False).backward == Count()
    assert F.roi_align((1, 8, 9, 9), 3, (2, 4), 1).forward.elementwise_flops == \
        3 * 8 * 8 * 8 + 3 * 8 * 14


def test_sampling_errors() -> None:
    with pytest.raises(ValueError, match=r"grid_shape must be \(N, H_out, W_out, 2\) with N=2"):
        F.grid_sample((2, 3, 8, 8), (1, 4, 4, 2))
    with pytest.raises(ValueError, match="grid_shape"):
        F.grid_sample((2, 3, 8, 8), (2, 4, 4, 3))
    with pytest.raises(ValueError, match="input_shape must have 4 dimensions"):
        F.grid_sample((2, 3, 8, 8, 8), (2, 4, 4, 2))
    with pytest.raises(ValueError, match="mode must be one of bilinear, nearest, bicubic"):
        F.grid_sample((2, 3, 8, 8), (2, 4, 4, 2), mode="area")
    with pytest.raises(TypeError, match="grid_grad"):
        F.grid_sample((2, 3, 8, 8), (2, 4, 4, 2), grid_grad=1)  # type: ignore[arg-type]
    for adaptive in (0, -1):
        with pytest.raises(ValueError, match="sampling_ratio must be positive.*boxes' values"):
            F.roi_align((1, 4, 8, 8), 2, 7, adaptive)
    with pytest.raises(ValueError, match="output_size must be an int or 2 ints"):
        F.roi_align((1, 4, 8, 8), 2, (7, 7, 7), 2)
    with pytest.raises(ValueError, match="num_rois"):
        F.roi_align((1, 4, 8, 8), 0, 7, 2)


# -- embedding and dropout ----------------------------------------------------------------
def test_embedding_by_hand() -> None:
    c = F.embedding(50257, 768, (8, 128))
    tokens = 8 * 128
    assert c.params == 50257 * 768
    assert c.forward.flops == 0
    assert c.forward.bytes_read == 4 * tokens * 768 + 8 * tokens    # gathered rows + int64 ids
    assert c.forward.bytes_written == 4 * tokens * 768
    assert c.backward.elementwise_flops == tokens * 768             # scatter-add of g
    assert c.backward.bytes_written == 4 * 50257 * 768              # dense weight gradient
    with pytest.raises(ValueError, match="num_embeddings"):
        F.embedding(0, 8, (2,))


def test_dropout() -> None:
    c = F.dropout((4, 256), 0.1)
    assert c.forward.elementwise_flops == 1024 * E["dropout"]
    assert c.forward.bytes_written == 4 * 1024 + 1024               # output and bool mask
    assert c.backward.elementwise_flops == 1024 * E["dropout_backward"]
    assert F.dropout((4, 256), 0.1, training=False).total == Count()
    assert F.dropout((4, 256), 0.0).total == Count()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        F.dropout((4,), 1.5)
    with pytest.raises(TypeError, match="p must be a number"):
        F.dropout((4,), "0.5")  # type: ignore[arg-type]


def test_size_type_errors() -> None:
    with pytest.raises(TypeError, match="in_features must be an int, got float"):
        F.linear(7.0, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bool"):
        F.linear(True, 3)
    with pytest.raises(ValueError, match="out_features must be positive, got -3"):
        F.linear(7, -3)
    with pytest.raises(TypeError, match="batch"):
        F.linear(7, 3, batch=8)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dtype"):
        F.linear(7, 3, dtype="float13")
    assert F.linear(7, 3, batch=(np.int64(2),)).forward.macs == 42
