"""The examples of docs/one-liners.md run as written."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "one-liners.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    code = BLOCKS[index]
    if "import torch" in code and importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch")
    exec(compile(code, f"{DOC.name} example {index}", "exec"), {})
    assert capsys.readouterr().out.strip() or "print(" not in code


def test_the_doc_has_its_examples() -> None:
    assert len(BLOCKS) == 4
