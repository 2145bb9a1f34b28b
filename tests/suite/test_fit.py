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
