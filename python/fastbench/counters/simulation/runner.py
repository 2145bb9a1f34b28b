"""The valgrind processes: finding valgrind and its version, its command line, starting a
run in a session of its own, waiting for it against a deadline, killing it, and turning a
failure into an error that quotes the workload's stderr and valgrind's own complaints.
Knows nothing of callables or of the result type.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Mapping

from ..._children import dying_with_parent
from ...errors import FastbenchError, file_tail, last_lines
from .geometry import CACHE_NAMES, CacheGeometry
from .output import parse_output

__all__ = ["Run", "SimulationTimeout", "SimulationUnavailable", "finish", "kill", "start",
           "tool_options", "valgrind_path", "valgrind_version"]

_VERSION_TIMEOUT_S = 30.0


class SimulationUnavailable(FastbenchError):
    """valgrind cannot be run here (not installed), so nothing can be simulated."""


class SimulationTimeout(FastbenchError, TimeoutError):
    """A run under valgrind did not finish within ``timeout_s``; it was killed."""


def valgrind_path() -> str:
    path = shutil.which("valgrind")
    if path is None:
        raise SimulationUnavailable("valgrind is not installed; install it (e.g. apt install "
                                    "valgrind) to use simulated counters")
    return path


@lru_cache(maxsize=None)
def valgrind_version(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True,
                              timeout=_VERSION_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    m = re.search(r"valgrind-(\S+)", done.stdout)
    return m.group(1) if m else (done.stdout.strip() or "unknown")


@dataclass
class Run:
    """One valgrind process and the files it writes."""

    what: str
    argv: list[str]
    out_path: Path
    log_path: Path
    stderr_path: Path
    stderr_file: IO[bytes]
    proc: subprocess.Popen[bytes]


def start(what: str, argv: list[str], out_path: Path, log_path: Path, stderr_path: Path,
           env: Mapping[str, str] | None) -> Run:
    stderr_file = open(stderr_path, "wb")  # noqa: SIM115 - closed by finish / kill
    try:
        # A session of its own, so a timeout can kill whatever the workload started too; and
        # a launcher that makes it die with this process, should this one be killed outright.
        proc = subprocess.Popen(dying_with_parent(argv), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=stderr_file, env=None if env is None else dict(env),
                                start_new_session=True)
    except BaseException:
        stderr_file.close()
        raise
    return Run(what, argv, out_path, log_path, stderr_path, stderr_file, proc)


def kill(run: Run) -> None:
    if run.proc.poll() is None:
        try:
            os.killpg(run.proc.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
        run.proc.wait()
    run.stderr_file.close()


# The banner and the end-of-run summary of valgrind's log, which say nothing about a failure.
_LOG_NOISE = re.compile(
    r"(Cachegrind|Callgrind), a |Copyright|Using Valgrind|Command:|Parent PID:|For interactive"
    r"|Events\s*:|Collected\s*:|(I1?|D1?|LL[id]?)\s+(refs|misses|miss rate)|Branches:"
    r"|Mispred|warning: L3 cache found"
    # Harmless: glibc's malloc falls back to mmap (numpy and scipy imports trigger it).
    r"|brk segment overflow|\(see section Limitations|NOTE: further instances"
)


def _valgrind_messages(path: Path) -> str:
    """valgrind's own complaints from its log: the lines after the banner, summary dropped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = [re.sub(r"^[=-]{2}\d+[=-]{2} ?", "", ln) for ln in text.splitlines()]
    kept = [ln for ln in kept if not _LOG_NOISE.match(ln.strip())]
    return last_lines("\n".join(kept))


def finish(run: Run, deadline: float, timeout_s: float) -> tuple[dict[str, int],
                                                                     dict[str, CacheGeometry]]:
    try:
        run.proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        kill(run)
        raise SimulationTimeout(
            f"{run.what} did not finish under valgrind within timeout_s={timeout_s:g} s and "
            "was killed; valgrind runs code 20-100x slower than native, so pass a larger "
            "timeout_s or a smaller workload"
        ) from None
    run.stderr_file.close()
    code = run.proc.returncode
    if code != 0:
        if code < 0:
            try:
                status = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                status = f"was killed by signal {-code}"
        else:
            status = f"exited with status {code}"
        parts = [f"{run.what} {status} under valgrind"]
        stderr = file_tail(run.stderr_path)
        if stderr:
            parts.append(f"its stderr ended with:\n{stderr}")
        messages = _valgrind_messages(run.log_path)
        if messages:
            parts.append(f"valgrind said:\n{messages}")
        raise FastbenchError("; ".join(parts))
    try:
        text = run.out_path.read_text(encoding="utf-8", errors="replace")
        return parse_output(text)
    except (OSError, ValueError) as exc:
        messages = _valgrind_messages(run.log_path) or file_tail(run.stderr_path)
        raise FastbenchError(f"valgrind wrote no usable output for {run.what} ({exc})"
                             + (f"; it said:\n{messages}" if messages else "")) from None


def tool_options(tool: str, out_path: Path, log_path: Path,
                  geometry: Mapping[str, CacheGeometry]) -> list[str]:
    if tool == "callgrind":
        # --collect-systime=no: time in system calls is not an instruction count.
        return ["--tool=callgrind", "--collect-systime=no", f"--callgrind-out-file={out_path}",
                f"--log-file={log_path}"]
    return (["--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
             f"--cachegrind-out-file={out_path}", f"--log-file={log_path}"]
            + [f"--{name}={geometry[name].option}" for name in CACHE_NAMES if name in geometry])
