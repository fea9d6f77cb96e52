"""Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1).

Keys and values come from one low-rank latent: kv_a maps d_model to kv_lora_rank + qk_rope_head_dim (the
latent and one rotary key shared by all heads), a norm, then kv_b expands the latent to every head's
non-rotary key and value. The query is full-rank (q_lora_rank None) or low-rank likewise. Counted as
DeepSeek-V2 computes it in training (eqs. 9-17, and DeepseekV2Attention in transformers): the latents
expanded, not absorbed into the query.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from ..model.terms import ROTARY_OPS
from . import Block, register
from .attention import attention_core, softmax_score_bytes


@register
@dataclass(frozen=True)
class LatentAttention(Block):
    """Multi-head latent attention (DeepSeek-V2 §2.1)."""

    kind = "mla"
    slot = "attention"
    summary = "multi-head latent attention: keys and values from one cached low-rank latent (DeepSeek-V2 §2.1)"

    n_heads: Positive
    kv_lora_rank: Positive
    qk_nope_head_dim: Positive
    qk_rope_head_dim: Positive
    v_head_dim: Positive
    q_lora_rank: Positive | None = None
    bias: bool = False  # on q_a, kv_a and o (DeepSeek's attention_bias); q/q_b and kv_b never have one

    @property
    def kv_heads(self) -> int:
        return self.n_heads  # after expansion every head has its own key and value

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    def describe(self) -> str:
        return f"MLA {self.n_heads} heads, latent {self.kv_lora_rank} + rope {self.qk_rope_head_dim}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/{self.n_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, r, n = model.d_model, self.n_heads, self.qk_rope_head_dim, e.n
        qk = self.qk_head_dim
        if self.q_lora_rank is None:
            e.linear("attn.q", d, h * qk, False, n, heads=h)
        else:
            e.linear("attn.q_a", d, self.q_lora_rank, self.bias, n)
            e.norm("attn.q_a_norm", model.norm, self.q_lora_rank, n)
            e.linear("attn.q_b", self.q_lora_rank, h * qk, False, n, heads=h)
        e.linear("attn.kv_a", d, self.kv_lora_rank + r, self.bias, n)  # the latent and the shared rotary key
        e.norm("attn.kv_a_norm", model.norm, self.kv_lora_rank, n)
        e.linear("attn.kv_b", self.kv_lora_rank, h * (self.qk_nope_head_dim + self.v_head_dim), False, n, heads=h)
        if model.positions == "rotary":
            e.op("attn.rotary", n * ROTARY_OPS * (h + 1) * r)  # every query head and the one shared key
        attention_core(e, model, h, qk, self.v_head_dim, seq_len, self.bias)

    def cache_elements(self, model) -> int:
        """The latent and the shared rotary key: what DeepSeek-V2 caches per token and layer (§2.1.2)."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def kept_elements(self, model) -> int:
        """The input; the query latent and its normed copy (low-rank query); kv_a's output and the normed
        latent; then as multi-head attention: Q and K (h · qk each), V and the heads' output (h · v each)."""
        h = self.n_heads
        q_latent = 2 * self.q_lora_rank if self.q_lora_rank else 0
        latent = (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
        return model.d_model + q_latent + latent + 2 * h * self.qk_head_dim + 2 * h * self.v_head_dim

    def score_bytes(self, model, seq_len: int) -> int:
        return softmax_score_bytes(self.n_heads, seq_len)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import Linear, MatMul, attend, make_norm, rotate

    class MultiHeadLatentAttention(nn.Module):
        """The latents expanded, as in training."""

        def __init__(self, spec: LatentAttention, model, causal: bool):
            super().__init__()
            d, h = model.d_model, spec.n_heads
            self.heads, self.positions, self.causal = h, model.positions, causal
            self.nope, self.rope, self.v_dim, self.rank = (spec.qk_nope_head_dim, spec.qk_rope_head_dim,
                                                          spec.v_head_dim, spec.kv_lora_rank)
            qk = self.nope + self.rope
            if spec.q_lora_rank is None:
                self.q = Linear(d, h * qk, bias=False)
            else:
                self.q_a = Linear(d, spec.q_lora_rank, bias=spec.bias)
                self.q_a_norm = make_norm(model.norm, spec.q_lora_rank)
                self.q_b = Linear(spec.q_lora_rank, h * qk, bias=False)
            self.kv_a = Linear(d, self.rank + self.rope, bias=spec.bias)
            self.kv_a_norm = make_norm(model.norm, self.rank)
            self.kv_b = Linear(self.rank, h * (self.nope + self.v_dim), bias=False)
            self.scores = MatMul()
            self.values = MatMul()
            self.o = Linear(h * self.v_dim, d, bias=spec.bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            q = self.q(x) if hasattr(self, "q") else self.q_b(self.q_a_norm(self.q_a(x)))
            q = q.view(b, s, self.heads, -1).transpose(1, 2)  # (B, H, s, nope + rope)
            latent, k_rope = self.kv_a(x).split([self.rank, self.rope], dim=-1)
            kv = self.kv_b(self.kv_a_norm(latent)).view(b, s, self.heads, -1).transpose(1, 2)
            k_nope, v = kv.split([self.nope, self.v_dim], dim=-1)  # (B, H, s, nope), (B, H, s, v_dim)
            k_rope = k_rope.view(b, 1, s, self.rope)  # one rotary key shared by every head
            q_nope, q_rope = q.split([self.nope, self.rope], dim=-1)
            if self.positions == "rotary":
                q_rope, k_rope = rotate(q_rope), rotate(k_rope)
            q = torch.cat([q_nope, q_rope], dim=-1)
            k = torch.cat([k_nope, k_rope.expand(b, self.heads, s, self.rope)], dim=-1)
            out = attend(self, q, k, v)  # (B, H, s, v_dim)
            return self.o(out.transpose(1, 2).reshape(b, s, self.heads * self.v_dim))

    return MultiHeadLatentAttention
