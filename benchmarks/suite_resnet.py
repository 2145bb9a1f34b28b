"""fastbench.suite on a small CNN and a small transformer classifier, each as a baseline,
channels-last, bf16 autocast and dynamically quantized (int8 Linear) variant, on synthetic
data; then the same latency measurements taken as optimum-benchmark takes them (each variant
in turn: warm-up, then calls for a fixed time, mean and percentiles) in the same wall time,
and the width of the intervals each way gives.

Data: random inputs labelled with the fp32 baseline's own predictions, 10% of the labels
replaced at random; accuracy is then the agreement with the fp32 model on 90% of the examples
(the baseline scores about 90%), so a variant's delta measures what its numerics change.
Channels-last applies to 4-D activations only: the transformer has none, so it has no such
variant (the script says so).

Printed per model: the suite's table and Pareto front (latency, accuracy); the suite's timed
wall time; then, for the sequential anchor given the same wall time, each candidate's median
interval width and speedup interval width next to the suite's (the sequential speedup is
unpaired: ratio of medians, bootstrap interval; the suite's is paired on its rounds: the
Hodges-Lehmann estimate with its signed-rank interval, or with --estimator median the
median with its sign-test interval). Target: the suite's intervals at least as narrow for
the same wall time. Needs torch. Run on a quiet machine:
python benchmarks/suite_resnet.py [--threads 1] [--settle 1] [--estimator median] [--quick]
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import numpy as np
import torch

from fastbench.pytorch import models
from fastbench.stats import compare_samples, median_ci
from fastbench.suite import run

EXAMPLES = 512


class _Classifier(torch.nn.Module):
    """A transformer block, mean-pooled over tokens, then a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.block = models.transformer_block(d_model=128, heads=4, seq=32)
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(x).mean(dim=1))


def _variants(model: torch.nn.Module, four_d: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    model = model.eval()
    variants: dict[str, Any] = {"fp32": model}
    variant_inputs: dict[str, Any] = {}
    if four_d:
        cl = _copy(model).to(memory_format=torch.channels_last)
        variants["channels_last"] = cl
    def bf16(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return model(x).float()
    variants["bf16_autocast"] = bf16
    variants["int8_dynamic"] = torch.ao.quantization.quantize_dynamic(
        _copy(model), {torch.nn.Linear}, dtype=torch.qint8)
    return variants, variant_inputs


def _copy(model: torch.nn.Module) -> torch.nn.Module:
    import copy
    return copy.deepcopy(model)


def _data(model: torch.nn.Module, shape: tuple[int, ...], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn((EXAMPLES, *shape), generator=g)
    with torch.no_grad():
        labels = model.eval()(xs).argmax(-1)
    flip = torch.rand(EXAMPLES, generator=g) < 0.10
    labels[flip] = torch.randint(0, 10, (int(flip.sum()),), generator=g)
    return xs, labels


def _sequential(calls: dict[str, Callable[[], Any]], wall_s: float, warmup: int) -> dict[str, np.ndarray]:
    """optimum-benchmark's way: each variant in turn, warm-up calls then calls for its share of
    the wall time, each call timed with perf_counter."""
    share = wall_s / len(calls)
    out = {}
    for name, call in calls.items():
        for _ in range(warmup):
            call()
        times = []
        end = time.perf_counter() + share
        while time.perf_counter() < end:
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        out[name] = np.asarray(times)
    return out


def _width(ci: tuple[float, float] | None, value: float) -> float:
    return float("nan") if ci is None else (ci[1] - ci[0]) / value


def _one(label: str, model: torch.nn.Module, shape: tuple[int, ...], four_d: bool, batch: int,
         args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    xs, labels = _data(model, shape, 1)
    variants, variant_inputs = _variants(model, four_d)
    print(f"\n=== {label}: input {tuple(shape)}, batch {batch}, {torch.get_num_threads()} "
          f"threads ===")
    if not four_d:
        print("  (no channels_last variant: the model has no 4-D activations)")
    allow = {"bf16_autocast": "dtype", "int8_dynamic": "dtype"}
    inputs = xs[:batch]
    t0 = time.perf_counter()
    result = run(variants, inputs, baseline="fp32", eval_data=(xs, labels),
                 variant_inputs=variant_inputs, allow=allow, batch_sizes=[batch, 4 * batch],
                 rounds=args.rounds, duration_s=args.duration, max_time_s=600.0,
                 settle_calls=args.settle, estimator=args.estimator)
    wall = time.perf_counter() - t0
    print(result)
    front = result.pareto(("latency", "accuracy"))
    print(f"\nPareto front (latency, accuracy): {', '.join(front)}; knee: "
          f"{result.knee(('latency', 'accuracy'))}")
    for name, by in result.dominated(("latency", "accuracy")).items():
        print(f"  {name} dominated by {', '.join(by)}")
    timed = float(result.settings["timed_s"][str(batch)])
    print(f"\nsuite wall time {wall:.1f} s, of which the timed rounds at batch {batch} "
          f"{timed:.1f} s")
    # The anchor, given the same wall time as the suite's timed rounds at this batch.
    with torch.no_grad():
        calls = {n: (lambda v=v: v(inputs)) for n, v in variants.items()}
        seq = _sequential(calls, timed, warmup=3)
    print(f"  optimum-benchmark-style sequential runs, {timed:.1f} s in all "
          f"({timed / len(calls):.2f} s per variant):")
    print(f"  {'variant':<15}{'median suite':>13}{'seq':>11}{'calls suite/seq':>17}"
          f"{'median CI suite':>17}{'seq':>8}"
          f"{'speedup CI suite':>18}{'seq':>8}{'speedup suite':>15}{'seq':>8}")
    base_seq = seq["fp32"]
    ratios = []
    for name in variants:
        rec = result[name]
        s = seq[name]
        m_seq = float(np.median(s))
        w_suite = _width(rec.latency.median_ci, rec.latency.median_s)
        w_seq = _width(median_ci(s), m_seq)
        if name == "fp32":
            sp_suite = sp_seq = "-"
            ws_suite = ws_seq = float("nan")
        else:
            c = compare_samples(base_seq, s, paired=False)
            ws_suite = _width(rec.speedup.ci, rec.speedup.value)
            ws_seq = _width(c.speedup_ci, c.speedup)
            sp_suite, sp_seq = f"{rec.speedup.value:.3f}", f"{c.speedup:.3f}"
            ratios.append(ws_seq / ws_suite)
        print(f"  {name:<15}{1e3 * rec.latency.median_s:>10.3f} ms{1e3 * m_seq:>8.3f} ms"
              f"{len(rec.latency.samples_s):>8}/{len(s):<8}{100 * w_suite:>16.2f}%"
              f"{100 * w_seq:>7.2f}%{100 * ws_suite:>17.2f}%{100 * ws_seq:>7.2f}%"
              f"{sp_suite:>15}{sp_seq:>8}")
    print(f"  speedup interval width, sequential / suite: "
          + ", ".join(f"{r:.2f}x" for r in ratios) + "  (target: >= 1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--settle", type=int, default=0,
                        help="untimed calls of a variant before its timed one in each round")
    parser.add_argument("--estimator", choices=["hodges-lehmann", "median"],
                        default="hodges-lehmann",
                        help="the suite's speedup from the rounds (median: the sign-test "
                             "interval compare gives)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.duration = 30, 0.2
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    _one("small CNN", models.small_cnn(), (3, 32, 32), True, 8, args)
    torch.manual_seed(0)
    _one("small transformer", _Classifier(), (32, 128), False, 8, args)


if __name__ == "__main__":
    main()
