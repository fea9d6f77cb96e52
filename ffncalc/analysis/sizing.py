"""FFN sizes: parameters and FLOPs of one block, and the width that matches another block's budget.

Pure integer arithmetic, shared by ``bench --compare-ffn`` and ``compare``. The figures come from the
blocks' own terms (``blocks/dense_ffn.py``), so there is one formula for each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Kind = Literal["dense", "gated"]


def ffn_block(kind: Kind, d_ff: int, *, bias: bool = False, activation: str | None = None):
    """A dense or gated FFN block (its default activation unless one is given)."""
    from ..blocks import kinds

    extra = {} if activation is None else {"activation": activation}
    return kinds("ffn")[kind](d_ff=d_ff, bias=bias, **extra)


def _terms(d_model: int, block) -> list:
    from ..model.terms import Emitter

    e = Emitter("layers", (0, 1))
    block.emit(e, "ffn.", d_model, 1, 1)
    return e.out


def block_params(d_model: int, block) -> int:
    """Parameters of one FFN block: its weight matrices and biases."""
    return sum(t.numel * t.count for t in _terms(d_model, block))


def block_flops(d_model: int, block) -> int:
    """Forward matmul FLOPs per token of one FFN block: 2 per multiply-add of each weight matrix."""
    return sum(2 * t.macs for t in _terms(d_model, block) if t.role == "weight")


def ffn_params(d_model: int, d_ff: int, kind: Kind, bias: bool) -> int:
    """Dense: up (d_ff×d) and down (d×d_ff); gated adds a gate (d_ff×d). Biases: one per output."""
    return block_params(d_model, ffn_block(kind, d_ff, bias=bias))


def ffn_flops(d_model: int, d_ff: int, kind: Kind) -> int:
    """Forward matmul FLOPs per token: 2 per multiply-add of each weight matrix."""
    return block_flops(d_model, ffn_block(kind, d_ff))


@dataclass(frozen=True)
class Match:
    d_ff: int
    value: int  # the matched figure (params or FLOPs) at d_ff
    target: int
    exact: bool

    @property
    def residual(self) -> int:
        return self.value - self.target


def match_width(
    d_model: int, target: int, kind: Kind, *, bias: bool, match: Literal["params", "flops"] = "params", multiple_of: int = 1
) -> Match:
    """The ``kind`` block's width whose params (or forward FLOPs) equal ``target``.

    Both are a·d_ff + c, so the exact width is (target − c)/a. When that is not a whole multiple of
    ``multiple_of``: the nearest width, or with multiple_of > 1 the next multiple up, as Llama's
    FeedForward rounds (multiple_of · ceil(h / multiple_of)).
    """
    figure = (lambda f: ffn_params(d_model, f, kind, bias)) if match == "params" else (lambda f: ffn_flops(d_model, f, kind))
    c = figure(0)
    a = figure(1) - c
    if multiple_of > 1:
        width = multiple_of * max(1, math.ceil((target - c) / (a * multiple_of)))
    else:
        low = max(1, (target - c) // a)
        width = min((low, low + 1), key=lambda f: (abs(figure(f) - target), f))
    return Match(width, figure(width), target, figure(width) == target)


def ffn_activation_elements(d_model: int, d_ff: int, kind: Kind) -> int:
    """Elements per token a forward keeps for backward, as the block states it (``Block.kept_elements``)."""
    from ..model.stack import Model

    return ffn_block(kind, d_ff).kept_elements(Model.bare(d_model))
