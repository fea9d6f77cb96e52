"""NeoMME (H Company 2026): a bidirectional encoder of text and image patches, a factorised token table projected to
hidden_size and back through the same projection before the tied head, value embeddings added in its first and last
full-attention layers, exclusive self-attention with a sigmoid output gate, and initial-state mixing."""

from __future__ import annotations

from ..config import Config, attention, common, family, layer_types, rms, stack, window

MODULES = (
    (r"self_attn\.output_projection\.gate_proj$", "attn.g"),
    (r"self_attn\.output_projection\.o_proj$", "attn.o"),
    (r"self_attn\.exclusive_self_attention$", "attn.alpha"),
    (r"^lambdas$", "initial_mix.lambdas"),
)
TOP_MODULES = (
    (r"embed_tokens\.word_embeddings$", "embed"),
    (r"embed_tokens\.embedding_projection$", "embed.project_in+project_out"),
    # untied (tie_word_embeddings false): the head's own projection, d -> embedding_rank as hidden_states @ its weight
    (r"unembedding_projection$", "embed.project_in+project_out"),
    (r"patch_embeddings\.norm$", "patch_stem.norm"),
    (r"patch_embeddings\.up_proj$", "patch_stem.up"),
    (r"patch_embeddings\.down_proj$", "patch_stem.down"),
    (r"value_embeddings$", "value_embeddings"),
)
# NeoMMEConfig: default_theta's and default_partial_rotary_factor's layer types; default_long_sliding_window
ROTARY = {"full_attention": 0.25, "sliding_attention": 1.0}
LONG_WINDOW = 1024


def windows(c: Config, types: list[str]) -> list[int | None]:
    """Each layer's window, |i − j| ≤ w (create_bidirectional_sliding_window_mask with the layer's config): its
    per_layer_config sliding_window where the file states per_layer_config (a layer it leaves out: sliding_window,
    default 256), else as NeoMMEConfig.__post_init__ derives it: none in the full-attention layers, and the sliding
    layers alternating sliding_window and 1024 by their own index (the second, fourth, … 1024)."""
    size = window(c, 256)
    stated = c.data.get("per_layer_config")
    if stated is None:
        out, k = [], 0
        for t in types:
            out.append(None if t == "full_attention" else LONG_WINDOW if k % 2 else size)
            k += t != "full_attention"
        return out
    if not isinstance(stated, dict):
        raise c.fail("per_layer_config", f"expected an object of layer overrides, got {stated!r}")
    overrides: dict[int, int | None] = {}
    for key, value in stated.items():
        index = int(key) if isinstance(key, str) and key.isdigit() else key
        if not isinstance(index, int) or not 0 <= index < len(types) or not isinstance(value, dict):
            raise c.fail("per_layer_config", f"expected layer indices below {len(types)}, each an object, got {key!r}")
        if set(value) - {"sliding_window"}:
            other = sorted(set(value) - {"sliding_window"})[0]
            raise c.fail("per_layer_config", f"layer {key}: only sliding_window is read per layer, not {other}")
        w = value.get("sliding_window", size)
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w <= 0):
            raise c.fail("per_layer_config", f"layer {key}: sliding_window must be a positive integer or null, got {w!r}")
        overrides[index] = w
    return [overrides.get(i, size) for i in range(len(types))]


def rotary(c: Config, kind: str, head_dim: int) -> int:
    """int(head_dim · partial_rotary_factor) of the layer type's rope_parameters (NeoMMEConfig's default: 0.25 in the
    full-attention layers, 1.0 in the sliding ones)."""
    stated = c.data.get("rope_parameters") or {}
    params = stated.get(kind) if isinstance(stated, dict) else None
    factor = (params or {}).get("partial_rotary_factor", ROTARY[kind]) if isinstance(params, dict) or params is None else None
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise c.fail("rope_parameters", f"{kind}: expected a partial_rotary_factor above 0 and at most 1, got {factor!r}")
    return int(head_dim * factor)


@family("neomme", layer_modules=MODULES, top_modules=TOP_MODULES)
def neomme(c: Config) -> dict:
    """NeoMMEConfig / NeoMMEForMaskedLM (H Company 2026, NeoMME): NeoMMEEmbeddings, a table of embedding_rank (256)
    columns and a bias-free projection to hidden_size (1024), then embedding_norm, an RMSNorm without a weight;
    NeoMMEPatchEmbeddings, a LayerNorm over 3·patch_size² (32) values, up_proj to 2·hidden_size, GELU, down_proj with
    a bias (its parameters counted: a forward over tokens does not run it, and images are not charged).
    num_hidden_layers (17) NeoMMEEncoderLayers: lambdas mixing the residual with the normalised embeddings before
    input_layernorm, each sublayer's output times residual_multiplier (default 1/√(2·layers)), two RMSNorms without
    weights. NeoMMEAttention: q (num_attention_heads, 16), k and v (num_key_value_heads, 4) of head_dim (64), biases
    where attention_bias; q_norm and k_norm, RMSNorms of head_dim without weights; rotary positions over int(head_dim
    · partial_rotary_factor) of each head (0.25 in full-attention layers, 1.0 in sliding ones); layer_types default
    every sixth layer and the last full_attention; windows as per_layer_config states them; value_embeddings, a table
    of num_key_value_heads·head_dim columns, added to the values of the first and last full-attention layers;
    NeoMMEExclusiveSelfAttention, a per-head alpha; NeoMMESigmoidGatedProjection, a bias-free gate_proj of the layer's
    input, sigmoid(gate) ⊙ the heads' output, o_proj with a bias where attention_bias. NeoMMEMLP: up_proj, relu2,
    down_proj, biases where mlp_bias, intermediate_size (3584). final_norm without a weight; the head, hidden_states @
    unembedding_projection.weight then lm_head over the vocabulary (131072), both tied (to the embedding projection
    and to the table) where tie_word_embeddings (default true), each its own otherwise (_tied_weights_keys)."""
    n = c.int("num_hidden_layers")
    bias = c.bool("attention_bias", False)
    types = layer_types(c, lambda i: "full_attention" if (i + 1) % 6 == 0 or i == n - 1 else "sliding_attention")
    if set(types) - set(ROTARY) or "full_attention" not in types:
        raise c.fail("layer_types", f"expected full_attention and sliding_attention, at least one full, got {types!r}")
    base = {
        **attention(c, head_dim=64, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "kind": "exclusive",
        "qk_norm_affine": False,
        "softplus_gate": "element",
        "gate_activation": "sigmoid",
    }
    sizes = windows(c, types)

    def attn(kind: str, size: int | None) -> dict:
        out = {**base, "rotary_dim": rotary(c, kind, base["head_dim"])}
        return {**out, "window": size} if size is not None else out

    mlp_bias = c.bool("mlp_bias", False)
    ffn = {"kind": "dense", "d_ff": c.int("intermediate_size"), "activation": c.activation("hidden_act", "relu2"), "bias": mlp_bias}
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    rank = c.int("embedding_rank")
    # residual_multiplier: NeoMMEConfig's default 1/√(2·layers) where null or absent; finite and positive
    residual = c.float("residual_multiplier", (2 * n) ** -0.5)
    if residual <= 0:
        raise c.fail("residual_multiplier", f"must be positive, got {residual!r}")
    return {
        **common(c, tie=True, context_default=16384),
        **stack([{"attention": attn(t, w), "ffn": ffn} for t, w in zip(types, sizes)]),
        "mask": "bidirectional",
        "norm": rms(affine=False),
        "embedding_norm": True,
        "embedding_norm_affine": False,
        "embedding": {"width": rank, "tied_projection": c.bool("tie_word_embeddings", True)},
        "patch_stem": {"patch": c.int("patch_size", 32)},
        "value_embeddings": {"width": base["n_kv_heads"] * base["head_dim"], "layers": sorted({full[0], full[-1]})},
        "initial_mix": {"residual": residual},
    }
