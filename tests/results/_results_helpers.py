"""What the results tests share: the tests/data fixtures written by pyperf and
pytest-benchmark, a synthetic Measurement with awkward floats, a small real object of every
built-in kind, exact comparison and raw JSON helpers. Not a test module (no test_ prefix);
the ``saved`` fixture is in conftest.py.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import fastbench
from fastbench import Measurement

DATA = Path(__file__).parent.parent / "data"
PYPERF_FILES = ["pyperf_timeit.json", "pyperf_calibrated.json.gz", "pyperf_bench_func.json"]
PYTEST_BENCHMARK_FILES = ["pytest_benchmark_json.json", "pytest_benchmark_save_data.json"]
PYTEST_BENCHMARK_NO_DATA = "pytest_benchmark_no_data.json"


def synthetic(name: str = "synthetic", seed: int = 0, **extra: Any) -> Measurement:
    rng = np.random.default_rng(seed)
    # Awkward floats on purpose: non-terminating binary fractions and the smallest and
    # largest time per call a file may hold, one ulp inside; all must come back bit for bit.
    samples = np.concatenate(
        [rng.lognormal(5.0, 0.3, 25), [0.1 + 0.2, 1.0 / 3.0, np.nextafter(1e-6, 1.0),
                                       np.nextafter(1e18, 0.0)]]
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


def assert_same(got: Measurement, want: Measurement) -> None:
    assert isinstance(got, Measurement)
    assert got.samples_ns.dtype == np.float64
    assert got.samples_ns.tobytes() == want.samples_ns.tobytes()
    assert got.warmup_samples_ns.dtype == np.float64
    assert got.warmup_samples_ns.tobytes() == want.warmup_samples_ns.tobytes()
    assert got.to_dict() == want.to_dict()


def read_raw(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def listdir(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def edited(saved: Path, name: str, **changes: Any) -> Path:
    """A copy of the file ``saved`` named ``name``, with top-level keys changed."""
    doc = json.loads(saved.read_text(encoding="utf-8"))
    doc.update(changes)
    return write_json(saved.with_name(name), doc)


# -- small real objects of every kind ------------------------------------------------------


def measurement_of_kinds(name: str = "m", seed: int = 0) -> fastbench.Measurement:
    rng = np.random.default_rng(seed)
    return fastbench.Measurement(
        samples_ns=rng.lognormal(5.0, 0.1, 30), loops=100,
        warmup_samples_ns=rng.lognormal(5.2, 0.1, 2), clock="steady", overhead_ns=0.5,
        overhead_mad_ns=0.01, call_floor_ns=30.0 / 7.0, call_floor_mad_ns=0.1,
        call_floor_kind="python", name=name, calibration_trials=2, elapsed_s=0.25,
    )


def _comparison() -> Any:
    a, b = measurement_of_kinds("a", 1), measurement_of_kinds("b", 2)
    return fastbench.compare_measurements(a, {"b": b}, baseline_name="a")


def _stat() -> Any:
    from fastbench.counters.command import StatResult

    return StatResult.from_dict({
        "command": ["prog", "--flag"],
        "events": {"task-clock": {"values": [2.0e6, 2.5e6], "running_fraction": 1.0,
                                  "scaled": False},
                   "instructions": {"values": [4.0e6, 4.1e6], "running_fraction": 0.5,
                                    "scaled": True}},
        "unavailable": {"cycles": "no hardware PMU exposed"},
        "elapsed_s": [0.004, 0.005],
        "returncodes": [0, 3],
        "read_path": "read",
        "simulated": None,
    })


def _simulated_counts() -> Any:
    from fastbench.counters.simulation import SimulatedCounts

    return SimulatedCounts.from_dict({
        "tool": "cachegrind", "target": "prog --flag",
        "events": {"Ir": 1200.5, "Dr": 300.0, "D1mr": 12.25, "Dw": 100.0, "D1mw": 3.0},
        "per_call": True, "calls": 4,
        "totals": {"Ir": 9000, "Dr": 2000}, "baseline": {"Ir": 4198, "Dr": 800},
        "geometry": {"D1": {"size_bytes": 32768, "assoc": 8, "line_bytes": 64}},
        "notes": ["LL not simulated"], "valgrind_version": "3.19.0",
        "command": ["valgrind", "--tool=cachegrind", "prog"],
    })


def _roofline() -> Any:
    return fastbench.roofline.Roofline(
        compute={"fma float32": 210.5, "fma float64": 105.25},
        memory={"L1": 400.0, "DRAM": 18.5},
        threads=2, quick=True, machine={"cpu_model": "Test CPU"},
        sweep=((16384, 400.0, "L1"), (1 << 28, 18.5, "DRAM")),
        notes=("a note",), fastbench_version="0.0-test", created_s=1.7e9, calibration_s=3.5,
    )


def _count(macs: int) -> dict[str, int]:
    return {"macs": macs, "elementwise_flops": 16, "bytes_read": 640, "bytes_written": 64}


def _model_analysis() -> Any:
    return fastbench.analysis.ModelAnalysis.from_dict({
        "model": "toy.Net", "device": "meta", "grad_mode": "grad",
        "inputs": [{"shape": [2, 8], "dtype": "float32"}],
        "forward": _count(128), "backward": _count(256),
        "parameters": {"total": 72, "trainable": 64, "frozen": 8, "buffers": 0, "bytes": 288,
                       "buffer_bytes": 0, "bytes_by_dtype": {"float32": 288}, "tied": [],
                       "naive_total": 72},
        "memory": {"params_bytes": 288, "buffers_bytes": 0, "gradients_bytes": 256,
                   "activations_bytes": 64, "inference_peak_bytes": 64, "inputs_bytes": 64},
        "modules": [{"path": "", "type": "Net", "calls": 1, "input_shapes": [[2, 8]],
                     "output_shapes": [[2, 8]], "params": 72, "forward": _count(128),
                     "backward": _count(256)}],
        "coverage": {"ops": {"aten::addmm": 1, "aten::relu": 1},
                     "uncounted": [{"name": "aten::frobnicate", "calls": 1,
                                    "output_shapes": [[2, 8]], "floating": True}]},
        "notes": ["a note"],
    })


def _instruction_count(name: str, per_call: float) -> Any:
    from fastbench.counters import InstructionCount

    return InstructionCount(name=name, per_call=per_call, runs=(per_call,), source="simulated",
                            calls=100, estimated_cycles=per_call * 1.1,
                            events={"Ir": per_call, "D1mr": 2.0}, wall_s=2.0)


def _instruction_comparison() -> Any:
    return fastbench.compare_instruction_counts(
        _instruction_count("a", 50310.0), {"b": _instruction_count("b", 50817.0)},
        baseline_name="a")


def _profile(seed: int = 0, slower: float = 1.0) -> Any:
    from fastbench.profiling.result import Cell, Overhead, Profile, TraceEvent

    rng = np.random.default_rng(seed)
    steps = 8
    cells = (
        Cell("aten::addmm", "(8, 16), (16, 4)", "fc", "", "forward",
             1e-4 * slower * rng.lognormal(0.0, 0.03, steps), calls=steps, flops=1024.0,
             bytes=896.0, dtype="float32"),
        Cell("(not in an op)", "", "", "", "forward", 2e-5 * rng.lognormal(0.0, 0.03, steps),
             calls=0),
        Cell("aten::copy_", "(8, 16)", "outside any module", "data loading", "",
             3e-5 * rng.lognormal(0.0, 0.03, steps), calls=steps, bytes=1024.0,
             dtype="float32"),
    )
    step_times = np.sum([c.times for c in cells], axis=0)
    events = (TraceEvent("step 0", "step", 0, 200_000),
              TraceEvent("fc", "module", 1_000, 120_000),
              TraceEvent("aten::addmm", "op", 2_000, 100_000,
                         args={"shapes": "(8, 16), (16, 4)", "flops": 1024}))
    return Profile(cells, step_times, step_times * 1.05,
                   Overhead(2e-6, 1e-6, 3e-6, 1e-6), step_times * 1.01, None, events,
                   {"name": "toy.Net", "threads": 1}, ("a warning",))


def _profile_diff() -> Any:
    from fastbench.profiling.diff import diff

    return diff(_profile(1), _profile(2, slower=1.5), labels=("before", "after"))


def _sample_profile() -> Any:
    from fastbench import _core
    from fastbench.profiling import sample

    return sample(_core.spin, 2e5, duration_s=0.05, interval_s=0.002)


def _suite() -> Any:
    import numpy as np

    from fastbench import _core
    from fastbench.suite import run

    spins = {"base": _core.make_spin(50e3), "fast": _core.make_spin(25e3)}
    labels = np.array([0, 1, 2, 1, 0, 2, 1, 1])

    def classifier(spin: Any, wrong: int) -> Callable[[Any], Any]:
        def predict(x: Any) -> Any:
            spin()
            y = labels[: x.shape[0]].copy()
            y[:wrong] = (y[:wrong] + 1) % 3
            return np.eye(3)[y]
        return predict

    return run({"base": classifier(spins["base"], 1), "fast": classifier(spins["fast"], 2)},
               np.zeros((8, 2)), baseline="base", eval_data=(np.zeros((8, 2)), labels),
               rounds=12, duration_s=0.0, warmup=1, memory=False)


# kind -> (builder, class name the loaded object must have)
BUILDERS: dict[str, tuple[Callable[[], Any], str]] = {
    "measurement": (measurement_of_kinds, "Measurement"),
    "measurements": (lambda: {"a": measurement_of_kinds("a", 1),
                              "b": measurement_of_kinds("b", 2)},
                     "dict of Measurement"),
    "comparison": (_comparison, "Comparison"),
    "instruction_count": (lambda: _instruction_count("loop", 50310.0), "InstructionCount"),
    "instruction_comparison": (_instruction_comparison, "InstructionComparison"),
    "stat": (_stat, "StatResult"),
    "simulated_counts": (_simulated_counts, "SimulatedCounts"),
    "roofline": (_roofline, "Roofline"),
    "model_analysis": (_model_analysis, "ModelAnalysis"),
    "profile": (_profile, "Profile"),
    "profile_diff": (_profile_diff, "ProfileDiff"),
    "sample_profile": (_sample_profile, "SampleProfile"),
    "suite": (_suite, "SuiteResult"),
}
