"""The roofline model: calibrated ceilings (``Roofline``), where a workload sits under them
(``Placement``) and the verdict, memory-bound or compute-bound.

Pure arithmetic on figures already measured: nothing here runs a kernel or reads the cache
(that is :mod:`.calibration`); the plot is :mod:`.plotting`'s.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import _core
from .._checks import check_finite, check_int
from .._version import __version__
from ..measurement import Measurement
from ..report.lines import TextLines, brief_repr, note_lines
from ..report.warnings import WarningRecord
from ..units import format_bytes
from .plotting import plot

__all__ = ["ABOVE_ROOF", "ABOVE_ROOF_CAUSES", "ABOVE_ROOF_TOLERANCE", "BOUNDS", "DTYPES",
           "LEVELS", "Placement", "Roofline", "workload_threads"]

LEVELS = ("L1", "L2", "L3", "DRAM")
DTYPES = ("float32", "float64")
BOUNDS = ("memory-bound", "compute-bound")
# Warning codes: a ceiling whose readings never agreed; a workload on other threads than
# the roofline's; a workload above its binding ceiling.
UNSETTLED = "unsettled-ceiling"
THREADS_DIFFER = "threads-differ"
ABOVE_ROOF = "above-roof"
# A point may sit this far above its binding ceiling unremarked: each ceiling is the larger
# of two readings that agree within 5% (calibration.AGREE_WITHIN), so a point within that
# margin is the ceiling's own noise; beyond it an assumption behind the point or the roof
# is wrong, and saying nothing would hide it.
ABOVE_ROOF_TOLERANCE = 0.05
# Why a point can sit above its binding ceiling, as Placement.above_roof_causes names them:
# the compute ceiling was measured with narrower vectors than the CPU (and so the code) may
# use; the data sits in a faster memory level than the one judged against; the FLOP or
# byte count passed in is wrong; the level judged against measured no faster than the next;
# the compute ceiling itself read far below what the CPU's table row promises.
ABOVE_ROOF_CAUSES = ("narrower-vectors", "faster-level", "wrong-count", "level-no-faster",
                     "low-ceiling")
# A peak further than this from the microarchitecture table's FLOP/cycle gets a warning note
# naming the likely cause when calibrated (fastbench.machine.microarch), is read again when
# below it, and a point above a ceiling that stayed below it blames the ceiling first.
TABLE_AGREE_WITHIN = 0.10
# A working set within this factor of a cache's size still has part of itself in that cache
# between sweeps (LRU keeps the most recent lines): fewer bytes reach the level judged
# against than were counted. A numpy triad over 3 x 32 MiB (96 MiB) on a 32 MiB L3 placed
# 41% above its DRAM ceiling.
_PARTLY_CACHED_FACTOR = 4
# The ISA names of the one dispatch, narrowest first (the order of "wider").
_ISAS = tuple(_core.isa_names())
# The ISA of an instruction by the registers it names, as the calibration's notes write it.
_ISA_OF_REGISTERS = {"tmm": "amx", "zmm": "avx512", "ymm": "avx2", "C++": "portable"}
# AMX tiles run bf16 and int8 products only: float ceilings are widest at avx512.
_WIDEST_FLOAT_ISA = "avx512"


def workload_threads(threads: int | None = None) -> int | None:
    """The threads a workload ran on: ``threads`` when given, else PyTorch's intra-op
    threads (``torch.get_num_threads()``) where torch is already imported, else None
    (unknown). torch is never imported here."""
    if threads is not None:
        return check_int("threads", threads, 1, say_positive=False)
    torch = sys.modules.get("torch")
    get = getattr(torch, "get_num_threads", None)
    if get is None:
        return None
    try:
        n = int(get())
    except Exception:  # noqa: BLE001 - a half-imported or stubbed torch: unknown
        return None
    return n if n >= 1 else None


def _threads_warning(roofline_threads: int, threads: int | None) -> WarningRecord | None:
    """The warning for a workload on ``threads`` placed under a roofline calibrated on
    ``roofline_threads``; None when they match or ``threads`` is unknown."""
    if threads is None or threads == roofline_threads:
        return None
    direction = "above" if roofline_threads > threads else "below"
    return WarningRecord(
        f"the workload ran on {threads} thread{'s' if threads != 1 else ''} but the roofline "
        f"was calibrated on {roofline_threads}: its ceilings are {direction} what "
        f"{threads} thread{'s' if threads != 1 else ''} can reach; calibrate(threads="
        f"{threads}) for a roof that fits (PyTorch: torch.get_num_threads())",
        THREADS_DIFFER)


@dataclass(frozen=True)
class Placement(TextLines):
    """Where a workload sits under the roofline.

    ``intensity`` is FLOPs per byte moved; ``attainable_gflops`` the lower of the compute
    ceiling and ``intensity`` × the memory ceiling; ``fraction`` the achieved share of it.
    """

    flops: float
    bytes: float
    seconds: float
    intensity: float
    achieved_gflops: float
    attainable_gflops: float
    fraction: float
    bound: str              # "memory-bound" or "compute-bound"
    compute_ceiling: str    # e.g. "FMA peak float32"
    memory_ceiling: str     # e.g. "DRAM"
    ridge_point: float      # FLOPs per byte where the two ceilings meet
    threads: int | None = None         # the workload's threads; None when unknown
    roofline_threads: int | None = None  # the threads the roofline was calibrated on
    warnings: tuple[WarningRecord, ...] = ()  # e.g. other threads than the roof's; above it
    working_set_bytes: int | None = None  # as passed to place(); None when unknown
    # Why the point sits more than ABOVE_ROOF_TOLERANCE above its binding ceiling, most
    # likely first (names from ABOVE_ROOF_CAUSES); empty when it does not.
    above_roof_causes: tuple[str, ...] = ()

    @property
    def above_roof(self) -> WarningRecord | None:
        """The warning (code "above-roof") when the point sits more than 5% above its
        binding ceiling, naming the assumption that likely failed; None otherwise."""
        return next((w for w in self.warnings if w.code == ABOVE_ROOF), None)

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.bound}, {self.achieved_gflops:.4g} of "
                                f"{self.attainable_gflops:.4g} GFLOP/s attainable "
                                f"({self.fraction:.1%}) at {self.intensity:.3g} FLOP/B")

    def lines(self) -> list[str]:
        return [
            f"  {self.achieved_gflops:,.2f} GFLOP/s achieved at {self.intensity:,.3f} FLOP/byte: "
            f"{self.fraction:.0%} of the attainable {self.attainable_gflops:,.2f} GFLOP/s",
            f"  {self.bound} (ridge point {self.ridge_point:,.2f} FLOP/byte between "
            f"{self.compute_ceiling} and {self.memory_ceiling})",
            *(f"  warning: {w}" for w in self.warnings),
        ]


# The fastest ceiling a file may hold: an exaflop (or an exabyte a second) per machine.
_MAX_RATE = 1e9


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_workload(measurement: Measurement | None, flops: Any, bytes: Any, seconds: Any,
                   working_set_bytes: Any) -> None:
    """The checks of a placement's workload that need no roofline, made before one is
    calibrated (seconds of work) rather than after."""
    if (measurement is None) == (seconds is None):
        raise ValueError("give either a Measurement or seconds=, not both or neither")
    _positive("flops", flops)
    _positive("bytes", bytes)
    if seconds is not None:
        _positive("seconds", seconds)
    if working_set_bytes is not None:
        check_int("working_set_bytes", working_set_bytes, 1, say_positive=False)


@dataclass(frozen=True)
class Roofline(TextLines):
    """Calibrated ceilings of this machine.

    ``compute`` maps ceiling names to GFLOP/s ("fma float32", "fma+add float32",
    "gemm float32", ...); ``memory`` maps levels (L1, L2, L3, DRAM) to GB/s of a STREAM triad
    (bytes counted as STREAM does, without write-allocate). ``sweep`` keeps every working
    set measured: (bytes, GB/s, level). ``notes`` explain each figure (FLOP per cycle against
    what the ISA promises, sizes, passes). ``warnings`` name the ceilings whose readings
    never agreed (see ``calibrate``): such a roofline is not reused from the cache.
    """

    compute: dict[str, float]
    memory: dict[str, float]
    threads: int
    quick: bool
    machine: dict[str, Any]
    clock: str = "steady_clock"
    sweep: tuple[tuple[int, float, str], ...] = ()
    notes: tuple[str, ...] = ()
    fastbench_version: str = __version__
    created_s: float = field(default_factory=time.time)
    calibration_s: float = 0.0
    warnings: tuple[str, ...] = ()

    @property
    def settled(self) -> bool:
        """Whether every ceiling was confirmed by two agreeing readings."""
        return not self.warnings

    # -- ceilings ------------------------------------------------------------------------
    def peak_gflops(self, dtype: str = "float32", ceiling: str | None = None) -> float:
        """A compute ceiling in GFLOP/s: ``ceiling`` by name, by default ``dtype``'s FMA peak
        (what FMA-only code such as GEMM or convolution can reach; "fma+add" is higher only
        for code that also keeps separate add pipes busy)."""
        name = self._compute_name(dtype, ceiling)
        return self.compute[name]

    def _compute_name(self, dtype: str, ceiling: str | None = None) -> str:
        name = ceiling if ceiling is not None else f"fma {dtype}"
        if name not in self.compute:
            raise ValueError(f"no compute ceiling {name!r} for {dtype!r}; calibrated: "
                             f"{', '.join(self.compute)}")
        return name

    def ridge_points(self, dtype: str = "float32") -> dict[str, float]:
        """FLOPs per byte where ``dtype``'s peak meets each memory ceiling."""
        peak = self.peak_gflops(dtype)
        return {level: peak / bw for level, bw in self.memory.items() if bw > 0}

    def attainable(self, intensity: float, dtype: str = "float32", level: str = "DRAM") -> float:
        """GFLOP/s attainable at ``intensity`` FLOPs/byte: min(peak, bandwidth × intensity)."""
        if not math.isfinite(intensity) or intensity <= 0:
            raise ValueError(f"intensity must be a positive FLOPs/byte, got {intensity!r}")
        return min(self.peak_gflops(dtype), self._bandwidth(level) * intensity)

    def bound(self, intensity: float, dtype: str = "float32", level: str = "DRAM",
              ceiling: str | None = None) -> str:
        """The verdict: "memory-bound" below the ridge point of ``dtype``'s compute ceiling (or ``ceiling``)
        and ``level``'s bandwidth, "compute-bound" at or above it."""
        ridge = self.peak_gflops(dtype, ceiling) / self._bandwidth(level)
        return BOUNDS[0] if intensity < ridge else BOUNDS[1]

    def least_time(self, flops: float, bytes: float, dtype: str = "float32",  # noqa: A002
                   level: str | None = None) -> tuple[float, str | None, bool]:
        """The least time ``flops`` FLOPs moving ``bytes`` bytes can take: the longer of the
        compute peak's time and the memory ceiling's, the ceiling ``level``'s or by default
        that of the fastest level ``bytes`` fit (``level_for``: all the data could already
        be there, so the time stays a lower bound). Returns (seconds, the level, or None
        without traffic, whether memory binds it)."""
        compute = check_finite("flops", flops) / (self.peak_gflops(dtype) * 1e9)
        moved = check_finite("bytes", bytes)
        if moved <= 0.0:
            return compute, None, False
        at = level if level is not None else self.level_for(max(int(math.ceil(moved)), 1))
        memory = moved / (self._bandwidth(at) * 1e9)
        return max(compute, memory), at, memory > compute

    def _bandwidth(self, level: str) -> float:
        if level not in self.memory:
            raise ValueError(f"level must be one of {', '.join(self.memory)}, got {level!r}")
        return self.memory[level]

    # -- what the ceilings assume ----------------------------------------------------------
    def level_capacities(self) -> dict[str, int]:
        """Bytes of data each cache level holds for this roofline's threads, from the cache
        sizes the calibration recorded (``machine["caches"]``, "L<n> <kind> <bytes>").

        L1 and L2 are per core and hold one thread's share each, so their size times
        ``threads`` (how the calibration sized their working sets); L3 is shared and counted
        once, even where the threads may span several L3s: a smaller level assumed places a
        point against a slower ceiling, where it is warned about rather than hidden. Levels
        whose size is unknown, and DRAM, are absent.
        """
        out: dict[str, int] = {}
        entries = self.machine.get("caches")
        for entry in entries if isinstance(entries, (list, tuple)) else ():
            parts = str(entry).split()
            if len(parts) != 3 or parts[1] not in ("Data", "Unified") \
                    or not parts[0].startswith("L") or not parts[2].isdigit():
                continue
            level, size = parts[0], int(parts[2])
            if level in ("L1", "L2"):
                size *= self.threads
            if level in LEVELS and size > 0:
                out[level] = size
        return out

    def level_for(self, working_set_bytes: int) -> str:
        """The fastest memory level whose capacity (``level_capacities``) holds
        ``working_set_bytes``, among those with a ceiling; DRAM when none does or the sizes
        are unknown. A working set exactly the size of a level fits it."""
        n = check_int("working_set_bytes", working_set_bytes, 1, say_positive=False)
        capacities = self.level_capacities()
        for level in LEVELS[:-1]:
            if level in self.memory and level in capacities and n <= capacities[level]:
                return level
        return "DRAM"

    def ceiling_isa(self, name: str) -> str | None:
        """The ISA a compute ceiling was measured with ("avx2", "avx512", ...), as the
        calibration recorded it: ``machine["ceiling_isas"][name]``, else the ISA or the
        instruction its note names ("fma float32: ... (avx2, core at 3.50 GHz)", "(vfmadd231ps
        zmm, ...)"), else ``machine["gemm_isa"]`` for a "gemm" ceiling; None when not
        recorded."""
        recorded = self.machine.get("ceiling_isas")
        if isinstance(recorded, Mapping) and isinstance(recorded.get(name), str):
            return str(recorded[name])
        for note in self.notes:
            if note.startswith(f"{name}: ") and "(" in note:
                said = note[note.index("(") + 1:].split(",")[0].split(")")[0].strip()
                # An ISA's name, or the instruction run ("vfmadd231ps zmm"): its registers
                # say the width.
                isa = _ISA_OF_REGISTERS.get(said.split()[-1], said) if said else said
                if isa in _ISAS:
                    return isa
        if name.startswith("gemm ") and isinstance(self.machine.get("gemm_isa"), str):
            return str(self.machine["gemm_isa"])
        return None

    def ceiling_table_share(self, name: str) -> float | None:
        """The share of the microarchitecture table's FLOP per cycle that a compute ceiling
        reached when calibrated (``machine["ceiling_table_shares"][name]``); None where the
        calibration recorded none (no table figure, a GEMM ceiling, an older roofline)."""
        shares = self.machine.get("ceiling_table_shares")
        share = shares.get(name) if isinstance(shares, Mapping) else None
        return float(share) if isinstance(share, (int, float)) and share > 0 else None

    def widest_isa(self) -> str | None:
        """The widest ISA the calibrated CPU allows (``machine["best_isa"]``); None when the
        roofline does not record it."""
        isa = self.machine.get("best_isa")
        return isa if isinstance(isa, str) and isa in _ISAS else None

    # -- placement -----------------------------------------------------------------------
    def threads_warning(self, threads: int | None = None) -> WarningRecord | None:
        """The warning for a workload on ``threads`` (by default PyTorch's, where torch is
        imported; see ``workload_threads``) placed here, or None when the threads match
        or are unknown."""
        return _threads_warning(self.threads, workload_threads(threads))

    def place(self, measurement: Measurement | None = None, *, flops: float,
              bytes: float, seconds: float | None = None, dtype: str = "float32",
              level: str | None = None, ceiling: str | None = None,
              threads: int | None = None, working_set_bytes: int | None = None) -> Placement:
        """Place a workload doing ``flops`` and moving ``bytes`` in ``seconds`` (per call).

        Parameters
        ----------
        measurement : Measurement, optional
            Gives ``seconds`` as its median per call; flops and bytes are then per call.
        flops : float
            Floating-point operations (1 multiply-add = 2).
        bytes : float
            Bytes moved to or from the memory level judged against.
        seconds : float, optional
            Time taken, when no measurement is given.
        dtype : {"float32", "float64"}
            Picks the compute ceiling.
        level : {"L1", "L2", "L3", "DRAM"}, optional
            Picks the memory ceiling; by default the level ``working_set_bytes`` fits, else
            DRAM.
        ceiling : str, optional
            A compute ceiling by name ("fma+add float32", "gemm float64"); by default
            ``dtype``'s FMA peak.
        threads : int, optional
            Threads the workload ran on; by default ``torch.get_num_threads()`` where torch
            is imported, else unknown. When it differs from the roofline's ``threads``,
            the placement carries a warning: the ceilings are those of another number of
            cores.
        working_set_bytes : int, optional
            Bytes of all the data the workload touches (inputs, outputs, temporaries).
            Without ``level``, the memory ceiling is that of the fastest level it fits
            (``level_for``: L1 and L2 per core times the roofline's threads, L3 shared);
            either way it helps explain a point above its ceiling.

        Returns
        -------
        Placement
            With a warning (code "above-roof", ``above_roof``) when the point is more than
            ``ABOVE_ROOF_TOLERANCE`` (5%) above its binding ceiling, naming the assumption
            that likely failed (``above_roof_causes``): the compute ceiling measured with
            narrower vectors than the CPU offers, data held in a faster level than the one
            judged against, or a wrong FLOP or byte count.

        Raises
        ------
        ValueError
            Non-positive or non-finite inputs, both or neither of measurement and seconds,
            an uncalibrated dtype or level, threads or working_set_bytes < 1.
        TypeError
            ``threads`` or ``working_set_bytes`` is not an int.
        """
        check_workload(measurement, flops, bytes, seconds, working_set_bytes)
        n_flops = _positive("flops", flops)
        n_bytes = _positive("bytes", bytes)
        secs = _positive("seconds", measurement.median_ns * 1e-9
                         if measurement is not None else seconds)
        ws = None if working_set_bytes is None else check_int(
            "working_set_bytes", working_set_bytes, 1, say_positive=False)
        if level is None:
            level = "DRAM" if ws is None else self.level_for(ws)
        intensity = n_flops / n_bytes
        peak = self.peak_gflops(dtype, ceiling)
        bw = self._bandwidth(level)
        attainable = min(peak, bw * intensity)
        achieved = n_flops / secs / 1e9
        ran_on = workload_threads(threads)
        bound = self.bound(intensity, dtype, level, ceiling)
        name = self._compute_name(dtype, ceiling)
        warnings = [w for w in (_threads_warning(self.threads, ran_on),) if w is not None]
        causes: tuple[str, ...] = ()
        if achieved > attainable * (1 + ABOVE_ROOF_TOLERANCE):
            causes, why = self._above_roof_causes(bound, name, level, ws)
            binding = name if bound == BOUNDS[1] else f"{level} bandwidth"
            warnings.append(WarningRecord(
                f"{achieved / attainable - 1:.0%} above the {binding} ceiling, which it cannot "
                f"beat if the roof and the counts passed in are right; likely {' Or '.join(why)}",
                ABOVE_ROOF))
        return Placement(n_flops, n_bytes, secs, intensity, achieved, attainable,
                         achieved / attainable, bound, name, level, peak / bw, ran_on,
                         self.threads, tuple(warnings), ws, causes)

    def _above_roof_causes(self, bound: str, ceiling: str, level: str,
                           ws: int | None) -> tuple[tuple[str, ...], list[str]]:
        """Why a point sits above its binding ceiling: the causes (ABOVE_ROOF_CAUSES), most
        likely first, and a sentence for each. A wrong count is always possible and last."""
        causes: list[str] = []
        why: list[str] = []
        if bound == BOUNDS[1]:
            share = self.ceiling_table_share(ceiling)
            if share is not None and share < 1 - TABLE_AGREE_WITHIN:
                causes.append(ABOVE_ROOF_CAUSES[4])
                why.append(f"the ceiling {ceiling!r} itself reached only {share:.0%} of the "
                           "FLOP per cycle this CPU's table row promises: the calibration "
                           "ran slowed (a busy or shared machine), so the ceiling is likely "
                           "low; calibrate again on a quiet machine (calibrate(cache=False), "
                           "fastbench roofline --no-cache).")
            isa, widest = self.ceiling_isa(ceiling), self.widest_isa()
            top = widest if widest is not None else _ISAS[-1]
            if "bfloat16" not in ceiling and "int8" not in ceiling:  # no float tiles
                top = min(top, _WIDEST_FLOAT_ISA, key=_ISAS.index)
            if isa is not None and isa in _ISAS and _ISAS.index(isa) < _ISAS.index(top):
                offered = (f"this CPU offers {top}" if widest is not None
                           else f"the CPU may offer {top}")
                causes.append(ABOVE_ROOF_CAUSES[0])
                why.append(f"the compute ceiling {ceiling!r} was measured with {isa} vectors "
                           f"while {offered}: code using wider vectors can exceed it, the "
                           "ceiling is then not the machine's.")
            causes.append(ABOVE_ROOF_CAUSES[2])
            why.append("the FLOP count passed in is too high (count each multiply-add as 2 "
                       "FLOPs, once; do not count work the code skips).")
            return tuple(causes), why
        capacities = self.level_capacities()
        below = LEVELS[LEVELS.index(level) + 1:] if level in LEVELS else ()  # slower levels
        ceiling_bw = self.memory.get(level)
        slower = [lv for lv in below if ceiling_bw is not None
                  and self.memory.get(lv, 0.0) >= ceiling_bw]
        if slower:
            causes.append(ABOVE_ROOF_CAUSES[3])
            why.append(f"the {level} ceiling ({ceiling_bw:,.1f} GB/s) is no faster than "
                       f"{slower[0]}'s ({self.memory[slower[0]]:,.1f} GB/s): at the sizes the "
                       f"calibration tried, the {level} this CPU reports behaved as memory (a "
                       "cache shared with other tenants, as in a VM, or larger than these "
                       "threads' share), so the point may be right and the ceiling low.")
        above = LEVELS[:LEVELS.index(level)] if level in LEVELS else ()  # faster levels
        faster = [lv for lv in above if lv in capacities]
        if ws is not None:
            fits = [lv for lv in faster if ws <= capacities[lv]]
            near = [lv for lv in faster if ws <= _PARTLY_CACHED_FACTOR * capacities[lv]]
            if fits:
                causes.append(ABOVE_ROOF_CAUSES[1])
                why.append(f"the working set ({format_bytes(ws)}) fits {fits[0]} "
                           f"({format_bytes(capacities[fits[0]])}), faster than the {level} "
                           f"ceiling judged against: place it with level={fits[0]!r} (or "
                           "working_set_bytes= alone).")
            elif near:
                lv = near[-1]
                causes.append(ABOVE_ROOF_CAUSES[1])
                why.append(f"the working set ({format_bytes(ws)}) is within "
                           f"{_PARTLY_CACHED_FACTOR}x of {lv} ({format_bytes(capacities[lv])}): "
                           f"part of it stays in {lv} between sweeps, so less traffic reaches "
                           f"{level} than the bytes passed in count.")
        elif any(lv in self.memory for lv in above):
            causes.append(ABOVE_ROOF_CAUSES[1])
            why.append(f"the data may sit in a faster level than {level}: pass "
                       "working_set_bytes= to place it against the level it fits.")
        causes.append(ABOVE_ROOF_CAUSES[2])
        why.append(f"the byte count passed in is too high for {level} (count the bytes that "
                   "reach it, not every access to data a faster level holds).")
        return tuple(causes), why

    # -- output --------------------------------------------------------------------------
    def plot(self, path: str | os.PathLike[str], *,
             points: Mapping[str, Placement] | Sequence[tuple[str, Placement]] = (),
             dtype: str = "float32") -> Path:
        """Write the log-log plot to ``path``; see ``fastbench.roofline.plot``."""
        return plot(self, path, points=points, dtype=dtype)

    def __repr__(self) -> str:
        peak = max(self.compute.values(), default=0.0)
        memory = ", ".join(f"{level} {bw:.4g}" for level, bw in self.memory.items())
        return brief_repr(self, f"{self.threads} threads: peak {peak:.4g} GFLOP/s, "
                                f"memory GB/s {memory or 'none'}")

    def lines(self) -> list[str]:
        """The ceilings table."""
        out = [f"  roofline, {self.threads} thread{'s' if self.threads != 1 else ''}"
               f"{' (quick)' if self.quick else ''}, calibrated in {self.calibration_s:.1f} s "
               f"on {self.machine.get('cpu_model', 'unknown CPU')}"]
        out.append("  compute ceilings:")
        for name, value in self.compute.items():
            unit = "GOPS" if name.endswith("int8") else "GFLOP/s"  # integer ops, not FLOPs
            out.append(f"    {name:<22}{value:>10,.1f} {unit}")
        out.append("  memory ceilings (STREAM triad, write-allocate not counted; "
                   "the best working set of each level):")
        for level, value in self.memory.items():
            sizes = ", ".join(f"{format_bytes(b, exact=True)} {g:,.0f}"
                              for b, g, lv in self.sweep if lv == level)
            out.append(f"    {level:<22}{value:>10,.1f} GB/s" + (f"   ({sizes})" if sizes else ""))
        for dtype in DTYPES:
            try:
                ridges = self.ridge_points(dtype)
            except ValueError:
                continue
            text = ", ".join(f"{k} {v:.2f}" for k, v in ridges.items())
            out.append(f"  ridge points {dtype} (FLOP/byte): {text}")
        return out + [f"  warning: {w}" for w in self.warnings] + note_lines(self.notes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "compute": dict(self.compute), "memory": dict(self.memory),
            "threads": self.threads, "quick": self.quick, "machine": dict(self.machine),
            "clock": self.clock, "sweep": [list(p) for p in self.sweep],
            "notes": list(self.notes), "fastbench_version": self.fastbench_version,
            "created_s": self.created_s, "calibration_s": self.calibration_s,
            "warnings": [str(w) for w in self.warnings],  # the text alone
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Roofline:
        """Rebuild from ``to_dict`` output.

        Raises
        ------
        ValueError
            "not a roofline: ..." naming the field that is missing or malformed (ceilings
            must be positive and finite, threads at least 1).
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"not a roofline: expected an object, got {type(data).__name__}")

        def get(name: str, convert: Any, *default: Any) -> Any:
            try:
                return convert(data[name] if not default else data.get(name, default[0]))
            except KeyError as e:
                if e.args == (name,):
                    raise ValueError(f"not a roofline: no {name!r} field") from None
                raise ValueError(f"not a roofline: field {name!r}: {e}") from None
            except (TypeError, ValueError, OverflowError, AttributeError, RecursionError) as e:
                raise ValueError(f"not a roofline: field {name!r}: {e}") from None

        def ceilings(value: Any) -> dict[str, float]:
            out = {str(k): float(v) for k, v in dict(value).items()}
            if not out:  # a roof needs at least one ceiling of each kind
                raise ValueError("the table is empty")
            for k, v in out.items():
                if not math.isfinite(v) or v <= 0 or v > _MAX_RATE:
                    raise ValueError(f"{k} is {v}, not a positive finite rate (at most "
                                     f"{_MAX_RATE:g} GFLOP/s or GB/s)")
            return out

        def threads(value: Any) -> int:
            if isinstance(value, bool) or int(value) != value or int(value) < 1:
                raise ValueError(f"{value!r} is not an int >= 1")
            return int(value)

        return cls(
            compute=get("compute", ceilings), memory=get("memory", ceilings),
            threads=get("threads", threads), quick=get("quick", bool),
            machine=get("machine", dict), clock=get("clock", str, "steady_clock"),
            sweep=get("sweep", lambda v: tuple((int(b), float(g), str(lv)) for b, g, lv in v),
                      []),
            notes=get("notes", lambda v: tuple(str(n) for n in v), []),
            fastbench_version=get("fastbench_version", str, ""),
            created_s=get("created_s", float, 0.0),
            calibration_s=get("calibration_s", float, 0.0),
            warnings=get("warnings", lambda v: tuple(WarningRecord(str(w), UNSETTLED)
                                                     for w in v), []),
        )
