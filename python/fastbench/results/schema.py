"""What the data of each built-in result kind must hold, checked when a results file is read
and before the kind's ``from_dict`` sees it: JSON types, signs, finiteness, integer ranges
and the links between fields. A failure is a ValueError naming the field by its path in the
file: ``data['a']['loops'] must be a positive integer, got 2.7``.

Plain JSON data only: it imports no result class, and a kind's ``from_dict`` keeps its own
checks. This layer exists so that no file reaches them with a value they would quietly turn
into a wrong number (``int(2.7)``, a negative time) or fail on with a raw AttributeError.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import numpy as np

from ..measurement import STOP_REASONS
from .kinds import json_type

__all__ = ["MAX_INT", "Check", "check_data", "child", "integer", "number", "numbers", "shown"]

# Integers in a results file (loops, counts, byte sizes) must fit the int64 that numpy and
# the native core hold them in.
MAX_INT = 2**63 - 1

# check(value, where) returns None or raises ValueError; ``where`` is the value's path.
Check = Callable[[Any, str], None]

_SHOWN_CHARS = 40


def shown(value: Any) -> str:
    """``value`` for an error message: JSON's words for null and booleans, containers by
    their type (never their contents, which may be huge or nested deep), long text cut."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json_type(value)
    if isinstance(value, int) and abs(value) > 10**20:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 4] + "...'"


def child(where: str, key: str | int) -> str:
    """The path of ``key`` inside ``where``: ``data['a']``, ``data['a']['samples_ns'][3]``.
    A top-level key of the file is written bare (``data``)."""
    return key if not where and isinstance(key, str) else f"{where}[{key!r}]"


def _fail(where: str, expected: str, value: Any) -> NoReturn:
    raise ValueError(f"{where} must be {expected}, got {shown(value)}")


# -- scalars ----------------------------------------------------------------------------------


def integer(minimum: int | None = None) -> Check:
    """An int (not a bool, not 2.0, not "2") of at least ``minimum`` and at most MAX_INT."""
    expected = {None: "an integer", 0: "a non-negative integer",
                1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")

    def check(value: Any, where: str) -> None:
        if type(value) is not int or (minimum is not None and value < minimum):
            _fail(where, expected, value)
        if abs(value) > MAX_INT:
            _fail(where, f"{expected} of at most 2**63 - 1", value)

    return check


def _number_expected(minimum: float | None, maximum: float | None, positive: bool) -> str:
    if positive:
        return "a positive finite number"
    if minimum is not None and maximum is not None:
        return f"a number in [{minimum:g}, {maximum:g}]"
    if minimum == 0.0:
        return "a non-negative finite number"
    if minimum is not None:
        return f"a finite number >= {minimum:g}"
    return "a finite number"


def _number_ok(value: Any, minimum: float | None, maximum: float | None, positive: bool) -> bool:
    kind = type(value)
    if kind is not float and kind is not int:  # bool is neither
        return False
    try:
        x = float(value)
    except OverflowError:  # an int beyond any float
        return False
    return (math.isfinite(x) and (minimum is None or x >= minimum)
            and (maximum is None or x <= maximum) and (not positive or x > 0.0))


def number(minimum: float | None = None, maximum: float | None = None, *,
           positive: bool = False) -> Check:
    """A finite int or float within the bounds (``positive``: above 0)."""
    expected = _number_expected(minimum, maximum, positive)

    def check(value: Any, where: str) -> None:
        if not _number_ok(value, minimum, maximum, positive):
            _fail(where, expected, value)

    return check


def numbers(minimum: float | None = None, *, maximum: float | None = None, min_len: int = 0,
            nulls: bool = False) -> Check:
    """A list of finite numbers of at least ``minimum`` and at most ``maximum``
    (``nulls``: null items allowed), at least ``min_len`` long. Checked with numpy: sample
    lists hold millions of values."""
    item = _number_expected(minimum, maximum, False)
    expected = f"a list of {item.removeprefix('a ')}s" + (" or nulls" if nulls else "")

    def check(value: Any, where: str) -> None:
        if type(value) is not list:
            _fail(where, expected, value)
        if len(value) < min_len:
            raise ValueError(f"{where} must hold at least {min_len} value"
                             f"{'s' if min_len > 1 else ''}, got an empty list")
        bad = next((i for i, v in enumerate(value) if type(v) is not float
                    and type(v) is not int and not (nulls and v is None)), None)
        if bad is not None:
            _fail(child(where, bad), item, value[bad])
        try:
            arr = np.array([math.nan if v is None else v for v in value] if nulls else value,
                           dtype=np.float64)
        except OverflowError:  # an int beyond any float
            bad = next(i for i, v in enumerate(value) if not _number_ok(v, None, None, False)
                       and v is not None)
            _fail(child(where, bad), item, value[bad])
        ok = np.isfinite(arr)
        if minimum is not None:
            ok &= arr >= minimum
        if maximum is not None:
            ok &= arr <= maximum
        if nulls:
            ok |= np.array([v is None for v in value], dtype=bool)
        wrong = np.flatnonzero(~ok)
        if wrong.size:
            i = int(wrong[0])
            _fail(child(where, i), item, value[i])

    return check


def _text(value: Any, where: str) -> None:
    if type(value) is not str:
        _fail(where, "a string", value)


def _flag(value: Any, where: str) -> None:
    if type(value) is not bool:
        _fail(where, "true or false", value)


def _any_object(value: Any, where: str) -> None:
    if type(value) is not dict:
        _fail(where, "an object", value)


def _choice(*choices: str) -> Check:
    expected = "one of " + ", ".join(repr(c) for c in choices)

    def check(value: Any, where: str) -> None:
        if value not in choices or type(value) is not str:
            _fail(where, expected, value)

    return check


# -- containers -------------------------------------------------------------------------------


def _nullable(inner: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if value is not None:
            inner(value, where)

    return check


def _items(inner: Check, *, min_len: int = 0, noun: str = "item") -> Check:
    """A list whose every item passes ``inner``."""
    def check(value: Any, where: str) -> None:
        if type(value) is not list:
            _fail(where, "a list", value)
        if len(value) < min_len:
            raise ValueError(f"{where} must hold at least {min_len} {noun}, got an empty list")
        for i, item in enumerate(value):
            inner(item, child(where, i))

    return check


def _row(*columns: Check) -> Check:
    """A list of exactly one item per column, e.g. [bytes, GB/s, level]."""
    def check(value: Any, where: str) -> None:
        if type(value) is not list or len(value) != len(columns):
            _fail(where, f"a list of {len(columns)} items", value)
        for i, (item, column) in enumerate(zip(value, columns)):
            column(item, child(where, i))

    return check


def _mapping(inner: Check, *, min_len: int = 0, noun: str = "entry") -> Check:
    """An object of names to values that each pass ``inner``."""
    def check(value: Any, where: str) -> None:
        if type(value) is not dict:
            _fail(where, "an object", value)
        if len(value) < min_len:
            raise ValueError(f"{where} must hold at least {min_len} {noun}, got an empty object")
        for key, item in value.items():
            inner(item, child(where, key))

    return check


def _record(required: Mapping[str, Check], optional: Mapping[str, Check] | None = None,
            then: Callable[[dict[str, Any], str], None] | None = None) -> Check:
    """An object with the ``required`` fields and maybe the ``optional`` ones (other keys are
    left to the kind's from_dict); ``then`` checks links between fields."""
    def check(value: Any, where: str) -> None:
        if type(value) is not dict:
            _fail(where, "an object", value)
        missing = [k for k in required if k not in value]
        if missing:
            raise ValueError(f"{where} lacks {', '.join(repr(k) for k in missing)}")
        for key, field in required.items():
            field(value[key], child(where, key))
        for key, field in (optional or {}).items():
            if key in value:
                field(value[key], child(where, key))
        if then is not None:
            then(value, where)

    return check


_INT = integer()
_COUNT_INT = integer(0)
_POSITIVE_INT = integer(1)
_FINITE = number()
_NONNEGATIVE = number(0.0)
_POSITIVE = number(positive=True)
_FRACTION = number(0.0, 1.0)
_TEXTS = _items(_text)


# -- the measurement --------------------------------------------------------------------------


def _runs_add_up(data: dict[str, Any], where: str) -> None:
    lengths, loops = data.get("run_lengths", []), data.get("run_loops", [])
    if len(loops) != len(lengths):
        raise ValueError(f"{child(where, 'run_loops')} must hold one entry per run of "
                         f"{child(where, 'run_lengths')} ({len(lengths)}), got {len(loops)}")
    if lengths and sum(lengths) != len(data["samples_ns"]):
        raise ValueError(f"{child(where, 'run_lengths')} must add up to the "
                         f"{len(data['samples_ns'])} samples of {child(where, 'samples_ns')}, "
                         f"got {sum(lengths)}")


def _one_per_call(data: dict[str, Any], where: str) -> None:
    calls = len(data["peak_increase_bytes"])
    for key in ("python_peak_bytes", "cuda_peak_bytes"):
        values = data.get(key)
        if values is not None and len(values) != calls:
            raise ValueError(f"{child(where, key)} must hold one value per tracked call "
                             f"({calls}), got {len(values)}")


_SAMPLE_COUNTS = _record(
    {"loops": _POSITIVE_INT, "per_sample": _mapping(numbers(nulls=True))},
    {"running_fraction": _mapping(_FRACTION), "scaled": _flag, "overhead": _mapping(_FINITE),
     "skipped": _mapping(_text), "read_path": _text, "read_path_reason": _text},
)

_CALL_MEMORY = _record(
    {"peak_increase_bytes": _items(_INT, min_len=1, noun="tracked call"), "method": _text},
    {"python_peak_bytes": _nullable(_items(_INT)), "cuda_peak_bytes": _nullable(_items(_INT)),
     "exact": _flag, "warmup_calls": _COUNT_INT},
    then=_one_per_call,
)

_HEX = _text
IDENTITY = _record(
    {},
    {"kind": _choice("", "callable", "statement"), "what": _text, "code": _HEX,
     "arguments": _HEX, "unknown": _TEXTS, "notes": _TEXTS, "git_commit": _text,
     "git_branch": _text, "git_dirty": _nullable(_flag), "git_diff": _text, "python": _text,
     "fastbench": _text, "packages": _items(_row(_text, _text)), "key": _text},
)

# Times are per call in ns: a clock reading and a division by the loops, never below 0.
MEASUREMENT = _record(
    {"samples_ns": numbers(0.0, min_len=1), "loops": _POSITIVE_INT, "clock": _text,
     "overhead_ns": _NONNEGATIVE, "call_floor_ns": _NONNEGATIVE},
    {"name": _text, "warmup_samples_ns": numbers(0.0), "overhead_mad_ns": _NONNEGATIVE,
     "call_floor_mad_ns": _NONNEGATIVE, "call_floor_kind": _text,
     "calibration_trials": _COUNT_INT, "elapsed_s": _NONNEGATIVE,
     "target_rel_ci": _nullable(_POSITIVE),
     "stop_reason": _choice(*STOP_REASONS),
     "warnings": _TEXTS, "counters": _nullable(_SAMPLE_COUNTS),
     "memory": _nullable(_CALL_MEMORY), "run_lengths": _items(_POSITIVE_INT),
     "run_loops": _items(_POSITIVE_INT), "run_variation": _nullable(_NONNEGATIVE),
     "run_variation_df": _nullable(_POSITIVE_INT), "workload": _text,
     "clock_resolution_ns": _NONNEGATIVE, "identity": _nullable(IDENTITY)},
    then=_runs_add_up,
)


# -- comparisons ------------------------------------------------------------------------------


def _names_known(variants: str) -> Callable[[dict[str, Any], str], None]:
    """The baseline and every judged candidate must be among the ``variants``."""
    def check(data: dict[str, Any], where: str) -> None:
        known = data[variants]
        if data["baseline"] not in known:
            raise ValueError(f"{child(where, 'baseline')} must name one of "
                             f"{child(where, variants)}, got {shown(data['baseline'])}")
        for name in data["results"]:
            if name not in known or name == data["baseline"]:
                raise ValueError(f"{child(child(where, 'results'), name)} must judge a "
                                 f"candidate of {child(where, variants)} against the baseline")

    return check


_P_VALUE = _FRACTION

_SAMPLE_COMPARISON = _record(
    {"paired": _flag, "test": _text, "n_a": _COUNT_INT, "n_b": _COUNT_INT,
     "median_a": _NONNEGATIVE, "median_b": _NONNEGATIVE, "speedup": _NONNEGATIVE,
     "speedup_ci": _nullable(_row(_NONNEGATIVE, _NONNEGATIVE)), "confidence": _FRACTION,
     "rel_diff_pct": _FINITE, "p_value": _P_VALUE, "p_wilcoxon": _nullable(_P_VALUE),
     "p_mannwhitney": _P_VALUE, "p_welch": _nullable(_P_VALUE),
     "cohens_d": _nullable(_FINITE), "hedges_g": _nullable(_FINITE),
     "cliffs_delta": number(-1.0, 1.0), "alpha": _FRACTION, "min_effect": _NONNEGATIVE,
     "verdict": _text, "warnings": _TEXTS},
    {"level": _text, "run_variation": _nullable(_NONNEGATIVE)},
)

COMPARISON = _record(
    {"baseline": _text, "measurements": _mapping(MEASUREMENT, min_len=1, noun="measurement"),
     "results": _mapping(_SAMPLE_COMPARISON), "paired": _flag, "correction": _text,
     "rounds": _COUNT_INT, "stop_reason": _text},
    {"versions": _mapping(_text), "design": _text},
    then=_names_known("measurements"),
)

INSTRUCTION_COUNT = _record(
    {"name": _text, "per_call": _FINITE, "runs": numbers(min_len=1), "source": _text,
     "calls": _POSITIVE_INT, "events": _mapping(_FINITE), "wall_s": _NONNEGATIVE},
    {"estimated_cycles": _nullable(_FINITE), "notes": _TEXTS},
)

_COUNT_COMPARISON = _record(
    {"a": _FINITE, "b": _FINITE, "speedup": _FINITE, "rel_diff_pct": _FINITE,
     "tolerance": _NONNEGATIVE, "verdict": _text, "source": _text},
    {"warnings": _TEXTS},
)

INSTRUCTION_COMPARISON = _record(
    {"baseline": _text, "counts": _mapping(INSTRUCTION_COUNT, min_len=1, noun="count"),
     "results": _mapping(_COUNT_COMPARISON), "tolerance": _NONNEGATIVE},
    then=_names_known("counts"),
)


# -- counters ---------------------------------------------------------------------------------


# What a command's run can count and last: far beyond any real run, far below where a mean
# and its interval overflow float64 (a file holding 1e308 would print "inf").
_MAX_STAT_COUNT = 1e30
_MAX_STAT_SECONDS = 1e9


def _one_code_per_run(data: dict[str, Any], where: str) -> None:
    runs, codes = len(data["elapsed_s"]), len(data["returncodes"])
    if codes != runs:
        raise ValueError(f"{child(where, 'returncodes')} must hold one exit status per run of "
                         f"{child(where, 'elapsed_s')} ({runs}), got {codes}")


STAT = _record(
    {"command": _items(_text, min_len=1, noun="argument"),
     "events": _mapping(_record({"values": numbers(0.0, maximum=_MAX_STAT_COUNT, min_len=1),
                                 "running_fraction": _FRACTION, "scaled": _flag})),
     "elapsed_s": numbers(0.0, maximum=_MAX_STAT_SECONDS, min_len=1),
     "returncodes": _items(_INT)},
    {"unavailable": _mapping(_text), "read_path": _text, "simulated": _nullable(_any_object)},
    then=_one_code_per_run,
)

SIMULATED_COUNTS = _record(
    {"tool": _text, "target": _text, "events": _mapping(_FINITE), "per_call": _flag,
     "calls": _POSITIVE_INT, "totals": _mapping(_COUNT_INT)},
    {"baseline": _mapping(_COUNT_INT),
     "geometry": _mapping(_record({"size_bytes": _POSITIVE_INT, "assoc": _POSITIVE_INT,
                                   "line_bytes": _POSITIVE_INT})),
     "notes": _TEXTS, "valgrind_version": _text, "command": _TEXTS},
)


# -- roofline and model analysis --------------------------------------------------------------

ROOFLINE = _record(
    {"compute": _mapping(_POSITIVE), "memory": _mapping(_POSITIVE), "threads": _POSITIVE_INT,
     "quick": _flag, "machine": _any_object},
    {"clock": _text, "sweep": _items(_row(_POSITIVE_INT, _POSITIVE, _text)), "notes": _TEXTS,
     "fastbench_version": _text, "created_s": _NONNEGATIVE, "calibration_s": _NONNEGATIVE,
     "warnings": _TEXTS},
)

_COUNT = _record({"macs": _COUNT_INT, "elementwise_flops": _COUNT_INT,
                  "bytes_read": _COUNT_INT, "bytes_written": _COUNT_INT})
_SHAPES = _items(_items(_COUNT_INT))

MODEL_ANALYSIS = _record(
    {"model": _text, "device": _text, "grad_mode": _text,
     "inputs": _items(_record({"shape": _items(_COUNT_INT), "dtype": _text})),
     "forward": _COUNT, "backward": _nullable(_COUNT),
     "parameters": _record({"total": _COUNT_INT, "trainable": _COUNT_INT,
                            "frozen": _COUNT_INT, "buffers": _COUNT_INT, "bytes": _COUNT_INT,
                            "buffer_bytes": _COUNT_INT, "bytes_by_dtype": _mapping(_COUNT_INT),
                            "tied": _items(_TEXTS), "naive_total": _COUNT_INT}),
     "memory": _record({"params_bytes": _COUNT_INT, "buffers_bytes": _COUNT_INT,
                        "gradients_bytes": _COUNT_INT,
                        "activations_bytes": _nullable(_COUNT_INT),
                        "inference_peak_bytes": _COUNT_INT, "inputs_bytes": _COUNT_INT},
                       {"training_peak_bytes": _nullable(_COUNT_INT)}),
     "modules": _items(_record({"path": _text, "type": _text, "calls": _COUNT_INT,
                                "input_shapes": _SHAPES, "output_shapes": _SHAPES,
                                "params": _COUNT_INT, "forward": _COUNT, "backward": _COUNT})),
     "coverage": _record({"ops": _mapping(_COUNT_INT),
                          "uncounted": _items(_record({"name": _text, "calls": _COUNT_INT,
                                                       "output_shapes": _SHAPES,
                                                       "floating": _flag}))})},
    {"notes": _TEXTS, "convention": _text},
)



# -- profiles ---------------------------------------------------------------------------------


def _one_time_per_step(data: dict[str, Any], where: str) -> None:
    steps = len(data["step_times"])
    profiled = len(data["profiled_step_times"])
    if profiled != steps:
        raise ValueError(f"{child(where, 'profiled_step_times')} must hold one time per step "
                         f"of {child(where, 'step_times')} ({steps}), got {profiled}")
    for i, cell in enumerate(data["cells"]):
        if len(cell["times"]) != steps:
            raise ValueError(f"{child(child(child(where, 'cells'), i), 'times')} must hold "
                             f"one time per step of {child(where, 'step_times')} ({steps}), "
                             f"got {len(cell['times'])}")


# A cell's times are net of the profiler's cost: the time between ops can come out a little
# below zero after the subtraction, so they are only required finite; a step cannot.
_CELL = _record(
    {"op": _text, "shapes": _text, "module": _text, "region": _text,
     "phase": _choice("forward", "backward", ""), "times": numbers(), "calls": _COUNT_INT,
     "flops": _NONNEGATIVE, "bytes": _NONNEGATIVE, "dtype": _text},
)

_TRACE_EVENT = _record(
    {"name": _text, "cat": _text, "start_ns": _INT, "dur_ns": _COUNT_INT},
    {"thread": _INT, "args": _any_object},
)

# The overhead is a measured difference of two timings: a quiet machine can give a cost a
# hair below zero, which the collector subtracts as it is.
PROFILE = _record(
    {"cells": _items(_CELL), "step_times": numbers(0.0, min_len=1),
     "profiled_step_times": numbers(0.0),
     "overhead": _record({"per_op_s": _FINITE, "per_op_inside_s": _FINITE,
                          "per_module_s": _FINITE, "per_region_s": _FINITE},
                         {"per_op_cold_s": _FINITE, "cold_bytes": _NONNEGATIVE,
                          "per_inner_call_s": _NONNEGATIVE})},
    {"unprofiled_step_times": _nullable(numbers(0.0)), "roofline": _nullable(ROOFLINE),
     "events": _items(_TRACE_EVENT), "meta": _any_object, "warnings": _TEXTS},
    then=_one_time_per_step,
)

_PAIR = _row(_FINITE, _FINITE)

_PROFILE_CHANGE = _record(
    {"by": _choice("step", "op", "op_shapes", "module", "family", "region"), "name": _text,
     "time_a_s": _FINITE, "time_b_s": _FINITE, "delta_s": _FINITE,
     "delta_ci": _nullable(_PAIR), "ratio": _nullable(_NONNEGATIVE),
     "ratio_ci": _nullable(_row(_NONNEGATIVE, _NONNEGATIVE)), "share_a": _FINITE,
     "share_b": _FINITE, "p_value": _P_VALUE, "p_adjusted": _P_VALUE, "flagged": _flag},
)

PROFILE_DIFF = _record(
    {"labels": _row(_text, _text), "steps_a": _POSITIVE_INT, "steps_b": _POSITIVE_INT,
     "changes": _items(_PROFILE_CHANGE), "alpha": _FRACTION,
     "correction": _choice("holm", "bh", "none"), "min_change": _FRACTION},
    {"warnings": _TEXTS},
)

# The sampling profiler's result: tables of threads, functions and stacks, and one record
# (tick, thread index, stack index) per stack seen; from_dict checks the indices.
SAMPLE_PROFILE = _record(
    {"version": _POSITIVE_INT, "target": _text, "interval_s": _POSITIVE, "wall_s": _NONNEGATIVE,
     "overhead_cpu_s": _NONNEGATIVE, "switch_interval_s": _NONNEGATIVE, "calls": _COUNT_INT,
     "profiled_thread": _INT,
     "threads": _items(_row(_text, _INT, _COUNT_INT)),
     "functions": _items(_row(_text, _text, _INT)),
     "stacks": _items(_items(_row(_COUNT_INT, _INT))),
     "tick_times_s": numbers(0.0),
     "records": _items(_row(_COUNT_INT, _COUNT_INT, _COUNT_INT))},
)

# A benchmark suite: one record per variant (figures at the first batch size, and per batch
# size where they are per batch); an energy record says how it was had ("estimated" or not).
_NULL_PAIR = _nullable(_PAIR)
_LATENCY = _record(
    {"batch": _POSITIVE_INT, "samples_s": numbers(0.0, min_len=1), "median_s": _NONNEGATIVE,
     "median_ci": _NULL_PAIR, "percentiles": _mapping(_row(_NONNEGATIVE, _NULL_PAIR))},
)
_THROUGHPUT = _record({"batch": _POSITIVE_INT, "samples_per_s": _NONNEGATIVE, "ci": _NULL_PAIR})
_SPEEDUP = _record({"value": _POSITIVE, "ci": _NULL_PAIR, "verdict": _text},
                   {"p_value": _nullable(_P_VALUE)})
_METRIC = _record({"name": _text, "value": _FINITE},
                  {"ci": _NULL_PAIR, "examples": _nullable(_POSITIVE_INT),
                   "delta": _nullable(_FINITE), "delta_ci": _NULL_PAIR})
_ENERGY = _record({"joules_per_call": _FINITE, "method": _text, "estimated": _flag},
                  {"ci": _NULL_PAIR, "reason": _text, "seconds_per_call": _nullable(_NONNEGATIVE)})
_NULL_COUNT = _nullable(_COUNT_INT)
_VARIANT = _record(
    {"name": _text, "kind": _choice("module", "callable"), "latency": _LATENCY,
     "latency_by_batch": _mapping(_LATENCY, min_len=1), "throughput": _mapping(_THROUGHPUT),
     "speedup": _SPEEDUP, "speedup_by_batch": _mapping(_SPEEDUP)},
    {"metric": _nullable(_METRIC), "energy": _nullable(_ENERGY),
     "memory": _record({}, {"peak_increase_bytes": _nullable(_FINITE),
                            "param_bytes": _NULL_COUNT, "buffer_bytes": _NULL_COUNT,
                            "serialized_bytes": _NULL_COUNT, "method": _text,
                            "packed_bytes": _NULL_COUNT, "activation_peak_bytes": _NULL_COUNT,
                            "activation_method": _text,
                            "activation_estimate_bytes": _NULL_COUNT}),
     "flops": _NULL_COUNT, "macs": _NULL_COUNT, "params": _NULL_COUNT, "notes": _TEXTS},
)


def _baseline_known(data: dict[str, Any], where: str) -> None:
    names = [v["name"] for v in data["variants"]]
    if data["baseline"] not in names:
        raise ValueError(f"{child(where, 'baseline')} must name one of the variants "
                         f"({', '.join(names)}), got {shown(data['baseline'])}")


SUITE = _record(
    {"version": _POSITIVE_INT, "baseline": _text, "batch_sizes": _items(_POSITIVE_INT, min_len=1),
     "variants": _items(_VARIANT, min_len=1, noun="variant")},
    {"efficiency": _mapping(_nullable(_FINITE)), "settings": _any_object,
     "allowed": _mapping(_TEXTS), "warnings": _TEXTS, "score_name": _text,
     "delta_unit": _choice("fraction", "points")},
    then=_baseline_known,
)

# The built-in kinds of :data:`.kinds.BUILTIN_KINDS`; a registered kind's from_data checks
# its own data.
_KINDS: dict[str, Check] = {
    "measurement": MEASUREMENT,
    "measurements": _mapping(MEASUREMENT, min_len=1, noun="measurement"),
    "comparison": COMPARISON,
    "instruction_count": INSTRUCTION_COUNT,
    "instruction_comparison": INSTRUCTION_COMPARISON,
    "stat": STAT,
    "simulated_counts": SIMULATED_COUNTS,
    "roofline": ROOFLINE,
    "model_analysis": MODEL_ANALYSIS,
    "profile": PROFILE,
    "profile_diff": PROFILE_DIFF,
    "sample_profile": SAMPLE_PROFILE,
    "suite": SUITE,
}


def check_data(kind: str, data: Any) -> None:
    """Check the ``data`` of a file of built-in ``kind`` (a registered kind passes).

    Raises
    ------
    ValueError
        The first field that does not hold what the kind writes, named by its path
        (``data['a']['loops']``), with what it must be and what it is.
    """
    check = _KINDS.get(kind)
    if check is not None:
        check(data, "data")
