"""Importing fastbench: the package needs only numpy, scipy and psutil, and a broken native
core gives an error that says how to build it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest


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


# Mangled-name prefixes of what must stay inside the extension: the core's own namespace, and
# the C++ runtime's locale and iostreams (present when a toolchain links libstdc++ statically).
_PRIVATE = {"_ZN9fastbench": "fastbench::", "_ZNSt6locale": "std::locale",
            "_ZNSt8ios_base": "std::ios_base", "_ZNSi": "std::istream", "_ZNSo": "std::ostream",
            "_ZNKSt7codecvt": "std::codecvt", "_ZNKSt7num_get": "std::num_get"}


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("nm") is None,
                    reason="reads the ELF dynamic symbol table with nm (Linux, binutils)")
def test_the_extension_exports_its_init_and_keeps_the_core_and_the_runtime_private() -> None:
    """Exported, the symbols of what was linked in statically can bind to another copy in the
    process: a statically linked libstdc++ then mixed its locale with the process's, and
    reading a number from a stream crashed. So nothing of them leaves the module."""
    from fastbench import _core

    r = subprocess.run(["nm", "-D", "--defined-only", _core.__file__], capture_output=True,
                       text=True, timeout=60, check=True)
    names = [line.split()[-1] for line in r.stdout.splitlines() if line.strip()]
    assert "PyInit__core" in names
    leaked = sorted(f"{name} ({what})" for name in names
                    for prefix, what in _PRIVATE.items() if name.startswith(prefix))
    assert leaked == []
