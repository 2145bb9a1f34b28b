"""Tests for fastbench.units: format_ns (unit choice, significant digits, signs, non-finite
values), format_bytes (binary units, exact and approximate, signs) and format_count (SI
prefixes), against values worked out by hand.
"""

from __future__ import annotations

import math
import re

import pytest

from fastbench.units import format_bytes, format_count, format_ns


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


# -- format_bytes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (768, "768 B"),
        (1023, "1023 B"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),                 # 1.5 x 1024
        (2_621_440, "2.5 MiB"),            # 2.5 x 1024²
        (100 * 1024**2, "100 MiB"),
        (104_438_170, "99.6 MiB"),         # 99.6 x 1024² = 104,438,169.6
        (3 * 1024**3, "3 GiB"),
        (5 * 1024**4, "5120 GiB"),         # no unit above GiB
        (1023.6, "1 KiB"),                 # rounded to whole bytes first
    ],
)
def test_format_bytes_takes_the_largest_unit(size: float, text: str) -> None:
    assert format_bytes(size) == text


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (768, "768 B"),
        (1536, "1536 B"),                  # not a whole KiB
        (1024, "1 KiB"),
        (1_572_864, "1536 KiB"),           # 1.5 MiB: a whole number of KiB only
        (2_621_440, "2560 KiB"),
        (3 * 1024**2, "3 MiB"),
        (32 * 1024**3, "32 GiB"),
        (0, "0 B"),
    ],
)
def test_format_bytes_exact_takes_only_units_that_divide(size: int, text: str) -> None:
    assert format_bytes(size, exact=True) == text


@pytest.mark.parametrize(
    ("size", "sign", "text"),
    [
        (1024, True, "+1 KiB"),
        (1536, True, "+1.5 KiB"),
        (0, True, "0 B"),                  # zero has no sign
        (-1536, False, "-1.5 KiB"),
        (-1536, True, "-1.5 KiB"),
        (-100 * 1024**2, False, "-100 MiB"),
        (-1, False, "-1 B"),
        (1024, False, "1 KiB"),
    ],
)
def test_format_bytes_signs(size: int, sign: bool, text: str) -> None:
    assert format_bytes(size, sign) == text


def test_format_bytes_exact_negative_and_signed() -> None:
    assert format_bytes(-1_572_864, exact=True) == "-1536 KiB"
    assert format_bytes(2048, True, exact=True) == "+2 KiB"


@pytest.mark.parametrize(("size", "text"), [(math.nan, "nan B"), (math.inf, "inf B"),
                                            (-math.inf, "-inf B")])
def test_format_bytes_non_finite(size: float, text: str) -> None:
    assert format_bytes(size) == text
    assert format_bytes(size, exact=True) == text


# -- format_count --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (4.1e9, "FLOPs", "4.10 GFLOPs"),
        (0, "", "0"),
        (0, "B", "0 B"),
        (7, "", "7"),
        (999, "MACs", "999 MACs"),
        (0.5, "", "0.50"),                  # not whole: two decimals
        (999.5, "B", "999.50 B"),
        (1000, "", "1.00 k"),
        (1500, "B", "1.50 kB"),
        (2.5e6, "MACs", "2.50 MMACs"),
        (3.2e12, "FLOP/s", "3.20 TFLOP/s"),
        (1e15, "", "1.00 P"),
        (3e18, "", "3000.00 P"),           # no prefix above peta
        (-2e6, "B", "-2.00 MB"),
        (-7, "", "-7"),
    ],
)
def test_format_count_si_prefixes(value: float, unit: str, text: str) -> None:
    assert format_count(value, unit) == text


@pytest.mark.parametrize(("digits", "text"), [(1, "1 M"), (2, "1.2 M"), (4, "1.235 M")])
def test_format_count_digits(digits: int, text: str) -> None:
    assert format_count(1_234_567, digits=digits) == text


@pytest.mark.parametrize(("value", "unit", "text"),
                         [(math.nan, "", "nan"), (math.nan, "B", "nan B"),
                          (math.inf, "FLOPs", "inf FLOPs"), (-math.inf, "", "-inf")])
def test_format_count_non_finite(value: float, unit: str, text: str) -> None:
    assert format_count(value, unit) == text
