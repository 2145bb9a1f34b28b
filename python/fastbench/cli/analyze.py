"""`fastbench analyze MODULE:FACTORY`: build a PyTorch model, count its FLOPs, MACs, bytes,
parameters and memory per module, optionally place the modules on the roofline. torch is
imported only when the command runs. Where the meta device cannot build or run the model, the
error says so; ``--fallback cpu`` builds and analyses it on cpu instead, with a note.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
from typing import Any, Sequence

from .. import roofline
from ..analysis import ModelAnalysis, analyze
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


def _build(args: argparse.Namespace, factory: Any, device: str) -> tuple[Any, tuple[Any, ...]]:
    """The model and its inputs on ``device``."""
    from ..pytorch import loading  # imports torch: only when the command runs

    model = loading.build_model(factory, device, _factory_kwargs(args.arg))
    shapes = [loading.parse_shape(s) for s in args.input_shape]
    inputs = loading.build_inputs(model, shapes, args.input_dtype, device, args.batch)
    if args.eval:
        model.eval()
    return model, inputs


def _run(args: argparse.Namespace, model: Any, inputs: tuple[Any, ...]) -> ModelAnalysis:
    return analyze(model, *inputs, backward=args.backward, grad_mode=args.grad_mode)


def _analysis(args: argparse.Namespace) -> ModelAnalysis:
    """The analysis on ``--device``; where the meta device cannot build or run the model, on
    ``--fallback``'s device with a note saying why, or an error saying what to do."""
    from ..pytorch import loading
    from ..pytorch.dispatch import MetaDeviceUnsupported

    factory = loading.resolve_factory(args.model)
    fallback = args.fallback
    stage = "build"
    try:
        model, inputs = _build(args, factory, args.device)
        stage = "run"
        return _run(args, model, inputs)
    except MetaDeviceUnsupported as e:
        what = f"{e.op} {e.reason}" if e.op else str(e)
        if fallback is None:
            advice = ("Run again with --device cpu (a small --batch or --input-shape keeps it "
                      "quick), or with --fallback cpu to use cpu only where the meta device cannot")
            raise MetaDeviceUnsupported(
                f"the meta device cannot {stage} {args.model}: {what}, and meta tensors hold "
                f"shapes but no values. {advice}.", e.op, e.reason) from e
    a = _run(args, *_build(args, factory, fallback))
    note = f"analysed on {fallback}: the meta device cannot {stage} this model: {what}"
    if stage == "run":
        note += ("; counts past that op may depend on the values of this input and of the "
                 "weights as built")
    return dataclasses.replace(a, notes=a.notes + (note,))


def cmd_analyze(args: argparse.Namespace) -> int:
    a = _analysis(args)
    out(a.lines(max_depth=None if args.depth < 0 else args.depth))
    if args.roofline:
        # the roof of the threads torch runs the model on, not of every core
        roof = roofline.calibrate(threads=roofline.workload_threads(), quick=True,
                                  progress=calibration_progress())
        out(["", "Roofline placement (attainable speed from each module's FLOPs and bytes, "
             f"{roof.threads} threads; each against the fastest memory level its bytes fit, "
             "so the time is a lower bound)"])
        out(analysis_placement_lines(a, roof, max_depth=1 if args.depth < 0 else args.depth))
    if args.output:
        save(a, args.output)
        out(f"saved to {args.output}")
    return 0
