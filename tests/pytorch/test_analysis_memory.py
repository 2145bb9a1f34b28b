"""The memory side of the PyTorch analyzer, against peaks worked out by hand from the ops the
layers run: the inference peak (storages freed after their last use, the model's outputs
kept), its stability from one call to the next, the training peak (saved activations held
for backward, the outputs and their gradients), and an analysis that leaves nothing behind.
"""

from __future__ import annotations

import gc

import psutil
import pytest

torch = pytest.importorskip("torch")

from fastbench.analysis import MemoryEstimate, analyze, models  # noqa: E402

nn = torch.nn
F32 = 4


def _norm_and_wide_head() -> tuple[torch.nn.Module, torch.Tensor]:
    """LayerNorm(64) then a 64 -> 5000 projection on 128 tokens: a small intermediate and an
    output 78 times larger, the shape of a language model's last layers."""
    torch.manual_seed(0)
    return (nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 5000, bias=False)),
            torch.randn(1, 128, 64))


# By hand. native_layer_norm returns its result (128 x 64) with the mean and 1/std of each
# of the 128 rows; the projection's matmul then reads the normalized rows and writes the
# output. mean and 1/std are not read again: they are gone by then.
NORM_OUT = 128 * 64 * F32                 # 32,768
NORM_STATS = 2 * 128 * F32                # 1,024
HEAD_OUT = 128 * 5000 * F32               # 2,560,000
HEAD_INFERENCE_PEAK = NORM_OUT + HEAD_OUT  # 2,592,768
PARAMS = (2 * 64 + 64 * 5000) * F32


@pytest.mark.parametrize("grad_mode", ["no_grad", "grad", "inference_mode"])
def test_inference_peak_holds_the_output_when_storage_addresses_are_reused(
        grad_mode: str) -> None:
    model, x = _norm_and_wide_head()
    # Whether a freed storage's address is handed to the next one depends on the allocator's
    # state: several calls give it several chances.
    for _ in range(20):
        m = analyze(model, x, grad_mode=grad_mode).memory
        assert m.inference_peak_bytes >= HEAD_OUT
        assert m.inference_peak_bytes == HEAD_INFERENCE_PEAK


def test_gpt2_inference_peak_holds_its_logits() -> None:
    model = models.gpt2_small(device="meta")
    (ids,) = model.example_input(1, device="meta")
    m = analyze(model, ids, grad_mode="no_grad").memory
    logits = 50257 * 128 * F32
    # The logits live with the last hidden state that produced them.
    assert m.inference_peak_bytes >= logits + 128 * 768 * F32


def _gelu_chain() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return (nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64), nn.GELU(),
                          nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64)),
            torch.randn(32, 64))


# By hand, batch 32: each op's input dies once the op has run, so the most alive at once is a
# 32 x 128 tensor beside the GELU result of the same size; a 32 x 64 beside a 32 x 128 is less.
GELU_CHAIN_PEAK = 2 * 32 * 128 * F32      # 32,768


def test_inference_peak_is_the_same_on_every_call() -> None:
    model, x = _gelu_chain()
    peaks = [analyze(model, x, grad_mode="no_grad").memory.inference_peak_bytes
             for _ in range(6)]
    assert peaks == [GELU_CHAIN_PEAK] * 6
    for grad_mode in ("grad", "inference_mode"):
        assert analyze(model, x, grad_mode=grad_mode).memory.inference_peak_bytes \
            == GELU_CHAIN_PEAK


def test_training_memory_holds_the_forward_peak_and_the_output_gradient() -> None:
    model, x = _norm_and_wide_head()
    a = analyze(model, x)
    m = a.memory
    # Saved for backward: the normalized rows (read by the matmul's weight gradient) and the
    # mean and 1/std (read by the norm's backward).
    assert m.activations_bytes == NORM_OUT + NORM_STATS
    # Backward starts with all of those alive, the output, and the output's gradient.
    assert m.training_peak_bytes == NORM_OUT + NORM_STATS + 2 * HEAD_OUT
    inputs = 128 * 64 * F32
    assert m.training_bytes("sgd") == 2 * PARAMS + m.training_peak_bytes + inputs
    assert m.training_bytes("adam") == 4 * PARAMS + m.training_peak_bytes + inputs
    for optimizer in ("sgd", "momentum", "adam"):
        assert m.training_bytes(optimizer) >= m.inference_bytes


def test_training_peak_through_a_recorded_backward() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 4096), nn.ReLU(), nn.Linear(4096, 8))
    x = torch.randn(128, 64)
    hidden = 128 * 4096 * F32                     # 2 MiB
    out = 128 * 8 * F32
    # Forward: the linear result and relu's beside it (relu's is saved; the first is not).
    # Backward start: relu's result, the output and its gradient. Then relu's backward reads
    # its saved result and the gradient of it, and writes the gradient of its input: three
    # hidden-sized tensors beside the output (the weight gradients are counted apart).
    assert analyze(model, x).memory.training_peak_bytes == 2 * hidden
    m = analyze(model, x, backward=True).memory
    assert m.activations_bytes == hidden
    assert m.training_peak_bytes == 3 * hidden + out
    assert m.inference_peak_bytes == 2 * hidden


def test_training_estimate_of_a_single_layer() -> None:
    # A linear layer on a plain input saves nothing of its own (the input and the weight are
    # counted apart) but still trains: output and its gradient.
    m = analyze(nn.Linear(4, 3), torch.randn(2, 4)).memory
    assert m.activations_bytes == 0
    assert m.training_peak_bytes == 2 * 2 * 3 * F32
    assert m.training_bytes("sgd") == 2 * (4 * 3 + 3) * F32 + 2 * 2 * 3 * F32 + 2 * 4 * F32


def test_memory_record_without_a_training_peak_still_loads() -> None:
    """Results written before the training peak was recorded: the peak is taken as the larger
    of the saved activations and the inference peak, so training never reads below inference."""
    m = MemoryEstimate.from_dict({
        "params_bytes": 100, "buffers_bytes": 0, "gradients_bytes": 100,
        "activations_bytes": 10, "inference_peak_bytes": 50, "inputs_bytes": 5})
    assert m.training_peak_bytes == 50
    assert m.training_bytes("sgd") == 100 + 100 + 50 + 5 >= m.inference_bytes
    assert MemoryEstimate.from_dict(m.to_dict()) == m


# -- nothing left behind ------------------------------------------------------------------------
def _live_tensors() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if issubclass(type(o), torch.Tensor))


def test_analyze_does_not_leak_the_autograd_graph() -> None:
    """ReLU saves its own output for backward: a graph that held it through its own node
    would keep every call's activations alive for good."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 4096), nn.ReLU(), nn.Linear(4096, 8))
    x = torch.randn(256, 256)
    relu_out = 256 * 4096 * F32                   # 4 MiB a call
    analyze(model, x)                             # warm up allocator and caches
    tensors_before = _live_tensors()
    rss_before = psutil.Process().memory_info().rss
    calls = 30
    for _ in range(calls):
        analyze(model, x)
    growth = _live_tensors() - tensors_before
    rss_growth = psutil.Process().memory_info().rss - rss_before
    assert growth <= 2, f"{growth} tensors left alive by {calls} analyses"
    # A leak keeps 30 x 4 MiB; the bound leaves room for the allocator's own slack.
    assert rss_growth < calls * relu_out // 3, f"RSS grew by {rss_growth:,} bytes"
