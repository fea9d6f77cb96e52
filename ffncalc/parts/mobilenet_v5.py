"""A MobileNetV5 vision tower from the pixels up (Gemma 3n's: Google DeepMind 2025; its blocks MobileNetV4's, Qin et al.
2024, "MobileNetV4: Universal Models for the Mobile Ecosystem", §3–4), as timm 1.0 builds mobilenetv5_300m_enc
(timm/models/mobilenetv5.py: MobileNetV5Encoder, its blocks in timm/models/_efficientnet_blocks.py and
timm/layers/attention2d.py) and transformers 5.23 wraps it (TimmWrapperModel, Gemma 3n's vision tower, whose
forward_features output get_image_features reads). Not a part of its own: a tower (parts/vision.py) holds one in place
of its patch embedding and layers. Every convolution has no bias but the stem's, every norm is an RMSNorm over the
channels with a weight (RmsNorm2d), every activation a GELU; each convolution's output position is a matmul of its
kernel's inputs (k × k, or one channel's k × k where depthwise), padded ((stride − 1) + (k − 1)) // 2 a side:

- the stem: Conv2d(3 → ``stem``, 3 × 3, stride 2) with a bias, a norm;
- ``blocks`` in timm's notation, a stage beginning at each block of stride 2: ``er`` (EdgeResidual: conv_exp, a k × k
  convolution to e × its input's channels of the block's stride, a norm; conv_pwl 1 × 1 to c, a norm), ``uir``
  (UniversalInvertedResidual: dw_start, a depthwise a × a convolution and a norm where a > 0; pw_exp 1 × 1 to e × its
  input's channels, a norm; dw_mid, a depthwise k × k convolution of the block's stride and a norm where k > 0; pw_proj
  1 × 1 to c, a norm; a layer scale), ``mqa`` (MobileAttention with MultiQueryAttention2d: a norm; query.proj 1 × 1 to
  h heads of d; key and value each a depthwise k × k convolution of stride v and a norm where v > 1, then proj 1 × 1
  to one head of d; every position's query meets every key and value position; output.proj 1 × 1 back; a layer
  scale); a block whose input and output channels match at stride 1 adds its input back;
- the fusion adapter (MobileNetV5MultiScaleFusionAdapter) over the last two stages' outputs, the later resized to the
  earlier's positions (nearest: no multiply-adds) and set beside it: a UIR of pw_exp (× ``fusion_ratio``) and pw_proj to
  ``width`` without its input added or a layer scale, an average pool (or, where the side is not a whole multiple, a
  bilinear resize) to ``side`` × ``side``, a norm: ``side``² soft tokens of ``width``."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from ._stem import PixelStem

RMSNORM = Norm(kind="rmsnorm")
GELU = ACTIVATION_OPS["gelu"]
# mobilenetv5_300m_enc's blocks (timm's _gen_mobilenet_v5), each repeated once
MOBILENET_V5_300M = (
    ("er_k3_s2_e4_c128",) + ("er_k3_s1_e4_c128",) * 2
    + ("uir_a3_k5_s2_e6_c256", "uir_a5_k0_s1_e4_c256", "uir_a3_k0_s1_e4_c256", "uir_a5_k0_s1_e4_c256", "uir_a3_k0_s1_e4_c256")
    + ("uir_a5_k5_s2_e6_c640",) + ("uir_a5_k0_s1_e4_c640",) * 7 + ("uir_a0_k0_s1_e1_c640",)
    + ("mqa_k3_h12_v2_s1_d64_c640", "uir_a0_k0_s1_e2_c640") * 14
    + ("uir_a5_k5_s2_e6_c1280",) + ("mqa_k3_h16_s1_d96_c1280", "uir_a0_k0_s1_e2_c1280") * 19
)  # fmt: skip
OPTIONS = {"er": "kse", "uir": "akse", "mqa": "khvsd"}  # each kind's options beside c (v: 1 where unstated)


def parse(code: str) -> tuple[str, dict[str, int]]:
    """A block in timm's notation ("uir_a3_k5_s2_e6_c256") -> its kind and options; ValueError where it is not one."""
    kind, *rest = code.split("_")
    options = {part[0]: int(part[1:]) for part in rest if part[:1].isalpha() and part[1:].isdigit()}
    if kind not in OPTIONS or len(options) != len(rest) or set(options) - set(OPTIONS[kind] + "c"):
        raise ValueError(code)
    if kind == "mqa":
        options.setdefault("v", 1)
    if set(options) != set(OPTIONS[kind] + "c") or (kind == "mqa" and options["s"] != 1) or options["s"] not in (1, 2):
        raise ValueError(code)
    return kind, options


def out_side(side: int, k: int, s: int) -> int:
    """Positions a side after a k × k convolution of stride s padded ((s − 1) + (k − 1)) // 2 a side (timm's '')."""
    return (side + 2 * (((s - 1) + (k - 1)) // 2) - k) // s + 1


@dataclass(frozen=True)
class MobileNetV5(PixelStem):
    blocks: tuple[str, ...] = MOBILENET_V5_300M
    stem: Positive = 64  # stem_size
    width: Positive = 2048  # the fusion adapter's channels (num_features)
    fusion_ratio: Positive = 2  # the fusion adapter's expansion_ratio
    side: Positive = 16  # msfa_output_resolution: soft tokens a side

    def check(self) -> None:
        for i, code in enumerate(self.blocks):
            try:
                kind, o = parse(code)
            except ValueError:
                raise SpecError(
                    ("vision", "mobilenet", "blocks", i), f"{code!r}: not an er, uir or mqa block in timm's notation"
                ) from None
            if kind == "mqa" and (o["h"] * o["d"]) % 8:
                raise SpecError(("vision", "mobilenet", "blocks", i), f"{code!r}: {o['h']} heads of {o['d']}")
        if len(self.stages()) < 2 or parse(self.blocks[0])[1]["s"] != 2:
            raise SpecError(("vision", "mobilenet", "blocks"), "at least two stages, each beginning with a block of stride 2")

    def stages(self) -> list[list[tuple[str, dict[str, int]]]]:
        """Its blocks by stage, each stage beginning at a block of stride 2."""
        out: list[list[tuple[str, dict[str, int]]]] = []
        for code in self.blocks:
            kind, o = parse(code)
            if o["s"] == 2 or not out:
                out.append([])
            out[-1].append((kind, o))
        return out

    @property
    def stride(self) -> int:
        """Pixels a side of a position of the last stage: the stem's and each stage's halving."""
        return 2 ** (len(self.stages()) + 1)

    @property
    def tokens(self) -> int:
        return self.side**2

    @property
    def features(self) -> int:
        return self.width

    def own_tokens(self, image_size: int) -> int | None:  # its fusion adapter's, whatever the size
        return self.tokens

    def terms(self, image_size: int) -> list[tuple[str, object]]:
        """Its tensors and their work over one image of ``image_size`` pixels a side ("image": each term's macs and
        elementwise are the image's), each name's instances of one shape together."""
        acc: dict[tuple[str, str, tuple[int, ...]], list[int]] = {}

        def add(name: str, role: str, shape: tuple[int, ...], macs: int = 0, elementwise: int = 0) -> None:
            entry = acc.setdefault((name, role, shape), [0, 0, 0])
            entry[0], entry[1], entry[2] = entry[0] + 1, entry[1] + macs, entry[2] + elementwise

        def conv(name: str, out: int, inputs: int, k: int, positions: int) -> None:
            add(f"{name}.weight", "weight", (out, inputs, k, k), macs=positions * out * inputs * k * k)

        def norm(name: str, c: int, positions: int, act: bool = False) -> None:
            add(name, "norm", (c,), elementwise=RMSNORM.ops(c) * positions + GELU * c * positions * act)

        side = out_side(image_size, 3, 2)
        conv("vision.stem.conv", self.stem, 3, 3, side * side)
        add("vision.stem.conv.bias", "bias", (self.stem,), elementwise=side * side * self.stem)
        norm("vision.stem.norm", self.stem, side * side, act=True)
        c, ends = self.stem, []
        for i, stage in enumerate(self.stages()):
            for kind, o in stage:
                name, out, s = f"vision.stage{i}.{kind}", o["c"], o["s"]
                p_in = side * side
                if kind == "er":
                    mid, side = c * o["e"], out_side(side, o["k"], s)
                    p = side * side
                    conv(f"{name}.conv_exp", mid, c, o["k"], p)
                    norm(f"{name}.bn1", mid, p, act=True)
                    conv(f"{name}.conv_pwl", out, mid, 1, p)
                    norm(f"{name}.bn2", out, p)
                elif kind == "uir":
                    mid = c * o["e"]
                    if o["a"]:  # of the block's stride only where it has no dw_mid
                        side = out_side(side, o["a"], 1 if o["k"] else s)
                        conv(f"{name}.dw_start", c, 1, o["a"], side * side)
                        norm(f"{name}.dw_start_norm", c, side * side)
                    conv(f"{name}.pw_exp", mid, c, 1, side * side)
                    norm(f"{name}.pw_exp_norm", mid, side * side, act=True)
                    if o["k"]:
                        side = out_side(side, o["k"], s)
                        conv(f"{name}.dw_mid", mid, 1, o["k"], side * side)
                        norm(f"{name}.dw_mid_norm", mid, side * side, act=True)
                    p = side * side
                    conv(f"{name}.pw_proj", out, mid, 1, p)
                    norm(f"{name}.pw_proj_norm", out, p)
                    add(f"vision.stage{i}.layer_scale", "bias", (out,), elementwise=p * out)
                else:  # mqa: its queries at every position, its keys and values at every v-th a side
                    h, d, v, p = o["h"], o["d"], o["v"], side * side
                    kv = out_side(side, o["k"], v) ** 2 if v > 1 else p
                    norm(f"{name}.norm", c, p)
                    conv(f"{name}.query", h * d, c, 1, p)
                    for part in ("key", "value"):
                        if v > 1:
                            conv(f"{name}.{part}_down", c, 1, o["k"], kv)
                            norm(f"{name}.{part}_norm", c, kv)
                        conv(f"{name}.{part}", d, c, 1, kv)
                    for part in ("scores", "values"):  # every query meets every key of its image
                        add(f"{name}.{part}", "core", (h, p * kv, d))
                    add(f"{name}.softmax", "op", (), elementwise=h * p * kv * SOFTMAX_OPS)
                    conv(f"{name}.output", out, h * d, 1, p)
                    add(f"vision.stage{i}.layer_scale", "bias", (out,), elementwise=p * out)
                if c == out and s == 1 and p_in == side * side:  # its input added back
                    add(f"{name}.residual", "op", (), elementwise=side * side * out)
                c = out
            ends.append((c, side))
        (c1, side1), (c2, _) = ends[-2], ends[-1]
        p, inputs = side1 * side1, c1 + c2
        mid = inputs * self.fusion_ratio
        conv("vision.msfa.pw_exp", mid, inputs, 1, p)
        norm("vision.msfa.pw_exp_norm", mid, p, act=True)
        conv("vision.msfa.pw_proj", self.width, mid, 1, p)
        norm("vision.msfa.pw_proj_norm", self.width, p)
        add("vision.msfa.pool", "op", (), elementwise=p * self.width)
        norm("vision.msfa.norm", self.width, self.tokens)
        e = Emitter("layers")
        for (name, role, shape), (n, macs, elementwise) in acc.items():
            if role == "core":
                e.term(name, "core", shape, n, numel=0, macs=0, select="pairs")
            elif role == "norm":
                e.term(name, "norm", shape, n, numel=shape[0], elementwise=elementwise)
            elif role == "op":
                e.op(name, elementwise, n)
            else:
                e.term(name, role, shape, n, macs=macs, elementwise=elementwise)
        return [("image", t) for t in e.out]

    def modules(self) -> dict:
        """Its reference modules (imports torch when called), named as its terms: ``run`` takes an image's pixels
        through them."""
        import torch
        from torch import nn

        from ..blocks._torch import Conv2d, MatMul

        def conv(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, bias: bool = False) -> nn.Conv2d:
            return Conv2d(cin, cout, k, stride=stride, padding=((stride - 1) + (k - 1)) // 2, groups=groups, bias=bias)

        class Norm2d(nn.Module):
            is_norm = True  # verify: its weight is one component

            def __init__(self, c: int):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(c))

            def forward(self, x):
                return x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + 1e-6) * self.weight[:, None, None]

        gelu = nn.functional.gelu

        class Block(nn.Module):
            def __init__(self, kind: str, o: dict[str, int], c: int):
                super().__init__()
                self.kind, self.o, out = kind, o, o["c"]
                b = nn.Module()
                if kind == "er":
                    b.conv_exp, b.bn1 = conv(c, c * o["e"], o["k"], o["s"]), Norm2d(c * o["e"])
                    b.conv_pwl, b.bn2 = conv(c * o["e"], out, 1), Norm2d(out)
                elif kind == "uir":
                    mid = c * o["e"]
                    if o["a"]:
                        b.dw_start, b.dw_start_norm = conv(c, c, o["a"], 1 if o["k"] else o["s"], c), Norm2d(c)
                    b.pw_exp, b.pw_exp_norm = conv(c, mid, 1), Norm2d(mid)
                    if o["k"]:
                        b.dw_mid, b.dw_mid_norm = conv(mid, mid, o["k"], o["s"], mid), Norm2d(mid)
                    b.pw_proj, b.pw_proj_norm = conv(mid, out, 1), Norm2d(out)
                else:
                    h, d, v = o["h"], o["d"], o["v"]
                    b.norm, b.query = Norm2d(c), conv(c, h * d, 1)
                    for part in ("key", "value"):
                        if v > 1:
                            setattr(b, f"{part}_down", conv(c, c, o["k"], v, c))
                            setattr(b, f"{part}_norm", Norm2d(c))
                        setattr(b, part, conv(c, d, 1))
                    b.scores, b.values, b.output = MatMul(), MatMul(), conv(h * d, out, 1)
                if kind != "er":  # the stage's component, whatever the block's kind
                    self.layer_scale = nn.Parameter(torch.ones(out, 1, 1))
                self.add_module(kind, b)
                self.skip = c == out and o["s"] == 1

            def forward(self, x):
                b, o = getattr(self, self.kind), self.o
                if self.kind == "er":
                    y = b.bn2(b.conv_pwl(gelu(b.bn1(b.conv_exp(x)))))
                    return x + y if self.skip else y
                if self.kind == "uir":
                    y = b.dw_start_norm(b.dw_start(x)) if o["a"] else x
                    y = gelu(b.pw_exp_norm(b.pw_exp(y)))
                    y = gelu(b.dw_mid_norm(b.dw_mid(y))) if o["k"] else y
                    y = b.pw_proj_norm(b.pw_proj(y)) * self.layer_scale
                    return x + y if self.skip else y
                n, (h, d) = b.norm(x), (o["h"], o["d"])
                bsz, _, hh, ww = x.shape
                q = b.query(n).reshape(bsz, h, d, hh * ww).transpose(-1, -2)

                def kv(part, unit=b):  # the unit's key or value path, by its modules' names
                    z = getattr(unit, f"{part}_norm")(getattr(unit, f"{part}_down")(n)) if o["v"] > 1 else n
                    return getattr(unit, part)(z).flatten(2).transpose(1, 2)[:, None]  # (batch, 1, positions, d)

                probs = b.scores(q * d**-0.5, kv("key").transpose(-1, -2)).softmax(-1)
                out = b.values(probs, kv("value")).transpose(1, 2).reshape(bsz, hh, ww, h * d).permute(0, 3, 1, 2)
                return x + b.output(out) * self.layer_scale

        class Stage(nn.Module):
            def __init__(self, blocks, c: int):
                super().__init__()
                layers = []
                for kind, o in blocks:
                    layers.append(Block(kind, o, c))
                    c = o["c"]
                self.layers = nn.ModuleList(layers)  # ".layers.N." drops out of verify's component names

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x

        stem = nn.Module()
        stem.conv, stem.norm = conv(3, self.stem, 3, 2, bias=True), Norm2d(self.stem)
        out, c = {"stem": stem}, self.stem
        for i, blocks in enumerate(self.stages()):
            out[f"stage{i}"] = Stage(blocks, c)
            c = blocks[-1][1]["c"]
        stages = self.stages()
        inputs = stages[-2][-1][1]["c"] + c
        msfa = nn.Module()
        msfa.pw_exp, msfa.pw_exp_norm = conv(inputs, inputs * self.fusion_ratio, 1), Norm2d(inputs * self.fusion_ratio)
        msfa.pw_proj, msfa.pw_proj_norm = conv(inputs * self.fusion_ratio, self.width, 1), Norm2d(self.width)
        msfa.norm = Norm2d(self.width)
        return {**out, "msfa": msfa}

    def run(self, modules, pixels):
        """(images, 3, size, size) through the tower: (images, side², width), as get_image_features reads them."""
        from torch import cat, nn

        x = nn.functional.gelu(modules.stem.norm(modules.stem.conv(pixels)))
        ends = []
        for i in range(len(self.stages())):
            x = getattr(modules, f"stage{i}")(x)
            ends.append(x)
        high, low = ends[-2], ends[-1]
        m = modules.msfa
        x = cat([high, nn.functional.interpolate(low, size=high.shape[-2:], mode="nearest")], 1)
        x = m.pw_proj_norm(m.pw_proj(nn.functional.gelu(m.pw_exp_norm(m.pw_exp(x)))))
        if high.shape[-1] % self.side:
            x = nn.functional.interpolate(x, size=(self.side, self.side), mode="bilinear")
        else:
            x = nn.functional.avg_pool2d(x, high.shape[-1] // self.side)
        return m.norm(x).flatten(2).transpose(1, 2)
