"""One row of figures per model, for tables that compare models. Pure arithmetic."""

from __future__ import annotations

from typing import Any

from ..model.stack import Model
from .count import plain, tally

COLUMNS = [
    "model",
    "params",
    "active_params",
    "embedding_params",
    "attention_params",
    "attention_share",
    "ffn_params",
    "ffn_share",
    "forward_flops_per_token",
    "train_flops_per_token",
    "d_model",
    "n_layers",
    "heads",
    "ffn",
    "d_ff",
]


def summarize(spec: Model, *, model: str, seq_len: int | None = None, convention: str = "exact") -> dict[str, Any]:
    """Totals, the attention and FFN blocks' parameters with their shares (in basis points, so
    every figure stays an integer), FLOPs per token and the shapes. Where layers differ, a shape lists each
    distinct value with the number of layers that have it, in order of first appearance."""
    t = tally(spec, convention=convention, seq_len=seq_len)
    attention = sum(r.params for r in t.rows if r.slot == "attention")
    ffn = sum(r.params for r in t.rows if r.slot == "ffn")
    facts = _facts(spec)
    return {
        "model": model,
        "params": t.params,
        "active_params": t.active,
        "embedding_params": t.embedding,
        "attention_params": attention,
        "attention_share": 10_000 * attention // t.params,
        "ffn_params": ffn,
        "ffn_share": 10_000 * ffn // t.params,
        "forward_flops_per_token": plain(t.flops_per_token),
        "train_flops_per_token": t.train_flops // t.tokens,
        "d_model": spec.d_model,
        "n_layers": spec.n_layers,
        "heads": facts["heads"],
        "ffn": facts["ffn"],
        "d_ff": facts["d_ff"],
        "seq_len": t.seq_len,
        "convention": convention,
    }


def _facts(spec: Model) -> dict[str, object]:
    """Per layer: the FFN block's name, and the heads and d_ff its blocks state (None where a block states
    none). A value where every layer agrees, else a list of [layers, value] pairs in order of first
    appearance (exact integers stay integers)."""
    seen: dict[str, dict[object, int]] = {"heads": {}, "ffn": {}, "d_ff": {}}
    for layer in spec.layers:
        facts = {**layer.attention.facts(), **layer.ffn.facts(), "ffn": layer.ffn.describe()}
        for key, counts in seen.items():
            value = facts.get(key)
            counts[value] = counts.get(value, 0) + 1
    return {key: next(iter(counts)) if len(counts) == 1 else [[n, v] for v, n in counts.items()] for key, counts in seen.items()}
