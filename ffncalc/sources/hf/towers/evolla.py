"""Evolla (Zhou et al. 2025; transformers' EvollaForProteinText2Text) read whole: its SaProt protein encoder and
sequence-compressor resampler, whose latents adapters after its language model's layers cross-attend (the ``protein``
part, parts/protein.py), beside the Llama-form language model of its top-level keys (families/evolla.py)."""

from __future__ import annotations

import re

from ..config import Config
from . import wrapper

# SaProtConfig's declared defaults (configuration_evolla.py): its model_type is empty, so no class_defaults entry
SAPROT = {
    "vocab_size": 446,
    "hidden_size": 1280,
    "num_hidden_layers": 33,
    "num_attention_heads": 20,
    "intermediate_size": 5120,
    "position_embedding_type": "rotary",
    "emb_layer_norm_before": False,
}


@wrapper("evolla")
def evolla(c: Config) -> dict:
    """EvollaForProteinText2Text: EvollaProteinEncoder — EvollaSaProtProteinEncoder of protein_encoder_config
    (SaProtConfig: word_embeddings, a LayerNorm after them where emb_layer_norm_before, rotary positions over every head,
    EvollaSaProtLayer — LayerNorm, query, key, value and output dense with biases; LayerNorm, intermediate dense, erf
    GELU, output dense with biases — and emb_layer_norm_after; no pooler) and EvollaSequenceCompressorResampler
    (resampler_num_latents latents of the encoder's width, resampler_depth layers of resampler_heads heads of
    resampler_dim_head with LayerNorms, an MLP of resampler_ff_mult × the width; protein_projector to hidden_size with a
    bias, a LayerNorm); an adapter after layer i where (i + 1) % max(num_hidden_layers // aligner_num_add_layers, 1) ==
    0, its EvollaFeedForward aligner_ffn_mult × hidden_size wide, out_proj's bias aligner_enable_bias."""
    from .. import class_defaults

    c = class_defaults(c)  # EvollaConfig's declared defaults where the file leaves a key out
    stated = c.data.get("protein_encoder_config")
    if stated is not None and not isinstance(stated, dict):
        raise c.fail("protein_encoder_config", f"expected an object, got {stated!r}")
    match = re.search(r'"protein_encoder_config"\s*:', c.text)
    p = Config({**SAPROT, **(stated or {})}, c.text, c.source, start=match.start() if match else 0)
    if p.data.get("position_embedding_type") != "rotary":
        raise p.fail("position_embedding_type", f"{p.data.get('position_embedding_type')!r}: only rotary positions are read")
    w, heads = p.int("hidden_size"), p.int("num_attention_heads")
    if w % heads:
        raise p.fail("num_attention_heads", f"{heads} heads do not divide the width {w}")
    d, text_heads = c.int("hidden_size"), c.int("num_attention_heads")
    if d % text_heads:
        raise c.fail("num_attention_heads", f"{text_heads} heads do not divide the width {d}")
    add = c.int("aligner_num_add_layers")
    layers = {
        "d_model": w,
        "n_layers": p.int("num_hidden_layers"),
        "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": p.int("intermediate_size"), "bias": True, "activation": "gelu"},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        "positions": "rotary",
    }
    resampler = {
        "latents": c.int("resampler_num_latents"),
        "depth": c.int("resampler_depth"),
        "n_heads": c.int("resampler_heads"),
        "n_kv_heads": c.int("resampler_heads"),
        "head_dim": c.int("resampler_dim_head"),
        "d_ff": w * c.int("resampler_ff_mult"),  # EvollaFeedForward: int(dim * mult)
        "width": w,
        "norm": "layernorm",
        "gated": False,
        "activation": "gelu",
        "final_norm": False,
    }
    protein = {
        "layers": layers,
        "vocab": p.int("vocab_size"),
        "resampler": resampler,
        "every": max(c.int("num_hidden_layers") // add, 1),
        "adapter_d_ff": d * c.int("aligner_ffn_mult"),
        "adapter_bias": c.bool("aligner_enable_bias", True),
        "embedding_norm": p.bool("emb_layer_norm_before", False),
    }
    return {"protein": protein}


# Its modules in the whole class, by the end of their path: the protein encoder's and the resampler's
MODULES = (
    (r"protein_encoder\.model\.embeddings\.word_embeddings\.", "protein.embed"),
    (r"protein_encoder\.model\.embeddings\.layer_norm\.", "protein.embed_norm"),
    (r"protein_encoder\.model\.encoder\.emb_layer_norm_after\.", "protein.encoder.final_norm"),
    (r"encoder\.layer\.\d+\.attention\.self\.query\.", "protein.encoder.attn.q"),
    (r"encoder\.layer\.\d+\.attention\.self\.key\.", "protein.encoder.attn.k"),
    (r"encoder\.layer\.\d+\.attention\.self\.value\.", "protein.encoder.attn.v"),
    (r"encoder\.layer\.\d+\.attention\.output\.dense\.", "protein.encoder.attn.o"),
    (r"encoder\.layer\.\d+\.(attention\.)?LayerNorm\.", "protein.encoder.norms"),
    (r"encoder\.layer\.\d+\.intermediate\.dense\.", "protein.encoder.ffn.up"),
    (r"encoder\.layer\.\d+\.output\.dense\.", "protein.encoder.ffn.down"),
    (r"sequence_compressor_resampler\.latents$", "protein.resampler.latents"),
    (r"resampler\.layers\.\d+\.0\.norm_(media|latents)\.", "protein.resampler.norms"),
    (r"resampler\.layers\.\d+\.0\.to_q\.", "protein.resampler.attn.q"),
    (r"resampler\.layers\.\d+\.0\.to_kv\.", "protein.resampler.attn.k+v"),
    (r"resampler\.layers\.\d+\.0\.to_out\.", "protein.resampler.attn.o"),
    (r"resampler\.layers\.\d+\.1\.norm\.", "protein.resampler.ffn.norm"),
    (r"resampler\.layers\.\d+\.1\.fc1\.", "protein.resampler.ffn.up"),
    (r"resampler\.layers\.\d+\.1\.fc2\.", "protein.resampler.ffn.down"),
    (r"sequence_compressor_resampler\.protein_projector\.", "protein.projector.linear"),
    (r"sequence_compressor_resampler\.norm\.", "protein.projector.norm"),
    # the adapters after some decoder layers' MLPs (EvollaSequenceAlignerCrossAttention)
    (r"adapter\.attention_norm\.", "protein.adapter.norm"),
    (r"adapter\.query\.", "protein.adapter.q"),
    (r"adapter\.key_protein\.", "protein.adapter.k"),
    (r"adapter\.value_protein\.", "protein.adapter.v"),
    (r"adapter\.out_proj\.", "protein.adapter.o"),
    (r"adapter\.ff\.norm\.", "protein.adapter.ffn.norm"),
    (r"adapter\.ff\.fc1\.", "protein.adapter.ffn.up"),
    (r"adapter\.ff\.fc2\.", "protein.adapter.ffn.down"),
    (r"adapter\.gate_(attention|ffw)$", "protein.adapter.gates"),
)


def protein_component(path: str) -> str | None:
    """A whole Evolla's parameter in its protein encoder, resampler, projector or an adapter -> its component, or None
    (the language model's)."""
    if "protein_encoder." not in path and ".adapter." not in path:
        return None
    return next((name for pattern, name in MODULES if re.search(pattern, path)), f"(unmatched) {path}")
