"""Timed things: :class:`Target` (a native sampler, the sampler of its call floor, its clock)
and :func:`callable_target`, which picks the call floor of a callable. The steps of a run
are Target methods so that measure runs them in a row and fastbench.compare interleaves
several targets; the order of those steps is sampling.py's. Nothing here reads a Python clock.
"""

from __future__ import annotations

import hashlib
import keyword
import types
from dataclasses import replace
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from .. import _core
from ..identity import Identity, callable_identity, code_hash
from ..machine import known_run_variation
from ..measurement import Measurement, measurement_warnings
from ..replicates import identity_variation
from ..stats.robust import median_mad
from .config import RunConfig

# Samples taken of each floor (empty native loop, no-op call) at the measured loops count.
_FLOOR_SAMPLES = 9


class Target:
    """One timed thing: its native sampler, a no-op sampler for its call floor, its clock.

    The steps of a run are methods so that :func:`fastbench.measure` runs them in a row and
    ``fastbench.compare`` interleaves the sampling of several targets.
    """

    def __init__(self, sampler: _core.Sampler, floor: _core.Sampler, clock: str,
                 floor_kind: str, name: str, workload: str = "",
                 identity: Identity | None = None) -> None:
        self.sampler = sampler
        self.floor = floor
        self.clock = clock
        self.floor_kind = floor_kind
        self.name = name
        self.workload = workload
        self.identity = identity
        self.loops = 0
        self.calibration_trials = 0
        self.warmup_ns: NDArray[np.float64] = np.empty(0)
        self.floors: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)

    def prepare(self, cfg: RunConfig) -> None:
        """Choose loops (unless fixed), run the warmup samples, measure both floors."""
        if cfg.loops is None:
            cal = self.sampler.calibrate(cfg.min_time_s)
            self.loops, self.calibration_trials = int(cal.loops), int(cal.trials)
        else:
            self.loops, self.calibration_trials = cfg.loops, 0
        # The warmup stops at the budget too (at least one sample): warmup=10**12 with
        # max_time_s must not run until the machine is switched off.
        warm = (self.sampler.run(self.loops, cfg.warmup, cfg.max_time_s or 0.0).sample_ns
                if cfg.warmup else [])
        self.warmup_ns = np.asarray(warm, dtype=np.float64) / self.loops
        empty = _core.Sampler.empty(self.clock).run(self.loops, _FLOOR_SAMPLES).sample_ns
        noop = self.floor.run(self.loops, _FLOOR_SAMPLES).sample_ns
        self.floors = (*median_mad(np.asarray(empty, dtype=np.float64) / self.loops),
                       *median_mad(np.asarray(noop, dtype=np.float64) / self.loops))

    def sample(self, n: int, max_time_s: float = 0.0) -> tuple[list[float], bool, float]:
        """Take up to ``n`` samples: (per-call ns each, budget ran out, elapsed s)."""
        run = self.sampler.run(self.loops, n, max_time_s)
        return [x / self.loops for x in run.sample_ns], bool(run.budget_exhausted), float(run.elapsed_s)

    def measurement(self, samples_ns: list[float], elapsed_s: float, stop_reason: str,
                    cfg: RunConfig) -> Measurement:
        """The Measurement of this target's samples, with its warnings."""
        overhead, overhead_mad, floor, floor_mad = self.floors
        variation = _variation(self.identity)
        m = Measurement(
            samples_ns=np.asarray(samples_ns, dtype=np.float64),
            loops=self.loops,
            warmup_samples_ns=self.warmup_ns,
            clock=self.clock,
            overhead_ns=overhead,
            overhead_mad_ns=overhead_mad,
            call_floor_ns=floor,
            call_floor_mad_ns=floor_mad,
            call_floor_kind=self.floor_kind,
            name=self.name,
            calibration_trials=self.calibration_trials,
            elapsed_s=elapsed_s,
            target_rel_ci=cfg.target_rel_ci,
            stop_reason=stop_reason,
            run_variation=None if variation is None else variation[0],
            run_variation_df=None if variation is None else variation[1],
            workload=self.workload,
            clock_resolution_ns=float(_core.clock_info(self.clock).resolution_ns),
            identity=self.identity,
        )
        return replace(m, warnings=measurement_warnings(m, _core.auto_clock()[1]))


def _variation(identity: Identity | None) -> tuple[float, int | None] | None:
    """The run-to-run variation a new single run carries and its degrees of freedom: what
    the replicates of this identity saved here say (at least 3 of them), else the machine's
    (``fastbench variation``)."""
    learned = identity_variation(identity, 1)
    if learned is not None and learned.runs >= 3:
        return learned.sd, learned.df
    here = known_run_variation()
    return None if here is None else (here.rel_sd, here.df)


# -- the call floor of a callable ----------------------------------------------------------------
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


def workload_key(kind: str, *parts: str) -> str:
    """A short key naming what is measured (``Measurement.workload``): the kind and a hash
    of the parts that make it this work."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    return f"{kind}:{digest[:16]}"


def _callable_key(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The workload key of ``fn(*args, **kwargs)``, the same across versions of its code:
    its module and qualified name (a lambda's code, which tells lambdas apart), and the
    types of its arguments."""
    label = _label(fn)
    code = getattr(fn, "__code__", None)
    anonymous = code_hash(code) if "<lambda>" in label and code is not None else ""
    return workload_key(
        "callable", str(getattr(fn, "__module__", "") or ""), label, anonymous,
        ",".join(type(a).__qualname__ for a in args),
        ",".join(f"{k}={type(v).__qualname__}" for k, v in sorted(kwargs.items())))


def _label(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def callable_target(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                    clock: str, name: str | None = None, *,
                    identify: bool = True) -> Target:
    """A Target calling ``fn(*args, **kwargs)`` through vectorcall, with its call floor and
    its identity (:func:`fastbench.identity.callable_identity`; ``identify=False`` skips it,
    for targets whose measurements are never saved as replicates).

    Raises
    ------
    TypeError
        ``fn`` is not callable.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    floor_fn, floor_kind = _call_floor(fn, len(args), tuple(kwargs))
    return Target(
        _core.Sampler.calls(fn, args, kwargs, clock),
        _core.Sampler.calls(floor_fn, args, kwargs, clock),
        clock, floor_kind, _label(fn) if name is None else name,
        _callable_key(fn, args, kwargs),
        callable_identity(fn, args, kwargs) if identify else None,
    )
