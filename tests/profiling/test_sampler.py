"""Tests for fastbench.profiling.sampler on code whose time split is known: two helpers busy-
wait natively (fastbench._core.spin releases the GIL) for 3 ms and 1 ms, so the slow one
holds 3/4 of their time on an idle machine. On a loaded one each part also waits to be
rescheduled after its spin, which is real wall time, so the truth a trial is judged against
is each part's wall time clocked inside it, independently of the sampler. A third helper
spins 3 ms holding the GIL (a spin made by fastbench._core.make_spin), which keeps the
sampler out: counted by samples alone it would read about half of its true share.
"""

from __future__ import annotations

import inspect
import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from fastbench import _core
from fastbench.profiling import sampler as sampler_module
from fastbench.profiling.sampler import (MIN_INTERVAL_S, SampleProfile, Sampler, ScriptFailed,
                                         sample, sample_script)
from fastbench.stats.proportion import weighted_wilson_interval, wilson_interval

SLOW_NS, FAST_NS = 3e6, 1e6
_clocked = {"slow": 0.0, "fast": 0.0, "held": 0.0}


def slow_part() -> None:
    t0 = time.perf_counter()
    _core.spin(SLOW_NS)
    _clocked["slow"] += time.perf_counter() - t0


def fast_part() -> None:
    t0 = time.perf_counter()
    _core.spin(FAST_NS)
    _clocked["fast"] += time.perf_counter() - t0


_HELD_SPIN = _core.make_spin(SLOW_NS)  # holds the GIL while it spins


def held_part() -> None:
    t0 = time.perf_counter()
    _HELD_SPIN()
    _clocked["held"] += time.perf_counter() - t0


def work() -> None:
    slow_part()
    fast_part()


def work_holding_the_gil() -> None:
    held_part()
    fast_part()


def _line_of(fn: Callable[..., object], text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _shares(profile: SampleProfile) -> tuple[int, int]:
    """Samples with slow_part / fast_part on the stack (total)."""
    rows = {r.name.rpartition(":")[2]: r.samples for r in profile.top(50)}
    return rows.get("slow_part", 0), rows.get("fast_part", 0)


def _trial(duration_s: float) -> tuple[int, int, float]:
    """One profile of ``work``: slow and fast samples, and the true slow fraction of their
    wall time, clocked inside the parts."""
    _clocked.update(slow=0.0, fast=0.0)
    profile = sample(work, duration_s=duration_s, threads=False)
    slow, fast = _shares(profile)
    return slow, fast, _clocked["slow"] / (_clocked["slow"] + _clocked["fast"])


@pytest.fixture(scope="module")
def profile() -> SampleProfile:
    return sample(work, duration_s=0.5)


# -- known time ratios ---------------------------------------------------------------------

def _judge_trials(trials: int, duration_s: float) -> tuple[int, float, float]:
    """Trials whose interval on slow / (slow + fast) covers the truth, and the pooled
    sampled ratio and pooled truth."""
    covered, slow_all, fast_all, truths = 0, 0, 0, []
    for _ in range(trials):
        slow, fast, truth = _trial(duration_s)
        low, high = wilson_interval(slow, slow + fast)
        covered += low <= truth <= high
        slow_all, fast_all = slow_all + slow, fast_all + fast
        truths.append(truth)
    return covered, slow_all / (slow_all + fast_all), sum(truths) / len(truths)


def test_three_to_one_spins_are_found_within_their_intervals() -> None:
    # Conditioned on landing in either part, a sample lands in slow_part with probability
    # truth (0.75 idle), so slow | slow + fast is binomial if samples were independent and
    # the 95% Wilson interval covers the truth with ~95% probability. Jittered samples of a
    # periodic workload are spread more evenly than independent ones, so the coverage is
    # higher still. Requiring 4 of 6: at 95% per trial, failing needs 3 misses (p ~ 0.2%).
    covered, pooled, truth = _judge_trials(trials=6, duration_s=0.4)
    assert covered >= 4, (covered, pooled, truth)
    # ~2400 pooled samples give the ratio a standard error of ~0.01: 0.04 is 4 of them.
    assert pooled == pytest.approx(truth, abs=0.04)
    assert truth > 0.5  # the slow part really dominates, even on a loaded machine


@pytest.mark.slow
def test_intervals_cover_the_truth_in_most_of_many_trials() -> None:
    covered, pooled, truth = _judge_trials(trials=30, duration_s=0.3)
    # At 95% coverage, 24 or fewer of 30 has probability ~1.6% (binomial tail).
    assert covered >= 25, (covered, pooled, truth)
    assert pooled == pytest.approx(truth, abs=0.02)


def test_self_lines_point_at_the_spins(profile: SampleProfile) -> None:
    rows = profile.top(2, by="line", kind="self")
    here = inspect.getsourcefile(slow_part)
    assert [(r.file, r.line) for r in rows] == [
        (here, _line_of(slow_part, "_core.spin(SLOW_NS)")),
        (here, _line_of(fast_part, "_core.spin(FAST_NS)"))]
    assert rows[0].name == f"{here}:{rows[0].line}"
    assert rows[0].function == f"{__name__}:slow_part"
    # Total by function: work is on every stack but the few between calls.
    top = profile.top(1)[0]
    assert top.function == f"{__name__}:work" and top.share > 0.9
    assert top.time_s == pytest.approx(top.share * profile.wall_s)
    low, high = top.share_ci
    assert low <= top.share <= high


def test_shares_are_the_time_the_samples_count(profile: SampleProfile) -> None:
    # Each tick counts the time from the tick before it: the weights tile the run up to the
    # last tick, and a row's share is its ticks' time over all of it.
    weights = profile.sample_weights_s
    ticks = profile.tick_times_s
    assert weights[0] == ticks[0] and sum(weights) == pytest.approx(ticks[-1], rel=1e-12)
    assert all(w > 0 for w in weights)
    row = profile.top(1, kind="self")[0]
    main = profile.profiled_thread
    leaf = {i for i, st in enumerate(profile.stacks) if st and st[-1][0] ==
            next(j for j, f in enumerate(profile.functions) if f.name == row.function)}
    mine = [weights[k] for k, t, st in profile.records if t == main and st in leaf]
    every = [weights[k] for k, t, _ in profile.records if t == main]
    assert row.samples == len(mine)
    assert row.share == pytest.approx(sum(mine) / sum(every), rel=1e-12)
    assert row.share_ci == pytest.approx(weighted_wilson_interval(
        sum(mine), sum(w * w for w in mine), sum(every), sum(w * w for w in every)), rel=1e-12)
    # Self shares of every function sum to one: each sample has one innermost frame.
    rows = profile.top(1000, kind="self")
    assert sum(r.samples for r in rows) == profile.samples
    assert sum(r.share for r in rows) == pytest.approx(1.0, rel=1e-12)


def _held_trial(duration_s: float) -> tuple[float, float, float]:
    """One profile of ``work_holding_the_gil``: the held part's fraction of the two parts'
    sampled time, the same by samples alone, and the clocked truth."""
    _clocked.update(held=0.0, fast=0.0)
    profile = sample(work_holding_the_gil, duration_s=duration_s, threads=False)
    rows = {r.function.rpartition(":")[2]: r for r in profile.top(50)}
    held, fast = rows["held_part"], rows["fast_part"]
    by_time = held.share / (held.share + fast.share)
    by_count = held.samples / (held.samples + fast.samples)
    return by_time, by_count, _clocked["held"] / (_clocked["held"] + _clocked["fast"])


def test_native_code_holding_the_gil_gets_its_time() -> None:
    # 3 ms holding the GIL, then 1 ms releasing it: the sampler cannot look during the
    # first, and its one late tick per cycle must count the whole of it. Each trial's 0.4 s
    # holds about 100 cycles, so the sampled fraction's error from where the deadlines fall
    # is a few points; 0.05 is well beyond it. Counting samples alike sees about one sample
    # in the held part against one in the fast part per cycle: near 0.5 for a truth near
    # 0.75, which this test would catch.
    trials = [_held_trial(0.4) for _ in range(4)]
    by_time = sum(t for t, _, _ in trials) / len(trials)
    by_count = sum(c for _, c, _ in trials) / len(trials)
    truth = sum(x for _, _, x in trials) / len(trials)
    assert truth > 0.6  # the held part dominates, even on a loaded machine
    assert by_time == pytest.approx(truth, abs=0.05), (by_time, by_count, truth)
    assert by_count < truth - 0.1, (by_time, by_count, truth)


def test_the_profilers_own_frames_are_hidden(profile: SampleProfile) -> None:
    own = sampler_module.sample.__code__.co_filename
    assert all(f.file != own for f in profile.functions)
    assert all("pytest" not in f.file for f in profile.functions)  # stacks start at fn


def test_rate_and_overhead_are_stated(profile: SampleProfile) -> None:
    assert profile.samples == len(profile.tick_times_s) > 0
    assert profile.rate_hz == profile.samples / profile.wall_s
    assert 0 < profile.overhead_cpu_s < profile.wall_s
    assert profile.overhead_per_sample_s == profile.overhead_cpu_s / profile.samples
    assert all(0 <= t < profile.wall_s for t in profile.tick_times_s)
    assert list(profile.tick_times_s) == sorted(profile.tick_times_s)
    text = str(profile)
    for words in ("samples in", "Hz achieved", "CPU per sample", "of the run",
                  f"{__name__}:slow_part", "MainThread"):
        assert words in text


def test_rows_print_as_a_table(profile: SampleProfile) -> None:
    rows = profile.top(3, by="line", kind="self")
    lines = rows.lines()
    assert str(rows) == "\n".join(lines) and len(lines) == 1 + len(rows)
    assert lines[0].split()[:4] == ["share", "95%", "CI", "%"]
    first = rows[0]
    assert f"{first.share * 100:.1f}%" in lines[1] and f"slow_part" in lines[1]
    assert f":{first.line}" in lines[1]


def test_switch_interval_is_lowered_during_sampling_and_restored() -> None:
    before = sys.getswitchinterval()
    seen: list[float] = []
    profile = sample(lambda: seen.append(sys.getswitchinterval()), duration_s=0.01)
    assert sys.getswitchinterval() == before
    assert seen[0] == profile.switch_interval_s <= min(before, 1e-4)


def test_an_error_in_fn_propagates_and_restores_the_switch_interval() -> None:
    before = sys.getswitchinterval()

    def broken() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        sample(broken, duration_s=0.05)
    assert sys.getswitchinterval() == before
    assert not any(t.name == "fastbench sampler" for t in threading.enumerate())


# -- threads ---------------------------------------------------------------------------------

def spin_until(stop: threading.Event) -> None:
    while not stop.is_set():
        _core.spin(1e6)


@pytest.fixture
def spinner() -> Iterator[threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=spin_until, args=(stop,), name="spinner", daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join()


def test_a_second_thread_shows_up_as_its_own(spinner: threading.Thread) -> None:
    profile = sample(work, duration_s=0.3)
    counts = profile.thread_samples()
    assert profile.threads[profile.profiled_thread].name == threading.current_thread().name
    # The spinner lives through the whole run, so every tick sees it.
    assert counts["spinner"] == counts[threading.current_thread().name] == profile.samples
    assert "fastbench sampler" not in counts  # the sampler never samples itself
    rows = {r.function: r for r in profile.top(20, thread="spinner")}
    assert rows[f"{__name__}:spin_until"].share == 1.0
    assert f"{__name__}:slow_part" not in rows  # the other thread's work stays there
    line = profile.top(1, by="line", kind="self", thread="spinner")[0]
    assert line.line == _line_of(spin_until, "_core.spin(1e6)")
    assert line.share > 0.5
    one = sample(work, duration_s=0.05, threads=False)
    assert [t.name for t in one.threads] == [threading.current_thread().name]


# -- the block and the script forms ----------------------------------------------------------

def test_the_with_form_roots_stacks_at_the_block() -> None:
    sampler = Sampler(interval_s=0.001)
    with pytest.raises(RuntimeError, match="once the with block has ended"):
        sampler.result()
    with sampler:
        end = time.perf_counter() + 0.1
        while time.perf_counter() < end:
            fast_part()
    profile = sampler.result()
    assert profile.samples > 0 and profile.calls == 0
    top = profile.top(1)[0]
    assert top.function == f"{__name__}:test_the_with_form_roots_stacks_at_the_block"
    assert top.share == 1.0
    assert f"{__name__}:fast_part" in {r.function for r in profile.top(5)}
    with pytest.raises(RuntimeError, match="samples once"):
        with sampler:
            pass


SCRIPT = """\
import os
import sys
from fastbench import _core

def busy():
    _core.spin(2e6)

if __name__ == "__main__":
    assert sys.argv[0].endswith("busy_script.py") and sys.argv[1] == "--reps", sys.argv
    assert sys.path[0] == os.path.dirname(os.path.realpath(__file__)), sys.path[0]
    for _ in range(int(sys.argv[2])):
        busy()
"""


def test_a_script_runs_as_main_with_its_argv(tmp_path: Path) -> None:
    script = tmp_path / "busy_script.py"
    script.write_text(SCRIPT)
    argv, path = list(sys.argv), list(sys.path)
    profile = sample_script(script, argv=["--reps", "40"])
    assert sys.argv == argv and sys.path == path
    assert profile.calls == 1 and profile.target == str(script)
    rows = {r.function: r for r in profile.top(10)}
    # The script's frame is the root of every stack: runpy's frames are hidden, and its
    # reading and compiling of the file counts as between calls.
    between = rows["(between calls)"].samples if "(between calls)" in rows else 0
    assert rows["__main__:<module>"].samples + between == profile.samples
    assert rows["__main__:<module>"].share > 0.8
    assert rows["__main__:busy"].share > 0.5
    assert not any(f.file.endswith("runpy.py") for f in profile.functions)
    again = sample_script(script, argv=["--reps", "2"], duration_s=0.2)
    assert again.calls >= 2


def test_a_failing_script_keeps_the_profile_of_what_ran(tmp_path: Path) -> None:
    # Work for 0.3 s, then exit 3 (or raise): the failure carries the profile of the work.
    script = tmp_path / "exits.py"
    body = "import sys\nfrom fastbench import _core\n_core.spin(3e8)\n"
    script.write_text(body + "sys.exit(3)\n")
    with pytest.raises(ScriptFailed) as info:
        sample_script(script)
    assert info.value.status == 3 and isinstance(info.value.cause, SystemExit)
    assert info.value.profile.samples > 50 and info.value.profile.wall_s >= 0.3
    script.write_text(body + "raise KeyError('k')\n")
    with pytest.raises(ScriptFailed, match="raised KeyError") as info:
        sample_script(script)
    assert info.value.status == 1 and info.value.profile.samples > 50
    script.write_text("import sys\nsys.exit('bad input')\n")
    with pytest.raises(ScriptFailed) as info:
        sample_script(script)
    assert info.value.status == 1  # as Python: a non-int code is printed, the status is 1
    script.write_text("import sys\nsys.exit(0)\n")
    assert sample_script(script).calls == 1


# -- exports ---------------------------------------------------------------------------------

def _parse_folded(text: str) -> dict[str, int]:
    stacks: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        assert stack and count.isdigit() and stack not in stacks, line
        stacks[stack] = int(count)
    return stacks


def test_folded_stacks_parse_and_add_up(profile: SampleProfile) -> None:
    # Values are the time the stacks' samples count, in whole microseconds.
    main = profile.threads[profile.profiled_thread].name
    mine = _parse_folded(profile.folded_stacks(thread=main))
    sampled_us = sum(profile.sample_weights_s) * 1e6
    assert abs(sum(mine.values()) - sampled_us) <= len(mine)  # rounding, per line
    slow = f"{__name__}:work;{__name__}:slow_part"
    slow_row = profile.top(1, kind="self")[0]
    assert abs(mine[slow] - slow_row.share * sampled_us) <= 1
    everyone = _parse_folded(profile.folded_stacks())
    recorded_us = sum(profile.sample_weights_s[k] for k, _, _ in profile.records) * 1e6
    assert abs(sum(everyone.values()) - recorded_us) <= len(everyone)
    assert everyone[f"{main};{slow}"] == mine[slow]  # each thread rooted at its name
    with_lines = _parse_folded(profile.folded_stacks(thread=main, lines=True))
    assert abs(sum(with_lines.values()) - sampled_us) <= len(with_lines)
    assert any(k.endswith(f"slow_part:{_line_of(slow_part, 'spin(SLOW_NS)')}")
               for k in with_lines)


def test_dict_round_trip_through_json(profile: SampleProfile) -> None:
    data = json.loads(json.dumps(profile.to_dict()))
    back = SampleProfile.from_dict(data)
    assert back == profile
    assert back.top(5, by="line") == profile.top(5, by="line")
    assert back.folded_stacks() == profile.folded_stacks()
    broken = dict(data, records=[[0, 0, len(profile.stacks)]])
    with pytest.raises(ValueError, match="malformed"):
        SampleProfile.from_dict(broken)
    with pytest.raises(ValueError, match="malformed"):
        SampleProfile.from_dict({k: v for k, v in data.items() if k != "stacks"})


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, words", [
    ({"duration_s": 0}, ValueError, "duration_s must be finite and > 0"),
    ({"duration_s": math.nan}, ValueError, "duration_s must be finite and > 0"),
    ({"duration_s": math.inf}, ValueError, "duration_s must be finite and > 0"),
    ({"interval_s": -1e-3}, ValueError, "interval_s must be finite and > 0"),
    ({"interval_s": "1ms"}, TypeError, "interval_s must be a number of seconds"),
    ({"interval_s": 1e-5}, ValueError, f"interval_s must be at least {MIN_INTERVAL_S:g} s"),
    ({"threads": 1}, TypeError, "threads must be True or False"),
])
def test_bad_settings_are_named(kwargs: dict[str, object], error: type[Exception],
                                words: str) -> None:
    with pytest.raises(error, match=words):
        sample(work, **kwargs)  # type: ignore[arg-type]


def test_other_bad_input(tmp_path: Path, profile: SampleProfile) -> None:
    with pytest.raises(TypeError, match="fn must be callable"):
        sample(42)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="no script file at"):
        sample_script(tmp_path / "missing.py")
    with pytest.raises(TypeError, match="argv must be a sequence of str"):
        sample_script(__file__, argv="--fast")
    with pytest.raises(ValueError, match="by must be one of"):
        profile.top(by="file")
    with pytest.raises(ValueError, match="kind must be one of"):
        profile.top(kind="inclusive")
    with pytest.raises(ValueError, match="thread must be one of"):
        profile.top(thread="no such thread")
    with pytest.raises(ValueError, match="n must be positive"):
        profile.top(0)
