"""What the results tests share: the tests/data fixtures written by pyperf and
pytest-benchmark, a synthetic Measurement with awkward floats, exact comparison and raw JSON
helpers. Not a test module (no test_ prefix); the ``saved`` fixture is in conftest.py.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from fastbench import Measurement

DATA = Path(__file__).parent.parent / "data"
PYPERF_FILES = ["pyperf_timeit.json", "pyperf_calibrated.json.gz", "pyperf_bench_func.json"]
PYTEST_BENCHMARK_FILES = ["pytest_benchmark_json.json", "pytest_benchmark_save_data.json"]
PYTEST_BENCHMARK_NO_DATA = "pytest_benchmark_no_data.json"


def synthetic(name: str = "synthetic", seed: int = 0, **extra: Any) -> Measurement:
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
