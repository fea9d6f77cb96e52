"""A high-resolution SAM tower beside a vision tower, and the aligner that joins their features (DeepSeek-VL's hybrid
encoder, Lu et al. 2024 §2.1): the same image, resized to ``image_size`` pixels a side, through a SAM ViT encoder
(parts/sam.py, with its patch convolution and absolute position table), while the low-resolution tower (a SigLIP,
parts/vision.py) reads it at the tower's size. Not a part of its own: a tower holds one. As transformers 5.23 builds it
(DeepseekVLHybridModel):

- high_res_vision_model: SamVisionModel's encoder, its neck included;
- high_res_vision_neck: a second neck (conv1 1 × 1, a LayerNorm, conv2 3 × 3, a LayerNorm, no biases) over the output
  of the first global layer (global_attn_indexes[0]);
- high_res_vision_proj, run on both necks' outputs: each bilinearly resized to 4 × the low tower's grid a side (no
  multiply-adds), then conv1 (3 × 3, stride 2, padding 1, out → 2 · out) and conv2 (the same, 2 · out → 4 · out), no
  biases: one token a patch of the low tower; the global one scaled by high_res_vision_alpha (one learned number) and
  added;
- the aligner (DeepseekVLHybridAligner): vision_proj, Linear(the low tower's width, text width / 2), over its
  patches; high_res_vision_proj, Linear(4 · out, text width / 2), over the high-resolution tokens; both side by side,
  a GELU, proj, Linear(text width, text width); biases throughout."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..model.schema import Positive
from ..model.terms import ACTIVATION_OPS, Emitter
from .sam import LAYERNORM, SamEncoder


@dataclass(frozen=True)
class HighRes:
    sam: SamEncoder
    image_size: Positive  # pixels a side of the high-resolution image
    patch_size: Positive
    text: Positive  # the aligner's width: the language model's
    channels: Positive = 3

    @property
    def grid(self) -> int:
        return self.image_size // self.patch_size

    def terms(self, low: int, low_grid: int) -> list[tuple[str, object]]:
        """Its tensors and work for one image whose low tower runs ``low_grid`` × ``low_grid`` patches of ``low``
        features: "image" (once an image) or "projector" (a token of the image: the aligner's)."""
        g, d, p, o = self.grid, self.sam.width, self.patch_size, self.sam.out
        n = g * g
        out: list[tuple[str, object]] = []
        once = Emitter("layers")
        once.term("vision.high_res.patch_embed.weight", "weight", (d, self.channels, p, p), macs=n * d * self.channels * p * p)
        once.term("vision.high_res.patch_embed.bias", "bias", (d,), elementwise=n * d)
        table = Emitter("embedding")
        table.term("vision.high_res.pos_embed.weight", "position", (n, d), elementwise=n * d)
        out += [("image", t) for t in once.out + table.out]
        for where, t in self.sam.terms(g):  # its patches' work, once an image
            scale = n if where == "patch" else 1
            t = replace(t, name="vision.high_res." + t.name[7:], component="vision.high_res." + t.component[7:])
            out.append(("image", replace(t, macs=t.macs * scale, elementwise=t.elementwise * scale, scores=t.scores * scale)))
        neck = Emitter("layers")  # the second neck, over the first global layer's output
        neck.term("vision.high_res.global_neck.conv1.weight", "weight", (o, d, 1, 1), macs=n * d * o)
        neck.norm("vision.high_res.global_neck.norms", LAYERNORM, o, 2, total=n * o)
        neck.term("vision.high_res.global_neck.conv2.weight", "weight", (o, o, 3, 3), macs=n * 9 * o * o)
        half = 2 * low_grid  # the resized 4 × low_grid, halved by conv1; conv2 halves it again
        neck.term("vision.high_res.proj.conv1.weight", "weight", (2 * o, o, 3, 3), macs=2 * half * half * 9 * o * 2 * o)
        neck.term("vision.high_res.proj.conv2.weight", "weight", (4 * o, 2 * o, 3, 3), macs=2 * low_grid**2 * 9 * 2 * o * 4 * o)
        neck.term("vision.high_res.alpha", "bias", (1,), elementwise=2 * low_grid**2 * 4 * o)  # scaled, added
        out += [("image", t) for t in neck.out]
        aligner = Emitter("layers")
        half_text = self.text // 2
        aligner.linear("vision.projector.low", low, half_text, True, 1)
        aligner.linear("vision.projector.high", 4 * o, half_text, True, 1)
        aligner.op("vision.projector.act", self.text * ACTIVATION_OPS["gelu"], 1)
        aligner.linear("vision.projector.linear", self.text, self.text, True, 1)
        return out + [("projector", t) for t in aligner.out]

    def aligner(self, low: int) -> dict:
        """The aligner's reference modules, by name (imports torch when called): the tower's projector holds them."""
        from ..blocks._torch import Linear

        half, o = self.text // 2, self.sam.out
        low_proj, high_proj = Linear(low, half, bias=True), Linear(4 * o, half, bias=True)
        return {"low": low_proj, "high": high_proj, "linear": Linear(self.text, self.text, bias=True)}

    @staticmethod
    def align(projector, high, low):
        """The aligner (``projector``'s modules) over the high-resolution tokens and the low tower's features."""
        import torch

        from ..blocks._torch import ACTIVATIONS

        joined = torch.cat([projector.high(high), projector.low(low)], dim=-1)
        return projector.linear(ACTIVATIONS["gelu"](joined))

    def module(self):
        """Its reference module (imports torch when called): ``forward(side, pixels)`` takes the images and returns
        the high-resolution tokens, ``side`` × ``side`` of them (the low tower's grid)."""
        import torch
        from torch import nn

        from ..blocks._torch import make_norm

        spec = self
        d, o, p = self.sam.width, self.sam.out, self.patch_size
        first_global = self.sam.windowed  # the windowed layers come first: the first global one follows them

        class HighResModule(nn.Module):
            def __init__(self):
                super().__init__()
                self.patch_embed = nn.Conv2d(spec.channels, d, p, stride=p)
                self.pos_embed = nn.Embedding(spec.grid**2, d)
                self.layers, self.neck = spec.sam.modules()
                self.global_neck = nn.Module()
                self.global_neck.conv1 = nn.Conv2d(d, o, 1, bias=False)
                self.global_neck.conv2 = nn.Conv2d(o, o, 3, padding=1, bias=False)
                self.global_neck.norms = nn.ModuleList([make_norm(LAYERNORM, o), make_norm(LAYERNORM, o)])
                self.proj = nn.Module()
                self.proj.conv1 = nn.Conv2d(o, 2 * o, 3, stride=2, padding=1, bias=False)
                self.proj.conv2 = nn.Conv2d(2 * o, 4 * o, 3, stride=2, padding=1, bias=False)
                for conv in (self.patch_embed, self.global_neck.conv1, self.global_neck.conv2, self.proj.conv1, self.proj.conv2):
                    conv.weight_flops = True  # verify: its FLOPs are its weight's
                self.alpha = nn.Parameter(torch.zeros(1))

            def project(self, x, side):  # (b, g², o) resized to 4 × side a side, then both strided convolutions
                b, n, _ = x.shape
                g = round(n**0.5)
                x = x.transpose(1, 2).reshape(b, o, g, g)
                x = nn.functional.interpolate(x, size=(4 * side, 4 * side), mode="bilinear", align_corners=False)
                return self.proj.conv2(self.proj.conv1(x)).flatten(2).transpose(1, 2)

            def forward(self, side, pixels):
                b, g = pixels.shape[0], spec.grid
                h = self.patch_embed(pixels).flatten(2).transpose(1, 2) + self.pos_embed.weight
                h = h.reshape(b, g, g, d)
                for k, layer in enumerate(self.layers):
                    h = layer(h)
                    if k == first_global:  # the second neck over its output
                        y = self.global_neck.conv1(h.permute(0, 3, 1, 2))
                        y = self.global_neck.norms[0](y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
                        glob = self.global_neck.norms[1](self.global_neck.conv2(y).permute(0, 2, 3, 1)).flatten(1, 2)
                return self.project(self.neck(h), side) + self.project(glob, side) * self.alpha

        return HighResModule()
