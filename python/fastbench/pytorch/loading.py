"""Build a model and its inputs from a command line: ``MODULE:FACTORY`` (a dotted module or a
``path/to/file.py``), factory keyword arguments, input shapes and dtypes, and a device.

Owns name resolution and input construction only; the analysis is :mod:`.analyzer`'s.
Imports torch when called.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["build_inputs", "build_model", "parse_shape", "resolve_factory"]


def resolve_factory(spec: str) -> Any:
    """The callable named by ``MODULE:FACTORY``: ``fastbench.analysis.models:resnet50`` or
    ``./my_models.py:Net``.

    Raises
    ------
    ValueError
        No ``:`` in ``spec``, or the module lacks the name.
    ImportError
        The module or file cannot be imported.
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected MODULE:FACTORY (e.g. fastbench.analysis.models:resnet50), "
                         f"got {spec!r}")
    if module_name.endswith(".py") or "/" in module_name:
        path = Path(module_name)
        if not path.is_file():
            raise ImportError(f"no such file: {path}")
        unique = f"_fastbench_model_{abs(hash(str(path.resolve())))}"
        loader_spec = importlib.util.spec_from_file_location(unique, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[unique] = module
        loader_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    try:
        factory = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"{module_name} has no attribute {attr!r}") from None
    if not callable(factory):
        raise ValueError(f"{spec} is not callable")
    return factory


def parse_shape(text: str) -> tuple[int, ...]:
    """``"1,3,224,224"`` (or ``1x3x224x224``) as a tuple of positive ints."""
    parts = [p for p in text.replace("x", ",").split(",") if p.strip()]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"an input shape is comma-separated positive integers, got {text!r}") from None
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"an input shape is comma-separated positive integers, got {text!r}")
    return shape


def build_model(factory: Any, device: str, kwargs: dict[str, Any]) -> Any:
    """``factory(**kwargs)`` with every tensor it creates on ``device`` (torch's device
    context), so ``device="meta"`` allocates nothing.

    Raises
    ------
    MetaDeviceUnsupported
        On the meta device, the construction needs tensor values (RegNet computes its widths
        with tensors and reads them with ``.item()``): the message names the op; build on
        ``device="cpu"`` instead.
    TypeError
        The factory returned something other than an ``nn.Module``.
    """
    import torch

    from .dispatch import MetaDeviceUnsupported, meta_guard
    guard = meta_guard() if torch.device(device).type == "meta" else contextlib.nullcontext()
    try:
        with torch.device(device), guard:
            model = factory(**kwargs)
    except MetaDeviceUnsupported as e:
        name = getattr(factory, "__qualname__", None) or repr(factory)
        raise MetaDeviceUnsupported(
            f"building the model with {name} on the meta device failed: {e.op} {e.reason}, and "
            "the meta device holds shapes but no values. Build it on device='cpu' instead.",
            e.op, e.reason) from e
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"the factory returned {type(model).__name__}, not a torch.nn.Module")
    return model


def build_inputs(model: Any, shapes: Sequence[tuple[int, ...]], dtypes: Sequence[str],
                 device: str, batch: int | None = None) -> tuple[Any, ...]:
    """Input tensors: one per shape (floating dtypes random normal, integer dtypes zeros, valid
    indices for any embedding), or the model's ``example_input(batch, device)`` when no shape
    is given."""
    import torch
    if not shapes:
        example = getattr(model, "example_input", None)
        if example is None:
            raise ValueError("give --input-shape (the model has no example_input method to "
                             "build inputs from)")
        return tuple(example(batch or 1, device=device))
    if len(dtypes) > len(shapes):
        raise ValueError(f"{len(dtypes)} input dtypes for {len(shapes)} input shapes")
    names = list(dtypes) + [dtypes[-1] if dtypes else "float32"] * (len(shapes) - len(dtypes))
    out = []
    for shape, name in zip(shapes, names):
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"unknown torch dtype {name!r}")
        if dtype.is_floating_point:
            out.append(torch.randn(shape, dtype=dtype, device=device))
        else:
            out.append(torch.zeros(shape, dtype=dtype, device=device))
    return tuple(out)
