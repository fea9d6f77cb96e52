"""A SAM ViT encoder inside a vision tower (Kirillov et al. 2023, Segment Anything, §3 and appendix A; its image
encoder is ViTDet's backbone, Li et al. 2022): the tower's layers and its convolutional neck, after the tower's patch
convolution and absolute position table (parts/vision.py). Not a part of its own: a tower holds one. As transformers
5.23 builds it (GotOcr2VisionEncoder, SamVisionEncoder and the encoders built as them):

- ``depth`` pre-norm layers over the patch grid (grid × grid patches, channels last), each: layer_norm1 (a LayerNorm
  with a bias); attention with a fused qkv (Linear(width, 3 · width), bias as qkv_bias) and proj (a bias), whose
  scores add decomposed relative positions (Li et al. 2022, MViTv2 §3.1): the queries times the rows of rel_pos_h
  (2 · side − 1 rows of head_dim) one per key row and of rel_pos_w one per key column, two einsums of side multiply-adds
  per query, head and head feature; the sum added to it; layer_norm2 and an MLP (lin1 to mlp_dim, GELU, lin2, biases);
- ``full`` of them (global_attn_indexes) attend over the whole grid (side = grid); the others over windows of
  ``window`` × ``window`` patches (side = window), the grid first padded with zeros to whole windows (P = ⌈grid /
  window⌉ · window a side): qkv, the products and proj run over every padded position (P² a layer), the norms and the
  MLP over the grid alone;
- the neck: conv1 (1 × 1, width → out, no bias), a LayerNorm over the channels, conv2 (3 × 3, padding 1, out → out, no
  bias), a LayerNorm: each output position a matmul of its kernel's inputs.

Its relative position tables are the checkpoint's (``grid`` a side at its image size): an image of another size
interpolates them (F.interpolate, no multiply-adds)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, RESIDUAL_ADDS, SOFTMAX_OPS, Activation, Emitter

LAYERNORM = Norm(kind="layernorm")


@dataclass(frozen=True)
class SamEncoder:
    width: Positive  # hidden_size
    depth: Positive  # num_hidden_layers
    heads: Positive  # num_attention_heads
    mlp: Positive  # mlp_dim
    out: Positive  # the neck's output_channels
    grid: Positive  # patches a side of the checkpoint's images (image_size // patch_size): its global tables' side
    window: NonNegative = 14  # patches a side of a windowed layer's window (0: every layer global)
    full: NonNegative = 4  # layers attending the whole grid (global_attn_indexes)
    qkv_bias: bool = True
    rel_pos: bool = True  # use_rel_pos: the decomposed relative positions
    activation: Activation = "gelu"

    @property
    def windowed(self) -> int:
        """Layers attending windows."""
        return self.depth - self.full if self.window else 0

    def sides(self, grid: int) -> list[tuple[int, int, int, int]]:
        """(layers, attention side, padded grid side, rows of each relative table) of each kind of layer over an image
        of ``grid`` patches a side: the windowed layers', then the global layers'."""
        out = []
        if self.windowed:
            w = self.window
            out.append((self.windowed, w, -(-grid // w) * w, 2 * w - 1))
        if self.depth - self.windowed:
            out.append((self.depth - self.windowed, grid, grid, 2 * self.grid - 1))
        return out

    def terms(self, grid: int) -> list[tuple[str, object]]:
        """Its tensors and their work over an image of ``grid`` × ``grid`` patches, each with what it runs over:
        "patch" (a patch of the grid) or "image" (once an image: the work over padded windows)."""
        d, h, hd = self.width, self.heads, self.width // self.heads
        patch, image = Emitter("layers"), Emitter("layers")
        patch.norm("vision.norms", LAYERNORM, d, 2 * self.depth)
        kinds = self.sides(grid)
        rows = sum(n * padded**2 for n, _, padded, _ in kinds)  # positions qkv and proj run over, padding included
        for part in "qkv":  # the fused qkv's three thirds
            image.term(f"vision.attn.{part}.weight", "weight", (d, d), self.depth, macs=rows * d * d)
            if self.qkv_bias:
                image.term(f"vision.attn.{part}.bias", "bias", (d,), self.depth, elementwise=rows * d)
        tables = Emitter("embedding")
        for n, side, padded, table in kinds:
            pairs = padded**2 * side**2  # every position of a window meets every position of it
            for part in ("scores", "values"):
                image.term(f"vision.attn.{part}", "core", (h, pairs, hd), n, numel=0, macs=0, select="pairs")
            image.op("vision.attn.softmax", n * h * pairs * SOFTMAX_OPS, n, scores=0)
            if self.rel_pos:  # each query times side rows of each table; both added to its scores
                for axis in "hw":
                    tables.term(f"vision.attn.rel_pos_{axis}", "position", (table, hd), n)
                    image.term(f"vision.attn.rel_{axis}", "core", (h, padded**2 * side, hd), n, numel=0, macs=0, select="pairs")
                image.op("vision.attn.rel_pos", n * 2 * h * pairs, n)
        image.term("vision.attn.o.weight", "weight", (d, d), self.depth, macs=rows * d * d)
        image.term("vision.attn.o.bias", "bias", (d,), self.depth, elementwise=rows * d)
        patch.linear("vision.ffn.up", d, self.mlp, True, self.depth)
        patch.op("vision.ffn.act", self.depth * self.mlp * ACTIVATION_OPS[self.activation], self.depth)
        patch.linear("vision.ffn.down", self.mlp, d, True, self.depth)
        patch.op("vision.residual", self.depth * RESIDUAL_ADDS * d, self.depth)
        o = self.out  # the neck: 1 × 1, then 3 × 3 kernels
        patch.term("vision.neck.conv1.weight", "weight", (o, d, 1, 1), macs=d * o)
        patch.norm("vision.neck.norms", LAYERNORM, o, 2)
        patch.term("vision.neck.conv2.weight", "weight", (o, o, 3, 3), macs=9 * o * o)
        return [("image", t) for t in tables.out] + [("patch", t) for t in patch.out] + [("image", t) for t in image.out]

    def modules(self):
        """Its reference modules (imports torch when called): its layers (an nn.ModuleList, the windowed first) and
        its neck; ``run`` takes an image's patches through them."""
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm

        spec = self
        d, heads, hd = self.width, self.heads, self.width // self.heads

        class Layer(nn.Module):
            def __init__(self, windowed: bool):
                super().__init__()
                self.windowed = windowed
                side = spec.window if windowed else spec.grid
                self.norms = nn.ModuleList([make_norm(LAYERNORM, d), make_norm(LAYERNORM, d)])
                self.attn = nn.Module()
                for part in "qkv":
                    setattr(self.attn, part, Linear(d, d, bias=spec.qkv_bias))
                self.attn.o = Linear(d, d, bias=True)
                self.attn.scores, self.attn.values = MatMul(), MatMul()
                if spec.rel_pos:
                    self.attn.rel_pos_h = nn.Parameter(torch.empty(2 * side - 1, hd))
                    self.attn.rel_pos_w = nn.Parameter(torch.empty(2 * side - 1, hd))
                    self.attn.rel_h, self.attn.rel_w = MatMul(), MatMul()
                self.ffn = nn.Module()
                self.ffn.up = Linear(d, spec.mlp, bias=True)
                self.ffn.down = Linear(spec.mlp, d, bias=True)

            def forward(self, h):  # (b, grid, grid, d)
                b, g = h.shape[0], h.shape[1]
                x = self.norms[0](h)
                side = spec.window if self.windowed else g
                padded = -(-g // side) * side
                x = nn.functional.pad(x, (0, 0, 0, padded - g, 0, padded - g))
                n = padded // side  # windows a side
                x = x.reshape(b, n, side, n, side, d).transpose(2, 3).reshape(b * n * n, side * side, d)

                def split(t):  # (windows, heads, side², head_dim)
                    return t.reshape(t.shape[0], side * side, heads, hd).transpose(1, 2)

                q, k, v = split(self.attn.q(x)), split(self.attn.k(x)), split(self.attn.v(x))
                scores = self.attn.scores(q, k.transpose(-2, -1))
                if spec.rel_pos:  # each query row (column) times side rows of its table, one per key row (column)
                    grid_q = q.reshape(q.shape[0], heads, side, side, hd)
                    table = q.new_zeros(side, hd, side)  # the interpolated rows, indexed (no multiply-adds)
                    rel_h = self.attn.rel_h(grid_q, table)  # (windows, heads, rows, columns, key rows)
                    rel_w = self.attn.rel_w(grid_q.transpose(2, 3), table).transpose(2, 3)
                    bias = rel_h[..., :, None] + rel_w[..., None, :]
                    scores = scores + bias.reshape(scores.shape)
                out = self.attn.values(scores.softmax(-1), v).transpose(1, 2).reshape(-1, side * side, d)
                out = self.attn.o(out).reshape(b, n, n, side, side, d).transpose(2, 3).reshape(b, padded, padded, d)
                h = h + out[:, :g, :g]
                act = ACTIVATIONS[spec.activation]
                return h + self.ffn.down(act(self.ffn.up(self.norms[1](h))))

        class Neck(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(d, spec.out, 1, bias=False)
                self.conv2 = nn.Conv2d(spec.out, spec.out, 3, padding=1, bias=False)
                for conv in (self.conv1, self.conv2):
                    conv.weight_flops = True  # verify: its FLOPs are its weight's
                self.norms = nn.ModuleList([make_norm(LAYERNORM, spec.out), make_norm(LAYERNORM, spec.out)])

            def forward(self, h):  # (b, grid, grid, d) -> (b, grid², out)
                x = self.conv1(h.permute(0, 3, 1, 2))
                x = self.norms[0](x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
                x = self.norms[1](self.conv2(x).permute(0, 2, 3, 1))
                return x.flatten(1, 2)

        return nn.ModuleList(Layer(k < spec.windowed) for k in range(spec.depth)), Neck()

    def run(self, layers, neck, h):
        """(images, grid², width) through ``layers`` (each over the grid, channels last) and ``neck``: (images, grid², out)."""
        b, n, d = h.shape
        g = round(n**0.5)
        h = h.reshape(b, g, g, d)
        for layer in layers:
            h = layer(h)
        return neck(h)
