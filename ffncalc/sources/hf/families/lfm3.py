"""LFM3 (Liquid AI): LFM2's gated short convolutions interleaved with grouped-query attention layers, global and
sliding-window, each attention head scaled by a sigmoid gate of its own, norms around every sublayer (sandwich),
every layer followed by a SwiGLU MLP, as lfm3 (transformers 5.23.0, models/lfm3)."""

from __future__ import annotations

from ..config import Config, attention, common, family, rms, stack, window

# Lfm3DecoderLayer's modules: conv (Lfm3ShortConv: in_proj, conv, out_proj) or self_attn (q_proj, k_proj, v_proj,
# o_proj, q_norm and k_norm over head_dim, g_proj the per-head gate), feed_forward (Lfm3MLP: w1 the gate, w3 the up
# projection, w2 the down projection), operator_norm, post_operator_norm, ffn_norm and post_ffn_norm. Lfm3Model's
# final norm is named embedding_norm, though it comes last.
LFM3_MODULES = (
    (r"^conv\.in_proj$", "conv.in_proj"),
    (r"^conv\.conv$", "conv.conv"),
    (r"^conv\.out_proj$", "conv.out_proj"),
    (r"^self_attn\.g_proj$", "attn.g"),
    (r"^feed_forward\.w1$", "ffn.gate"),
    (r"^feed_forward\.w3$", "ffn.up"),
    (r"^feed_forward\.w2$", "ffn.down"),
    (r"^(operator_norm|post_operator_norm|ffn_norm|post_ffn_norm)$", "norms"),
)


def layer_types(c: Config) -> list[str]:
    """Lfm3Config.__post_init__: layer_types as stated, or else full attention in layer i where i % 4 == 2, sliding
    attention where i % 4 == 0 and i > 0, and convolution elsewhere. Lfm3DecoderLayer builds Lfm3ShortConv where
    the type is "conv" and Lfm3Attention for any other; only "sliding_attention" layers take the window."""
    n = c.int("num_hidden_layers")
    stated = c.data.get("layer_types")
    if stated is None:
        return ["full_attention" if i % 4 == 2 else "sliding_attention" if i % 4 == 0 and i > 0 else "conv" for i in range(n)]
    if not isinstance(stated, list) or len(stated) != n or not all(isinstance(t, str) for t in stated):
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {stated!r}")
    return stated


@family("lfm3", layer_modules=LFM3_MODULES, top_modules=((r"embedding_norm$", "final_norm"),))
def lfm3(c: Config) -> dict:
    """Lfm3Config / Lfm3DecoderLayer: operator_norm, then Lfm3ShortConv or Lfm3Attention by ``layer_types``, then
    post_operator_norm, ffn_norm, a bias-free SwiGLU Lfm3MLP of intermediate_size (default 7680, not adjusted as
    LFM2's is) and post_ffn_norm; without use_sandwich_norm (default true) the two post norms are identities. The
    attention: num_attention_heads 16, num_key_value_heads 4, head_dim 128, attention_bias (default false) on q, k,
    v and o, q_norm and k_norm over head_dim shared by every head, rotary over the whole head in every attention
    layer (the full layers' proportional RoPE rotates all of it, its unrotated share at frequency zero; the default
    RoPE of the sliding layers reads no partial factor), sliding_window (default 256; null: none) in the sliding
    layers, and with use_attention_gate (default true) g_proj, a bias-free projection to one gate per head whose
    sigmoid scales that head's output. The convolution: kernel conv_L_cache (default 7), conv_bias (default false)
    on in_proj, the convolution and out_proj. A final norm (embedding_norm); lm_head tied unless
    tie_word_embeddings is false. Defaults: vocab 128000, hidden 2048, 24 layers, context 128000."""
    c = c.with_defaults({"vocab_size": 128_000, "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16})
    bias = c.bool("attention_bias", False)
    attn = {"kind": "mha", **attention(c, head_dim=128, qkv_bias=bias, o_bias=bias, qk_norm="head", kv_heads=4)}
    if c.bool("use_attention_gate", True):
        attn.update(softplus_gate="head", gate_activation="sigmoid")
    sliding = {**attn, "window": window(c, 256)}
    if sliding["window"] is None:
        del sliding["window"]
    conv = {"kind": "short_conv", "conv_kernel": c.int("conv_L_cache", 7), "bias": c.bool("conv_bias", False)}
    mlp = {"kind": "gated", "d_ff": c.int("intermediate_size", 7680), "activation": "silu", "bias": False}
    mixers = {"conv": conv, "sliding_attention": sliding}
    layers = [{"attention": mixers.get(t, attn), "ffn": mlp} for t in layer_types(c)]
    norms = 4 if c.bool("use_sandwich_norm", True) else 2
    return {**common(c, tie=True, context_default=128_000), **stack(layers), "norm": rms(per_layer=norms)}
