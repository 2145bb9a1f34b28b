"""Calibrating this machine's roofline: the plan (which kernels, working sets and threads),
the GEMM ceiling timed with the native timing loop, the per-machine cache on disk, and
``place`` on the calibrated roofline.

The kernels are :mod:`.kernels`' and the cache sizes :mod:`fastbench.machine`'s; nothing
here prints: progress goes to the ``progress`` callable the caller passes (the CLI's bar is
:func:`fastbench.report.progress.progress_bar`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from .. import _core
from .._version import __version__
from ..machine import cache_dir, caches, core_counts, machine_info
from ..measurement import Measurement
from ..report.progress import Progress
from ..report.warnings import WarningRecord
from ..timing.callables import measure
from ..units import format_bytes
from . import kernels
from .model import (DTYPES, LEVELS, TABLE_AGREE_WITHIN, UNSETTLED, Placement, Roofline,
                    check_workload, workload_threads)

__all__ = ["AGREE_WITHIN", "CACHE_VERSION", "MAX_READINGS", "Progress", "TABLE_AGREE_WITHIN",
           "cache_path", "calibrate", "place"]

# Bump when what calibrate() measures or how it stores it changes: older cache files are
# then recalibrated rather than read.
# 1: first layout. 2: quick calibrations measure DRAM at the full working set too.
# 3: every ceiling is read until two readings agree; unsettled ones carry warnings.
# 4: FMA peaks on both register widths (the faster kept), bf16 and int8 dot ceilings.
# 5: L1 and L2 triads on both register widths (the faster kept); each ceiling's ISA recorded.
# 6: bf16 and int8 ceilings on AMX tiles; quick L3 at its smaller size; DRAM at most 1 GiB.
# 7: a peak far below the table's figure read again at the end; each peak's share recorded.
# 8: float64 GEMM on a 6x16 ymm tile where zmm FMAs run at half rate (its ceiling re-timed).
CACHE_VERSION = 8
# The DRAM working set: far beyond any last-level cache, whatever the machine reports: 8x
# the L3, within these bounds. A VM reporting its host's 480 MiB L3 made 8x of it 3.75 GiB,
# whose allocation and first touch alone took seconds of a quick calibration; twice an L3
# shared with other tenants already measures memory.
_DRAM_MIN_BYTES = 256 << 20
_DRAM_MAX_BYTES = 1 << 30
# One reading of a ceiling is not enough: on a shared machine single quick readings of one
# 2-thread float32 FMA ceiling came out 205, 153, 142 and 276 GFLOP/s, and the first one
# cached would have been reused ever after. So each ceiling is read until two readings
# agree within AGREE_WITHIN of the larger, at most MAX_READINGS times. The ceiling is the
# larger of the highest agreeing pair: interference only slows a kernel, and the second
# reading confirms the first was no accident. One that never settles keeps its highest
# reading and a warning, and the roofline is then measured again rather than reused.
AGREE_WITHIN = 0.05
MAX_READINGS = 5

_T = TypeVar("_T")


def _machine() -> dict[str, Any]:
    info = machine_info()
    return {
        "cpu_model": info.cpu_model, "logical_cores": info.logical_cores,
        "caches": [f"L{c.level} {c.kind} {c.size_bytes}" for c in info.caches],
        "gemm_isa": _core.gemm_isa(),  # float32's; "ceiling_isas" has each GEMM ceiling's
        "best_isa": _core.best_isa(),  # the CPU's widest, which code placed here may use
    }


def _level_sizes(threads: int, quick: bool) -> dict[str, list[int]]:
    """Working sets (all arrays, all threads) that sit in each level, from the caches.

    Per-core caches (L1, L2) hold one thread's slice each; a shared L3 holds all slices.
    Each level gets sizes between the level below and a fraction of its own, so the
    plateau is measured away from both edges.
    """
    data = {c.level: c for c in caches() if c.kind in ("Data", "Unified")}
    l1 = data[1].size_bytes if 1 in data else 32 << 10
    l2 = data[2].size_bytes if 2 in data else 512 << 10
    l3 = data[3].size_bytes if 3 in data else 8 << 20
    shared3 = data[3].shared_by_cpus if 3 in data and data[3].shared_by_cpus else threads
    per_l3 = l3 * min(threads, shared3) // max(shared3, 1)  # what these threads share
    plan = {
        "L1": [l1 // 4 * threads, l1 // 2 * threads],
        "L2": [max(2 * l1, l2 // 4) * threads, l2 // 2 * threads],
        "L3": [max(2 * l2 * threads, per_l3 // 8), per_l3 // 3],
        "DRAM": [max(_DRAM_MIN_BYTES, min(8 * l3, _DRAM_MAX_BYTES))],
    }
    if quick:
        # One size a level: the larger in L1 and L2 (less loop overhead a byte), the smaller
        # in L3, where a shared cache holds less than it reports (a VM's 480 MiB L3 measured
        # 58 GB/s at 60 MiB and DRAM's 28 at 160 MiB).
        plan = {k: v[:1] if k == "L3" else v[-1:] for k, v in plan.items()}
    return plan


def _settled(readings: Sequence[float]) -> float | None:
    """The larger of the highest pair of ``readings`` within AGREE_WITHIN of each other, or
    None. Neighbours in sorted order suffice: any agreeing pair has agreeing neighbours
    between them."""
    ordered = sorted(readings, reverse=True)
    for hi, lo in zip(ordered, ordered[1:]):
        if hi - lo <= AGREE_WITHIN * hi:
            return hi
    return None


def _read_until_agreed(name: str, unit: str, read: Callable[[], _T],
                       value: Callable[[_T], float]) -> tuple[_T, WarningRecord | None]:
    """``read()`` until two readings agree (see AGREE_WITHIN), at most MAX_READINGS times:
    the reading that is the ceiling, and a warning when none settled (then the highest)."""
    results: list[_T] = []
    for _ in range(MAX_READINGS):
        results.append(read())
        readings = [value(r) for r in results]
        settled = _settled(readings)
        if settled is not None:
            return results[readings.index(settled)], None
    readings = [value(r) for r in results]
    best = max(range(len(results)), key=lambda i: readings[i])
    shown = ", ".join(f"{r:,.1f}" for r in readings)
    return results[best], WarningRecord(
        f"{name}: {len(readings)} readings ({shown} {unit}) never agreed within "
        f"{AGREE_WITHIN:.0%}; the ceiling is the highest. The machine is busy or its clock "
        "varies: this calibration is not reused from the cache", UNSETTLED)


def _gemm_gflops(dtype: str, n: int, threads: int, duration_s: float) -> float:
    """GFLOP/s of an ``n``-cubed GEMM: 2 n³ FLOPs over the median time of one call.

    Timed by ``fastbench.measure``, one call per sample (a call lasts milliseconds, far
    above the clock's resolution), over at least 3 samples and ``duration_s``; the warmup
    sample pays the packing buffers and page faults. Sampling stops after 2 x
    ``duration_s`` even if interference held most of it.
    """
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    m = measure(kernels.gemm, a, b, out, threads=threads, warmup=1, loops=1, repeat=3,
                duration_s=duration_s, max_time_s=2 * duration_s, name=f"gemm {dtype} n={n}")
    return 2.0 * n**3 / m.median_ns


def _peak_widths(dtype: str) -> list[str]:
    """The ISAs (tiles and register widths) whose chains ``dtype`` can run now, widest
    first; the portable scalars only where no SIMD path runs."""
    active = _core.active_isa()
    names = _core.isa_names()
    simd = [isa for isa in ("avx512", "avx2") if names.index(isa) <= names.index(active)]
    if dtype == "bfloat16":
        return ((["amx"] if active == "amx" else [])
                + (["avx512"] if _core.has_avx512_bf16() else []))
    if dtype == "int8":
        return ((["amx"] if _core.has_amx_int8() else [])
                + [isa for isa in simd if isa == "avx512" and _core.has_avx512_vnni()]
                + (["avx2"] if _core.has_avx_vnni() else []))
    return simd or ["portable"]


def _dot_dtypes() -> list[str]:
    """"bfloat16" and "int8" where this CPU (and the cap) can time their dot products."""
    return [dt for dt in ("bfloat16", "int8") if _peak_widths(dt)]


def _table_deviation(name: str, best: kernels.PeakResult,
                     per_width: Mapping[str, kernels.PeakResult], threads: int,
                     split_512: bool) -> str:
    """A warning line when the measured FLOP/cycle differs from the table's by more than
    TABLE_AGREE_WITHIN, naming the likely cause; "" when they agree or there is no figure."""
    efficiency = best.efficiency
    if efficiency is None or abs(efficiency - 1) <= TABLE_AGREE_WITHIN:
        return ""
    causes: list[str] = []
    if efficiency > 1:
        causes.append("the table's row does not fit this CPU, or the core clock read low "
                      "(it varies under load)")
    else:
        narrower = [p for isa, p in per_width.items() if p is not best and p.efficiency]
        # Only a narrower path running nearly as fast says the width is wrong: AMX tiles
        # reach a smaller share of their figure than the vector dot products of theirs, at
        # several times the rate.
        close = [p for p in narrower if best.gflops < 1.2 * p.gflops]
        if best.vector_bits == 512 and not split_512 and close:
            causes.append("zmm ran no faster than ymm: this core may split 512-bit FMAs or "
                          "have one 512-bit FMA unit (the wrong width for the table's row)")
        elif close and max(p.efficiency or 0 for p in close) > efficiency + 0.1:
            causes.append("the narrower width came closer to its figure: the wrong width "
                          "was chosen")
        if threads > 1 and abs(efficiency * threads - 1) <= TABLE_AGREE_WITHIN:
            causes.append(f"the {threads} threads ran at one core's rate: they shared one "
                          "core (SMT siblings, or vCPUs the hypervisor placed on one core), "
                          "or other work held the rest")
        if _core.cpu_features().hypervisor:
            causes.append("a VM: the hypervisor may throttle or share this core")
        logical, physical = core_counts()
        if physical is not None and threads > physical:
            causes.append(f"{threads} threads on {physical} physical cores: SMT siblings "
                          "share each core's pipes")
        if not causes:
            causes.append("the machine is busy, or the core clock read high")
    return (f"warning: {name} reaches {efficiency:.0%} of what the table promises "
            f"({best.flops_per_cycle:.1f} of {best.expected_flops_per_cycle:.1f} per cycle); "
            f"likely cause: {'; '.join(causes)}")


def _peak_name(dtype: str, mix: bool) -> str:
    """The ceiling a peak kernel measures: "fma float32", "fma+add float64", "dot int8"."""
    return f"{'fma+add' if mix else ('dot' if dtype == 'int8' else 'fma')} {dtype}"


def _peak_kind(name: str) -> tuple[str, bool]:
    """(dtype, FMA+ADD mix) of a ceiling named by _peak_name."""
    kind, dtype = name.split(" ", 1)
    return dtype, kind == "fma+add"


def _best(per_width: Mapping[str, kernels.PeakResult]) -> kernels.PeakResult:
    """The fastest of a peak's readings per width."""
    return max(per_width.values(), key=lambda p: p.gflops)


def _table_share(best: kernels.PeakResult) -> float | None:
    """A peak's share of the table's FLOP per cycle, which vector chains reach on a quiet
    core; None without a figure, and for AMX tile products, which reach about 84% of theirs
    on a quiet core (tdpbusd, a Golden Cove-class Xeon guest)."""
    return None if best.isa == "amx" else best.efficiency


def _reads_low(best: kernels.PeakResult) -> bool:
    """Whether a peak sits more than TABLE_AGREE_WITHIN below the table's figure."""
    share = _table_share(best)
    return share is not None and share < 1 - TABLE_AGREE_WITHIN


def _wider_promise(widest: kernels.PeakResult, best: kernels.PeakResult) -> float | None:
    """How many times ``best``'s FLOP per cycle the table promises the widest path, where
    ``best`` (the fastest measured) is another path and the promise exceeds it by more than
    TABLE_AGREE_WITHIN; else None (no figure, or no promise that the widest is faster)."""
    if best is widest or widest.expected_flops_per_cycle <= 0 or best.expected_flops_per_cycle <= 0:
        return None
    promise = widest.expected_flops_per_cycle / best.expected_flops_per_cycle
    return promise if promise > 1 + TABLE_AGREE_WITHIN else None


def cache_path(threads: int, dtypes: Sequence[str], quick: bool) -> Path:
    """Where calibrate() keeps its result for these settings on this machine.

    ``$FASTBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/fastbench``, else ``~/.cache/fastbench``.
    The name hashes the CPU model, the logical cores, the fastbench version and the settings,
    so a different CPU or version never reads another's ceilings.
    """
    return _cache_path(_machine(), threads, dtypes, quick)


def _cache_path(m: Mapping[str, Any], threads: int, dtypes: Sequence[str], quick: bool) -> Path:
    key = json.dumps([CACHE_VERSION, __version__, m["cpu_model"], m["logical_cores"],
                      m["caches"], m["gemm_isa"], threads, list(dtypes), quick])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / f"roofline-{digest}.json"


def _load_cached(path: Path, machine: Mapping[str, Any]) -> tuple[Roofline | None, str]:
    """The cached roofline, or None and why it is not used ("" when there is nothing to say:
    no file yet, or one of another version or CPU)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as e:
        return None, f"the cached calibration {path} could not be read ({e}); measured afresh"
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("cache_version") != CACHE_VERSION:
            return None, ""  # stale: an older layout
        r = Roofline.from_dict(data["roofline"])
    # Any failure to read our own file means "measure again": deep nesting
    # (RecursionError), huge numbers (OverflowError), anything else a corrupt file holds.
    except Exception as e:  # noqa: BLE001
        return None, (f"the cached calibration {path} is unreadable "
                      f"({type(e).__name__}: {str(e)[:200]}); measured afresh")
    if r.fastbench_version != __version__ or r.machine.get("cpu_model") != machine["cpu_model"]:
        return None, ""
    if not r.settled:
        return None, (f"the cached calibration {path} had ceilings that never settled; "
                      "measured afresh")
    return r, ""


def _store(path: Path, r: Roofline) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".roofline-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"cache_version": CACHE_VERSION, "roofline": r.to_dict()}, f)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home keeps the result in memory only


def _progress(progress: Progress | bool | None) -> Progress | None:
    if progress is True:
        raise TypeError("calibrate(progress=True): fastbench does not print; pass a "
                        "callable(done, total, what), e.g. fastbench.report.progress."
                        "progress_bar(sys.stderr, 'roofline'), or None for no progress")
    return None if progress is None or progress is False else progress


def calibrate(threads: int | None = None, dtypes: Iterable[str] = DTYPES, quick: bool = False,
              *, cache: bool = True,
              progress: Progress | bool | None = None) -> Roofline:
    """Measure this machine's compute and memory ceilings.

    Parameters
    ----------
    threads : int, optional
        Threads for every kernel; None means all cores. Place a workload on a roofline of
        the threads it runs on (PyTorch: ``torch.get_num_threads()``); ``place`` warns
        when they differ.
    dtypes : iterable of {"float32", "float64"}
        Compute ceilings to measure.
    quick : bool
        One working set per level and shorter timings: a few seconds instead of ~10-15.
    cache : bool
        Read and write the per-machine cache (``cache_path()``); False always measures.
    progress : callable(done, total, what), optional
        Called before each step with the steps done, their total and the step's name, and
        once more at the end with ``done == total``. None (or False) reports nothing;
        nothing is ever printed (a terminal bar:
        ``fastbench.report.progress.progress_bar(sys.stderr, "roofline")``).

    Returns
    -------
    Roofline
        Each ceiling is read until two readings agree within ``AGREE_WITHIN`` (5%) of the
        larger, at most ``MAX_READINGS`` (5) times, and is the larger of the highest
        agreeing pair. A ceiling whose readings never agree keeps the highest and adds a
        warning to ``warnings`` (``settled`` is then False): such a roofline is stored
        with its warnings but measured again, not reused, by the next ``calibrate``.
        A cache file that cannot be read is measured over, with a note saying so.

    Raises
    ------
    ValueError
        An unknown or empty ``dtypes``, fewer than 1 thread.
    TypeError
        ``progress=True``: the library does not draw a bar itself.
    """
    nthreads = _core.hardware_threads() if threads is None else kernels._threads(threads)
    dts = tuple(dict.fromkeys(dtypes))
    for dt in dts:
        if dt not in DTYPES:
            raise ValueError(f"dtypes must be among {', '.join(DTYPES)}, got {dt!r}")
    if not dts:
        raise ValueError("dtypes is empty")
    show = _progress(progress)
    machine = _machine()
    path = _cache_path(machine, nthreads, dts, quick)
    notes: list[str] = []
    if cache:
        cached, why_not = _load_cached(path, machine)
        if cached is not None:
            return cached
        if why_not:
            notes.append(why_not)

    peak_s = 0.03 if quick else 0.15
    bw_s = 0.02 if quick else 0.08
    gemm_n = 512 if quick else 1024
    sizes = _level_sizes(nthreads, quick)
    steps: list[tuple[str, Callable[[], None]]] = []
    compute: dict[str, float] = {}
    memory: dict[str, float] = {}
    sweep: list[tuple[int, float, str]] = []
    warnings: list[WarningRecord] = []
    ceiling_isas: dict[str, str] = {}  # the ISA each compute ceiling was measured with
    table_shares: dict[str, float] = {}  # each peak's share of the table's FLOP per cycle

    def settle(name: str, unit: str, read: Callable[[], _T], value: Callable[[_T], float]) -> _T:
        result, warning = _read_until_agreed(name, unit, read, value)
        if warning is not None:
            warnings.append(warning)
        return result

    def peak_reader(dt: str, mix: bool, isa: str) -> Callable[[], kernels.PeakResult]:
        return lambda: kernels.peak_flops(dt, nthreads, add_mix=mix, min_time_s=peak_s, isa=isa)

    # Each peak's readings per width, by ceiling name; the notes are written once every
    # reading, the second look included, is in.
    peaks: dict[str, tuple[str, dict[str, kernels.PeakResult]]] = {}

    def read_widths(name: str, dt: str, mix: bool) -> dict[str, kernels.PeakResult]:
        # Every width this CPU (and the cap) allows, the faster kept: some cores run zmm
        # FMAs at half rate (Zen 4 splits them; Intel parts with one 512-bit unit).
        per_width: dict[str, kernels.PeakResult] = {}
        for isa in _peak_widths(dt):
            per_width[isa] = settle(f"{name} ({isa})", "GFLOP/s", peak_reader(dt, mix, isa),
                                    lambda p: p.gflops)
        widest = next(iter(per_width))
        if _wider_promise(per_width[widest], _best(per_width)) is not None:
            # Two agreeing readings can both be slowed by a disturbance that outlasts them
            # (on a shared 2-vCPU guest, 2-thread float32 zmm once read 217.7 GFLOP/s twice,
            # then 442-471 in every later calibration; ymm, read after, 240 won). Where the
            # table promises the wider width more, it is read again before it loses.
            again = settle(f"{name} ({widest}, read again)", "GFLOP/s",
                           peak_reader(dt, mix, widest), lambda p: p.gflops)
            if again.gflops > per_width[widest].gflops:
                per_width[widest] = again
        return per_width

    def peak_step(dt: str, mix: bool) -> Callable[[], None]:
        def run() -> None:
            name = _peak_name(dt, mix)
            unit = "OPS" if dt == "int8" else "FLOP"
            peaks[name] = (unit, read_widths(name, dt, mix))
            compute[name] = _best(peaks[name][1]).gflops  # in step order; final below
        return run

    def second_look(name: str, dt: str, mix: bool) -> Callable[[], None]:
        # A peak far below the table's figure is read once more after every other step, and
        # the faster reading of each width kept: on a shared 2-vCPU guest a 2-thread quick
        # calibration once read all four float FMA ceilings and both GEMMs at one core's
        # rate (50-51% of the table) while the bf16 and int8 peaks, read seconds later,
        # reached 98-99%.
        def run() -> None:
            unit, first = peaks[name]
            before = _best(first)
            again = read_widths(name, dt, mix)
            merged = {isa: max(p, again.get(isa, p), key=lambda r: r.gflops)
                      for isa, p in first.items()}
            peaks[name] = (unit, merged)
            after = _best(merged)
            notes.append(f"{name} read {before.gflops:,.1f} G{unit}/s, "
                         f"{before.efficiency or 0:.0%} of the table's figure; read again after "
                         f"the other ceilings: {_best(again).gflops:,.1f}, so the ceiling "
                         f"is {after.gflops:,.1f}")
        return run

    def gemm_step(dt: str) -> Callable[[], None]:
        def run() -> None:
            compute[f"gemm {dt}"] = settle(
                f"gemm {dt}", "GFLOP/s", lambda: _gemm_gflops(dt, gemm_n, nthreads, peak_s),
                float)
            ceiling_isas[f"gemm {dt}"] = _core.gemm_isa(dt == "float64")
        return run

    def gemm_again(dt: str) -> Callable[[], None]:
        # The GEMM ceiling of a dtype whose peak read low was timed in the same slow spell.
        def run() -> None:
            name = f"gemm {dt}"
            before = compute[name]
            gemm_step(dt)()
            compute[name] = max(before, compute[name])
        return run

    level_isas: dict[str, tuple[float, str]] = {}  # level: (best GB/s, the loops that won)

    def level_step(level: str, nbytes: int) -> Callable[[], None]:
        def run() -> None:
            # In the caches the vector width sets the rate, and some cores split zmm loads
            # and stores in halves (Zen 4): every width is timed and the faster kept. Past
            # them DRAM sets it, and the kernel picks its own loops.
            widths = _peak_widths("float64") if level in ("L1", "L2") else [None]
            best: kernels.BandwidthResult | None = None
            for isa in widths:
                def read(isa: str | None = isa) -> kernels.BandwidthResult:
                    return kernels.bandwidth("triad", nbytes, nthreads, bw_s, isa=isa)
                label = f"triad {level} {nbytes >> 10} KiB" + (f" ({isa})" if isa else "")
                r = settle(label, "GB/s", read, lambda b: b.gb_per_s)
                if best is None or r.gb_per_s > best.gb_per_s:
                    best = r
            assert best is not None
            sweep.append((nbytes, best.gb_per_s, level))
            if best.gb_per_s > level_isas.get(level, (0.0, ""))[0]:
                level_isas[level] = (best.gb_per_s, best.isa)
        return run

    arch = kernels.this_microarch()
    notes.append(f"cores: {arch.describe()}" if arch.known else f"cores: {arch.caveat}")
    for dt in dts:
        steps.append((f"FMA peak {dt}", peak_step(dt, False)))
        steps.append((f"FMA+ADD peak {dt}", peak_step(dt, True)))
        steps.append((f"GEMM {dt} n={gemm_n}", gemm_step(dt)))
    # bf16 and int8 dot products: ceilings of their own where the CPU (and the cap) has them.
    for dt in _dot_dtypes():
        steps.append((f"{'bf16' if dt == 'bfloat16' else dt} dot peak", peak_step(dt, False)))
    for level in LEVELS:
        for nbytes in sizes[level]:
            steps.append((f"triad {level} {nbytes >> 10} KiB", level_step(level, nbytes)))

    t0 = time.perf_counter()  # the calibration's own wall time, reported beside the ceilings
    for i, (what, run) in enumerate(steps):
        if show is not None:
            show(i, len(steps), what)
        run()
    low = [name for name, (_, per_width) in peaks.items() if _reads_low(_best(per_width))]
    again_steps = [(f"{name} again", second_look(name, *_peak_kind(name))) for name in low]
    again_steps += [(f"GEMM {dt} again", gemm_again(dt)) for dt in dts
                    if any(_peak_kind(name)[0] == dt for name in low)]
    done = len(steps)
    for what, run in again_steps:
        if show is not None:
            show(done, len(steps) + len(again_steps), what)
        run()
        done += 1
    if show is not None:
        show(done, done, "done")
    for name, (unit, per_width) in peaks.items():
        best = _best(per_width)
        compute[name] = best.gflops
        ceiling_isas[name] = best.isa
        share = _table_share(best)
        if share is not None:
            table_shares[name] = round(share, 4)
        others = ", ".join(f"{p.isa} {p.gflops:,.1f}" for p in per_width.values()
                           if p is not best)
        expect = (f" of {best.expected_flops_per_cycle:.0f} expected"
                  if best.expected_flops_per_cycle > 0 else ", no expected figure")
        notes.append(f"{name}: {best.flops_per_cycle:.1f} {unit}/cycle per core{expect} "
                     f"({best.instruction}, core at {best.core_hz / 1e9:.2f} GHz"
                     + (f"; the faster width, against {others} G{unit}/s" if others else "")
                     + ")")
        widest = next(iter(per_width))
        promise = _wider_promise(per_width[widest], best)
        if promise is not None:
            # The widest lost though read again (read_widths) before losing.
            notes.append(
                f"warning: {name}: {best.isa} ran faster than {widest} "
                f"({best.gflops:,.1f} against {per_width[widest].gflops:,.1f} G{unit}/s, "
                f"{widest} read twice over), where the table gives {widest} {promise:.1f}x "
                f"{best.isa}'s figure per cycle: this core may run {widest} at part "
                f"rate (the table's row does not fit), or the machine slowed every "
                f"{widest} reading; the ceiling may be low")
        deviation = _table_deviation(name, best, per_width, nthreads, arch.split_512)
        if deviation:
            notes.append(deviation)
    for level in LEVELS:
        values = [g for _, g, lv in sweep if lv == level]
        # The plateau: the best size of the level (smaller sizes pay loop overheads, larger
        # ones spill into the next level).
        memory[level] = max(values)
    for faster, slower in zip(LEVELS, LEVELS[1:]):
        if memory[faster] <= memory[slower] * (1 + AGREE_WITHIN):
            tried = ", ".join(format_bytes(n) for n, _, lv in sweep if lv == faster)
            notes.append(f"{faster} measured {memory[faster]:,.1f} GB/s, no faster than "
                         f"{slower} ({memory[slower]:,.1f}): at the sizes tried ({tried}) the "
                         f"{faster} this CPU reports behaved as {slower} (a cache shared with "
                         "other tenants, as in a VM, or larger than these threads' share)")
    # An FMA+ADD mix that gains nothing is not a separate ceiling.
    for dt in dts:
        if compute[f"fma+add {dt}"] < compute[f"fma {dt}"] * 1.02:
            notes.append(f"fma+add {dt} gains nothing over fma alone here "
                         "(adds share the FMA pipes)")
    ceiling_isas.update({level: isa for level, (_, isa) in level_isas.items()})
    machine = {**machine, "ceiling_isas": ceiling_isas, "ceiling_table_shares": table_shares}
    r = Roofline(compute, memory, nthreads, quick, machine, sweep=tuple(sweep),
                 notes=tuple(notes), calibration_s=time.perf_counter() - t0,
                 warnings=tuple(warnings))
    if cache:
        _store(path, r)
    return r


def place(measurement: Measurement | None = None, *, flops: float, bytes: float,
          seconds: float | None = None, dtype: str = "float32", level: str | None = None,
          ceiling: str | None = None, roofline: Roofline | None = None,
          threads: int | None = None, working_set_bytes: int | None = None) -> Placement:
    """Place a workload on ``roofline`` (by default this machine's, from the cache or a
    fresh ``calibrate()`` on the workload's threads where they are known: ``threads``, or
    PyTorch's where torch is imported). See ``Roofline.place``."""
    check_workload(measurement, flops, bytes, seconds, working_set_bytes)  # before calibrating
    ran_on = workload_threads(threads)
    r = roofline if roofline is not None else calibrate(threads=ran_on)
    return r.place(measurement, flops=flops, bytes=bytes, seconds=seconds, dtype=dtype,
                   level=level, ceiling=ceiling, threads=ran_on,
                   working_set_bytes=working_set_bytes)
