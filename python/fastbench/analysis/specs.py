"""The small models of ``fastbench.analysis.models`` (an MLP, a CIFAR-sized CNN and a pre-norm
transformer block) described with layer specs, so that ``fastbench tour`` and anyone without
torch can analyse them; the tests check that both descriptions count alike.

Descriptions only: the arithmetic is ``layers``' and ``formulas``'. No torch here.
"""

from __future__ import annotations

from .layers import (GELU, AdaptiveAvgPool2d, BatchNorm2d, Conv2d, Dropout, Flatten, LayerNorm,
                     Linear, MaxPool2d, MultiHeadAttention, ReLU, Residual, Sequential)

__all__ = ["SPECS", "mlp", "small_cnn", "transformer_block"]

Shape = tuple[int, ...]


def mlp(batch: int = 1) -> tuple[Sequential, Shape]:
    """``models.mlp()``: 784-512-512-10 with ReLU; (spec, input shape)."""
    return Sequential(("layers", Sequential(Linear(784, 512), ReLU(), Linear(512, 512), ReLU(),
                                            Linear(512, 10)))), (batch, 784)


def small_cnn(batch: int = 1) -> tuple[Sequential, Shape]:
    """``models.small_cnn()``: two stages of two 3x3 conv + BN + ReLU and a 2x2 max pool (32
    then 64 channels), global average pool, linear classifier; 3x32x32 images."""
    features = []
    cin = 3
    for cout in (32, 64):
        for _ in range(2):
            features += [Conv2d(cin, cout, 3, padding=1, bias=False), BatchNorm2d(cout), ReLU()]
            cin = cout
        features.append(MaxPool2d(2))
    return Sequential(("features", Sequential(*features)), AdaptiveAvgPool2d(1), Flatten(),
                      ("fc", Linear(cin, 10))), (batch, 3, 32, 32)


def transformer_block(batch: int = 1, d_model: int = 256, heads: int = 4,
                      seq: int = 64) -> tuple[Sequential, Shape]:
    """``models.transformer_block()``: ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))`` with a
    4x wide GELU MLP; (batch, seq, d_model) activations."""
    return Sequential(
        Residual(("ln_1", LayerNorm(d_model)), ("attn", MultiHeadAttention(d_model, heads)),
                 ("drop", Dropout(0.0))),
        Residual(("ln_2", LayerNorm(d_model)),
                 ("mlp", Sequential(Linear(d_model, 4 * d_model), GELU(),
                                    Linear(4 * d_model, d_model), Dropout(0.0)))),
    ), (batch, seq, d_model)


SPECS = {"mlp": mlp, "small_cnn": small_cnn, "transformer_block": transformer_block}
