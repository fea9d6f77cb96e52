"""A second encoder over a SAM tower's features, and the projector after it: DeepSeek-OCR's DeepEncoder (Wei et al.
2025, DeepSeek-OCR §3.2: SAM-base, a 16 × convolutional compressor, then CLIP-large over the compressed tokens) and
DeepSeek-OCR 2's DeepEncoder V2 (a Qwen2 decoder in CLIP's place, reading the compressed tokens and learned queries), as
transformers 5.23 builds them (UnlimitedOcrModel, modeling_unlimited_ocr.py; DeepseekOcr2Model,
modeling_deepseek_ocr2.py). Not a part of its own: a tower (parts/vision.py) holds one after its SAM encoder
(parts/sam.py), in place of the projector's own stages. Over an image whose SAM neck writes g × g positions of
``sam_out`` channels, in the order it runs:

- the SAM's proj: conv1, Conv2d(sam_out, mid, 3, stride 2, padding 1) and conv2, Conv2d(mid, width, the same), no
  biases: ⌈g / 2⌉ and q = ⌈⌈g / 2⌉ / 2⌉ positions a side, each output a matmul of 3 × 3 inputs;
- ``form`` "clip", Unlimited OCR's UnlimitedOcrVisionEncoder, CLIP's form over the q² features as its patch
  embeddings: class_embedding, a learned row before them; position_embedding, a table of grid² + 1 rows (its
  checkpoint's grid, interpolated to q × q: no multiply-adds), added; pre_layrnorm; ``depth`` pre-norm layers over the
  q² + 1 rows (layer_norm1, q_proj, k_proj, v_proj, out_proj with biases, every row meeting every other; layer_norm2,
  fc1 → activation → fc2 with biases); no norm after them. Its rows less the class token's, beside the SAM's q²
  features (width + hidden channels), through multi_modal_projector, Linear(width + hidden, the model's width) with a
  bias; image_newline (the tower's ``newline``: a learned row after each of the q rows) and view_separator, a learned
  row after the image: q × (q + 1) + 1 tokens of the language model;
- ``form`` "qwen2", DeepSeek-OCR 2's DeepseekOcr2VisionEncoder: the q² features, then Q learned queries
  (query_768_resolution's ``small`` rows where q² ≤ small, else query_1024_resolution's ``large``), through ``depth``
  Qwen2 layers (input_layernorm, an RMSNorm; q_proj, k_proj, v_proj with biases to heads and kv_heads of
  hidden / heads, rotary positions, o_proj without; post_attention_layernorm; gate_proj, up_proj, down_proj, a SwiGLU
  without biases), the image's rows meeting each other and the queries meeting the image and the queries before them
  (eager attention computes the whole square of q² + Q rows, the mask added), a final RMSNorm; the queries' Q rows
  through multi_modal_projector, Linear(hidden, the model's width) with a bias; view_separator after them: Q + 1
  tokens.

transformers builds either whatever its widths, and runs an image only where its encoder is as wide as the convolutions
write (``runs``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, RESIDUAL_ADDS, ROTARY_OPS, SOFTMAX_OPS, Activation, Emitter

LAYERNORM, RMSNORM = Norm(kind="layernorm"), Norm(kind="rmsnorm")


@dataclass(frozen=True)
class DeepEncoder:
    sam_out: Positive  # the SAM neck's output_channels
    mid: Positive  # downsample_channels[0]: the first strided convolution's
    width: Positive  # downsample_channels[1]: the second's
    hidden: Positive  # the encoder's hidden_size (transformers runs an image only where it is ``width``)
    depth: Positive  # the encoder's num_hidden_layers
    heads: Positive  # num_attention_heads
    mlp: Positive  # intermediate_size
    form: Literal["clip", "qwen2"] = "clip"
    grid: NonNegative = 0  # clip: its position table's side (image_size // patch_size): grid² + 1 rows
    kv_heads: NonNegative = 0  # qwen2: num_key_value_heads (0: heads)
    small: NonNegative = 0  # qwen2: query_768_resolution's rows, read where an image's q² positions are as few
    large: NonNegative = 0  # qwen2: query_1024_resolution's rows, read otherwise
    activation: Activation = "quick_gelu"

    @staticmethod
    def side(g: int) -> int:
        """Positions a side after both strided convolutions over g: ⌈⌈g / 2⌉ / 2⌉ (kernel 3, stride 2, padding 1)."""
        return (((g + 1) // 2) + 1) // 2

    def queries(self, g: int) -> int:
        """qwen2: the learned queries an image of g × g SAM positions reads (DeepseekOcr2VisionModel.forward)."""
        return self.small if self.side(g) ** 2 <= self.small else self.large

    def rows(self, g: int) -> int:
        """Rows the encoder's layers run over: the q² positions and the class token, or the queries."""
        q2 = self.side(g) ** 2
        return q2 + (1 if self.form == "clip" else self.queries(g))

    def tokens(self, g: int) -> int:
        """LM tokens of one image: q rows of q and a newline each (clip) or the queries (qwen2), and the separator."""
        q = self.side(g)
        return (q * (q + 1) if self.form == "clip" else self.queries(g)) + 1

    def runs(self) -> str:
        """Why transformers cannot run an image through it, or ""."""
        if self.hidden != self.width:
            return (
                f"its encoder is {self.hidden} wide where its convolutions write {self.width} channels: transformers "
                "builds it and cannot run an image"
            )
        return ""

    def terms(self, g: int, d_model: int) -> list[tuple[str, object]]:
        """Its tensors and one image's work (each term "image": once an image) over g × g SAM positions."""
        half, q = (g + 1) // 2, self.side(g)
        h, rows = self.hidden, self.rows(g)
        e, table = Emitter("layers"), Emitter("embedding")
        e.term("vision.downsample.conv1.weight", "weight", (self.mid, self.sam_out, 3, 3), macs=half**2 * 9 * self.sam_out * self.mid)
        e.term("vision.downsample.conv2.weight", "weight", (self.width, self.mid, 3, 3), macs=q * q * 9 * self.mid * self.width)
        if self.form == "clip":
            table.term("vision.encoder.class_embed", "position", (h,))
            table.term("vision.encoder.pos_embed.weight", "position", (self.grid**2 + 1, h), elementwise=rows * h)
            e.norm("vision.encoder.pre_norm", LAYERNORM, h, 1, total=rows * h)
        else:  # both tables, whichever an image reads: looked up, no work
            table.term("vision.encoder.queries_small.weight", "position", (self.small, h))
            table.term("vision.encoder.queries_large.weight", "position", (self.large, h))
        self.layer_terms(e, rows)
        out, read = Emitter("layers"), q * q if self.form == "clip" else self.queries(g)
        features = self.width + h if self.form == "clip" else h  # clip: its rows beside the SAM's
        out.term("vision.projector.linear.weight", "weight", (d_model, features), macs=read * features * d_model)
        out.term("vision.projector.linear.bias", "bias", (d_model,), elementwise=read * d_model)
        table.term("vision.projector.separator", "position", (d_model,))  # view_separator, after the image: no work
        return [("image", t) for t in table.out + e.out + out.out]

    def layer_terms(self, e: Emitter, rows: int) -> None:
        """Its layers' terms over ``rows`` rows, every row meeting every row (the mask's zeros computed too)."""
        h, n, heads = self.hidden, self.depth, self.heads
        hd, kv = h // heads, self.kv_heads or heads
        clip = self.form == "clip"
        e.norm("vision.encoder.norms", LAYERNORM if clip else RMSNORM, h, 2 * n, total=rows * h)
        for part, out in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd)):
            e.term(f"vision.encoder.attn.{part}.weight", "weight", (out, h), n, macs=n * rows * h * out)
            e.term(f"vision.encoder.attn.{part}.bias", "bias", (out,), n, elementwise=n * rows * out)
        if not clip:  # rotary positions on the queries and keys
            e.op("vision.encoder.attn.rotary", n * rows * (heads + kv) * hd * ROTARY_OPS, n)
        for part in ("scores", "values"):  # rows² pairs a head (the keys and values repeated to every query head)
            e.term(f"vision.encoder.attn.{part}", "core", (heads, rows * rows, hd), n, numel=0, macs=0, select="pairs")
        e.op("vision.encoder.attn.softmax", n * heads * rows * rows * SOFTMAX_OPS, n)
        e.term("vision.encoder.attn.o.weight", "weight", (h, heads * hd), n, macs=n * rows * heads * hd * h)
        if clip:
            e.term("vision.encoder.attn.o.bias", "bias", (h,), n, elementwise=n * rows * h)
            e.term("vision.encoder.ffn.up.weight", "weight", (self.mlp, h), n, macs=n * rows * h * self.mlp)
            e.term("vision.encoder.ffn.up.bias", "bias", (self.mlp,), n, elementwise=n * rows * self.mlp)
            e.op("vision.encoder.ffn.act", n * rows * self.mlp * ACTIVATION_OPS[self.activation], n)
            e.term("vision.encoder.ffn.down.weight", "weight", (h, self.mlp), n, macs=n * rows * self.mlp * h)
            e.term("vision.encoder.ffn.down.bias", "bias", (h,), n, elementwise=n * rows * h)
        else:  # a SwiGLU, then the final RMSNorm
            for part in ("gate", "up"):
                e.term(f"vision.encoder.ffn.{part}.weight", "weight", (self.mlp, h), n, macs=n * rows * h * self.mlp)
            e.op("vision.encoder.ffn.act", n * rows * self.mlp * (ACTIVATION_OPS[self.activation] + 1), n)
            e.term("vision.encoder.ffn.down.weight", "weight", (h, self.mlp), n, macs=n * rows * self.mlp * h)
            e.norm("vision.encoder.norm", RMSNORM, h, 1, total=rows * h)
        e.op("vision.encoder.residual", n * rows * RESIDUAL_ADDS * h, n)

    def modules(self, d_model: int) -> tuple[dict, dict]:
        """Its reference modules (imports torch when called): the tower's (downsample, encoder) and the projector's
        (linear, separator), by name."""
        import torch
        from torch import nn

        from ..blocks._torch import Linear, MatMul, make_norm

        h, mlp, clip = self.hidden, self.mlp, self.form == "clip"
        hd, kv = h // self.heads, self.kv_heads or self.heads
        qo = self.heads * hd  # the query heads' features

        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.norms = nn.ModuleList([make_norm(LAYERNORM if clip else RMSNORM, h) for _ in range(2)])
                self.attn = nn.Module()
                for part, out in (("q", qo), ("k", kv * hd), ("v", kv * hd)):
                    setattr(self.attn, part, Linear(h, out, bias=True))
                self.attn.o = Linear(qo, h, bias=clip)
                self.attn.scores, self.attn.values = MatMul(), MatMul()
                self.ffn = nn.Module()
                self.ffn.up, self.ffn.down = Linear(h, mlp, bias=clip), Linear(mlp, h, bias=clip)
                if not clip:
                    self.ffn.gate = Linear(h, mlp, bias=False)

        downsample = nn.Module()
        downsample.conv1 = nn.Conv2d(self.sam_out, self.mid, 3, stride=2, padding=1, bias=False)
        downsample.conv2 = nn.Conv2d(self.mid, self.width, 3, stride=2, padding=1, bias=False)
        downsample.conv1.weight_flops = downsample.conv2.weight_flops = True  # verify: their FLOPs are their weights'
        encoder = nn.Module()
        if clip:
            encoder.class_embed = nn.Parameter(torch.empty(h))
            encoder.pos_embed = nn.Embedding(self.grid**2 + 1, h)
            encoder.pre_norm = make_norm(LAYERNORM, h)
        else:
            encoder.queries_small, encoder.queries_large = nn.Embedding(self.small, h), nn.Embedding(self.large, h)
            encoder.norm = make_norm(RMSNORM, h)
        encoder.layers = nn.ModuleList(Layer() for _ in range(self.depth))
        projector = {"linear": Linear(self.width + h if clip else h, d_model, bias=True)}
        projector["separator"] = nn.Parameter(torch.empty(d_model))
        return {"downsample": downsample, "encoder": encoder}, projector

    def run(self, tower, feats):
        """(images, g², sam_out) SAM features through ``tower``'s downsample, encoder and projector modules: the
        image's tokens, (images, tokens, d_model)."""
        import torch

        from ..blocks._torch import ACTIVATIONS

        b, n, c = feats.shape
        g = round(n**0.5)
        x = feats.transpose(1, 2).reshape(b, c, g, g)
        x = tower.downsample.conv2(tower.downsample.conv1(x)).flatten(2).transpose(1, 2)  # (b, q², width)
        enc, h, heads, clip = tower.encoder, self.hidden, self.heads, self.form == "clip"
        if clip:
            s = torch.cat([enc.class_embed.expand(b, 1, h), x], dim=1)
            s = enc.pre_norm(s + enc.pos_embed.weight.mean(0))  # the table interpolated to the rows: no multiply-adds
        else:
            table = enc.queries_small if self.queries(g) == self.small else enc.queries_large
            s = torch.cat([x, table.weight.expand(b, -1, h)], dim=1)
        rows, hd, kv = s.shape[1], h // heads, self.kv_heads or heads
        act = ACTIVATIONS[self.activation]

        def split(t, k):
            return t.reshape(b, rows, k, hd).transpose(1, 2).repeat_interleave(heads // k, dim=1)

        for layer in enc.layers:
            y = layer.norms[0](s)
            q, k, v = split(layer.attn.q(y), heads), split(layer.attn.k(y), kv), split(layer.attn.v(y), kv)
            probs = layer.attn.scores(q, k.transpose(-2, -1)).softmax(-1)  # rotary and the mask: no multiply-adds
            s = s + layer.attn.o(layer.attn.values(probs, v).transpose(1, 2).reshape(b, rows, heads * hd))
            y = layer.norms[1](s)
            inner = act(layer.ffn.up(y)) if clip else act(layer.ffn.gate(y)) * layer.ffn.up(y)
            s = s + layer.ffn.down(inner)
        if clip:
            tokens = tower.projector.linear(torch.cat([s[:, 1:], x], dim=-1))
            q, d = round((rows - 1) ** 0.5), tokens.shape[-1]
            grid = torch.cat([tokens.reshape(b, q, q, d), tower.image_newline.expand(b, q, 1, d)], dim=2)
            tokens = grid.reshape(b, -1, d)
        else:
            tokens = tower.projector.linear(enc.norm(s)[:, x.shape[1] :])
        return torch.cat([tokens, tower.projector.separator.expand(b, 1, tokens.shape[-1])], dim=1)
