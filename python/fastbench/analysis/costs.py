"""The typed result of a FLOP and byte count: what one operation, layer or model costs, forward
and backward. Pure arithmetic on integers; no framework here.

Convention (stated again in every printed and serialised count, because the field is split
on it): ``macs`` are the multiply-accumulates of conv, linear, matmul and the attention
products and nothing else; ``flops = 2 * macs + elementwise_flops``; ``elementwise_flops``
are bias adds, norms, activations, softmax, pooling and other elementwise arithmetic; bytes
are the minimum traffic: every input read once and every output written once, at the dtype's
width. ``format_count`` is :func:`fastbench.units.format_count`, handed on from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

from .._checks import check_int
from ..report.lines import TextLines, brief_repr
from ..units import format_count

__all__ = ["CONVENTION", "Cost", "Count", "Totals", "dtype_bytes", "format_count"]

CONVENTION = ("macs = multiply-accumulates of conv, linear, matmul and attention products; "
              "flops = 2*macs + elementwise_flops; bytes = minimum traffic "
              "(inputs read once, outputs written once)")

_DTYPE_BYTES = {
    "float64": 8, "double": 8, "complex64": 8, "int64": 8, "long": 8, "uint64": 8,
    "float32": 4, "float": 4, "int32": 4, "int": 4, "uint32": 4,
    "float16": 2, "half": 2, "bfloat16": 2, "int16": 2, "short": 2, "uint16": 2,
    "int8": 1, "uint8": 1, "bool": 1,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "complex128": 16,
}


def dtype_bytes(dtype: Any) -> int:
    """Bytes per element of ``dtype``: a name ("float32", "bfloat16"), a numpy dtype or a torch
    dtype (``torch.float16``), or an int taken as the width itself.

    Raises
    ------
    ValueError
        An unknown dtype or a non-positive width.
    """
    if isinstance(dtype, bool):
        raise ValueError(f"dtype must be a dtype name or a width in bytes, got {dtype!r}")
    if isinstance(dtype, int):
        if dtype <= 0:
            raise ValueError(f"a dtype width must be a positive number of bytes, got {dtype}")
        return dtype
    itemsize = getattr(dtype, "itemsize", None)   # numpy dtypes and torch >= 2.1 dtypes
    if isinstance(itemsize, int) and itemsize > 0:
        return itemsize
    name = str(dtype).removeprefix("torch.")
    if name in _DTYPE_BYTES:
        return _DTYPE_BYTES[name]
    raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(sorted(_DTYPE_BYTES))} "
                     "or a width in bytes")


def _check_nonnegative_int(name: str, value: Any) -> int:
    return check_int(name, value, 0)


@dataclass(frozen=True)
class Count:
    """Arithmetic and traffic of one pass (forward or backward) of an operation.

    Add counts with ``+``; ``k * count`` repeats one ``k`` times.
    """

    macs: int = 0
    elementwise_flops: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _check_nonnegative_int(f.name, getattr(self, f.name)))

    @property
    def flops(self) -> int:
        """2 FLOPs per MAC plus the elementwise FLOPs."""
        return 2 * self.macs + self.elementwise_flops

    @property
    def bytes(self) -> int:
        """Bytes read plus bytes written."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved: ``inf`` for arithmetic on no traffic, 0.0 for neither."""
        if self.bytes == 0:
            return math.inf if self.flops else 0.0
        return self.flops / self.bytes

    def __add__(self, other: Count) -> Count:
        if not isinstance(other, Count):
            return NotImplemented
        return Count(self.macs + other.macs, self.elementwise_flops + other.elementwise_flops,
                     self.bytes_read + other.bytes_read, self.bytes_written + other.bytes_written)

    def __mul__(self, k: int) -> Count:
        k = _check_nonnegative_int("repeat count", k)
        return Count(self.macs * k, self.elementwise_flops * k, self.bytes_read * k,
                     self.bytes_written * k)

    __rmul__ = __mul__

    def __bool__(self) -> bool:
        return any((self.macs, self.elementwise_flops, self.bytes_read, self.bytes_written))

    def to_dict(self) -> dict[str, Any]:
        intensity = self.intensity
        return {"macs": self.macs, "flops": self.flops,
                "elementwise_flops": self.elementwise_flops, "bytes_read": self.bytes_read,
                "bytes_written": self.bytes_written, "bytes": self.bytes,
                "intensity": intensity if math.isfinite(intensity) else None,
                "convention": CONVENTION}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Count:
        try:
            return cls(int(data["macs"]), int(data["elementwise_flops"]),
                       int(data["bytes_read"]), int(data["bytes_written"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a count: {e}") from e

    def __str__(self) -> str:
        return (f"{format_count(self.flops, 'FLOPs')} ({format_count(self.macs, 'MACs')} x 2 + "
                f"{format_count(self.elementwise_flops, 'FLOPs')} elementwise), "
                f"{format_count(self.bytes, 'B')} moved, {self.intensity:.3g} FLOP/B")


@dataclass(frozen=True)
class Cost(TextLines):
    """Forward and backward cost of an operation or layer, with its parameter count.

    ``backward`` holds the gradient computation actually run: with respect to the input
    (unless the input needs no gradient) and to each trainable parameter.
    """

    op: str
    forward: Count
    backward: Count = Count()
    params: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", _check_nonnegative_int("params", self.params))

    @property
    def total(self) -> Count:
        """Forward plus backward: one training step's arithmetic and traffic."""
        return self.forward + self.backward

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        op = self.op if self.op == other.op else f"{self.op} + {other.op}"
        return Cost(op, self.forward + other.forward, self.backward + other.backward,
                    self.params + other.params)

    def __mul__(self, k: int) -> Cost:
        return Cost(self.op, self.forward * k, self.backward * k, self.params * k)

    __rmul__ = __mul__

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "params": self.params, "forward": self.forward.to_dict(),
                "backward": self.backward.to_dict(), "convention": CONVENTION}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cost:
        try:
            return cls(str(data["op"]), Count.from_dict(data["forward"]),
                       Count.from_dict(data["backward"]), int(data["params"]))
        except (KeyError, TypeError) as e:
            raise ValueError(f"not a cost: {e}") from e

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.op}: {format_count(self.params, 'params')}, forward "
                                f"{format_count(self.forward.flops, 'FLOPs')}, backward "
                                f"{format_count(self.backward.flops, 'FLOPs')}")

    def lines(self) -> list[str]:
        return [f"{self.op}: {format_count(self.params, 'params')}",
                f"  forward:  {self.forward}", f"  backward: {self.backward}",
                f"  ({CONVENTION})"]


class Totals:
    """The figures of a result's ``total`` Count as attributes (``macs``, ``flops``,
    ``elementwise_flops``, ``bytes``, ``intensity``); a result class defines ``total``."""

    @property
    def total(self) -> Count:
        raise NotImplementedError

    @property
    def macs(self) -> int:
        return self.total.macs

    @property
    def flops(self) -> int:
        return self.total.flops

    @property
    def elementwise_flops(self) -> int:
        return self.total.elementwise_flops

    @property
    def bytes(self) -> int:
        return self.total.bytes

    @property
    def intensity(self) -> float:
        return self.total.intensity
