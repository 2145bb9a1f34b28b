"""The one dispatch layer between a PyTorch model and what fastbench does with its ops: run
the model under a TorchDispatchMode and hand every op that reaches the dispatcher (below
autograd) to a consumer as an ``OpEvent``, with the module it belongs to and its pass.

Owns the mode, the module hooks and the attribution of ops to modules, forward and
backward, and the one translation of the meta device's failures (an op that needs tensor
values) into :class:`MetaDeviceUnsupported`. What a consumer does with an op (the FLOP count
of :mod:`.analyzer`, a timing) is not here. Imports torch: load it only on demand.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal, Mapping

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ..errors import FastbenchError

__all__ = ["Dispatcher", "MetaDeviceUnsupported", "Modules", "OpEvent", "Phase", "meta_guard",
           "shapes", "tensors"]

Phase = Literal["forward", "backward"]
Shape = tuple[int, ...]


def tensors(tree: Any) -> list[torch.Tensor]:
    """The tensors in a nest of lists, tuples and dicts, in order."""
    leaves, _ = tree_flatten(tree)
    return [x for x in leaves if isinstance(x, torch.Tensor)]


def shapes(tree: Any) -> tuple[Shape, ...]:
    """The shape of each tensor in ``tree``, in order."""
    return tuple(tuple(int(s) for s in t.shape) for t in tensors(tree))


# -- the meta device's limits ---------------------------------------------------------------
class MetaDeviceUnsupported(FastbenchError, NotImplementedError):
    """The meta device cannot run an op: the op needs tensor values (its output shape depends
    on them, or it reads them), which meta tensors do not hold. ``op`` names it
    ("aten::nonzero") and ``reason`` says why; the message says what to do. A
    NotImplementedError, as torch's own error was."""

    def __init__(self, message: str, op: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.op = op
        self.reason = reason


# torch's messages when a meta tensor is asked for its values ("Tensor.item() cannot be called
# on meta tensors", "Cannot copy out of meta tensor; no data!").
_NO_VALUES = re.compile(r"meta tensor", re.IGNORECASE)
_COPIES = frozenset({"_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "to"})

_META_ADVICE = ("Analyse with real tensors instead: build the model and its inputs on "
                "device='cpu' (a small input keeps it quick).")


def _on_meta(args: Any, kwargs: Any) -> bool:
    return any(t.device.type == "meta" for t in tensors((args, kwargs)))


def _meta_reason(func: Any) -> str:
    """Why the meta device cannot run ``func``, from the op's tags."""
    tags = set(getattr(func, "tags", ()))
    if torch.Tag.dynamic_output_shape in tags:
        return "has an output shape that depends on tensor values"
    if torch.Tag.data_dependent_output in tags:
        return "reads tensor values (Tensor.item(), int(), bool() or an `if` on a tensor)"
    if func.overloadpacket.__name__ in _COPIES:
        return "copies tensor values off the meta device (.cpu(), .tolist(), .to())"
    return "needs tensor values or has no meta-device implementation"


def _meta_failure(func: Any, args: Any, kwargs: Any,
                  error: BaseException) -> MetaDeviceUnsupported | None:
    """The project's error for ``error``, raised by ``func`` on meta tensors because the meta
    device holds no values; None for any other failure (a shape error stays torch's)."""
    if isinstance(error, MetaDeviceUnsupported) or not _on_meta(args, kwargs):
        return None
    tags = set(getattr(func, "tags", ()))
    value_bound = torch.Tag.dynamic_output_shape in tags or torch.Tag.data_dependent_output in tags
    if not (isinstance(error, NotImplementedError) or value_bound
            or _NO_VALUES.search(str(error))):
        return None
    op = f"{func.namespace}::{func.overloadpacket.__name__}"
    reason = _meta_reason(func)
    return MetaDeviceUnsupported(
        f"{op} {reason}, and the meta device holds shapes but no values. {_META_ADVICE}",
        op, reason)


def _call(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """``func(*args, **kwargs)``, where a meta-device failure for want of values becomes
    MetaDeviceUnsupported (a NotImplementedError, so a RuntimeError still, as torch's was)."""
    try:
        return func(*args, **kwargs)
    except (NotImplementedError, RuntimeError) as e:
        failure = _meta_failure(func, args, kwargs, e)
        if failure is None:
            raise
        raise failure from e


class _MetaGuard(TorchDispatchMode):  # type: ignore[misc]
    """Runs every op unchanged; a meta-device failure becomes MetaDeviceUnsupported."""

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: Mapping[str, Any] | None = None) -> Any:
        return _call(func, args, kwargs or {})


def meta_guard() -> contextlib.AbstractContextManager[Any]:
    """A block in which an op the meta device cannot run (``nonzero``, ``.item()``) raises
    :class:`MetaDeviceUnsupported` naming it, instead of torch's bare error. For code that runs
    on the meta device outside :class:`Dispatcher`, such as building a model."""
    return _MetaGuard()


@dataclass(frozen=True)
class OpEvent:
    """One op as the dispatcher ran it.

    Attributes
    ----------
    func : torch._ops.OpOverload
        The op, e.g. ``torch.ops.aten.addmm.default``.
    args : tuple
        Its positional arguments.
    kwargs : mapping
        Its keyword arguments.
    outputs : object
        What it returned (a tensor, a tuple of tensors, ...).
    module : str
        The path of the module the op belongs to: "" for the model itself, else as
        ``named_modules`` names it ("layer1.0.conv1"); a module built during the forward,
        outside the model's tree, is ``<TypeName>`` under the module that built it.
    phase : {"forward", "backward"}
        "backward" while autograd runs a graph (``torch.autograd.grad``, ``.backward()``).
    """

    func: Any
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    outputs: Any
    module: str
    phase: Phase

    @property
    def name(self) -> str:
        """The op's name without overload: "addmm" for aten ops, "namespace.name" for the
        others ("prim.device")."""
        name = str(self.func.overloadpacket.__name__)
        namespace = self.func.namespace
        return name if namespace == "aten" else f"{namespace}.{name}"


class Modules:
    """Which module is running, and what each module did.

    Forward: a stack kept by global module hooks. Backward: every autograd node is owned by
    the innermost module whose forward built it, found by walking the graph back from each
    module's outputs when it returns, stopping at its inputs' nodes and at nodes already
    owned (those of inner modules, which return first).

    Attributes
    ----------
    types : dict of str to str
        Module path to type name, in the model's order, then modules built during a
        forward in the order they first ran.
    calls : Counter
        Forward calls per module path.
    inputs, outputs : dict of str to tuple of shapes
        Tensor shapes of each module's first call.
    """

    def __init__(self, root: torch.nn.Module) -> None:
        self._paths: dict[int, str] = {}
        self.types: dict[str, str] = {}
        for name, m in root.named_modules():
            self._paths[id(m)] = name
            self.types[name] = type(m).__name__
        self._stack: list[str] = [""]
        self._boundaries: list[set[Any]] = []
        self._owner: dict[Any, str] = {}
        self.calls: Counter[str] = Counter()
        self.inputs: dict[str, tuple[Shape, ...]] = {}
        self.outputs: dict[str, tuple[Shape, ...]] = {}

    def path_of(self, module: torch.nn.Module) -> str:
        """``module``'s path; one built during the forward is named under the running one."""
        path = self._paths.get(id(module))
        if path is None:   # a module built during the forward, outside the model's tree
            parent = self._stack[-1]
            path = f"{parent}.<{type(module).__name__}>" if parent else f"<{type(module).__name__}>"
            self.types[path] = type(module).__name__
        return path

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        path = self.path_of(module)
        self._stack.append(path)
        self.calls[path] += 1
        self.inputs.setdefault(path, shapes(args))
        self._boundaries.append({t.grad_fn for t in tensors(args) if t.grad_fn is not None})

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        path = self._stack.pop() if len(self._stack) > 1 else ""
        boundary = self._boundaries.pop() if self._boundaries else set()
        self.outputs.setdefault(path, shapes(output))
        self._claim(path, output, boundary)

    def _claim(self, path: str, output: Any, boundary: set[Any]) -> None:
        """Own every autograd node between ``output`` and the module's inputs (``boundary``)
        not owned yet. The walk passes through nodes its submodules own (they returned
        first), so a module whose last op is a submodule's still reaches its own nodes
        behind it; it never passes through another module's nodes."""
        inner = path + "." if path else ""
        todo = [t.grad_fn for t in tensors(output) if t.grad_fn is not None]
        seen: set[Any] = set()
        while todo:
            node = todo.pop()
            if node is None or node in boundary or node in seen:
                continue
            seen.add(node)
            owner = self._owner.get(node)
            if owner is None:
                self._owner[node] = path
            elif not (owner.startswith(inner) and owner != path):
                continue
            todo.extend(fn for fn, _ in node.next_functions)

    def current(self) -> str:
        """The running module's path: the owner of the autograd node being run in backward,
        the top of the forward stack otherwise ("" outside any module)."""
        node = torch._C._current_autograd_node()
        if node is not None:
            return self._owner.get(node, "")
        return self._stack[-1]

    @contextlib.contextmanager
    def hooked(self) -> Iterator[None]:
        """Global forward hooks on every module while the block runs."""
        from torch.nn.modules.module import (register_module_forward_hook,
                                             register_module_forward_pre_hook)
        handles = [register_module_forward_pre_hook(self._pre),
                   register_module_forward_hook(self._post)]
        try:
            yield
        finally:
            for h in handles:
                h.remove()


class _Mode(TorchDispatchMode):  # type: ignore[misc]
    """Sees every op below autograd and hands it on once it has run. Ops the consumer wants
    in pieces are decomposed first (their pieces then come through here one by one). An op
    the meta device cannot run raises MetaDeviceUnsupported."""

    def __init__(self, deliver: Callable[[Any, tuple[Any, ...], Mapping[str, Any], Any], None],
                 decompose: Callable[[Any], bool] | None) -> None:
        super().__init__()
        self._deliver = deliver
        self._decompose = decompose

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: Mapping[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if self._decompose is not None and self._decompose(func):
            with self:
                r = func.decompose(*args, **kwargs)
            if r is not NotImplemented:
                return r
        out = _call(func, args, kwargs)
        self._deliver(func, args, kwargs, out)
        return out


class Dispatcher:
    """Runs a model with every op it dispatches delivered to ``on_op``.

    Parameters
    ----------
    model : torch.nn.Module
        The model whose module tree names the ops.
    on_op : callable(OpEvent)
        Called after each op has run, in the order the ops ran.
    decompose : callable(op) -> bool, optional
        Whether to split an op into the ops of its decomposition (for composites a
        consumer has no rule for) instead of delivering it whole; by default never. Under
        ``inference_mode`` composites such as ``linear`` reach the dispatcher whole.

    Raises
    ------
    MetaDeviceUnsupported
        From a run on the meta device, at an op that needs tensor values (``nonzero``,
        boolean-mask indexing, ``.item()``): the message names the op and what to do.

    Examples
    --------
    >>> d = Dispatcher(model, events.append)            # doctest: +SKIP
    >>> out = d.forward(x)                              # doctest: +SKIP
    >>> with d.recording():                             # doctest: +SKIP
    ...     out.sum().backward()
    """

    def __init__(self, model: torch.nn.Module, on_op: Callable[[OpEvent], None], *,
                 decompose: Callable[[Any], bool] | None = None) -> None:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        self.model = model
        self.modules = Modules(model)
        self._on_op = on_op
        self._decompose = decompose

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Deliver every op run in the block: the model's forward (attributed by module
        hooks) or a backward (attributed by the autograd node being run; module hooks do
        not fire in backward)."""
        with self.modules.hooked(), _Mode(self._deliver, self._decompose):
            yield

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """``model(*inputs, **kwargs)`` with its ops delivered; returns the model's output."""
        with self.recording():
            return self.model(*inputs, **kwargs)

    def _deliver(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                 out: Any) -> None:
        phase: Phase = "backward" if torch._C._current_graph_task_id() != -1 else "forward"
        self._on_op(OpEvent(func, args, kwargs, out, self.modules.current(), phase))
