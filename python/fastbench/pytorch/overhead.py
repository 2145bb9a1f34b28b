"""The profiler's own cost: :func:`calibrate_overhead` measures, once per process and
collector, what observing one op, one module call and one region costs (an empty op and an
empty module timed with and without the profiler, interleaved), which :mod:`.profiler`
subtracts from the gaps around each event and from each op's window.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
import torch

from ..errors import FastbenchError
from ..profiling.result import Overhead
from . import observer

__all__ = ["calibrate_overhead"]

_clock = time.perf_counter_ns


_OVERHEAD: dict[str, Overhead] = {}   # per collector


def _per_call(fn: Callable[[], None], n: int) -> float:
    t = _clock()
    for _ in range(n):
        fn()
    return (_clock() - t) / n * 1e-9


def _l2_bytes() -> int:
    """This CPU's L2 data cache per core (1 MiB when unknown)."""
    from ..machine import facts
    try:
        for c in facts.caches():
            if c.level == 2 and c.kind in ("Data", "Unified"):
                return int(c.size_bytes)
    except (OSError, ValueError):
        pass
    return 1 << 20


def calibrate_overhead(refresh: bool = False, collector: str = "dispatch") -> Overhead:
    """What observing one op, one module call and one region costs here (seconds), measured
    once per process and collector ("dispatch" or "native").

    The op cost is that of four common forms of op called in turn, as user code calls them,
    on 8-element tensors (so their arithmetic is negligible): a product of two tensors, a
    tensor plus a Python number, a unary op and a view. The loop is timed with and without
    the profiler in alternating blocks, and the least disturbed block of each kept.

    - dispatch: the cost per op the mode sees. Forms differ (about 5 to 9 µs each here) and
      so do runs (about ±10%), so for ops of a few µs the subtraction is uncertain by about
      as much as the ops take. Part of the cost falls inside the op's timed window: the op
      is called from Python through its overload there, which converts the arguments as the
      normal call path does not; that part is the product called through its overload, less
      the normal call, plus a clock read.
    - native: the cost per range the observer records (about 150-300 ns here), from the
      forms with every range recorded; then, with the forms' ops recorded and the calls
      inside them only counted, as the profiler records, the cost of such a call (the rest
      of the difference). The part of a recorded range's cost inside its window is a clock
      read.

    The module is an ``nn.Identity``, called with the dispatch collector's hooks, or for the
    native collector with its ``forward`` stamped as the timed steps stamp each module's;
    the region an empty ``with`` block."""
    if collector not in ("dispatch", "native"):
        raise ValueError(f"collector must be 'dispatch' or 'native', got {collector!r}")
    if collector in _OVERHEAD and not refresh:
        return _OVERHEAD[collector]
    ext = observer.load() if collector == "native" else None
    if collector == "native" and ext is None:
        raise FastbenchError(f"the native observer is not available: "
                             f"{observer.unavailable_reason()}")
    # The collector's own pieces, imported here: .profiler imports this module.
    from .profiler import _Infos, _marking, _ProfiledModules, _Recorder, _RegionTimer

    x, y = torch.zeros(8), torch.zeros(8)
    mul = torch.ops.aten.mul.Tensor
    empty = torch.nn.Identity()
    n, rounds = 250, 7
    events: list[tuple[Any, ...]] = []
    infos = _Infos()
    regions: list[str] = []
    region = _RegionTimer(events, regions)

    forms: tuple[Callable[[], Any], ...] = (lambda: x * y, lambda: x + 1, x.relu,
                                            lambda: x.view(8))

    def overload() -> None:
        mul(x, y)

    def module() -> None:
        empty(x)

    def reg() -> None:
        with region("r"):
            pass

    def mixed() -> None:
        for f in forms:
            f()

    # The same forms, each after a sweep of twice the L2 cache by numpy (not an op: not
    # observed, the same in both blocks).
    sweep = np.zeros(max(2 * _l2_bytes(), 1 << 20) // 8)

    def mixed_cold() -> None:
        for f in forms:
            sweep.__iadd__(1.0)
            f()

    # Per probe, the least disturbed block of each kind (a busy host only ever adds time),
    # over rounds that alternate the bare and the observed blocks.
    names = ["overload", "bare op", "bare module", "module", "bare region", "region",
             "bare mixed", "mixed", "bare cold", "cold"]
    best = dict.fromkeys(names + ["all recorded"], math.inf)
    # The native observer's ranges per call of mixed(): all recorded, then ops recorded and
    # the calls inside them counted.
    recorded = ops = inner = 0.0
    rounds_done = 0
    op_names: list[str] = []

    def keep(name: str, fn: Callable[[], Any], count: int = n) -> None:
        best[name] = min(best[name], _per_call(fn, count))

    if ext is not None:
        ext.open()
        ext.start()
        with torch.no_grad():
            mixed()
        ext.stop()
        names_of = ext.keys(0)
        first = ext.drain()[1]
        op_names = sorted({names_of[int(k)][0] for k, d in zip(first[:, 0], first[:, 1])
                           if d == 0})
    try:
        with torch.no_grad():
            for _ in range(rounds):
                keep("overload", overload)
                keep("bare region", lambda: None)
                keep("bare op", forms[0])
                keep("bare mixed", mixed)
                keep("bare cold", mixed_cold, 20)
                if ext is not None:
                    # Every range recorded (no ops named), then as the profiler records: the
                    # forms' ops recorded and the calls inside them only counted.
                    ext.set_ops([])
                    ext.start()
                    keep("all recorded", mixed)
                    ext.stop()
                    recorded += ext.drain()[0].shape[0] / n
                    ext.set_ops(op_names)
                    ext.start()
                    keep("mixed", mixed)
                    keep("cold", mixed_cold, 20)
                    ext.stop()
                    ints = ext.drain()[1]
                    ops += ints.shape[0] / (n + 20)
                    inner += float(ints[:, 3].sum()) / (n + 20)
                    rounds_done += 1
                else:
                    mods = _ProfiledModules(None, events)
                    with mods.hooked(), _Recorder(mods, events, infos, regions):
                        keep("mixed", mixed)
                        keep("cold", mixed_cold, 20)
                if ext is None:
                    mods = _ProfiledModules(None, events)
                    with mods.hooked():
                        keep("module", module)
                else:   # the native collector's timed steps stamp modules, without hooks
                    empty.forward = _marking(empty.forward, "m", events)
                    keep("module", module)
                    del empty.forward
                keep("bare module", module)
                keep("region", reg)
                events.clear()
        clock = float(ext.clock_read_ns()) if ext is not None else _clock_read_ns()
    finally:
        if ext is not None:
            ext.close()
    inner_d = 0.0
    if ext is not None:
        recorded, ops, inner = (x / rounds_done for x in (recorded, ops, inner))
        op_d = (best["all recorded"] - best["bare mixed"]) / recorded
        inner_d = max((best["mixed"] - best["bare mixed"] - ops * op_d) / inner, 0.0) \
            if inner > 0 else 0.0
        cold_d = (best["cold"] - best["bare cold"] - inner * inner_d) / ops
    else:
        op_d = (best["mixed"] - best["bare mixed"]) / len(forms)
        cold_d = (best["cold"] - best["bare cold"]) / len(forms)
    mod_d = best["module"] - best["bare module"]
    reg_d = best["region"] - best["bare region"]
    if ext is not None:
        inside = clock * 1e-9
    else:
        inside = max(best["overload"] - best["bare op"], 0.0) + clock * 1e-9
    _OVERHEAD[collector] = Overhead(max(op_d, inside), inside, max(mod_d, 0.0),
                                    max(reg_d, 0.0), max(cold_d, op_d, inside),
                                    float(sweep.nbytes), inner_d)
    return _OVERHEAD[collector]


def _clock_read_ns() -> float:
    """The median cost of a clock read from Python (ns)."""
    reads = []
    for _ in range(2000):
        a = _clock()
        b = _clock()
        reads.append(b - a)
    return float(np.median(reads))
