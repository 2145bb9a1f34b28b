"""Plain data of the stats records: JSON-ready copies (:func:`plain`), records rebuilt from
them by their annotations (:func:`restore`, and :class:`PlainRecord`, the base that gives a
record both) and the check that a result holds no inf or NaN
(:func:`require_finite`). No statistics here.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Mapping, TypeVar

import numpy as np


def plain(value: Any) -> Any:
    """JSON-ready copy: dataclasses -> dicts, tuples -> lists, numpy scalars -> Python."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


R = TypeVar("R")
P = TypeVar("P", bound="PlainRecord")


class PlainRecord:
    """Base of frozen dataclass results whose file form is :func:`plain` data:
    ``to_dict()`` gives it and ``cls.from_dict(d)`` rebuilds the record (:func:`restore`)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (tuples become lists)."""
        result: dict[str, Any] = plain(self)
        return result

    @classmethod
    def from_dict(cls: type[P], data: Mapping[str, Any]) -> P:
        """The record :meth:`to_dict` gave."""
        return restore(cls, data)


def restore(cls: type[R], data: Mapping[str, Any]) -> R:
    """The frozen dataclass ``cls`` rebuilt from what :func:`plain` made of it: lists back
    to the annotated tuples (``tuple[int, ...]``, ``tuple[float, float] | None``), nested
    records rebuilt, numbers as the annotated type. A field absent from ``data`` takes its
    default."""
    hints = typing.get_type_hints(cls)
    kwargs = {f.name: _as(hints[f.name], data[f.name])
              for f in dataclasses.fields(cls)  # type: ignore[arg-type]
              if f.name in data}
    return cls(**kwargs)


def _as(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        return _as(kinds[0], value) if len(kinds) == 1 else value
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_as(args[0], v) for v in value)
        return tuple(_as(a, v) for a, v in zip(args, value))
    if dataclasses.is_dataclass(tp):
        return restore(tp, value)  # type: ignore[arg-type]
    if tp in (int, float, str, bool):
        return tp(value)
    return value


def require_finite(data: Any, what: str) -> None:
    """Raise ValueError if any number in ``data`` (output of :func:`plain`) is NaN or infinite.

    Finite inputs can still overflow float64 on the way (a sum near 1e308); a result
    holding inf would be a wrong number, so the caller gets an exception instead.
    """
    if isinstance(data, dict):
        for v in data.values():
            require_finite(v, what)
    elif isinstance(data, list):
        for v in data:
            require_finite(v, what)
    elif isinstance(data, float) and not math.isfinite(data):
        raise ValueError(
            f"{what}: the samples overflow float64 arithmetic (magnitudes near 1e308); "
            "rescale them"
        )
