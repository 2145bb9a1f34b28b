"""`fastbench suite FILE.py:VARIANTS`: a factory's variants run, the table and Pareto front
printed, the result saved and its figures drawn; and the factory's mistakes reported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fastbench

FACTORY = '''
import numpy as np
from fastbench import _core

LABELS = np.arange(40) % 4


def _variant(us, wrong):
    spin = _core.make_spin(us * 1e3)
    def predict(x):
        spin()
        y = LABELS[: x.shape[0]].copy()
        y[:wrong] = (y[:wrong] + 1) % 4
        return np.eye(4)[y]
    return predict


def make(slow_us="300"):
    xs = np.zeros((40, 3))
    return {"variants": {"slow": _variant(float(slow_us), 0), "fast": _variant(100, 8)},
            "inputs": xs[:4], "baseline": "slow", "eval_data": (xs, LABELS)}


def broken():
    return [1, 2]
'''


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "fastbench", *args], capture_output=True,
                          text=True, timeout=300, env=env, check=False, cwd=cwd)


def test_suite_command_prints_saves_and_draws(tmp_path: Path) -> None:
    (tmp_path / "variants.py").write_text(FACTORY)
    r = run("suite", "variants.py:make", "--arg", "slow_us=400", "--batch", "4,8",
            "--rounds", "12", "--duration", "0", "--no-energy", "-o", "suite.json",
            "--plot", "fig.png", "--settle-calls", "1", "--seed", "3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Model" in r.stdout and "Accuracy" in r.stdout and "Speedup" in r.stdout
    # fast is quicker and less accurate (32 of 40 right): both are on the front.
    assert "Pareto front (latency, accuracy): slow, fast" in r.stdout
    saved = fastbench.load(tmp_path / "suite.json")
    assert saved["fast"].metric.value == 0.8
    assert set(saved["fast"].throughput) == {4, 8}
    assert saved.settings["settle_calls"] == 1 and saved.settings["seed"] == 3
    assert saved.settings["order"] == "alternating (A B, B A, ...)"
    for name in ("fig-latency.png", "fig-pareto.png", "fig-throughput.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_suite_command_reports_a_bad_factory(tmp_path: Path) -> None:
    (tmp_path / "variants.py").write_text(FACTORY)
    r = run("suite", "variants.py:broken", cwd=tmp_path)
    assert r.returncode != 0
    assert "must return a mapping with 'variants' and 'inputs'" in r.stderr
    r = run("suite", "variants.py:missing", cwd=tmp_path)
    assert r.returncode != 0 and "has no attribute 'missing'" in r.stderr
