"""A model analysis summed by family of operation (attention, linear, convolution,
normalization, ...), so that attention's share of the FLOPs reads without choosing a depth
of the module tree. Families are read from module class names; framework-free, plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol, Sequence

from .costs import Count

__all__ = ["FAMILY_ORDER", "FamilyShare", "family_of_type", "family_shares"]

# Families in report order; "other" is arithmetic done by a module of no family itself
# (residual additions and functional activations in a block's own forward, a fused block).
FAMILY_ORDER = ("attention", "linear", "convolution", "normalization", "embedding", "pooling",
                "activation", "other")
_ACTIVATIONS = frozenset({
    "relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "softmax", "logsoftmax", "softmin",
    "mish", "hardswish", "hardsigmoid", "hardtanh", "leakyrelu", "elu", "selu", "celu",
    "prelu", "rrelu", "softplus", "softsign", "glu", "tanhshrink", "newgeluactivation",
    "geluactivation", "quickgeluactivation"})


class _Row(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def total(self) -> Count: ...


@dataclass(frozen=True)
class FamilyShare:
    """One family's arithmetic and traffic over every pass analysed, and its share of the
    model's FLOPs (0 to 1)."""

    family: str
    count: Count
    share: float


def family_of_type(type_name: str) -> str | None:
    """The family a module class name puts its own arithmetic in, or None (a container).

    Attention is any name with "attention" or "attn" (``MultiheadAttention``,
    ``GPT2Attention``, ``CausalSelfAttn``); linear any with "linear" and Hugging Face's
    ``Conv1D`` (a linear layer despite its name); then "conv", "norm", "embedding", "pool"
    and the activation layers of ``torch.nn`` by name.
    """
    name = type_name.lower()
    if "attention" in name or "attn" in name:
        return "attention"
    if "linear" in name or type_name == "Conv1D":
        return "linear"
    if "conv" in name:
        return "convolution"
    if "norm" in name:
        return "normalization"
    if "embedding" in name:
        return "embedding"
    if "pool" in name:
        return "pooling"
    if name in _ACTIVATIONS:
        return "activation"
    return None


def _parent(path: str, paths: set[str]) -> str | None:
    """The nearest enclosing module that has a row ("" is the model)."""
    if not path:
        return None
    parent = path.rpartition(".")[0]
    while parent and parent not in paths:
        parent = parent.rpartition(".")[0]
    return parent if parent in paths else None


def family_shares(rows: Sequence[_Row]) -> tuple[FamilyShare, ...]:
    """Each family's FLOPs, MACs and bytes, summed over what each module computes itself
    (its inclusive count less its children's), in :data:`FAMILY_ORDER`; families with no
    FLOPs and no bytes are left out.

    A module's own arithmetic goes to the family of its class name, with one exception:
    everything inside an attention module counts as attention (its query, key, value and
    output projections, the scores, the softmax), since that is what attention costs.
    Arithmetic of a module of no family goes to "other".
    """
    paths = {r.path for r in rows}
    by_path = {r.path: r for r in rows}
    parent = {r.path: _parent(r.path, paths) for r in rows}
    kids: dict[str, list[str]] = {p: [] for p in paths}
    for path, up in parent.items():
        if up is not None:
            kids[up].append(path)

    def in_attention(path: str | None) -> bool:
        while path is not None:
            if family_of_type(by_path[path].type) == "attention":
                return True
            path = parent[path]
        return False

    sums: dict[str, Count] = {}
    for row in rows:
        whole = row.total
        parts = [by_path[k].total for k in kids[row.path]]
        own = Count(**{f.name: max(getattr(whole, f.name) - sum(getattr(p, f.name)
                                                                 for p in parts), 0)
                       for f in fields(Count)})
        family = ("attention" if in_attention(row.path)
                  else family_of_type(row.type) or "other")
        sums[family] = sums.get(family, Count()) + own
    total_flops = sum(c.flops for c in sums.values())
    return tuple(FamilyShare(f, sums[f], sums[f].flops / total_flops if total_flops else 0.0)
                 for f in FAMILY_ORDER
                 if f in sums and (sums[f].flops or sums[f].bytes))
