"""`fastbench suite FILE.py:VARIANTS`: run a benchmark suite whose variants and data a factory
returns, print its table and Pareto front, save it and draw its figures.

The factory takes no arguments (or the ``--arg KEY=VALUE`` keywords) and returns a mapping
with ``variants`` and ``inputs`` and optionally any other keyword of
:func:`fastbench.suite.run` (``baseline``, ``eval_data``, ``metric``, ``batch_sizes``,
``allow``, ``variant_inputs``, ``threads``); the command line's options override it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Mapping

from ..errors import FastbenchError
from ..report.progress import progress_bar
from ..results import save
from .output import out

__all__ = ["cmd_suite"]

_RUN_KEYS = ("variants", "inputs", "baseline", "eval_data", "metric", "batch_sizes", "allow",
             "variant_inputs", "threads", "rounds", "duration_s", "warmup", "max_time_s",
             "memory", "energy", "watts_per_core", "analyze", "score", "score_name", "delta_unit",
             "seed", "settle_calls", "blocks")


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    from ..pytorch.loading import resolve_factory
    from .analyze import _factory_kwargs

    try:
        factory = resolve_factory(args.target)
    except (ValueError, ImportError) as e:
        raise FastbenchError(f"suite: {e}") from None
    made = factory(**_factory_kwargs(args.arg))
    if not isinstance(made, Mapping) or "variants" not in made or "inputs" not in made:
        raise FastbenchError(f"{args.target} must return a mapping with 'variants' and 'inputs' "
                             "(and optionally baseline, eval_data, metric, batch_sizes, allow, "
                             f"...); it returned {type(made).__name__}")
    unknown = sorted(set(made) - set(_RUN_KEYS))
    if unknown:
        raise FastbenchError(f"{args.target} returned keys suite.run does not take: "
                             f"{', '.join(unknown)}")
    return dict(made)


def _batches(text: str) -> list[int]:
    try:
        sizes = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise FastbenchError(f"--batch takes comma-separated ints (1,8,32), got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise FastbenchError(f"--batch takes positive ints, got {text!r}")
    return sizes


def _metric(name: str) -> Any:
    from ..pytorch.loading import resolve_factory

    try:
        return resolve_factory(name)
    except (ValueError, ImportError) as e:
        raise FastbenchError(f"--metric: {e}") from None


def cmd_suite(args: argparse.Namespace) -> int:
    from ..suite import run

    spec = _spec(args)
    if args.batch:
        spec["batch_sizes"] = _batches(args.batch)
    if args.metric:
        spec["metric"] = _metric(args.metric)
    for key in ("baseline", "threads", "rounds", "max_time_s", "duration_s", "settle_calls",
                "blocks", "seed"):
        value = getattr(args, key)
        if value is not None:
            spec[key] = value
    if args.no_energy:
        spec["energy"] = False
    if args.no_memory:
        spec["memory"] = False
    result = run(spec.pop("variants"), spec.pop("inputs"),
                 progress=progress_bar(sys.stderr, "suite"), **spec)
    out(str(result))
    objectives = tuple(o.strip() for o in args.pareto.split(",") if o.strip())
    front: list[str] | None = None
    try:
        front = result.pareto(objectives)
        knee = result.knee(objectives)
        dominated = result.dominated(objectives)
    except ValueError as e:
        out(f"\nPareto front ({', '.join(objectives)}): not drawn: {e}")
    else:
        out(f"\nPareto front ({', '.join(objectives)}): {', '.join(front)}"
            + (f"; knee: {knee}" if knee else ""))
        for name, by in dominated.items():
            out(f"  {name} is dominated by {', '.join(by)}")
    if args.output:
        save(result, args.output)
        out(f"saved to {args.output}")
    if args.plot:
        base = Path(args.plot)
        stem = base.with_suffix("")
        suffix = base.suffix or ".png"
        written = [result.plot_comparison(f"{stem}-latency{suffix}")]
        if front is not None and len(objectives) == 2:
            written.append(result.plot_pareto(f"{stem}-pareto{suffix}",
                                              (objectives[0], objectives[1])))
        if len(result.batch_sizes) > 1:
            written.append(result.plot_latency_throughput(f"{stem}-throughput{suffix}"))
        out("figures: " + ", ".join(str(p) for p in written))
    return 0
