"""dots.llm3 (rednote hilab 2026), the language model of dots3_note: multi-head latent attention with a sigmoid
gate per head, sliding-window layers of their own shape beside layers with DeepSeek-V3.2's indexer, and a
DeepSeek-style mixture after one dense layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, rms, stack
from .deepseek import MLA_MODULES
from .dsa import INDEXER_MODULES

DOTS3_MODULES = ((r"self_attn\.k_rope_only_layernorm$", "attn.k_rope_norm"), (r"self_attn\.g_proj$", "attn.g"))

# Dots3NoteTextConfig.__post_init__: the shape of the sliding-window layers where per_layer_config is not given,
# each from its swa_-prefixed key; qk_rope_head_dim from swa_qk_rope_head_dim, else head_dim - qk_nope_head_dim.
SLIDING = {
    "num_attention_heads": 64,
    "num_key_value_heads": 64,
    "q_lora_rank": 1024,
    "kv_lora_rank": 1024,
    "head_dim": 256,
    "qk_nope_head_dim": 192,
    "v_head_dim": 128,
}
# The keys a layer's attention is built from, and Dots3NoteTextConfig's defaults for them.
GLOBAL = {
    "num_attention_heads": 128,
    "q_lora_rank": 1024,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "attention_bias": False,
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 2048,
}
TYPES = ("indexed_attention", "full_attention", "sliding_attention")


def _layer_types(c: Config, n: int) -> list[str]:
    """layer_types as stated, else the first two layers and every fourth from layer 1 global, the others
    sliding-window (use_sliding_window, default true; all global where false); global layers are
    "indexed_attention" unless use_dsa is false; a stated use_dsa renames the global type either way (by default
    true where per_layer_config is absent, unset where it is given)."""
    use_dsa = c.data.get("use_dsa", None if "per_layer_config" in c.data else True)
    types = c.data.get("layer_types")
    if types is None:
        full = "full_attention" if use_dsa is False else "indexed_attention"
        sliding = c.bool("use_sliding_window", True)
        types = [full if not sliding or i < 2 or i % 4 == 1 else "sliding_attention" for i in range(n)]
    if not isinstance(types, list) or len(types) != n or not set(types) <= set(TYPES):
        raise c.fail("layer_types", f"expected {n} entries, each one of {', '.join(TYPES)}, got {types!r}")
    if use_dsa is not None:
        old, new = ("full_attention", "indexed_attention") if use_dsa else ("indexed_attention", "full_attention")
        types = [new if t == old else t for t in types]
    return types


def _per_layer(c: Config, types: list[str]) -> dict[int, dict]:
    """per_layer_config as stated (keys are layer indices, as numbers or strings), else the sliding-window
    layers' shape from the swa_ keys."""
    stated = c.data.get("per_layer_config")
    if stated is None:
        sliding = {k: c.int(f"swa_{k}", v) for k, v in SLIDING.items()}
        sliding["qk_rope_head_dim"] = c.int("swa_qk_rope_head_dim", sliding["head_dim"] - sliding["qk_nope_head_dim"])
        return {i: sliding for i, t in enumerate(types) if t == "sliding_attention"}
    if not isinstance(stated, dict) or not all(isinstance(v, dict) for v in stated.values()):
        raise c.fail("per_layer_config", "expected a mapping of layer indices to the keys that differ there")
    try:
        return {int(k): v for k, v in stated.items()}
    except ValueError:
        raise c.fail("per_layer_config", f"expected layer indices as keys, got {sorted(stated)!r}") from None


@family("dots3_note_text", layer_modules=DOTS3_MODULES + INDEXER_MODULES + MLA_MODULES + MOE_MODULES)
def dots3_note_text(c: Config) -> dict:
    """Dots3NoteTextConfig / Dots3NoteTextDecoderLayer: Llama's pre-norm layer. Dots3NoteTextAttention is
    DeepseekV2Attention's MLA built from the layer's own keys (per_layer_config over the model's: num_attention_heads
    128, q_lora_rank 1024, always low-rank, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim
    128, attention_bias false on q_a, kv_a and o), with constant scales on the normed latents, an RMSNorm over the
    shared rotary key (k_rope_only_layernorm) and a bias-free g_proj whose sigmoid scales each head's output before
    o. "indexed_attention" layers hold Dots3NoteTextIndexer (index_n_heads 64, index_head_dim 128, index_topk 2048:
    DeepSeek-V3.2's indexer); "sliding_attention" layers attend sliding_window (sliding_window_size; 512)
    positions and, by default, have 64 heads, kv_lora_rank 1024 and qk_nope_head_dim 192. mlp_layer_types (default
    first_k_dense_replace 1, moe_layer_freq 1: one dense layer first): a bias-free MLP of intermediate_size (13824),
    or Dots3NoteTextMoE: a bias-free router (its e_score_correction_bias a buffer) over n_routed_experts (256),
    num_experts_per_tok (8) experts of moe_intermediate_size (1536), and one shared MLP of
    shared_experts_intermediate_size (1536) × n_shared_experts (1)."""
    n = c.int("num_hidden_layers")
    types = _layer_types(c, n)
    per_layer = _per_layer(c, types)
    size = c.int("sliding_window") if c.has("sliding_window") else c.int("sliding_window_size", 512)

    def attention(i: int, kind: str) -> dict:
        layer = Config({**GLOBAL, **c.data, **per_layer.get(i, {})}, c.text, c.source, start=c.start)
        if layer.data.get("q_lora_rank") is None:
            raise c.fail("q_lora_rank", "Dots3NoteTextAttention always builds a low-rank query (q_a_layernorm)")
        out = {
            "kind": "mla",
            "n_heads": layer.int("num_attention_heads"),
            "q_lora_rank": layer.int("q_lora_rank"),
            "kv_lora_rank": layer.int("kv_lora_rank"),
            "qk_nope_head_dim": layer.int("qk_nope_head_dim"),
            "qk_rope_head_dim": layer.int("qk_rope_head_dim"),
            "v_head_dim": layer.int("v_head_dim"),
            "bias": layer.bool("attention_bias", False),
            "head_gate": True,
            "rope_key_norm": True,
            "latent_scale": True,
        }
        if kind == "indexed_attention":
            out.update(
                index_n_heads=layer.int("index_n_heads"),
                index_head_dim=layer.int("index_head_dim"),
                index_topk=layer.int("index_topk"),
            )
        elif kind == "sliding_attention":
            out["window"] = size
        return out

    mlp = c.data.get("mlp_layer_types")
    if mlp is None:
        first, freq = c.int("first_k_dense_replace", 1, positive=False), c.data.get("moe_layer_freq", 1)
        if isinstance(freq, list):
            mlp = ["sparse" if i >= first and i < len(freq) and freq[i] else "dense" for i in range(n)]
        else:
            freq = c.int("moe_layer_freq", 1)
            mlp = ["sparse" if i >= first and i % freq == 0 else "dense" for i in range(n)]
    if not isinstance(mlp, list) or len(mlp) != n or not set(mlp) <= {"dense", "sparse"}:
        raise c.fail("mlp_layer_types", f'expected {n} entries, each "dense" or "sparse", got {mlp!r}')
    shared_width = c.int("shared_experts_intermediate_size", c.int("moe_shared_expert_intermediate_size", 1536))
    shared = c.int("n_shared_experts", 1, positive=False)
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts", 256),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=c.int("moe_intermediate_size", 1536)),
    }
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=shared_width))
    dense = gated(c, width=c.int("intermediate_size", 13824))
    layers = [{"attention": attention(i, t), "ffn": moe if m == "sparse" else dense} for i, (t, m) in enumerate(zip(types, mlp))]
    return {**common(c, tie=False, context_default=524_288), **stack(layers), "norm": rms()}
