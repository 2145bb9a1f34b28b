"""`fastbench profile`: where a model's step time goes (MODULE:FACTORY, needs torch), where
any Python script's time goes (`fastbench profile -- python script.py`, the sampling
profiler), and which items changed between two saved profiles (`fastbench profile diff A B`).
torch is imported only when a model is profiled.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Any, Sequence

from ..errors import FastbenchError
from ..results import load, save
from .output import out

__all__ = ["cmd_profile"]

_PYTHONS = ("python", "python3", "python3.11", "python3.12", "python3.13")


def _split(args: argparse.Namespace) -> tuple[str, list[str]]:
    """("model" | "script" | "diff", its arguments)."""
    target = args.target
    rest = [r for r in (args.rest or []) if r != "--"] if args.rest else []
    if target is None:
        raise FastbenchError("give a model (MODULE:FACTORY), a script (-- python script.py) "
                             "or `diff A.json B.json`")
    if target == "diff":
        return "diff", rest
    if target in _PYTHONS or target.split("/")[-1] in _PYTHONS:
        return "script", rest
    if target.endswith(".py") and ":" not in target:
        return "script", [target, *rest]
    return "model", [target, *rest]


def _model_profile(args: argparse.Namespace, target: str) -> Any:
    import torch

    from ..profiling import profile
    from ..pytorch import loading
    from .analyze import _factory_kwargs

    factory = loading.resolve_factory(target)
    model = loading.build_model(factory, "cpu", _factory_kwargs(args.arg))
    shapes = [loading.parse_shape(s) for s in args.input_shape]
    inputs = loading.build_inputs(model, shapes, args.input_dtype, "cpu", args.batch)
    if args.backward:
        model.train()

        def step() -> None:
            out_ = model(*inputs)
            first = out_ if isinstance(out_, torch.Tensor) else next(
                t for t in torch.utils._pytree.tree_leaves(out_) if isinstance(t, torch.Tensor))
            first.float().sum().backward()
            model.zero_grad(set_to_none=True)

        return profile(step, steps=args.steps, model=model, name=target,
                       collector=args.collector)
    model.eval()
    with torch.no_grad():
        return profile(model, *inputs, steps=args.steps, name=target,
                       collector=args.collector)


def _script_profile(argv: Sequence[str]) -> tuple[Any, int]:
    """The script's profile and the status it exited with. A script that fails still has
    the profile of what ran: the failure is shown as Python shows it, on stderr."""
    from ..profiling import sampler

    if not argv:
        raise FastbenchError("give the script to profile: fastbench profile -- python "
                             "script.py [ARGS]")
    try:
        return sampler.sample_script(argv[0], argv[1:]), 0
    except sampler.ScriptFailed as failed:
        cause = failed.cause
        if isinstance(cause, SystemExit):
            if cause.code is not None and not isinstance(cause.code, int):
                print(cause.code, file=sys.stderr)
        else:
            traceback.print_exception(cause)
        print(f"fastbench: {failed}; the profile of what ran follows", file=sys.stderr)
        return failed.profile, failed.status


def _diff(argv: Sequence[str]) -> Any:
    from ..profiling.diff import diff

    if len(argv) != 2:
        raise FastbenchError(f"profile diff takes two saved profiles, A.json B.json; got "
                             f"{len(argv)} arguments")
    a, b = (load(path) for path in argv)
    return diff(a, b, labels=(argv[0], argv[1]))


def cmd_profile(args: argparse.Namespace) -> int:
    mode, argv = _split(args)
    status = 0
    if mode == "diff":
        result = _diff(argv)
        out(str(result))
    elif mode == "script":
        result, status = _script_profile(argv)  # the script's own status is passed on
        out(str(result))
        if args.folded:
            with open(args.folded, "w", encoding="utf-8") as f:
                f.write(result.folded_stacks())
            out(f"folded stacks written to {args.folded}")
    else:
        if len(argv) != 1:
            raise FastbenchError(f"profile takes one MODULE:FACTORY, got {' '.join(argv)}")
        result = _model_profile(args, argv[0])
        if args.by is None:
            out(str(result))
        else:
            out(result.lines()[:4])
            out(["", f"top {args.top} by {args.by}:"])
            out(["  " + line for line in result.top(args.top, args.by).lines()])
            if result.roofline is not None:
                out(["", "worth fixing:"])
                out(["  " + line for line in result.bottlenecks(min(args.top, 10)).lines()])
        if args.trace:
            from ..profiling.export import write_chrome_trace
            write_chrome_trace(result, args.trace)
            out(f"trace written to {args.trace} (open in https://ui.perfetto.dev or "
                f"chrome://tracing)")
        if args.folded:
            from ..profiling.export import write_folded
            write_folded(result, args.folded)
            out(f"folded stacks written to {args.folded}")
    if args.output:
        save(result, args.output)
        out(f"saved to {args.output}")
    return status
