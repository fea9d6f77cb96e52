"""GLM-5 Next's language model (glm5_next_text, transformers 5.23.0, models/glm5_next): Kimi Delta Attention layers
beside every fourth layer of DeepSeek-V3.2's latent attention without rotary features, whose indexer scores keys
pooled index_kpool at a time, all under manifold-constrained hyper-connections (parts/hyper.py), with DeepSeek-V3's
mixture after the first dense layers."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, rms
from .deepseek import MLA_MODULES
from .dsa import INDEXER_MODULES, dsa_blocks, glm_indexer_types
from .kimi_linear import KDA_MODULES
from .qwen3_next import runs

# Glm5NextTextIndexer holds its pooling's gate and table itself (index_kpool_compress_gate and _ape); the layer's
# hyper-connections (attn_hc, ffn_hc: fn, base and scale each); Glm5NextTextHyperHead holds nothing
GLM5_NEXT_MODULES = (
    (r"self_attn\.indexer$", "attn.indexer.compress"),
    (r"^attn_hc$", "hc.attn"),
    (r"^ffn_hc$", "hc.ffn"),
)

# Glm5NextTextConfig's defaults for the keys read here (transformers 5.23.0, configuration_glm5_next.py)
GLM5_NEXT_TEXT = {
    "vocab_size": 154880,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 45,
    "num_attention_heads": 64,
    "n_shared_experts": 1,
    "n_routed_experts": 288,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 0,
    "v_head_dim": 256,
    "qk_nope_head_dim": 256,
    "num_experts_per_tok": 8,
    "hidden_act": "silu",
    "max_position_embeddings": 1048576,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 32,
    "index_kpool": 16,
    "first_k_dense_replace": 3,
    "linear_head_dim": 128,
    "linear_num_heads": 64,
    "linear_conv_kernel_dim": 4,
    "hc_mult": 4,
    "hc_sinkhorn_iters": 20,
}


def layer_types(c: Config) -> list[str]:
    """Glm5NextTextConfig.__post_init__: layer_types as stated ("full_attention" read as "indexed_attention"), else
    layer i "indexed_attention" where i % 4 == 3 and "linear_attention" elsewhere; Glm5NextTextDecoderLayer builds
    Glm5NextTextLinearAttention for "linear_attention" and Glm5NextTextAttention for anything else."""
    n = c.int("num_hidden_layers")
    stated = c.data.get("layer_types")
    if stated is None:
        return ["indexed_attention" if i % 4 == 3 else "linear_attention" for i in range(n)]
    if not isinstance(stated, list) or len(stated) != n:
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {stated!r}")
    return ["linear_attention" if t == "linear_attention" else "indexed_attention" for t in stated]


@family("glm5_next_text", layer_modules=GLM5_NEXT_MODULES + KDA_MODULES + INDEXER_MODULES + MLA_MODULES + MOE_MODULES)
def glm5_next_text(c: Config) -> dict:
    """Glm5NextTextConfig / Glm5NextTextDecoderLayer: each sublayer reads the hc_mult (4) streams through its
    Glm5NextTextHyperConnection (DeepSeek-V4's manifold-constrained form: an unweighted RMSNorm, fn, base and
    scale, the pre, post and comb weights, hc_sinkhorn_iters rounds) and its RMSNorm, and its output is mixed back
    into the streams; Glm5NextTextHyperHead, the streams' unweighted mean, makes the final norm's input.
    self_attn by layer_types: Glm5NextTextLinearAttention, Kimi Delta Attention (blocks/kimi_delta.py: q_proj,
    k_proj, v_proj of linear_num_heads × linear_head_dim, 64 × 128, one bias-free depthwise conv1d of
    linear_conv_kernel_dim 4 over the three, b_proj, the forget gate's f_a_proj, f_b_proj, dt_bias and A_log with
    the bounded decay of linear_lower_bound (-5), the output gate's g_a_proj and g_b_proj, the gated RMSNorm,
    o_proj); or Glm5NextTextAttention, DeepSeek-V2's latent attention with a low-rank query always (q_lora_rank
    1536, kv_lora_rank 512, qk_nope_head_dim 256, qk_rope_head_dim 0: the config refuses rotary features, so no
    positions at all, v_head_dim 256, 64 heads, no biases) and, where indexer_types (GLM-5's schedule:
    glm_indexer_types) says "full", Glm5NextTextIndexer: DeepSeek-V3.2's (index_n_heads 32, index_head_dim 128)
    over pools of index_kpool (16) keys (mla's index_pool), keeping index_topk (2048) keys of whole pools and the
    query's own incomplete pool. mlp_layer_types (default: three "dense", then "sparse"): a bias-free MLP of
    intermediate_size (12288), or Glm5NextTextMoE, DeepSeek-V3's (a sigmoid router whose e_score_correction_bias is
    a buffer, n_routed_experts 288 fused experts of moe_intermediate_size 2048, 8 a token, one shared MLP of
    n_shared_experts × moe_intermediate_size); swiglu_limit's clamps are comparisons. lm_head untied by default."""
    c = c.with_defaults({**GLM5_NEXT_TEXT, "n_routed_experts": c.data.get("num_local_experts", 288)})
    linear = c.data.get("linear_attn_config") or {}
    if not isinstance(linear, dict):
        raise c.fail("linear_attn_config", f"expected an object, got {linear!r}")
    if c.int("qk_rope_head_dim", positive=False):
        raise c.fail("qk_rope_head_dim", "Glm5NextTextConfig expects no rotary features in its latent attention (0)")
    if c.data.get("index_kpool_always_select_tail", True) is not True:
        raise c.fail("index_kpool_always_select_tail", "only the query's own incomplete pool kept beside the pools is read")
    # the bounded decay unless linear_lower_bound is null (linear_attn_config's gate_lower_bound over it, -5 where its
    # safe_gate, default true, leaves it null)
    lower = linear.get("gate_lower_bound", c.data.get("linear_lower_bound", -5.0))
    if lower is None and "linear_attn_config" in c.data and linear.get("safe_gate", True):
        lower = -5.0
    kda = {
        "kind": "kda",
        "n_heads": int(linear.get("num_heads", c.int("linear_num_heads"))),
        "head_dim": int(linear.get("head_dim", c.int("linear_head_dim"))),
        "conv_kernel": int(linear.get("short_conv_kernel_size", c.int("linear_conv_kernel_dim"))),
        "activation": c.activation("hidden_act", "silu"),
        "safe_gate": lower is not None,
    }
    spec, kinds, ffns, attentions = dsa_blocks(c, GLM5_NEXT_TEXT)
    attentions["full"] = {**attentions["full"], "index_pool": c.int("index_kpool")}
    blocks = {"linear_attention": kda, **attentions, **ffns}
    mixers = [
        "linear_attention" if kind == "linear_attention" else indexer for kind, indexer in zip(layer_types(c), glm_indexer_types(c))
    ]
    mixer, ffn, layers = runs(list(zip(mixers, kinds)), blocks)
    return {
        **common(c, tie=False),
        "positions": "none",
        "attention": blocks[mixer],
        "ffn": blocks[ffn],
        "norm": rms(),
        "hyper": {"streams": c.int("hc_mult"), "mixer": "mhc", "sinkhorn_iters": c.int("hc_sinkhorn_iters"), "head": "mean"},
        **({"layers": layers} if layers else {}),
    }
