"""A FastViT vision tower from the pixels up (Vasu et al. 2023, "FastViT: A Fast Hybrid Vision Transformer using
Structural Reparameterization", §3; FastViTHD's stage layout: Vasu et al. 2025, "FastVLM", §3.2), as timm 1.0 builds it
reparameterized (timm/models/fastvit.py, ``inference_mode``: every MobileOne, RepMixer and large-kernel branch folded
into one convolution with a bias) and transformers 5.23 wraps it (TimmWrapperModel, FastVLM's vision tower, whose
``forward_features`` output the projector reads). Not a part of its own: a tower (parts/vision.py) holds one in place
of its patch embedding and layers. Every convolution's output position is a matmul of its kernel's inputs:

- the stem: Conv2d(3 → w₀, 3 × 3, stride 2), a depthwise Conv2d(w₀, 3 × 3, stride 2) and Conv2d(w₀ → w₀, 1 × 1), each
  with a bias and a GELU;
- stages of widths wᵢ, each but the first after a downsampling PatchEmbed: a grouped Conv2d(wᵢ₋₁ → wᵢ, 7 × 7, stride
  2, groups wᵢ₋₁) and Conv2d(wᵢ → wᵢ, 1 × 1), each with a bias and a GELU; where stated, a conditional position
  encoding (RepConditionalPosEnc: a depthwise 7 × 7 convolution with a bias) before its blocks;
- RepMixer blocks: a depthwise 3 × 3 convolution with a bias (the token mixer), then the ConvMlp; attention blocks:
  a LayerNorm over the channels, multi-head attention over every position of the stage (qkv Linear(w, 3w), no bias;
  heads of 32; proj Linear(w, w) with a bias), a learned scale, then the ConvMlp; the ConvMlp: a depthwise 7 × 7
  convolution without a bias, a BatchNorm (weight and bias), fc1 Conv2d(w → ratio·w, 1 × 1) with a bias, a GELU,
  fc2 back with a bias, a learned scale;
- the final MobileOne block: a grouped Conv2d(w → 2w, 3 × 3, groups w) with a bias, squeeze-and-excitation (a mean over
  the positions, Conv2d(2w → 2w / 16) with a bias, a ReLU, Conv2d back with a bias, a sigmoid, the product), a GELU.

Each stride-2 convolution (padding k // 2) makes ⌈side / 2⌉ positions a side of side: 6 of them, 64 pixels a token."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from ._stem import PixelStem

LAYERNORM = Norm(kind="layernorm")
STRIDE = 64  # the stem's two stride-2 convolutions and four downsamplings
GELU, SIGMOID, RELU = ACTIVATION_OPS["gelu"], ACTIVATION_OPS["sigmoid"], ACTIVATION_OPS["relu"]


@dataclass(frozen=True)
class FastVit(PixelStem):
    whole: ClassVar[str | None] = "FastViT's tokens"
    widths: tuple[Positive, ...] = (96, 192, 384, 768, 1536)  # embed_dims (fastvit_mci3: FastViTHD)
    depths: tuple[Positive, ...] = (2, 12, 24, 4, 2)  # layers
    attention: tuple[bool, ...] = (False, False, False, True, True)  # token_mixers: "attention" (else "repmixer")
    position_kernels: tuple[NonNegative, ...] = (0, 0, 0, 7, 7)  # pos_embs: RepConditionalPosEnc's kernel (0: none)
    mlp_ratio: Positive = 4  # mlp_ratios, one for every stage
    head_dim: Positive = 32  # Attention's head_dim
    final_ratio: Positive = 2  # cls_ratio: the final block's channels, times the last width
    se_ratio: Positive = 16  # the final block's squeeze-and-excitation: channels / this (SEModule, rd_ratio 0.0625)

    def check(self) -> None:
        n = len(self.widths)
        if not (len(self.depths) == len(self.attention) == len(self.position_kernels) == n):
            raise SpecError(("vision", "fastvit"), "widths, depths, attention and position_kernels name every stage once")
        for w, a in zip(self.widths, self.attention, strict=True):
            if a and w % self.head_dim:
                raise SpecError(("vision", "fastvit", "head_dim"), f"{self.head_dim} does not divide an attention stage's width {w}")
        if any(b % a for a, b in zip(self.widths, self.widths[1:], strict=False)):
            raise SpecError(("vision", "fastvit", "widths"), "each width a multiple of the last (a grouped downsampling)")

    @property
    def width(self) -> int:
        """Channels of its output (the final block's)."""
        return self.final_ratio * self.widths[-1]

    @property
    def stride(self) -> int:
        return 2 ** (len(self.widths) + 1)

    @property
    def features(self) -> int:
        return self.width

    def sides(self, image_size: int) -> list[int]:
        """Positions a side after the stem's first convolution, after its second, and in each stage."""
        out = [-(-image_size // 2)]
        out.append(-(-out[0] // 2))
        for _ in self.widths[1:]:
            out.append(-(-out[-1] // 2))
        return out

    def terms(self, image_size: int) -> list[tuple[str, object]]:
        """Its tensors and their work over one image of ``image_size`` pixels a side ("image": each term's macs and
        elementwise are the image's)."""
        e = Emitter("layers")
        sides = self.sides(image_size)
        w0 = self.widths[0]

        def conv(name: str, out: int, inputs: int, k: int, positions: int, copies: int = 1, bias: bool = True) -> None:
            """A convolution of ``out`` channels reading ``inputs`` channels a group over k × k, at ``positions``."""
            e.term(f"{name}.weight", "weight", (out, inputs, k, k), copies, macs=copies * positions * out * inputs * k * k)
            if bias:
                e.term(f"{name}.bias", "bias", (out,), copies, elementwise=copies * positions * out)

        def act(name: str, ops: int, elements: int) -> None:
            e.op(name, ops * elements, 1)

        p1, p2 = sides[0] ** 2, sides[1] ** 2
        conv("vision.stem.conv1", w0, 3, 3, p1)
        conv("vision.stem.conv2", w0, 1, 3, p2)
        conv("vision.stem.conv3", w0, w0, 1, p2)
        act("vision.stem.act", GELU, (p1 + 2 * p2) * w0)
        for i, (w, n, attn, pk) in enumerate(zip(self.widths, self.depths, self.attention, self.position_kernels, strict=True)):
            stage = f"vision.stage{i}"
            side = sides[1 + i]
            p = side * side
            if i:  # PatchEmbed: its grouped 7 × 7 of stride 2 (each group's one channel in), then 1 × 1
                conv(f"{stage}.down.conv", w, 1, 7, p)
                conv(f"{stage}.down.proj", w, w, 1, p)
                act(f"{stage}.down.act", GELU, 2 * p * w)
            if pk:
                conv(f"{stage}.cpe", w, 1, pk, p)
                e.op(f"{stage}.cpe.residual", p * w, 1)
            if attn:
                e.norm(f"{stage}.norm", LAYERNORM, w, n, total=p * w)
                e.term(f"{stage}.attn.qkv.weight", "weight", (3 * w, w), n, macs=n * p * 3 * w * w)
                h = w // self.head_dim
                for part in ("scores", "values"):  # every position meets every position of its image
                    e.term(f"{stage}.attn.{part}", "core", (h, p * p, self.head_dim), n, numel=0, macs=0, select="pairs")
                e.op(f"{stage}.attn.softmax", n * h * p * p * SOFTMAX_OPS, n, scores=n * h * p * p)
                e.term(f"{stage}.attn.proj.weight", "weight", (w, w), n, macs=n * p * w * w)
                e.term(f"{stage}.attn.proj.bias", "bias", (w,), n, elementwise=n * p * w)
            else:
                conv(f"{stage}.mixer", w, 1, 3, p, n)
            scales = 2 if attn else 1  # layer_scale (and layer_scale_1 before it): a product an element
            e.term(f"{stage}.scale", "bias", (w,), scales * n, elementwise=scales * n * p * w)
            f = self.mlp_ratio * w
            conv(f"{stage}.mlp.conv", w, 1, 7, p, n, bias=False)
            e.norm(f"{stage}.mlp.bn", LAYERNORM, w, n, total=p * w)  # a weight and a bias a channel
            conv(f"{stage}.mlp.fc1", f, w, 1, p, n)
            act(f"{stage}.mlp.act", GELU, n * p * f)
            conv(f"{stage}.mlp.fc2", w, f, 1, p, n)
            e.op(f"{stage}.residual", (2 if attn else 1) * n * p * w, n)
        last, out = self.widths[-1], self.width
        p = sides[-1] ** 2
        squeeze = out // self.se_ratio
        conv("vision.final.conv", out, 1, 3, p)  # groups = last: each group's one channel into two
        e.op("vision.final.se.pool", p * out, 1)
        conv("vision.final.se.fc1", squeeze, out, 1, 1)
        conv("vision.final.se.fc2", out, squeeze, 1, 1)
        act("vision.final.se.act", RELU * squeeze + SIGMOID * out + p * out, 1)  # the ReLU, the gate, its product
        act("vision.final.act", GELU, p * out)
        assert out % last == 0
        return [("image", t) for t in e.out]

    def modules(self) -> dict:
        """Its reference modules (imports torch when called), named as its terms: ``run`` takes an image's pixels
        through them."""
        import torch
        from torch import nn

        from ..blocks._torch import Linear, MatMul, make_norm

        spec = self

        def conv(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, bias: bool = True) -> nn.Conv2d:
            c = nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, groups=groups, bias=bias)
            c.weight_flops = True  # verify: its FLOPs are its weight's
            return c

        class BatchNorm(nn.BatchNorm2d):
            is_norm = True  # verify: its weight and bias are one component

        class Stage(nn.Module):
            def __init__(self, i: int):
                super().__init__()
                w, n, attn, pk = spec.widths[i], spec.depths[i], spec.attention[i], spec.position_kernels[i]
                self.attn_stage, self.heads = attn, w // spec.head_dim
                if i:
                    prev = spec.widths[i - 1]
                    self.down = nn.Module()
                    self.down.conv, self.down.proj = conv(prev, w, 7, 2, prev), conv(w, w, 1)
                if pk:
                    self.cpe = conv(w, w, pk, groups=w)
                f = spec.mlp_ratio * w
                blocks = []
                for _ in range(n):
                    b = nn.Module()
                    if attn:
                        b.norm = make_norm(LAYERNORM, w)
                        b.attn = nn.Module()
                        b.attn.qkv, b.attn.proj = Linear(w, 3 * w, bias=False), Linear(w, w, bias=True)
                        b.attn.scores, b.attn.values = MatMul(), MatMul()
                    else:
                        b.mixer = conv(w, w, 3, groups=w)
                    b.scale = nn.ParameterList(nn.Parameter(torch.ones(w, 1, 1)) for _ in range(2 if attn else 1))
                    b.mlp = nn.Module()
                    b.mlp.conv, b.mlp.bn = conv(w, w, 7, groups=w, bias=False), BatchNorm(w)
                    b.mlp.fc1, b.mlp.fc2 = conv(w, f, 1), conv(f, w, 1)
                    blocks.append(b)
                self.layers = nn.ModuleList(blocks)  # ".layers.N." drops out of verify's component names

            def mlp(self, b, x):
                return b.mlp.fc2(nn.functional.gelu(b.mlp.fc1(b.mlp.bn(b.mlp.conv(x)))))

            def forward(self, x):
                if hasattr(self, "down"):
                    x = nn.functional.gelu(self.down.proj(nn.functional.gelu(self.down.conv(x))))
                if hasattr(self, "cpe"):
                    x = x + self.cpe(x)
                for b in self.layers:
                    if self.attn_stage:
                        bsz, c, hh, ww = x.shape
                        t = b.norm(x.flatten(2).transpose(1, 2))
                        q, k, v = b.attn.qkv(t).reshape(bsz, hh * ww, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
                        probs = b.attn.scores(q * q.shape[-1] ** -0.5, k.transpose(-2, -1)).softmax(-1)
                        out = b.attn.proj(b.attn.values(probs, v).transpose(1, 2).reshape(bsz, hh * ww, c))
                        x = x + b.scale[0] * out.transpose(1, 2).reshape(bsz, c, hh, ww)
                    else:
                        x = b.mixer(x)
                    x = x + b.scale[-1] * self.mlp(b, x)
                return x

        w0, out = self.widths[0], self.width
        stem = nn.Module()
        stem.conv1, stem.conv2, stem.conv3 = conv(3, w0, 3, 2), conv(w0, w0, 3, 2, w0), conv(w0, w0, 1)
        final = nn.Module()
        final.conv = conv(self.widths[-1], out, 3, groups=self.widths[-1])
        final.se = nn.Module()
        final.se.fc1, final.se.fc2 = conv(out, out // self.se_ratio, 1), conv(out // self.se_ratio, out, 1)
        return {"stem": stem, **{f"stage{i}": Stage(i) for i in range(len(self.widths))}, "final": final}

    def run(self, modules, pixels):
        """(images, 3, size, size) through the tower: (images, positions, channels), as the projector reads them."""
        from torch import nn

        gelu = nn.functional.gelu
        stem, final = modules.stem, modules.final
        x = gelu(stem.conv3(gelu(stem.conv2(gelu(stem.conv1(pixels))))))
        for i in range(len(self.widths)):
            x = getattr(modules, f"stage{i}")(x)
        x = final.conv(x)
        gate = final.se.fc2(nn.functional.relu(final.se.fc1(x.mean((2, 3), keepdim=True)))).sigmoid()
        return gelu(x * gate).flatten(2).transpose(1, 2)
