"""Vision towers timm builds (transformers' TimmWrapperModel, a vision_config of model_type timm_wrapper: timm's
``architecture`` and its ``model_args``) and the wrappers that read one whole: FastVLM's FastViTHD (parts/fastvit.py)."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper

# timm 1.0's FastViT architectures read (timm/models/fastvit.py): their stage widths and depths; every other setting
# is FastViTHD's (parts/fastvit.py's defaults)
FASTVIT = {
    "fastvit_mci3": {"widths": (96, 192, 384, 768, 1536), "depths": (2, 12, 24, 4, 2)},
    "fastvit_mci4": {"widths": (128, 256, 512, 1024, 2048), "depths": (2, 12, 24, 4, 4)},
}
# FastVLM's images: 1,024 pixels a side, 16 × 16 tokens (Vasu et al. 2025, FastVLM §3.2 and its released processors'
# crop_size); the configuration states none
FAST_VLM_IMAGE_SIZE = 1024


def fastvit(v: Config) -> dict:
    """The FastViT (parts/fastvit.py) of a timm_wrapper vision_config: ``architecture`` one of FASTVIT, reparameterized
    (``model_args`` inference_mode true: each branch folded into one convolution, as FastVLM runs it)."""
    arch = v.data.get("architecture")
    if arch not in FASTVIT:
        raise v.fail("architecture", f"{arch!r}: a timm tower not read yet (read: {', '.join(FASTVIT)})")
    args = v.data.get("model_args") or {}
    if not isinstance(args, dict) or args.get("inference_mode") is not True or set(args) - {"inference_mode"}:
        raise v.fail("model_args", f"{args!r}: FastViT's towers are read reparameterized alone ({{'inference_mode': true}})")
    return dict(FASTVIT[arch])


@wrapper("fast_vlm")
def fast_vlm(c: Config) -> dict:
    """FastVlmForConditionalGeneration (Vasu et al. 2025, FastVLM): a FastViTHD tower through TimmWrapperModel, its
    final block's output (vision_feature_layer −1, "full": every position) through FastVlmMultiModalProjector,
    Linear(vision hidden_size, text width) → projector_hidden_act → Linear(text width, text width), biases as
    multimodal_projector_bias; one token a 64 × 64 pixels."""
    v = sub_config(c, "vision_config")
    body = fastvit(v)
    width = v.int("hidden_size")
    if width != 2 * body["widths"][-1]:
        raise v.fail("hidden_size", f"{width}: the projector reads the final block's {2 * body['widths'][-1]} channels")
    if c.data.get("vision_feature_layer", -1) != -1 or c.data.get("vision_feature_select_strategy", "full") != "full":
        raise c.fail("vision_feature_layer", 'FastVLM reads the tower\'s last output, every position (-1, "full")')
    projector = {
        "width": width,
        "hidden": sub_config(c, "text_config").int("hidden_size"),
        "bias": c.bool("multimodal_projector_bias", True),
        "activation": c.activation("projector_hidden_act", "gelu"),
    }
    tower = {"image_size": FAST_VLM_IMAGE_SIZE, "patch_size": 64, "fastvit": body, "position_table": False, "post_norm": False}
    return {"vision": {**tower, "projector": projector}}


# A FastViT's modules in the whole class (TimmWrapperModel's timm_model) -> its components (parts/fastvit.py)
FASTVIT_MODULES = (
    (r"^stem\.(\d)\.reparam_conv$", lambda m: f"stem.conv{int(m[1]) + 1}"),
    (r"^stages\.(\d)\.downsample\.proj\.0\.reparam_conv$", lambda m: f"stage{m[1]}.down.conv"),
    (r"^stages\.(\d)\.downsample\.proj\.1\.reparam_conv$", lambda m: f"stage{m[1]}.down.proj"),
    (r"^stages\.(\d)\.pos_emb\.reparam_conv$", lambda m: f"stage{m[1]}.cpe"),
    (r"^stages\.(\d)\.blocks\.\d+\.token_mixer\.reparam_conv$", lambda m: f"stage{m[1]}.mixer"),
    (r"^stages\.(\d)\.blocks\.\d+\.token_mixer\.(qkv|proj)$", lambda m: f"stage{m[1]}.attn.{m[2]}"),
    (r"^stages\.(\d)\.blocks\.\d+\.norm$", lambda m: f"stage{m[1]}.norm"),
    (r"^stages\.(\d)\.blocks\.\d+\.layer_scale(_[12])?$", lambda m: f"stage{m[1]}.scale"),
    (r"^stages\.(\d)\.blocks\.\d+\.mlp\.conv\.(conv|bn)$", lambda m: f"stage{m[1]}.mlp.{m[2]}"),
    (r"^stages\.(\d)\.blocks\.\d+\.mlp\.(fc[12])$", lambda m: f"stage{m[1]}.mlp.{m[2]}"),
    (r"^final_conv\.reparam_conv$", lambda m: "final.conv"),
    (r"^final_conv\.se\.(fc[12])$", lambda m: f"final.se.{m[1]}"),
)


def timm_component(path: str) -> str | None:
    """A whole model's parameter in a timm tower (``vision_tower.timm_model.``) -> its component, or None."""
    import re

    found = re.search(r"(?:^|\.)vision_tower\.timm_model\.(.+)\.[^.]+$", path)
    if not found:
        return None
    module = found.group(1)
    for pattern, name in FASTVIT_MODULES:
        hit = re.search(pattern, module)
        if hit:
            return "vision." + name(hit)
    return f"(unmatched) vision.{module}"
