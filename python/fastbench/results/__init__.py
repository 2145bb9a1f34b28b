"""Results files: fastbench's versioned JSON (save/load), readers for pyperf and pytest-benchmark.

Owns the file format, the machine metadata recorded beside the data, atomic writes and the
errors a reader sees for a bad file. It never measures and never prints; result types keep
their own to_dict/from_dict and other modules add kinds with :func:`register_kind`.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import tempfile
import warnings
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar, Union

import numpy as np
from numpy.typing import NDArray

from .._version import __version__
from ..errors import FastbenchError
from ..machine import machine_info, noise_checks
from ..timing import Measurement

__all__ = [
    "SCHEMA_VERSION",
    "ResultsFile",
    "ResultsFileError",
    "load",
    "load_any",
    "load_file",
    "load_pyperf",
    "load_pytest_benchmark",
    "machine_metadata",
    "register_kind",
    "save",
]

# Schema history (bump on any change a version-1 reader would misread; say what changed):
# 1 - first version: {"schema_version", "kind", "fastbench_version", "created", "machine",
#     "data"}; kinds "measurement" (Measurement.to_dict) and "measurements" (an object
#     mapping names to Measurement.to_dict).
# 2 - a Measurement may carry "memory" (CallMemory.to_dict: peak RSS increase and Python
#     heap peak per call, method); version-1 files still load, without memory.
SCHEMA_VERSION = 2

PathArg = Union[str, "os.PathLike[str]"]
_T = TypeVar("_T")

# `git` must never hold up a save: a network file system or a huge repository can make
# `git status` slow, and then the commit is simply not recorded.
_GIT_TIMEOUT_S = 2.0
_GZIP_MAGIC = b"\x1f\x8b"
_NS_PER_S = 1e9


class ResultsFileError(FastbenchError, ValueError):
    """A results file cannot be read: not JSON, not this format, or malformed data.

    The message names the file and the problem.
    """


# --------------------------------------------------------------------------------------
# Kinds: what save() can write and load() can rebuild
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Kind:
    name: str
    cls: type[Any] | tuple[type[Any], ...]
    to_data: Callable[[Any], Any]
    from_data: Callable[[Any], Any]
    label: str = ""  # what save() accepts, for error messages; default: the class name


_KINDS: dict[str, _Kind] = {}


def register_kind(
    name: str,
    cls: type[_T],
    to_data: Callable[[_T], Any],
    from_data: Callable[[Any], _T],
    *,
    replace: bool = False,
) -> None:
    """Teach :func:`save` and :func:`load` a new kind of result.

    Parameters
    ----------
    name : str
        The ``kind`` written to the file, e.g. "comparison".
    cls : type
        Objects for which ``isinstance(obj, cls)`` holds are saved as this kind. Kinds
        are tried in registration order, built-in ones first.
    to_data : callable
        ``to_data(obj)`` returns JSON-ready data (dicts, lists, str, int, finite float,
        bool, None), typically ``cls.to_dict``.
    from_data : callable
        ``from_data(data)`` rebuilds the object, typically ``cls.from_dict``. It should
        raise ValueError, TypeError or KeyError for malformed data; :func:`load` turns
        those into a ResultsFileError naming the file.
    replace : bool
        Allow replacing a kind that is already registered.

    Raises
    ------
    TypeError
        ``name`` is not a str, ``cls`` not a class, or the functions are not callable.
    ValueError
        ``name`` is empty, or already registered and ``replace`` is false.
    """
    if not isinstance(name, str):
        raise TypeError(f"[register_kind] name must be a str, got {type(name).__name__}")
    if not name:
        raise ValueError("[register_kind] name must not be empty")
    if not isinstance(cls, type):
        raise TypeError(f"[register_kind] cls must be a class, got {type(cls).__name__}")
    if not callable(to_data) or not callable(from_data):
        raise TypeError("[register_kind] to_data and from_data must be callable")
    if name in _KINDS and not replace:
        raise ValueError(
            f"[register_kind] kind {name!r} is already registered "
            f"(for {_type_name(_KINDS[name].cls)}); pass replace=True to replace it"
        )
    _KINDS[name] = _Kind(name, cls, to_data, from_data)


def _type_name(cls: type[Any] | tuple[type[Any], ...]) -> str:
    if isinstance(cls, tuple):
        return " or ".join(c.__name__ for c in cls)
    return cls.__name__


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name#2``, ``name#3``... whichever is not taken yet."""
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name}#{k}", k + 1
    return candidate


def _measurements_to_data(obj: Mapping[Any, Any] | Sequence[Any]) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        items = list(obj.items())
        for key, value in items:
            if not isinstance(key, str):
                raise TypeError(f"measurement names must be str, got {type(key).__name__}")
    else:
        taken: set[str] = set()
        items = []
        for value in obj:
            key = _unique(getattr(value, "name", "") or "measurement", taken)
            taken.add(key)
            items.append((key, value))
    for key, value in items:
        if not isinstance(value, Measurement):
            raise TypeError(
                f"cannot save {type(obj).__name__} of measurements: item {key!r} is "
                f"{type(value).__name__}, not Measurement"
            )
    return {key: value.to_dict() for key, value in items}


def _measurements_from_data(data: Any) -> dict[str, Measurement]:
    if not isinstance(data, dict):
        raise ValueError(
            f"expected an object mapping names to measurements, got {_json_type(data)}"
        )
    out: dict[str, Measurement] = {}
    for key, value in data.items():
        if not isinstance(value, dict):
            raise ValueError(f"measurement {key!r} is {_json_type(value)}, not an object")
        try:
            out[key] = Measurement.from_dict(value)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"measurement {key!r}: {exc}") from exc
    return out


def _measurement_from_data(data: Any) -> Measurement:
    if not isinstance(data, dict):
        raise ValueError(f"expected a measurement object, got {_json_type(data)}")
    return Measurement.from_dict(data)


_KINDS["measurement"] = _Kind(
    "measurement", Measurement, Measurement.to_dict, _measurement_from_data
)
# str and bytes are Sequences too; save() rejects them before the kinds are tried.
_KINDS["measurements"] = _Kind(
    "measurements", (Mapping, Sequence), _measurements_to_data, _measurements_from_data,
    label="mapping of str to Measurement, or sequence of Measurement",
)


def _kind_of(obj: object) -> _Kind:
    if not isinstance(obj, (str, bytes, bytearray)):
        for kind in _KINDS.values():
            if isinstance(obj, kind.cls):
                return kind
    supported = "; ".join(f"{k.name!r} ({k.label or _type_name(k.cls)})" for k in _KINDS.values())
    raise TypeError(f"cannot save a {type(obj).__name__}: supported kinds are {supported}")


# --------------------------------------------------------------------------------------
# Machine metadata
# --------------------------------------------------------------------------------------


def _git(*args: str) -> str | None:
    """stdout of ``git args`` in the working directory, or None if it fails in any way."""
    try:
        done = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):  # no git, no cwd, timeout
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _git_info() -> dict[str, Any] | None:
    commit = _git("rev-parse", "HEAD")
    if not commit:  # not a work tree, no commit yet, no git, or an unsafe directory
        return None
    # Untracked files do not count: a results file saved inside the repository would
    # otherwise mark every later run dirty.
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _blas() -> dict[str, str | None] | None:
    """numpy's BLAS from ``show_config(mode="dicts")`` (numpy >= 1.26), else None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = np.show_config(mode="dicts")
    except Exception:  # noqa: BLE001 - older numpy has no `mode`; metadata must not fail a save
        return None
    deps = config.get("Build Dependencies") if isinstance(config, dict) else None
    blas = deps.get("blas") if isinstance(deps, dict) else None
    if not isinstance(blas, dict):
        return None
    name, version = blas.get("name"), blas.get("version")
    return {
        "name": name if isinstance(name, str) else None,
        "version": version if isinstance(version, str) else None,
    }


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def machine_metadata() -> dict[str, Any]:
    """Describe this machine and software stack, as recorded in every results file.

    Returns
    -------
    dict
        JSON-ready facts: ``cpu_model`` (str), ``logical_cores`` (int),
        ``physical_cores`` (int or None), ``caches`` (list of dicts with ``level``,
        ``kind``, ``size_bytes``, ``line_bytes``, ``shared_by_cpus``), ``flags`` (sorted
        list of str), ``clocksource`` (str or None), ``noise_checks`` (list of dicts with
        ``name``, ``value``, ``status``), ``python_implementation``, ``python_version``,
        ``platform``, ``hostname`` (str), ``numpy_version`` (str), ``blas`` (dict with
        ``name`` and ``version``, or None when numpy does not say), ``fastbench_version``
        (str), ``timestamp`` (ISO-8601, UTC) and ``git``: ``{"commit": sha,
        "dirty": bool}`` for the working directory's repository, ``dirty`` meaning
        tracked files differ from the commit, or None outside a git work tree or
        without git. Never raises for facts it cannot find.
    """
    meta = machine_info().to_dict()
    checks = noise_checks()
    clocksource = next((c for c in checks if c.name == "clocksource"), None)
    meta["clocksource"] = (
        clocksource.value if clocksource is not None and clocksource.status != "unknown" else None
    )
    meta["noise_checks"] = [{"name": c.name, "value": c.value, "status": c.status} for c in checks]
    meta["numpy_version"] = np.__version__
    meta["blas"] = _blas()
    meta["fastbench_version"] = __version__
    meta["timestamp"] = _utc_now()
    meta["git"] = _git_info()
    return meta


# --------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------


def _find_nonfinite(value: Any, where: str) -> str | None:
    """Path of the first NaN or infinity in JSON-ready data, e.g. "data['a']['overhead_ns']"."""
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} = {value!r}"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _find_nonfinite(item, f"{where}[{key!r}]")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _find_nonfinite(item, f"{where}[{i}]")
            if found:
                return found
    return None


def _new_file_mode(target: Path) -> int:
    """Permissions for the result: the target's if it exists, else 0o666 minus the umask.

    NamedTemporaryFile creates files with mode 0o600, which os.replace would carry over
    to the target.
    """
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        pass
    try:  # Linux >= 4.7 shows the umask without changing it (os.umask would, racily)
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o644


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; best effort (not possible on Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save(obj: object, path: PathArg) -> None:
    """Write ``obj`` to ``path`` as a versioned fastbench JSON file, atomically.

    The file holds ``{"schema_version", "kind", "fastbench_version", "created",
    "machine", "data"}``, with ``machine`` from :func:`machine_metadata`. The JSON is
    written to a temporary file in the same directory, flushed and fsynced, then moved
    onto ``path`` with ``os.replace``: readers see the old file or the new one, never
    half of one. Floats are written with ``repr``, so they read back bit for bit.

    Parameters
    ----------
    obj : Measurement, mapping or sequence of Measurement, or a registered kind
        A mapping is stored under its keys (str). A sequence is stored under each
        measurement's ``name`` ("measurement" when empty), with ``#2``, ``#3``...
        appended to repeated names.
    path : str or os.PathLike
        Target file; its directory must exist. An existing file is replaced.

    Raises
    ------
    TypeError
        ``obj`` is of no registered kind (the message lists them), or a collection holds
        something other than measurements under str names.
    ValueError
        The data holds NaN or infinity, which standard JSON cannot represent.
    OSError
        The file cannot be written. In every failure case ``path`` is left as it was and
        the temporary file is removed.
    """
    kind = _kind_of(obj)
    target = Path(os.fspath(path))
    machine = machine_metadata()
    document = {
        "schema_version": SCHEMA_VERSION,
        "kind": kind.name,
        "fastbench_version": __version__,
        "created": machine["timestamp"],
        "machine": machine,
        "data": kind.to_data(obj),
    }
    bad = _find_nonfinite(document["data"], "data")
    if bad is not None:
        raise ValueError(f"cannot save to {target}: {bad}, and JSON has no NaN or infinity")
    mode = _new_file_mode(target)
    tmp = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", delete=False, dir=target.parent,
        prefix=f".{target.name}.", suffix=".tmp",
    )  # fmt: skip
    try:
        with tmp:
            # allow_nan=False backs up the check above for anything it cannot see.
            json.dump(document, tmp, indent=1, ensure_ascii=False, allow_nan=False)
            tmp.write("\n")
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp.name, mode)
        os.replace(tmp.name, target)
    except BaseException:
        try:
            os.unlink(tmp.name)
        except OSError:
            pass
        raise
    _fsync_dir(target.parent)


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


def _json_type(value: Any) -> str:
    names = {dict: "a JSON object", list: "a JSON array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


def _read_json(path: PathArg) -> Any:
    """Parse a JSON file, gzip-compressed or not (told apart by content, not name)."""
    raw = Path(os.fspath(path)).read_bytes()  # FileNotFoundError names the file
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ResultsFileError(f"{path} is not a valid gzip file (truncated?): {exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{path} is not a JSON text file (not UTF-8: {exc})") from exc
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path} is not valid JSON (truncated?): {exc}") from exc
    except ValueError as exc:  # NaN / Infinity
        raise ResultsFileError(f"{path} is not valid JSON: {exc}") from exc


def _sniff(doc: Any) -> str | None:
    """"fastbench", "pyperf", "pytest-benchmark", or None for anything else."""
    if not isinstance(doc, dict):
        return None
    if "schema_version" in doc or "kind" in doc:
        return "fastbench"
    benchmarks = doc.get("benchmarks")
    if not isinstance(benchmarks, list):
        return None
    entries = [b for b in benchmarks if isinstance(b, dict)]
    # Both tools write a top-level "version"; only pytest-benchmark writes machine_info
    # and commit_info, and per benchmark "stats" where pyperf has "runs".
    if "machine_info" in doc or "commit_info" in doc or any("stats" in b for b in entries):
        return "pytest-benchmark"
    if "version" in doc or any("runs" in b for b in entries):
        return "pyperf"
    return None


_READERS = {
    "fastbench": "fastbench.results.load()",
    "pyperf": "fastbench.results.load_pyperf()",
    "pytest-benchmark": "fastbench.results.load_pytest_benchmark()",
}


def _wrong_format(path: PathArg, doc: Any, expected: str) -> ResultsFileError:
    found = _sniff(doc)
    if found is not None and found != expected:
        return ResultsFileError(
            f"{path} is a {found} results file, not a {expected} one: read it with "
            f"{_READERS[found]} (or load_any())"
        )
    what = "an object without schema_version and kind" if isinstance(doc, dict) else _json_type(doc)
    return ResultsFileError(f"{path} is not a {expected} results file: it holds {what}")


@dataclass(frozen=True)
class ResultsFile:
    """A fastbench results file as read back: the object and the context it was saved with.

    Attributes
    ----------
    kind : str
        "measurement", "measurements", or a kind added with :func:`register_kind`.
    obj : object
        What :func:`load` returns: a Measurement, a dict of str to Measurement, ...
    machine : dict
        The :func:`machine_metadata` of the saving run, as stored.
    created : str
        When the file was written (ISO-8601, UTC).
    fastbench_version : str
        The fastbench version that wrote it.
    schema_version : int
        The file format version the file was written in (older ones are still read).
    """

    kind: str
    obj: Any
    machine: dict[str, Any]
    created: str
    fastbench_version: str
    schema_version: int


def _parse_fastbench(path: PathArg, doc: Any) -> ResultsFile:
    if _sniff(doc) != "fastbench":
        raise _wrong_format(path, doc, "fastbench")
    for key in ("schema_version", "kind", "data"):
        if key not in doc:
            raise ResultsFileError(f"{path} is not a complete fastbench results file: no {key!r}")
    version = doc["schema_version"]
    if type(version) is not int or not 1 <= version <= SCHEMA_VERSION:
        writer = doc.get("fastbench_version")
        by = f" (fastbench {writer})" if isinstance(writer, str) else ""
        newer = isinstance(version, int) and version > SCHEMA_VERSION
        hint = "; upgrade fastbench to read it" if newer else ""
        raise ResultsFileError(
            f"{path} was written by schema version {version!r}{by}; this fastbench reads "
            f"versions 1 to {SCHEMA_VERSION}{hint}"
        )
    name = doc["kind"]
    kind = _KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        known = ", ".join(repr(k) for k in _KINDS)
        raise ResultsFileError(
            f"{path} holds kind {name!r}, which this fastbench cannot read (known kinds: {known})"
        )
    try:
        obj = kind.from_data(doc["data"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ResultsFileError(f"{path} has malformed {kind.name!r} data: {exc}") from exc
    machine = doc.get("machine")
    return ResultsFile(
        kind=kind.name,
        obj=obj,
        machine=machine if isinstance(machine, dict) else {},
        created=str(doc.get("created", "")),
        fastbench_version=str(doc.get("fastbench_version", "")),
        schema_version=version,
    )


def load_file(path: PathArg) -> ResultsFile:
    """Read a fastbench results file with its metadata.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save` (gzip-compressed is fine too).

    Returns
    -------
    ResultsFile
        The object and the machine metadata, creation time and versions stored with it.

    Raises
    ------
    FileNotFoundError
        No such file.
    ResultsFileError
        The message names the file and says which problem it has: not valid JSON
        (truncated?), not a fastbench file (naming the reader for pyperf or
        pytest-benchmark files), another schema version, an unknown kind, or malformed
        data.
    """
    return _parse_fastbench(path, _read_json(path))


def load(path: PathArg) -> Any:
    """Read the object stored by :func:`save`.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save`.

    Returns
    -------
    object
        A Measurement for kind "measurement", a dict of name to Measurement for
        "measurements", or what a registered kind's ``from_data`` returns.

    Raises
    ------
    FileNotFoundError
        No such file.
    ResultsFileError
        As for :func:`load_file`.
    """
    return load_file(path).obj


# --------------------------------------------------------------------------------------
# Other tools' files
# --------------------------------------------------------------------------------------


def _finite_ns(values: Any, what: str) -> NDArray[np.float64]:
    """Seconds (a list of numbers) to a float64 array of ns; ValueError if not finite."""
    if not isinstance(values, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    ):
        raise ValueError(f"{what} must be a list of numbers")
    arr = np.asarray(values, dtype=np.float64) * _NS_PER_S
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} holds a value that is not finite")
    return arr


def _int_field(mapping: Mapping[str, Any], key: str, default: int, what: str) -> int:
    value = mapping.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what}: {key} must be a positive integer, got {value!r}")
    return value


def _pyperf_benchmark(index: int, bench: Any, file_meta: dict[str, Any]) -> Measurement:
    if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list):
        raise ValueError(f"benchmark #{index} has no list of runs")
    bench_meta = bench.get("metadata") or {}
    if not isinstance(bench_meta, dict):
        raise ValueError(f"benchmark #{index}: metadata is not an object")
    meta = {**file_meta, **bench_meta}
    name = str(meta.get("name") or f"benchmark{index}")
    samples: list[NDArray[np.float64]] = []
    warmups: list[NDArray[np.float64]] = []
    loops_seen: list[int] = []
    calibration_trials = 0
    elapsed_s = 0.0
    for r, run in enumerate(bench["runs"]):
        what = f"benchmark {name!r}, run #{r}"
        if not isinstance(run, dict):
            raise ValueError(f"{what} is not an object")
        run_meta = {**meta, **(run.get("metadata") or {})}  # run overrides benchmark overrides file
        unit = run_meta.get("unit", "second")
        if unit != "second":
            raise ValueError(f"benchmark {name!r} measures {unit!r}, not time in seconds")
        values = run.get("values") or []
        run_warmups = run.get("warmups") or []
        if not isinstance(run_warmups, list) or not all(
            isinstance(w, list) and len(w) == 2 for w in run_warmups
        ):
            raise ValueError(f"{what}: warmups must be a list of [loops, value] pairs")
        if not values:  # a calibration run: its warmups are the loops (or warmups) search
            calibration_trials += len(run_warmups)
            continue
        loops = _int_field(run_meta, "loops", 1, what)
        loops *= _int_field(run_meta, "inner_loops", 1, what)
        run_samples = _finite_ns(values, f"{what}: values")
        samples.append(run_samples)
        # Since pyperf 1.0 (JSON format '1.0') warmup values are per iteration too.
        warmups.append(_finite_ns([w[1] for w in run_warmups], f"{what}: warmups"))
        loops_seen.append(loops)
        elapsed_s += math.fsum(run_samples) * loops / _NS_PER_S
    if not samples:
        raise ValueError(f"benchmark {name!r} has no values (only calibration runs)")
    return _imported(
        np.concatenate(samples), min(loops_seen), np.concatenate(warmups),
        "pyperf:perf_counter", name, elapsed_s, calibration_trials=calibration_trials,
    )


def _parse_pyperf(path: PathArg, doc: Any) -> dict[str, Measurement]:
    if _sniff(doc) != "pyperf":
        raise _wrong_format(path, doc, "pyperf")
    version = doc.get("version")
    if version != "1.0":
        raise ResultsFileError(
            f"{path} uses pyperf JSON format {version!r}; only '1.0' (pyperf >= 1.0) is "
            "read: upgrade it with `python -m pyperf convert OLD.json -o NEW.json`"
        )
    try:
        file_meta = doc.get("metadata") or {}
        if not isinstance(file_meta, dict):
            raise ValueError("metadata is not an object")
        out: dict[str, Measurement] = {}
        for index, bench in enumerate(doc["benchmarks"]):
            m = _pyperf_benchmark(index, bench, file_meta)
            out[_unique(m.name, set(out))] = m
    except (ValueError, TypeError, KeyError) as exc:
        raise ResultsFileError(f"{path} is not a valid pyperf file: {exc}") from exc
    if not out:
        raise ResultsFileError(f"{path} holds no pyperf benchmarks")
    return out


def load_pyperf(path: PathArg) -> dict[str, Measurement]:
    """Read a pyperf JSON file (``.json`` or ``.json.gz``) as fastbench measurements.

    pyperf stores, per benchmark, runs (one worker process each) of values in seconds
    per iteration, an iteration being one outer loop times ``inner_loops``. Metadata
    sits at file, benchmark or run level; the innermost wins. Only pyperf's JSON format
    '1.0' (pyperf >= 1.0) is read.

    pyperf measures no loop overhead or call floor, so ``overhead_ns`` and
    ``call_floor_ns`` are 0.0 and ``call_floor_kind`` is "unknown": the times include
    the call, as pyperf reports them.

    Parameters
    ----------
    path : str or os.PathLike
        The file ``pyperf ... -o FILE`` wrote; gzip-compressed content is detected.

    Returns
    -------
    dict of str to Measurement
        One per benchmark, keyed by its name (``#2``... appended to a repeated one;
        "benchmark<i>" when unnamed). ``samples_ns``: every value of every run in ns;
        ``loops``: ``loops * inner_loops`` (the smallest if runs differ);
        ``warmup_samples_ns``: the runs' warmups in ns per iteration; ``clock``:
        "pyperf:perf_counter"; ``calibration_trials``: samples of the calibration runs,
        which have no values and are otherwise skipped; ``elapsed_s``: summed duration
        of the counted samples in s.

    Raises
    ------
    FileNotFoundError
        No such file.
    ResultsFileError
        Not valid JSON, not a pyperf file (naming the right reader if it is another
        tool's), an old pyperf format, a benchmark of something other than time (e.g.
        memory), a benchmark with only calibration runs, or malformed data.
    """
    return _parse_pyperf(path, _read_json(path))


class _NoRoundData(Exception):
    """A pytest-benchmark entry without stats.data (carries the benchmark's name)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _pytest_benchmark_entry(index: int, bench: Any) -> Measurement:
    if not isinstance(bench, dict) or not isinstance(bench.get("stats"), dict):
        raise ValueError(f"benchmark #{index} has no stats object")
    name = str(bench.get("name") or bench.get("fullname") or f"benchmark{index}")
    stats = bench["stats"]
    if "data" not in stats:
        raise _NoRoundData(name)
    iterations = _int_field(stats, "iterations", 1, f"benchmark {name!r}")
    samples = _finite_ns(stats["data"], f"benchmark {name!r}: stats.data")
    if samples.size == 0:
        raise ValueError(f"benchmark {name!r} has no rounds")
    options = bench.get("options")
    timer = options.get("timer") if isinstance(options, dict) else None
    return _imported(
        samples, iterations, np.empty(0, dtype=np.float64),  # pytest-benchmark keeps no warmups
        f"pytest-benchmark:{timer or 'perf_counter'}", name,
        math.fsum(samples) * iterations / _NS_PER_S,
    )


def _imported(samples: NDArray[np.float64], loops: int, warmups: NDArray[np.float64],
              clock: str, name: str, elapsed_s: float, calibration_trials: int = 0) -> Measurement:
    """A Measurement of another tool's samples: those tools measure no floors, so the floors
    are 0 and ``call_floor_kind`` says "unknown"."""
    return Measurement(
        samples_ns=samples, loops=loops, warmup_samples_ns=warmups, clock=clock,
        overhead_ns=0.0, overhead_mad_ns=0.0, call_floor_ns=0.0, call_floor_mad_ns=0.0,
        call_floor_kind="unknown", name=name, calibration_trials=calibration_trials,
        elapsed_s=elapsed_s,
    )


def _parse_pytest_benchmark(path: PathArg, doc: Any) -> dict[str, Measurement]:
    if _sniff(doc) != "pytest-benchmark":
        raise _wrong_format(path, doc, "pytest-benchmark")
    entries: list[Measurement] = []
    try:
        for index, bench in enumerate(doc["benchmarks"]):
            entries.append(_pytest_benchmark_entry(index, bench))
    except _NoRoundData as missing:
        raise ResultsFileError(
            f"{path} has no per-round data for benchmark {missing.name!r}, only summary "
            "statistics: re-run pytest with --benchmark-save-data (files written with "
            "--benchmark-json always include it)"
        ) from None
    except (ValueError, TypeError, KeyError) as exc:
        raise ResultsFileError(f"{path} is not a valid pytest-benchmark file: {exc}") from exc
    if not entries:
        raise ResultsFileError(f"{path} holds no pytest-benchmark benchmarks")
    # "name" is what pytest-benchmark shows; the same test name in two modules falls
    # back to "fullname" (module::test[param]), which pytest keeps unique.
    counts: dict[str, int] = {}
    for m in entries:
        counts[m.name] = counts.get(m.name, 0) + 1
    out: dict[str, Measurement] = {}
    for index, m in enumerate(entries):
        key = m.name
        if counts[key] > 1:
            key = str(doc["benchmarks"][index].get("fullname") or key)
        out[_unique(key, set(out))] = m
    return out


def load_pytest_benchmark(path: PathArg) -> dict[str, Measurement]:
    """Read a pytest-benchmark JSON file as fastbench measurements.

    Needs the per-round times (``stats.data``, seconds per iteration). Files written
    with ``--benchmark-json`` always hold them; files saved with ``--benchmark-save`` or
    ``--benchmark-autosave`` hold them only when pytest ran with
    ``--benchmark-save-data``.

    pytest-benchmark measures no loop overhead or call floor and keeps no warmup
    rounds, so ``overhead_ns`` and ``call_floor_ns`` are 0.0, ``call_floor_kind`` is
    "unknown" and ``warmup_samples_ns`` is empty.

    Parameters
    ----------
    path : str or os.PathLike
        The JSON file pytest-benchmark wrote.

    Returns
    -------
    dict of str to Measurement
        One per benchmark, keyed by its ``name`` (``fullname`` when two share a name).
        ``samples_ns``: ``stats.data`` in ns; ``loops``: ``stats.iterations``;
        ``clock``: "pytest-benchmark:" plus the timer's name; ``elapsed_s``: summed
        duration of the rounds in s.

    Raises
    ------
    FileNotFoundError
        No such file.
    ResultsFileError
        Not valid JSON, not a pytest-benchmark file (naming the right reader if it is
        another tool's), no per-round data (saying to re-run with
        ``--benchmark-save-data``), or malformed data.
    """
    return _parse_pytest_benchmark(path, _read_json(path))


def load_any(path: PathArg) -> dict[str, Measurement]:
    """Read measurements from a fastbench, pyperf or pytest-benchmark file.

    The format is told from the content, not the file name.

    Parameters
    ----------
    path : str or os.PathLike
        A results file of any of the three tools (gzip-compressed is fine).

    Returns
    -------
    dict of str to Measurement
        A single fastbench measurement becomes ``{name or "measurement": m}``.

    Raises
    ------
    FileNotFoundError
        No such file.
    ResultsFileError
        As the format's own reader raises, when the format is not recognised, or when
        a fastbench file holds something other than measurements.
    """
    doc = _read_json(path)
    fmt = _sniff(doc)
    if fmt == "pyperf":
        return _parse_pyperf(path, doc)
    if fmt == "pytest-benchmark":
        return _parse_pytest_benchmark(path, doc)
    if fmt != "fastbench":
        what = "an object" if isinstance(doc, dict) else _json_type(doc)
        raise ResultsFileError(
            f"{path} is not a fastbench, pyperf or pytest-benchmark results file: it holds "
            f"{what} in no format fastbench knows"
        )
    result = _parse_fastbench(path, doc)
    if isinstance(result.obj, Measurement):
        return {result.obj.name or "measurement": result.obj}
    if result.kind == "measurements":
        measurements: dict[str, Measurement] = result.obj
        return measurements
    raise ResultsFileError(
        f"{path} holds a {result.kind!r}, not measurements: read it with fastbench.results.load()"
    )
