"""A merger inside a vision tower: after its first ``after`` layers, each window of window × window patches attends
within itself and is merged into one patch, so the layers after it run over a quarter of the positions
(MiniCPMV4_6ViTWindowAttentionMerger, MiniCPM-V 4.6's "16x" mode). Not a part of its own: a tower (parts/vision.py)
holds one. As transformers 5.23 builds it:

- layer_norm1 (a LayerNorm of the width) over every patch, then attention with q, k, v and out_proj (biases) in which
  each patch meets the window² patches of its own window, added to its input;
- each window's patches side by side (window² × width features): pre_norm (a LayerNorm over them), linear_1 (to
  window² × intermediate_size, a bias), gelu_pytorch_tanh, linear_2 (to the width, a bias), plus the mean of the
  window's patches (no multiply-adds).

Where ``runs`` is false (downsample_mode "4x": MiniCPM-OCR's default) the class builds it and runs no image through
it: its parameters, no work, and every layer over every patch."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..model.schema import Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter


@dataclass(frozen=True)
class WindowMerger:
    after: Positive  # the tower's layers before it (insert_layer_id + 1)
    heads: Positive  # its attention's heads (the tower's)
    d_ff: Positive  # its MLP's width: window² × the tower's intermediate_size
    window: Positive = 2  # patches a side of a window (window_kernel_size)
    runs: bool = True  # whether an image runs through it (false: "4x", its parameters alone)

    def terms(self, d: int, grid: int) -> list[tuple[str, object]]:
        """Its tensors and work over a grid of ``grid`` × ``grid`` patches, each with what it runs over: "patch" (every
        patch), "image" (the windows' attention products, once an image) or "merged" (a window)."""
        w2, hd = self.window**2, d // self.heads
        patch, image, merged = Emitter("layers"), Emitter("layers"), Emitter("layers")
        layernorm = Norm(kind="layernorm")
        patch.norm("vision.merger.norm1", layernorm, d, 1)
        for part in "qkv":
            patch.linear(f"vision.merger.attn.{part}", d, d, True, 1)
        pairs = grid * grid * w2  # every patch meets the window² patches of its window
        for part in ("scores", "values"):
            image.term(f"vision.merger.attn.{part}", "core", (self.heads, pairs, hd), numel=0, macs=0, select="pairs")
        patch.op("vision.merger.attn.softmax", self.heads * w2 * SOFTMAX_OPS, 1, scores=self.heads * w2)
        patch.linear("vision.merger.attn.o", d, d, True, 1)
        patch.op("vision.merger.attn.residual", d, 1)
        merged.norm("vision.merger.pre_norm", layernorm, w2 * d, 1)
        merged.linear("vision.merger.linear_1", w2 * d, self.d_ff, True, 1)
        merged.op("vision.merger.act", self.d_ff * ACTIVATION_OPS["gelu_tanh"], 1)
        merged.linear("vision.merger.linear_2", self.d_ff, d, True, 1)
        merged.op("vision.merger.residual", w2 * d + d, 1)  # the window's mean, added
        out = [("patch", t) for t in patch.out] + [("image", t) for t in image.out] + [("merged", t) for t in merged.out]
        if self.runs:
            return out
        return [("image", replace(t, macs=0, elementwise=0, scores=0)) for _, t in out if t.numel]

    def module(self, d: int):
        """Its reference module (imports torch when called): ``forward(h)`` takes (images, patches, width), each run
        of window² patches one window, and returns one patch a window."""
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm

        spec = self
        layernorm = Norm(kind="layernorm")

        class MergerModule(nn.Module):
            def __init__(self):
                super().__init__()
                w2 = spec.window**2
                self.norm1 = make_norm(layernorm, d)
                self.attn = nn.Module()
                for part in "qkvo":
                    setattr(self.attn, part, Linear(d, d, bias=True))
                self.attn.scores, self.attn.values = MatMul(), MatMul()
                self.pre_norm = make_norm(layernorm, w2 * d)
                self.linear_1 = Linear(w2 * d, spec.d_ff, bias=True)
                self.linear_2 = Linear(spec.d_ff, d, bias=True)

            def forward(self, h):
                b, n, _ = h.shape
                w2, heads = spec.window**2, spec.heads
                x = self.norm1(h)

                def split(t):  # (b, windows, heads, window², head_dim)
                    return t.reshape(b, n // w2, w2, heads, d // heads).transpose(2, 3)

                q, k, v = split(self.attn.q(x)), split(self.attn.k(x)), split(self.attn.v(x))
                probs = self.attn.scores(q, k.transpose(-2, -1)).softmax(-1)
                out = self.attn.values(probs, v).transpose(2, 3).reshape(b, n, d)
                h = h + self.attn.o(out)
                windows = h.reshape(b, n // w2, w2 * d)
                y = self.linear_2(ACTIVATIONS["gelu_tanh"](self.linear_1(self.pre_norm(windows))))
                return y + h.reshape(b, n // w2, w2, d).mean(dim=2)

        del torch
        return MergerModule()
