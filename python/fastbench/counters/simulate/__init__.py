"""Simulated counters: run a workload under valgrind (cachegrind or callgrind) and parse its totals.

The fallback where no hardware PMU is exposed: exact instruction counts, cache misses and
branch mispredictions simulated with the cache geometry read from sysfs. Owns the valgrind
command line, the geometry cachegrind accepts, the callable driver and the output parser;
it never reads hardware counters and never prints.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import os
import pickle
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import IO, Any, Callable, Mapping, Sequence, Union

from ... import machine
from ...errors import FastbenchError

# fastbench.results imports timing, which imports counters: a module that re-exports
# simulate from counters.py must import it below counters' own definitions (or lazily).
from ...results import register_kind

__all__ = [
    "CacheGeometry",
    "SimulatedCounts",
    "SimulationTimeout",
    "SimulationUnavailable",
    "adjust_geometry",
    "detect_geometry",
    "geometry_problem",
    "parse_output",
    "simulate",
]

TOOLS = ("cachegrind", "callgrind")
CACHE_NAMES = ("I1", "D1", "LL")

# cachegrind's check_cache (cachegrind/cg_arch.c) rejects a line under 16 B, and cg_main.c
# then exits with "the minimum line size (16) must be equal to or larger than the maximum
# register size (32)" on any x86-64 with AVX (seen with valgrind 3.19), so 32 B is the floor.
_MIN_LINE_BYTES = 32
# Assumed when sysfs does not say (no ways_of_associativity, or 0 meaning "unknown").
_DEFAULT_ASSOC = 8
_DEFAULT_LINE_BYTES = 64
# How far the associativity may move to keep the size when the set count is not a power of
# two: capacity drives misses far more than a few ways more or less do.
_ASSOC_SEARCH_FACTOR = 2
_CACHE_DIR = "sys/devices/system/cpu/cpu0/cache"
# Set in the driver's environment: a script without an `if __name__ == "__main__":` guard
# would otherwise call simulate() again inside valgrind, and again inside that.
_CHILD_ENV = "FASTBENCH_VALGRIND_CHILD"
_STDERR_TAIL_LINES = 20
_STDERR_TAIL_CHARS = 3000
_VERSION_TIMEOUT_S = 30.0
# Below this fraction of the start-up's instructions the calls may drown in its variation.
_SMALL_DIFFERENCE = 0.01
# Defaults for a callable's runs (the caller's environment wins): see simulate().
_SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# Runs inside valgrind, twice, with the same text; only the spec file (same path length)
# differs, and within it only the number of calls, so the two processes do the same work
# up to the calls. sys.path comes first so that the target's module imports as it does here.
_DRIVER = """\
import pickle, sys
with open(sys.argv[1], "rb") as f:
    spec = pickle.load(f)
sys.path[:] = spec["sys_path"] + [p for p in sys.path if p not in spec["sys_path"]]
if spec["main_path"] is None:
    import importlib
    obj = importlib.import_module(spec["module"])
else:
    import runpy, types
    obj = types.ModuleType("__mp_main__")
    obj.__dict__.update(runpy.run_path(spec["main_path"], run_name="__mp_main__"))
    sys.modules["__main__"] = sys.modules["__mp_main__"] = obj
for name in spec["qualname"].split("."):
    obj = getattr(obj, name)
args = pickle.loads(spec["args"])
for _ in range(spec["calls"]):
    obj(*args)
"""

_TargetArg = Union[str, Sequence[str], Callable[..., object]]


class SimulationUnavailable(FastbenchError):
    """valgrind cannot be run here (not installed), so nothing can be simulated."""


class SimulationTimeout(FastbenchError, TimeoutError):
    """A run under valgrind did not finish within ``timeout_s``; it was killed."""


# --------------------------------------------------------------------------------------
# Cache geometry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheGeometry:
    """One simulated cache as cachegrind takes it (``--I1/--D1/--LL=size,assoc,line``).

    Attributes
    ----------
    size_bytes : int
        Capacity in bytes.
    assoc : int
        Ways per set (1 is direct-mapped).
    line_bytes : int
        Line size in bytes.
    """

    size_bytes: int
    assoc: int
    line_bytes: int

    @property
    def sets(self) -> float:
        """Number of sets, ``size / (assoc * line)`` (not whole for an invalid geometry)."""
        return self.size_bytes / (self.assoc * self.line_bytes)

    @property
    def option(self) -> str:
        """The value of cachegrind's ``--I1``/``--D1``/``--LL`` option."""
        return f"{self.size_bytes},{self.assoc},{self.line_bytes}"

    def __str__(self) -> str:
        ways = "direct-mapped" if self.assoc == 1 else f"{self.assoc}-way"
        return f"{machine.format_bytes(self.size_bytes)} {ways} {self.line_bytes} B lines"


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n > 0 else 0


def _sets_text(g: CacheGeometry) -> str:
    sets = g.sets
    return f"{int(sets)}" if sets.is_integer() else f"{sets:.2f}"


def geometry_problem(g: CacheGeometry) -> str | None:
    """Why cachegrind would refuse ``g``, or None if it accepts it.

    The rules of cachegrind's ``check_cache`` (cachegrind/cg_arch.c): a whole power-of-two
    number of sets, a power-of-two line of at least 32 B (see ``_MIN_LINE_BYTES``), a size
    above the line size, and no more ways than lines.
    """
    if g.size_bytes <= 0 or g.assoc <= 0 or g.line_bytes <= 0:
        return "size, associativity and line size must all be > 0"
    if not _is_pow2(g.line_bytes):
        return f"the line size {g.line_bytes} B is not a power of two"
    if g.line_bytes < _MIN_LINE_BYTES:
        return (f"the line size {g.line_bytes} B is below {_MIN_LINE_BYTES} B (valgrind needs "
                "a line at least as wide as the widest vector register)")
    if g.size_bytes <= g.line_bytes:
        return f"the size {g.size_bytes} B is not larger than the line size"
    if g.assoc > g.size_bytes // g.line_bytes:
        return f"{g.assoc} ways exceed the {g.size_bytes // g.line_bytes} lines"
    sets = g.sets
    if not sets.is_integer() or not _is_pow2(int(sets)):
        return f"{_sets_text(g)} sets is not a power of two"
    return None


def adjust_geometry(name: str, size_bytes: int, assoc: int | None,
                    line_bytes: int | None) -> tuple[CacheGeometry, list[str]]:
    """The geometry closest to a real cache that cachegrind accepts, and what was changed.

    cachegrind simulates only caches whose number of sets, ``size / (assoc * line)``, is a
    power of two. When it is not, this keeps the line size and searches associativities
    from half to twice the real one for the largest capacity not above the real one with
    a power-of-two number of sets, preferring the associativity nearest the real one
    (a 36 MiB 16-way cache becomes 36 MiB 18-way; a 38.5 MiB 11-way one, 38 MiB 19-way).

    Parameters
    ----------
    name : str
        "I1", "D1" or "LL", used in the notes.
    size_bytes : int
        Capacity in bytes.
    assoc : int or None
        Ways per set; None or <= 0 when unknown, and then 8 is assumed.
    line_bytes : int or None
        Line size in bytes; None or <= 0 when unknown, and then 64 is assumed. Rounded
        down to a power of two, and up to 32 B.

    Returns
    -------
    tuple of (CacheGeometry, list of str)
        The geometry to simulate and one note per assumption or change, saying exactly
        what was changed; no notes when the real geometry is used as it is.

    Raises
    ------
    ValueError
        If ``size_bytes`` holds fewer than two lines.
    """
    notes: list[str] = []
    line = line_bytes if line_bytes is not None and line_bytes > 0 else 0
    if line == 0:
        line = _DEFAULT_LINE_BYTES
        notes.append(f"{name}: line size unknown; assumed {line} B")
    elif not _is_pow2(line):
        notes.append(f"{name}: line size {line} B is not a power of two (cachegrind needs one); "
                     f"simulated with {_pow2_floor(line)} B lines")
        line = _pow2_floor(line)
    if line < _MIN_LINE_BYTES:
        notes.append(f"{name}: line size {line} B is below valgrind's minimum of "
                     f"{_MIN_LINE_BYTES} B; simulated with {_MIN_LINE_BYTES} B lines")
        line = _MIN_LINE_BYTES
    ways = assoc if assoc is not None and assoc > 0 else 0
    if ways == 0:
        ways = _DEFAULT_ASSOC
        notes.append(f"{name}: associativity unknown (no ways_of_associativity in sysfs); "
                     f"assumed {ways}-way")
    lines = size_bytes // line
    if lines < 2:
        raise ValueError(f"[adjust_geometry] {name}: {size_bytes} B holds fewer than two "
                         f"{line} B lines; expected a real cache size")
    if ways > lines:
        notes.append(f"{name}: {ways} ways exceed the {lines} lines; simulated fully "
                     f"associative ({lines}-way)")
        ways = lines
    wanted = CacheGeometry(size_bytes, ways, line)
    if geometry_problem(wanted) is None:
        return wanted, notes

    def key(a: int) -> tuple[int, int, int]:  # the largest size, then the nearest ways
        return (-_pow2_floor(lines // a) * a * line, abs(a - ways), a)

    lowest = max(1, ways // _ASSOC_SEARCH_FACTOR)
    best = min(range(lowest, min(ways * _ASSOC_SEARCH_FACTOR, lines) + 1), key=key)
    chosen = CacheGeometry(-key(best)[0], best, line)
    changed = []
    if chosen.size_bytes != size_bytes:
        changed.append(f"size {machine.format_bytes(size_bytes)} -> {machine.format_bytes(chosen.size_bytes)}")
    if chosen.assoc != ways:
        changed.append(f"associativity {ways}-way -> {chosen.assoc}-way")
    notes.append(f"{name}: {machine.format_bytes(size_bytes)} {ways}-way with {line} B lines has "
                 f"{_sets_text(wanted)} sets, not a power of two as cachegrind requires; "
                 f"simulated as {chosen} ({_sets_text(chosen)} sets): {', '.join(changed)}")
    return chosen, notes


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _ways(root: Path) -> dict[tuple[int, str], int]:
    """(level, type) -> ways_of_associativity of CPU 0's caches, where sysfs gives it.

    machine.CacheLevel has no associativity, and cachegrind needs it.
    """
    out: dict[tuple[int, str], int] = {}
    try:
        index_dirs = sorted((root / _CACHE_DIR).glob("index*"))
    except OSError:
        return out
    for d in index_dirs:
        level, kind = _read_int(d / "level"), _read_text(d / "type")
        ways = _read_int(d / "ways_of_associativity")
        if level is not None and kind is not None and ways is not None and ways > 0:
            out[(level, kind)] = ways
    return out


def detect_geometry(root: Path = Path("/")) -> tuple[dict[str, CacheGeometry], list[str]]:
    """The I1, D1 and LL geometry to simulate, from what sysfs says about CPU 0's caches.

    Sizes and line sizes come from :func:`fastbench.machine.caches`, associativity from
    ``index*/ways_of_associativity`` (8 assumed where missing). LL is the highest level
    (L3 where there is one); cachegrind models only two levels, so the levels between L1
    and LL are not simulated, and a note says so. Each geometry goes through
    :func:`adjust_geometry`.

    Parameters
    ----------
    root : Path, optional
        File-system root to read /sys from (tests pass a fake tree).

    Returns
    -------
    tuple of (dict of str to CacheGeometry, list of str)
        The caches found, keyed "I1", "D1", "LL" (any of them missing when sysfs does not
        describe it; valgrind then uses its own detection for it), and the notes.
    """
    levels = machine.caches(root)
    ways = _ways(root)
    notes: list[str] = []
    picked: dict[str, machine.CacheLevel] = {}
    for c in levels:
        if c.level == 1 and c.kind in ("Data", "Unified"):
            picked.setdefault("D1", c)
        if c.level == 1 and c.kind in ("Instruction", "Unified"):
            picked.setdefault("I1", c)
    beyond = [c for c in levels if c.level > 1 and c.kind in ("Unified", "Data")]
    if beyond:
        last = max(beyond, key=lambda c: (c.level, c.kind == "Unified"))
        picked["LL"] = last
        # Notes about a cache start with its name, so simulate() can drop those of a cache
        # the caller gave explicitly.
        skipped = sorted({c.level for c in beyond if c.level != last.level})
        if skipped:
            names = ", ".join(f"L{lvl}" for lvl in skipped)
            notes.append(f"LL = L{last.level}; {names} not simulated (cachegrind models I1, "
                         "D1 and one last level)")
        if last.shared_by_cpus is not None and last.shared_by_cpus > 1:
            notes.append(f"LL = L{last.level}, shared by {last.shared_by_cpus} CPUs; the "
                         "simulation gives this process all of it")
    for name in CACHE_NAMES:
        if name not in picked:
            notes.append(f"{name}: not described in sysfs; valgrind's own detection is used")
    geometry: dict[str, CacheGeometry] = {}
    for name in CACHE_NAMES:
        cache = picked.get(name)
        if cache is None:
            continue
        g, cache_notes = adjust_geometry(name, cache.size_bytes,
                                         ways.get((cache.level, cache.kind)), cache.line_bytes)
        geometry[name] = g
        notes.extend(cache_notes)
    return geometry, notes


def _explicit_geometry(caches: Mapping[str, Any]) -> dict[str, CacheGeometry]:
    if not isinstance(caches, Mapping):
        raise TypeError("caches must be a mapping like {'D1': (32768, 8, 64)}, "
                        f"got {type(caches).__name__}")
    out: dict[str, CacheGeometry] = {}
    for name, value in caches.items():
        if name not in CACHE_NAMES:
            raise ValueError(f"caches: unknown cache {name!r}; cachegrind simulates only "
                             f"{', '.join(CACHE_NAMES)}")
        if (not isinstance(value, (tuple, list)) or len(value) != 3
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            raise TypeError(f"caches[{name!r}] must be a (size_bytes, assoc, line_bytes) tuple "
                            f"of ints, got {value!r}")
        g = CacheGeometry(*value)
        problem = geometry_problem(g)
        if problem is not None:
            hint = ""
            if g.size_bytes > 0 and g.line_bytes > 0 and g.size_bytes // g.line_bytes >= 2:
                fixed, _ = adjust_geometry(name, g.size_bytes, g.assoc, g.line_bytes)
                hint = (f"; the nearest geometry it accepts is "
                        f"({fixed.size_bytes}, {fixed.assoc}, {fixed.line_bytes})")
            raise ValueError(f"caches[{name!r}] = {tuple(value)} cannot be simulated by "
                             f"cachegrind: {problem}{hint}")
        out[name] = g
    return out


# --------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------

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
                if d > 0:
                    out[key] = 100.0 * math.fsum(e[k] for k in num) / d

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
                events={str(k): float(v) for k, v in data["events"].items()},
                per_call=bool(data["per_call"]),
                calls=int(data["calls"]),
                totals={str(k): int(v) for k, v in data["totals"].items()},
                baseline={str(k): int(v) for k, v in data.get("baseline", {}).items()},
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

    def __str__(self) -> str:
        return self.format()


def _short_command(argv: Sequence[str]) -> str:
    """The command for display: long arguments (the driver's source) elided."""
    return " ".join(shlex.quote(a) if len(a) <= 80 else "<...>" for a in argv)


register_kind("simulated_counts", SimulatedCounts, SimulatedCounts.to_dict,
              SimulatedCounts.from_dict)


# --------------------------------------------------------------------------------------
# valgrind's output
# --------------------------------------------------------------------------------------

_DESC = re.compile(r"^desc:\s+(I1|D1|LL) cache:\s+(\d+) B, (\d+) B, "
                   r"(?:(\d+)-way associative|(direct-mapped))\s*$")


def parse_output(text: str) -> tuple[dict[str, int], dict[str, CacheGeometry]]:
    """The totals and the simulated caches from a cachegrind or callgrind output file.

    Totals are the ``summary:`` line (``totals:`` where there is none), one number per
    name on the ``events:`` line; trailing zeros may be left out, as the format allows.
    Caches come from the ``desc: I1 cache: 32768 B, 64 B, 8-way associative`` lines.

    Raises
    ------
    ValueError
        If there is no ``events:`` line, or no ``summary:``/``totals:`` line.
    """
    names: list[str] | None = None
    summary: list[int] | None = None
    totals: list[int] | None = None
    geometry: dict[str, CacheGeometry] = {}
    for line in text.splitlines():
        if line.startswith("events:") and names is None:
            names = line.split()[1:]
        elif line.startswith("summary:"):
            summary = [int(x) for x in line.split()[1:]]
        elif line.startswith("totals:"):
            totals = [int(x) for x in line.split()[1:]]
        elif line.startswith("desc:"):
            m = _DESC.match(line)
            if m:
                assoc = 1 if m.group(5) else int(m.group(4))
                geometry[m.group(1)] = CacheGeometry(int(m.group(2)), assoc, int(m.group(3)))
    numbers = summary if summary is not None else totals
    if names is None or numbers is None:
        raise ValueError("no 'events:' and 'summary:' lines: not a complete valgrind output file")
    if len(numbers) > len(names):
        raise ValueError(f"{len(numbers)} totals for {len(names)} events")
    numbers = numbers + [0] * (len(names) - len(numbers))
    return dict(zip(names, numbers)), geometry


# --------------------------------------------------------------------------------------
# Running valgrind
# --------------------------------------------------------------------------------------


def _valgrind_path() -> str:
    path = shutil.which("valgrind")
    if path is None:
        raise SimulationUnavailable("valgrind is not installed; install it (e.g. apt install "
                                    "valgrind) to use simulated counters")
    return path


@lru_cache(maxsize=None)
def _valgrind_version(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True,
                              timeout=_VERSION_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    m = re.search(r"valgrind-(\S+)", done.stdout)
    return m.group(1) if m else (done.stdout.strip() or "unknown")


@dataclass
class _Run:
    """One valgrind process and the files it writes."""

    what: str
    argv: list[str]
    out_path: Path
    log_path: Path
    stderr_path: Path
    stderr_file: IO[bytes]
    proc: subprocess.Popen[bytes]


def _start(what: str, argv: list[str], out_path: Path, log_path: Path, stderr_path: Path,
           env: Mapping[str, str] | None) -> _Run:
    stderr_file = open(stderr_path, "wb")  # noqa: SIM115 - closed by _finish / _kill
    try:
        # A session of its own, so a timeout can kill whatever the workload started too.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=stderr_file, env=None if env is None else dict(env),
                                start_new_session=True)
    except BaseException:
        stderr_file.close()
        raise
    return _Run(what, argv, out_path, log_path, stderr_path, stderr_file, proc)


def _kill(run: _Run) -> None:
    if run.proc.poll() is None:
        try:
            os.killpg(run.proc.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
        run.proc.wait()
    run.stderr_file.close()


def _tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [ln for ln in text.rstrip().splitlines() if ln.strip()]
    tail = "\n".join(lines[-_STDERR_TAIL_LINES:])
    return tail[-_STDERR_TAIL_CHARS:]


# The banner and the end-of-run summary of valgrind's log, which say nothing about a failure.
_LOG_NOISE = re.compile(
    r"(Cachegrind|Callgrind), a |Copyright|Using Valgrind|Command:|Parent PID:|For interactive"
    r"|Events\s*:|Collected\s*:|(I1?|D1?|LL[id]?)\s+(refs|misses|miss rate)|Branches:"
    r"|Mispred|warning: L3 cache found"
    # Harmless: glibc's malloc falls back to mmap (numpy and scipy imports trigger it).
    r"|brk segment overflow|\(see section Limitations|NOTE: further instances"
)


def _valgrind_messages(path: Path) -> str:
    """valgrind's own complaints from its log: the lines after the banner, summary dropped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = [re.sub(r"^[=-]{2}\d+[=-]{2} ?", "", ln) for ln in text.splitlines()]
    kept = [ln for ln in kept if ln.strip() and not _LOG_NOISE.match(ln.strip())]
    return "\n".join(kept[-_STDERR_TAIL_LINES:])[-_STDERR_TAIL_CHARS:]


def _finish(run: _Run, deadline: float, timeout_s: float) -> tuple[dict[str, int],
                                                                     dict[str, CacheGeometry]]:
    try:
        run.proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        _kill(run)
        raise SimulationTimeout(
            f"{run.what} did not finish under valgrind within timeout_s={timeout_s:g} s and "
            "was killed; valgrind runs code 20-100x slower than native, so pass a larger "
            "timeout_s or a smaller workload"
        ) from None
    run.stderr_file.close()
    code = run.proc.returncode
    if code != 0:
        if code < 0:
            try:
                status = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                status = f"was killed by signal {-code}"
        else:
            status = f"exited with status {code}"
        parts = [f"{run.what} {status} under valgrind"]
        stderr = _tail(run.stderr_path)
        if stderr:
            parts.append(f"its stderr ended with:\n{stderr}")
        messages = _valgrind_messages(run.log_path)
        if messages:
            parts.append(f"valgrind said:\n{messages}")
        raise FastbenchError("; ".join(parts))
    try:
        text = run.out_path.read_text(encoding="utf-8", errors="replace")
        return parse_output(text)
    except (OSError, ValueError) as exc:
        messages = _valgrind_messages(run.log_path) or _tail(run.stderr_path)
        raise FastbenchError(f"valgrind wrote no usable output for {run.what} ({exc})"
                             + (f"; it said:\n{messages}" if messages else "")) from None


def _tool_options(tool: str, out_path: Path, log_path: Path,
                  geometry: Mapping[str, CacheGeometry]) -> list[str]:
    if tool == "callgrind":
        # --collect-systime=no: time in system calls is not an instruction count.
        return ["--tool=callgrind", "--collect-systime=no", f"--callgrind-out-file={out_path}",
                f"--log-file={log_path}"]
    return (["--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
             f"--cachegrind-out-file={out_path}", f"--log-file={log_path}"]
            + [f"--{name}={geometry[name].option}" for name in CACHE_NAMES if name in geometry])


# --------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------


def _command(target: str | Sequence[Any]) -> list[str]:
    argv = shlex.split(target) if isinstance(target, str) else list(target)
    if not argv:
        raise ValueError("the command is empty")
    for item in argv:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"a command must be a list of str, got an item {item!r} of type "
                            f"{type(item).__name__}")
    return [os.fsdecode(a) for a in argv]


def _check_program(program: str) -> None:
    """FileNotFoundError now, rather than valgrind's exit status 127 later."""
    if os.sep in program:
        if not os.access(program, os.X_OK):
            raise FileNotFoundError(f"command {program!r} does not exist or is not executable")
    elif shutil.which(program) is None:
        raise FileNotFoundError(f"command {program!r} not found on PATH")


def _reject(fn: object, why: str) -> TypeError:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return TypeError(
        f"cannot simulate {name!r}: {why}. The callable runs in a fresh Python process under "
        "valgrind, which imports it by module and qualified name, so pass a module-level "
        "function (with picklable arguments), or a command such as "
        "[sys.executable, 'script.py']"
    )


def _callable_spec(fn: Callable[..., object]) -> tuple[str, str, str | None]:
    """(module, qualname, main script path or None) naming ``fn``, checked to resolve to it."""
    if isinstance(fn, partial):
        raise _reject(fn, "a functools.partial has no importable name; pass its arguments "
                          "to simulate() instead")
    if inspect.ismethod(fn) and not isinstance(fn.__self__, type):
        raise _reject(fn, "it is a method bound to an object the new process cannot rebuild; "
                          "simulate(Class.method, obj) passes a picklable obj as an argument")
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if inspect.isbuiltin(fn) and isinstance(getattr(fn, "__name__", None), str):
        # Extension functions (pybind11's among them) carry a binding-internal __qualname__;
        # a module-level one is found by its __name__.
        qualname = fn.__name__
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise _reject(fn, "it has no module and qualified name (a callable object?)")
    if "<lambda>" in qualname:
        raise _reject(fn, "a lambda has no name to import it by")
    if "<locals>" in qualname:
        raise _reject(fn, "it is defined inside a function (a closure or local function), so "
                          "it cannot be imported")
    main_path: str | None = None
    if module == "__main__":
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        if not main_file:
            raise _reject(fn, "it is defined in an interactive session, which has no file to "
                              "import it from")
        main_path = os.path.abspath(main_file)
    obj: Any = sys.modules.get(module)
    try:
        if obj is None:
            obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        obj = None
    if obj is not fn and obj != fn:
        raise _reject(fn, f"{module}.{qualname} does not name this object (was it replaced "
                          "or wrapped by a decorator without functools.wraps?)")
    return module, qualname, main_path


# --------------------------------------------------------------------------------------
# simulate
# --------------------------------------------------------------------------------------


def _check_args(tool: object, calls: object, timeout_s: object) -> float:
    if tool not in TOOLS:
        raise ValueError(f"tool must be one of {', '.join(repr(t) for t in TOOLS)}, got {tool!r}")
    if isinstance(calls, bool) or not isinstance(calls, int):
        raise TypeError(f"calls must be an int, got {type(calls).__name__}")
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        raise TypeError(f"timeout_s must be a number of seconds, got {type(timeout_s).__name__}")
    if not math.isfinite(timeout_s) or timeout_s <= 0:
        raise ValueError(f"timeout_s must be finite and > 0 seconds, got {timeout_s!r}")
    return float(timeout_s)


def simulate(
    target: _TargetArg,
    *args: Any,
    calls: int = 1,
    tool: str = "cachegrind",
    caches: Mapping[str, tuple[int, int, int]] | None = None,
    timeout_s: float = 600.0,
) -> SimulatedCounts:
    """Count instructions, and simulate cache misses and branch mispredictions, under valgrind.

    The answer where the hardware has no PMU to ask (most VMs and containers): instruction
    counts are exact and repeat from run to run; cache misses come from cachegrind's model
    of two cache levels (I1/D1 and LL) with the geometry fastbench reads from sysfs, and
    branch mispredictions from its model of a simple predictor. They are simulated, not
    measured: the result's ``label`` says so and every report shows it.

    A command runs once under valgrind; the result holds the totals of its process (its
    child processes are not followed). A callable runs in a fresh ``sys.executable`` under
    valgrind, twice: once importing it and calling it 0 times, once calling it ``calls``
    times; the result is the difference divided by ``calls``, per call, so interpreter
    start-up, imports and argument unpickling cancel. One-off costs of the first call
    (lazy imports, caches it fills, the adaptive interpreter specialising) are spread over
    the ``calls``; raise ``calls`` to dilute them. Both runs use ``PYTHONHASHSEED=0`` and
    ``PYTHONDONTWRITEBYTECODE=1`` so they do identical work up to the calls, and run in
    parallel. The start-up of a small module repeats to within a few dozen instructions,
    but one importing numpy and scipy can vary by up to about 1e6 of its 4.5e9, and takes
    tens of seconds under valgrind: there the calls must add far more than that, and a
    note says when they add under 1% of the start-up.
    Thread pools get one thread (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
    ``MKL_NUM_THREADS`` = 1 unless set): valgrind runs one thread at a time anyway, and
    idle workers that spin add instructions that vary from run to run (1e7 for numpy's
    OpenBLAS pool).

    Parameters
    ----------
    target : list of str, str or callable
        A command (a str is split with ``shlex.split``), or a callable importable by
        module and qualified name: a module-level function (or class, or classmethod),
        including one of the ``__main__`` script, which is then re-run under the name
        ``__mp_main__`` as multiprocessing does, so its top-level code needs an
        ``if __name__ == "__main__":`` guard. Both runs import the target's module and
        everything it imports: keep workloads in a small module of their own (a script
        that calls simulate() imports fastbench, and with it numpy and scipy).
    *args
        Arguments of the callable, pickled to the new process (so picklable).
    calls : int
        Calls of the callable in the measured run (>= 1); 1 for a command.
    tool : {"cachegrind", "callgrind"}
        cachegrind counts instructions and simulates caches and branches; callgrind
        counts instructions only (``--collect-systime=no``).
    caches : mapping, optional
        ``{"I1": (size_bytes, assoc, line_bytes), "D1": ..., "LL": ...}`` to simulate
        instead of what is detected (cachegrind only); caches left out are detected.
        Each must have a power-of-two number of sets and lines of at least 32 B.
    timeout_s : float
        Wall-time limit in seconds for the whole simulation (valgrind is 20-100x slower
        than native); the runs are killed when it passes.

    Returns
    -------
    SimulatedCounts
        Raw events, perf-style ``counts``, ``derived`` miss rates in percent, the
        geometry cachegrind simulated, notes on any geometry it changed, the valgrind
        version and command line.

    Raises
    ------
    SimulationUnavailable
        valgrind is not installed.
    SimulationTimeout
        A run did not finish within ``timeout_s``.
    FastbenchError
        The workload exited non-zero or was killed by a signal (the message ends with its
        stderr), or valgrind failed (with what it said); also when called inside a
        simulated process.
    TypeError
        A callable that cannot be imported by name (lambda, closure, bound method of an
        object, partial), unpicklable arguments, arguments given to a command, or a
        malformed ``caches``.
    ValueError
        An unknown tool, ``calls`` < 1, ``timeout_s`` <= 0, an empty command, a cache
        geometry cachegrind cannot simulate (the message suggests the nearest it can),
        or ``caches`` with callgrind.
    FileNotFoundError
        The command's program does not exist.
    """
    timeout = _check_args(tool, calls, timeout_s)
    if caches is not None and tool != "cachegrind":
        raise ValueError(f"caches applies to cachegrind only; {tool} simulates no caches")
    explicit = _explicit_geometry(caches) if caches is not None else {}
    is_command = isinstance(target, (str, list, tuple))
    if isinstance(target, (str, list, tuple)):
        if args:
            raise TypeError("args are passed to a callable; put a command's arguments in "
                            "the command list")
        if calls != 1:
            raise ValueError("calls applies to a callable; a command runs once")
        argv = _command(target)
    elif callable(target):
        module, qualname, main_path = _callable_spec(target)
        try:
            args_blob = pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - pickling raises many types
            raise TypeError(f"the arguments must be picklable to reach the simulated process: "
                            f"{type(exc).__name__}: {exc}") from None
    else:
        raise TypeError(f"target must be a command (list of str, or str) or a callable, got "
                        f"{type(target).__name__}")
    if os.environ.get(_CHILD_ENV):
        raise FastbenchError(
            "simulate() was called inside a simulated process: the script that defines the "
            "target runs again there, so guard its top-level code with "
            "`if __name__ == \"__main__\":`"
        )
    valgrind = _valgrind_path()
    if is_command:
        _check_program(argv[0])

    notes: list[str] = []
    geometry: dict[str, CacheGeometry] = {}
    if tool == "cachegrind":
        detected, detect_notes = detect_geometry()
        geometry = {**detected, **explicit}
        notes.extend(n for n in detect_notes if n[:2] not in explicit)
    version = _valgrind_version(valgrind)

    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="fastbench-valgrind-") as tmp_name:
        tmp = Path(tmp_name)
        runs: list[_Run] = []

        def launch(tag: str, what: str, workload: list[str],
                   env: Mapping[str, str] | None) -> _Run:
            out, log = tmp / f"out{tag}", tmp / f"log{tag}"
            argv_run = [valgrind, *_tool_options(tool, out, log, geometry), *workload]
            run = _start(what, argv_run, out, log, tmp / f"stderr{tag}", env)
            runs.append(run)
            return run

        try:
            if is_command:
                what = f"command {shlex.join(argv)!r}"
                totals, simulated_geometry = _finish(launch("1", what, argv, None),
                                                     deadline, timeout)
                events = {k: float(v) for k, v in totals.items()}
                return SimulatedCounts(
                    tool=tool, target=shlex.join(argv), events=events, per_call=False,
                    calls=1, totals=totals, geometry=simulated_geometry, notes=tuple(notes),
                    valgrind_version=version, command=tuple(runs[0].argv),
                )
            env = {**_SINGLE_THREADED, **os.environ, "PYTHONHASHSEED": "0",
                   "PYTHONDONTWRITEBYTECODE": "1", _CHILD_ENV: "1"}
            name = f"{module}:{qualname}"
            started = []
            for tag, n in (("0", 0), ("1", calls)):
                spec_path = tmp / f"spec{tag}"
                spec = {"sys_path": [p for p in sys.path if isinstance(p, str)],
                        "module": module, "qualname": qualname, "main_path": main_path,
                        "args": args_blob, "calls": n}
                spec_path.write_bytes(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))
                what = f"{name} ({'import only' if n == 0 else f'{n} call' + 's' * (n != 1)})"
                started.append(launch(tag, what, [sys.executable, "-c", _DRIVER,
                                                  str(spec_path)], env))
            baseline, _ = _finish(started[0], deadline, timeout)
            totals, simulated_geometry = _finish(started[1], deadline, timeout)
        finally:
            for run in runs:
                _kill(run)

    events = {k: (totals[k] - baseline.get(k, 0)) / calls for k in totals}
    negative = [f"{k} {v:+.1f}" for k, v in events.items() if v < 0]
    if negative:
        notes.append(f"per-call differences below zero ({', '.join(negative)}): the calls "
                     "change these events less than the two runs differ by chance; read "
                     "them as about 0, or raise calls")
    added, start_up = totals.get("Ir", 0) - baseline.get("Ir", 0), baseline.get("Ir", 0)
    if start_up > 0 and added < _SMALL_DIFFERENCE * start_up:
        notes.append(f"the calls add {added:,} instructions, "
                     f"{100 * added / start_up:.2g}% of the {start_up:,} of start-up and "
                     "imports; start-up that imports large packages can vary by up to about "
                     "0.02% between runs, so raise calls until the calls dominate")
    return SimulatedCounts(
        tool=tool, target=name, events=events, per_call=True, calls=calls, totals=totals,
        baseline=baseline, geometry=simulated_geometry, notes=tuple(notes),
        valgrind_version=version, command=tuple(started[1].argv),
    )
