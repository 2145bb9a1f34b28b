"""The profiler's timeline: the kinds of event on it, and the native observer's op ranges
(:mod:`.observer`) turned into its op events and merged with the Python marks (regions,
steps). No torch and no clock here: arrays in, tuples out.

Which ranges become ops. The observer sees every dispatcher call, nested ones included
(``aten::linear`` around ``aten::t`` and ``aten::addmm``, those around their own helpers),
and every autograd node backward runs. The profiler's ops are those its dispatch pass met
(below autograd, where fastbench counts FLOPs): told their names, the observer records a
range so named as an op unless it runs inside one, and only counts the ranges inside an op
(their callbacks' cost lies inside its window). A recorded range with no op under it is an
op too (one the pass did not meet); the others (a composite such as ``linear``, an autograd
node) are scaffolding, whose callbacks cost time between ops: that goes on the timeline as
cost marks. An op's FLOPs and bytes are the pass's for its (name, shapes); shapes the pass
did not meet count none, and the profile says so.

Which module runs. Module hooks cost about 2-4 µs a module call (torch's slow call path,
then Python), more than observing its ops natively, so the steps the observer times run
without them. The first step, run under the dispatch layer with the hooks, is the script:
its ops in order, each with its module and pass, and the module entries and exits between
them. Each timed step's ops are aligned with the script's by name (difflib's matching
blocks; the same sequence in the usual case) and take their module and pass from it (in
backward, the module is that of the op's autograd node, which only the script knows). An op
the script lacks takes the module of the op before it.

Where modules were entered and left, each timed step stamps itself: a wrapper around the
forward of each module the script met (about 0.5 µs a call, charged as observing cost).
Where a step's stamps are not the script's module events in order (a module built anew in
each forward, or one whose forward could not be wrapped), the script's events are replayed
in the step's gaps instead, each as far from the nearer op as in the script (less the
hooks' and the dispatch layer's own time there), and that step's stamps are cost only.
Replayed events are only as true as the first step was typical: its one-off costs (first
calls, a collection, a preemption) shift them, by milliseconds in a process's first
profile.

Data loading. torch wraps each fetch of a DataLoader's batch in a record_function range
(``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``: ``_profile_name`` in
torch/utils/data/dataloader.py). The observer records such ranges apart from the ops (torch
opens one inside the op ``profiler::_record_function_enter_new`` and closes it inside
``profiler::_record_function_exit``); a fetch goes on the timeline as LOAD_IN and LOAD_OUT
marks, widened to the op windows its ends fall in, so those two ops are part of it.
"""

from __future__ import annotations

import difflib
import heapq
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..profiling.result import OUTSIDE

__all__ = ["COST", "END", "ENTER", "EXIT", "LOAD_IN", "LOAD_OUT", "OP", "REGION_IN",
           "REGION_OUT", "START", "STEP", "Script", "is_data_loading", "merge_native",
           "script_of"]

# Event kinds: an op, a module's entry and exit, a region's, step marks (STEP ends a step and
# starts the next; START and END start or end one alone, around the unprofiled calls that
# alternate with profiled ones), COST: observing time spent between ops, (COST, t, ns), and
# a DataLoader's fetch of a batch, (LOAD_IN, t, range name) and (LOAD_OUT, t, range name).
OP, ENTER, EXIT, REGION_IN, REGION_OUT, STEP, START, END, COST, LOAD_IN, LOAD_OUT = range(11)

# The observer's kinds of range (observer.cpp): a plain range, an autograd node (1), an op,
# a record_function range.
_RANGE_KIND, _OP_KIND, _USER_KIND = 0, 2, 3
# How torch names the range around each DataLoader iterator's __next__.
_DATA_LOADING = "enumerate(DataLoader)#"
_ENGINE = "autograd::engine::"     # the engine's ranges around the nodes it runs
_MARKS = (STEP, START, END)


def is_data_loading(name: str) -> bool:
    """Whether a record_function range so named is a DataLoader's fetch of a batch (torch
    names it ``enumerate(DataLoader)#<iterator class>.__next__``)."""
    return name.startswith(_DATA_LOADING)


def _roles(depth: np.ndarray, kind: np.ndarray,
           engine: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per recorded range (sorted by start): whether it is an op, and the op it runs inside
    (-1). The observer marks the ops it knows by name; a plain range with no such op under
    it is an op too (one the first step did not meet), and what it holds runs inside it,
    unless ``engine`` marks it as the autograd engine's own range around a node."""
    n = depth.size
    # Pass 1: whether an op the observer marked lies under each range.
    below = np.zeros(n, dtype=bool)
    stack: list[int] = []

    def pop() -> None:
        j = stack.pop()
        if stack and (below[j] or kind[j] == _OP_KIND):
            below[stack[-1]] = True

    for i in range(n):
        while len(stack) > int(depth[i]):
            pop()
        stack.append(i)
    while stack:
        pop()
    # Pass 2: the ops, and what runs inside the ops this pass adds.
    plain = (kind == _RANGE_KIND) & ~below
    if engine is not None:
        plain &= ~engine
    is_op = (kind == _OP_KIND) | plain
    inside = np.full(n, -1, dtype=np.int64)
    outer: list[int] = []            # per depth, the op open at that depth or -1
    for i in range(n):
        d = int(depth[i])
        del outer[d:]
        host = next((o for o in reversed(outer) if o >= 0), -1)
        if host >= 0:
            inside[i] = host
            is_op[i] = False
        outer.append(i if is_op[i] else -1)
    return is_op, inside


@dataclass(frozen=True)
class Script:
    """The first step's ops in order, as (name, module, phase), and the module events in the
    gap before each op (``between[j]``, and after the last op ``between[len(ops)]``) as
    (kind, path, ns, anchor): ``ns`` after the gap's start (anchor 0) or before its end
    (anchor 1), whichever the event was nearer, counted without the profiler's own time."""

    ops: tuple[tuple[str, str, str], ...]
    between: tuple[tuple[tuple[int, str, int, int], ...], ...]


def script_of(events: Sequence[tuple[Any, ...]], name_of: Callable[[int], str]) -> Script:
    """The script of the first step on ``events`` (time order): its ops, named by
    ``name_of(index)``, and its module entries and exits, each at its distance from the
    nearer end of the gap it falls in, counted in the gap's time less the profiler's own:
    the dispatch layer's learning after an op, and each hook's time (an entry's before its
    stamp, an exit's after it; a 4th element of the event, where given), none of which the
    replayed steps run. Entries and exits mostly sit next to an op (a module returns right
    after its last op, the next is entered right away), so a distance from that op holds
    in a step whose gap is longer or shorter."""
    ops: list[tuple[str, str, str]] = []
    between: list[tuple[tuple[int, str, int, int], ...]] = []
    pending: list[tuple[int, str, int, int]] = []   # kind, path, time, the hook's ns
    gap_start: int | None = None

    def close(end: int) -> None:
        a = gap_start if gap_start is not None else end
        net = max(end - a - sum(c for *_, c in pending), 0)
        placed = []
        removed = 0
        for kind, path, t, c in pending:
            if kind == ENTER:
                removed += c
            offset = min(max(t - a - removed, 0), net)
            placed.append((kind, path, offset, 0) if 2 * offset <= net
                          else (kind, path, net - offset, 1))
            if kind == EXIT:
                removed += c
        between.append(tuple(placed))
        pending.clear()

    for e in events:
        kind = e[0]
        if kind in _MARKS:
            if gap_start is None and kind != END:
                gap_start = e[1]
                continue
            if gap_start is not None:
                break
        elif kind == OP:
            close(e[1])
            ops.append((name_of(e[3]), e[4], e[5]))
            # The gap starts once the dispatch layer has learnt the op (its ``extra`` ns,
            # after the op's window).
            gap_start = e[2] + int(e[7])
        elif kind in (ENTER, EXIT):
            pending.append((kind, e[2], e[1], int(e[3]) if len(e) > 3 else 0))
    else:
        e = (END, gap_start or 0)
    close(e[1])
    return Script(tuple(ops), tuple(between))


def _align(script: Sequence[str], step: Sequence[str]) -> list[int]:
    """For each of a step's ops, the index of the script op it matches, or -1."""
    if list(script) == list(step):
        return list(range(len(step)))
    out = [-1] * len(step)
    matcher = difflib.SequenceMatcher(None, list(script), list(step), autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            out[b + k] = a + k
    return out


def _replay(script: Script, names: list[str], t0: list[int], t1: list[int], start: int,
            end: int, aligned: dict[tuple[str, ...], list[int]] | None = None,
            events: bool = True) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:
    """(module, phase) of each of one step's ops, and the script's module events placed in
    the step's gaps (none unless ``events``: a step that stamped its own). ``aligned``
    remembers alignments by the step's op names: steps after the first are mostly alike (a
    training step whose gradients accumulate into existing ones differs from the first in
    the same way every time), and difflib on thousands of ops takes a second."""
    key = tuple(names)
    match = aligned.get(key) if aligned is not None else None
    if match is None:
        match = _align([o[0] for o in script.ops], names)
        if aligned is not None:
            aligned[key] = match
    owners: list[tuple[str, str]] = []
    placed: list[tuple[Any, ...]] = []
    done = 0                          # script gaps replayed so far
    prev_end = start
    current = (OUTSIDE, "")

    def place(upto: int, a: int, b: int) -> None:
        nonlocal done
        if events:
            last = a
            for g in range(done, upto):
                for kind, path, ns, anchor in script.between[g]:
                    t = min(max(a + ns if anchor == 0 else b - ns, last), b)
                    placed.append((kind, t, path))
                    last = t
        done = max(done, upto)

    for i, j in enumerate(match):
        if j >= done:                 # the script's events up to this op, in the gap before it
            place(j + 1, prev_end, t0[i])
            current = script.ops[j][1], script.ops[j][2]
        owners.append(current)
        prev_end = t1[i]
    place(len(script.between), prev_end, max(end, prev_end))
    return owners, placed


def merge_native(marks: Sequence[tuple[Any, ...]], times: np.ndarray, ints: np.ndarray,
                 keys: Sequence[tuple[str, str]], learnt: Mapping[tuple[str, str], int],
                 new_op: Callable[[str, str], int], script: Script,
                 per_range_ns: float, per_inner_ns: float,
                 per_module_ns: float = 0.0) -> list[tuple[Any, ...]]:
    """The timeline: ``marks`` (the profiler's Python events, in time order: the first
    step's, under the dispatch layer, then step marks, regions and the module entries and
    exits the later steps stamped) merged with the ops among the observer's ranges, their
    modules taken from ``script``.

    A step's stamped module events stay where they match the script's, in order; otherwise
    (a module built anew in each forward, or one that could not be stamped) the script's
    are replayed in the step's gaps instead, and its stamped ones become COST marks of
    ``per_module_ns / 2`` each (what stamping one costs).

    ``times`` rows are (t0, t1), ``ints`` rows (key, depth, kind, nested), ``keys[key]`` a
    range's (name, shapes). ``learnt`` maps (name, shapes) to an op's index in the profiler's
    table; ``new_op(name, shapes)`` adds one it did not learn and returns its index.
    ``per_range_ns`` is one recorded range's observing cost: put on the timeline as COST
    marks (half at each end) for the ranges around ops, and inside an op's window for the
    recorded ranges an op this pass adds holds; ``per_inner_ns`` that of a call the observer
    only counted inside an op.

    Op events are (OP, t0, t1, index, module, phase, region, extra=0, inner_ns): inner_ns is
    the observing cost inside the op's window beyond its own clock read.

    Record_function ranges (kind 3) are not ops: a DataLoader's fetch becomes LOAD_IN and
    LOAD_OUT marks (:func:`_fetches`); the others only cost their callbacks.
    """
    if times.shape[0] == 0:
        return list(marks)
    names = [(str(keys[k][0]), str(keys[k][1])) for k in range(len(keys))]
    user = ints[:, 2] == _USER_KIND
    user_times, user_keys = times[user], ints[user, 0]
    times, ints = times[~user], ints[~user]
    order = np.lexsort((ints[:, 1], times[:, 0]))   # by start, outer before inner
    t0, t1 = times[order, 0], times[order, 1]
    key, depth, kind = ints[order, 0], ints[order, 1], ints[order, 2]
    index_of = np.array([learnt.get(nk, -1) for nk in names], dtype=np.int64)
    engine = np.array([nk[0].startswith(_ENGINE) for nk in names] or [False], dtype=bool)
    is_op, inside = _roles(depth, kind, engine[key])
    inner_ns = (ints[order, 3] * per_inner_ns
                + np.bincount(inside[inside >= 0], minlength=key.size) * per_range_ns)
    costs: list[tuple[Any, ...]] = []
    half = per_range_ns / 2
    for i in np.flatnonzero(~is_op & (inside < 0)):
        costs.append((COST, int(t0[i]), half))
        costs.append((COST, int(t1[i]), half))
    loads = _fetches(user_times, [names[int(k)][0] for k in user_keys], t0[is_op],
                     t1[is_op], half, costs)
    costs.sort(key=lambda e: e[1])
    # The ops, step by step (between consecutive step marks), with their modules replayed.
    ops_at = np.flatnonzero(is_op)
    bounds = [e[1] for e in marks if e[0] in _MARKS]
    edges = np.asarray(bounds, dtype=np.int64)
    segment = np.searchsorted(edges, t0[ops_at], side="right")
    ops: list[tuple[Any, ...]] = []
    aligned: dict[tuple[str, ...], list[int]] = {}
    # The module events on the marks, by step (-1 for other marks): in a step the observer
    # timed, stamped.
    stamped: dict[int, list[tuple[int, str]]] = {}
    at_step = np.where([e[0] in (ENTER, EXIT) for e in marks],
                       np.searchsorted(edges, [e[1] for e in marks], side="right"), -1)
    for e, seg in zip(marks, at_step.tolist()):
        if seg >= 0:
            stamped.setdefault(seg, []).append((e[0], e[2]))
    expected = [(k, path) for gap in script.between for k, path, _, _ in gap]
    replayed: set[int] = set()   # steps whose module events are the script's, replayed
    # Ranges are sorted by start, so each step's ops are a run of ``ops_at``.
    cuts = [int(c) for c in np.flatnonzero(np.diff(segment)) + 1]
    for lo, hi in zip([0, *cuts], [*cuts, ops_at.size]):
        if lo == hi:
            continue
        at, seg = ops_at[lo:hi], int(segment[lo])
        start = bounds[seg - 1] if seg > 0 else int(t0[at[0]])
        end = bounds[seg] if seg < len(bounds) else int(t1[at[-1]])
        step_names = [names[int(key[i])][0] for i in at]
        own = stamped.get(seg, []) == expected
        if not own:
            replayed.add(seg)
        owners, placed = _replay(script, step_names, [int(t0[i]) for i in at],
                                 [int(t1[i]) for i in at], start, end, aligned, not own)
        step_ops = []
        for i, (module, phase) in zip(at, owners):
            k = int(key[i])
            index = int(index_of[k])
            if index < 0:
                index = new_op(*names[k])
                index_of[k] = index
            step_ops.append((OP, int(t0[i]), int(t1[i]), index, module, phase,
                             float(inner_ns[i])))
        ops.extend(heapq.merge(step_ops, placed, key=lambda e: e[1]))
    out: list[tuple[Any, ...]] = []
    regions: list[str] = []
    if replayed:
        marks = [(COST, e[1], per_module_ns / 2) if seg in replayed else e
                 for e, seg in zip(marks, at_step.tolist())]
    # A fetch's LOAD_IN first where it starts with an op: the op is part of the fetch.
    for e in heapq.merge(loads, marks, ops, costs, key=lambda e: e[1]):
        kind = e[0]
        if kind == OP and len(e) == 7:   # an observer's op: its region is known only here
            _, a, b, index, module, phase, inner = e
            out.append((OP, a, b, index, module, phase, regions[-1] if regions else "", 0,
                        inner))
            continue
        if kind == REGION_IN:
            regions.append(e[2])
        elif kind == REGION_OUT and regions:
            regions.pop()
        out.append(e)
    return out


def _fetches(times: np.ndarray, names: Sequence[str], op_t0: np.ndarray, op_t1: np.ndarray,
             half: float, costs: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The LOAD_IN and LOAD_OUT marks of the DataLoader fetches among record_function ranges
    (``times`` rows (t0, t1), ``names`` theirs), in time order. Each end that falls in an
    op's window (``op_t0``/``op_t1``, the ops by start) moves to that window's edge: torch
    opens and closes the range inside the ops ``profiler::_record_function_enter_new`` and
    ``profiler::_record_function_exit``, which belong to the fetch. The callbacks of an end
    outside any op cost ``half`` there (a COST mark added to ``costs``); inside an op they
    are in its window, counted on it by the observer."""
    def within(t: int) -> int:
        j = int(np.searchsorted(op_t0, t, side="right")) - 1
        return j if j >= 0 and int(op_t1[j]) >= t else -1

    loads: list[tuple[Any, ...]] = []
    for (a, b), name in zip(times.tolist(), names):
        ja, jb = within(a), within(b)
        for j, t in ((ja, a), (jb, b)):
            if j < 0:
                costs.append((COST, t, half))
        if is_data_loading(name):
            loads.append((LOAD_IN, int(op_t0[ja]) if ja >= 0 else a, name))
            loads.append((LOAD_OUT, int(op_t1[jb]) if jb >= 0 else b, name))
    loads.sort(key=lambda e: (e[1], e[0] == LOAD_IN))
    return loads
