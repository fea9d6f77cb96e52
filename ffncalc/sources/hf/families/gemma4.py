"""Gemma 4 (Google DeepMind 2026): sliding-window and global layers of different head sizes and KV heads, keys
that are the values on the global layers, keys and values read from earlier layers by the last ones, a
dense FFN beside a mixture of experts in the MoE models, and per-layer inputs in E2B and E4B."""

from __future__ import annotations

from ..config import Config, common, family, layer_types, rms, stack, window

# Gemma4TextConfig's defaults (transformers 5.23): a Gemma 4 text_config states only what differs from them.
GEMMA4_TEXT = {
    "vocab_size": 262_144,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 30,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131_072,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "sliding_window": 512,
    "hidden_size_per_layer_input": 256,
    "vocab_size_per_layer_input": 262_144,
    "attention_k_eq_v": False,
    "num_kv_shared_layers": 0,
    "enable_moe_block": False,
    "use_double_wide_mlp": False,
}

# Per-layer inputs (parts/per_layer_inputs.py), as Gemma 3n and Gemma 4 name them.
PLE_LAYER_MODULES = (
    (r"per_layer_input_gate$", "ple.gate"),
    (r"per_layer_projection$", "ple.proj"),
    (r"post_per_layer_input_norm$", "ple.norm"),
)
PLE_TOP_MODULES = (
    (r"embed_tokens_per_layer$", "ple.embed"),
    (r"per_layer_model_projection$", "ple.projection"),
    (r"per_layer_projection_norm$", "ple.projection_norm"),
)

LAYER_MODULES = PLE_LAYER_MODULES + (
    (r"feedforward_layernorm_\d$", "ffn.norms"),  # the MoE layers' three extra norms
    (r"^router\.proj$", "ffn.router"),
    (r"^router$", "ffn.router_scale+expert_scale"),  # Gemma4TextRouter.scale and .per_expert_scale
    (r"^experts$", "ffn.experts"),  # Gemma4TextExperts: fused gate_up_proj and down_proj
)


def _overrides(c: Config, n: int) -> dict[int, dict] | None:
    """A stated per_layer_config: layer index -> the keys that differ there (head_dim, num_key_value_heads); None
    where the file leaves the key out. Gemma4TextConfig.__post_init__ derives its own only then: a stated one, even
    empty or null, leaves every layer not in it at head_dim and num_key_value_heads."""
    if "per_layer_config" not in c.data:
        return None
    stated = c.data["per_layer_config"]
    if stated is None:  # PreTrainedConfig: no per-layer overrides at all
        return {}
    if not isinstance(stated, dict) or not all(isinstance(v, dict) for v in stated.values()):
        raise c.fail("per_layer_config", f"expected an object of per-layer objects, got {stated!r}")
    out = {}
    for key, value in stated.items():
        try:
            index = int(key)
        except ValueError:
            raise c.fail("per_layer_config", f"expected layer indices as keys, got {key!r}") from None
        if not 0 <= index < n:  # HeterogeneousConfigMixin's _validate_layer_indices
            raise c.fail("per_layer_config", f"layer {key}: expected an index below num_hidden_layers ({n})")
        other = sorted(set(value) - {"head_dim", "num_key_value_heads"})
        if other:
            raise c.fail("per_layer_config", f"layer {key}: only head_dim and num_key_value_heads are read, not {', '.join(other)}")
        wrong = next((k for k, v in value.items() if type(v) is not int or v <= 0), None)
        if wrong is not None:
            raise c.fail("per_layer_config", f"layer {key}: {wrong}: expected a positive integer, got {value[wrong]!r}")
        out[index] = value
    return out


def _head_shapes(c: Config, types: list[str], k_eq_v: bool) -> list[tuple[int, int]]:
    """Each layer's (head_dim, num_key_value_heads), as Gemma4TextAttention reads them from
    config.per_layer_config[layer_idx]."""
    head_dim, kv = c.int("head_dim"), c.int("num_key_value_heads")
    overrides = _overrides(c, len(types))
    if overrides is None:  # Gemma4TextConfig: every global layer takes global_head_dim and, with K = V, its KV heads
        glob = {"head_dim": c.int("global_head_dim", 512)}
        if k_eq_v and c.has("num_global_key_value_heads"):
            glob["num_key_value_heads"] = c.int("num_global_key_value_heads")
        overrides = {i: glob for i, t in enumerate(types) if t == "full_attention"}
    shapes = [
        (overrides.get(i, {}).get("head_dim", head_dim), overrides.get(i, {}).get("num_key_value_heads", kv))
        for i in range(len(types))
    ]
    for kind in sorted(set(types)):  # Gemma4TextRotaryEmbedding reads config.per_layer_config[layer_type]
        if len({shape for shape, t in zip(shapes, types) if t == kind}) > 1:
            raise c.fail(
                "per_layer_config",
                f"the {kind} layers differ in head_dim or num_key_value_heads (transformers builds one rotary table a layer type)",
            )
    return shapes


def kv_readers(c: Config, types: list[str]) -> list[bool]:
    """Which layers read the keys and values of an earlier layer (Gemma4TextConfig.kv_sharing_modes "reuse", and
    Gemma3nTextConfig's, the same rule): the layers from n - num_kv_shared_layers on, but the last layer of each type
    before that index, which makes them ("store"). Its index is read as Python reads one, so where
    num_kv_shared_layers is n or more the makers are the last of each type among the first 2n - num_kv_shared_layers
    layers and every other layer reads."""
    n, shared = len(types), c.int("num_kv_shared_layers", 0, positive=False)
    if shared < 0:  # kv_sharing_modes: the makers' indices fall past the last layer (IndexError)
        raise c.fail("num_kv_shared_layers", f"expected 0 or more, got {shared}")
    if not shared:
        return [False] * n
    first = n - shared
    makers = types[0:first][::-1]
    if set(makers) != set(types):
        raise c.fail(
            "num_kv_shared_layers", "a layer type that reads shared keys and values has no earlier layer of its type to make them"
        )
    reads = [i >= first for i in range(n)]
    made: dict[str, int] = {}
    for kind in set(types):
        index = (first - 1 - makers.index(kind)) % n  # a negative index, as Python reads it
        reads[index], made[kind] = False, index
    early = next((i for i in range(n) if reads[i] and i < made[types[i]]), None)
    if early is not None:  # Gemma4TextAttention.forward (Gemma 3n's too): shared_kv_states[layer_type] unset: KeyError
        raise c.fail(
            "num_kv_shared_layers",
            f"layer {early} ({types[early]}) would read the keys and values of layer {made[types[early]]}, which comes after it",
        )
    return reads


def per_layer_inputs(c: Config, act: str) -> dict | None:
    """hidden_size_per_layer_input (0: none) and vocab_size_per_layer_input, as Gemma 3n and Gemma 4 read them."""
    width = c.int("hidden_size_per_layer_input", positive=False)
    if not width:
        return None
    return {"width": width, "vocab_size": c.int("vocab_size_per_layer_input"), "activation": act}


def _read(c: Config) -> dict:
    n = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    bias, k_eq_v = c.bool("attention_bias", False), c.bool("attention_k_eq_v", False)
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % 6 else "full_attention")[:]
    types[-1] = "full_attention"  # Gemma4TextConfig forces the last layer global
    size = window(c, 512)
    if c.data.get("use_bidirectional_attention") == "all" and size is not None:
        size = size // 2 + 1  # Gemma4TextConfig.__post_init__
    shapes = _head_shapes(c, types, k_eq_v)
    reads = kv_readers(c, types)
    act = c.activation("hidden_activation", "gelu_pytorch_tanh")
    moe = c.bool("enable_moe_block", False)
    double = c.bool("use_double_wide_mlp", False)

    def ffn(i: int) -> dict:
        width = c.int("intermediate_size") * (2 if double and reads[i] else 1)  # Gemma4TextMLP
        dense = {"kind": "gated", "d_ff": width, "activation": act, "bias": False}
        if not moe:
            return dense
        return {
            "kind": "dense_moe",
            "dense": dense,
            "n_experts": c.int("num_experts"),
            "top_k": c.int("top_k_experts"),
            "expert": {"kind": "gated", "d_ff": c.int("moe_intermediate_size"), "activation": act, "bias": False},
        }

    def attn(i: int) -> dict:
        local, own = types[i] == "sliding_attention", not reads[i]
        out = {
            "n_heads": heads,
            "n_kv_heads": shapes[i][1],
            "head_dim": shapes[i][0],
            "qkv_bias": bias,
            "o_bias": bias,
            "qk_norm": "head",
        }
        out.update({"v_norm": True, "k_eq_v": k_eq_v and not local} if own else {"kv_shared": True})
        return {**out, "window": size} if local else out

    layers = [{"attention": attn(i), "ffn": ffn(i)} for i in range(n)]
    return {
        **common(c, tie=True, context_default=131_072),
        **stack(layers),
        "norm": rms(per_layer=4),
        "per_layer_inputs": per_layer_inputs(c, act),
    }


@family("gemma4_text", layer_modules=LAYER_MODULES, top_modules=PLE_TOP_MODULES)
def gemma4_text(c: Config) -> dict:
    """Gemma4TextConfig / Gemma4TextDecoderLayer: Gemma 3's four RMSNorms a layer and per-head q_norm and
    k_norm, plus a weightless RMS norm on each value head (v_norm); attention_bias (default false) on q, k, v
    and o. layer_types default: five sliding-window layers of sliding_window (default 512) to one global,
    the last layer always global. Global layers take head_dim global_head_dim (default 512); with
    attention_k_eq_v (default false) they have no v_proj (the values are k_proj's output) and
    num_global_key_value_heads KV heads where stated (Gemma4TextConfig's per_layer_config; one stated in the
    file, even empty or null, is read instead: the layers it leaves out keep head_dim and num_key_value_heads).
    The last num_kv_shared_layers (default 0) read the keys and values of the last earlier layer of their type
    (kv_readers: past the depth, the first layers make them): no k_proj, v_proj, k_norm or cache of their own;
    with use_double_wide_mlp their MLP is twice intermediate_size. Gemma4TextMLP is GeGLU from hidden_activation
    (default gelu_pytorch_tanh). With enable_moe_block (default false) each layer also holds Gemma4TextRouter (a
    weightless RMS norm, a learned scale, proj over num_experts, a learned per_expert_scale), top_k_experts of
    num_experts Gemma4TextExperts of moe_intermediate_size, and three more RMSNorms, the two branches added.
    Rotary positions: the full head at every layer (proportional RoPE rotates all of it, its unrotated features
    at frequency zero). The embedding is scaled by √hidden_size and layer_scalar is a buffer; tied embeddings
    by default. Per-layer inputs (hidden_size_per_layer_input, default 256; 0: none) of
    vocab_size_per_layer_input (default 262,144) rows: Gemma4TextModel's embed_tokens_per_layer,
    per_layer_model_projection and per_layer_projection_norm, and each layer's per_layer_input_gate,
    per_layer_projection and post_per_layer_input_norm after its FFN, gated by hidden_activation
    (parts/per_layer_inputs.py). The language model of a gemma4 config is its text_config read with these
    defaults."""
    return _read(c.with_defaults(GEMMA4_TEXT))


# Gemma4UnifiedTextConfig (transformers 5.23): Gemma4TextConfig's defaults but these, and without per-layer inputs
# or a mixture (it deletes their keys, so a config.json that states them builds neither).
UNIFIED_ABSENT = (
    "hidden_size_per_layer_input",
    "vocab_size_per_layer_input",
    "enable_moe_block",
    "num_experts",
    "top_k_experts",
    "moe_intermediate_size",
)
GEMMA4_UNIFIED_TEXT = {
    **{k: v for k, v in GEMMA4_TEXT.items() if k not in UNIFIED_ABSENT},
    "sliding_window": 1024,
    "max_position_embeddings": 262_144,
    "use_bidirectional_attention": "vision",
}


@family("gemma4_unified_text", layer_modules=LAYER_MODULES)
def gemma4_unified_text(c: Config) -> dict:
    """Gemma4UnifiedTextConfig / Gemma4UnifiedTextDecoderLayer: Gemma 4's layers (Gemma4TextAttention and
    Gemma4TextMLP, with K = V global layers, KV shared across the last num_kv_shared_layers and use_double_wide_mlp
    as Gemma 4 reads them) under Gemma 2's four norms, with no per-layer inputs and no mixture whatever the file
    states; sliding_window defaults to 1024, max_position_embeddings to 262,144, use_bidirectional_attention to
    "vision" (image tokens only: the text model's shapes are Gemma 4's). The language model of a gemma4_unified
    config is its text_config read with these defaults."""
    data = {k: v for k, v in c.data.items() if k not in UNIFIED_ABSENT}
    c = Config(
        {**data, "hidden_size_per_layer_input": 0, "enable_moe_block": False},
        c.text,
        c.source,
        start=c.start,
        wrapper=c.wrapper,
        towers=c.towers,
    )
    return _read(c.with_defaults(GEMMA4_UNIFIED_TEXT))


# DiffusionGemmaTextConfig (transformers 5.23): Gemma4TextConfig's defaults, and no keys for per-layer inputs, KV
# sharing, double-wide MLPs, K = V or the mixture's switch: its layers build what these state, whatever the file says.
DIFFUSION_FIXED = {
    "hidden_size_per_layer_input": 0,
    "num_kv_shared_layers": 0,
    "use_double_wide_mlp": False,
    "attention_k_eq_v": True,
    "enable_moe_block": True,
}


@family("diffusion_gemma_text", layer_modules=LAYER_MODULES)
def diffusion_gemma_text(c: Config) -> dict:
    """DiffusionGemmaTextConfig / DiffusionGemmaEncoderTextLayer: Gemma 4's attention with every global layer K = V
    (DiffusionGemmaEncoderTextAttention builds v_proj on the sliding layers alone; num_global_key_value_heads, where
    stated, their KV heads) and Gemma 4's dense MLP beside its router and experts in every layer (built whatever the
    file says: num_experts of moe_intermediate_size, top_k_experts a token), with no per-layer inputs, no KV sharing
    and no double-wide MLP; DiffusionGemmaDecoderTextLayer holds the same parameters. The language model of a
    diffusion_gemma config is its text_config read with Gemma4TextConfig's defaults."""
    data = {**c.data, **DIFFUSION_FIXED}
    c = Config(data, c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers)
    return _read(c.with_defaults(GEMMA4_TEXT))
