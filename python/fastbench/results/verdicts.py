"""The verdicts of a set of comparisons as machine-readable data: what ``fastbench compare
--json`` writes. Per candidate: its verdict, speedup and interval, change, p values, the
test and the level it was judged at, its warnings each with a code, and the identities of
both sides; then the gate's decision. Plain data built from the records; nothing here
measures, judges or prints.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from typing import Any, Iterable, Union

from ..comparison import Comparison, GateResult, InstructionComparison
from ..measurement import Measurement

__all__ = ["VERDICTS_FORMAT", "verdicts_document", "warning_code", "write_verdicts"]

# The format's name and version, bumped on any change a reader would misread.
# 1 - first version.
VERDICTS_FORMAT = "fastbench-verdicts/1"

# Every sentence a comparison's warnings can begin with, and its code (tests check that
# the writers' sentences are all recognised).
_CODES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("variation-unknown", re.compile(r"cannot tell: (how much separate runs vary|each side's "
                                     r"runs shared one invocation)")),
    ("within-variation", re.compile(r"cannot tell: .* vary by about ")),
    ("detectable-change", re.compile(r"no significant difference rules out only ")),
    ("invocations-unseen", re.compile(r"each side's runs shared one invocation, so ")),
    ("judged-against-invocations", re.compile(r".*vary by about [0-9.]+% between invocations")),
    ("too-few-runs", re.compile(r"too few runs for a verdict")),
    ("too-few-samples", re.compile(r"too few samples for a verdict|few samples: |no \d+% "
                                   r"confidence interval")),
    ("corrected-p", re.compile(r"(faster|slower) on its own \(p ")),
    ("disturbed-runs", re.compile(r"\d+ of \d+ pairs left out|processes left out as disturbed")),
    ("hint-pairing", re.compile(r"pairing='rounds'")),
    ("hint-together", re.compile(r"where both versions can run in one invocation")),
    ("identity-unknown", re.compile(r"identity unknown for ")),
    ("identity-same", re.compile(r"identical code on both sides")),
    ("identity-differs", re.compile(r"versions differ in: ")),
    ("identical-pairs", re.compile(r"every pair is identical")),
    ("unequal-sizes", re.compile(r"unequal sample sizes")),
    ("wilcoxon-failed", re.compile(r"the Wilcoxon test could not run")),
    ("heap-layouts", re.compile(r".*heap layout")),
    ("counts-blind-spots", re.compile(r".*(cannot see|instruction counts)")),
)

Judged = Union[Comparison, InstructionComparison]


def warning_code(text: str) -> str:
    """The code of a comparison's warning sentence ("other" for one this version does not
    know: another tool's, or a newer fastbench's)."""
    code = getattr(text, "code", None)
    if isinstance(code, str) and code:
        return code
    for name, pattern in _CODES:
        if pattern.match(text):
            return name
    return "other"


def _warnings(texts: Iterable[str]) -> list[dict[str, str]]:
    return [{"code": warning_code(str(t)), "text": str(t)} for t in texts]


def _side(m: Measurement) -> dict[str, Any]:
    ci = m.median_ci_ns
    return {"name": m.name, "median_ns": m.median_ns,
            "median_ci_ns": None if ci is None else list(ci), "runs": m.runs,
            "identity": None if m.identity is None else m.identity.to_dict(),
            "warnings": _warnings(m.warnings)}


def _candidate(c: Judged, name: str) -> dict[str, Any]:
    r = c.results[name]
    entry: dict[str, Any] = {"name": name, "baseline": c.baseline, "verdict": r.verdict,
                             "speedup": r.speedup, "change_pct": r.rel_diff_pct,
                             "warnings": _warnings(r.warnings)}
    if isinstance(c, Comparison):
        r = c.results[name]
        ci = r.speedup_ci
        entry.update({
            "speedup_ci": None if ci is None else list(ci), "confidence": r.confidence,
            "p_value": r.p_value, "p_wilcoxon": r.p_wilcoxon, "p_mannwhitney": r.p_mannwhitney,
            "p_welch": r.p_welch, "cohens_d": r.cohens_d, "hedges_g": r.hedges_g,
            "cliffs_delta": r.cliffs_delta, "test": r.test, "level": r.level,
            "run_variation": r.run_variation, "alpha": r.alpha, "min_effect": r.min_effect,
            "baseline_side": _side(c.measurements[c.baseline]),
            "candidate_side": _side(c.measurements[name]),
        })
    else:
        entry.update({"metric": "instructions", "tolerance": c.tolerance,
                      "baseline_count": c.counts[c.baseline].per_call,
                      "candidate_count": c.counts[name].per_call})
    return entry


def verdicts_document(comparisons: Iterable[Judged], gate: GateResult, *,
                      kind: str) -> dict[str, Any]:
    """The JSON-ready document of ``comparisons`` and the ``gate``'s decision over them;
    ``kind`` says what was compared ("files", "run" or "versions")."""
    items = list(comparisons)
    return {
        "format": VERDICTS_FORMAT,
        "kind": kind,
        "comparisons": [{
            "baseline": c.baseline,
            "how": getattr(c, "stop_reason", "instructions"),
            "design": getattr(c, "design", ""),
            "versions": dict(getattr(c, "versions", {})),
            "candidates": [_candidate(c, name) for name in c.results],
        } for c in items],
        "gate": gate.to_dict(),
    }


def _plain(value: Any) -> Any:
    """JSON's own values: a non-finite number (which standard JSON cannot hold) is null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def write_verdicts(path: str | os.PathLike[str], document: dict[str, Any]) -> None:
    """Write the document as JSON (non-finite numbers as null), atomically: a reader never
    sees half of it."""
    document = _plain(document)
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".verdicts-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=1, allow_nan=False)
            f.write("\n")
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
