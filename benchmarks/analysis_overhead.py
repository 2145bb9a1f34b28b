"""Wall time of fastbench.analysis.analyze against torch's FlopCounterMode on the same model and
inputs: ResNet-50 and GPT-2 small, on the meta device and on real CPU inputs, alternating the
two tools so machine drift hits both alike. Target: analyze <= 1.5x FlopCounterMode.

Both run the forward once; analyze also attributes every op to its module, counts bytes and
elementwise FLOPs, records storage lifetimes and saved activations, and counts parameters by
storage. Needs torch. Run on a quiet machine: python benchmarks/analysis_overhead.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

from fastbench.analysis import analyze
from fastbench.pytorch import models


def _flop_counter(model: Any, inputs: tuple[Any, ...]) -> int:
    with FlopCounterMode(display=False) as fc:
        model(*inputs)
    return int(fc.get_total_flops())


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (default 7)")
    args = parser.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of "
          f"{args.rounds} alternating rounds")
    print(f"{'model':<12}{'device':<7}{'analyze':>10}{'FlopCounterMode':>17}{'ratio':>8}   totals")
    for name in ("resnet50", "gpt2_small"):
        factory = models.MODELS[name]
        for device in ("meta", "cpu"):
            model = factory(device=device).eval()
            inputs = model.example_input(1, device=device)
            a = analyze(model, *inputs)            # warm both up (imports, first-call caches)
            reference = _flop_counter(model, inputs)
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours.append(_timed(lambda: analyze(model, *inputs)))
                theirs.append(_timed(lambda: _flop_counter(model, inputs)))
            t_ours, t_theirs = statistics.median(ours), statistics.median(theirs)
            print(f"{name:<12}{device:<7}{t_ours * 1e3:>8.1f}ms{t_theirs * 1e3:>15.1f}ms"
                  f"{t_ours / t_theirs:>7.2f}x   {a.params:,} params, {a.macs / 1e9:.3f} GMACs, "
                  f"{a.flops / 1e9:.3f} GFLOPs, {a.bytes / 1e6:.1f} MB; FlopCounterMode "
                  f"{reference / 1e9:.3f} GFLOPs")


if __name__ == "__main__":
    main()
