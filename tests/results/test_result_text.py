"""Every result prints as its report and shows a one-line repr: ``str()`` is
``"\\n".join(lines())`` where the result has lines, and ``repr()`` is one line under 300
characters naming the type, whatever the result holds (a server run's thousands of
timestamps, a measurement's samples). Small real instances: the kinds table's builders,
and the objects the public functions return, run with fast settings."""

from __future__ import annotations

import importlib.util
from typing import Any, Callable

import numpy as np
import pytest
from _results_helpers import BUILDERS, _comparison, _profile, _roofline, _sample_profile, _suite

import fastbench
from fastbench import _core
from fastbench.analysis import formulas, layers
from fastbench.counters import compare_counts
from fastbench.memory import call_memory, track
from fastbench.report.lines import BRIEF_REPR_CHARS, brief_repr
from fastbench.suite import (Energy, RateSearch, batch_sweep, offline, parameter_sweep,
                             power_law_fit, server, single_stream, thread_sweep)
from fastbench.suite.server_scenario import RateTrial

SPIN = _core.make_spin(20e3)   # 20 µs of busy work a call
FAST = {"repeat": 10, "duration_s": None, "warmup": 0}


def _tracker() -> Any:
    with track(python_heap=False) as m:
        bytearray(1 << 16)
    return m


def _profiled() -> Any:
    @fastbench.profiled
    def work() -> None:
        SPIN()
    for _ in range(8):
        work()
    return work.profile


def _thread_sweep() -> Any:
    state = {"n": 1}
    return thread_sweep(SPIN, [1, 2], set_threads=lambda n: state.update(n=n),
                        get_threads=lambda: state["n"], **FAST)


def _model_analysis() -> Any:
    import torch

    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                             batch_first=True)
    return fastbench.analysis.analyze(layer, torch.randn(1, 3, 8))


CASES: dict[str, Callable[[], Any]] = {
    **{kind: builder for kind, (builder, _) in BUILDERS.items() if kind != "measurements"},
    "measure": lambda: fastbench.measure(SPIN, **FAST),
    "timeit": lambda: fastbench.timeit("pass", **FAST),
    "compare": lambda: fastbench.compare({"a": SPIN, "b": SPIN}, rounds=6, duration_s=None,
                                         warmup=0),
    "gate": lambda: fastbench.gate(_comparison(), 5.0),
    "count_comparison": lambda: compare_counts(
        BUILDERS["instruction_count"][0](), BUILDERS["instruction_count"][0]()),
    "profile_rows": lambda: _profile().top(),
    "bottlenecks": lambda: _profile().bottlenecks(),
    "projection": lambda: _profile().project({"fc": 2.0}),
    "sample_rows": lambda: _sample_profile().top(),
    "suite_variant": lambda: _suite()["fast"],
    "single_stream": lambda: single_stream(SPIN, min_queries=20, min_duration_s=0.01),
    "offline": lambda: offline(SPIN, samples_per_call=4, min_duration_s=0.02, blocks=4),
    # Thousands of timestamps inside: the repr must not show them.
    "server": lambda: server(SPIN, 2000.0, min_queries=2000, min_duration_s=0.1),
    "rate_search": lambda: RateSearch(0.01, 0.99, 2e-5, 20000.0, 25000.0, 0.05,
                                      (RateTrial(25000.0, 0.02, False, 0.5),
                                       RateTrial(20000.0, 0.004, True, 0.4))),
    "batch_sweep": lambda: batch_sweep(lambda b: SPIN, [1, 2], **FAST),
    "thread_sweep": _thread_sweep,
    "parameter_sweep": lambda: parameter_sweep(lambda n: SPIN, [1, 2, 4], **FAST),
    "power_law_fit": lambda: power_law_fit([1, 2, 4, 8], [1.0, 4.1, 15.9, 64.2]),
    "energy": lambda: Energy(0.00123, (0.00118, 0.00128), "rapl-powercap", False,
                             idle_w=12.5, blocks=10, calls_per_block=40),
    "memory_tracker": _tracker,
    "memory_usage": lambda: _tracker().result,
    "call_memory": lambda: call_memory(SPIN, calls=2, python_heap=False),
    "call_profile": _profiled,
    "roofline_placement": lambda: fastbench.roofline.place(flops=2e9, bytes=1e8, seconds=0.05,
                                                           roofline=_roofline(), threads=2),
    "cost": lambda: formulas.linear(512, 512, batch=(8,)),
    "layer_analysis": lambda: layers.analyze_layers(
        layers.Sequential(layers.Linear(16, 32), layers.ReLU(), layers.Linear(32, 4)), (8, 16)),
    "model_analysis_torch": _model_analysis,
    "clocks": fastbench.clocks,
}
NEEDS_TORCH = {"model_analysis_torch"}
# Objects whose str() is their repr by design (no report of their own: a table of clocks,
# one row of a suite).
STR_IS_REPR = {"clocks", "suite_variant"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_str_is_the_report_and_repr_one_short_line(case: str) -> None:
    if case in NEEDS_TORCH and importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch")
    obj = CASES[case]()
    text, short = str(obj), repr(obj)
    assert "\n" not in short and len(short) < 300, short
    assert short.startswith(f"<{type(obj).__name__}") and short.endswith(">"), short
    lines = getattr(obj, "lines", None)
    if callable(lines):
        assert text == "\n".join(lines())
    elif case not in STR_IS_REPR:
        # A report, not the dataclass's dump of its fields.
        assert text != short and not text.startswith(f"{type(obj).__name__}("), text[:200]


def test_a_server_run_prints_its_report_not_its_timestamps() -> None:
    res = server(SPIN, 2000.0, min_queries=2000, min_duration_s=0.1)
    assert len(res.arrivals_ns) >= 2000
    assert str(res) == "\n".join(res.lines())
    assert str(res).startswith(f"Server: {res.queries} queries")
    assert len(repr(res)) < 300 and str(res.arrivals_ns[-1]) not in repr(res)


def test_brief_repr_is_one_escaped_line_cut_to_its_limit() -> None:
    class Thing:
        pass

    assert brief_repr(Thing(), "a\nb\x1b[2J  c") == "<Thing a b\\x1b[2J c>"
    long = brief_repr(Thing(), "x" * 1000)
    assert len(long) == BRIEF_REPR_CHARS and long.endswith("...>")
    assert brief_repr(Thing(), "") == "<Thing>"


def test_repr_and_str_of_a_measurement_name_its_median() -> None:
    m = BUILDERS["measurement"][0]()
    assert fastbench.units.format_ns(m.median_ns) in repr(m)
    assert repr(m).startswith("<Measurement 'm': ")
    assert np.isfinite(m.median_ns) and str(m) != repr(m)
