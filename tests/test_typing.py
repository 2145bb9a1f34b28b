"""The package type-checks under mypy --strict (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_is_clean() -> None:
    pytest.importorskip("mypy")
    if not (ROOT / "python" / "fastbench").is_dir():
        pytest.skip("needs the source tree")
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
