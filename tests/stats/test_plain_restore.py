"""fastbench.stats.plain.restore: a record rebuilt from its plain, JSON-round-tripped data,
field by field against the original."""

from __future__ import annotations

import json
from dataclasses import dataclass

from fastbench.stats.plain import plain, restore


@dataclass(frozen=True)
class Inner:
    n: int
    pair: tuple[float, float] | None


@dataclass(frozen=True)
class Outer:
    name: str
    counts: tuple[int, ...]
    inner: tuple[Inner, ...]
    ci: tuple[float, float] | None
    scale: float
    notes: tuple[str, ...] = ()


def test_restore_inverts_plain_through_json() -> None:
    r = Outer("x", (1, 2, 3), (Inner(4, (0.5, 1.5)), Inner(5, None)), None, 2.0, ("a",))
    back = restore(Outer, json.loads(json.dumps(plain(r))))
    assert back == r
    assert isinstance(back.counts, tuple) and isinstance(back.inner[0].pair, tuple)


def test_restore_takes_defaults_and_annotated_types() -> None:
    back = restore(Outer, {"name": "y", "counts": [1.0], "inner": [], "ci": [1, 2],
                           "scale": 3})
    assert back.notes == ()
    assert back.counts == (1,) and type(back.counts[0]) is int
    assert back.ci == (1.0, 2.0) and type(back.scale) is float
