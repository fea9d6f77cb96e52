"""PP-FormulaNet's text decoder (PaddlePaddle's formula recogniser, as transformers 5.23 builds it): mBART's decoder
alone (PPFormulaNetTextModel is MBartDecoder; families/bart.py), whose every layer's encoder_attn reads the image
encoder's tokens (the vision part, towers/pp_formulanet.py)."""

from __future__ import annotations

from ..config import Config, family
from .bart import LAYER_MODULES, TOP_MODULES, seq2seq
from .blip_text import memory


@family("pp_formulanet_text", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def pp_formulanet_text(c: Config) -> dict:
    """PPFormulaNetTextConfig / PPFormulaNetTextModel (MBartDecoder): embed_tokens (vocab_size, 50,000, × d_model,
    512; scaled by √d_model, scale_embedding: a multiply, no parameters), embed_positions of max_position_embeddings
    (2,560) + 2 rows (MBartLearnedPositionalEmbedding's offset), layernorm_embedding; decoder_layers (8) pre-norm
    MBartDecoderLayers: self_attn over decoder_attention_heads (16) with q, k, v and out_proj biases, encoder_attn
    (q from the decoder; k and v from the image encoder's d_model features, with biases), fc1 d → decoder_ffn_dim
    (2,048) and fc2 back with biases, activation_function (gelu), three LayerNorms; a final layer_norm. The head
    (PPFormulaNetForConditionalGeneration.lm_head, no bias) tied only by tie_word_embeddings (false). Its encoder_*
    keys describe no layers: the encoder is the vision part."""
    heads, ffn = c.int("decoder_attention_heads"), c.int("decoder_ffn_dim")
    own = {**c.data, "encoder_layers": 1, "encoder_attention_heads": heads, "encoder_ffn_dim": ffn}  # its encoder stack, dropped below
    spec = seq2seq(
        Config(own, c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers, outer=c.outer),
        pre_norm=True,
        embedding_norm=True,
        offset=2,
    )
    spec["tie_embeddings"] = c.bool("tie_word_embeddings", False)
    spec["encoder"] = memory(c.int("d_model"))
    return spec
