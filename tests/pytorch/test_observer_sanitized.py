"""The native op observer (fastbench/pytorch/observer.cpp) built with AddressSanitizer and
UndefinedBehaviorSanitizer and run through a profile of a training step (forward, backward,
nested ranges, autograd nodes) in a fresh process with the sanitizers' runtimes preloaded:
any report fails the run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from torch.utils import cpp_extension
    from fastbench.pytorch import observer
    flags = ["-O1", "-g", "-DNDEBUG", "-fsanitize=address,undefined",
             "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]
    observer._EXT = cpp_extension.load(
        "fastbench_observer_sanitized", [str(observer._SOURCE)], extra_cflags=flags,
        extra_ldflags=["-fsanitize=address,undefined"], build_directory=sys.argv[1])
    import fastbench
    from fastbench.analysis import models
    m = models.transformer_block(d_model=64, heads=4, seq=16)
    x = torch.randn(2, 16, 64)

    def step():
        m(x).sum().backward()

    p = fastbench.profile(step, steps=4, model=m, roofline=False, collector="native")
    with torch.no_grad(), fastbench.profile(m, roofline=False, collector="native") as q:
        for n in (16, 16, 8):
            m(torch.randn(2, n, 64))
            q.step()
    assert p.meta["collector"] == q.meta["collector"] == "native"
    print("observed", sum(c.calls for c in p.cells), "ops")
""")


def _runtime(name: str) -> str | None:
    path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True,
                          check=False).stdout.strip()
    return path if path and os.path.isabs(path) and os.path.exists(path) else None


@pytest.mark.slow
def test_the_observer_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    from fastbench.pytorch import observer
    if observer.load() is None:
        pytest.skip(f"the native observer is not available: {observer.unavailable_reason()}")
    runtimes = [_runtime("libasan.so"), _runtime("libubsan.so")]
    if None in runtimes:
        pytest.skip("gcc's AddressSanitizer or UndefinedBehaviorSanitizer runtime is missing")
    script = tmp_path / "observe.py"
    script.write_text(SCRIPT)
    build = tmp_path / "build"
    build.mkdir()
    env = dict(os.environ, LD_PRELOAD=" ".join(str(r) for r in runtimes),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1",   # CPython's arenas "leak"
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               TORCH_CPP_LOG_LEVEL="ERROR")
    r = subprocess.run([sys.executable, str(script), str(build)], capture_output=True,
                       text=True, timeout=600, env=env, check=False)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "observed" in r.stdout
    assert "runtime error" not in r.stderr and "AddressSanitizer" not in r.stderr
