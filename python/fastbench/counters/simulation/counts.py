"""The result of a simulation: valgrind's events, perf-style counts and miss rates derived
from them, the geometry simulated and the notes; its dict round trip and its text. Always
labelled simulated, never hardware counts. Runs nothing.
"""

from __future__ import annotations

import dataclasses
import math
import shlex
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..._checks import check_in_range
from ...report.lines import brief_repr
from .geometry import CacheGeometry

__all__ = ["FRIENDLY_EVENTS", "TOOLS", "SimulatedCounts"]

TOOLS = ("cachegrind", "callgrind")

# Friendly name -> the cachegrind events it sums. Names follow perf's generic events where
# one matches: cache-references/cache-misses are last-level accesses/misses of every kind,
# instruction fetches included (ILmr), as perf's are on x86; LLC-misses counts data only.
FRIENDLY_EVENTS: dict[str, tuple[str, ...]] = {
    "instructions": ("Ir",),
    "L1-icache-load-misses": ("I1mr",),
    "L1-dcache-loads": ("Dr",),
    "L1-dcache-load-misses": ("D1mr",),
    "L1-dcache-stores": ("Dw",),
    "L1-dcache-store-misses": ("D1mw",),
    "cache-references": ("I1mr", "D1mr", "D1mw"),
    "cache-misses": ("ILmr", "DLmr", "DLmw"),
    "LLC-load-misses": ("DLmr",),
    "LLC-store-misses": ("DLmw",),
    "LLC-misses": ("DLmr", "DLmw"),
    "branches": ("Bc", "Bi"),
    "branch-misses": ("Bcm", "Bim"),
}


@dataclass(frozen=True)
class SimulatedCounts:
    """Event counts of a workload run under valgrind: simulated, not hardware counts.

    Attributes
    ----------
    tool : str
        "cachegrind" (instructions, cache and branch simulation) or "callgrind"
        (instructions only).
    target : str
        The command line, or ``module:qualname`` of the callable.
    events : dict of str to float
        valgrind's events (Ir, I1mr, ILmr, Dr, D1mr, DLmr, Dw, D1mw, DLmw, Bc, Bcm, Bi,
        Bim for cachegrind; Ir for callgrind): per call for a callable, totals of the
        whole process for a command.
    per_call : bool
        True for a callable: ``events`` = (totals with ``calls`` calls - totals with
        none) / ``calls``.
    calls : int
        Calls in the measured run (1 for a command).
    totals : dict of str to int
        The measured run's totals, start-up included.
    baseline : dict of str to int
        The totals of the run that made no call (empty for a command).
    geometry : dict of str to CacheGeometry
        The caches cachegrind simulated, as it reported them ("I1", "D1", "LL"; empty
        for callgrind).
    notes : tuple of str
        Assumptions and changes: cache geometry adjusted for cachegrind, levels not
        simulated, differences below the baseline.
    valgrind_version : str
        E.g. "3.19.0".
    command : tuple of str
        The valgrind command line of the measured run.
    """

    tool: str
    target: str
    events: dict[str, float]
    per_call: bool
    calls: int
    totals: dict[str, int]
    baseline: dict[str, int] = field(default_factory=dict)
    geometry: dict[str, CacheGeometry] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    valgrind_version: str = "unknown"
    command: tuple[str, ...] = ()

    @property
    def simulated(self) -> bool:
        """Always True: these numbers come from a simulator, not from the PMU."""
        return True

    @property
    def label(self) -> str:
        """What every report of these numbers must say."""
        return f"simulated by valgrind {self.tool} (not hardware counts)"

    @property
    def counts(self) -> dict[str, float]:
        """Counts under perf's event names (see ``FRIENDLY_EVENTS``), where their events exist.

        instructions = Ir; L1-dcache-load-misses = D1mr; L1-dcache-store-misses = D1mw;
        LLC-misses = DLmr + DLmw (data only); cache-misses = ILmr + DLmr + DLmw (adds
        instruction fetches that miss the LL); cache-references = I1mr + D1mr + D1mw (what
        reaches the LL); branches = Bc + Bi; branch-misses = Bcm + Bim.
        """
        out: dict[str, float] = {}
        for name, parts in FRIENDLY_EVENTS.items():
            if all(p in self.events for p in parts):
                out[name] = math.fsum(self.events[p] for p in parts)
        return out

    def __getitem__(self, name: str) -> float:
        """A friendly count ("instructions") or a raw event ("D1mr")."""
        counts = self.counts
        if name in counts:
            return counts[name]
        if name in self.events:
            return self.events[name]
        known = ", ".join([*counts, *self.events])
        raise KeyError(f"{name!r} was not simulated; known: {known}")

    @property
    def derived(self) -> dict[str, float]:
        """Miss rates in percent, as cachegrind defines them, where their inputs are > 0.

        ``l1i_miss_pct`` = I1mr / Ir; ``l1d_miss_pct`` = (D1mr + D1mw) / (Dr + Dw);
        ``ll_miss_pct`` = (ILmr + DLmr + DLmw) / (Ir + Dr + Dw); ``branch_miss_pct`` =
        (Bcm + Bim) / (Bc + Bi).
        """
        e = self.events
        out: dict[str, float] = {}

        def pct(key: str, num: tuple[str, ...], den: tuple[str, ...]) -> None:
            if all(k in e for k in num + den):
                d = math.fsum(e[k] for k in den)
                n = math.fsum(e[k] for k in num)
                # Per-call differences from the baseline can fall outside 0..d (the notes
                # say when): that is no rate, and none is given.
                if d > 0 and 0 <= n <= d:
                    out[key] = 100.0 * n / d

        pct("l1i_miss_pct", ("I1mr",), ("Ir",))
        pct("l1d_miss_pct", ("D1mr", "D1mw"), ("Dr", "Dw"))
        pct("ll_miss_pct", ("ILmr", "DLmr", "DLmw"), ("Ir", "Dr", "Dw"))
        pct("branch_miss_pct", ("Bcm", "Bim"), ("Bc", "Bi"))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; :meth:`from_dict` restores it."""
        return {
            "label": self.label,
            "simulated": True,
            "tool": self.tool,
            "target": self.target,
            "events": {k: float(v) for k, v in self.events.items()},
            "per_call": self.per_call,
            "calls": self.calls,
            "totals": dict(self.totals),
            "baseline": dict(self.baseline),
            "geometry": {k: dataclasses.asdict(g) for k, g in self.geometry.items()},
            "notes": list(self.notes),
            "valgrind_version": self.valgrind_version,
            "command": list(self.command),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimulatedCounts:
        """Rebuild from :meth:`to_dict` output (``label`` and ``simulated`` are derived).

        Raises
        ------
        ValueError
            If a key is missing or a part is malformed.
        """
        try:
            tool = str(data["tool"])
            if tool not in TOOLS:
                raise ValueError(f"unknown tool {tool!r}; expected one of {TOOLS}")
            return cls(
                tool=tool,
                target=str(data["target"]),
                events={str(k): check_in_range(f"SimulatedCounts event {k}", v, -_MAX_EVENTS, _MAX_EVENTS)
                        for k, v in data["events"].items()},
                per_call=bool(data["per_call"]),
                calls=int(check_in_range("SimulatedCounts calls", data["calls"], 1, 2**53,
                                         integer=True)),
                totals={str(k): int(check_in_range(f"SimulatedCounts total {k}", v, 0, 2**63, integer=True))
                        for k, v in data["totals"].items()},
                baseline={str(k): int(check_in_range(f"SimulatedCounts baseline {k}", v, 0, 2**63,
                                                   integer=True))
                          for k, v in data.get("baseline", {}).items()},
                geometry={str(k): CacheGeometry(int(g["size_bytes"]), int(g["assoc"]),
                                                int(g["line_bytes"]))
                          for k, g in data.get("geometry", {}).items()},
                notes=tuple(str(n) for n in data.get("notes", ())),
                valgrind_version=str(data.get("valgrind_version", "unknown")),
                command=tuple(str(c) for c in data.get("command", ())),
            )
        except KeyError as exc:
            raise ValueError(f"SimulatedCounts data lacks {exc}") from None
        except AttributeError as exc:  # a list or number where an object belongs
            raise ValueError(f"SimulatedCounts data is malformed: {exc}") from None

    def format(self) -> str:
        """A multi-line report that starts with :attr:`label`."""
        lines = [self.label]
        if self.per_call:
            what = "call" if self.calls == 1 else "calls"
            lines.append(f"{self.target}: per call, (run with {self.calls} {what} - run with "
                         "none) / calls; start-up and imports cancel")
        else:
            lines.append(f"{self.target}: whole process")
        counts = self.counts or dict(self.events)
        width = max(len(k) for k in counts) if counts else 0
        for name, value in counts.items():
            text = f"{value:,.1f}" if self.per_call else f"{value:,.0f}"
            lines.append(f"  {name:<{width}}  {text:>16}")
        labels = {"l1i_miss_pct": "L1i miss", "l1d_miss_pct": "L1d miss",
                  "ll_miss_pct": "LL miss", "branch_miss_pct": "branch miss"}
        rates = [f"{labels[k]} {v:.2f}%" for k, v in self.derived.items()]
        if rates:
            lines.append("  " + ", ".join(rates))
        if self.geometry:
            lines.append("caches simulated: " + "; ".join(
                f"{name} {g}" for name, g in self.geometry.items()))
        lines.append(f"valgrind {self.valgrind_version}: {_short_command(self.command)}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.target!r}: {len(self.counts)} counts, {self.label}")

    def __str__(self) -> str:
        return self.format()


def _short_command(argv: Sequence[str]) -> str:
    """The command for display: long arguments (the driver's source) elided."""
    return " ".join(shlex.quote(a) if len(a) <= 80 else "<...>" for a in argv)


# The largest event count a file may hold (per call or in all): about a day of a core's
# instructions is 1e14; beyond 1e18 a file holds no simulation.
_MAX_EVENTS = 1e18

