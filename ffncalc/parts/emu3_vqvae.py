"""Emu3's VQ-VAE image tokenizer as a tower (Emu3VQVAE, transformers 5.23's modeling_emu3.py; Wang et al. 2024, "Emu3:
Next-Token Prediction is All You Need"): parts/vision.py holds one in place of its patch embedding and layers, patch_size
its stride 2^(levels − 1). Emu3VQVAE.encode repeats an image temporal_downsample_factor (F) times as a clip's frames:

- the 2-D encoder over every frame: conv_in (3 × 3), levels of num_res_blocks ResNet blocks (GroupNorm, SiLU, 3 × 3
  convolutions, a 1 × 1 nin_shortcut where the channels change), after each at the levels named in attn_resolutions an
  attention block (attn_norms, a GroupNorm; q_proj, k_proj, v_proj and out_proj Linear(hidden_size) with biases over the
  level's H·W positions, num_attention_heads heads), a stride-2 3 × 3 downsampling after every level but the last; the
  middle's ResNet block, attention block (attn_norm) and ResNet block; norm_out, SiLU and conv_out (3 × 3, to
  latent_channels);
- the temporal layers over the frames: log2 F Emu3VQVAETemporalDownsample (a 4 × 3 × 3 Conv3d of stride 2 in time,
  padded by two frames before, then SiLU): F frames become one; num_res_blocks Emu3VQVAETemporalResnetBlock (BatchNorm3d,
  SiLU, 3 × 3 × 3 Conv3d, twice);
- quant_conv, a 3 × 1 × 1 Conv3d to embed_dim; the quantizer's distances, one (positions × embed_dim) @ (embed_dim ×
  codebook_size) matmul (Emu3VQVAEVectorQuantizer; its squared norms and argmin elementwise).

Each convolution's output position is a matmul of its kernel's inputs. post_quant_conv and the decoder
(Emu3VQVAEDecoder: temporal ResNet blocks and upsampling, conv_in, a middle and up levels of ResNet blocks whose norms
are SpatialNorms, norm_out and conv_out) are built and run by no image the model reads: their parameters, no work.
Its codes, and a row-end token after each row of them (Emu3Processor: height · (width + 1)), are the language model's
tokens, embedded by its own table (no projector)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from ._stem import CodeStem

GROUPNORM = Norm(kind="layernorm")  # GroupNorm and BatchNorm3d: a weight and a bias a channel
SILU = ACTIVATION_OPS["silu"]
PRE = "vision.vqvae."
_INDEX = re.compile(r"\.\d+(?=\.|$)")  # a module list's index in a path


@dataclass(frozen=True)
class Emu3VqVae(CodeStem):
    channels: Positive = 3  # in_channels
    base: Positive = 256  # base_channels
    multipliers: tuple[Positive, ...] = (1, 2, 2, 4)  # channel_multiplier
    res_blocks: Positive = 2  # num_res_blocks
    attn_levels: tuple[NonNegative, ...] = (3,)  # attn_resolutions: the levels (by index) with attention blocks
    width: Positive = 1024  # hidden_size: its attention blocks' Linear width, the channels they read
    heads: Positive = 1  # num_attention_heads
    latent: Positive = 4  # latent_channels
    embed_dim: Positive = 4
    codebook: Positive = 32768  # codebook_size
    frames: Positive = 4  # temporal_downsample_factor: the frames an image is repeated to, halved log2 of it times
    out_channels: Positive = 3  # the decoder's

    def check(self) -> None:
        where = ("vision", "emu3_vqvae")
        if self.frames & (self.frames - 1):
            raise SpecError((*where, "frames"), f"{self.frames}: its temporal downsamplings halve a power of two")
        if any(level >= len(self.multipliers) for level in self.attn_levels):
            raise SpecError((*where, "attn_levels"), f"a level past its {len(self.multipliers)} levels")
        read = {self.base * self.multipliers[i] for i in (*self.attn_levels, len(self.multipliers) - 1)}
        if read != {self.width}:  # each attention block's Linear(hidden_size) reads a position's channels
            raise SpecError((*where, "width"), f"{self.width}: its attention blocks read {sorted(read)} channels")
        if self.width % self.heads:
            raise SpecError((*where, "heads"), f"{self.heads} heads do not divide the width {self.width}")
        if any(self.base * m % 32 for m in (1, *self.multipliers)):  # nn.GroupNorm(num_groups=32, ...)
            raise SpecError((*where, "base"), "every level's channels a multiple of its GroupNorms' 32 groups")

    @property
    def stride(self) -> int:
        return 2 ** (len(self.multipliers) - 1)

    def terms(self, image_size: int) -> list[tuple[str, object]]:
        """Its tensors and one image's work of ``image_size`` pixels a side ("image": each term's macs and
        elementwise are the image's); the decoder's and post_quant_conv's parameters."""
        e, f, z = Emitter("layers"), self.frames, self.latent

        def conv(name: str, cin: int, cout: int, kernel: tuple[int, ...], positions: int) -> None:
            k = 1
            for n in kernel:
                k *= n
            e.term(f"{PRE}{name}.weight", "weight", (cout, cin, *kernel), macs=positions * cout * cin * k)
            e.term(f"{PRE}{name}.bias", "bias", (cout,), elementwise=positions * cout)

        def resnet(name: str, cin: int, cout: int, p: int) -> None:  # Emu3VQVAEResnetBlock over every frame
            e.norm(f"{PRE}{name}.norm1", GROUPNORM, cin, 1, total=p * cin)
            e.op(f"{PRE}{name}.act", SILU * p * (cin + cout), 1)
            conv(f"{name}.conv1", cin, cout, (3, 3), p)
            e.norm(f"{PRE}{name}.norm2", GROUPNORM, cout, 1, total=p * cout)
            conv(f"{name}.conv2", cout, cout, (3, 3), p)
            if cin != cout:
                conv(f"{name}.nin_shortcut", cin, cout, (1, 1), p)
            e.op(f"{PRE}{name}.residual", p * cout, 1)

        def linear(name: str, hw: int) -> None:  # Linear(hidden_size, hidden_size) with a bias at every position
            w = self.width
            e.term(f"{PRE}{name}.weight", "weight", (w, w), macs=f * hw * w * w)
            e.term(f"{PRE}{name}.bias", "bias", (w,), elementwise=f * hw * w)

        def attn(name: str, norm: str, hw: int) -> None:  # Emu3VQVAEAttentionBlock over each frame's hw positions
            w, h = self.width, self.heads
            e.norm(f"{PRE}{norm}", GROUPNORM, w, 1, total=f * hw * w)
            for part in ("q_proj", "k_proj", "v_proj"):
                linear(f"{name}.{part}", hw)
            for part in ("scores", "values"):  # every position meets every position of its frame
                e.term(f"{PRE}{name}.{part}", "core", (h, f * hw * hw, w // h), numel=0, macs=0, select="pairs")
            e.op(f"{PRE}{name}.softmax", f * h * hw * hw * SOFTMAX_OPS, 1, scores=f * h * hw * hw)
            linear(f"{name}.out_proj", hw)
            e.op(f"{PRE}{name}.residual", f * hw * w, 1)

        side = image_size
        conv("encoder.conv_in", self.channels, self.base, (3, 3), f * side * side)
        cin = self.base
        for i, m in enumerate(self.multipliers):
            cout = self.base * m
            for _ in range(self.res_blocks):
                resnet("encoder.down_block.down.block", cin, cout, f * side * side)
                cin = cout
                if i in self.attn_levels:
                    attn("encoder.down_block.down.attn", "encoder.down_block.down.attn_norms", side * side)
            if i != len(self.multipliers) - 1:  # F.pad (0, 1, 0, 1), then 3 × 3 of stride 2
                side //= 2
                conv("encoder.down_block.down.downsample.conv", cin, cin, (3, 3), f * side * side)
        hw = side * side
        resnet("encoder.middle_block.block_1", cin, cin, f * hw)
        attn("encoder.middle_block.attn_1", "encoder.middle_block.attn_norm", hw)
        resnet("encoder.middle_block.block_2", cin, cin, f * hw)
        e.norm(f"{PRE}encoder.norm_out", GROUPNORM, cin, 1, total=f * hw * cin)
        e.op(f"{PRE}encoder.act", SILU * f * hw * cin, 1)
        conv("encoder.conv_out", cin, z, (3, 3), f * hw)
        t = f
        while t > 1:  # Emu3VQVAETemporalDownsample: two frames of padding before, 4 in time of stride 2: t / 2 frames
            t //= 2
            conv("encoder.time_conv.conv.conv", z, z, (4, 3, 3), t * hw)
            e.op(f"{PRE}encoder.time_conv.act", SILU * t * hw * z, 1)
        for _ in range(self.res_blocks):  # Emu3VQVAETemporalResnetBlock (z → z) over the last frame
            name = "encoder.time_res_stack"
            e.norm(f"{PRE}{name}.norm1", GROUPNORM, z, 1, total=t * hw * z)
            conv(f"{name}.conv1.conv", z, z, (3, 3, 3), t * hw)
            e.norm(f"{PRE}{name}.norm2", GROUPNORM, z, 1, total=t * hw * z)
            conv(f"{name}.conv2.conv", z, z, (3, 3, 3), t * hw)
            e.op(f"{PRE}{name}.act", SILU * 2 * t * hw * z, 1)
            e.op(f"{PRE}{name}.residual", t * hw * z, 1)
        conv("quant_conv.conv", z, self.embed_dim, (3, 1, 1), t * hw)
        dist = t * hw * self.embed_dim * self.codebook  # the distances' matmul against the codebook
        e.term(f"{PRE}quantize.embedding.weight", "weight", (self.codebook, self.embed_dim), macs=dist)
        e.op(f"{PRE}quantize.argmin", 2 * t * hw * self.codebook + t * hw * self.embed_dim, 1)
        for path, shape in self.idle():  # built, never run by an image
            e.term(PRE + _INDEX.sub("", path), "bias" if len(shape) == 1 else "weight", shape)
        return [("image", t) for t in e.out]

    def idle(self) -> list[tuple[str, tuple[int, ...]]]:
        """post_quant_conv's and the decoder's parameters, by their module paths in Emu3VQVAE (indices kept)."""
        z, q, w = self.latent, self.embed_dim, self.width
        out: list[tuple[str, tuple[int, ...]]] = []

        def conv(name: str, cin: int, cout: int, kernel: tuple[int, ...]) -> None:
            out.extend([(f"{name}.weight", (cout, cin, *kernel)), (f"{name}.bias", (cout,))])

        def affine(name: str, c: int) -> None:
            out.extend([(f"{name}.weight", (c,)), (f"{name}.bias", (c,))])

        def spatial(name: str, c: int) -> None:  # Emu3VQVAESpatialNorm: a GroupNorm, conv_y and conv_b from the codes
            affine(f"{name}.norm_layer", c)
            conv(f"{name}.conv_y", q, c, (1, 1))
            conv(f"{name}.conv_b", q, c, (1, 1))

        def resnet(name: str, cin: int, cout: int) -> None:
            spatial(f"{name}.norm1", cin)
            conv(f"{name}.conv1", cin, cout, (3, 3))
            spatial(f"{name}.norm2", cout)
            conv(f"{name}.conv2", cout, cout, (3, 3))
            if cin != cout:
                conv(f"{name}.nin_shortcut", cin, cout, (1, 1))

        def attn(name: str) -> None:
            for part in ("q_proj", "k_proj", "v_proj", "out_proj"):
                out.extend([(f"{name}.{part}.weight", (w, w)), (f"{name}.{part}.bias", (w,))])

        conv("post_quant_conv.conv", q, z, (3, 1, 1))
        for k in range(self.res_blocks):
            affine(f"decoder.time_res_stack.{k}.norm1", z)
            conv(f"decoder.time_res_stack.{k}.conv1.conv", z, z, (3, 3, 3))
            affine(f"decoder.time_res_stack.{k}.norm2", z)
            conv(f"decoder.time_res_stack.{k}.conv2.conv", z, z, (3, 3, 3))
        for k in range(self.frames.bit_length() - 1):
            conv(f"decoder.time_conv.{k}.conv.conv", z, z, (3, 3, 3))
        top = self.base * self.multipliers[-1]
        conv("decoder.conv_in", z, top, (3, 3))
        resnet("decoder.middle_block.block_1", top, top)
        attn("decoder.middle_block.attn_1")
        spatial("decoder.middle_block.attn_norm", top)
        resnet("decoder.middle_block.block_2", top, top)
        cin = top
        for i in reversed(range(len(self.multipliers))):
            cout = self.base * self.multipliers[i]
            for j in range(self.res_blocks + 1):
                resnet(f"decoder.up_block.up.{i}.block.{j}", cin, cout)
                cin = cout
                if i in self.attn_levels:
                    attn(f"decoder.up_block.up.{i}.attn.{j}")
                    spatial(f"decoder.up_block.up.{i}.attn_norms.{j}", cin)
            if i:
                conv(f"decoder.up_block.up.{i}.upsample.conv", cin, cin, (3, 3))
        spatial("decoder.norm_out", self.base * self.multipliers[0])
        conv("decoder.conv_out", self.base * self.multipliers[0], self.out_channels, (3, 3))
        return out

    def modules(self):
        """Its reference module (imports torch when called), named as its terms: ``run`` takes pixels through it."""
        import torch
        from torch import nn

        from ..blocks._torch import Linear, MatMul

        class Conv(nn.Module):  # a Conv2d or Conv3d, its padding applied by run
            weight_flops = True  # verify: its FLOPs are its weight's

            def __init__(self, cin: int, cout: int, kernel: tuple[int, ...], stride: tuple[int, ...] | None = None):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(cout, cin, *kernel))
                self.bias = nn.Parameter(torch.empty(cout))
                self.stride = stride or (1,) * len(kernel)

            def forward(self, x):
                op = nn.functional.conv3d if self.weight.ndim == 5 else nn.functional.conv2d
                return op(x, self.weight, self.bias, stride=self.stride)

        class Norm(nn.Module):  # a GroupNorm of 32 groups (BatchNorm3d's statistics the same work: none counted)
            is_norm = True  # verify: its weight and bias are one component

            def __init__(self, c: int):
                super().__init__()
                self.weight, self.bias = nn.Parameter(torch.ones(c)), nn.Parameter(torch.zeros(c))

            def forward(self, x):
                return nn.functional.group_norm(x, 32 if x.shape[1] % 32 == 0 else 1, self.weight, self.bias)

        class Resnet(nn.Module):
            def __init__(self, cin: int, cout: int, kernel: tuple[int, ...] = (3, 3), wrap: bool = False):
                super().__init__()
                self.norm1, self.norm2 = Norm(cin), Norm(cout)
                convs = [Conv(cin, cout, kernel), Conv(cout, cout, kernel)]
                if wrap:  # Emu3VQVAEConv3d holds its Conv3d as .conv
                    convs = [_holder(c) for c in convs]
                self.conv1, self.conv2 = convs
                if cin != cout:
                    self.nin_shortcut = Conv(cin, cout, (1,) * len(kernel))

        def _holder(module):
            outer = nn.Module()
            outer.conv = module
            return outer

        class Attn(nn.Module):
            def __init__(self, w: int, heads: int):
                super().__init__()
                self.q_proj, self.k_proj, self.v_proj, self.out_proj = (Linear(w, w, bias=True) for _ in range(4))
                self.scores, self.values, self.heads = MatMul(), MatMul(), heads

        class Codebook(nn.Module):
            weight_flops = True  # verify: the distances' matmul is its weight's FLOPs

            def __init__(self, n: int, d: int):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(n, d))

            def forward(self, z):
                dist = (z**2).sum(1, keepdim=True) + (self.weight**2).sum(1) - 2 * (z @ self.weight.t())
                return dist.argmin(1)

        z, vq, enc = self.latent, nn.Module(), nn.Module()
        enc.conv_in = Conv(self.channels, self.base, (3, 3))
        enc.down_block = nn.Module()
        enc.down_block.down, cin = nn.ModuleList(), self.base
        for i, m in enumerate(self.multipliers):
            level, cout = nn.Module(), self.base * m
            level.block, level.attn, level.attn_norms = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
            for _ in range(self.res_blocks):
                level.block.append(Resnet(cin, cout))
                cin = cout
                if i in self.attn_levels:
                    level.attn.append(Attn(self.width, self.heads))
                    level.attn_norms.append(Norm(cin))
            if i != len(self.multipliers) - 1:
                level.downsample = _holder(Conv(cin, cin, (3, 3), (2, 2)))
            enc.down_block.down.append(level)
        mid = enc.middle_block = nn.Module()
        mid.block_1, mid.attn_1, mid.attn_norm, mid.block_2 = (
            Resnet(cin, cin),
            Attn(self.width, self.heads),
            Norm(cin),
            Resnet(cin, cin),
        )
        enc.norm_out, enc.conv_out = Norm(cin), Conv(cin, z, (3, 3))
        downs = self.frames.bit_length() - 1
        enc.time_conv = nn.ModuleList(_holder(_holder(Conv(z, z, (4, 3, 3), (2, 1, 1)))) for _ in range(downs))
        enc.time_res_stack = nn.ModuleList(Resnet(z, z, (3, 3, 3), wrap=True) for _ in range(self.res_blocks))
        vq.encoder, vq.quant_conv = enc, _holder(Conv(z, self.embed_dim, (3, 1, 1)))
        vq.quantize = nn.Module()
        vq.quantize.embedding = Codebook(self.codebook, self.embed_dim)
        for path, shape in self.idle():  # post_quant_conv and the decoder: parameters at their paths, never run
            *parents, leaf = path.split(".")
            owner = vq
            for name in parents:
                if not hasattr(owner, name):
                    owner.add_module(name, nn.Module())
                owner = getattr(owner, name)
            owner.register_parameter(leaf, nn.Parameter(torch.empty(shape)))
        return vq

    def run(self, vq, pixels):
        """(images, channels, size, size) through Emu3VQVAE.encode: each position's code."""
        from torch import nn

        pad, silu = nn.functional.pad, nn.functional.silu
        f, enc = self.frames, vq.encoder
        n = pixels.shape[0]
        x = pixels.repeat_interleave(f, 0)  # each image repeated as F frames, every frame through the 2-D encoder

        def resnet(res, x, spatial):  # 2-D: padding 1 a side; 3-D (Emu3VQVAEConv3d): two frames before, 1 a side
            p = (1, 1, 1, 1) if spatial else (1, 1, 1, 1, 2, 0)
            c1, c2 = (res.conv1, res.conv2) if spatial else (res.conv1.conv, res.conv2.conv)
            h = c1(pad(silu(res.norm1(x)), p))
            h = c2(pad(silu(res.norm2(h)), p))
            return (res.nin_shortcut(x) if hasattr(res, "nin_shortcut") else x) + h

        def attention(attn, norm, x):
            b, c, hh, ww = x.shape
            h = norm(x).flatten(2).transpose(1, 2)
            q, k, v = (p(h).view(b, hh * ww, attn.heads, -1).transpose(1, 2) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
            probs = (attn.scores(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5).softmax(-1)
            out = attn.out_proj(attn.values(probs, v).transpose(1, 2).reshape(b, hh * ww, c))
            return x + out.transpose(1, 2).reshape(b, c, hh, ww)

        x = enc.conv_in(pad(x, (1, 1, 1, 1)))
        for level in enc.down_block.down:
            for k, block in enumerate(level.block):
                x = resnet(block, x, True)
                if len(level.attn):
                    x = attention(level.attn[k], level.attn_norms[k], x)
            if hasattr(level, "downsample"):
                x = level.downsample.conv(pad(x, (0, 1, 0, 1)))
        mid = enc.middle_block
        x = resnet(mid.block_2, attention(mid.attn_1, mid.attn_norm, resnet(mid.block_1, x, True)), True)
        x = enc.conv_out(pad(silu(enc.norm_out(x)), (1, 1, 1, 1)))
        x = x.reshape(n, f, *x.shape[1:]).permute(0, 2, 1, 3, 4)  # (images, channels, frames, h, w)
        for conv in enc.time_conv:
            x = silu(conv.conv.conv(pad(x, (1, 1, 1, 1, 2, 0))))
        for block in enc.time_res_stack:
            x = resnet(block, x, False)
        x = vq.quant_conv.conv(pad(x, (0, 0, 0, 0, 2, 0)))
        return vq.quantize.embedding(x.permute(0, 2, 3, 4, 1).reshape(-1, self.embed_dim))
