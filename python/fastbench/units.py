"""Human-readable units for times and counts; no measuring here."""

from __future__ import annotations

import math

_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def format_ns(ns: float, digits: int = 4) -> str:
    """Format a duration given in nanoseconds with a unit chosen for readability.

    Examples: ``format_ns(1234.5) == "1.234 µs"``, ``format_ns(0.5) == "0.5000 ns"``.
    """
    if not math.isfinite(ns):
        return f"{ns} ns"
    if ns != 0:
        ns = float(f"{ns:.{digits - 1}e}")  # round first, so 999.96 ns becomes 1.000 µs
    for scale, unit in _TIME_UNITS:
        if abs(ns) >= scale:
            return f"{_significant(ns / scale, digits)} {unit}"
    return f"{_significant(ns, digits)} ns"


def _significant(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits, never in exponent notation."""
    if value == 0:
        return "0"
    magnitude = int(math.floor(math.log10(abs(value))))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{value:.{decimals}f}"
