"""Timing a callable, a block or a statement with the native loop: measure, Timer, timeit.

Owns argument checking, the order of a run (calibrate, warm up, floors, samples) and the
Measurement record. The loop itself, the clocks and the loops-per-sample search are native
(fastbench._core); nothing here times anything with a Python clock.
"""

from __future__ import annotations

import gc
import itertools
import keyword
import math
import textwrap
import types
from dataclasses import dataclass, field
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

import numpy as np
from numpy.typing import NDArray

from . import _core
from .clocks import resolve_clock
from .stats import median_ci
from .units import format_ns

# Samples taken of each floor (empty native loop, no-op call) at the measured loops count.
_FLOOR_SAMPLES = 9
_PERCENTILES = (5, 25, 50, 75, 95, 99)


@dataclass(frozen=True, eq=False)
class Measurement:
    """The result of timing one callable: raw samples and everything needed to read them.

    Attributes
    ----------
    samples_ns : ndarray of float64
        Per-call time of each counted sample in ns (sample duration / ``loops``).
    loops : int
        Calls per sample.
    warmup_samples_ns : ndarray of float64
        Per-call times of the warmup samples, kept apart and never summarised.
    clock : str
        Clock used: "tsc" or "steady".
    overhead_ns, overhead_mad_ns : float
        The native loop's own cost per iteration (empty body, same loops; includes the
        clock pair spread over the loops), median and median absolute deviation.
    call_floor_ns, call_floor_mad_ns : float
        Per-call time of a no-op called the same way (same loop, same arguments), median
        and MAD. ``net_median_ns`` subtracts it.
    call_floor_kind : str
        "python" (a Python no-op with the same parameters) or "native" (a C no-op, for
        built-in callables) or "statement" (``pass`` in the same inner loop, for timeit).
    name : str
        A label for reports.
    calibration_trials : int
        Samples spent choosing ``loops`` (0 when ``loops`` was given).
    budget_exhausted : bool
        True when ``max_time_s`` ended the run before ``repeat`` samples.
    elapsed_s : float
        Wall time of the counted samples.
    """

    samples_ns: NDArray[np.float64]
    loops: int
    warmup_samples_ns: NDArray[np.float64]
    clock: str
    overhead_ns: float
    overhead_mad_ns: float
    call_floor_ns: float
    call_floor_mad_ns: float
    call_floor_kind: str = "python"
    name: str = ""
    calibration_trials: int = 0
    budget_exhausted: bool = False
    elapsed_s: float = 0.0
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    # -- summary figures ------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of counted samples."""
        return int(self.samples_ns.size)

    @property
    def min_ns(self) -> float:
        return float(self.samples_ns.min())

    @property
    def max_ns(self) -> float:
        return float(self.samples_ns.max())

    @property
    def median_ns(self) -> float:
        """Median per-call time, raw: what timeit would call the time."""
        return float(np.median(self.samples_ns))

    @property
    def mean_ns(self) -> float:
        return float(self.samples_ns.mean())

    @property
    def stdev_ns(self) -> float:
        """Sample standard deviation (ddof=1); 0.0 with a single sample."""
        return float(self.samples_ns.std(ddof=1)) if self.n > 1 else 0.0

    @property
    def net_median_ns(self) -> float:
        """Median per-call time minus the call floor: the cost of the body alone."""
        return self.median_ns - self.call_floor_ns

    @property
    def percentiles_ns(self) -> dict[str, float]:
        """p5, p25, p50, p75, p95 and p99 of the per-call times (linear interpolation)."""
        values = np.percentile(self.samples_ns, _PERCENTILES)
        return {f"p{q}": float(v) for q, v in zip(_PERCENTILES, values)}

    def percentile_ns(self, q: float) -> float:
        """The ``q``-th percentile (0..100) of the per-call times."""
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"q must be in [0, 100], got {q!r}")
        return float(np.percentile(self.samples_ns, q))

    @property
    def median_ci_ns(self) -> tuple[float, float] | None:
        """Distribution-free 95% CI of the median; None below 6 samples."""
        if "median_ci" not in self._cache:
            self._cache["median_ci"] = median_ci(self.samples_ns, 0.95)
        ci: tuple[float, float] | None = self._cache["median_ci"]
        return ci

    @property
    def rel_ci(self) -> float | None:
        """Half-width of the median's 95% CI relative to the median, or None."""
        ci = self.median_ci_ns
        if ci is None or self.median_ns == 0:
            return None
        return (ci[1] - ci[0]) / 2.0 / abs(self.median_ns)

    # -- conversion -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``Measurement.from_dict`` restores it exactly."""
        return {
            "name": self.name,
            "samples_ns": [float(x) for x in self.samples_ns],
            "loops": self.loops,
            "warmup_samples_ns": [float(x) for x in self.warmup_samples_ns],
            "clock": self.clock,
            "overhead_ns": self.overhead_ns,
            "overhead_mad_ns": self.overhead_mad_ns,
            "call_floor_ns": self.call_floor_ns,
            "call_floor_mad_ns": self.call_floor_mad_ns,
            "call_floor_kind": self.call_floor_kind,
            "calibration_trials": self.calibration_trials,
            "budget_exhausted": self.budget_exhausted,
            "elapsed_s": self.elapsed_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        """Rebuild a Measurement from ``to_dict`` output.

        Raises
        ------
        ValueError
            If a required key is missing or the samples are empty or not finite.
        """
        required = ("samples_ns", "loops", "clock", "overhead_ns", "call_floor_ns")
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"Measurement data lacks {', '.join(missing)}")
        samples = np.asarray(data["samples_ns"], dtype=np.float64)
        if samples.ndim != 1 or samples.size == 0 or not np.all(np.isfinite(samples)):
            raise ValueError("Measurement samples_ns must be a non-empty list of finite numbers")
        return cls(
            samples_ns=samples,
            loops=int(data["loops"]),
            warmup_samples_ns=np.asarray(data.get("warmup_samples_ns", []), dtype=np.float64),
            clock=str(data["clock"]),
            overhead_ns=float(data["overhead_ns"]),
            overhead_mad_ns=float(data.get("overhead_mad_ns", 0.0)),
            call_floor_ns=float(data["call_floor_ns"]),
            call_floor_mad_ns=float(data.get("call_floor_mad_ns", 0.0)),
            call_floor_kind=str(data.get("call_floor_kind", "python")),
            name=str(data.get("name", "")),
            calibration_trials=int(data.get("calibration_trials", 0)),
            budget_exhausted=bool(data.get("budget_exhausted", False)),
            elapsed_s=float(data.get("elapsed_s", 0.0)),
        )

    def __str__(self) -> str:
        rel = self.rel_ci
        spread = f"± {rel * 100:.1f}%" if rel is not None else "± n/a"
        what = "sample" if self.n == 1 else "samples"
        return (
            f"{format_ns(self.median_ns)} {spread} (median of {self.n} {what} × "
            f"{self.loops:,} loops, {self.clock} clock)"
        )


# -- argument checks ------------------------------------------------------------------------
def _check_count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0.0:
        raise ValueError(f"{name} must be finite and > 0 seconds, got {value!r}")
    return seconds


@dataclass(frozen=True)
class _RunConfig:
    warmup: int
    min_time_s: float
    repeat: int
    loops: int | None
    clock: str
    disable_gc: bool
    max_time_s: float | None


def _config(
    warmup: object,
    min_time_s: object,
    repeat: object,
    loops: object,
    clock: object,
    disable_gc: object,
    max_time_s: object,
) -> _RunConfig:
    return _RunConfig(
        warmup=_check_count("warmup", warmup, 0),
        min_time_s=_check_seconds("min_time_s", min_time_s),
        repeat=_check_count("repeat", repeat, 1),
        loops=None if loops is None else _check_count("loops", loops, 1),
        clock=resolve_clock(clock),  # type: ignore[arg-type]  # checked inside
        disable_gc=bool(disable_gc),
        max_time_s=None if max_time_s is None else _check_seconds("max_time_s", max_time_s),
    )


@contextmanager
def _gc_paused(pause: bool) -> Iterator[None]:
    """Disable the cyclic GC for the block if asked, restoring its previous state."""
    was_enabled = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause and was_enabled:
            gc.enable()


def _median_mad(values: NDArray[np.float64]) -> tuple[float, float]:
    med = float(np.median(values))
    return med, float(np.median(np.abs(values - med)))


def _run(
    sampler: _core.Sampler, floor: _core.Sampler, cfg: _RunConfig, floor_kind: str, name: str
) -> Measurement:
    """Calibrate, warm up, measure both floors, then take the counted samples."""
    with _gc_paused(cfg.disable_gc):
        trials = 0
        loops = cfg.loops
        if loops is None:
            cal = sampler.calibrate(cfg.min_time_s)
            loops, trials = int(cal.loops), int(cal.trials)
        warm = sampler.run(loops, cfg.warmup).sample_ns if cfg.warmup else []
        empty = _core.Sampler.empty(cfg.clock).run(loops, _FLOOR_SAMPLES).sample_ns
        noop = floor.run(loops, _FLOOR_SAMPLES).sample_ns
        run = sampler.run(loops, cfg.repeat, cfg.max_time_s or 0.0)
    overhead, overhead_mad = _median_mad(np.asarray(empty, dtype=np.float64) / loops)
    call_floor, call_floor_mad = _median_mad(np.asarray(noop, dtype=np.float64) / loops)
    return Measurement(
        samples_ns=np.asarray(run.sample_ns, dtype=np.float64) / loops,
        loops=loops,
        warmup_samples_ns=np.asarray(warm, dtype=np.float64) / loops,
        clock=cfg.clock,
        overhead_ns=overhead,
        overhead_mad_ns=overhead_mad,
        call_floor_ns=call_floor,
        call_floor_mad_ns=call_floor_mad,
        call_floor_kind=floor_kind,
        name=name,
        calibration_trials=trials,
        budget_exhausted=bool(run.budget_exhausted),
        elapsed_s=float(run.elapsed_s),
    )


# -- the call floor -------------------------------------------------------------------------
_NATIVE_TYPES = (
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)


def _python_noop(nargs: int, kwnames: tuple[str, ...]) -> Callable[..., None]:
    """A Python function that does nothing, taking exactly these arguments."""
    params = [f"_p{i}" for i in range(nargs)]
    plain = all(k.isidentifier() and not keyword.iskeyword(k) and k not in params for k in kwnames)
    if kwnames and plain:
        params += ["*", *(f"{k}=None" for k in kwnames)]
    elif kwnames:
        params.append("**kwargs")  # names a def cannot spell: accept them all
    namespace: dict[str, Any] = {}
    exec(f"def noop({', '.join(params)}):\n    return None\n", namespace)  # noqa: S102
    noop: Callable[..., None] = namespace["noop"]
    return noop


def _call_floor(fn: Callable[..., Any], nargs: int, kwnames: tuple[str, ...]) -> tuple[Any, str]:
    if isinstance(fn, _NATIVE_TYPES):
        return _core.noop, "native"
    return _python_noop(nargs, kwnames), "python"


def _label(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def measure(
    fn: Callable[..., Any],
    /,
    *args: Any,
    warmup: int = 1,
    min_time_s: float = 0.01,
    repeat: int = 30,
    loops: int | None = None,
    clock: str = "auto",
    disable_gc: bool = True,
    max_time_s: float | None = None,
    name: str | None = None,
    **kwargs: Any,
) -> Measurement:
    """Time ``fn(*args, **kwargs)`` with the native loop.

    The arguments are bound once; each sample reads the clock, calls ``fn`` ``loops``
    times through the vectorcall protocol, and reads the clock again.

    Parameters
    ----------
    fn : callable
        What to time. Its own keyword arguments go in ``**kwargs``; use
        ``functools.partial`` for keywords that clash with the ones below.
    warmup : int
        Samples run before the counted ones and kept apart (``warmup_samples_ns``).
    min_time_s : float
        Minimum duration of one sample in seconds; ``loops`` is chosen to reach it (and at
        least 1000 clock-resolution steps). Search: start at 1 loop, scale by the predicted
        ratio (x2..x100 per trial); usually two or three trials.
    repeat : int
        Counted samples.
    loops : int, optional
        Fixed calls per sample; skips the search.
    clock : {"auto", "tsc", "steady"}
        ``fastbench.clocks()`` tells what "auto" picks and why.
    disable_gc : bool
        Pause the cyclic garbage collector during the run (restored afterwards).
    max_time_s : float, optional
        Time budget for the counted samples; the run stops early when it is spent
        (``budget_exhausted``). At least one sample is always taken.
    name : str, optional
        Label for reports; defaults to the callable's qualified name.

    Returns
    -------
    Measurement

    Raises
    ------
    TypeError
        ``fn`` is not callable, or a count or duration has the wrong type.
    ValueError
        A count below its minimum, a non-finite or non-positive duration, an unknown clock.
    ClockUnavailable
        The requested clock cannot be used here.
    KeyboardInterrupt
        Ctrl-C, noticed between samples.
    Exception
        Whatever ``fn`` raises propagates unchanged, with its traceback, after cleanup.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    cfg = _config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s)
    floor_fn, floor_kind = _call_floor(fn, len(args), tuple(kwargs))
    sampler = _core.Sampler.calls(fn, tuple(args), dict(kwargs), cfg.clock)
    floor = _core.Sampler.calls(floor_fn, tuple(args), dict(kwargs), cfg.clock)
    return _run(sampler, floor, cfg, floor_kind, _label(fn) if name is None else name)


# -- statements -----------------------------------------------------------------------------
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


def timeit(
    stmt: str | Callable[[], Any] = "pass",
    setup: str = "pass",
    globals: dict[str, Any] | None = None,  # noqa: A002 - the stdlib's name
    *,
    warmup: int = 1,
    min_time_s: float = 0.01,
    repeat: int = 30,
    loops: int | None = None,
    clock: str = "auto",
    disable_gc: bool = True,
    max_time_s: float | None = None,
) -> Measurement:
    """Time a statement string like :func:`timeit.timeit`, with fastbench's clocks and stats.

    ``stmt`` is compiled into a ``for`` loop inside a function (as the stdlib does) that
    reads the native clock before and after the loop; ``setup`` runs once per sample,
    outside the timed region. The call floor is the same loop around ``pass``. A callable
    ``stmt`` is timed with :func:`measure`. Other parameters are those of :func:`measure`.

    Raises
    ------
    SyntaxError
        ``stmt`` or ``setup`` does not compile.
    """
    if callable(stmt):
        return measure(
            stmt, warmup=warmup, min_time_s=min_time_s, repeat=repeat, loops=loops,
            clock=clock, disable_gc=disable_gc, max_time_s=max_time_s,
        )
    cfg = _config(warmup, min_time_s, repeat, loops, clock, disable_gc, max_time_s)
    glob = {} if globals is None else globals
    inner = _compile_inner(stmt, setup, glob, cfg.clock)
    floor = _compile_inner("pass", setup, glob, cfg.clock)
    return _run(
        _core.Sampler.inner(inner, cfg.clock),
        _core.Sampler.inner(floor, cfg.clock),
        cfg,
        "statement",
        stmt if isinstance(stmt, str) else _label(stmt),
    )


class Timer:
    """Time a block: ``with fastbench.Timer() as t: ...`` then ``t.elapsed_ns``.

    Reads the native clock (fenced TSC where "auto" picks it) on entry and exit. The
    figure includes the cost of one clock read pair and one Python-level call (about
    0.1-0.3 µs): use :func:`measure` for anything shorter than tens of microseconds.
    """

    def __init__(self, clock: str = "auto") -> None:
        self.clock = resolve_clock(clock)
        self._start: int | None = None
        self._elapsed_ns: float | None = None

    def __enter__(self) -> Timer:
        self._elapsed_ns = None
        self._start = _core.read_start(self.clock)
        return self

    def __exit__(self, *exc: object) -> None:
        stop = _core.read_stop(self.clock)
        if self._start is None:
            raise RuntimeError("Timer exited without being entered")
        self._elapsed_ns = _core.ticks_to_ns(self.clock, stop - self._start)

    @property
    def elapsed_ns(self) -> float:
        """Elapsed time in ns; while the block runs, the time so far.

        Raises
        ------
        RuntimeError
            If the timer was never entered.
        """
        if self._elapsed_ns is not None:
            return self._elapsed_ns
        if self._start is None:
            raise RuntimeError("Timer was not started: use it as `with Timer() as t:`")
        return _core.ticks_to_ns(self.clock, _core.read_stop(self.clock) - self._start)

    @property
    def elapsed_s(self) -> float:
        """Elapsed time in seconds."""
        return self.elapsed_ns * 1e-9
