"""fastbench.pytorch.dispatch on its own: the module path and the pass of each op of small
models, worked out by hand from the layers' math (nothing here counts FLOPs)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from fastbench.pytorch.dispatch import Dispatcher, OpEvent, shapes, tensors  # noqa: E402

# Ops of interest; the dispatcher also delivers bookkeeping ops (t, view, detach) whose
# presence varies between torch versions.
ARITHMETIC = {"addmm", "mm", "relu", "threshold_backward", "sum", "mul"}


def _model() -> Any:
    torch.manual_seed(0)
    # Paths: "0" Linear(4, 3); "1" Sequential; "1.0" ReLU; "1.1" Linear(3, 2).
    return nn.Sequential(nn.Linear(4, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 2)))


def _arithmetic(events: list[OpEvent]) -> list[tuple[str, str, str]]:
    return [(e.phase, e.module, e.name) for e in events if e.name in ARITHMETIC]


def test_forward_ops_belong_to_the_innermost_running_module() -> None:
    events: list[OpEvent] = []
    model = _model()
    d = Dispatcher(model, events.append)
    x = torch.randn(5, 4)
    out = d.forward(x)
    assert torch.equal(out, model(x))  # the dispatcher runs the model unchanged
    # Each Linear is one addmm (bias + x @ W^T) in its own module, the ReLU in "1.0"; the
    # containers ("" and "1") do no arithmetic of their own.
    assert _arithmetic(events) == [("forward", "0", "addmm"), ("forward", "1.0", "relu"),
                                   ("forward", "1.1", "addmm")]
    assert all(e.phase == "forward" for e in events)
    addmm = [e for e in events if e.name == "addmm"]
    assert shapes(addmm[0].outputs) == ((5, 3),) and shapes(addmm[1].outputs) == ((5, 2),)
    assert d.modules.types == {"": "Sequential", "0": "Linear", "1": "Sequential",
                               "1.0": "ReLU", "1.1": "Linear"}
    assert dict(d.modules.calls) == {"": 1, "0": 1, "1": 1, "1.0": 1, "1.1": 1}
    assert d.modules.inputs["1"] == ((5, 3),) and d.modules.outputs["1"] == ((5, 2),)
    assert d.modules.inputs[""] == ((5, 4),) and d.modules.outputs[""] == ((5, 2),)


def test_backward_ops_belong_to_the_module_whose_forward_built_them() -> None:
    events: list[OpEvent] = []
    model = _model()
    d = Dispatcher(model, events.append)
    x = torch.randn(5, 4)          # needs no gradient: the first layer computes only dW, db
    out = d.forward(x)
    seed = torch.ones_like(out)    # made outside the recording: not an event
    params = list(model.parameters())
    events.clear()
    with d.recording():
        grads = torch.autograd.grad(out, params, seed)
    assert [tuple(g.shape) for g in grads] == [(3, 4), (3,), (2, 3), (2,)]
    ops = _arithmetic(events)
    assert all(phase == "backward" for phase, _, _ in ops)
    # Autograd runs the graph from the output back: "1.1", then "1.0", then "0".
    modules = [m for _, m, _ in ops]
    assert modules == sorted(modules, key=["1.1", "1.0", "0"].index)
    # Linear "1.1": dW = g^T h (2x3) and dh = g W (5x3), two mm, and db = sum(g); ReLU
    # "1.0": one threshold_backward; Linear "0": dW = g^T x (3x4) and db, no dx.
    by_module: dict[str, list[str]] = {}
    for _, module, name in ops:
        by_module.setdefault(module, []).append(name)
    assert sorted(by_module["1.1"]) == ["mm", "mm", "sum"]
    assert by_module["1.0"] == ["threshold_backward"]
    assert sorted(by_module["0"]) == ["mm", "sum"]
    mm_out: dict[str, list[tuple[int, ...]]] = defaultdict(list)
    for e in events:
        if e.name == "mm":
            mm_out[e.module] += shapes(e.outputs)
    assert sorted(mm_out["1.1"]) == [(2, 3), (5, 3)] and mm_out["0"] == [(3, 4)]


class _ScaleThenProject(nn.Module):
    """Its own op (a product) comes before a submodule that produces its output, so walking
    back from its output meets the submodule's nodes first."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x: Any) -> Any:
        return self.proj(x * 2.0)


def test_backward_reaches_a_modules_own_ops_behind_its_last_submodule() -> None:
    events: list[OpEvent] = []
    model = nn.Sequential(nn.Linear(3, 3), _ScaleThenProject())
    d = Dispatcher(model, events.append)
    out = d.forward(torch.randn(4, 3))
    seed = torch.ones_like(out)
    events.clear()
    with d.recording():
        torch.autograd.grad(out, list(model.parameters()), seed)
    # The product's backward (a mul by 2.0) belongs to "1", which ran it, not to the model.
    muls = [e.module for e in events if e.name == "mul"]
    assert muls == ["1"]
    assert {e.module for e in events if e.name == "mm"} == {"0", "1.proj"}


def test_shared_and_built_on_the_fly_modules() -> None:
    class Inner(nn.Module):  # type: ignore[misc]
        def forward(self, x: Any) -> Any:
            return nn.ReLU()(x) * 2          # a ReLU built during the forward

    class Outer(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.shared = nn.Linear(3, 3)
            self.inner = Inner()

        def forward(self, x: Any) -> Any:
            return self.inner(self.shared(self.shared(x)))

    events: list[OpEvent] = []
    d = Dispatcher(Outer(), events.append)
    d.forward(torch.randn(2, 3))
    assert _arithmetic(events) == [("forward", "shared", "addmm"), ("forward", "shared", "addmm"),
                                   ("forward", "inner.<ReLU>", "relu"),
                                   ("forward", "inner", "mul")]
    assert d.modules.calls["shared"] == 2 and d.modules.types["inner.<ReLU>"] == "ReLU"


def test_decompose_splits_the_composites_asked_for() -> None:
    model = nn.Sequential(nn.Linear(4, 3))
    whole: list[OpEvent] = []
    pieces: list[OpEvent] = []
    with torch.inference_mode():  # composites reach the dispatcher whole here
        Dispatcher(model, whole.append).forward(torch.randn(2, 4))
        Dispatcher(model, pieces.append,
                   decompose=lambda f: f.overloadpacket.__name__ == "linear"
                   ).forward(torch.randn(2, 4))
    assert [(e.module, e.name) for e in whole] == [("0", "linear")]
    assert ("0", "addmm") in [(e.module, e.name) for e in pieces]
    assert "linear" not in [e.name for e in pieces]


def test_event_names_tensors_and_bad_model() -> None:
    events: list[OpEvent] = []
    Dispatcher(nn.Sequential(nn.Linear(2, 2)), events.append).forward(torch.randn(1, 2))
    assert events[-1].name == "addmm" and events[-1].func is torch.ops.aten.addmm.default
    a, b = torch.zeros(2), torch.ones(3, 1)
    found = tensors({"x": [a, 1, (b,)], "y": "z"})
    assert len(found) == 2 and found[0] is a and found[1] is b
    assert shapes([a, b]) == ((2,), (3, 1))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        Dispatcher(lambda x: x, events.append)
