"""The identity of a measurement: what makes it this code, apart from the machine it ran on.

Owns the :class:`Identity` record and how it is found (:func:`callable_identity`,
:func:`statement_identity`): a hash of a callable's code (bytecode, constants and names,
nested code objects, defaults, closure values, and the code of the functions and classes
of the user's own modules it names), fingerprints of its argument values, a statement's
text and setup, the git state of the code's work tree, and the versions of Python,
fastbench and the packages the code uses. Two measurements with the same ``key`` ran the
same code on the same inputs: run-to-run variation is learned from such replicates only.
Never measures; never imports torch (tensors are told by their type).
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import enum
import functools
import hashlib
import importlib.metadata
import os
import platform
import re
import site
import struct
import sys
import sysconfig
import types
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ._version import __version__
from .machine.git import GitState, git_state

__all__ = ["CONTENT_BYTES", "Identity", "callable_identity", "code_hash", "imported_packages",
           "is_user_file", "statement_identity", "value_fingerprint"]

# Array and tensor contents are hashed up to this many bytes in all per identity; past it
# an array counts by its shape, dtype and layout (said in ``Identity.notes``). Hashing runs
# at about 1-2 GB/s, so this bounds the cost to tens of milliseconds.
CONTENT_BYTES = 64 * 2**20
# Containers are walked up to this many items in all, and this deep; past either a value
# counts by its type and length (said in the notes).
_ITEMS = 200_000
_DEPTH = 24
# The most functions and classes of the user's own code followed from the measured one.
_CODE_OBJECTS = 256
# A repr is a stable fingerprint when it holds no memory address and is not too long.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_REPR_CHARS = 10_000
# Values a global name may hold and still be part of the code's identity (a module-level
# constant the code reads); mutable module state is left out.
_CONSTANT_TYPES = (type(None), bool, int, float, complex, str, bytes)
# Callables implemented in C: named by their module and qualified name.
_NATIVE_CALLABLES = (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType,
                     types.WrapperDescriptorType, types.MethodDescriptorType,
                     types.ClassMethodDescriptorType)


@dataclass(frozen=True)
class Identity:
    """What makes a measurement this code.

    Attributes
    ----------
    kind : str
        "callable" or "statement"; "" when unknown (another tool's file, an older one).
    what : str
        What was measured, for people: a callable's qualified name, a statement's text.
    code : str
        Hash of the code: a callable's bytecode, constants, names, nested code objects,
        defaults, closure values and the code of the user's functions and classes it names
        (with the module-level constants it reads); a statement's text and setup.
    arguments : str
        Hash of the argument values (a statement's globals); "" when there are none.
    unknown : tuple of str
        Parts that could not be fingerprinted (an argument whose value neither walks nor
        has a stable repr): with any, ``key`` is "" and the measurement is no replicate.
    notes : tuple of str
        Parts fingerprinted in part: an array past :data:`CONTENT_BYTES` by its shape,
        dtype and layout, a container past the items walked by its type and length.
    git_commit, git_branch : str
        The commit and branch of the work tree holding the code ("" outside one).
    git_dirty : bool or None
        Whether tracked files differed from the commit.
    git_diff : str
        Hash of the uncommitted changes to source files ("" for none, "unknown" when git
        could not tell: ``key`` is then "").
    python, fastbench : str
        Versions.
    packages : tuple of (str, str)
        The top-level packages the code uses and their versions ("" when unknown).
    """

    kind: str = ""
    what: str = ""
    code: str = ""
    arguments: str = ""
    unknown: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    git_commit: str = ""
    git_branch: str = ""
    git_dirty: bool | None = None
    git_diff: str = ""
    python: str = ""
    fastbench: str = ""
    packages: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """A short hash of everything that makes this code: equal keys are replicates of
        one another. "" when the identity is not fully known (no replicates then)."""
        if not self.kind or not self.code or self.unknown or self.git_diff == "unknown":
            return ""
        parts = [self.kind, self.code, self.arguments, self.git_commit, self.git_diff,
                 self.python, self.fastbench, *(f"{n}={v}" for n, v in self.packages)]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]

    def differences(self, other: Identity) -> list[str]:
        """What differs between two identities, in words ("the code", "git commit 1a2b3c4
        -> 5d6e7f8"...); empty when they are the same."""
        out = []
        if self.kind != other.kind:
            out.append(f"what was measured ({self.kind or 'unknown'} -> {other.kind or 'unknown'})")
        if self.code != other.code:
            out.append("the code")
        if self.arguments != other.arguments:
            out.append("the arguments" if self.kind == "callable" else "the globals")
        if self.git_commit != other.git_commit:
            out.append(f"git commit {self.git_commit[:7] or 'none'} -> "
                       f"{other.git_commit[:7] or 'none'}")
        if self.git_diff != other.git_diff:
            out.append("uncommitted changes")
        if self.python != other.python:
            out.append(f"Python {self.python or '?'} -> {other.python or '?'}")
        if self.fastbench != other.fastbench:
            out.append(f"fastbench {self.fastbench or '?'} -> {other.fastbench or '?'}")
        mine, theirs = dict(self.packages), dict(other.packages)
        for name in sorted({*mine, *theirs}):
            if mine.get(name) != theirs.get(name):
                out.append(f"{name} {mine.get(name) or 'absent'} -> "
                           f"{theirs.get(name) or 'absent'}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (with ``key``); :meth:`from_dict` restores it."""
        data = dataclasses.asdict(self)
        data["unknown"] = list(self.unknown)
        data["notes"] = list(self.notes)
        data["packages"] = [list(p) for p in self.packages]
        data["key"] = self.key
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Identity:
        """Rebuild from :meth:`to_dict` output (``key`` is recomputed, not read).

        Raises
        ------
        ValueError
            A field of the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"an identity must be an object, got {type(data).__name__}")
        text = {f: data.get(f, "") for f in ("kind", "what", "code", "arguments", "git_commit",
                                             "git_branch", "git_diff", "python", "fastbench")}
        bad = [f for f, v in text.items() if not isinstance(v, str)]
        dirty = data.get("git_dirty")
        if dirty is not None and not isinstance(dirty, bool):
            bad.append("git_dirty")
        lists = {f: data.get(f, []) for f in ("unknown", "notes", "packages")}
        bad += [f for f, v in lists.items() if not isinstance(v, list)]
        if not bad:
            bad += [f for f in ("unknown", "notes") if not all(isinstance(x, str) for x in lists[f])]
            if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                       for p in lists["packages"]):
                bad.append("packages")
        if bad:
            raise ValueError(f"identity field(s) of the wrong type: {', '.join(sorted(set(bad)))}")
        return cls(**text, git_dirty=dirty, unknown=tuple(lists["unknown"]),
                   notes=tuple(lists["notes"]),
                   packages=tuple((p[0], p[1]) for p in lists["packages"]))


# -- where code lives ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    """Directories of installed code: the standard library and every site-packages."""
    dirs = set()
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            dirs.add(os.path.realpath(path))
    try:
        dirs.update(os.path.realpath(p) for p in site.getsitepackages())
    except AttributeError:  # a virtualenv's old site module
        pass
    user = getattr(site, "USER_SITE", None)
    if user:
        dirs.add(os.path.realpath(user))
    return tuple(sorted(dirs))


@functools.lru_cache(maxsize=4096)
def is_user_file(path: str) -> bool:
    """Whether the source file ``path`` is the user's own code: outside the standard
    library and every site-packages."""
    return _file_is_user_code(path)


@functools.lru_cache(maxsize=4096)
def _file_is_user_code(path: str) -> bool:
    real = os.path.realpath(path)
    return not any(real == d or real.startswith(d + os.sep) for d in _library_dirs())


def _module_is_user_code(name: str | None) -> bool:
    """Whether the module ``name`` is the user's own code: the script, or a module loaded
    from a file outside the standard library and site-packages (an editable install of a
    project counts as its own)."""
    if not name:
        return False
    if name in ("__main__", "__mp_main__"):
        return True
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return bool(path) and _file_is_user_code(str(path))


# -- versions -----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    try:
        return importlib.metadata.packages_distributions()
    except (AttributeError, OSError, ValueError):  # Python 3.9 lacks it
        return {}


@functools.lru_cache(maxsize=512)
def _version_of(top: str) -> str:
    """The version of the top-level package ``top``: its ``__version__`` when imported,
    else its distribution's; "" when neither says."""
    module = sys.modules.get(top)
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return version
    for dist in _distributions().get(top, [top]):
        try:
            return importlib.metadata.version(dist)
        except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
            continue
    return ""


def _top(module: str | None) -> str:
    top = (module or "").partition(".")[0]
    return "" if top in ("", "__main__", "__mp_main__", "builtins", "fastbench") else top


# -- the fingerprint walk -----------------------------------------------------------------------
class _Walk:
    """One identity's walk over code and values: a running hash, the budgets left, what was
    seen (for cycles) and what was found."""

    def __init__(self) -> None:
        self.content_left = CONTENT_BYTES
        self.items_left = _ITEMS
        self.code_left = _CODE_OBJECTS
        self.notes: list[str] = []
        self.unknown: list[str] = []
        self.packages: set[str] = set()
        self._active: set[int] = set()
        self._code_done: set[int] = set()

    # values ---------------------------------------------------------------------------------
    def value(self, h: Any, v: Any, where: str, depth: int = 0) -> bool:
        """Feed a fingerprint of ``v`` to ``h``; False when it has none (its type is fed)."""
        t = type(v)
        tag = f"{t.__module__}.{t.__qualname__}"
        h.update(b"\0" + tag.encode() + b"\0")
        if v is None or t in (bool, int, float, complex):
            h.update(repr(v).encode())
            return True
        if isinstance(v, str):
            h.update(v.encode("utf-8", "surrogatepass"))
            return True
        if isinstance(v, (bytes, bytearray, memoryview)):
            return self._content(h, bytes(v) if len(v) <= self.content_left else b"",
                                 len(v), where, f"{len(v):,} bytes")
        if isinstance(v, enum.Enum):
            h.update(v.name.encode())
            return True
        if isinstance(v, np.ndarray):
            return self._array(h, v, where)
        if isinstance(v, np.generic):
            h.update(v.dtype.str.encode() + v.tobytes())
            return True
        if t.__module__.partition(".")[0] == "torch" and hasattr(v, "dtype") and hasattr(v, "shape"):
            self.packages.add("torch")
            return self._tensor(h, v, where)
        if isinstance(v, (types.FunctionType, types.MethodType, functools.partial, type,
                          types.ModuleType, *_NATIVE_CALLABLES)):
            return self.code_of(h, v, where, depth)
        if depth >= _DEPTH:
            self.notes.append(f"{where}: deeper than {_DEPTH} levels, counted by its type")
            return True
        if id(v) in self._active:  # a cycle: the path back is part of the shape
            h.update(b"cycle")
            return True
        self._active.add(id(v))
        try:
            return self._compound(h, v, where, depth)
        finally:
            self._active.discard(id(v))

    def _compound(self, h: Any, v: Any, where: str, depth: int) -> bool:
        if isinstance(v, (list, tuple, collections.deque)):
            return self._items(h, list(v) if isinstance(v, collections.deque) else v, where,
                               depth)
        if isinstance(v, Mapping):
            return self._items(h, [x for kv in v.items() for x in kv], where, depth)
        if isinstance(v, (set, frozenset)):
            if len(v) > self.items_left:
                return self._over(h, v, where)
            digests = []
            for item in v:
                sub = hashlib.sha256()
                self.items_left -= 1
                self.value(sub, item, where, depth + 1)
                digests.append(sub.digest())
            h.update(b"".join(sorted(digests)))
            return True
        if dataclasses.is_dataclass(v):
            fields = [(f.name, getattr(v, f.name, None)) for f in dataclasses.fields(v)]
            return self._items(h, [x for kv in fields for x in kv], where, depth)
        state = getattr(v, "__dict__", None)
        slots = [s for k in type(v).__mro__ for s in getattr(k, "__slots__", ())
                 if isinstance(s, str) and s not in ("__dict__", "__weakref__")]
        if isinstance(state, dict) or slots:
            pairs: list[Any] = []
            for name in slots:
                if hasattr(v, name):
                    pairs += [name, getattr(v, name)]
            if isinstance(state, dict):
                pairs += [x for kv in state.items() for x in kv]
            return self._items(h, pairs, where, depth)
        return self._repr(h, v, where, depth)

    def _items(self, h: Any, items: Any, where: str, depth: int) -> bool:
        if len(items) > self.items_left:
            return self._over(h, items, where)
        h.update(struct.pack("<q", len(items)))
        self.items_left -= len(items)
        for item in items:
            self.value(h, item, where, depth + 1)
        return True

    def _over(self, h: Any, v: Any, where: str) -> bool:
        h.update(b"len" + struct.pack("<q", len(v)))
        self.notes.append(f"{where}: more than {_ITEMS:,} items in all, "
                          f"a {type(v).__name__} of {len(v):,} counted by its length")
        return True

    def _repr(self, h: Any, v: Any, where: str, depth: int) -> bool:
        try:
            text = repr(v)
        except Exception:  # noqa: BLE001 - a repr that raises says nothing stable
            text = ""
        if text and len(text) <= _REPR_CHARS and not _ADDRESS.search(text):
            h.update(text.encode("utf-8", "surrogatepass"))
            return True
        if depth == 0:
            why = "its repr holds a memory address" if text else "it has no usable repr"
            self.unknown.append(f"{where}: a {type(v).__qualname__} ({why}, and it holds no "
                                "attributes to walk)")
            return False
        # A handle nested in a value (a lock, a weak reference, an opaque native object) has
        # no state of the code's: its type stands for it.
        return True

    def _content(self, h: Any, data: bytes, nbytes: int, where: str, what: str) -> bool:
        if nbytes <= self.content_left:
            self.content_left -= nbytes
            h.update(hashlib.sha256(data).digest())
            return True
        h.update(b"unhashed" + struct.pack("<q", nbytes))
        self.notes.append(f"{where}: {what} past the {CONTENT_BYTES // 2**20} MiB hashed per "
                          "identity, counted by its size, shape and type")
        return True

    def _array(self, h: Any, a: np.ndarray[Any, Any], where: str) -> bool:
        self.packages.add("numpy")
        layout = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "strided"
        h.update(f"{a.dtype.str}|{a.shape}|{layout}".encode())
        if a.dtype.hasobject:
            return self._items(h, a.ravel().tolist(), where, 1)
        if a.nbytes > self.content_left:
            return self._content(h, b"", a.nbytes, where,
                                 f"an array of {a.nbytes:,} bytes {a.shape} {a.dtype}")
        return self._content(h, np.ascontiguousarray(a).tobytes(), a.nbytes, where, "")

    def _tensor(self, h: Any, x: Any, where: str) -> bool:
        try:
            meta = (f"{x.dtype}|{tuple(x.shape)}|{x.device}|{x.layout}|"
                    f"grad={bool(getattr(x, 'requires_grad', False))}")
            h.update(meta.encode())
            nbytes = int(x.numel()) * int(x.element_size())
            if x.device.type != "cpu" or str(x.layout) != "torch.strided":
                self.notes.append(f"{where}: a {x.device.type} {x.layout} tensor, counted "
                                  "by its shape, dtype and device")
                return True
            h.update(f"contiguous={x.is_contiguous()}".encode())
            if getattr(x, "is_quantized", False):
                x = x.int_repr()
            if nbytes > self.content_left:
                return self._content(h, b"", nbytes, where,
                                     f"a tensor of {nbytes:,} bytes {tuple(x.shape)}")
            raw = x.detach().contiguous().reshape(-1)
            data = raw.view(sys.modules["torch"].uint8).numpy().tobytes() if nbytes else b""
            return self._content(h, data, nbytes, where, "")
        except Exception as exc:  # noqa: BLE001 - an exotic tensor subclass
            self.notes.append(f"{where}: a {type(x).__qualname__} counted by its type "
                              f"({type(exc).__name__})")
            return True

    # code -----------------------------------------------------------------------------------
    def code_of(self, h: Any, fn: Any, where: str, depth: int = 0) -> bool:
        """Feed the code of a callable (and what it is bound to) to ``h``."""
        if isinstance(fn, types.ModuleType):
            h.update(fn.__name__.encode())
            top = _top(fn.__name__)
            if top:
                self.packages.add(top)
            return True
        if isinstance(fn, functools.partial):
            self.code_of(h, fn.func, where, depth + 1)
            self.value(h, fn.args, f"{where} (bound arguments)", depth + 1)
            return self.value(h, fn.keywords, f"{where} (bound keywords)", depth + 1)
        if isinstance(fn, types.MethodType):
            self.code_of(h, fn.__func__, where, depth + 1)
            return self.value(h, fn.__self__, f"{where} (its object)", depth + 1)
        if isinstance(fn, types.FunctionType):
            return self._function(h, fn, where, depth)
        if isinstance(fn, type):
            return self._class(h, fn, where, depth)
        if isinstance(fn, _NATIVE_CALLABLES):
            module = getattr(fn, "__module__", None) or type(getattr(fn, "__self__", None)).__module__
            name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "")
            h.update(f"native:{module}.{name}".encode())
            top = _top(str(module))
            if top:
                self.packages.add(top)
            owner = getattr(fn, "__self__", None)
            if owner is not None and not isinstance(owner, (types.ModuleType, type)):
                return self.value(h, owner, f"{where} (its object)", depth + 1)
            return True
        # An object with __call__ (a model, a ufunc): its class's code and its own state.
        self._class(h, type(fn), where, depth)
        if id(fn) in self._active:
            h.update(b"cycle")
            return True
        self._active.add(id(fn))
        try:
            return self._compound(h, fn, where, depth)
        finally:
            self._active.discard(id(fn))

    def _class(self, h: Any, cls: type, where: str, depth: int) -> bool:
        h.update(f"class:{cls.__module__}.{cls.__qualname__}".encode())
        top = _top(cls.__module__)
        if top:
            self.packages.add(top)
        if not _module_is_user_code(cls.__module__) or id(cls) in self._code_done:
            return True
        self._code_done.add(id(cls))
        for klass in cls.__mro__:
            if klass is object or not _module_is_user_code(klass.__module__):
                continue
            for name, member in sorted(vars(klass).items()):
                target = getattr(member, "__func__", member)  # staticmethod, classmethod
                if isinstance(target, types.FunctionType) and self.code_left > 0:
                    h.update(name.encode())
                    self._function(h, target, f"{where} ({cls.__qualname__}.{name})", depth + 1)
        return True

    def _function(self, h: Any, fn: types.FunctionType, where: str, depth: int) -> bool:
        if id(fn) in self._code_done or self.code_left <= 0:
            h.update(f"seen:{fn.__qualname__}".encode())
            return True
        self._code_done.add(id(fn))
        self.code_left -= 1
        top = _top(fn.__module__)
        if top:
            self.packages.add(top)
        h.update(code_hash(fn.__code__).encode())
        self.value(h, fn.__defaults__, f"{where} (defaults)", depth + 1)
        self.value(h, fn.__kwdefaults__, f"{where} (keyword defaults)", depth + 1)
        for i, cell in enumerate(fn.__closure__ or ()):
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                h.update(b"empty cell")
                continue
            self.value(h, content, f"{where} (closure value {fn.__code__.co_freevars[i]})",
                       depth + 1)
        self._globals(h, fn, where, depth)
        return True

    def _globals(self, h: Any, fn: types.FunctionType, where: str, depth: int) -> None:
        """The module-level names ``fn``'s code reads: the code of the user's functions and
        classes, constants, and the packages of modules it uses."""
        namespace = fn.__globals__
        for name in sorted(_names(fn.__code__)):
            if name not in namespace:
                continue
            obj = namespace[name]
            if isinstance(obj, types.ModuleType):
                top = _top(obj.__name__)
                if top:
                    self.packages.add(top)
            elif isinstance(obj, (types.FunctionType, type)):
                if _module_is_user_code(getattr(obj, "__module__", None)):
                    h.update(b"global " + name.encode())
                    self.code_of(h, obj, f"{where} (calls {name})", depth + 1)
                else:
                    top = _top(getattr(obj, "__module__", None))
                    if top:
                        self.packages.add(top)
            elif _is_constant(obj):
                h.update(b"global " + name.encode())
                self.value(h, obj, f"{where} (global {name})", depth + 1)


def _is_constant(v: Any) -> bool:
    if isinstance(v, _CONSTANT_TYPES):
        return True
    return isinstance(v, (tuple, frozenset)) and len(v) <= 1000 and all(map(_is_constant, v))


def _names(code: types.CodeType) -> set[str]:
    """The global (and attribute) names a code object and its nested ones use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _const_bytes(c: Any) -> bytes:
    if isinstance(c, types.CodeType):
        return b"code:" + code_hash(c).encode()
    if isinstance(c, (tuple, frozenset)):
        parts = [_const_bytes(x) for x in c]
        if isinstance(c, frozenset):
            parts.sort()
        return f"{type(c).__name__}:{len(parts)}(".encode() + b",".join(parts) + b")"
    return f"{type(c).__name__}:{c!r}".encode("utf-8", "surrogatepass")


@functools.lru_cache(maxsize=4096)
def code_hash(code: types.CodeType) -> str:
    """A hash of what a code object does: its bytecode, constants (nested code objects by
    their own hash), names, variables, argument counts and flags, and its exception table.
    Line numbers and the file name are not part of it, so a comment or a blank line leaves
    it unchanged (a docstring is a constant, and does change it).
    """
    h = hashlib.sha256()
    for part in (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
                 code.co_flags, code.co_name):
        h.update(f"{part}\0".encode())
    h.update(code.co_code)
    h.update(getattr(code, "co_exceptiontable", b""))
    for names in (code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars):
        h.update(("\0".join(names) + "\1").encode("utf-8", "surrogatepass"))
    for const in code.co_consts:
        h.update(_const_bytes(const) + b"\1")
    return h.hexdigest()[:32]


def value_fingerprint(value: Any) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(hash, unknown parts, notes) of one value, as an argument's is found."""
    walk = _Walk()
    h = hashlib.sha256()
    walk.value(h, value, "the value")
    return h.hexdigest()[:32], tuple(walk.unknown), tuple(walk.notes)


# -- identities ---------------------------------------------------------------------------------
def _source_dir(fn: Any) -> str | None:
    """The directory of the user's source file that defines ``fn`` (unwrapping partials and
    methods), or None for library code and what has no file."""
    target = fn
    for _ in range(8):
        if isinstance(target, functools.partial):
            target = target.func
        elif isinstance(target, types.MethodType):
            target = target.__func__
        else:
            break
    code = getattr(target, "__code__", None)
    path = getattr(code, "co_filename", None)
    if isinstance(target, type):
        module = sys.modules.get(target.__module__)
        path = getattr(module, "__file__", None)
    if not path or not os.path.isfile(str(path)) or not _file_is_user_code(str(path)):
        return None
    return os.path.dirname(os.path.abspath(str(path)))


def _git(directory: str | None, cache: dict[str, GitState | None] | None) -> GitState | None:
    where = directory or os.getcwd()
    if cache is not None and where in cache:
        return cache[where]
    state = git_state(where)
    if cache is not None:
        cache[where] = state
    return state


def _identity(kind: str, what: str, code: str, arguments: str, walk: _Walk,
              state: GitState | None) -> Identity:
    return Identity(
        kind=kind, what=what, code=code, arguments=arguments,
        unknown=tuple(walk.unknown), notes=tuple(dict.fromkeys(walk.notes)),
        git_commit=state.commit if state else "", git_branch=state.branch if state else "",
        git_dirty=state.dirty if state else None, git_diff=state.diff if state else "",
        python=platform.python_version(), fastbench=__version__,
        packages=tuple((p, _version_of(p)) for p in sorted(walk.packages)),
    )


def callable_identity(fn: Callable[..., Any], args: tuple[Any, ...] = (),
                      kwargs: Mapping[str, Any] | None = None, *,
                      git_cache: dict[str, GitState | None] | None = None) -> Identity:
    """The identity of ``fn(*args, **kwargs)``.

    The code is ``fn``'s (a partial's function, a method's function, a class's methods, a
    callable object's ``__call__`` and state), with its defaults, closure values and the
    user's functions, classes and constants it names; the arguments by value (numbers and
    strings exactly, arrays and CPU tensors by shape, dtype, layout and a hash of their
    content up to :data:`CONTENT_BYTES`, containers and objects walked, others by a repr
    without memory addresses, else "unknown"); the git state of the work tree holding
    ``fn``'s source file (else of the working directory).
    """
    walk = _Walk()
    h = hashlib.sha256()
    walk.code_of(h, fn, "the callable")
    a = hashlib.sha256()
    for i, arg in enumerate(args):
        walk.value(a, arg, f"argument {i}")
    for name, arg in sorted((kwargs or {}).items()):
        a.update(b"\0kw\0" + name.encode())
        walk.value(a, arg, f"keyword argument {name!r}")
    has_args = bool(args or kwargs)
    what = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
               or type(fn).__qualname__)
    module = getattr(fn, "__module__", None)
    if isinstance(module, str) and module not in ("builtins",):
        what = f"{module}.{what}"
    return _identity("callable", what, h.hexdigest()[:32], a.hexdigest()[:32] if has_args else "",
                     walk, _git(_source_dir(fn), git_cache))


def _used_names(source: str) -> set[str]:
    """The names a piece of source reads or binds (every identifier, conservatively)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def imported_packages(source: str) -> set[str]:
    """Top-level packages a piece of source imports (absolute imports only)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(_top(a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.add(_top(node.module))
    return {t for t in out if t}


def statement_identity(stmt: str, setup: str = "pass",
                       globals: Mapping[str, Any] | None = None, *,  # noqa: A002
                       git_cache: dict[str, GitState | None] | None = None) -> Identity:
    """The identity of a statement timed after ``setup``: their text (exactly: a changed
    space is a changed statement), the values of ``globals`` (as arguments are
    fingerprinted), the packages they import and the git state of the working directory."""
    walk = _Walk()
    h = hashlib.sha256(b"stmt\0" + stmt.encode("utf-8", "surrogatepass") + b"\0setup\0"
                       + setup.encode("utf-8", "surrogatepass"))
    a = hashlib.sha256()
    used = _used_names(setup) | _used_names(stmt)
    for name, value in sorted((globals or {}).items()):
        if name not in used:  # globals=globals() hands over the whole module
            continue
        a.update(b"\0" + name.encode())
        walk.value(a, value, f"global {name!r}")
    walk.packages.update(imported_packages(setup) | imported_packages(stmt))
    first = stmt.strip().splitlines()[0] if stmt.strip() else "pass"
    return _identity("statement", first, h.hexdigest()[:32],
                     a.hexdigest()[:32] if globals else "", walk, _git(None, git_cache))
