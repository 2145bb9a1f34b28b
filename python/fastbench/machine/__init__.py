"""The machine a benchmark runs on: read-only facts (CPU, cores, caches, flags), checks
for sources of benchmark noise, the run metadata recorded beside every result, and how much
separate runs vary here.

A face: the facts are :mod:`.facts`, the checks :mod:`.noise`, the metadata
:mod:`.metadata`, the run-to-run variation kept per machine :mod:`.variation` and per
workload :mod:`.runlog`, file access :mod:`.sysfs`. Nothing here measures or prints (the text is
:mod:`fastbench.report.machine`'s), and nothing imports the rest of fastbench but the
version (other modules import this one).
"""

from __future__ import annotations

from . import facts, metadata, noise, runlog, variation
from .facts import *  # noqa: F403 - the face hands on each module's curated __all__
from .metadata import *  # noqa: F403
from .noise import *  # noqa: F403
from .runlog import *  # noqa: F403
from .variation import *  # noqa: F403

__all__ = [*facts.__all__, *metadata.__all__, *noise.__all__, *runlog.__all__,
           *variation.__all__]
