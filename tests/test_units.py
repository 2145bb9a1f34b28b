"""Tests for fastbench.units.format_ns: unit choice, significant digits, signs and
non-finite values.
"""

from __future__ import annotations

import math
import re

import pytest

from fastbench.units import format_ns


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0.5, "0.5000 ns"),
        (0.025, "0.02500 ns"),
        (1.0, "1.000 ns"),
        (999.0, "999.0 ns"),
        (1_000.0, "1.000 µs"),
        (1_500.0, "1.500 µs"),
        (12_346.0, "12.35 µs"),
        (123_456.0, "123.5 µs"),
        (2e6, "2.000 ms"),
        (3e9, "3.000 s"),
        (42.0e9, "42.00 s"),
        (1e12, "1000 s"),  # no unit above seconds: no decimals, never an exponent
    ],
)
def test_unit_and_four_significant_digits(ns: float, text: str) -> None:
    assert format_ns(ns) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [(-0.5, "-0.5000 ns"), (-999.0, "-999.0 ns"), (-1_500.0, "-1.500 µs"), (-2e6, "-2.000 ms")],
)
def test_negative_values_keep_the_unit_of_their_magnitude(ns: float, text: str) -> None:
    assert format_ns(ns) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        # Rounding to 4 significant digits carries into the next power of ten (and unit).
        (999.96, "1.000 µs"),
        (999_999.9, "1.000 ms"),
        (9_999.6, "10.00 µs"),
        (99.996, "100.0 ns"),
        (0.99996, "1.000 ns"),
        (-999.96, "-1.000 µs"),
    ],
)
def test_rounding_up_keeps_four_significant_digits(ns: float, text: str) -> None:
    assert format_ns(ns) == text


@pytest.mark.parametrize(
    ("digits", "text"), [(1, "1 µs"), (2, "1.2 µs"), (3, "1.23 µs"), (6, "1.23450 µs")]
)
def test_digits_parameter(digits: int, text: str) -> None:
    assert format_ns(1_234.5, digits=digits) == text


@pytest.mark.parametrize("ns", [0.0, -0.0])
def test_zero(ns: float) -> None:
    assert re.fullmatch(r"-?0(\.0+)? ns", format_ns(ns))


@pytest.mark.parametrize("ns", [math.inf, -math.inf, math.nan])
def test_non_finite_values_do_not_crash(ns: float) -> None:
    text = format_ns(ns)
    assert text.endswith(" ns")
    assert text.split()[0].lstrip("-") in ("inf", "nan")
    assert text.startswith("-") == (ns < 0)


def test_many_magnitudes_have_four_significant_digits() -> None:
    # For every value from 1 ns up to 999 s the mantissa has exactly 4 significant digits
    # and lies in [1, 1000) for the chosen unit.
    scale = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}
    for exponent in range(0, 12):
        for mantissa in (1.0, 1.2345, 3.14159, 5.5, 9.87654):
            ns = mantissa * 10.0**exponent
            number, unit = format_ns(ns).split(" ")
            assert 1.0 <= float(number) < 1000.0, ns
            assert len(number.replace(".", "").lstrip("0")) == 4, (ns, number)
            assert float(number) * scale[unit] == pytest.approx(ns, rel=5e-4)
