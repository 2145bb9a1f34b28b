"""The order of a run: prepare a target (loops, floors), warm it up within the time budget,
take ``repeat`` samples, more until ``duration_s`` has passed (and more while interference
phases held most of it), more while a precision target is unmet, then the counted samples;
all with the cyclic GC paused as asked (:func:`gc_paused`). Several targets side by side
(:func:`run_rounds`, for ``compare``) take one sample each per round instead. The samples
themselves are taken natively by the target.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import replace
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from .. import _core
from ..counters import CountersUnavailable, count_samples
from ..measurement import Measurement, relative_half_width
from ..stats import median_ci
from .config import RunConfig
from ..stats.phases import timing_phases
from .targets import Target

# With a precision target and no budget, sampling stops after this long all the same.
DEFAULT_ADAPTIVE_BUDGET_S = 10.0
# When interference phases covered more than half of the duration_s sampling, sampling goes
# on (in steps of a tenth of duration_s) until quiet phases add up to half of duration_s, or
# until this many times duration_s have passed, whichever comes first (within max_time_s).
QUIET_EXTENSION = 3.0


@contextmanager
def gc_paused(pause: bool) -> Iterator[None]:
    """Disable the cyclic GC for the block if asked, restoring its previous state."""
    was_enabled = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause and was_enabled:
            gc.enable()


def _fill_duration(target: Target, cfg: RunConfig, samples: list[float],
                   elapsed: float) -> tuple[float, bool]:
    """More samples until ``cfg.duration_s`` of counted sampling has passed, within the
    budget: (elapsed s, whether the budget ended it)."""
    goal = cfg.duration_s or 0.0
    if cfg.max_time_s is not None:
        goal = min(goal, cfg.max_time_s)
    while elapsed < goal and samples:
        per_sample = elapsed / len(samples)
        # The native run stops when the time left is spent; the count only sizes its buffer.
        n = int((goal - elapsed) / max(per_sample, 1e-7) * 1.25) + 8
        more, _, spent = target.sample(min(n, 1_000_000), goal - elapsed)
        samples += more
        elapsed += spent
    return elapsed, cfg.max_time_s is not None and goal == cfg.max_time_s and elapsed >= goal


def _wait_out_interference(target: Target, cfg: RunConfig, samples: list[float],
                           elapsed: float) -> tuple[float, bool]:
    """More samples while interference phases hold more than half of ``duration_s``: until
    the quiet samples span half of it or QUIET_EXTENSION x ``duration_s`` have passed
    (within the budget). Returns (elapsed s, whether the budget ended it)."""
    goal = cfg.duration_s or 0.0
    limit = goal * QUIET_EXTENSION
    if cfg.max_time_s is not None:
        limit = min(limit, cfg.max_time_s)
    while elapsed < limit:
        x = np.asarray(samples)
        quiet_s = float(x[timing_phases(x, target.loops).quiet].sum()) * target.loops * 1e-9
        if quiet_s >= goal / 2.0:
            return elapsed, False
        step = min(goal / 10.0, limit - elapsed)
        more, _, spent = target.sample(int(step / (elapsed / len(samples)) * 1.25) + 8, step)
        samples += more
        elapsed += spent
    return elapsed, cfg.max_time_s is not None and limit == cfg.max_time_s


def _warm_up(target: Target, cfg: RunConfig) -> RunConfig:
    """Run the warmup samples within the budget: ``cfg.warmup`` of them, or fewer (at least
    one) once ``max_time_s`` has passed. Returns the settings of the counted samples, whose
    budget is what the warmup left (they still take at least one sample)."""
    if cfg.warmup == 0:
        return cfg
    run = target.sampler.run(target.loops, cfg.warmup, cfg.max_time_s or 0.0)
    target.warmup_ns = np.asarray(run.sample_ns, dtype=np.float64) / target.loops
    if cfg.max_time_s is None:
        return cfg
    # A spent budget still allows the one counted sample a measurement needs.
    return replace(cfg, max_time_s=max(cfg.max_time_s - float(run.elapsed_s), 1e-9))


def _collect(target: Target, cfg: RunConfig) -> Measurement:
    """Counted samples: ``repeat`` of them, then more until ``duration_s`` has passed (and
    more while interference phases held most of it), then more while the precision target
    is unmet."""
    samples, exhausted, elapsed = target.sample(cfg.repeat, cfg.max_time_s or 0.0)
    if exhausted:  # the budget ended even the minimum of `repeat` samples
        return target.measurement(samples, elapsed, "max_time_s", cfg)
    reason = "repeat"
    if cfg.duration_s is not None and elapsed < cfg.duration_s:
        elapsed, exhausted = _fill_duration(target, cfg, samples, elapsed)
        if exhausted:  # a budget shorter than duration_s
            return target.measurement(samples, elapsed, "max_time_s", cfg)
        elapsed, exhausted = _wait_out_interference(target, cfg, samples, elapsed)
        if exhausted:
            return target.measurement(samples, elapsed, "max_time_s", cfg)
        reason = "duration_s"
    if cfg.target_rel_ci is None:
        return target.measurement(samples, elapsed, reason, cfg)
    budget = cfg.max_time_s or DEFAULT_ADAPTIVE_BUDGET_S
    while True:
        quiet = np.asarray(samples)[timing_phases(samples, target.loops).quiet]
        rel = relative_half_width(median_ci(quiet), float(np.median(quiet)))
        if rel is not None and rel <= cfg.target_rel_ci:
            return target.measurement(samples, elapsed, "target_rel_ci", cfg)
        remaining = budget - elapsed
        if remaining <= 0.0:
            return target.measurement(samples, elapsed, "max_time_s", cfg)
        # Grow by a quarter at a time: the CI narrows as 1/sqrt(n), so this converges in a
        # handful of rounds without overshooting the target by much.
        more, _, spent = target.sample(max(5, len(samples) // 4), remaining)
        samples += more
        elapsed += spent


def run_target(target: Target, cfg: RunConfig,
               ready: Callable[[], None] | None = None) -> Measurement:
    """Prepare ``target`` and collect its samples with the GC paused as configured; then,
    when ``cfg.counters`` names events, count them over ``cfg.repeat`` more samples.
    ``ready``, when given, is called once the target is prepared and warmed up, right
    before the counted samples (a duet partner waits there for the other).

    Raises
    ------
    CountersUnavailable
        An event cannot be opened here and ``cfg.counters_missing`` is "raise" (checked
        before any sample is taken).
    """
    if cfg.counters is not None and cfg.counters_missing == "raise":
        lacking = {p.name: p.reason for p in map(_core.probe_event, cfg.counters)
                   if not p.available}
        if lacking:  # before the timed samples, not after them
            raise CountersUnavailable(lacking, "counters_missing='skip'")
    with gc_paused(cfg.disable_gc):
        # The warmup runs here, after the loops search and the floors, so that the budget
        # bounds it: warmup=10**12 with max_time_s ran until the machine was switched off.
        target.prepare(replace(cfg, warmup=0))
        counted = _warm_up(target, cfg)
        if ready is not None:
            ready()
        m = _collect(target, counted)
        if cfg.counters is None:
            return m
        # Counted samples come after the timed ones, so reading the counters never sits
        # between two clock reads; they run the same loops per sample.
        loops = target.loops
        empty = _core.Sampler.empty(target.clock)
        counts = count_samples(lambda: target.sampler.run(loops, 1), cfg.counters, loops=loops,
                               samples=cfg.repeat, missing=cfg.counters_missing,
                               empty_sample=lambda: empty.run(1, 1),
                               missing_option="counters_missing='skip'")
        return replace(m, counters=counts)


ROUND_ORDER = ("alternating (A B, B A, ...)", "a fresh random order each round")


def round_order(names: Sequence[str], round_index: int, rng: np.random.Generator) -> list[str]:
    """The order of round ``round_index`` of ``names``.

    Two names alternate (A B, then B A), so each goes first in half the rounds and follows
    the other, or itself across a round's edge, equally often. Three or more are drawn in a
    fresh random order every round: a fixed order rotated by one would give each one almost
    always the same predecessor, and what that predecessor leaves in the caches (or takes
    out of them) would be counted as the variant's own speed.
    """
    if len(names) <= 2:
        k = round_index % len(names)
        return [*names[k:], *names[:k]]
    return [names[i] for i in rng.permutation(len(names))]


def order_design(count: int) -> str:
    """How :func:`round_order` orders ``count`` names, in words (stated in results)."""
    return ROUND_ORDER[0] if count <= 2 else ROUND_ORDER[1]


def run_rounds(targets: Mapping[str, Target], cfg: RunConfig, seed: int = 0
               ) -> tuple[dict[str, list[float]], dict[str, Measurement], str]:
    """Several targets measured side by side, with the GC paused as configured: each prepared
    (loops, warmup, floors), then rounds of one sample of every target in the order of
    :func:`round_order` (seeded by ``seed``), so that drift of the machine hits all alike, no
    target has a fixed predecessor, and sample i of every target forms a pair.
    ``cfg.repeat`` rounds, then more until ``cfg.duration_s`` has passed since the first
    round (when set); fewer when ``cfg.max_time_s`` is spent (at least one).

    Returns
    -------
    (samples, measurements, stop_reason)
        The per-call ns of each round by name, each target's Measurement, and "rounds",
        "duration_s" (rounds went on past ``cfg.repeat`` until then) or "max_time_s".
    """
    names = list(targets)
    samples: dict[str, list[float]] = {n: [] for n in names}
    spent = dict.fromkeys(names, 0.0)
    stop = "rounds"
    rng = np.random.default_rng(seed)
    with gc_paused(cfg.disable_gc):
        for t in targets.values():
            t.prepare(cfg)
        start = time.monotonic()
        r = 0
        while True:
            for name in round_order(names, r, rng):
                got, _, elapsed = targets[name].sample(1)
                samples[name] += got
                spent[name] += elapsed
            r += 1
            passed = time.monotonic() - start
            more = r < cfg.repeat or (cfg.duration_s is not None and passed < cfg.duration_s)
            if not more:
                break
            if cfg.max_time_s and passed >= cfg.max_time_s:
                stop = "max_time_s"
                break
            if r >= cfg.repeat:
                stop = "duration_s"
    reason = {"max_time_s": "max_time_s", "duration_s": "duration_s"}.get(stop, "repeat")
    measurements = {
        n: targets[n].measurement(samples[n], spent[n], reason, cfg)
        for n in names
    }
    return samples, measurements, stop
