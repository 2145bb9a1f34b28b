"""fastbench.counters.simulation.counts: SimulatedCounts' dict round trip, its text, and the
results-file errors for malformed data. No valgrind needed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fastbench
from fastbench.counters.simulation import CacheGeometry, SimulatedCounts
from fastbench.results import ResultsFileError

KIB = 1024


def test_round_trip_of_a_per_call_result(tmp_path: Path) -> None:
    r = SimulatedCounts("cachegrind", "m:f", {"Ir": 1.5, "D1mr": -0.25}, per_call=True,
                        calls=4, totals={"Ir": 106, "D1mr": 9}, baseline={"Ir": 100, "D1mr": 10},
                        geometry={"D1": CacheGeometry(32 * KIB, 8, 64)}, notes=("n",),
                        valgrind_version="3.19.0", command=("valgrind", "x"))
    assert SimulatedCounts.from_dict(r.to_dict()) == r
    fastbench.save(r, tmp_path / "r.json")
    assert fastbench.load(tmp_path / "r.json") == r
    assert "per call" in str(r) and "D1 32 KiB 8-way 64 B lines" in str(r)


def test_malformed_data_is_a_results_file_error(tmp_path: Path) -> None:
    r = SimulatedCounts("callgrind", "true", {"Ir": 5.0}, per_call=False, calls=1,
                        totals={"Ir": 5})
    path = tmp_path / "r.json"
    fastbench.save(r, path)
    text = path.read_text().replace('"tool": "callgrind"', '"tool": "memcheck"')
    path.write_text(text)
    with pytest.raises(ResultsFileError, match="simulated_counts.*memcheck"):
        fastbench.load(path)
    with pytest.raises(ValueError, match="lacks 'events'"):
        SimulatedCounts.from_dict({"tool": "callgrind", "target": "x"})
