"""Replicates: results of identical code saved on this machine, and the variation they
teach. A saved Measurement joins the series of its identity (``Identity.key``) and number
of processes in the machine's replicate store (:mod:`fastbench.machine.runlog`); how much
the figures of a series differ is how much whole results of that code vary here. Variation
is learned within series only, never across a change of the code. Nothing here measures or
judges: comparisons and the measuring loop ask.
"""

from __future__ import annotations

from typing import Iterable

from .identity import Identity
from .machine.runlog import replicate_store, series_key
from .measurement import Measurement
from .stats.runs import ReplicateSpread, replicate_spread

__all__ = ["identity_variation", "record_replicates", "replicate_variation", "series_of"]


def series_of(identity: Identity | None, processes: int) -> str:
    """The series a result of ``identity`` measured in ``processes`` processes belongs to;
    "" when its identity is not fully known (it is then no replicate)."""
    key = "" if identity is None else identity.key
    return series_key(key, processes) if key else ""


def record_replicates(measurements: Iterable[Measurement]) -> int:
    """Add each measurement's figure (its median: a run-level figure for several
    processes) to its series; returns how many were new. Measurements of unknown identity
    are left out."""
    figures = []
    for m in measurements:
        series = series_of(m.identity, m.runs)
        if series:
            figures.append((series, m.median_ns))
    return replicate_store().add(figures) if figures else 0


def _figures(m: Measurement) -> tuple[float, ...]:
    """The figures of ``m``'s series here, with ``m``'s own among them (added when the store
    lacks it: a result loaded from elsewhere, or saved with the log off)."""
    series = series_of(m.identity, m.runs)
    if not series:
        return ()
    figures = replicate_store().figures(series)
    return figures if m.median_ns in figures else (*figures, m.median_ns)


def replicate_variation(*measurements: Measurement) -> ReplicateSpread | None:
    """How much whole results vary here, learned from the replicates of each of
    ``measurements`` (pooled within each one's series, each series once); None when no
    series holds two figures."""
    seen: dict[str, tuple[float, ...]] = {}
    for m in measurements:
        series = series_of(m.identity, m.runs)
        if series and series not in seen:
            seen[series] = _figures(m)
    return replicate_spread(*seen.values()) if seen else None


def identity_variation(identity: Identity | None, processes: int) -> ReplicateSpread | None:
    """How much results of ``identity`` measured in ``processes`` processes vary here, from
    its replicates saved so far; None with fewer than two."""
    series = series_of(identity, processes)
    return replicate_spread(replicate_store().figures(series)) if series else None
