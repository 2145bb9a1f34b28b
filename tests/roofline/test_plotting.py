"""fastbench.roofline.plotting: a PNG with ceilings and placements, from the function and the
method; matplotlib is not imported by importing the roofline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fastbench import roofline
from fastbench.roofline import Roofline


def test_plot_writes_a_png(tmp_path: Path, synthetic: Roofline) -> None:
    pytest.importorskip("matplotlib")
    r = synthetic
    p = r.place(flops=2e9, bytes=24e9, seconds=1.2)
    out = roofline.plot(r, tmp_path / "roof.png", points={"triad": p})
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = r.plot(tmp_path / "again.png", points=[("triad", p)], dtype="float64")
    assert again.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_importing_the_roofline_does_not_import_matplotlib() -> None:
    code = "import sys, fastbench.roofline; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
