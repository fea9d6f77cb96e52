"""Attention pooling of a window of patches into one token, then a SwiGLU: Molmo 2's adapter (Molmo2Adapter,
transformers 5.23's modeling_molmo2.py; Ai2 2025, the Molmo 2 technical report). Not a part of its own: a projector
(parts/projector.py) holds one, in place of its own stages. Each token it writes reads one window of ``window`` ×
``window`` patch slots (the processor's image_token_pooling: a slot past the grid's edge is -1, its features zeros and
its key masked), each slot the features of the tower's layers it reads side by side (``width``: 2 × 1,152):

- image_pooling_2d (Molmo2VisionAttention over the adapter's config): the query is the window's mean over its valid
  slots (no multiply-adds), q_proj on it, k_proj and v_proj on every slot of the window (the masked ones too), each
  Linear(width, heads · head_dim) with attention_bias; the query meets its window's slots alone (heads × slots ×
  head_dim multiply-adds for the scores and as many for the values); o_proj, Linear(heads · head_dim, hidden) with a
  bias;
- image_projector (Molmo2ImageProjectorMLP): gate_proj and up_proj, Linear(hidden, d_ff) with mlp_bias, SiLU(gate) ⊙
  up, down_proj, Linear(d_ff, out) without a bias (out: the adapter's text_hidden_size).

Every term is a token's: an image's work is its tokens' (parts/molmo2_vision.py counts them)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter


@dataclass(frozen=True)
class WindowPooling:
    n_heads: Positive
    n_kv_heads: Positive
    head_dim: Positive
    hidden: Positive  # o_proj's width (the adapter's hidden_size)
    d_ff: Positive  # the SwiGLU's width (intermediate_size)
    out: Positive  # the width down_proj writes (text_hidden_size)
    window: Positive = 2  # patches a side of a token's window (the processor's pooling_size)
    attention_bias: bool = True
    mlp_bias: bool = False

    @property
    def slots(self) -> int:
        """Patch slots a token reads: window²."""
        return self.window**2

    def terms(self, width: int, prefix: str) -> list[tuple[str, object]]:
        """Its tensors and one token's work over a window of patch slots of ``width`` features, named under
        ``prefix`` (its projector's: vision.projector.)."""
        heads, kv, hd, s = self.n_heads, self.n_kv_heads, self.head_dim, self.slots
        e = Emitter("layers")
        e.op(f"{prefix}attn.mean", s * width, 1)  # the query: the window's valid slots summed and divided
        e.linear(f"{prefix}attn.q", width, heads * hd, self.attention_bias, 1)
        for part in ("k", "v"):  # every slot of the window, masked ones too
            e.term(f"{prefix}attn.{part}.weight", "weight", (kv * hd, width), macs=s * width * kv * hd)
            if self.attention_bias:
                e.term(f"{prefix}attn.{part}.bias", "bias", (kv * hd,), elementwise=s * kv * hd)
        for part in ("scores", "values"):  # the one query meets its window's slots
            e.term(f"{prefix}attn.{part}", "core", (heads, s, hd), numel=0, macs=heads * hd, select="full")
        e.op(f"{prefix}attn.softmax", heads * s * SOFTMAX_OPS, 1)
        e.linear(f"{prefix}attn.o", heads * hd, self.hidden, self.attention_bias, 1)
        e.linear(f"{prefix}ffn.gate", self.hidden, self.d_ff, self.mlp_bias, 1)
        e.linear(f"{prefix}ffn.up", self.hidden, self.d_ff, self.mlp_bias, 1)
        e.op(f"{prefix}ffn.act", self.d_ff * (ACTIVATION_OPS["silu"] + 1), 1)
        e.linear(f"{prefix}ffn.down", self.d_ff, self.out, False, 1)
        return [("projector", t) for t in e.out]

    def module(self, width: int):
        """Its reference module (imports torch when called): forward(windows) runs (tokens, slots, width) windows."""
        from torch import nn

        from ..blocks._torch import Linear, MatMul

        spec = self

        class WindowPoolingModule(nn.Module):
            def __init__(self):
                super().__init__()
                heads, kv, hd, bias = spec.n_heads, spec.n_kv_heads, spec.head_dim, spec.attention_bias
                self.attn = nn.Module()
                self.attn.q = Linear(width, heads * hd, bias=bias)
                self.attn.k = Linear(width, kv * hd, bias=bias)
                self.attn.v = Linear(width, kv * hd, bias=bias)
                self.attn.o = Linear(heads * hd, spec.hidden, bias=bias)
                self.attn.scores, self.attn.values = MatMul(), MatMul()
                self.ffn = nn.Module()
                self.ffn.gate = Linear(spec.hidden, spec.d_ff, bias=spec.mlp_bias)
                self.ffn.up = Linear(spec.hidden, spec.d_ff, bias=spec.mlp_bias)
                self.ffn.down = Linear(spec.d_ff, spec.out, bias=False)

            def forward(self, windows):
                n, s = windows.shape[0], windows.shape[1]
                heads, kv, hd = spec.n_heads, spec.n_kv_heads, spec.head_dim
                q = self.attn.q(windows.mean(1, keepdim=True)).view(n, 1, heads, hd).transpose(1, 2)
                k = self.attn.k(windows).view(n, s, kv, hd).transpose(1, 2).repeat_interleave(heads // kv, dim=1)
                v = self.attn.v(windows).view(n, s, kv, hd).transpose(1, 2).repeat_interleave(heads // kv, dim=1)
                probs = self.attn.scores(q, k.transpose(-2, -1)).softmax(-1)
                pooled = self.attn.o(self.attn.values(probs, v).transpose(1, 2).reshape(n, heads * hd))
                return self.ffn.down(nn.functional.silu(self.ffn.gate(pooled)) * self.ffn.up(pooled))

        return WindowPoolingModule()
