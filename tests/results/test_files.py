"""Tests for fastbench.results.files: the versioned JSON files (round trips, layout, the
machine metadata stored in them), atomic writes (read-only targets, symbolic links, what a
killed save leaves) and load errors (size and nesting limits).
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import stat
import subprocess
import sys
import time
import tracemalloc
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastbench
from _results_helpers import (BUILDERS, DATA, assert_same, edited, listdir, read_raw,
                              synthetic, write_json)
from fastbench import results
from fastbench.memory import CallMemory
from fastbench.results import ResultsFileError, files

# -- save / load round trip -------------------------------------------------------------


def test_round_trip_one_measurement_is_exact(tmp_path: Path) -> None:
    m = synthetic()
    path = tmp_path / "one.json"
    results.save(m, path)
    assert_same(results.load(path), m)


def test_round_trip_mapping_keeps_keys_and_order(tmp_path: Path) -> None:
    ms = {"zeta": synthetic("a", 1), "alpha": synthetic("b", 2), "mid": synthetic("", 3)}
    path = tmp_path / "many.json"
    results.save(ms, str(path))  # str paths work too
    got = results.load(path)
    assert list(got) == ["zeta", "alpha", "mid"]
    for key, m in ms.items():
        assert_same(got[key], m)


def test_round_trip_sequence_uses_unique_names(tmp_path: Path) -> None:
    ms = [synthetic("f", 1), synthetic("f", 2), synthetic("", 3), synthetic("f#2", 4)]
    path = tmp_path / "seq.json"
    results.save(ms, path)
    got = results.load(path)
    assert list(got) == ["f", "f#2", "measurement", "f#2#2"]
    for key, m in zip(got, ms):
        assert_same(got[key], m)  # the measurement's own name is kept as it was


def test_round_trip_of_a_real_measurement(tmp_path: Path) -> None:
    m = fastbench.measure(sum, range(10), min_time_s=1e-4, repeat=3, name="sum10")
    path = tmp_path / "real.json"
    results.save(m, path)
    assert_same(results.load(path), m)
    assert list(results.load_any(path)) == ["sum10"]


def test_file_layout(tmp_path: Path) -> None:
    path = tmp_path / "layout.json"
    results.save([synthetic()], path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert list(doc) == ["schema_version", "kind", "fastbench_version", "created", "machine",
                         "data"]
    assert doc["schema_version"] == results.SCHEMA_VERSION == 3
    assert doc["kind"] == "measurements"
    assert doc["fastbench_version"] == fastbench.__version__
    created = datetime.fromisoformat(doc["created"])
    assert created.utcoffset() == timedelta(0)
    assert doc["machine"]["timestamp"] == doc["created"]
    assert doc["data"]["synthetic"] == synthetic().to_dict()


def test_load_file_returns_metadata(tmp_path: Path) -> None:
    path = tmp_path / "meta.json"
    results.save(synthetic(), path)
    loaded = results.load_file(path)
    assert loaded.kind == "measurement"
    assert loaded.schema_version == 3
    assert loaded.fastbench_version == fastbench.__version__
    assert loaded.machine["cpu_model"] == results.machine_metadata()["cpu_model"]
    assert_same(loaded.obj, synthetic())


def test_save_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    results.save(synthetic("old"), path)
    results.save(synthetic("new", 5), path)
    assert_same(results.load(path), synthetic("new", 5))
    assert listdir(tmp_path) == ["r.json"]


def test_unsupported_objects_are_type_errors(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    with pytest.raises(TypeError, match=r"cannot save a int: supported kinds are "
                                        r"'measurement' \(Measurement\); 'measurements'"):
        results.save(42, path)
    with pytest.raises(TypeError, match="cannot save a str"):
        results.save("not a measurement", path)
    with pytest.raises(TypeError, match="item 'b' is int, not Measurement"):
        results.save({"a": synthetic(), "b": 2}, path)
    with pytest.raises(TypeError, match="names must be str"):
        results.save({1: synthetic()}, path)
    with pytest.raises(TypeError, match="item 'measurement' is float, not Measurement"):
        results.save([1.5], path)
    assert listdir(tmp_path) == []


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
    results.save(synthetic(), repo / "untracked.json")  # untracked files do not count
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
    results.save(synthetic("before"), path)
    return path


def test_nan_is_rejected_and_the_target_kept(existing: Path) -> None:
    before = existing.read_bytes()
    with pytest.raises(ValueError, match=r"kept\.json: data\['overhead_ns'\] = nan"):
        results.save(synthetic(overhead_ns=float("nan")), existing)
    with pytest.raises(ValueError, match=r"data\['x'\]\['elapsed_s'\] = inf"):
        results.save({"x": synthetic(elapsed_s=float("inf"))}, existing)
    assert existing.read_bytes() == before
    assert listdir(existing.parent) == ["kept.json"]


def test_failure_while_serialising_leaves_target_and_no_temp_file(
    existing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = existing.read_bytes()

    def broken_dump(obj: Any, fp: Any, **kwargs: Any) -> None:
        fp.write('{"schema_version": 1, "kind": "meas')  # half a file, then fail
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(json, "dump", broken_dump)
    with pytest.raises(RuntimeError, match="disk on fire"):
        results.save(synthetic("after"), existing)
    assert existing.read_bytes() == before
    assert listdir(existing.parent) == ["kept.json"]


def test_failure_of_the_rename_leaves_target_and_no_temp_file(
    existing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = existing.read_bytes()

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("rename refused")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="rename refused"):
        results.save(synthetic("after"), existing)
    assert existing.read_bytes() == before
    assert listdir(existing.parent) == ["kept.json"]


def test_new_file_gets_umask_permissions_not_the_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "mode.json"
    umask = os.umask(0o022)
    os.umask(umask)
    results.save(synthetic(), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    path.chmod(0o640)
    results.save(synthetic(), path)  # an existing file keeps its mode
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_missing_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        results.save(synthetic(), tmp_path / "no" / "such" / "dir.json")


# -- load errors -----------------------------------------------------------------------


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
    path = write_json(tmp_path / "list.json", [1, 2, 3])
    with pytest.raises(ResultsFileError, match=r"list\.json is not a fastbench results file: "
                                               r"it holds a JSON array"):
        results.load(path)


def test_json_object_of_no_known_format(tmp_path: Path) -> None:
    path = write_json(tmp_path / "other.json", {"hello": "world"})
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
    path = edited(saved, "v7.json", schema_version=7, fastbench_version="9.0")
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    assert str(info.value) == (
        f"{path} was written by schema version 7 (fastbench 9.0); this fastbench reads "
        "versions 1 to 3; upgrade fastbench to read it"
    )
    for bad in ("1", 1.5, True, None, 0, -1):
        with pytest.raises(ResultsFileError, match="schema version .*reads versions 1 to 3$"):
            results.load(edited(saved, "bad.json", schema_version=bad))


def test_version_1_file_still_loads(tmp_path: Path) -> None:
    # What fastbench wrote before memory existed: schema 1, measurement data without "memory".
    data = synthetic("old").to_dict()
    del data["memory"]
    doc = {"schema_version": 1, "kind": "measurement", "fastbench_version": "0.1.0",
           "created": "2024-01-02T03:04:05+00:00", "machine": {"cpu_model": "x"}, "data": data}
    path = write_json(tmp_path / "v1.json", doc)
    loaded = results.load_file(path)
    assert loaded.schema_version == 1
    assert loaded.obj.memory is None
    assert_same(loaded.obj, synthetic("old"))
    assert list(results.load_any(path)) == ["old"]


def test_round_trip_keeps_memory(tmp_path: Path) -> None:
    memory = CallMemory(peak_increase_bytes=(41_943_040, 41_947_136, 41_938_944),
                        python_peak_bytes=(41_943_184, 41_943_200, 41_943_184),
                        cuda_peak_bytes=None, method="VmHWM after clear_refs", exact=True,
                        warmup_calls=1)
    m = synthetic("mem", memory=memory)
    path = tmp_path / "mem.json"
    results.save(m, path)
    got = results.load(path)
    assert got.memory == memory
    assert_same(got, m)
    assert read_raw(path)["data"]["memory"]["peak_increase_bytes"] == [41_943_040, 41_947_136,
                                                                         41_938_944]


def test_unknown_kind(saved: Path) -> None:
    path = edited(saved, "kind.json", kind="frobnicator")
    with pytest.raises(ResultsFileError, match=r"kind\.json holds kind 'frobnicator', which this "
                                               r"fastbench cannot read \(known kinds: "
                                               r"'measurement', 'measurements'"):
        results.load(path)


def test_missing_data(saved: Path) -> None:
    doc = json.loads(saved.read_text(encoding="utf-8"))
    del doc["data"]
    path = write_json(saved.with_name("nodata.json"), doc)
    with pytest.raises(ResultsFileError, match=r"nodata\.json is not a complete fastbench "
                                               r"results file: no 'data'"):
        results.load(path)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"a": {"samples_ns": [], "loops": 1, "clock": "steady", "overhead_ns": 0.0,
                "call_floor_ns": 0.0}},
         "data['a']['samples_ns'] must hold at least 1 value, got an empty list"),
        ({"a": {"loops": 1}},
         "data['a'] lacks 'samples_ns', 'clock', 'overhead_ns', 'call_floor_ns'"),
        ({"a": [1, 2]}, "data['a'] must be an object, got a JSON array"),
        ([1, 2], "data must be an object, got a JSON array"),
        ({}, "data must hold at least 1 measurement, got an empty object"),
        ({"a": {"samples_ns": [1.0], "loops": "many", "clock": "steady", "overhead_ns": 0.0,
                "call_floor_ns": 0.0}}, "data['a']['loops'] must be a positive integer, "
                                        "got 'many'"),
    ],
)
def test_malformed_data(saved: Path, data: Any, problem: str) -> None:
    path = edited(saved, "malformed.json", data=data)
    with pytest.raises(ResultsFileError) as info:
        results.load(path)
    assert str(info.value) == f"{path} has malformed 'measurements' data: {problem}"


# -- profiles ----------------------------------------------------------------------------------


def test_profile_round_trip_is_exact(tmp_path: Path) -> None:
    from fastbench.profiling import Profile

    prof = BUILDERS["profile"][0]()
    path = tmp_path / "profile.json"
    fastbench.save(prof, path)
    assert read_raw(path)["kind"] == "profile"
    got = fastbench.load(path)
    assert isinstance(got, Profile)
    assert got.to_dict() == prof.to_dict()
    for field in ("step_times", "profiled_step_times", "unprofiled_step_times"):
        assert getattr(got, field).tobytes() == getattr(prof, field).tobytes()
    for a, b in zip(got.cells, prof.cells):
        assert a.times.tobytes() == b.times.tobytes()
    # What is read off a profile is the same: the tables and the trace's events.
    assert [(r.name, r.share, r.share_ci) for r in got.rows("module")] == \
        [(r.name, r.share, r.share_ci) for r in prof.rows("module")]
    assert got.events == prof.events


def test_profile_diff_round_trip(tmp_path: Path) -> None:
    from fastbench.profiling.diff import ProfileDiff

    d = BUILDERS["profile_diff"][0]()
    assert any(c.flagged for c in d.changes)   # the example holds a flagged change
    path = tmp_path / "diff.json"
    fastbench.save(d, path)
    got = fastbench.load(path)
    assert isinstance(got, ProfileDiff)
    assert got == d
    assert str(got) == str(d)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.update(step_times=[]),
         "data['step_times'] must hold at least 1 value, got an empty list"),
        (lambda d: d["step_times"].__setitem__(3, -1e-4),
         "data['step_times'][3] must be a non-negative finite number, got -0.0001"),
        (lambda d: d.update(profiled_step_times=d["profiled_step_times"][:5]),
         "data['profiled_step_times'] must hold one time per step of data['step_times'] (8), "
         "got 5"),
        (lambda d: d["cells"][1].update(phase="sideways"),
         "data['cells'][1]['phase'] must be one of 'forward', 'backward', '', got 'sideways'"),
        (lambda d: d["cells"][0].pop("calls"), "data['cells'][0] lacks 'calls'"),
        (lambda d: d["events"][2].update(dur_ns=-5),
         "data['events'][2]['dur_ns'] must be a non-negative integer, got -5"),
        (lambda d: d.pop("overhead"), "data lacks 'overhead'"),
    ],
)
def test_malformed_profile_names_the_field(tmp_path: Path, change: Any, problem: str) -> None:
    path = tmp_path / "prof.json"
    fastbench.save(BUILDERS["profile"][0](), path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc["data"])
    write_json(path, doc)
    with pytest.raises(ResultsFileError) as info:
        fastbench.load(path)
    assert str(info.value) == f"{path} has malformed 'profile' data: {problem}"


# -- nothing to save ----------------------------------------------------------------------------


@pytest.mark.parametrize("empty", [[], {}, ()])
def test_save_refuses_a_collection_of_no_measurement(tmp_path: Path, empty: Any) -> None:
    with pytest.raises(ValueError, match=rf"^cannot save an empty {type(empty).__name__}: "
                                         r"it holds no measurement$"):
        results.save(empty, tmp_path / "empty.json")
    assert listdir(tmp_path) == []


# -- read-only targets, symbolic links, special files ---------------------------------------------


def test_save_refuses_a_read_only_target(existing: Path) -> None:
    before = existing.read_bytes()
    existing.chmod(0o444)
    with pytest.raises(PermissionError, match=rf"^cannot save to {existing}: the file is "
                                              r"read-only; make it writable"):
        results.save(synthetic("after"), existing)
    assert existing.read_bytes() == before
    assert stat.S_IMODE(existing.stat().st_mode) == 0o444
    assert listdir(existing.parent) == ["kept.json"]
    existing.chmod(0o644)  # made writable again, it is replaced as before
    results.save(synthetic("after"), existing)
    assert results.load(existing).name == "after"


def test_save_writes_through_a_symlink(tmp_path: Path) -> None:
    data_dir, link_dir = tmp_path / "data", tmp_path / "links"
    data_dir.mkdir()
    link_dir.mkdir()
    real = data_dir / "results.json"
    results.save(synthetic("before"), real)
    real.chmod(0o640)
    link = link_dir / "latest.json"
    link.symlink_to(Path("..") / "data" / "results.json")  # relative, as users make them
    results.save(synthetic("after"), link)
    assert link.is_symlink() and os.readlink(link) == os.path.join("..", "data", "results.json")
    assert results.load(real).name == "after"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the file keeps its mode
    assert listdir(link_dir) == ["latest.json"]  # no temporary file left on either side
    assert listdir(data_dir) == ["results.json"]
    # A link to a file not written yet: the file is created, the link kept.
    dangling = link_dir / "next.json"
    dangling.symlink_to(data_dir / "next.json")
    results.save(synthetic("next"), dangling)
    assert dangling.is_symlink() and results.load(data_dir / "next.json").name == "next"
    # A link to a read-only file is refused like the file.
    real.chmod(0o444)
    with pytest.raises(PermissionError, match=r"the file it links to is read-only"):
        results.save(synthetic("refused"), link)
    assert results.load(real).name == "after"


def test_save_refuses_link_loops_directories_and_special_files(tmp_path: Path) -> None:
    loop_a, loop_b = tmp_path / "a.json", tmp_path / "b.json"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    with pytest.raises(OSError, match="its symbolic links loop") as info:
        results.save(synthetic(), loop_a)
    assert info.value.errno == errno.ELOOP
    assert loop_a.is_symlink() and loop_b.is_symlink()
    with pytest.raises(IsADirectoryError, match="it is a directory"):
        results.save(synthetic(), tmp_path)
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="it is not a regular file"):
        results.save(synthetic(), fifo)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # not replaced by a regular file
    assert listdir(tmp_path) == ["a.json", "b.json", "pipe.json"]


# -- what a killed save leaves -------------------------------------------------------------------

# Saves a measurement to argv[1], and is killed (SIGKILL) halfway through writing the JSON.
_KILLED_SAVE = """
import json, os, signal, sys
import numpy as np
import fastbench

def dump_half_then_die(obj, fp, **kwargs):
    text = json.dumps(obj, **kwargs)
    fp.write(text[: len(text) // 2])
    fp.flush()
    os.kill(os.getpid(), signal.SIGKILL)

json.dump = dump_half_then_die
m = fastbench.Measurement(samples_ns=np.full(50, 10.0), loops=1, warmup_samples_ns=np.empty(0),
                          clock="steady", overhead_ns=0.0, overhead_mad_ns=0.0,
                          call_floor_ns=0.0, call_floor_mad_ns=0.0)
fastbench.save(m, sys.argv[1])
"""


def test_stale_temp_files_of_a_killed_save_are_removed_by_the_next(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(target)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == -9, done.stderr
    left = [p for p in tmp_path.iterdir() if p.name != "out.json"]
    assert len(left) == 1 and left[0].name.startswith(".out.json.") and left[0].suffix == ".tmp"
    stale = left[0]
    # Not ours: another program's file of the same name pattern, and an old file that is
    # not JSON of ours. Both stay.
    foreign = tmp_path / ".notes.txt.abcd1234.tmp"
    foreign.write_text("my notes\n")
    # A recent temporary file may belong to a save running now: it stays too.
    results.save(synthetic(), tmp_path / "other.json")
    assert stale.exists()
    old = time.time() - files.STALE_TEMP_S - 60
    for p in (stale, foreign):
        os.utime(p, (old, old))
    results.save(synthetic(), tmp_path / "other.json")
    assert not stale.exists()
    assert foreign.read_text() == "my notes\n"
    assert listdir(tmp_path) == [".notes.txt.abcd1234.tmp", "other.json"]


# -- size and nesting limits ---------------------------------------------------------------------


def test_a_gzip_bomb_is_refused_while_decompressing(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """50 MB of JSON whitespace compresses to ~50 KB; it used to be decompressed whole (a
    1 MB file expanded to 3.2 GB). With the cap at 1 MiB, reading stops past 1 MiB."""
    monkeypatch.setattr(files, "MAX_JSON_BYTES", 2**20)
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b'{"schema_version": 2, "kind": "measurement", "data":')
        chunk = b" " * 2**20  # valid JSON: only the size can refuse it
        for _ in range(50):
            f.write(chunk)
        f.write(b"null}")
    assert bomb.stat().st_size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(ResultsFileError) as info:
            results.load(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(info.value) == (
        f"{bomb} decompresses to more than 1,048,576 bytes of JSON, the most a results file "
        "may hold (fastbench.results.files.MAX_JSON_BYTES): it is not a results file, or "
        "raise that limit to read it")
    assert peak < 8 * 2**20  # a stream: never the 50 MB


def test_size_cap_of_plain_files(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = saved.read_bytes()
    monkeypatch.setattr(files, "MAX_JSON_BYTES", len(text) + 10)
    padded = saved.with_name("padded.json")
    padded.write_bytes(text + b" " * 10)  # exactly at the cap: read
    assert list(results.load(padded)) == ["a"]
    padded.write_bytes(text + b" " * 11)
    with pytest.raises(ResultsFileError, match=r"padded\.json holds more than [\d,]+ bytes of "
                                               r"JSON, the most a results file may hold"):
        results.load_any(padded)


@pytest.mark.parametrize("depth", [files.MAX_NESTING + 1, 100_000])
def test_deep_nesting_is_a_results_file_error(tmp_path: Path, depth: int) -> None:
    """100,000 nested lists raised a raw RecursionError without the file's name."""
    path = tmp_path / "deep.json"
    path.write_text('{"schema_version": 2, "kind": "measurement", "data": {"name": '
                    + "[" * depth + "]" * depth + "}}", encoding="utf-8")
    for reader in (results.load, results.load_any, results.load_pyperf):
        with pytest.raises(ResultsFileError, match=rf"^{path} nests arrays and objects more "
                                                   rf"than {files.MAX_NESTING} levels deep"):
            reader(path)


def test_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    # The document and its metadata are two levels; the lists fill the rest exactly.
    doc: dict[str, Any] = {"benchmarks": [], "version": "1.0", "metadata": {"deep": 0}}
    inner: Any = 0
    for _ in range(files.MAX_NESTING - 2):
        inner = [inner]
    doc["metadata"]["deep"] = inner
    path = write_json(tmp_path / "nested.json", doc)
    assert files.read_json(path) == doc
    doc["metadata"]["deep"] = [inner]
    with pytest.raises(ResultsFileError, match="more than 100 levels deep"):
        files.read_json(write_json(path, doc))
