"""A mixture-of-experts speech talker held beside the model's layers: Qwen3-Omni's talker (Qwen Team 2025, "Qwen3-Omni
Technical Report", §2.4, as transformers' Qwen3OmniMoeTalkerForConditionalGeneration builds it), a language model of
MoE layers that writes the first codebook's codec tokens from the thinker's states, and its code predictor, a small
dense language model that writes the other codebooks' tokens of each frame. Its parameters are counted by component; a
forward over the thinker's tokens does not run it, and its work, once a generated codec token, is stated in the
count's note and not charged in the FLOPs.

Qwen3OmniMoeTalkerForConditionalGeneration at a Qwen3OmniMoeTalkerConfig (thinker_hidden_size t) whose text_config
(Qwen3OmniMoeTalkerTextConfig) states hidden_size h, intermediate_size p, num_hidden_layers L, num_attention_heads a,
num_key_value_heads k, head_dim d (hidden_size // num_attention_heads where unstated), num_experts E,
moe_intermediate_size m, shared_expert_intermediate_size s, vocab_size V and attention_bias:

- ``text_projection`` and ``hidden_projection`` (Qwen3OmniMoeTalkerResizeMLP): Linear(t, p) → act → Linear(p, h), with
  biases;
- ``model.codec_embedding``: the codec table, V × h;
- ``model.layers``: L decoder layers (Qwen3OmniMoeTalkerDecoderLayer): Qwen3's attention (q_proj h → a·d, k_proj and
  v_proj h → k·d, o_proj a·d → h, biases as attention_bias says; q_norm and k_norm, RMSNorms of d) and, in every
  layer whatever mlp_only_layers says, Qwen3OmniMoeTalkerTextSparseMoeBlock: the router (E × h), E experts (gate_up_proj
  2m × h, down_proj h × m), the shared expert (gate_proj, up_proj h → s, down_proj s → h) and shared_expert_gate
  (Linear(h, 1)), all without biases; two RMSNorms of h;
- ``model.norm``: an RMSNorm of h; ``codec_head``: Linear(h, V) without a bias, tied to the codec table where the
  talker config's tie_word_embeddings says (its _tied_weights_keys);
- ``code_predictor`` (Qwen3OmniMoeTalkerCodePredictorModelForConditionalGeneration) at its code_predictor_config
  (hidden_size c, num_hidden_layers n, num_attention_heads b, num_key_value_heads j, head_dim e, intermediate_size f,
  vocab_size W, num_code_groups G): n Qwen3 layers (q, k, v, o, q_norm and k_norm as above; gate, up and down without
  biases; two RMSNorms of c), the final RMSNorm, G − 1 codec tables of W × c and G − 1 heads Linear(c, W) without a
  bias.

A generated codec token runs every talker layer (q, k, v, o, QKᵀ and AV over the ``context`` keys it meets, its own
included; the router, its top-k experts, the shared expert and its gate) and codec_head: 2 FLOPs a multiply-add, as
FlopCounterMode counts (the table's lookup, the norms, the rotary, the routing's softmax and top-k are not counted there).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive
from . import register
from ._held import HeldPart


@register
@dataclass(frozen=True)
class MoeTalker(HeldPart):
    key = "moe_talker"
    beside = True
    prefix = "talker"  # its components' names, as transformers names its modules
    order = 46
    summary = "a mixture-of-experts speech talker and its code predictor held beside the layers (Qwen3-Omni)"

    width: Positive = 1024
    thinker_width: Positive = 2048  # thinker_hidden_size: the projections' input
    projection: Positive = 2048  # the text config's intermediate_size: the projections' inner width
    layers: NonNegative = 20
    heads: Positive = 16
    kv_heads: Positive = 2
    head_dim: Positive = 64
    bias: bool = False  # attention_bias
    experts: NonNegative = 128
    top_k: NonNegative = 8
    expert_intermediate: Positive = 384
    shared_intermediate: Positive = 2048
    vocab: Positive = 3072
    tied: bool = False  # the talker config's tie_word_embeddings: codec_head shares the codec table
    predictor_width: Positive = 1024
    predictor_layers: NonNegative = 5
    predictor_heads: Positive = 16
    predictor_kv_heads: Positive = 8
    predictor_head_dim: Positive = 128
    predictor_intermediate: Positive = 3072
    predictor_bias: bool = False
    predictor_vocab: Positive = 2048
    code_groups: Positive = 32

    @staticmethod
    def attention(h: int, heads: int, kv_heads: int, d: int, bias: bool) -> int:
        """Qwen3's attention: q, k, v, o (biases as attention_bias says) and q_norm, k_norm of one head's width."""
        q, kv = heads * d, kv_heads * d
        return h * q + 2 * h * kv + q * h + (q + 2 * kv + h if bias else 0) + 2 * d

    def numels(self) -> dict[str, int]:
        """Each component's parameters (the module docstring's shapes)."""
        h, m, s, c = self.width, self.expert_intermediate, self.shared_intermediate, self.predictor_width
        projection = self.thinker_width * self.projection + self.projection + self.projection * h + h
        moe = self.experts * h + self.experts * 3 * m * h + 3 * h * s + h
        groups = self.code_groups - 1
        out = {
            "talker.text_projection": projection,
            "talker.hidden_projection": projection,
            "talker.codec_embedding": self.vocab * h,
            "talker.layers.self_attn": self.layers * self.attention(h, self.heads, self.kv_heads, self.head_dim, self.bias),
            "talker.layers.mlp": self.layers * moe,
            "talker.layers.norms": self.layers * 2 * h,
            "talker.norm": h,
            "talker.codec_head": 0 if self.tied else h * self.vocab,
            "talker.code_predictor.layers.self_attn": self.predictor_layers
            * self.attention(c, self.predictor_heads, self.predictor_kv_heads, self.predictor_head_dim, self.predictor_bias),
            "talker.code_predictor.layers.mlp": self.predictor_layers * 3 * c * self.predictor_intermediate,
            "talker.code_predictor.layers.norms": self.predictor_layers * 2 * c,
            "talker.code_predictor.norm": c,
            "talker.code_predictor.codec_embedding": groups * self.predictor_vocab * c,
            "talker.code_predictor.lm_head": groups * c * self.predictor_vocab,
        }
        return {name: n for name, n in out.items() if n}

    def token_flops(self, context: int) -> int:
        """Forward FLOPs of one generated codec token that meets ``context`` keys in every layer (its own included):
        each layer's q, k, v, o, QKᵀ and AV, the router, top-k experts, the shared expert and its gate; codec_head."""
        h, q, kv = self.width, self.heads * self.head_dim, self.kv_heads * self.head_dim
        attention = h * q + 2 * h * kv + q * h + 2 * q * context
        moe = self.experts * h + self.top_k * 3 * h * self.expert_intermediate + 3 * h * self.shared_intermediate + h
        return 2 * (self.layers * (attention + moe) + h * self.vocab)

    def note(self, spec) -> str:
        return (
            f"talker: {sum(self.numels().values()):,} parameters counted (its code predictor's included), its work not "
            f"charged in the FLOPs (a forward over the thinker's tokens does not run it); a generated codec token is "
            f"{self.token_flops(1):,} forward FLOPs through its layers and codec_head at its first position, "
            f"{2 * 2 * self.layers * self.heads * self.head_dim:,} more for each key before it"
        )
