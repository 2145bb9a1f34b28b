"""The worker process: ``python -m fastbench.timing.worker SPEC OUT`` (the parent,
workers.py, starts it through a bootstrap that puts its sys.path first). Loads the job,
imports the callable and the arguments, makes one measure() or timeit() call and writes the
Measurement's JSON to OUT; for a "rounds" job, measures its variants side by side in rounds
(sampling.run_rounds) and writes each one's Measurement. Decides nothing about the
measurement: the options are the job's.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import pickle
import runpy
import signal
import sys
import traceback
import types
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from ..identity import imported_packages, is_user_file
from ..measurement import Measurement
from .callables import measure
from .config import run_config
from .sampling import run_rounds, run_target
from .statement import statement_target, timeit
from .targets import Target, callable_target
from .workers import ImportRef, WorkerJob, loading_main_script

_USAGE = "usage: python -m fastbench.timing.worker SPEC OUT [--sync READ_FD WRITE_FD]"


def main(argv: Sequence[str]) -> int:
    """Run the job in the spec file ``argv[0]`` and write its result to ``argv[1]``.

    With ``--sync READ_FD WRITE_FD`` (a duet, fastbench.timing.duets), a callable or
    statement job writes one byte to WRITE_FD once prepared and warmed up, and waits for
    one byte on READ_FD before its counted samples, so that both partners sample at once.

    Returns the exit status: 0 with the Measurement's ``to_dict()`` JSON in OUT; 1 after
    any exception, whose traceback goes to stderr and whose summary goes to OUT as
    ``{"worker_error": {"status", "stage", "error"}}``; 2 for a wrong command line.
    """
    sync: tuple[int, int] | None = None
    if len(argv) == 5 and argv[2] == "--sync" and argv[3].isdigit() and argv[4].isdigit():
        sync = (int(argv[3]), int(argv[4]))
    elif len(argv) != 2:
        sys.stderr.write(_USAGE + "\n")
        return 2
    spec_path, out_path = argv[:2]
    # A crash (SIGSEGV, SIGABRT...) prints the Python stack to stderr, and so does the
    # parent's SIGUSR1 before it kills a worker past its timeout; neither costs a thing
    # while the samples run.
    faulthandler.enable(all_threads=True)
    if hasattr(signal, "SIGUSR1") and hasattr(faulthandler, "register"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    status, stage = "import", "loading the job"
    try:
        job = _load(spec_path)
        if job.main_path is not None:
            stage = f"re-running the __main__ script {job.main_path}"
            _run_main_script(job.main_path)
        if sync is not None and job.kind in ("callable", "statement"):
            stage = "preparing the duet's target"
            cfg = run_config(**{k: v for k, v in job.options.items() if k in _SYNCED_OPTIONS})
            target = _variant_target(job, cfg.clock)
            status, stage = "exception", "measuring"
            result = run_target(target, cfg, ready=_synced(*sync)).to_dict()
        elif job.kind == "callable":
            stage = f"importing {job.module}:{job.qualname}"
            fn = _import_callable(job)
            stage = "importing the arguments"
            args = tuple(_resolved(a) for a in pickle.loads(job.args))
            kwargs = {k: _resolved(v) for k, v in pickle.loads(job.kwargs).items()}
            status, stage = "exception", "measuring"
            result = _measure_callable(job, fn, args, kwargs).to_dict()
        elif job.kind == "statement":
            stage = "importing the globals"
            glob = {k: _resolved(v) for k, v in pickle.loads(job.globals).items()}
            status, stage = "exception", "measuring"
            result = _measure_statement(job, glob).to_dict()
        elif job.kind == "rounds":
            targets: dict[str, Target] = {}
            cfg = run_config(**job.options)
            for variant in job.variants:
                stage = f"preparing variant {variant.name!r}"
                status = "import"
                targets[variant.name] = _variant_target(variant, cfg.clock)
            status, stage = "exception", "measuring"
            _, measurements, _ = run_rounds(targets, cfg)
            result = {"rounds": {n: m.to_dict() for n, m in measurements.items()}}
        else:
            raise ValueError(f"unknown job kind {job.kind!r}; expected 'callable', "
                             "'statement' or 'rounds'")
        if job.kind == "statement":
            result = _with_import_check(job, result)
    except BaseException as exc:  # noqa: BLE001 - SystemExit from the workload fails it too
        traceback.print_exc()
        _write(out_path, {"worker_error": {
            "status": status, "stage": stage,
            "error": "".join(traceback.format_exception_only(type(exc), exc)).strip(),
        }})
        return 1
    _write(out_path, result)
    return 0


# The options a duet's worker takes: those of the timing itself (memory and counters would
# run after the samples and are not paired).
_SYNCED_OPTIONS = ("warmup", "min_time_s", "repeat", "duration_s", "loops", "clock",
                   "disable_gc", "max_time_s", "target_rel_ci")


def _synced(read_fd: int, write_fd: int) -> Callable[[], None]:
    """The ``ready`` of a duet: say so on ``write_fd``, wait for the go on ``read_fd``."""
    def ready() -> None:
        os.write(write_fd, b"r")
        if os.read(read_fd, 1) != b"g":
            raise RuntimeError("the duet's parent went away before the samples started")
    return ready


# A version's code directories (fastbench.timing.versions), separated by os.pathsep: the
# packages its statement imports must come from there.
ENV_VERSION_ROOTS = "FASTBENCH_VERSION_ROOTS"


def _with_import_check(job: WorkerJob, result: dict[str, Any]) -> dict[str, Any]:
    """A version's result with a warning for each package its statement imported from the
    user's code outside the version's directories (an editable install of the project
    hands its working tree to every version that way)."""
    roots = [os.path.realpath(r) for r in os.environ.get(ENV_VERSION_ROOTS, "").split(os.pathsep)
             if r]
    if not roots:
        return result
    found = []
    for top in sorted(imported_packages(job.setup) | imported_packages(job.stmt)):
        path = getattr(sys.modules.get(top), "__file__", None)
        if not path or not is_user_file(str(path)):
            continue
        real = os.path.realpath(str(path))
        if not any(real == r or real.startswith(r + os.sep) for r in roots):
            found.append(f"{top} from {path}")
    if not found:
        return result
    text = (f"version import: {', '.join(found)}, outside this version's code "
            f"({', '.join(roots)}): another path entry or an editable install came first, so "
            "this may not be the version's own code; uninstall the editable install, or give "
            "--install")
    return {**result, "warnings": [*result.get("warnings", []), text]}


def _load(spec_path: str) -> WorkerJob:
    with open(spec_path, "rb") as f:
        spec = pickle.load(f)
    path = list(spec["sys_path"])
    sys.path[:] = path + [p for p in sys.path if p not in path]
    job = pickle.loads(spec["job"])
    if not isinstance(job, WorkerJob):
        raise TypeError(f"the spec holds a {type(job).__name__}, not a WorkerJob")
    return job


def _run_main_script(path: str) -> None:
    """Re-run the parent's ``__main__`` script as ``__mp_main__``, as multiprocessing's spawn
    does, so that what it defines imports and unpickles by its ``__main__`` name."""
    module = types.ModuleType("__mp_main__")
    with loading_main_script():
        module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
    sys.modules["__main__"] = sys.modules["__mp_main__"] = module


def _resolved(value: Any) -> Any:
    return value.resolve() if isinstance(value, ImportRef) else value


def _import_callable(job: WorkerJob) -> Callable[..., Any]:
    obj: Any = (sys.modules["__main__"] if job.module == "__main__"
                else importlib.import_module(job.module))
    for name in job.qualname.split("."):
        obj = getattr(obj, name)
    if not callable(obj):
        raise TypeError(f"{job.module}:{job.qualname} is a {type(obj).__name__}, not callable")
    fn: Callable[..., Any] = obj
    return fn


def _measure_callable(job: WorkerJob, fn: Callable[..., Any], args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Measurement:
    m = measure(fn, *args, name=job.name, **job.options, **kwargs)
    if not isinstance(m, Measurement):  # the options never ask for another metric
        raise TypeError(f"a worker measures time, got {type(m).__name__}")
    return m


def _measure_statement(job: WorkerJob, glob: dict[str, Any]) -> Measurement:
    m = timeit(job.stmt, job.setup, glob, **job.options)
    if not isinstance(m, Measurement):
        raise TypeError(f"a worker measures time, got {type(m).__name__}")
    return m if m.name == job.name else replace(m, name=job.name)


def _variant_target(variant: WorkerJob, clock: str) -> Target:
    """The timed target of one variant of a rounds job: its callable with its arguments, or
    its statement in its globals."""
    if variant.kind == "callable":
        fn = _import_callable(variant)
        args = tuple(_resolved(a) for a in pickle.loads(variant.args))
        kwargs = {k: _resolved(v) for k, v in pickle.loads(variant.kwargs).items()}
        return callable_target(fn, args, kwargs, clock, name=variant.name)
    glob = {k: _resolved(v) for k, v in pickle.loads(variant.globals).items()}
    return statement_target(variant.stmt, variant.setup, glob, clock, name=variant.name)


def _write(out_path: str, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON under a temporary name, then rename it: the parent never reads
    a half-written file, whatever happens to this process."""
    out = Path(out_path)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
