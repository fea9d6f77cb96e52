"""MiniCPM3 (OpenBMB 2024): DeepSeek-V2's multi-head latent attention on MiniCPM's dense layout, with its
embedding, residual and logit scalings."""

from __future__ import annotations

from ..config import Config, common, family, gated, rms
from .deepseek import MLA_MODULES


def mla_attention(
    c: Config,
    *,
    q_lora_rank: int | None,
    kv_lora_rank: int,
    qk_nope_head_dim: int,
    qk_rope_head_dim: int,
    v_head_dim: int,
    bias: bool = False,
) -> dict:
    """DeepseekV2Attention's shape from a config, with the config class's defaults: q_lora_rank as stated
    (an explicit null: a full-rank q_proj), attention_bias on q_a, kv_a and o."""
    q_rank = c.data.get("q_lora_rank", q_lora_rank)
    if q_rank is not None:
        q_rank = c.int("q_lora_rank", q_lora_rank)
    return {
        "kind": "mla",
        "n_heads": c.int("num_attention_heads"),
        "q_lora_rank": q_rank,
        "kv_lora_rank": c.int("kv_lora_rank", kv_lora_rank),
        "qk_nope_head_dim": c.int("qk_nope_head_dim", qk_nope_head_dim),
        "qk_rope_head_dim": c.int("qk_rope_head_dim", qk_rope_head_dim),
        "v_head_dim": c.int("v_head_dim", v_head_dim),
        "bias": c.bool("attention_bias", bias),
    }


@family("minicpm3", layer_modules=MLA_MODULES)
def minicpm3(c: Config) -> dict:
    """MiniCPM3Config / MiniCPM3DecoderLayer: Llama's pre-norm layer with MiniCPM3Attention, which builds
    DeepseekV2Attention's projections (q_lora_rank 768, null for a full-rank query; kv_lora_rank 256;
    qk_nope_head_dim 64, qk_rope_head_dim 32; v_head_dim hidden_size // num_attention_heads where absent or
    null; attention_bias false on q_a, kv_a and o). A LlamaMLP of intermediate_size (6400) with mlp_bias
    (false). Embeddings tied by default. scale_emb (a buffer, embed_scale), scale_depth on each residual
    branch and dim_model_base before the head are constant scalars, not parameters."""
    heads = c.int("num_attention_heads")
    attention = mla_attention(
        c, q_lora_rank=768, kv_lora_rank=256, qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=c.int("hidden_size") // heads
    )
    return {
        **common(c, tie=True, context_default=32_768),
        "attention": attention,
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "norm": rms(),
    }
