"""Data loading in fastbench.profile: a DataLoader's fetches of batches (torch's
record_function range around each iterator step) are one item, "data loading", in the op,
family and region tables, without any user code. Checked on hand-built timelines worked out
by hand, and on training loops over a DataLoader whose items spin a known time, against the
fetch times the loop measures itself around ``next(it)`` (the same steps, the same run)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

from fastbench import _core  # noqa: E402
from fastbench.profiling import NOT_IN_OP, OUTSIDE, Overhead, Profile, profile  # noqa: E402
from fastbench.profiling.result import DATA_LOADING  # noqa: E402
from fastbench.pytorch.profiler import _build, _OpInfo  # noqa: E402
from fastbench.pytorch.timeline import (COST, END, LOAD_IN, LOAD_OUT, OP, REGION_IN,  # noqa: E402
                                        REGION_OUT, START, STEP, is_data_loading,
                                        merge_native, script_of)

FETCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
MARKED, USER = 2, 3   # the observer's kinds of range (observer.cpp): an op, a record_function


def test_is_data_loading_names_the_dataloaders_ranges() -> None:
    assert is_data_loading(FETCH)
    assert is_data_loading("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")
    assert not is_data_loading("Optimizer.step#SGD.step")
    assert not is_data_loading("data loading")


def test_merge_native_widens_a_fetch_to_the_ops_that_open_and_close_it() -> None:
    # The first step (dispatch layer): the fetch's opening op, a stack, its closing op.
    ops = [("profiler::_record_function_enter_new", ""), ("aten::stack", "((16,), (16,))"),
           ("profiler::_record_function_exit", "")]
    marks = [(START, 0), (LOAD_IN, 10, FETCH),
             (OP, 10, 20, 0, OUTSIDE, "", "", 0, 0.0), (OP, 40, 50, 1, OUTSIDE, "", "", 0, 0.0),
             (OP, 80, 90, 2, OUTSIDE, "", "", 0, 0.0), (LOAD_OUT, 90, FETCH), (END, 100),
             (START, 1000), (END, 1100)]
    keys = [*ops, (FETCH, ""), ("Optimizer.step#SGD.step", "")]
    # Timed step: the fetch's range opens inside the opening op (1015) and closes inside
    # the closing one (1085), each counted on its op (nested 1); an optimizer's range
    # outside any op costs its callbacks around it.
    times = np.array([[1010, 1020], [1040, 1050], [1080, 1090], [1015, 1085], [1095, 1098]])
    ints = np.array([[0, 0, MARKED, 1], [1, 0, MARKED, 0], [2, 0, MARKED, 1],
                     [3, 0, USER, 0], [4, 0, USER, 0]], dtype=np.int32)
    learnt = {op: i for i, op in enumerate(ops)}
    script = script_of(marks, lambda i: ops[i][0])
    out = merge_native(marks, times, ints, keys, learnt, lambda n, s: -1, script,
                       per_range_ns=200.0, per_inner_ns=100.0)
    assert out[out.index((START, 1000)):] == [
        (START, 1000),
        (LOAD_IN, 1010, FETCH),            # the opening op's start, and before it
        (OP, 1010, 1020, 0, OUTSIDE, "", "", 0, 100.0),
        (OP, 1040, 1050, 1, OUTSIDE, "", "", 0, 0.0),
        (OP, 1080, 1090, 2, OUTSIDE, "", "", 0, 100.0),
        (LOAD_OUT, 1090, FETCH),           # the closing op's end
        (COST, 1095, 100.0), (COST, 1098, 100.0),   # half a range each end
        (END, 1100)]


def _info(name: str) -> _OpInfo:
    return _OpInfo(name, "", 0.0, 0.0, "float32")


def test_build_puts_a_fetch_and_its_ops_in_data_loading_by_hand() -> None:
    table = [_info("profiler::_record_function_enter_new"), _info("aten::stack"),
             _info("profiler::_record_function_exit"), _info("aten::addmm")]
    events = [(START, 0), (LOAD_IN, 100, FETCH),
              (OP, 100, 110, 0, OUTSIDE, "", "", 0, 0.0),
              (OP, 200, 300, 1, OUTSIDE, "", "", 0, 0.0),
              (OP, 400, 410, 2, OUTSIDE, "", "", 0, 0.0), (LOAD_OUT, 410, FETCH),
              (OP, 500, 600, 3, "", "forward", "", 0, 0.0), (STEP, 700)]
    # Observing an op costs 20 ns, 10 each side of its window, none inside.
    overhead = Overhead(20e-9, 0.0, 0.0, 0.0)
    cells, net, gross, trace, tail = _build(events, table, overhead, 0)
    got = {(c.op, c.module, c.region): (round(float(c.times[0]) * 1e9), c.calls)
           for c in cells}
    # The fetch: 10 (opening op) + 110..200 less the two ops' 10 (70) + 100 (stack)
    # + 300..400 less 20 (80) + 10 (closing op); one call, the fetch. Outside it: 0..100
    # less the opening op's 10 before it (90), 410..500 less 20 (70), 600..700 less 10 (90).
    assert got == {(DATA_LOADING, OUTSIDE, DATA_LOADING): (270, 1),
                   (NOT_IN_OP, OUTSIDE, ""): (250, 0),
                   ("aten::addmm", "", ""): (100, 1)}
    assert net[0] * 1e9 == pytest.approx(620) and gross[0] * 1e9 == pytest.approx(700)
    assert tail == 0
    assert [(e.name, e.start_ns, e.dur_ns) for e in trace if e.cat == "region"] == \
        [(DATA_LOADING, 100, 310)]


def test_build_keeps_the_users_region_and_leaves_a_last_fetch_out_quietly() -> None:
    table = [_info("profiler::_record_function_enter_new"),
             _info("profiler::_record_function_exit")]
    fetch = [(LOAD_IN, 0, FETCH), (OP, 0, 10, 0, OUTSIDE, "", "batch", 0, 0.0),
             (OP, 90, 100, 1, OUTSIDE, "", "batch", 0, 0.0), (LOAD_OUT, 100, FETCH)]
    events = [(START, 0), (REGION_IN, 0, "batch"), *fetch, (REGION_OUT, 100, "batch"),
              (STEP, 200),
              # The fetch that ends a ``for`` loop (StopIteration) after the last step.
              *[(e[0], e[1] + 300, *e[2:]) for e in fetch]]
    cells, net, _, _, tail = _build(events, table, Overhead(0.0, 0.0, 0.0, 0.0), 0)
    times = {(c.op, c.region): round(float(c.times[0]) * 1e9) for c in cells}
    assert times == {(DATA_LOADING, "batch"): 100, (NOT_IN_OP, ""): 100}
    assert tail == 0


# -- training loops over a DataLoader ------------------------------------------------------
ITEM_NS = 0.4e6    # each item's own work
MODEL_NS = 1.5e6   # the model's forward beside its ops
BATCH = 4
STEPS = 14


class SpinningItems(Dataset):  # type: ignore[misc]
    """Items that take ``ITEM_NS`` each to make (fastbench's native spin)."""

    def __len__(self) -> int:
        return 1 << 20

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        _core.spin(ITEM_NS)
        return torch.full((16,), float(i % 7)), torch.ones(1)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _core.spin(MODEL_NS)
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.fixture(autouse=True)
def _one_thread() -> Any:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def collector(request: pytest.FixtureRequest) -> str:
    if request.param == "native":
        from fastbench.pytorch import observer
        if observer.load() is None:
            pytest.skip(f"the native observer is not available: "
                        f"{observer.unavailable_reason()}")
    return str(request.param)


def _train(collector: str, num_workers: int, region: bool = False
           ) -> tuple[Profile, np.ndarray, np.ndarray, np.ndarray]:
    """A training loop over a DataLoader, profiled by fastbench and, around it, by
    torch.profiler: the profile, and per step it reports the wall time of torch's range
    around the fetch as torch.profiler recorded it, the time the loop measured around
    ``next(it)`` and the step's span (ns)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(SpinningItems(), batch_size=BATCH, num_workers=num_workers)
    it = iter(loader)
    next(it)   # workers started and their first batches under way before profiling
    fetched, marks = [], []
    with torch_profile(activities=[ProfilerActivity.CPU]) as reference, \
            profile(model, roofline=False, collector=collector) as prof:
        marks.append(time.perf_counter_ns())
        for _ in range(STEPS):
            t0 = time.perf_counter_ns()
            if region:
                with prof.region("fetch"):
                    x, y = next(it)
            else:
                x, y = next(it)
            fetched.append(time.perf_counter_ns() - t0)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
            marks.append(time.perf_counter_ns())
    del it
    ranges = sorted((e.time_range.start, e.time_range.end) for e in reference.events()
                    if is_data_loading(e.name))
    assert len(ranges) == STEPS
    p = prof.result
    first, left_out = p.meta["first_step"], set(p.meta["left_out"])
    kept = [k for k in range(first, STEPS) if k - first not in left_out]
    assert len(kept) == p.steps
    in_range = np.array([(b - a) * 1e3 for a, b in ranges])   # µs to ns
    return p, in_range[kept], np.asarray(fetched)[kept], np.diff(marks)[kept]


def _subtracted(p: Profile) -> float:
    """The observer cost the profile subtracted, as a share of its net steps."""
    return float(np.sum(p.profiled_step_times)) / float(np.sum(p.step_times)) - 1.0


def _agrees(p: Profile, data: np.ndarray, in_range: np.ndarray, fetched: np.ndarray,
            spans: np.ndarray) -> None:
    """The profile's data loading (seconds per step) against torch.profiler's wall time of
    the fetches' ranges in the same steps, and the loop's clock reads around ``next(it)``.

    Per step the profile's fetch is torch's range (widened by at most the ops that open and
    close it) less the observing cost subtracted in the step, and lies inside the loop's
    reads. Its share (over the net step) then differs from torch's range over the step's
    span by at most the subtracted share, plus the placement of the clock reads."""
    cost = p.profiled_step_times - p.step_times
    r, f = in_range * 1e-9, fetched * 1e-9
    assert np.all(data <= 1.01 * np.minimum(r + cost, f) + 20e-6), (data, r, f, cost)
    assert np.all(data >= 0.99 * r - cost - 20e-6), (data, r, cost)
    share = float(data.sum() / p.step_times.sum())
    oracle = float(in_range.sum() / spans.sum())
    tolerance = 0.03 + _subtracted(p)
    assert abs(share - oracle) <= tolerance, (share, oracle, tolerance)


@pytest.mark.parametrize("num_workers", [0, 1])
@pytest.mark.parametrize("collector", ["native", "dispatch"], indirect=True)
def test_data_loading_matches_torch_profilers_ranges(collector: str,
                                                     num_workers: int) -> None:
    p, in_range, fetched, spans = _train(collector, num_workers)
    data = p.times("op")[DATA_LOADING]
    assert np.all(data > 0)
    _agrees(p, data, in_range, fetched, spans)
    # The same item, with its interval, in top() by op, by family and by region.
    share = float(data.sum() / p.step_times.sum())
    for by in ("op", "family", "region"):
        row = {r.name: r for r in p.top(10, by)}[DATA_LOADING]
        assert row.share == pytest.approx(share)
        lo, hi = row.share_ci
        assert lo <= row.share <= hi and lo < hi
        assert row.calls == pytest.approx(1.0)   # one fetch a step
    # The fetches' ops (collate's stack, the items' full) are not the model's: no op row,
    # no family, holds them.
    assert not {"aten::stack", "aten::full"} & set(p.times("op"))
    # Outside any module: data loading is there, and so is it in the printed profile.
    assert float(np.sum(p.times("module")[OUTSIDE])) >= float(np.sum(data))
    assert all(c.module == OUTSIDE for c in p.cells if c.op == DATA_LOADING)
    assert DATA_LOADING in str(p)
    assert not any("after the last step" in w for w in p.warnings)


@pytest.mark.parametrize("collector", ["native", "dispatch"], indirect=True)
def test_a_users_region_around_the_fetch_keeps_its_name(collector: str) -> None:
    p, in_range, fetched, spans = _train(collector, 0, region=True)
    assert DATA_LOADING not in p.times("region")
    assert all(c.region == "fetch" for c in p.cells if c.op == DATA_LOADING)
    region, data = p.times("region")["fetch"], p.times("op")[DATA_LOADING]
    _agrees(p, data, in_range, fetched, spans)
    # The region holds the fetch, and lies inside the loop's clock reads around it.
    assert np.all(data <= region + 1e-9)
    assert np.all(region <= 1.01 * fetched * 1e-9 + 20e-6)
