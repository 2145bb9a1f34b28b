"""``fastbench.suite.run``: named variants measured interleaved on the same inputs, each
reported with latency percentiles, throughput per batch size, its metric, memory, energy,
FLOPs and a paired speedup verdict against the baseline.

The order of work: the arguments are checked; every variant is called on every batch's
inputs once (the probe), which warms it and gives the signatures the fairness checks compare
(:mod:`.fairness`), so a mismatch raises before anything is timed; then per batch size the
variants are warmed up and timed in rounds, each round one call of every variant, in a fresh
seeded random order each round (two variants alternate), so a slow phase of the host reaches
them alike, no variant always follows the same one (what a predecessor leaves in the caches
would otherwise count as the variant's speed), and round i of two variants forms a pair;
then memory, energy (:mod:`.energy`), the metric and the module facts. Statistics are fastbench.stats', the
verdicts :func:`fastbench.compare`'s judgement.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .._checks import check_bool, check_finite, check_fraction, check_int, check_seconds
from ..comparison import judge, judge_blocks
from ..memory import call_memory
from ..report.progress import Progress
from ..stats.bootstrap import bootstrap_mean_ci, paired_bootstrap_delta_ci
from ..stats.quantiles import quantile_ci
from ..stats.summary import mean_ci
from ..stats.twosample import ESTIMATORS
from ..timing import callable_target, gc_paused, run_config
from ..timing.config import MAX_COUNT
from ..timing.sampling import order_design, round_order
from ..timing.targets import Target
from .energy import Energy, measure_energy_interleaved
from .fairness import Signature, UnfairComparison, check_allow, differences, signature
from .records import (PERCENTILES, Latency, MemoryFigures, MetricValue, Speedup, Throughput,
                      VariantRecord)
from .result import DELTA_UNITS, Score, SuiteResult, score_text

__all__ = ["run"]

CONFIDENCE = 0.95
BLOCKS = 10
MIN_BLOCK_ROUNDS = 5
Call = Callable[[], Any]


# -- inputs -----------------------------------------------------------------------------------
def _as_call_args(value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """One call's arguments: a tuple or list is the positional arguments, a dict the keyword
    ones, anything else the one positional argument."""
    if isinstance(value, (tuple, list)):
        return tuple(value), {}
    if isinstance(value, dict):
        return (), dict(value)
    return (value,), {}


def _leading(value: Any) -> int | None:
    """The first dimension of the first array-like leaf, or None."""
    args, kwargs = _as_call_args(value)
    for leaf in [*args, *kwargs.values()]:
        shape = getattr(leaf, "shape", None)
        if shape is not None and len(shape) > 0 and not isinstance(leaf, type):
            return int(shape[0])
    return None


def _resized(value: Any, batch: int) -> Any:
    """``value`` with every array-like leaf of the same leading size cut or repeated (rows
    taken cyclically) to ``batch`` rows."""
    n = _leading(value)
    if n is None:
        raise ValueError("inputs have no array with a batch dimension to resize; pass "
                         "inputs as a callable inputs(batch) that builds each batch")
    index = [i % n for i in range(batch)]

    def fit(leaf: Any) -> Any:
        shape = getattr(leaf, "shape", None)
        if shape is not None and len(shape) > 0 and int(shape[0]) == n:
            return leaf[index]
        return leaf
    args, kwargs = _as_call_args(value)
    if isinstance(value, dict):
        return {k: fit(v) for k, v in kwargs.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(fit(a) for a in args)
    return fit(value)


class _Inputs:
    """Each variant's arguments at each batch size."""

    def __init__(self, inputs: Any, variant_inputs: Mapping[str, Any] | None,
                 names: Sequence[str], batch_sizes: Sequence[int] | None) -> None:
        if inputs is None:
            raise TypeError("inputs is required: the input each variant is called with (an "
                            "array/tensor, a tuple of arguments, a dict of keyword arguments, "
                            "or a callable inputs(batch) building one)")
        extra = dict(variant_inputs or {})
        unknown = [k for k in extra if k not in names]
        if unknown:
            raise ValueError(f"variant_inputs names {', '.join(map(repr, unknown))}, not among "
                             f"the variants ({', '.join(names)})")
        self._given = {n: extra.get(n, inputs) for n in names}
        if batch_sizes is None:
            sizes = {n: (None if callable(v) else _leading(v)) for n, v in self._given.items()}
            first = sizes[names[0]]
            if first is None and any(callable(v) for v in self._given.values()):
                raise ValueError("inputs is a callable inputs(batch): pass batch_sizes")
            self.batch_sizes: tuple[int, ...] = (first or 1,)
            self._as_given = True  # each variant's inputs as given: a batch mismatch shows
        else:
            if isinstance(batch_sizes, (str, bytes)) or not isinstance(batch_sizes, Iterable):
                raise TypeError(f"batch_sizes must be a list of ints, got {batch_sizes!r}")
            sizes_list = [check_int("batch_sizes[]", b, 1) for b in batch_sizes]
            if not sizes_list or len(set(sizes_list)) != len(sizes_list):
                raise ValueError(f"batch_sizes must be distinct and not empty, got {batch_sizes!r}")
            self.batch_sizes = tuple(sizes_list)
            self._as_given = False
        self._cache: dict[tuple[str, int], tuple[tuple[Any, ...], dict[str, Any]]] = {}

    def args(self, name: str, batch: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        key = (name, batch)
        if key not in self._cache:
            given = self._given[name]
            if callable(given) and not hasattr(given, "shape"):
                value = given(batch)
            elif self._as_given or _leading(given) in (None, batch):
                value = given
            else:
                value = _resized(given, batch)
            self._cache[key] = _as_call_args(value)
        return self._cache[key]


# -- variants ---------------------------------------------------------------------------------
def _torch_support() -> Any:
    """fastbench.pytorch.suite_support when torch is in use in this process, else None."""
    if "torch" not in sys.modules:
        return None
    from ..pytorch import suite_support
    return suite_support


class _Variant:
    def __init__(self, name: str, obj: Any, support: Any) -> None:
        if not callable(obj):
            raise TypeError(f"variant {name!r} must be a callable or an nn.Module, got "
                            f"{type(obj).__name__}")
        self.name, self.obj = name, obj
        self.module = support is not None and support.is_module(obj)
        self.fn: Callable[..., Any] = support.inference(obj) if self.module else obj
        self.notes: list[str] = []
        self._support = support
        self.kept: str | None = None if self.module else "not a module"
        if self.module and getattr(obj, "training", False):
            self.notes.append("the module is in training mode (dropout and batch norm behave "
                              "as in training); call .eval() for inference figures")

    def relayout(self) -> None:
        """Time a fresh deep copy of the module from now on (its weights in new memory);
        a variant that cannot be copied keeps its object, and ``kept`` says why."""
        if self.kept is not None:
            return
        self.fn = self.obj  # the previous copy goes before the next is made
        fresh, why = self._support.fresh_copy(self.obj)
        if fresh is None:
            self.kept, self.fn = why, self._support.inference(self.obj)
        else:
            self.fn = self._support.inference(fresh)

    def restore(self) -> None:
        """Back to the user's own object (memory, energy and the metric use it)."""
        if self.module:
            self.fn = self._support.inference(self.obj)

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
        fn = self.fn
        if kwargs:
            return lambda: fn(*args, **kwargs)
        if len(args) == 1:
            (a,) = args
            return lambda: fn(a)
        return lambda: fn(*args)


# -- statistics ---------------------------------------------------------------------------------
def latency_of(batch: int, samples_s: Sequence[float]) -> Latency:
    """Median and percentiles of per-call latencies, each with its order-statistic interval
    (interpolated between adjacent order statistics to the nominal 95%, Nyblom 1992)."""
    x = np.asarray(samples_s, dtype=np.float64)
    pct = {label: (float(np.quantile(x, q)), quantile_ci(x, q, CONFIDENCE, method="interpolated"))
           for label, q in PERCENTILES.items()}
    return Latency(batch, tuple(float(v) for v in x), pct["p50"][0], pct["p50"][1], pct)


def throughput_of(batch: int, samples_s: Sequence[float]) -> Throughput:
    """``batch`` over the mean latency (calls back to back), its interval from the Student
    interval of the mean latency (inverted)."""
    x = np.asarray(samples_s, dtype=np.float64)
    mean = float(x.mean())
    ci = mean_ci(mean, float(x.std(ddof=1)) if x.size > 1 else 0.0, int(x.size), CONFIDENCE)
    interval = None
    if ci is not None and ci[0] > 0:
        interval = (batch / ci[1], batch / ci[0])
    return Throughput(batch, batch / mean, interval)


def _scores(value: Any, what: str) -> tuple[float, np.ndarray | None]:
    """A metric's return: one float, or per-example scores (mean and the array)."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"{what} returned {v}")
        return v, None
    try:
        arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value,
                         dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must return a float or per-example scores (an array), got "
                        f"{type(value).__name__}") from e
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} returned an empty or non-finite array of scores")
    if arr.size == 1:
        return float(arr[0]), None
    return float(arr.mean()), arr


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu()
    return np.asarray(x)


def default_accuracy(fn: Callable[..., Any], eval_data: Any) -> tuple[np.ndarray, int]:
    """Per-example correctness ``argmax(output, -1) == label`` over ``eval_data`` (one
    ``(inputs, labels)`` pair or an iterable of such batches), and how many examples' outputs
    held a value that is not finite. Such an example is never correct: the argmax of a row of
    NaN is 0, which would match every label 0."""
    if (isinstance(eval_data, (tuple, list)) and len(eval_data) == 2
            and hasattr(eval_data[1], "shape")):
        batches: Iterable[Any] = [eval_data]
    else:
        batches = eval_data
    parts = []
    non_finite = 0
    for batch in batches:
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            raise TypeError("without a metric, eval_data must be (inputs, labels) or an "
                            "iterable of (inputs, labels) batches")
        inputs, labels = batch
        args, kwargs = _as_call_args(inputs)
        out = _to_numpy(fn(*args, **kwargs))
        pred = out.argmax(axis=-1).reshape(-1)
        truth = _to_numpy(labels).reshape(-1)
        if pred.shape != truth.shape:
            raise ValueError(f"the output's argmax gives {pred.size} predictions for "
                             f"{truth.size} labels")
        finite = np.ones(pred.size, dtype=bool)
        if np.issubdtype(out.dtype, np.inexact):
            finite = np.isfinite(out).reshape(pred.size, -1).all(axis=1)
        non_finite += int(pred.size - np.count_nonzero(finite))
        parts.append(((pred == truth) & finite).astype(np.float64))
    if not parts:
        raise ValueError("eval_data holds no batch")
    return np.concatenate(parts), non_finite


def _metric_values(variants: Mapping[str, _Variant], baseline: str, eval_data: Any,
                   metric: Callable[..., Any] | None) -> dict[str, MetricValue]:
    name = "accuracy" if metric is None else str(getattr(metric, "__name__", "metric"))
    raw: dict[str, tuple[float, np.ndarray | None]] = {}
    bad: dict[str, int] = {}
    for v in variants.values():
        if metric is None:
            correct, bad[v.name] = default_accuracy(v.fn, eval_data)
            raw[v.name] = (float(correct.mean()), correct)
        else:
            raw[v.name] = _scores(metric(v.obj, eval_data), f"metric({v.name!r}, eval_data)")
    base_value, base_scores = raw[baseline]
    out = {}
    for n, (value, scores) in raw.items():
        ci = None if scores is None else bootstrap_mean_ci(scores, CONFIDENCE)
        delta = delta_ci = None
        if n != baseline:
            delta = value - base_value
            if scores is not None and base_scores is not None and scores.size == base_scores.size:
                d, lo, hi = paired_bootstrap_delta_ci(base_scores, scores, CONFIDENCE)
                delta, delta_ci = d, (lo, hi)
        out[n] = MetricValue(name, value, ci, None if scores is None else int(scores.size),
                             delta, delta_ci, bad.get(n, 0))
    return out


def non_finite_warnings(metrics: Mapping[str, MetricValue]) -> list[str]:
    """One warning per variant whose outputs held NaN or infinity (those examples were
    counted wrong)."""
    return [f"{n}: {m.non_finite} of {m.examples} outputs are not finite (NaN or infinity); "
            f"they are counted wrong, and its speed is that of a broken model"
            for n, m in metrics.items() if m.non_finite]


# -- the run ------------------------------------------------------------------------------------
def _check_variants(variants: object, baseline: object) -> list[str]:
    if not isinstance(variants, Mapping):
        raise TypeError(f"variants must be a mapping of name to callable or nn.Module, got "
                        f"{type(variants).__name__}")
    names = list(variants)
    if not names:
        raise ValueError("variants is empty: give at least the baseline")
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"variant names must be str, got {bad!r}")
    if not isinstance(baseline, str) or baseline not in variants:
        raise ValueError(f"baseline {baseline!r} is not among the variants ({', '.join(names)}); "
                         "pass baseline=<name>")
    return [baseline, *(n for n in names if n != baseline)]


def _probe(variants: Mapping[str, _Variant], plan: _Inputs, support: Any, threads: int | None,
           allow: Mapping[str, frozenset[str]], baseline: str) -> dict[str, tuple[str, ...]]:
    """Call every variant once per batch size and compare its signature with the baseline's;
    raise on a difference not allowed. Returns the allowed kinds that did differ."""
    used: dict[str, set[str]] = {n: set() for n in variants}
    for batch in plan.batch_sizes:
        sigs: dict[str, Signature] = {}
        for name, v in variants.items():
            args, kwargs = plan.args(name, batch)
            try:
                out = v.fn(*args, **kwargs)
            except Exception as e:
                raise ValueError(f"variant {name!r} failed on its batch-{batch} inputs "
                                 f"({type(e).__name__}: {e})") from e
            ran_on = None
            if support is not None:
                ran_on = support.threads_now()
                if threads is not None and ran_on != threads:
                    support.set_threads(threads)  # the next variant starts as the suite set it
            weights = support.weights(v.obj) if v.module else []
            sigs[name] = signature((args, kwargs), out, weights, ran_on)
        for name, sig in sigs.items():
            if name == baseline:
                continue
            found = differences(sigs[baseline], sig)
            refused = {k: w for k, w in found.items() if k not in allow[name]}
            if refused:
                what = "; ".join(w for ws in refused.values() for w in ws)
                raise UnfairComparison(
                    f"variant {name!r} differs from the baseline {baseline!r} at batch {batch}: "
                    f"{what}. Make them alike, or allow it by name: "
                    f"allow={{{name!r}: {sorted(refused)!r}}}")
            used[name] |= set(found)
    return {n: tuple(sorted(k)) for n, k in used.items()}


def block_count(blocks: int, rounds: int) -> int:
    """How many blocks ``rounds`` rounds are split into: ``blocks``, fewer where a block
    would get under :data:`MIN_BLOCK_ROUNDS` rounds, and 1 (no blocks) below 3 of them,
    which a t test over blocks needs."""
    k = min(blocks, rounds // MIN_BLOCK_ROUNDS)
    return k if k >= 3 else 1


def _time_batch(variants: Mapping[str, _Variant], plan: _Inputs, batch: int, cfg: Any,
                rounds: int, duration_s: float, budget_s: float, rng: np.random.Generator,
                report: Callable[[str], None], settle_calls: int, blocks: int
                ) -> tuple[list[dict[str, list[float]]], int, bool, float]:
    """Warm up and time every variant at ``batch``, interleaved, in ``blocks`` blocks of
    rounds; with more than one, each block times fresh copies of the module variants. The
    per-call seconds of each variant in each block, the rounds run, whether the budget cut
    them short, and the rounds' wall time."""
    names = list(variants)
    per_block: list[dict[str, list[float]]] = []
    spent = dict.fromkeys(names, 0.0)
    block_rounds = math.ceil(rounds / blocks)
    out_of_time = False
    start = time.monotonic()
    r = 0
    with gc_paused(cfg.disable_gc):
        for k in range(blocks):
            targets: dict[str, Target] = {}
            for name, v in variants.items():
                if blocks > 1:
                    v.relayout()
                # A suite's records are not saved as replicates: no identity to fingerprint
                # (a model's weights would be hashed for every batch size).
                targets[name] = callable_target(v.call(*plan.args(name, batch)), (), {},
                                                cfg.clock, name=name, identify=False)
                report(f"warm-up {name} (batch {batch}"
                       + (f", block {k + 1} of {blocks})" if blocks > 1 else ")"))
                targets[name].prepare(cfg)
            got: dict[str, list[float]] = {n: [] for n in names}
            spent_here = dict.fromkeys(names, 0.0)
            rb = 0
            while r < MAX_COUNT:
                for name in round_order(names, r, rng):
                    if settle_calls:  # untimed: the variant's caches warm again after the others
                        targets[name].sampler.run(1, settle_calls)
                    sample, _, elapsed = targets[name].sample(1)
                    got[name] += [x * 1e-9 for x in sample]
                    spent_here[name] += elapsed
                r += 1
                rb += 1
                done = rb >= block_rounds and min(spent_here.values()) >= duration_s / blocks
                if done:
                    break
                if time.monotonic() - start >= budget_s * (k + 1) / blocks:
                    out_of_time = True
                    break
            per_block.append(got)
            for n in names:
                spent[n] += spent_here[n]
    for v in variants.values():
        v.restore()
    return per_block, r, out_of_time, time.monotonic() - start


def run(
    variants: Mapping[str, Any],
    inputs: Any,
    *,
    baseline: str = "baseline",
    eval_data: Any = None,
    metric: Callable[..., Any] | None = None,
    batch_sizes: Sequence[int] | None = None,
    threads: int | None = None,
    variant_inputs: Mapping[str, Any] | None = None,
    allow: Any = None,
    rounds: int = 100,
    duration_s: float = 1.0,
    warmup: int = 3,
    settle_calls: int = 0,
    blocks: int | None = None,
    max_time_s: float = 120.0,
    memory: bool = True,
    energy: bool = True,
    watts_per_core: float | None = None,
    analyze: bool = True,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    estimator: str = "hodges-lehmann",
    score: Score | None = None,
    score_name: str | None = None,
    delta_unit: str = "fraction",
    seed: int = 0,
    progress: Progress | None = None,
) -> SuiteResult:
    """Measure named variants of one job interleaved and report each against the baseline.

    Parameters
    ----------
    variants : mapping of str to callable or torch.nn.Module
        The variants, in the order the report lists them; one is the baseline. A module is
        called under ``torch.no_grad()`` in its current mode (call ``.eval()`` first).
    inputs : array/tensor, tuple, dict, or callable
        What each call takes: a tuple or list is the positional arguments, a dict the
        keyword ones, anything else the one argument; or ``inputs(batch)`` returning one of
        those for a batch size. A fixed input is resized to other batch sizes by taking its
        rows cyclically.
    baseline : str
        The variant the others are judged against.
    eval_data : any, optional
        Passed to ``metric``; without a metric, ``(inputs, labels)`` (or an iterable of such
        batches) on which accuracy is ``argmax(output, -1) == label``.
    metric : callable, optional
        ``metric(variant, eval_data)`` -> a float, or per-example scores (an array: the mean
        is reported with a BCa bootstrap interval over examples, and the delta to the
        baseline with a paired bootstrap interval).
    batch_sizes : sequence of int, optional
        Batch sizes to time (default: the inputs' leading dimension). Latency, speedup and
        memory are reported at the first; throughput at each.
    threads : int, optional
        torch's intra-op threads for the whole run (restored after); by default as they are.
    variant_inputs : mapping of str to inputs, optional
        Inputs of particular variants (a quantized variant fed int8 data); the fairness
        checks then compare them with the baseline's.
    allow : mapping of str to kinds, or kinds, optional
        Differences allowed by name: "shape", "dtype", "batch", "device", "threads"
        (``{"int8": "dtype"}``). Any other difference raises :class:`UnfairComparison`
        before anything is timed; an allowed one is noted in the report.
    rounds, duration_s : int, float
        Per batch size, at least ``rounds`` rounds and until every variant has spent
        ``duration_s`` seconds in timed calls. p95's interval needs 72 calls, p99's 368.
    warmup : int
        Untimed calls of each variant before its timed ones (after the probe call).
    settle_calls : int
        Untimed calls of a variant in each round just before its timed call. With 0 (the
        default) a timed call follows the other variants' calls, whose data and weights
        have displaced its own from the caches: the latency of a variant sharing the machine.
        With 1 or more the timed call finds the caches as back-to-back calls leave them (the
        latency of a variant serving alone; a small model can read several percent faster),
        at the cost of the untimed calls' time.
    blocks : int, optional
        The rounds of each batch size are split into this many blocks (fewer where a block
        would get under 5 rounds; none below 3 blocks), and each block times fresh deep
        copies of the module variants. Identical modules whose weights lie in different
        places run 1-2% apart for as long as they live, so within one set of objects the
        rounds would call two copies of one model different; over blocks of fresh copies
        that offset is drawn anew, and the verdict is the t test over the blocks' estimates
        (blocks - 1 degrees of freedom). By default 10 where a variant is a module, else 1:
        the objects as given, the rounds themselves judged. A compiled module
        (``torch.compile``), a callable, or a module too large to copy keeps its object in
        every block (said in ``settings["kept"]``).
    max_time_s : float
        Budget of the timed rounds over all batch sizes, split evenly; a batch size that
        runs out is reported with the rounds it got and a warning.
    memory : bool
        Track the peak memory increase of a call (:func:`fastbench.memory.call_memory`, 3
        calls) and, for a module, measure the peak activation memory of a call from torch's
        allocator events: with the weights as stored (packed quantized weights included) it
        makes the model's memory footprint (``MemoryFigures.footprint_bytes``).
    energy : bool
        Energy per call (:mod:`fastbench.suite.energy`): RAPL when readable, else an
        estimate from CPU time labelled "estimated" with the reason.
    watts_per_core : float, optional
        The power model of the estimate (default :data:`.energy.DEFAULT_WATTS_PER_CORE`).
    analyze : bool
        Count FLOPs, MACs and parameters of module variants with the analyzer, and take its
        estimate of the activation peak (beside the measured one, or in its place).
    alpha, min_effect : float
        The verdict's significance level and smallest speedup worth calling a difference, as
        in :func:`fastbench.compare` (Holm-corrected across the candidates).
    estimator : {"hodges-lehmann", "median"}
        The speedup from the rounds' log-ratios: the Hodges-Lehmann estimate with the
        interval and p-value of Wilcoxon's signed-rank test (the default: about a fifth
        narrower than the median's sign-test interval from the same rounds, and robust to a
        few disturbed rounds), or the median with the sign test, as
        :func:`fastbench.compare` judges.
    score, score_name : callable, str, optional
        An efficiency score ``score(record, baseline_record, normalized) -> float`` in place
        of :func:`.result.efficiency_score`, and its description.
    delta_unit : {"fraction", "points"}
        How the built-in score reads the accuracy delta: as a fraction (the default:
        ``speedup * compression / (1 + |delta|)`` as usually defined), or in percentage
        points (losing one point halves the score).
    seed : int
        Seeds the rounds' random order.
    progress : callable(done, total, what), optional
        Told of each step (:func:`fastbench.report.progress.progress_bar` draws one).

    Returns
    -------
    SuiteResult

    Raises
    ------
    TypeError
        A variant that is not callable, inputs missing, a setting of the wrong type.
    ValueError
        An unknown baseline or ``allow`` entry, a variant failing on its inputs, a setting
        out of range.
    UnfairComparison
        Variants differ in input shapes, dtypes, batch, device or threads and that kind is
        not allowed for them.
    """
    names = _check_variants(variants, baseline)
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    rounds = check_int("rounds", rounds, 1, say_positive=False, maximum=MAX_COUNT)
    duration_s = check_finite("duration_s", duration_s)
    if duration_s < 0:
        raise ValueError(f"duration_s must be >= 0, got {duration_s}")
    max_time_s = check_seconds("max_time_s", max_time_s)
    for flag, value in (("memory", memory), ("energy", energy), ("analyze", analyze)):
        check_bool(flag, value)
    check_fraction("alpha", alpha)
    if not 0.0 <= check_finite("min_effect", min_effect) < 1.0:
        raise ValueError(f"min_effect must be in [0, 1), got {min_effect!r}")
    if threads is not None:
        check_int("threads", threads, 1, say_positive=False)
    if score is not None and not callable(score):
        raise TypeError(f"score must be callable(record, baseline_record, normalized), got "
                        f"{type(score).__name__}")
    if metric is not None and not callable(metric):
        raise TypeError(f"metric must be callable(variant, eval_data), got {type(metric).__name__}")
    if delta_unit not in DELTA_UNITS:
        raise ValueError(f"delta_unit must be one of {', '.join(DELTA_UNITS)}, got "
                         f"{delta_unit!r}")
    if metric is not None and eval_data is None:
        raise ValueError("metric needs eval_data (passed to it as its second argument)")
    seed = check_int("seed", seed, 0)
    settle_calls = check_int("settle_calls", settle_calls, 0, maximum=MAX_COUNT)
    if blocks is not None:
        check_int("blocks", blocks, 1, say_positive=False, maximum=MAX_COUNT)
    if watts_per_core is not None:  # checked again by the energy model, but only after timing
        watts = check_finite("watts_per_core", watts_per_core)
        if watts <= 0:
            raise ValueError(f"watts_per_core must be > 0 W, got {watts_per_core!r}")
    cfg = run_config(warmup, 1e-4, rounds, 1, "auto", True, None)
    allowed_kinds = check_allow(allow, names)
    support = _torch_support()
    if threads is not None and support is None:
        raise ValueError("threads sets torch's intra-op threads, and torch is not in use here")
    objs = {n: _Variant(n, variants[n], support) for n in names}
    plan = _Inputs(inputs, variant_inputs, names, batch_sizes)
    if blocks is None:
        blocks = BLOCKS if any(v.module for v in objs.values()) else 1
    blocks = block_count(blocks, rounds)
    steps = 2 + len(plan.batch_sizes) * (blocks * len(names) + 1) + 3
    done = 0

    def report(what: str) -> None:
        nonlocal done
        if progress is not None:
            progress(min(done, steps - 1), steps, what)
        done += 1

    threads_ctx = (contextlib.nullcontext(None) if support is None
                   else support.intra_op_threads(threads))
    with threads_ctx as ran_on:
        report("checking the variants")
        allowed = _probe(objs, plan, support, threads, allowed_kinds, baseline)
        rng = np.random.default_rng(seed)
        per_batch: dict[int, dict[str, list[float]]] = {}
        verdicts = {}
        warnings: list[str] = []
        rounds_run: dict[int, int] = {}
        timed_s: dict[str, float] = {}
        block_rounds: dict[str, list[int]] = {}
        budget = max_time_s / len(plan.batch_sizes)
        for batch in plan.batch_sizes:
            by_block, got, short, timed_s[str(batch)] = _time_batch(
                objs, plan, batch, cfg, rounds, duration_s, budget, rng, report, settle_calls,
                blocks)
            samples = {n: [x for b in by_block for x in b[n]] for n in names}
            per_batch[batch], rounds_run[batch] = samples, got
            block_rounds[str(batch)] = [len(b[baseline]) for b in by_block]
            if blocks > 1:
                verdicts[batch] = judge_blocks(
                    baseline, {n: [b[n] for b in by_block] for n in names}, alpha,
                    min_effect, "holm", estimator)
            else:
                verdicts[batch] = judge(baseline, samples, True, alpha, min_effect, "holm",
                                        estimator)
            report(f"timed batch {batch}")
            if short:
                unmet = (f"at {got} of {rounds} rounds" if got < rounds else
                         f"at {got} rounds, before every variant had {duration_s:g} s of "
                         "timed calls (duration_s)")
                warnings.append(f"batch {batch}: the time budget ({budget:.1f} s of max_time_s) "
                                f"ended the rounds {unmet}; raise max_time_s for tighter "
                                "intervals")
        first = plan.batch_sizes[0]
        report("memory")
        mems = {n: _memory(objs[n], plan, first, support, memory, analyze) for n in names}
        report("energy")
        energies: dict[str, Energy] = {}
        if energy:
            calls = {n: objs[n].call(*plan.args(n, first)) for n in names}
            energies = measure_energy_interleaved(calls, watts_per_core=watts_per_core)
        report("metric")
        metrics = (_metric_values(objs, baseline, eval_data, metric)
                   if eval_data is not None else {})
        warnings[:0] = non_finite_warnings(metrics)  # first: every other figure hangs on it
    records = {}
    for n in names:
        mem, facts_notes, flops, macs, params = mems[n]
        records[n] = VariantRecord(
            name=n, kind="module" if objs[n].module else "callable",
            latency=latency_of(first, per_batch[first][n]),
            latency_by_batch={b: latency_of(b, s[n]) for b, s in per_batch.items()},
            throughput={b: throughput_of(b, s[n]) for b, s in per_batch.items()},
            speedup=(Speedup(1.0, None, "baseline") if n == baseline
                     else Speedup.of(verdicts[first][n])),
            speedup_by_batch={b: (Speedup(1.0, None, "baseline") if n == baseline
                                  else Speedup.of(v[n])) for b, v in verdicts.items()},
            metric=metrics.get(n), memory=mem, energy=energies.get(n), flops=flops,
            macs=macs, params=params, notes=tuple(objs[n].notes + facts_notes),
        )
    settings = {"rounds": min(rounds_run.values()), "rounds_asked": rounds,
                "duration_s": duration_s, "warmup": warmup, "settle_calls": settle_calls,
                "order": order_design(len(objs)),
                "blocks": blocks, "block_rounds": block_rounds,
                "fresh_copies": [n for n in names if blocks > 1 and objs[n].kept is None],
                "kept": {n: objs[n].kept for n in names
                         if blocks > 1 and objs[n].kept is not None},
                "max_time_s": max_time_s,
                "threads": ran_on, "seed": seed, "alpha": alpha, "min_effect": min_effect,
                "estimator": estimator,
                "clock": cfg.clock, "timed_s": timed_s}
    if progress is not None:
        progress(steps, steps, "done")
    return SuiteResult(records, baseline, plan.batch_sizes, settings,
                       {n: k for n, k in allowed.items() if k}, tuple(warnings),
                       score_name or ("custom score" if score is not None
                                      else score_text(delta_unit)), score, delta_unit)


def _memory(v: _Variant, plan: _Inputs, batch: int, support: Any, memory: bool,
            analyze: bool) -> tuple[MemoryFigures, list[str], int | None, int | None, int | None]:
    args, kwargs = plan.args(v.name, batch)
    peak: float | None = None
    method = ""
    if memory:
        cm = call_memory(v.fn, args, kwargs, calls=3, warmup=1)
        peak, method = cm.median_peak_increase_bytes, cm.method
    if not v.module:
        return MemoryFigures(peak, method=method), [], None, None, None
    notes: list[str] = []
    activation: int | None = None
    activation_method = ""
    if memory:
        measured = support.activation_peak(v.fn, args, kwargs)
        activation, activation_method = measured.peak_bytes, measured.method
        if measured.peak_bytes is None:
            activation_method = ""
            notes.append(f"activation peak not measured: {measured.reason}")
    facts = support.module_facts(v.obj, args, kwargs, count_flops=analyze)
    return (MemoryFigures(peak, facts.param_bytes, facts.buffer_bytes, facts.serialized_bytes,
                          method, facts.packed_bytes, activation, activation_method,
                          facts.activation_estimate_bytes),
            notes + list(facts.notes), facts.flops, facts.macs, facts.params)
