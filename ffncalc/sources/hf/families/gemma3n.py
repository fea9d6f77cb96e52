"""Gemma 3n (Google DeepMind 2025): Gemma 3's layers with per-layer inputs, AltUp streams, LAuReL beside attention,
keys and values read from earlier layers by the last ones, and per-layer FFN widths (ffncalc/parts/)."""

from __future__ import annotations

from ..config import Config, common, family, layer_types, rms, stack, window
from .gemma4 import PLE_LAYER_MODULES, PLE_TOP_MODULES, kv_readers, per_layer_inputs

# Gemma3nTextConfig's defaults (transformers 5.23): a Gemma 3n text_config states only what differs from them.
GEMMA3N_TEXT = {
    "vocab_size": 262_400,
    "hidden_size": 2048,
    "intermediate_size": 16_384,
    "num_hidden_layers": 35,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 32_768,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "sliding_window": 512,
    "vocab_size_per_layer_input": 262_144,
    "hidden_size_per_layer_input": 256,
    "altup_num_inputs": 4,
    "altup_correct_scale": True,
    "num_kv_shared_layers": 15,
    "laurel_rank": 64,
}

LAYER_MODULES = PLE_LAYER_MODULES + (
    (r"^altup$", "altup.correct_output_scale"),  # Gemma3nTextAltUp's own parameter
    (r"altup\.modality_router$", "altup.router"),
    (r"altup\.router_norm$", "altup.router_norm"),
    (r"altup\.prediction_coefs$", "altup.prediction_coefs"),
    (r"altup\.correction_coefs$", "altup.correction_coefs"),
    (r"laurel\.linear_left$", "laurel.left"),
    (r"laurel\.linear_right$", "laurel.right"),
    (r"laurel\.post_laurel_norm$", "laurel.norm"),
)
TOP_MODULES = PLE_TOP_MODULES + (
    (r"altup_projections\.\d+$", "altup.projections"),
    (r"altup_unembed_projections\.\d+$", "altup.unembed_projections"),
)


def _widths(c: Config, n: int) -> list[int]:
    """intermediate_size: one width for every layer, or a list of one per layer (Gemma3nTextConfig)."""
    stated = c.data.get("intermediate_size")
    if not isinstance(stated, list):
        return [c.int("intermediate_size")] * n
    if len(stated) != n or not all(type(w) is int and w > 0 for w in stated):
        raise c.fail("intermediate_size", f"expected one positive width or a list of {n}, one per layer")
    return stated


@family("gemma3n_text", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def gemma3n_text(c: Config) -> dict:
    """Gemma3nTextConfig / Gemma3nTextDecoderLayer: Gemma 3's four RMSNorms a layer, per-head q_norm and k_norm and a
    weightless norm on each value head; attention_bias (default false) on q, k, v and o. layer_types default: four
    sliding-window layers of sliding_window (default 512) to one global. The last num_kv_shared_layers (default 15)
    read the keys and values of the last earlier layer of their type (gemma4.kv_readers: past the depth, the first
    layers make them): no k_proj, v_proj, k_norm or v_norm of their own. Gemma3nTextMLP is GeGLU from
    hidden_activation (default gelu_pytorch_tanh) of intermediate_size (default 16,384; a list gives each layer's);
    its activation sparsity (activation_sparsity_pattern: a Gaussian top-k on the gate) has no parameters and no
    matmul. Per-layer inputs of hidden_size_per_layer_input (default 256) from
    vocab_size_per_layer_input (default 262,144) rows; AltUp over altup_num_inputs (default 4) streams, the active
    one scaled where altup_correct_scale (default true); LAuReL of laurel_rank (default 64). The embedding is scaled
    by √hidden_size; tied embeddings by default (vocab_size default 262,400). The language model of a gemma3n config
    is its text_config read with these defaults."""
    c = c.with_defaults(GEMMA3N_TEXT)
    n = c.int("num_hidden_layers")
    heads, kv, head_dim = c.int("num_attention_heads"), c.int("num_key_value_heads"), c.int("head_dim")
    bias = c.bool("attention_bias", False)
    types = layer_types(c, lambda i: "full_attention" if (i + 1) % 5 == 0 else "sliding_attention")
    size = window(c, 512)
    reads = kv_readers(c, types)
    act = c.activation("hidden_activation", "gelu_pytorch_tanh")
    widths = _widths(c, n)

    def attn(i: int) -> dict:
        out = {
            "n_heads": heads,
            "n_kv_heads": kv,
            "head_dim": head_dim,
            "qkv_bias": bias,
            "o_bias": bias,
            "qk_norm": "head",
            **({"kv_shared": True} if reads[i] else {"v_norm": True}),
        }
        return {**out, "window": size} if types[i] == "sliding_attention" else out

    inputs = per_layer_inputs(c, act)
    if inputs is None:  # Gemma3nTextModel builds them whatever the width: 0 leaves their norms of hidden_size
        raise c.fail("hidden_size_per_layer_input", "expected a positive width (Gemma 3n always has per-layer inputs)")
    layers = [{"attention": attn(i), "ffn": {"kind": "gated", "d_ff": widths[i], "activation": act, "bias": False}} for i in range(n)]
    return {
        **common(c, tie=True, context_default=32_768),
        **stack(layers),
        "norm": rms(per_layer=4),
        "per_layer_inputs": inputs,
        "altup": {"inputs": c.int("altup_num_inputs"), "correct_scale": c.bool("altup_correct_scale", True)},
        "laurel": {"rank": c.int("laurel_rank")},
    }
