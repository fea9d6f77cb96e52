"""A speech talker held beside the model's layers: a second language model that reads the thinker's hidden states and
writes codec tokens (Qwen2.5-Omni's talker, Xu et al. 2025, "Qwen2.5-Omni Technical Report", §2.3, as transformers'
Qwen2_5OmniTalkerForConditionalGeneration builds it). Its parameters are counted by component; a forward over the
thinker's tokens does not run it, and its work, once a generated codec token, is stated in the count's note and not
charged in the FLOPs.

Qwen2_5OmniTalkerForConditionalGeneration at a Qwen2_5OmniTalkerConfig (hidden_size h, embedding_size e,
num_hidden_layers L, num_attention_heads a, num_key_value_heads k, head_dim d, intermediate_size f, vocab_size V):

- ``thinker_to_talker_proj``: Linear(e, h) with a bias, over each position's codec embedding plus the thinker's state;
- ``model.embed_tokens``: the codec table, V × e;
- ``model.layers``: L Qwen2 decoder layers (Qwen2_5OmniDecoderLayer): q_proj h → a·d and k_proj, v_proj h → k·d with
  biases, o_proj a·d → h without; gate_proj, up_proj h → f and down_proj f → h without biases; two RMSNorms of h;
- ``model.norm``: an RMSNorm of h; ``codec_head``: Linear(h, V) without a bias (never tied).

A generated codec token runs thinker_to_talker_proj, every layer (its q, k, v, o and the MLP's three matmuls, then QKᵀ
and AV over the ``context`` keys it meets, its own included) and codec_head: 2 FLOPs a multiply-add, as FlopCounterMode
counts (the table's lookup, the norms, the rotary and the SiLU are elementwise, not counted there).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive
from . import register
from ._held import HeldPart


@register
@dataclass(frozen=True)
class Talker(HeldPart):
    key = "talker"
    beside = True
    order = 46
    summary = "a speech talker held beside the layers, a second language model writing codec tokens (Qwen2.5-Omni)"

    width: Positive = 3584
    embedding: Positive = 3584  # embedding_size: the codec table's width and thinker_to_talker_proj's input
    layers: NonNegative = 28
    heads: Positive = 28
    kv_heads: Positive = 4
    head_dim: Positive = 128
    intermediate: Positive = 18944
    vocab: Positive = 8448

    def numels(self) -> dict[str, int]:
        """Each component's parameters (the module docstring's shapes)."""
        h, e, q, kv, f = self.width, self.embedding, self.heads * self.head_dim, self.kv_heads * self.head_dim, self.intermediate
        out = {
            "talker.thinker_to_talker_proj": e * h + h,
            "talker.embed_tokens": self.vocab * e,
            "talker.layers.self_attn": self.layers * (h * q + q + 2 * (h * kv + kv) + q * h),
            "talker.layers.mlp": self.layers * 3 * h * f,
            "talker.layers.norms": self.layers * 2 * h,
            "talker.norm": h,
            "talker.codec_head": h * self.vocab,
        }
        return {name: n for name, n in out.items() if n}

    def token_flops(self, context: int) -> int:
        """Forward FLOPs of one generated codec token that meets ``context`` keys in every layer (its own included):
        thinker_to_talker_proj, each layer's q, k, v, o, gate, up and down, QKᵀ and AV, and codec_head."""
        h, q, kv = self.width, self.heads * self.head_dim, self.kv_heads * self.head_dim
        layer = h * q + 2 * h * kv + q * h + 3 * h * self.intermediate + 2 * q * context
        return 2 * (self.embedding * h + self.layers * layer + h * self.vocab)

    def note(self, spec) -> str:
        return (
            f"talker: {sum(self.numels().values()):,} parameters counted, its work not charged in the FLOPs (a forward "
            f"over the thinker's tokens does not run it); a generated codec token is {self.token_flops(1):,} forward "
            f"FLOPs at its first position, {2 * 2 * self.layers * self.heads * self.head_dim:,} more for each key before it"
        )
