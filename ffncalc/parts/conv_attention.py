"""A vision encoder whose layers are either gated 2-D depthwise convolutions or attention over an image's patches
(LFM3-VL's Lfm3VlVisionModel, as transformers 5.23 builds it). Not a part of its own: a tower (parts/vision.py)
holds one, after its patch embedding and its norm. Every layer, pre-norm with RMSNorms (operator_norm, ffn_norm):

- a convolution layer (Lfm3VlVisionShortConv): in_proj, Linear(width, 3 · width) into an input gate, an output gate
  and the convolution's input; the input gate times it; spatial_conv, a depthwise Conv2d of kernel × kernel over the
  patch grid (padding kernel // 2, no bias): kernel² multiply-adds a patch and feature; the output gate times it;
  out_proj, Linear(width, width); no biases;
- an attention layer (Lfm3VlVisionAttention): grouped-query attention, every patch meeting every patch of its image,
  q_proj and out_proj (width) and k_proj and v_proj (kv_heads × head_dim), no biases, an RMSNorm over each query and
  key head (q_norm, k_norm), 2-D rotary positions (no multiply-adds);
- then a SwiGLU MLP: w1 and w3 to ``ffn``, w2 back, no biases."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, RESIDUAL_ADDS, SOFTMAX_OPS, Emitter

RMSNORM = Norm(kind="rmsnorm")


@dataclass(frozen=True)
class ConvAttention:
    width: Positive  # hidden_size
    depth: Positive  # num_hidden_layers
    attention: NonNegative  # of them, the attention layers (layer_types' "full_attention"); the rest convolutions
    heads: Positive  # num_attention_heads
    kv_heads: Positive  # num_key_value_heads
    ffn: Positive  # intermediate_size
    kernel: Positive = 3  # conv_kernel_size

    @property
    def convs(self) -> int:
        return self.depth - self.attention

    def terms(self, patches: int) -> list[tuple[str, object]]:
        """Its tensors and their work over an image of ``patches`` patches, each with what it runs over: "patch" (a
        patch), or "tower" for the attention products (a query meeting every patch)."""
        d, h, hd = self.width, self.heads, self.width // self.heads
        kv, a, c = self.kv_heads * hd, self.attention, self.convs
        e, core = Emitter("layers"), Emitter("layers")
        e.norm("vision.norms", RMSNORM, d, 2 * self.depth)
        if c:
            e.linear("vision.conv.in_proj", d, 3 * d, False, c)
            e.term("vision.conv.conv.weight", "weight", (d, 1, self.kernel, self.kernel), c, macs=c * d * self.kernel**2)
            e.op("vision.conv.gates", 2 * c * d, c)  # the input gate and the output gate, each a product a feature
            e.linear("vision.conv.out_proj", d, d, False, c)
        if a:
            e.linear("vision.attn.q", d, d, False, a)
            e.linear("vision.attn.k", d, kv, False, a)
            e.linear("vision.attn.v", d, kv, False, a)
            e.norm("vision.attn.q_norm", RMSNORM, hd, a, total=d)  # every head of a patch
            e.norm("vision.attn.k_norm", RMSNORM, hd, a, total=kv)
            for part in ("scores", "values"):
                core.term(f"vision.attn.{part}", "core", (h, patches, hd), a, numel=0, macs=0, select="full")
            e.op("vision.attn.softmax", a * h * patches * SOFTMAX_OPS, a, scores=a * h * patches)
            e.linear("vision.attn.o", d, d, False, a)
        n = self.depth
        e.linear("vision.ffn.gate", d, self.ffn, False, n)
        e.linear("vision.ffn.up", d, self.ffn, False, n)
        e.op("vision.ffn.act", n * self.ffn * (ACTIVATION_OPS["silu"] + 1), n)
        e.linear("vision.ffn.down", self.ffn, d, False, n)
        e.op("vision.residual", n * RESIDUAL_ADDS * d, n)
        return [("patch", t) for t in e.out] + [("tower", t) for t in core.out]

    def modules(self):
        """Its layers' reference modules (imports torch when called), the convolutions first (their order changes no
        count); ``run`` takes an image's patches through them."""
        from torch import nn

        from ..blocks._torch import Linear, MatMul, make_norm

        spec = self
        d, heads, hd = self.width, self.heads, self.width // self.heads
        kv = self.kv_heads * hd

        class Layer(nn.Module):
            def __init__(self, conv: bool):
                super().__init__()
                self.is_conv = conv
                self.norms = nn.ModuleList([make_norm(RMSNORM, d), make_norm(RMSNORM, d)])
                if conv:
                    self.conv = nn.Module()
                    self.conv.in_proj = Linear(d, 3 * d, bias=False)
                    k = spec.kernel
                    self.conv.conv = nn.Conv2d(d, d, k, padding=k // 2, groups=d, bias=False)
                    self.conv.conv.weight_flops = True  # verify: its FLOPs are its weight's
                    self.conv.out_proj = Linear(d, d, bias=False)
                else:
                    self.attn = nn.Module()
                    self.attn.q, self.attn.o = Linear(d, d, bias=False), Linear(d, d, bias=False)
                    self.attn.k, self.attn.v = Linear(d, kv, bias=False), Linear(d, kv, bias=False)
                    self.attn.q_norm, self.attn.k_norm = make_norm(RMSNORM, hd), make_norm(RMSNORM, hd)
                    self.attn.scores, self.attn.values = MatMul(), MatMul()
                self.ffn = nn.Module()
                self.ffn.gate, self.ffn.up = Linear(d, spec.ffn, bias=False), Linear(d, spec.ffn, bias=False)
                self.ffn.down = Linear(spec.ffn, d, bias=False)

            def forward(self, h):  # (b, patches, d)
                b, n, _ = h.shape
                x = self.norms[0](h)
                if self.is_conv:
                    g = round(n**0.5)
                    gate_in, gate_out, y = self.conv.in_proj(x).chunk(3, dim=-1)
                    y = (gate_in * y).transpose(1, 2).reshape(b, d, g, g)
                    y = self.conv.conv(y).flatten(2).transpose(1, 2)
                    out = self.conv.out_proj(gate_out * y)
                else:
                    q = self.attn.q_norm(self.attn.q(x).reshape(b, n, heads, hd)).transpose(1, 2)
                    k = self.attn.k_norm(self.attn.k(x).reshape(b, n, spec.kv_heads, hd)).transpose(1, 2)
                    v = self.attn.v(x).reshape(b, n, spec.kv_heads, hd).transpose(1, 2)
                    k = k.repeat_interleave(heads // spec.kv_heads, dim=1)
                    v = v.repeat_interleave(heads // spec.kv_heads, dim=1)
                    probs = self.attn.scores(q, k.transpose(-2, -1)).softmax(-1)
                    out = self.attn.o(self.attn.values(probs, v).transpose(1, 2).reshape(b, n, d))
                h = h + out
                y = self.norms[1](h)
                return h + self.ffn.down(nn.functional.silu(self.ffn.gate(y)) * self.ffn.up(y))

        return nn.ModuleList(Layer(k < spec.convs) for k in range(spec.depth))
