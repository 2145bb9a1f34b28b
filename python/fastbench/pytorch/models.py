"""Standard models written in plain PyTorch, the zoo that model analysis, the CLI, the tour and
the tests run on. Owns the architectures and their example inputs; holds no weights, downloads
nothing and never imports torchvision or transformers. Imports torch at the top, so it is only
ever imported on demand (``import fastbench`` does not load it).

Each standard model reproduces a published parameter count exactly:

- ``resnet18``: 11,689,512 and ``resnet50``: 25,557,032 (torchvision's ResNet, He et al. 2015);
- ``mobilenet_v2``: 3,504,872 (torchvision's MobileNetV2 at width 1.0, Sandler et al. 2018);
- ``vit_b_16``: 86,567,656 (torchvision's ViT-B/16 at 224 pixels, Dosovitskiy et al. 2020);
- ``gpt2_small``: 124,439,808 unique parameters, the LM head tied to ``wte`` (Hugging Face's
  ``gpt2`` checkpoint, Radford et al. 2019);
- ``bert_base``: 109,482,240 with the pooler (Hugging Face's ``bert-base-uncased`` BertModel,
  Devlin et al. 2018).

Every attention layer is built by one of three interchangeable implementations chosen with
``attention=``: "explicit" (``q @ k.transpose(-2, -1) * scale``, softmax, ``@ v``), "sdpa"
(``torch.nn.functional.scaled_dot_product_attention``) and "mha" (a real
``nn.MultiheadAttention``, batch first, whose fused fast path torch may take in eval mode under
``no_grad``). All three store the same parameters under the same names, nn.MultiheadAttention's
packed layout (``in_proj_weight`` (3d, d), ``in_proj_bias`` (3d), ``out_proj`` Linear(d, d)),
so a model's state_dict loads into the same model built with another implementation
(``copy_weights``). Weights start from PyTorch's layer defaults, not the published training
initialisation, which changes no count, shape or cost.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence, TypeVar

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_int

__all__ = [
    "ATTENTION_MODES", "MODELS", "copy_weights", "resnet18", "resnet50", "mobilenet_v2",
    "vit_b_16", "gpt2_small", "bert_base", "mlp", "small_cnn", "transformer_block",
]

ATTENTION_MODES = ("explicit", "sdpa", "mha")

_EXAMPLE_TOKENS = 128       # token ids per sequence in the language models' example input

_Factory = TypeVar("_Factory", bound=Callable[..., Any])


# -- argument checks ----------------------------------------------------------------------

def _positive_int(name: str, value: Any) -> int:
    return check_int(name, value, 1)


def _probability(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")
    return float(value)


def _attention_mode(value: Any) -> str:
    if value not in ATTENTION_MODES:
        raise ValueError(f"attention must be one of {', '.join(map(repr, ATTENTION_MODES))}, "
                         f"got {value!r}")
    return str(value)


def _heads_divide(width: int, heads: int) -> None:
    if width % heads:
        raise ValueError(f"width {width} is not divisible by heads {heads}")


def _encoder_sizes(layers: Any, width: Any, heads: Any, mlp_dim: Any, attention: Any,
                   dropout: Any) -> dict[str, Any]:
    """The checked keyword arguments every transformer model takes: blocks, width, heads
    (dividing the width), MLP width (4 x width when None), attention mode and dropout."""
    width, heads = _positive_int("width", width), _positive_int("heads", heads)
    _heads_divide(width, heads)
    return {"layers": _positive_int("layers", layers), "width": width, "heads": heads,
            "mlp_dim": 4 * width if mlp_dim is None else _positive_int("mlp_dim", mlp_dim),
            "attention": _attention_mode(attention), "dropout": _probability("dropout", dropout)}


def _float_dtype(module: Any) -> Any:
    """The dtype of ``module``'s first floating-point parameter (float32 if it has none)."""
    for p in module.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def _token_ids(batch: int, length: int, vocab_size: int, device: Any) -> Any:
    batch = _positive_int("batch", batch)
    return torch.randint(0, vocab_size, (batch, length), dtype=torch.int64, device=device)


def _check_token_ids(ids: Any, max_positions: int) -> None:
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        raise ValueError("expected token ids of shape (batch, tokens), got "
                         f"{getattr(ids, 'shape', type(ids).__name__)}")
    if ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"token ids must be int64 or int32, got {ids.dtype}")
    if ids.shape[1] > max_positions:
        raise ValueError(f"{ids.shape[1]} tokens exceed the {max_positions} learned positions")


# -- attention ----------------------------------------------------------------------------

class _PackedSelfAttention(nn.Module):  # type: ignore[misc]
    """Multi-head self-attention computed by hand ("explicit") or by PyTorch's fused
    ``scaled_dot_product_attention`` ("sdpa"), with nn.MultiheadAttention's parameter layout:
    q, k and v projections stacked in that order in ``in_proj_weight``/``in_proj_bias``."""

    def __init__(self, width: int, heads: int, *, mode: str, causal: bool, dropout: float,
                 device: Any, dtype: Any) -> None:
        super().__init__()
        self.width, self.heads, self.mode, self.causal = width, heads, mode, causal
        self.dropout = dropout
        self.scale = 1.0 / math.sqrt(width // heads)
        self.in_proj_weight = nn.Parameter(torch.empty(3 * width, width, device=device,
                                                       dtype=dtype))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * width, device=device, dtype=dtype))
        self.out_proj = nn.Linear(width, width, device=device, dtype=dtype)
        # nn.MultiheadAttention._reset_parameters, so every mode starts from the same law.
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.in_proj_bias)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, x: Any) -> Any:
        batch, tokens, width = x.shape
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)
        # (B, T, 3d) -> three (B, heads, T, head_dim)
        q, k, v = qkv.view(batch, tokens, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        p = self.dropout if self.training else 0.0
        if self.mode == "sdpa":
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=self.causal)
        else:
            scores = q @ k.transpose(-2, -1) * self.scale
            if self.causal:
                future = torch.ones(tokens, tokens, dtype=torch.bool, device=x.device).triu(1)
                scores = scores.masked_fill(future, float("-inf"))
            weights = F.dropout(scores.softmax(dim=-1), p=p, training=self.training)
            out = weights @ v
        return self.out_proj(out.transpose(1, 2).reshape(batch, tokens, width))


class _MHASelfAttention(nn.MultiheadAttention):  # type: ignore[misc]
    """Self-attention by nn.MultiheadAttention itself (batch first, so eval under no_grad may
    take torch's fused fast path); causal through a boolean mask, True above the diagonal."""

    def __init__(self, width: int, heads: int, *, causal: bool, dropout: float, device: Any,
                 dtype: Any) -> None:
        super().__init__(width, heads, dropout=dropout, batch_first=True, device=device,
                         dtype=dtype)
        self.causal = causal

    def forward(self, x: Any) -> Any:
        mask = None
        if self.causal:
            tokens = x.shape[1]
            mask = torch.ones(tokens, tokens, dtype=torch.bool, device=x.device).triu(1)
        out, _ = super().forward(x, x, x, need_weights=False, attn_mask=mask,
                                 is_causal=self.causal)
        return out


def _self_attention(width: int, heads: int, *, attention: str, causal: bool, dropout: float,
                    device: Any, dtype: Any) -> Any:
    if attention == "mha":
        return _MHASelfAttention(width, heads, causal=causal, dropout=dropout, device=device,
                                 dtype=dtype)
    return _PackedSelfAttention(width, heads, mode=attention, causal=causal, dropout=dropout,
                                device=device, dtype=dtype)


def copy_weights(src: Any, dst: Any) -> None:
    """Copy every parameter and buffer of ``src`` into ``dst``, in place.

    Both must be the same architecture with the same sizes; the attention implementation
    may differ, since all three store the same tensors under the same names.

    Parameters
    ----------
    src, dst : nn.Module
        Models from the same factory (``dst`` may be on another device or dtype).

    Raises
    ------
    TypeError
        Either is not an nn.Module.
    ValueError
        Their parameter names or shapes differ.
    """
    for name, m in (("src", src), ("dst", dst)):
        if not isinstance(m, nn.Module):
            raise TypeError(f"{name} must be an nn.Module, got {type(m).__name__}")
    source, target = src.state_dict(), dst.state_dict()
    if source.keys() != target.keys():
        missing = sorted(target.keys() - source.keys())
        extra = sorted(source.keys() - target.keys())
        raise ValueError(f"different architectures: dst has {missing[:5]} that src lacks and "
                         f"src has {extra[:5]} that dst lacks")
    shapes = [(k, tuple(v.shape), tuple(target[k].shape)) for k, v in source.items()
              if v.shape != target[k].shape]
    if shapes:
        name, a, b = shapes[0]
        raise ValueError(f"different sizes: {name} is {a} in src and {b} in dst "
                         f"({len(shapes)} tensors differ)")
    dst.load_state_dict(source)


# -- building blocks ----------------------------------------------------------------------

class PreNormBlock(nn.Module):  # type: ignore[misc]
    """A pre-norm transformer block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))`` with
    mlp = Linear(d, mlp_dim), GELU, Linear(mlp_dim, d), Dropout. Input and output (B, T, d)."""

    def __init__(self, width: int, heads: int, mlp_dim: int, *, attention: str, causal: bool,
                 dropout: float, eps: float, gelu: str, device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.ln_1 = nn.LayerNorm(width, eps=eps, **kw)
        self.attn = _self_attention(width, heads, attention=attention, causal=causal,
                                    dropout=dropout, **kw)
        self.drop = nn.Dropout(dropout)
        self.ln_2 = nn.LayerNorm(width, eps=eps, **kw)
        self.mlp = nn.Sequential(nn.Linear(width, mlp_dim, **kw), nn.GELU(approximate=gelu),
                                 nn.Linear(mlp_dim, width, **kw), nn.Dropout(dropout))

    def forward(self, x: Any) -> Any:
        x = x + self.drop(self.attn(self.ln_1(x)))
        return x + self.mlp(self.ln_2(x))


class PostNormBlock(nn.Module):  # type: ignore[misc]
    """BERT's post-norm layer: ``ln_1(x + attn(x))``, then ``ln_2(x + mlp(x))``."""

    def __init__(self, width: int, heads: int, mlp_dim: int, *, attention: str, dropout: float,
                 eps: float, device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.attn = _self_attention(width, heads, attention=attention, causal=False,
                                    dropout=dropout, **kw)
        self.drop = nn.Dropout(dropout)
        self.ln_1 = nn.LayerNorm(width, eps=eps, **kw)
        self.mlp = nn.Sequential(nn.Linear(width, mlp_dim, **kw), nn.GELU(),
                                 nn.Linear(mlp_dim, width, **kw), nn.Dropout(dropout))
        self.ln_2 = nn.LayerNorm(width, eps=eps, **kw)

    def forward(self, x: Any) -> Any:
        x = self.ln_1(x + self.drop(self.attn(x)))
        return self.ln_2(x + self.mlp(x))


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, *,
             device: Any, dtype: Any) -> list[Any]:
    """A bias-free convolution padded to keep the size (at stride 1) and its BatchNorm."""
    return [nn.Conv2d(cin, cout, kernel, stride, padding=(kernel - 1) // 2, groups=groups,
                      bias=False, device=device, dtype=dtype),
            nn.BatchNorm2d(cout, device=device, dtype=dtype)]


class _ImageModel(nn.Module):  # type: ignore[misc]
    """Shared example input of the image classifiers: (batch, channels, size, size) noise."""

    input_channels = 3
    input_size = 224

    def example_input(self, batch: int = 1, device: Any = None) -> tuple[Any, ...]:
        """A random image batch of shape (batch, 3, size, size) in the model's dtype."""
        batch = _positive_int("batch", batch)
        return (torch.randn(batch, self.input_channels, self.input_size, self.input_size,
                            dtype=_float_dtype(self), device=device),)


# -- ResNet -------------------------------------------------------------------------------

class BasicBlock(nn.Module):  # type: ignore[misc]
    """ResNet-18/34's block: two 3x3 convs (the first strided), identity or 1x1 shortcut."""

    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int, *, device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.conv1, self.bn1 = _conv_bn(cin, planes, 3, stride, **kw)
        self.conv2, self.bn2 = _conv_bn(planes, planes, 3, **kw)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _downsample(cin, planes * self.expansion, stride, **kw)

    def forward(self, x: Any) -> Any:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):  # type: ignore[misc]
    """ResNet-50's block (torchvision's "v1.5": the stride sits on the 3x3 conv): 1x1 reduce,
    3x3, 1x1 expand by 4, identity or 1x1 shortcut."""

    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int, *, device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.conv1, self.bn1 = _conv_bn(cin, planes, 1, **kw)
        self.conv2, self.bn2 = _conv_bn(planes, planes, 3, stride, **kw)
        self.conv3, self.bn3 = _conv_bn(planes, planes * self.expansion, 1, **kw)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _downsample(cin, planes * self.expansion, stride, **kw)

    def forward(self, x: Any) -> Any:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


def _downsample(cin: int, cout: int, stride: int, *, device: Any, dtype: Any) -> Any:
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(*_conv_bn(cin, cout, 1, stride, device=device, dtype=dtype))


class ResNet(_ImageModel):
    """torchvision's ResNet: 7x7/2 stem, 3x3/2 max pool, four stages (64, 128, 256, 512
    planes; stages 2-4 start with stride 2), global average pool, linear classifier."""

    def __init__(self, block: Any, stage_blocks: Sequence[int], num_classes: int, *,
                 device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.conv1, self.bn1 = _conv_bn(3, 64, 7, 2, **kw)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        cin, stages = 64, []
        for i, n in enumerate(stage_blocks):
            planes = 64 * 2 ** i
            blocks = []
            for j in range(n):
                blocks.append(block(cin, planes, 2 if (i > 0 and j == 0) else 1, **kw))
                cin = planes * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, num_classes, **kw)

    def forward(self, x: Any) -> Any:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# -- MobileNetV2 --------------------------------------------------------------------------

class InvertedResidual(nn.Module):  # type: ignore[misc]
    """MobileNetV2's block: 1x1 expand (skipped at ratio 1), 3x3 depthwise, ReLU6 after both,
    1x1 linear projection; residual when the stride is 1 and the widths match."""

    def __init__(self, cin: int, cout: int, stride: int, expand_ratio: int, *, device: Any,
                 dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        hidden = cin * expand_ratio
        self.use_res_connect = stride == 1 and cin == cout
        layers: list[Any] = []
        if expand_ratio != 1:
            layers += [*_conv_bn(cin, hidden, 1, **kw), nn.ReLU6(inplace=True)]
        layers += [*_conv_bn(hidden, hidden, 3, stride, groups=hidden, **kw),
                   nn.ReLU6(inplace=True), *_conv_bn(hidden, cout, 1, **kw)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: Any) -> Any:
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


# torchvision's table at width 1.0: expansion t, output channels c, repeats n, first stride s.
_MOBILENET_V2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                        (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


class MobileNetV2(_ImageModel):
    """torchvision's MobileNetV2 at width 1.0: 32-channel stem, 17 inverted residuals, 1x1 to
    1280 channels, global average pool, Dropout(0.2), linear classifier."""

    def __init__(self, num_classes: int, *, dropout: float, device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        cin, last = 32, 1280
        features: list[Any] = [nn.Sequential(*_conv_bn(3, cin, 3, 2, **kw), nn.ReLU6(inplace=True))]
        for t, c, n, s in _MOBILENET_V2_STAGES:
            for i in range(n):
                features.append(InvertedResidual(cin, c, s if i == 0 else 1, t, **kw))
                cin = c
        features.append(nn.Sequential(*_conv_bn(cin, last, 1, **kw), nn.ReLU6(inplace=True)))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(last, num_classes, **kw))

    def forward(self, x: Any) -> Any:
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


# -- Vision Transformer -------------------------------------------------------------------

class VisionTransformer(_ImageModel):
    """torchvision's ViT: patch embedding by a strided conv, class token, learned position
    embedding, pre-norm encoder (LayerNorm eps 1e-6), final LayerNorm, linear head on the
    class token."""

    def __init__(self, *, image_size: int, patch_size: int, layers: int, width: int,
                 heads: int, mlp_dim: int, num_classes: int, attention: str, dropout: float,
                 device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.input_size, self.patch_size = image_size, patch_size
        tokens = (image_size // patch_size) ** 2 + 1
        self.conv_proj = nn.Conv2d(3, width, patch_size, patch_size, **kw)
        self.class_token = nn.Parameter(torch.zeros(1, 1, width, **kw))
        self.pos_embedding = nn.Parameter(torch.empty(1, tokens, width, **kw))
        nn.init.normal_(self.pos_embedding, std=0.02)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.Sequential(*(
            PreNormBlock(width, heads, mlp_dim, attention=attention, causal=False,
                         dropout=dropout, eps=1e-6, gelu="none", **kw) for _ in range(layers)))
        self.ln = nn.LayerNorm(width, eps=1e-6, **kw)
        self.head = nn.Linear(width, num_classes, **kw)

    def forward(self, x: Any) -> Any:
        if x.dim() != 4 or tuple(x.shape[1:]) != (3, self.input_size, self.input_size):
            raise ValueError(f"expected images (batch, 3, {self.input_size}, {self.input_size}) "
                             f"(the position embedding is learned for that size), got "
                             f"{tuple(x.shape)}")
        x = self.conv_proj(x).flatten(2).transpose(1, 2)          # (B, patches, d)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.ln(self.layers(self.dropout(x + self.pos_embedding)))
        return self.head(x[:, 0])


# -- language models ----------------------------------------------------------------------

class _TokenModel(nn.Module):  # type: ignore[misc]
    """Shared example input of the language models: random token ids."""

    vocab_size: int
    max_positions: int

    def example_input(self, batch: int = 1, device: Any = None) -> tuple[Any, ...]:
        """Random token ids of shape (batch, min(128, max_positions)), int64."""
        return (_token_ids(batch, min(_EXAMPLE_TOKENS, self.max_positions), self.vocab_size,
                           device),)


class GPT2(_TokenModel):
    """GPT-2: token (wte) plus learned position (wpe) embeddings, causal pre-norm blocks
    (GELU tanh approximation, LayerNorm eps 1e-5), final LayerNorm, LM head sharing wte's
    weight. Token ids (B, T) in, logits (B, T, vocab) out."""

    def __init__(self, *, vocab_size: int, max_positions: int, layers: int, width: int,
                 heads: int, mlp_dim: int, attention: str, dropout: float, device: Any,
                 dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.vocab_size, self.max_positions = vocab_size, max_positions
        self.wte = nn.Embedding(vocab_size, width, **kw)
        self.wpe = nn.Embedding(max_positions, width, **kw)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            PreNormBlock(width, heads, mlp_dim, attention=attention, causal=True,
                         dropout=dropout, eps=1e-5, gelu="tanh", **kw) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, eps=1e-5, **kw)
        self.lm_head = nn.Linear(width, vocab_size, bias=False, **kw)
        self.lm_head.weight = self.wte.weight       # tied: one Parameter object, counted once

    def forward(self, ids: Any) -> Any:
        _check_token_ids(ids, self.max_positions)
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(positions))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class BERT(_TokenModel):
    """BERT's encoder (Hugging Face's BertModel): word + position + token-type embeddings,
    LayerNorm (eps 1e-12), post-norm layers (exact GELU), pooler Linear + tanh on the first
    token. Token ids (B, T) in, ``(hidden states (B, T, d), pooled (B, d))`` out; no padding
    mask, every token attends to every other."""

    def __init__(self, *, vocab_size: int, max_positions: int, type_vocab_size: int,
                 layers: int, width: int, heads: int, mlp_dim: int, attention: str,
                 dropout: float, device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.vocab_size, self.max_positions = vocab_size, max_positions
        self.word_embeddings = nn.Embedding(vocab_size, width, **kw)
        self.position_embeddings = nn.Embedding(max_positions, width, **kw)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, width, **kw)
        self.embed_norm = nn.LayerNorm(width, eps=1e-12, **kw)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            PostNormBlock(width, heads, mlp_dim, attention=attention, dropout=dropout,
                          eps=1e-12, **kw) for _ in range(layers))
        self.pooler = nn.Linear(width, width, **kw)

    def forward(self, ids: Any, token_type_ids: Any = None) -> tuple[Any, Any]:
        _check_token_ids(ids, self.max_positions)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(ids)
        elif token_type_ids.shape != ids.shape:
            raise ValueError(f"token_type_ids {tuple(token_type_ids.shape)} must match the "
                             f"ids' shape {tuple(ids.shape)}")
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = (self.word_embeddings(ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_type_ids))
        x = self.drop(self.embed_norm(x))
        for layer in self.layers:
            x = layer(x)
        return x, torch.tanh(self.pooler(x[:, 0]))


# -- small models -------------------------------------------------------------------------

class MLP(nn.Module):  # type: ignore[misc]
    """Linear + ReLU layers then a linear classifier; the input is flattened from dim 1."""

    def __init__(self, in_features: int, hidden: Sequence[int], num_classes: int, *,
                 device: Any, dtype: Any) -> None:
        super().__init__()
        self.in_features = in_features
        layers: list[Any] = []
        for width in hidden:
            layers += [nn.Linear(in_features, width, device=device, dtype=dtype), nn.ReLU()]
            in_features = width
        layers.append(nn.Linear(in_features, num_classes, device=device, dtype=dtype))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: Any) -> Any:
        return self.layers(torch.flatten(x, 1))

    def example_input(self, batch: int = 1, device: Any = None) -> tuple[Any, ...]:
        """Random features of shape (batch, in_features) in the model's dtype."""
        batch = _positive_int("batch", batch)
        return (torch.randn(batch, self.in_features, dtype=_float_dtype(self), device=device),)


class SmallCNN(_ImageModel):
    """A CIFAR-sized CNN: two stages of two 3x3 conv + BN + ReLU with 2x2 max pooling
    (32 then 64 channels), global average pool, linear classifier."""

    input_size = 32

    def __init__(self, num_classes: int, *, device: Any, dtype: Any) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layers: list[Any] = []
        cin = 3
        for cout in (32, 64):
            for _ in range(2):
                layers += [*_conv_bn(cin, cout, 3, **kw), nn.ReLU(inplace=True)]
                cin = cout
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes, **kw)

    def forward(self, x: Any) -> Any:
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.fc(torch.flatten(x, 1))


class TransformerBlock(PreNormBlock):
    """One pre-norm block (see PreNormBlock) that remembers its example sequence length."""

    def __init__(self, d_model: int, heads: int, seq: int, *, attention: str, causal: bool,
                 device: Any, dtype: Any) -> None:
        super().__init__(d_model, heads, 4 * d_model, attention=attention, causal=causal,
                         dropout=0.0, eps=1e-5, gelu="none", device=device, dtype=dtype)
        self.d_model, self.seq = d_model, seq

    def example_input(self, batch: int = 1, device: Any = None) -> tuple[Any, ...]:
        """Random activations of shape (batch, seq, d_model) in the model's dtype."""
        batch = _positive_int("batch", batch)
        return (torch.randn(batch, self.seq, self.d_model, dtype=_float_dtype(self),
                            device=device),)


# -- factories ----------------------------------------------------------------------------

def _with_example_input(factory: _Factory) -> _Factory:
    """Attach ``factory.example_input(batch=1, device=None)``: the inputs of the model that
    ``factory()`` builds with its defaults (the model's own ``example_input`` method follows
    its actual configuration)."""

    def example_input(batch: int = 1, device: Any = None) -> tuple[Any, ...]:
        # Built on the meta device: no memory is allocated, only the configuration is read.
        return factory(device="meta").example_input(batch, device)  # type: ignore[no-any-return]

    example_input.__doc__ = (f"A typical input tuple for {factory.__name__}() with its default "
                             "configuration: ``batch`` samples on ``device``.")
    example_input.__qualname__ = f"{factory.__name__}.example_input"
    setattr(factory, "example_input", example_input)
    return factory


@_with_example_input
def resnet18(num_classes: int = 1000, *, device: Any = None, dtype: Any = None) -> ResNet:
    """ResNet-18 (torchvision's): 11,689,512 parameters at 1000 classes.

    Parameters
    ----------
    num_classes : int
        Outputs of the final linear layer.
    device, dtype : optional
        Passed to every layer constructor; ``device="meta"`` builds without allocating.

    Returns
    -------
    ResNet
        In train mode; images (B, 3, H, W) in, logits (B, num_classes) out. Example input
        (B, 3, 224, 224).
    """
    return ResNet(BasicBlock, (2, 2, 2, 2), _positive_int("num_classes", num_classes),
                  device=device, dtype=dtype)


@_with_example_input
def resnet50(num_classes: int = 1000, *, device: Any = None, dtype: Any = None) -> ResNet:
    """ResNet-50 (torchvision's v1.5, stride on the 3x3): 25,557,032 parameters at 1000
    classes. Parameters and return as for ``resnet18``."""
    return ResNet(Bottleneck, (3, 4, 6, 3), _positive_int("num_classes", num_classes),
                  device=device, dtype=dtype)


@_with_example_input
def mobilenet_v2(num_classes: int = 1000, *, dropout: float = 0.2, device: Any = None,
                 dtype: Any = None) -> MobileNetV2:
    """MobileNetV2 (torchvision's, width 1.0): 3,504,872 parameters at 1000 classes.

    Parameters
    ----------
    num_classes : int
        Outputs of the classifier.
    dropout : float
        Dropout probability before the classifier.
    device, dtype : optional
        Passed to every layer constructor; ``device="meta"`` builds without allocating.

    Returns
    -------
    MobileNetV2
        In train mode; images (B, 3, H, W) in, logits (B, num_classes) out. Example input
        (B, 3, 224, 224).
    """
    return MobileNetV2(_positive_int("num_classes", num_classes),
                       dropout=_probability("dropout", dropout), device=device, dtype=dtype)


@_with_example_input
def vit_b_16(num_classes: int = 1000, image_size: int = 224, attention: str = "mha", *,
             patch_size: int = 16, layers: int = 12, width: int = 768, heads: int = 12,
             mlp_dim: int | None = None, dropout: float = 0.0, device: Any = None,
             dtype: Any = None) -> VisionTransformer:
    """ViT-B/16 (torchvision's): 86,567,656 parameters at the defaults.

    Parameters
    ----------
    num_classes : int
        Outputs of the head.
    image_size : int
        Side of the square input in pixels; a multiple of ``patch_size``.
    attention : {"mha", "explicit", "sdpa"}
        How every attention layer computes (same parameters and math for all three).
    patch_size, layers, width, heads : int
        Patch side in pixels, encoder blocks, model width, attention heads (width % heads
        must be 0); smaller values give a reduced model for quick runs.
    mlp_dim : int, optional
        Hidden width of each block's MLP; 4 * width by default (3072).
    dropout : float
        Dropout probability in the encoder and attention (0 in torchvision's ViT-B/16).
    device, dtype : optional
        Passed to every layer constructor; ``device="meta"`` builds without allocating.

    Returns
    -------
    VisionTransformer
        In train mode; images (B, 3, image_size, image_size) in, logits (B, num_classes) out.

    Raises
    ------
    ValueError
        An unknown attention, a non-positive size, image_size not a multiple of patch_size
        or width not a multiple of heads.
    """
    image_size = _positive_int("image_size", image_size)
    patch_size = _positive_int("patch_size", patch_size)
    if image_size % patch_size:
        raise ValueError(f"image_size {image_size} is not a multiple of patch_size {patch_size}")
    sizes = _encoder_sizes(layers, width, heads, mlp_dim, attention, dropout)
    return VisionTransformer(image_size=image_size, patch_size=patch_size,
                             num_classes=_positive_int("num_classes", num_classes), **sizes,
                             device=device, dtype=dtype)


@_with_example_input
def gpt2_small(vocab_size: int = 50257, max_positions: int = 1024, attention: str = "sdpa", *,
               layers: int = 12, width: int = 768, heads: int = 12, mlp_dim: int | None = None,
               dropout: float = 0.1, device: Any = None, dtype: Any = None) -> GPT2:
    """GPT-2 small: 124,439,808 unique parameters at the defaults (LM head tied to wte).

    Parameters
    ----------
    vocab_size, max_positions : int
        Rows of the token and position embeddings (and the logits' last dimension).
    attention : {"sdpa", "explicit", "mha"}
        How every (causal) attention layer computes; same parameters and math for all three.
    layers, width, heads : int
        Blocks, model width, attention heads (width % heads must be 0).
    mlp_dim : int, optional
        Hidden width of each block's MLP; 4 * width by default (3072).
    dropout : float
        Dropout probability on embeddings, attention weights and residual branches.
    device, dtype : optional
        Passed to every layer constructor; ``device="meta"`` builds without allocating.

    Returns
    -------
    GPT2
        In train mode; int64 token ids (B, T <= max_positions) in, logits (B, T, vocab_size)
        out. Example input (B, 128).
    """
    sizes = _encoder_sizes(layers, width, heads, mlp_dim, attention, dropout)
    return GPT2(vocab_size=_positive_int("vocab_size", vocab_size),
                max_positions=_positive_int("max_positions", max_positions), **sizes,
                device=device, dtype=dtype)


@_with_example_input
def bert_base(vocab_size: int = 30522, attention: str = "sdpa", *, max_positions: int = 512,
              type_vocab_size: int = 2, layers: int = 12, width: int = 768, heads: int = 12,
              mlp_dim: int | None = None, dropout: float = 0.1, device: Any = None,
              dtype: Any = None) -> BERT:
    """BERT-base encoder with pooler: 109,482,240 parameters at the defaults.

    Parameters
    ----------
    vocab_size, max_positions, type_vocab_size : int
        Rows of the word, position and token-type embeddings.
    attention : {"sdpa", "explicit", "mha"}
        How every attention layer computes; same parameters and math for all three.
    layers, width, heads : int
        Layers, model width, attention heads (width % heads must be 0).
    mlp_dim : int, optional
        Hidden width of each layer's MLP; 4 * width by default (3072).
    dropout : float
        Dropout probability on embeddings, attention weights and residual branches.
    device, dtype : optional
        Passed to every layer constructor; ``device="meta"`` builds without allocating.

    Returns
    -------
    BERT
        In train mode; int64 token ids (B, T <= max_positions) in, ``(hidden states
        (B, T, width), pooled (B, width))`` out. Example input (B, 128).
    """
    sizes = _encoder_sizes(layers, width, heads, mlp_dim, attention, dropout)
    return BERT(vocab_size=_positive_int("vocab_size", vocab_size),
                max_positions=_positive_int("max_positions", max_positions),
                type_vocab_size=_positive_int("type_vocab_size", type_vocab_size), **sizes,
                device=device, dtype=dtype)


@_with_example_input
def mlp(in_features: int = 784, hidden: Sequence[int] = (512, 512), num_classes: int = 10, *,
        device: Any = None, dtype: Any = None) -> MLP:
    """A multilayer perceptron, 784-512-512-10 (MNIST-sized) by default: 669,706 parameters.

    Parameters
    ----------
    in_features : int
        Features per sample (inputs are flattened from dim 1).
    hidden : sequence of int
        Width of each hidden Linear + ReLU layer.
    num_classes : int
        Outputs of the last layer.
    device, dtype : optional
        Passed to every layer constructor.

    Returns
    -------
    MLP
        In train mode; (B, in_features) in, (B, num_classes) out.
    """
    widths = [_positive_int("hidden width", w) for w in hidden]
    return MLP(_positive_int("in_features", in_features), widths,
               _positive_int("num_classes", num_classes), device=device, dtype=dtype)


@_with_example_input
def small_cnn(num_classes: int = 10, *, device: Any = None, dtype: Any = None) -> SmallCNN:
    """A small CIFAR-sized CNN (see SmallCNN): 66,410 parameters at 10 classes.

    Parameters
    ----------
    num_classes : int
        Outputs of the classifier.
    device, dtype : optional
        Passed to every layer constructor.

    Returns
    -------
    SmallCNN
        In train mode; images (B, 3, H, W) in, logits (B, num_classes) out. Example input
        (B, 3, 32, 32).
    """
    return SmallCNN(_positive_int("num_classes", num_classes), device=device, dtype=dtype)


@_with_example_input
def transformer_block(d_model: int = 256, heads: int = 4, seq: int = 64,
                      attention: str = "sdpa", *, causal: bool = False, device: Any = None,
                      dtype: Any = None) -> TransformerBlock:
    """One pre-norm transformer block (MLP 4 * d_model, exact GELU): 789,760 parameters at
    d_model 256.

    Parameters
    ----------
    d_model, heads : int
        Width and attention heads (d_model % heads must be 0).
    seq : int
        Tokens per sequence of the example input.
    attention : {"sdpa", "explicit", "mha"}
        How the attention computes; same parameters and math for all three.
    causal : bool
        Mask attention to earlier tokens.
    device, dtype : optional
        Passed to every layer constructor.

    Returns
    -------
    TransformerBlock
        In train mode; (B, S, d_model) in and out.
    """
    d_model, heads = _positive_int("d_model", d_model), _positive_int("heads", heads)
    _heads_divide(d_model, heads)
    return TransformerBlock(d_model, heads, _positive_int("seq", seq),
                            attention=_attention_mode(attention), causal=bool(causal),
                            device=device, dtype=dtype)


MODELS: dict[str, Callable[..., Any]] = {
    "resnet18": resnet18, "resnet50": resnet50, "mobilenet_v2": mobilenet_v2,
    "vit_b_16": vit_b_16, "gpt2_small": gpt2_small, "bert_base": bert_base,
    "mlp": mlp, "small_cnn": small_cnn, "transformer_block": transformer_block,
}
