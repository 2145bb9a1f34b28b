"""The records of a comparison: :class:`Comparison` (timings, one verdict per candidate) and
:class:`InstructionComparison` (instruction counts), with their plain-data forms. Nothing here
measures or judges; the records do not register themselves as results-file kinds
(fastbench.results names them in its table).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..report.lines import brief_repr
from ..counters import CountComparison, InstructionCount, compare_counts
from ..measurement import Measurement
from ..stats import SampleComparison

__all__ = ["Comparison", "InstructionComparison", "compare_instruction_counts"]


@dataclass(frozen=True, eq=False)
class Comparison:
    """Candidates against a baseline: their measurements and one verdict per candidate.

    Attributes
    ----------
    baseline : str
        Name of the baseline variant.
    measurements : dict of str to Measurement
        Every variant's measurement; for an interleaved run, sample i of each variant comes
        from round i.
    results : dict of str to SampleComparison
        Per candidate, against the baseline: speedup (baseline / candidate) with its CI,
        p-values (``p_value`` corrected for multiple candidates), effect sizes, verdict.
    paired : bool
        True when rounds pair the samples (interleaved runs), False for saved results.
    correction : str
        Multiple-testing correction of ``p_value``: "holm", "bh" or "none".
    rounds : int
        Rounds completed (samples per variant when paired).
    stop_reason : str
        "rounds" (all requested rounds ran), "duration_s" (rounds went on past
        ``rounds`` until ``duration_s`` had passed), "max_time_s" (the budget ended them),
        "processes" (variants measured in interleaved worker processes; ``rounds`` counts
        the processes per variant), "processes-rounds" (all variants side by side in each
        of ``rounds`` worker processes), "versions" (versions of the code, ``rounds``
        interleaved workers each), "versions-duet" (versions in ``rounds`` duets, two
        workers at a time on two cores) or "saved" (compared from existing measurements).
    versions : dict of str to str
        For versions of the code: each one's spec as given (``git:main``, ``.``,
        ``python:/opt/venv/bin/python``); empty otherwise.
    design : str
        For versions of the code: how their workers ran and why ("duet: cores 0 and 1 are
        free"); empty otherwise.
    """

    baseline: str
    measurements: dict[str, Measurement]
    results: dict[str, SampleComparison]
    paired: bool
    correction: str
    rounds: int
    stop_reason: str
    versions: dict[str, str] = field(default_factory=dict)
    design: str = ""

    @property
    def verdicts(self) -> dict[str, str]:
        """Candidate name -> "faster", "slower", "no significant difference" or "cannot
        tell" (separate single runs whose difference is within the run-to-run variation)."""
        return {name: r.verdict for name, r in self.results.items()}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; :meth:`from_dict` restores it."""
        return {
            "baseline": self.baseline,
            "measurements": {k: m.to_dict() for k, m in self.measurements.items()},
            "results": {k: r.to_dict() for k, r in self.results.items()},
            "paired": self.paired,
            "correction": self.correction,
            "rounds": self.rounds,
            "stop_reason": self.stop_reason,
            "versions": dict(self.versions),
            "design": self.design,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """Rebuild a Comparison from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            If a key is missing or a part is malformed.
        """
        try:
            return cls(
                baseline=str(data["baseline"]),
                measurements={str(k): Measurement.from_dict(v)
                              for k, v in data["measurements"].items()},
                results={str(k): SampleComparison.from_dict(v)
                         for k, v in data["results"].items()},
                paired=bool(data["paired"]),
                correction=str(data["correction"]),
                rounds=int(data["rounds"]),
                stop_reason=str(data["stop_reason"]),
                versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
                design=str(data.get("design", "")),
            )
        except KeyError as exc:
            raise ValueError(f"Comparison data lacks {exc}") from None

    def __repr__(self) -> str:
        said = ", ".join(f"{name!r} {r.verdict} ({r.speedup:.3g}x)"
                         for name, r in self.results.items())
        return brief_repr(self, f"baseline {self.baseline!r}: {said or 'no candidate'}")

    def __str__(self) -> str:
        from ..report.text import comparison_lines

        return "\n".join(comparison_lines(self))


@dataclass(frozen=True, eq=False)
class InstructionComparison:
    """Candidates against a baseline on instructions per call (``metric="instructions"``).

    Attributes
    ----------
    baseline : str
        Name of the baseline variant.
    counts : dict of str to InstructionCount
        Every variant's count.
    results : dict of str to CountComparison
        Per candidate: the relative change of its count and the verdict, "faster",
        "slower" or "within tolerance" (:func:`fastbench.counters.compare_counts`), with
        what a count cannot see.
    tolerance : float
        Relative change within which two counts are the same (0.005: ±0.5%).
    """

    baseline: str
    counts: dict[str, InstructionCount]
    results: dict[str, CountComparison]
    tolerance: float

    @property
    def verdicts(self) -> dict[str, str]:
        """Candidate name -> "faster", "slower" or "within tolerance"."""
        return {name: r.verdict for name, r in self.results.items()}

    @property
    def measurements(self) -> dict[str, InstructionCount]:
        """The counts (the name ``Comparison`` uses for its measurements)."""
        return self.counts

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; :meth:`from_dict` restores it."""
        return {"baseline": self.baseline,
                "counts": {k: c.to_dict() for k, c in self.counts.items()},
                "results": {k: r.to_dict() for k, r in self.results.items()},
                "tolerance": self.tolerance}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InstructionComparison:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            If a key is missing or a part is malformed.
        """
        try:
            return cls(
                baseline=str(data["baseline"]),
                counts={str(k): InstructionCount.from_dict(v) for k, v in data["counts"].items()},
                results={str(k): CountComparison.from_dict(v)
                         for k, v in data["results"].items()},
                tolerance=float(data["tolerance"]),
            )
        except KeyError as exc:
            raise ValueError(f"InstructionComparison data lacks {exc}") from None

    def __repr__(self) -> str:
        said = ", ".join(f"{name!r} {r.verdict} ({r.rel_diff_pct:+.2f}%)"
                         for name, r in self.results.items())
        return brief_repr(self, f"instructions, baseline {self.baseline!r}: "
                                f"{said or 'no candidate'}")

    def __str__(self) -> str:
        from ..report.text import instruction_comparison_lines

        return "\n".join(instruction_comparison_lines(self))


def compare_instruction_counts(
    baseline: InstructionCount,
    candidates: Mapping[str, InstructionCount],
    *,
    baseline_name: str = "baseline",
    tolerance: float = 0.005,
) -> InstructionComparison:
    """Judge instruction counts (saved or fresh) against a baseline's, within ``tolerance``.

    Raises
    ------
    TypeError
        ``baseline`` is not an InstructionCount, or ``candidates`` not a mapping of name to
        InstructionCount (a single count is given as ``{"name": count}``).
    ValueError
        No candidates, a candidate named like the baseline, counts of different sources,
        or a tolerance out of range.
    """
    if not isinstance(baseline, InstructionCount):
        raise TypeError(f"baseline must be an InstructionCount, got {type(baseline).__name__}")
    if not isinstance(candidates, Mapping):
        raise TypeError(f"candidates must be a mapping of name to InstructionCount (e.g. "
                        f"{{'new': count}}), got {type(candidates).__name__}")
    bad = [str(n) for n, c in candidates.items() if not isinstance(c, InstructionCount)]
    if bad:
        raise TypeError(f"candidates must map names to InstructionCount; not one: {bad}")
    if not candidates:
        raise ValueError("compare_instruction_counts needs at least one candidate")
    if baseline_name in candidates:
        raise ValueError(f"a candidate is named like the baseline ({baseline_name!r})")
    return InstructionComparison(
        baseline=baseline_name,
        counts={baseline_name: baseline, **candidates},
        results={name: compare_counts(baseline, c, tolerance=tolerance)
                 for name, c in candidates.items()},
        tolerance=tolerance,
    )
