"""fastbench.comparison.interleaved: compare()'s variants with their arguments bound, as
measure binds them ((fn, args), (fn, args, kwargs), functools.partial), in this process and
in worker processes, and the timing options it shares with measure (duration_s).

No wall-clock bounds beyond what the code guarantees: a native spin of N ns cannot take less
than N ns per call, and duration_s is a lower bound on the rounds' wall time.
"""

from __future__ import annotations

import time
from collections import Counter
from functools import partial
from typing import Any

import pytest

import fastbench
from fastbench import _core

QUICK: dict[str, Any] = {"rounds": 6, "min_time_s": 1e-4, "duration_s": None}


def test_a_variant_is_timed_with_its_arguments() -> None:
    # A native spin of known length: no argument would be 0 ns, the wrong one 10x off.
    c = fastbench.compare({"short": (_core.spin, (20_000,)),
                           "long": partial(_core.spin, 200_000)}, **QUICK)
    short, long = c.measurements["short"].median_ns, c.measurements["long"].median_ns
    assert short >= 20_000 * 0.99 and long >= 200_000 * 0.99  # a spin never ends early
    assert long > 3 * short
    assert c.results["long"].speedup < 1.0


def test_positional_and_keyword_arguments_reach_the_call() -> None:
    seen: Counter[tuple[int, int]] = Counter()

    def record(x: int, *, k: int) -> None:
        seen[(x, k)] += 1

    c = fastbench.compare({"tuple": (record, (1,), {"k": 2}), "list": (record, [3], {"k": 4}),
                           "partial": partial(record, 5, k=6)}, loops=10, **QUICK)
    # The three variants, each with its own arguments and nothing else; each sample of a
    # variant makes 10 calls (loops), the warmup and floors none of the others'.
    assert set(seen) == {(1, 2), (3, 4), (5, 6)}
    assert set(c.measurements) == {"tuple", "list", "partial"}
    assert all(n >= 10 * 6 for n in seen.values())


def test_a_tuple_without_kwargs_and_a_plain_callable_still_work() -> None:
    c = fastbench.compare({"plain": lambda: sum(range(10)), "args": (sum, (range(10),))},
                          **QUICK)
    assert c.rounds == 6 and c.stop_reason == "rounds"


@pytest.mark.parametrize("variant, match", [
    ((sum,), r"variant 'b' is a tuple of 1 items; a call with arguments is \(fn, args\)"),
    ((sum, (), {}, {}), "a tuple of 4 items"),
    ((42, (1,)), "the first item of .* must be callable, got int"),
    ((sum, range(3)), r"args, the second item .* got range \(one argument x is written \(x,\)\)"),
    ((sum, "ab"), "must be a tuple or list of positional arguments, got str"),
    ((sum, (), [("start", 1)]), "kwargs, the third item .* must be a dict of str to value"),
    ((sum, (), {1: 2}), "kwargs, the third item"),
    (42, "must be a statement string, a callable, or a call with arguments"),
])
def test_bad_variants_are_clear_type_errors(variant: object, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        fastbench.compare({"a": sum, "b": variant}, **QUICK)  # type: ignore[dict-item]


def test_duration_s_keeps_the_rounds_going() -> None:
    start = time.monotonic()
    c = fastbench.compare({"a": (sum, (range(100),)), "b": (sum, (range(100),))},
                          rounds=6, min_time_s=1e-4, duration_s=0.3)
    assert time.monotonic() - start >= 0.3  # the rounds alone last that long
    assert c.stop_reason == "duration_s" and c.rounds > 6
    assert all(m.stop_reason == "duration_s" and len(m.samples_ns) == c.rounds
               for m in c.measurements.values())
    # Without it, the rounds stop at rounds=; a budget shorter than duration_s ends them.
    assert fastbench.compare({"a": (sum, ((),)), "b": (sum, ((1,),))}, **QUICK).rounds == 6
    capped = fastbench.compare({"a": (sum, (range(100),)), "b": (sum, (range(100),))},
                               rounds=6, min_time_s=1e-4, duration_s=30.0, max_time_s=0.2)
    assert capped.stop_reason == "max_time_s"


def test_bad_timing_options_fail_before_anything_runs() -> None:
    calls = Counter[str]()

    def f() -> None:
        calls["f"] += 1

    with pytest.raises(ValueError, match="duration_s"):
        fastbench.compare({"a": f, "b": f}, duration_s=-1.0)
    with pytest.raises(TypeError, match="duration_s"):
        fastbench.compare({"a": f, "b": f}, duration_s="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_calls bounds an instruction count"):
        fastbench.compare({"a": f, "b": f}, max_calls=3)  # type: ignore[call-overload]
    assert not calls


def test_keyword_arguments_are_refused_for_instruction_counts() -> None:
    with pytest.raises(TypeError, match="variant 'b': metric='instructions' passes positional "
                       r"arguments only .* keyword arguments \['start'\]"):
        fastbench.compare({"a": (sum, ((1, 2),)), "b": partial(sum, (1, 2), start=1)},
                          metric="instructions")


@pytest.mark.slow  # four worker processes
def test_arguments_reach_worker_processes() -> None:
    c = fastbench.compare({"small": partial(sum, range(100)),
                           "large": (sum, (range(100_000),), {"start": 1})},
                          processes=2, **QUICK)
    assert c.stop_reason == "processes" and c.rounds == 2
    small, large = c.measurements["small"], c.measurements["large"]
    assert small.runs == large.runs == 2
    # 1000x the additions: far more than any host's noise.
    assert large.median_ns > 20 * small.median_ns


@pytest.mark.slow  # two worker processes
def test_duration_s_reaches_the_rounds_of_each_worker() -> None:
    c = fastbench.compare({"a": (sum, (range(100),)), "b": partial(sum, range(1000))},
                          processes=2, pairing="rounds", rounds=6, min_time_s=1e-4,
                          duration_s=0.2)
    for m in c.measurements.values():
        # Each worker's rounds went on past rounds=6 until 0.2 s had passed: at 2 x 0.1 ms
        # a round at the least, hundreds of them.
        assert len(m.run_lengths) == 2 and all(n > 6 for n in m.run_lengths)
    assert c.measurements["b"].median_ns > c.measurements["a"].median_ns
