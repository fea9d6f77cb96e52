"""CPM-Ant (OpenBMB 2022): pre-norm layers with a GeGLU FFN, prompt positions prepended to every sequence, segment
embeddings and one table of relative-position and segment-pair biases shared by every layer (parts/prompts.py)."""

from __future__ import annotations

from ..config import Config, family

LAYER_MODULES = (
    (r"self_attention\.project_q$", "attn.q"),
    (r"self_attention\.project_k$", "attn.k"),
    (r"self_attention\.project_v$", "attn.v"),
    (r"self_attention\.attention_out$", "attn.o"),
    (r"ffn\.w_in\.w_0$", "ffn.gate"),
    (r"ffn\.w_in\.w_1$", "ffn.up"),
    (r"ffn\.w_out$", "ffn.down"),
    (r"(layernorm_before_attention|layernorm_before_ffn)$", "norms"),
)
TOP_MODULES = (
    (r"input_embedding$", "embed"),  # the vocabulary's rows and the prompts' after them: one tensor
    (r"segment_embedding$", "segments.embed"),
    (r"position_bias$", "relative_bias"),
    (r"encoder\.output_layernorm$", "final_norm"),
)


@family("cpmant", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def cpmant(c: Config) -> dict:
    """CpmAntConfig / CpmAntForCausalLM: every key has a default (vocab_size 30720, hidden_size 4096, 48 layers,
    32 heads of dim_head 128, dim_ff 10240). CpmAntTransformerBlock: a weight-only RMS norm (CpmAntLayerNorm) before
    attention and before the FFN, q/k/v/o without biases over num_attention_heads × dim_head, CpmAntDenseGatedACT
    gelu(w_0 x) ⊙ w_1 x then w_out, no biases; output_layernorm at the end. No rotary or learned positions:
    CpmAntSegmentPositionEmbedding's table of (segment_types² + position_bias_num_buckets) × heads (defaults 32
    and 512) biases every score. input_embedding holds vocab_size + prompt_types × prompt_length rows (defaults
    32 × 32); the head is its own vocab_size × hidden_size matrix whatever tie_word_embeddings says
    (CpmAntForCausalLM ties nothing); segment_embedding of segment_types rows. CpmAntModel.forward prepends
    prompt_length prompt tokens to every sequence: the layers and output_layernorm run over seq_len +
    prompt_length positions, the head over seq_len. Its mask lets every position meet every key (context is all
    ones): the executed view is the count; the causal view counts the triangle as for any causal LM.
    position_bias_max_distance (default 2048) is taken as the context, which no table bounds."""
    heads = c.int("num_attention_heads", 32)
    segments = c.int("segment_types", 32)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 30720),
        "d_model": c.int("hidden_size", 4096),
        "n_layers": c.int("num_hidden_layers", 48),
        "context_length": c.int("position_bias_max_distance", 2048),
        "positions": "none",
        "tie_embeddings": False,
        "attention": {"kind": "mha", "n_heads": heads, "head_dim": c.int("dim_head", 128), "qkv_bias": False, "o_bias": False},
        "ffn": {"kind": "gated", "d_ff": c.int("dim_ff", 10240), "activation": "gelu", "bias": False},
        "norm": {"kind": "rmsnorm", "per_layer": 2, "final": True},
        "prompts": {"length": c.int("prompt_length", 32), "types": c.int("prompt_types", 32)},
        "segments": {"types": segments},
        "relative_bias": {"buckets": c.int("position_bias_num_buckets", 512), "heads": heads, "segments": segments},
    }
