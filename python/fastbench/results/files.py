"""fastbench's own results files: the versioned JSON schema, atomic writes, reading JSON
(gzip-compressed or not, told apart by content), telling the formats apart, and the errors a
reader sees for a bad file. It never measures and never prints; what an object becomes in a
file is its kind's business (:mod:`.kinds`), other tools' files are :mod:`.importers`'.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from .._version import __version__
from ..errors import FastbenchError
from ..machine.metadata import machine_metadata
from .kinds import json_type, kind_named, kind_of, kinds

__all__ = ["SCHEMA_VERSION", "PathArg", "ResultsFile", "ResultsFileError", "load", "load_file",
           "parse_fastbench", "read_json", "save", "sniff_format", "wrong_format"]

# Schema history (bump on any change a version-1 reader would misread; say what changed):
# 1 - first version: {"schema_version", "kind", "fastbench_version", "created", "machine",
#     "data"}; kinds "measurement" (Measurement.to_dict) and "measurements" (an object
#     mapping names to Measurement.to_dict).
# 2 - a Measurement may carry "memory" (CallMemory.to_dict: peak RSS increase and Python
#     heap peak per call, method); version-1 files still load, without memory.
SCHEMA_VERSION = 2

PathArg = Union[str, "os.PathLike[str]"]

_GZIP_MAGIC = b"\x1f\x8b"


class ResultsFileError(FastbenchError, ValueError):
    """A results file cannot be read: not JSON, not this format, or malformed data.

    The message names the file and the problem.
    """


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
    obj : Measurement, mapping or sequence of Measurement, or another result kind
        Comparison, StatResult, SimulatedCounts, Roofline, ModelAnalysis (see
        :data:`.kinds.BUILTIN_KINDS`), or a class added with :func:`register_kind`.
        A mapping is stored under its keys (str). A sequence is stored under each
        measurement's ``name`` ("measurement" when empty), with ``#2``, ``#3``...
        appended to repeated names.
    path : str or os.PathLike
        Target file; its directory must exist. An existing file is replaced.

    Raises
    ------
    TypeError
        ``obj`` is of no known kind (the message lists them), or a collection holds
        something other than measurements under str names.
    ValueError
        The data holds NaN or infinity, which standard JSON cannot represent.
    OSError
        The file cannot be written. In every failure case ``path`` is left as it was and
        the temporary file is removed.
    """
    kind = kind_of(obj)
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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


def read_json(path: PathArg) -> Any:
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


def sniff_format(doc: Any) -> str | None:
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


def wrong_format(path: PathArg, doc: Any, expected: str) -> ResultsFileError:
    found = sniff_format(doc)
    if found is not None and found != expected:
        return ResultsFileError(
            f"{path} is a {found} results file, not a {expected} one: read it with "
            f"{_READERS[found]} (or load_any())"
        )
    what = "an object without schema_version and kind" if isinstance(doc, dict) else json_type(doc)
    return ResultsFileError(f"{path} is not a {expected} results file: it holds {what}")


@dataclass(frozen=True)
class ResultsFile:
    """A fastbench results file as read back: the object and the context it was saved with.

    Attributes
    ----------
    kind : str
        "measurement", "measurements", another built-in kind ("comparison", "stat",
        "simulated_counts", "roofline", "model_analysis") or one added with
        :func:`register_kind`.
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


def parse_fastbench(path: PathArg, doc: Any) -> ResultsFile:
    if sniff_format(doc) != "fastbench":
        raise wrong_format(path, doc, "fastbench")
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
    kind = kind_named(name)
    if kind is None:
        known = ", ".join(repr(k.name) for k in kinds())
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
    return parse_fastbench(path, read_json(path))


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
        "measurements", the result object of another built-in kind, or what a
        registered kind's ``from_data`` returns.

    Raises
    ------
    FileNotFoundError
        No such file.
    ResultsFileError
        As for :func:`load_file`.
    """
    return load_file(path).obj

