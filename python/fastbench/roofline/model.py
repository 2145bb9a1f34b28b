"""The roofline model: calibrated ceilings (``Roofline``), where a workload sits under them
(``Placement``) and the verdict, memory-bound or compute-bound.

Pure arithmetic on figures already measured: nothing here runs a kernel or reads the cache
(that is :mod:`.calibration`); the plot is :mod:`.plotting`'s.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .._version import __version__
from ..measurement import Measurement
from ..report.lines import TextLines, note_lines
from ..units import format_bytes
from .plotting import plot

__all__ = ["BOUNDS", "DTYPES", "LEVELS", "Placement", "Roofline"]

LEVELS = ("L1", "L2", "L3", "DRAM")
DTYPES = ("float32", "float64")
BOUNDS = ("memory-bound", "compute-bound")


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

    def lines(self) -> list[str]:
        return [
            f"  {self.achieved_gflops:,.2f} GFLOP/s achieved at {self.intensity:,.3f} FLOP/byte: "
            f"{self.fraction:.0%} of the attainable {self.attainable_gflops:,.2f} GFLOP/s",
            f"  {self.bound} (ridge point {self.ridge_point:,.2f} FLOP/byte between "
            f"{self.compute_ceiling} and {self.memory_ceiling})",
        ]


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Roofline(TextLines):
    """Calibrated ceilings of this machine.

    ``compute`` maps ceiling names to GFLOP/s ("fma float32", "fma+add float32",
    "gemm float32", ...); ``memory`` maps levels (L1, L2, L3, DRAM) to GB/s of a STREAM triad
    (bytes counted as STREAM does, without write-allocate). ``sweep`` keeps every working
    set measured: (bytes, GB/s, level). ``notes`` explain each figure (FLOP per cycle against
    what the ISA promises, sizes, passes).
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

    def _bandwidth(self, level: str) -> float:
        if level not in self.memory:
            raise ValueError(f"level must be one of {', '.join(self.memory)}, got {level!r}")
        return self.memory[level]

    # -- placement -----------------------------------------------------------------------
    def place(self, measurement: Measurement | None = None, *, flops: float,
              bytes: float, seconds: float | None = None, dtype: str = "float32",
              level: str = "DRAM", ceiling: str | None = None) -> Placement:
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
        level : {"L1", "L2", "L3", "DRAM"}
            Picks the memory ceiling (DRAM for data that does not fit the caches).
        ceiling : str, optional
            A compute ceiling by name ("fma+add float32", "gemm float64"); by default
            ``dtype``'s FMA peak.

        Raises
        ------
        ValueError
            Non-positive or non-finite inputs, both or neither of measurement and seconds,
            an uncalibrated dtype or level.
        """
        if (measurement is None) == (seconds is None):
            raise ValueError("give either a Measurement or seconds=, not both or neither")
        n_flops = _positive("flops", flops)
        n_bytes = _positive("bytes", bytes)
        secs = _positive("seconds", measurement.median_ns * 1e-9
                         if measurement is not None else seconds)
        intensity = n_flops / n_bytes
        peak = self.peak_gflops(dtype, ceiling)
        bw = self._bandwidth(level)
        attainable = min(peak, bw * intensity)
        achieved = n_flops / secs / 1e9
        return Placement(n_flops, n_bytes, secs, intensity, achieved, attainable,
                         achieved / attainable, self.bound(intensity, dtype, level, ceiling),
                         self._compute_name(dtype, ceiling), level, peak / bw)

    # -- output --------------------------------------------------------------------------
    def plot(self, path: str | os.PathLike[str], *,
             points: Mapping[str, Placement] | Sequence[tuple[str, Placement]] = (),
             dtype: str = "float32") -> Path:
        """Write the log-log plot to ``path``; see ``fastbench.roofline.plot``."""
        return plot(self, path, points=points, dtype=dtype)

    def lines(self) -> list[str]:
        """The ceilings table."""
        out = [f"  roofline, {self.threads} thread{'s' if self.threads != 1 else ''}"
               f"{' (quick)' if self.quick else ''}, calibrated in {self.calibration_s:.1f} s "
               f"on {self.machine.get('cpu_model', 'unknown CPU')}"]
        out.append("  compute ceilings:")
        for name, value in self.compute.items():
            out.append(f"    {name:<22}{value:>10,.1f} GFLOP/s")
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
        return out + note_lines(self.notes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "compute": dict(self.compute), "memory": dict(self.memory),
            "threads": self.threads, "quick": self.quick, "machine": dict(self.machine),
            "clock": self.clock, "sweep": [list(p) for p in self.sweep],
            "notes": list(self.notes), "fastbench_version": self.fastbench_version,
            "created_s": self.created_s, "calibration_s": self.calibration_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Roofline:
        try:
            return cls(
                compute={str(k): float(v) for k, v in dict(data["compute"]).items()},
                memory={str(k): float(v) for k, v in dict(data["memory"]).items()},
                threads=int(data["threads"]), quick=bool(data["quick"]),
                machine=dict(data["machine"]), clock=str(data.get("clock", "steady_clock")),
                sweep=tuple((int(b), float(g), str(lv)) for b, g, lv in data.get("sweep", [])),
                notes=tuple(str(n) for n in data.get("notes", [])),
                fastbench_version=str(data.get("fastbench_version", "")),
                created_s=float(data.get("created_s", 0.0)),
                calibration_s=float(data.get("calibration_s", 0.0)),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a roofline: {e}") from e
