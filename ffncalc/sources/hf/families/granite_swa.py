"""Granite with sliding-window attention (IBM): Granite's layer with a learned sink per head, sliding-window
layers between full ones and a rotary base per layer (0: none)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, rms, stack, window


@family("granite_swa", layer_modules=((r"self_attn$", "attn.sinks"),))
def granite_swa(c: Config) -> dict:
    """GraniteSWAConfig / GraniteSWADecoderLayer, GraniteSWAAttention, GraniteSWAMLP: Llama's pre-norm layer;
    attention_bias on q/k/v/o and mlp_bias on gate/up/down (both default false); one learned sink logit per
    head (GraniteSWAAttention.sinks) in every layer; 4 KV heads when absent (null: one per query head); head_dim
    a stated head_dim or hidden_size / heads; layer_types as stated, else every fourth layer full from the first
    and the others sliding (GraniteSWAConfig), over sliding_window (default 128; null: every key);
    layer_rope_theta gives each layer its rotary base, 0 for none (default: rope_theta for every layer; entries past
    the depth unused); tied
    by default; a context of 8192. embedding_multiplier, residual_multiplier, attention_multiplier and
    logits_scaling are scalars, not parameters."""
    bias = c.bool("attention_bias", False)
    full = {**attention(c, qkv_bias=bias, o_bias=bias, kv_heads=4), "sinks": True}
    size = window(c, 128)
    types = layer_types(c, lambda i: "full_attention" if i % 4 == 0 else "sliding_attention")
    n = c.int("num_hidden_layers")
    thetas = c.data.get("layer_rope_theta")
    if thetas is None:
        thetas = [1] * n
    # GraniteSWAModel.forward reads layer_rope_theta[i] for each of its layers: entries past the depth are unused
    # (a file keeps the list's length when the depth shrinks), too few fail the forward
    elif (
        not isinstance(thetas, list)
        or len(thetas) < n
        or not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in thetas)
    ):
        raise c.fail("layer_rope_theta", f"expected a list of at least {n} rotary bases (0: no rotary), got {thetas!r}")
    ffn = gated(c, bias=c.bool("mlp_bias", False))
    layers = []
    for t, theta in zip(types, thetas):
        attn = {**full, "window": size} if t == "sliding_attention" and size else dict(full)
        if not theta:  # GraniteSWAModel passes no position embeddings to a layer whose base is 0
            attn["rope"] = False
        layers.append({"attention": attn, "ffn": ffn})
    return {**common(c, tie=True, context_default=8192), **stack(layers), "norm": rms()}
