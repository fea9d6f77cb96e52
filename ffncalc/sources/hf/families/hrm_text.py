"""HRM-Text (Sapient 2026; the Hierarchical Reasoning Model, Wang et al. 2025, arXiv:2506.21734): two weight-shared
stacks of decoder layers, a low and a high one, run in cycles on two states, as hrm_text (transformers 5.23.0,
models/hrm_text)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


def per_stack(c: Config) -> int:
    """HrmTextConfig.__post_init__: num_hidden_layers is the layers of one stack until num_layers_per_stack is set,
    after which (as every saved config has it) num_hidden_layers is the inflated total and is not read."""
    if c.has("num_layers_per_stack"):
        return c.int("num_layers_per_stack")
    return c.int("num_hidden_layers", 16)


def stacks(c: Config) -> dict[str, int]:
    """Our index of each transformers stack's first layer: the low stack's first run, the high stack's first run
    after L_cycles runs of the low."""
    return {"L_module": 0, "H_module": c.int("L_cycles", 3) * per_stack(c)}


@family(
    "hrm_text",
    layer_modules=((r"self_attn\.gate_proj$", "attn.g"),),
    top_modules=((r"^model$", "cycles.init"),),  # HrmTextModel holds z_L_init itself
    stacks=stacks,
)
def hrm_text(c: Config) -> dict:
    """HrmTextConfig / HrmTextForCausalLM: two HrmTextStacks (L_module and H_module) of num_layers_per_stack (default
    num_hidden_layers, 16) HrmTextDecoderLayers each, run H_cycles (2) times L_cycles (3) runs of the low stack then
    one of the high: H_cycles · (L_cycles + 1) stack runs (model/reuse.py), each layer run the stack's stored layer
    again. A layer: a weight-free RMSNorm before attention and one before the MLP; HrmTextAttention of
    num_attention_heads (12) heads of head_dim (128), as many key and value heads (num_key_value_heads is not read),
    rotary positions, attention_bias (default false) on q, k, v, o and gate_proj, and gate_proj, a projection of the
    layer's input to one gate per output feature, sigmoid(gate) ⊙ the heads' output before o; a gated MLP
    (HrmTextMLP) of intermediate_size (4096), hidden_act (silu), mlp_bias (false). Each stack run adds the two states
    and ends in a weight-free RMSNorm (HrmTextStack.final_norm), the last the final one; z_L_init, a parameter of
    hidden_size, starts the low state. The embeddings are scaled by embedding_scale (no parameter); lm_head untied
    by default."""
    n, low, high = per_stack(c), c.int("L_cycles", 3), c.int("H_cycles", 2)
    c.depth(n * high * (low + 1), "H_cycles", "(L_cycles + 1)", "layers a stack")  # before the groups are listed
    bias = c.bool("attention_bias", False)  # HrmTextAttention: q/k/v/o and gate_proj, one bias per output each
    attn = {
        **attention(c, head_dim=128, qkv_bias=bias, o_bias=bias),
        "n_kv_heads": c.int("num_attention_heads"),
        "softplus_gate": "element",
        "gate_activation": "sigmoid",
        "gate_proj_bias": bias,
    }
    groups = []
    for h in range(high):
        groups += [{"repeat": n, "name": "low"} if h == i == 0 else {"repeat": n, "reuses": "low"} for i in range(low)]
        groups.append({"repeat": n, "name": "high"} if h == 0 else {"repeat": n, "reuses": "high"})
    return {
        **common(c, tie=False),
        "n_layers": n * high * (low + 1),
        "attention": attn,
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "layers": groups,
        "norm": rms(affine=False, final=False),
        "cycles": {"stack": n, "low": low, "high": high},
    }
