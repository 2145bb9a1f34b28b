"""Multiple-testing corrections of p-values: Holm's step-down and Benjamini-Hochberg
(:func:`adjust_pvalues`). A pure function; the verdicts that use it are compare_samples'.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_choice
from .samples import as_samples


def adjust_pvalues(pvalues: Any, method: str = "holm") -> NDArray[np.float64]:
    """Adjust p-values for multiple comparisons, in the input order.

    ``"holm"``: Holm's step-down (Holm 1979, Scand. J. Stat. 6:65), controlling the
    family-wise error rate: with ascending ``p_(1) <= ... <= p_(m)``, the adjusted
    ``p_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.
    ``"bh"``: Benjamini-Hochberg (1995, JRSS B 57:289), controlling the false discovery
    rate: ``p_(i) = min_{j >= i} min(1, m p_(j) / j)``; equals
    ``scipy.stats.false_discovery_control(p, method="bh")``.

    Parameters
    ----------
    pvalues : array_like
        One-dimensional p-values in [0, 1].
    method : {"holm", "bh"}
        Correction.

    Returns
    -------
    ndarray of float64
        Adjusted p-values, monotone in the raw ones, at most 1, same order as the input.

    Raises
    ------
    ValueError
        If the input is empty, not one-dimensional, not finite or outside [0, 1], or the
        method is unknown.
    """
    p = as_samples(pvalues, name="pvalues")
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("pvalues must lie in [0, 1]")
    check_choice("method", method, ("holm", "bh"))
    m = p.size
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    rank = np.arange(1, m + 1, dtype=np.float64)
    if method == "holm":
        adjusted = np.maximum.accumulate(np.minimum(1.0, (m - rank + 1.0) * ranked))
    else:
        adjusted = np.minimum.accumulate(np.minimum(1.0, m * ranked / rank)[::-1])[::-1]
    out = np.empty(m, dtype=np.float64)
    out[order] = adjusted
    return out
