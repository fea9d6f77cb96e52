"""Florence-2 read whole, as transformers 5.23 builds Florence2ForConditionalGeneration: its DaViT tower
(Florence2VisionBackbone, parts/davit.py) and projector (Florence2MultiModalProjector: the position tables, the mean
token, image_projection and image_proj_norm) before BART's encoder and decoder (families/bart.py), the image's tokens
taking the places of its image tokens in the encoder's source."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config, wrapper

# Florence2VisionConfig's stage lists, each one entry a stage, as parts/davit.py names them
STAGE_LISTS = {
    "embed_dim": "widths",
    "depths": "depths",
    "num_heads": "heads",
    "num_groups": "groups",
    "patch_size": "kernels",
    "patch_stride": "strides",
    "patch_padding": "paddings",
    "patch_prenorm": "prenorms",
}


@wrapper("florence2")
def florence2(c: Config) -> dict:
    """Florence2ForConditionalGeneration (Florence-2): Florence2VisionBackbone (four stages of a convolutional embedding
    and DaViT blocks, embed_dim 128 to 1,024 by default) and Florence2MultiModalProjector: the learned row and column
    tables (max_position_embeddings rows) and the cosine row added, the mean over the positions put before them, then
    image_projection (embed_dim[-1] → projection_dim, no bias) and image_proj_norm (a LayerNorm); BART's encoder reads
    the tokens in place of the image tokens of its source, so one image adds 1 + (side / 32)² tokens there (577 at 768
    pixels), none to the decoder's sequence."""
    v = sub_config(c, "vision_config")
    t = sub_config(c, "text_config")
    davit: dict = {}
    for key, field in STAGE_LISTS.items():
        values = v.data.get(key)
        if not isinstance(values, list) or not values:
            raise v.fail(key, f"expected a list of one entry a stage, got {values!r}")
        if len(values) != len(davit.get("widths", values)):  # one entry a stage, as embed_dim has
            raise v.fail(key, f"{len(values)} entries where embed_dim names {len(davit['widths'])} stages")
        davit[field] = tuple(bool(x) if field == "prenorms" else int(x) for x in values)
    davit |= {
        "window": v.int("window_size"),
        "mlp_ratio": float(v.data.get("mlp_ratio", 4.0)),
        "qkv_bias": v.bool("qkv_bias", True),
        "position_rows": v.int("max_position_embeddings"),
    }
    width, out = davit["widths"][-1], v.int("projection_dim")
    if out != t.int("d_model"):  # the projector's tokens take the places of token embeddings of d_model
        raise v.fail("projection_dim", f"{out} features where the encoder's tokens are d_model {t.int('d_model')}")
    if v.data.get("activation_function", "gelu") != "gelu":
        raise v.fail("activation_function", f"{v.data.get('activation_function')!r}: DaViT's MLP is read with gelu")
    stride = 1
    for s in davit["strides"]:
        stride *= s
    projector = {"width": width, "bias": False, "post_norm": "layernorm"}
    vision = {
        "image_size": 768,  # Florence-2's processor's (CLIPImageProcessor's crop, 768 × 768)
        "patch_size": stride,
        "davit": davit,
        "position_table": False,
        "post_norm": False,
        "source": True,
        "projector": projector,
    }
    return {"vision": vision}


# Florence-2's modules in the whole class -> their components (parts/davit.py's names)
DAVIT_MODULES = (
    (r"^vision_tower\.convs\.(\d+)\.(conv|norm)$", lambda m: f"stage{m[1]}.embed.{m[2]}"),
    (
        r"^vision_tower\.blocks\.(\d+)\.\d+\.(spatial|channel)_block\.(conv1|conv2|norm1|norm2)$",
        lambda m: f"stage{m[1]}.{m[2]}.{m[3]}",
    ),
    (
        r"^vision_tower\.blocks\.(\d+)\.\d+\.(spatial|channel)_block\.(?:window|channel)_attn\.(qkv|proj)$",
        lambda m: f"stage{m[1]}.{m[2]}.attn.{m[3]}",
    ),
    (r"^vision_tower\.blocks\.(\d+)\.\d+\.(spatial|channel)_block\.ffn\.(fc1|fc2)$", lambda m: f"stage{m[1]}.{m[2]}.ffn.{m[3]}"),
    (r"^multi_modal_projector\.image_projection$", lambda m: "projector.linear"),
    (r"^multi_modal_projector\.image_proj_norm$", lambda m: "projector.norm"),
    (r"^multi_modal_projector\.image_position_embed\.row_embeddings$", lambda m: "projector.position_rows"),
    (r"^multi_modal_projector\.image_position_embed\.column_embeddings$", lambda m: "projector.position_columns"),
)


def davit_component(path: str) -> str | None:
    """A whole Florence-2's parameter in its tower or projector (``model.vision_tower.``,
    ``model.multi_modal_projector.``) -> its component, or None (another model's)."""
    module = re.sub(r"^model\.", "", path.rsplit(".", 1)[0])
    for pattern, name in DAVIT_MODULES:
        hit = re.search(pattern, module)
        if hit:
            return "vision." + name(hit)
    return None
