"""Counters for a whole command, like ``perf stat``: ``fastbench stat -- CMD ARGS...``.

Owns running a command repeatedly under an inherited counter group and summarising the
runs (mean with a Student t interval per event, running fraction, derived metrics, one
reason per event that could not be counted). Opening, reading and scaling the counters is
fastbench.counters' and the native core's.

What is counted: the counter group is opened on the calling thread with ``inherit`` set,
enabled just before the command is spawned and disabled after it is reaped, so the
command and every process and thread it starts are counted, plus fastbench's own spawn and
wait in between (``subprocess`` uses vfork/posix_spawn: tens of microseconds of CPU time,
a few page faults). ``perf stat`` instead enables its counters at the child's exec.
"""

from __future__ import annotations

import math
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import _core
from ..report.lines import TextLines, brief_repr
from ..stats import summarize
from .events import CounterResult, CountersUnavailable, EventCount, check_events

__all__ = ["DEFAULT_EVENTS", "EventStat", "StatResult", "exit_status", "stat_command"]

# perf stat's default set, in its order.
DEFAULT_EVENTS = (
    "task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles",
    "instructions", "branches", "branch-misses",
)
_TIME_EVENTS = ("task-clock", "cpu-clock")


@dataclass(frozen=True)
class EventStat:
    """One event over the repeats: every run's scaled count and their summary."""

    name: str
    values: tuple[float, ...]
    running_fraction: float  # the smallest over the runs
    scaled: bool

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    @property
    def ci(self) -> tuple[float, float] | None:
        """95% Student t interval of the mean; None for a single run."""
        return summarize(self.values).mean_ci if len(self.values) > 1 else None

    @property
    def half_width(self) -> float | None:
        ci = self.ci
        return None if ci is None else (ci[1] - ci[0]) / 2.0


@dataclass(frozen=True)
class StatResult(TextLines):
    """``fastbench stat``'s figures for one command over ``repeat`` runs."""

    command: tuple[str, ...]
    events: dict[str, EventStat]
    unavailable: dict[str, str]
    elapsed_s: tuple[float, ...]
    # Per run, as subprocess gives it: the exit status, or -N when signal N killed the command
    # (exit_status() turns that into the shell's 128 + N).
    returncodes: tuple[int, ...]
    read_path: str = "read"
    simulated: dict[str, Any] | None = field(default=None)

    @property
    def repeat(self) -> int:
        return len(self.elapsed_s)

    @property
    def means(self) -> dict[str, float]:
        return {name: e.mean for name, e in self.events.items()}

    @property
    def derived(self) -> dict[str, float]:
        """IPC, cycles per instruction, miss percentages from the means; CPUs utilised."""
        counts = {n: EventCount(n, v, 0, 0, 0, 1.0, False, 0.0) for n, v in self.means.items()}
        out = {k: v for k, v in CounterResult(counts).derived.items() if not k.endswith("_per_call")}
        wall = sum(self.elapsed_s) / len(self.elapsed_s)
        if "task-clock" in self.means and wall > 0.0:
            out["cpus_utilized"] = self.means["task-clock"] * 1e-9 / wall
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": list(self.command),
            "events": {n: {"values": list(e.values), "running_fraction": e.running_fraction,
                           "scaled": e.scaled} for n, e in self.events.items()},
            "unavailable": dict(self.unavailable),
            "elapsed_s": list(self.elapsed_s),
            "returncodes": list(self.returncodes),
            "read_path": self.read_path,
            "simulated": self.simulated,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatResult:
        events = {
            str(n): EventStat(str(n), tuple(float(v) for v in e["values"]),
                              float(e["running_fraction"]), bool(e["scaled"]))
            for n, e in dict(data["events"]).items()
        }
        if any(not e.values for e in events.values()):
            raise ValueError("an event has no values")
        return cls(
            command=tuple(str(c) for c in data["command"]),
            events=events,
            unavailable={str(k): str(v) for k, v in dict(data.get("unavailable", {})).items()},
            elapsed_s=tuple(float(v) for v in data["elapsed_s"]),
            returncodes=tuple(int(v) for v in data["returncodes"]),
            read_path=str(data.get("read_path", "read")),
            simulated=data.get("simulated"),
        )

    def __repr__(self) -> str:
        events = f"{len(self.events)} events" + (f", {len(self.unavailable)} unavailable"
                                                 if self.unavailable else "")
        return brief_repr(self, f"{shlex.join(self.command)!r}: {events}, {self.repeat} runs")

    def lines(self) -> list[str]:
        """The report, laid out like ``perf stat``'s: value ± CI half-width, event, notes."""
        shown = " ".join(shlex.quote(c) for c in self.command)
        runs = f"{self.repeat} run{'s' if self.repeat != 1 else ''}"
        path = "rdpmc" if self.read_path == "rdpmc" else "read(2)"
        out = [f" Counter stats for '{shown}' ({runs}; ± is the 95% CI half-width "
               f"of the mean; read by {path}):", ""]
        derived = self.derived
        for name, e in self.events.items():
            hw = e.half_width
            if name in _TIME_EVENTS:
                value = f"{e.mean / 1e6:,.2f} ms" + ("" if hw is None else f" ± {hw / 1e6:,.2f}")
            else:
                value = f"{e.mean:,.0f}" + ("" if hw is None else f" ± {hw:,.0f}")
            note = _note(name, derived)
            running = f"  (running {e.running_fraction:.0%}, scaled)" if e.scaled else ""
            out.append(f"  {value:>28}   {name:<24}{note}{running}".rstrip())
        for name, reason in self.unavailable.items():
            out.append(f"  {'<not counted>':>28}   {name:<24}# {reason}")
        wall = summarize(self.elapsed_s) if self.repeat > 1 else None
        mean_wall = sum(self.elapsed_s) / self.repeat
        spread = "" if wall is None or wall.mean_ci is None else \
            f" ± {(wall.mean_ci[1] - wall.mean_ci[0]) / 2:.4f}"
        elapsed = f"{mean_wall:.4f} s{spread}"
        out += ["", f"  {elapsed:>28}   time elapsed", ""]
        if self.events and not any(e.scaled for e in self.events.values()):
            out.append("  Every event ran all the time it was enabled (running 100%, not scaled).")
        out += ["  User space only (perf_event_paranoid >= 2 allows no more): what the kernel does",
                "  on the command's behalf, such as context switches and migrations, reads 0."]
        failed = [rc for rc in self.returncodes if rc != 0]
        exits = sorted({rc for rc in failed if rc > 0})
        kills = sorted({-rc for rc in failed if rc < 0})
        if exits:
            n = sum(1 for rc in failed if rc > 0)
            out.append(f"  warning: the command exited non-zero in {n} of {self.repeat} "
                       f"runs (exit codes {exits})")
        if kills:
            n = sum(1 for rc in failed if rc < 0)
            names = ", ".join(map(_signal_name, kills))
            out.append(f"  warning: the command was killed by {names} in {n} of {self.repeat} runs")
        return out


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_status(returncode: int) -> int:
    """A run's status as a shell reports it: the exit status, or 128 + N for a command
    killed by signal N (``subprocess`` gives -N; ``sys.exit(-9)`` would exit with 247)."""
    return 128 - returncode if returncode < 0 else returncode


def _note(name: str, derived: Mapping[str, float]) -> str:
    notes = {
        "task-clock": ("cpus_utilized", "# {:.3f} CPUs utilized"),
        "instructions": ("ipc", "# {:.2f} insn per cycle"),
        "branch-misses": ("branch_miss_pct", "# {:.2f}% of all branches"),
        "cache-misses": ("cache_miss_pct", "# {:.2f}% of all cache refs"),
    }
    key, fmt = notes.get(name, ("", ""))
    return fmt.format(derived[key]) if key in derived else ""


def _run(command: tuple[str, ...]) -> int:
    """Run ``command`` to its end; its exit status (-N when signal N killed it).

    Interrupted (Ctrl-C, or any exception while waiting), the command is killed and reaped
    before the exception goes on: ``subprocess.run`` kills it but leaves the reaping to a
    later Popen, so a zombie outlives the interrupt, and after fastbench exits, the orphan
    stays a zombie under an init that never reaps (a container's, often).
    """
    proc = subprocess.Popen(command)
    try:
        return proc.wait()  # on Ctrl-C it first gives the command 0.25 s to exit by itself
    except BaseException:
        proc.kill()  # no-op if it has exited
        while True:
            try:
                proc.wait()  # prompt after SIGKILL; a second Ctrl-C does not skip it
                break
            except KeyboardInterrupt:
                continue
        raise


def _as_command(cmd: Sequence[str] | str) -> tuple[str, ...]:
    parts = tuple(shlex.split(cmd)) if isinstance(cmd, str) else tuple(cmd)
    if not parts or not all(isinstance(p, str) for p in parts):
        raise ValueError("give the command as a non-empty list of strings, e.g. ['python', '-c', 'pass']")
    return parts


def stat_command(
    cmd: Sequence[str] | str,
    events: Sequence[str] | None = None,
    *,
    repeat: int = 5,
    missing: str = "skip",
    progress: Callable[[int, int], None] | None = None,
) -> StatResult:
    """Run ``cmd`` ``repeat`` times and count ``events`` (perf stat's set by default) over
    each run, the command's children and threads included.

    Parameters
    ----------
    missing : {"skip", "raise"}
        Events that cannot be opened are listed with their reason (default, like perf
        stat's ``<not supported>``), or raise CountersUnavailable.
    progress : callable, optional
        Called as ``progress(done, repeat)`` after each run.

    Returns
    -------
    StatResult
        ``returncodes`` holds each run's exit status, or -N where signal N killed it
        (``exit_status`` gives the shell's 128 + N).

    Raises
    ------
    KeyboardInterrupt
        On Ctrl-C, after the command has been killed and reaped (no zombie is left).
    FileNotFoundError
        The command does not exist.
    CountersUnavailable
        With ``missing="raise"``, naming each event that cannot be opened and why.
    """
    command = _as_command(cmd)
    names = check_events(list(events) if events is not None else DEFAULT_EVENTS)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an int >= 1, got {repeat!r}")
    if missing not in ("skip", "raise"):
        raise ValueError(f"missing must be 'skip' or 'raise', got {missing!r}")
    per_event: dict[str, list[float]] = {}
    fraction: dict[str, float] = {}
    scaled: dict[str, bool] = {}
    unavailable: dict[str, str] = {}
    elapsed, codes = [], []
    read_path = "read"
    for run in range(repeat):
        group = _core.CounterGroup(names, True)
        lacking = {e.name: e.reason for e in group.events if not e.available}
        if lacking and missing == "raise":
            raise CountersUnavailable(lacking, "missing='skip' (or leave those events out)")
        unavailable.update(lacking)
        group.start()
        t0 = time.perf_counter()
        try:
            returncode = _run(command)
        finally:
            wall = time.perf_counter() - t0
            group.stop()
        elapsed.append(wall)
        codes.append(returncode)
        read_path = group.read_path
        for r in group.read():
            if not r.available:
                continue
            if not r.counted:
                unavailable[r.name] = "the kernel never scheduled the event (running time 0)"
                continue
            per_event.setdefault(r.name, []).append(r.value)
            fraction[r.name] = min(fraction.get(r.name, 1.0), r.running_fraction)
            scaled[r.name] = scaled.get(r.name, False) or r.scaled
        if progress is not None:
            progress(run + 1, repeat)
    stats = {
        n: EventStat(n, tuple(per_event[n]), fraction[n], scaled[n])
        for n in names if n in per_event and n not in unavailable and len(per_event[n]) == repeat
        and all(math.isfinite(x) for x in per_event[n])
    }
    return StatResult(command, stats, {n: unavailable[n] for n in names if n in unavailable},
                      tuple(elapsed), tuple(codes), read_path)
