"""The residual short convolution Inkling's layers put on keys, values and each sublayer's output (transformers
5.23.0, models/inkling/modeling_inkling.py ``InklingShortConvolution``; models/inkling2 ``Inkling2ShortConvolution``):
x + conv(x), a depthwise causal Conv1d of kernel K over C channels without a bias, the sum optionally scaled by a
constant (Inkling 2: 1/√(K + 1)). Shared by the blocks that hold one; not a block kind itself."""

from __future__ import annotations

from functools import cache


def emit_residual_conv(e, name: str, channels: int, kernel: int, n: int, scaled: bool = False) -> None:
    """``name``.weight (C, 1, K): K multiply-adds per channel and token; the add of its input (and the scale)."""
    e.term(f"{name}.weight", "weight", (channels, 1, kernel), n, macs=n * channels * kernel)
    e.op(f"{name}.residual", n * channels * (2 if scaled else 1))


def residual_conv_state(channels: int, kernel: int) -> int:
    """The last K - 1 inputs the next token's convolution reads."""
    return channels * (kernel - 1)


def residual_conv(channels: int, kernel: int, scale: float = 1.0):
    """The reference module: (x + conv(x)) · scale over (B, T, C); its weight (C, 1, K) as nn.Conv1d's."""
    return _module()(channels, kernel, scale)


@cache
def _module():
    from ._torch import CausalConv1d

    class ResidualConv(CausalConv1d):
        def __init__(self, channels: int, kernel: int, scale: float):
            super().__init__(channels, kernel, False)
            self.scale = scale

        def forward(self, x):
            out = x + super().forward(x)
            return out * self.scale if self.scale != 1.0 else out

    return ResidualConv
