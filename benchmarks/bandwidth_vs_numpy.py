"""fastbench triad and copy at DRAM size against numpy's expressions and a plain C STREAM
triad compiled -O3, one thread, interleaved. Bytes are counted as STREAM does for all of
them (copy 16 B, triad 24 B per element; no write-allocate), so GB/s compare directly.
Targets: >= 1.0x numpy, and within 10% of the C triad. Then read and triad in L1 and L2 on
every ISA path this CPU runs (through the ISA cap), and numpy's sum and triad at the same
sizes: the cache ceilings should be the widest path's.
Run on a quiet machine: python benchmarks/bandwidth_vs_numpy.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy as np

from fastbench import _core
from fastbench.machine import caches
from fastbench.roofline import kernels

from _anchors import script_args

WORKING_SET = 3 * (96 << 20)  # three 96 MiB arrays: far beyond the last-level cache
C_TRIAD = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char** argv) {
  size_t n = (size_t)atoll(argv[1]);
  int passes = atoi(argv[2]);
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
  for (size_t i = 0; i < n; ++i) { a[i] = 1.0; b[i] = 2.0; c[i] = 0.5; }
  double best = 1e30, s = 3.0;
  for (int p = 0; p < passes; ++p) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    if (dt < best) best = dt;
  }
  printf("%.6f %f\n", 24.0 * n / best / 1e9, a[n / 2]);
  return 0;
}
"""


def _c_triad(n: int) -> float | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "triad.c"), os.path.join(d, "triad")
        with open(src, "w") as f:
            f.write(C_TRIAD)
        subprocess.run([cc, "-O3", "-o", exe, src], check=True)
        out = subprocess.run([exe, str(n), "10"], check=True, capture_output=True, text=True)
        return float(out.stdout.split()[0])


def _best_gbs(fn: object, nbytes: float, rounds: int = 7) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(nbytes / (time.perf_counter() - t0) / 1e9)
    return out


def main() -> None:
    n = WORKING_SET // 3 // 8
    a, b, c = np.ones(n), np.full(n, 2.0), np.full(n, 0.5)
    s = 3.0
    print(f"one thread, {WORKING_SET >> 20} MiB working set, GB/s (STREAM byte counting)")
    fb_triad, fb_copy, np_triad, np_copy = [], [], [], []
    for _ in range(5):  # interleaved
        fb_triad.append(kernels.bandwidth("triad", WORKING_SET, threads=1, min_time_s=0.2).gb_per_s)
        np_triad += _best_gbs(lambda: np.add(b, np.multiply(c, s, out=a), out=a), 24.0 * n, 3)
        fb_copy.append(kernels.bandwidth("copy", WORKING_SET * 2 // 3, threads=1,
                                         min_time_s=0.2).gb_per_s)
        np_copy += _best_gbs(lambda: np.copyto(a, c), 16.0 * n, 3)
    rows = [("triad", max(fb_triad), max(np_triad)), ("copy", max(fb_copy), max(np_copy))]
    print(f"  {'kernel':<8}{'fastbench':>11}{'numpy':>9}{'ratio':>8}")
    for name, fb, npy in rows:
        print(f"  {name:<8}{fb:>11.2f}{npy:>9.2f}{fb / npy:>8.2f}")
    print("  numpy triad: np.add(b, np.multiply(c, s, out=a), out=a) (two passes, counted as one);"
          " copy: np.copyto(a, c)")
    c_gbs = _c_triad(n)
    if c_gbs is None:
        print("C STREAM triad: no C compiler found, skipped")
    else:
        print(f"C STREAM triad (-O3, best of 10): {c_gbs:.2f} GB/s; fastbench / C = "
              f"{max(fb_triad) / c_gbs:.2f} (target >= 0.90)")
    print(f"all-core triad at the same size: "
          f"{kernels.bandwidth('triad', WORKING_SET, min_time_s=0.2).gb_per_s:.2f} GB/s "
          f"({statistics.median(fb_triad):.2f} median single-thread)")

    _cache_levels()


def _cache_levels() -> None:
    """read and triad in L1 and L2 (half of each, one thread) on every ISA path, with
    numpy's sum and triad beside them."""
    data = {c.level: c.size_bytes for c in caches() if c.kind in ("Data", "Unified")}
    sizes = {"L1": data.get(1, 32 << 10) // 2, "L2": data.get(2, 512 << 10) // 2}
    isas = [i for i in _core.isa_names()
            if _core.isa_names().index(i) <= _core.isa_names().index(_core.best_isa())]
    print(f"cache levels, one thread, GB/s (best of 5 readings); "
          f"{', '.join(f'{k} {v >> 10} KiB' for k, v in sizes.items())}")
    print(f"  {'path':<10}" + "".join(f"{f'{k} {lv}':>12}" for lv in sizes
                                      for k in ("read", "triad")))
    before = _core._isa_cap()
    try:
        for isa in isas:
            _core._set_isa_cap(isa)
            row = [max(kernels.bandwidth(k, nbytes, threads=1, min_time_s=0.05).gb_per_s
                       for _ in range(5)) for nbytes in sizes.values() for k in ("read", "triad")]
            print(f"  {isa:<10}" + "".join(f"{g:>12.1f}" for g in row))
    finally:
        _core._set_isa_cap(before)
    row = []
    for nbytes in sizes.values():
        x = np.ones(nbytes // 8)
        n3 = nbytes // 24
        a3, b3, c3 = np.ones(n3), np.ones(n3), np.ones(n3)
        # Many calls: one over a cache-sized array lasts microseconds.
        row.append(max(_best_gbs(lambda: float(x.sum()), float(nbytes), 2000)))  # noqa: B023
        row.append(max(_best_gbs(lambda: np.add(b3, np.multiply(c3, 3.0, out=a3),  # noqa: B023
                                                out=a3), 24.0 * n3, 2000)))
    print(f"  {'numpy':<10}" + "".join(f"{g:>12.1f}" for g in row)
          + "   (sum; two-pass triad counted as one)")

if __name__ == "__main__":
    script_args(__doc__)
    main()
