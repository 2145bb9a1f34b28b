"""What simulate() runs: a command line, checked before valgrind starts, a callable named
by module and qualified name so that a fresh Python under valgrind can import it, or a
statement compiled into a loop, plus the driver that process runs. Refuses, with the reason
and what to pass instead, callables that cannot be named (lambdas, closures, bound methods,
partials). Runs no valgrind itself.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shlex
import shutil
import sys
import textwrap
from functools import partial
from typing import Any, Callable, Sequence, Union

__all__ = ["DRIVER", "LAYOUT_PAD", "STATEMENT_NAMESPACE", "TargetArg", "callable_spec",
           "check_program", "command_argv", "layout_pad", "script_shebang", "statement_loop",
           "statement_source"]

# The module name a statement's loop runs under, here and in the driver: neither "__main__"
# (the driver's own) nor the name of an importable module.
STATEMENT_NAMESPACE = "__fastbench_statement__"
# The file name a statement's tracebacks show.
_STATEMENT_FILE = "<fastbench-statement>"

# Another arrangement of the heap before the calls. Code that allocates takes other paths
# through the interpreter's small-object pools and the C allocator when the free blocks lie
# elsewhere, so one count is one layout's; counting under several shows how much that moves
# it. Layout 0 leaves the heap as it is. Layout k >= 1 allocates a mix of 64-511 bytes
# objects of 1 B to 4 KiB (a quarter of them above the pools' 512 B limit), drawn from an
# LCG seeded by k (no import, so the same in every process), and keeps about half alive:
# their holes, and the blocks they hold, move later allocations. The same source runs in
# this process (the PMU) and in the driver (valgrind).
LAYOUT_PAD = """\
def _fastbench_layout(seed):
    if seed <= 0:
        return []
    state = [(seed * 2654435761) % 2147483648 or 1]
    def draw():
        state[0] = (state[0] * 1103515245 + 12345) % 2147483648
        return state[0] >> 8
    kept = []
    for _ in range(64 + draw() % 448):
        r = draw()
        block = bytes(1 + (r >> 2) % (4096 if r & 1 else 512))
        if r & 2:
            kept.append(block)
    return kept
"""


def _compile_pad() -> Callable[[int], list[bytes]]:
    namespace: dict[str, Any] = {}
    exec(compile(LAYOUT_PAD, "<fastbench-layout>", "exec"), namespace)  # noqa: S102
    pad: Callable[[int], list[bytes]] = namespace["_fastbench_layout"]
    return pad


layout_pad: Callable[[int], list[bytes]] = _compile_pad()
layout_pad.__doc__ = ("The objects that lay the heap out as layout ``seed`` (0: nothing); keep "
                      "them alive while counting.")

# Runs inside valgrind, twice, with the same text; only the spec file (same path length)
# differs, and within it only the number of calls, so the two processes do the same work
# up to the calls, the layout pad (LAYOUT_PAD) included. sys.path comes first so that the
# target's module imports as it does here.
# A statement spec carries the source of statement_source(): its setup runs in both
# processes, its loop 0 times in one and ``calls`` times in the other.
DRIVER = """\
import pickle, sys
with open(sys.argv[1], "rb") as f:
    spec = pickle.load(f)
sys.path[:] = spec["sys_path"] + [p for p in sys.path if p not in spec["sys_path"]]
%s
if spec.get("statement") is not None:
    namespace = {"__name__": %r}
    exec(compile(spec["statement"], %r, "exec"), namespace)
    pad = _fastbench_layout(spec.get("layout", 0))
    namespace["inner"](spec["calls"])
    sys.exit(0)
if spec["main_path"] is None:
    import importlib
    obj = importlib.import_module(spec["module"])
else:
    import runpy, types
    obj = types.ModuleType("__mp_main__")
    obj.__dict__.update(runpy.run_path(spec["main_path"], run_name="__mp_main__"))
    sys.modules["__main__"] = sys.modules["__mp_main__"] = obj
for name in spec["qualname"].split("."):
    obj = getattr(obj, name)
args = pickle.loads(spec["args"])
pad = _fastbench_layout(spec.get("layout", 0))
for _ in range(spec["calls"]):
    obj(*args)
""" % (LAYOUT_PAD, STATEMENT_NAMESPACE, _STATEMENT_FILE)

# A statement runs as the stdlib's timeit runs it: ``setup`` once, then ``stmt`` in a
# ``for`` loop inside a function, so names from ``setup`` are fast locals. The loop counter
# is itertools.repeat, the cheapest iterator, and the source imports it itself so that it
# needs nothing but a fresh namespace, in this process and in the driver alike.
_STATEMENT_TEMPLATE = """\
from itertools import repeat as _repeat
def inner(_calls):
    {setup}
    for _ in _repeat(None, _calls):
        {stmt}
"""

TargetArg = Union[str, Sequence[str], Callable[..., object]]


def command_argv(target: str | Sequence[Any]) -> list[str]:
    """The argv of a command given as a list, or as a str split like a shell would."""
    argv = shlex.split(target) if isinstance(target, str) else list(target)
    if not argv:
        raise ValueError("the command is empty")
    for item in argv:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"a command must be a list of str, got an item {item!r} of type "
                            f"{type(item).__name__}")
    return [os.fsdecode(a) for a in argv]


def check_program(program: str) -> None:
    """FileNotFoundError now, rather than valgrind's exit status 127 later."""
    if os.sep in program:
        if not os.access(program, os.X_OK):
            raise FileNotFoundError(f"command {program!r} does not exist or is not executable")
    elif shutil.which(program) is None:
        raise FileNotFoundError(f"command {program!r} not found on PATH")


def script_shebang(program: str) -> tuple[str, str] | None:
    """(path, ``#!`` line) where ``program`` (a path, or a name looked up on PATH) is a script
    rather than a binary; None for a binary or a program that cannot be read.

    valgrind runs a script's interpreter, and a shim that then execs the real program
    (pyenv's ``python``, a virtualenv wrapper) leaves valgrind's run without output unless
    it follows the exec.
    """
    path = program if os.sep in program else shutil.which(program)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            head = f.readline(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    return os.path.abspath(path), head.decode("utf-8", "replace").strip()


def _reject(fn: object, why: str) -> TypeError:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return TypeError(
        f"cannot simulate {name!r}: {why}. The callable runs in a fresh Python process under "
        "valgrind, which imports it by module and qualified name, so pass a module-level "
        "function (with picklable arguments), or a command such as "
        "[sys.executable, 'script.py']"
    )


def callable_spec(fn: Callable[..., object]) -> tuple[str, str, str | None]:
    """(module, qualname, main script path or None) naming ``fn``, checked to resolve to it."""
    if isinstance(fn, partial):
        raise _reject(fn, "a functools.partial has no importable name; pass its arguments "
                          "to simulate() instead")
    if inspect.ismethod(fn) and not isinstance(fn.__self__, type):
        raise _reject(fn, "it is a method bound to an object the new process cannot rebuild; "
                          "simulate(Class.method, obj) passes a picklable obj as an argument")
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if inspect.isbuiltin(fn) and isinstance(getattr(fn, "__name__", None), str):
        # Extension functions (pybind11's among them) carry a binding-internal __qualname__;
        # a module-level one is found by its __name__.
        qualname = fn.__name__
    if not isinstance(module, str) or not isinstance(qualname, str):
        raise _reject(fn, "it has no module and qualified name (a callable object?)")
    if "<lambda>" in qualname:
        raise _reject(fn, "a lambda has no name to import it by")
    if "<locals>" in qualname:
        raise _reject(fn, "it is defined inside a function (a closure or local function), so "
                          "it cannot be imported")
    main_path: str | None = None
    if module == "__main__":
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        if not main_file:
            raise _reject(fn, "it is defined in an interactive session, which has no file to "
                              "import it from")
        main_path = os.path.abspath(main_file)
    obj: Any = sys.modules.get(module)
    try:
        if obj is None:
            obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        obj = None
    if obj is not fn and obj != fn:
        raise _reject(fn, f"{module}.{qualname} does not name this object (was it replaced "
                          "or wrapped by a decorator without functools.wraps?)")
    return module, qualname, main_path


def statement_source(stmt: str, setup: str = "pass") -> str:
    """The source of ``inner(calls)``: ``setup`` once, then ``stmt`` ``calls`` times.

    Raises
    ------
    TypeError
        ``stmt`` or ``setup`` is not a str.
    SyntaxError
        ``stmt`` or ``setup`` does not compile on its own (the error points into it).
    """
    for label, src in (("stmt", stmt), ("setup", setup)):
        if not isinstance(src, str):
            raise TypeError(f"{label} must be a str of Python source, got {type(src).__name__}")
        compile(src, f"<fastbench-{label}>", "exec")
    return _STATEMENT_TEMPLATE.format(
        setup=textwrap.indent(setup, " " * 4).strip() or "pass",
        stmt=textwrap.indent(stmt, " " * 8).strip() or "pass",
    )


def statement_loop(source: str) -> Callable[[int], None]:
    """``inner`` compiled from :func:`statement_source` in a fresh namespace, as the driver
    compiles it under valgrind."""
    namespace: dict[str, Any] = {"__name__": STATEMENT_NAMESPACE}
    exec(compile(source, _STATEMENT_FILE, "exec"), namespace)  # noqa: S102
    inner: Callable[[int], None] = namespace["inner"]
    return inner
