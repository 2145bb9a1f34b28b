"""fastbench.suite.fit: the log-log least squares against scipy's linregress, exact recovery
of a noiseless power law, the exponent interval's coverage on simulated noisy power laws,
the order of growth named, and argument errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fastbench.suite.fit import PowerLawFit, power_law_fit


def test_fit_matches_scipy_linregress_on_log_data() -> None:
    rng = np.random.default_rng(1)
    x = np.array([3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0])
    y = 0.7 * x ** 1.3 * np.exp(rng.normal(0.0, 0.1, x.size))
    fit = power_law_fit(x, y)
    ref = stats.linregress(np.log(x), np.log(y))
    t = stats.t.ppf(0.975, x.size - 2)
    assert fit.exponent == pytest.approx(ref.slope, rel=1e-12)
    assert fit.coefficient == pytest.approx(math.exp(ref.intercept), rel=1e-12)
    assert fit.r2 == pytest.approx(ref.rvalue ** 2, rel=1e-12)
    assert fit.exponent_ci[0] == pytest.approx(ref.slope - t * ref.stderr, rel=1e-12)
    assert fit.exponent_ci[1] == pytest.approx(ref.slope + t * ref.stderr, rel=1e-12)
    assert fit.n_points == 7
    # Another confidence: the t quantile changes with it.
    t90 = stats.t.ppf(0.95, x.size - 2)
    lo, hi = power_law_fit(x, y, confidence=0.9).exponent_ci
    assert hi - lo == pytest.approx(2 * t90 * ref.stderr, rel=1e-12)


def test_exact_power_law_is_recovered() -> None:
    x = [1.0, 2.0, 5.0, 10.0, 50.0]
    fit = power_law_fit(x, [3.0 * v ** 2 for v in x])
    assert fit.exponent == pytest.approx(2.0, abs=1e-12)
    assert fit.coefficient == pytest.approx(3.0, rel=1e-12)
    assert fit.r2 == pytest.approx(1.0, abs=1e-12)
    lo, hi = fit.exponent_ci
    assert lo == pytest.approx(2.0, abs=1e-9) and hi == pytest.approx(2.0, abs=1e-9)
    assert fit.predict(4.0) == pytest.approx(48.0, rel=1e-12)
    assert np.allclose(fit.predict([1.0, 3.0]), [3.0, 27.0], rtol=1e-12)
    assert fit.big_o().endswith("consistent with O(n^2)")


def test_exponent_interval_covers_the_truth_95_percent_of_the_time() -> None:
    # 500 noisy power laws with a known exponent: the 95% interval must hold it in a share
    # of them inside the binomial band (p = 0.95, n = 500: sd 0.0097; +-4 sd is 0.911-0.989).
    rng = np.random.default_rng(20240611)
    x = np.geomspace(1.0, 1000.0, 8)
    sims = 500
    hits = 0
    for _ in range(sims):
        y = 2.5 * x ** 1.5 * np.exp(rng.normal(0.0, 0.2, x.size))
        lo, hi = power_law_fit(x, y).exponent_ci
        hits += lo <= 1.5 <= hi
    share = hits / sims
    band = 4 * math.sqrt(0.95 * 0.05 / sims)
    assert abs(share - 0.95) <= band, share


@pytest.mark.parametrize("k, order", [(0.0, "O(1)"), (0.5, "O(n^0.5)"), (1.0, "O(n)"),
                                      (1.5, "O(n^1.5)"), (2.0, "O(n^2)"), (3.0, "O(n^3)")])
def test_big_o_names_the_usual_order_of_a_slightly_noisy_power_law(k: float, order: str) -> None:
    # Errors of +-1% alternating along a symmetric grid: they do not tilt the line (the
    # slope stays k exactly) but give the interval a width (about +-0.003), which holds k
    # and no other usual order.
    x = np.geomspace(10.0, 1e5, 9)
    y = 1e-6 * x ** k * np.exp(0.01 * (-1.0) ** np.arange(x.size))
    assert power_law_fit(x, y).exponent == pytest.approx(k, abs=1e-12)
    assert power_law_fit(x, y).big_o().endswith(f"consistent with {order}")


def test_big_o_prefers_n_log_n_when_it_fits_better() -> None:
    x = np.geomspace(100.0, 1e6, 9)
    fit = power_law_fit(x, 2e-9 * x * np.log(x))
    # The local exponent of x log x here is 1 + 1/ln x: about 1.1, never 1.
    assert 1.05 < fit.exponent < 1.2
    assert fit.big_o().endswith("consistent with O(n log n)")
    # A pure line with a little noise is n, not n log n.
    line = power_law_fit(x, 2e-9 * x * np.exp(0.01 * (-1.0) ** np.arange(x.size)))
    assert line.big_o().endswith("consistent with O(n)")


def test_big_o_says_when_no_usual_order_is_inside() -> None:
    x = np.geomspace(1.0, 1e4, 7)
    fit = power_law_fit(x, x ** 2.5)
    assert fit.big_o() == "O(n^2.5), no usual order inside the interval [2.5, 2.5]"
    assert fit.order() is None


def test_wide_interval_names_the_nearest_order_inside() -> None:
    # Slope 1.2 with an interval wide enough for 1 and 1.5: 1 is nearer.
    fit = PowerLawFit(1.2, (0.7, 1.7), 1.0, 0.9, 5)
    assert fit.big_o() == "O(n^1.2), consistent with O(n)"
    fit = PowerLawFit(1.3, (0.7, 1.7), 1.0, 0.9, 5)
    assert fit.big_o() == "O(n^1.3), consistent with O(n^1.5)"


def test_to_dict_round_trip() -> None:
    x = [2.0, 4.0, 8.0, 16.0]
    fit = power_law_fit(x, [5.0, 9.0, 21.0, 39.0], confidence=0.9, x_label="FLOPs")
    again = PowerLawFit.from_dict(fit.to_dict())
    assert again == fit
    assert again.x_label == "FLOPs" and again.confidence == 0.9
    assert "FLOPs^" in fit.lines()[0]


@pytest.mark.parametrize("x, y, error, match", [
    ([1.0, 2.0], [1.0, 2.0], ValueError, "at least 3 points"),
    ([1.0, 2.0, 3.0], [1.0, 2.0], ValueError, "same length"),
    ([1.0, 0.0, 3.0], [1.0, 2.0, 3.0], ValueError, "positive finite"),
    ([1.0, 2.0, 3.0], [1.0, -2.0, 3.0], ValueError, "positive finite"),
    ([1.0, 2.0, 3.0], [1.0, float("nan"), 3.0], ValueError, "positive finite"),
    ([2.0, 2.0, 2.0], [1.0, 2.0, 3.0], ValueError, "two distinct"),
    ([[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0]], ValueError, "one-dimensional"),
    (["a", "b", "c"], [1.0, 2.0, 3.0], TypeError, "numbers"),
])
def test_bad_points_are_refused(x: object, y: object, error: type[Exception],
                                match: str) -> None:
    with pytest.raises(error, match=match):
        power_law_fit(x, y)  # type: ignore[arg-type]


def test_bad_confidence_is_refused() -> None:
    with pytest.raises(ValueError, match="confidence"):
        power_law_fit([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], confidence=1.5)


# -- predictions ------------------------------------------------------------------------------

def _lstsq_prediction_interval(x: np.ndarray, y: np.ndarray, x0: float,
                               confidence: float) -> tuple[float, float, float]:
    """The textbook prediction interval of a new log y at log x0, from numpy's least squares
    and the design matrix: var = s^2 (1 + a' (X'X)^-1 a) with a = [1, log x0]."""
    design = np.column_stack([np.ones(x.size), np.log(x)])
    coef, rss, _, _ = np.linalg.lstsq(design, np.log(y), rcond=None)
    s2 = float(rss[0]) / (x.size - 2)
    a = np.array([1.0, math.log(x0)])
    se = math.sqrt(s2 * (1.0 + a @ np.linalg.inv(design.T @ design) @ a))
    t = stats.t.ppf(0.5 + confidence / 2, x.size - 2)
    centre = float(a @ coef)
    return math.exp(centre), math.exp(centre - t * se), math.exp(centre + t * se)


@pytest.mark.parametrize("x0", [3e7, 1e9, 4e9, 1e10])
def test_prediction_interval_matches_the_hand_formula_and_lstsq(x0: float) -> None:
    rng = np.random.default_rng(7)
    x = np.array([1e6, 4e6, 1.6e7, 6.4e7, 2.56e8, 1e9])
    y = 2e-9 * x ** 0.756 * np.exp(rng.normal(0.0, 0.1, x.size))
    fit = power_law_fit(x, y, x_label="FLOPs")
    p = fit.prediction(x0)
    # By hand from scipy's regression: t * s * sqrt(1 + 1/n + (u0 - mean u)^2 / Sxx).
    ref = stats.linregress(np.log(x), np.log(y))
    u = np.log(x)
    resid = np.log(y) - (ref.intercept + ref.slope * u)
    s = math.sqrt(float(np.sum(resid ** 2)) / (x.size - 2))
    sxx = float(np.sum((u - u.mean()) ** 2))
    half = stats.t.ppf(0.975, x.size - 2) * s * math.sqrt(
        1 + 1 / x.size + (math.log(x0) - u.mean()) ** 2 / sxx)
    centre = ref.intercept + ref.slope * math.log(x0)
    assert p.value == pytest.approx(math.exp(centre), rel=1e-10)
    assert p.value == pytest.approx(fit.predict(x0), rel=1e-10)
    assert p.interval[0] == pytest.approx(math.exp(centre - half), rel=1e-10)
    assert p.interval[1] == pytest.approx(math.exp(centre + half), rel=1e-10)
    value, lo, hi = _lstsq_prediction_interval(x, y, x0, 0.95)
    assert (p.value, *p.interval) == pytest.approx((value, lo, hi), rel=1e-9)
    # Another confidence: the t quantile changes with it and nothing else.
    _, lo90, hi90 = _lstsq_prediction_interval(x, y, x0, 0.90)
    assert fit.prediction(x0, 0.90).interval == pytest.approx((lo90, hi90), rel=1e-9)
    assert p.extrapolation == (x0 > 1e9)
    assert p.measured_range == (1e6, 1e9) and p.confidence == 0.95


def test_prediction_interval_covers_new_measurements_95_percent_of_the_time() -> None:
    # Power laws with lognormal noise (sd 0.15 on the log scale), 6 sizes fitted; a new
    # measurement at a size inside the range and at two beyond it must fall inside its 95%
    # prediction interval in a share within the binomial band (n = 2000: sd 0.0049; +-4 sd
    # is 0.930-0.970). The exponent's interval alone would not do beyond the range.
    rng = np.random.default_rng(20240612)
    x = np.geomspace(1e6, 1e9, 6)
    targets = (3e7, 4e9, 3e10)
    sims = 2000
    hits = dict.fromkeys(targets, 0)
    for _ in range(sims):
        y = 2e-9 * x ** 0.75 * np.exp(rng.normal(0.0, 0.15, x.size))
        fit = power_law_fit(x, y)
        for x0 in targets:
            new = 2e-9 * x0 ** 0.75 * math.exp(rng.normal(0.0, 0.15))
            hits[x0] += fit.prediction(x0).contains(new)
    band = 4 * math.sqrt(0.95 * 0.05 / sims)
    for x0, n in hits.items():
        assert abs(n / sims - 0.95) <= band, (x0, n / sims)


def test_prediction_interval_widens_away_from_the_points() -> None:
    x = np.geomspace(10.0, 1e4, 7)
    y = 3.0 * x ** 1.2 * np.exp(0.05 * (-1.0) ** np.arange(x.size))
    fit = power_law_fit(x, y)
    ratios = [fit.prediction(x0).interval[1] / fit.prediction(x0).value
              for x0 in (math.sqrt(10.0 * 1e4), 1e4, 1e5, 1e6)]
    assert ratios == sorted(ratios) and ratios[0] > 1.0
    # A noiseless law predicts exactly: the interval closes on the value.
    exact = power_law_fit(x, 3.0 * x ** 1.2)
    p = exact.prediction(1e6)
    assert p.interval == pytest.approx((p.value, p.value), rel=1e-9)
    assert p.value == pytest.approx(3.0 * 1e6 ** 1.2, rel=1e-9)


def test_prediction_says_when_it_extrapolates() -> None:
    fit = power_law_fit([1e6, 1e7, 1e8, 1e9], [1e-3, 6e-3, 3e-2, 2e-1], x_label="FLOPs")
    inside, edge, beyond, below = (fit.prediction(v) for v in (3e7, 1e9, 4e9, 1e5))
    assert not inside.extrapolation and not edge.extrapolation
    assert beyond.extrapolation and below.extrapolation
    assert "within the measured FLOPs 1e+06 to 1e+09" in str(inside)
    text = str(beyond)
    assert "extrapolated beyond the measured FLOPs 1e+06 to 1e+09" in text
    assert text.startswith("predicted at FLOPs = 4e+09: ")
    assert "95% prediction interval [" in text
    # In seconds, the text writes times.
    assert " ms" in str(fit.prediction(1e8, unit="s"))
    assert repr(beyond).startswith("<Prediction") and "extrapolated" in repr(beyond)


def test_prediction_arguments_are_checked() -> None:
    fit = power_law_fit([1.0, 2.0, 4.0], [1.0, 2.1, 3.9])
    with pytest.raises(ValueError, match="positive and finite"):
        fit.prediction(0.0)
    with pytest.raises(ValueError, match="positive and finite"):
        fit.prediction(float("inf"))
    with pytest.raises(TypeError, match="must be a number"):
        fit.prediction("8")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="confidence"):
        fit.prediction(8.0, 1.0)
    # A fit without its points (built by hand, or from an old file) cannot give one.
    with pytest.raises(ValueError, match="keeps no points"):
        PowerLawFit(1.0, (0.9, 1.1), 1.0, 0.99, 3).prediction(8.0)
