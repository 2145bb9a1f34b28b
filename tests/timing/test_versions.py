"""Versions of the code measured in one invocation (fastbench.compare_versions, `fastbench
compare --versions`): git refs of a package in a temporary repository (a real `git`), a
directory, an interpreter, installs, and the errors that name the version and leave
nothing behind. The versions differ by 3x in work, far beyond any host's noise, so the
verdicts tested do not depend on how busy the machine is."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import fastbench
from fastbench.timing.duets import duet_cores
from fastbench.timing.versions import VersionError, parse_versions

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SETUP = "from vpkg import work"
# Five workers a version: a pair left out as disturbed (a busy host) still leaves four, enough
# for the paired t test to see 3x.
FAST = dict(processes=5, duration_s=0.05, repeat=20)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _source(loops: int) -> str:
    return f"def work():\n    return sum(i * i for i in range({loops}))\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with tags `fast` and `slow` (3x the work), checked out at `slow` with an
    uncommitted change back to the fast code."""
    root = tmp_path / "proj"
    (root / "src" / "vpkg").mkdir(parents=True)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    (root / "src" / "vpkg" / "__init__.py").write_text(_source(100))
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "fast")
    _git(root, "tag", "fast")
    (root / "src" / "vpkg" / "__init__.py").write_text(_source(300))
    _git(root, "commit", "-qam", "slow")
    _git(root, "tag", "slow")
    (root / "src" / "vpkg" / "__init__.py").write_text(_source(100))
    monkeypatch.chdir(root)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return root


def _leftovers(repo: Path) -> tuple[list[str], list[str]]:
    worktrees = [line for line in _git(repo, "worktree", "list").splitlines()
                 if not line.startswith(str(repo) + " ")]
    temps = glob.glob(os.path.join(tempfile.gettempdir(), "fastbench-versions-*"))
    return worktrees, temps


def test_git_refs_and_the_working_tree(repo: Path) -> None:
    before = _leftovers(repo)[1]
    c = fastbench.compare_versions({"fast": "git:fast", "slow": "git:slow", "here": "."},
                                   "work()", SETUP, design="interleaved", **FAST)
    assert c.baseline == "fast" and c.stop_reason == "versions" and c.rounds == 5
    assert c.versions == {"fast": "git:fast", "slow": "git:slow", "here": "."}
    assert c.design.startswith("interleaved")
    assert c.results["slow"].verdict == "slower"
    assert c.results["slow"].speedup < 0.6
    # Each version's identity was found in its own checkout.
    ids = {name: m.identity for name, m in c.measurements.items()}
    assert all(i is not None and i.kind == "statement" for i in ids.values())
    assert ids["fast"].git_commit == _git(repo, "rev-parse", "fast")  # type: ignore[union-attr]
    assert ids["slow"].git_commit == _git(repo, "rev-parse", "slow")  # type: ignore[union-attr]
    assert ids["here"].git_dirty is True and ids["here"].git_diff  # type: ignore[union-attr]
    assert not any(w.startswith("version import") for m in c.measurements.values()
                   for w in m.warnings)
    assert any("versions differ in: git commit" in w for w in c.results["slow"].warnings)
    worktrees, temps = _leftovers(repo)
    assert worktrees == [] and sorted(temps) == sorted(before)
    assert _git(repo, "status", "--porcelain") == "M src/vpkg/__init__.py"


def test_a_directory_and_an_interpreter(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "copy"
    shutil.copytree(repo / "src", other)
    (other / "vpkg" / "__init__.py").write_text(_source(300))
    c = fastbench.compare_versions({"py": f"python:{sys.executable}", "copy": str(other)},
                                   "work()", SETUP, design="interleaved", **FAST)
    assert c.results["copy"].verdict == "slower"
    assert c.versions["py"] == f"python:{sys.executable}"


@pytest.mark.skipif(duet_cores()[0] is None, reason="duets need two free cores: "
                    + duet_cores()[1])
def test_duets_pair_the_versions_at_the_same_time(repo: Path) -> None:
    c = fastbench.compare_versions({"fast": "git:fast", "slow": "git:slow"}, "work()", SETUP,
                                   design="duet", **FAST)
    assert c.stop_reason == "versions-duet" and c.design.startswith("duet")
    assert c.measurements["fast"].runs == c.measurements["slow"].runs == 5
    assert c.results["slow"].verdict == "slower" and c.results["slow"].paired


def test_more_than_two_versions_cannot_duet(repo: Path) -> None:
    with pytest.raises(ValueError, match="pairs two versions"):
        fastbench.compare_versions({"a": ".", "b": ".", "c": "."}, "work()", SETUP,
                                   design="duet", **FAST)


def test_an_install_command_puts_its_target_first(repo: Path, tmp_path: Path) -> None:
    # For "fast" the install writes a build of 9x the work into the version's target: that
    # is what its workers import, not the checkout's code. "slow" installs nothing and
    # runs its checkout (3x), which is then the faster of the two.
    install = ('test "$FASTBENCH_VERSION" = slow || { mkdir -p "$FASTBENCH_VERSION_TARGET/vpkg" '
               f'&& printf "%s" "{_source(900)}" > "$FASTBENCH_VERSION_TARGET/vpkg/__init__.py"; }}')
    c = fastbench.compare_versions({"fast": "git:fast", "slow": "git:slow"}, "work()", SETUP,
                                   design="interleaved", install=install, **FAST)
    assert c.results["slow"].verdict == "faster"
    assert not any(w.startswith("version import") for m in c.measurements.values()
                   for w in m.warnings)


def test_a_package_from_outside_the_version_is_warned_about(repo: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "vpkg").mkdir(parents=True)
    (elsewhere / "vpkg" / "__init__.py").write_text(_source(100))
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(elsewhere))  # as an editable install would
    c = fastbench.compare_versions({"a": str(empty), "b": "."}, "work()", SETUP,
                                   design="interleaved", **FAST)
    warned = [w for w in c.measurements["a"].warnings if w.startswith("version import")]
    assert warned and str(elsewhere) in warned[0]
    assert getattr(warned[0], "code", "") == "version-import"
    assert not any(w.startswith("version import") for w in c.measurements["b"].warnings)


def test_a_ref_that_does_not_exist_is_named_and_nothing_is_left(repo: Path) -> None:
    before = _leftovers(repo)
    with pytest.raises(VersionError, match=r"version 'b': git ref 'no-such-ref' does not exist"):
        fastbench.compare_versions({"a": "git:fast", "b": "git:no-such-ref"}, "work()", SETUP,
                                   **FAST)
    assert _leftovers(repo) == before


def test_an_install_that_fails_is_named_and_nothing_is_left(repo: Path) -> None:
    before = _leftovers(repo)
    with pytest.raises(VersionError) as info:
        fastbench.compare_versions({"a": "git:fast", "b": "git:slow"}, "work()", SETUP,
                                   install='echo broken build >&2; test "$FASTBENCH_VERSION" = a',
                                   **FAST)
    text = str(info.value)
    assert "version 'b'" in text and "status 1" in text and "broken build" in text
    assert _leftovers(repo) == before


def test_bad_versions_are_refused_before_anything_runs(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(VersionError, match="at least two"):
        parse_versions({"a": "."})
    with pytest.raises(VersionError, match="'nowhere' is not a directory"):
        parse_versions({"a": ".", "b": "nowhere"})
    with pytest.raises(VersionError, match="not an executable interpreter"):
        parse_versions({"a": ".", "b": f"python:{tmp_path / 'nopython'}"})
    with pytest.raises(VersionError, match="version name"):
        parse_versions({"a b": ".", "c": "."})
    with pytest.raises(VersionError, match="is not in one"):
        parse_versions({"a": "git:main", "b": "."}, repo=str(tmp_path))
    with pytest.raises(ValueError, match="baseline 'z'"):
        fastbench.compare_versions({"a": ".", "b": "."}, "work()", SETUP, baseline="z", **FAST)
    with pytest.raises(SyntaxError):
        fastbench.compare_versions({"a": ".", "b": "."}, "work(", SETUP, **FAST)


@pytest.mark.slow
def test_an_interpreter_without_what_the_workers_need_is_named(repo: Path,
                                                                tmp_path: Path) -> None:
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    with pytest.raises(VersionError, match=r"version 'bare'.*(numpy|install fastbench)"):
        fastbench.compare_versions({"here": ".", "bare": f"python:{venv / 'bin' / 'python'}"},
                                   "work()", SETUP, **FAST)


def test_the_command_line(repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fastbench", "compare", "--versions", "fast=git:fast",
         "slow=git:slow", "-s", SETUP, "--run", "work()", "--processes", "5",
         "--design", "interleaved", "--max-time", "0.2", "--fail-slower", "5",
         "--json", "v.json"], capture_output=True, text=True, check=False)
    assert done.returncode == 3, done.stderr
    assert "versions: fast = git:fast, slow = git:slow" in done.stdout
    doc = json.loads((repo / "v.json").read_text())
    assert doc["kind"] == "versions" and doc["gate"]["status"] == "fail"
    (cand,) = doc["comparisons"][0]["candidates"]
    assert cand["verdict"] == "slower" and cand["level"] == "runs"
    assert cand["candidate_side"]["identity"]["git_commit"] == _git(repo, "rev-parse", "slow")
    bad = subprocess.run([sys.executable, "-m", "fastbench", "compare", "--versions", "a",
                          "--run", "work()"], capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and "NAME=SPEC" in bad.stderr
    two = subprocess.run([sys.executable, "-m", "fastbench", "compare", "--versions", "a=.",
                          "b=.", "--run", "work()", "work()"], capture_output=True, text=True,
                         check=False)
    assert two.returncode == 1 and "one statement" in two.stderr
