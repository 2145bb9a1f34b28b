"""The identity of a measurement (fastbench.identity): what changes it and what does not.

Code is compiled from source strings and modules written to a temporary directory (the
user's own code: outside the standard library and site-packages); git states come from a
real `git` in a temporary repository."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import shutil
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import fastbench
from fastbench import identity as ident
from fastbench.identity import Identity, callable_identity, code_hash, statement_identity


def _function(source: str, name: str = "f", namespace: dict[str, Any] | None = None) -> Any:
    glob: dict[str, Any] = {"__name__": "user_code"} if namespace is None else namespace
    exec(compile(source, "<test>", "exec"), glob)  # noqa: S102
    return glob[name]


BODY = "def f(n):\n    s = 0\n    for i in range(n):\n        s += i * i\n    return s\n"


def test_a_changed_body_changes_the_code_a_comment_or_blank_line_does_not() -> None:
    base = code_hash(_function(BODY).__code__)
    commented = BODY.replace("    s = 0\n", "    # the running sum\n\n    s = 0\n")
    shifted = "\n\n# a header\n\n" + BODY  # every line number moves
    assert code_hash(_function(commented).__code__) == base
    assert code_hash(_function(shifted).__code__) == base
    assert code_hash(_function(BODY.replace("i * i", "i * i * i")).__code__) != base
    assert code_hash(_function(BODY.replace("s = 0", "s = 1")).__code__) != base  # a constant
    assert code_hash(_function(BODY.replace("range(n)", "list(range(n))")).__code__) != base
    # A docstring is a constant of the code: it counts (said in code_hash's docstring).
    documented = BODY.replace("def f(n):\n", 'def f(n):\n    """Sum of squares."""\n')
    assert code_hash(_function(documented).__code__) != base


def test_nested_code_defaults_and_closure_values_count() -> None:
    nested = "def f():\n    def g(x):\n        return x + 1\n    return g(1)\n"
    assert (code_hash(_function(nested).__code__)
            != code_hash(_function(nested.replace("x + 1", "x + 2")).__code__))
    key = callable_identity(_function("def f(n=3):\n    return n\n")).code
    assert callable_identity(_function("def f(n=4):\n    return n\n")).code != key
    assert callable_identity(_function("def f(n=3):\n    return n\n")).code == key

    def make(k: int) -> Any:
        def inner() -> int:
            return k
        return inner

    assert callable_identity(make(1)).code != callable_identity(make(2)).code
    assert callable_identity(make(1)).code == callable_identity(make(1)).code


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A writer of modules in a directory of the user's own code, imported fresh."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def write(name: str, source: str) -> types.ModuleType:
        (tmp_path / f"{name}.py").write_text(source)
        sys.modules.pop(name, None)
        importlib.invalidate_caches()
        names.append(name)
        return importlib.import_module(name)

    yield write
    for name in names:
        sys.modules.pop(name, None)


def test_the_users_functions_and_constants_a_function_names_count(user_module: Any) -> None:
    source = ("N = 1000\n\ndef helper(x):\n    return x * x\n\n"
              "def work():\n    return sum(helper(i) for i in range(N))\n")
    base = callable_identity(user_module("idmod_a", source).work).code
    assert callable_identity(user_module("idmod_a", source).work).code == base
    changed_helper = source.replace("x * x", "x * x + 1")
    assert callable_identity(user_module("idmod_a", changed_helper).work).code != base
    changed_constant = source.replace("N = 1000", "N = 1200")
    assert callable_identity(user_module("idmod_a", changed_constant).work).code != base
    unrelated = source + "\n\ndef other():\n    return 2\n"
    assert callable_identity(user_module("idmod_a", unrelated).work).code == base


def test_library_code_counts_by_name_and_version() -> None:
    i = callable_identity(np.sort, (np.arange(5),))
    assert i.kind == "callable" and i.what == "numpy.sort"
    assert ("numpy", np.__version__) in i.packages
    assert callable_identity(sorted, ([1],)).code != callable_identity(min, ([1],)).code


@pytest.mark.parametrize("a, b", [
    ((1000,), (1001,)), ((1.5,), (1.25,)), (("abc",), ("abd",)), ((b"x",), (b"y",)),
    ((True,), (1,)), ((None,), (0,)), (((1, 2),), ((1, 3),)), (([1, 2],), ((1, 2),)),
    (({"a": 1},), ({"a": 2},)), (({1, 2},), ({1, 3},)),
])
def test_argument_values_of_each_kind_tell_apart(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    f = _function(BODY)
    first, second = callable_identity(f, a), callable_identity(f, b)
    assert first.arguments != second.arguments
    assert first.arguments == callable_identity(f, a).arguments
    assert first.key and second.key and first.key != second.key


def test_sets_and_keywords_do_not_depend_on_order() -> None:
    f = _function(BODY)
    assert callable_identity(f, ({3, 1, 2},)).arguments == \
        callable_identity(f, ({2, 3, 1},)).arguments
    assert callable_identity(f, (), {"a": 1, "b": 2}).arguments == \
        callable_identity(f, (), {"b": 2, "a": 1}).arguments


def test_arrays_by_shape_dtype_layout_and_content(monkeypatch: pytest.MonkeyPatch) -> None:
    f = _function(BODY)
    x = np.arange(12, dtype=np.float64).reshape(3, 4)

    def args(a: Any) -> str:
        return callable_identity(f, (a,)).arguments

    assert args(x) == args(x.copy())
    assert args(x) != args(x.astype(np.float32))
    assert args(x) != args(x.reshape(4, 3))
    assert args(x) != args(np.asfortranarray(x))  # the layout changes how fast code runs
    y = x.copy()
    y[2, 3] += 1.0
    assert args(x) != args(y)
    # Past the bytes hashed per identity, an array counts by its shape, dtype and layout,
    # and the identity says so.
    monkeypatch.setattr(ident, "CONTENT_BYTES", 64)
    big = callable_identity(f, (x,))
    assert any("argument 0" in n and "96 bytes" in n for n in big.notes), big.notes
    assert big.arguments == callable_identity(f, (y,)).arguments
    assert big.key  # still a replicate of its own kind


def test_objects_walk_their_attributes_and_an_opaque_one_is_unknown() -> None:
    @dataclasses.dataclass
    class Config:
        size: int
        name: str

    class Model:
        def __init__(self, w: float) -> None:
            self.weights = np.full(3, w)
            self.lock = threading.Lock()  # a handle inside a value: its type stands for it

    f = _function(BODY)
    assert callable_identity(f, (Config(1, "a"),)).arguments != \
        callable_identity(f, (Config(2, "a"),)).arguments
    assert callable_identity(f, (Model(1.0),)).arguments == \
        callable_identity(f, (Model(1.0),)).arguments
    assert callable_identity(f, (Model(1.0),)).arguments != \
        callable_identity(f, (Model(2.0),)).arguments
    opaque = callable_identity(f, (threading.Lock(),))
    assert opaque.unknown and "argument 0" in opaque.unknown[0]
    assert opaque.key == ""  # not fully known: a replicate of nothing


def test_bound_methods_partials_and_callable_objects_include_what_they_hold() -> None:
    class Scaler:
        def __init__(self, k: int) -> None:
            self.k = k

        def __call__(self, x: int) -> int:
            return x * self.k

        def apply(self, x: int) -> int:
            return x + self.k

    assert callable_identity(Scaler(2)).code != callable_identity(Scaler(3)).code
    assert callable_identity(Scaler(2).apply).code != callable_identity(Scaler(3).apply).code
    f = _function(BODY)
    assert callable_identity(functools.partial(f, 10)).code != \
        callable_identity(functools.partial(f, 11)).code


def test_tensors_by_content_and_device() -> None:
    torch = pytest.importorskip("torch")
    f = _function(BODY)
    a = torch.arange(6, dtype=torch.float32)
    assert callable_identity(f, (a,)).arguments == callable_identity(f, (a.clone(),)).arguments
    assert callable_identity(f, (a,)).arguments != \
        callable_identity(f, (a + 1,)).arguments
    assert callable_identity(f, (a,)).arguments != \
        callable_identity(f, (a.to(torch.bfloat16),)).arguments
    meta = callable_identity(f, (torch.empty(3, device="meta"),))
    assert any("meta" in n for n in meta.notes)
    assert ("torch", torch.__version__) in callable_identity(f, (a,)).packages


def test_statements_by_text_setup_and_the_globals_they_use() -> None:
    base = statement_identity("sum(r)", "r = range(1000)")
    assert base.kind == "statement" and base.what == "sum(r)"
    assert statement_identity("sum(r)", "r = range(1000)").key == base.key
    assert statement_identity("sum(r)", "r = range(1001)").code != base.code
    assert statement_identity("sum(r) ", "r = range(1000)").code != base.code
    g1 = statement_identity("f(x)", globals={"f": len, "x": [1, 2], "unused": object()})
    g2 = statement_identity("f(x)", globals={"f": len, "x": [1, 2, 3]})
    assert g1.arguments != g2.arguments and not g1.unknown  # the unused object is left out
    imports = statement_identity("np.sort(a)", "import numpy as np\na = np.ones(3)")
    assert ("numpy", np.__version__) in imports.packages


def test_versions_are_part_of_the_identity() -> None:
    i = statement_identity("pass")
    assert i.python == ".".join(map(str, sys.version_info[:3]))
    assert i.fastbench == fastbench.__version__
    other = dataclasses.replace(i, python="3.99.0")
    assert other.key != i.key
    assert "Python" in " ".join(i.differences(other))
    assert dataclasses.replace(i, packages=(("numpy", "0.1"),)).key != i.key


def test_round_trip_and_bad_data() -> None:
    i = callable_identity(_function(BODY), (5,))
    back = Identity.from_dict(i.to_dict())
    assert back == i and back.key == i.key
    assert i.to_dict()["key"] == i.key
    for bad in ({"code": 3}, {"git_dirty": "yes"}, {"packages": [["numpy"]]}, {"unknown": "x"}):
        with pytest.raises(ValueError, match="wrong type"):
            Identity.from_dict({**i.to_dict(), **bad})
    assert Identity().key == ""  # unknown: another tool's result


def test_differences_say_what_changed() -> None:
    a = statement_identity("sum(r)", "r = range(10)")
    b = dataclasses.replace(a, code="x" * 32, git_commit="1" * 40, git_diff="d" * 32)
    said = a.differences(b)
    assert "the code" in said and "uncommitted changes" in said
    assert any(s.startswith("git commit") for s in said)
    assert a.differences(a) == []


# -- git ---------------------------------------------------------------------------------------
def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "proj"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    (root / "gitmod.py").write_text("def work():\n    return sum(range(100))\n")
    (root / "README.md").write_text("a project\n")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "first")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.chdir(root)
    return root


def _work_identity() -> Identity:
    sys.modules.pop("gitmod", None)
    importlib.invalidate_caches()
    return callable_identity(importlib.import_module("gitmod").work)


def test_the_commit_and_a_hash_of_the_uncommitted_source_diff(repo: Path) -> None:
    clean = _work_identity()
    assert clean.git_commit == _git(repo, "rev-parse", "HEAD")
    assert clean.git_dirty is False and clean.git_diff == ""
    # Results saved inside the tree are not source: they leave the identity alone.
    (repo / "A1.json").write_text("{}")
    assert _work_identity().key == clean.key
    # A change to a source file the code does not even call changes it: callees outside
    # the function, build files and the like are seen through git.
    (repo / "other.py").write_text("X = 1\n")
    untracked = _work_identity()
    assert untracked.git_diff not in ("", "unknown") and untracked.key != clean.key
    (repo / "other.py").unlink()
    assert _work_identity().key == clean.key
    (repo / "gitmod.py").write_text("def work():\n    return sum(range(100))\n\n# note\n")
    edited = _work_identity()
    assert edited.git_dirty is True and edited.git_diff not in ("", "unknown")
    assert edited.code == clean.code  # a comment: the code is the same, the tree is not
    assert edited.key != clean.key
    (repo / "gitmod.py").write_text("def work():\n    return sum(range(100))\n")
    assert _work_identity().key == clean.key  # back to the commit: identical again
    (repo / "README.md").write_text("changed docs\n")
    docs = _work_identity()
    assert docs.git_dirty is True and docs.git_diff == ""  # not source: the same code
    _git(repo, "commit", "-qam", "docs")
    assert _work_identity().git_commit != clean.git_commit


def test_a_repositorys_own_commands_do_not_run(repo: Path) -> None:
    marker = repo.parent / "ran"
    _git(repo, "config", "core.fsmonitor", f"touch {marker}")
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    _git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    _git(repo, "config", "diff.evil.textconv", f"touch {marker}; cat")
    _git(repo, "config", "diff.external", f"touch {marker}")
    (repo / "gitmod.py").write_text("def work():\n    return 1\n")
    i = _work_identity()
    assert i.git_dirty is True and i.git_diff not in ("", "unknown")
    assert not marker.exists()
