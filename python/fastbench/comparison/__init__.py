"""Comparisons and their verdicts: variants measured in one invocation (:mod:`.interleaved`),
results measured apart (:mod:`.saved`), versions of the code measured side by side
(:mod:`.versions`), judged by one set of rules (:mod:`.judging`) into the records of
:mod:`.records`; and the gate over them (:mod:`.gating`), the one judgement of whether a
change may pass. A face: each module's curated ``__all__`` is handed on.
"""

from __future__ import annotations

from . import gating, interleaved, judging, records, saved, versions
from .gating import *  # noqa: F403
from .interleaved import *  # noqa: F403
from .judging import *  # noqa: F403
from .records import *  # noqa: F403
from .saved import *  # noqa: F403
from .versions import *  # noqa: F403

__all__ = [*gating.__all__, *interleaved.__all__, *judging.__all__, *records.__all__,
           *saved.__all__, *versions.__all__]
