"""Other tools' results files read as fastbench measurements: pyperf and pytest-benchmark
JSON, and :func:`load_any`, which tells the three formats apart by content. Reading only:
fastbench never writes these formats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..measurement import MAX_SAMPLE_NS, MIN_SAMPLE_NS, Measurement
from .files import (DATA_ERRORS, PathArg, ResultsFileError, parse_fastbench, read_json,
                    sniff_format, wrong_format)
from .kinds import json_type, unique_name
from .schema import MAX_INT, integer, numbers, shown

__all__ = ["load_any", "load_pyperf", "load_pytest_benchmark"]

_NS_PER_S = 1e9


_seconds = numbers(0.0)
_positive_int = integer(1)


def _times_ns(values: Any, what: str) -> NDArray[np.float64]:
    """Seconds (a list of numbers) to a float64 array of ns; ValueError naming the value
    when one is negative, not finite, or not a number (times are durations: never below 0)."""
    _seconds(values, what)
    with np.errstate(over="ignore"):  # found below, with the value named
        arr = np.asarray(values, dtype=np.float64) * _NS_PER_S
    if not np.all(np.isfinite(arr)):  # seconds near the largest float overflow as ns
        i = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{what}[{i}] is too large a time, got {values[i]!r} s")
    # A time per call outside what a measurement can hold (a femtosecond to ~30 years): a
    # denormal such as 5e-324 s would overflow every ratio taken of it.
    bad = np.flatnonzero((arr < MIN_SAMPLE_NS) | (arr > MAX_SAMPLE_NS))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{what}[{i}] is not a time per call ({values[i]!r} s; from "
                         f"{MIN_SAMPLE_NS / _NS_PER_S:g} to {MAX_SAMPLE_NS / _NS_PER_S:g} s)")
    return arr


def _elapsed_s(samples_ns: NDArray[np.float64], loops: int, what: str) -> float:
    """Summed duration of the samples in s, ``loops`` calls each."""
    try:
        total = math.fsum(samples_ns) * loops / _NS_PER_S
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise ValueError(f"{what} add up to more time than a float holds")
    return total


def _int_field(mapping: Mapping[str, Any], key: str, default: int, what: str) -> int:
    value = mapping.get(key, default)
    _positive_int(value, f"{what}: {key}")
    result: int = value
    return result


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
        own_meta = run.get("metadata") or {}
        if not isinstance(own_meta, dict):
            raise ValueError(f"{what}: metadata must be an object, got {json_type(own_meta)}")
        run_meta = {**meta, **own_meta}  # run overrides benchmark overrides file
        unit = run_meta.get("unit", "second")
        if unit != "second":
            raise ValueError(f"benchmark {name!r} measures {shown(unit)}, not time in seconds")
        values = run.get("values", [])  # calibration runs have none
        if not isinstance(values, list):
            raise ValueError(f"{what}: values must be a list of numbers, got {json_type(values)}")
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
        if loops > MAX_INT:
            raise ValueError(f"{what}: loops x inner_loops must be at most 2**63 - 1, got "
                             f"{loops:.3g}")
        run_samples = _times_ns(values, f"{what}: values")
        samples.append(run_samples)
        # Since pyperf 1.0 (JSON format '1.0') warmup values are per iteration too.
        warmups.append(_times_ns([w[1] for w in run_warmups], f"{what}: warmup values"))
        loops_seen.append(loops)
        elapsed_s += _elapsed_s(run_samples, loops, f"{what}: values")
    if not samples:
        raise ValueError(f"benchmark {name!r} has no values (only calibration runs)")
    if not math.isfinite(elapsed_s):
        raise ValueError(f"benchmark {name!r}: the runs add up to more time than a float holds")
    several = len(samples) > 1  # pyperf's runs are worker processes: kept as runs
    return _imported(
        np.concatenate(samples), min(loops_seen), np.concatenate(warmups),
        "pyperf:perf_counter", name, elapsed_s, calibration_trials=calibration_trials,
        run_lengths=tuple(x.size for x in samples) if several else (),
        run_loops=tuple(loops_seen) if several else (),
    )


def _parse_pyperf(path: PathArg, doc: Any) -> dict[str, Measurement]:
    if sniff_format(doc) != "pyperf":
        raise wrong_format(path, doc, "pyperf")
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
            out[unique_name(m.name, set(out))] = m
    except DATA_ERRORS as exc:
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
        "benchmark<i>" when unnamed). ``samples_ns``: every value of every run in ns, with
        ``run_lengths`` / ``run_loops`` saying which run (worker process) took which, so
        comparisons judge pyperf results by their runs;
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
    return _parse_pyperf(path, read_json(path))


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
    samples = _times_ns(stats["data"], f"benchmark {name!r}: stats.data")
    if samples.size == 0:
        raise ValueError(f"benchmark {name!r} has no rounds")
    options = bench.get("options")
    timer = options.get("timer") if isinstance(options, dict) else None
    return _imported(
        samples, iterations, np.empty(0, dtype=np.float64),  # pytest-benchmark keeps no warmups
        f"pytest-benchmark:{timer or 'perf_counter'}", name,
        _elapsed_s(samples, iterations, f"benchmark {name!r}: stats.data"),
    )


def _imported(samples: NDArray[np.float64], loops: int, warmups: NDArray[np.float64],
              clock: str, name: str, elapsed_s: float, calibration_trials: int = 0,
              run_lengths: tuple[int, ...] = (), run_loops: tuple[int, ...] = ()) -> Measurement:
    """A Measurement of another tool's samples: those tools measure no floors, so the floors
    are 0 and ``call_floor_kind`` says "unknown"."""
    return Measurement(
        samples_ns=samples, loops=loops, warmup_samples_ns=warmups, clock=clock,
        overhead_ns=0.0, overhead_mad_ns=0.0, call_floor_ns=0.0, call_floor_mad_ns=0.0,
        call_floor_kind="unknown", name=name, calibration_trials=calibration_trials,
        elapsed_s=elapsed_s, run_lengths=run_lengths, run_loops=run_loops,
    )


def _parse_pytest_benchmark(path: PathArg, doc: Any) -> dict[str, Measurement]:
    if sniff_format(doc) != "pytest-benchmark":
        raise wrong_format(path, doc, "pytest-benchmark")
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
    except DATA_ERRORS as exc:
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
        out[unique_name(key, set(out))] = m
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
    return _parse_pytest_benchmark(path, read_json(path))


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
    doc = read_json(path)
    fmt = sniff_format(doc)
    if fmt == "pyperf":
        return _parse_pyperf(path, doc)
    if fmt == "pytest-benchmark":
        return _parse_pytest_benchmark(path, doc)
    if fmt != "fastbench":
        what = "an object" if isinstance(doc, dict) else json_type(doc)
        raise ResultsFileError(
            f"{path} is not a fastbench, pyperf or pytest-benchmark results file: it holds "
            f"{what} in no format fastbench knows"
        )
    result = parse_fastbench(path, doc)
    if isinstance(result.obj, Measurement):
        return {result.obj.name or "measurement": result.obj}
    if result.kind == "measurements":
        measurements: dict[str, Measurement] = result.obj
        return measurements
    raise ResultsFileError(
        f"{path} holds a {result.kind!r}, not measurements: read it with fastbench.results.load()"
    )
