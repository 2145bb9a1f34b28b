"""Model analysis: exact FLOPs/MACs, parameters, bytes moved and memory, from closed-form
formulas (no framework needed) or by running a PyTorch model once.

- ``formulas``: costs of single operations (linear, matmul, conv, attention, norms, ...).
- ``layers``: describe a model as layer specs and analyse it without any framework.
- ``costs``: the cost records (``Count`` of one pass, ``Cost`` forward and backward).
- ``analyze(model, *inputs)``: a PyTorch model counted at the aten level (needs torch; the
  analyzer is :mod:`fastbench.pytorch.analyzer`).
- ``models``: standard models written in plain PyTorch (needs torch; import it explicitly).

A face. Convention: ``costs.CONVENTION``. torch is imported only when ``analyze`` is first
used.
"""

from __future__ import annotations

from typing import Any

from ..units import format_count
from . import formulas, layers
from .costs import CONVENTION, Cost, Count, dtype_bytes
from .model_analysis import (Coverage, MemoryEstimate, ModelAnalysis, ModulePlacement, ModuleRow,
                             Parameters, UncountedOp)

__all__ = ["CONVENTION", "Cost", "Count", "Coverage", "MemoryEstimate", "ModelAnalysis",
           "ModulePlacement", "ModuleRow", "Parameters", "TorchUnavailable", "UncountedOp",
           "analyze", "dtype_bytes", "format_count", "formulas", "layers"]


class TorchUnavailable(ImportError):
    """PyTorch is needed for this and is not installed."""


def _require_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise TorchUnavailable(
            f"analysing a PyTorch model needs torch, which failed to import ({e}). Install a "
            "CPU build with `pip install torch` (on machines where that resolves to a large "
            "CUDA build, pick the CPU wheel explicitly), or describe the model with "
            "fastbench.analysis.layers, which needs no framework.") from e


def analyze(model: Any, *inputs: Any, backward: bool = False, grad_mode: str = "grad",
            kwargs: Any = None) -> ModelAnalysis:
    """Count a PyTorch model's FLOPs, MACs, bytes, parameters and memory; see
    ``fastbench.pytorch.analyzer.analyze``.

    Raises
    ------
    TorchUnavailable
        torch is not installed (an ImportError).
    """
    _require_torch()
    from ..pytorch.analyzer import analyze as run
    return run(model, *inputs, backward=backward, grad_mode=grad_mode, kwargs=kwargs)
