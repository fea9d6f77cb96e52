"""A convolutional patch merger with a newline column and begin and end rows: HunyuanOCR's (HunYuanVLVisionPatchMerger,
transformers 5.23's modeling_hunyuan_vl.py). Not a part of its own: a projector (parts/projector.py) holds one, in place
of its own stages. Over an image's grid of g × g patches of the tower's width w, in the order it runs:

- before_rms, an RMSNorm of w over every patch;
- proj_conv, a Conv2d(w, 2w) of kernel and stride ``merge`` with a bias: each output one matmul of merge² patches,
  (g / merge)² cells;
- a GELU over the 2w features; proj_out, a 1 × 1 Conv2d(2w, 4w) with a bias over each cell;
- image_newline, a learned column of 4w features after each row of cells: (g / merge) × (g / merge + 1) rows;
- mlp, Linear(4w, the model's width) with a bias, over every row, the newline column's too;
- image_begin and image_end, learned rows of the model's width before and after them;
- after_rms, an RMSNorm of the model's width over all (g / merge) × (g / merge + 1) + 2 tokens.

image_sep, a learned row of the model's width the class builds, is read by none of its forward: its parameters, no
work. An image of g × g patches is (g / merge) × (g / merge + 1) + 2 tokens of the language model."""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import isqrt

from ..model.schema import Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, Emitter


@dataclass(frozen=True)
class ConvMerger:
    merge: Positive = 2  # patches a side of a cell (spatial_merge_size)

    def sides(self, patches: int) -> tuple[int, int]:
        """Cells a side, and rows with the newline column, of a square grid of ``patches`` patches."""
        side = isqrt(patches) // self.merge
        return side * side, side * (side + 1)

    def tokens(self, grid: int) -> int:
        """LM tokens from a grid of ``grid`` × ``grid`` patches: the rows with their newline column, begin and end."""
        return self.sides(grid * grid)[1] + 2

    def terms(self, width: int, d_model: int, prefix: str, patches: int) -> list[tuple[str, object]]:
        """Its tensors and one image's work over ``patches`` patches of ``width`` (each term "image": once an image),
        named under ``prefix`` (its projector's: vision.projector.)."""
        w, m, d = width, self.merge, d_model
        cells, rows = self.sides(patches)
        tokens = rows + 2
        rms = Norm(kind="rmsnorm")
        e, table = Emitter("layers"), Emitter("embedding")
        e.norm(f"{prefix}norm", rms, w, 1)  # before_rms over every patch
        first = e.out.pop()
        e.out.append(replace(first, elementwise=patches * first.elementwise))
        # proj_conv: Conv2d(w, 2w, kernel m, stride m), m² patches of w a cell; proj_out: Conv2d(2w, 4w, 1)
        e.term(f"{prefix}conv.weight", "weight", (2 * w, w, m, m), macs=cells * m * m * w * 2 * w)
        e.term(f"{prefix}conv.bias", "bias", (2 * w,), elementwise=cells * 2 * w)
        e.op(f"{prefix}act", cells * 2 * w * ACTIVATION_OPS["gelu"], 1)
        e.term(f"{prefix}conv_out.weight", "weight", (4 * w, 2 * w, 1, 1), macs=cells * 2 * w * 4 * w)
        e.term(f"{prefix}conv_out.bias", "bias", (4 * w,), elementwise=cells * 4 * w)
        table.term(f"{prefix}newline", "position", (4 * w,))  # concatenated after each row of cells: no work
        e.term(f"{prefix}linear.weight", "weight", (d, 4 * w), macs=rows * 4 * w * d)  # mlp over every row, newlines too
        e.term(f"{prefix}linear.bias", "bias", (d,), elementwise=rows * d)
        table.term(f"{prefix}ends", "position", (2, d))  # image_begin and image_end
        table.term(f"{prefix}sep", "position", (d,))  # image_sep: built, run by no image
        e.norm(f"{prefix}post_norm", rms, d, 1)  # after_rms over every token
        last = e.out.pop()
        e.out.append(replace(last, elementwise=tokens * last.elementwise))
        return [("image", t) for t in table.out + e.out]

    def module(self, width: int, d_model: int):
        """Its reference module (imports torch when called): forward(patches) runs one batch of images' square grids."""
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, make_norm

        spec, w, d = self, width, d_model
        rms = Norm(kind="rmsnorm")

        class ConvMergerModule(nn.Module):
            def __init__(self):
                super().__init__()
                m = spec.merge
                self.norm = make_norm(rms, w)
                self.conv = nn.Conv2d(w, 2 * w, m, stride=m)
                self.conv_out = nn.Conv2d(2 * w, 4 * w, 1)
                self.conv.weight_flops = self.conv_out.weight_flops = True  # verify: their FLOPs are their weights'
                self.newline = nn.Parameter(torch.empty(4 * w))
                self.linear = Linear(4 * w, d, bias=True)
                self.ends = nn.Parameter(torch.empty(2, d))
                self.sep = nn.Parameter(torch.empty(d))
                self.post_norm = make_norm(rms, d)

            def forward(self, x):
                b, n, _ = x.shape
                g = isqrt(n)
                x = self.norm(x).transpose(1, 2).reshape(b, w, g, g)
                x = self.conv_out(ACTIVATIONS["gelu"](self.conv(x)))
                _, c, h, _ = x.shape
                x = torch.cat([x, self.newline.reshape(1, c, 1, 1).expand(b, c, h, 1)], dim=-1)
                x = self.linear(x.reshape(b, c, -1).transpose(1, 2))
                begin, end = (row.expand(b, 1, d) for row in self.ends)
                return self.post_norm(torch.cat([begin, x, end], dim=1))

        return ConvMergerModule()
