"""VaultGemma (Google 2025): Gemma 2's layer without the norms after each sublayer, trained with
differential privacy."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, rms, stack, window


@family("vaultgemma", layer_modules=((r"pre_feedforward_layernorm$", "norms"),))
def vaultgemma(c: Config) -> dict:
    """VaultGemmaConfig / VaultGemmaDecoderLayer: two RMSNorms a layer (input_layernorm before attention,
    pre_feedforward_layernorm before the MLP; none after either), RMSNorm scaling by 1 + w; GeGLU from
    hidden_activation (default gelu_pytorch_tanh); head_dim 256, 8 heads and 4 KV heads by default;
    attention_bias on q/k/v/o (default false); layer_types as stated, else sliding and full in turn
    (VaultGemmaConfig), the sliding ones over sliding_window (default 4096; null: every key); the embedding scaled by
    √hidden_size (a buffer), lm_head tied by default. Soft-capping of scores and logits adds no parameter."""
    bias = c.bool("attention_bias", False)
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % 2 else "full_attention")
    size = window(c, 4096)
    full = attention(c, head_dim=256, qkv_bias=bias, o_bias=bias, kv_heads=4)
    ffn = gated(c, act_key="hidden_activation", act_default="gelu_pytorch_tanh")
    layers = [{"attention": {**full, "window": size} if t == "sliding_attention" and size else full, "ffn": ffn} for t in types]
    return {**common(c, tie=True, context_default=8192), **stack(layers), "norm": rms()}
