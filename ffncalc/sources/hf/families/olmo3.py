"""OLMo 3 (Team OLMo 2025): OLMo 2's layer, with sliding-window attention in three layers of four."""

from __future__ import annotations

from ..config import Config, family, layer_types, stack, window
from .olmo import olmo2


@family("olmo3")
def olmo3(c: Config) -> dict:
    """Olmo3Config / Olmo3DecoderLayer, Olmo3Attention: the modules and shapes of Olmo2DecoderLayer (RMSNorms after
    attention and after the MLP, none before; q_norm and k_norm over all heads' width; attention_bias on q/k/v/o,
    default false) and Olmo2Config's defaults for every key they read. layer_types as stated, or
    (Olmo3Config.__post_init__) every fourth layer global and the others sliding over sliding_window (default
    4096; null: every key); the window changes no shape."""
    data = olmo2(c)
    size = window(c, 4096)
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % 4 else "full_attention")
    full, ffn = data.pop("attention"), data.pop("ffn")
    layers = [{"attention": {**full, "window": size} if t == "sliding_attention" else full, "ffn": ffn} for t in types]
    return {**data, **stack(layers)}
