"""ERNIE 4.5-VL's language model (Baidu 2025): ERNIE 4.5 MoE's layers with modality-isolated experts, as
ernie4_5_vl_moe_text."""

from __future__ import annotations

from ..config import Config, common, family, gated, layer_groups, rms
from .ernie4_5_moe import ernie_attention

# Ernie4_5_VLMoeMoeBlock: text_moe and vision_moe, each an Ernie4_5_VLMoeSparseMoeBlock (gate: the router and, inside
# it, moe_statics; experts: the fused 3-D experts), and shared_experts
ERNIE_VL_MODULES = (
    (r"mlp\.text_moe\.gate\.moe_statics$", "ffn.correction_bias"),
    (r"mlp\.vision_moe\.gate\.moe_statics$", "ffn.vision_correction_bias"),
    (r"mlp\.text_moe\.gate$", "ffn.router"),
    (r"mlp\.vision_moe\.gate$", "ffn.vision_router"),
    (r"mlp\.text_moe\.experts\b", "ffn.experts"),
    (r"mlp\.vision_moe\.experts\b", "ffn.vision_experts"),
    (r"mlp\.shared_experts\b", "ffn.shared"),
)


def _widths(c: Config) -> tuple[int, int]:
    """moe_intermediate_size: the text and the vision experts' widths (Ernie4_5_VLMoeTextConfig's default [1536, 512])."""
    value = c.data.get("moe_intermediate_size")
    value = [1536, 512] if value is None else value
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise c.fail(
            "moe_intermediate_size", f"expected the text and the vision experts' widths, two positive integers, got {value!r}"
        )
    return value[0], value[1]


def _kinds(c: Config, n: int) -> list[str]:
    """mlp_layer_types as stated, else the config class's: the first layer dense, the rest sparse."""
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:
        return ["dense"] + ["sparse"] * (n - 1)
    if not isinstance(kinds, list) or len(kinds) != n or any(k not in ("dense", "sparse") for k in kinds):
        raise c.fail("mlp_layer_types", f'expected {n} entries, each "dense" or "sparse", got {kinds!r}')
    return kinds


@family("ernie4_5_vl_moe_text", layer_modules=ERNIE_VL_MODULES)
def ernie4_5_vl_moe_text(c: Config) -> dict:
    """Ernie4_5_VLMoeTextConfig / Ernie4_5_VLMoeDecoderLayer: ERNIE 4.5 MoE's pre-norm layer (RMSNorms; its attention,
    families/ernie4_5_moe.py, with use_bias on q, k, v and o); its 3-D rotary positions (mrope) hold no parameters.
    Layer i is an Ernie4_5_VLMoeMoeBlock where mlp_layer_types[i] is "sparse" (default: every layer but the first),
    else an Ernie4_5_VLMoeMLP of intermediate_size (use_bias). The block: text_moe and vision_moe, each a bias-free
    router (Ernie4_5_VLMoeMoeTopKRouter.weight, moe_num_experts × hidden_size; alias num_experts), its moe_statics (a
    score correction of 1 × moe_num_experts held as a parameter) and moe_num_experts SwiGLU experts fused as 3-D
    tensors without biases, of moe_intermediate_size[0] (text) and moe_intermediate_size[1] (vision); moe_k (default
    6; alias num_experts_per_tok) per token; and shared_experts, one Ernie4_5_VLMoeMLP of moe_num_shared_experts
    (default 2) × moe_intermediate_size[0] with use_bias. Text tokens run the text mixture, image and video tokens
    the vision mixture (blocks/isolated_moe.py). Ernie4_5_VLMoeForConditionalGeneration's lm_head has no bias; tied
    by default."""
    n = c.int("num_hidden_layers")
    bias = c.bool("use_bias", False)
    text, vision = _widths(c)
    experts = c.int("num_experts" if c.has("num_experts") else "moe_num_experts", 64)
    top_k = c.int("num_experts_per_tok" if c.has("num_experts_per_tok") else "moe_k", 6)
    moe = {
        "kind": "isolated_moe",
        "n_experts": experts,
        "top_k": top_k,
        "expert": gated(c, width=text),
        "vision_expert": gated(c, width=vision),
        "correction_bias": True,
    }
    shared = c.int("moe_num_shared_experts", 2, positive=False)
    if shared:
        moe.update(n_shared_experts=1, shared=gated(c, width=shared * text, bias=bias))
    kinds = _kinds(c, n)
    dense = gated(c, bias=bias, width=c.int("intermediate_size", 12288)) if "dense" in kinds else None
    ffn, layers = layer_groups(kinds, {"sparse": moe, "dense": dense})
    return {
        **common(c, tie=True, context_default=131_072),
        "attention": ernie_attention(c, "Ernie4_5_VLMoeTextAttention"),
        "ffn": ffn,
        **({"layers": layers} if layers else {}),
        "norm": rms(),
    }
