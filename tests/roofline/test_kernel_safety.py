"""The calibration kernels against hostile use: an output that shares memory with an input,
absurd thread counts and parameters, a fork after the thread pool started, and Ctrl-C in the
middle of long native work. Results are checked against numpy; interrupts and forks run in a
child process, so that a kernel that ignores them fails the test instead of hanging pytest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from fastbench import _core, kernels


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / np.abs(want).max())


# -- an output sharing memory with an input ---------------------------------------------------
def _overlapping(dtype: type[np.floating[Any]]) -> list[tuple[str, np.ndarray, np.ndarray,
                                                              np.ndarray]]:
    """(label, a, b, out) where out shares memory with a or b: the same array, views of one
    buffer that overlap in part, and a transposed view. 600 is past one cache block of k and
    of m, so that even one thread writes rows of C before it has read all of A and B."""
    rng = np.random.default_rng(7)
    n = 600

    def new(rows: int = n) -> np.ndarray:
        return rng.standard_normal((rows, n)).astype(dtype)

    a, b = new(), new()
    a_rows, b_rows, square = new(n + n // 2), new(n + n // 2), new()
    return [("out=a", a, new(), a),
            ("out=b", new(), b, b),
            ("a and out overlap", a_rows[:n], new(), a_rows[n // 2:]),
            ("b and out overlap", new(), b_rows[:n], b_rows[n // 2:]),
            ("a is out transposed", square.T, new(), square)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_with_out_overlapping_an_input_matches_numpy(dtype: type[np.floating[Any]],
                                                          threads: int) -> None:
    tol = 1e-4 if dtype == np.float32 else 1e-11
    for label, a, b, out in _overlapping(dtype):
        assert np.may_share_memory(out, a) or np.may_share_memory(out, b), label
        want = a.astype(np.float64) @ b.astype(np.float64)
        got = kernels.gemm(a, b, out=out, threads=threads)
        assert got is out
        assert _relative_error(got.astype(np.float64), want) < tol, label


def test_gemm_with_beta_reads_out_before_overwriting_an_input() -> None:
    rng = np.random.default_rng(9)
    a = rng.standard_normal((150, 150))
    b = rng.standard_normal((150, 150))
    want = 2.0 * (a @ b) + 0.5 * a
    kernels.gemm(a, b, out=a, alpha=2.0, beta=0.5, threads=2)
    assert _relative_error(a, want) < 1e-12


def test_raw_gemm_refuses_an_output_sharing_an_input() -> None:
    a = np.ones((64, 64))
    with pytest.raises(ValueError, match=r"\[gemm\] c shares memory with a"):
        _core.gemm_f64(a, np.ones((64, 64)), a)
    buf = np.ones((96, 64), np.float32)
    with pytest.raises(ValueError, match=r"\[gemm\] c shares memory with b"):
        _core.gemm_f32(np.ones((64, 64), np.float32), buf[:64], buf[32:])


# -- the thread pool -------------------------------------------------------------------------
def _threads_alive() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_pool_is_bounded_and_a_call_wakes_only_the_workers_it_uses() -> None:
    most = _core.max_threads()
    assert most == 8 * _core.hardware_threads()
    a = np.ones((256, 256))
    before = _threads_alive()
    with pytest.raises(ValueError, match=f"threads must be .* from 1 to {most}"):
        kernels.gemm(a, a, threads=max(1000, most + 1))
    kernels.gemm(a, a, threads=most)
    workers, woken = _core._pool_stats()
    assert workers == most - 1
    assert _threads_alive() - before <= most - 1
    for _ in range(5):
        kernels.peak_flops("float64", threads=2, min_time_s=0.002)
    assert _core._pool_stats() == (most - 1, woken + 5)


@pytest.mark.parametrize("call", [
    lambda t: kernels.gemm(np.ones((2, 2)), np.ones((2, 2)), threads=t),
    lambda t: kernels.conv2d(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 2, 2), np.float32),
                             threads=t),
    lambda t: kernels.bandwidth("copy", 1 << 16, threads=t),
    lambda t: kernels.peak_flops("float32", threads=t),
], ids=["gemm", "conv2d", "bandwidth", "peak_flops"])
@pytest.mark.parametrize("threads", [2**31, 2**64, None])
def test_kernel_threads_out_of_range_name_the_argument_and_range(
        call: Callable[[int], object], threads: int | None) -> None:
    count = _core.max_threads() + 1 if threads is None else threads
    with pytest.raises(ValueError, match=rf"threads must be .* from 1 to {_core.max_threads()}"):
        call(count)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"stride": 1.0}, TypeError, "stride must be an int or a pair of ints, got float 1.0"),
    ({"padding": "1"}, TypeError, "padding must be an int or a pair of ints, got str"),
    ({"dilation": (1, 1.5)}, TypeError, "dilation must be an int or a pair of ints"),
    ({"stride": 2**64}, ValueError, "stride must be at most"),
    ({"padding": (0, 2**70)}, ValueError, "padding must be at most"),
    ({"groups": 2**64}, ValueError, "groups must be an int from 1 to"),
])
def test_conv2d_parameters_of_the_wrong_kind_get_clear_errors(kwargs: dict[str, Any],
                                                              error: type[Exception],
                                                              match: str) -> None:
    with pytest.raises(error, match=match):
        kernels.conv2d(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 2, 2), np.float32),
                       **kwargs)


def test_bandwidth_working_set_beyond_any_size_gets_a_clear_error() -> None:
    with pytest.raises(ValueError, match="nbytes must be an int from 1 to"):
        kernels.bandwidth("copy", 2**64)


# -- child processes -----------------------------------------------------------------------
def _run_child(script: str, timeout_s: float) -> dict[str, Any]:
    """Runs ``script`` in a fresh interpreter; returns the JSON object it printed last."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=timeout_s)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_kernels_run_in_a_child_forked_after_the_pool_started() -> None:
    a = np.ones((128, 128))
    kernels.gemm(a, a, threads=2)  # the pool has a worker now
    with warnings.catch_warnings():
        # Python 3.12+ warns about fork() in a process with threads: that is the point here.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            c = kernels.gemm(a, a, threads=2)
            y = kernels.conv2d(np.ones((1, 4, 16, 16), np.float32),
                               np.ones((8, 4, 3, 3), np.float32), threads=2)
            kernels.bandwidth("triad", 1 << 20, threads=2, min_time_s=0.005)
            kernels.peak_flops("float32", threads=2, min_time_s=0.005)
            code = 0 if np.all(c == 128.0) and np.all(y == 36.0) else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60.0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in a kernel")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0


# Runs one long kernel and sends itself SIGINT 0.3 s in; prints how long the
# KeyboardInterrupt took to arrive after the signal, and what was left of `out`.
_INTERRUPT_CHILD = """
import json, os, signal, threading, time
import numpy as np
from fastbench import _core, kernels

case = {case!r}
out = None
if case == "gemm":
    a = np.ones((4096, 4096))
    out = np.full((4096, 4096), np.nan)
    run = lambda: kernels.gemm(a, a, out=out, threads=1)
elif case == "conv2d":
    x = np.ones((2, 1024, 128, 128), np.float32)
    w = np.ones((1024, 1024, 3, 3), np.float32)
    run = lambda: kernels.conv2d(x, w, padding=1, threads=1)
elif case == "bandwidth":
    run = lambda: kernels.bandwidth("triad", 1 << 24, threads=2, min_time_s=30.0)
elif case == "peak_flops":
    run = lambda: kernels.peak_flops("float32", threads=2, min_time_s=30.0)
else:
    run = lambda: _core.core_hz(30.0)
sent = []
def interrupt():
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
threading.Timer(0.3, interrupt).start()
started = time.perf_counter()
try:
    run()
    result = {{"interrupted": False, "ran_s": time.perf_counter() - started}}
except KeyboardInterrupt:
    result = {{"interrupted": True, "latency_s": time.perf_counter() - sent[0],
              "unwritten": None if out is None else int(np.isnan(out).sum())}}
print(json.dumps(result))
"""


@pytest.mark.parametrize("case", ["gemm", "conv2d", "bandwidth", "peak_flops", "core_hz"])
def test_ctrl_c_stops_long_native_kernels(case: str) -> None:
    # Uninterrupted, each runs for seconds (a 4096² float64 GEMM on one thread, 0.6 TFLOP of
    # convolution) or 30 s; a kernel that ignored the signal would raise only at its end.
    result = _run_child(_INTERRUPT_CHILD.format(case=case), timeout_s=120.0)
    assert result["interrupted"], result
    assert result["latency_s"] < 2.0, result
    if case == "gemm":  # stopped in the middle: part of out never written
        assert result["unwritten"] > 0, result
