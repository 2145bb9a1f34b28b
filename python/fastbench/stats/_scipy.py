"""scipy.stats, imported on first use: it takes most of a second to import, which commands
that never reach a statistic (``fastbench stat``, ``info``) should not pay. Every module of
fastbench.stats reaches scipy through :func:`sps`; nothing else here.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=None)
def sps() -> Any:  # the scipy.stats module (untyped)
    """The scipy.stats module, imported by the first call."""
    from scipy import stats

    return stats
