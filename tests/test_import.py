"""Importing fastbench: the package needs only numpy, scipy and psutil, and a broken native
core gives an error that says how to build it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60, check=False)


def test_missing_core_says_how_to_build() -> None:
    r = _run(
        """
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "fastbench._core":
                    raise ImportError("simulated: no compiled extension")
                return None

        sys.meta_path.insert(0, Block())
        try:
            import fastbench
        except ImportError as exc:
            print(exc)
            sys.exit(3)
        """
    )
    assert r.returncode == 3, r.stderr
    assert "fastbench._core" in r.stdout
    assert "simulated: no compiled extension" in r.stdout
    assert "pip install ." in r.stdout and "C++17 compiler" in r.stdout


def test_import_pulls_no_optional_integration() -> None:
    r = _run(
        """
        import sys
        import fastbench
        heavy = [m for m in ("torch", "matplotlib", "pandas") if m in sys.modules]
        print(",".join(heavy))
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def test_public_api_is_exported() -> None:
    import fastbench

    for name in fastbench.__all__:
        assert hasattr(fastbench, name), name
    assert callable(fastbench.measure) and callable(fastbench.timeit)
