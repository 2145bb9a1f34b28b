"""Tests for fastbench.results.importers: the pyperf and pytest-benchmark readers and
load_any.

The foreign-tool fixtures in tests/data were written by the tools themselves (see
tests/data/README.md); expected values are computed here from the same files read with
json, never copied in as literals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _results_helpers import (DATA, PYPERF_FILES, PYTEST_BENCHMARK_FILES,
                              PYTEST_BENCHMARK_NO_DATA, assert_same, edited, read_raw,
                              synthetic, write_json)
from fastbench import results
from fastbench.results import ResultsFileError

# -- pyperf ----------------------------------------------------------------------------


def _pyperf_expected(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per benchmark name: values, warmups, total loops and calibration warmups, from JSON."""
    out: dict[str, dict[str, Any]] = {}
    for bench in raw["benchmarks"]:
        meta = {**raw.get("metadata", {}), **bench.get("metadata", {})}
        entry: dict[str, Any] = {"values": [], "warmups": [], "loops": set(), "calib": 0}
        for run in bench["runs"]:
            run_meta = {**meta, **run.get("metadata", {})}
            if "values" not in run:
                entry["calib"] += len(run.get("warmups", []))
                continue
            entry["values"] += run["values"]
            entry["warmups"] += [w[1] for w in run.get("warmups", [])]
            entry["loops"].add(run_meta.get("loops", 1) * run_meta.get("inner_loops", 1))
        out[meta["name"]] = entry
    return out


@pytest.mark.parametrize("fixture", PYPERF_FILES)
def test_pyperf_reader_against_raw_json(fixture: str) -> None:
    raw = read_raw(DATA / fixture)
    got = results.load_pyperf(DATA / fixture)
    expected = _pyperf_expected(raw)
    assert list(got) == list(expected)
    for name, want in expected.items():
        m = got[name]
        assert m.name == name
        assert m.n == len(want["values"])
        np.testing.assert_array_equal(m.samples_ns, np.asarray(want["values"]) * 1e9)
        np.testing.assert_array_equal(m.warmup_samples_ns, np.asarray(want["warmups"]) * 1e9)
        assert {m.loops} == want["loops"]
        assert m.calibration_trials == want["calib"]
        assert m.clock == "pyperf:perf_counter"
        assert (m.overhead_ns, m.call_floor_ns, m.call_floor_kind) == (0.0, 0.0, "unknown")
        assert m.elapsed_s == pytest.approx(sum(want["values"]) * m.loops, rel=1e-12)


def test_pyperf_fixtures_cover_the_cases() -> None:
    """Metadata at file level, inner_loops at benchmark level, calibration runs, gzip."""
    timeit = read_raw(DATA / "pyperf_timeit.json")
    assert "loops" in timeit["metadata"] and "name" in timeit["metadata"]
    funcs = read_raw(DATA / "pyperf_bench_func.json")
    assert [b["metadata"].get("inner_loops") for b in funcs["benchmarks"]] == [4, None]
    got = results.load_pyperf(DATA / "pyperf_bench_func.json")
    assert got["sum_tuple"].loops == 4 * funcs["metadata"]["loops"]
    assert got["str_join"].loops == funcs["metadata"]["loops"]
    calibrated = read_raw(DATA / "pyperf_calibrated.json.gz")
    runs = calibrated["benchmarks"][0]["runs"]
    assert "values" not in runs[0] and "calibrate_loops" in runs[0]["metadata"]
    assert results.load_pyperf(DATA / "pyperf_calibrated.json.gz")["sorted_list"].n == sum(
        len(r["values"]) for r in runs[1:]
    )


@pytest.mark.parametrize("fixture", PYPERF_FILES)
def test_pyperf_reader_agrees_with_pyperf(fixture: str) -> None:
    pyperf = pytest.importorskip("pyperf")
    suite = pyperf.BenchmarkSuite.load(str(DATA / fixture))
    got = results.load_pyperf(DATA / fixture)
    assert list(got) == suite.get_benchmark_names()
    for bench in suite.get_benchmarks():
        m = got[bench.get_name()]
        np.testing.assert_allclose(m.samples_ns, np.asarray(bench.get_values()) * 1e9, rtol=0)
        value_runs = [run for run in bench.get_runs() if run.values]
        assert m.loops == value_runs[0].get_total_loops()
        assert m.warmup_samples_ns.size == sum(len(run.warmups) for run in value_runs)


def test_pyperf_run_metadata_overrides_benchmark_and_file(tmp_path: Path) -> None:
    raw = read_raw(DATA / "pyperf_timeit.json")
    raw["benchmarks"][0]["metadata"] = {"name": "renamed", "loops": 10}
    raw["benchmarks"][0]["runs"][1]["metadata"]["loops"] = 5
    got = results.load_pyperf(write_json(tmp_path / "meta.json", raw))
    m = got["renamed"]
    values = [raw["benchmarks"][0]["runs"][i]["values"] for i in (0, 1)]
    assert m.loops == 5  # the smallest of the runs' 10 and 5
    assert m.elapsed_s == pytest.approx(sum(values[0]) * 10 + sum(values[1]) * 5, rel=1e-12)


def test_pyperf_memory_benchmark_is_refused(tmp_path: Path) -> None:
    raw = read_raw(DATA / "pyperf_timeit.json")
    raw["metadata"]["unit"] = "byte"
    path = write_json(tmp_path / "mem.json", raw)
    with pytest.raises(ResultsFileError, match=r"mem\.json is not a valid pyperf file: "
                                               r"benchmark 'timeit' measures 'byte'"):
        results.load_pyperf(path)


def test_pyperf_old_format_is_refused(tmp_path: Path) -> None:
    raw = read_raw(DATA / "pyperf_timeit.json")
    raw["version"] = 6
    path = write_json(tmp_path / "old.json", raw)
    with pytest.raises(ResultsFileError, match=r"old\.json uses pyperf JSON format 6.*"
                                               r"pyperf convert"):
        results.load_pyperf(path)


def test_pyperf_only_calibration_runs(tmp_path: Path) -> None:
    raw = read_raw(DATA / "pyperf_calibrated.json.gz")
    raw["benchmarks"][0]["runs"] = raw["benchmarks"][0]["runs"][:1]
    path = write_json(tmp_path / "calib.json", raw)
    with pytest.raises(ResultsFileError, match="'sorted_list' has no values"):
        results.load_pyperf(path)


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        ("values", -2.0e-7, "benchmark 'timeit', run #1: values[1] must be a non-negative "
                            "finite number, got -2e-07"),
        ("values", "fast", "benchmark 'timeit', run #1: values[1] must be a non-negative "
                           "finite number, got 'fast'"),
        ("values", 1e305, "benchmark 'timeit', run #1: values[1] is too large a time, "
                          "got 1e+305 s"),
        ("warmups", -1.0, "benchmark 'timeit', run #1: warmup values[0] must be a "
                          "non-negative finite number, got -1.0"),
        ("loops", 2.5, "benchmark 'timeit', run #1: loops must be a positive integer, "
                       "got 2.5"),
        ("loops", 0, "benchmark 'timeit', run #1: loops must be a positive integer, got 0"),
        ("metadata", [1], "benchmark 'timeit', run #1: metadata must be an object, got a "
                          "JSON array"),
    ],
)
def test_pyperf_impossible_runs_are_refused(tmp_path: Path, where: str, value: Any,
                                            problem: str) -> None:
    raw = read_raw(DATA / "pyperf_timeit.json")
    run = raw["benchmarks"][0]["runs"][1]
    if where == "values":
        run["values"][1] = value
    elif where == "warmups":
        run["warmups"][0][1] = value
    elif where == "loops":
        run["metadata"]["loops"] = value
    else:
        run["metadata"] = value
    path = write_json(tmp_path / "bad.json", raw)
    for reader in (results.load_pyperf, results.load_any):
        with pytest.raises(ResultsFileError) as info:
            reader(path)
        assert str(info.value) == f"{path} is not a valid pyperf file: {problem}"


# -- pytest-benchmark -------------------------------------------------------------------


@pytest.mark.parametrize("fixture", PYTEST_BENCHMARK_FILES)
def test_pytest_benchmark_reader_against_raw_json(fixture: str) -> None:
    raw = read_raw(DATA / fixture)
    got = results.load_pytest_benchmark(DATA / fixture)
    assert list(got) == [b["name"] for b in raw["benchmarks"]]
    for bench in raw["benchmarks"]:
        m, stats = got[bench["name"]], bench["stats"]
        assert m.name == bench["name"]
        assert m.n == stats["rounds"] == len(stats["data"])
        np.testing.assert_array_equal(m.samples_ns, np.asarray(stats["data"]) * 1e9)
        assert m.loops == stats["iterations"]
        assert m.min_ns == pytest.approx(stats["min"] * 1e9, rel=1e-12)
        assert m.median_ns == pytest.approx(stats["median"] * 1e9, rel=1e-12)
        assert m.warmup_samples_ns.size == 0
        assert m.clock == f"pytest-benchmark:{bench['options']['timer']}"
        assert (m.overhead_ns, m.call_floor_ns, m.call_floor_kind) == (0.0, 0.0, "unknown")
        assert m.elapsed_s == pytest.approx(stats["total"] * stats["iterations"], rel=1e-12)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("data", -1e-6, "stats.data[2] must be a non-negative finite number, got -1e-06"),
        ("data", None, "stats.data[2] must be a non-negative finite number, got null"),
        ("iterations", 0, "iterations must be a positive integer, got 0"),
        ("iterations", 1.5, "iterations must be a positive integer, got 1.5"),
    ],
)
def test_pytest_benchmark_impossible_rounds_are_refused(tmp_path: Path, field: str, value: Any,
                                                        problem: str) -> None:
    raw = read_raw(DATA / "pytest_benchmark_json.json")
    bench = raw["benchmarks"][1]
    if field == "data":
        bench["stats"]["data"][2] = value
    else:
        bench["stats"][field] = value
    path = write_json(tmp_path / "bad.json", raw)
    for reader in (results.load_pytest_benchmark, results.load_any):
        with pytest.raises(ResultsFileError) as info:
            reader(path)
        assert str(info.value) == (f"{path} is not a valid pytest-benchmark file: "
                                   f"benchmark {bench['name']!r}: {problem}")


def test_pytest_benchmark_without_data_says_how_to_get_it() -> None:
    raw = read_raw(DATA / PYTEST_BENCHMARK_NO_DATA)
    assert all("data" not in b["stats"] for b in raw["benchmarks"])
    for reader in (results.load_pytest_benchmark, results.load_any):
        with pytest.raises(ResultsFileError) as info:
            reader(DATA / PYTEST_BENCHMARK_NO_DATA)
        message = str(info.value)
        assert PYTEST_BENCHMARK_NO_DATA in message
        assert "no per-round data" in message
        assert "--benchmark-save-data" in message


def test_pytest_benchmark_repeated_names_use_fullname(tmp_path: Path) -> None:
    raw = read_raw(DATA / "pytest_benchmark_json.json")
    raw["benchmarks"][0]["name"] = raw["benchmarks"][2]["name"]
    got = results.load_pytest_benchmark(write_json(tmp_path / "dup.json", raw))
    fullnames = [b["fullname"] for b in raw["benchmarks"]]
    assert list(got) == [fullnames[0], raw["benchmarks"][1]["name"], fullnames[2]]


# -- load_any --------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", PYPERF_FILES)
def test_load_any_reads_pyperf(fixture: str) -> None:
    assert list(results.load_any(DATA / fixture)) == list(results.load_pyperf(DATA / fixture))


@pytest.mark.parametrize("fixture", PYTEST_BENCHMARK_FILES)
def test_load_any_reads_pytest_benchmark(fixture: str) -> None:
    got = results.load_any(DATA / fixture)
    for name, m in results.load_pytest_benchmark(DATA / fixture).items():
        assert_same(got[name], m)


def test_load_any_reads_fastbench(tmp_path: Path) -> None:
    results.save(synthetic("named"), tmp_path / "one.json")
    results.save(synthetic(""), tmp_path / "anon.json")
    results.save([synthetic("a"), synthetic("b")], tmp_path / "two.json")
    assert list(results.load_any(tmp_path / "one.json")) == ["named"]
    assert list(results.load_any(tmp_path / "anon.json")) == ["measurement"]
    assert_same(results.load_any(tmp_path / "anon.json")["measurement"], synthetic(""))
    assert list(results.load_any(tmp_path / "two.json")) == ["a", "b"]


def test_load_any_reports_fastbench_errors(saved: Path) -> None:
    with pytest.raises(ResultsFileError, match="schema version 4"):
        results.load_any(edited(saved, "v4.json", schema_version=4))
