"""Versions of the code measured in one invocation, the parent's side: what a version is (a
git ref, checked out into a temporary worktree; a directory; or another interpreter), how
it is made importable (its directory, and its ``src/``, first on its workers' path; or what
an install command the user gives puts in a directory of its own), and how the versions'
workers run: interleaved (one at a time, A B B A ...) or as duets (two at a time on two
cores). Judging them is :func:`fastbench.comparison.compare_versions`'; nothing here prints.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Mapping

from .._checks import check_choice, check_int
from .._children import make_temporary_directory, terminating
from ..errors import FastbenchError
from ..machine.git import safe_git
from ..measurement import Measurement
from .config import MAX_PROCESSES
from .duets import duet_cores, run_duets
from .worker import ENV_VERSION_ROOTS
from .workers import Launch, WorkerJob, run_interleaved, statement_job

__all__ = ["DESIGNS", "PreparedVersion", "Version", "VersionError", "VersionRuns",
           "parse_versions", "prepared_versions", "run_versions"]

# How the versions' workers run: "auto" picks duets where two cores are free and there are
# two versions, else interleaved workers.
DESIGNS = ("auto", "interleaved", "duet")

# A version's name: what reports and --json call it.
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
# What an install command may take before it is stopped.
INSTALL_TIMEOUT_S = 1800.0
# The tail of a failed install's output kept in its error.
_TAIL_CHARS = 2000


class VersionError(FastbenchError, ValueError):
    """A version cannot be measured: a ref that does not exist, a directory that is not
    there, an interpreter that does not run or lacks what the workers need, an install
    command that failed. The message names the version."""


@dataclass(frozen=True)
class Version:
    """One version as given: ``name=SPEC``.

    Attributes
    ----------
    name : str
    spec : str
        As given: ``git:REF``, ``python:PATH`` or a directory (``.`` for the working tree
        as it is, uncommitted changes included).
    kind : str
        "git", "python" or "directory".
    target : str
        The ref, the interpreter's path, or the directory's absolute path.
    commit : str
        For a git ref, the commit it named when the comparison started.
    repo : str
        For a git ref, the work tree whose repository holds it.
    """

    name: str
    spec: str
    kind: str
    target: str
    commit: str = ""
    repo: str = ""


@dataclass(frozen=True)
class PreparedVersion:
    """A version ready to run: where its code is, what runs it and what goes first on its
    workers' path."""

    version: Version
    directory: str
    python: str
    path: tuple[str, ...]
    shared: tuple[str, ...] = ()  # entries of the path that are not the version's own code

    @property
    def launch(self) -> Launch:
        roots = [p for p in self.path if p not in self.shared]
        return Launch(python=self.python, cwd=self.directory,
                      env={ENV_VERSION_ROOTS: os.pathsep.join(roots)})


@dataclass(frozen=True)
class VersionRuns:
    """What :func:`run_versions` measured: each version's workers, in order (pairs by
    index), the design they ran in and why."""

    runs: dict[str, list[Measurement]]
    design: str
    reason: str


def _resolve_ref(name: str, ref: str, repo: str) -> tuple[str, str]:
    root = safe_git(["rev-parse", "--show-toplevel"], repo)
    if not root:
        raise VersionError(f"version {name!r}: git:{ref} needs a git work tree, and {repo} is "
                           "not in one (or git is not installed)")
    if ref.startswith("-"):
        raise VersionError(f"version {name!r}: {ref!r} is not a git ref")
    commit = safe_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root)
    if not commit:
        raise VersionError(f"version {name!r}: git ref {ref!r} does not exist in {root} "
                           "(`git rev-parse --verify` found no commit by that name)")
    return commit, root


def parse_versions(versions: Mapping[str, str], *, repo: str | None = None) -> dict[str, Version]:
    """Check each ``name: SPEC`` and resolve what can be resolved now (a git ref to its
    commit), before anything runs.

    Parameters
    ----------
    versions : mapping of str to str
        At least two: ``{"main": "git:main", "pr": "."}``. A SPEC is ``git:REF`` (a branch,
        tag or commit of the repository holding ``repo``), ``python:PATH`` (the working
        directory's code run by another interpreter, such as another venv's python), or a
        directory holding the code.
    repo : str, optional
        Where git refs are looked up (default: the working directory).

    Raises
    ------
    TypeError
        Not a mapping of str to str.
    VersionError
        Fewer than two versions, a bad name, a ref that does not exist, a directory that is
        not there, an interpreter that is not an executable file.
    """
    if not isinstance(versions, Mapping):
        raise TypeError(f"versions must be a mapping of name to spec, such as "
                        f"{{'main': 'git:main', 'pr': '.'}}, got {type(versions).__name__}")
    if len(versions) < 2:
        raise VersionError(f"compare_versions needs at least two versions, got {len(versions)}")
    where = os.path.abspath(repo or os.getcwd())
    out = {}
    for name, spec in versions.items():
        if not isinstance(name, str) or not isinstance(spec, str):
            raise TypeError(f"versions must map str names to str specs, got {name!r}: {spec!r}")
        if not _NAME.match(name):
            raise VersionError(f"version name {name!r} must be letters, digits, '_', '.' or "
                               "'-' (it names the version in reports)")
        if spec.startswith("git:"):
            ref = spec[4:]
            if not ref:
                raise VersionError(f"version {name!r}: git: needs a ref (git:main, git:v1.2)")
            commit, root = _resolve_ref(name, ref, where)
            out[name] = Version(name, spec, "git", ref, commit, root)
        elif spec.startswith("python:"):
            path = shutil.which(spec[7:]) or spec[7:]
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise VersionError(f"version {name!r}: {spec[7:]!r} is not an executable "
                                   "interpreter")
            out[name] = Version(name, spec, "python", os.path.abspath(path))
        else:
            directory = os.path.abspath(spec)
            if not os.path.isdir(directory):
                raise VersionError(f"version {name!r}: {spec!r} is not a directory (a version "
                                   "is git:REF, python:PATH or a directory)")
            out[name] = Version(name, spec, "directory", directory)
    return out


def _code_path(directory: str) -> list[str]:
    """What goes first on a version's path by default: its ``src/`` (a src layout) and the
    directory itself."""
    src = os.path.join(directory, "src")
    return ([src] if os.path.isdir(src) else []) + [directory]


def _parent_path() -> list[str]:
    """This process's path for workers of its own interpreter (where this fastbench and the
    environment's packages are found), without the working directory: another version's
    workers must not import the working tree's code."""
    here = {"", ".", os.getcwd(), os.path.join(os.getcwd(), "src")}
    return [p for p in sys.path if isinstance(p, str) and p not in here]


def _fastbench_shim(parent: str) -> str:
    """A directory holding only this fastbench (every part of its package path merged, as
    an editable install splits it), for an interpreter that lacks one."""
    shim = os.path.join(parent, "fastbench-shim")
    package = os.path.join(shim, "fastbench")
    os.makedirs(package, exist_ok=True)
    for part in sys.modules["fastbench"].__path__:
        for entry in os.listdir(part):
            link = os.path.join(package, entry)
            if entry != "__pycache__" and not os.path.lexists(link):
                os.symlink(os.path.join(part, entry), link)
    return shim


def _check_interpreter(v: Version, path: list[str], shim_parent: str) -> list[str]:
    """The path entries another interpreter needs to run fastbench's workers: none when it
    has fastbench (and numpy, scipy, psutil) itself, else this fastbench, where its native
    core fits that interpreter."""
    probe = "import fastbench.timing.worker, numpy, scipy, psutil"

    def runs(extra: list[str]) -> subprocess.CompletedProcess[str]:
        code = f"import sys; sys.path[:0] = {[*path, *extra]!r}; {probe}"
        return subprocess.run([v.target, "-c", code], capture_output=True, text=True,
                              timeout=120, check=False, stdin=subprocess.DEVNULL)

    try:
        if runs([]).returncode == 0:
            return []
        suffix = subprocess.run(
            [v.target, "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
            capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise VersionError(f"version {v.name!r}: {v.target} does not run ({exc})") from None
    ours = sysconfig.get_config_var("EXT_SUFFIX")
    if suffix.returncode != 0 or suffix.stdout.strip() != ours:
        raise VersionError(
            f"version {v.name!r}: {v.target} cannot import fastbench, and this fastbench's "
            f"native core (built for {ours}) does not fit it ({suffix.stdout.strip() or 'no '}"
            "): install fastbench into that environment")
    # Only the fastbench package, not the rest of this environment's site-packages.
    shim = _fastbench_shim(shim_parent)
    done = runs([shim])
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise VersionError(f"version {v.name!r}: {v.target} cannot run fastbench's workers "
                           f"({last}): install fastbench (with numpy, scipy, psutil) there")
    return [shim]


def _install(v: Version, directory: str, command: str, python: str, target: str,
             timeout_s: float) -> None:
    env = {**os.environ, "FASTBENCH_VERSION": v.name, "FASTBENCH_VERSION_DIR": directory,
           "FASTBENCH_VERSION_TARGET": target, "FASTBENCH_PYTHON": python}
    try:
        done = subprocess.run(command, shell=True, cwd=directory, env=env,  # noqa: S602
                              capture_output=True, text=True, timeout=timeout_s, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise VersionError(f"version {v.name!r}: the install command did not finish within "
                           f"{timeout_s:g} s: {command}") from None
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-_TAIL_CHARS:].strip()
        raise VersionError(f"version {v.name!r}: the install command failed with status "
                           f"{done.returncode} in {directory}: {command}\n{tail}")


def _checkout(v: Version, where: str) -> str:
    # A worktree (not an archive): the checkout is a git work tree, so a project that reads
    # its version from git (setuptools-scm) installs there as it does at home.
    safe_git(["worktree", "prune"], v.repo)
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach", "--quiet",
         where, v.commit],
        cwd=v.repo, capture_output=True, text=True, timeout=600, check=False,
        stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise VersionError(f"version {v.name!r}: git could not check out {v.target} "
                           f"({v.commit[:12]}): {done.stderr.strip()}")
    return where


def _remove_checkout(v: Version, where: str) -> None:
    safe_git(["worktree", "remove", "--force", "--force", where], v.repo)
    shutil.rmtree(where, ignore_errors=True)
    safe_git(["worktree", "prune"], v.repo)


@contextlib.contextmanager
def prepared_versions(versions: Mapping[str, Version], *, install: str | None = None,
                      install_timeout_s: float = INSTALL_TIMEOUT_S,
                      progress: Callable[[int, int, str], None] | None = None,
                      ) -> Iterator[dict[str, PreparedVersion]]:
    """Make each version runnable for the duration of the block: git refs checked out into
    temporary worktrees, ``install`` run in each version's directory, the path of each
    version's workers found. Everything made is removed on the way out, whatever happens.

    ``install`` is a shell command run in each version's directory (git refs: its
    checkout; ``python:`` versions: the working directory) with ``FASTBENCH_VERSION`` (the
    name), ``FASTBENCH_VERSION_DIR``, ``FASTBENCH_PYTHON`` (the version's interpreter) and
    ``FASTBENCH_VERSION_TARGET`` (an empty directory of the version's own) set; what it
    puts in the target directory goes first on the version's path, e.g.
    ``"$FASTBENCH_PYTHON" -m pip install --no-deps --no-build-isolation --target
    "$FASTBENCH_VERSION_TARGET" .`` for a project with compiled code. Without it the
    version's directory (and its ``src/``) goes first.

    Raises
    ------
    VersionError
        A checkout or an install failed, or an interpreter cannot run the workers (nothing
        made is left behind).
    """
    tmp = make_temporary_directory("versions")
    made: list[tuple[Version, str]] = []
    with terminating():  # SIGTERM, SIGHUP: the checkouts removed on the way out
        try:
            out = {}
            for i, (name, v) in enumerate(versions.items()):
                if progress is not None:
                    progress(i + 1, len(versions), f"preparing {name}")
                python = v.target if v.kind == "python" else sys.executable
                if v.kind == "git":
                    directory = _checkout(v, os.path.join(tmp, f"checkout-{i}"))
                    made.append((v, directory))
                elif v.kind == "directory":
                    directory = v.target
                else:
                    directory = os.getcwd()
                path = _code_path(directory)
                if install:
                    target = os.path.join(tmp, f"install-{i}")
                    os.makedirs(target)
                    _install(v, directory, install, python, target, install_timeout_s)
                    if os.listdir(target):
                        path = [target, *path]
                own = list(path)
                if v.kind == "python":
                    path += _check_interpreter(v, path, tmp)
                else:
                    path += [p for p in _parent_path() if p not in path]  # after the code
                out[name] = PreparedVersion(v, directory, python, tuple(path),
                                            tuple(p for p in path if p not in own))
            yield out
        finally:
            for v, where in made:
                _remove_checkout(v, where)
            shutil.rmtree(tmp, ignore_errors=True)


def _pick_design(design: str, count: int) -> tuple[str, str, tuple[int, int] | None]:
    if design == "interleaved":
        return "interleaved", "asked for", None
    cores, why = duet_cores()
    if count != 2:
        if design == "duet":
            raise ValueError(f"design='duet' pairs two versions; got {count} (use "
                             "design='interleaved')")
        return "interleaved", f"{count} versions (a duet pairs two)", None
    if cores is None:
        if design == "duet":
            raise ValueError(f"design='duet' needs two free cores: {why}")
        return "interleaved", f"no duets: {why}", None
    return "duet", ("asked for; " if design == "duet" else "") + why, cores


def run_versions(prepared: Mapping[str, PreparedVersion], stmt: str, setup: str, *,
                 processes: int, design: str = "auto", options: Mapping[str, Any],
                 timeout_s: float | None = 600.0,
                 progress: Callable[[int, int, str], None] | None = None) -> VersionRuns:
    """Measure ``stmt`` (after ``setup``) in every prepared version, ``processes`` workers
    each: interleaved (A B B A ..., one at a time) or as duets (both at once, one per core,
    the cores swapped each duet). "auto" runs duets where there are two versions and two
    free cores (:func:`fastbench.timing.duets.duet_cores`), else interleaved workers.

    Raises
    ------
    ValueError
        An unknown design, duets asked for where they cannot run, a bad count.
    WorkerError
        A worker failed (its stderr is in the message).
    """
    check_choice("design", design, DESIGNS)
    count = check_int("processes", processes, 1, say_positive=False,
                      maximum=MAX_PROCESSES)
    jobs: dict[str, WorkerJob] = {}
    for name, p in prepared.items():
        job = statement_job(stmt, setup, options=options, name=name)
        jobs[name] = replace(job, sys_path=list(p.path))
    launches = {name: p.launch for name, p in prepared.items()}
    used, reason, cores = _pick_design(design, len(jobs))
    if used == "duet":
        assert cores is not None
        runs = run_duets(jobs, count, cpus=cores, timeout_s=timeout_s, progress=progress,
                         launches=launches)
    else:
        runs = run_interleaved(jobs, count, timeout_s=timeout_s, progress=progress,
                               launches=launches)
    return VersionRuns(runs, used, reason)
