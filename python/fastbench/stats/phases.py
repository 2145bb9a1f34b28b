"""Interference phases in a time series of samples: which stretches ran at the machine's
undisturbed speed. A pure function on sample arrays; nothing here measures.

On a shared machine (a VM, a laptop on battery, a CI runner) the speed of the same code
changes in phases: for tens of milliseconds to seconds another tenant or the hypervisor takes
part of the core and every sample in that stretch runs slower, often 5-100% slower. The
median of all samples then reports the share of time spent in such phases, which changes
from run to run. :func:`quiet_phases` cuts the samples, in the order taken, into windows,
takes each window's median, and calls a window *quiet* when its median is within a tolerance
of the undisturbed level: the 5th percentile of the window medians, so that one window that
ran fast (a frequency burst, a neighbour idle for a moment) cannot set it. The tolerance
grows with the statistical uncertainty of a window's median, so a workload whose samples
merely scatter is not split into phases.

A steady trend is not interference: when the window medians rise (or fall) with time
almost monotonically (Kendall's tau of at least 0.8 against the window order), the workload
itself drifts (a growing data structure, a cache warming up) and every sample is quiet;
``fastbench.stats.summarize`` reports the drift.

Samples are never dropped: the result is a mask; the caller keeps every sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .._checks import check_int
from .samples import as_samples

__all__ = ["Phases", "concatenate_phases", "quiet_phases", "timing_phases", "window_for"]

# Windows below this many samples give too noisy a median to classify.
MIN_WINDOW = 8
# Fewer windows than this and there is no level to compare with: every sample is quiet.
MIN_WINDOWS = 8
# The level is the window median at this quantile (the ceil(0.05 * windows)-th smallest;
# the smallest below 20 windows). The smallest of all was, on a Golden Cove-class VM whose
# speed wanders by a few percent, a lone window 7% faster than the next: every other
# window, 99-100% of the run, was then called disturbed, and the reported median was that
# one window's.
LEVEL_QUANTILE = 0.05
# A window is disturbed when its median exceeds the level by more than the larger of this...
MIN_TOLERANCE = 0.02
# ...and this many standard errors of a window median (from the windows' own spread). The
# level lies about 1.6 standard errors below the centre of undisturbed window medians, so 6
# leaves a window of undisturbed samples beyond the tolerance over 4 errors out.
TOLERANCE_SE = 6.0
# Wall time of one window when sizing windows from the sample duration.
WINDOW_S = 0.01
# Window medians this monotonic in time (Kendall's tau against the window order) are a
# drift of the workload, not phases of the machine.
DRIFT_TAU = 0.8


@dataclass(frozen=True)
class Phases:
    """Which samples ran in quiet phases.

    Attributes
    ----------
    quiet : ndarray of bool
        One flag per sample, in input order: True when its window was quiet.
    window : int
        Samples per window (the last window may be shorter or longer, see quiet_phases).
    level : float
        The undisturbed level: the 5th percentile of the window medians.
    tolerance : float
        Relative excess over ``level`` still counted as quiet.
    windows : int
        Number of windows; 0 when there were too few samples to look for phases.
    trend : float
        Kendall's tau of the window medians against their order (0.0 without windows); at
        or above 0.8 in size the run is taken as a drift and every sample is quiet.
    """

    quiet: NDArray[np.bool_]
    window: int
    level: float
    tolerance: float
    windows: int
    trend: float = 0.0

    @property
    def disturbed_share(self) -> float:
        """Fraction of the samples that ran in disturbed phases (0.0 when none)."""
        return 1.0 - float(np.count_nonzero(self.quiet)) / self.quiet.size

    @property
    def found(self) -> bool:
        """True when any sample ran in a disturbed phase."""
        return not bool(np.all(self.quiet))

    def slowdown(self, samples: Any) -> float:
        """Median of the disturbed samples over the median of the quiet ones (1.0 if none)."""
        x = as_samples(samples)
        if x.size != self.quiet.size:
            raise ValueError(f"samples has {x.size} values, the phases cover {self.quiet.size}")
        if not self.found:
            return 1.0
        return float(np.median(x[~self.quiet]) / np.median(x[self.quiet]))


def window_for(sample_s: float, window_s: float = WINDOW_S) -> int:
    """Samples per window so that a window lasts about ``window_s`` (at least MIN_WINDOW)."""
    if not (math.isfinite(sample_s) and sample_s > 0.0):
        raise ValueError(f"sample_s must be finite and > 0 seconds, got {sample_s!r}")
    return max(MIN_WINDOW, int(math.ceil(window_s / sample_s)))


def quiet_phases(samples: Any, window: int, *, min_tolerance: float = MIN_TOLERANCE) -> Phases:
    """Flag the samples taken while the machine ran at its undisturbed speed.

    Parameters
    ----------
    samples : array_like
        Per-call times, one-dimensional, finite, positive, **in the order taken**.
    window : int
        Samples per window (>= 8); :func:`window_for` sizes it to about 10 ms of sampling.
        The trailing ``len(samples) % window`` samples join the last window.
    min_tolerance : float
        Smallest relative excess over the level still counted as quiet (default 2%).

    Returns
    -------
    Phases
        Every sample quiet (``windows == 0``) when there are fewer than 8 windows.

    Notes
    -----
    The level is the ``ceil(0.05 * windows)``-th smallest window median. A window is quiet
    when its median is at most ``level * (1 + tolerance)`` (windows faster than the level
    are quiet too), with ``tolerance`` the larger of ``min_tolerance`` and six
    standard errors of a window median relative to the level. The standard error is
    ``1.2533 * 1.4826 * MAD / sqrt(window)`` (a median's asymptotic error for normal data),
    its median over the windows. Interference is assumed to slow samples down, never to
    speed them up.
    """
    x = as_samples(samples)
    if np.any(x <= 0.0):
        raise ValueError("samples must be positive durations")
    window = check_int("window", window, minimum=MIN_WINDOW)
    if not (math.isfinite(min_tolerance) and min_tolerance >= 0.0):
        raise ValueError(f"min_tolerance must be finite and >= 0, got {min_tolerance!r}")
    count = x.size // window
    if count < MIN_WINDOWS:
        return Phases(np.ones(x.size, dtype=bool), window, float(np.median(x)), 0.0, 0)
    starts = np.arange(count) * window
    ends = np.append(starts[1:], x.size)  # the remainder joins the last window
    medians = np.empty(count)
    errors = np.empty(count)
    for j, (a, b) in enumerate(zip(starts, ends)):
        part = x[a:b]
        med = float(np.median(part))
        medians[j] = med
        errors[j] = 1.2533 * 1.4826 * float(np.median(np.abs(part - med))) / math.sqrt(b - a)
    rank = max(1, math.ceil(LEVEL_QUANTILE * count))
    level = float(np.partition(medians, rank - 1)[rank - 1])
    tolerance = max(min_tolerance, TOLERANCE_SE * float(np.median(errors)) / level)
    trend = _kendall_tau_in_order(medians)
    if abs(trend) >= DRIFT_TAU:
        return Phases(np.ones(x.size, dtype=bool), window, level, tolerance, count, trend)
    quiet_window = medians <= level * (1.0 + tolerance)
    quiet = np.repeat(quiet_window, ends - starts)
    return Phases(quiet, window, level, tolerance, count, trend)


def _kendall_tau_in_order(values: NDArray[np.float64]) -> float:
    """Kendall's tau-a between ``values`` and their positions (ties count as neither)."""
    n = values.size
    signs = np.sign(values[None, :] - values[:, None])  # [i, j]: sign(v_j - v_i)
    return float(np.triu(signs, k=1).sum()) / (n * (n - 1) / 2.0)


def timing_phases(per_call_ns: Any, loops: int) -> Phases:
    """:func:`quiet_phases` of timing samples (per-call ns, ``loops`` calls per sample), with
    windows of about 10 ms of sampling. Data holding zeros (imported from tools that round)
    has no level to compare with: every sample is quiet."""
    x = as_samples(per_call_ns, name="per_call_ns")
    loops = check_int("loops", loops, minimum=1)
    if np.any(x <= 0.0):
        return Phases(np.ones(x.size, dtype=bool), x.size, 0.0, 0.0, 0)
    # Size windows by the fast tenth of the samples: slow phases only make windows longer.
    return quiet_phases(x, window_for(float(np.quantile(x, 0.1)) * loops * 1e-9))


def concatenate_phases(parts: Sequence[Phases]) -> Phases:
    """The phases of several runs found one run at a time, as one record over their samples
    in order: the quiet flags concatenated, the windows added up, the lowest level, the
    widest tolerance, the median window, no trend.

    Raises
    ------
    ValueError
        If ``parts`` is empty.
    """
    if not parts:
        raise ValueError("concatenate_phases needs at least one Phases")
    return Phases(
        np.concatenate([p.quiet for p in parts]),
        int(np.median([p.window for p in parts])),
        min(p.level for p in parts),
        max(p.tolerance for p in parts),
        sum(p.windows for p in parts),
        0.0,
    )
