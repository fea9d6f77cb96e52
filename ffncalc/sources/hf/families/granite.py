"""IBM Granite mixtures (GraniteMoe, GraniteMoeShared; Granite 3.0/3.1) and the sliding-window Granite mixture
with attention sinks (GraniteMoeSWA)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window

# GraniteMoeMoE names its router block_sparse_moe.router; GraniteMoeSharedMLP is shared_mlp (input_linear
# holds gate and up, output_linear is down).
GRANITE_MODULES = ((r"block_sparse_moe\.router$", "ffn.router"), (r"shared_mlp\.", "ffn.shared"))
# GraniteMoeSWAAttention's sinks are a parameter of self_attn itself.
SINK_MODULES = ((r"self_attn$", "attn.sinks"),)


def _granite_moe(c: Config) -> dict:
    """GraniteMoe(Shared)DecoderLayer: Llama's pre-norm layer whose MLP is GraniteMoeMoE: a bias-free
    router (GraniteMoeTopKRouter.weight) over num_local_experts (default 8) SwiGLU experts of
    intermediate_size (default 11008), fused as 3-D gate_up_proj and down_proj tensors (GraniteMoeExperts),
    num_experts_per_tok (default 2) per token. embedding_multiplier, attention_multiplier,
    residual_multiplier and logits_scaling are constant scalars, not parameters."""
    bias = c.bool("attention_bias", False)
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_local_experts", 8),
        "top_k": c.int("num_experts_per_tok", 2),
        "expert": gated(c, width=c.int("intermediate_size", 11008)),
    }
    return {**common(c, tie=False), "attention": attention(c, qkv_bias=bias, o_bias=bias), "norm": rms(), "ffn": moe}


def _shared(c: Config, moe: dict) -> dict:
    """GraniteMoeSharedDecoderLayer: a bias-free SwiGLU GraniteMoeSharedMLP of shared_intermediate_size
    (default 0: none) beside the mixture, its output added to the mixture's."""
    width = c.int("shared_intermediate_size", 0, positive=False)
    return {**moe, "n_shared_experts": 1, "shared": gated(c, width=width)} if width else moe


def _swa(c: Config, data: dict) -> dict:
    """GraniteMoeSWAAttention: the attention above with one learned sink logit per head (sinks); layer i is
    sliding (window sliding_window, default 128; null: every key) or full by layer_types, by default full
    where i % 4 == 0; a layer whose layer_rope_theta entry is 0 takes no rotary positions (NoPE); entries past the
    depth are unused."""
    size = window(c, 128)
    types = layer_types(c, lambda i: "full_attention" if i % 4 == 0 else "sliding_attention")
    thetas = c.data.get("layer_rope_theta")
    n = len(types)
    # GraniteMoeSWAModel.forward reads layer_rope_theta[i] for each of its layers: entries past the depth are
    # unused (a file keeps the list's length when the depth shrinks), too few fail the forward
    if thetas is not None and (
        not isinstance(thetas, list)
        or len(thetas) < n
        or not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in thetas)
    ):
        raise c.fail("layer_rope_theta", f"expected a list of at least {n} rotary bases (0: no rotary), got {thetas!r}")
    full = {**data["attention"], "sinks": True}
    layers = []
    for i, t in enumerate(types):
        attn = {**full, "window": size} if t == "sliding_attention" and size is not None else dict(full)
        if thetas is not None and not thetas[i]:
            attn["rope"] = False
        layers.append({"attention": attn, "ffn": data["ffn"]})
    return {**{k: v for k, v in data.items() if k not in ("attention", "ffn")}, **stack(layers)}


@family("granitemoe", layer_modules=GRANITE_MODULES + MOE_MODULES)
def granitemoe(c: Config) -> dict:
    """GraniteMoeConfig / GraniteMoeAttention: q/k/v/o bias from attention_bias (default false)."""
    return _granite_moe(c)


@family("granitemoeshared", layer_modules=GRANITE_MODULES + MOE_MODULES)
def granitemoeshared(c: Config) -> dict:
    """GraniteMoeSharedConfig / GraniteMoeSharedDecoderLayer: GraniteMoe's layer and the shared MLP above."""
    data = _granite_moe(c)
    return {**data, "ffn": _shared(c, data["ffn"])}


@family("granitemoe_swa", layer_modules=SINK_MODULES + GRANITE_MODULES + MOE_MODULES)
def granitemoe_swa(c: Config) -> dict:
    """GraniteMoeSWAConfig / GraniteMoeSWADecoderLayer: GraniteMoeShared's layer (its defaults) with the
    sliding-window attention above."""
    data = _granite_moe(c)
    return _swa(c, {**data, "ffn": _shared(c, data["ffn"])})
