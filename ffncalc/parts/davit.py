"""A DaViT vision tower from the pixels up (Ding et al. 2022, "DaViT: Dual Attention Vision Transformers", §3), as
transformers 5.23 builds Florence-2's (models/florence2, Florence2VisionBackbone), with Florence-2's position tables and
mean token before its projector (Florence2MultiModalProjector). Not a part of its own: a tower (parts/vision.py) holds
one in place of its patch embedding and layers. Every convolution's output position is a matmul of its kernel's inputs.

- Four stages of widths wᵢ. Each opens with a convolutional embedding (Florence2VisionConvEmbed): Conv2d(wᵢ₋₁ → wᵢ, kᵢ ×
  kᵢ, stride sᵢ, padding pᵢ) with a bias, a LayerNorm over its output channels (the first stage's) or over its input
  channels before it (patch_prenorm: the others').
- Then depthᵢ blocks, each a spatial block and a channel block. Each of the two: a depthwise Conv2d(w, 3 × 3) with a
  bias added to its input; a LayerNorm; its attention, added to its input; a second depthwise convolution added to its
  input; a LayerNorm and an MLP (fc1 w → mlp_ratio·w, GELU, fc2 back, both with biases), added to its input. The spatial
  block's attention runs within windows of window × window positions, the grid padded with zeros to whole windows first
  (qkv and proj run over the padded positions too): heads of w / headsᵢ. The channel block's attention runs between
  channels: groupsᵢ groups of w / groupsᵢ channels, each channel's query a vector over every position (scores
  (w / groupsᵢ)² a group, each over the positions), its output transposed back; qkv (with qkv_bias) and proj (with a
  bias) over every position.
- Florence-2's projector first adds a learned 2-D position table (row and column tables of max_position_embeddings rows,
  half the width each) and a fixed cosine row (a buffer), then puts the mean over the positions before them: one image is
  1 + (side / 32)² tokens, 577 at 768 pixels; the projector's linear and LayerNorm run over those.

Each convolution of kernel k, stride s and padding p makes ⌊(side + 2p − k) / s⌋ + 1 positions a side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from ._stem import PixelStem

LAYERNORM = Norm(kind="layernorm")
GELU = ACTIVATION_OPS["gelu"]


@dataclass(frozen=True)
class DaVit(PixelStem):
    whole: ClassVar[str | None] = "DaViT's positions"
    widths: tuple[Positive, ...] = (128, 256, 512, 1024)  # embed_dim (Florence2VisionConfig)
    depths: tuple[Positive, ...] = (1, 1, 9, 1)  # depths: blocks of a spatial and a channel block, a stage
    heads: tuple[Positive, ...] = (4, 8, 16, 32)  # num_heads: the window attention's
    groups: tuple[Positive, ...] = (4, 8, 16, 32)  # num_groups: the channel attention's
    kernels: tuple[Positive, ...] = (7, 3, 3, 3)  # patch_size: each stage's embedding convolution
    strides: tuple[Positive, ...] = (4, 2, 2, 2)  # patch_stride
    paddings: tuple[int, ...] = (3, 1, 1, 1)  # patch_padding
    prenorms: tuple[bool, ...] = (False, True, True, True)  # patch_prenorm: the norm before the convolution
    window: Positive = 12  # window_size
    mlp_ratio: float = 4.0  # mlp_ratio: fc1's width int(w · ratio)
    qkv_bias: bool = True
    position_rows: Positive = 50  # the projector's row and column tables (max_position_embeddings)

    def check(self) -> None:
        n = len(self.widths)
        lists = (self.depths, self.heads, self.groups, self.kernels, self.strides, self.paddings, self.prenorms)
        if any(len(x) != n for x in lists):
            raise SpecError(
                ("vision", "davit"), "depths, heads, groups, kernels, strides, paddings and prenorms name every stage once"
            )
        for w, h, g in zip(self.widths, self.heads, self.groups, strict=True):
            if w % h or w % g:
                raise SpecError(("vision", "davit", "heads"), f"a stage of width {w} splits into {h} heads and {g} groups")

    @property
    def width(self) -> int:
        """Channels of its output (the last stage's)."""
        return self.widths[-1]

    @property
    def stride(self) -> int:
        out = 1
        for s in self.strides:
            out *= s
        return out

    def sides(self, image_size: int) -> list[int]:
        """Positions a side after each stage's embedding convolution."""
        out, side = [], image_size
        for k, s, p in zip(self.kernels, self.strides, self.paddings, strict=True):
            side = (side + 2 * p - k) // s + 1
            out.append(side)
        return out

    @property
    def features(self) -> int:
        return self.width

    def own_tokens(self, image_size: int) -> int | None:  # the mean and every position of its last stage
        return self.tokens(image_size)

    def attach(self, module, projector) -> None:
        """Its stages, and Florence-2's position tables on the projector."""
        super().attach(module, projector)
        for name, table in self.position_tables().items():
            setattr(projector, name, table)

    def apply(self, module, pixels) -> None:
        module.projector(self.run(module, pixels, module.projector))

    def tokens(self, image_size: int) -> int:
        """The language model's tokens one image becomes: the mean and every position of the last stage."""
        return 1 + self.sides(image_size)[-1] ** 2

    def terms(self, image_size: int) -> list[tuple[str, object]]:
        """Its tensors and their work over one image of ``image_size`` pixels a side ("image": each term's macs and
        elementwise are the image's), and the projector's position tables."""
        e = Emitter("layers")

        def conv(name: str, out: int, inputs: int, k: int, positions: int, copies: int = 1) -> None:
            """A convolution of ``out`` channels reading ``inputs`` channels a group over k × k, with a bias."""
            e.term(f"{name}.weight", "weight", (out, inputs, k, k), copies, macs=copies * positions * out * inputs * k * k)
            e.term(f"{name}.bias", "bias", (out,), copies, elementwise=copies * positions * out)

        def linear(name: str, d_in: int, d_out: int, bias: bool, rows: int, copies: int) -> None:
            e.term(f"{name}.weight", "weight", (d_out, d_in), copies, macs=copies * rows * d_in * d_out)
            if bias:
                e.term(f"{name}.bias", "bias", (d_out,), copies, elementwise=copies * rows * d_out)

        sides, before = self.sides(image_size), image_size
        channels = 3
        for i, w in enumerate(self.widths):
            stage, n, side = f"vision.stage{i}", self.depths[i], sides[i]
            p = side * side
            if self.prenorms[i]:  # over the input's channels at every input position
                e.norm(f"{stage}.embed.norm", LAYERNORM, channels, 1, total=before * before * channels)
            conv(f"{stage}.embed.conv", w, channels, self.kernels[i], p)
            if not self.prenorms[i]:
                e.norm(f"{stage}.embed.norm", LAYERNORM, w, 1, total=p * w)
            windows = -(-side // self.window)
            padded = (windows * self.window) ** 2  # the window attention's qkv and proj run over the padded grid
            f = int(w * self.mlp_ratio)
            h, g = self.heads[i], self.groups[i]
            for block, rows in (("spatial", padded), ("channel", p)):
                b = f"{stage}.{block}"
                for k in ("conv1", "conv2"):
                    conv(f"{b}.{k}", w, 1, 3, p, n)
                e.op(f"{b}.residual", 4 * n * p * w, n)  # each convolution's and each sublayer's output added
                e.norm(f"{b}.norm1", LAYERNORM, w, n, total=p * w)
                linear(f"{b}.attn.qkv", w, 3 * w, self.qkv_bias, rows, n)
                if block == "spatial":  # each window's positions meet each other: windows² · window⁴ pairs an image
                    heads, pairs, dim = h, windows * windows * self.window**4, w // h
                else:  # each group's channels meet each other over every position
                    heads, pairs, dim = g, (w // g) ** 2, p
                for part in ("scores", "values"):
                    e.term(f"{b}.attn.{part}", "core", (heads, pairs, dim), n, numel=0, macs=0, select="pairs")
                e.op(f"{b}.attn.softmax", n * heads * pairs * SOFTMAX_OPS, n, scores=n * heads * pairs)
                linear(f"{b}.attn.proj", w, w, True, rows, n)
                e.norm(f"{b}.norm2", LAYERNORM, w, n, total=p * w)
                linear(f"{b}.ffn.fc1", w, f, True, p, n)
                e.op(f"{b}.ffn.act", n * p * f * GELU, n)
                linear(f"{b}.ffn.fc2", f, w, True, p, n)
            channels, before = w, side
        w, p = self.widths[-1], sides[-1] ** 2
        table = Emitter("embedding")  # looked up and added with the cosine row, then the mean: no multiply-adds
        table.term("vision.projector.position_rows.weight", "position", (self.position_rows, w // 2), elementwise=2 * p * w)
        table.term("vision.projector.position_columns.weight", "position", (self.position_rows, w - w // 2))
        e.op("vision.projector.mean", p * w, 1)
        return [("image", t) for t in e.out + table.out]

    def modules(self) -> dict:
        """Its reference modules (imports torch when called), named as its terms: ``run`` takes an image's pixels
        through them."""
        from torch import nn

        from ..blocks._torch import Linear, MatMul, make_norm

        spec = self

        def conv(cin: int, cout: int, k: int, stride: int = 1, padding: int = 1, groups: int = 1) -> nn.Conv2d:
            c = nn.Conv2d(cin, cout, k, stride=stride, padding=padding, groups=groups)
            c.weight_flops = True  # verify: its FLOPs are its weight's
            return c

        class Block(nn.Module):
            def __init__(self, w: int, f: int):
                super().__init__()
                self.conv1, self.conv2 = conv(w, w, 3, groups=w), conv(w, w, 3, groups=w)
                self.norm1, self.norm2 = make_norm(LAYERNORM, w), make_norm(LAYERNORM, w)
                self.attn = nn.Module()
                self.attn.qkv, self.attn.proj = Linear(w, 3 * w, bias=spec.qkv_bias), Linear(w, w, bias=True)
                self.attn.scores, self.attn.values = MatMul(), MatMul()
                self.ffn = nn.Module()
                self.ffn.fc1, self.ffn.fc2 = Linear(w, f, bias=True), Linear(f, w, bias=True)

        class Stage(nn.Module):
            def __init__(self, i: int):
                super().__init__()
                w, before = spec.widths[i], 3 if i == 0 else spec.widths[i - 1]
                self.embed = nn.Module()
                self.embed.conv = conv(before, w, spec.kernels[i], spec.strides[i], spec.paddings[i])
                self.embed.norm = make_norm(LAYERNORM, before if spec.prenorms[i] else w)
                f = int(w * spec.mlp_ratio)
                blocks = []
                for _ in range(spec.depths[i]):
                    pair = nn.Module()
                    pair.spatial, pair.channel = Block(w, f), Block(w, f)
                    blocks.append(pair)
                self.layers = nn.ModuleList(blocks)  # ".layers.N." drops out of verify's component names
                self.i = i

            def embed_forward(self, x):
                if spec.prenorms[self.i]:
                    x = self.embed.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
                x = self.embed.conv(x)
                if not spec.prenorms[self.i]:
                    x = self.embed.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
                return x

            def sublayers(self, b, x, attend):
                bsz, c, hh, ww = x.shape
                x = b.conv1(x) + x
                t = x.flatten(2).transpose(1, 2)
                t = t + attend(b, b.norm1(t), hh, ww)
                x = t.transpose(1, 2).reshape(bsz, c, hh, ww)
                x = b.conv2(x) + x
                t = x.flatten(2).transpose(1, 2)
                t = t + b.ffn.fc2(nn.functional.gelu(b.ffn.fc1(b.norm2(t))))
                return t.transpose(1, 2).reshape(bsz, c, hh, ww)

            def windowed(self, b, t, hh, ww):
                """Florence2VisionWindowAttention: the grid padded to whole windows, each window's positions attending
                each other, the padding dropped."""
                bsz, _, c = t.shape
                win, heads = spec.window, spec.heads[self.i]
                ph, pw = -(-hh // win) * win, -(-ww // win) * win
                g = nn.functional.pad(t.reshape(bsz, hh, ww, c), (0, 0, 0, pw - ww, 0, ph - hh))
                g = g.reshape(bsz, ph // win, win, pw // win, win, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, win * win, c)
                q, k, v = b.attn.qkv(g).reshape(g.shape[0], win * win, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
                probs = b.attn.scores(q * (c // heads) ** -0.5, k.transpose(-2, -1)).softmax(-1)
                out = b.attn.proj(b.attn.values(probs, v).transpose(1, 2).reshape(-1, win * win, c))
                out = out.reshape(bsz, ph // win, pw // win, win, win, c).permute(0, 1, 3, 2, 4, 5).reshape(bsz, ph, pw, c)
                return out[:, :hh, :ww].reshape(bsz, hh * ww, c)

            def channels(self, b, t, hh, ww):
                """Florence2VisionChannelAttention: each group's channels attending each other over every position."""
                bsz, n, c = t.shape
                g = spec.groups[self.i]
                q, k, v = b.attn.qkv(t).reshape(bsz, n, 3, g, c // g).permute(2, 0, 3, 4, 1)  # (B, G, C/G, N) each
                probs = b.attn.scores(q * n**-0.5, k.transpose(-2, -1)).softmax(-1)
                out = b.attn.values(probs, v).permute(0, 3, 1, 2).reshape(bsz, n, c)
                return b.attn.proj(out)

            def forward(self, x):
                x = self.embed_forward(x)
                for pair in self.layers:
                    x = self.sublayers(pair.spatial, x, self.windowed)
                    x = self.sublayers(pair.channel, x, self.channels)
                return x

        return {f"stage{i}": Stage(i) for i in range(len(self.widths))}

    def position_tables(self) -> dict:
        """The projector's row and column tables (Florence2VisionLearnedAbsolutePositionEmbedding2D)."""
        from torch import nn

        w = self.widths[-1]
        return {
            "position_rows": nn.Embedding(self.position_rows, w // 2),
            "position_columns": nn.Embedding(self.position_rows, w - w // 2),
        }

    def run(self, modules, pixels, projector):
        """(images, 3, size, size) through the stages and Florence-2's tables and mean: (images, 1 + positions,
        channels), as the projector's linear reads them."""
        import torch

        x = pixels
        for i in range(len(self.widths)):
            x = getattr(modules, f"stage{i}")(x)
        b, c, hh, ww = x.shape
        rows = projector.position_rows.weight[:hh]
        columns = projector.position_columns.weight[:ww]
        table = torch.cat([columns[None].expand(hh, ww, -1), rows[:, None].expand(hh, ww, -1)], dim=-1)
        t = (x.permute(0, 2, 3, 1) + table).reshape(b, hh * ww, c)
        return torch.cat([t.mean(1, keepdim=True), t], dim=1)
