"""Replicates (fastbench.replicates) and the verdicts of saved results that rest on them: the
A-B-A-B flow of a user checking out two commits in turn, on synthetic saved results whose
invocation effect and true change are known, judged by the library and by `fastbench
compare` with its gate's exit statuses."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fastbench import Measurement, compare_measurements, load, save
from fastbench.identity import Identity
from fastbench.replicates import identity_variation, replicate_variation, series_of

A = Identity(kind="callable", what="mymod.work", code="a" * 32, python="3.11.7", fastbench="x")
B = dataclasses.replace(A, code="b" * 32)


@pytest.fixture
def log_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FASTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FASTBENCH_RUN_LOG", "1")
    return tmp_path


def _single(median_ns: float, identity: Identity | None, n: int = 41) -> Measurement:
    """A single-run measurement whose median is ``median_ns`` (a few samples around it)."""
    wobble = np.array([(-1.0) ** i for i in range(n - 1)] + [0.0])  # median exactly 0
    return Measurement(samples_ns=median_ns * (1.0 + 0.0005 * wobble), loops=10,
                       warmup_samples_ns=np.empty(0), clock="steady", overhead_ns=0.0,
                       overhead_mad_ns=0.0, call_floor_ns=0.0, call_floor_mad_ns=0.0,
                       name="work", workload="callable:w", identity=identity)


def _result(level_ns: float, identity: Identity, seed: int, runs: int = 5,
            spread: float = 0.005) -> Measurement:
    """A result of ``runs`` processes around ``level_ns`` (their medians ``spread`` apart)."""
    rng = np.random.default_rng(seed)
    return Measurement.from_runs([_single(float(level_ns * math.exp(rng.normal(0.0, spread))),
                                          None) for _ in range(runs)], identity=identity)


def test_a_series_is_one_identity_and_number_of_processes(log_on: Path) -> None:
    assert series_of(A, 1) != series_of(A, 5) != series_of(B, 5)
    assert series_of(None, 1) == "" and series_of(Identity(), 1) == ""
    save(_single(100.0, A), log_on / "a1.json")
    save(_single(101.0, A), log_on / "a2.json")
    save(_single(150.0, None), log_on / "x.json")  # no identity: no replicate
    save(_result(100.0, A, seed=1), log_on / "p.json")
    spread = identity_variation(A, 1)
    assert spread is not None and spread.runs == 2 and spread.df == 1
    assert spread.sd == pytest.approx(abs(math.log(101.0 / 100.0)) / math.sqrt(2.0))
    assert identity_variation(A, 5) is None  # one result of 5 processes so far
    assert identity_variation(B, 1) is None


def test_the_abab_flow_never_pools_a_change_of_the_code(log_on: Path) -> None:
    """A (100 µs) and B (20% slower) saved in turn, each invocation a little off: the
    variation comes from A1 against A2 and B1 against B2 only, so the change is found."""
    offsets = (1.0, 1.012, 0.995, 1.008)  # how each invocation ran
    levels = (100_000.0, 120_000.0, 100_000.0, 120_000.0)
    ids = (A, B, A, B)
    for name, level, off, i in zip(("A1", "B1", "A2", "B2"), levels, offsets, ids):
        save(_single(level * off, i), log_on / f"{name}.json")
    a2, b2 = load(log_on / "A2.json"), load(log_on / "B2.json")
    assert isinstance(a2, Measurement) and isinstance(b2, Measurement)
    assert a2.identity == A and b2.identity == B  # saved and read back with the result
    spread = replicate_variation(a2, b2)
    assert spread is not None and spread.series == 2 and spread.runs == 4 and spread.df == 2
    steps = [math.log(0.995 / 1.0), math.log(1.008 / 1.012)]
    assert spread.sd == pytest.approx(math.sqrt(sum(s * s for s in steps) / 4.0))
    r = compare_measurements(a2, {"B2": b2}).results["B2"]
    assert r.verdict == "slower" and r.level == "variation"
    assert r.run_variation == pytest.approx(spread.sd)
    assert any("versions differ in: the code" in w for w in r.warnings)
    # The old key (module, name, argument types) would have put all four in one series:
    # its spread holds the change itself.
    pooled = np.log([lv * o for lv, o in zip(levels, offsets)])
    assert math.sqrt(float(np.sum(np.diff(pooled) ** 2)) / 6.0) > 10 * spread.sd


def test_identical_code_on_both_sides_is_said_and_judged_alike(log_on: Path) -> None:
    for name, off in (("A1", 1.0), ("A2", 1.006), ("A3", 0.998)):
        save(_single(100_000.0 * off, A), log_on / f"{name}.json")
    a1, a3 = load(log_on / "A1.json"), load(log_on / "A3.json")
    assert isinstance(a1, Measurement) and isinstance(a3, Measurement)
    r = compare_measurements(a1, {"A3": a3}).results["A3"]
    assert r.verdict in ("cannot tell", "no significant difference")
    assert any("identical code on both sides" in w for w in r.warnings)


def test_without_replicates_or_a_measured_machine_it_cannot_tell(log_on: Path) -> None:
    a, b = _single(100_000.0, A), _single(120_000.0, B)
    r = compare_measurements(a, {"b": b}).results["b"]
    assert r.verdict == "cannot tell" and r.speedup_ci is None
    assert any("save another result of each version" in w for w in r.warnings)
    # Results of several processes: the runs inside one invocation alone would call it,
    # but how invocations move is not known.
    ra, rb = _result(100_000.0, A, seed=3), _result(105_000.0, B, seed=4)
    r = compare_measurements(ra, {"b": rb}).results["b"]
    assert r.verdict == "cannot tell"
    assert any("how much whole invocations of this code vary here is not known" in w
               for w in r.warnings)


def test_several_processes_a_side_judged_against_their_replicates(log_on: Path) -> None:
    """Each invocation shifts its whole result by an offset (about 3%) its 5 runs (0.5%
    apart) share. Welch's test on the runs of two invocations of the same code 3% apart
    would call them different; against the spread of replicates of identical code (1.6%
    in these 8) it is no change."""
    rng = np.random.default_rng(7)
    for i, off in enumerate(rng.normal(0.0, 0.03, 8)):
        save(_result(1000.0 * math.exp(off), A, seed=100 + i), log_on / f"a{i}.json")
    a = _result(1000.0, A, seed=50)
    b = _result(1000.0 * math.exp(0.03), A, seed=51)
    r = compare_measurements(a, {"b": b}).results["b"]
    assert r.level == "runs" and "against the spread of saved results" in r.test
    assert r.verdict == "no significant difference"
    assert any("between invocations" in w for w in r.warnings)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fastbench", "compare", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)


def test_the_gate_fails_a_real_slowdown_and_never_passes_silently(log_on: Path) -> None:
    for name, level, off, i in zip(("A1", "B1", "A2", "B2"),
                                   (100_000.0, 120_000.0, 100_000.0, 120_000.0),
                                   (1.0, 1.012, 0.995, 1.008), (A, B, A, B)):
        save(_single(level * off, i), log_on / f"{name}.json")
    done = _cli("A2.json", "B2.json", "--fail-slower", "5", "--json", "v.json", cwd=log_on)
    assert done.returncode == 3, done.stderr
    assert "significantly slower by more than 5%: B2.json" in done.stderr
    doc = json.loads((log_on / "v.json").read_text())
    (cand,) = doc["comparisons"][0]["candidates"]
    assert doc["kind"] == "files" and doc["gate"]["status"] == "fail"
    assert cand["verdict"] == "slower" and cand["speedup_ci"][1] < 1.0
    assert cand["baseline_side"]["identity"]["code"] == "a" * 32
    assert cand["candidate_side"]["identity"]["key"] == B.key
    assert "identity-differs" in [w["code"] for w in cand["warnings"]]
    # A fresh pair with nothing to judge it against: said on one line, a failure of its
    # own under --strict.
    save(_single(100_000.0, dataclasses.replace(A, code="c" * 32)), log_on / "C.json")
    save(_single(100_500.0, dataclasses.replace(A, code="d" * 32)), log_on / "D.json")
    lax = _cli("C.json", "D.json", "--fail-slower", "5", cwd=log_on)
    assert lax.returncode == 0
    (line,) = [x for x in lax.stderr.splitlines() if x]
    assert line.startswith("warning: the gate could not judge 1 of 1 candidate")
    strict = _cli("C.json", "D.json", "--fail-slower", "5", "--strict", cwd=log_on)
    assert strict.returncode == 4 and "error: the gate could not judge" in strict.stderr
