"""Instructions per call, user space: a deterministic metric that does not move with the
host's speed. Counted by the hardware PMU where ``instructions`` can be opened, else
simulated by valgrind's cachegrind. Owns the InstructionCount record, the counting of a
callable or a statement, and the verdict on two counts (CountComparison); the perf_event
loop is fastbench._core's and :mod:`.samples`', the valgrind runs :mod:`.simulation`'s.
Never prints.
"""

from __future__ import annotations

import gc
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import _core
from .._checks import check_choice, check_fraction, check_int, check_seconds
from ..report.lines import brief_repr
from ..stats.robust import median_mad
from ..units import format_ns
from .count_cost import (LONG_COUNT_S, VALGRIND_SLOWDOWN, VALGRIND_STARTUP_S, announce,
                         check_notice, cost_notice, estimate_count_s, parallel_runs)
from .events import CountersUnavailable
from .samples import count_samples
from .simulation import SimulatedCounts, SimulationTimeout, SimulationUnavailable, simulate
from .simulation.runner import valgrind_path
from .simulation.simulation import simulate_statement
from .simulation.target import callable_spec, layout_pad, statement_loop, statement_source

__all__ = ["CYCLE_WEIGHTS", "LONG_COUNT_S", "SOURCES", "VALGRIND_SLOWDOWN", "VALGRIND_STARTUP_S",
           "VERDICTS", "CountComparison", "InstructionCount", "compare_counts",
           "count_instructions", "count_statement_instructions", "estimate_count_s"]

SOURCES = ("pmu", "simulated")
_SOURCE_CHOICES = ("auto", *SOURCES)
_LABELS = {"pmu": "hardware PMU, user space", "simulated": "simulated: valgrind cachegrind"}
VERDICTS = ("faster", "slower", "within tolerance", "cannot tell")

# calls=None: enough calls to take about this long natively, within [_MIN_CALLS, _MAX_CALLS].
# Under valgrind (20-100x slower) that is one to two seconds on top of the interpreter's
# start-up; on the PMU it is one sample.
_TARGET_NS = 20e6
_MIN_CALLS, _MAX_CALLS = 10, 10_000
# Picking calls times batches of 1, 10, 100, ... calls until one lasts this long.
_PICK_BATCH_NS = 1e6
# PMU: counted samples per run (after one uncounted warm-up sample); the median is kept.
_PMU_SAMPLES = 11
_PMU_EVENTS = ("instructions", "cycles")


# Cycle estimate from cachegrind's events, with the weights of KCachegrind's "CEst"
# (its GlobalConfig::knownFormula: CEst = Ir + 10 Bm + 10 L1m + 100 LLm, where
# L1m = I1mr + D1mr + D1mw, LLm = ILmr + DLmr + DLmw, Bm = Bcm + Bim; its Ge term counts
# callgrind's global bus events, which cachegrind does not collect). One cycle per
# instruction, L1 hits included; 10 more per L1 miss (a last-level hit: about 4-40 cycles
# on current cores); 100 more per last-level miss (DRAM); 10 per mispredicted branch
# (about 15-20 on current cores). An LL miss is also an L1 miss, so it costs 110 in all.
CYCLE_WEIGHTS: dict[str, float] = {
    "Ir": 1.0,
    "I1mr": 10.0, "D1mr": 10.0, "D1mw": 10.0,
    "ILmr": 100.0, "DLmr": 100.0, "DLmw": 100.0,
    "Bcm": 10.0, "Bim": 10.0,
}


@dataclass(frozen=True)
class InstructionCount:
    """Instructions per call of a callable or a statement, user space only.

    Attributes
    ----------
    name : str
        Label for reports.
    per_call : float
        Instructions per call: the median of ``runs``.
    runs : tuple of float
        Instructions per call of each run, run i counted in heap layout i (0: the heap as
        the process left it; see ``runs=`` of :func:`count_instructions`). Under valgrind a
        run repeats exactly, so runs differ only where the heap's layout moves the count.
    source : str
        "pmu" (hardware counters, this process) or "simulated" (valgrind cachegrind in a
        fresh interpreter).
    calls : int
        Calls per measurement (per sample for the PMU).
    estimated_cycles : float or None
        Simulated only: cycles per call estimated from the simulated cache misses and
        branch mispredictions with :data:`CYCLE_WEIGHTS`; an estimate, not a measurement.
        None for the PMU (its measured ``cycles`` is in ``events`` where it opened).
    events : dict of str to float
        Per call: cachegrind's events (Ir, I1mr, ILmr, Dr, D1mr, DLmr, Dw, D1mw, DLmw, Bc,
        Bcm, Bi, Bim) or the PMU's counts ("instructions", "cycles"), medians over runs.
    wall_s : float
        Wall time of the whole measurement in seconds, picking ``calls`` included.
    notes : tuple of str
        What the count cannot see and what it assumes.
    """

    name: str
    per_call: float
    runs: tuple[float, ...]
    source: str
    calls: int
    estimated_cycles: float | None
    events: dict[str, float]
    wall_s: float
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """Where the count comes from, as every report must say it."""
        return _LABELS.get(self.source, self.source)

    @property
    def spread(self) -> float:
        """(max - min) / median of ``runs``: 0.0 when they agree; inf when they differ
        around a median of 0. Over several layouts: how much the count owes to the heap."""
        low, high = min(self.runs), max(self.runs)
        if high == low:
            return 0.0
        med = median_mad(self.runs)[0]
        return (high - low) / abs(med) if med != 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; :meth:`from_dict` restores it (``label`` is derived)."""
        return {
            "name": self.name,
            "label": self.label,
            "per_call": float(self.per_call),
            "runs": [float(r) for r in self.runs],
            "source": self.source,
            "calls": int(self.calls),
            "estimated_cycles": (None if self.estimated_cycles is None
                                 else float(self.estimated_cycles)),
            "events": {k: float(v) for k, v in self.events.items()},
            "wall_s": float(self.wall_s),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InstructionCount:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            ``data`` is not a mapping, or a field is missing or malformed (the message
            names the field and what it must hold).
        """
        r = _Fields("InstructionCount", data)
        # Counts are never negative: a file holding one is refused, not printed.
        runs = r.numbers("runs", minimum=0.0)
        if not runs:
            raise ValueError("InstructionCount field 'runs' must hold at least one count")
        estimated = data.get("estimated_cycles")
        return cls(
            name=r.text("name"),
            per_call=r.number("per_call", minimum=0.0),
            runs=tuple(runs),
            source=r.choice("source", SOURCES),
            calls=r.integer("calls", minimum=1),
            estimated_cycles=None if estimated is None else r.number("estimated_cycles",
                                                                      minimum=0.0),
            events=r.number_map("events", minimum=0.0),
            wall_s=r.number("wall_s", minimum=0.0),
            notes=tuple(r.texts("notes", default=())),
        )

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.name!r}: {self.per_call:,.6g} instructions per call "
                                f"({self.label})")

    def __str__(self) -> str:
        return f"{self.per_call:,.0f} instructions/call ({self.label})"


@dataclass(frozen=True)
class CountComparison:
    """Baseline ``a`` against candidate ``b`` on instructions per call.

    Attributes
    ----------
    a, b : float
        Instructions per call of the baseline and of the candidate.
    speedup : float
        a / b: above 1 the candidate executes fewer instructions.
    rel_diff_pct : float
        (b / a - 1) x 100: the candidate's change in percent.
    tolerance : float
        Relative change within which the two count as the same (0.005: ±0.5%).
    verdict : str
        "faster" (b below a by more than the tolerance), "slower" (above by more),
        "within tolerance", or "cannot tell" (the medians differ by more than the
        tolerance but the runs of the two sides, each counted in several heap layouts,
        overlap: the difference is no larger than what the heap's layout alone moves).
    source : str
        "pmu" or "simulated", shared by both sides.
    warnings : tuple of str
        What instruction counts cannot see, always; any side whose runs disagree by more
        than a tenth of the tolerance; calls per measurement that differ by 2x or more.
    """

    a: float
    b: float
    speedup: float
    rel_diff_pct: float
    tolerance: float
    verdict: str
    source: str
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; :meth:`from_dict` restores it."""
        return {
            "a": float(self.a), "b": float(self.b), "speedup": float(self.speedup),
            "rel_diff_pct": float(self.rel_diff_pct), "tolerance": float(self.tolerance),
            "verdict": self.verdict, "source": self.source, "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CountComparison:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            ``data`` is not a mapping, or a field is missing or malformed (the message
            names the field and what it must hold).
        """
        r = _Fields("CountComparison", data)
        return cls(
            a=r.number("a"), b=r.number("b"), speedup=r.number("speedup"),
            rel_diff_pct=r.number("rel_diff_pct"),
            tolerance=r.number("tolerance", minimum=0.0),
            verdict=r.choice("verdict", VERDICTS), source=r.choice("source", SOURCES),
            warnings=tuple(r.texts("warnings", default=())),
        )

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.verdict}, {self.rel_diff_pct:+.2f}% ({self.speedup:.4g}x)")

    def __str__(self) -> str:
        return (f"candidate {self.rel_diff_pct:+.3g}% instructions/call against the baseline "
                f"({self.verdict}, tolerance ±{100 * self.tolerance:.3g}%, "
                f"{_LABELS[self.source]})")


# -- counting -----------------------------------------------------------------------------------


def count_instructions(
    fn: Callable[..., Any],
    /,
    *args: Any,
    calls: int | None = None,
    runs: int = 1,
    source: str = "auto",
    timeout_s: float = 600.0,
    name: str | None = None,
    max_calls: int | None = None,
    notice: Callable[[str], None] | None = None,
) -> InstructionCount:
    """Count the user-space instructions of one call of ``fn(*args)``.

    With ``source="pmu"`` the hardware counts ``instructions`` (and ``cycles`` where it
    opens) in this process, user space only, around the same native vectorcall loop that
    timing uses: one warm-up sample, then 11 samples of ``calls`` calls; per call is the
    median sample net of an empty sample of the native loop, with the cyclic GC paused. The
    count includes the call itself.
    With ``source="simulated"`` ``fn`` runs in a fresh interpreter under valgrind's
    cachegrind (:func:`~fastbench.counters.simulate`): per call is the difference between
    a run with ``calls`` calls and one with none, divided by ``calls``. The counts are
    exact and repeat from run to run; cache misses and branch mispredictions are simulated,
    and ``estimated_cycles`` weighs them with :data:`CYCLE_WEIGHTS` (KCachegrind's cycle
    estimate). The count includes the driver's Python ``for`` step and the call. ``fn``
    must then be importable by name (a module-level function) with picklable ``args``.
    With ``source="auto"`` the PMU is used where ``instructions`` can be opened, valgrind
    elsewhere (most VMs and containers expose no PMU).

    Neither source sees the kernel's instructions (system calls, page faults), the clock
    frequency, or time lost to stalls; ``notes`` say so. Both sources count one build of
    the interpreter and the libraries: compare counts made on the same machine and
    environment. A count also depends on what the process did before the calls: code that
    allocates takes other paths through the allocator on a heap laid out differently
    (``sorted`` of a 150-int list counted 12760 instructions imported by ``-c``, 12781 and
    12934 from two versions of a script run as ``__main__``): repeats agree exactly, but
    a difference of 1-2% between different scripts may be the heap's. ``runs`` > 1 counts
    in as many layouts (run i after :data:`~fastbench.counters.simulation.target.LAYOUT_PAD`
    allocates a fixed mix of objects drawn from seed i, in the empty run too, so the pad
    cancels); ``spread`` then says how much the heap moves the count, and
    :func:`compare_counts` gives a verdict only beyond it.

    Parameters
    ----------
    fn : callable
        What to count; called as ``fn(*args)``.
    *args
        Its positional arguments.
    calls : int, optional
        Calls per measurement (>= 1). None: enough calls for about 20 ms natively, found
        by timing batches of 1, 10, 100, ... calls in this process until one lasts 1 ms,
        clamped to [10, 10000] and to ``max_calls``; so ``fn`` runs here first, also for the
        simulated source (given ``calls`` and a ``notice``, a simulated count times one call
        here for the estimate of its cost; a call that raises then gives no estimate).
    runs : int
        Whole measurements (>= 1), each in its own heap layout: run 0 in the heap as the
        process left it, run i after layout pad i; ``per_call`` is the median. 5 lets
        :func:`compare_counts` tell a change from the heap's layout; simulated runs go in
        parallel when the machine has cores to spare.
    source : {"auto", "pmu", "simulated"}
        Where the count comes from; see above.
    timeout_s : float
        Wall-time limit in seconds for the simulated runs, all together.
    name : str, optional
        Label for reports; default the qualified name of ``fn``.
    max_calls : int, optional
        The most calls counted per measurement (>= 1): bounds the calls picked with
        ``calls=None`` (a call of 100 ms is otherwise counted 10 times, about 70 s under
        valgrind); a ``calls`` above it is a ValueError.
    notice : callable, optional
        Called with one line before a simulated count expected to take
        :data:`LONG_COUNT_S` (10 s) or more: the expected wall time
        (:func:`estimate_count_s`), how it is made up, and ``max_calls`` to make it shorter.
        ``print`` shows it; the command line writes it to stderr. The library never prints.

    Returns
    -------
    InstructionCount
        Per-call instructions, the count of each run, per-call events, notes.

    Raises
    ------
    CountersUnavailable
        ``source="pmu"`` where the PMU cannot count ``instructions`` (with the reason).
    SimulationUnavailable
        valgrind is needed (``source="simulated"``, or "auto" without a PMU) and is not
        installed.
    SimulationTimeout
        The simulated runs did not finish within ``timeout_s``.
    FastbenchError
        ``fn`` failed under valgrind (the message ends with its traceback).
    TypeError
        ``fn`` is not callable, or (simulated) cannot be imported by name or has
        unpicklable arguments; a bad type for another argument.
    ValueError
        ``calls``, ``runs`` or ``max_calls`` < 1, ``calls`` > ``max_calls``, an unknown
        ``source``, ``timeout_s`` <= 0.
    Exception
        Whatever ``fn`` raises when it runs in this process (picking ``calls``, the
        estimate, or the PMU).
    """
    if not callable(fn):
        hint = (" (for a statement string use count_statement_instructions)"
                if isinstance(fn, str) else "")
        raise TypeError(f"fn must be callable, got {type(fn).__name__}{hint}")
    label = _check_name(name) or _qualname(fn)
    n_calls, n_runs, chosen, timeout = _check_common(calls, runs, source, timeout_s)
    bound = _check_bound(max_calls, n_calls)
    tell = check_notice(notice)
    started = time.perf_counter()
    resolved, reason = _resolve_source(chosen)
    if resolved == "simulated":
        callable_spec(fn)  # TypeError for a lambda or a closure before fn runs here
    clock = _core.auto_clock()[0]
    sampler = _core.Sampler.calls(fn, args, {}, clock)
    n_calls, per_call_ns = _choose_calls(
        n_calls, bound, lambda k: float(sampler.run(k, 1).sample_ns[0]),
        timed=resolved == "simulated" and tell is not None)
    if resolved == "pmu":
        empty = _core.Sampler.empty(clock)
        loops = n_calls
        return _count_pmu(label, lambda: sampler.run(loops, 1), lambda: empty.run(loops, 1),
                          n_calls, n_runs, started, reason,
                          "net of an empty sample of the native loop; the call itself "
                          "(vectorcall) is counted")
    announce(tell, label, per_call_ns, n_calls, n_runs)
    count_calls = n_calls
    return _count_simulated(
        label, lambda t, layout: simulate(fn, *args, calls=count_calls, tool="cachegrind",
                                          timeout_s=t, layout=layout),
        n_calls, n_runs, timeout, started, reason,
        "the driver's for step and the call itself are counted")


def count_statement_instructions(
    stmt: str,
    setup: str = "pass",
    *,
    calls: int | None = None,
    runs: int = 1,
    source: str = "auto",
    timeout_s: float = 600.0,
    name: str | None = None,
    max_calls: int | None = None,
    notice: Callable[[str], None] | None = None,
) -> InstructionCount:
    """Count the user-space instructions of one execution of a statement string.

    The statement runs as :func:`timeit.timeit` runs it: compiled into a function whose
    body is ``setup`` once, then ``stmt`` in a ``for`` loop, in a fresh namespace (``setup``
    imports what ``stmt`` needs; its names are locals). Per call = (that function with
    ``calls`` iterations - the same with none) / ``calls``: the setup cancels and each
    iteration's ``for`` step is counted with the statement. With the PMU it runs in this
    process (one warm-up sample, then 11, the cyclic GC paused; median), simulated in a
    fresh interpreter under valgrind's cachegrind
    (:func:`~fastbench.counters.simulation.simulation.simulate_statement`). The sources,
    ``calls=None`` and the caveats are those of :func:`count_instructions`; the time of a
    batch for picking ``calls`` is net of the setup.

    Parameters
    ----------
    stmt : str
        The statement (several lines are fine).
    setup : str
        Run once before the loop, in every run (and in the empty one).
    calls : int, optional
        Executions per measurement (>= 1); None picks them as count_instructions does.
    max_calls : int, optional
        The most executions counted per measurement, as in count_instructions.
    notice : callable, optional
        Told the expected cost before a long simulated count, as in count_instructions.
    runs : int
        Whole measurements (>= 1), each in its own heap layout (the pad is made before the
        setup); ``per_call`` is the median.
    source : {"auto", "pmu", "simulated"}
        Where the count comes from.
    timeout_s : float
        Wall-time limit in seconds for the simulated runs, all together.
    name : str, optional
        Label for reports; default the statement.

    Returns
    -------
    InstructionCount
        Per-execution instructions, the count of each run, per-call events, notes.

    Raises
    ------
    SyntaxError
        ``stmt`` or ``setup`` does not compile (before anything runs).
    CountersUnavailable
        ``source="pmu"`` where the PMU cannot count ``instructions`` (with the reason).
    SimulationUnavailable
        valgrind is needed and is not installed.
    SimulationTimeout
        The simulated runs did not finish within ``timeout_s``.
    FastbenchError
        The statement or its setup raised under valgrind (the message ends with its
        traceback).
    TypeError
        ``stmt`` or ``setup`` is not a str; a bad type for another argument.
    ValueError
        ``calls``, ``runs`` or ``max_calls`` < 1, ``calls`` > ``max_calls``, an unknown
        ``source``, ``timeout_s`` <= 0.
    Exception
        Whatever the statement raises when it runs in this process (picking ``calls``,
        or the PMU), with its own message.
    """
    source_text = statement_source(stmt, setup)
    label = _check_name(name) or stmt
    n_calls, n_runs, chosen, timeout = _check_common(calls, runs, source, timeout_s)
    bound = _check_bound(max_calls, n_calls)
    tell = check_notice(notice)
    started = time.perf_counter()
    resolved, reason = _resolve_source(chosen)
    inner = statement_loop(source_text)
    clock = _core.auto_clock()[0]

    def batch_ns(k: int) -> float:
        return _time_ns(clock, inner, k) - _time_ns(clock, inner, 0)

    n_calls, per_call_ns = _choose_calls(n_calls, bound, batch_ns,
                                         timed=resolved == "simulated" and tell is not None)
    if resolved == "pmu":
        loops = n_calls
        return _count_pmu(label, lambda: inner(loops), lambda: inner(0), n_calls, n_runs,
                          started, reason,
                          "net of the same loop with no iteration (the setup cancels); each "
                          "iteration's for step is counted with the statement")
    announce(tell, label, per_call_ns, n_calls, n_runs)
    count_calls = n_calls
    return _count_simulated(
        label, lambda t, layout: simulate_statement(stmt, setup, calls=count_calls,
                                                    tool="cachegrind", timeout_s=t,
                                                    layout=layout),
        n_calls, n_runs, timeout, started, reason,
        "the setup cancels; each iteration's for step is counted with the statement")


def compare_counts(a: InstructionCount, b: InstructionCount, *,
                   tolerance: float = 0.005) -> CountComparison:
    """Baseline ``a`` against candidate ``b``: fewer instructions per call, more, or the same
    within ``tolerance``.

    The verdict is "within tolerance" when ``|b - a| <= tolerance x a``, else "faster"
    when b < a and "slower" when b > a. Counts are deterministic under valgrind, so a small
    tolerance (the default ±0.5%) finds a change of one iteration in a hundred; a count is
    not a time, and ``warnings`` always say what it cannot see. One-off costs of the first
    calls are spread over ``calls``: a warning says when the sides' calls differ by 2x or
    more.

    Where both sides were counted in several heap layouts (``runs`` >= 2), a difference
    beyond the tolerance is a verdict only when every run of one side lies beyond every
    run of the other; where their ranges overlap, the verdict is "cannot tell". Two sides
    that differ only by chance are separated so with probability 2 / C(2n, n) for n runs
    a side: 10% at 3 and 0.8% at 5, before the tolerance rules out more.

    Parameters
    ----------
    a, b : InstructionCount
        Baseline and candidate, from the same source.
    tolerance : float
        Relative change in (0, 1) treated as no change (0.005 for ±0.5%).

    Returns
    -------
    CountComparison
        Both counts, speedup (a / b), the change in percent, the verdict and warnings.

    Raises
    ------
    TypeError
        ``a`` or ``b`` is not an InstructionCount; a tolerance that is not a number.
    ValueError
        A tolerance outside (0, 1); a side whose count is not positive and finite; sides
        from different sources (measure both with the same ``source=``).
    """
    for label, side in (("a", a), ("b", b)):
        if not isinstance(side, InstructionCount):
            raise TypeError(f"{label} must be an InstructionCount (from count_instructions), "
                            f"got {type(side).__name__}")
        if not (math.isfinite(side.per_call) and side.per_call > 0):
            raise ValueError(f"{label}.per_call must be a positive count to compare, got "
                             f"{side.per_call!r}")
    tol = check_fraction("tolerance", tolerance, example="0.005 for ±0.5%")
    if a.source != b.source:
        raise ValueError(f"a is {a.label} and b is {b.label}: the two count different loops "
                         "on different machinery; measure both with the same source=")
    ratio = b.per_call / a.per_call
    if abs(b.per_call - a.per_call) <= tol * a.per_call:  # no rounding of the ratio at the edge
        verdict = "within tolerance"
    elif _runs_overlap(a, b):
        verdict = "cannot tell"
    else:
        verdict = "faster" if ratio < 1.0 else "slower"
    return CountComparison(a=a.per_call, b=b.per_call, speedup=a.per_call / b.per_call,
                           rel_diff_pct=(ratio - 1.0) * 100.0, tolerance=tol, verdict=verdict,
                           source=a.source, warnings=_comparison_warnings(a, b, tol))


# -- helpers --------------------------------------------------------------------------------------


def _runs_overlap(a: InstructionCount, b: InstructionCount) -> bool:
    """Both sides counted in several layouts, and their ranges of counts meet."""
    if len(a.runs) < 2 or len(b.runs) < 2:
        return False
    return max(a.runs) >= min(b.runs) and max(b.runs) >= min(a.runs)


def _comparison_warnings(a: InstructionCount, b: InstructionCount,
                         tolerance: float) -> tuple[str, ...]:
    out = ["instruction counts do not see time lost to stalls beyond the cache model, the "
           "clock frequency, other threads or processes, or the kernel (system calls, page "
           "faults): fewer instructions is not always less time; confirm with a timing",
           "a count depends on the process's history: code that allocates takes other paths "
           "through the memory allocator when the heap was laid out differently before the "
           "calls (other imports, a longer script), which has moved one unchanged function's "
           "count by 2%; counted in several layouts a side (runs=5, or processes=5), a "
           "difference is judged against their spread"]
    if a.source == "simulated":
        out.append("cache misses and branch mispredictions are simulated by valgrind "
                   "cachegrind (two cache levels, no prefetcher), not measured; the "
                   "instruction counts themselves are exact")
    else:
        out.append("hardware counts of user-space instructions in this process: they can "
                   "vary a little from run to run (interrupts, multiplexing)")
    low, high = sorted((a.calls, b.calls))
    if high >= 2 * low:
        out.append(f"the baseline made {a.calls} calls per measurement and the candidate "
                   f"{b.calls}: one-off costs of the first calls (imports, caches, the "
                   "interpreter specialising) are spread over different numbers of calls; "
                   "pass the same calls= to both")
    limit = tolerance / 10.0
    for role, side in (("baseline", a), ("candidate", b)):
        if len(side.runs) > 1 and side.spread > limit:
            out.append(f"the {len(side.runs)} runs of the {role} ({side.name}), each in its "
                       f"own heap layout, span {100 * side.spread:.3g}%, more than a tenth "
                       f"of the tolerance ({100 * limit:.3g}%): part of any difference is the "
                       "heap's")
    single = [role for role, side in (("baseline", a), ("candidate", b)) if len(side.runs) == 1]
    if single:
        out.append(f"the {' and the '.join(single)} {'were' if len(single) == 2 else 'was'} "
                   "counted in one heap layout (runs=1), so how much the layout moves "
                   "the count is unknown; runs=5 (processes=5 in measure, compare and "
                   "timeit) counts in five and judges the difference against them")
    return tuple(out)


def _check_name(name: object) -> str | None:
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got {type(name).__name__}")
    return name


def _qualname(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def _check_common(calls: object, runs: object, source: object,
                  timeout_s: object) -> tuple[int | None, int, str, float]:
    n_calls = None if calls is None else check_int("calls", calls, 1, say_positive=False)
    n_runs = check_int("runs", runs, 1, say_positive=False)
    chosen = check_choice("source", source, _SOURCE_CHOICES)
    return n_calls, n_runs, chosen, check_seconds("timeout_s", timeout_s)


def _resolve_source(source: str) -> tuple[str, str]:
    """("pmu" or "simulated", why the PMU was not used: "" when it was)."""
    if source == "simulated":
        valgrind_path()  # SimulationUnavailable before anything runs
        return "simulated", ""
    probe = _core.probe_event("instructions")
    if probe.available:
        return "pmu", ""
    if source == "pmu":
        raise _pmu_unavailable(probe.reason)
    try:
        valgrind_path()
    except SimulationUnavailable:
        raise SimulationUnavailable(
            f"instructions cannot be counted here: the PMU cannot open them ({probe.reason}) "
            "and valgrind is not installed; install it (e.g. apt install valgrind) to "
            "simulate them") from None
    return "simulated", (f"simulated because the PMU cannot count instructions here: "
                         f"{probe.reason}")


def _pmu_unavailable(reason: str) -> CountersUnavailable:
    err = CountersUnavailable({"instructions": reason})
    # The base message offers missing='skip', which does not apply to the one event needed.
    err.args = (f"counters unavailable: instructions: {reason}; pass source='simulated' to "
                "count them under valgrind, or source='auto'",)
    return err


def _time_ns(clock: str, inner: Callable[[int], None], k: int) -> float:
    t0 = _core.read_start(clock)
    inner(k)
    t1 = _core.read_stop(clock)
    return float(_core.ticks_to_ns(clock, t1 - t0))


def _pick_calls(batch_ns: Callable[[int], float]) -> int:
    """Calls for about ``_TARGET_NS`` natively: batches of 1, 10, 100, ... calls are timed
    until one lasts ``_PICK_BATCH_NS`` (or holds ``_MAX_CALLS``); clamped to
    [``_MIN_CALLS``, ``_MAX_CALLS``]."""
    return _calls_for(_per_call_ns(batch_ns))


def _per_call_ns(batch_ns: Callable[[int], float]) -> float:
    """Native ns per call from batches of 1, 10, 100, ... calls, timed until one lasts
    ``_PICK_BATCH_NS`` (or holds ``_MAX_CALLS``); 0.0 when too fast to time."""
    k = 1
    while True:
        elapsed = batch_ns(k)
        if elapsed >= _PICK_BATCH_NS or k >= _MAX_CALLS:
            break
        k = min(k * 10, _MAX_CALLS)
    return max(elapsed, 0.0) / k


def _calls_for(per_call_ns: float) -> int:
    """Calls lasting about ``_TARGET_NS`` natively, in [``_MIN_CALLS``, ``_MAX_CALLS``]."""
    if per_call_ns <= 0.0:
        return _MAX_CALLS
    return int(min(max(round(_TARGET_NS / per_call_ns), _MIN_CALLS), _MAX_CALLS))


def _check_bound(max_calls: object, calls: int | None) -> int | None:
    """``max_calls`` checked, and refused below a ``calls`` given."""
    if max_calls is None:
        return None
    bound = check_int("max_calls", max_calls, 1, say_positive=False)
    if calls is not None and calls > bound:
        raise ValueError(f"calls={calls} exceeds max_calls={bound}; give one of them, or "
                         "calls <= max_calls")
    return bound




def _choose_calls(calls: int | None, bound: int | None, batch_ns: Callable[[int], float], *,
                  timed: bool) -> tuple[int, float | None]:
    """(calls to count, native ns per call or None): ``calls`` as given, else picked and
    capped at ``bound``. ``timed``: the native time is wanted (a simulated count's estimate
    for a notice), so one call is timed when ``calls`` was given; one that raises gives no
    estimate, and the count under valgrind reports the failure with its traceback."""
    if calls is not None:
        if not timed:
            return calls, None
        try:
            return calls, max(batch_ns(1), 0.0)
        except Exception:  # noqa: BLE001 - the simulated run says what went wrong
            return calls, None
    per_call = _per_call_ns(batch_ns)
    picked = _calls_for(per_call)
    return (picked if bound is None else min(picked, bound)), per_call










def _count_pmu(label: str, run_sample: Callable[[], object], empty_sample: Callable[[], object],
               calls: int, runs: int, started: float, why: str, net: str) -> InstructionCount:
    per_run: list[float] = []
    events: dict[str, list[float]] = {}
    skipped: dict[str, str] = {}
    scaled = False
    was_enabled = gc.isenabled()
    gc.disable()  # collections would add instructions at random points, as in timing
    try:
        for layout in range(runs):
            pad = layout_pad(layout)  # alive while this run counts
            run_sample()  # warm-up: first-call costs, the interpreter's specialising
            counts = count_samples(run_sample, _PMU_EVENTS, loops=calls, samples=_PMU_SAMPLES,
                                   missing="skip", empty_sample=empty_sample,
                                   missing_option="source='simulated'")
            per_call = counts.per_call
            if "instructions" not in per_call:
                raise _pmu_unavailable(counts.skipped.get("instructions", "it never ran"))
            per_run.append(per_call["instructions"])
            for event, value in per_call.items():
                events.setdefault(event, []).append(value)
            skipped.update(counts.skipped)
            scaled = scaled or counts.scaled
            del pad
    finally:
        if was_enabled:
            gc.enable()
    notes = [
        "hardware PMU, user space only (perf_event excludes the kernel and the hypervisor): "
        "instructions the kernel runs for this code (system calls, page faults) are not "
        "counted, nor are other threads'",
        f"per call: median of {_PMU_SAMPLES} samples of {calls} calls, {net}; the cyclic GC "
        "was paused",
    ]
    if runs > 1:
        notes.append(_layouts_note(runs))
    notes.extend(f"{event} not counted: {reason}" for event, reason in skipped.items())
    if scaled:
        notes.append("the kernel multiplexed the counters: the counts are scaled estimates")
    if why:
        notes.append(why)
    return InstructionCount(
        name=label, per_call=median_mad(per_run)[0], runs=tuple(per_run), source="pmu",
        calls=calls, estimated_cycles=None,
        events={k: median_mad(v)[0] for k, v in events.items()},
        wall_s=time.perf_counter() - started, notes=tuple(notes))


def _layouts_note(runs: int) -> str:
    return (f"{runs} runs in {runs} heap layouts: run 0 in the heap as the process left it, "
            "run i after layout pad i (objects of 1 B to 4 KiB drawn from seed i, about half "
            "freed); their spread is how much the heap's layout moves the count")


def _count_simulated(label: str, measure: Callable[[float, int], SimulatedCounts], calls: int,
                     runs: int, timeout: float, started: float, why: str,
                     counted: str) -> InstructionCount:
    deadline = time.monotonic() + timeout

    def one(layout: int) -> SimulatedCounts:
        left = deadline - time.monotonic()
        if left <= 0.0:
            raise SimulationTimeout(f"the simulated runs of {label} did not finish within "
                                    f"timeout_s={timeout:g} s; pass a larger timeout_s or "
                                    "fewer runs or calls")
        return measure(left, layout)

    # Each simulation runs two valgrind processes at once; run more only with cores to spare.
    workers = parallel_runs(runs)
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(one, range(runs)))
    else:
        results = [one(i) for i in range(runs)]
    per_run = [r.events["Ir"] for r in results]
    names = list(results[0].events)
    events = {k: median_mad([r.events.get(k, 0.0) for r in results])[0] for k in names}
    first = results[0]
    notes = [
        f"simulated by valgrind {first.valgrind_version} cachegrind, not hardware counts: "
        "instructions are exact for this interpreter, build and input; cache misses and "
        "branch mispredictions come from cachegrind's model",
        "user space only: valgrind does not see the kernel's instructions (system calls, "
        "page faults); it runs the threads of the process one at a time and counts them all",
        f"per call: (run with {calls} calls - run with none) / {calls}, each run a fresh "
        f"interpreter under valgrind (PYTHONHASHSEED=0); {counted}",
        "estimated_cycles = Ir + 10 x L1 misses + 100 x LL misses + 10 x mispredicted "
        "branches (KCachegrind's weights): an estimate that ignores overlap, prefetching and "
        "the pipeline",
    ]
    if runs > 1:
        notes.append(_layouts_note(runs))
    if why:
        notes.append(why)
    for r in results:
        notes.extend(n for n in r.notes if n not in notes)
    return InstructionCount(
        name=label, per_call=median_mad(per_run)[0], runs=tuple(per_run), source="simulated",
        calls=calls, estimated_cycles=_estimate_cycles(events), events=events,
        wall_s=time.perf_counter() - started, notes=tuple(notes))


def _estimate_cycles(events: Mapping[str, float]) -> float | None:
    """Cycles per call from cachegrind's events with :data:`CYCLE_WEIGHTS`; None when an
    event is missing (callgrind counts instructions only)."""
    if not all(k in events for k in CYCLE_WEIGHTS):
        return None
    return math.fsum(w * events[k] for k, w in CYCLE_WEIGHTS.items())


class _Fields:
    """Checked reads of a record's dict: ValueError naming the record and the field."""

    def __init__(self, kind: str, data: object) -> None:
        if not isinstance(data, Mapping):
            raise ValueError(f"{kind} data must be a mapping, got {type(data).__name__}")
        self.kind, self.data = kind, data

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise ValueError(f"{self.kind} data lacks the field {key!r}")
        return self.data[key]

    def _bad(self, key: str, what: str, value: object) -> ValueError:
        return ValueError(f"{self.kind} field {key!r} must be {what}, got {value!r}")

    def number(self, key: str, *, minimum: float | None = None) -> float:
        value = self._get(key)
        what = "a finite number" + ("" if minimum is None else f" >= {minimum:g}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._bad(key, what, value)
        if not math.isfinite(value) or (minimum is not None and value < minimum):
            raise self._bad(key, what, value)
        return float(value)

    def integer(self, key: str, *, minimum: int) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self._bad(key, f"an int >= {minimum}", value)
        return value

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self._bad(key, "a str", value)
        return value

    def choice(self, key: str, choices: Sequence[str]) -> str:
        value = self._get(key)
        if value not in choices:
            raise self._bad(key, f"one of {', '.join(repr(c) for c in choices)}", value)
        return str(value)

    def numbers(self, key: str, *, minimum: float | None = None) -> list[float]:
        value = self._get(key)
        if (not isinstance(value, (list, tuple))
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                           and math.isfinite(v) and (minimum is None or v >= minimum)
                           for v in value)):
            what = "a list of finite numbers" + ("" if minimum is None else f" >= {minimum:g}")
            raise self._bad(key, what, value)
        return [float(v) for v in value]

    def number_map(self, key: str, *, minimum: float | None = None) -> dict[str, float]:
        value = self._get(key)
        if (not isinstance(value, Mapping)
                or not all(isinstance(k, str) and isinstance(v, (int, float))
                           and not isinstance(v, bool) and math.isfinite(v)
                           and (minimum is None or v >= minimum)
                           for k, v in value.items())):
            what = "a mapping of event name to finite number" + (
                "" if minimum is None else f" >= {minimum:g}")
            raise self._bad(key, what, value)
        return {k: float(v) for k, v in value.items()}

    def texts(self, key: str, *, default: Sequence[str]) -> list[str]:
        if key not in self.data:
            return list(default)
        value = self.data[key]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, "a list of str", value)
        return list(value)
