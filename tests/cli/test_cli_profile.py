"""`fastbench profile`: a model from the zoo, a saved profile and its trace, a diff of two
saved profiles, a script under the sampling profiler, and the errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastbench


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "fastbench", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)


def test_profile_a_zoo_model_saves_it_and_its_trace(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out, trace = tmp_path / "mlp.json", tmp_path / "mlp.trace.json"
    r = run("profile", "fastbench.analysis.models:mlp", "--steps", "4", "--by", "module",
            "--top", "3", "--trace", str(trace), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "top 3 by module:" in r.stdout and "observer effect" in r.stdout
    p = fastbench.load(out)
    assert isinstance(p, fastbench.profiling.Profile) and p.steps >= 3
    # The mlp's Linear layers are modules of the profile, each doing its addmm.
    assert any(c.op == "aten::addmm" and c.module.startswith("layers.") for c in p.cells)
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("cat") == "op" and e["name"] == "aten::addmm" for e in events)


def test_profile_diff_of_saved_profiles(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path, collector in ((a, "native"), (b, "dispatch")):
        r = run("profile", "fastbench.analysis.models:mlp", "--steps", "6", "--collector",
                collector, "-o", str(path))
        assert r.returncode == 0, r.stderr
        assert fastbench.load(path).meta["collector"] == collector
    r = run("profile", "diff", str(a), str(b))
    assert r.returncode == 0, r.stderr
    assert "items tested" in r.stdout


def test_profile_a_script_by_sampling(tmp_path: Path) -> None:
    script = tmp_path / "work.py"
    script.write_text("import sys\nfrom fastbench import _core\n"
                      "def busy():\n    _core.spin(3e8)\n"
                      "if __name__ == '__main__':\n    assert sys.argv[1:] == ['x']\n    busy()\n")
    folded = tmp_path / "stacks.txt"
    r = run("profile", "--folded", str(folded), "--", "python", str(script), "x")
    assert r.returncode == 0, r.stderr
    assert "busy" in r.stdout
    lines = folded.read_text().splitlines()
    assert lines and all(line.rsplit(" ", 1)[1].isdigit() for line in lines)
    assert any("busy" in line for line in lines)


@pytest.mark.parametrize("ending, status, said", [
    ("sys.exit(3)", 3, "exited with status 3"),
    ("raise ValueError('broken input')", 1, "raised ValueError: broken input"),
])
def test_a_failing_script_is_still_profiled_and_its_status_passed_on(
        tmp_path: Path, ending: str, status: int, said: str) -> None:
    script = tmp_path / "work.py"
    script.write_text("import sys\nfrom fastbench import _core\n"
                      "def busy():\n    _core.spin(3e8)\n"
                      f"busy()\n{ending}\n")
    saved = tmp_path / "p.json"
    r = run("profile", "-o", str(saved), "--", "python", str(script))
    assert r.returncode == status, r.stderr
    assert "busy" in r.stdout and said in r.stderr
    if "raise" in ending:
        assert "Traceback" in r.stderr and "ValueError: broken input" in r.stderr
    assert fastbench.load(saved).samples > 50


def test_a_forked_child_does_not_save_over_its_parents_profile(tmp_path: Path) -> None:
    # The child leaves the script's code at once (exit 0); the parent works on. Only the
    # parent reports and saves: one "saved to" line, the parent's work in the profile.
    script = tmp_path / "forks.py"
    script.write_text("import os, sys\nfrom fastbench import _core\n"
                      "def busy():\n    _core.spin(3e8)\n"
                      "pid = os.fork()\n"
                      "if pid == 0:\n    sys.exit(0)\n"
                      "os.waitpid(pid, 0)\nbusy()\n")
    saved = tmp_path / "p.json"
    r = run("profile", "-o", str(saved), "--", "python", str(script))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("saved to") == 1
    profile = fastbench.load(saved)
    assert profile.samples > 50
    assert any("busy" in row.function for row in profile.top(10))


@pytest.mark.parametrize("args, message", [
    (("profile",), "give a model"),
    (("profile", "diff", "only-one.json"), "two saved profiles"),
])
def test_profile_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    r = run(*args)
    assert r.returncode != 0
    assert message in r.stderr and "Traceback" not in r.stderr
