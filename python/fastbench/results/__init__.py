"""Results files: fastbench's versioned JSON (save/load), readers for pyperf and
pytest-benchmark, and the result kinds they hold.

A face: the kinds table is :mod:`.kinds`, what each kind's data must hold when read
:mod:`.schema`, fastbench's own files :mod:`.files`, other tools' files :mod:`.importers`;
the machine metadata stored beside the data comes from :mod:`fastbench.machine.metadata`.
"""

from __future__ import annotations

from ..machine.metadata import machine_metadata
from .files import SCHEMA_VERSION, ResultsFile, ResultsFileError, load, load_file, save
from .importers import load_any, load_pyperf, load_pytest_benchmark
from .kinds import register_kind

__all__ = [
    "SCHEMA_VERSION",
    "ResultsFile",
    "ResultsFileError",
    "load",
    "load_any",
    "load_file",
    "load_pyperf",
    "load_pytest_benchmark",
    "machine_metadata",
    "register_kind",
    "save",
]
