"""fastbench.roofline as users reach it: the face's names and the ``fastbench roofline``
command, which prints, saves and plots a quick calibration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fastbench
from fastbench import roofline
from fastbench.roofline import Roofline, calibration, model, plotting

PY = sys.executable


def test_face_hands_on_the_modules_names() -> None:
    assert roofline.Roofline is model.Roofline and roofline.Placement is model.Placement
    assert roofline.calibrate is calibration.calibrate and roofline.place is calibration.place
    assert roofline.cache_path is calibration.cache_path and roofline.plot is plotting.plot
    assert roofline.LEVELS == ("L1", "L2", "L3", "DRAM")
    assert roofline.DTYPES == ("float32", "float64")
    assert roofline.BOUNDS == ("memory-bound", "compute-bound")
    assert roofline.CACHE_VERSION == calibration.CACHE_VERSION


def test_cli_roofline_prints_saves_and_plots(tmp_path: Path) -> None:
    env_cache = tmp_path / "cache"
    out = tmp_path / "roof.json"
    cmd = [PY, "-m", "fastbench", "roofline", "--quick", "--threads", "1", "-o", str(out)]
    if _has_matplotlib():
        cmd += ["--plot", str(tmp_path / "roof.png")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "FASTBENCH_CACHE_DIR": str(env_cache)})
    assert r.returncode == 0, r.stderr
    assert "compute ceilings" in r.stdout and "DRAM" in r.stdout
    loaded = fastbench.load(out)
    assert isinstance(loaded, Roofline) and loaded.threads == 1 and loaded.quick
    if _has_matplotlib():
        assert (tmp_path / "roof.png").exists()


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
