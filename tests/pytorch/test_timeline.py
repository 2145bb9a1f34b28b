"""fastbench.pytorch.timeline on hand-built ranges and marks: which of the native observer's
ranges are ops, what they cost inside and around them, and the modules each step stamped
or, where its stamps do not match, replayed from the first step's script, every time
worked out by hand."""

from __future__ import annotations

from typing import Any

import numpy as np

from fastbench.profiling.result import OUTSIDE
from fastbench.pytorch.timeline import (COST, END, ENTER, EXIT, OP, REGION_IN, REGION_OUT,
                                        START, Script, _align, _roles, merge_native,
                                        script_of)

RANGE, NODE, MARKED = 0, 1, 2   # the observer's kinds (observer.cpp)


def test_roles_ops_scaffolding_and_what_runs_inside() -> None:
    # 0 linear [composite]            -> scaffolding (a marked op under it)
    # 1   addmm [marked op]           -> op
    # 2 AddmmBackward0 [node]         -> scaffolding
    # 3   mm [marked op]              -> op
    # 4 weird [plain, nothing marked] -> op (the first step did not meet it)
    # 5   empty [plain]               -> inside 4
    depth = np.array([0, 1, 0, 1, 0, 1])
    kind = np.array([RANGE, MARKED, NODE, MARKED, RANGE, RANGE])
    is_op, inside = _roles(depth, kind)
    assert is_op.tolist() == [False, True, False, True, True, False]
    assert inside.tolist() == [-1, -1, -1, -1, -1, 4]


def test_align_matches_the_script_and_leaves_extra_ops_out() -> None:
    script = ["aten::addmm", "aten::relu", "aten::addmm"]
    assert _align(script, script) == [0, 1, 2]
    assert _align(script, ["aten::addmm", "aten::zeros", "aten::relu", "aten::addmm"]) == \
        [0, -1, 1, 2]
    assert _align(script, ["aten::addmm", "aten::addmm"]) in ([0, 2], [0, 1])


def _learning_step() -> list[tuple[Any, ...]]:
    """A model "" holding fc (one addmm) then act (one relu), run between 0 and 100 ns."""
    return [(START, 0), (ENTER, 10, ""), (ENTER, 20, "fc"),
            (OP, 30, 40, 0, "fc", "forward", "", 0, 0.0), (EXIT, 50, "fc"),
            (ENTER, 60, "act"), (OP, 70, 80, 1, "act", "forward", "", 0, 0.0),
            (EXIT, 90, "act"), (EXIT, 95, ""), (END, 100)]


def test_script_of_the_first_step() -> None:
    names = {0: "aten::addmm", 1: "aten::relu"}
    s = script_of(_learning_step(), names.__getitem__)
    assert s.ops == (("aten::addmm", "fc", "forward"), ("aten::relu", "act", "forward"))
    # Each event by its distance from the nearer end of its gap ([0, 30], [40, 70], [80,
    # 100]): anchor 0 from the start, 1 from the end.
    assert s.between == (((ENTER, "", 10, 0), (ENTER, "fc", 10, 1)),
                         ((EXIT, "fc", 10, 0), (ENTER, "act", 10, 1)),
                         ((EXIT, "act", 10, 0), (EXIT, "", 5, 1)))


def test_script_leaves_out_the_hooks_and_the_learning() -> None:
    # An op learnt for 20 ns after its window; an exit whose hook took 6 ns after its stamp,
    # an entry whose hook took 4 ns before its stamp. Net gap: 100 - 30 - 20 - 6 - 4 = 40.
    events = [(START, 0), (OP, 10, 30, 0, "a", "forward", "", 20, 0.0),
              (EXIT, 55, "a", 6), (ENTER, 90, "b", 4), (OP, 100, 110, 1, "b", "forward", "",
                                                        0, 0.0), (END, 120)]
    s = script_of(events, lambda i: "aten::mul")
    # The exit 5 ns into the net gap (55 - 50); the entry 6 ns before its end: 90 - 50 - 6
    # - 4 = 30 net, 40 - 30 = 10 from the end, less nothing after it.
    assert s.between[1] == ((EXIT, "a", 5, 0), (ENTER, "b", 10, 1))


def test_merge_native_times_attributes_and_charges_by_hand() -> None:
    marks = [*_learning_step(), (START, 1000), (REGION_IN, 1050, "infer"),
             (REGION_OUT, 1950, "infer"), (END, 2000)]
    keys = [("aten::linear", "(4, 8), (2, 8), (2,)"), ("aten::addmm", "(2,), (4, 8), (8, 2)"),
            ("aten::relu", "(4, 2)"), ("aten::weird", "(4, 2)"), ("aten::empty", "")]
    # Ranges in the order they ended, as the observer drains them: (t0, t1), (key, depth,
    # kind, nested).
    times = np.array([[1200, 1490], [1100, 1500], [1600, 1700], [1820, 1830], [1800, 1900]])
    ints = np.array([[1, 1, MARKED, 3], [0, 0, RANGE, 0], [2, 0, MARKED, 1],
                     [4, 1, RANGE, 0], [3, 0, RANGE, 0]], dtype=np.int32)
    learnt = {("aten::addmm", "(2,), (4, 8), (8, 2)"): 0, ("aten::relu", "(4, 2)"): 1}
    added: list[tuple[str, str]] = []

    def new_op(name: str, shapes: str) -> int:
        added.append((name, shapes))
        return 1 + len(added)

    script = script_of(marks, {0: "aten::addmm", 1: "aten::relu"}.__getitem__)
    out = merge_native(marks, times, ints, keys, learnt, new_op, script, per_range_ns=200.0,
                       per_inner_ns=100.0)
    timed = out[out.index((START, 1000)):]
    assert timed == [
        (START, 1000),
        (ENTER, 1010, ""),                 # 10 ns after the gap's start, as in the script
        (REGION_IN, 1050, "infer"),
        (COST, 1100, 100.0),               # linear's start callback (half a range)
        (ENTER, 1190, "fc"),               # 10 ns before the op
        (OP, 1200, 1490, 0, "fc", "forward", "infer", 0, 300.0),   # 3 counted calls inside
        (EXIT, 1500, "fc"),                # 1490 + 10
        (COST, 1500, 100.0),               # linear's end callback
        (ENTER, 1590, "act"),              # 1600 - 10
        (OP, 1600, 1700, 1, "act", "forward", "infer", 0, 100.0),
        # Not in the script: the module of the op before it; the recorded range inside it
        # costs a whole range inside its window.
        (OP, 1800, 1900, 2, "act", "forward", "infer", 0, 200.0),
        (EXIT, 1910, "act"),               # 1900 + 10
        (REGION_OUT, 1950, "infer"),
        (EXIT, 1995, ""),                  # 2000 - 5
        (END, 2000)]
    assert added == [("aten::weird", "(4, 2)")]


def _timed(stamps: list[tuple[Any, ...]], per_module_ns: float) -> list[tuple[Any, ...]]:
    """One step timed after the learning step, between 1000 and 1100 ns: addmm at
    1030-1040, relu at 1070-1080, with the module events the step stamped; its timeline."""
    marks = [*_learning_step(), (START, 1000), *stamps, (END, 1100)]
    keys = [("aten::addmm", "a"), ("aten::relu", "r")]
    times = np.array([[1030, 1040], [1070, 1080]])
    ints = np.array([[0, 0, MARKED, 0], [1, 0, MARKED, 0]], dtype=np.int32)
    script = script_of(marks, {0: "aten::addmm", 1: "aten::relu"}.__getitem__)
    out = merge_native(marks, times, ints, keys, {("aten::addmm", "a"): 0,
                                                  ("aten::relu", "r"): 1},
                       lambda n, s: -1, script, 200.0, 100.0, per_module_ns)
    return out[out.index((START, 1000)):]


def test_a_step_whose_stamps_match_the_script_keeps_them() -> None:
    stamps = [(ENTER, 1003, ""), (ENTER, 1004, "fc"), (EXIT, 1045, "fc"), (ENTER, 1052, "act"),
              (EXIT, 1085, "act"), (EXIT, 1092, "")]
    assert _timed(stamps, 300.0) == [
        (START, 1000), (ENTER, 1003, ""), (ENTER, 1004, "fc"),
        (OP, 1030, 1040, 0, "fc", "forward", "", 0, 0.0), (EXIT, 1045, "fc"),
        (ENTER, 1052, "act"), (OP, 1070, 1080, 1, "act", "forward", "", 0, 0.0),
        (EXIT, 1085, "act"), (EXIT, 1092, ""), (END, 1100)]


def test_a_step_whose_stamps_miss_a_module_replays_the_script() -> None:
    # "act" was not stamped (built anew in each forward): the script's events, each as far
    # from its op as in the first step, and the stamps made are cost, 150 ns each.
    stamps = [(ENTER, 1003, ""), (ENTER, 1004, "fc"), (EXIT, 1045, "fc"), (EXIT, 1092, "")]
    assert _timed(stamps, 300.0) == [
        (START, 1000), (COST, 1003, 150.0), (COST, 1004, 150.0),
        (ENTER, 1010, ""),                 # 10 ns after the gap's start
        (ENTER, 1020, "fc"),               # 10 ns before addmm
        (OP, 1030, 1040, 0, "fc", "forward", "", 0, 0.0), (COST, 1045, 150.0),
        (EXIT, 1050, "fc"), (ENTER, 1060, "act"),
        (OP, 1070, 1080, 1, "act", "forward", "", 0, 0.0),
        (EXIT, 1090, "act"), (COST, 1092, 150.0),
        (EXIT, 1095, ""),                  # 5 ns before the step's end
        (END, 1100)]


def test_ops_outside_any_module_and_a_step_with_no_ranges() -> None:
    marks = [(START, 0), (OP, 10, 20, 0, OUTSIDE, "", "", 0, 0.0), (END, 30),
             (START, 100), (END, 200), (START, 300), (END, 400)]
    script = script_of(marks, lambda i: "aten::zeros")
    assert script == Script((("aten::zeros", OUTSIDE, ""),), ((), ()))
    times = np.array([[310, 320]])
    ints = np.array([[0, 0, MARKED, 0]], dtype=np.int32)
    out = merge_native(marks, times, ints, [("aten::zeros", "")], {("aten::zeros", ""): 0},
                       lambda n, s: -1, script, 200.0, 100.0)
    assert out[-5:] == [(START, 100), (END, 200), (START, 300),
                        (OP, 310, 320, 0, OUTSIDE, "", "", 0, 0.0), (END, 400)]
    empty = merge_native(marks, np.zeros((0, 2), dtype=np.int64),
                         np.zeros((0, 4), dtype=np.int32), [], {}, lambda n, s: -1, script,
                         200.0, 100.0)
    assert empty == marks
