"""Profiles built by hand with known truth, for the export and diff tests: a small model's
cells with per-step times drawn around known means. Not a test module (no test_ prefix).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fastbench.profiling.result import NOT_IN_OP, OUTSIDE, Cell, Overhead, Profile

OVERHEAD = Overhead(per_op_s=2e-6, per_op_inside_s=1e-6, per_module_s=3e-6, per_region_s=1e-6)

# (op, module, phase, mean seconds per step): a transformer-ish block of about 12 ms a step.
MODEL: tuple[tuple[str, str, str, float], ...] = (
    ("aten::addmm", "encoder.attn", "forward", 3.0e-3),
    ("aten::_softmax", "encoder.attn", "forward", 0.8e-3),
    ("aten::addmm", "encoder.mlp", "forward", 2.4e-3),
    ("aten::gelu", "encoder.mlp", "forward", 0.6e-3),
    ("aten::mm", "encoder.mlp", "backward", 1.6e-3),
    ("aten::gelu_backward", "encoder.mlp", "backward", 0.4e-3),
    ("aten::native_layer_norm", "encoder", "forward", 0.5e-3),
    (NOT_IN_OP, "encoder", "forward", 0.3e-3),
    ("aten::addmm", "head", "forward", 1.2e-3),
    ("aten::copy_", OUTSIDE, "", 0.7e-3),
    (NOT_IN_OP, OUTSIDE, "", 0.4e-3),
)


def synthetic_profile(rng: np.random.Generator, steps: int = 25, cv: float = 0.03,
                      slower: Mapping[str, float] | None = None,
                      model: Sequence[tuple[str, str, str, float]] = MODEL,
                      step_cv: float = 0.01) -> Profile:
    """A profile of ``model`` over ``steps`` steps: each cell's time in a step is its mean
    times a lognormal factor of ``cv`` (the cell's own noise) and a factor of ``step_cv``
    shared by the step's cells (the whole step running a little slower or faster); the
    modules in ``slower`` take that many times longer."""
    slower = dict(slower or {})
    shared = rng.lognormal(0.0, step_cv, steps)
    cells = []
    for op, module, phase, mean in model:
        factor = slower.get(module, 1.0)
        times = mean * factor * shared * rng.lognormal(0.0, cv, steps)
        cells.append(Cell(op, "" if op == NOT_IN_OP else "(8, 512), (512, 512)", module, "",
                          phase, times, calls=steps, flops=0.0, bytes=0.0,
                          dtype="" if op == NOT_IN_OP else "float32"))
    step_times = np.sum([c.times for c in cells], axis=0)
    return Profile(tuple(cells), step_times, step_times * 1.04, OVERHEAD,
                   meta={"name": "synthetic block"})
