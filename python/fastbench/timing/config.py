"""The settings of a run: their defaults, the validated :class:`RunConfig` and
:func:`run_config`, which checks each one before anything is timed. Nothing here runs or
times anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._checks import check_choice, check_fraction, check_int, check_seconds
from ..counters import check_events
from .clocks import resolve_clock

# Default duration of one sample. Short samples are the point: a burst of interference
# (another process, the hypervisor) then spoils only the few samples it overlaps.
DEFAULT_SAMPLE_S = 1e-4
# Default minimum wall time of the counted samples. The speed of a shared machine wanders
# by several percent over a few hundred milliseconds; a median over a second of short
# samples averages that wander out, where 0.1 s of samples reports whichever phase it hit.
DEFAULT_DURATION_S = 1.0

COUNTERS_MISSING = ("raise", "skip")
# The most loops per sample, warmup samples or counted samples a run accepts: 2**40, the
# calibration's own ceiling of loops. More is beyond any run that fits in a day or in memory,
# and the native loop counts them in 64 bits (loops=2**64-1 passed the old checks and ran
# forever; repeat=2**64 failed deep inside the binding).
MAX_COUNT = 1 << 40
# The most worker processes one call starts (each costs about a second at the least), and the
# longest sample asked for: a minute (a call longer than that is one sample of one loop).
MAX_PROCESSES = 10_000
MAX_SAMPLE_S = 60.0


@dataclass(frozen=True)
class RunConfig:
    """Validated settings of a run (see :func:`fastbench.measure` for their meaning)."""

    warmup: int
    min_time_s: float
    repeat: int
    loops: int | None
    clock: str
    disable_gc: bool
    max_time_s: float | None
    target_rel_ci: float | None = None
    duration_s: float | None = None
    counters: tuple[str, ...] | None = None
    counters_missing: str = "raise"


def run_config(
    warmup: object,
    min_time_s: object,
    repeat: object,
    loops: object,
    clock: object,
    disable_gc: object,
    max_time_s: object,
    target_rel_ci: object = None,
    duration_s: object = None,
    counters: object = None,
    counters_missing: object = "raise",
) -> RunConfig:
    """Check every setting of a run.

    Raises
    ------
    TypeError
        A count that is not an int, a duration or target that is not a number, a clock
        name that is not a str.
    ValueError
        A count below its minimum (0 for warmup, else 1) or above MAX_COUNT, a non-finite
        or non-positive duration, a target outside (0, 1), an unknown clock or event,
        ``counters_missing`` not "raise" or "skip".
    ClockUnavailable
        The requested clock cannot be used here.
    """
    return RunConfig(
        warmup=check_int("warmup", warmup, 0, maximum=MAX_COUNT),
        min_time_s=check_seconds("min_time_s", min_time_s, maximum=MAX_SAMPLE_S),
        repeat=check_int("repeat", repeat, 1, say_positive=False, maximum=MAX_COUNT),
        loops=None if loops is None else check_int("loops", loops, 1, say_positive=False,
                                                   maximum=MAX_COUNT),
        clock=resolve_clock(clock),  # type: ignore[arg-type]  # checked inside
        disable_gc=bool(disable_gc),
        max_time_s=None if max_time_s is None else check_seconds("max_time_s", max_time_s),
        target_rel_ci=None if target_rel_ci is None else check_fraction(
            "target_rel_ci", target_rel_ci, example="0.01 for ±1%"),
        duration_s=None if duration_s is None else check_seconds("duration_s", duration_s),
        counters=None if counters is None else tuple(check_events(counters)),  # type: ignore[arg-type]
        counters_missing=check_choice("counters_missing", counters_missing, COUNTERS_MISSING),
    )
