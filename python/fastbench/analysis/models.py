"""The public path ``fastbench.analysis.models``: the model zoo in plain PyTorch. It lives in
:mod:`fastbench.pytorch.models`, beside the rest of fastbench's PyTorch code; this module only
hands its names on, and like it imports torch (import it explicitly, on demand).
"""

from __future__ import annotations

from ..pytorch.models import (ATTENTION_MODES, MODELS, bert_base, copy_weights, gpt2_small, mlp,
                              mobilenet_v2, resnet18, resnet50, small_cnn, transformer_block,
                              vit_b_16)

__all__ = ["ATTENTION_MODES", "MODELS", "bert_base", "copy_weights", "gpt2_small", "mlp",
           "mobilenet_v2", "resnet18", "resnet50", "small_cnn", "transformer_block", "vit_b_16"]
