"""Two profiles compared item by item: which ops, modules and families (and the step itself)
changed time, judged on the per-step samples with a multiple-comparison correction; only
changes that are significant and large enough to matter are flagged.

Numbers in, a result out: it neither profiles nor prints (the CLI prints the result's
lines). The unit of both samples is the step: a step's time in an item is one draw, and
the steps of A and of B are two independent samples (the ops inside one step are not).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import check_choice, check_finite, check_fraction, check_in_range
from ..report.lines import TextLines, brief_repr, printable
from ..report.table import table
from ..stats import MIN_SAMPLES, adjust_pvalues
from ..units import format_ns, format_rel
from .result import BYS, Profile

__all__ = ["CORRECTIONS", "DIFF_BYS", "MIN_CHANGE", "ProfileChange", "ProfileDiff", "diff"]

DIFF_BYS = ("step", *BYS)
CORRECTIONS = ("holm", "bh", "none")

# A change is news when it moves the step by at least this fraction of A's mean step time.
# Significance alone is not enough: with enough steps a 3% change of an op taking 0.1% of
# the step is significant and worth nothing (Amdahl: 0.003% of the step). 1% is about the
# smallest step change a person acts on, and about the run-to-run variation of a quiet
# machine: two profiles are two runs, and a run-wide shift smaller than that would
# otherwise flag every large item.
MIN_CHANGE = 0.01


@dataclass(frozen=True)
class ProfileChange:
    """One item compared between profile A and profile B.

    Attributes
    ----------
    by : str
        The table: "step" (the whole step), "op", "module", "family" or "region".
    name : str
        The item's name in its table ("" for the model itself among modules).
    time_a_s, time_b_s : float
        Mean seconds per step in A and in B (0 where the item is absent).
    delta_s : float
        ``time_b_s - time_a_s``: positive means B is slower.
    delta_ci : (float, float) or None
        Welch's interval of ``delta_s`` at ``1 - alpha``; None with fewer than 2 steps.
    ratio : float or None
        ``time_b_s / time_a_s`` (> 1 means B is slower); None where A's time is not
        positive (an item new in B).
    ratio_ci : (float, float) or None
        Its interval at ``1 - alpha`` (delta method on the log ratio); None where the ratio
        is, or either side has no time or fewer than 2 steps.
    share_a, share_b : float
        The item's share of the step (0-1; net times of ops can put it a little outside),
        in A and in B; a file may hold -1 to 2.
    p_value : float
        Welch's two-sided test of equal means per step, before correction.
    p_adjusted : float
        After the correction across all items tested.
    flagged : bool
        Significant after correction and at least the diff's ``min_change`` of A's step.
    """

    by: str
    name: str
    time_a_s: float
    time_b_s: float
    delta_s: float
    delta_ci: tuple[float, float] | None
    ratio: float | None
    ratio_ci: tuple[float, float] | None
    share_a: float
    share_b: float
    p_value: float
    p_adjusted: float
    flagged: bool

    @property
    def label(self) -> str:
        """"module: layer1.0.conv1", "op: aten::addmm", "step"."""
        if self.by == "step":
            return "step"
        name = "(model)" if self.by == "module" and self.name == "" else self.name
        return f"{self.by}: {name}"

    @property
    def delta_share(self) -> float:
        """``share_b - share_a``, in fractions of the step."""
        return self.share_b - self.share_a

    @property
    def verdict(self) -> str:
        """"slower", "faster" (B against A) or "no significant change"."""
        if not self.flagged:
            return "no significant change"
        return "slower" if self.delta_s > 0 else "faster"

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "name": self.name, "time_a_s": self.time_a_s,
                "time_b_s": self.time_b_s, "delta_s": self.delta_s,
                "delta_ci": None if self.delta_ci is None else list(self.delta_ci),
                "ratio": self.ratio,
                "ratio_ci": None if self.ratio_ci is None else list(self.ratio_ci),
                "share_a": self.share_a, "share_b": self.share_b, "p_value": self.p_value,
                "p_adjusted": self.p_adjusted, "flagged": self.flagged}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProfileChange:
        def number(v: Any, what: str, low: float, high: float) -> float:
            return check_in_range(f"a change's {what}", v, low, high)

        def pair(v: Any, what: str, low: float, high: float) -> tuple[float, float] | None:
            if v is None:
                return None
            if not isinstance(v, (list, tuple)) or len(v) != 2:
                raise ValueError(f"a change's {what} must be two numbers or null")
            lo, hi = number(v[0], what, low, high), number(v[1], what, low, high)
            if lo > hi:
                raise ValueError(f"a change's {what} is inverted: [{lo:g}, {hi:g}]")
            return lo, hi

        t = _MAX_STEP_S
        ratio = None if d["ratio"] is None else number(d["ratio"], "ratio", 0.0, _MAX_RATIO)
        return cls(str(d["by"]), str(d["name"]), number(d["time_a_s"], "time_a_s", 0.0, t),
                   number(d["time_b_s"], "time_b_s", 0.0, t),
                   number(d["delta_s"], "delta_s", -t, t), pair(d["delta_ci"], "delta_ci", -t, t),
                   ratio, pair(d["ratio_ci"], "ratio_ci", 0.0, _MAX_RATIO),
                   number(d["share_a"], "share_a", -1.0, 2.0),
                   number(d["share_b"], "share_b", -1.0, 2.0),
                   number(d["p_value"], "p_value", 0.0, 1.0),
                   number(d["p_adjusted"], "p_adjusted", 0.0, 1.0), bool(d["flagged"]))


# What a diff file may hold: times of a step (about 11 days, as a profile's), ratios of them.
_MAX_STEP_S = 1e6
_MAX_RATIO = 1e12

_PLURALS = {"op": "ops", "module": "modules", "family": "families", "region": "regions"}


def _signed_ns(seconds: float) -> str:
    return ("+" if seconds > 0 else "") + format_ns(seconds * 1e9, 3)


@dataclass(frozen=True)
class ProfileDiff(TextLines):
    """Profile B against profile A, item by item (:func:`diff`).

    Attributes
    ----------
    labels : (str, str)
        What the two profiles are called in the text.
    steps_a, steps_b : int
        Steps in each.
    changes : tuple of ProfileChange
        Every item tested: the step first, then each table's items, slower first.
    alpha : float
        The family-wise (Holm) or false-discovery (BH) level.
    correction : str
        "holm", "bh" or "none".
    min_change : float
        The smallest change flagged, as a fraction of A's mean step time.
    warnings : tuple of str
    """

    labels: tuple[str, str]
    steps_a: int
    steps_b: int
    changes: tuple[ProfileChange, ...]
    alpha: float
    correction: str
    min_change: float
    warnings: tuple[str, ...] = ()

    @property
    def flagged(self) -> tuple[ProfileChange, ...]:
        """The flagged changes: slower ones first (largest first), then faster ones
        (largest gain first)."""
        found = [c for c in self.changes if c.flagged]
        return tuple(sorted(found, key=lambda c: (c.delta_s <= 0, -abs(c.delta_s))))

    @property
    def step(self) -> ProfileChange | None:
        """The whole step's comparison."""
        return next((c for c in self.changes if c.by == "step"), None)

    def __repr__(self) -> str:
        a, b = self.labels
        return brief_repr(self, f"{a!r} -> {b!r}: {len(self.flagged)} of {len(self.changes)} "
                                f"items changed")

    def lines(self) -> list[str]:
        a, b = (printable(x) for x in self.labels)  # file names: shown escaped
        out = [f"profile diff: {a} ({self.steps_a} steps) -> {b} ({self.steps_b} steps)"]
        s = self.step
        if s is not None:
            ratio = "" if s.ratio is None else f", {s.ratio:.3f}x"
            if s.ratio_ci is not None:
                ratio += f" [{s.ratio_ci[0]:.3f}, {s.ratio_ci[1]:.3f}]"
            out.append(f"  step {format_ns(s.time_a_s * 1e9)} -> {format_ns(s.time_b_s * 1e9)} "
                       f"({_signed_ns(s.delta_s)}{ratio}): {s.verdict}")
        # The step has its line above; the table holds the items.
        flagged = [c for c in self.flagged if c.by != "step"]
        if flagged:
            body = []
            for c in flagged:
                ratio = "new" if c.ratio is None else f"{c.ratio:.3f}x"
                ci = ("-" if c.ratio_ci is None
                      else f"[{c.ratio_ci[0]:.3f}, {c.ratio_ci[1]:.3f}]")
                body.append((_signed_ns(c.delta_s), ratio, ci,
                             f"{100 * c.share_a:.1f}% -> {100 * c.share_b:.1f}%",
                             f"{c.p_adjusted:.2g}", c.label))
            out.append("")
            out.append(f"significant changes, slower first (ratio: {b}'s time per step over "
                       f"{a}'s; p after correction):")
            out.extend(table(("change/step", "ratio", f"{1 - self.alpha:.0%} CI",
                              "share", "p", "item"), body, align="rrrrrl"))
        counts: dict[str, int] = {}
        for c in self.changes:
            if c.by != "step":
                counts[c.by] = counts.get(c.by, 0) + 1
        what = ", ".join(f"{n} {_PLURALS[by] if n != 1 else by}" for by, n in counts.items())
        how = {"holm": "Holm-corrected", "bh": "Benjamini-Hochberg-corrected",
               "none": "uncorrected"}[self.correction]
        items = len(self.changes) - (s is not None)
        rest = items - len(flagged)
        out.append("")
        out.append(f"{items} items tested ({what}) and the step: Welch's test on the "
                   f"per-step times, {how}, alpha {self.alpha:g};")
        out.append(("the other " if flagged else "all ")
                   + f"{rest} showed no significant change of at least "
                   f"{format_rel(self.min_change)} of {a}'s step")
        out.extend(f"  warning: {printable(w)}" for w in self.warnings)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "steps_a": self.steps_a, "steps_b": self.steps_b,
                "changes": [c.to_dict() for c in self.changes], "alpha": self.alpha,
                "correction": self.correction, "min_change": self.min_change,
                "warnings": list(self.warnings)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProfileDiff:
        labels = d["labels"]
        if len(labels) != 2:
            raise ValueError(f"labels must name the two profiles, got {len(labels)} names")
        correction = check_choice("correction", d["correction"], CORRECTIONS)
        return cls((str(labels[0]), str(labels[1])), int(d["steps_a"]), int(d["steps_b"]),
                   tuple(ProfileChange.from_dict(c) for c in d["changes"]),
                   float(d["alpha"]), correction, float(d["min_change"]),
                   tuple(str(w) for w in d.get("warnings", ())))


def _welch(a: NDArray[np.float64], b: NDArray[np.float64],
           confidence: float) -> tuple[float, tuple[float, float] | None]:
    """Welch's two-sided p-value for equal means and the interval of ``mean(b) - mean(a)``.

    Welch (1947) rather than a rank test: what a profile reports, and what Amdahl's law
    adds up, is the mean time per step, and the interval of the change in ms per step comes
    from the same statistic, so the two cannot disagree. A side with one step has no spread
    to judge: p = 1 and no interval.
    """
    from scipy import stats as _st

    na, nb = a.size, b.size
    d = float(np.mean(b) - np.mean(a))
    if na < 2 or nb < 2:
        return 1.0, None
    va, vb = float(np.var(a, ddof=1)) / na, float(np.var(b, ddof=1)) / nb
    se2 = va + vb
    if se2 <= 0.0 or not math.isfinite(se2):
        # No spread on either side: the means differ exactly or not at all.
        return (0.0 if d != 0.0 else 1.0), (d, d)
    se = math.sqrt(se2)
    df = se2 ** 2 / ((va ** 2 / (na - 1) if va else 0.0) + (vb ** 2 / (nb - 1) if vb else 0.0))
    p = float(2.0 * _st.t.sf(abs(d) / se, df))
    half = float(_st.t.ppf(0.5 + confidence / 2.0, df)) * se
    return min(max(p, 0.0), 1.0), (d - half, d + half)


def _ratio(a: NDArray[np.float64], b: NDArray[np.float64],
           confidence: float) -> tuple[float | None, tuple[float, float] | None]:
    """``mean(b) / mean(a)`` and its interval from the delta method on the log ratio:
    ``se² = s_a² / (n_a m_a²) + s_b² / (n_b m_b²)``, Welch-Satterthwaite degrees of
    freedom."""
    from scipy import stats as _st

    ma, mb = float(np.mean(a)), float(np.mean(b))
    if ma <= 0.0 or mb < 0.0:
        return None, None
    r = mb / ma
    if mb == 0.0 or a.size < 2 or b.size < 2:
        return r, None
    va = float(np.var(a, ddof=1)) / (a.size * ma * ma)
    vb = float(np.var(b, ddof=1)) / (b.size * mb * mb)
    se2 = va + vb
    if se2 <= 0.0:
        return r, (r, r)
    df = se2 ** 2 / ((va ** 2 / (a.size - 1) if va else 0.0)
                     + (vb ** 2 / (b.size - 1) if vb else 0.0))
    half = float(_st.t.ppf(0.5 + confidence / 2.0, df)) * math.sqrt(se2)
    return r, (r * math.exp(-half), r * math.exp(half))


def _share(t: NDArray[np.float64], steps: NDArray[np.float64]) -> float:
    total = float(np.sum(steps))
    return float(np.sum(t)) / total if total > 0 else 0.0


def diff(a: Profile, b: Profile, by: Sequence[str] = ("op", "module", "family"), *,
         alpha: float = 0.05, correction: str = "holm", min_change: float = MIN_CHANGE,
         labels: tuple[str, str] = ("A", "B")) -> ProfileDiff:
    """Which items changed time from profile ``a`` to profile ``b``.

    For the step and every item of each table in ``by`` present in either profile (absent
    on one side, its time there is 0 in every step), the per-step times of A and of B
    (:meth:`.Profile.times`; the step's own from ``step_times``) are compared by Welch's
    two-sided t-test on the means, the steps of each profile being the independent units.
    The p-values of all items, over all tables and the step, are corrected together
    (Holm's step-down by default, valid however the tests depend on each other: an op's
    time is also in its module's and family's). An item is flagged when its corrected
    p-value is below ``alpha`` and its mean change is at least ``min_change`` of A's mean
    step time (see :data:`MIN_CHANGE`), and each profile has at least ``MIN_SAMPLES`` (6)
    steps.

    Two profiles are two runs: the test sees the variation between steps, not between runs.
    A shift of the whole machine between the runs (another clock speed, a noisy
    neighbour) shows as a change of the step and of its largest items; profile A twice to
    see how far a run moves on its own.

    Parameters
    ----------
    a, b : Profile
        The baseline and the candidate.
    by : sequence of str
        Tables to compare: "op", "module", "family", "region".
    alpha : float
        Significance level after correction, in (0, 1); intervals are at ``1 - alpha``.
    correction : {"holm", "bh", "none"}
        Holm (family-wise error), Benjamini-Hochberg (false discovery rate) or none.
    min_change : float
        The smallest change flagged, as a fraction of A's mean step time, in [0, 1).
    labels : (str, str)
        What the text calls the two profiles.

    Returns
    -------
    ProfileDiff
        ``.changes`` every item, ``.flagged`` the significant ones; printed, the table of
        flagged changes.

    Raises
    ------
    TypeError
        ``a`` or ``b`` is not a Profile, or a number argument is not a number.
    ValueError
        An unknown table, correction, a level out of range, or a profile without steps.
    """
    for name, prof in (("a", a), ("b", b)):
        if not isinstance(prof, Profile):
            raise TypeError(f"{name} must be a fastbench Profile (from fastbench.profile or "
                            f"fastbench.load), got {type(prof).__name__}")
        if prof.steps == 0:
            raise ValueError(f"{name} holds no step: profile at least {MIN_SAMPLES} steps "
                             "to compare")
    if isinstance(by, str):
        by = (by,)
    tables = [check_choice("by", t, BYS) for t in by]
    if len(set(tables)) != len(tables):
        raise ValueError(f"by must name each table once, got {tuple(by)}")
    level = check_fraction("alpha", alpha, example="0.05")
    method = check_choice("correction", correction, CORRECTIONS)
    floor = check_finite("min_change", min_change)
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"min_change must be a fraction of the step in [0, 1) (0.01 for "
                         f"1%), got {min_change!r}")
    if (not isinstance(labels, (tuple, list)) or len(labels) != 2
            or not all(isinstance(x, str) for x in labels)):
        raise TypeError(f"labels must be two str, got {labels!r}")

    confidence = 1.0 - level
    samples: list[tuple[str, str, NDArray[np.float64], NDArray[np.float64]]] = [
        ("step", "step", a.step_times, b.step_times)]
    for table_name in tables:
        ta, tb = a.times(table_name), b.times(table_name)
        for item in [*ta, *(k for k in tb if k not in ta)]:
            xa = ta.get(item, np.zeros(a.steps))
            xb = tb.get(item, np.zeros(b.steps))
            samples.append((table_name, item, xa, xb))

    tested = [_welch(xa, xb, confidence) for _, _, xa, xb in samples]
    raw = np.array([p for p, _ in tested], dtype=np.float64)
    adjusted = raw if method == "none" else adjust_pvalues(raw, method)
    step_a = a.step_time_s
    enough = min(a.steps, b.steps) >= MIN_SAMPLES
    changes = []
    for (table_name, item, xa, xb), (p, ci), p_adj in zip(samples, tested, adjusted):
        delta = float(np.mean(xb) - np.mean(xa))
        ratio, ratio_ci = _ratio(xa, xb, confidence)
        flagged = bool(enough and p_adj < level and abs(delta) >= floor * step_a)
        changes.append(ProfileChange(
            table_name, item, float(np.mean(xa)), float(np.mean(xb)), delta, ci, ratio,
            ratio_ci, _share(xa, a.step_times), _share(xb, b.step_times), float(p),
            float(p_adj), flagged))
    # The step first, then each table in the order asked, slower first within it.
    order = {t: i for i, t in enumerate(["step", *tables])}
    changes.sort(key=lambda c: (order[c.by], -c.delta_s))

    notes = []
    if not enough:
        notes.append(f"too few steps to judge: {a.steps} and {b.steps} (at least "
                     f"{MIN_SAMPLES} per profile); nothing is flagged")
    name_a, name_b = a.meta.get("name"), b.meta.get("name")
    if name_a and name_b and name_a != name_b:
        notes.append(f"{labels[0]} and {labels[1]} profile different things: {name_a!r} "
                     f"and {name_b!r}")
    return ProfileDiff((str(labels[0]), str(labels[1])), a.steps, b.steps, tuple(changes),
                       level, method, floor, tuple(notes))
