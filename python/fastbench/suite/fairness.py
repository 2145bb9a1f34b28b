"""Fair-comparison checks of a suite, before anything is measured: every variant must see the
same input shapes, dtypes, batch and device, run on the same threads, and (for modules) hold
its weights in the same dtype and on the same device as the baseline, with outputs of the
same shape and dtype. A difference raises :class:`UnfairComparison` naming it, unless the user
allows that kind for that variant by name (a quantized variant differs in dtype); an allowed
difference becomes a note the report prints.

Framework-free: arrays are read by duck typing (``shape``, ``dtype``, ``device``), so numpy
arrays, torch tensors and anything shaped like them are described alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..errors import FastbenchError

__all__ = ["KINDS", "Signature", "UnfairComparison", "check_allow", "differences",
           "signature"]

# What may differ between variants, each allowed by name: "shape" (input or output shapes),
# "dtype" (input, weight or output dtypes), "batch" (the inputs' first dimension), "device"
# (where inputs or weights live) and "threads" (the intra-op threads a variant ran on).
KINDS = ("shape", "dtype", "batch", "device", "threads")


class UnfairComparison(FastbenchError, ValueError):
    """Variants of a suite differ in a way that makes their figures incomparable."""


@dataclass(frozen=True)
class Signature:
    """What one variant is fed and gives back, as the checks compare it.

    Attributes
    ----------
    inputs : tuple of (shape, dtype, device)
        Each array-like leaf of the call's arguments, in order.
    outputs : tuple of (shape, dtype, device)
        Each array-like leaf of what one call returned.
    weights : tuple of (dtype, device)
        The distinct dtypes and devices of a module's parameters and buffers (empty for a
        plain callable, or a module whose weights are packed outside its parameters, as
        dynamically quantized layers keep theirs).
    threads : int or None
        The intra-op threads in force after the variant's warm-up calls (None when no
        framework with a thread setting is in use).
    """

    inputs: tuple[tuple[tuple[int, ...], str, str], ...]
    outputs: tuple[tuple[tuple[int, ...], str, str], ...]
    weights: tuple[tuple[str, str], ...] = ()
    threads: int | None = None

    @property
    def batch(self) -> int | None:
        """The first dimension of the first input with one, or None."""
        for shape, _, _ in self.inputs:
            if shape:
                return shape[0]
        return None


def _leaves(tree: Any) -> Iterable[Any]:
    if isinstance(tree, Mapping):
        for key in tree:
            yield from _leaves(tree[key])
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _leaves(item)
    else:
        yield tree


def _describe(leaf: Any) -> tuple[tuple[int, ...], str, str] | None:
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None or isinstance(leaf, type):
        return None
    try:
        dims = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        return None
    return dims, str(dtype).removeprefix("torch."), str(getattr(leaf, "device", "cpu"))


def signature(args: Any, output: Any, weights: Sequence[tuple[str, str]] = (),
              threads: int | None = None) -> Signature:
    """The :class:`Signature` of a call: its arguments' and output's array-like leaves."""
    def described(tree: Any) -> tuple[tuple[tuple[int, ...], str, str], ...]:
        return tuple(d for d in map(_describe, _leaves(tree)) if d is not None)
    return Signature(described(args), described(output), tuple(sorted(set(weights))), threads)


def check_allow(allow: object, names: Sequence[str]) -> dict[str, frozenset[str]]:
    """``allow`` as variant name -> the kinds of difference allowed for it.

    Accepts None, a mapping of variant name to a kind or kinds, or a kind or kinds allowed
    for every variant.

    Raises
    ------
    TypeError
        Not a mapping, str or sequence of str.
    ValueError
        An unknown kind or variant name.
    """
    def kinds_of(value: object, where: str) -> frozenset[str]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple, set, frozenset)) or not all(
                isinstance(k, str) for k in items):
            raise TypeError(f"{where} must be a kind or a list of kinds ({', '.join(KINDS)}), "
                            f"got {value!r}")
        unknown = sorted(set(items) - set(KINDS))
        if unknown:
            raise ValueError(f"{where}: unknown kind {', '.join(map(repr, unknown))}; the kinds "
                             f"are {', '.join(KINDS)}")
        return frozenset(items)

    if allow is None:
        return {n: frozenset() for n in names}
    if isinstance(allow, Mapping):
        missing = [k for k in allow if k not in names]
        if missing:
            raise ValueError(f"allow names {', '.join(map(repr, missing))}, not among the "
                             f"variants ({', '.join(names)})")
        return {n: kinds_of(allow[n], f"allow[{n!r}]") if n in allow else frozenset()
                for n in names}
    every = kinds_of(allow, "allow")
    return {n: every for n in names}


def _items(entries: Sequence[tuple[Any, ...]], index: int) -> list[Any]:
    return [e[index] for e in entries]


def _texts(values: Sequence[Any]) -> str:
    shown = [("x".join(map(str, v)) or "scalar") if isinstance(v, tuple) else str(v)
             for v in values]
    return "(" + ", ".join(shown) + ")" if len(shown) != 1 else shown[0]


def differences(base: Signature, other: Signature) -> dict[str, list[str]]:
    """Kind -> what differs between the baseline's signature and another variant's, in words
    ("inputs float32 vs bfloat16"); kinds that agree are left out."""
    found: dict[str, list[str]] = {}

    def note(kind: str, what: str, a: Sequence[Any], b: Sequence[Any]) -> None:
        if list(a) != list(b):
            found.setdefault(kind, []).append(f"{what} {_texts(a)} vs {_texts(b)}")

    if base.batch != other.batch:
        found["batch"] = [f"batch {base.batch} vs {other.batch}"]
    # A batch difference is its own kind: shapes are compared past the first dimension then.
    cut = 1 if base.batch != other.batch else 0
    note("shape", "input shapes", [s[cut:] if s else s for s in _items(base.inputs, 0)],
         [s[cut:] if s else s for s in _items(other.inputs, 0)])
    note("shape", "output shapes", [s[cut:] if s else s for s in _items(base.outputs, 0)],
         [s[cut:] if s else s for s in _items(other.outputs, 0)])
    note("dtype", "input dtypes", _items(base.inputs, 1), _items(other.inputs, 1))
    note("dtype", "weight dtypes", sorted({d for d, _ in base.weights}),
         sorted({d for d, _ in other.weights}))
    note("dtype", "output dtypes", _items(base.outputs, 1), _items(other.outputs, 1))
    note("device", "input devices", _items(base.inputs, 2), _items(other.inputs, 2))
    base_dev, other_dev = {d for _, d in base.weights}, {d for _, d in other.weights}
    if base_dev and other_dev:  # a module without weights runs where its inputs are
        note("device", "weight devices", sorted(base_dev), sorted(other_dev))
    if base.threads != other.threads:
        found["threads"] = [f"threads {base.threads} vs {other.threads}"]
    return found
