"""Youtu-LLM (Tencent Youtu 2025): DeepSeek-V2's multi-head latent attention on a dense Llama layout."""

from __future__ import annotations

from ..config import Config, common, family, gated, rms
from .deepseek import MLA_MODULES
from .minicpm3 import mla_attention


@family("youtu", layer_modules=MLA_MODULES)
def youtu(c: Config) -> dict:
    """YoutuConfig / YoutuDecoderLayer: Llama's pre-norm layer with YoutuAttention, DeepseekV2Attention's
    projections (q_lora_rank 1536, null for a full-rank query; kv_lora_rank 512; qk_nope_head_dim 128,
    qk_rope_head_dim 64, v_head_dim 128; attention_bias false on q_a, kv_a and o), and a bias-free YoutuMLP
    of intermediate_size (6144). Embeddings tied by default."""
    attention = mla_attention(c, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
    return {**common(c, tie=True, context_default=131_072), "attention": attention, "ffn": gated(c), "norm": rms()}
