"""Reports: one table model (:mod:`.table`), warnings as records (:mod:`.warnings`) and the
text formatters that turn results into lines (:mod:`.text`, :mod:`.machine`). Reports return
strings or lists of lines and never print; only the CLI prints.

This face imports only the leaf modules, so that result types low in the package can use the
table and the warning record without importing the formatters above them.
"""

from __future__ import annotations

from .table import Table
from .warnings import SEVERITIES, WarningRecord

__all__ = ["SEVERITIES", "Table", "WarningRecord"]
