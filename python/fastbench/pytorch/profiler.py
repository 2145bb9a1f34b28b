"""PyTorch's collector for :class:`fastbench.profiling.Profile`: every op the dispatcher runs
timed, attributed to its module (forward by module hooks, backward by the autograd node
being run), its named region and its step.

Two collectors. The native one (:mod:`.observer`, a RecordFunction callback built against
the installed torch) stamps each op's start and end in C++, a few hundred ns an op; the
first step is run once under the dispatch layer (:mod:`.dispatch`) to learn each op's FLOPs
and bytes by (name, shapes) and is left out of the figures. The dispatch collector (a
Python dispatch mode, several µs an op) is the fallback where no compiler is at hand, and
``collector="dispatch"`` asks for it.

How time is split. The collector keeps one timeline of the thread that profiles: op
windows, module entries and exits, region entries and exits, step marks
(:mod:`.timeline`). Each op window is the op's time; each gap between two events is the
Python and framework time of whatever was running then (the innermost module in forward;
in backward, the module owning the next op's autograd node; else the loop outside the
model). Observing costs time: the cost of one observed op, of a module's hooks (for the
native collector, of the wrapper that stamps a module's forward) and of a region is
measured once per process and collector (:mod:`.overhead`: an empty op and an empty
module, timed with and without the profiler, interleaved) and subtracted from the gaps
around each event, and the part that falls inside each op window from it (a clock read;
for the native collector also the callbacks of the calls nested in the op). What the
dispatch collector adds itself (the first FLOP count of each op and shapes) is timed where
it happens and subtracted too.

Data loading. torch wraps each fetch of a DataLoader's batch in a record_function range
(:func:`.timeline.is_data_loading`); the native observer records those ranges, and the
dispatch collector sees the ops that open and close them. A fetch's wall time, the ops it
runs included (collate, transforms, and with workers the wait for them), is one item, "data
loading", outside any module: its ops are not the model's families.

Ops run by other threads are not seen: both collectors observe the thread that profiles.
"""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..errors import FastbenchError
from ..profiling.result import (DATA_LOADING, NOT_IN_OP, OUTSIDE, Cell, Overhead, Profile,
                                 TraceEvent, op_family)
from . import observer
from .aten_ops import count_decomposed, count_op
from .dispatch import Modules, tensors
from .overhead import calibrate_overhead
from .timeline import COST as _COST
from .timeline import END as _END
from .timeline import ENTER as _ENTER
from .timeline import EXIT as _EXIT
from .timeline import LOAD_IN as _LOAD_IN
from .timeline import LOAD_OUT as _LOAD_OUT
from .timeline import OP as _OP
from .timeline import REGION_IN as _REGION_IN
from .timeline import REGION_OUT as _REGION_OUT
from .timeline import START as _START
from .timeline import STEP as _STEP
from .timeline import is_data_loading, merge_native, script_of

__all__ = ["COLLECTORS", "Profiler", "calibrate_overhead", "profile_run"]

_clock = time.perf_counter_ns

COLLECTORS = ("auto", "native", "dispatch")
_MAX_EVENTS = 2_000_000   # about 200 MB of tuples: beyond it, stop recording and say so
def _signature(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The shapes of an op's tensor arguments (lists of tensors as tuples of shapes)."""
    sig: list[Any] = []
    for a in args:
        if isinstance(a, torch.Tensor):
            sig.append(tuple(a.shape))
        elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            sig.append(tuple(tuple(t.shape) for t in a if isinstance(t, torch.Tensor)))
    return tuple(sig)


def _shapes_text(sig: tuple[Any, ...]) -> str:
    return ", ".join(str(s) for s in sig)


def _native_shapes(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """An op's shapes as the native observer writes them: every schema argument, keyword
    ones included, and a number passed where the schema takes a tensor (``x + 1``) as the
    0-d tensor RecordFunction sees."""
    schema = func._schema.arguments
    pairs = [*zip(schema, args),
             *((a, kwargs[a.name]) for a in schema[len(args):] if a.name in kwargs)]
    sig: list[Any] = []
    for arg, v in pairs:
        if isinstance(v, (bool, int, float, complex)) and str(arg.type) == "Tensor":
            sig.append(())
        else:
            sig.extend(_signature((v,)))
    return _shapes_text(tuple(sig))


def _dtype_of(args: tuple[Any, ...]) -> str:
    for t in tensors(args):
        if t.is_floating_point():
            return str(t.dtype).replace("torch.", "")
    return ""


@dataclass
class _OpInfo:
    """What is known of one op at one set of input shapes (counted once)."""

    name: str
    shapes: str
    flops: float
    bytes: float
    dtype: str
    index: int = 0
    counted: bool = True   # False: met only by the native observer, FLOPs and bytes unknown


class _Infos(dict[tuple[Any, ...], _OpInfo]):
    """What is known of each op at each set of shapes, by (op, shapes), and in the order
    learnt: events hold an info's index, not the info, so the events list holds no objects
    the garbage collector has to keep walking (a real cost of observing that grows with the
    list)."""

    def __init__(self) -> None:
        super().__init__()
        self.table: list[_OpInfo] = []
        # (name, shapes of all schema arguments) -> index: how the native observer's ranges
        # find what the dispatch pass learnt.
        self.learnt: dict[tuple[str, str], int] = {}

    def add(self, key: tuple[Any, ...], info: _OpInfo, native_shapes: str | None = None) -> None:
        info.index = len(self.table)
        self.table.append(info)
        self[key] = info
        self.learnt.setdefault((info.name, info.shapes if native_shapes is None
                                else native_shapes), info.index)

    def unlearnt(self, name: str, shapes: str) -> int:
        """Add an op only the native observer met (no FLOPs or bytes); its index."""
        info = _OpInfo(name, shapes, 0.0, 0.0, "", counted=False)
        info.index = len(self.table)
        self.table.append(info)
        self.learnt[(name, shapes)] = info.index
        return info.index


class _ProfiledModules(Modules):
    """The dispatch layer's module attribution, without recording shapes, telling outside the
    model from the model itself, adopting the first top-level module as the model when none
    was given, and putting module entries and exits on the timeline."""

    def __init__(self, root: torch.nn.Module | None, events: list[tuple[Any, ...]]) -> None:
        super().__init__(root if root is not None else torch.nn.Module())
        self._adopt = root is None
        self._events = events
        self.seen: dict[str, torch.nn.Module] = {}   # each path's module, as first called

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        t_in = _clock()
        if self._adopt and len(self._stack) == 1:
            self._adopt = False
            for name, m in module.named_modules():
                self._paths[id(m)] = name
                self.types.setdefault(name, type(m).__name__)
        path = self.path_of(module)
        self.seen.setdefault(path, module)
        self._stack.append(path)
        self._boundaries.append({t.grad_fn for t in tensors(args) if t.grad_fn is not None}
                                if torch.is_grad_enabled() else set())
        t = _clock()
        # (kind, time, path, ns the hook itself took): .timeline leaves the hooks' own time
        # out where it replays module entries and exits on steps run without them.
        self._events.append((_ENTER, t, path, t - t_in))

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        t = _clock()
        path = self._stack.pop() if len(self._stack) > 1 else ""
        boundary = self._boundaries.pop() if self._boundaries else set()
        if torch.is_grad_enabled():
            self._claim(path, output, boundary)
        self._events.append((_EXIT, t, path, _clock() - t))

    @contextlib.contextmanager
    def marked(self) -> Iterator[None]:
        """Entries and exits of the modules the hooks have seen, on the timeline, stamped by
        a wrapper put around each one's ``forward`` while the block runs (about 0.5 µs a
        call here, a quarter of what the hooks cost: the call keeps torch's fast path). A
        module whose ``forward`` cannot be set is left alone, and so are modules built anew
        in each forward: .timeline replays the first step's module events on a step whose
        marks do not match them."""
        wrapped: list[tuple[torch.nn.Module, Any]] = []
        try:
            for path, module in self.seen.items():
                own = module.__dict__.get("forward", _NO_FORWARD)
                try:
                    module.forward = _marking(module.forward, path, self._events)
                except (AttributeError, TypeError, RuntimeError):
                    continue
                wrapped.append((module, own))
            yield
        finally:
            _unwrap(wrapped)

    def running(self) -> tuple[str, str]:
        """(module, phase) of the op about to run: the owner of the autograd node in
        backward, the top of the forward stack otherwise; OUTSIDE when neither."""
        node = torch._C._current_autograd_node()
        if node is not None:
            return self._owner.get(node, OUTSIDE), "backward"
        if len(self._stack) > 1:
            return self._stack[-1], "forward"
        return OUTSIDE, ""


_NO_FORWARD = object()   # a module with no ``forward`` of its own, only its class's


def _marking(forward: Callable[..., Any], path: str,
             events: list[tuple[Any, ...]]) -> Callable[..., Any]:
    """``forward`` stamping its entry and exit on ``events`` as the module at ``path``."""
    @functools.wraps(forward)
    def marked(*args: Any, **kwargs: Any) -> Any:
        events.append((_ENTER, _clock(), path))
        try:
            return forward(*args, **kwargs)
        finally:
            events.append((_EXIT, _clock(), path))
    return marked


def _unwrap(wrapped: Sequence[tuple[torch.nn.Module, Any]]) -> None:
    """Give each module back the ``forward`` it had before :func:`_marking` (its own
    attribute, or none: its class's)."""
    for module, own in reversed(wrapped):
        if own is _NO_FORWARD:
            module.__dict__.pop("forward", None)
        else:
            module.forward = own


def _overloads(packet: str, *names: str) -> frozenset[Any]:
    """The overloads of ``torch.ops.profiler.<packet>`` so named that this torch has."""
    ops = getattr(torch.ops.profiler, packet, None)
    return frozenset(getattr(ops, n) for n in names if ops is not None and hasattr(ops, n))


# The ops that open and close a record_function range (torch/autograd/profiler.py's
# record_function: the first argument of an opening op is the range's name). Ranges are
# ``with`` blocks, so they close in the reverse order they opened.
_RANGE_OPEN = _overloads("_record_function_enter_new", "default") | \
    _overloads("_record_function_enter", "default")
_RANGE_CLOSE = _overloads("_record_function_exit", "default", "_RecordFunction")
_RANGE_OPS = _RANGE_OPEN | _RANGE_CLOSE


class _Recorder(TorchDispatchMode):  # type: ignore[misc]
    """Times every op reaching the dispatcher on this thread, and marks a DataLoader's
    fetches (LOAD_IN before the op that opens the fetch's range, LOAD_OUT after the op that
    closes it)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's handler in torch._disable_dynamo unless told not to: a frame
        # check on every op (about 1 µs). The handler calls no compiled code, and a compiled
        # graph runs its ops inside one call, not op by op through here.
        return False

    def __init__(self, modules: _ProfiledModules, events: list[tuple[Any, ...]],
                 infos: _Infos, regions: list[str]) -> None:
        super().__init__()
        self._modules = modules
        self._events = events
        self._infos = infos
        self._regions = regions
        self._ranges: list[str | None] = []   # the open record_function ranges' fetches

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: Mapping[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        t0 = _clock()
        out = func(*args, **kwargs)
        t1 = _clock()
        module, phase = self._modules.running()
        key = (func, _signature(args))
        info = self._infos.get(key)
        extra = 0
        if info is None:
            info = self._learn(func, args, kwargs, out, key)
            extra = _clock() - t1
        op = (_OP, t0, t1, info.index, module, phase,
              self._regions[-1] if self._regions else "", extra, 0)
        if func in _RANGE_OPS:
            self._range(func, args, op)
        else:
            self._events.append(op)
        return out

    def _range(self, func: Any, args: tuple[Any, ...], op: tuple[Any, ...]) -> None:
        """Put an op that opens or closes a record_function range on the timeline, inside
        the fetch when the range is a DataLoader's."""
        if func in _RANGE_OPEN:
            name = args[0] if args and isinstance(args[0], str) else ""
            fetch = name if is_data_loading(name) else None
            self._ranges.append(fetch)
            if fetch is not None:
                self._events.append((_LOAD_IN, op[1], fetch))
            self._events.append(op)
            return
        self._events.append(op)
        fetch = self._ranges.pop() if self._ranges else None
        if fetch is not None:
            self._events.append((_LOAD_OUT, op[2], fetch))

    def _learn(self, func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], out: Any,
               key: tuple[Any, ...]) -> _OpInfo:
        try:
            c = count_op(func, args, kwargs, out)
            if c is None:  # a composite without a formula: its pieces, as the analyzer does
                c = count_decomposed(func, args, kwargs, out)
        except Exception:   # a formula that cannot read these arguments counts nothing
            c = None
        name = f"{func.namespace}::{func.overloadpacket.__name__}"
        info = _OpInfo(name, _shapes_text(key[1]), float(c.flops) if c else 0.0,
                       float(c.bytes) if c else 0.0, _dtype_of(args))
        self._infos.add(key, info, _native_shapes(func, args, kwargs))
        return info


class _RegionTimer:
    """``with region(name):`` puts a named region on the timeline."""

    def __init__(self, events: list[tuple[Any, ...]], regions: list[str]) -> None:
        self._events = events
        self._regions = regions

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        self._events.append((_REGION_IN, _clock(), name))
        self._regions.append(name)
        try:
            yield
        finally:
            self._regions.pop()
            self._events.append((_REGION_OUT, _clock(), name))


# -- from the timeline to cells ------------------------------------------------------------
def _build(events: Sequence[tuple[Any, ...]], table: Sequence[_OpInfo], overhead: Overhead,
           warmup: int) -> tuple[list[Cell], np.ndarray, np.ndarray, list[TraceEvent], int]:
    """Cells, net and gross step times, trace events and the number of ops run outside any
    step, from a timeline of step marks, module and region events and ops.

    Inside a DataLoader's fetch (between LOAD_IN and LOAD_OUT: marks that cost nothing
    themselves, the ops at their edges carrying the cost) the ops and the time between them
    go to one cell, :data:`DATA_LOADING`, outside any module, in the user's innermost region
    or else a region of that name; its calls count the fetches. A fetch after the last step
    (the one that ends a ``for`` loop over the DataLoader) is not counted as ops left out."""
    op_in = overhead.per_op_inside_s * 1e9
    hot = overhead.per_op_s * 1e9
    cold = max(overhead.per_op_cold_s, overhead.per_op_s) * 1e9
    mod_half = overhead.per_module_s * 1e9 / 4   # each of two hooks, each side of its stamp
    reg_half = overhead.per_region_s * 1e9 / 4
    n = len(events)
    # The (module, phase) of the next op after each event, for gaps in backward.
    next_op: list[tuple[str, str] | None] = [None] * (n + 1)
    for i in range(n - 1, -1, -1):
        e = events[i]
        next_op[i] = (e[4], e[5]) if e[0] == _OP else next_op[i + 1]
    steps = _closed_steps(events)
    acc: dict[tuple[str, str, str, str, str], list[Any]] = {}
    net = np.zeros(steps)
    cost = np.zeros(steps)   # ns of observing subtracted in each step
    gross = np.zeros(steps)
    trace: list[TraceEvent] = []
    t_origin = events[0][1] if events else 0
    stack: list[tuple[str, int]] = []
    regions: list[tuple[str, int]] = []
    fetches: list[int] = []   # the start of each DataLoader fetch open now
    prev_cost = 0.0
    prev_op: tuple[str, str] | None = None
    prev_bytes = 0.0
    t_prev = t_origin
    step = 0
    step_start: int | None = None
    outside_ops = 0

    def half(after_bytes: float) -> float:
        """Half of an op's observing cost outside its window (ns), on the side that follows
        work touching ``after_bytes``: the profiler's Python runs slower once the caches
        hold the op's data instead of it (from ``hot`` to ``cold`` as the bytes reach
        ``overhead.cold_bytes``)."""
        warmth = min(after_bytes / overhead.cold_bytes, 1.0) if overhead.cold_bytes > 0 else 0.0
        return max(hot + (cold - hot) * warmth - op_in, 0.0) / 2

    def before(i: int) -> float:
        kind = events[i][0]
        if kind == _OP:
            return half(prev_bytes)
        if kind in (_ENTER, _EXIT):
            return mod_half
        if kind in (_LOAD_IN, _LOAD_OUT):
            # A mark that costs nothing; where an op starts with it, the op's cost before
            # its window falls in this gap.
            same = i + 1 < n and events[i + 1][1] == events[i][1]
            return before(i + 1) if same else 0.0
        return reg_half

    def loading(region: str) -> tuple[str, str, str, str, str]:
        """The cell of time spent in a fetch."""
        return (DATA_LOADING, "", OUTSIDE, region or DATA_LOADING, "")

    def add(key: tuple[str, str, str, str, str], seconds: float, calls: int,
            info: _OpInfo | None) -> None:
        cell = acc.get(key)
        if cell is None:
            cell = acc[key] = [np.zeros(steps), 0, 0.0, 0.0, info.dtype if info else ""]
        cell[0][step] += seconds
        if step >= warmup:
            cell[1] += calls
            if info is not None:
                cell[2] += info.flops
                cell[3] += info.bytes

    pending = 0.0   # observing cost marked since the last event (ns), off the next gap
    for i, e in enumerate(events):
        kind, t = e[0], e[1]
        counting = step_start is not None and step < steps
        if kind == _COST:
            if counting:
                pending += e[2]
                cost[step] += e[2]
            continue
        if counting and t > t_prev:   # the gap before this event
            gap = max(t - t_prev - prev_cost - before(i) - pending, 0.0) * 1e-9
            region = regions[-1][0] if regions else ""
            nxt = next_op[i] if kind == _OP else None
            if nxt is not None and nxt[1] == "backward":
                module, phase = nxt
            elif (prev_op is not None and prev_op[1] == "backward" and not stack
                  and kind not in (_STEP, _END)):
                # Python in a node after its last op; not the engine's return from
                # backward() and the rest of the step after the last node.
                module, phase = prev_op
            elif stack:
                module, phase = stack[-1][0], "forward"
            else:
                module, phase = OUTSIDE, ""
            add(loading(region) if fetches else (NOT_IN_OP, "", module, region, phase), gap,
                0, None)
            net[step] += gap
        pending = 0.0
        if kind == _OP:
            _, t0, t1, index, module, phase, region, extra, inner = e
            info = table[index]
            if counting:
                inside = op_in + inner   # the calls observed inside the op, too
                dur = max(t1 - t0 - inside, 0.0) * 1e-9
                if fetches:
                    add(loading(region), dur, 0, None)
                else:
                    add((info.name, info.shapes, module, region, phase), dur, 1, info)
                net[step] += dur
                cost[step] += inside + half(prev_bytes) + half(info.bytes) + extra
                trace.append(TraceEvent(info.name, "op", t0 - t_origin, t1 - t0, 0,
                                        {"shapes": info.shapes, "module": module,
                                         "phase": phase or "outside",
                                         "flops": info.flops, "bytes": info.bytes}))
            elif not fetches:
                outside_ops += 1
            prev_op = (module, phase)
            t_prev = t1
            prev_cost = half(info.bytes) + extra
            prev_bytes = info.bytes
            continue
        if kind in (_LOAD_IN, _LOAD_OUT):
            if kind == _LOAD_IN:
                fetches.append(t)
            elif fetches:
                start = fetches.pop()
                if counting:
                    add(loading(regions[-1][0] if regions else ""), 0.0, 1, None)
                    trace.append(TraceEvent(DATA_LOADING, "region", start - t_origin,
                                            t - start, 0, {"range": e[2]}))
            if t > t_prev:   # the gap before took the cost left after the last event
                t_prev, prev_cost = t, 0.0
            continue
        if kind == _ENTER:
            stack.append((e[2], t))
        elif kind == _EXIT:
            if stack:
                name, start = stack.pop()
                if counting:
                    trace.append(TraceEvent(name or "(model)", "module", start - t_origin,
                                            t - start, 0, {"module": name}))
            prev_op = None
        elif kind == _REGION_IN:
            regions.append((e[2], t))
        elif kind == _REGION_OUT:
            if regions:
                name, start = regions.pop()
                if counting:
                    trace.append(TraceEvent(name, "region", start - t_origin, t - start, 0))
        else:   # a step mark
            if kind in (_STEP, _END) and counting and step_start is not None:
                gross[step] = (t - step_start) * 1e-9
                trace.append(TraceEvent(f"step {step}", "step", step_start - t_origin,
                                        t - step_start, 0))
                step += 1
            step_start = t if kind in (_STEP, _START) else None
        if counting and kind in (_ENTER, _EXIT, _REGION_IN, _REGION_OUT):
            cost[step] += 2 * (mod_half if kind in (_ENTER, _EXIT) else reg_half)
        t_prev = t
        prev_cost = mod_half if kind in (_ENTER, _EXIT) else reg_half

    _reconcile(acc, net, gross - cost * 1e-9)
    kept = max(steps - warmup, 1)
    cells = [Cell(op, shapes, module, region, phase, times[warmup:], calls, flops / kept,
                  nbytes / kept, dtype)
             for (op, shapes, module, region, phase), (times, calls, flops, nbytes, dtype)
             in acc.items()]
    return cells, net[warmup:], gross[warmup:], trace, outside_ops


def _reconcile(acc: Mapping[tuple[str, str, str, str, str], list[Any]], net: np.ndarray,
               target: np.ndarray) -> None:
    """Make each step's cells sum to its observed time less the whole cost of observing it.

    The cost is split around each event by a model (the clock read inside an op's window,
    the rest halved before and after it), and a gap the model over-charges is floored at
    zero, so the cells can sum to more than the step's net time. The excess is taken from
    that step's time between ops first (where most of the cost falls), then from its ops,
    in proportion to each."""
    for k in range(net.size):
        excess = net[k] - max(target[k], 0.0)
        if excess <= 0:
            continue
        gaps = [c[0] for key, c in acc.items() if key[0] == NOT_IN_OP]
        ops = [c[0] for key, c in acc.items() if key[0] != NOT_IN_OP]
        for group in (gaps, ops):
            total = float(sum(t[k] for t in group))
            if total <= 0 or excess <= 0:
                continue
            take = min(excess, total)
            for t in group:
                t[k] *= 1.0 - take / total
            excess -= take
        net[k] = max(target[k], 0.0) + max(excess, 0.0)


# -- the public face -------------------------------------------------------------------------
class Profiler:
    """``with fastbench.profile(model) as prof:`` -- records the block; ``prof.step()`` ends
    each step, ``prof.region(name)`` names a part of it. After the block, the
    :class:`~fastbench.profiling.Profile` is ``prof.result``, and ``prof`` answers as it does
    (``prof.top()``, ``prof.bottlenecks()``, ``print(prof)``).

    Parameters
    ----------
    model : torch.nn.Module, optional
        Names modules by its ``named_modules()``; by default the first module called from
        outside any module is taken as the model.
    warmup : int
        Steps recorded but left out of the figures (the first call's allocations and
        one-time work).
    roofline : Roofline, bool or None
        The ceilings the verdicts are judged against: by default (None or True) a quick
        calibration for PyTorch's thread count, cached per machine; False for none.
    trace : bool
        Keep the timeline for :func:`fastbench.profiling.chrome_trace`.
    collector : {"auto", "native", "dispatch"}
        What times the ops. "native" (the default where it can be built, "auto"): a C++
        RecordFunction observer, a few hundred ns an op; the first step then runs under the
        dispatch layer to count FLOPs and is left out of the figures, so profile at least
        two steps (a block without ``step()`` is one step: it is timed by the dispatch
        collector). "dispatch": a Python dispatch mode times every op (several µs an op,
        subtracted), and the first step counts.
    """

    def __init__(self, model: torch.nn.Module | None = None, *, warmup: int = 0,
                 roofline: Any = None, trace: bool = True, name: str | None = None,
                 collector: str = "auto") -> None:
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module or None, got "
                            f"{type(model).__name__}")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"warmup must be a whole number of steps >= 0, got {warmup!r}")
        if collector not in COLLECTORS:
            raise ValueError(f"collector must be one of {', '.join(COLLECTORS)}, got "
                             f"{collector!r}")
        self.model = model
        self.warmup = warmup
        self._roofline_arg = roofline
        self._trace = trace
        self._name = name or (type(model).__name__ if model is not None else "run")
        self._collector_arg = collector
        self.collector = collector
        self._fallback: str | None = None   # why the native observer is not used
        self._events: list[tuple[Any, ...]] = []
        self._regions: list[str] = []
        self._infos = _Infos()
        self._region = _RegionTimer(self._events, self._regions)
        self._stack: contextlib.ExitStack | None = None
        self._modules: _ProfiledModules | None = None
        self._native: Any = None            # the observer module while open
        self._ranges: list[tuple[np.ndarray, np.ndarray]] = []
        self._keys: list[tuple[str, str]] = []
        self._learning = True               # the first step runs under the dispatch layer
        self._drop_first = False            # leave the first step out of the figures
        self._marked = False
        self.result: Profile | None = None
        self.unprofiled_step_times: list[float] | None = None

    # -- recording ----------------------------------------------------------------------
    def _begin(self) -> None:
        """Pick the collector, measure its cost (once per process) and open the observer."""
        self.collector = self._collector_arg
        if self.collector != "dispatch" and observer.load() is None:
            reason = observer.unavailable_reason() or "it could not be loaded"
            if self.collector == "native":
                raise FastbenchError(f"collector='native' asked for, but {reason}")
            self._fallback = reason
            self.collector = "dispatch"
        elif self.collector == "auto":
            self.collector = "native"
        self.overhead = calibrate_overhead(collector=self.collector)
        if self.collector == "native":
            self._native = observer.load()
            self._native.open()
            self._drop_first = True
        self._learning = True

    def _end(self) -> None:
        """Stop observing and close the observer, keeping its ranges' names."""
        self._pause()
        if self._native is not None:
            self._keys = [tuple(k) for k in self._native.keys(0)]
            self._native.close()
            self._native = None

    def __enter__(self) -> Profiler:
        if self._stack is not None:
            raise FastbenchError("this profiler is already recording; profilers do not nest")
        self.result = None
        self._begin()
        self._resume()
        self._events.append((_START, _clock()))
        return self

    def _resume(self) -> None:
        self._modules = self._modules or _ProfiledModules(self.model, self._events)
        stack = contextlib.ExitStack()
        if self._learning or self._native is None:
            stack.enter_context(self._modules.hooked())
            stack.enter_context(_Recorder(self._modules, self._events, self._infos,
                                          self._regions))
        else:   # no hooks: the modules' forwards stamp their entries and exits (.timeline)
            stack.enter_context(self._modules.marked())
            self._native.start()
            stack.callback(self._native.stop)
        self._stack = stack

    def _pause(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None
        if self._native is not None:
            times, ints = self._native.drain()
            if times.shape[0]:
                self._ranges.append((times, ints))

    def _learnt(self) -> None:
        """The first step is over: from now on the native observer times the ops."""
        if self._learning and self._native is not None:
            running = self._stack is not None
            self._pause()
            self._learning = False
            self._native.set_ops(sorted({i.name for i in self._infos.table}))
            if running:
                self._resume()

    def step(self) -> None:
        """End the current step (call it at the end of each step)."""
        if self._stack is None:
            raise FastbenchError("step() is called inside the profiler's `with` block")
        self._marked = True
        self._events.append((_STEP, _clock()))
        self._learnt()
        if len(self._events) > _MAX_EVENTS:
            raise FastbenchError(f"the profile holds over {_MAX_EVENTS} events; profile fewer "
                                 f"steps")

    def region(self, name: str) -> contextlib.AbstractContextManager[None]:
        """``with prof.region("data loading"):`` names the time spent in the block."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a region's name is a non-empty string, got {name!r}")
        return self._region(name)

    def __exit__(self, *exc: Any) -> None:
        end = _clock()
        self._end()
        if exc[0] is not None:
            return
        if not self._marked:   # no step() called: the whole block is one step
            self._events.append((_END, end))
        self.result = self._finish()

    def _timeline(self) -> tuple[list[tuple[Any, ...]], Overhead, int]:
        """The timeline to build from, the cost model that goes with it and the steps to
        leave out: the native ops merged in where the observer timed any step, else the
        dispatch collector's own timeline (one step only: the step that learnt)."""
        drop = self.warmup + (1 if self._drop_first else 0)
        if self.collector != "native" or _closed_steps(self._events) < 2:
            if self.collector == "native":   # only the learning step: timed by dispatch
                self.collector = "dispatch"
                self._fallback = ("the block is one step, which the dispatch layer runs to "
                                  "count FLOPs: call prof.step() after each step to time "
                                  "the others natively")
                self.overhead = calibrate_overhead(collector="dispatch")
                drop = self.warmup
            return self._events, self.overhead, drop
        if self._ranges:
            times = np.concatenate([t for t, _ in self._ranges])
            ints = np.concatenate([i for _, i in self._ranges])
        else:
            times = np.zeros((0, 2), dtype=np.int64)
            ints = np.zeros((0, 4), dtype=np.int32)
        table = self._infos.table
        script = script_of(self._events, lambda index: table[index].name)
        events = merge_native(self._events, times, ints, self._keys, self._infos.learnt,
                              self._infos.unlearnt, script, self.overhead.per_op_s * 1e9,
                              self.overhead.per_inner_call_s * 1e9,
                              self.overhead.per_module_s * 1e9)
        return events, self.overhead, drop

    def _finish(self) -> Profile:
        events, overhead, drop = self._timeline()
        self.overhead = overhead
        cells, net, gross, trace, tail = _build(events, self._infos.table, overhead, drop)
        warnings = []
        if net.size == 0:
            raise FastbenchError(f"no step to report: {drop} steps are left out ("
                                 f"{self.warmup} warmup"
                                 + (", and the first, which counts FLOPs" if drop > self.warmup
                                    else "")
                                 + f") and only {net.size + drop} recorded")
        if self._fallback:
            warnings.append(f"ops timed by the Python dispatch collector (several µs an op, "
                            f"subtracted), not the native observer: {self._fallback}")
        if tail:
            warnings.append(f"{tail} ops ran after the last step() and are left out: call "
                            f"step() at the end of each step")
        unlearnt = {i.name for i in self._infos.table if not i.counted}
        uncounted = {c.op for c in cells if c.op in unlearnt and c.calls}
        if uncounted:
            warnings.append(f"{len(uncounted)} kinds of op were first met after the first "
                            f"step and their FLOPs and bytes are not counted: "
                            f"{', '.join(sorted(uncounted)[:5])}"
                            + (", ..." if len(uncounted) > 5 else ""))
        overhead_share = (overhead.per_op_s * sum(c.calls for c in cells
                                                  if c.op not in (NOT_IN_OP, DATA_LOADING))
                          / max(float(np.sum(net)), 1e-12))
        if overhead_share > 0.5:
            warnings.append(f"the profiler's own cost, subtracted, was {overhead_share:.0%} of "
                            f"the step's time: shares of small ops carry that uncertainty")
        cells, net, gross, left_out = _drop_disturbed(cells, net, gross)
        if left_out:
            warnings.append(f"{len(left_out)} of {net.size + len(left_out)} steps took far "
                            f"longer than the others (the host was busy) and are left out")
        # Steps are counted from the first one reported (after warmup and, with the native
        # collector, the first step); "left_out" names the disturbed ones among them.
        meta = {"name": self._name, "threads": torch.get_num_threads(),
                "torch": torch.__version__, "warmup": self.warmup,
                "collector": self.collector, "first_step": drop, "left_out": left_out}
        unprofiled = (np.asarray(self.unprofiled_step_times, dtype=np.float64)
                      if self.unprofiled_step_times else None)
        if unprofiled is not None and left_out and unprofiled.size == net.size + len(left_out):
            # profile_run's steps come in pairs: a left-out step takes its unprofiled pair
            # with it, so the observer effect compares the same steps and its interval pairs.
            unprofiled = np.delete(unprofiled, left_out)
        return Profile(tuple(cells), net, gross, overhead, unprofiled,
                       _roofline(self._roofline_arg), tuple(trace) if self._trace else (),
                       meta, tuple(warnings))

    # -- answering as the profile ----------------------------------------------------------
    def _profile(self) -> Profile:
        if self.result is None:
            raise FastbenchError("the profile is ready once the `with fastbench.profile(...)` "
                                 "block has ended")
        return self.result

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("result", "overhead"):
            raise AttributeError(name)
        return getattr(self._profile(), name)

    def __str__(self) -> str:
        return str(self._profile()) if self.result is not None else \
            f"<fastbench profiler of {self._name}, recording>"


def _closed_steps(events: Sequence[tuple[Any, ...]]) -> int:
    """How many steps the marks on ``events`` close."""
    steps, open_ = 0, False
    for e in events:
        kind = e[0]
        if kind in (_STEP, _END) and open_:
            steps += 1
        if kind in (_STEP, _START):
            open_ = True
        elif kind == _END:
            open_ = False
    return steps


def _drop_disturbed(cells: list[Cell], net: np.ndarray, gross: np.ndarray
                    ) -> tuple[list[Cell], np.ndarray, np.ndarray, list[int]]:
    """Leave out steps disturbed by the host: observed more than 10 MADs and 50% above the
    median step. Sums over steps give the shares, so one step stretched by a preemption
    would otherwise move every share; steps that merely vary (data-dependent work) stay, as
    leaving out their long tail would bias the shares. Never more than a tenth of the
    steps."""
    if gross.size < 4:
        return cells, net, gross, []
    med = float(np.median(gross))
    mad = float(np.median(np.abs(gross - med)))
    limit = med + max(10 * 1.4826 * mad, 0.5 * med)
    keep = gross <= limit
    if keep.all() or (~keep).sum() > gross.size // 10:
        return cells, net, gross, []
    kept = [Cell(c.op, c.shapes, c.module, c.region, c.phase, c.times[keep],
                 int(round(c.calls * keep.sum() / keep.size)), c.flops, c.bytes, c.dtype)
            for c in cells]
    return kept, net[keep], gross[keep], [int(i) for i in np.flatnonzero(~keep)]


def _roofline(arg: Any) -> Any:
    if arg is False:
        return None
    if arg is None or arg is True:
        from ..roofline import calibrate
        try:
            return calibrate(threads=torch.get_num_threads(), quick=True, progress=False)
        except FastbenchError:
            return None
    return arg


class _Warm(torch.nn.Module):  # type: ignore[misc]
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()


_WARM = _Warm()
_WARM_INPUT = torch.zeros(1)


def _warm_up(events: list[tuple[Any, ...]], native: Any = None) -> None:
    """One module call with one op through the freshly entered hooks and collector, its
    events dropped: the first observed call after entering costs tens of µs more than the
    next (the profiler's paths come back into the caches), which would otherwise land on
    the step's first module."""
    n = len(events)
    with torch.no_grad():
        _WARM(_WARM_INPUT)
    del events[n:]
    if native is not None:
        native.drain()


def profile_run(fn: Callable[..., Any], args: Sequence[Any] = (),
                kwargs: Mapping[str, Any] | None = None, *, steps: int = 20, warmup: int = 2,
                model: torch.nn.Module | None = None, roofline: Any = None,
                trace: bool = True, name: str | None = None,
                collector: str = "auto") -> Profile:
    """Profile ``fn(*args, **kwargs)`` as a step: ``warmup`` calls, then ``steps`` calls
    profiled alternating with ``steps`` unprofiled ones, so the observer effect is measured
    under the same conditions as the profile (plus one profiled and one unprofiled call
    first, dropped: the profiled one runs under the dispatch layer, which counts each op's
    FLOPs the first time it meets its shapes)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise ValueError(f"steps must be a whole number >= 2 (the shares' intervals come from "
                         f"the spread across steps), got {steps!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a whole number >= 0, got {warmup!r}")
    kwargs = dict(kwargs or {})
    if model is None:
        owner = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", None)
        model = owner if isinstance(owner, torch.nn.Module) else None
    label = name or (type(model).__name__ if model is not None
                     else getattr(fn, "__qualname__", "run"))
    prof = Profiler(model, roofline=roofline, trace=trace, name=label, collector=collector)
    for _ in range(warmup):
        fn(*args, **kwargs)
    prof._begin()
    prof._drop_first = True
    unprofiled: list[float] = []
    try:
        for i in range(steps + 1):
            t = _clock()
            fn(*args, **kwargs)
            if i:
                unprofiled.append((_clock() - t) * 1e-9)
            if i == 1:
                prof._learnt()
            prof._resume()
            try:
                _warm_up(prof._events, prof._native)
                prof._events.append((_START, _clock()))
                fn(*args, **kwargs)
                prof._events.append((_END, _clock()))
            finally:
                prof._pause()
    finally:
        prof._end()
    prof.unprofiled_step_times = unprofiled
    return prof._finish()
