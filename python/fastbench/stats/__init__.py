"""Statistics on sample arrays: pure functions, numpy/scipy based, no measuring here.

This face re-exports the public API of its modules: one sample's checks and median interval
(:mod:`.samples`), its summary (:mod:`.summary`), sample-size planning (:mod:`.planning`),
two samples compared (:mod:`.twosample`), runs (processes) as a random effect
(:mod:`.runs`), multiple-testing corrections (:mod:`.corrections`),
interference phases in a series of samples (:mod:`.phases`), the one median/MAD helper
(:mod:`.robust`), quantile intervals from order statistics (:mod:`.quantiles`), the
Hodges-Lehmann location and signed-rank interval (:mod:`.signedrank`) and the Wilson
interval of a proportion (:mod:`.proportion`). Nothing here times, prints or drops a sample:
outliers are counted and kept. Every function validates its input (non-empty,
one-dimensional, finite) and raises ValueError with the reason; samples that are not real
numbers (complex, strings, bools) and a setting that is not a number (a confidence, a level)
raise TypeError.
"""

from __future__ import annotations

from .corrections import adjust_pvalues
from .planning import required_samples, samples_for_power
from .proportion import weighted_wilson_interval, wilson_interval
from .quantiles import quantile_ci, quantile_ci_min_samples
from .samples import as_samples, median_ci
from .summary import Outliers, Summary, summarize
from .runs import RunLevel, compare_runs, run_level
from .signedrank import hodges_lehmann, signed_rank_ci
from .twosample import (MIN_RUNS, MIN_SAMPLES, SampleComparison, compare_samples,
                        median_ratio_ci)

__all__ = [
    "MIN_RUNS",
    "MIN_SAMPLES",
    "Outliers",
    "RunLevel",
    "SampleComparison",
    "Summary",
    "adjust_pvalues",
    "as_samples",
    "compare_runs",
    "compare_samples",
    "hodges_lehmann",
    "median_ci",
    "median_ratio_ci",
    "quantile_ci",
    "quantile_ci_min_samples",
    "required_samples",
    "run_level",
    "samples_for_power",
    "signed_rank_ci",
    "weighted_wilson_interval",
    "wilson_interval",
    "summarize",
]
