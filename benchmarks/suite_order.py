"""Does the suite call identical models different? A baseline MLP (256-1024-10), two deep
copies of it and a larger model (256-4096-4096-10), one thread, timed by suite.run over
many seeds: how often each copy is called faster or slower than the baseline.

The rounds' order decides it: a fixed order rotated by one each round put one variant after
the large model in nearly every round, and what the large model left in the caches was
counted as that variant's speed (copies read 1.23x faster at p 4e-190, 0.85x slower at
another seed). In a fresh random order each round no variant has a fixed predecessor.

What a random order cannot remove: identical models whose weights lie elsewhere in memory
do not run at the same speed in one process, each object keeping its offset of 1-2% over all
rounds. suite.run therefore times blocks of rounds on fresh copies of the modules and judges
over the blocks (its default); --blocks 1 shows the rounds of one set of objects judged
alone. With --original the set gains the model the copies were made from ("original", built
before the large model); the baseline is then a copy, so copy against copy and copy against
original are told apart.

Printed: per seed the copies' speedups and verdicts, then how many of the copies' verdicts
(2 per seed) said "faster" or "slower". Target: at most 5%.

Run on a quiet machine (about 45 s a seed on a 2-vCPU VM; torch needed):
    python benchmarks/suite_order.py
    python benchmarks/suite_order.py --seeds 5 --original   # copies against the original
    python benchmarks/suite_order.py --blocks 1             # one set of objects, no blocks
"""

from __future__ import annotations

import copy
import time

from _anchors import positive_int, script_args


def _options(parser):  # type: ignore[no-untyped-def]
    parser.add_argument("--seeds", type=positive_int, default=20,
                        help="seeds to run (default 20)")
    parser.add_argument("--rounds", type=positive_int, default=100,
                        help="rounds per batch size (default 100, suite.run's)")
    parser.add_argument("--blocks", type=positive_int, default=None,
                        help="suite.run's blocks (default: its own, 10 for modules)")
    parser.add_argument("--original", action="store_true",
                        help="a copy is the baseline, and the original model a variant")


def main() -> None:
    args = script_args(__doc__, _options)
    import torch
    from torch import nn

    from fastbench import suite

    torch.set_num_threads(1)
    torch.manual_seed(0)
    base = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10)).eval()
    large = nn.Sequential(nn.Linear(256, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                          nn.Linear(4096, 10)).eval()
    if args.original:
        variants = {"baseline": copy.deepcopy(base), "copy1": copy.deepcopy(base),
                    "copy2": copy.deepcopy(base), "original": base, "large": large}
    else:
        variants = {"baseline": base, "copy1": copy.deepcopy(base),
                    "copy2": copy.deepcopy(base), "large": large}
    shown = ("copy1", "copy2", "original") if args.original else ("copy1", "copy2")
    x = torch.randn(32, 256)
    called = original = 0
    start = time.monotonic()
    print(f"suite.run of {', '.join(variants)}, batch 32, one thread, {args.rounds} rounds, "
          f"blocks {args.blocks or 'as suite.run chooses'}")
    for seed in range(args.seeds):
        with torch.no_grad():
            r = suite.run(variants, x, seed=seed, rounds=args.rounds, threads=1,
                          blocks=args.blocks, memory=False, energy=False, analyze=False)
        said = []
        for name in shown:
            s = r[name].speedup
            called += name != "original" and s.verdict in ("faster", "slower")
            original += name == "original" and s.verdict in ("faster", "slower")
            said.append(f"{name} {s.value:.3f}x {s.verdict}")
        print(f"  seed {seed:2d}: {'; '.join(said)}  ({r.settings['order']}; "
              f"{r.settings['blocks']} blocks, {r.settings['rounds']} rounds)", flush=True)
    total = 2 * args.seeds
    print(f"\nidentical copies called different: {called} of {total} "
          f"({100 * called / total:.1f}%; target <= 5%); {time.monotonic() - start:.0f} s")
    if args.original:
        print(f"the original called different from a copy: {original} of {args.seeds}")


if __name__ == "__main__":
    main()
