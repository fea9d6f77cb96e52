"""GIT (Wang et al. 2022, "GIT: A Generative Image-to-text Transformer"): the language model of GitForCausalLM, BERT's
post-norm layers run causally over the image's projected positions and the text after them."""

from __future__ import annotations

from ..config import Config, family
from .bert import LAYER_MODULES, TOP_MODULES


@family("git", layer_modules=LAYER_MODULES, top_modules=((r"^output$", "lm_head"),) + TOP_MODULES)
def git(c: Config) -> dict:
    """GitConfig / GitModel's text side (its keys at the top of the file, beside vision_config): GitEmbeddings (word
    and position tables, max_position_embeddings 1024 rows for the text, summed, then a LayerNorm; no token types);
    GitEncoder's layers, BERT's (query, key and value and the attention's output dense with biases, a LayerNorm on each
    residual sum, an intermediate of intermediate_size and hidden_act); GitForCausalLM's output, Linear(hidden,
    vocab_size) with a bias, untied unless tie_word_embeddings (default false). Every text token attends the image's
    positions and the text before it. num_image_with_embedding (a video's frames, each a learned row) is not read yet."""
    if c.data.get("num_image_with_embedding") is not None:
        raise c.fail("num_image_with_embedding", "a video's per-frame embeddings are not read yet (images are: null)")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 30522),
        "d_model": c.int("hidden_size", 768),
        "n_layers": c.int("num_hidden_layers", 6),
        "context_length": c.int("max_position_embeddings", 1024),
        "positions": "learned",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        "lm_head_bias": True,  # GitForCausalLM.output, an nn.Linear with its bias
        "embedding_norm": True,
        "attention": {"n_heads": c.int("num_attention_heads", 12), "qkv_bias": True, "o_bias": True},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size", 3072),
            "bias": True,
            "activation": c.activation("hidden_act", "gelu"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "residual"},
    }
