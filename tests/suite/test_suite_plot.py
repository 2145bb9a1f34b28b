"""fastbench.suite.plot: each figure is written as a PNG, bad input is refused before drawing,
pyplot's state is left alone, and without matplotlib the error names the ``plot`` extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from fastbench.suite import plot

PNG = b"\x89PNG\r\n\x1a\n"


def _bars(path: Path) -> Path:
    return plot.plot_bars(["fp32", "bf16", "int8"], [10.0, 6.0, 4.0],
                          [(9.0, 11.5), None, (3.5, 4.2)], path, ylabel="latency (ms)",
                          title="latency", baseline="fp32")


def _pareto(path: Path) -> Path:
    points = {"fp32": (10.0, 0.10), "bf16": (6.0, 0.11), "int8": (4.0, 0.15),
              "slow": (12.0, 0.16)}
    cis = {"fp32": ((9.0, 11.0), (0.09, 0.11)), "int8": ((3.8, 4.3), (0.14, 0.16))}
    return plot.plot_pareto(points, cis, ["int8", "fp32", "bf16"], path,
                            xlabel="latency (ms)", ylabel="error", knee="bf16")


def _curves(path: Path) -> Path:
    return plot.plot_curves({"fp32": [(100.0, 1e-3), (300.0, 2e-3), (500.0, 5e-3)],
                             "int8": [(200.0, 1e-3), (700.0, 3e-3)]}, path,
                            xlabel="throughput (samples/s)", ylabel="p90 latency (s)",
                            logx=True, logy=True)


FIGURES: list[Callable[[Path], Path]] = [_bars, _pareto, _curves]


@pytest.mark.parametrize("draw", FIGURES, ids=["bars", "pareto", "curves"])
def test_figure_is_written_as_png(draw: Callable[[Path], Path], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "figure.png"
    out = draw(target)
    assert out == target
    data = out.read_bytes()
    assert len(data) > 1000 and data[:8] == PNG


def test_figures_leave_pyplot_and_the_backend_alone(tmp_path: Path) -> None:
    # In a fresh process: drawing must neither switch the backend nor open pyplot figures.
    code = (
        "import matplotlib; matplotlib.use('svg'); import matplotlib.pyplot as plt\n"
        "from fastbench.suite import plot\n"
        f"plot.plot_bars(['a', 'b'], [1.0, 2.0], None, {str(tmp_path / 'x.png')!r}, ylabel='s')\n"
        "print(matplotlib.get_backend(), len(plt.get_fignums()))\n")
    pytest.importorskip("matplotlib")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["svg", "0"]


def test_importing_the_module_does_not_import_matplotlib() -> None:
    code = "import sys, fastbench.suite.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("draw", FIGURES, ids=["bars", "pareto", "curves"])
def test_missing_matplotlib_names_the_plot_extra(draw: Callable[[Path], Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r'fastbench\[plot\]'):
        draw(tmp_path / "f.png")
    assert not (tmp_path / "f.png").exists()


@pytest.mark.parametrize("call, match", [
    (lambda p: plot.plot_bars(["a"], [1.0, 2.0], None, p, ylabel="s"), "same non-zero length"),
    (lambda p: plot.plot_bars(["a"], [float("nan")], None, p, ylabel="s"), "finite"),
    (lambda p: plot.plot_bars(["a"], [1.0], [(2.0, 1.0)], p, ylabel="s"), "low <= high"),
    (lambda p: plot.plot_bars(["a"], [1.0], None, p, ylabel="s", baseline="b"), "baseline"),
    (lambda p: plot.plot_pareto({}, None, [], p, xlabel="x", ylabel="y"), "at least one"),
    (lambda p: plot.plot_pareto({"a": (1.0, 1.0)}, None, ["b"], p, xlabel="x", ylabel="y"),
     "front names"),
    (lambda p: plot.plot_pareto({"a": (1.0, 1.0)}, None, ["a"], p, xlabel="x", ylabel="y",
                                knee="z"), "knee"),
    (lambda p: plot.plot_curves({"a": []}, p, xlabel="x", ylabel="y"), "no points"),
    (lambda p: plot.plot_curves({"a": [(0.0, 1.0)]}, p, xlabel="x", ylabel="y", logx=True),
     "log x"),
])
def test_bad_input_is_refused(call: Callable[[Path], Any], match: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match=match):
        call(tmp_path / "f.png")
    assert not (tmp_path / "f.png").exists()
