"""xLSTM 7B (Beck et al. 2025, arXiv:2503.13427; transformers 5.23.0, models/xlstm): mLSTM blocks, each followed by a
gated MLP."""

from __future__ import annotations

from ..config import Config, family

XLSTM_MODULES = (
    *(
        (rf"mlstm_layer\.{name}$", f"mlstm.{name}")
        for name in ("q", "k", "v", "ogate_preact", "igate_preact", "fgate_preact", "out_proj", "multihead_norm")
    ),
    (r"ffn\.proj_up_gate$", "ffn.gate"),
    (r"ffn\.proj_up$", "ffn.up"),
    (r"ffn\.proj_down$", "ffn.down"),
    (r"norm_(mlstm|ffn)$", "norms"),
)


def round_up(x: float, multiple: int) -> int:
    """xLSTM's round_up_to_next_multiple_of, in the same floating point: ((x + m − 1) // m) · m."""
    return int(((x + multiple - 1) // multiple) * multiple)


@family("xlstm", layer_modules=XLSTM_MODULES, top_modules=((r"embeddings$", "embed"), (r"out_norm$", "final_norm")))
def xlstm(c: Config) -> dict:
    """xLSTMConfig / xLSTMBlock (transformers' own modules, without the external xlstm package): norm_mlstm, the
    mLSTM layer (xLSTMLayer: q and k of int(hidden_size · qk_dim_factor) (default 0.5), v and ogate_preact of
    int(hidden_size · v_dim_factor) (default 1), igate_preact and fgate_preact of num_heads (default 8) with biases,
    the per-head LayerNorm with one weight over v_dim, out_proj; use_bias (default false) on all the others, the
    per-head norm's bias included), norm_ffn and a SwiGLU MLP (xLSTMFeedForward: proj_up_gate, proj_up and
    proj_down of round_up(hidden_size · ffn_proj_factor, ffn_round_up_to_multiple_of), defaults 2.667 and 64, biases
    with use_bias). RMSNorms with a weight (and a bias with use_bias) before each sublayer, out_norm at the end
    (weight only); num_blocks blocks (num_hidden_layers where it is null; xLSTMCache holds num_hidden_layers
    states, so a cached forward fails where num_blocks is the larger), embedding_dim standing in for hidden_size
    where that is null; lm_head untied, even with tie_word_embeddings. weight_mode "single" (default); "fused"
    projections are not read. xLSTM states no context length: 2048 is only the default --seq-len, never a limit."""
    if c.data.get("weight_mode", "single") != "single":
        raise c.fail("weight_mode", 'only weight_mode "single" is read (fused projections are not)')
    d = c.int("hidden_size", None) or c.int("embedding_dim", 4096)
    if c.int("embedding_dim", d) != d:
        raise c.fail("embedding_dim", f"an embedding of {c.int('embedding_dim')} beside hidden_size {d} builds no model")
    # xLSTMModel builds num_blocks blocks (xLSTMConfig.__post_init__: num_hidden_layers where it is null)
    n = c.int("num_blocks", None) or c.int("num_hidden_layers", 32)
    bias = c.bool("use_bias", False)
    heads = c.int("num_heads", 8)
    mlstm = {
        "kind": "mlstm",
        "n_heads": heads,
        "bias": bias,
        "qk_dim": int(d * c.float("qk_dim_factor", 0.5)),
        "v_dim": int(d * c.float("v_dim_factor", 1.0)),
        "chunk_size": c.int("chunk_size", 64),
    }
    width = round_up(d * c.float("ffn_proj_factor", 2.667), c.int("ffn_round_up_to_multiple_of", 64))
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 50304),
        "d_model": d,
        "n_layers": n,
        "context_length": 2048,
        "positions": "none",
        # xLSTMForCausalLM states no _tied_weights_keys: its lm_head is its own whatever tie_word_embeddings says
        "tie_embeddings": False,
        "attention": mlstm,
        "ffn": {"kind": "gated", "d_ff": width, "activation": "silu", "bias": bias},
        # xLSTMBlock's norm_mlstm and norm_ffn have a bias with use_bias; xLSTMModel's out_norm never has one
        "norm": {"kind": "rmsnorm", "per_layer": 2, "final": True, "layer_bias": bias},
    }
