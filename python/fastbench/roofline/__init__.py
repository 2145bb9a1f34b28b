"""The machine's roofline: compute ceilings (FMA peak, FMA+ADD peak, achieved GEMM) and memory
ceilings per cache level (L1, L2, L3, DRAM), calibrated from the native kernels, cached on
disk per machine, and the placement of a workload under them.

Owns the calibration plan (which kernels, sizes and threads), the cache, placement
arithmetic, the printed table and the plot. The kernels themselves are the native core's
(fastbench.kernels); the plot needs matplotlib (the ``plot`` extra), imported only there.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .. import _core, machine
from . import kernels
from .._version import __version__
from ..measurement import Measurement
from ..results import register_kind

__all__ = ["Placement", "Roofline", "calibrate", "cache_path", "place", "plot"]

# Bump when what calibrate() measures or how it stores it changes: older cache files are
# then recalibrated rather than read.
# 1: first layout. 2: quick calibrations measure DRAM at the full working set too.
CACHE_VERSION = 2
LEVELS = ("L1", "L2", "L3", "DRAM")
DTYPES = ("float32", "float64")
BOUNDS = ("memory-bound", "compute-bound")
# The DRAM working set: far beyond any last-level cache, whatever the machine reports.
_DRAM_MIN_BYTES = 256 << 20

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Placement:
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

    def __str__(self) -> str:
        return "\n".join(self.lines())


@dataclass(frozen=True)
class Roofline:
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
        secs = measurement.median_ns * 1e-9 if measurement is not None else seconds
        for name, value in (("flops", flops), ("bytes", bytes), ("seconds", secs)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        intensity = flops / bytes
        peak = self.peak_gflops(dtype, ceiling)
        bw = self._bandwidth(level)
        attainable = min(peak, bw * intensity)
        achieved = flops / float(secs) / 1e9  # type: ignore[arg-type]
        ridge = peak / bw
        return Placement(float(flops), float(bytes), float(secs), intensity,  # type: ignore[arg-type]
                         achieved,
                         attainable, achieved / attainable,
                         self.bound(intensity, dtype, level, ceiling),
                         self._compute_name(dtype, ceiling), level, ridge)

    # -- output --------------------------------------------------------------------------
    def plot(self, path: str | os.PathLike[str], *,
             points: Mapping[str, Placement] | Sequence[tuple[str, Placement]] = (),
             dtype: str = "float32") -> Path:
        """Write the log-log plot to ``path``; see the module's ``plot``."""
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
            sizes = ", ".join(f"{machine.format_bytes(b)} {g:,.0f}" for b, g, lv in self.sweep if lv == level)
            out.append(f"    {level:<22}{value:>10,.1f} GB/s" + (f"   ({sizes})" if sizes else ""))
        for dtype in DTYPES:
            try:
                ridges = self.ridge_points(dtype)
            except ValueError:
                continue
            text = ", ".join(f"{k} {v:.2f}" for k, v in ridges.items())
            out.append(f"  ridge points {dtype} (FLOP/byte): {text}")
        out += [f"  note: {n}" for n in self.notes]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

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


register_kind("roofline", Roofline, Roofline.to_dict, Roofline.from_dict)


# -- calibration ---------------------------------------------------------------------------
def _machine() -> dict[str, Any]:
    info = machine.machine_info()
    return {
        "cpu_model": info.cpu_model, "logical_cores": info.logical_cores,
        "caches": [f"L{c.level} {c.kind} {c.size_bytes}" for c in info.caches],
        "gemm_isa": _core.gemm_isa(),
    }


def _level_sizes(threads: int, quick: bool) -> dict[str, list[int]]:
    """Working sets (all arrays, all threads) that sit in each level, from the caches.

    Per-core caches (L1, L2) hold one thread's slice each; a shared L3 holds all slices.
    Each level gets sizes between the level below and a fraction of its own, so the
    plateau is measured away from both edges.
    """
    data = {c.level: c for c in machine.caches() if c.kind in ("Data", "Unified")}
    l1 = data[1].size_bytes if 1 in data else 32 << 10
    l2 = data[2].size_bytes if 2 in data else 512 << 10
    l3 = data[3].size_bytes if 3 in data else 8 << 20
    shared3 = data[3].shared_by_cpus if 3 in data and data[3].shared_by_cpus else threads
    per_l3 = l3 * min(threads, shared3) // max(shared3, 1)  # what these threads share
    plan = {
        "L1": [l1 // 4 * threads, l1 // 2 * threads],
        "L2": [max(2 * l1, l2 // 4) * threads, l2 // 2 * threads],
        "L3": [max(2 * l2 * threads, per_l3 // 8), per_l3 // 3],
        "DRAM": [max(_DRAM_MIN_BYTES, 8 * l3)],
    }
    if quick:
        plan = {k: v[-1:] for k, v in plan.items()}
    return plan


def _gemm_gflops(dtype: str, n: int, threads: int, min_time_s: float) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    kernels.gemm(a, b, out, threads=threads)  # warm: packing buffers, page faults
    times: list[float] = []
    deadline = time.perf_counter() + min_time_s
    while len(times) < 3 or time.perf_counter() < deadline:
        t0 = time.perf_counter()
        kernels.gemm(a, b, out, threads=threads)
        times.append(time.perf_counter() - t0)
    return 2.0 * n**3 / min(times) / 1e9


def _auto_progress() -> Progress | None:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int, what: str) -> None:
        width = 24
        filled = width * done // total
        end = "\n" if done == total else ""
        print(f"\rroofline [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what:<28}",
              end=end, file=sys.stderr, flush=True)
    return show


def cache_path(threads: int, dtypes: Sequence[str], quick: bool) -> Path:
    """Where calibrate() keeps its result for these settings on this machine.

    ``$FASTBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/fastbench``, else ``~/.cache/fastbench``.
    The name hashes the CPU model, the logical cores, the fastbench version and the settings,
    so a different CPU or version never reads another's ceilings.
    """
    return _cache_path(_machine(), threads, dtypes, quick)


def _cache_path(m: Mapping[str, Any], threads: int, dtypes: Sequence[str], quick: bool) -> Path:
    base = os.environ.get("FASTBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "fastbench")
    key = json.dumps([CACHE_VERSION, __version__, m["cpu_model"], m["logical_cores"],
                      m["caches"], m["gemm_isa"], threads, list(dtypes), quick])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(base) / f"roofline-{digest}.json"


def _load_cached(path: Path, machine: Mapping[str, Any]) -> Roofline | None:
    try:
        data = json.loads(path.read_text())
        if data.get("cache_version") != CACHE_VERSION:
            return None
        r = Roofline.from_dict(data["roofline"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent, unreadable or stale: calibrate afresh
    if r.fastbench_version != __version__ or r.machine.get("cpu_model") != machine["cpu_model"]:
        return None
    return r


def _store(path: Path, r: Roofline) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".roofline-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"cache_version": CACHE_VERSION, "roofline": r.to_dict()}, f)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home keeps the result in memory only


def calibrate(threads: int | None = None, dtypes: Iterable[str] = DTYPES, quick: bool = False,
              *, cache: bool = True,
              progress: Progress | bool | None = None) -> Roofline:
    """Measure this machine's compute and memory ceilings.

    Parameters
    ----------
    threads : int, optional
        Threads for every kernel; None means all cores.
    dtypes : iterable of {"float32", "float64"}
        Compute ceilings to measure.
    quick : bool
        One working set per level and shorter timings: a few seconds instead of ~10-15.
    cache : bool
        Read and write the per-machine cache (``cache_path()``); False always measures.
    progress : callable(done, total, what), bool, optional
        None shows a bar on a terminal's stderr; False shows nothing.

    Returns
    -------
    Roofline
    """
    nthreads = _core.hardware_threads() if threads is None else kernels._threads(threads)
    dts = tuple(dict.fromkeys(dtypes))
    for dt in dts:
        if dt not in DTYPES:
            raise ValueError(f"dtypes must be among {', '.join(DTYPES)}, got {dt!r}")
    if not dts:
        raise ValueError("dtypes is empty")
    machine = _machine()
    path = _cache_path(machine, nthreads, dts, quick)
    if cache:
        cached = _load_cached(path, machine)
        if cached is not None:
            return cached
    show: Progress | None
    if progress is None:
        show = _auto_progress()
    elif progress is False or progress is True:
        show = _auto_progress() if progress else None
    else:
        show = progress

    peak_s = 0.03 if quick else 0.15
    bw_s = 0.02 if quick else 0.08
    gemm_n = 512 if quick else 1024
    sizes = _level_sizes(nthreads, quick)
    steps: list[tuple[str, Callable[[], None]]] = []
    compute: dict[str, float] = {}
    memory: dict[str, float] = {}
    sweep: list[tuple[int, float, str]] = []
    notes: list[str] = []

    def peak_step(dt: str, mix: bool) -> Callable[[], None]:
        def run() -> None:
            r = kernels.peak_flops(dt, nthreads, add_mix=mix, min_time_s=peak_s)
            compute[f"{'fma+add' if mix else 'fma'} {dt}"] = r.gflops
            expect = (f" of {r.expected_flops_per_cycle:.0f} expected"
                      if r.expected_flops_per_cycle > 0 else "")
            notes.append(f"{'fma+add' if mix else 'fma'} {dt}: {r.flops_per_cycle:.1f} "
                         f"FLOP/cycle per core{expect} ({r.isa}, core at {r.core_hz / 1e9:.2f} GHz)")
            if r.efficiency is not None and not 0.5 <= r.efficiency <= 1.15:
                notes.append(f"warning: {dt} peak is {r.efficiency:.0%} of what {r.isa} "
                             "promises: the calibration may be broken or the machine busy")
        return run

    def gemm_step(dt: str) -> Callable[[], None]:
        def run() -> None:
            compute[f"gemm {dt}"] = _gemm_gflops(dt, gemm_n, nthreads, peak_s)
        return run

    def level_step(level: str, nbytes: int) -> Callable[[], None]:
        def run() -> None:
            r = kernels.bandwidth("triad", nbytes, nthreads, bw_s)
            sweep.append((nbytes, r.gb_per_s, level))
        return run

    for dt in dts:
        steps.append((f"FMA peak {dt}", peak_step(dt, False)))
        steps.append((f"FMA+ADD peak {dt}", peak_step(dt, True)))
        steps.append((f"GEMM {dt} n={gemm_n}", gemm_step(dt)))
    for level in LEVELS:
        for nbytes in sizes[level]:
            steps.append((f"triad {level} {nbytes >> 10} KiB", level_step(level, nbytes)))

    t0 = time.perf_counter()
    for i, (what, run) in enumerate(steps):
        if show is not None:
            show(i, len(steps), what)
        run()
    if show is not None:
        show(len(steps), len(steps), "done")
    for level in LEVELS:
        values = [g for _, g, lv in sweep if lv == level]
        # The plateau: the best size of the level (smaller sizes pay loop overheads, larger
        # ones spill into the next level).
        memory[level] = max(values)
    # An FMA+ADD mix that gains nothing is not a separate ceiling.
    for dt in dts:
        if compute[f"fma+add {dt}"] < compute[f"fma {dt}"] * 1.02:
            notes.append(f"fma+add {dt} gains nothing over fma alone here "
                         "(adds share the FMA pipes)")
    r = Roofline(compute, memory, nthreads, quick, machine, sweep=tuple(sweep),
                 notes=tuple(notes), calibration_s=time.perf_counter() - t0)
    if cache:
        _store(path, r)
    return r


def place(measurement: Measurement | None = None, *, flops: float, bytes: float,
          seconds: float | None = None, dtype: str = "float32", level: str = "DRAM",
          ceiling: str | None = None, roofline: Roofline | None = None) -> Placement:
    """Place a workload on ``roofline`` (by default this machine's, from the cache or a
    fresh ``calibrate()``). See ``Roofline.place``."""
    r = roofline if roofline is not None else calibrate(progress=False)
    return r.place(measurement, flops=flops, bytes=bytes, seconds=seconds, dtype=dtype,
                   level=level, ceiling=ceiling)


def plot(roofline: Roofline, path: str | os.PathLike[str], *,
         points: Mapping[str, Placement] | Sequence[tuple[str, Placement]] = (),
         dtype: str = "float32") -> Path:
    """Write a log-log roofline plot (ceilings labelled, placements as points) to ``path``.

    Needs matplotlib: ``pip install "fastbench[plot]"``.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError('roofline plots need matplotlib: pip install "fastbench[plot]"') from e
    items = list(points.items()) if isinstance(points, Mapping) else list(points)
    peak = roofline.peak_gflops(dtype)
    ridges = roofline.ridge_points(dtype)
    lo = min([0.01, *(p.intensity / 2 for _, p in items)])
    hi = max([4 * max(ridges.values(), default=1.0), *(p.intensity * 2 for _, p in items)])
    xs = np.logspace(math.log10(lo), math.log10(hi), 200)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for level, bw in roofline.memory.items():
        ax.plot(xs, np.minimum(peak, bw * xs), lw=1.5, label=f"{level} {bw:,.0f} GB/s")
    for name, value in roofline.compute.items():
        if name.endswith(dtype):
            ax.axhline(value, ls="--", lw=1, color="gray")
            ax.text(xs[0], value * 1.04, f"{name} {value:,.0f} GFLOP/s", fontsize=8)
    for label, p in items:
        ax.scatter([p.intensity], [p.achieved_gflops], zorder=3)
        ax.annotate(f"{label} ({p.fraction:.0%})", (p.intensity, p.achieved_gflops),
                    textcoords="offset points", xytext=(5, 5), fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"roofline {dtype}, {roofline.threads} threads, "
                 f"{roofline.machine.get('cpu_model', '')}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, which="both", alpha=0.3)
    out = Path(path)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return out
