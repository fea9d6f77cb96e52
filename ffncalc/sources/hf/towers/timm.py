"""Vision towers timm builds (transformers' TimmWrapperModel, a vision_config of model_type timm_wrapper: timm's
``architecture`` and its ``model_args``) and the wrappers that read one whole: FastVLM's FastViTHD (parts/fastvit.py),
Perception LM's Perception Encoder (a ViT of CLIP's form, parts/vision.py)."""

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


# timm 1.0's Perception Encoder ViTs read (timm/models/eva.py: Eva with attn_type "rope"; Bolya et al. 2025, Perception
# Encoder, Table 1): CLIP's form — a patch convolution without a bias, a class token, a learned table of one row a
# position, a LayerNorm before the layers (use_pre_transformer_norm) and after them (use_post_transformer_norm), pre-norm
# layers of fused qkv and proj with biases and a GELU MLP of 4·width with biases, 2-D rotary positions (no multiply-adds)
# — and, global_pool "map", an attention-pooling head (AttentionPoolLatent: a latent query over every position, q, kv,
# proj, a LayerNorm and an MLP of 4·width), run by TimmWrapperModel's forward (do_pooling) and read by no projector
PE = {
    "vit_pe_core_large_patch14_336": {"width": 1024, "depth": 24, "heads": 16, "image_size": 336, "patch_size": 14},
    "vit_pe_core_gigantic_patch14_448": {"width": 1536, "depth": 50, "heads": 16, "image_size": 448, "patch_size": 14},
}
PE_ARGS = {"embed_dim", "depth", "img_size", "global_pool", "use_post_transformer_norm", "init_values", "ref_feat_shape"}


def perception_encoder(v: Config, projector: dict) -> dict:
    """The ``vision`` part of a timm_wrapper vision_config whose architecture is one of PE, its model_args (embed_dim,
    depth, img_size, global_pool, use_post_transformer_norm, init_values: a layer scale of each sublayer) applied."""
    arch = v.data.get("architecture")
    if arch not in PE:
        raise v.fail("architecture", f"{arch!r}: a timm tower not read yet (read: {', '.join(PE)})")
    args = v.data.get("model_args") or {}
    if not isinstance(args, dict) or set(args) - PE_ARGS:
        raise v.fail("model_args", f"{args!r}: read keys are {', '.join(sorted(PE_ARGS))}")
    pe = PE[arch]
    d, depth = args.get("embed_dim", pe["width"]), args.get("depth", pe["depth"])
    size = args.get("img_size", pe["image_size"])
    size = size[0] if isinstance(size, list | tuple) and len(set(size)) == 1 else size
    pool = args.get("global_pool", "map")
    if type(d) is not int or type(depth) is not int or type(size) is not int or d % pe["heads"] or pool not in ("map", ""):
        raise v.fail(
            "model_args", f"{args!r}: a width its {pe['heads']} heads divide, a depth, a square img_size, global_pool map or ''"
        )
    layers = {
        "d_model": d,
        "n_layers": depth,
        "attention": {"n_heads": pe["heads"], "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": 4 * d, "bias": True, "activation": "gelu"},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
    }
    form = {"patch_bias": False, "class_token": True, "pre_norm": True, "head": pool == "map"}
    form["post_norm"] = bool(args.get("use_post_transformer_norm", True))
    form["layer_scale"] = args.get("init_values") is not None
    tower = {"image_size": size, "patch_size": pe["patch_size"], "layers": layers, **form}
    return {**tower, "projector": projector}


@wrapper("perception_lm")
def perception_lm(c: Config) -> dict:
    """PerceptionLMForConditionalGeneration (Cho et al. 2025, PerceptionLM): a Perception Encoder tower through
    TimmWrapperModel, its patches' features (the class token's dropped where vision_use_cls_token) through
    PerceptionLMMultiModalProjector, Linear(embed_dim, text width) → GELU → Linear(text width, text width), with biases;
    one token a patch (projector_pooling_ratio 1; its 2-D pooling after the projector is not read)."""
    v = sub_config(c, "vision_config")
    args = v.data.get("model_args") or {}
    width = args.get("embed_dim") if isinstance(args, dict) else None
    if width is None:
        raise v.fail("model_args", "no embed_dim: PerceptionLMMultiModalProjector reads model_args['embed_dim']")
    if c.int("projector_pooling_ratio", 1) != 1:
        raise c.fail("projector_pooling_ratio", "its 2-D pooling after the projector is not read yet (1: none)")
    projector = {"width": width, "hidden": sub_config(c, "text_config").int("hidden_size"), "bias": True, "activation": "gelu"}
    if not c.bool("vision_use_cls_token", True):  # a tower without its class token: timm's class_token false, not read
        raise c.fail("vision_use_cls_token", "false: a Perception Encoder without its class token is not read yet")
    return {"vision": perception_encoder(v, projector)}


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


# A Perception Encoder's modules and parameters (timm's Eva) -> its components (parts/vision.py's names)
PE_MODULES = (
    (r"^patch_embed\.proj$", lambda m: "patch_embed"),
    (r"^norm_pre$", lambda m: "pre_norm"),
    (r"^blocks\.\d+\.norm[12]$", lambda m: "norms"),
    (r"^blocks\.\d+\.attn\.qkv$", lambda m: "attn.q+k+v"),
    (r"^blocks\.\d+\.attn\.proj$", lambda m: "attn.o"),
    (r"^blocks\.\d+\.mlp\.fc1$", lambda m: "ffn.up"),
    (r"^blocks\.\d+\.mlp\.fc2$", lambda m: "ffn.down"),
    (r"^norm$", lambda m: "post_norm"),
    (r"^attn_pool\.q$", lambda m: "head.attn.q"),
    (r"^attn_pool\.kv$", lambda m: "head.attn.k+v"),
    (r"^attn_pool\.proj$", lambda m: "head.attn.o"),
    (r"^attn_pool\.norm$", lambda m: "head.norm"),
    (r"^attn_pool\.mlp\.fc1$", lambda m: "head.mlp.up"),
    (r"^attn_pool\.mlp\.fc2$", lambda m: "head.mlp.down"),
)
PE_PARAMETERS = {"cls_token": "class_embed", "pos_embed": "pos_embed", "attn_pool.latent": "head.probe"}


def timm_component(path: str) -> str | None:
    """A whole model's parameter in a timm tower (``vision_tower.timm_model.``) -> its component, or None."""
    import re

    found = re.search(r"(?:^|\.)vision_tower\.timm_model\.(.+)$", path)
    if not found:
        return None
    if found.group(1) in PE_PARAMETERS:  # a parameter of the model or module itself
        return "vision." + PE_PARAMETERS[found.group(1)]
    if re.fullmatch(r"blocks\.\d+\.gamma_[12]", found.group(1)):  # Eva's layer scales (init_values), a block's own
        return "vision.layer_scale"
    module = found.group(1).rsplit(".", 1)[0]
    for pattern, name in FASTVIT_MODULES + PE_MODULES:
        hit = re.search(pattern, module)
        if hit:
            return "vision." + name(hit)
    return f"(unmatched) vision.{module}"
