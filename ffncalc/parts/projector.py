"""A projector: what turns a tower's output features into the language model's input tokens. Not a part of its own:
a tower (parts/vision.py) holds one. In the order they run, each where its model has it, with its source:

1. an average pool of the patch grid towards ``pool_to`` tokens a side, by a kernel and stride of ⌊grid / pool_to⌋
   patches (Gemma3MultiModalProjector: 64 × 64 patches to 16 × 16 tokens), which has no multiply-adds;
2. where ``prenorm``, a norm over each patch's features first (Qwen2-VL's ln_q, Qwen3-VL's norm);
3. a pixel shuffle of ``shuffle`` × ``shuffle`` tokens into one of shuffle² times the features, a reshape (Idefics3's
   connector, Aya Vision's and Command A Vision's; Qwen2-VL's and Qwen3-VL's mergers, 2 × 2 patches);
4. a norm over each token's features (VipLLaVA's projector_layernorm over five layers' features concatenated; Gemma
   3's mm_soft_emb_norm, an RMSNorm; Mistral 3's norm, an RMSNorm, before its patch merger; Aya Vision's LayerNorm
   over the shuffled features);
5. ``merge`` × ``merge`` neighbouring tokens into one: Pixtral's patch merger (Mistral3PatchMerger: their features
   unfolded side by side, Linear(width·merge², width) without a bias);
6. Llama 4's vision adapter (Llama4VisionPixelShuffleMLP's Llama4VisionMLP2), where ``adapter``: Linear(features,
   adapter) → GELU → Linear(adapter, adapter) → GELU, no biases, before the projector's own linear (then named
   linear_1, as Llama4MultiModalProjector names it);
7. an MLP: Linear(features, hidden) → activation → Linear(hidden, d_model), biases as stated (LLaVA's
   LlavaMultiModalProjector, Liu et al. 2023 §4.1); with ``gated`` its hidden features halved by a SwiGLU
   (silu(a) ⊙ b, Cohere2VisionMultiModalProjector, AyaVisionMultiModalProjector); or one Linear(features, d_model)
   (PaliGemma's; Gemma 3's bias-free mm_input_projection_weight; Idefics3's modality_projection).

Each stage's work runs over the tokens it sees: ``terms`` says which, the grid's (after any pool) or the merged."""

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
    gated: bool = False  # the hidden features halved by a SwiGLU: silu(first half) ⊙ second half
    norm: Literal["none", "layernorm", "rmsnorm"] = "none"  # a norm over its input
    pool_to: NonNegative = 0  # tokens a side an average pool of the patch grid aims at before it (0: none)
    merge: NonNegative = 0  # Pixtral's patch merger of merge × merge tokens (0: none)
    shuffle: NonNegative = 0  # a pixel shuffle of shuffle × shuffle tokens into one (0: none)
    prenorm: bool = False  # its norm over each patch before the shuffle (else over what the shuffle makes)
    out: NonNegative = 0  # the width it writes (0: the model's; Qwen2-VL's merger states its own)
    adapter: NonNegative = 0  # Llama 4's vision adapter's width: two linears without biases, each then a GELU (0: none)

    def terms(self, d_model: int, prefix: str) -> list[tuple[str, object]]:
        """Its tensors and their work, each with the tokens it runs over: "grid" (a token of the patch grid, after
        any pool) or "projector" (a token it writes), named under ``prefix`` (its tower's: vision.projector.)."""
        d_model = self.out or d_model
        grid, out = Emitter("layers"), Emitter("layers")
        features = self.width * max(self.shuffle, 1) ** 2
        if self.norm != "none":
            width = self.width if self.prenorm else features
            (out if self.shuffle and not self.prenorm else grid).norm(f"{prefix}norm", Norm(kind=self.norm), width, 1)
        if self.merge:
            out.linear(f"{prefix}patch_merger", features * self.merge**2, features, False, 1)
        if self.adapter:  # Llama4VisionMLP2: fc1, GELU, fc2, GELU
            out.linear(f"{prefix}adapter.fc1", features, self.adapter, False, 1)
            out.op(f"{prefix}adapter.act", 2 * self.adapter * ACTIVATION_OPS["gelu"], 1)
            out.linear(f"{prefix}adapter.fc2", self.adapter, self.adapter, False, 1)
            features = self.adapter
        if self.hidden:
            out.linear(f"{prefix}linear_1", features, self.hidden, self.bias, 1)
            half = self.hidden // 2 if self.gated else self.hidden
            ops = half * (ACTIVATION_OPS["silu"] + 1) if self.gated else self.hidden * ACTIVATION_OPS[self.activation]
            out.op(f"{prefix}act", ops, 1)
            out.linear(f"{prefix}linear_2", half, d_model, self.bias, 1)
        else:
            out.linear(f"{prefix}linear_1" if self.adapter else f"{prefix}linear", features, d_model, self.bias, 1)
        return [("grid", t) for t in grid.out] + [("projector", t) for t in out.out]

    def grid_tokens(self, grid: int) -> int:
        """Tokens of a square grid of ``grid`` × ``grid`` patch features after any pool."""
        if not self.pool_to:
            return grid**2
        kernel = grid // self.pool_to  # nn.AvgPool2d(kernel, stride=kernel); 0: no image can run (vision.check)
        return (grid // kernel) ** 2 if kernel else 0

    def tokens(self, grid: int) -> int:
        """LM tokens from a square grid of ``grid`` × ``grid`` patch features."""
        return self.grid_tokens(grid) // max(self.merge, self.shuffle, 1) ** 2

    def module(self, d_model: int):
        """Its reference module (imports torch when called)."""
        d_model = self.out or d_model
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, make_norm

        proj = self

        class ProjectorModule(nn.Module):
            def __init__(self):
                super().__init__()
                features = proj.width * max(proj.shuffle, 1) ** 2
                if proj.norm != "none":
                    self.norm = make_norm(Norm(kind=proj.norm), proj.width if proj.prenorm else features)
                if proj.merge:
                    self.patch_merger = Linear(proj.width * proj.merge**2, proj.width, bias=False)
                if proj.adapter:
                    self.adapter = nn.Module()
                    self.adapter.fc1 = Linear(features, proj.adapter, bias=False)
                    self.adapter.fc2 = Linear(proj.adapter, proj.adapter, bias=False)
                    features = proj.adapter
                if proj.hidden:
                    self.linear_1 = Linear(features, proj.hidden, bias=proj.bias)
                    self.linear_2 = Linear(proj.hidden // 2 if proj.gated else proj.hidden, d_model, bias=proj.bias)
                elif proj.adapter:
                    self.linear_1 = Linear(features, d_model, bias=proj.bias)
                else:
                    self.linear = Linear(features, d_model, bias=proj.bias)

            def forward(self, x):
                b, n, w = x.shape
                grid = int(round(n**0.5))
                if proj.pool_to:  # the patch grid, average-pooled by a kernel and stride of ⌊grid / pool_to⌋
                    k = grid // proj.pool_to
                    x = x.transpose(1, 2).reshape(b, w, grid, grid)
                    x = nn.functional.avg_pool2d(x, k, k).flatten(2).transpose(1, 2)
                if proj.norm != "none" and proj.prenorm:
                    x = self.norm(x)
                if proj.shuffle:  # shuffle × shuffle neighbours side by side (their order changes no count)
                    x = x.reshape(b, x.shape[1] // proj.shuffle**2, w * proj.shuffle**2)
                if proj.norm != "none" and not proj.prenorm:
                    x = self.norm(x)
                if proj.merge:
                    x = self.patch_merger(x.reshape(b, x.shape[1] // proj.merge**2, w * proj.merge**2))
                if proj.adapter:
                    gelu = ACTIVATIONS["gelu"]
                    x = gelu(self.adapter.fc2(gelu(self.adapter.fc1(x))))
                    if not proj.hidden:
                        return self.linear_1(x)
                if proj.hidden:
                    h = self.linear_1(x)
                    if proj.gated:
                        a, g = h.chunk(2, dim=-1)
                        h = nn.functional.silu(a) * g
                    else:
                        h = ACTIVATIONS[proj.activation](h)
                    return self.linear_2(h)
                return self.linear(x)

        del torch
        return ProjectorModule()
