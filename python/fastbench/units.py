"""Every unit formatter of fastbench's reports: durations, byte sizes and counts with SI
prefixes. Numbers in, text out; no measuring and no layout here (tables are
:mod:`fastbench.report.table`).
"""

from __future__ import annotations

import math

__all__ = ["format_bytes", "format_count", "format_ns", "format_rel"]

_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
_BINARY_UNITS = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


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


def format_bytes(size_bytes: float, sign: bool = False, *, exact: bool = False) -> str:
    """Bytes in binary units for people.

    Parameters
    ----------
    size_bytes : int or float
        A size or a difference of sizes, in bytes; negative values keep their sign.
    sign : bool
        Write "+" before positive values (for deltas).
    exact : bool
        Only units that divide the size exactly ("1536 KiB", "768 B"), as cache sizes are
        written; by default the largest unit that fits, whole when exact ("100 MiB") and
        with one decimal otherwise ("99.6 MiB").
    """
    if not math.isfinite(size_bytes):
        return f"{size_bytes} B"
    value = int(round(size_bytes))
    prefix = "-" if value < 0 else ("+" if sign and value > 0 else "")
    magnitude = abs(value)
    for unit, factor in _BINARY_UNITS:
        if magnitude >= factor and magnitude % factor == 0:
            return f"{prefix}{magnitude // factor} {unit}"
        if magnitude >= factor and not exact:
            return f"{prefix}{magnitude / factor:.1f} {unit}"
    return f"{prefix}{magnitude} B"


def format_count(value: float, unit: str = "", digits: int = 3) -> str:
    """``value`` with an SI prefix: ``format_count(4.1e9, "FLOPs") == "4.10 GFLOPs"``."""
    if not math.isfinite(value):
        return f"{value} {unit}".rstrip()
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{value / scale:.{digits - 1}f} {prefix}{unit}"
    text = f"{value:.{digits - 1}f}" if value != int(value) else f"{int(value)}"
    return f"{text} {unit}".rstrip()


def format_rel(fraction: float) -> str:
    """A relative figure (0.042 for 4.2%) as a percentage with two significant digits, so a
    small one never prints as "0.0%": "12%", "4.2%", "0.31%", "0.0042%", "< 0.001%", "0%"."""
    pct = abs(fraction) * 100.0
    if pct == 0.0:
        return "0%"
    if pct < 0.001:
        return "< 0.001%"
    if pct >= 10.0:
        return f"{pct:.0f}%"
    if pct >= 1.0:
        return f"{pct:.1f}%"
    return f"{pct:.2g}%"
