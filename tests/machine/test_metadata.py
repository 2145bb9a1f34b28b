"""Tests for fastbench.machine.metadata: what is recorded beside every result (total memory,
torch's version and threads only where torch is already imported), and that recording the
git commit runs none of the commands a repository's configuration names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import fastbench
from fastbench.machine.metadata import machine_metadata

PY = sys.executable


# -- total memory and torch -------------------------------------------------------------------


def test_metadata_records_total_memory() -> None:
    meminfo = Path("/proc/meminfo")
    if not meminfo.exists():
        pytest.skip("no /proc/meminfo (not Linux?)")
    line = next(l for l in meminfo.read_text().splitlines() if l.startswith("MemTotal:"))
    assert line.split()[2] == "kB"
    assert machine_metadata()["memory_total_bytes"] == int(line.split()[1]) * 1024


def test_metadata_never_imports_torch() -> None:
    code = ("import json, sys\n"
            "from fastbench.machine.metadata import machine_metadata\n"
            "meta = machine_metadata()\n"
            "print(json.dumps([meta['torch'], 'torch' in sys.modules]))")
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [None, False]


def test_metadata_records_an_imported_torchs_version_and_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = types.ModuleType("torch")
    fake.__version__ = "9.8.7+cpu"  # type: ignore[attr-defined]
    fake.get_num_threads = lambda: 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert machine_metadata()["torch"] == {"version": "9.8.7+cpu", "num_threads": 3}

    def broken() -> int:
        raise RuntimeError("half imported")

    fake.get_num_threads = broken  # type: ignore[attr-defined]
    assert machine_metadata()["torch"] is None  # a fact it cannot find: not recorded


@pytest.mark.slow
def test_metadata_reads_the_real_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    code = ("import json, sys, numpy as np, torch, fastbench\n"
            "torch.set_num_threads(1)\n"
            "m = fastbench.Measurement(samples_ns=np.full(3, 5.0), loops=1, clock='steady',\n"
            "    warmup_samples_ns=np.empty(0), overhead_ns=0.0, overhead_mad_ns=0.0,\n"
            "    call_floor_ns=0.0, call_floor_mad_ns=0.0)\n"
            "fastbench.save(m, sys.argv[1])\n"
            "print(json.dumps([torch.__version__, torch.get_num_threads()]))")
    path = tmp_path / "torch.json"
    done = subprocess.run([PY, "-c", code, str(path)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    version, threads = json.loads(done.stdout)
    assert threads == 1
    assert fastbench.results.load_file(path).machine["torch"] == {"version": version,
                                                                 "num_threads": 1}


# -- git in a hostile repository -----------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=fastbench", "-c", "user.email=fastbench@example.invalid",
         "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True, text=True, timeout=30,
    ).stdout.strip()  # fmt: skip


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.fixture
def hostile_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A repository whose configuration runs commands on `git status`, each of which would
    append its name to the marker file: a core.fsmonitor hook, clean and process filters
    (one under a name with a dot) and the post-index-change hook, in the repository's hooks
    and in a core.hooksPath directory. Returns (repository, marker)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    repo, marker, tools = tmp_path / "repo", tmp_path / "ran", tmp_path / "tools"
    repo.mkdir()
    tools.mkdir()
    _git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    (repo / "data.bin").write_text("payload\n")
    (repo / ".gitattributes").write_text("*.py filter=evil.clean\n*.bin filter=evilproc\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "init")
    fsmonitor = _script(tools / "fsmonitor", f'echo fsmonitor >> "{marker}"\nexit 1\n')
    clean = _script(tools / "clean", f'echo clean >> "{marker}"\ncat\n')
    process = _script(tools / "process", f'echo process >> "{marker}"\nexit 1\n')
    hook = f'echo post-index-change >> "{marker}"\n'
    _script(repo / ".git" / "hooks" / "post-index-change", hook)
    (tools / "hooks").mkdir()
    _script(tools / "hooks" / "post-index-change", hook)
    for key, value in [("core.fsmonitor", str(fsmonitor)),
                       ("filter.evil.clean.clean", str(clean)),
                       ("filter.evil.clean.required", "true"),
                       ("filter.evilproc.process", str(process)),
                       ("core.hooksPath", str(tools / "hooks"))]:
        _git(repo, "config", key, value)
    # New modification times: git must look at the contents again (where filters run).
    later = (repo / "code.py").stat().st_mtime + 100
    for name in ("code.py", "data.bin"):
        os.utime(repo / name, (later, later))
    return repo, marker


def test_plain_git_status_would_run_the_hostile_commands(hostile_repo: tuple[Path, Path]
                                                         ) -> None:
    """The fixture is hostile for real: an unguarded status runs each of its commands."""
    repo, marker = hostile_repo

    def plain_status() -> set[str]:
        subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                       capture_output=True, timeout=30, check=False)
        ran = set(marker.read_text().split())
        marker.unlink()
        return ran

    assert {"fsmonitor", "clean", "process"} <= plain_status()
    # A process filter that fails keeps status from writing the index; without it, status
    # refreshes the index and runs the hook.
    _git(repo, "config", "--unset", "filter.evilproc.process")
    later = (repo / "code.py").stat().st_mtime + 100
    os.utime(repo / "code.py", (later, later))
    assert {"fsmonitor", "clean", "post-index-change"} <= plain_status()


@pytest.mark.parametrize("process_filter", [True, False])
def test_saving_in_a_hostile_repository_runs_none_of_its_commands(
    hostile_repo: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, process_filter: bool
) -> None:
    repo, marker = hostile_repo
    if not process_filter:  # then a plain status would also write the index and run the hook
        _git(repo, "config", "--unset", "filter.evilproc.process")
    head = _git(repo, "rev-parse", "HEAD")
    monkeypatch.chdir(repo)
    m = fastbench.Measurement(samples_ns=np.full(5, 10.0), loops=1, clock="steady",
                              warmup_samples_ns=np.empty(0), overhead_ns=0.0,
                              overhead_mad_ns=0.0, call_floor_ns=0.0, call_floor_mad_ns=0.0)
    fastbench.save(m, repo / "result.json")
    assert not marker.exists(), marker.read_text()
    # The commit is still recorded, and the unchanged files read as clean without filters.
    assert fastbench.results.load_file(repo / "result.json").machine["git"] == {
        "commit": head, "dirty": False}
    (repo / "code.py").write_text("x = 2\n")
    assert machine_metadata()["git"] == {"commit": head, "dirty": True}
    assert not marker.exists(), marker.read_text()
