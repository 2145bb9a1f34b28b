"""fastbench's PyTorch side: :mod:`.dispatch` (the one dispatch layer, attributing every aten
op to its module, forward and backward), :mod:`.analyzer` (FLOP and byte counting on it),
:mod:`.aten_ops` (the cost of each aten op), :mod:`.profiler` (the profiler's collectors),
:mod:`.observer` (its native op observer, built on first use) and :mod:`.timeline` (the
observer's ranges on the profiler's timeline), :mod:`.loading` (models and inputs named on a
command line), :mod:`.models` (the model zoo) and :mod:`.model_card` (``profile_model``, the
one-call model card).

Nearly every module imports torch (``timeline`` does not); this package imports none of
them, so that ``import fastbench`` never loads torch. Import the module you need explicitly;
``profile_model`` is also reachable from here, loading torch on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model_card import profile_model as profile_model

__all__ = ["profile_model"]


def __getattr__(name: str) -> Any:
    # PEP 562: the name resolves (and torch loads) only when first used.
    if name == "profile_model":
        from .model_card import profile_model
        return profile_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
