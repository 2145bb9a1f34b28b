"""fastbench.pytorch.suite_support: the bytes of weights a module keeps outside its
parameters and buffers (dynamically and statically quantized layers, int8 per tensor and per
channel, float16), worked out by hand from the layers' shapes, and the module facts that
carry them with the analyzer's activation estimate."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fastbench.pytorch.suite_support import module_facts, packed_bytes  # noqa: E402

# torch.ao.quantization warns that it moves to torchao and that quantized tensors are
# deprecated; it still runs.
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:torch.quantize_per:UserWarning")]

# Linear(256, 256) and Linear(256, 10): weights and biases by element.
WEIGHTS = 256 * 256 + 10 * 256
BIASES = 256 + 10
# Each dynamic Linear also saves an output scale (float32) and zero point (int64).
SCALARS = 2 * (4 + 8)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10)).eval()


def test_a_float_model_packs_nothing() -> None:
    assert packed_bytes(_model()) == 0


def test_dynamic_int8_weights_count_one_byte_an_element() -> None:
    q = torch.ao.quantization.quantize_dynamic(_model(), {torch.nn.Linear}, dtype=torch.qint8)
    assert list(q.parameters()) == []            # nothing the parameters would show
    assert packed_bytes(q) == WEIGHTS * 1 + BIASES * 4 + SCALARS


def test_dynamic_per_channel_int8_adds_a_scale_and_zero_point_per_row() -> None:
    qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
    q = torch.ao.quantization.quantize_dynamic(_model(), {torch.nn.Linear: qconfig})
    rows = 256 + 10
    w = q[0]._weight_bias()[0]
    per_row = w.q_per_channel_scales().element_size() + w.q_per_channel_zero_points().element_size()
    assert packed_bytes(q) == WEIGHTS + BIASES * 4 + SCALARS + rows * per_row


def test_dynamic_float16_weights_count_two_bytes_although_unpacked_as_float32() -> None:
    q = torch.ao.quantization.quantize_dynamic(_model(), {torch.nn.Linear}, dtype=torch.float16)
    assert q[0]._weight_bias()[0].dtype == torch.float32
    assert packed_bytes(q) == WEIGHTS * 2 + BIASES * 4 + SCALARS


def test_module_facts_carry_the_packed_bytes_and_the_activation_estimate() -> None:
    q = torch.ao.quantization.quantize_dynamic(_model(), {torch.nn.Linear}, dtype=torch.qint8)
    x = torch.randn(4, 256)
    facts = module_facts(q, (x,), {})
    assert facts.param_bytes == 0 and facts.packed_bytes == WEIGHTS + BIASES * 4 + SCALARS
    plain = module_facts(_model(), (x,), {})
    # Batch 4: the first Linear's output and the ReLU's (4 x 256 floats each) are alive
    # together; the output (4 x 10) comes after the first is freed.
    assert plain.activation_estimate_bytes == 2 * 4 * 256 * 4
    assert module_facts(_model(), (x,), {}, count_flops=False).activation_estimate_bytes is None
