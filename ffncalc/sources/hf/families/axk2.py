"""A.X-K2 (SK Telecom 2026): DeepSeek-V3.2's latent attention with its indexer, the queries and a gate on every
output feature from one projection of the query latent, and a low-rank sigmoid gate after the norms before
attention and before each mixture."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, rms, stack
from .axk1 import deepseek_moe, mlp_kinds
from .deepseek import MLA_MODULES
from .dsa import INDEXER_MODULES
from .minicpm3 import mla_attention

# AXK2GatedRMSNorm: the norm's own weight (norm) and its gate (mlp.fc1, mlp.fc2); before the common names
MODULES = (
    (r"layernorm\.norm$", "norms"),
    (r"layernorm\.mlp\.fc1$", "norms.gate.fc1"),
    (r"layernorm\.mlp\.fc2$", "norms.gate.fc2"),
    (r"q_gate_proj$", "attn.q_gate"),
)

# AXK2Config's defaults (transformers 5.23.0) for the keys the shared readers require
DEFAULTS = {"vocab_size": 163840, "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32}


@family("axk2", layer_modules=MODULES + INDEXER_MODULES + MLA_MODULES + MOE_MODULES)
def axk2(c: Config) -> dict:
    """AXK2Config / AXK2DecoderLayer. AXK2Attention: DeepSeek-V2's latent attention with a low-rank query
    always (q_lora_rank 384; kv_lora_rank 128, qk_nope_head_dim 64, qk_rope_head_dim 32, v_head_dim 64,
    attention_bias false on q_a and kv_a and o), whose q_gate_proj maps the normed and the raw query latents
    together (2·q_lora_rank) to every head's query and a sigmoid gate on each of its v_head_dim output features
    (no bias); and DeepSeek-V3.2's indexer (AXK2Indexer: wq_b, wk, k_norm, weights_proj; index_n_heads 16,
    index_head_dim 128, index_topk 2048). mlp_layer_types (default: first_k_dense_replace 1, moe_layer_freq 1): a
    bias-free MLP of intermediate_size (5120), or AXK2MoE, DeepSeek-V3's mixture over n_routed_experts (128),
    num_experts_per_tok (8), experts of moe_intermediate_size (512) and n_shared_experts (1) × that as one
    shared MLP, a bias-free router (its e_score_correction_bias a buffer). input_layernorm is AXK2GatedRMSNorm in
    every layer, post_attention_layernorm in the mixture's layers (a plain RMSNorm before a dense MLP): an RMSNorm
    whose output y becomes y ⊙ σ(fc2(silu(fc1 y))), fc1 d -> gated_norm_rank (16), fc2 back, no biases. The
    final norm a plain RMSNorm; the unembedding untied by default."""
    c = c.with_defaults(DEFAULTS)
    if c.data.get("q_lora_rank", 384) is None:
        raise c.fail("q_lora_rank", "A.X-K2's attention always has a low-rank query (AXK2Attention.q_a_proj)")
    attention = {
        **mla_attention(c, q_lora_rank=384, kv_lora_rank=128, qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64),
        "query_gate": True,
        "index_n_heads": c.int("index_n_heads", 16),
        "index_head_dim": c.int("index_head_dim", 128),
        "index_topk": c.int("index_topk", 2048),
    }
    moe = deepseek_moe(c, n_routed_experts=128, num_experts_per_tok=8, moe_intermediate_size=512, n_shared_experts=1)
    ffns = {"sparse": moe, "dense": gated(c, width=c.int("intermediate_size", 5120))}
    layers = [
        {"attention": attention, "ffn": ffns[kind], "norms": ["gated", "gated" if kind == "sparse" else "norm"]}
        for kind in mlp_kinds(c, 1)
    ]
    return {**common(c, tie=False, context_default=131_072), **stack(layers), "norm": rms(gate_rank=c.int("gated_norm_rank", 16))}
