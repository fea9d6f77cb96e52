"""One row of figures per model, for tables that compare models. Pure arithmetic."""

from __future__ import annotations

from typing import Any

from .count import tally
from .spec import ModelSpec, MoEFFN

COLUMNS = ["model", "params", "active_params", "embedding_params", "attention_params", "attention_share",
           "ffn_params", "ffn_share", "forward_flops_per_token", "train_flops_per_token", "d_model", "n_layers",
           "heads", "ffn", "d_ff"]


def summarize(spec: ModelSpec, *, model: str, seq_len: int | None = None, convention: str = "exact") -> dict[str, Any]:
    """Totals, the attention and FFN blocks' parameters with their shares (in basis points, so
    every figure stays an integer), FLOPs per token and the shapes."""
    t = tally(spec, convention=convention, seq_len=seq_len)
    attention = sum(r.params for r in t.rows if r.name.startswith("attn."))
    ffn = sum(r.params for r in t.rows if r.name.startswith("ffn."))
    _, _, attn, block = spec.groups()[-1]
    expert = block.expert if isinstance(block, MoEFFN) else block
    return {
        "model": model,
        "params": t.params,
        "active_params": t.active,
        "embedding_params": t.embedding,
        "attention_params": attention,
        "attention_share": 10_000 * attention // t.params,
        "ffn_params": ffn,
        "ffn_share": 10_000 * ffn // t.params,
        "forward_flops_per_token": t.flops_per_token,
        "train_flops_per_token": t.train_flops // t.tokens,
        "d_model": spec.d_model,
        "n_layers": spec.n_layers,
        "heads": f"{attn.n_heads}/{attn.kv_heads}",
        "ffn": block.variant,
        "d_ff": expert.width(spec.d_model),
        "seq_len": t.seq_len,
        "convention": convention,
    }
