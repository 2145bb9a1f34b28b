"""The cache geometry cachegrind simulates: what it accepts, the nearest accepted geometry
to a real cache, and the I1/D1/LL geometry of this machine from
:func:`fastbench.machine.caches` (the one reader of sysfs cacheinfo). Never runs valgrind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ...machine.facts import CacheLevel, caches as machine_caches
from ...machine.sysfs import ROOT
from ...units import format_bytes

__all__ = ["CACHE_NAMES", "CacheGeometry", "adjust_geometry", "detect_geometry",
           "explicit_geometry", "geometry_problem"]

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
        return f"{format_bytes(self.size_bytes, exact=True)} {ways} {self.line_bytes} B lines"


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
        changed.append(f"size {format_bytes(size_bytes, exact=True)} -> "
                       f"{format_bytes(chosen.size_bytes, exact=True)}")
    if chosen.assoc != ways:
        changed.append(f"associativity {ways}-way -> {chosen.assoc}-way")
    notes.append(f"{name}: {format_bytes(size_bytes, exact=True)} {ways}-way with {line} B "
                 f"lines has {_sets_text(wanted)} sets, not a power of two as cachegrind requires; "
                 f"simulated as {chosen} ({_sets_text(chosen)} sets): {', '.join(changed)}")
    return chosen, notes


def detect_geometry(root: Path = ROOT) -> tuple[dict[str, CacheGeometry], list[str]]:
    """The I1, D1 and LL geometry to simulate, from what sysfs says about CPU 0's caches.

    Sizes, line sizes and associativity come from :func:`fastbench.machine.caches`
    (8-way assumed where sysfs gives no ``ways_of_associativity``). LL is the highest level
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
    levels = machine_caches(root)
    notes: list[str] = []
    picked: dict[str, CacheLevel] = {}
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
        g, cache_notes = adjust_geometry(name, cache.size_bytes, cache.ways, cache.line_bytes)
        geometry[name] = g
        notes.extend(cache_notes)
    return geometry, notes


def explicit_geometry(caches: Mapping[str, Any]) -> dict[str, CacheGeometry]:
    """The caches a caller gave simulate(), checked: known names, (size_bytes, assoc,
    line_bytes) tuples of ints, each a geometry cachegrind accepts (else ValueError naming
    the nearest one it does)."""
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

