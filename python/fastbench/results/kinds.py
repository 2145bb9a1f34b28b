"""Result kinds: the table of what :func:`fastbench.save` writes and :func:`fastbench.load`
rebuilds, naming each class by its public module path, plus the kinds users register.

A leaf: it imports nothing of fastbench at module level. Loading imports a kind's class by
name; saving matches an object only against classes whose module is already imported (an
object's class always is), so no result type registers itself by being imported.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["BUILTIN_KINDS", "Kind", "json_type", "kind_named", "kind_of", "kinds",
           "register_kind", "unique_name"]

_T = TypeVar("_T")

# name -> "public.module:ClassName". Each class has to_dict() and a from_dict(data)
# classmethod that raises ValueError, TypeError or KeyError on malformed data. Order
# matters: save() tries the kinds in this order, before any registered kind.
BUILTIN_KINDS: Mapping[str, str] = {
    "measurement": "fastbench.measurement:Measurement",
    # A mapping of str to Measurement, or a sequence of Measurement (stored by name).
    "measurements": "fastbench.measurement:Measurement",
    "comparison": "fastbench.comparison:Comparison",
    "instruction_count": "fastbench.counters:InstructionCount",
    "instruction_comparison": "fastbench.comparison:InstructionComparison",
    "stat": "fastbench.counters.command:StatResult",
    "simulated_counts": "fastbench.counters.simulation:SimulatedCounts",
    "roofline": "fastbench.roofline:Roofline",
    "model_analysis": "fastbench.analysis:ModelAnalysis",
    "profile": "fastbench.profiling:Profile",
    "profile_diff": "fastbench.profiling.diff:ProfileDiff",
    "sample_profile": "fastbench.profiling:SampleProfile",
    "suite": "fastbench.suite:SuiteResult",
}
# Kinds whose object is a collection of the table's class rather than one instance.
_COLLECTIONS = frozenset({"measurements"})
_COLLECTION_LABEL = "mapping of str to {0}, or sequence of {0}"


@dataclass(frozen=True)
class Kind:
    """One kind of result: its name in files, how to recognise, write and rebuild it.

    Attributes
    ----------
    name : str
        The ``kind`` written to the file.
    label : str
        What :func:`save` accepts for it, for error messages (a class name).
    target : str
        ``"module:Class"`` of a built-in kind; empty for a registered one.
    cls : type or None
        A registered kind's class; None for a built-in kind (imported by name when needed).
    """

    name: str
    label: str
    target: str = ""
    cls: type[Any] | None = None
    to_data_fn: Callable[[Any], Any] | None = None
    from_data_fn: Callable[[Any], Any] | None = None

    @property
    def builtin(self) -> bool:
        return bool(self.target)

    def loaded_class(self) -> type[Any] | None:
        """The class if its module is imported already, else None; never imports."""
        if self.cls is not None:
            return self.cls
        module_name, _, class_name = self.target.partition(":")
        module = sys.modules.get(module_name)
        found = getattr(module, class_name, None) if module is not None else None
        return found if isinstance(found, type) else None

    def load_class(self) -> type[Any]:
        """The class, importing its public module if needed."""
        if self.cls is not None:
            return self.cls
        module_name, _, class_name = self.target.partition(":")
        found = getattr(importlib.import_module(module_name), class_name)
        if not isinstance(found, type):
            raise TypeError(f"{self.target} is not a class")
        return found

    def matches(self, obj: object) -> bool:
        """Whether :func:`save` writes ``obj`` as this kind."""
        if self.name in _COLLECTIONS:
            return isinstance(obj, (Mapping, Sequence))
        cls = self.loaded_class()
        return cls is not None and isinstance(obj, cls)

    def to_data(self, obj: Any) -> Any:
        """JSON-ready data of ``obj``."""
        if self.to_data_fn is not None:
            return self.to_data_fn(obj)
        if self.name in _COLLECTIONS:
            return _collection_to_data(obj, self.load_class())
        return obj.to_dict()

    def from_data(self, data: Any) -> Any:
        """The object rebuilt from the file's ``data``; ValueError, TypeError or KeyError
        when the data is malformed."""
        if self.from_data_fn is not None:
            return self.from_data_fn(data)
        cls = self.load_class()
        if self.name in _COLLECTIONS:
            return _collection_from_data(data, cls)
        if not isinstance(data, dict):
            raise ValueError(f"expected a {self.name.replace('_', ' ')} object, "
                             f"got {json_type(data)}")
        return cls.from_dict(data)


def _builtin(name: str, target: str) -> Kind:
    class_name = target.partition(":")[2]
    label = _COLLECTION_LABEL.format(class_name) if name in _COLLECTIONS else class_name
    return Kind(name, label, target)


_BUILTIN: dict[str, Kind] = {name: _builtin(name, target) for name, target in BUILTIN_KINDS.items()}
_USER_KINDS: dict[str, Kind] = {}


def kinds() -> list[Kind]:
    """Every kind, built-in ones first, then registered ones in registration order."""
    return [*_BUILTIN.values(), *_USER_KINDS.values()]


def kind_named(name: object) -> Kind | None:
    """The kind called ``name`` (built-in names first), or None."""
    if not isinstance(name, str):
        return None
    return _BUILTIN.get(name) or _USER_KINDS.get(name)


def kind_of(obj: object) -> Kind:
    """The kind :func:`save` writes ``obj`` as.

    Raises
    ------
    TypeError
        ``obj`` is of no kind; the message lists them.
    """
    # str and bytes are Sequences too, never a collection of results.
    if not isinstance(obj, (str, bytes, bytearray)):
        for kind in kinds():
            if kind.matches(obj):
                return kind
    supported = "; ".join(f"{k.name!r} ({k.label})" for k in kinds())
    raise TypeError(f"cannot save a {type(obj).__name__}: supported kinds are {supported}")


def register_kind(
    name: str,
    cls: type[_T],
    to_data: Callable[[_T], Any],
    from_data: Callable[[Any], _T],
    *,
    replace: bool = False,
) -> None:
    """Teach :func:`save` and :func:`load` a new kind of result.

    Parameters
    ----------
    name : str
        The ``kind`` written to the file, e.g. "benchmark_suite".
    cls : type
        Objects for which ``isinstance(obj, cls)`` holds are saved as this kind. Kinds
        are tried in registration order, built-in ones first.
    to_data : callable
        ``to_data(obj)`` returns JSON-ready data (dicts, lists, str, int, finite float,
        bool, None), typically ``cls.to_dict``.
    from_data : callable
        ``from_data(data)`` rebuilds the object, typically ``cls.from_dict``. It should
        raise ValueError, TypeError or KeyError for malformed data; :func:`load` turns
        those into a ResultsFileError naming the file.
    replace : bool
        Allow replacing a kind that was registered before. Built-in kinds cannot be
        replaced.

    Raises
    ------
    TypeError
        ``name`` is not a str, ``cls`` not a class, or the functions are not callable.
    ValueError
        ``name`` is empty, a built-in kind, or already registered and ``replace`` is false.
    """
    if not isinstance(name, str):
        raise TypeError(f"[register_kind] name must be a str, got {type(name).__name__}")
    if not name:
        raise ValueError("[register_kind] name must not be empty")
    if not isinstance(cls, type):
        raise TypeError(f"[register_kind] cls must be a class, got {type(cls).__name__}")
    if not callable(to_data) or not callable(from_data):
        raise TypeError("[register_kind] to_data and from_data must be callable")
    taken = kind_named(name)
    if taken is not None and (taken.builtin or not replace):
        hint = "a built-in kind" if taken.builtin else "pass replace=True to replace it"
        raise ValueError(f"[register_kind] kind {name!r} is already registered "
                         f"(for {taken.label}); {hint}")
    _USER_KINDS[name] = Kind(name, cls.__name__, cls=cls, to_data_fn=to_data,
                             from_data_fn=from_data)


# -- the measurements collection -----------------------------------------------------------


def unique_name(name: str, taken: Container[str]) -> str:
    """``name``, or ``name#2``, ``name#3``... whichever is not taken yet."""
    candidate, k = name, 2
    while candidate in taken:
        candidate, k = f"{name}#{k}", k + 1
    return candidate


def json_type(value: Any) -> str:
    """How error messages name a JSON value: "a JSON object", "a number", "null"..."""
    names = {dict: "a JSON object", list: "a JSON array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _collection_to_data(obj: Mapping[Any, Any] | Sequence[Any], item_cls: type[Any]
                        ) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        items = list(obj.items())
        for key, _ in items:
            if not isinstance(key, str):
                raise TypeError(f"measurement names must be str, got {type(key).__name__}")
    else:
        taken: set[str] = set()
        items = []
        for value in obj:
            key = unique_name(getattr(value, "name", "") or "measurement", taken)
            taken.add(key)
            items.append((key, value))
    if not items:  # a file of nothing would load as nothing, and compare as nothing
        raise ValueError(f"cannot save an empty {type(obj).__name__}: it holds no "
                         "measurement")
    for key, value in items:
        if not isinstance(value, item_cls):
            raise TypeError(
                f"cannot save {type(obj).__name__} of measurements: item {key!r} is "
                f"{type(value).__name__}, not {item_cls.__name__}"
            )
    return {key: value.to_dict() for key, value in items}


def _collection_from_data(data: Any, item_cls: type[_T]) -> dict[str, _T]:
    if not isinstance(data, dict):
        raise ValueError(
            f"expected an object mapping names to measurements, got {json_type(data)}"
        )
    if not data:
        raise ValueError("the file holds no measurement")
    out: dict[str, _T] = {}
    for key, value in data.items():
        if not isinstance(value, dict):
            raise ValueError(f"measurement {key!r} is {json_type(value)}, not an object")
        try:
            out[key] = item_cls.from_dict(value)  # type: ignore[attr-defined]
        except (ValueError, TypeError) as exc:
            raise ValueError(f"measurement {key!r}: {exc}") from exc
    return out
