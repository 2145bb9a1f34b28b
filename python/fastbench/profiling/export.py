"""A profile written for other tools: the Chrome trace (Trace Event Format) that
chrome://tracing, Perfetto and speedscope load, one track per thread with modules nested
over their ops; and folded stacks ("a;b;c N") for flamegraph.pl and speedscope.

It converts and writes, never measures: the timeline is the collector's
(:attr:`.Profile.events`, gross of the profiler's cost, as observed), the folded stacks are
the cells' (net of it). Writing goes through a temporary file, so a failed write leaves no
half a trace behind.
"""

from __future__ import annotations

import errno
import gzip
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

import numpy as np

from .._version import __version__
from ..results.files import new_file_mode
from .result import NOT_IN_OP, OUTSIDE, Profile, TraceEvent

__all__ = ["PROCESS_ID", "chrome_trace", "folded_stacks", "write_chrome_trace",
           "write_folded"]

PathArg = Union[str, "os.PathLike[str]"]

# The trace holds one profile of one process; viewers need some process id and show it, so
# a fixed one keeps two traces of the same run byte for byte alike.
PROCESS_ID = 1

# At equal start and duration (a module whose only content is one op, timed by the same
# clock reads) a viewer nests events in file order: parents must come first.
_CAT_DEPTH = {"step": 0, "region": 1, "module": 2, "op": 3}

# The root module's frame and event name, as the profile's tables print it.
_MODEL = "(model)"


def _json_safe(value: Any) -> Any:
    """``value`` as plain JSON data a browser's JSON.parse accepts: mappings with str keys,
    lists, str, int, finite float, bool, None. numpy scalars and arrays become numbers and
    lists, NaN and infinities become null (JSON has neither), anything else its text."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [_json_safe(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return str(value)


def _check_profile(profile: Any) -> Profile:
    if not isinstance(profile, Profile):
        raise TypeError(f"profile must be a fastbench Profile (from fastbench.profile or "
                        f"fastbench.load), got {type(profile).__name__}")
    return profile


def _module_depth(e: TraceEvent) -> int:
    if e.cat != "module":
        return 0
    return 0 if e.name == "" else e.name.count(".") + 1


def _event_order(e: TraceEvent) -> tuple[int, int, int, int, int]:
    # Longest first at one start, then the outer category, then the shallower module: the
    # order in which intervals that start together enclose each other.
    return (e.thread, e.start_ns, -e.dur_ns, _CAT_DEPTH.get(e.cat, len(_CAT_DEPTH)),
            _module_depth(e))


def _thread_names(profile: Profile, threads: list[int]) -> dict[int, str]:
    given = profile.meta.get("thread_names")
    names: dict[int, str] = {}
    for t in threads:
        name = given.get(str(t), given.get(t)) if isinstance(given, Mapping) else None
        names[t] = str(name) if name else f"thread {t}"
    return names


def chrome_trace(profile: Profile) -> dict[str, Any]:
    """The profile's timeline in the Trace Event Format (the JSON object form).

    Every :class:`.TraceEvent` becomes a complete event (``"ph": "X"``) with ``name``,
    ``cat`` (step, region, module, op), ``ts`` and ``dur`` in microseconds (floats, from the
    event's nanoseconds), ``pid`` (:data:`PROCESS_ID`), ``tid`` (the event's thread) and
    ``args``; metadata events (``"ph": "M"``) name the process and each thread. Events are
    sorted by thread and start, and at an equal start the enclosing one comes first, so
    viewers nest modules over their ops. Times are as observed (gross of the profiler's
    cost); ``otherData`` says so and carries the profile's ``meta``.

    Parameters
    ----------
    profile : Profile

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``, plain
        JSON data (``json.dumps`` writes it as is).

    Raises
    ------
    TypeError
        ``profile`` is not a Profile.
    ValueError
        An event has a negative duration.
    """
    profile = _check_profile(profile)
    for e in profile.events:
        if e.dur_ns < 0:
            raise ValueError(f"profile.events holds {e.cat} event {e.name!r} at "
                             f"{e.start_ns} ns with a negative duration ({e.dur_ns} ns)")
    events = sorted(profile.events, key=_event_order)
    threads = sorted({e.thread for e in events} or {0})
    process = f"fastbench profile: {profile.meta.get('name', 'run')}"
    out: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PROCESS_ID, "tid": threads[0],
         "args": {"name": process}}]
    for t, name in _thread_names(profile, threads).items():
        out.append({"name": "thread_name", "ph": "M", "pid": PROCESS_ID, "tid": t,
                    "args": {"name": name}})
        out.append({"name": "thread_sort_index", "ph": "M", "pid": PROCESS_ID, "tid": t,
                    "args": {"sort_index": t}})
    for e in events:
        name = _MODEL if e.cat == "module" and e.name == "" else e.name
        out.append({"name": name, "cat": e.cat, "ph": "X", "ts": e.start_ns / 1e3,
                    "dur": e.dur_ns / 1e3, "pid": PROCESS_ID, "tid": e.thread,
                    "args": _json_safe(e.args)})
    other: dict[str, Any] = {
        "producer": f"fastbench {__version__}",
        "times": "as observed, with the profiler's own cost inside; the profile's tables "
                 "are net of it",
        "steps": profile.steps,
        "step_time_median_s": float(np.median(profile.step_times)) if profile.steps else None,
        "overhead": profile.overhead.to_dict(),
        "meta": profile.meta,
    }
    if not profile.events:
        other["note"] = "this profile recorded no timeline events"
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": _json_safe(other)}


def _frame(name: str) -> str:
    # ";" separates frames and a line ends the stack: neither may appear inside one.
    return name.replace(";", ",").replace("\r", " ").replace("\n", " ")


def folded_stacks(profile: Profile) -> str:
    """The profile's cells as folded stacks, one line per stack, for flamegraph.pl,
    inferno and speedscope: ``model forward;(model);layer1;layer1.0;layer1.0.conv1;
    aten::convolution 1234``.

    A stack is the cell's region (the innermost one the user named, else "model forward",
    "model backward" or "outside any module"), then the module path expanded into its
    ancestors, root first ("(model)" for the model itself), or "outside any module" for
    cells outside it, then the op (the time between ops as "(not in an op)"). The count is
    the stack's time in whole microseconds summed over all steps, net of the profiler's
    cost; cells of one stack (an op with several input shapes) are added before rounding,
    and stacks that round to zero or below (a between-op remainder after subtraction) are
    left out, as flame graphs draw no negative width. Lines are sorted, as
    stackcollapse's are.

    Raises
    ------
    TypeError
        ``profile`` is not a Profile.
    """
    profile = _check_profile(profile)
    totals: dict[str, float] = {}
    for c in profile.cells:
        frames = [c.key("region")]
        if c.module == OUTSIDE:
            frames.append(OUTSIDE)
        else:
            frames.append(_MODEL)
            parts = c.module.split(".") if c.module else []
            frames.extend(".".join(parts[:i + 1]) for i in range(len(parts)))
        frames.append(c.op or NOT_IN_OP)
        # The region "outside any module" is also the module frame: one frame, not two.
        if len(frames) > 1 and frames[0] == frames[1]:
            frames.pop(0)
        stack = ";".join(_frame(f) for f in frames)
        totals[stack] = totals.get(stack, 0.0) + float(np.sum(c.times))
    lines = []
    for stack in sorted(totals):
        us = int(round(totals[stack] * 1e6))
        if us > 0:
            lines.append(f"{stack} {us}")
    return "".join(line + "\n" for line in lines)


def _write(path: PathArg, text: str, what: str) -> Path:
    """Write ``text`` to ``path`` (gzip when it ends in .gz) through a temporary file in the
    same directory; OSError naming the path and what to do when it cannot be written."""
    target = Path(os.fspath(path))
    if target.is_dir():
        error: OSError = IsADirectoryError(f"cannot write the {what} to {target}: it is a "
                                           "directory; give a file name")
        error.errno = errno.EISDIR
        raise error
    data = text.encode("utf-8")
    if target.name.endswith(".gz"):
        # mtime=0: the same profile gives the same bytes.
        data = gzip.compress(data, mtime=0)
    tmp_name = ""
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                        dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp_name, new_file_mode(target))   # mkstemp's 0o600 would stay
        os.replace(tmp_name, target)
    except OSError as exc:
        if tmp_name:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
        if isinstance(exc, FileNotFoundError) and not target.parent.is_dir():
            reason = f"its directory {target.parent} does not exist"
        else:
            reason = exc.strerror or str(exc)
        error = type(exc)(f"cannot write the {what} to {target}: {reason}; choose a "
                          "writable path")
        error.errno = exc.errno
        raise error from exc
    return target


def write_chrome_trace(profile: Profile, path: PathArg) -> Path:
    """Write :func:`chrome_trace` of ``profile`` as JSON to ``path`` (gzip-compressed when
    the name ends in ``.gz``, which Perfetto and chrome://tracing open as is).

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    TypeError
        ``profile`` is not a Profile.
    ValueError
        An event has a negative duration.
    OSError
        The file cannot be written (missing directory, a directory at ``path``, no
        permission); the message names the path. Nothing is left behind.
    """
    text = json.dumps(chrome_trace(profile), separators=(",", ":"), allow_nan=False)
    return _write(path, text, "Chrome trace")


def write_folded(profile: Profile, path: PathArg) -> Path:
    """Write :func:`folded_stacks` of ``profile`` to ``path`` (gzip-compressed when the name
    ends in ``.gz``): ``flamegraph.pl PATH > flame.svg``, or open it in speedscope.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    TypeError
        ``profile`` is not a Profile.
    OSError
        The file cannot be written; the message names the path.
    """
    return _write(path, folded_stacks(profile), "folded stacks")
