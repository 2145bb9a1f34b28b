"""Tests for fastbench.stats.planning (required_samples, samples_for_power): the smallest n
checked against Student's and the noncentral t distributions from scipy, a textbook value
(Cohen 1988), and the input checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from fastbench.stats import required_samples, samples_for_power

LOGNORMAL = np.random.default_rng(2024).lognormal(mean=np.log(1000.0), sigma=0.1, size=200)


# -- required_samples --------------------------------------------------------------------------
def _half_width(cv: float, n: int, confidence: float) -> float:
    return float(sps.t.ppf(0.5 + confidence / 2, n - 1) * cv / math.sqrt(n))


@pytest.mark.parametrize("rel", [0.001, 0.005, 0.01, 0.05, 0.2])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_required_samples_is_the_smallest_n_meeting_the_precision(
    rel: float, confidence: float
) -> None:
    x = LOGNORMAL
    cv = float(np.std(x, ddof=1) / np.mean(x))
    n = required_samples(x, rel, confidence)
    assert n >= 2
    assert _half_width(cv, n, confidence) <= rel
    if n > 2:
        assert _half_width(cv, n - 1, confidence) > rel
    # Never below the normal-quantile answer, since t > z.
    assert n >= (sps.norm.ppf(0.5 + confidence / 2) * cv / rel) ** 2 - 1


def test_required_samples_small_n_where_t_matters() -> None:
    x = np.array([100.0, 150.0, 80.0, 120.0])  # cv about 0.26
    n = required_samples(x, 0.2)
    cv = float(np.std(x, ddof=1) / np.mean(x))
    assert _half_width(cv, n, 0.95) <= 0.2 < _half_width(cv, n - 1, 0.95)
    assert n > math.ceil((1.96 * cv / 0.2) ** 2)  # the normal answer would be too small


def test_required_samples_without_spread_is_two() -> None:
    assert required_samples([3.0, 3.0, 3.0], 0.01) == 2


@pytest.mark.parametrize("rel", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")])
def test_required_samples_rejects_precision(rel: float) -> None:
    with pytest.raises(ValueError, match="rel_precision"):
        required_samples(LOGNORMAL, rel)


def test_required_samples_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="at least 2 samples"):
        required_samples([1.0], 0.01)
    with pytest.raises(ValueError, match="positive mean"):
        required_samples([-1.0, -2.0], 0.01)
    with pytest.raises(ValueError, match="confidence"):
        required_samples(LOGNORMAL, 0.01, confidence=1.0)
    for bad in ([], [[1.0, 2.0]], [1.0, float("nan")], [1.0, float("inf")]):
        with pytest.raises(ValueError):
            required_samples(bad, 0.01)


# -- samples_for_power -------------------------------------------------------------------------
def _power(n: int, cv: float, effect: float, alpha: float, paired: bool, rho: float) -> float:
    if paired:
        sd = math.sqrt(2 * (1 - rho)) * cv
        df, nc = n - 1, effect / (sd / math.sqrt(n))
    else:
        df, nc = 2 * n - 2, effect / (cv * math.sqrt(2 / n))
    crit = sps.t.ppf(1 - alpha / 2, df)
    return float(sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc))


@pytest.mark.parametrize(
    ("cv", "effect", "power", "alpha", "paired", "rho"),
    [
        (0.05, 0.02, 0.8, 0.05, False, 0.0),
        (0.05, 0.02, 0.8, 0.05, True, 0.0),
        (0.05, 0.02, 0.8, 0.05, True, 0.5),
        (0.02, 0.01, 0.9, 0.01, False, 0.0),
        (0.3, 0.05, 0.95, 0.05, False, 0.0),
        (0.1, 0.2, 0.8, 0.05, False, 0.0),  # small n: t and z differ
        (0.1, 0.2, 0.8, 0.05, True, 0.0),
        (0.01, 0.001, 0.8, 0.05, True, 0.9),
        (0.05, -0.02, 0.8, 0.05, False, 0.0),  # sign ignored
    ],
)
def test_samples_for_power_is_the_smallest_n_reaching_the_power(
    cv: float, effect: float, power: float, alpha: float, paired: bool, rho: float
) -> None:
    n = samples_for_power(cv, effect, power, alpha, paired=paired, correlation=rho)
    eff = abs(effect)
    assert _power(n, cv, eff, alpha, paired, rho) >= power
    if n > 2:
        assert _power(n - 1, cv, eff, alpha, paired, rho) < power
    z = sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power)
    spread = math.sqrt(2 * (1 - rho)) * cv if paired else cv
    normal_n = (1 if paired else 2) * (z * spread / eff) ** 2
    assert normal_n <= n <= normal_n + 4  # exact t is a little above the normal formula


def test_samples_for_power_textbook_value() -> None:
    # Cohen's d = 0.5 (effect 0.05, cv 0.1), alpha 0.05, power 0.8: 64 per group (Cohen
    # 1988, table 2.4.1), and 34 for the one-sample/paired test with d = 0.5.
    assert samples_for_power(0.1, 0.05) == 64
    assert samples_for_power(0.1 / math.sqrt(2), 0.05, paired=True) == 34


def test_samples_for_power_minimum_is_two() -> None:
    assert samples_for_power(0.001, 0.5) == 2
    assert samples_for_power(0.05, 0.02, paired=True, correlation=0.999999) == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cv": 0.0}, "cv"),
        ({"cv": -0.1}, "cv"),
        ({"cv": float("nan")}, "cv"),
        ({"effect": 0.0}, "effect"),
        ({"effect": float("inf")}, "effect"),
        ({"power": 0.0}, "power"),
        ({"power": 1.0}, "power"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"paired": True, "correlation": 1.0}, "correlation"),
        ({"paired": True, "correlation": -1.5}, "correlation"),
        ({"correlation": 0.5}, "paired"),
    ],
)
def test_samples_for_power_rejects(kwargs: dict[str, float], match: str) -> None:
    args: dict[str, float] = {"cv": 0.05, "effect": 0.02}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        samples_for_power(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"cv": "0.05"}, "cv"), ({"effect": None}, "effect"), ({"power": "high"}, "power"),
     ({"alpha": True}, "alpha"), ({"paired": True, "correlation": "0.5"}, "correlation")],
)
def test_samples_for_power_settings_must_be_numbers(kwargs: dict[str, object], name: str) -> None:
    args: dict[str, object] = {"cv": 0.05, "effect": 0.02}
    args.update(kwargs)
    with pytest.raises(TypeError, match=f"^{name} must be a number, got "):
        samples_for_power(**args)  # type: ignore[arg-type]


def test_required_samples_settings_must_be_numbers() -> None:
    with pytest.raises(TypeError, match="rel_precision must be a number"):
        required_samples(LOGNORMAL, "1%")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="confidence must be a number"):
        required_samples(LOGNORMAL, 0.01, confidence=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("rel", [1e-9, 1e-200, 1e-300, 5e-324])
def test_required_samples_beyond_any_run_is_a_clear_error(rel: float) -> None:
    # Beyond 2**53 samples, up to where (z cv / rel)^2 overflows float64: an error
    # that says how many samples it would take, not an OverflowError.
    with pytest.raises(ValueError, match=r"^rel_precision [0-9e-]+ with a cv of 0\.\d+ needs "
                       r"(about|more than) \S+ samples, more than any run can take"):
        required_samples(LOGNORMAL, rel)


def test_required_samples_for_a_tiny_precision_within_reach() -> None:
    # 1e-7 of a cv around 0.1 needs about (1.96 * 0.1 / 1e-7)^2 ~ 4e12 samples: an answer.
    cv = float(np.std(LOGNORMAL, ddof=1) / np.mean(LOGNORMAL))
    n = required_samples(LOGNORMAL, 1e-7)
    assert _half_width(cv, n, 0.95) <= 1e-7 < _half_width(cv, n - 1, 0.95)


@pytest.mark.parametrize("effect", [1e-300, 1e-160])
def test_samples_for_power_beyond_any_run_is_a_clear_error(effect: float) -> None:
    with pytest.raises(ValueError, match=r"^effect [0-9e-]+ with a cv of 0\.05 needs "
                       r"(about|more than) \S+ samples, more than any run can take"):
        samples_for_power(0.05, effect)
