"""The run-to-run variation kept per machine: stored and found again under this machine's
fingerprint, overridden by FASTBENCH_RUN_VARIATION, ignored when it is another machine's,
and carried by the measurements taken here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fastbench
from fastbench.machine import (RunVariation, fingerprint, known_run_variation,
                               store_run_variation, variation_path)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FASTBENCH_RUN_VARIATION", raising=False)
    return tmp_path


def test_unknown_until_stored(cache: Path) -> None:
    assert known_run_variation() is None
    rv = RunVariation(rel_sd=0.031, processes=10, run_medians_ns=(1.0, 2.0),
                      fingerprint=fingerprint())
    path = store_run_variation(rv)
    assert path == variation_path() and path.parent == cache
    got = known_run_variation()
    assert got == rv and got.df == 9


def test_another_machines_value_is_not_used(cache: Path) -> None:
    path = variation_path()
    path.write_text(json.dumps(RunVariation(0.02, 10, fingerprint="0" * 16).to_dict()))
    assert known_run_variation() is None


def test_environment_gives_it_by_hand(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FASTBENCH_RUN_VARIATION", "0.04")
    rv = known_run_variation()
    assert rv is not None and rv.rel_sd == 0.04 and rv.df is None and rv.source == "environment"
    monkeypatch.setenv("FASTBENCH_RUN_VARIATION", "4%")
    with pytest.raises(ValueError, match="FASTBENCH_RUN_VARIATION must be a fraction"):
        known_run_variation()


def test_measurements_carry_the_machines_variation(cache: Path) -> None:
    store_run_variation(RunVariation(0.027, 6, fingerprint=fingerprint()))
    m = fastbench.measure(sum, range(10), repeat=10, duration_s=None)
    assert m.run_variation == 0.027 and m.run_variation_df == 5
    assert "runs here vary by about 2.7%" in str(m)


@pytest.mark.parametrize("data", [{}, {"rel_sd": -0.1}, {"rel_sd": "x"},
                                  {"rel_sd": 0.1, "processes": -2}])
def test_bad_records_are_refused(data: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RunVariation.from_dict(data)
