"""The jobs that worker processes run, the parent's side: what to measure (a callable, a
statement, or several variants side by side), named so that a fresh Python can import it,
with its arguments pickled or given by name (:class:`ImportRef`), checked before any worker
starts. Running them is workers.py's; the child's side is worker.py.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pickle
import pickletools
import re
import sys
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Mapping, Sequence

from ..counters.simulation.target import callable_spec

__all__ = ["CALLABLE_OPTIONS", "ROUNDS_OPTIONS", "STATEMENT_OPTIONS", "ImportRef", "WorkerJob",
           "callable_job", "importable", "rounds_job", "statement_job"]

# The options a worker passes to measure() and to timeit(); the rest of their parameters
# (name, and those that start workers) are the job's or the parent's.
CALLABLE_OPTIONS = ("warmup", "min_time_s", "repeat", "duration_s", "loops", "clock",
                    "disable_gc", "max_time_s", "target_rel_ci", "counters",
                    "counters_missing", "memory")
STATEMENT_OPTIONS = tuple(o for o in CALLABLE_OPTIONS if not o.startswith("counters"))
# The settings of a run of rounds (compare's, fastbench.timing.sampling.run_rounds): every one
# of them is given, and duration_s (None: the rounds stop at repeat) may be.
ROUNDS_OPTIONS = ("warmup", "min_time_s", "repeat", "loops", "clock", "disable_gc", "max_time_s")
_ROUNDS_OPTIONAL = ("duration_s",)

# "package.module:attr.path", as setuptools' entry points spell an object.
_TARGET_RE = re.compile(r"^\w+(\.\w+)*:\w+(\.\w+)*$")
# Pickle opcodes that push a str: a module name in a global reference is one of them.
_STRING_OPS = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
                         "STRING", "BINSTRING", "SHORT_BINSTRING"})


# -- arguments given by name -----------------------------------------------------------------
@dataclass(frozen=True)
class ImportRef:
    """An argument the worker imports instead of receiving it pickled.

    For objects that do not pickle (a lock, an open file, a model holding native handles)
    or are cheaper to build than to send: ``importable("mypkg.data:TABLE")`` in the
    arguments (or keyword arguments, or a statement's globals) becomes ``mypkg.data.TABLE``
    in each worker. Only top-level arguments are replaced, not items nested in them.
    """

    target: str

    @property
    def module(self) -> str:
        """The module part of ``target``."""
        return self.target.partition(":")[0]

    @property
    def attrs(self) -> tuple[str, ...]:
        """The attribute path after the colon, split at the dots."""
        return tuple(self.target.partition(":")[2].split("."))

    def resolve(self) -> Any:
        """Import the module and follow the attribute path.

        Raises
        ------
        ImportError
            The module does not import, or lacks an attribute on the path (the message names
            the first missing one).
        """
        return _resolve(self.module, self.attrs, f"ImportRef {self.target!r}")


def importable(target: str) -> ImportRef:
    """An :class:`ImportRef` to ``target``, of the form ``"package.module:attr.path"``.

    Only the form is checked here; :func:`callable_job` and :func:`statement_job` check that
    the module exists, and each worker imports it.

    Raises
    ------
    TypeError
        ``target`` is not a str.
    ValueError
        ``target`` is not ``"module:attribute"`` (dotted names on both sides of one colon).
    """
    _check_target("target", target)
    return ImportRef(target)


def _check_target(label: str, target: object) -> str:
    if not isinstance(target, str):
        raise TypeError(f"{label} must be a str 'module:attribute', got {type(target).__name__}")
    if not _TARGET_RE.match(target):
        raise ValueError(f"{label} must be 'package.module:attribute' (e.g. "
                         f"'mypkg.data:TABLE'), got {target!r}")
    return target


def _resolve(module: str, attrs: Sequence[str], what: str) -> Any:
    """``module`` imported (the re-run script for "__main__") and ``attrs`` followed."""
    try:
        obj: Any = sys.modules["__main__"] if module == "__main__" else \
            importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{what}: cannot import module {module!r} ({exc})",
                          name=module) from exc
    for i, attr in enumerate(attrs):
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            where = ".".join([module, *attrs[:i]])
            raise ImportError(f"{what}: {where} has no attribute {attr!r}",
                              name=module) from None
    return obj


# -- jobs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkerJob:
    """A picklable description of one measurement, for :func:`run_workers`, or of several
    measured side by side, for :func:`run_together`.

    Built by :func:`callable_job`, :func:`statement_job` or :func:`rounds_job`, which check
    everything a worker would otherwise fail on, before any starts.

    Attributes
    ----------
    kind : str
        "callable", "statement" or "rounds".
    module, qualname : str
        The callable's module and qualified name ("" for a statement).
    main_path : str or None
        The ``__main__`` script each worker re-runs first (as ``__mp_main__``) because the
        callable, an argument or a global comes from it; None otherwise.
    stmt, setup : str
        The statement and its setup ("" for a callable).
    args, kwargs : bytes
        The pickled positional arguments (a tuple) and keyword arguments (a dict) of the
        callable; :class:`ImportRef` among them are resolved in the worker.
    options : dict
        Keyword options of ``measure()`` / ``timeit()`` (:data:`CALLABLE_OPTIONS`,
        :data:`STATEMENT_OPTIONS`), or the settings of the rounds (:data:`ROUNDS_OPTIONS`),
        passed through as given; the rest keep their defaults.
    name : str
        The Measurement's name.
    sys_path : list of str
        The parent's ``sys.path``, put first in the worker.
    globals : bytes
        The pickled globals of a statement (a dict); :class:`ImportRef` values are resolved
        in the worker.
    variants : tuple of WorkerJob
        Of a "rounds" job: the callable and statement jobs measured side by side, each
        named as its variant (their own options are not used).
    """

    kind: str
    module: str
    qualname: str
    main_path: str | None
    stmt: str
    setup: str
    args: bytes
    kwargs: bytes
    options: dict[str, Any]
    name: str
    sys_path: list[str] = field(default_factory=list)
    globals: bytes = b""
    variants: tuple[WorkerJob, ...] = ()


def callable_job(fn: Callable[..., Any] | str, args: Sequence[Any] = (),
                 kwargs: Mapping[str, Any] | None = None, *,
                 options: Mapping[str, Any] | None = None,
                 name: str | None = None) -> WorkerJob:
    """A job timing ``fn(*args, **kwargs)`` as ``fastbench.measure`` does, in each worker.

    Parameters
    ----------
    fn : callable or str
        A function (or class, or classmethod) importable by module and qualified name,
        including one of the ``__main__`` script (which each worker then re-runs under the
        name ``__mp_main__``, so its top-level code needs an ``if __name__ == "__main__":``
        guard), or a ``"module:function"`` string, imported here to check it.
    args : sequence
        Positional arguments, pickled to the workers; an :class:`ImportRef` stands for an
        object each worker imports.
    kwargs : mapping of str, optional
        Keyword arguments of ``fn``, likewise; none may share a name with ``measure()``'s
        own keywords.
    options : mapping, optional
        Keyword options of ``measure()`` (:data:`CALLABLE_OPTIONS`), passed as given; their
        values are checked by ``measure()`` (check them before, to fail before any worker).
    name : str, optional
        The Measurement's name; defaults to the callable's qualified name, as ``measure``'s.

    Returns
    -------
    WorkerJob

    Raises
    ------
    TypeError
        ``fn`` is a lambda, a closure, a partial, a method bound to an object, something
        without a module and qualified name, or not callable; an argument does not pickle
        (the message names it); a keyword argument clashes with an option of ``measure``;
        an unknown option.
    ValueError
        ``fn`` is a str not of the form ``"module:function"``.
    ImportError
        ``fn`` given as a str does not import, or an :class:`ImportRef`'s module does not
        exist (or, when it is loaded here already, lacks the attribute).
    """
    if isinstance(fn, str):
        module, _, qualname = _check_target("fn", fn).partition(":")
        obj = _resolve(module, qualname.split("."), f"fn {fn!r}")
        if not callable(obj):
            raise TypeError(f"fn {fn!r} names a {type(obj).__name__}, which is not callable")
        main_path = _main_script(f"fn {fn!r}") if module == "__main__" else None
    elif callable(fn):
        module, qualname, main_path = _callable_name(fn)
        obj = fn
    else:
        raise TypeError(f"fn must be a module-level function or a 'module:function' str, got "
                        f"{type(fn).__name__}")
    arg_tuple = _as_args(args)
    kwarg_dict = _as_kwargs(kwargs)
    clashes = sorted(set(kwarg_dict) & _measure_keywords())
    if clashes:
        raise TypeError(f"keyword argument(s) {', '.join(map(repr, clashes))} of fn share a "
                        "name with measure()'s own keywords; call fn from a module-level "
                        "function that passes them")
    opts = _check_options(options, CALLABLE_OPTIONS, "measure()")
    label = _check_name(name, str(getattr(obj, "__qualname__", None) or qualname))
    args_blob = _pickled(arg_tuple, [f"argument {i}" for i in range(len(arg_tuple))])
    kwargs_blob = _pickled(kwarg_dict, [f"keyword argument {k!r}" for k in kwarg_dict])
    refs = [(f"argument {i}", a) for i, a in enumerate(arg_tuple)] + \
           [(f"keyword argument {k!r}", v) for k, v in kwarg_dict.items()]
    main_path = _main_for_data(main_path, refs, (args_blob, kwargs_blob))
    return WorkerJob(kind="callable", module=module, qualname=qualname, main_path=main_path,
                     stmt="", setup="", args=args_blob, kwargs=kwargs_blob, options=opts,
                     name=label, sys_path=_sys_path())


def statement_job(stmt: str, setup: str = "pass",
                  globals: Mapping[str, Any] | None = None,  # noqa: A002 - timeit's name
                  *, options: Mapping[str, Any] | None = None,
                  name: str | None = None) -> WorkerJob:
    """A job timing the statement ``stmt`` as ``fastbench.timeit`` does, in each worker.

    Parameters
    ----------
    stmt, setup : str
        Python source, compiled here so that a syntax error shows before any worker starts.
    globals : mapping of str, optional
        The namespace they run in, pickled to the workers (``__builtins__`` left out); an
        :class:`ImportRef` value stands for an object each worker imports.
    options : mapping, optional
        Keyword options of ``timeit()`` (:data:`STATEMENT_OPTIONS`), passed as given.
    name : str, optional
        The Measurement's name; defaults to ``stmt``, as ``timeit``'s.

    Returns
    -------
    WorkerJob

    Raises
    ------
    TypeError
        ``stmt`` or ``setup`` is not a str, ``globals`` is not a mapping with str keys, a
        global does not pickle (the message names its key), an unknown option.
    SyntaxError
        ``stmt`` or ``setup`` does not compile.
    ImportError
        An :class:`ImportRef`'s module does not exist.
    """
    for label, src in (("stmt", stmt), ("setup", setup)):
        if not isinstance(src, str):
            raise TypeError(f"{label} must be a str of Python source, got {type(src).__name__}")
        compile(src, f"<fastbench-{label}>", "exec")
    if globals is None:
        namespace: dict[str, Any] = {}
    elif isinstance(globals, Mapping):
        bad = [k for k in globals if not isinstance(k, str)]
        if bad:
            raise TypeError(f"globals must have str keys, got {bad[0]!r}")
        # exec() adds __builtins__ to a dict it ran in; every worker has its own.
        namespace = {k: v for k, v in globals.items() if k != "__builtins__"}
    else:
        raise TypeError(f"globals must be a dict or None, got {type(globals).__name__}")
    opts = _check_options(options, STATEMENT_OPTIONS, "timeit()")
    blob = _pickled(namespace, [f"global {k!r}" for k in namespace])
    refs = [(f"global {k!r}", v) for k, v in namespace.items()]
    main_path = _main_for_data(None, refs, (blob,))
    return WorkerJob(kind="statement", module="", qualname="", main_path=main_path,
                     stmt=stmt, setup=setup, args=b"", kwargs=b"", options=opts,
                     name=_check_name(name, stmt), sys_path=_sys_path(), globals=blob)


def rounds_job(jobs: Mapping[str, WorkerJob], *, options: Mapping[str, Any],
               name: str | None = None) -> WorkerJob:
    """A job measuring several variants side by side in each worker, as ``compare`` does in
    one process: every variant prepared (loops, warmup, floors), then rounds of one sample
    of each (:func:`fastbench.timing.sampling.run_rounds`'s order).

    Each worker's variants then share its process and its minutes: whatever makes one
    process run faster or slower than the next (the host's speed level, memory layout)
    touches all of them, and their ratio is free of it.

    Parameters
    ----------
    jobs : mapping of str to WorkerJob
        The variants by name: jobs from :func:`callable_job` or :func:`statement_job` (their
        options are not used; each is renamed to its key).
    options : mapping
        Every setting of the rounds (:data:`ROUNDS_OPTIONS`; ``repeat`` is the number of
        rounds) and optionally ``duration_s`` (their minimum wall time), passed to
        :func:`fastbench.timing.run_config` in the worker.
    name : str, optional
        The job's name in progress and errors; defaults to the variants' names joined.

    Returns
    -------
    WorkerJob

    Raises
    ------
    TypeError
        ``jobs`` is not a mapping of str to callable or statement jobs, or an option is
        unknown or missing.
    ValueError
        ``jobs`` is empty, or its jobs re-run different ``__main__`` scripts.
    """
    if not isinstance(jobs, Mapping):
        raise TypeError(f"jobs must be a dict of name to WorkerJob, got {type(jobs).__name__}")
    if not jobs:
        raise ValueError("jobs is empty; pass at least one variant: {name: WorkerJob}")
    variants = []
    for key, job in jobs.items():
        if not isinstance(key, str):
            raise TypeError(f"variant names must be str, got {type(key).__name__} {key!r}")
        if not isinstance(job, WorkerJob) or job.kind not in ("callable", "statement"):
            raise TypeError(f"jobs[{key!r}] must be a WorkerJob from callable_job or "
                            f"statement_job, got {type(job).__name__}"
                            + (f" of kind {job.kind!r}" if isinstance(job, WorkerJob) else ""))
        variants.append(replace(job, name=key))
    scripts = {job.main_path for job in variants if job.main_path is not None}
    if len(scripts) > 1:
        raise ValueError(f"the variants re-run different __main__ scripts ({sorted(scripts)}); "
                         "a worker can re-run only one")
    opts = _check_options(options, ROUNDS_OPTIONS + _ROUNDS_OPTIONAL, "the rounds")
    missing = [k for k in ROUNDS_OPTIONS if k not in opts]
    if missing:
        raise TypeError(f"options lacks {', '.join(missing)}; a rounds job gives every "
                        f"setting of the rounds ({', '.join(ROUNDS_OPTIONS)})")
    return WorkerJob(kind="rounds", module="", qualname="", main_path=next(iter(scripts), None),
                     stmt="", setup="", args=b"", kwargs=b"", options=opts,
                     name=_check_name(name, " vs ".join(jobs)), sys_path=_sys_path(),
                     variants=tuple(variants))


def _callable_name(fn: Callable[..., Any]) -> tuple[str, str, str | None]:
    """callable_spec's naming, with this module's advice where it differs from valgrind's."""
    what = getattr(fn, "__qualname__", None) or type(fn).__name__
    if isinstance(fn, partial):
        raise TypeError(f"cannot run {what!r} in worker processes: a functools.partial has no "
                        "importable name; pass its function and its arguments instead")
    if inspect.ismethod(fn) and not isinstance(fn.__self__, type):
        raise TypeError(f"cannot run {what!r} in worker processes: it is a method bound to an "
                        "object a new process cannot rebuild; pass Class.method with a "
                        "picklable object as the first argument")
    try:
        return callable_spec(fn)
    except TypeError as exc:
        # callable_spec speaks of valgrind: keep its reason, say what the workers need.
        m = re.match(r"cannot simulate .*?: (.*?)\. The callable runs", str(exc), re.DOTALL)
        why = m.group(1) if m else str(exc)
        raise TypeError(f"cannot run {what!r} in worker processes: {why}. Each worker is a "
                        "fresh Python that imports the callable by module and qualified name: "
                        "pass a module-level function, or a 'module:function' str") from None


def _main_script(what: str) -> str:
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if not main_file:
        raise TypeError(f"{what} comes from __main__, which here is an interactive session "
                        "with no file the workers could re-run; define it in a module")
    return os.path.abspath(str(main_file))


def _as_args(args: object) -> tuple[Any, ...]:
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise TypeError(f"args must be a tuple or list of arguments, got {type(args).__name__}")
    return tuple(args)


def _as_kwargs(kwargs: object) -> dict[str, Any]:
    if kwargs is None:
        return {}
    if not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a dict or None, got {type(kwargs).__name__}")
    bad = [k for k in kwargs if not isinstance(k, str)]
    if bad:
        raise TypeError(f"kwargs must have str keys, got {bad[0]!r}")
    return dict(kwargs)


def _measure_keywords() -> set[str]:
    """measure()'s keyword parameters, which a worker's call would give to measure."""
    from .callables import measure  # here: callables imports workers, which imports this

    return {n for n, p in inspect.signature(measure).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _check_options(options: object, allowed: tuple[str, ...], where: str) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict of {where} options or None, got "
                        f"{type(options).__name__}")
    unknown = [k for k in options if k not in allowed]
    if unknown:
        raise TypeError(f"options has {unknown[0]!r}, which is not an option of {where} a "
                        f"worker passes on; expected some of {', '.join(allowed)}")
    opts = dict(options)
    _pickled(opts, [f"option {k!r}" for k in opts])
    return opts


def _check_name(name: object, default: str) -> str:
    if name is None:
        return default
    if not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got {type(name).__name__}")
    return name


def _pickled(data: tuple[Any, ...] | dict[str, Any], labels: list[str]) -> bytes:
    """``data`` pickled, or TypeError naming the first item (labelled in order) that is not."""
    try:
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - pickling raises many types; found below
        pass
    items = data.values() if isinstance(data, dict) else data
    for label, item in zip(labels, items):
        try:
            pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(
                f"{label} ({type(item).__name__}) cannot be pickled to reach the worker "
                f"processes ({type(exc).__name__}: {exc}); pass a picklable value, or "
                "fastbench.timing.workers.importable('module:name') to have each worker "
                "import the object"
            ) from None
    raise TypeError("the arguments cannot be pickled together to reach the worker processes")


def _main_for_data(main_path: str | None, refs: list[tuple[str, Any]],
                   blobs: tuple[bytes, ...]) -> str | None:
    """The script workers must re-run: the callable's, or one the data refers to."""
    for label, value in refs:
        if not isinstance(value, ImportRef):
            continue
        what = f"{label}, {value!r},"
        if value.module == "__main__":
            main_path = main_path or _main_script(what)
            _resolve("__main__", value.attrs, what)  # loaded: cheap to check
            continue
        if value.module in sys.modules:
            _resolve(value.module, value.attrs, what)
            continue
        try:
            found = importlib.util.find_spec(value.module) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            raise ImportError(f"{what} names module {value.module!r}, which is not found "
                              "on sys.path", name=value.module)
    if main_path is None and any(_mentions_main(b) for b in blobs):
        # A class or function of the script, pickled by reference to "__main__".
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        main_path = os.path.abspath(main_file) if main_file else None
    return main_path


def _mentions_main(blob: bytes) -> bool:
    if b"__main__" not in blob:
        return False
    return any(op.name in _STRING_OPS and arg == "__main__"
               for op, arg, _ in pickletools.genops(blob))


def _sys_path() -> list[str]:
    return [p for p in sys.path if isinstance(p, str)]
