"""UDOP (Tang et al. 2023, "Unifying Vision, Text, and Layout for Universal Document Processing"): T5's encoder and
decoder (families/t5.py) over a document's words and image, with 2-D layout tables and relative biases."""

from __future__ import annotations

from ..config import Config, family
from .t5 import LAYER_MODULES, TOP_MODULES, t5

UDOP_TOP_MODULES = (
    (r"^patch_embed\.proj$", "patch_embed"),
    (r"^decoder\.embed_patches\.proj$", "decoder.embed_patches"),
    (r"^decoder\.relative_bias\.biases\.\d+\.relative_attention_bias$", "decoder.relative_bias_2d"),
    (r"^relative_bias\.biases\.\d+\.relative_attention_bias$", "relative_bias_2d"),  # the encoder's (its prefix stripped)
    (r"^cell_2d_embedding\.x_position_embeddings$", "cell_2d.x"),
    (r"^cell_2d_embedding\.y_position_embeddings$", "cell_2d.y"),
) + TOP_MODULES

# RelativePositionBiasBase.__init__'s default buckets, whatever relative_attention_num_buckets says
BIAS_BUCKETS = 32
BIAS_TYPES = ("1d", "horizontal", "vertical")


def bias_rows(c: Config, heads: int, buckets: int) -> tuple[int, ...]:
    """The rows of each table of relative_bias_args (create_relative_bias): its relative_attention_num_buckets (32),
    two more with prefix_bucket (unless expand); the first tied to the encoder's first block's bucket table
    (UdopForConditionalGeneration._tied_weights_keys), so of its shape; the others' rows, in order."""
    args = c.data.get("relative_bias_args", [{"type": t} for t in BIAS_TYPES])
    if not isinstance(args, list) or not all(isinstance(a, dict) and a.get("type") in BIAS_TYPES for a in args):
        raise c.fail("relative_bias_args", f"expected a list of {{type: {' | '.join(BIAS_TYPES)}, ...}}, got {args!r}")
    rows = []
    for a in args:
        if a.get("num_heads", heads) != heads:  # create_relative_bias refuses it too
            raise c.fail("relative_bias_args", f"a table of {a['num_heads']} heads where the model has {heads}")
        n = a.get("relative_attention_num_buckets", BIAS_BUCKETS)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise c.fail("relative_bias_args", f"relative_attention_num_buckets: expected a positive integer, got {n!r}")
        rows.append(n + (2 if a.get("prefix_bucket") and not a.get("expand") else 0))
    if rows and rows[0] != buckets:
        raise c.fail("relative_bias_args", f"its first table ({rows[0]} rows) is tied to the first block's ({buckets} rows)")
    return tuple(rows[1:])


@family("udop", layer_modules=LAYER_MODULES, top_modules=UDOP_TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def udop(c: Config) -> dict:
    """UdopConfig / UdopForConditionalGeneration: T5's stacks (t5 above: d_model 1,024, 24 layers each, 16 heads of
    64, d_ff 4,096, ReLU, relative_attention_num_buckets 32 in each stack's first block), shared (vocab_size 33,201)
    the token table of both and the head (tied: _tied_weights_keys); patch_embed (a Conv2d of num_channels 3 to
    d_model, patch_size 16, with a bias) over one image of image_size 224 pixels, its 196 patches in the encoder's
    source after the words (each word's patch also added to it); the encoder's cell_2d_embedding, two tables of
    max_2d_position_embeddings (1,024) × d_model looked up by every source row's box; relative_bias_args' tables in
    each stack (parts/document.py); the decoder's own embed_patches, built and not run."""
    spec = t5(c)
    heads, buckets = c.int("num_heads"), c.int("relative_attention_num_buckets", 32)
    patch, side, channels = c.int("patch_size", 16), c.int("image_size", 224), c.int("num_channels", 3)
    if side < patch:
        raise c.fail("image_size", f"{side} pixels: fewer than one patch of {patch}")
    spec["tie_embeddings"] = True  # lm_head.weight: shared.weight (_tied_weights_keys)
    spec["encoder"] = {**spec["encoder"], "appended": (side // patch) ** 2}
    spec["document"] = {
        "heads": heads,
        "patch": patch,
        "side": side,
        "channels": channels,
        "cell_rows": c.int("max_2d_position_embeddings", 1024),
        "bias_rows": list(bias_rows(c, heads, buckets)),
    }
    return spec
