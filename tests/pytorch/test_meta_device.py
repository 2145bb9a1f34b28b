"""What the meta device cannot do: a model whose forward needs tensor values (``nonzero``,
boolean-mask indexing, ``.item()``, as detection models do) or whose construction reads them
(as RegNet's does) fails with MetaDeviceUnsupported naming the op and what to do, in the
library and in `fastbench analyze`, which falls back to cpu when asked."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from fastbench.analysis import analyze  # noqa: E402
from fastbench.cli import build_parser  # noqa: E402
from fastbench.cli.analyze import cmd_analyze  # noqa: E402
from fastbench.errors import FastbenchError  # noqa: E402
from fastbench.pytorch import loading  # noqa: E402
from fastbench.pytorch.dispatch import MetaDeviceUnsupported, meta_guard  # noqa: E402

MODES = ("grad", "no_grad", "inference_mode")

# Two small models written as a user's file: a detector-like head that keeps the boxes whose
# score is positive (torch.nonzero), and a model that computes a width with tensors in its
# constructor and reads it with .item() (as torchvision's RegNet does).
NETS = '''
import torch
from torch import nn


class Detect(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(8, 1)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        keep = torch.nonzero(self.score(x).squeeze(-1) > 0).squeeze(-1)
        return self.head(x[keep])


class Widths(nn.Module):
    def __init__(self, ratio=2.8):
        super().__init__()
        width = int(torch.round(torch.tensor(ratio) * 2).item())   # 6 at the default
        self.fc = nn.Linear(8, width)

    def forward(self, x):
        return self.fc(x)
'''


@pytest.fixture
def nets(tmp_path: Path) -> Path:
    path = tmp_path / "nets.py"
    path.write_text(NETS, encoding="utf-8")
    return path


class _Detect(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.score = nn.Linear(8, 1)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keep = torch.nonzero(self.score(x).squeeze(-1) > 0).squeeze(-1)
        return self.head(x[keep])


# -- the library ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_nonzero_on_meta_names_the_op_and_what_to_do(mode: str) -> None:
    model = _Detect().to("meta")
    with pytest.raises(MetaDeviceUnsupported) as info:
        analyze(model, torch.empty(16, 8, device="meta"), grad_mode=mode)
    e = info.value
    assert e.op == "aten::nonzero"
    assert "output shape that depends on tensor values" in str(e)
    assert "device='cpu'" in str(e)
    # A domain error, and still the NotImplementedError torch raised (which it chains).
    assert isinstance(e, FastbenchError) and isinstance(e, NotImplementedError)
    assert isinstance(e, RuntimeError)          # what code catching torch's error expects
    assert isinstance(e.__cause__, NotImplementedError)


@pytest.mark.parametrize("forward, op", [
    (lambda x: x[x > 0], "aten::index"),                       # boolean-mask indexing
    (lambda x: x * 2 if x.sum() > 0 else x, "aten::_local_scalar_dense"),   # if on a tensor
    (lambda x: torch.tensor(x.tolist()), "aten::_to_copy"),
    (lambda x: torch.unique(x), "aten::_unique2"),
], ids=["mask", "if", "tolist", "unique"])
def test_every_value_bound_op_on_meta_is_named(forward: Any, op: str) -> None:
    class Net(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            return forward(x)

    with pytest.raises(MetaDeviceUnsupported, match=f"^{op} "):
        analyze(Net(), torch.empty(4, 3, device="meta"))


def test_the_same_model_on_cpu_is_counted() -> None:
    torch.manual_seed(0)
    model, x = _Detect(), torch.randn(16, 8)
    with torch.no_grad():
        kept = int((model.score(x) > 0).sum())
    a = analyze(model, x)
    assert a.macs == 16 * 8 * 1 + kept * 8 * 4      # the head sees the kept rows only


def test_shape_and_device_errors_on_meta_stay_torchs() -> None:
    # Only failures for want of values are translated: a wrong shape is the user's error.
    model = nn.Linear(5, 4).to("meta")
    with pytest.raises(RuntimeError) as info:
        analyze(model, torch.empty(3, 4, device="meta"))
    assert not isinstance(info.value, MetaDeviceUnsupported)
    with pytest.raises(RuntimeError) as info:
        analyze(model, torch.empty(3, 5))
    assert not isinstance(info.value, MetaDeviceUnsupported)


def test_construction_reading_values_on_meta_names_the_op(nets: Path) -> None:
    factory = loading.resolve_factory(f"{nets}:Widths")
    with pytest.raises(MetaDeviceUnsupported) as info:
        loading.build_model(factory, "meta", {})
    e = info.value
    assert e.op == "aten::_local_scalar_dense" and "Tensor.item()" in str(e)
    assert str(e).startswith("building the model with Widths on the meta device failed")
    assert "device='cpu'" in str(e)
    assert loading.build_model(factory, "cpu", {}).fc.out_features == 6


def test_meta_guard_passes_other_failures_through() -> None:
    with meta_guard():
        assert torch.ones(2).sum().item() == 2.0          # real tensors: values exist
    with pytest.raises(ValueError, match="mine"), meta_guard():
        raise ValueError("mine")


# -- the command line -----------------------------------------------------------------------------
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "fastbench", *args], capture_output=True,
                          text=True, timeout=120, env=env, check=False)


@pytest.mark.parametrize("name, stage, op", [("Detect", "run", "aten::nonzero"),
                                             ("Widths", "build", "aten::_local_scalar_dense")])
def test_analyze_command_on_meta_says_why_and_what_to_do(nets: Path, name: str, stage: str,
                                                         op: str) -> None:
    r = _cli("analyze", f"{nets}:{name}", "--input-shape", "16,8")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith(f"error: the meta device cannot {stage} {nets}:{name}: {op} ")
    assert "Run again with --device cpu" in lines[0]


def _args(*argv: str, fallback: str | None) -> argparse.Namespace:
    args = build_parser().parse_args(["analyze", *argv, "--depth", "0"])
    args.fallback = fallback
    return args


@pytest.mark.parametrize("name, stage", [("Detect", "run"), ("Widths", "build")])
def test_analyze_command_falls_back_to_cpu_when_asked(nets: Path, name: str, stage: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"{nets}:{name}"
    with pytest.raises(MetaDeviceUnsupported, match="--fallback cpu"):
        cmd_analyze(_args(spec, "--input-shape", "16,8", fallback=None))
    capsys.readouterr()
    torch.manual_seed(0)
    assert cmd_analyze(_args(spec, "--input-shape", "16,8", fallback="cpu")) == 0
    text = capsys.readouterr().out
    assert f"{name} on cpu, inputs 16x8" in text
    assert f"note: analysed on cpu: the meta device cannot {stage} this model: aten::" in text
    assert ("past that op may depend on the values" in text) == (stage == "run")
    if name == "Widths":     # nothing value-bound in the forward: the count is exact
        assert "2 x 768 MACs" in text                       # 16 x 8 x 6
