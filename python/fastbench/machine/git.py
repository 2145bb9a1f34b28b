"""The git state of a work tree, read safely: its commit, branch, whether tracked files
changed, and a hash of the uncommitted changes to its source files. Runs git with the
repository's command-running settings switched off and never raises for a state it cannot
read; it never writes to the repository.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["GitState", "SOURCE_PATTERNS", "git_state", "safe_git"]

# `git` must never hold up a measurement or a save: a network file system or a huge
# repository can make it slow, and then the state is simply not recorded.
_GIT_TIMEOUT_S = 5.0

# A repository someone else prepared (a downloaded project, a shared directory) must not run
# its commands when fastbench reads its state. Three parts of git's configuration run
# programs while it compares the work tree with the index: core.fsmonitor (a hook run on
# every status or diff), the clean/process commands of filter drivers (run for files whose
# stat data changed, to hash their content) and the post-index-change hook (run when the
# index is refreshed). The overrides below switch each off for our calls only; filter
# drivers have arbitrary names, so each configured one is switched off by name
# (_filter_overrides). Diffs are taken with --no-ext-diff and --no-textconv, so no diff
# driver runs either; submodules are not looked into.
_SAFE_GIT = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",  # no hook is found there
    "--no-optional-locks",  # the index is not written: no post-index-change hook
)

# What counts as source when the uncommitted changes are hashed (git pathspecs, whose `*`
# crosses directories): results files (JSON), reports and logs saved inside the work tree
# must not make each run look like new code.
SOURCE_PATTERNS = (
    "*.py", "*.pyx", "*.pxd", "*.pyi", "*.pth", "*.c", "*.cc", "*.cpp", "*.cxx", "*.h",
    "*.hh", "*.hpp", "*.hxx", "*.cu", "*.cuh", "*.rs", "*.go", "*.f", "*.f90", "*.java",
    "*.toml", "*.cfg", "*.ini", "*.yaml", "*.yml", "*.in", "*.cmake", "*CMakeLists.txt",
    "*requirements*.txt",
)
# Untracked source files larger than this are hashed by size and name only; more than this
# many are hashed by name only (a generated tree must not make every measurement slow).
_UNTRACKED_MAX_BYTES = 4 * 2**20
_UNTRACKED_MAX_FILES = 500


def safe_git(args: Sequence[str], cwd: str | os.PathLike[str] | None = None, *,
             text: bool = True, timeout_s: float = _GIT_TIMEOUT_S,
             env: Mapping[str, str] | None = None) -> Any:
    """stdout of ``git args`` run in ``cwd`` with the safety overrides; None if git is
    missing, fails, times out or the directory is not a work tree."""
    try:
        done = subprocess.run(
            ["git", *_SAFE_GIT, *args], cwd=cwd, capture_output=True, text=text,
            timeout=timeout_s, check=False, stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env),
        )
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() if text else done.stdout


def _filter_overrides(cwd: str | os.PathLike[str] | None) -> list[str] | None:
    """``-c`` options that empty the commands of every filter driver configured (in any
    scope, includes followed), so that git hashes files as they are; None when the
    configuration cannot be read."""
    try:
        done = subprocess.run(
            ["git", *_SAFE_GIT, "config", "-z", "--get-regexp",
             r"^filter\..*\.(clean|smudge|process)$"],
            cwd=cwd, capture_output=True, timeout=_GIT_TIMEOUT_S, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode not in (0, 1):  # 1: no filter driver is configured
        return None
    drivers: dict[str, None] = {}
    for entry in done.stdout.split(b"\0"):
        key = entry.partition(b"\n")[0].decode("utf-8", "surrogateescape")
        if key.startswith("filter."):  # filter.<driver, which may hold dots>.<command>
            drivers[key[len("filter."):].rpartition(".")[0]] = None
    if any("=" in name for name in drivers):  # `-c` would cut the name there
        return None
    out: list[str] = []
    for name in drivers:
        for option in ("clean=", "smudge=", "process=", "required=false"):
            out += ["-c", f"filter.{name}.{option}"]
    return out


@dataclass(frozen=True)
class GitState:
    """A work tree's state.

    Attributes
    ----------
    root : str
        The work tree's top directory.
    commit : str
        The commit checked out (40 hex digits).
    branch : str
        The branch checked out; "" for a detached HEAD.
    dirty : bool or None
        Whether tracked files differ from the commit (None when git could not tell).
    diff : str
        A hash of the uncommitted changes to source files (:data:`SOURCE_PATTERNS`), tracked
        and untracked; "" when there are none, "unknown" when git could not tell.
    """

    root: str
    commit: str
    branch: str
    dirty: bool | None
    diff: str

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "commit": self.commit, "branch": self.branch,
                "dirty": self.dirty, "diff": self.diff}


def _diff_hash(root: str, filters: list[str]) -> str:
    """A hash of ``git diff HEAD`` over source files plus the untracked source files'
    names and contents; "" when both are empty, "unknown" when git failed."""
    diff = safe_git([*filters, "diff", "HEAD", "--no-ext-diff", "--no-textconv", "--binary",
                     "--ignore-submodules=dirty", "--", *SOURCE_PATTERNS], root, text=False)
    untracked = safe_git(["ls-files", "--others", "--exclude-standard", "-z", "--",
                          *SOURCE_PATTERNS], root, text=False)
    if diff is None or untracked is None:
        return "unknown"
    names = sorted(n for n in untracked.split(b"\0") if n)
    if not diff.strip() and not names:
        return ""
    h = hashlib.sha256(diff)
    for i, name in enumerate(names):
        h.update(b"\0untracked\0" + name + b"\0")
        if i >= _UNTRACKED_MAX_FILES:
            continue
        path = Path(root) / os.fsdecode(name)
        try:
            size = path.stat().st_size
            h.update(path.read_bytes() if size <= _UNTRACKED_MAX_BYTES else
                     f"size {size}".encode())
        except OSError:
            h.update(b"unreadable")
    return h.hexdigest()[:32]


def git_state(directory: str | os.PathLike[str] | None = None, *,
              diff: bool = True) -> GitState | None:
    """The state of the git work tree holding ``directory`` (default: the working
    directory), or None outside a work tree, without a commit yet, or without git.
    ``diff=False`` skips hashing the uncommitted changes (``GitState.diff`` is then
    "unknown").

    Notes
    -----
    git runs with the repository's command-running settings switched off (core.fsmonitor,
    hooks, filter drivers, external diff and textconv drivers) and without looking inside
    submodules, so a repository prepared by someone else runs no command of its own.
    """
    where = os.fspath(directory) if directory is not None else None
    head = safe_git(["rev-parse", "--show-toplevel", "HEAD"], where)
    if not head or len(head.splitlines()) != 2:
        return None
    root, commit = head.splitlines()
    branch = safe_git(["symbolic-ref", "--short", "-q", "HEAD"], root) or ""
    filters = _filter_overrides(root)
    if filters is None:
        return GitState(root, commit, branch, None, "unknown")
    # Untracked files do not make a tree dirty: a results file saved inside it would
    # otherwise mark every later run dirty. They do count in the diff when they are source.
    status = safe_git([*filters, "status", "--porcelain", "--untracked-files=no",
                       "--ignore-submodules=dirty"], root)
    return GitState(root, commit, branch, None if status is None else bool(status),
                    _diff_hash(root, filters) if diff else "unknown")
