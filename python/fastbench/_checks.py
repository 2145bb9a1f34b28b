"""Every argument check of the Python layer: integers (a numpy integer will do; a bool or a
float will not) within a range, flags that must be bools, durations in seconds, fractions in
(0, 1), finite numbers and choices from a list. Raises the built-in TypeError or ValueError naming the
argument; nothing else here.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np


def check_int(name: str, value: Any, minimum: int | None = None, *,
              say_positive: bool = True, maximum: int | None = None) -> int:
    """``value`` as an int, or TypeError (not an int, or a bool) / ValueError (below
    ``minimum`` or above ``maximum``) with ``name`` in the message. A minimum of 1 reads
    "must be positive", or "must be >= 1" with ``say_positive=False``; above a maximum the
    message gives the whole range."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got bool {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}") from None
    if minimum is not None and v < minimum:
        what = "positive" if minimum == 1 and say_positive else f">= {minimum}"
        raise ValueError(f"{name} must be {what}, got {v}")
    if maximum is not None and v > maximum:
        what = f"at most {maximum}" if minimum is None else f"from {minimum} to {maximum}"
        raise ValueError(f"{name} must be {what}, got {v}")
    return int(v)


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool, else TypeError naming ``name`` (1 and "yes" are refused)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return value


def _real(name: str, value: Any, what: str) -> float:
    """``value`` as a float if it is a real number (numpy scalars included, bool not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return float(value)


def check_seconds(name: str, value: Any, *, maximum: float | None = None) -> float:
    """``value`` as a finite positive number of seconds (at most ``maximum`` when given),
    else TypeError / ValueError."""
    seconds = _real(name, value, "a number of seconds")
    if not math.isfinite(seconds) or seconds <= 0.0:
        raise ValueError(f"{name} must be finite and > 0 seconds, got {value!r}")
    if maximum is not None and seconds > maximum:
        raise ValueError(f"{name} must be at most {maximum:g} seconds, got {value!r}")
    return seconds


def check_fraction(name: str, value: Any, *, example: str = "") -> float:
    """``value`` as a float strictly between 0 and 1, else TypeError / ValueError; the
    message quotes ``example`` (such as "0.01 for ±1%") when one is given."""
    fraction = _real(name, value, "a number")
    if not 0.0 < fraction < 1.0:
        hint = f" (e.g. {example})" if example else ""
        raise ValueError(f"{name} must be in (0, 1){hint}, got {value!r}")
    return fraction


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else ValueError listing them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return str(value)


def check_finite(name: str, value: Any) -> float:
    """``value`` as a finite float (numpy scalars included, bool not), else TypeError /
    ValueError."""
    number = _real(name, value, "a number")
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return number


def check_in_range(name: str, value: Any, low: float, high: float, *,
                   integer: bool = False) -> float:
    """``value`` read from a file: a number (an int where ``integer``; bool never) from
    ``low`` to ``high``, else ValueError naming ``name``, so that nothing a loaded result
    holds can overflow or print as a figure that cannot be."""
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        raise ValueError(f"{name} must be {'an int' if integer else 'a number'} from {low:g} "
                         f"to {high:g}, got {value!r:.40}")
    return int(value) if integer else float(value)
