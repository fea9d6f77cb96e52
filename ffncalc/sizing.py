"""FFN sizes: parameters and FLOPs of one block, and the width that matches another block's budget.

Pure integer arithmetic, shared by ``bench --compare-ffn`` and ``compare``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Kind = Literal["dense", "gated"]


def ffn_params(d_model: int, d_ff: int, kind: Kind, bias: bool) -> int:
    """Dense: up (d_ff×d) and down (d×d_ff); gated adds a gate (d_ff×d). Biases: one per output."""
    matrices = 2 if kind == "dense" else 3
    return matrices * d_model * d_ff + (bias * ((matrices - 1) * d_ff + d_model))


def ffn_flops(d_model: int, d_ff: int, kind: Kind) -> int:
    """Forward matmul FLOPs per token: 2 per multiply-add of each weight matrix."""
    return 2 * (2 if kind == "dense" else 3) * d_model * d_ff


@dataclass(frozen=True)
class Match:
    d_ff: int
    value: int  # the matched figure (params or FLOPs) at d_ff
    target: int
    exact: bool

    @property
    def residual(self) -> int:
        return self.value - self.target


def match_width(d_model: int, target: int, kind: Kind, *, bias: bool, match: Literal["params", "flops"] = "params",
                multiple_of: int = 1) -> Match:
    """The ``kind`` block's width whose params (or forward FLOPs) equal ``target``.

    Both are a·d_ff + c, so the exact width is (target − c)/a. When that is not a whole multiple of
    ``multiple_of``: the nearest width, or with multiple_of > 1 the next multiple up, as Llama's
    FeedForward rounds (multiple_of · ceil(h / multiple_of)).
    """
    figure = (lambda f: ffn_params(d_model, f, kind, bias)) if match == "params" else \
        (lambda f: ffn_flops(d_model, f, kind))
    c = figure(0)
    a = figure(1) - c
    if multiple_of > 1:
        width = multiple_of * max(1, math.ceil((target - c) / (a * multiple_of)))
    else:
        low = max(1, (target - c) // a)
        width = min((low, low + 1), key=lambda f: (abs(figure(f) - target), f))
    return Match(width, figure(width), target, figure(width) == target)


def ffn_activation_elements(d_model: int, d_ff: int, kind: Kind) -> int:
    """Elements per token a forward keeps for backward, as an eager framework keeps them.

    Dense: the input x (for up's weight gradient), the pre-activation (for the activation's gradient)
    and the activation (for down's weight gradient): d + 2·d_ff. Gated: x, the gate and up outputs,
    the activated gate (for the product's gradient) and the product (for down): d + 4·d_ff.
    """
    return d_model + (2 if kind == "dense" else 4) * d_ff


def ffn_kept_elements(d_model: int, ffn) -> int:
    """Elements per token any FFN block keeps for backward, its input included. A mixture keeps the
    router's probabilities (n_experts), each chosen expert's and each shared expert's elements."""
    from .spec import GatedFFN, MoEFFN

    if isinstance(ffn, MoEFFN):
        shared = ffn.n_shared_experts * ffn_kept_elements(d_model, ffn.shared) if ffn.shared else 0
        return ffn.n_experts + ffn.top_k * ffn_kept_elements(d_model, ffn.expert) + shared
    kind = "gated" if isinstance(ffn, GatedFFN) else "dense"
    return ffn_activation_elements(d_model, ffn.width(d_model), kind)
