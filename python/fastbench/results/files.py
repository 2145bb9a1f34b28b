"""fastbench's own results files: the versioned JSON schema, atomic writes, reading JSON
(gzip-compressed or not, told apart by content) within size and nesting limits, telling the
formats apart, and the errors a reader sees for a bad file. It never measures and never
prints; what an object becomes in a file is its kind's business (:mod:`.kinds`), what its
data must hold :mod:`.schema`'s, other tools' files are :mod:`.importers`'.
"""

from __future__ import annotations

import errno
import gzip
import json
import math
import os
import re
import stat
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Union

from .._version import __version__
from ..errors import FastbenchError
from ..machine.metadata import machine_metadata
from ..replicates import record_replicates
from .kinds import json_type, kind_named, kind_of, kinds
from .schema import check_data, child

__all__ = ["DATA_ERRORS", "MAX_JSON_BYTES", "MAX_NESTING", "SCHEMA_VERSION", "STALE_TEMP_S",
           "PathArg", "ResultsFile", "ResultsFileError", "load", "load_file", "parse_fastbench",
           "read_json", "save", "sniff_format", "wrong_format"]

# Schema history (bump on any change a version-1 reader would misread; say what changed):
# 1 - first version: {"schema_version", "kind", "fastbench_version", "created", "machine",
#     "data"}; kinds "measurement" (Measurement.to_dict) and "measurements" (an object
#     mapping names to Measurement.to_dict).
# 2 - a Measurement may carry "memory" (CallMemory.to_dict: peak RSS increase and Python
#     heap peak per call, method); version-1 files still load, without memory.
# 3 - a Measurement may carry "identity" (Identity.to_dict: hashes of the code and the
#     arguments, git commit and uncommitted changes, versions); earlier files load without
#     one, and are then no replicates of anything.
SCHEMA_VERSION = 3

# The most JSON text a results file may hold (after gzip decompression), read as a stream
# and refused beyond it: a 1 MB gzip file of one repeated byte expands to gigabytes. A
# measurement takes about 25 bytes per sample, so 256 MiB holds some ten million samples, ten
# times the largest runs fastbench is used for; parsing that much takes about 1 GB of memory
# (text, Python floats, arrays). Raise it (fastbench.results.files.MAX_JSON_BYTES) to read
# larger files.
MAX_JSON_BYTES = 256 * 2**20

# The deepest nesting of arrays and objects a results file may have. fastbench's own files
# nest 7 levels at most (a model analysis's shapes), pyperf's and pytest-benchmark's as
# many; far deeper data is not a results file, and would make recursive code (from_dict,
# repr, saving it again) raise RecursionError later.
MAX_NESTING = 100

# Temporary files save() leaves behind when killed (kill -9, power loss) are removed by a
# later save into the same directory once they are this old: far longer than any save
# takes, so a save running in another process keeps its file.
STALE_TEMP_S = 600.0

PathArg = Union[str, "os.PathLike[str]"]

_GZIP_MAGIC = b"\x1f\x8b"


class ResultsFileError(FastbenchError, ValueError):
    """A results file cannot be read: not JSON, not this format, or malformed data.

    The message names the file and the problem (and the field, for malformed data).
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


def new_file_mode(target: Path) -> int:
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


def _os_error(cls: type[OSError], code: int, message: str) -> OSError:
    """An OSError of ``code`` whose text is ``message`` alone (no "[Errno N]" before it)."""
    error = cls(message)
    error.errno = code
    return error


def _file_to_write(target: Path) -> Path:
    """The file save() replaces: ``target`` itself, or the file its symbolic links lead to
    (so the link stays a link and the file it names gets the new data).

    Raises
    ------
    OSError
        The links loop or lead nowhere a file can be (ELOOP); ``target`` is a directory
        (IsADirectoryError) or something other than a regular file, such as a device or a
        pipe, which a rename would replace; the file is read-only (PermissionError).
    """
    real = Path(os.path.realpath(target)) if target.is_symlink() else target
    if real.is_symlink():  # realpath stops at a loop
        raise _os_error(OSError, errno.ELOOP, f"cannot save to {target}: its symbolic links loop")
    try:
        info = real.stat()
    except OSError:  # no such file yet (or unreachable: creating the temp file will say)
        return real
    if stat.S_ISDIR(info.st_mode):
        raise _os_error(IsADirectoryError, errno.EISDIR,
                        f"cannot save to {target}: it is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise _os_error(OSError, errno.EINVAL, f"cannot save to {target}: it is not a regular "
                        "file (a device, pipe or socket would be replaced by one)")
    # A file without write permission is one its owner chose to keep: os.replace needs only
    # the directory's permission and would swap it silently (for root, os.access always
    # says yes, so the mode bits count too).
    if not info.st_mode & 0o222 or not os.access(real, os.W_OK):
        which = "the file it links to" if real != target else "the file"
        raise _os_error(PermissionError, errno.EACCES, f"cannot save to {target}: {which} is "
                        "read-only; make it writable (chmod u+w) or choose another path")
    return real


# A temporary file of save(): tempfile's ".NAME." + 8 random characters + ".tmp", holding
# the start of the JSON save() writes (or nothing yet).
_TEMP_NAME = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp", re.DOTALL)
_TEMP_HEAD = b'{\n "schema_version": '


def _remove_stale_temps(directory: Path) -> None:
    """Remove the temporary files of saves into ``directory`` that were killed before they
    could clean up (kill -9, a crash): files of our name pattern and content, owned by this
    user, untouched for STALE_TEMP_S. Best effort: a file that cannot be checked is kept."""
    cutoff = time.time() - STALE_TEMP_S
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    try:
        entries = [e for e in os.scandir(directory) if _TEMP_NAME.fullmatch(e.name)]
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
            if (not stat.S_ISREG(info.st_mode) or info.st_mtime > cutoff
                    or (uid is not None and info.st_uid != uid)):
                continue
            with open(entry.path, "rb") as f:
                head = f.read(len(_TEMP_HEAD))
            if _TEMP_HEAD.startswith(head):  # what a save had written when it died
                os.unlink(entry.path)
        except OSError:
            continue


def save(obj: object, path: PathArg) -> None:
    """Write ``obj`` to ``path`` as a versioned fastbench JSON file, atomically.

    The file holds ``{"schema_version", "kind", "fastbench_version", "created",
    "machine", "data"}``, with ``machine`` from :func:`machine_metadata`. The JSON is
    written to a temporary file ``.NAME.XXXXXXXX.tmp`` in the same directory, flushed and
    fsynced, then moved onto ``path`` with ``os.replace``: readers see the old file or the
    new one, never half of one. Floats are written with ``repr``, so they read back bit
    for bit.

    A symbolic link at ``path`` is written through: the file it leads to is replaced (its
    temporary file is made beside it), and the link stays. A read-only file is refused, not
    replaced. Temporary files that a killed save left in the directory (our name pattern
    and content, older than STALE_TEMP_S, 10 minutes) are removed.

    Saving measurements also adds each one's figure to the replicates of its identity on
    this machine (:mod:`fastbench.replicates`; the run log, off with ``FASTBENCH_RUN_LOG=0``):
    results of identical code saved again teach later comparisons how much such results
    vary here.

    Parameters
    ----------
    obj : Measurement, mapping or sequence of Measurement, or another result kind
        Comparison, StatResult, SimulatedCounts, Roofline, ModelAnalysis (see
        :data:`.kinds.BUILTIN_KINDS`), or a class added with :func:`register_kind`.
        A mapping is stored under its keys (str). A sequence is stored under each
        measurement's ``name`` ("measurement" when empty), with ``#2``, ``#3``...
        appended to repeated names. It must hold at least one measurement.
    path : str or os.PathLike
        Target file (or a symbolic link to it); its directory must exist. An existing
        writable file is replaced.

    Raises
    ------
    TypeError
        ``obj`` is of no known kind (the message lists them), or a collection holds
        something other than measurements under str names.
    ValueError
        The data holds NaN or infinity, which standard JSON cannot represent, or the
        mapping or sequence is empty.
    PermissionError
        ``path`` (or the file its link leads to) is read-only, or the directory is not
        writable.
    OSError
        The file cannot be written: ``path`` is a directory, a device or pipe, a link loop,
        or in a missing directory. In every failure case ``path`` is left as it was and the
        temporary file is removed.
    """
    kind = kind_of(obj)
    target = Path(os.fspath(path))
    data = kind.to_data(obj)
    bad = _find_nonfinite(data, "data")
    if bad is not None:
        raise ValueError(f"cannot save to {target}: {bad}, and JSON has no NaN or infinity")
    real = _file_to_write(target)
    machine = machine_metadata()
    document = {
        "schema_version": SCHEMA_VERSION,
        "kind": kind.name,
        "fastbench_version": __version__,
        "created": machine["timestamp"],
        "machine": machine,
        "data": data,
    }
    _remove_stale_temps(real.parent)
    mode = new_file_mode(real)
    tmp = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", delete=False, dir=real.parent,
        prefix=f".{real.name}.", suffix=".tmp",
    )  # fmt: skip
    try:
        with tmp:
            # allow_nan=False backs up the check above for anything it cannot see.
            json.dump(document, tmp, indent=1, ensure_ascii=False, allow_nan=False)
            tmp.write("\n")
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp.name, mode)
        os.replace(tmp.name, real)
    except BaseException:
        try:
            os.unlink(tmp.name)
        except OSError:
            pass
        raise
    _fsync_dir(real.parent)
    if kind.name in ("measurement", "measurements"):
        _log_runs(obj)


def _log_runs(obj: Any) -> None:
    """Remember the figure of each measurement saved among the replicates of its identity
    on this machine (:mod:`fastbench.replicates`): results of identical code saved again
    teach how much such results vary here."""
    if isinstance(obj, Mapping):
        obj = obj.values()
    elif not isinstance(obj, (list, tuple)):
        obj = [obj]
    record_replicates(obj)


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


_CHUNK_BYTES = 2**20


def _read_at_most(stream: Any, limit: int) -> bytearray:
    """Up to ``limit`` + 1 bytes of ``stream``, read in chunks: memory grows with what the
    stream holds, not with the limit."""
    out = bytearray()
    while len(out) <= limit:
        chunk = stream.read(min(_CHUNK_BYTES, limit + 1 - len(out)))
        if not chunk:
            break
        out += chunk
    return out


def _open_regular(path: PathArg) -> Any:
    """``path`` opened for reading in binary, if it is a regular file: a FIFO, a device or a
    directory is ResultsFileError naming it. Opened without blocking first, since opening a
    FIFO waits for a writer that may never come."""
    fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK)  # FileNotFoundError names it
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "a device")
            raise ResultsFileError(f"{path} is {what}, not a results file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_capped(path: PathArg) -> bytearray:
    """The file's bytes, decompressed if gzip, as a stream that stops past MAX_JSON_BYTES."""
    with _open_regular(path) as f:
        compressed = f.read(2) == _GZIP_MAGIC
        f.seek(0)
        if compressed:
            try:
                with gzip.GzipFile(fileobj=f, mode="rb") as stream:
                    raw = _read_at_most(stream, MAX_JSON_BYTES)
            except (OSError, EOFError, zlib.error) as exc:
                raise ResultsFileError(
                    f"{path} is not a valid gzip file (truncated?): {exc}") from exc
        else:
            raw = _read_at_most(f, MAX_JSON_BYTES)
    if len(raw) > MAX_JSON_BYTES:
        what = "decompresses to" if compressed else "holds"
        raise ResultsFileError(
            f"{path} {what} more than {MAX_JSON_BYTES:,} bytes of JSON, the most a results "
            "file may hold (fastbench.results.files.MAX_JSON_BYTES): it is not a results "
            "file, or raise that limit to read it")
    return raw


def _check_parsed(path: PathArg, doc: Any) -> None:
    """Refuse nesting deeper than MAX_NESTING and numbers that overflowed to infinity
    (``1e999`` is valid JSON and parses as inf), naming where. Iterative: no recursion."""
    stack: list[tuple[Any, str, int]] = [(doc, "", 1)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_NESTING:
            raise ResultsFileError(
                f"{path} nests arrays and objects more than {MAX_NESTING} levels deep "
                "(fastbench.results.files.MAX_NESTING); results files nest a few levels")
        if isinstance(value, dict):
            items: Any = value.items()
        elif isinstance(value, list):
            if all(type(v) is float for v in value):  # samples: millions of plain floats
                if any(map(math.isinf, value)):
                    i = next(i for i, v in enumerate(value) if math.isinf(v))
                    raise _overflowed(path, child(where, i))
                continue
            items = enumerate(value)
        else:
            if isinstance(value, float) and math.isinf(value):
                raise _overflowed(path, where)
            continue
        for key, item in items:
            if isinstance(item, (dict, list)) or (isinstance(item, float) and math.isinf(item)):
                stack.append((item, child(where, key), depth + 1))


def _overflowed(path: PathArg, where: str) -> ResultsFileError:
    return ResultsFileError(f"{path}: {where or 'the document'} is a number too large for a "
                            "float (it reads as infinity), which no results file holds")


def read_json(path: PathArg) -> Any:
    """Parse a JSON file, gzip-compressed or not (told apart by content, not name).

    At most MAX_JSON_BYTES of JSON text (after decompression) nested at most MAX_NESTING
    deep, without numbers that overflow a float; ResultsFileError naming the file otherwise.
    """
    raw = _read_capped(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"{path} is not a JSON text file (not UTF-8: {exc})") from exc
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(f"{path} is not valid JSON (truncated?): {exc}") from exc
    except ValueError as exc:  # NaN / Infinity, an integer of more than 4300 digits
        raise ResultsFileError(f"{path} is not valid JSON: {exc}") from exc
    except RecursionError:  # the parser recurses once per level
        raise ResultsFileError(
            f"{path} nests arrays and objects more than {MAX_NESTING} levels deep "
            "(fastbench.results.files.MAX_NESTING); results files nest a few levels") from None
    _check_parsed(path, doc)
    return doc


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


# What a kind's from_data may raise on data it cannot use. check_data stops malformed data
# of the built-in kinds first; this also catches what a registered kind's from_data raises
# beyond the documented ValueError, TypeError and KeyError (a list where it expected an
# object: AttributeError; int(1e300 * 10): OverflowError).
DATA_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError,
               RecursionError)


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
        check_data(kind.name, doc["data"])
        obj = kind.from_data(doc["data"])
    except DATA_ERRORS as exc:
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
        No such file (other OSErrors for a directory or an unreadable file).
    ResultsFileError
        The message names the file and says which problem it has: not valid JSON
        (truncated?), larger than MAX_JSON_BYTES once decompressed, nested deeper than
        MAX_NESTING, not a fastbench file (naming the reader for pyperf or
        pytest-benchmark files), another schema version, an unknown kind, or malformed
        data: then it names the field and what it must hold (``data['a']['loops'] must be
        a positive integer, got 2.7``). Data is checked against what the kind writes: no
        negative or non-finite times, integer counts, no empty collections.
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

