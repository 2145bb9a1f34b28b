"""The machine's roofline: compute ceilings (FMA peak, FMA+ADD peak, achieved GEMM) and memory
ceilings per cache level (L1, L2, L3, DRAM), calibrated from the native kernels, cached on
disk per machine, and the placement of a workload under them.

A face: the model and the verdict are :mod:`.model`, calibration and the cache
:mod:`.calibration`, the plot :mod:`.plotting` (matplotlib, the ``plot`` extra, imported only
there), the native kernels :mod:`.kernels`. Nothing here prints.
"""

from __future__ import annotations

from . import kernels
from .calibration import AGREE_WITHIN, CACHE_VERSION, MAX_READINGS, cache_path, calibrate, place
from .model import (ABOVE_ROOF_CAUSES, ABOVE_ROOF_TOLERANCE, BOUNDS, DTYPES, LEVELS, Placement,
                    Roofline, workload_threads)
from .plotting import plot

__all__ = ["ABOVE_ROOF_CAUSES", "ABOVE_ROOF_TOLERANCE", "AGREE_WITHIN", "BOUNDS", "CACHE_VERSION",
           "DTYPES", "LEVELS", "MAX_READINGS", "Placement", "Roofline", "cache_path", "calibrate", "place", "plot",
           "workload_threads"]
