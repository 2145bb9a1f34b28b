"""The one median/MAD helper: the robust centre and spread every module of fastbench uses
(floors, outliers, counter deltas, memory per call). NaNs are the caller's to remove.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["median_mad"]


def median_mad(values: Any) -> tuple[float, float]:
    """Median and median absolute deviation (unscaled) of ``values``.

    Raises
    ------
    ValueError
        ``values`` is empty.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("[median_mad] needs at least one value")
    med = float(np.median(x))
    return med, float(np.median(np.abs(x - med)))
