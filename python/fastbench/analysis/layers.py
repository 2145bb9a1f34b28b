"""Describe a model as a tree of small layer specs and count it without any framework: each
spec knows its parameters and, given an input shape, its cost (from formulas.py) and output
shape; ``analyze_layers`` walks the tree, propagating shapes, into per-layer rows and totals.

Owns the specs, the walk and the printed table; the arithmetic is formulas.py's. No torch
import here: the names follow torch.nn so that a description reads like the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Sequence

from .._checks import check_bool, check_int
from ..report.lines import TextLines, brief_repr
from ..report.table import table
from ..units import format_count
from . import formulas
from .costs import CONVENTION, Cost, Count, Totals

__all__ = [
    "Activation", "AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d",
    "BatchNorm3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Dropout", "ELU", "Embedding", "Flatten", "GELU", "GroupNorm",
    "Hardsigmoid", "Hardswish", "Layer", "LayerAnalysis", "LayerNorm", "LayerRow", "LeakyReLU",
    "Linear", "LogSoftmax", "MaxPool2d", "Mish", "MultiHeadAttention", "RMSNorm", "ReLU",
    "ReLU6", "Repeat", "Residual", "Sequential", "SiLU", "Sigmoid", "Softmax", "Softplus",
    "Tanh", "analyze_layers",
]

Shape = tuple[int, ...]


def _int(owner: str, name: str, value: Any, minimum: int = 1) -> int:
    return check_int(f"{owner}: {name}", value, minimum)


def _flag(owner: str, name: str, value: Any) -> bool:
    return check_bool(f"{owner}: {name}", value)


def _ints(owner: str, name: str, value: Any, n: int, minimum: int) -> None:
    """Validate an int or a sequence of ``n`` ints (per spatial dimension)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        _int(owner, name, value, minimum)
        return
    if len(value) != n:
        raise ValueError(f"{owner}: {name} must be an int or {n} ints, got {tuple(value)!r}")
    for i, v in enumerate(value):
        _int(owner, f"{name}[{i}]", v, minimum)


def _as_shape(value: Any, what: str = "input shape") -> Shape:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{what} must be a tuple of ints, got {type(value).__name__} {value!r}")
    return tuple(check_int(f"{what} {tuple(value)!r}: dimension {i}", d, 1)
                 for i, d in enumerate(value))


@dataclass(frozen=True)
class _Walk:
    dtype: Any
    training: bool
    grads: bool        # whether gradients are counted at all


@dataclass(frozen=True)
class LayerRow(Totals):
    """One leaf layer of an analysis: where it sits, its shapes and what it costs.

    ``macs``, ``flops``, ``bytes`` and ``intensity`` are of what the analysis counted:
    the forward pass, plus the backward pass when it counted backward (``backward`` is
    otherwise empty). ``share`` is this row's fraction of the analysis's total FLOPs.
    """

    path: str
    type: str
    input_shape: Shape
    output_shape: Shape
    params: int
    forward: Count
    backward: Count
    share: float = 0.0

    @property
    def total(self) -> Count:
        """Forward plus backward (the backward empty when not counted)."""
        return self.forward + self.backward

    @property
    def count(self) -> Count:
        """The same as ``total``."""
        return self.total

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "type": self.type, "input_shape": list(self.input_shape),
                "output_shape": list(self.output_shape), "params": self.params,
                "macs": self.macs, "flops": self.flops, "bytes": self.bytes,
                "share": self.share, "forward": self.forward.to_dict(),
                "backward": self.backward.to_dict()}


class Layer:
    """Base of the layer specs: ``params`` and ``cost(input_shape)``.

    Leaf layers implement ``cost``; containers (Sequential, Residual, Repeat) walk their
    children. ``cost`` returns ``(Cost, output_shape)``; ``input_grad`` says whether the
    gradient with respect to the input is computed in backward, ``training`` picks the
    batch norm statistics and whether dropout runs.
    """

    @property
    def params(self) -> int:
        raise NotImplementedError

    @property
    def type_name(self) -> str:
        """The name shown in tables: the class name, or the activation's."""
        return type(self).__name__

    def cost(self, input_shape: Sequence[int], dtype: Any = "float32", input_grad: bool = True,
             training: bool = True) -> tuple[Cost, Shape]:
        raise NotImplementedError

    def _walk(self, shape: Shape, path: str, needs_grad: bool,
              ctx: _Walk) -> tuple[list[LayerRow], Shape, bool]:
        """Rows of this layer, its output shape and whether the output needs a gradient."""
        try:
            cost, out = self.cost(shape, ctx.dtype, needs_grad and ctx.grads, ctx.training)
        except (ValueError, TypeError) as e:
            raise type(e)(f"layer {path or '(model)'} ({self.type_name}): {e}") from e
        backward = cost.backward if ctx.grads else Count()
        row = LayerRow(path, self.type_name, shape, out, cost.params, cost.forward, backward)
        return [row], out, needs_grad or cost.params > 0


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Leaf(Layer):
    """A spec without children: ``cost`` checks the input shape, then ``_cost`` counts it."""

    def cost(self, input_shape: Sequence[int], dtype: Any = "float32", input_grad: bool = True,
             training: bool = True) -> tuple[Cost, Shape]:
        return self._cost(_as_shape(input_shape), dtype, input_grad, training)

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        raise NotImplementedError


class _Stateless(_Leaf):
    """A leaf without parameters (activations, pooling, reshapes, dropout)."""

    @property
    def params(self) -> int:
        return 0


class _Container(Layer):
    """A spec made of child specs: its cost is the sum of the rows its walk yields."""

    def cost(self, input_shape: Sequence[int], dtype: Any = "float32", input_grad: bool = True,
             training: bool = True) -> tuple[Cost, Shape]:
        rows, out, _ = self._walk(_as_shape(input_shape), "", input_grad,
                                  _Walk(dtype, training, True))
        fwd, bwd = Count(), Count()
        for r in rows:
            fwd, bwd = fwd + r.forward, bwd + r.backward
        return Cost(self.type_name, fwd, bwd, sum(r.params for r in rows)), out


def _named(owner: str, items: Sequence[Any]) -> tuple[tuple[str, ...], tuple[Layer, ...]]:
    names: list[str] = []
    layers: list[Layer] = []
    for i, item in enumerate(items):
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            name, layer = item
            if not name or "." in name:
                raise ValueError(f"{owner}: layer name {name!r} must be non-empty without '.'")
        else:
            name, layer = str(i), item
        if not isinstance(layer, Layer):
            raise TypeError(f"{owner}: item {i} must be a layer spec or a (name, layer) pair, "
                            f"got {type(layer).__name__}")
        if name in names:
            raise ValueError(f"{owner}: duplicate layer name {name!r}")
        names.append(name)
        layers.append(layer)
    return tuple(names), tuple(layers)


def _walk_children(names: Sequence[str], layers: Sequence[Layer], shape: Shape, path: str,
                   needs_grad: bool, ctx: _Walk) -> tuple[list[LayerRow], Shape, bool]:
    rows: list[LayerRow] = []
    for name, layer in zip(names, layers):
        sub, shape, needs_grad = layer._walk(shape, _child(path, name), needs_grad, ctx)
        rows += sub
    return rows, shape, needs_grad


# -- containers ---------------------------------------------------------------------------
@dataclass(frozen=True, init=False)
class Sequential(_Container):
    """Layers applied in order. Items are layers or ``(name, layer)`` pairs; rows are named
    by their path (``"2.attn"``), with unnamed items numbered from 0."""

    layers: tuple[Layer, ...]
    names: tuple[str, ...]

    def __init__(self, *layers: Layer | tuple[str, Layer]) -> None:
        names, items = _named("Sequential", layers)
        object.__setattr__(self, "layers", items)
        object.__setattr__(self, "names", names)

    @property
    def params(self) -> int:
        return sum(layer.params for layer in self.layers)

    def _walk(self, shape: Shape, path: str, needs_grad: bool,
              ctx: _Walk) -> tuple[list[LayerRow], Shape, bool]:
        return _walk_children(self.names, self.layers, shape, path, needs_grad, ctx)


@dataclass(frozen=True, init=False)
class Residual(_Container):
    """``x + f(x)``: the layers (applied in order) form the branch ``f``; the skip adds the
    input back, an elementwise add shown as the row ``<path>.add``. ``shortcut`` (a layer,
    e.g. a strided 1x1 conv and a norm) transforms the skip first; its rows are under
    ``<path>.shortcut``. The branch and skip outputs must have the same shape."""

    layers: tuple[Layer, ...]
    names: tuple[str, ...]
    shortcut: Layer | None

    def __init__(self, *layers: Layer | tuple[str, Layer], shortcut: Layer | None = None) -> None:
        names, items = _named("Residual", layers)
        if shortcut is not None and not isinstance(shortcut, Layer):
            raise TypeError(f"Residual: shortcut must be a layer spec or None, got "
                            f"{type(shortcut).__name__}")
        object.__setattr__(self, "layers", items)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "shortcut", shortcut)

    @property
    def params(self) -> int:
        skip = self.shortcut.params if self.shortcut is not None else 0
        return sum(layer.params for layer in self.layers) + skip

    def _walk(self, shape: Shape, path: str, needs_grad: bool,
              ctx: _Walk) -> tuple[list[LayerRow], Shape, bool]:
        rows, out, branch_grad = _walk_children(self.names, self.layers, shape, path,
                                                needs_grad, ctx)
        skip, skip_grad = shape, needs_grad
        if self.shortcut is not None:
            sub, skip, skip_grad = self.shortcut._walk(shape, _child(path, "shortcut"),
                                                      needs_grad, ctx)
            rows += sub
        if out != skip:
            raise ValueError(f"layer {path or '(model)'} (Residual): the branch output {out} "
                             f"does not match the skip {skip} (input {shape})")
        grad = branch_grad or skip_grad
        add = formulas.elementwise("add", out, skip, dtype=ctx.dtype,
                                   input_grad=grad and ctx.grads)
        rows.append(LayerRow(_child(path, "add"), "Add", out, out, 0, add.forward,
                             add.backward if ctx.grads else Count()))
        return rows, out, grad


@dataclass(frozen=True, init=False)
class Repeat(_Container):
    """``n`` independent copies of ``layer`` applied in order (e.g. 12 transformer blocks):
    parameters count ``n`` times; rows are ``<path>.0`` ... ``<path>.{n-1}``."""

    n: int
    layer: Layer

    def __init__(self, n: int, layer: Layer) -> None:
        if not isinstance(layer, Layer):
            raise TypeError(f"Repeat: layer must be a layer spec, got {type(layer).__name__}")
        object.__setattr__(self, "n", _int("Repeat", "n", n))
        object.__setattr__(self, "layer", layer)

    @property
    def params(self) -> int:
        return self.n * self.layer.params

    def _walk(self, shape: Shape, path: str, needs_grad: bool,
              ctx: _Walk) -> tuple[list[LayerRow], Shape, bool]:
        return _walk_children([str(i) for i in range(self.n)], [self.layer] * self.n, shape,
                              path, needs_grad, ctx)


# -- leaves -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Linear(_Leaf):
    """``torch.nn.Linear``: input ``(..., in_features)``."""

    in_features: int
    out_features: int
    bias: bool = True

    def __post_init__(self) -> None:
        _int("Linear", "in_features", self.in_features)
        _int("Linear", "out_features", self.out_features)
        _flag("Linear", "bias", self.bias)

    @property
    def params(self) -> int:
        return self.in_features * self.out_features + (self.out_features if self.bias else 0)

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        if not x or x[-1] != self.in_features:
            raise ValueError(f"expected input shape (..., {self.in_features}), got {x}")
        c = formulas.linear(self.in_features, self.out_features, batch=x[:-1], bias=self.bias,
                            dtype=dtype, input_grad=input_grad)
        return c, x[:-1] + (self.out_features,)


class _ConvMixin(_Leaf):
    """What plain and transposed convolution specs share; the dataclasses below hold the
    fields, each in torch's argument order."""

    in_channels: int
    out_channels: int
    kernel_size: int | tuple[int, ...]
    stride: int | tuple[int, ...]
    padding: int | tuple[int, ...] | str
    dilation: int | tuple[int, ...]
    groups: int
    bias: bool

    ndim: ClassVar[int] = 2
    transposed: ClassVar[bool] = False

    def __init_subclass__(cls, ndim: int | None = None, **kwargs: Any) -> None:
        """``class Conv3d(_ConvBase, ndim=3)``: a subclass names its spatial dimensions."""
        super().__init_subclass__(**kwargs)
        if ndim is not None:
            cls.ndim = ndim

    def _validate(self) -> None:
        name = type(self).__name__
        c_in = _int(name, "in_channels", self.in_channels)
        c_out = _int(name, "out_channels", self.out_channels)
        g = _int(name, "groups", self.groups)
        if c_in % g or c_out % g:
            raise ValueError(f"{name}: groups={g} must divide in_channels={c_in} and "
                             f"out_channels={c_out}")
        _ints(name, "kernel_size", self.kernel_size, self.ndim, 1)
        _ints(name, "stride", self.stride, self.ndim, 1)
        _ints(name, "dilation", self.dilation, self.ndim, 1)
        if not isinstance(self.padding, str):
            _ints(name, "padding", self.padding, self.ndim, 0)
        _flag(name, "bias", self.bias)

    @property
    def _kernel(self) -> Shape:
        k = self.kernel_size
        return tuple(k) if isinstance(k, Sequence) else (k,) * self.ndim

    @property
    def _weight_shape(self) -> Shape:
        if self.transposed:
            return (self.in_channels, self.out_channels // self.groups) + self._kernel
        return (self.out_channels, self.in_channels // self.groups) + self._kernel

    @property
    def params(self) -> int:
        return math.prod(self._weight_shape) + (self.out_channels if self.bias else 0)

    def _extra(self) -> dict[str, Any]:
        return {}

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        n = self.ndim
        if len(x) not in (n + 1, n + 2) or x[-n - 1] != self.in_channels:
            spatial = ", ".join(["*"] * n)
            raise ValueError(f"expected input shape (N, {self.in_channels}, {spatial}) or "
                             f"({self.in_channels}, {spatial}), got {x}")
        kw: dict[str, Any] = dict(stride=self.stride, padding=self.padding,
                                  dilation=self.dilation, groups=self.groups,
                                  transposed=self.transposed, **self._extra())
        c = formulas.conv(x, self._weight_shape, bias=self.bias, dtype=dtype,
                          input_grad=input_grad, **kw)
        return c, formulas.conv_output_shape(x, self._weight_shape, **kw)


@dataclass(frozen=True)
class _ConvBase(_ConvMixin):
    """Plain convolution; the subclasses below only set ``ndim`` (and stay frozen dataclasses,
    inheriting the fields, ``__init__``, ``__eq__`` and ``__repr__``)."""

    in_channels: int
    out_channels: int
    kernel_size: int | tuple[int, ...]
    stride: int | tuple[int, ...] = 1
    padding: int | tuple[int, ...] | str = 0
    dilation: int | tuple[int, ...] = 1
    groups: int = 1
    bias: bool = True

    def __post_init__(self) -> None:
        self._validate()


class Conv1d(_ConvBase, ndim=1):
    """``torch.nn.Conv1d``: input ``(N, C, L)`` or ``(C, L)``."""


class Conv2d(_ConvBase, ndim=2):
    """``torch.nn.Conv2d``: input ``(N, C, H, W)`` or ``(C, H, W)``."""


class Conv3d(_ConvBase, ndim=3):
    """``torch.nn.Conv3d``: input ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""


@dataclass(frozen=True)
class _ConvTransposeBase(_ConvMixin):
    """Transposed convolution, its fields in torch's order (``output_padding`` before
    ``groups``, ``dilation`` last); the subclasses below only set ``ndim``."""

    in_channels: int
    out_channels: int
    kernel_size: int | tuple[int, ...]
    stride: int | tuple[int, ...] = 1
    padding: int | tuple[int, ...] | str = 0
    output_padding: int | tuple[int, ...] = 0
    groups: int = 1
    bias: bool = True
    dilation: int | tuple[int, ...] = 1

    transposed: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self._validate()
        _ints(type(self).__name__, "output_padding", self.output_padding, self.ndim, 0)

    def _extra(self) -> dict[str, Any]:
        return {"output_padding": self.output_padding}


class ConvTranspose1d(_ConvTransposeBase, ndim=1):
    """``torch.nn.ConvTranspose1d``."""


class ConvTranspose2d(_ConvTransposeBase, ndim=2):
    """``torch.nn.ConvTranspose2d``: ``(in, out, kernel_size, stride, padding,
    output_padding, groups, bias, dilation)``."""


class ConvTranspose3d(_ConvTransposeBase, ndim=3):
    """``torch.nn.ConvTranspose3d``."""


@dataclass(frozen=True)
class MultiHeadAttention(_Leaf):
    """Self-attention as ``torch.nn.MultiheadAttention(d_model, heads, bias=bias,
    batch_first=True)``: input ``(B, S, d_model)``, output the same shape. With ``causal``
    only the lower triangle of the score matrix is counted (see
    ``formulas.attention_parts``)."""

    d_model: int
    heads: int
    causal: bool = False
    bias: bool = True

    def __post_init__(self) -> None:
        d = _int("MultiHeadAttention", "d_model", self.d_model)
        h = _int("MultiHeadAttention", "heads", self.heads)
        if d % h:
            raise ValueError(f"MultiHeadAttention: heads={h} must divide d_model={d}")
        _flag("MultiHeadAttention", "causal", self.causal)
        _flag("MultiHeadAttention", "bias", self.bias)

    @property
    def params(self) -> int:
        d = self.d_model
        return 4 * d * d + (4 * d if self.bias else 0)

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        if len(x) != 3 or x[2] != self.d_model:
            raise ValueError(f"expected input shape (B, S, {self.d_model}), got {x}")
        c = formulas.attention(x[0], x[1], self.d_model, self.heads, causal=self.causal,
                               bias=self.bias, dtype=dtype, input_grad=input_grad)
        return c, x


def _normalized_shape(owner: str, value: Any) -> Shape:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return (_int(owner, "normalized_shape", value),)
    if not value:
        raise ValueError(f"{owner}: normalized_shape must not be empty")
    return tuple(_int(owner, f"normalized_shape[{i}]", v) for i, v in enumerate(value))


@dataclass(frozen=True)
class _TrailingNorm(_Leaf):
    """A norm over the trailing ``normalized_shape`` dimensions (LayerNorm, RMSNorm)."""

    normalized_shape: int | tuple[int, ...]
    affine: bool = True

    # Parameters per normalised element when affine (weight, and bias where there is one).
    per_element: ClassVar[int] = 2

    def __post_init__(self) -> None:
        _normalized_shape(type(self).__name__, self.normalized_shape)
        _flag(type(self).__name__, "affine", self.affine)

    @property
    def _norm(self) -> Shape:
        return _normalized_shape(type(self).__name__, self.normalized_shape)

    @property
    def params(self) -> int:
        return self.per_element * math.prod(self._norm) if self.affine else 0

    def _formula(self, x: Shape, norm: Shape, **kw: Any) -> Cost:
        raise NotImplementedError

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        norm = self._norm
        if x[len(x) - len(norm):] != norm or len(x) < len(norm):
            raise ValueError(f"expected input shape (..., {', '.join(map(str, norm))}), got {x}")
        return self._formula(x, norm, affine=self.affine, dtype=dtype, input_grad=input_grad), x


@dataclass(frozen=True)
class LayerNorm(_TrailingNorm):
    """``torch.nn.LayerNorm(normalized_shape, elementwise_affine=affine)``."""

    def _formula(self, x: Shape, norm: Shape, **kw: Any) -> Cost:
        return formulas.layer_norm(x, norm, **kw)


@dataclass(frozen=True)
class RMSNorm(_TrailingNorm):
    """``torch.nn.RMSNorm(normalized_shape, elementwise_affine=affine)``: a weight, no bias."""

    per_element: ClassVar[int] = 1

    def _formula(self, x: Shape, norm: Shape, **kw: Any) -> Cost:
        return formulas.rms_norm(x, norm, **kw)


@dataclass(frozen=True)
class _BatchNormBase(_Leaf):
    num_features: int
    affine: bool = True

    ndims: ClassVar[tuple[int, ...]] = (4,)

    def __post_init__(self) -> None:
        _int(type(self).__name__, "num_features", self.num_features)
        _flag(type(self).__name__, "affine", self.affine)

    @property
    def params(self) -> int:
        return 2 * self.num_features if self.affine else 0

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        if len(x) not in self.ndims or x[1] != self.num_features:
            forms = " or ".join(
                "(" + ", ".join(["N", str(self.num_features)] + ["*"] * (n - 2)) + ")"
                for n in self.ndims)
            raise ValueError(f"expected input shape {forms}, got {x}")
        return formulas.batch_norm(x, affine=self.affine, training=training, dtype=dtype,
                                   input_grad=input_grad), x


@dataclass(frozen=True)
class BatchNorm1d(_BatchNormBase):
    """``torch.nn.BatchNorm1d``: input ``(N, C)`` or ``(N, C, L)``. Training mode uses batch
    statistics, evaluation mode the running ones (``analyze_layers(training=...)``)."""

    ndims: ClassVar[tuple[int, ...]] = (2, 3)


@dataclass(frozen=True)
class BatchNorm2d(_BatchNormBase):
    """``torch.nn.BatchNorm2d``: input ``(N, C, H, W)``; see ``BatchNorm1d`` on modes."""

    ndims: ClassVar[tuple[int, ...]] = (4,)


@dataclass(frozen=True)
class BatchNorm3d(_BatchNormBase):
    """``torch.nn.BatchNorm3d``: input ``(N, C, D, H, W)``; see ``BatchNorm1d`` on modes."""

    ndims: ClassVar[tuple[int, ...]] = (5,)


@dataclass(frozen=True)
class GroupNorm(_Leaf):
    """``torch.nn.GroupNorm(num_groups, num_channels, affine=affine)``: input
    ``(N, C, *)``."""

    num_groups: int
    num_channels: int
    affine: bool = True

    def __post_init__(self) -> None:
        g = _int("GroupNorm", "num_groups", self.num_groups)
        c = _int("GroupNorm", "num_channels", self.num_channels)
        if c % g:
            raise ValueError(f"GroupNorm: num_groups={g} must divide num_channels={c}")
        _flag("GroupNorm", "affine", self.affine)

    @property
    def params(self) -> int:
        return 2 * self.num_channels if self.affine else 0

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        if len(x) < 2 or x[1] != self.num_channels:
            raise ValueError(f"expected input shape (N, {self.num_channels}, *), got {x}")
        return formulas.group_norm(x, self.num_groups, affine=self.affine, dtype=dtype,
                                   input_grad=input_grad), x


_ACTIVATION_NAMES = {
    "relu": "ReLU", "leaky_relu": "LeakyReLU", "gelu": "GELU", "gelu_tanh": "GELU(tanh)",
    "silu": "SiLU", "sigmoid": "Sigmoid", "tanh": "Tanh", "hardswish": "Hardswish",
    "hardsigmoid": "Hardsigmoid", "relu6": "ReLU6", "elu": "ELU", "softplus": "Softplus",
    "mish": "Mish",
}


@dataclass(frozen=True)
class Activation(_Stateless):
    """An activation function by name (one of ``formulas.ACTIVATIONS``); the output has the
    input's shape. ``ReLU()``, ``GELU()``, ``SiLU()``... build one."""

    kind: str

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in formulas.ACTIVATIONS:
            raise ValueError(f"Activation: unknown kind {self.kind!r}; expected one of "
                             f"{', '.join(formulas.ACTIVATIONS)}")

    @property
    def type_name(self) -> str:
        return _ACTIVATION_NAMES.get(self.kind, self.kind)

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        return formulas.activation(self.kind, x, dtype=dtype, input_grad=input_grad), x


def _alias(name: str, kind: str, note: str = "") -> Callable[[], Activation]:
    """A torch.nn-named shorthand for ``Activation(kind)``."""
    def make() -> Activation:
        return Activation(kind)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"``Activation({kind!r})``{note}."
    return make


ReLU = _alias("ReLU", "relu")
LeakyReLU = _alias("LeakyReLU", "leaky_relu", " (the count does not depend on the slope)")
SiLU = _alias("SiLU", "silu")
Sigmoid = _alias("Sigmoid", "sigmoid")
Tanh = _alias("Tanh", "tanh")
Hardswish = _alias("Hardswish", "hardswish")
Hardsigmoid = _alias("Hardsigmoid", "hardsigmoid")
ReLU6 = _alias("ReLU6", "relu6")
ELU = _alias("ELU", "elu", " (the count does not depend on alpha)")
Softplus = _alias("Softplus", "softplus")
Mish = _alias("Mish", "mish")


def GELU(approximate: str = "none") -> Activation:
    """``Activation("gelu")``, or ``"gelu_tanh"`` with ``approximate="tanh"`` as torch."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Activation("gelu" if approximate == "none" else "gelu_tanh")


@dataclass(frozen=True)
class Softmax(_Stateless):
    """``torch.nn.Softmax(dim)``."""

    dim: int
    log: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _int(type(self).__name__, "dim", self.dim, minimum=-(1 << 62))

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        fn = formulas.log_softmax if self.log else formulas.softmax
        return fn(x, self.dim, dtype=dtype, input_grad=input_grad), x


@dataclass(frozen=True)
class LogSoftmax(Softmax):
    """``torch.nn.LogSoftmax(dim)``."""

    log: ClassVar[bool] = True


def _pool_input(x: Shape) -> None:
    if len(x) not in (3, 4):
        raise ValueError(f"expected input shape (N, C, H, W) or (C, H, W), got {x}")


def _pair(value: Any) -> Any:
    return value if isinstance(value, Sequence) else (value, value)


class _Pool2dMixin(_Stateless):
    """What the 2-d max and average pool specs share; the dataclasses below hold the fields,
    each in torch's argument order (average pooling has no dilation)."""

    kernel_size: int | tuple[int, int]
    stride: int | tuple[int, int] | None
    padding: int | tuple[int, int]
    ceil_mode: bool

    def __post_init__(self) -> None:
        name = type(self).__name__
        _ints(name, "kernel_size", self.kernel_size, 2, 1)
        if self.stride is not None:
            _ints(name, "stride", self.stride, 2, 1)
        _ints(name, "padding", self.padding, 2, 0)
        _ints(name, "dilation", self._dilation, 2, 1)
        _flag(name, "ceil_mode", self.ceil_mode)

    @property
    def _dilation(self) -> int | tuple[int, int]:
        return 1

    def _formula(self, x: Shape, kernel: Any, stride: Any, padding: Any, dilation: Any,
                 **kw: Any) -> Cost:
        raise NotImplementedError

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        _pool_input(x)
        k, p, d = _pair(self.kernel_size), _pair(self.padding), _pair(self._dilation)
        s = None if self.stride is None else _pair(self.stride)
        c = self._formula(x, k, s, p, d, ceil_mode=self.ceil_mode, dtype=dtype,
                          input_grad=input_grad)
        out = tuple(formulas.pool_output_size(*a, ceil_mode=self.ceil_mode)
                    for a in zip(x[-2:], k, k if s is None else s, p, d))
        return c, x[:-2] + out


@dataclass(frozen=True)
class MaxPool2d(_Pool2dMixin):
    """``torch.nn.MaxPool2d``: ``stride`` defaults to ``kernel_size``."""

    kernel_size: int | tuple[int, int]
    stride: int | tuple[int, int] | None = None
    padding: int | tuple[int, int] = 0
    dilation: int | tuple[int, int] = 1
    ceil_mode: bool = False

    @property
    def _dilation(self) -> int | tuple[int, int]:
        return self.dilation

    def _formula(self, x: Shape, kernel: Any, stride: Any, padding: Any, dilation: Any,
                 **kw: Any) -> Cost:
        return formulas.max_pool(x, kernel, stride, padding, dilation, **kw)


@dataclass(frozen=True)
class AvgPool2d(_Pool2dMixin):
    """``torch.nn.AvgPool2d``: ``stride`` defaults to ``kernel_size``."""

    kernel_size: int | tuple[int, int]
    stride: int | tuple[int, int] | None = None
    padding: int | tuple[int, int] = 0
    ceil_mode: bool = False

    def _formula(self, x: Shape, kernel: Any, stride: Any, padding: Any, dilation: Any,
                 **kw: Any) -> Cost:
        return formulas.avg_pool(x, kernel, stride, padding, **kw)  # no dilation


@dataclass(frozen=True)
class AdaptiveAvgPool2d(_Stateless):
    """``torch.nn.AdaptiveAvgPool2d(output_size)``; None in ``output_size`` keeps that
    input dimension."""

    output_size: int | tuple[int | None, int | None]

    def __post_init__(self) -> None:
        out = self.output_size
        if isinstance(out, Sequence) and not isinstance(out, (str, bytes)):
            if len(out) != 2:
                raise ValueError(f"AdaptiveAvgPool2d: output_size must be an int or 2 values, "
                                 f"got {tuple(out)!r}")
            for i, o in enumerate(out):
                if o is not None:
                    _int("AdaptiveAvgPool2d", f"output_size[{i}]", o)
        else:
            _int("AdaptiveAvgPool2d", "output_size", out)

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        _pool_input(x)
        size = _pair(self.output_size)
        out = tuple(x[-2 + i] if o is None else int(o) for i, o in enumerate(size))
        c = formulas.adaptive_avg_pool(x, size, dtype=dtype, input_grad=input_grad)
        return c, x[:-2] + out


@dataclass(frozen=True)
class Flatten(_Stateless):
    """``torch.nn.Flatten(start_dim, end_dim)``: a view, no arithmetic or traffic."""

    start_dim: int = 1
    end_dim: int = -1

    def __post_init__(self) -> None:
        _int("Flatten", "start_dim", self.start_dim, minimum=-(1 << 62))
        _int("Flatten", "end_dim", self.end_dim, minimum=-(1 << 62))

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        n = len(x)
        start = self.start_dim + n if self.start_dim < 0 else self.start_dim
        end = self.end_dim + n if self.end_dim < 0 else self.end_dim
        if not (0 <= start < n and 0 <= end < n) or start > end:
            raise ValueError(f"start_dim={self.start_dim} and end_dim={self.end_dim} do not "
                             f"fit input shape {x}")
        return Cost("flatten", Count()), x[:start] + (math.prod(x[start:end + 1]),) + x[end + 1:]


@dataclass(frozen=True)
class Embedding(_Leaf):
    """``torch.nn.Embedding(num_embeddings, embedding_dim)``: the input shape is that of the
    indices; the output appends ``embedding_dim``."""

    num_embeddings: int
    embedding_dim: int

    def __post_init__(self) -> None:
        _int("Embedding", "num_embeddings", self.num_embeddings)
        _int("Embedding", "embedding_dim", self.embedding_dim)

    @property
    def params(self) -> int:
        return self.num_embeddings * self.embedding_dim

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        c = formulas.embedding(self.num_embeddings, self.embedding_dim, x, dtype=dtype)
        return c, x + (self.embedding_dim,)


@dataclass(frozen=True)
class Dropout(_Stateless):
    """``torch.nn.Dropout(p)``: active in training mode only."""

    p: float = 0.5

    def __post_init__(self) -> None:
        if isinstance(self.p, bool) or not isinstance(self.p, (int, float)) \
                or not 0.0 <= self.p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {self.p!r}")

    def _cost(self, x: Shape, dtype: Any, input_grad: bool, training: bool) -> tuple[Cost, Shape]:
        return formulas.dropout(x, self.p, training=training, dtype=dtype,
                                input_grad=input_grad), x


# -- analysis -----------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerAnalysis(Totals, TextLines):
    """Per-layer rows and totals of a model described with layer specs.

    ``forward`` and ``backward`` are the summed Counts (``backward`` empty unless counted);
    ``macs``, ``flops``, ``elementwise_flops`` and ``bytes`` are of both together.
    """

    rows: tuple[LayerRow, ...]
    input_shape: Shape
    output_shape: Shape
    dtype: str
    training: bool
    counts_backward: bool
    forward: Count
    backward: Count
    params: int
    convention: str = field(default=CONVENTION)

    @property
    def total(self) -> Count:
        return self.forward + self.backward

    def __iter__(self) -> Iterator[LayerRow]:
        return iter(self.rows)

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.input_shape))
        return brief_repr(self, f"{len(self.rows)} layers on {shape} {self.dtype}: "
                                f"{format_count(self.flops, 'FLOPs')}, "
                                f"{format_count(self.params, 'params')}")

    def lines(self) -> list[str]:
        """The table: one line per layer, then the totals and the convention."""
        mode = ("forward and backward (one training step)" if self.counts_backward
                else "forward, training mode" if self.training else "forward, inference")
        out = [f"layer analysis: input {self.input_shape} -> output {self.output_shape}, "
               f"{self.dtype}, {mode}"]
        header = ("layer", "type", "input", "output", "params", "MACs", "FLOPs", "bytes",
                  "FLOP/B", "%FLOPs")
        rows: list[tuple[str, ...]] = []
        for r in self.rows:
            rows.append((r.path or "(model)", r.type, _fmt_shape(r.input_shape),
                          _fmt_shape(r.output_shape), format_count(r.params),
                          format_count(r.macs), format_count(r.flops),
                          format_count(r.bytes, "B"), f"{r.intensity:.3g}",
                          f"{100 * r.share:.1f}"))
        total = ("total", "", _fmt_shape(self.input_shape), _fmt_shape(self.output_shape),
                 format_count(self.params), format_count(self.macs), format_count(self.flops),
                 format_count(self.bytes, "B"), f"{self.total.intensity:.3g}", "100.0")
        # A rule of dashes as wide as each column sets the total apart; being no wider than
        # the column, it leaves the widths alone.
        rule = tuple("-" * max(map(len, column)) for column in zip(header, *rows, total))
        out += table(header, [*rows, rule, total], align="llrrrrrrrr")
        out.append(f"  forward:  {self.forward}")
        if self.counts_backward:
            out.append(f"  backward: {self.backward}")
            out.append("  (the model's input needs no gradient: layers before the first one "
                       "with parameters run no backward)")
        out.append(f"  ({self.convention})")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"input_shape": list(self.input_shape), "output_shape": list(self.output_shape),
                "dtype": self.dtype, "training": self.training,
                "counts_backward": self.counts_backward, "params": self.params,
                "macs": self.macs, "flops": self.flops,
                "elementwise_flops": self.elementwise_flops, "bytes": self.bytes,
                "forward": self.forward.to_dict(), "backward": self.backward.to_dict(),
                "rows": [r.to_dict() for r in self.rows], "convention": self.convention}


def _fmt_shape(shape: Shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"


def analyze_layers(spec: Layer, input_shape: Sequence[int], *, dtype: Any = "float32",
                   backward: bool = False, training: bool | None = None) -> LayerAnalysis:
    """Walk ``spec`` from ``input_shape``, propagating shapes, and count every layer.

    The model's input needs no gradient: when counting backward, the first layer with
    parameters computes only its parameter gradients (``input_grad=False``) and layers
    before it (with no parameters) run no backward at all; every later layer also computes
    the gradient with respect to its input.

    Parameters
    ----------
    spec : Layer
        The model, usually a ``Sequential``.
    input_shape : tuple of int
        Shape of the model's input (indices for an ``Embedding`` first layer).
    dtype : str, numpy or torch dtype, or int
        Element type of activations and weights; sets the bytes.
    backward : bool
        Also count the backward pass (one training step).
    training : bool, optional
        Training mode (batch statistics in batch norm, active dropout) or evaluation mode;
        by default training exactly when counting backward.

    Returns
    -------
    LayerAnalysis
        One row per leaf layer (and per residual add), named by path, and the totals.

    Raises
    ------
    TypeError
        ``spec`` is not a layer spec, a malformed input shape.
    ValueError
        A shape that does not fit a layer: the message names the layer's path, its type,
        the shape it expected and the one it got.
    """
    if not isinstance(spec, Layer):
        raise TypeError(f"spec must be a layer spec (Sequential, Linear, ...), got "
                        f"{type(spec).__name__}")
    x = _as_shape(input_shape)
    if not isinstance(backward, bool):
        raise TypeError(f"backward must be True or False, got {backward!r}")
    if training is not None and not isinstance(training, bool):
        raise TypeError(f"training must be True, False or None, got {training!r}")
    train = backward if training is None else training
    rows, out, _ = spec._walk(x, "", False, _Walk(dtype, train, backward))
    fwd, bwd = Count(), Count()
    for r in rows:
        fwd, bwd = fwd + r.forward, bwd + r.backward
    total_flops = (fwd + bwd).flops
    rows = [LayerRow(r.path, r.type, r.input_shape, r.output_shape, r.params, r.forward,
                     r.backward, r.flops / total_flops if total_flops else 0.0) for r in rows]
    dtype_name = str(dtype).removeprefix("torch.")
    return LayerAnalysis(tuple(rows), x, out, dtype_name, train, backward, fwd, bwd,
                         sum(r.params for r in rows))
