"""Tests that pin the raw binding fastbench._core: names and signatures, error types across
the boundary, the stub against the built module (mypy's stubtest), that the GIL is released
where the binding says so, and that the objects a Sampler points into stay alive.
"""

from __future__ import annotations

import ast
import ctypes
import gc
import importlib.util
import math
import platform
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import fastbench
from fastbench import _core

TESTS_DIR = Path(__file__).resolve().parent

# name -> [(parameter, default or _REQUIRED)], as documented in _core.pyi.
_REQUIRED = object()
FUNCTIONS: dict[str, list[tuple[str, Any]]] = {
    "cpu_features": [],
    "isa_names": [],
    "best_isa": [],
    "active_isa": [],
    "_isa_cap": [],
    "_set_isa_cap": [("isa", _REQUIRED)],
    "tsc_usable": [],
    "calibrate_tsc": [("windows", 7), ("window_s", 0.01)],
    "tsc_calibration": [],
    "clock_info": [("name", _REQUIRED)],
    "auto_clock": [],
    "read_cost_ns": [("kind", _REQUIRED), ("reps", 1000)],
    "ticks_to_ns": [("clock", _REQUIRED), ("ticks", _REQUIRED)],
    "read_start": [("clock", _REQUIRED)],
    "read_stop": [("clock", _REQUIRED)],
    "spin": [("ns", _REQUIRED)],
    "spin_duration_ns": [("ns", _REQUIRED), ("reps", 1000)],
    "make_spin": [("ns", _REQUIRED)],
}
SAMPLER_METHODS: dict[str, list[tuple[str, Any]]] = {
    "calls": [("fn", _REQUIRED), ("args", _REQUIRED), ("kwargs", _REQUIRED), ("clock", _REQUIRED)],
    "inner": [("fn", _REQUIRED), ("clock", _REQUIRED)],
    "empty": [("clock", _REQUIRED)],
    "calibrate": [("self", _REQUIRED), ("min_time_s", _REQUIRED), ("max_loops", 1 << 40)],
    "run": [("self", _REQUIRED), ("loops", _REQUIRED), ("samples", _REQUIRED), ("max_time_s", 0.0)],
}
# class -> {read-only attribute: type}, as documented in _core.pyi.
CLASS_ATTRS: dict[str, dict[str, type]] = {
    "CpuFeatures": {
        "x86": bool, "vendor": str, "brand": str, "sse2": bool, "sse4_2": bool, "avx": bool,
        "avx2": bool, "fma": bool, "avx512f": bool, "avx512bw": bool, "avx512dq": bool,
        "avx512vl": bool, "rdtscp": bool, "invariant_tsc": bool, "hypervisor": bool,
    },
    "TscCalibration": {
        "hz": float, "spread_rel": float, "mad_rel": float, "window_s": float, "window_hz": list,
    },
    "ClockInfo": {
        "name": str, "available": bool, "steady": bool, "invariant": bool, "frequency_hz": float,
        "resolution_ns": float, "read_overhead_ns": float, "pair_overhead_ns": float, "note": str,
    },
    "Calibration": {"loops": int, "sample_ns": float, "trials": int, "target_ns": float},
    "SampleRun": {"sample_ns": list, "budget_exhausted": bool, "elapsed_s": float},
}


# -- signatures -------------------------------------------------------------------------------
def _split_top_level(text: str) -> list[str]:
    """Split at commas that are not inside brackets."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def _doc_signature(obj: Any) -> tuple[str, list[tuple[str, Any]]]:
    """(name, [(parameter, default)]) from a pybind11 docstring's first line."""
    first = obj.__doc__.splitlines()[0]
    name, rest = first.split("(", 1)
    depth, end = 1, 0
    for end, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            break
    params = []
    for part in _split_top_level(rest[:end]):
        pname = part.split(":", 1)[0].split("=", 1)[0].strip()
        default = ast.literal_eval(part.rsplit(" = ", 1)[1]) if " = " in part else _REQUIRED
        params.append((pname, default))
    return name.strip(), params


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_exists_with_documented_signature(name: str) -> None:
    fn = getattr(_core, name)
    assert callable(fn)
    doc_name, params = _doc_signature(fn)
    assert doc_name == name
    assert params == FUNCTIONS[name]


@pytest.mark.parametrize("name", sorted(SAMPLER_METHODS))
def test_sampler_method_has_documented_signature(name: str) -> None:
    doc_name, params = _doc_signature(getattr(_core.Sampler, name))
    assert doc_name == name
    assert params == SAMPLER_METHODS[name]


def test_functions_accept_their_documented_keywords(require_tsc: None) -> None:
    assert isinstance(_core.cpu_features(), _core.CpuFeatures)
    assert isinstance(_core.tsc_usable(), bool)
    assert isinstance(_core.calibrate_tsc(windows=3, window_s=0.001), _core.TscCalibration)
    assert isinstance(_core.tsc_calibration(), _core.TscCalibration)
    assert isinstance(_core.clock_info(name="steady"), _core.ClockInfo)
    assert isinstance(_core.read_cost_ns(kind="steady", reps=10), float)
    assert _core.ticks_to_ns(clock="steady", ticks=5.0) == 5.0
    assert isinstance(_core.read_start(clock="tsc"), int)
    assert isinstance(_core.read_stop(clock="tsc"), int)
    assert _core.spin(ns=10.0) is None
    assert isinstance(_core.spin_duration_ns(ns=10.0, reps=3), float)
    assert callable(_core.make_spin(ns=10.0))


def test_sampler_methods_accept_their_documented_keywords() -> None:
    def inner(loops: int) -> int:
        return 0

    calls = _core.Sampler.calls(fn=_core.noop, args=(), kwargs={}, clock="steady")
    assert isinstance(calls, _core.Sampler)
    assert isinstance(_core.Sampler.inner(fn=inner, clock="steady"), _core.Sampler)
    empty = _core.Sampler.empty(clock="steady")
    cal = empty.calibrate(min_time_s=1e-4, max_loops=1 << 30)
    assert isinstance(cal, _core.Calibration)
    run = calls.run(loops=3, samples=2, max_time_s=0.0)
    assert isinstance(run, _core.SampleRun)
    assert len(run.sample_ns) == 2


def test_auto_clock_is_a_pair_of_strings() -> None:
    pair = _core.auto_clock()
    assert isinstance(pair, tuple) and len(pair) == 2
    assert pair[0] in ("steady", "tsc")
    assert isinstance(pair[1], str) and pair[1]


def test_version_matches_package() -> None:
    assert _core.__version__ == fastbench.__version__


def _instance(cls_name: str) -> Any:
    if cls_name == "CpuFeatures":
        return _core.cpu_features()
    if cls_name == "TscCalibration":
        if not _core.tsc_usable():
            pytest.skip("no usable TSC: calibrate_tsc cannot run")
        return _core.calibrate_tsc(3, 0.001)
    if cls_name == "ClockInfo":
        return _core.clock_info("steady")
    if cls_name == "Calibration":
        return _core.Sampler.empty("steady").calibrate(1e-4)
    return _core.Sampler.empty("steady").run(10, 2)


@pytest.mark.parametrize("cls_name", sorted(CLASS_ATTRS))
def test_class_attributes_are_typed_and_read_only(cls_name: str) -> None:
    obj = _instance(cls_name)
    assert type(obj) is getattr(_core, cls_name)
    for attr, typ in CLASS_ATTRS[cls_name].items():
        value = getattr(obj, attr)
        assert type(value) is typ, (attr, type(value))
        with pytest.raises(AttributeError):
            setattr(obj, attr, value)


@pytest.mark.parametrize("cls_name", [*sorted(CLASS_ATTRS), "Sampler"])
def test_classes_cannot_be_constructed_from_python(cls_name: str) -> None:
    with pytest.raises(TypeError):
        getattr(_core, cls_name)()


def test_sampler_clock_property() -> None:
    assert _core.Sampler.empty("steady").clock == "steady"
    if _core.tsc_usable():
        assert _core.Sampler.empty("tsc").clock == "tsc"


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install mypy)"
)
def test_stub_matches_module(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable, "-m", "mypy.stubtest", "fastbench._core",
            "--allowlist", str(TESTS_DIR / "stubtest-allowlist.txt"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the ISA dispatch ---------------------------------------------------------------------------
def _proc_cpuinfo_flags() -> set[str] | None:
    """The first processor's flags in /proc/cpuinfo (Linux), None where there are none."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return None


def test_isa_names_are_ordered_narrowest_first() -> None:
    assert _core.isa_names() == ["portable", "avx2", "avx512", "amx"]
    for fn in (_core.best_isa, _core.active_isa, _core._isa_cap):
        assert fn() in _core.isa_names()


def _tile_state_granted() -> bool:
    """Whether Linux grants this process the AMX tile data state: arch_prctl
    ARCH_GET_XCOMP_PERM (0x1022) lists the permitted state components, XTILEDATA is bit 18.
    fastbench asked for it when it detected the ISA (ARCH_REQ_XCOMP_PERM)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    mask = ctypes.c_uint64(0)
    sys_arch_prctl = 158
    if libc.syscall(sys_arch_prctl, 0x1022, ctypes.byref(mask)) != 0:
        return False  # a kernel before 5.16: no dynamic state, no tiles
    return bool(mask.value >> 18 & 1)


def test_best_isa_follows_the_cpu_features() -> None:
    f = _core.cpu_features()
    if f.avx2 and f.fma and f.avx512f and f.avx512bw and f.avx512dq and f.avx512vl:
        # Tiles also need the OS to grant this process their state (Linux 5.16 and later).
        want = "amx" if f.amx_tile and f.amx_bf16 and _tile_state_granted() else "avx512"
    elif f.avx2 and f.fma:
        want = "avx2"
    else:
        want = "portable"
    assert _core.best_isa() == want


def test_best_isa_agrees_with_proc_cpuinfo() -> None:
    flags = _proc_cpuinfo_flags()
    if flags is None:
        pytest.skip("no flags line in /proc/cpuinfo (not Linux)")
    # The kernel lists AVX flags only where it also enables their register state (XCR0).
    if {"avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        want = ("amx" if {"amx_tile", "amx_bf16"} <= flags and _tile_state_granted()
                else "avx512")
    elif {"avx2", "fma"} <= flags:
        want = "avx2"
    else:
        want = "portable"
    assert _core.best_isa() == want, sorted(f for f in flags if f.startswith(("avx", "fma")))


@pytest.mark.parametrize("cap", ["portable", "avx2", "avx512", "amx"])
def test_isa_cap_bounds_the_active_isa(cap: str) -> None:
    names = _core.isa_names()
    best = _core.best_isa()
    before = _core._isa_cap()
    assert before == "amx"  # uncapped unless a test caps it
    try:
        _core._set_isa_cap(isa=cap)
        assert _core._isa_cap() == cap
        assert _core.active_isa() == min(cap, best, key=names.index)
        assert _core.best_isa() == best  # what the machine allows is never capped
    finally:
        _core._set_isa_cap(before)
    assert _core.active_isa() == _core.best_isa()


def test_set_isa_cap_unknown_name_is_value_error() -> None:
    with pytest.raises(ValueError, match=r"\[_set_isa_cap\] ISA is 'bogus'"):
        _core._set_isa_cap("bogus")
    with pytest.raises(TypeError):
        _core._set_isa_cap(2)  # type: ignore[arg-type]


# -- errors across the boundary ---------------------------------------------------------------
@pytest.mark.parametrize(
    "call",
    [
        lambda: _core.clock_info("bogus"),
        lambda: _core.ticks_to_ns("bogus", 1.0),
        lambda: _core.read_start("bogus"),
        lambda: _core.read_stop("bogus"),
        lambda: _core.Sampler.empty("bogus"),
        lambda: _core.Sampler.calls(_core.noop, (), {}, "bogus"),
        lambda: _core.Sampler.inner(lambda loops: 0, "bogus"),
    ],
    ids=["clock_info", "ticks_to_ns", "read_start", "read_stop", "empty", "calls", "inner"],
)
def test_unknown_clock_name_is_value_error(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError, match="bogus"):
        call()


def test_read_cost_ns_errors() -> None:
    with pytest.raises(ValueError, match="bogus"):
        _core.read_cost_ns("bogus")
    with pytest.raises(ValueError):
        _core.read_cost_ns("steady", reps=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"windows": 2},
        {"windows": 3, "window_s": 0.0},
        {"windows": 3, "window_s": -0.01},
        {"windows": 3, "window_s": float("nan")},
        {"windows": 3, "window_s": float("inf")},
    ],
)
def test_calibrate_tsc_bad_arguments(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="calibrate_tsc"):
        _core.calibrate_tsc(**kwargs)


def test_sampler_calls_rejects_non_callable() -> None:
    with pytest.raises(TypeError, match="not callable"):
        _core.Sampler.calls(42, (), {}, "steady")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"loops": 0, "samples": 1},
        {"loops": 1, "samples": 0},
        {"loops": 1, "samples": 1, "max_time_s": float("nan")},
        {"loops": 1, "samples": 1, "max_time_s": float("inf")},
    ],
)
def test_sampler_run_bad_arguments(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="run_samples"):
        _core.Sampler.empty("steady").run(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_time_s": float("nan")},
        {"min_time_s": float("inf")},
        {"min_time_s": 0.0},
        {"min_time_s": -1.0},
        {"min_time_s": 0.001, "max_loops": 0},
    ],
)
def test_sampler_calibrate_bad_arguments(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="calibrate_loops"):
        _core.Sampler.empty("steady").calibrate(**kwargs)


def test_sampler_calibrate_overflow_when_max_loops_cannot_reach_target() -> None:
    # Ten empty iterations cannot last a second: documented as std::overflow_error.
    with pytest.raises(OverflowError, match="fixed loops"):
        _core.Sampler.empty("steady").calibrate(min_time_s=1.0, max_loops=10)


@pytest.mark.parametrize("ns", [-1.0, float("nan"), float("inf"), 2e12])
def test_make_spin_bad_duration(ns: float) -> None:
    with pytest.raises(ValueError, match="make_spin"):
        _core.make_spin(ns)


@pytest.mark.parametrize("ns", [-1.0, float("nan"), float("inf")])
def test_spin_bad_duration(ns: float) -> None:
    with pytest.raises(ValueError):
        _core.spin(ns)
    with pytest.raises(ValueError):
        _core.spin_duration_ns(ns)


@pytest.mark.parametrize("call", ["spin(2e12)", "spin_duration_ns(2e12, reps=1)"])
def test_spin_rejects_durations_above_the_limit(call: str) -> None:
    # Above 1e12 ns (like make_spin). In a subprocess: if the limit is missing, the call
    # busy-waits for half an hour with no way to interrupt it.
    code = (
        "from fastbench import _core\n"
        f"try:\n    _core.{call}\nexcept ValueError:\n    print('ValueError')"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=10
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"_core.{call} did not raise: it busy-waited past the 10 s timeout")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ValueError"


def test_spin_duration_ns_rejects_zero_reps() -> None:
    with pytest.raises(ValueError):
        _core.spin_duration_ns(10.0, reps=0)


@pytest.mark.parametrize(
    ("result", "error"),
    [
        (-1, OverflowError),
        (2**70, OverflowError),
        (1.5, TypeError),
        (None, TypeError),
        ("7", TypeError),
    ],
)
def test_sampler_inner_bad_return_raises(result: object, error: type[Exception]) -> None:
    def inner(loops: int) -> object:
        return result

    sampler = _core.Sampler.inner(inner, "steady")
    with pytest.raises(error):
        sampler.run(loops=1, samples=3)
    with pytest.raises(error):
        sampler.calibrate(min_time_s=0.001)


def test_sampler_inner_non_callable_raises_type_error_when_run() -> None:
    sampler = _core.Sampler.inner(42, "steady")
    with pytest.raises(TypeError):
        sampler.run(loops=1, samples=1)


def test_sampler_inner_passes_loops_and_converts_ticks() -> None:
    seen: list[int] = []

    def inner(loops: int) -> int:
        seen.append(loops)
        return 1000 * loops  # steady ticks are ns

    run = _core.Sampler.inner(inner, "steady").run(loops=17, samples=4)
    assert seen == [17] * 4
    assert run.sample_ns == [17000.0] * 4


def test_sampler_calls_exception_propagates() -> None:
    err = ZeroDivisionError("from fn")

    def fn() -> None:
        raise err

    with pytest.raises(ZeroDivisionError) as info:
        _core.Sampler.calls(fn, (), {}, "steady").run(loops=5, samples=2)
    assert info.value is err


def test_non_string_keyword_name_is_type_error() -> None:
    sampler = _core.Sampler.calls(lambda **kw: None, (), {1: 2}, "steady")
    with pytest.raises(TypeError):
        sampler.run(loops=1, samples=1)


# -- what the native loop calls ---------------------------------------------------------------
class _Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.seen: list[tuple[tuple[object, ...], dict[str, object]]] = []

    def bump(self, *args: object, **kwargs: object) -> None:
        self.calls += 1
        if len(self.seen) < 3:
            self.seen.append((args, kwargs))


def test_sampler_calls_fn_loops_times_samples_with_bound_arguments() -> None:
    counter = _Counter()
    sampler = _core.Sampler.calls(counter.bump, (1, "two"), {"three": 3.0}, "steady")
    run = sampler.run(loops=13, samples=5)
    assert counter.calls == 13 * 5
    assert counter.seen[0] == ((1, "two"), {"three": 3.0})
    assert len(run.sample_ns) == 5
    assert all(ns > 0 for ns in run.sample_ns)


def test_sampler_keeps_its_callable_and_arguments_alive() -> None:
    counter = _Counter()
    arg = _Counter()  # any object with a weakref slot
    counter_ref, arg_ref = weakref.ref(counter), weakref.ref(arg)
    sampler = _core.Sampler.calls(counter.bump, (arg,), {"k": arg}, "steady")
    del counter, arg
    gc.collect()
    assert counter_ref() is not None and arg_ref() is not None
    sampler.run(loops=4, samples=2)
    counter = counter_ref()
    assert counter is not None and counter.calls == 8
    assert counter.seen[0] == ((arg_ref(),), {"k": arg_ref()})
    del counter, sampler
    gc.collect()
    assert counter_ref() is None and arg_ref() is None  # and nothing leaks


def test_sampler_calls_keyword_values_survive_mutation_of_the_kwargs_dict() -> None:
    # The Sampler keeps the kwargs dict but the native body holds borrowed pointers to its
    # values: clearing the dict frees them while the body still points at them. Run in a
    # subprocess, since a use-after-free may crash the interpreter.
    code = textwrap.dedent(
        """
        import gc
        from fastbench import _core

        class Marker:
            def __init__(self, v):
                self.v = v

        seen = []
        kwargs = {"a": Marker("marker-" + str(12345))}
        sampler = _core.Sampler.calls(lambda a: seen.append(a), (), kwargs, "steady")
        kwargs.clear()
        gc.collect()
        junk = [Marker(i) for i in range(20000)]
        sampler.run(loops=1, samples=1)
        print(type(seen[0]).__name__, getattr(seen[0], "v", None))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Marker marker-12345"


def test_noop_accepts_anything_and_returns_none() -> None:
    assert _core.noop() is None
    assert _core.noop(1, "x", None) is None
    assert _core.noop(1, a=2, b=[3]) is None
    assert _core.noop(*range(50), **{f"k{i}": i for i in range(20)}) is None


def test_make_spin_returns_callable_that_ignores_arguments() -> None:
    spin = _core.make_spin(100.0)
    assert callable(spin)
    assert spin() is None
    assert spin(1, 2, x=3) is None
    assert spin(*range(10), **{"ns": -1}) is None  # "ns" is not re-read at call time


def test_make_spin_busy_waits_about_the_given_time() -> None:
    spin = _core.make_spin(2e6)
    best = math.inf
    # The spin waits for the TSC, so preemption only makes a call longer: the shortest of a
    # few calls is the spin's own length. On a busy machine most 2 ms calls are preempted,
    # so keep trying (up to 50 calls, 0.1 s of spinning) until one runs uninterrupted.
    for _ in range(50):
        t0 = time.perf_counter_ns()
        spin()
        best = min(best, time.perf_counter_ns() - t0)
        if best <= 1.25 * 2e6:
            break
    assert 0.75 * 2e6 <= best <= 1.25 * 2e6


def test_spin_duration_ns_is_close_to_request() -> None:
    # The spin is fenced, so its true duration exceeds the request by at most a few reads.
    for ns in (1e4, 1e5):
        best = min(_core.spin_duration_ns(ns, reps=5) for _ in range(5))
        assert 0.999 * ns <= best <= 1.25 * ns


# -- the GIL ----------------------------------------------------------------------------------
@pytest.fixture
def short_switch_interval() -> Iterator[None]:
    """A short GIL switch interval, so a GIL-holding call starves the other thread for only
    about one interval around its edges."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _background_progress(blocking_call: Callable[[], object]) -> int:
    """How many times a Python thread counts while the main thread runs ``blocking_call``."""
    stop = threading.Event()
    started = threading.Event()
    count = [0]

    def work() -> None:
        started.set()
        while not stop.is_set():
            count[0] += 1

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        started.wait(5.0)
        time.sleep(0.01)
        before = count[0]
        blocking_call()
        after = count[0]
    finally:
        stop.set()
        thread.join(5.0)
    return after - before


def test_spin_releases_the_gil(short_switch_interval: None) -> None:
    released = _background_progress(lambda: _core.spin(0.3e9))
    # The same 0.3 s of busy-waiting, but inside a Sampler run, which holds the GIL.
    sampler = _core.Sampler.calls(_core.make_spin(1e5), (), {}, "steady")
    held = _background_progress(lambda: sampler.run(loops=3000, samples=1))
    assert released > 1000
    assert released > 5 * held, (released, held)


@pytest.mark.parametrize(
    "call",
    [
        lambda: _core.calibrate_tsc(windows=3, window_s=0.1),
        lambda: _core.spin_duration_ns(3e7, reps=10),
    ],
    ids=["calibrate_tsc", "spin_duration_ns"],
)
def test_other_long_native_calls_release_the_gil(
    call: Callable[[], object], short_switch_interval: None
) -> None:
    if not _core.tsc_usable():
        pytest.skip("no usable TSC: calibrate_tsc cannot run")
    assert _background_progress(call) > 1000


@pytest.mark.parametrize(
    "call",
    [
        lambda: _core.peak_flops("float64", 1, False, 0.3),
        lambda: _core.bandwidth("copy", 1 << 20, 1, 0.3),
        lambda: _core.core_hz(0.3),
    ],
    ids=["peak_flops", "bandwidth", "core_hz"],
)
def test_kernels_hold_the_gil_only_to_check_for_signals(
    call: Callable[[], object], short_switch_interval: None
) -> None:
    # Every 10 ms or more the kernel takes the GIL back for a moment to run Python's signal
    # handlers (so Ctrl-C stops it); the rest of the time another thread runs.
    assert _background_progress(call) > 1000
