"""Pareto fronts, dominance and knees: hand-worked sets, a brute-force oracle on random
sets, "max" as negated "min", and the argument checks."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fastbench.suite.pareto import SENSES, dominated_by, knee, pareto_front

MIN_MAX = ("min", "max")

# Latency in ms (min) and accuracy (max).
#   C (25, .78) loses to B (20, .80) on both; E (40, .84) ties D (40, .85) on latency and is
#   less accurate; G (90, .86) ties F (80, .86) on accuracy and is slower. No other pair
#   dominates (A is fastest, F and G most accurate), so the front is A, B, D, F.
# Knee, normalized over the front to [0, 1] with 0 best: latency (10..80, span 70) gives
#   A 0, B 10/70 = 0.1429, D 30/70 = 0.4286, F 1; accuracy (best .86, span .16) gives
#   A 1, B .06/.16 = 0.375, D .01/.16 = 0.0625, F 0. Distance to the chord x + y = 1 on the
#   ideal side, times sqrt(2): A 0, B 1 - 0.1429 - 0.375 = 0.4821, D 1 - 0.4286 - 0.0625 =
#   0.5089, F 0. The knee is D.
LATENCY_ACCURACY = {
    "A": (10.0, 0.70), "B": (20.0, 0.80), "C": (25.0, 0.78), "D": (40.0, 0.85),
    "E": (40.0, 0.84), "F": (80.0, 0.86), "G": (90.0, 0.86),
}


def test_hand_worked_two_objectives() -> None:
    assert pareto_front(LATENCY_ACCURACY, MIN_MAX) == ["A", "B", "D", "F"]
    assert dominated_by(LATENCY_ACCURACY, MIN_MAX) == {"C": ["B"], "E": ["D"], "G": ["F"]}
    assert knee(LATENCY_ACCURACY, MIN_MAX) == "D"
    assert knee(LATENCY_ACCURACY, MIN_MAX, front=["A", "B", "D", "F"]) == "D"


def test_hand_worked_three_objectives() -> None:
    # Latency (min), memory (min), accuracy (max). S (30, 80, .75) loses to Q (20, 60, .80)
    # on all three and to no one else (P uses more memory, R and T are slower). Front P, Q,
    # R, T normalized: latency 10..50 -> P 0, Q .25, R .75, T 1; memory 50..120 -> P
    # 50/70 = .7143, Q 10/70 = .1429, R 0, T 1; accuracy best .95, span .25 -> P 1, Q .6,
    # R .2, T 0. Squared distances to the ideal point: P 0 + .5102 + 1 = 1.5102, Q .0625 +
    # .0204 + .36 = .4429, R .5625 + 0 + .04 = .6025, T 2. The knee is Q.
    points = {"P": (10, 100, 0.70), "Q": (20, 60, 0.80), "R": (40, 50, 0.90),
              "S": (30, 80, 0.75), "T": (50, 120, 0.95)}
    senses = ("min", "min", "max")
    assert pareto_front(points, senses) == ["P", "Q", "R", "T"]
    assert dominated_by(points, senses) == {"S": ["Q"]}
    assert knee(points, senses) == "Q"


def test_identical_points_both_stay() -> None:
    # Two identical points do not dominate each other; a third beats both.
    assert pareto_front({"x": (1, 2), "y": (1, 2)}, ("min", "min")) == ["x", "y"]
    assert dominated_by({"x": (1, 2), "y": (1, 2)}, ("min", "min")) == {}
    both = {"x": (1, 2), "y": (1, 2), "z": (0, 2)}
    assert pareto_front(both, ("min", "min")) == ["z"]
    assert dominated_by(both, ("min", "min")) == {"x": ["z"], "y": ["z"]}


def test_knee_is_none_without_a_bend() -> None:
    # Fewer than 3 points, or 3 names on only 2 distinct points.
    assert knee({"a": (0, 1), "b": (1, 0)}, ("min", "min")) is None
    assert knee({"a": (0, 1), "b": (1, 0), "c": (1, 0)}, ("min", "min")) is None
    # A straight front: (5, 5) lies on the chord from (1, 9) to (9, 1).
    line = {"a": (1, 9), "m1": (5, 5), "m2": (5, 5), "b": (9, 1)}
    assert pareto_front(line, ("min", "min")) == ["a", "m1", "m2", "b"]
    assert knee(line, ("min", "min")) is None
    # A concave front: (8, 8) normalized is (7/8, 7/8), on the far side of the chord.
    assert knee({"a": (1, 9), "m": (8, 8), "b": (9, 1)}, ("min", "min")) is None
    # No points at all.
    assert pareto_front({}, MIN_MAX) == [] and knee({}, MIN_MAX) is None


def test_tied_knee_goes_to_the_first_name() -> None:
    # (3, 3) normalized is (0.25, 0.25): 0.5 / sqrt(2) inside the chord, shared by m2, m1.
    points = {"a": (1, 9), "m2": (3, 3), "m1": (3, 3), "b": (9, 1)}
    assert knee(points, ("min", "min")) == "m2"


# -- a brute-force oracle on random sets ---------------------------------------------------

def _better_or_equal(u: float, v: float, sense: str) -> bool:
    return u <= v if sense == "min" else u >= v


def _strictly_better(u: float, v: float, sense: str) -> bool:
    return u < v if sense == "min" else u > v


def _dominates(a: tuple[float, ...], b: tuple[float, ...], senses: tuple[str, ...]) -> bool:
    return (all(_better_or_equal(u, v, s) for u, v, s in zip(a, b, senses))
            and any(_strictly_better(u, v, s) for u, v, s in zip(a, b, senses)))


def _oracle_knee_2d(points: dict[str, tuple[float, ...]], senses: tuple[str, ...],
                    front: list[str]) -> str | None:
    """Badness in [0, 1] per objective over the front, the extremes' chord, and the signed
    point-to-line distance (cross product over the chord's length), toward the origin."""
    if len({points[n] for n in front}) < 3:
        return None
    bad = {}
    for n in front:
        coords = []
        for k, s in enumerate(senses):
            col = [points[m][k] for m in front]
            best, worst = (min(col), max(col)) if s == "min" else (max(col), min(col))
            coords.append((points[n][k] - best) / (worst - best))
        bad[n] = coords
    a = min(front, key=lambda n: (bad[n][0], bad[n][1]))   # best on objective 0
    b = min(front, key=lambda n: (bad[n][1], bad[n][0]))   # best on objective 1
    (ax, ay), (bx, by) = bad[a], bad[b]
    length = math.hypot(bx - ax, by - ay)
    best_name, best_d = None, 1e-9
    for n in front:
        px, py = bad[n]
        # Positive on the origin's side of the line from a to b.
        d = ((bx - ax) * (ay - py) - (ax - px) * (by - ay)) / length
        d = d if (bx - ax) * ay - ax * (by - ay) > 0 else -d
        if d > best_d:
            best_name, best_d = n, d
    return best_name


@pytest.mark.parametrize("seed", range(40))
def test_random_sets_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    senses = tuple(str(s) for s in rng.choice(SENSES, size=k))
    n = int(rng.integers(1, 30))
    # Small integers make ties and duplicates common; floats exercise the knee.
    raw = rng.integers(0, 6, size=(n, k)) if seed % 2 else rng.random((n, k))
    points = {f"p{i}": tuple(float(v) for v in raw[i]) for i in range(n)}
    expected_front = [a for a in points
                      if not any(_dominates(points[b], points[a], senses) for b in points)]
    expected_dominated = {a: [b for b in points if _dominates(points[b], points[a], senses)]
                          for a in points}
    expected_dominated = {a: bs for a, bs in expected_dominated.items() if bs}
    assert pareto_front(points, senses) == expected_front
    assert dominated_by(points, senses) == expected_dominated
    if k == 2:
        assert knee(points, senses) == _oracle_knee_2d(points, senses, expected_front)


def test_random_knees_against_brute_force() -> None:
    """Two objectives, 30 random sets of 20-60 points in the unit square, each sense
    random: the knee matches the oracle's, and most sets do have one (a random front is
    a staircase that bends toward the ideal point)."""
    found = 0
    for seed in range(30):
        rng = np.random.default_rng(300 + seed)
        senses = tuple(str(s) for s in rng.choice(SENSES, size=2))
        raw = rng.random((int(rng.integers(20, 61)), 2))
        points = {f"p{i}": (float(x), float(y)) for i, (x, y) in enumerate(raw)}
        front = [a for a in points
                 if not any(_dominates(points[b], points[a], senses) for b in points)]
        expected = _oracle_knee_2d(points, senses, front)
        assert knee(points, senses) == expected
        found += expected is not None
    assert found >= 20


@pytest.mark.parametrize("seed", range(20))
def test_max_is_negated_min(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    k = 2 + seed % 3
    senses = tuple(str(s) for s in rng.choice(SENSES, size=k))
    raw = rng.normal(size=(25, k))
    points = {f"p{i}": tuple(raw[i]) for i in range(25)}
    negated = {name: tuple(-v if s == "max" else v for v, s in zip(vals, senses))
               for name, vals in points.items()}
    all_min = ("min",) * k
    assert pareto_front(points, senses) == pareto_front(negated, all_min)
    assert dominated_by(points, senses) == dominated_by(negated, all_min)
    assert knee(points, senses) == knee(negated, all_min)


@pytest.mark.parametrize("seed", range(10))
def test_knee_ignores_units(seed: int) -> None:
    """Normalization makes the knee independent of each objective's unit and offset
    (seconds or milliseconds, accuracy or accuracy + 1)."""
    rng = np.random.default_rng(200 + seed)
    k = 2 + seed % 2
    raw = rng.random((30, k))
    points = {f"p{i}": tuple(raw[i]) for i in range(30)}
    scale = rng.uniform(0.001, 1000.0, size=k)
    shift = rng.uniform(-10.0, 10.0, size=k)
    moved = {name: tuple(v * scale + shift) for name, v in ((n, np.array(p))
                                                           for n, p in points.items())}
    senses = ("min",) * k
    assert pareto_front(moved, senses) == pareto_front(points, senses)
    assert knee(moved, senses) == knee(points, senses)


def test_a_convex_front_has_its_bend_as_knee() -> None:
    """Points on the quarter circle x^2 + y^2 = 1 (both minimized, x, y >= 0) are all on the
    front; the chord from (0, 1) to (1, 0) is farthest from the circle at 45 degrees."""
    angles = np.linspace(0.0, math.pi / 2.0, 19)        # 5 degree steps; index 9 is 45
    points = {f"a{i}": (math.cos(t), math.sin(t)) for i, t in enumerate(angles)}
    assert pareto_front(points, ("min", "min")) == list(points)
    # Minimized, the circle bends away from the ideal point: mirror it to bend toward it.
    mirrored = {n: (1.0 - x, 1.0 - y) for n, (x, y) in points.items()}
    assert knee(points, ("min", "min")) is None
    assert knee(mirrored, ("min", "min")) == "a9"
    assert knee(points, ("max", "max")) == "a9"


@pytest.mark.parametrize(("points", "senses", "error", "match"), [
    ({"a": (1, 2)}, ("min",), ValueError, "2 or more objectives"),
    ({"a": (1, 2)}, ("min", "fast"), ValueError, r"senses\[1\] must be one of"),
    ({"a": (1, 2), "b": (1, 2, 3)}, MIN_MAX, ValueError, r"points\['b'\] has 3 value"),
    ({"a": (1, float("nan"))}, MIN_MAX, ValueError, "finite"),
    ({"a": (1, float("inf"))}, MIN_MAX, ValueError, "finite"),
    ({"a": (1, "2")}, MIN_MAX, TypeError, "number"),
    ({"a": (1, 2)}, "minmax", TypeError, "senses"),
    ([(1, 2)], MIN_MAX, TypeError, "mapping"),
])
def test_bad_arguments(points: object, senses: object, error: type[Exception],
                       match: str) -> None:
    for function in (pareto_front, dominated_by, knee):
        with pytest.raises(error, match=match):
            function(points, senses)  # type: ignore[operator]


def test_front_names_must_be_points() -> None:
    with pytest.raises(ValueError, match="'Z'"):
        knee(LATENCY_ACCURACY, MIN_MAX, front=["A", "Z"])


def test_every_pair_checked_once_more_by_hand() -> None:
    """The dominance relation of the hand-worked set, pair by pair, matches dominated_by."""
    doms = dominated_by(LATENCY_ACCURACY, MIN_MAX)
    for a, b in itertools.permutations(LATENCY_ACCURACY, 2):
        assert (b in doms.get(a, [])) == _dominates(LATENCY_ACCURACY[b], LATENCY_ACCURACY[a],
                                                     MIN_MAX)
