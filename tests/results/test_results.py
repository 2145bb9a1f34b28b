"""Tests for fastbench.results: the versioned JSON files, machine metadata, atomic writes,
load errors, and the pyperf and pytest-benchmark readers.

The foreign-tool fixtures in tests/data were written by the tools themselves (see
tests/data/README.md); expected values are computed here from the same files read with
json, never copied in as literals.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastbench
from fastbench import Measurement, results
from fastbench.memory import CallMemory
from fastbench.results import ResultsFileError

DATA = Path(__file__).parent.parent / "data"
PYPERF_FILES = ["pyperf_timeit.json", "pyperf_calibrated.json.gz", "pyperf_bench_func.json"]
PYTEST_BENCHMARK_FILES = ["pytest_benchmark_json.json", "pytest_benchmark_save_data.json"]
PYTEST_BENCHMARK_NO_DATA = "pytest_benchmark_no_data.json"


def _synthetic(name: str = "synthetic", seed: int = 0, **extra: Any) -> Measurement:
    rng = np.random.default_rng(seed)
    # Awkward floats on purpose: non-terminating binary fractions, a subnormal, the
    # largest finite double; all must come back bit for bit.
    samples = np.concatenate(
        [rng.lognormal(5.0, 0.3, 25), [0.1 + 0.2, 1.0 / 3.0, 5e-324, 1.7976931348623157e308]]
    )
    fields: dict[str, Any] = {
        "samples_ns": samples,
        "loops": 1234,
        "warmup_samples_ns": rng.lognormal(5.5, 0.3, 3),
        "clock": "steady",
        "overhead_ns": 0.1234567890123,
        "overhead_mad_ns": 1e-17,
        "call_floor_ns": 31.0 / 7.0,
        "call_floor_mad_ns": 0.0,
        "call_floor_kind": "python",
        "name": name,
        "calibration_trials": 3,
        "stop_reason": "max_time_s",
        "elapsed_s": 0.0123456789,
    }
    fields.update(extra)
    return Measurement(**fields)


def _assert_same(got: Measurement, want: Measurement) -> None:
    assert isinstance(got, Measurement)
    assert got.samples_ns.dtype == np.float64
    assert got.samples_ns.tobytes() == want.samples_ns.tobytes()
    assert got.warmup_samples_ns.dtype == np.float64
    assert got.warmup_samples_ns.tobytes() == want.warmup_samples_ns.tobytes()
    assert got.to_dict() == want.to_dict()


def _read_raw(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _listdir(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- save / load round trip -------------------------------------------------------------


def test_round_trip_one_measurement_is_exact(tmp_path: Path) -> None:
    m = _synthetic()
    path = tmp_path / "one.json"
    results.save(m, path)
    _assert_same(results.load(path), m)


def test_round_trip_mapping_keeps_keys_and_order(tmp_path: Path) -> None:
    ms = {"zeta": _synthetic("a", 1), "alpha": _synthetic("b", 2), "mid": _synthetic("", 3)}
    path = tmp_path / "many.json"
    results.save(ms, str(path))  # str paths work too
    got = results.load(path)
    assert list(got) == ["zeta", "alpha", "mid"]
    for key, m in ms.items():
        _assert_same(got[key], m)


def test_round_trip_sequence_uses_unique_names(tmp_path: Path) -> None:
    ms = [_synthetic("f", 1), _synthetic("f", 2), _synthetic("", 3), _synthetic("f#2", 4)]
    path = tmp_path / "seq.json"
    results.save(ms, path)
    got = results.load(path)
    assert list(got) == ["f", "f#2", "measurement", "f#2#2"]
    for key, m in zip(got, ms):
        _assert_same(got[key], m)  # the measurement's own name is kept as it was


def test_round_trip_of_a_real_measurement(tmp_path: Path) -> None:
    m = fastbench.measure(sum, range(10), min_time_s=1e-4, repeat=3, name="sum10")
    path = tmp_path / "real.json"
    results.save(m, path)
    _assert_same(results.load(path), m)
    assert list(results.load_any(path)) == ["sum10"]


def test_file_layout(tmp_path: Path) -> None:
    path = tmp_path / "layout.json"
    results.save([_synthetic()], path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert list(doc) == ["schema_version", "kind", "fastbench_version", "created", "machine",
                         "data"]
    assert doc["schema_version"] == results.SCHEMA_VERSION == 2
    assert doc["kind"] == "measurements"
    assert doc["fastbench_version"] == fastbench.__version__
    created = datetime.fromisoformat(doc["created"])
    assert created.utcoffset() == timedelta(0)
    assert doc["machine"]["timestamp"] == doc["created"]
    assert doc["data"]["synthetic"] == _synthetic().to_dict()


def test_load_file_returns_metadata(tmp_path: Path) -> None:
    path = tmp_path / "meta.json"
    results.save(_synthetic(), path)
    loaded = results.load_file(path)
    assert loaded.kind == "measurement"
    assert loaded.schema_version == 2
    assert loaded.fastbench_version == fastbench.__version__
    assert loaded.machine["cpu_model"] == results.machine_metadata()["cpu_model"]
    _assert_same(loaded.obj, _synthetic())


def test_save_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    results.save(_synthetic("old"), path)
    results.save(_synthetic("new", 5), path)
    _assert_same(results.load(path), _synthetic("new", 5))
    assert _listdir(tmp_path) == ["r.json"]


def test_unsupported_objects_are_type_errors(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    with pytest.raises(TypeError, match=r"cannot save a int: supported kinds are "
                                        r"'measurement' \(Measurement\); 'measurements'"):
        results.save(42, path)
    with pytest.raises(TypeError, match="cannot save a str"):
        results.save("not a measurement", path)
    with pytest.raises(TypeError, match="item 'b' is int, not Measurement"):
        results.save({"a": _synthetic(), "b": 2}, path)
    with pytest.raises(TypeError, match="names must be str"):
        results.save({1: _synthetic()}, path)
    with pytest.raises(TypeError, match="item 'measurement' is float, not Measurement"):
        results.save([1.5], path)
    assert _listdir(tmp_path) == []


# -- machine metadata ------------------------------------------------------------------


def test_machine_metadata_fields_and_types() -> None:
    meta = results.machine_metadata()
    assert isinstance(meta["cpu_model"], str) and meta["cpu_model"]
    assert isinstance(meta["logical_cores"], int) and meta["logical_cores"] >= 1
    assert meta["physical_cores"] is None or isinstance(meta["physical_cores"], int)
    assert isinstance(meta["caches"], list)
    for cache in meta["caches"]:
        assert set(cache) == {"level", "kind", "size_bytes", "line_bytes", "shared_by_cpus"}
        assert isinstance(cache["size_bytes"], int)
    assert isinstance(meta["flags"], list) and meta["flags"] == sorted(meta["flags"])
    assert meta["clocksource"] is None or isinstance(meta["clocksource"], str)
    assert [c["name"] for c in meta["noise_checks"]][0] == "clocksource"
    assert all(c["status"] in ("ok", "warn", "unknown") for c in meta["noise_checks"])
    for key in ("python_implementation", "python_version", "platform", "hostname"):
        assert isinstance(meta[key], str) and meta[key], key
    assert meta["numpy_version"] == np.__version__
    blas = meta["blas"]
    assert blas is None or (set(blas) == {"name", "version"}
                            and all(v is None or isinstance(v, str) for v in blas.values()))
    assert meta["fastbench_version"] == fastbench.__version__
    assert datetime.fromisoformat(meta["timestamp"]).utcoffset() == timedelta(0)
    assert meta["git"] is None or set(meta["git"]) == {"commit", "dirty"}
    json.dumps(meta, allow_nan=False)  # plain JSON data


def test_clocksource_matches_sysfs() -> None:
    current = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    if not current.exists():
        pytest.skip("no clocksource in sysfs (not Linux?)")
    assert results.machine_metadata()["clocksource"] == current.read_text().strip()


def test_blas_reported_when_numpy_says() -> None:
    try:
        config = np.show_config(mode="dicts")
    except TypeError:
        pytest.skip("numpy < 1.26 has no show_config(mode='dicts')")
    blas = config.get("Build Dependencies", {}).get("blas", {})
    meta_blas = results.machine_metadata()["blas"]
    assert meta_blas == {"name": blas.get("name"), "version": blas.get("version")}


@pytest.fixture
def git_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A clean environment for git: no inherited repository, no search above tmp_path."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    return tmp_path


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=fastbench", "-c", "user.email=fastbench@example.invalid",
         "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True, text=True, timeout=30,
    ).stdout.strip()  # fmt: skip


def test_git_commit_detected_inside_a_repository(
    git_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_env / "repo"
    (repo / "sub").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    _git(repo, "add", "code.py")
    _git(repo, "commit", "-q", "-m", "init")
    head = _git(repo, "rev-parse", "HEAD")
    monkeypatch.chdir(repo / "sub")  # any directory of the work tree
    assert results.machine_metadata()["git"] == {"commit": head, "dirty": False}
    results.save(_synthetic(), repo / "untracked.json")  # untracked files do not count
    assert results.machine_metadata()["git"] == {"commit": head, "dirty": False}
    (repo / "code.py").write_text("x = 2\n")
    assert results.machine_metadata()["git"] == {"commit": head, "dirty": True}
    assert results.load_file(repo / "untracked.json").machine["git"]["commit"] == head


def test_git_is_none_outside_a_repository(git_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = git_env / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert results.machine_metadata()["git"] is None


def test_git_is_none_without_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no git to run
    assert results.machine_metadata()["git"] is None


# -- atomic writes ---------------------------------------------------------------------


@pytest.fixture
def existing(tmp_path: Path) -> Path:
    path = tmp_path / "kept.json"
    results.save(_synthetic("before"), path)
    return path


def test_nan_is_rejected_and_the_target_kept(existing: Path) -> None:
    before = existing.read_bytes()
    with pytest.raises(ValueError, match=r"kept\.json: data\['overhead_ns'\] = nan"):
        results.save(_synthetic(overhead_ns=float("nan")), existing)
    with pytest.raises(ValueError, match=r"data\['x'\]\['elapsed_s'\] = inf"):
        results.save({"x": _synthetic(elapsed_s=float("inf"))}, existing)
    assert existing.read_bytes() == before
    assert _listdir(existing.parent) == ["kept.json"]


def test_failure_while_serialising_leaves_target_and_no_temp_file(
    existing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = existing.read_bytes()

    def broken_dump(obj: Any, fp: Any, **kwargs: Any) -> None:
        fp.write('{"schema_version": 1, "kind": "meas')  # half a file, then fail
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(json, "dump", broken_dump)
    with pytest.raises(RuntimeError, match="disk on fire"):
        results.save(_synthetic("after"), existing)
    assert existing.read_bytes() == before
    assert _listdir(existing.parent) == ["kept.json"]


def test_failure_of_the_rename_leaves_target_and_no_temp_file(
    existing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = existing.read_bytes()

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("rename refused")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="rename refused"):
        results.save(_synthetic("after"), existing)
    assert existing.read_bytes() == before
    assert _listdir(existing.parent) == ["kept.json"]


def test_new_file_gets_umask_permissions_not_the_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "mode.json"
    umask = os.umask(0o022)
    os.umask(umask)
    results.save(_synthetic(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    path.chmod(0o640)
    results.save(_synthetic(), path)  # an existing file keeps its mode
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_missing_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        results.save(_synthetic(), tmp_path / "no" / "such" / "dir.json")


# -- load errors -----------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "good.json"
    results.save({"a": _synthetic()}, path)
    return path


def _edited(saved: Path, name: str, **changes: Any) -> Path:
    doc = json.loads(saved.read_text(encoding="utf-8"))
    doc.update(changes)
    return _write_json(saved.with_name(name), doc)


def test_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="absent.json"):
        results.load(tmp_path / "absent.json")


def test_truncated_file(saved: Path) -> None:
    cut = saved.with_name("cut.json")
    cut.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    with pytest.raises(ResultsFileError, match=r"cut\.json is not valid JSON \(truncated\?\): "
                                               r".*line \d+ column \d+"):
        results.load(cut)


def test_truncated_gzip_file(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes((DATA / "pyperf_calibrated.json.gz").read_bytes()[:200])
    with pytest.raises(ResultsFileError, match=r"cut\.json\.gz is not a valid gzip file"):
        results.load_any(cut)


def test_garbage_file(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello, world\n")
    with pytest.raises(ResultsFileError, match=r"notes\.txt is not valid JSON"):
        results.load(text)
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ResultsFileError, match=r"blob\.bin is not a JSON text file \(not UTF-8"):
        results.load(binary)


def test_nan_literal_is_not_standard_json(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text('{"schema_version": 1, "kind": "measurement", "data": NaN}')
    with pytest.raises(ResultsFileError, match=r"nan\.json is not valid JSON: NaN is not"):
        results.load(path)


def test_json_array(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "list.json", [1, 2, 3])
    with pytest.raises(ResultsFileError, match=r"list\.json is not a fastbench results file: "
                                               r"it holds a JSON array"):
        results.load(path)


def test_json_object_of_no_known_format(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "other.json", {"hello": "world"})
    with pytest.raises(ResultsFileError, match="without schema_version and kind"):
        results.load(path)
    with pytest.raises(ResultsFileError, match="not a fastbench, pyperf or pytest-benchmark"):
        results.load_any(path)


@pytest.mark.parametrize(
    ("fixture", "tool", "reader"),
    [
        ("pyperf_timeit.json", "pyperf", "load_pyperf"),
        ("pyperf_calibrated.json.gz", "pyperf", "load_pyperf"),
        ("pytest_benchmark_json.json", "pytest-benchmark", "load_pytest_benchmark"),
        ("pytest_benchmark_no_data.json", "pytest-benchmark", "load_pytest_benchmark"),
    ],
)
def test_foreign_file_given_to_load_names_the_reader(fixture: str, tool: str, reader: str) -> None:
    with pytest.raises(ResultsFileError) as info:
        results.load(DATA / fixture)
    message = str(info.value)
    assert fixture in message
    assert f"is a {tool} results file, not a fastbench one" in message
    assert f"fastbench.results.{reader}()" in message


def test_readers_refuse_each_others_files(saved: Path) -> None:
    with pytest.raises(ResultsFileError, match=r"pytest_benchmark_json\.json is a "
                                               r"pytest-benchmark results file, not a pyperf"):
        results.load_pyperf(DATA / "pytest_benchmark_json.json")
    with pytest.raises(ResultsFileError, match=r"pyperf_timeit\.json is a pyperf results "
                                               r"file, not a pytest-benchmark one"):
        results.load_pytest_benchmark(DATA / "pyperf_timeit.json")
    with pytest.raises(ResultsFileError, match=r"good\.json is a fastbench results file, "
                                               r"not a pyperf one: .*results\.load\(\)"):
        results.load_pyperf(saved)


def test_other_schema_version(saved: Path) -> None:
    path = _edited(saved, "v7.json", schema_version=7, fastbench_version="9.0")
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    assert str(info.value) == (
        f"{path} was written by schema version 7 (fastbench 9.0); this fastbench reads "
        "versions 1 to 2; upgrade fastbench to read it"
    )
    for bad in ("1", 1.5, True, None, 0, -1):
        with pytest.raises(ResultsFileError, match="schema version .*reads versions 1 to 2$"):
            results.load(_edited(saved, "bad.json", schema_version=bad))


def test_version_1_file_still_loads(tmp_path: Path) -> None:
    # What fastbench wrote before memory existed: schema 1, measurement data without "memory".
    data = _synthetic("old").to_dict()
    del data["memory"]
    doc = {"schema_version": 1, "kind": "measurement", "fastbench_version": "0.1.0",
           "created": "2024-01-02T03:04:05+00:00", "machine": {"cpu_model": "x"}, "data": data}
    path = _write_json(tmp_path / "v1.json", doc)
    loaded = results.load_file(path)
    assert loaded.schema_version == 1
    assert loaded.obj.memory is None
    _assert_same(loaded.obj, _synthetic("old"))
    assert list(results.load_any(path)) == ["old"]


def test_round_trip_keeps_memory(tmp_path: Path) -> None:
    memory = CallMemory(peak_increase_bytes=(41_943_040, 41_947_136, 41_938_944),
                        python_peak_bytes=(41_943_184, 41_943_200, 41_943_184),
                        cuda_peak_bytes=None, method="VmHWM after clear_refs", exact=True,
                        warmup_calls=1)
    m = _synthetic("mem", memory=memory)
    path = tmp_path / "mem.json"
    results.save(m, path)
    got = results.load(path)
    assert got.memory == memory
    _assert_same(got, m)
    assert _read_raw(path)["data"]["memory"]["peak_increase_bytes"] == [41_943_040, 41_947_136,
                                                                         41_938_944]


def test_unknown_kind(saved: Path) -> None:
    path = _edited(saved, "kind.json", kind="frobnicator")
    with pytest.raises(ResultsFileError, match=r"kind\.json holds kind 'frobnicator', which this "
                                               r"fastbench cannot read \(known kinds: "
                                               r"'measurement', 'measurements'"):
        results.load(path)


def test_missing_data(saved: Path) -> None:
    doc = json.loads(saved.read_text(encoding="utf-8"))
    del doc["data"]
    path = _write_json(saved.with_name("nodata.json"), doc)
    with pytest.raises(ResultsFileError, match=r"nodata\.json is not a complete fastbench "
                                               r"results file: no 'data'"):
        results.load(path)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"a": {"samples_ns": [], "loops": 1, "clock": "steady", "overhead_ns": 0.0,
                "call_floor_ns": 0.0}}, "measurement 'a': Measurement samples_ns must be"),
        ({"a": {"loops": 1}}, "measurement 'a': Measurement data lacks samples_ns"),
        ({"a": [1, 2]}, "measurement 'a' is a JSON array, not an object"),
        ([1, 2], "expected an object mapping names to measurements, got a JSON array"),
        ({"a": {"samples_ns": [1.0], "loops": "many", "clock": "steady", "overhead_ns": 0.0,
                "call_floor_ns": 0.0}}, "measurement 'a': invalid literal"),
    ],
)
def test_malformed_data(saved: Path, data: Any, problem: str) -> None:
    path = _edited(saved, "malformed.json", data=data)
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    assert str(info.value).startswith(f"{path} has malformed 'measurements' data: {problem}")


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
    raw = _read_raw(DATA / fixture)
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
    timeit = _read_raw(DATA / "pyperf_timeit.json")
    assert "loops" in timeit["metadata"] and "name" in timeit["metadata"]
    funcs = _read_raw(DATA / "pyperf_bench_func.json")
    assert [b["metadata"].get("inner_loops") for b in funcs["benchmarks"]] == [4, None]
    got = results.load_pyperf(DATA / "pyperf_bench_func.json")
    assert got["sum_tuple"].loops == 4 * funcs["metadata"]["loops"]
    assert got["str_join"].loops == funcs["metadata"]["loops"]
    calibrated = _read_raw(DATA / "pyperf_calibrated.json.gz")
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
    raw = _read_raw(DATA / "pyperf_timeit.json")
    raw["benchmarks"][0]["metadata"] = {"name": "renamed", "loops": 10}
    raw["benchmarks"][0]["runs"][1]["metadata"]["loops"] = 5
    got = results.load_pyperf(_write_json(tmp_path / "meta.json", raw))
    m = got["renamed"]
    values = [raw["benchmarks"][0]["runs"][i]["values"] for i in (0, 1)]
    assert m.loops == 5  # the smallest of the runs' 10 and 5
    assert m.elapsed_s == pytest.approx(sum(values[0]) * 10 + sum(values[1]) * 5, rel=1e-12)


def test_pyperf_memory_benchmark_is_refused(tmp_path: Path) -> None:
    raw = _read_raw(DATA / "pyperf_timeit.json")
    raw["metadata"]["unit"] = "byte"
    path = _write_json(tmp_path / "mem.json", raw)
    with pytest.raises(ResultsFileError, match=r"mem\.json is not a valid pyperf file: "
                                               r"benchmark 'timeit' measures 'byte'"):
        results.load_pyperf(path)


def test_pyperf_old_format_is_refused(tmp_path: Path) -> None:
    raw = _read_raw(DATA / "pyperf_timeit.json")
    raw["version"] = 6
    path = _write_json(tmp_path / "old.json", raw)
    with pytest.raises(ResultsFileError, match=r"old\.json uses pyperf JSON format 6.*"
                                               r"pyperf convert"):
        results.load_pyperf(path)


def test_pyperf_only_calibration_runs(tmp_path: Path) -> None:
    raw = _read_raw(DATA / "pyperf_calibrated.json.gz")
    raw["benchmarks"][0]["runs"] = raw["benchmarks"][0]["runs"][:1]
    path = _write_json(tmp_path / "calib.json", raw)
    with pytest.raises(ResultsFileError, match="'sorted_list' has no values"):
        results.load_pyperf(path)


# -- pytest-benchmark -------------------------------------------------------------------


@pytest.mark.parametrize("fixture", PYTEST_BENCHMARK_FILES)
def test_pytest_benchmark_reader_against_raw_json(fixture: str) -> None:
    raw = _read_raw(DATA / fixture)
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


def test_pytest_benchmark_without_data_says_how_to_get_it() -> None:
    raw = _read_raw(DATA / PYTEST_BENCHMARK_NO_DATA)
    assert all("data" not in b["stats"] for b in raw["benchmarks"])
    for reader in (results.load_pytest_benchmark, results.load_any):
        with pytest.raises(ResultsFileError) as info:
            reader(DATA / PYTEST_BENCHMARK_NO_DATA)
        message = str(info.value)
        assert PYTEST_BENCHMARK_NO_DATA in message
        assert "no per-round data" in message
        assert "--benchmark-save-data" in message


def test_pytest_benchmark_repeated_names_use_fullname(tmp_path: Path) -> None:
    raw = _read_raw(DATA / "pytest_benchmark_json.json")
    raw["benchmarks"][0]["name"] = raw["benchmarks"][2]["name"]
    got = results.load_pytest_benchmark(_write_json(tmp_path / "dup.json", raw))
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
        _assert_same(got[name], m)


def test_load_any_reads_fastbench(tmp_path: Path) -> None:
    results.save(_synthetic("named"), tmp_path / "one.json")
    results.save(_synthetic(""), tmp_path / "anon.json")
    results.save([_synthetic("a"), _synthetic("b")], tmp_path / "two.json")
    assert list(results.load_any(tmp_path / "one.json")) == ["named"]
    assert list(results.load_any(tmp_path / "anon.json")) == ["measurement"]
    _assert_same(results.load_any(tmp_path / "anon.json")["measurement"], _synthetic(""))
    assert list(results.load_any(tmp_path / "two.json")) == ["a", "b"]


def test_load_any_reports_fastbench_errors(saved: Path) -> None:
    with pytest.raises(ResultsFileError, match="schema version 3"):
        results.load_any(_edited(saved, "v3.json", schema_version=3))


# -- register_kind ---------------------------------------------------------------------


class Toy:
    """A stand-in for a result type registered by another module."""

    def __init__(self, label: str, ratio: float) -> None:
        self.label = label
        self.ratio = ratio

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "ratio": self.ratio}

    @classmethod
    def from_dict(cls, data: Any) -> Toy:
        if not isinstance(data.get("ratio"), float):
            raise ValueError("Toy ratio must be a float")
        return cls(str(data["label"]), data["ratio"])


@pytest.fixture
def toy_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register Toy on a copy of the registry, so other tests never see it."""
    monkeypatch.setattr(results, "_KINDS", dict(results._KINDS))
    results.register_kind("toy", Toy, Toy.to_dict, Toy.from_dict)


@pytest.mark.usefixtures("toy_kind")
def test_registered_kind_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "toy.json"
    results.save(Toy("x", 0.1 + 0.2), path)
    assert json.loads(path.read_text(encoding="utf-8"))["kind"] == "toy"
    got = results.load(path)
    assert isinstance(got, Toy)
    assert (got.label, got.ratio) == ("x", 0.1 + 0.2)
    with pytest.raises(TypeError, match="'toy' \\(Toy\\)"):
        results.save(object(), path)
    with pytest.raises(ResultsFileError, match=r"toy\.json holds a 'toy', not measurements"):
        results.load_any(path)


@pytest.mark.usefixtures("toy_kind")
def test_registered_kind_malformed_data(tmp_path: Path) -> None:
    path = tmp_path / "toy.json"
    results.save(Toy("x", 2.0), path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["data"]["ratio"] = "fast"
    _write_json(path, doc)
    with pytest.raises(ResultsFileError, match=r"toy\.json has malformed 'toy' data: "
                                               r"Toy ratio must be a float"):
        results.load(path)


@pytest.mark.usefixtures("toy_kind")
def test_register_kind_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="'toy' is already registered"):
        results.register_kind("toy", Toy, Toy.to_dict, Toy.from_dict)
    results.register_kind("toy", Toy, Toy.to_dict, Toy.from_dict, replace=True)
    with pytest.raises(ValueError, match="must not be empty"):
        results.register_kind("", Toy, Toy.to_dict, Toy.from_dict)
    with pytest.raises(TypeError, match="cls must be a class"):
        results.register_kind("t2", Toy("a", 1.0), Toy.to_dict, Toy.from_dict)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be callable"):
        results.register_kind("t2", Toy, "to_dict", Toy.from_dict)  # type: ignore[arg-type]
