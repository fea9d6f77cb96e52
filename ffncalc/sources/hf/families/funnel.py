"""Funnel Transformer (Dai et al. 2020): an encoder whose blocks pool the sequence by 2, relative-shift attention, and a
decoder that upsamples it back to every token for the masked-LM head."""

from __future__ import annotations

from ..config import Config, family

# the layer's modules, inside decoder.layers.N and inside encoder.blocks.B.L (named as model-level ones there)
MODULES = (
    (r"attention\.q_head$", "attn.q"),
    (r"attention\.k_head$", "attn.k"),
    (r"attention\.v_head$", "attn.v"),
    (r"attention\.post_proj$", "attn.o"),
    (r"(attention|ffn)\.layer_norm$", "norms"),
    (r"attention$", "attn.rel"),  # r_w_bias, r_r_bias, r_kernel, r_s_bias and seg_embed, held by the attention itself
    (r"ffn\.linear_1$", "ffn.up"),
    (r"ffn\.linear_2$", "ffn.down"),
)
TOP_MODULES = (
    (r"embeddings\.word_embeddings$", "embed"),
    (r"embeddings\.layer_norm$", "embed_norm"),
    (r"lm_head$", "lm_head"),
) + MODULES
# the values each option takes in transformers' other forms, which are not read yet
READ = {"attention_type": "relative_shift", "separate_cls": True, "truncate_seq": True, "pool_q_only": True}


@family("funnel", layer_modules=MODULES, top_modules=TOP_MODULES, model_stacks=((r"encoder\.blocks\.\d+\.", "encoder."),))
def funnel(c: Config) -> dict:
    """FunnelConfig / FunnelForMaskedLM: FunnelEmbeddings' word table (vocab_size 30522 × d_model 768, no position or
    token-type table) and its LayerNorm; FunnelEncoder's blocks of block_sizes ([4, 4, 4]) FunnelLayers, each block
    after the first over its input mean-pooled by 2 (pooling_type mean or max; separate_cls, truncate_seq), its first
    layer's queries alone pooled (pool_q_only); FunnelDecoder: the last block's output upsampled to every position plus
    the first block's, then num_decoder_layers (2) FunnelLayers; FunnelLayer: FunnelRelMultiheadAttention (n_head 12 of
    d_head 64: q_head without a bias, k_head, v_head, post_proj with biases, r_w_bias, r_r_bias, r_kernel, r_s_bias,
    seg_embed; blocks/rel_shift.py) and a LayerNorm on the residual sum, FunnelPositionwiseFFN (linear_1 d_model ->
    d_inner 3072, hidden_act gelu_new, linear_2 back, with biases) and a LayerNorm on the sum; lm_head, tied to the word
    table, with a bias. No position limit (relative sinusoids): 512, the pretraining length (Dai et al. 2020 §4.1).
    block_repeats ([1, 1, 1]): each layer of a block run that many times in a row with its own parameters. Refused in
    one line: attention_type factorized; separate_cls, truncate_seq or pool_q_only false; no decoder layers."""
    for key, want in READ.items():
        got = c.data.get(key, want)
        if got != want:
            raise c.fail(key, f"the Funnel Transformer with {key} {got!r} is not read yet (only {want!r})")
    sizes = c.data.get("block_sizes")
    if not isinstance(sizes, list) or not sizes or not all(type(v) is int and v > 0 for v in sizes):
        raise c.fail("block_sizes", f"expected a list of positive layer counts, got {sizes!r}")
    c.depth(sum(sizes), "block_sizes")
    repeats = c.data.get("block_repeats") or [1] * len(sizes)
    if not isinstance(repeats, list) or len(repeats) != len(sizes) or not all(type(r) is int and r > 0 for r in repeats):
        raise c.fail("block_repeats", f"expected a positive repeat count for each of the {len(sizes)} blocks, got {repeats!r}")
    c.depth(sum(n * r for n, r in zip(sizes, repeats)), "block_sizes", "block_repeats")
    pooling = c.data.get("pooling_type", "mean")
    if pooling not in ("mean", "max"):
        raise c.fail("pooling_type", f"expected mean or max, got {pooling!r}")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": c.int("d_model"),
        "n_layers": c.int("num_decoder_layers"),
        "context_length": 512,
        "positions": "none",
        "mask": "bidirectional",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "lm_head_bias": True,
        "embedding_norm": True,
        "attention": {"kind": "rel_shift", "n_heads": c.int("n_head"), "head_dim": c.int("d_head")},
        "ffn": {"kind": "dense", "d_ff": c.int("d_inner"), "bias": True, "activation": c.activation("hidden_act", "gelu_new")},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "residual"},
        "funnel_encoder": {"blocks": sizes, **({"repeats": repeats} if any(r != 1 for r in repeats) else {})},
    }
