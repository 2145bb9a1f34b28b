"""Wall time of fastbench.roofline.calibrate() and calibrate(quick=True), cache bypassed.
Targets: <= 15 s and <= 3 s. Run on a quiet machine: python benchmarks/calibration_time.py
"""

from __future__ import annotations

import time

from fastbench import roofline

from _anchors import script_args


def main() -> None:
    for quick in (True, False):
        t0 = time.perf_counter()
        r = roofline.calibrate(quick=quick, cache=False, progress=False)
        wall = time.perf_counter() - t0
        target = 3.0 if quick else 15.0
        verdict = "meets" if wall <= target else "misses"
        print(f"calibrate(quick={quick}): {wall:.2f} s ({verdict} the <= {target:.0f} s target)")
        print("\n".join(r.lines()))
        print()


if __name__ == "__main__":
    script_args(__doc__)
    main()
