"""A seeded fuzz test of the results loaders: random mutations of valid files of every kind
(fastbench's built-in kinds, pyperf and pytest-benchmark files) either load, holding no
impossible value, or fail with a ResultsFileError that names the file. Nothing else may
escape: no AttributeError, OverflowError, RecursionError or numpy warning. Whatever loads
renders: as text (what the command line prints, a comparison of two loaded measurements
included), as JSON again, and a profile as a trace and folded stacks, without raising and
without an "inf" or "nan" in the text.

The mutations are those a hostile tester or a damaged disk makes: values of another JSON
type, deleted fields and items, negatives, huge and non-finite numbers, deep nesting, empty
containers, unknown keys, another kind's name, truncated text, flipped bytes, gzip (whole or
cut). A failure prints its case number and mutations; the seed makes it replay.
"""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import math
import random
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastbench
from _results_helpers import (BUILDERS, DATA, PYPERF_FILES, PYTEST_BENCHMARK_FILES,
                              PYTEST_BENCHMARK_NO_DATA, read_raw, synthetic, write_json)
from fastbench import results
from fastbench.counters import SampleCounts
from fastbench.memory import CallMemory
from fastbench.profiling import Profile
from fastbench.profiling.export import chrome_trace, folded_stacks
from fastbench.profiling.result import BYS
from fastbench.results import ResultsFileError, kinds

SEED = 17
CASES = 400
# The slow run's cases, after the default run's.
SLOW_CASES = 4000
# A figure that cannot be: inf or nan as a number with its unit or sign (not a word such as
# a command's argument "nan").
_IMPOSSIBLE = re.compile(r"(?<![A-Za-z])[-+±]?\s?(?:inf|nan)(?:%|x\b|\s?[kMGTµmnp]?(?:s|B|J|W)\b)",
                         re.IGNORECASE)

# Values swapped in for whatever a field held.
_SWAPS: list[Any] = [None, True, False, 0, 1, -1, 2.7, -2.5, 0.0, -0.0, "12", "", "nan",
                     [], {}, [1, 2], [None], {"a": 1}, 1e308, -1e308, 5e-324, 2**63, 2**64,
                     -(2**63) - 1, 10**30, [[[]]]]
# Number literals that json.dumps cannot write: placed as markers, then spliced into the text.
_LITERALS = ["1e999", "-1e999", "1e400", "NaN", "Infinity", "-Infinity",
             "1" * 5000, "-0", "1E+2"]


def _rich_measurement() -> fastbench.Measurement:
    """A measurement with every optional part: counters, memory, two runs."""
    counters = SampleCounts(loops=10, per_sample={"instructions": [100.0] * 14 + [float("nan")],
                                                  "cycles": [50.5] * 15},
                            running_fraction={"instructions": 1.0, "cycles": 0.5},
                            scaled=True, overhead={"instructions": 3.0, "cycles": 1.0},
                            skipped={"branch-misses": "not supported"})
    memory = CallMemory(peak_increase_bytes=(4096, 8192, 0), python_peak_bytes=(10, 20, 30),
                        cuda_peak_bytes=None, method="VmHWM after clear_refs", exact=True,
                        warmup_calls=1)
    m = synthetic("rich", counters=counters, memory=memory, target_rel_ci=0.01,
                  run_variation=0.02, run_variation_df=4, warnings=("few samples: 15",))
    return dataclasses.replace(m, samples_ns=m.samples_ns[:15], run_lengths=(10, 5),
                               run_loops=(1234, 1000))


def _seeds(tmp: Path) -> list[tuple[str, str, Any]]:
    """(label, format, document) of one valid file of each kind and tool."""
    objects: dict[str, Any] = {kind: build() for kind, (build, _) in BUILDERS.items()}
    objects["rich measurement"] = _rich_measurement()
    out: list[tuple[str, str, Any]] = []
    for label, obj in objects.items():
        path = tmp / "seed.json"
        results.save(obj, path)
        results.load(path)  # valid to begin with
        out.append((label, "fastbench", json.loads(path.read_text(encoding="utf-8"))))
    for name in PYPERF_FILES:
        out.append((name, "pyperf", read_raw(DATA / name)))
    for name in [*PYTEST_BENCHMARK_FILES, PYTEST_BENCHMARK_NO_DATA]:
        out.append((name, "pytest-benchmark", read_raw(DATA / name)))
    return out


# -- mutations -------------------------------------------------------------------------------


def _slots(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) in the document, parents before children."""
    out: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node))
        for key in keys:
            out.append((node, key))
            if isinstance(node[key], (dict, list)):
                stack.append(node[key])
    return out


def _pick(rng: random.Random, doc: Any, fmt: str) -> tuple[Any, Any] | None:
    slots = _slots(doc)
    if not slots:
        return None
    # Mostly inside what the loaders rebuild: "data" of our files, "benchmarks" of theirs.
    core = "data" if fmt == "fastbench" else "benchmarks"
    inner = [s for s in slots if s[0] is not doc] if rng.random() < 0.85 else slots
    if isinstance(doc, dict) and isinstance(doc.get(core), (dict, list)):
        under = _slots(doc[core])
        if under and rng.random() < 0.85:
            inner = under
    return rng.choice(inner or slots)


def _nest(rng: random.Random, value: Any, literals: list[str]) -> Any:
    depth = rng.choice([1, 2, 5, 40, 97, 98, 99, 100, 101, 150, 100_000])
    if depth > 500:  # deeper than json.dumps can write: spliced in as text
        literals.append("[" * depth + "]" * depth)
        return f"@@{len(literals) - 1}@@"
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def _mutate(rng: random.Random, doc: Any, fmt: str, literals: list[str]) -> str:
    """Change ``doc`` in place once; a short description of what was done."""
    slot = _pick(rng, doc, fmt)
    if slot is None:
        return "nothing to mutate"
    parent, key = slot
    value = parent[key]
    how = rng.choice(["swap", "swap", "delete", "negate", "literal", "literal", "nest",
                      "empty", "grow", "kind"])
    if how == "kind" and fmt == "fastbench" and isinstance(doc, dict):
        doc["kind"] = rng.choice([*kinds.BUILTIN_KINDS, "nonsense", 3, None])
        return f"kind -> {doc['kind']!r}"
    if how == "delete":
        del parent[key]
        return f"delete {key!r}"
    if how == "negate" and isinstance(value, (int, float)) and not isinstance(value, bool):
        parent[key] = -value if value else -1
        return f"negate {key!r}"
    if how == "literal":
        literal = rng.choice(_LITERALS)
        parent[key] = f"@@{len(literals)}@@"
        literals.append(literal)
        return f"{key!r} -> {literal[:12]}"
    if how == "nest":
        parent[key] = _nest(rng, value, literals)
        return f"nest {key!r}"
    if how == "empty" and isinstance(value, (dict, list)):
        parent[key] = type(value)()
        return f"empty {key!r}"
    if how == "grow" and isinstance(value, list):
        # Copies: an object met twice in a document (or kept in _SWAPS between cases) would
        # grow by itself into a graph that writes out exponentially or never.
        value.append(copy.deepcopy(rng.choice(value) if value and rng.random() < 0.5
                                   else rng.choice(_SWAPS)))
        return f"append to {key!r}"
    if how == "grow" and isinstance(value, dict):
        value[rng.choice(["extra", "", "0"])] = copy.deepcopy(rng.choice(_SWAPS))
        return f"extra key in {key!r}"
    parent[key] = copy.deepcopy(rng.choice(_SWAPS))
    return f"{key!r} -> {parent[key]!r:.20}"


def _case(rng: random.Random, seed_text: str, fmt: str) -> tuple[bytes, list[str]]:
    """A damaged file: its bytes and the list of what was done to it."""
    doc = json.loads(seed_text)
    literals: list[str] = []
    done = [_mutate(rng, doc, fmt, literals) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    text = json.dumps(doc)
    for i, literal in enumerate(literals):
        text = text.replace(f'"@@{i}@@"', literal)
    raw = text.encode("utf-8")
    if rng.random() < 0.08:
        cut = rng.randrange(len(raw))
        raw, done = raw[:cut], [*done, f"truncated at {cut}"]
    if rng.random() < 0.04:
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        raw, done = bytes(data), [*done, "bytes flipped"]
    if rng.random() < 0.12:
        raw = gzip.compress(raw, compresslevel=1)
        done.append("gzip")
        if rng.random() < 0.3:
            cut = rng.randrange(len(raw))
            raw, done = raw[:cut], [*done, f"gzip cut at {cut}"]
    return raw, done


# -- what a successful load must hold -----------------------------------------------------------


def _measurements(obj: Any) -> Iterator[fastbench.Measurement]:
    if isinstance(obj, fastbench.Measurement):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _measurements(value)
    elif hasattr(obj, "measurements") and isinstance(obj.measurements, dict):
        yield from _measurements(obj.measurements)


def _check_loaded(obj: Any) -> None:
    """No impossible value got through: the oracle is what a measurement can be."""
    for m in _measurements(obj):
        assert m.samples_ns.size >= 1
        assert np.all(np.isfinite(m.samples_ns)) and np.all(m.samples_ns >= 0)
        assert np.all(np.isfinite(m.warmup_samples_ns)) and np.all(m.warmup_samples_ns >= 0)
        assert type(m.loops) is int and 1 <= m.loops < 2**63
        assert m.overhead_ns >= 0 and m.call_floor_ns >= 0
        assert sum(m.run_lengths) in (0, m.n) and len(m.run_loops) == len(m.run_lengths)
        assert m.call_floor_ns <= 10 * m.samples_ns.max() and math.isfinite(m.median_ns)


def _render(obj: Any) -> str:
    """Everything the command line and the library show of a loaded object, as text; JSON
    written again on the way."""
    from fastbench.report.text import comparison_lines, measurement_lines

    shown: list[str] = []
    if isinstance(obj, dict):  # measurements by name (importers, load_any, a dict saved)
        ms = [m for m in obj.values() if isinstance(m, fastbench.Measurement)]
        for m in ms:
            shown += measurement_lines(m)
        if len(ms) >= 2:
            c = fastbench.compare_measurements(ms[0], {"other": ms[1]}, baseline_name="first")
            shown += comparison_lines(c)
        return "\n".join(shown)
    if isinstance(obj, fastbench.Measurement):
        shown += measurement_lines(obj)
        c = fastbench.compare_measurements(obj, {"again": obj}, baseline_name="it")
        shown += comparison_lines(c)
    else:
        shown.append(str(obj))
    if isinstance(obj, Profile):  # its other formats: a trace for a viewer, folded stacks
        shown.append(json.dumps(chrome_trace(obj), allow_nan=False))
        shown.append(folded_stacks(obj))
        for by in BYS:
            shown += [str(row) for row in obj.rows(by)]
    elif hasattr(obj, "folded_stacks"):  # a sample profile
        shown += [obj.folded_stacks(), obj.folded_stacks(lines=True)]
    json.dumps(obj.to_dict())
    return "\n".join(shown)


def _readers(fmt: str) -> list[Callable[[Path], Any]]:
    own = {"fastbench": results.load, "pyperf": results.load_pyperf,
           "pytest-benchmark": results.load_pytest_benchmark}[fmt]
    return [own, results.load_any]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, Any]]:
    return _seeds(tmp_path_factory.mktemp("seeds"))


@pytest.mark.parametrize("first, cases", [
    (0, CASES), pytest.param(CASES, SLOW_CASES, marks=pytest.mark.slow)], ids=["default", "slow"])
def test_fuzzed_files_load_or_fail_with_a_results_file_error_naming_the_file(
    tmp_path: Path, seeds: list[tuple[str, str, Any]], first: int, cases: int
) -> None:
    texts = [(label, fmt, json.dumps(doc)) for label, fmt, doc in seeds]
    rng = random.Random(SEED)
    for case in range(first):  # the slow run goes on where the default one stopped
        _case(rng, texts[case % len(texts)][2], texts[case % len(texts)][1])
    escaped: list[str] = []
    outcomes = {"loaded": 0, "refused": 0}
    for case in range(first, first + cases):
        label, fmt, text = texts[case % len(texts)]
        raw, done = _case(rng, text, fmt)
        path = tmp_path / f"case{case}.json"
        path.write_bytes(raw)
        for reader in _readers(fmt):
            try:
                obj = reader(path)
                _check_loaded(obj)
                text = _render(obj)
                found = _IMPOSSIBLE.search(text)
                if found:
                    escaped.append(f"case {case} ({label}: {'; '.join(done)}): "
                                   f"{reader.__name__}: shows {found.group(0)!r}: "
                                   f"{text[max(found.start() - 80, 0):found.end() + 20]!r}")
                outcomes["loaded"] += 1
            except ResultsFileError as exc:
                outcomes["refused"] += 1
                if str(path) not in str(exc):
                    escaped.append(f"case {case} ({label}: {'; '.join(done)}): "
                                   f"{reader.__name__} did not name the file: {exc}")
            except Exception as exc:  # noqa: BLE001 - what the test looks for
                escaped.append(f"case {case} ({label}: {'; '.join(done)}): {reader.__name__} "
                               f"raised {type(exc).__name__}: {str(exc)[:200]}")
        path.unlink()
    assert not escaped, f"{len(escaped)} escaped:\n" + "\n".join(escaped[:20])
    # The mutations are not all fatal: some files still load (an extra key, a warning's
    # text changed), and most are refused.
    assert outcomes["loaded"] > cases // 20 and outcomes["refused"] > cases


def test_every_seed_loads_unchanged(tmp_path: Path, seeds: list[tuple[str, str, Any]]) -> None:
    """The fuzzer starts from valid files: unmutated, each loads (but the pytest-benchmark
    file without per-round data, which is refused whole)."""
    for label, fmt, doc in seeds:
        path = write_json(tmp_path / "plain.json", doc)
        if label == PYTEST_BENCHMARK_NO_DATA:
            with pytest.raises(ResultsFileError, match="no per-round data"):
                _readers(fmt)[0](path)
            continue
        _check_loaded(_readers(fmt)[0](path))
