"""Fixtures of the results tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from _results_helpers import synthetic
from fastbench import results


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A fastbench file holding the measurements kind: {"a": synthetic()}."""
    path = tmp_path / "good.json"
    results.save({"a": synthetic()}, path)
    return path
