"""The course's flows end to end on small models, in fastbench's words: where a training step's
time goes (a loop over a DataLoader, profiled with no code of the user's around the data
loading), a suite of baseline, quantized, pruned and cached variants (the course's table:
time, memory, accuracy and speedup, then its normalized metrics), and a comparison of
architectures (an MLP, a CNN and a small transformer on the same inputs: parameters, FLOPs,
time and achieved GFLOP/s).

Each flow prints its tables as a user would see them; the figures are the machine's own.
Torch is needed. Run on a quiet machine (about 3 minutes on a 2-vCPU VM):
    python benchmarks/course_flows.py
    python benchmarks/course_flows.py --flows suite        # one flow: profile, suite, architectures
"""

from __future__ import annotations

import time
import warnings
from typing import Any

from _anchors import script_args

FLOWS = ("profile", "suite", "architectures")


def _options(parser):  # type: ignore[no-untyped-def]
    parser.add_argument("--flows", default=",".join(FLOWS),
                        help=f"comma-separated flows to run (default {','.join(FLOWS)})")
    parser.add_argument("--steps", type=int, default=30,
                        help="training steps profiled (default 30)")


def _data(torch: Any, n: int = 2048, features: int = 256, classes: int = 10) -> tuple[Any, Any]:
    """A synthetic task: each class a Gaussian blob around its own centre, the blobs close
    enough that a trained MLP gets about 96% of held-out samples right."""
    g = torch.Generator().manual_seed(0)
    centres = torch.randn(classes, features, generator=g) * 0.25
    labels = torch.randint(0, classes, (n,), generator=g)
    return centres[labels] + torch.randn(n, features, generator=g), labels


def _mlp(torch: Any, features: int = 256, hidden: int = 512, classes: int = 10) -> Any:
    nn = torch.nn
    return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, classes))


def _train(torch: Any, model: Any, xs: Any, ys: Any, epochs: int = 3) -> Any:
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(epochs):
        for i in range(0, len(xs), 64):
            opt.zero_grad()
            loss_fn(model(xs[i:i + 64]), ys[i:i + 64]).backward()
            opt.step()
    return model.eval()


def flow_profile(torch: Any, steps: int) -> None:
    """A training loop over a DataLoader whose dataset augments each sample (noise and a
    normalisation, done per item as a transform pipeline does), profiled as a whole."""
    import fastbench

    xs, ys = _data(torch)

    class Augmented(torch.utils.data.Dataset):  # type: ignore[misc]
        def __len__(self) -> int:
            return len(xs)

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            x = xs[i] + 0.1 * torch.randn(xs.shape[1])
            x = (x - x.mean()) / (x.std() + 1e-6)
            return x, ys[i]

    loader = torch.utils.data.DataLoader(Augmented(), batch_size=64, shuffle=True)
    model = _mlp(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = iter(loader)
    with fastbench.profile(model, roofline=False) as prof:
        for _ in range(steps):
            try:
                x, y = next(batches)
            except StopIteration:
                batches = iter(loader)
                x, y = next(batches)
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            prof.step()
    print("== where a training step's time goes (fastbench.profile around the loop) ==")
    print(prof.top(8, by="family"))
    print()
    print(prof.top(8))


def flow_suite(torch: Any) -> None:
    """The course's optimization table: a trained baseline, its int8 dynamic quantization, a
    50% magnitude-pruned copy (the same dense computation) and a cache of the last answer."""
    from torch.nn.utils import prune

    from fastbench import suite

    xs, ys = _data(torch)
    base = _train(torch, _mlp(torch), xs[:-512], ys[:-512])  # the last 512 held out
    with warnings.catch_warnings():  # torch.ao.quantization says it moves to torchao
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(
            base, {torch.nn.Linear}, dtype=torch.qint8)
    import copy
    pruned = copy.deepcopy(base)
    for layer in pruned:
        if isinstance(layer, torch.nn.Linear):
            prune.l1_unstructured(layer, "weight", amount=0.5)
            prune.remove(layer, "weight")

    class Cached:
        """The model behind a cache of its last answer (a repeated input is answered at once)."""

        def __init__(self, model: Any) -> None:
            self.model, self.key, self.value = model, None, None

        def __call__(self, x: Any) -> Any:
            if self.key is not x:
                with torch.no_grad():
                    self.key, self.value = x, self.model(x)
            return self.value

    x = xs[:32]
    result = suite.run({"baseline": base, "quantized": quantized, "pruned": pruned,
                        "cached": Cached(base)}, x,
                       eval_data=(xs[-512:], ys[-512:]),
                       # int8 weights; the cache's weights are out of the suite's sight
                       allow={"quantized": "dtype", "cached": "dtype"},
                       threads=1, max_time_s=60.0)
    print("== the course's optimization table (fastbench.suite.run) ==")
    print(result)


def flow_architectures(torch: Any) -> None:
    """An MLP, a CNN and a small transformer on the same 256 features: parameters, FLOPs
    (the analyzer's), time per batch of 32 and the GFLOP/s it reaches."""
    import fastbench
    from fastbench.report.table import table
    from fastbench.units import format_count, format_ns

    nn = torch.nn

    class CNN(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                                      nn.Linear(32 * 16, 10))

        def forward(self, x: Any) -> Any:
            return self.body(x.view(-1, 1, 16, 16))

    class Transformer(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2)
            self.head = nn.Linear(32, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.encoder(x.view(-1, 8, 32)).mean(1))

    x = torch.randn(32, 256)
    rows = []
    torch.set_num_threads(1)
    for name, model in (("MLP", _mlp(torch)), ("CNN", CNN()), ("transformer", Transformer())):
        model.eval()
        a = fastbench.analysis.analyze(model, x, grad_mode="no_grad")
        with torch.no_grad():
            m = fastbench.measure(model, x, duration_s=1.0)
        flops = a.total.flops
        rows.append([name, format_count(a.parameters.total), format_count(flops),
                     format_ns(m.median_ns), f"{flops / m.median_ns:.2f}"])
    print("== architectures on the same inputs (batch 32, one thread) ==")
    print("\n".join(table(["Model", "Parameters", "FLOPs", "Time", "GFLOP/s"], rows)))


def main() -> None:
    args = script_args(__doc__, _options)
    flows = [f.strip() for f in args.flows.split(",") if f.strip()]
    unknown = [f for f in flows if f not in FLOWS]
    if unknown:
        raise SystemExit(f"unknown flows {unknown}; choose from {', '.join(FLOWS)}")
    import torch

    torch.manual_seed(0)
    start = time.monotonic()
    for f in flows:
        if f == "profile":
            flow_profile(torch, args.steps)
        elif f == "suite":
            flow_suite(torch)
        else:
            flow_architectures(torch)
        print()
    print(f"{time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
