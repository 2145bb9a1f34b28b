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


def _above_roof_point(r: Roofline) -> roofline.Placement:
    """A point at 2x its DRAM ceiling (25 GB/s), with no working set given."""
    p = r.place(flops=1e9, bytes=50e9, seconds=1.0, threads=r.threads)
    assert p.above_roof is not None
    return p


def test_point_label_marks_a_point_above_its_ceiling(synthetic: Roofline) -> None:
    from fastbench.roofline.plotting import point_label

    below = synthetic.place(flops=2e9, bytes=24e9, seconds=1.2, threads=2)
    assert point_label("triad", below) == "triad (80%)"
    above = _above_roof_point(synthetic)
    assert point_label("fast", above) == "fast (200%) ABOVE ROOF: faster-level, wrong-count"


def test_plot_names_a_point_above_its_ceiling_in_label_and_legend(
        tmp_path: Path, synthetic: Roofline, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    drawn: dict[str, list[str]] = {}
    save = Figure.savefig

    def capture(fig: Figure, *args: object, **kwargs: object) -> None:
        ax = fig.axes[0]
        legend = ax.get_legend()
        assert legend is not None
        drawn["legend"] = [t.get_text() for t in legend.get_texts()]
        drawn["labels"] = [t.get_text() for t in ax.texts]
        save(fig, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Figure, "savefig", capture)
    below = synthetic.place(flops=2e9, bytes=24e9, seconds=1.2, threads=2)
    out = synthetic.plot(tmp_path / "roof.png",
                         points={"triad": below, "fast": _above_roof_point(synthetic)})
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "fast (200%) ABOVE ROOF: faster-level, wrong-count" in drawn["labels"]
    assert "triad (80%)" in drawn["labels"]
    assert ("fast: above its ceiling, likely data in a faster level or a wrong count"
            in drawn["legend"])
    assert not any(t.startswith("triad") for t in drawn["legend"])


def test_every_above_roof_cause_has_words_for_the_legend(
        tmp_path: Path, synthetic: Roofline) -> None:
    from fastbench.roofline.plotting import _CAUSE_WORDS

    assert set(_CAUSE_WORDS) == set(roofline.ABOVE_ROOF_CAUSES)
    pytest.importorskip("matplotlib")
    import dataclasses
    # An L3 that measured slower than DRAM: the point's first cause is "level-no-faster",
    # which the legend once had no words for (a KeyError instead of a plot).
    r = dataclasses.replace(synthetic, memory={**synthetic.memory, "L3": synthetic.memory["DRAM"]})
    p = r.place(flops=1e9, bytes=50e9, seconds=1.0, threads=r.threads, level="L3")
    assert p.above_roof_causes[0] == "level-no-faster"
    out = r.plot(tmp_path / "roof.png", points={"slow L3": p})
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
