"""`fastbench analyze MODULE:FACTORY`: build a PyTorch model, count its FLOPs, MACs, bytes,
parameters and memory per module, optionally place the modules on the roofline. torch is
imported only when the command runs.
"""

from __future__ import annotations

import argparse
import ast
from typing import Sequence

from .. import roofline
from ..analysis import analyze
from ..report.text import analysis_placement_lines
from ..results import save
from .output import out
from .roofline import calibration_progress

__all__ = ["cmd_analyze"]


def _factory_kwargs(items: Sequence[str]) -> dict[str, object]:
    """``KEY=VALUE`` pairs; values are Python literals where they parse as one, else strings."""
    kwargs: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"--arg takes KEY=VALUE, got {item!r}")
        try:
            kwargs[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            kwargs[key] = value
    return kwargs


def cmd_analyze(args: argparse.Namespace) -> int:
    from ..pytorch import loading  # imports torch: only when the command runs

    factory = loading.resolve_factory(args.model)
    model = loading.build_model(factory, args.device, _factory_kwargs(args.arg))
    shapes = [loading.parse_shape(s) for s in args.input_shape]
    inputs = loading.build_inputs(model, shapes, args.input_dtype, args.device, args.batch)
    if args.eval:
        model.eval()
    a = analyze(model, *inputs, backward=args.backward, grad_mode=args.grad_mode)
    out(a.lines(max_depth=None if args.depth < 0 else args.depth))
    if args.roofline:
        roof = roofline.calibrate(quick=True, progress=calibration_progress())
        out(["", "Roofline placement (attainable speed from each module's FLOPs and bytes, "
             f"{roof.threads} threads, DRAM bandwidth)"])
        out(analysis_placement_lines(a, roof, max_depth=1 if args.depth < 0 else args.depth))
    if args.output:
        save(a, args.output)
        out(f"saved to {args.output}")
    return 0
