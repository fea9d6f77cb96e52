"""A projector: what turns a tower's output features into the language model's input tokens. Not a part of its own:
a tower (parts/vision.py) holds one. Its forms, each with its source:

- an MLP: Linear(width, hidden) → activation → Linear(hidden, d_model), biases as stated (LLaVA's
  LlavaMultiModalProjector, Liu et al. 2023 §4.1), or one Linear(width, d_model) (PaliGemma's);
- a norm over its input first (VipLLaVA's projector_layernorm over five layers' features concatenated; Gemma 3's
  mm_soft_emb_norm, an RMSNorm, before its mm_input_projection_weight, a bias-free matrix);
- an average pool of the patch grid before it towards ``pool_to`` tokens a side, by a kernel and stride of
  ⌊grid / pool_to⌋ patches (Gemma3MultiModalProjector: 64 × 64 patches to 16 × 16 tokens), which has no multiply-adds.

Every LM token it writes costs its matmuls once: FLOPs per image are its terms' per-token FLOPs × the tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, Activation, Emitter


@dataclass(frozen=True)
class Projector:
    width: Positive  # features it reads per token (the tower's width, × the layers whose outputs it concatenates)
    hidden: NonNegative = 0  # its MLP's hidden width (0: one linear straight to the model's width)
    bias: bool = True
    activation: Activation = "gelu"
    norm: Literal["none", "layernorm", "rmsnorm"] = "none"  # a norm over its input
    pool_to: NonNegative = 0  # tokens a side an average pool of the patch grid aims at before it (0: none)

    def terms(self, e: Emitter, d_model: int, prefix: str) -> None:
        """Its tensors and the work of one token it writes, named under ``prefix`` (its tower's: vision.projector.)."""
        if self.norm != "none":
            e.norm(f"{prefix}norm", Norm(kind=self.norm), self.width, 1)
        if self.hidden:
            e.linear(f"{prefix}linear_1", self.width, self.hidden, self.bias, 1)
            e.op(f"{prefix}act", self.hidden * ACTIVATION_OPS[self.activation], 1)
            e.linear(f"{prefix}linear_2", self.hidden, d_model, self.bias, 1)
        else:
            e.linear(f"{prefix}linear", self.width, d_model, self.bias, 1)

    def tokens(self, grid: int) -> int:
        """LM tokens from a square grid of ``grid`` × ``grid`` patch features."""
        if not self.pool_to:
            return grid**2
        kernel = grid // self.pool_to  # nn.AvgPool2d(kernel, stride=kernel); 0: no image can run (vision.check)
        return (grid // kernel) ** 2 if kernel else 0

    def module(self, d_model: int):
        """Its reference module (imports torch when called)."""
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, make_norm

        proj = self

        class ProjectorModule(nn.Module):
            def __init__(self):
                super().__init__()
                if proj.norm != "none":
                    self.norm = make_norm(Norm(kind=proj.norm), proj.width)
                if proj.hidden:
                    self.linear_1 = Linear(proj.width, proj.hidden, bias=proj.bias)
                    self.linear_2 = Linear(proj.hidden, d_model, bias=proj.bias)
                else:
                    self.linear = Linear(proj.width, d_model, bias=proj.bias)

            def forward(self, x):
                if proj.pool_to:  # the patch grid, average-pooled by a kernel and stride of ⌊grid / pool_to⌋
                    b, n, w = x.shape
                    grid = int(round(n**0.5))
                    k = grid // proj.pool_to
                    x = x.transpose(1, 2).reshape(b, w, grid, grid)
                    x = nn.functional.avg_pool2d(x, k, k).flatten(2).transpose(1, 2)
                if proj.norm != "none":
                    x = self.norm(x)
                if proj.hidden:
                    return self.linear_2(ACTIVATIONS[proj.activation](self.linear_1(x)))
                return self.linear(x)

        return ProjectorModule()
