"""fastbench.pytorch.activation_memory: the running sum of allocator changes by hand, and the
measured peak of calls whose every allocation is known (elementwise ops on a known tensor,
each allocating exactly its output), against the sizes worked out by hand and the
analyzer's estimate; the output counts; another profiler running is a reason, not an
error."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fastbench.pytorch.activation_memory import METHOD, activation_peak, peak_of  # noqa: E402
from fastbench.pytorch.analyzer import analyze  # noqa: E402

N = 1 << 18          # elements of the input
NBYTES = 4 * N       # one float32 tensor of its size: 1 MiB


def test_peak_of_the_running_sum_by_hand() -> None:
    assert peak_of([]) == 0
    # +4 +4 -4 +1 -4: alive 4, 8, 4, 5, 1.
    assert peak_of([(1, 4), (2, 4), (3, -4), (4, 1), (5, -4)]) == 8
    # Out of order in the list: taken in time order.
    assert peak_of([(5, -4), (2, 4), (4, 1), (1, 4), (3, -4)]) == 8
    # At one time a free goes before an allocation (the memory was back by then).
    assert peak_of([(1, 4), (2, 4), (2, -4)]) == 4
    # Only frees (of memory allocated before): never above the start.
    assert peak_of([(1, -4), (2, -4)]) == 0


class _ThreeAlive(torch.nn.Module):
    """a and b alive while c is made (3 tensors), then d beside c (2): peak 3 x NBYTES."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = x * 2
        b = x * 3
        c = a + b
        del a, b
        return c * 2


class _BigOutput(torch.nn.Module):
    """A quarter-size intermediate h and its sum (4 bytes) stay alive while the concatenation
    (4 x NBYTES) and the output made from it (4 x NBYTES, returned) are both alive."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x[: N // 4] * 2
        return torch.cat([x, x, x, x]) + h.sum()


@pytest.mark.parametrize("model, expected", [(_ThreeAlive(), 3 * NBYTES),
                                             (_BigOutput(), 8 * NBYTES + NBYTES // 4 + 4)])
def test_measured_peak_of_calls_whose_allocations_are_known(model: torch.nn.Module,
                                                            expected: int) -> None:
    x = torch.ones(N)
    with torch.no_grad():
        got = activation_peak(model, (x,))
    assert got.peak_bytes is not None and got.reason == "" and got.method == METHOD
    # Allocator alignment may add a little, never less.
    assert expected <= got.peak_bytes <= expected + 4096, got
    assert got.events >= 2


def test_measured_peak_agrees_with_the_analyzers_estimate_on_elementwise_ops() -> None:
    x = torch.ones(N)
    model = _ThreeAlive()
    with torch.no_grad():
        measured = activation_peak(model, (x,)).peak_bytes
        estimate = analyze(model, x, grad_mode="no_grad").memory.inference_peak_bytes
    assert measured == estimate == 3 * NBYTES


def test_the_output_counts_and_kwargs_pass_through() -> None:
    seen: list[int] = []

    def fn(x: torch.Tensor, *, scale: float) -> torch.Tensor:
        seen.append(int(scale))
        return x * scale           # the output, and the scalar wrapped as a tensor

    got = activation_peak(fn, (torch.ones(N),), {"scale": 2.0}, warmup=2)
    assert seen == [2, 2, 2]       # two warmup calls, one measured
    assert got.peak_bytes is not None and NBYTES <= got.peak_bytes <= NBYTES + 64


def test_another_profiler_running_is_a_reason_not_an_error() -> None:
    x = torch.ones(16)
    with torch.autograd.profiler.profile():
        got = activation_peak(lambda t: t * 2, (x,))
    assert got.peak_bytes is None and "another torch profiler" in got.reason


def test_what_the_call_raises_propagates() -> None:
    def broken(x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("model failed")

    with pytest.raises(RuntimeError, match="model failed"):
        activation_peak(broken, (torch.ones(4),), warmup=0)


def test_the_profilers_start_and_stop_lines_are_not_shown(capfd: pytest.CaptureFixture[str]
                                                          ) -> None:
    # torch's tracing library writes "USDT: ... profiler_start" to fd 2 on every start; a
    # suite of four modules would print eight such lines. What the call itself writes stays.
    import sys

    def noisy(x: torch.Tensor) -> torch.Tensor:
        print("the call's own line", file=sys.stderr, flush=True)
        return x * 2

    assert activation_peak(noisy, (torch.ones(16),), warmup=0).peak_bytes is not None
    err = capfd.readouterr().err
    assert "profiler_start" not in err and "profiler_stop" not in err
    assert "the call's own line" in err
