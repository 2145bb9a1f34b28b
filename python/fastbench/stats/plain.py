"""Plain data of the stats records: JSON-ready copies (:func:`plain`) and the check that a
result holds no inf or NaN (:func:`require_finite`). No statistics here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

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
