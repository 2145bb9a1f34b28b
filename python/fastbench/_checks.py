"""Argument checks shared by the Python layer: an integer argument must be an int (a numpy
integer will do; a bool or a float will not) and at least its minimum; a flag must be a bool. Raises the built-in
TypeError or ValueError naming the argument; nothing else here.
"""

from __future__ import annotations

import operator
from typing import Any


def check_int(name: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as an int, or TypeError (not an int, or a bool) / ValueError (below
    ``minimum``) with ``name`` in the message."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got bool {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}") from None
    if minimum is not None and v < minimum:
        what = "positive" if minimum == 1 else f">= {minimum}"
        raise ValueError(f"{name} must be {what}, got {v}")
    return int(v)


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool, else TypeError naming ``name`` (1 and "yes" are refused)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value
