"""The gate: whether the comparisons of a change let it through. One judgement, called by
``fastbench compare``, the pytest plugin and the history alike: a candidate fails when it
is significantly slower by more than the threshold, and the gate cannot judge it when its
verdict is "cannot tell" or when its interval still allows a slowdown beyond the threshold.
It never passes silently: what it cannot judge it says, and ``strict`` makes that a
failure of its own. Verdicts are :mod:`fastbench.comparison`'s; nothing here measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Union

from ..report.lines import TextLines, brief_repr
from .records import Comparison, InstructionComparison
from ..counters import CountComparison
from ..stats import SampleComparison
from ..stats.twosample import CANNOT_TELL, SLOWER

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_SLOWER", "EXIT_UNDECIDED", "EXIT_USAGE", "GateCheck",
           "GateResult", "gate"]

# Exit statuses of a gate (`fastbench compare`, `pytest --fastbench-fail-slower`): documented
# in `fastbench compare --help` and docs/measuring.md.
EXIT_OK = 0
EXIT_ERROR = 1        # an error: bad files, nothing compared, a failed worker
EXIT_USAGE = 2        # a bad command line (argparse's own status)
EXIT_SLOWER = 3       # a candidate significantly slower by more than the threshold
EXIT_UNDECIDED = 4    # with strict: a candidate the gate could not judge

OUTCOMES = ("pass", "fail", "undecided")

Judged = Union[Comparison, InstructionComparison]


@dataclass(frozen=True)
class GateCheck:
    """The gate's judgement of one candidate.

    Attributes
    ----------
    baseline, candidate : str
        The names compared.
    verdict : str
        The comparison's verdict.
    change_pct : float
        The candidate's change in time (or instructions), in %: positive is slower.
    worst_pct : float or None
        The largest slowdown in % the interval allows (its far end); None when the
        comparison has no interval (instruction counts, "cannot tell" without a known
        variation).
    outcome : str
        "pass", "fail" or "undecided".
    reason : str
        Why, in a few words.
    """

    baseline: str
    candidate: str
    verdict: str
    change_pct: float
    worst_pct: float | None
    outcome: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "candidate": self.candidate,
                "verdict": self.verdict, "change_pct": self.change_pct,
                "worst_pct": self.worst_pct, "outcome": self.outcome, "reason": self.reason}


@dataclass(frozen=True)
class GateResult(TextLines):
    """What the gate decided over every candidate.

    Attributes
    ----------
    threshold_pct : float or None
        The slowdown in % beyond which a significant one fails (None: slowdowns never
        fail; "cannot tell" still counts as undecided).
    strict : bool
        Whether a candidate the gate cannot judge fails it.
    checks : tuple of GateCheck
    """

    threshold_pct: float | None
    strict: bool
    checks: tuple[GateCheck, ...]

    @property
    def failed(self) -> tuple[GateCheck, ...]:
        return tuple(c for c in self.checks if c.outcome == "fail")

    @property
    def undecided(self) -> tuple[GateCheck, ...]:
        return tuple(c for c in self.checks if c.outcome == "undecided")

    @property
    def status(self) -> str:
        """"fail" (a candidate failed), "undecided" (none failed, some could not be judged)
        or "pass"."""
        return "fail" if self.failed else "undecided" if self.undecided else "pass"

    @property
    def exit_code(self) -> int:
        """EXIT_SLOWER when a candidate failed; EXIT_UNDECIDED when, under ``strict``, one
        could not be judged; else EXIT_OK."""
        if self.failed:
            return EXIT_SLOWER
        if self.undecided and self.strict:
            return EXIT_UNDECIDED
        return EXIT_OK

    def __repr__(self) -> str:
        return brief_repr(self, f"{self.status}: {len(self.failed)} failed of "
                                f"{len(self.checks)} checks, threshold {self.threshold_pct:g}%")

    def lines(self) -> list[str]:
        """What a person must read: one line naming the failures, one naming what could not
        be judged (empty when everything passed)."""
        out = []
        if self.failed:
            what = ", ".join(f"{c.candidate} ({c.change_pct:+.2f}%)" for c in self.failed)
            out.append(f"error: significantly slower by more than {self.threshold_pct:g}%: "
                       f"{what}")
        if self.undecided:
            what = "; ".join(f"{c.candidate}: {c.reason}" for c in self.undecided)
            then = (f"a failure under --strict (exit {EXIT_UNDECIDED})" if self.strict
                    else f"--strict makes this a failure (exit {EXIT_UNDECIDED})")
            out.append(f"{'error' if self.strict else 'warning'}: the gate could not judge "
                       f"{len(self.undecided)} of {len(self.checks)} candidate"
                       f"{'s' if len(self.checks) != 1 else ''} ({what}); {then}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"threshold_pct": self.threshold_pct, "strict": self.strict,
                "status": self.status, "exit_code": self.exit_code,
                "checks": [c.to_dict() for c in self.checks]}


def _worst(r: SampleComparison | CountComparison) -> float | None:
    ci = getattr(r, "speedup_ci", None)
    if ci is None or float(ci[0]) <= 0.0:
        return None
    return (1.0 / float(ci[0]) - 1.0) * 100.0


def _check(baseline: str, name: str, r: SampleComparison | CountComparison,
           threshold: float | None) -> GateCheck:
    worst = _worst(r)
    change = float(r.rel_diff_pct)

    def made(outcome: str, reason: str) -> GateCheck:
        return GateCheck(baseline, name, r.verdict, change, worst, outcome, reason)

    if r.verdict == CANNOT_TELL:
        return made("undecided", "cannot tell")
    if threshold is None:
        return made("pass", "no threshold")
    if r.verdict == SLOWER and change > threshold:
        return made("fail", f"slower by {change:+.2f}%")
    if isinstance(r, CountComparison):  # counts are exact up to the heap's layout
        return made("pass", f"within {threshold:g}%")
    if worst is None:
        return made("undecided", "no interval")
    if worst > threshold:
        return made("undecided", f"its interval allows a slowdown of {worst:.1f}%, beyond "
                                 f"{threshold:g}%")
    return made("pass", f"at most {worst:+.1f}% slower (95% interval)")


def gate(comparisons: Judged | Iterable[Judged], fail_slower_pct: float | None = None, *,
         strict: bool = False) -> GateResult:
    """Judge every candidate of ``comparisons`` against a threshold.

    A candidate fails when its verdict is "slower" and its change exceeds
    ``fail_slower_pct``; it passes when its interval rules out a slowdown beyond the
    threshold (for instruction counts: when it is not "slower" beyond it); otherwise the
    gate cannot judge it: its verdict is "cannot tell", or its interval (the far end of the
    speedup's 95% CI) still allows a slowdown beyond the threshold, as a "no significant
    difference" of a noisy measurement does. Without a threshold only "cannot tell" is
    undecided.

    Parameters
    ----------
    comparisons : Comparison, InstructionComparison, or an iterable of them
    fail_slower_pct : float, optional
        The slowdown in percent beyond which a significant one fails.
    strict : bool
        Make a candidate the gate cannot judge a failure (``exit_code`` EXIT_UNDECIDED).

    Returns
    -------
    GateResult

    Raises
    ------
    TypeError
        Not comparisons.
    ValueError
        A negative or non-finite threshold.
    """
    items = [comparisons] if isinstance(comparisons, (Comparison, InstructionComparison)) \
        else list(comparisons)
    for c in items:
        if not isinstance(c, (Comparison, InstructionComparison)):
            raise TypeError(f"gate() judges Comparison and InstructionComparison records, got "
                            f"{type(c).__name__}")
    threshold = None
    if fail_slower_pct is not None:
        if isinstance(fail_slower_pct, bool) or not isinstance(fail_slower_pct, (int, float)):
            raise TypeError(f"fail_slower_pct must be a number, got "
                            f"{type(fail_slower_pct).__name__}")
        threshold = float(fail_slower_pct)
        if not (math.isfinite(threshold) and threshold >= 0.0):
            raise ValueError(f"fail_slower_pct must be a finite number >= 0, got "
                             f"{fail_slower_pct!r}")
    checks = tuple(_check(c.baseline, name, r, threshold)
                   for c in items for name, r in c.results.items())
    return GateResult(threshold, bool(strict), checks)
