"""fastbench.counters.simulation.output: cachegrind's and callgrind's output files parsed into
totals and simulated caches, and the counts and miss rates derived from them (known
numbers, worked by hand). No valgrind needed.
"""

from __future__ import annotations

import pytest

from fastbench.counters.simulation import CacheGeometry, SimulatedCounts, parse_output


CACHEGRIND_OUT = """\
desc: I1 cache:         32768 B, 64 B, 8-way associative
desc: D1 cache:         32768 B, 64 B, direct-mapped
desc: LL cache:         33554432 B, 64 B, 16-way associative
cmd: python -c pass
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim
fl=x.c
fn=main
1 2 3 4 5 6 7 8 9 10 11 12 13 14
summary: 100 2 1 40 5 1 20 3 1 30 4 10 2
"""


def test_parse_cachegrind_output() -> None:
    totals, geometry = parse_output(CACHEGRIND_OUT)
    assert totals["Ir"] == 100 and totals["Bim"] == 2 and len(totals) == 13
    assert geometry == {"I1": CacheGeometry(32768, 8, 64), "D1": CacheGeometry(32768, 1, 64),
                        "LL": CacheGeometry(33554432, 16, 64)}
    r = SimulatedCounts("cachegrind", "cmd", {k: float(v) for k, v in totals.items()},
                        per_call=False, calls=1, totals=totals)
    assert r.derived["l1d_miss_pct"] == pytest.approx(100 * 8 / 60)
    assert r.derived["ll_miss_pct"] == pytest.approx(100 * 3 / 160)
    assert r.derived["branch_miss_pct"] == pytest.approx(100 * 6 / 40)
    assert r["cache-references"] == 2 + 5 + 3
    with pytest.raises(KeyError, match="was not simulated"):
        r["cycles"]


def test_a_miss_rate_outside_0_to_100_is_not_given() -> None:
    # Per-call differences from the start-up baseline: 7 D1 misses of 5 data accesses (the
    # baseline ran more accesses than the call added), and a negative I1 miss count. Neither
    # is a rate; the branch rate, 3 of 12, is.
    events = {"Ir": 50.0, "I1mr": -2.0, "Dr": 4.0, "Dw": 1.0, "D1mr": 6.0, "D1mw": 1.0,
              "Bc": 10.0, "Bi": 2.0, "Bcm": 2.0, "Bim": 1.0}
    r = SimulatedCounts("cachegrind", "cmd", events, per_call=True, calls=10, totals={})
    assert r.derived == {"branch_miss_pct": pytest.approx(25.0)}


def test_parse_callgrind_output_and_omitted_trailing_zeros() -> None:
    totals, geometry = parse_output("version: 1\nevents: Ir Dr\ntotals: 12345\n")
    assert totals == {"Ir": 12345, "Dr": 0} and geometry == {}
    with pytest.raises(ValueError, match="summary"):
        parse_output("events: Ir\n")
