"""Llama 3.2 Vision's language model (Meta 2024; transformers' MllamaTextModel): Llama 3's layers, those at
cross_attention_layers gated cross-attention layers reading the image's rows in place of self-attention
(parts/cross_attention.py)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms, stack

# MllamaTextModel's token table: vocab_size + 8 rows (the image token's among them), which lm_head does not write
IMAGE_ROWS = 8
# MllamaTextConfig.__post_init__: the cross-attention layers where none are stated
CROSS_LAYERS = [3, 8, 13, 18, 23, 28, 33, 38]


@family(
    "mllama_text_model",
    layer_modules=(
        (r"cross_attn\.q_proj$", "cross.q"),
        (r"cross_attn\.k_proj$", "cross.k"),
        (r"cross_attn\.v_proj$", "cross.v"),
        (r"cross_attn\.o_proj$", "cross.o"),
        (r"cross_attn\.q_norm$", "cross.q_norm"),
        (r"cross_attn\.k_norm$", "cross.k_norm"),
        (r"cross_attn_(attn|mlp)_gate$", "cross.gates"),
    ),
)
def mllama_text(c: Config) -> dict:
    """MllamaTextConfig / MllamaSelfAttentionDecoderLayer, MllamaCrossAttentionDecoderLayer: Llama's layers (no
    biases, head_dim hidden_size / heads, an RMSNorm before each sublayer, a SwiGLU MLP); in each layer of
    cross_attention_layers MllamaTextCrossAttention in place of the self-attention (q, k, v and o of the same heads,
    q_norm and k_norm over each head, tanh gates on the attention's and the MLP's outputs); the token table
    vocab_size + 8 rows, never tied to lm_head."""
    n = c.int("num_hidden_layers")
    crossing = c.int_list("cross_attention_layers") if c.data.get("cross_attention_layers") is not None else CROSS_LAYERS
    if any(i >= n or i < 0 for i in crossing):
        raise c.fail("cross_attention_layers", f"{crossing}: names a layer outside the model's {n}")
    own = attention(c)
    # a cross-attention layer states no mixer of its own: the cross-attention (parts/cross_attention.py) is its mixer
    layers = [{"attention": {"kind": "none"} if i in crossing else own} for i in range(n)]
    heads = c.int("num_attention_heads")
    cross = {
        "n_heads": heads,
        "n_kv_heads": c.int("num_key_value_heads", heads),
        "head_dim": c.int("hidden_size") // heads,  # MllamaTextCrossAttention: hidden_size // num_attention_heads
        "image_rows": IMAGE_ROWS,
    }
    # never tied, whatever tie_word_embeddings says: lm_head's vocab_size rows cannot share the table's vocab_size + 8
    # (transformers builds the two apart)
    spec = {**common(c, tie=False), "tie_embeddings": False}
    return {**spec, **stack(layers), "ffn": gated(c), "norm": rms(), "cross_attention": cross}
