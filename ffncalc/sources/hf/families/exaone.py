"""EXAONE 4.0 (LG AI Research)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("exaone4")
def exaone4(c: Config) -> dict:
    """Exaone4Config / Exaone4DecoderLayer, Exaone4Attention: RMSNorms after attention and after the MLP, none
    before, and a final one; an RMSNorm over head_dim shared by the heads on queries and on keys (q_norm,
    k_norm); no biases; head_dim is a stated head_dim or hidden_size / heads; untied by default.
    Without a sliding_window every layer rotates; with one, only the sliding layers do (global NoPE,
    Exaone4Attention). The spec states positions for the whole model: rotary where any layer rotates, none
    where no layer does, so a hybrid's full-attention layers count rotary ops too; no parameter depends on it."""
    data = {**common(c, tie=False), "attention": attention(c, qk_norm="head"), "ffn": gated(c),
            "norm": rms(placement="post")}
    if c.has("sliding_window"):
        types = c.data.get("layer_types")
        pattern = c.data.get("sliding_window_pattern", 4)
        if types is None and isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
            types = ["sliding_attention" if (i + 1) % pattern else "full_attention"  # Exaone4Config
                     for i in range(c.int("num_hidden_layers"))]
        if types is not None and "sliding_attention" not in types:
            data["positions"] = "none"
    return data
