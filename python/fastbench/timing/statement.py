"""Timing a statement string like the stdlib's timeit: the statement compiled into a ``for``
loop inside a function that reads the native clock around it (:func:`statement_target`), and
:func:`timeit`, which runs it as measure runs a callable. Argument checks are config.py's,
the order of the run sampling.py's.
"""

from __future__ import annotations

import itertools
import textwrap
from typing import Any, Callable, Literal, overload

from .. import _core
from .._checks import check_bool, check_choice
from ..counters import InstructionCount, count_statement_instructions
from ..identity import statement_identity
from ..measurement import Measurement
from .config import DEFAULT_DURATION_S, DEFAULT_SAMPLE_S, run_config
from .callables import (METRICS, check_instruction_options, in_workers, instruction_runs,
                        measure, with_memory)
from .sampling import run_target
from .targets import Target, workload_key
from .workers import statement_job


_INNER_TEMPLATE = """\
def inner(_loops, _start=_start, _stop=_stop, _repeat=_repeat, _clock=_clock):
    {setup}
    _it = _repeat(None, _loops)
    _t0 = _start(_clock)
    for _i in _it:
        {stmt}
    _t1 = _stop(_clock)
    return _t1 - _t0
"""


def _compile_inner(stmt: str, setup: str, glob: dict[str, Any], clock: str) -> Any:
    """Compile ``stmt`` into an inner loop the way the stdlib's timeit does."""
    for label, src in (("stmt", stmt), ("setup", setup)):
        if not isinstance(src, str):
            raise TypeError(f"{label} must be a str, got {type(src).__name__}")
        compile(src, f"<fastbench-{label}>", "exec")  # report syntax errors against the source
    src = _INNER_TEMPLATE.format(
        setup=textwrap.indent(setup, " " * 4).strip() or "pass",
        stmt=textwrap.indent(stmt, " " * 8).strip() or "pass",
    )
    local_ns: dict[str, Any] = {
        "_start": _core.read_start,
        "_stop": _core.read_stop,
        "_repeat": itertools.repeat,
        "_clock": clock,
    }
    exec(compile(src, "<fastbench-timeit>", "exec"), glob, local_ns)  # noqa: S102
    return local_ns["inner"]


_STEPS_TEMPLATE = """\
def steps():
    {setup}
    while True:
        yield
        {stmt}
"""


def _statement_calls(stmt: str, setup: str, glob: dict[str, Any]) -> Callable[[], None]:
    """A callable running ``stmt`` once per call in the scope ``setup`` prepared, as the
    timed inner loop does; ``setup`` runs once, before the first call."""
    src = _STEPS_TEMPLATE.format(
        setup=textwrap.indent(setup, " " * 4).strip() or "pass",
        stmt=textwrap.indent(stmt, " " * 8).strip() or "pass",
    )
    local_ns: dict[str, Any] = {}
    exec(compile(src, "<fastbench-memory>", "exec"), glob, local_ns)  # noqa: S102
    steps = local_ns["steps"]()
    next(steps)  # runs setup and stops before the first statement

    def once() -> None:
        next(steps)

    return once


def statement_target(stmt: str, setup: str, glob: dict[str, Any], clock: str,
                     name: str | None = None, *, identify: bool = True) -> Target:
    """A Target running ``stmt`` in a compiled inner loop; its floor is ``pass`` there.
    Its identity is :func:`fastbench.identity.statement_identity`'s (``identify=False``
    skips it).

    Raises
    ------
    TypeError
        ``stmt`` or ``setup`` is not a str.
    SyntaxError
        ``stmt`` or ``setup`` does not compile.
    """
    inner = _compile_inner(stmt, setup, glob, clock)
    floor = _compile_inner("pass", setup, glob, clock)
    return Target(_core.Sampler.inner(inner, clock), _core.Sampler.inner(floor, clock),
                  clock, "statement", stmt if name is None else name,
                  workload_key("statement", stmt, setup),
                  statement_identity(stmt, setup, glob) if identify else None)


@overload
def timeit(stmt: str | Callable[[], Any] = ..., setup: str = ...,
           globals: dict[str, Any] | None = ..., *,  # noqa: A002
           warmup: int = ..., min_time_s: float = ..., repeat: int = ...,
           duration_s: float | None = ..., loops: int | None = ..., clock: str = ...,
           disable_gc: bool = ..., max_time_s: float | None = ...,
           target_rel_ci: float | None = ..., memory: bool = ..., processes: int | None = ...,
           worker_timeout_s: float | None = ...,
           metric: Literal["instructions"], max_calls: int | None = ...,
           notice: Callable[[str], None] | None = ...) -> InstructionCount: ...


@overload
def timeit(stmt: str | Callable[[], Any] = ..., setup: str = ...,
           globals: dict[str, Any] | None = ..., *,  # noqa: A002
           warmup: int = ..., min_time_s: float = ..., repeat: int = ...,
           duration_s: float | None = ..., loops: int | None = ..., clock: str = ...,
           disable_gc: bool = ..., max_time_s: float | None = ...,
           target_rel_ci: float | None = ..., memory: bool = ..., processes: int | None = ...,
           worker_timeout_s: float | None = ...,
           metric: Literal["time"] = ..., max_calls: None = ...,
           notice: None = ...) -> Measurement: ...


def timeit(
    stmt: str | Callable[[], Any] = "pass",
    setup: str = "pass",
    globals: dict[str, Any] | None = None,  # noqa: A002 - the stdlib's name
    *,
    warmup: int = 1,
    min_time_s: float = DEFAULT_SAMPLE_S,
    repeat: int = 100,
    duration_s: float | None = DEFAULT_DURATION_S,
    loops: int | None = None,
    clock: str = "auto",
    disable_gc: bool = True,
    max_time_s: float | None = None,
    target_rel_ci: float | None = None,
    memory: bool = False,
    processes: int | None = None,
    worker_timeout_s: float | None = 600.0,
    metric: str = "time",
    max_calls: int | None = None,
    notice: Callable[[str], None] | None = None,
) -> Measurement | InstructionCount:
    """Time a statement string like :func:`timeit.timeit`, with fastbench's clocks and stats.

    ``stmt`` is compiled into a ``for`` loop inside a function (as the stdlib does) that
    reads the native clock before and after the loop; ``setup`` runs once per sample,
    outside the timed region. The call floor is the same loop around ``pass``. A callable
    ``stmt`` is timed with :func:`measure`. Other parameters are those of :func:`measure`;
    with ``memory=True`` each tracked call runs ``stmt`` once, ``setup`` having run once
    before them outside the tracked regions. With ``processes=N`` the statement runs in N
    fresh worker processes one after the other (see :func:`measure`); ``globals`` must then
    pickle. ``metric="instructions"`` counts the instructions of one execution of ``stmt``
    instead (:func:`fastbench.counters.count_statement_instructions`; no ``globals``: the
    setup imports what the statement needs; ``processes=N`` counts in N heap layouts;
    ``max_calls`` bounds the executions counted and ``notice`` is told the expected cost
    before a long simulated count, as in :func:`fastbench.counters.count_instructions`).

    Raises
    ------
    SyntaxError
        ``stmt`` or ``setup`` does not compile.
    WorkerError
        With ``processes``: a worker failed.
    """
    if check_choice("metric", metric, METRICS) == "instructions":
        if callable(stmt):
            return measure(stmt, metric="instructions", processes=processes,
                           max_calls=max_calls, notice=notice)
        if globals:
            raise ValueError("metric='instructions' counts the statement in a fresh namespace "
                             "(a fresh process under valgrind), which gets no globals: import "
                             "what it needs in setup")
        return count_statement_instructions(stmt, setup, runs=instruction_runs(processes),
                                            max_calls=max_calls, notice=notice)
    check_instruction_options(metric, max_calls, notice)
    if callable(stmt):
        return measure(
            stmt, warmup=warmup, min_time_s=min_time_s, repeat=repeat, duration_s=duration_s,
            loops=loops, clock=clock, disable_gc=disable_gc, max_time_s=max_time_s,
            target_rel_ci=target_rel_ci, memory=memory, processes=processes,
            worker_timeout_s=worker_timeout_s,
        )
    if processes is not None:
        run_config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s,
                   target_rel_ci, duration_s)
        check_bool("memory", memory)
        options = dict(warmup=warmup, min_time_s=min_time_s, repeat=repeat,
                       duration_s=duration_s, loops=loops, clock=clock, disable_gc=disable_gc,
                       max_time_s=max_time_s, target_rel_ci=target_rel_ci, memory=memory)
        return in_workers(statement_job(stmt, setup, globals, options=options), processes,
                          worker_timeout_s, None)
    cfg = run_config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s,
                     target_rel_ci, duration_s)
    track_memory = check_bool("memory", memory)
    glob = {} if globals is None else globals
    m = run_target(statement_target(stmt, setup, glob, cfg.clock), cfg)
    if not track_memory:
        return m
    return with_memory(m, _statement_calls(stmt, setup, glob), (), {}, cfg)
