"""The profile of a run split into steps: where each step's time went, with its uncertainty,
each part judged against the roofline, and what speeding a part up would be worth.

Framework-free: a collector (PyTorch's is :mod:`fastbench.pytorch.profiler`) measures a
step's timeline and hands over *cells*, the finest split it timed: one op name and input
shapes, inside one module, one named region and one pass, with the time it took in every
step (net of the profiler's own cost). Every table is a sum of cells:

- by ``"op"``: op name; the time spent outside any op (the Python between ops, the
  framework's dispatch) is the row ``"(not in an op)"``; by ``"op_shapes"``: op name and
  input shapes ("aten::addmm (512,), (8, 256), (256, 512)"), as torch.profiler's
  ``group_by_input_shape``;
- by ``"module"``: a module's self time (its ops and the time between them, forward and
  backward), named as ``named_modules()`` names it ("" for the model itself, printed
  "(model)"); ``"outside any module"`` holds the rest of the step (the loop's Python, data
  loading, the optimizer);
- by ``"family"``: matrix multiplication, convolution, attention, normalization,
  elementwise, data movement, other, and "(not in an op)";
- data loading: the time a DataLoader spent fetching batches (each fetch's wall time, the
  ops it ran included: collate, transforms) is one item, ``"data loading"``, by op, op
  shapes and family; outside any module; in the region the user named around it, else
  ``"data loading"``;
- by ``"region"``: the innermost region the user named, else "model forward", "model
  backward" or "outside any module".

Steps are the independent units: a share's interval is the ratio estimator's across steps
(:func:`.shares.ratio_ci`), so the more steps, the tighter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .._checks import check_choice, check_in_range, check_int
from ..report.lines import TextLines, brief_repr
from ..report.table import table
from ..stats.samples import median_ci
from ..stats.summary import mean_ci
from ..units import format_count, format_ns
from .shares import amdahl, ratio_ci

__all__ = ["BOUNDS", "BYS", "Bottleneck", "Bottlenecks", "Cell", "DATA_LOADING", "FAMILIES",
           "NOT_IN_OP", "OUTSIDE", "Overhead", "Profile", "ProfileRow", "ProfileRows",
           "Projection", "TraceEvent", "op_family"]

BYS = ("op", "op_shapes", "module", "family", "region")
NOT_IN_OP = "(not in an op)"
# A DataLoader's fetches of batches: its own op, family and (outside any named one) region.
DATA_LOADING = "data loading"
OUTSIDE = "outside any module"
BOUNDS = ("compute-bound", "memory-bound", "overhead-bound")
FAMILIES = ("matrix multiplication", "convolution", "attention", "normalization",
            "elementwise", "data movement", "other", DATA_LOADING, NOT_IN_OP)
# An op reaching under this fraction of its roof while taking under this long per call is
# dominated by the cost of calling it (dispatch, Python, framework), not by its arithmetic
# or its bytes.
OVERHEAD_ROOF_FRACTION = 0.1
OVERHEAD_CALL_S = 50e-6

_MATMUL = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "mv", "addmv", "dot",
                     "vdot", "addbmm", "addr", "einsum", "_addmm_activation", "_scaled_mm",
                     "linear_backward", "tensordot", "inner", "outer", "ger"})
_ATTENTION = ("scaled_dot_product", "_native_multi_head_attention", "_flash_attention",
              "_efficient_attention", "multi_head_attention")
_NORM = ("batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
         "_native_batch_norm", "native_batch_norm", "native_layer_norm", "native_group_norm",
         "local_response_norm", "weight_norm")
_DATA = frozenset({
    "copy_", "clone", "contiguous", "cat", "stack", "view", "reshape", "_unsafe_view",
    "permute", "transpose", "t", "expand", "as_strided", "slice", "select", "index",
    "index_select", "gather", "scatter", "scatter_add", "index_put", "index_put_", "narrow",
    "squeeze", "unsqueeze", "flatten", "unflatten", "split", "split_with_sizes", "chunk",
    "unbind", "_to_copy", "to", "pad", "constant_pad_nd", "repeat", "tile", "roll", "flip",
    "embedding", "embedding_backward", "embedding_dense_backward", "detach", "alias",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "fill_",
    "zero_", "lift_fresh", "masked_fill", "masked_fill_", "where", "_reshape_alias",
    "slice_backward", "select_backward", "expand_copy", "permute_copy", "view_copy",
    "transpose_copy", "t_copy", "_unsafe_index", "index_add", "col2im", "im2col", "unfold",
    "set_", "resize_", "arange", "_local_scalar_dense", "item"})
_ELEMENTWISE = frozenset({
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "abs", "exp", "log",
    "sqrt", "rsqrt", "pow", "relu", "relu_", "gelu", "gelu_backward", "silu", "silu_backward",
    "sigmoid", "sigmoid_backward", "tanh", "tanh_backward", "threshold_backward",
    "hardtanh", "hardtanh_", "hardtanh_backward", "leaky_relu", "leaky_relu_backward",
    "elu", "softplus", "hardswish", "hardsigmoid", "clamp", "clamp_", "clamp_min",
    "clamp_max", "maximum", "minimum", "addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp",
    "lerp_", "dropout", "native_dropout", "native_dropout_backward", "bernoulli_", "sign",
    "reciprocal", "softmax", "_softmax", "log_softmax", "_log_softmax",
    "_softmax_backward_data", "_log_softmax_backward_data", "erf", "sin", "cos", "square",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "bitwise_and", "mish", "rsub",
    "sqrt_", "div__", "_foreach_add_", "_foreach_mul_", "_foreach_addcmul_",
    "_foreach_addcdiv_", "_foreach_lerp_", "_foreach_sqrt", "_foreach_div_",
    "_foreach_add", "_foreach_mul", "_foreach_sqrt_", "_foreach_maximum_", "_foreach_neg"})


def op_family(op: str) -> str:
    """The family of an op by its name ("aten::addmm", "addmm", "aten.addmm.default"):
    one of :data:`FAMILIES`."""
    if op == NOT_IN_OP or not op:
        return NOT_IN_OP
    if op == DATA_LOADING:
        return DATA_LOADING
    name = op.split("::")[-1]
    if name.startswith("aten."):
        name = name[5:]
    name = name.split(".")[0]
    if name in _MATMUL:
        return "matrix multiplication"
    if "conv" in name and "convert" not in name:
        return "convolution"
    if any(name.startswith(a) or a in name for a in _ATTENTION):
        return "attention"
    if any(n in name for n in _NORM):
        return "normalization"
    if name in _DATA:
        return "data movement"
    if name in _ELEMENTWISE:
        return "elementwise"
    return "other"


@dataclass(frozen=True)
class Cell:
    """The finest split a collector timed: calls of one op (with one set of input shapes),
    in one module, region and pass.

    Attributes
    ----------
    op : str
        "aten::addmm"; :data:`NOT_IN_OP` for the time between ops; :data:`DATA_LOADING`
        for a DataLoader's fetches (the ops and the time between them inside each).
    shapes : str
        The op's input shapes as text ("(8, 512), (512, 512)"); "" between ops.
    module : str
        The module's qualified name ("" the model itself); :data:`OUTSIDE` outside it.
    region : str
        The innermost region the user named; "" in none.
    phase : {"forward", "backward", ""}
        The model's pass; "" outside the model.
    times : ndarray
        Seconds in each step, net of the profiler's cost.
    calls : int
        Calls over all steps.
    flops, bytes : float
        Per step, from fastbench's formulas (0 where no formula applies).
    dtype : str
        The op's floating-point dtype ("float32"); picks the compute ceiling.
    """

    op: str
    shapes: str
    module: str
    region: str
    phase: str
    times: NDArray[np.float64]
    calls: int = 0
    flops: float = 0.0
    bytes: float = 0.0
    dtype: str = ""

    @property
    def family(self) -> str:
        return op_family(self.op)

    def key(self, by: str) -> str:
        """The row this cell belongs to in the table ``by``."""
        if by == "op":
            return self.op
        if by == "op_shapes":
            return f"{self.op} {self.shapes}" if self.shapes else self.op
        if by == "module":
            return self.module
        if by == "family":
            return self.family
        if self.region:
            return self.region
        return f"model {self.phase}" if self.phase else OUTSIDE

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "shapes": self.shapes, "module": self.module,
                "region": self.region, "phase": self.phase,
                "times": [float(t) for t in self.times], "calls": self.calls,
                "flops": self.flops, "bytes": self.bytes, "dtype": self.dtype}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cell:
        return cls(str(d["op"]), str(d["shapes"]), str(d["module"]), str(d["region"]),
                   str(d["phase"]), _seconds(d["times"], "a cell's times", signed=True),
                   _count(d["calls"], "a cell's calls"),
                   _amount(d["flops"], "a cell's flops"), _amount(d["bytes"], "a cell's bytes"),
                   str(d["dtype"]))


# The longest time a profile file may hold (about 11 days a step) and the largest count
# (FLOPs, bytes): beyond them a file holds no profile, and formatting would overflow.
_MAX_SECONDS = 1e6
_MAX_AMOUNT = 1e30


def _seconds(values: Any, what: str, *, signed: bool = False) -> np.ndarray:
    """Times from a file as a float array: finite, within the bounds above (net times of a
    cell may dip below zero, by the profiler's cost; others may not)."""
    arr = np.asarray(values, dtype=np.float64)
    low = -_MAX_SECONDS if signed else 0.0
    if arr.ndim != 1 or not np.all(np.isfinite(arr)) or (arr.size and (
            arr.min() < low or arr.max() > _MAX_SECONDS)):
        raise ValueError(f"{what} must be a list of times from {low:g} to {_MAX_SECONDS:g} s")
    return arr


def _amount(v: Any, what: str) -> float:
    return check_in_range(what, v, 0, _MAX_AMOUNT)


def _count(v: Any, what: str) -> int:
    return int(check_in_range(what, v, 0, 1 << 53, integer=True))


@dataclass(frozen=True)
class TraceEvent:
    """One interval of the timeline as observed (gross of the profiler's cost): a step, a
    region, a module call or an op. ``start_ns`` counts from the profile's start; ``args``
    holds what a trace viewer shows (shapes, module, pass, FLOPs, bytes)."""

    name: str
    cat: str
    start_ns: int
    dur_ns: int
    thread: int = 0
    args: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "cat": self.cat, "start_ns": self.start_ns,
                "dur_ns": self.dur_ns, "thread": self.thread, "args": dict(self.args)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TraceEvent:
        return cls(str(d["name"]), str(d["cat"]), int(d["start_ns"]), int(d["dur_ns"]),
                   int(d.get("thread", 0)), dict(d.get("args", {})))


@dataclass(frozen=True)
class Overhead:
    """What observing costs, measured once per process and subtracted.

    Attributes
    ----------
    per_op_s : float
        The whole added cost of one observed op (an empty op timed with and without the
        profiler).
    per_op_inside_s : float
        The part of it inside the op's own timed window (the clock reads around the call).
    per_module_s : float
        A module call's pair of hooks.
    per_region_s : float
        Entering and leaving a named region.
    per_op_cold_s : float
        The cost of observing an op right after work that swept ``cold_bytes`` of memory
        through the caches (the profiler's own Python then runs from colder caches); an op
        after an op moving ``b`` bytes is charged between ``per_op_s`` and this, in
        proportion to ``b / cold_bytes``. 0 when not measured (``per_op_s`` applies).
    cold_bytes : float
        The sweep of that measurement (twice the L2 cache).
    per_inner_call_s : float
        The native collector's cost of a call made inside an op (counted, not recorded:
        ``aten::conv2d``'s ``aten::convolution`` and what that calls), inside the op's
        window; 0 for the dispatch collector, which does not see such calls.

    For the native collector an "op" above is each range it records (an op, or a composite
    or autograd node around ops), and module hooks cost nothing: the steps it times run
    without them.
    """

    per_op_s: float
    per_op_inside_s: float
    per_module_s: float
    per_region_s: float
    per_op_cold_s: float = 0.0
    cold_bytes: float = 0.0
    per_inner_call_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"per_op_s": self.per_op_s, "per_op_inside_s": self.per_op_inside_s,
                "per_module_s": self.per_module_s, "per_region_s": self.per_region_s,
                "per_op_cold_s": self.per_op_cold_s, "cold_bytes": self.cold_bytes,
                "per_inner_call_s": self.per_inner_call_s}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Overhead:
        def cost(key: str, default: float | None = None) -> float:
            v = d[key] if default is None else d.get(key, default)
            return float(_seconds([v], f"the overhead's {key}", signed=True)[0])
        return cls(cost("per_op_s"), cost("per_op_inside_s"), cost("per_module_s"),
                   cost("per_region_s"), cost("per_op_cold_s", 0.0),
                   _amount(d.get("cold_bytes", 0.0), "the overhead's cold_bytes"),
                   cost("per_inner_call_s", 0.0))


@dataclass(frozen=True)
class ProfileRow:
    """One row of a profile table (see :meth:`Profile.top`).

    ``share`` is the fraction of the step (0-1) and ``share_ci`` its interval across steps;
    ``time_s`` the self time per step and ``total_time_s`` with what runs inside it (a
    module's submodules; the same as ``time_s`` for other rows); ``calls`` per step;
    ``flops``/``bytes`` per step; ``bound`` one of :data:`BOUNDS` (None without a roofline);
    ``roof_fraction`` the achieved fraction of the attainable (the roofline's minimum time
    over the time taken).
    """

    by: str
    name: str
    share: float
    share_ci: tuple[float, float]
    time_s: float
    total_time_s: float
    calls: float
    flops: float
    bytes: float
    bound: str | None = None
    roof_fraction: float | None = None
    roof_time_s: float | None = None

    @property
    def gflops(self) -> float:
        """Achieved GFLOP/s (0 where no FLOPs were counted)."""
        return self.flops / self.time_s / 1e9 if self.time_s > 0 else 0.0

    @property
    def gbs(self) -> float:
        """Achieved GB/s of the bytes the formulas count."""
        return self.bytes / self.time_s / 1e9 if self.time_s > 0 else 0.0

    @property
    def label(self) -> str:
        return "(model)" if self.by == "module" and self.name == "" else self.name

    def share_text(self) -> str:
        lo, hi = self.share_ci
        if math.isnan(lo):
            return f"{100 * self.share:5.1f}%"
        return f"{100 * self.share:5.1f}% ± {100 * max(self.share - lo, hi - self.share):.1f}"


def _rows_table(rows: Sequence[ProfileRow], by: str) -> list[str]:
    headers = ("share", by, "calls/step", "time/step", "GFLOP/s", "GB/s", "bound", "of roof")
    body = []
    for r in rows:
        body.append((
            r.share_text(), r.label, f"{r.calls:.4g}", format_ns(r.time_s * 1e9, 3),
            f"{r.gflops:.3g}" if r.flops else "-", f"{r.gbs:.3g}" if r.bytes else "-",
            r.bound or "-",
            f"{100 * r.roof_fraction:.0f}%" if r.roof_fraction is not None else "-"))
    return table(headers, body, indent="", align="rlrrrrlr")


class ProfileRows(tuple[ProfileRow, ...], TextLines):
    """Rows of one table, largest first; printed as the table."""

    by: str = "op"

    def __new__(cls, rows: Iterable[ProfileRow], by: str = "op") -> ProfileRows:
        self = super().__new__(cls, tuple(rows))
        self.by = by
        return self

    def __repr__(self) -> str:
        top = f", top {self[0].label} {self[0].share_text()}" if self else ""
        return brief_repr(self, f"{len(self)} rows by {self.by}{top}")

    def lines(self) -> list[str]:
        return _rows_table(self, self.by)


@dataclass(frozen=True)
class Bottleneck:
    """An item worth fixing: its row, the step time saved per step if it reached its roof,
    and the step's projected speedup then and at ``speedup_factor`` times faster."""

    row: ProfileRow
    saving_s: float
    at_roof_speedup: float
    speedup_factor: float
    at_factor_speedup: float

    @property
    def distance(self) -> float:
        """How many times slower than its roof the item runs (inf without a roof time)."""
        t = self.row.roof_time_s
        return self.row.time_s / t if t else math.inf


class Bottlenecks(tuple[Bottleneck, ...], TextLines):
    """Items ranked by what fixing them is worth; printed as a table."""

    def __repr__(self) -> str:
        top = f", first {self[0].row.label}" if self else ""
        return brief_repr(self, f"{len(self)} items{top}")

    def lines(self) -> list[str]:
        body = []
        for b in self:
            r = b.row
            body.append((r.share_text(), f"{r.by}: {r.label}", r.bound or "-",
                         f"{b.distance:.3g}x" if math.isfinite(b.distance) else "-",
                         format_ns(b.saving_s * 1e9, 3), f"{b.at_roof_speedup:.3f}x",
                         f"{b.at_factor_speedup:.3f}x"))
        factor = self[0].speedup_factor if self else 2.0
        return table(("share", "item", "bound", "from roof", "saving/step", "step if at roof",
                      f"step if {factor:g}x"), body, indent="", align="rllrrrr")


@dataclass(frozen=True)
class Projection(TextLines):
    """The projected step with some items sped up (:meth:`Profile.project`)."""

    speedups: Mapping[str, float]
    step_time_s: float
    projected_step_time_s: float
    projected_ci: tuple[float, float]
    speedup: float
    speedup_ci: tuple[float, float]
    matched_share: float

    def __repr__(self) -> str:
        return brief_repr(self, f"step {format_ns(self.step_time_s * 1e9)} -> "
                                f"{format_ns(self.projected_step_time_s * 1e9)}, "
                                f"{self.speedup:.3g}x")

    def lines(self) -> list[str]:
        lo, hi = self.speedup_ci
        plo, phi = self.projected_ci
        what = ", ".join(f"{k} {v:g}x" for k, v in self.speedups.items())
        return [f"projection: {what}",
                f"  step {format_ns(self.step_time_s * 1e9)} -> "
                f"{format_ns(self.projected_step_time_s * 1e9)} "
                f"[{format_ns(plo * 1e9)}, {format_ns(phi * 1e9)}]",
                f"  speedup {self.speedup:.3f}x [{lo:.3f}, {hi:.3f}] "
                f"({100 * self.matched_share:.1f}% of the step sped up)"]


@dataclass(frozen=True)
class Profile(TextLines):
    """Where a run's steps spent their time.

    Attributes
    ----------
    cells : tuple of Cell
        The timed split; every table is a sum of cells.
    step_times : ndarray
        Each step's time net of the profiler's cost (seconds); the cells of a step sum to
        it.
    profiled_step_times : ndarray
        Each step's time as observed, with the profiler's cost inside.
    unprofiled_step_times : ndarray or None
        The same steps timed without the profiler, where measured (``profile(fn, ...)``
        does); the observer effect is their medians' ratio, and its interval comes from
        the pairs of steps (:attr:`observer_effect_ci`).
    overhead : Overhead
        What was subtracted.
    roofline : object or None
        The :class:`fastbench.roofline.Roofline` the verdicts are judged against.
    events : tuple of TraceEvent
        The observed timeline (for traces).
    meta : dict
        What was profiled: model, threads, torch version, ...
    warnings : tuple of str
    """

    cells: tuple[Cell, ...]
    step_times: NDArray[np.float64]
    profiled_step_times: NDArray[np.float64]
    overhead: Overhead
    unprofiled_step_times: NDArray[np.float64] | None = None
    roofline: Any = None
    events: tuple[TraceEvent, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    # -- basic figures ---------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return int(self.step_times.size)

    @property
    def step_time_s(self) -> float:
        """Mean step time, net of the profiler (seconds)."""
        return float(np.mean(self.step_times))

    @property
    def observer_effect(self) -> float | None:
        """Median profiled step over median unprofiled step (1.0 = no effect); None when the
        unprofiled steps were not measured."""
        if self.unprofiled_step_times is None or not self.unprofiled_step_times.size:
            return None
        return float(np.median(self.profiled_step_times)
                     / np.median(self.unprofiled_step_times))

    @property
    def observer_effect_ci(self) -> tuple[float, float] | None:
        """95% interval of the observer effect: the distribution-free interval of the median
        of the paired ratios, each profiled step over the unprofiled step run right before
        it (:func:`fastbench.stats.median_ci`), so that a slow spell of the machine spanning
        a pair cancels in it. None when the unprofiled steps were not measured, do not pair
        one to one with the profiled ones, or are too few (fewer than 6 pairs)."""
        unprofiled = self.unprofiled_step_times
        if unprofiled is None or unprofiled.size != self.profiled_step_times.size:
            return None
        if unprofiled.size == 0 or np.any(unprofiled <= 0):
            return None
        return median_ci(self.profiled_step_times / unprofiled)

    def _observer_words(self) -> str:
        """What the observer effect's interval lets one say, for the printed profile."""
        ci = self.observer_effect_ci
        if ci is None:
            return ""
        low, high = ci
        said = f", 95% CI of the paired steps [{low:.3f}, {high:.3f}]"
        if low > 1.0:
            return said
        if high < 1.0:
            return (said + ": the profiled steps ran faster, which the profiler cannot cause; "
                    "the machine's speed or the step's own time moved between the steps")
        return said + ": no effect this run can tell from its noise"

    @property
    def attributed_ratio(self) -> float | None:
        """Median net step over median unprofiled step: how well the subtraction recovers
        the step's own time (1.0 is exact); None when unprofiled steps were not measured."""
        if self.unprofiled_step_times is None or not self.unprofiled_step_times.size:
            return None
        return float(np.median(self.step_times) / np.median(self.unprofiled_step_times))

    def times(self, by: str = "op") -> dict[str, NDArray[np.float64]]:
        """Per-step seconds of each row of the table ``by`` (self time)."""
        by = check_choice("by", by, BYS)
        out: dict[str, NDArray[np.float64]] = {}
        for c in self.cells:
            k = c.key(by)
            out[k] = out[k] + c.times if k in out else c.times.copy()
        return out

    # -- verdicts --------------------------------------------------------------------------
    def _roof_times(self, c: Cell) -> tuple[float, float] | None:
        """(compute, memory) seconds per step at the roof for a cell; None without a
        roofline or a count."""
        r = self.roofline
        if r is None or (c.flops <= 0 and c.bytes <= 0) or c.op == NOT_IN_OP:
            return None
        try:
            peak = r.peak_gflops(c.dtype or "float32")
        except ValueError:
            peak = r.peak_gflops("float32")
        calls = max(c.calls / max(self.steps, 1), 1e-12)
        per_call = max(int(c.bytes / calls), 1)
        level = r.level_for(per_call)
        bw = r.memory[level]
        return c.flops / (peak * 1e9), c.bytes / (bw * 1e9)

    def _judge(self, cells: Sequence[Cell], time_s: float,
               calls: float) -> tuple[str | None, float | None, float | None]:
        if self.roofline is None:
            return None, None, None
        weight = dict.fromkeys(BOUNDS, 0.0)
        uncounted = 0.0  # ops without a count that run long: no bound can be told
        roof = 0.0
        for c in cells:
            t = float(np.mean(c.times))
            rt = self._roof_times(c)
            per_call = t / max(c.calls / max(self.steps, 1), 1e-12)
            if c.op == DATA_LOADING:   # a dataset's own work: no roof to judge it by
                uncounted += t
                continue
            if rt is None:
                # Time outside ops, or an uncounted op as short as a call's own cost, is
                # overhead; an uncounted op running far longer is not (a fused kernel with
                # no formula does real work), and is left unjudged.
                if c.op == NOT_IN_OP or per_call < OVERHEAD_CALL_S:
                    weight["overhead-bound"] += t
                else:
                    uncounted += t
                continue
            tmin = max(rt)
            roof += tmin
            if tmin < OVERHEAD_ROOF_FRACTION * t and per_call < OVERHEAD_CALL_S:
                weight["overhead-bound"] += t
            else:
                weight["compute-bound" if rt[0] >= rt[1] else "memory-bound"] += t
        if uncounted > max(weight.values()):
            return None, None, roof if roof > 0 else None
        bound = max(BOUNDS, key=lambda b: weight[b])
        fraction = min(roof / time_s, 1.0) if time_s > 0 and roof > 0 else None
        return bound, fraction, (roof if roof > 0 else None)

    # -- tables ------------------------------------------------------------------------------
    def _groups(self, by: str) -> dict[str, list[Cell]]:
        groups: dict[str, list[Cell]] = {}
        for c in self.cells:
            groups.setdefault(c.key(by), []).append(c)
        return groups

    def _row(self, by: str, name: str, cells: Sequence[Cell],
             total: Sequence[Cell] | None = None) -> ProfileRow:
        t = np.sum([c.times for c in cells], axis=0)
        share, lo, hi = ratio_ci(t, self.step_times)
        time_s = float(np.mean(t))
        total_s = float(np.mean(np.sum([c.times for c in total], axis=0))) if total else time_s
        steps = max(self.steps, 1)
        calls = sum(c.calls for c in cells) / steps
        if by == "module":   # a module's calls are its ops' calls; count time, not calls
            calls = sum(c.calls for c in cells if c.op not in (NOT_IN_OP, DATA_LOADING)) / steps
        bound, fraction, roof = self._judge(cells, time_s, calls)
        return ProfileRow(by, name, share, (max(lo, 0.0), min(hi, 1.0)) if not math.isnan(lo)
                          else (lo, hi), time_s, total_s, calls,
                          sum(c.flops for c in cells), sum(c.bytes for c in cells),
                          bound, fraction, roof)

    def rows(self, by: str = "op") -> ProfileRows:
        """Every row of the table ``by`` ("op", "op_shapes", "module", "family", "region"),
        largest share first. By "op" an op's name gathers all its input shapes; by
        "op_shapes" each set of shapes is a row."""
        by = check_choice("by", by, BYS)
        groups = self._groups(by)
        out = []
        for name, cells in groups.items():
            total = None
            if by == "module" and name != OUTSIDE:
                total = [c for c in self.cells if c.module != OUTSIDE
                         and (name == "" or c.module == name
                              or c.module.startswith(name + "."))]
            out.append(self._row(by, name, cells, total))
        out.sort(key=lambda r: -r.time_s)
        return ProfileRows(out, by)

    def top(self, n: int = 10, by: str = "op") -> ProfileRows:
        """The ``n`` largest rows of the table ``by``; printed, the table."""
        n = check_int("n", n, 1)
        return ProfileRows(self.rows(by)[:n], by)

    # -- what is worth fixing ---------------------------------------------------------------
    def bottlenecks(self, n: int = 10, by: Sequence[str] = ("op", "module"),
                    speedup: float = 2.0) -> Bottlenecks:
        """Items ranked by the step time they would save at their roof (the roofline's minimum
        time for their FLOPs and bytes; items with no count, such as the time between ops,
        save all of it at "infinitely fast", so they rank by their time).

        Each carries its share, bound, distance to its roof and the whole step's Amdahl
        projection if it reached its roof or ran ``speedup`` times faster.
        """
        n = check_int("n", n, 1)
        step = self.step_time_s
        found = []
        for kind in by:
            for row in self.rows(kind):
                saving = row.time_s - (row.roof_time_s or 0.0)
                share_at_roof = saving / step if step > 0 else 0.0
                at_roof = 1.0 / (1.0 - min(max(share_at_roof, 0.0), 1.0 - 1e-12))
                found.append(Bottleneck(row, saving, at_roof, speedup,
                                        amdahl(min(max(row.share, 0.0), 1.0), speedup)))
        found.sort(key=lambda b: -b.saving_s)
        return Bottlenecks(found[:n])

    def _matches(self, key: str, c: Cell) -> bool:
        kind, sep, name = key.partition(":")
        if sep and kind in ("op", "family", "region"):
            if kind == "op":
                return c.op == name or c.op.split("::")[-1] == name
            if kind == "family":
                return c.family == name
            return c.key("region") == name
        if sep and kind == "module":
            key = name
        if key == OUTSIDE:
            return c.module == OUTSIDE
        return c.module != OUTSIDE and (key == "" or c.module == key
                                        or c.module.startswith(key + "."))

    def project(self, speedups: Mapping[str, float]) -> Projection:
        """The step time if some items ran faster.

        Keys: a module's qualified name (with what runs inside it; "module:" may prefix it),
        ``"op:addmm"``, ``"family:elementwise"``, ``"region:data loading"`` or
        ``"outside any module"``; values: how many times faster (``math.inf`` removes the
        item). A cell several keys match takes the largest factor. The interval comes from
        the per-step projected times, paired with the measured ones.
        """
        if not isinstance(speedups, Mapping) or not speedups:
            raise ValueError("speedups must be a non-empty mapping of item to factor, e.g. "
                             "{'encoder.attn': 2.0, 'family:elementwise': 1.5}")
        for k, v in speedups.items():
            amdahl(0.5, v)   # checks the factor
            if not any(self._matches(str(k), c) for c in self.cells):
                raise ValueError(f"no item of this profile matches {k!r}: give a module's "
                                 f"name, 'op:NAME', 'family:NAME', 'region:NAME' or "
                                 f"{OUTSIDE!r}")
        saved = np.zeros_like(self.step_times)
        matched = np.zeros_like(self.step_times)
        for c in self.cells:
            f = max((float(v) for k, v in speedups.items() if self._matches(str(k), c)),
                    default=1.0)
            if f != 1.0:
                saved += c.times * (1.0 - (0.0 if math.isinf(f) else 1.0 / f))
                matched += c.times
        projected = self.step_times - saved
        p_mean = float(np.mean(projected))
        ratio, lo, hi = ratio_ci(self.step_times, projected)
        # The projected mean's interval, from the projected steps' spread.
        sd = float(np.std(projected, ddof=1)) if self.steps >= 2 else 0.0
        pci = mean_ci(p_mean, sd, self.steps, 0.95) or (math.nan, math.nan)
        return Projection(dict(speedups), self.step_time_s, p_mean, pci, ratio, (lo, hi),
                          float(np.sum(matched) / np.sum(self.step_times)))

    # -- printing ------------------------------------------------------------------------------
    def __repr__(self) -> str:
        name = self.meta.get("name") if isinstance(self.meta, Mapping) else None
        named = f"{name!r}: " if name else ""
        return brief_repr(self, f"{named}{self.steps} steps, step "
                                f"{format_ns(self.step_time_s * 1e9)}, {len(self.cells)} cells")

    def lines(self) -> list[str]:
        out = [f"profile: {self.meta.get('name', 'run')}, {self.steps} steps"
               + (f", {self.meta['threads']} threads" if "threads" in self.meta else "")]
        med = float(np.median(self.step_times))
        collector = self.meta.get("collector", "dispatch")
        what = "observed call" if collector == "native" else "op"
        # The tables' times per step and shares are totals over the steps, so the savings
        # and projections below divide the mean step: a step slowed now and then pulls it
        # above the median, and both are said.
        out.append(f"  step time {format_ns(med * 1e9)} median, {format_ns(self.step_time_s * 1e9)}"
                   f" mean (the tables' shares and savings are of the mean), net of the "
                   f"profiler's cost ({collector} collector, "
                   f"{format_ns(self.overhead.per_op_s * 1e9, 3)} per {what} subtracted)")
        if self.observer_effect is not None and self.unprofiled_step_times is not None:
            out.append(f"  observer effect: {format_ns(np.median(self.profiled_step_times) * 1e9)}"
                       f" profiled against {format_ns(np.median(self.unprofiled_step_times) * 1e9)}"
                       f" unprofiled ({self.observer_effect:.3f}x{self._observer_words()});"
                       f" net of the cost {self.attributed_ratio:.3f}x of the unprofiled step")
        ops = sum(c.calls for c in self.cells
                  if c.op not in (NOT_IN_OP, DATA_LOADING)) / max(self.steps, 1)
        out.append(f"  {format_count(ops)} ops per step")
        for by, n in (("family", 8), ("module", 10), ("op", 10)):
            out.append("")
            out.append(f"by {by}:")
            out.extend("  " + line for line in self.top(n, by).lines())
        if any(c.region for c in self.cells):
            out.append("")
            out.append("by region:")
            out.extend("  " + line for line in self.top(10, "region").lines())
        if self.roofline is not None:
            out.append("")
            out.append("worth fixing (step time saved if each reached its roof):")
            out.extend("  " + line for line in self.bottlenecks(5).lines())
        out.extend(f"  warning: {w}" for w in self.warnings)
        return out

    # -- files -----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "cells": [c.to_dict() for c in self.cells],
            "step_times": [float(t) for t in self.step_times],
            "profiled_step_times": [float(t) for t in self.profiled_step_times],
            "unprofiled_step_times": (None if self.unprofiled_step_times is None
                                      else [float(t) for t in self.unprofiled_step_times]),
            "overhead": self.overhead.to_dict(),
            "roofline": None if self.roofline is None else self.roofline.to_dict(),
            "events": [e.to_dict() for e in self.events],
            "meta": dict(self.meta),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Profile:
        roofline = None
        if d.get("roofline") is not None:
            from ..roofline import Roofline
            roofline = Roofline.from_dict(d["roofline"])
        unprofiled = d.get("unprofiled_step_times")
        steps = _seconds(d["step_times"], "step_times")
        cells = tuple(Cell.from_dict(c) for c in d["cells"])
        if steps.size == 0 or not np.all(steps > 0):
            raise ValueError("a profile's step_times must be positive, one per step")
        if any(c.times.shape != steps.shape for c in cells):
            raise ValueError("every cell of a profile must hold one time per step")
        return cls(
            cells,
            steps,
            _seconds(d["profiled_step_times"], "profiled_step_times"),
            Overhead.from_dict(d["overhead"]),
            None if unprofiled is None else _seconds(unprofiled, "unprofiled_step_times"),
            roofline,
            tuple(TraceEvent.from_dict(e) for e in d.get("events", ())),
            dict(d.get("meta", {})),
            tuple(str(w) for w in d.get("warnings", ())))

    def with_unprofiled(self, times: Any) -> Profile:
        return replace(self, unprofiled_step_times=np.asarray(times, dtype=np.float64))
