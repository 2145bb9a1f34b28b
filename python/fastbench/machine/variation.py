"""How much separate runs of the same code vary on this machine: the record
(:class:`RunVariation`), where it is kept (a file per machine fingerprint in fastbench's
cache directory), and how it is looked up (:func:`known_run_variation`, which a user can
override with ``FASTBENCH_RUN_VARIATION``). Measuring it takes worker processes and is
:func:`fastbench.timing.measure_run_variation`'s; nothing here measures or prints.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from .._version import __version__
from .facts import machine_info

__all__ = ["RunVariation", "cache_dir", "fingerprint", "known_run_variation",
           "store_run_variation", "variation_path"]

# Environment variable that gives the run-to-run variation by hand (a fraction: 0.03 for 3%).
ENV_VARIATION = "FASTBENCH_RUN_VARIATION"


def cache_dir() -> Path:
    """Where fastbench keeps what it measured of this machine: ``$FASTBENCH_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/fastbench``, else ``~/.cache/fastbench``."""
    base = os.environ.get("FASTBENCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "fastbench")
    return Path(base)


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """A short hash naming this machine: CPU model, logical cores, caches and host name.

    Two machines of the same CPU type are different hosts with their own neighbours and
    hypervisor, hence the host name; a changed CPU or core count is a different machine."""
    info = machine_info()
    key = json.dumps([info.cpu_model, info.logical_cores,
                      [f"L{c.level} {c.kind} {c.size_bytes}" for c in info.caches],
                      info.hostname])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def variation_path() -> Path:
    """The file that holds this machine's run-to-run variation."""
    return cache_dir() / f"run-variation-{fingerprint()}.json"


@dataclass(frozen=True)
class RunVariation:
    """How much the median of one run of the same code varies from run to run here.

    Attributes
    ----------
    rel_sd : float
        Standard deviation of the runs' log medians: about the relative standard deviation
        between runs (0.03 for runs about 3% apart).
    processes : int
        Runs (worker processes) it was measured with; 0 when given by hand.
    workload : str
        What the runs measured (each took the default one second of samples).
    run_medians_ns : tuple of float
        The median of each run, in the order run.
    measured_at : str
        UTC time of the measurement (ISO 8601), empty when given by hand.
    fingerprint : str
        The machine it belongs to (:func:`fingerprint`).
    fastbench_version : str
    source : str
        "measured" (by fastbench) or "environment" (``FASTBENCH_RUN_VARIATION``).
    """

    rel_sd: float
    processes: int
    workload: str = ""
    run_medians_ns: tuple[float, ...] = ()
    measured_at: str = ""
    fingerprint: str = ""
    fastbench_version: str = __version__
    source: str = "measured"

    @property
    def df(self) -> int | None:
        """Degrees of freedom of ``rel_sd`` (processes - 1); None for a value given by hand."""
        return self.processes - 1 if self.processes > 1 else None

    def to_dict(self) -> dict[str, Any]:
        return {"rel_sd": self.rel_sd, "processes": self.processes, "workload": self.workload,
                "run_medians_ns": list(self.run_medians_ns), "measured_at": self.measured_at,
                "fingerprint": self.fingerprint, "fastbench_version": self.fastbench_version,
                "source": self.source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunVariation:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            ``rel_sd`` missing, not finite or negative, or ``processes`` negative.
        """
        try:
            rel_sd = float(data["rel_sd"])
            processes = int(data.get("processes", 0))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"run variation data lacks a valid rel_sd/processes ({exc})") from None
        if not (math.isfinite(rel_sd) and rel_sd >= 0.0) or processes < 0:
            raise ValueError(f"run variation rel_sd must be finite and >= 0 and processes >= 0, "
                             f"got {rel_sd!r} and {processes!r}")
        return cls(rel_sd=rel_sd, processes=processes, workload=str(data.get("workload", "")),
                   run_medians_ns=tuple(float(x) for x in data.get("run_medians_ns", ())),
                   measured_at=str(data.get("measured_at", "")),
                   fingerprint=str(data.get("fingerprint", "")),
                   fastbench_version=str(data.get("fastbench_version", "")),
                   source=str(data.get("source", "measured")))


def _from_environment() -> RunVariation | None:
    text = os.environ.get(ENV_VARIATION)
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{ENV_VARIATION} must be a fraction such as 0.03 (for 3%), "
                         f"got {text!r}") from None
    if not (math.isfinite(value) and 0.0 <= value < 1.0):
        raise ValueError(f"{ENV_VARIATION} must be a fraction in [0, 1) such as 0.03 (for 3%), "
                         f"got {text!r}")
    return RunVariation(rel_sd=value, processes=0, source="environment")


@lru_cache(maxsize=8)
def _stored(path: Path) -> RunVariation | None:
    try:
        rv = RunVariation.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, AttributeError):
        return None  # absent or unreadable: unknown
    return rv if rv.fingerprint == fingerprint() else None


def known_run_variation() -> RunVariation | None:
    """This machine's run-to-run variation: ``FASTBENCH_RUN_VARIATION`` when set, else the
    value ``fastbench variation`` measured and stored here, else None (unknown).

    Raises
    ------
    ValueError
        ``FASTBENCH_RUN_VARIATION`` is set but is not a fraction in [0, 1).
    """
    return _from_environment() or _stored(variation_path())


def store_run_variation(rv: RunVariation) -> Path | None:
    """Keep ``rv`` as this machine's run-to-run variation; the path written, or None when
    the cache directory cannot be written (the value is then not remembered)."""
    path = variation_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".run-variation-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(rv.to_dict(), f, indent=1)
        os.replace(tmp, path)
    except OSError:
        return None
    finally:
        _stored.cache_clear()
    return path
