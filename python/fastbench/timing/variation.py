"""Measuring how much separate runs of the same code vary on this machine
(:func:`measure_run_variation`): a small pure-Python workload timed in worker processes one
after the other, exactly as ``measure`` times it in one process, and the spread of their
medians kept per machine (:mod:`fastbench.machine.variation`). Single-run results are judged
against it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from .._checks import check_int
from ..machine import RunVariation, fingerprint, store_run_variation
from ..measurement import Measurement
from ..stats.runs import run_spread
from .config import MAX_PROCESSES
from .workers import run_workers, statement_job

__all__ = ["VARIATION_PROCESSES", "measure_run_variation"]

# Processes measure_run_variation uses by default: 9 degrees of freedom for the spread.
VARIATION_PROCESSES = 10
# The workload: sorting 400 floats (a few µs): interpreter, allocator and cache bound, the
# kind of code whose runs wander with the host's speed.
_SETUP = "import random\nrandom.seed(12345)\ndata = [random.random() for _ in range(400)]"
_STMT = "sorted(data)"


def measure_run_variation(
    processes: int = VARIATION_PROCESSES,
    *,
    store: bool = True,
    progress: Callable[[int, int, str], None] | None = None,
) -> RunVariation:
    """Measure the run-to-run variation of this machine and (by default) remember it.

    Runs ``sorted(data)`` over 400 floats in ``processes`` fresh worker processes, one after
    the other, each taking the samples one ``fastbench.timeit`` call takes (about a second
    after calibration and warmup), and returns the standard deviation of the logs of their
    medians: about the relative standard deviation between runs. It costs about
    ``processes`` x 1.3 s. Stored under the machine's fingerprint, it is what single-run
    results measured here carry (``Measurement.run_variation``) and what
    :func:`fastbench.compare_measurements` judges them against.

    Runs of other code can vary more (memory-bound work with its own page placement, say) or
    less; give ``run_variation=`` to a comparison when you know better.

    Raises
    ------
    TypeError, ValueError
        ``processes`` is not an int of at least 3.
    fastbench.timing.workers.WorkerError
        A worker failed.
    """
    count = check_int("processes", processes, 3, say_positive=False,
                      maximum=MAX_PROCESSES)
    job = statement_job(_STMT, _SETUP, name="run variation: sorted(400 floats)")
    runs = run_workers(job, count, progress=progress)
    m = Measurement.from_runs(runs)
    # Every process counts here, those the host slowed from start to end too: a single run
    # judged against this spread cannot tell that it was one of them.
    rv = RunVariation(
        rel_sd=float(run_spread(m.run_medians_ns) or 0.0),
        processes=count,
        workload="sorted() of 400 floats, one fastbench.timeit per process",
        run_medians_ns=tuple(float(x) for x in m.run_medians_ns),
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        fingerprint=fingerprint(),
    )
    if store:
        store_run_variation(rv)
    return rv
