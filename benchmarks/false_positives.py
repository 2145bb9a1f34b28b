"""False-positive rate of A/A comparisons: fastbench.compare against the usual decisions.

Each trial compares a workload with itself. fastbench measures both sides interleaved and
judges them with its paired test (alpha 0.05, min_effect 1%). Beside it, the same question is
decided the ways other tools do, on two back-to-back runs of the same workload (baseline run,
then candidate run, as a user saving and comparing results does):
  * pyperf compare_to: Student's two-sample t-test on the values, significant at 95%;
  * pytest-benchmark --benchmark-compare-fail=min:5%: the min moved by more than 5%.
Target: fastbench's false-positive rate <= alpha + 2 points.
Run on a quiet machine: python benchmarks/false_positives.py [TRIALS]   (default 100)
"""

from __future__ import annotations

import random
import sys
import time

from scipy import stats as sps

import fastbench

ALPHA = 0.05
SAMPLES = 20
MIN_TIME_S = 0.005


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    data = [random.random() for _ in range(400)]

    def workload() -> list[float]:
        return sorted(data)

    fb_fp = pyperf_fp = ptb_fp = 0
    start = time.monotonic()
    for i in range(trials):
        c = fastbench.compare({"baseline": workload, "candidate": workload}, rounds=SAMPLES,
                              min_time_s=MIN_TIME_S, alpha=ALPHA)
        fb_fp += c.verdicts["candidate"] != "no significant difference"
        a = fastbench.measure(workload, repeat=SAMPLES, min_time_s=MIN_TIME_S).samples_ns
        b = fastbench.measure(workload, repeat=SAMPLES, min_time_s=MIN_TIME_S).samples_ns
        pyperf_fp += bool(sps.ttest_ind(a, b, equal_var=True).pvalue < ALPHA)
        ptb_fp += bool(abs(b.min() / a.min() - 1.0) > 0.05)
        if (i + 1) % 10 == 0:
            print(f"  {i + 1}/{trials} trials, {time.monotonic() - start:.0f} s", flush=True)
    print()
    print(f"A/A false-positive rate over {trials} trials ({SAMPLES} samples a side, "
          f"workload sorted(400 floats) ~ a few µs)")
    print(f"  fastbench.compare (paired sign test, alpha {ALPHA}, min_effect 1%): "
          f"{fb_fp / trials * 100:5.1f}%   (target <= {ALPHA * 100 + 2:.0f}%)")
    print(f"  pyperf compare_to style (t-test on two runs):          {pyperf_fp / trials * 100:5.1f}%")
    print(f"  pytest-benchmark style (min moved > 5%):               {ptb_fp / trials * 100:5.1f}%")


if __name__ == "__main__":
    main()
