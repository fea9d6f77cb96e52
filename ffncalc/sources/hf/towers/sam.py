"""SAM ViT towers (Kirillov et al. 2023) as transformers 5.23 builds them beside a language model
(GotOcr2VisionEncoder): a patch convolution with a bias, an absolute position table of grid × grid rows, windowed
and global layers with decomposed relative positions and a convolutional neck (parts/sam.py), and the wrappers that
read one whole."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper
from .vit import vit


def sam_encoder(v: Config) -> dict:
    """The encoder (parts/sam.py) of a SAM vision_config (hidden_size, num_hidden_layers, num_attention_heads,
    mlp_dim, output_channels, image_size, patch_size, window_size, global_attn_indexes, qkv_bias, use_abs_pos,
    use_rel_pos, hidden_act)."""
    d, heads, depth = v.int("hidden_size"), v.int("num_attention_heads"), v.int("num_hidden_layers")
    if d % heads:
        raise v.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {d}")
    size, patch = v.int("image_size"), v.int("patch_size")
    if size < patch:
        raise v.fail("image_size", f"an image of {size} pixels holds no {patch}-pixel patch")
    full = v.int_list("global_attn_indexes")
    if any(not 0 <= k < depth for k in full) or len(set(full)) != len(full):
        raise v.fail("global_attn_indexes", f"{full}: expected distinct layer indices below num_hidden_layers {depth}")
    window = v.int("window_size", 14, positive=False)
    if window < 0:
        raise v.fail("window_size", f"expected a non-negative integer, got {window}")
    grid = size // patch
    if not v.bool("use_abs_pos", True):
        raise v.fail("use_abs_pos", "false: a SAM tower without its absolute position table is not read yet")
    return {
        "width": d,
        "depth": depth,
        "heads": heads,
        "mlp": v.int("mlp_dim"),
        "out": v.int("output_channels"),
        "grid": grid,
        "window": window,
        "full": len(full) if window else depth,  # window 0: every layer attends the whole grid
        "qkv_bias": v.bool("qkv_bias", True),
        "rel_pos": v.bool("use_rel_pos", True),
        "activation": v.activation("hidden_act", "gelu"),
    }


def sam_tower(v: Config, projector: dict) -> dict:
    """The ``vision`` part of a SAM vision_config: its patch convolution (num_channels → hidden_size, a bias), its
    absolute table and its encoder, with ``projector`` reading its neck's output_channels."""
    sam = sam_encoder(v)
    size, patch = v.int("image_size"), v.int("patch_size")
    return {
        "image_size": size,
        "patch_size": patch,
        "channels": v.int("num_channels", 3),
        "position_rows": sam["grid"] ** 2,  # the checkpoint's table, interpolated to another size
        "post_norm": False,
        "sam": sam,
        "projector": projector,
    }


@wrapper("got_ocr2", "pp_chart2table")
def got_ocr2(c: Config) -> dict:
    """GotOcr2ForConditionalGeneration (Wei et al. 2024, GOT-OCR 2.0; PP-Chart2Table builds the same class): a SAM
    ViT tower (GotOcr2VisionEncoder) and GotOcr2MultiModalProjector: conv_upsampler1 (3 × 3, stride 2, padding 1,
    output_channels → 2 × output_channels) and conv_upsampler2 (the same to the text width), no biases, then
    multimodal_projector, Linear(text width, text width) with a bias: 4 × 4 patches a token (1,024 pixels: 256)."""
    v = sub_config(c, "vision_config")
    text = sub_config(c, "text_config").int("hidden_size")
    projector = {
        "width": v.int("output_channels"),
        "downsample": True,
        "downsample_bias": False,
        "downsample_out": text,
        "bias": True,
    }
    return {"vision": sam_tower(v, projector)}


@wrapper("deepseek_vl_hybrid")
def deepseek_vl_hybrid(c: Config) -> dict:
    """DeepseekVLHybridForConditionalGeneration (Lu et al. 2024, DeepSeek-VL's hybrid encoder): a SigLIP tower (its
    pooling head where vision_use_head: built and run, its output unread) over the image at its size, and a SAM tower
    (high_res_vision_config, a SamVisionModel) over the image at the SAM's size, with a second neck over the first global
    layer's output, both necks' outputs through high_res_vision_proj to one token a SigLIP patch, joined by
    DeepseekVLHybridAligner (parts/high_res.py)."""
    v = sub_config(c, "vision_config")
    hr = sub_config(c, "high_res_vision_config")
    text = sub_config(c, "text_config").int("hidden_size")
    if not hr.int_list("global_attn_indexes") and hr.int("window_size", 14, positive=False):
        raise hr.fail("global_attn_indexes", "empty: the second neck reads the first global layer's output")
    if text % 2:
        raise c.fail("text_config", f"hidden_size {text}: the aligner writes two halves of it")
    high_res = {
        "sam": sam_encoder(hr),
        "image_size": hr.int("image_size"),
        "patch_size": hr.int("patch_size"),
        "channels": hr.int("num_channels", 3),
        "text": text,
    }
    return {"vision": vit(v, {"width": v.int("hidden_size"), "linear": False}, high_res=high_res)}


@wrapper("unlimited_ocr")
def unlimited_ocr(c: Config) -> dict:
    """UnlimitedOcrForConditionalGeneration (Baidu's Unlimited OCR): DeepSeek-OCR's DeepEncoder (Wei et al. 2025) read
    whole, UnlimitedOcrVisionModel's SAM encoder (vision_config.sam_config: its patch convolution, absolute table,
    layers and neck, as GOT-OCR 2.0's) and its proj, two strided convolutions to downsample_channels; then
    UnlimitedOcrVisionEncoder (vision_config.encoder_config: CLIP's layers over the SAM's features, with a class token,
    pre_layrnorm and no post-norm), its rows beside the SAM's into multi_modal_projector, and image_newline and
    view_separator (parts/deep_encoder.py). One image of S pixels a side at a SAM patch of 16 is q = S / 64 rows of q
    tokens and a newline each, and the separator: q × (q + 1) + 1."""
    sam, enc = _sam_and_encoder(c)
    grid = enc.int("image_size") // enc.int("patch_size")
    if grid < 1:
        raise enc.fail("image_size", f"{enc.int('image_size')} pixels hold no {enc.int('patch_size')}-pixel patch")
    deep = {**_deep(sam, enc, "quick_gelu"), "grid": grid}
    tower = sam_tower(sam, {"width": sam.int("output_channels"), "linear": False})
    return {"vision": {**tower, "deep": deep, "newline": True}}


@wrapper("deepseek_ocr2")
def deepseek_ocr2(c: Config) -> dict:
    """DeepseekOcr2ForConditionalGeneration (DeepSeek-AI's DeepSeek-OCR 2): its DeepEncoder V2 read whole,
    DeepseekOcr2VisionModel's SAM encoder (vision_config.sam_config, mlp_dim hidden_size × mlp_ratio where null) and its
    proj, two strided convolutions to downsample_channels ([512, 896] where null); then DeepseekOcr2VisionEncoder
    (vision_config.encoder_config: Qwen2's layers over the SAM's features and 144 or 256 learned queries, a final
    RMSNorm), the queries' rows through multi_modal_projector, and view_separator (parts/deep_encoder.py): one image of
    at most 768 pixels a side (at most 144 positions after the convolutions) is 145 tokens, a larger one 257."""
    sam, enc = _sam_and_encoder(c)
    if enc.bool("use_sliding_window", False):
        raise enc.fail("use_sliding_window", "true: its encoder's sliding windows are not read")
    deep = {**_deep(sam, enc, "silu"), "form": "qwen2", "kv_heads": enc.int("num_key_value_heads", enc.int("num_attention_heads"))}
    tower = sam_tower(sam, {"width": sam.int("output_channels"), "linear": False})
    return {"vision": {**tower, "deep": {**deep, "small": 144, "large": 256}}}


def _sam_and_encoder(c: Config) -> tuple[Config, Config]:
    """The SAM's and the second encoder's configs, the SAM's mlp_dim filled where null (hidden_size × mlp_ratio)."""
    v = sub_config(c, "vision_config")
    sam, enc = sub_config(v, "sam_config"), sub_config(v, "encoder_config")
    if sam.data.get("mlp_dim") is None:  # DeepseekOcr2SamVisionConfig.__post_init__
        ratio = sam.data.get("mlp_ratio", 4.0)
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0:
            raise sam.fail("mlp_ratio", f"expected a positive number, got {ratio!r}")
        sam = Config({**sam.data, "mlp_dim": int(sam.int("hidden_size") * ratio)}, sam.text, sam.source, start=sam.start)
    return sam, enc


def _deep(sam: Config, enc: Config, act: str) -> dict:
    """The keys both second encoders share (parts/deep_encoder.py)."""
    value = sam.data.get("downsample_channels") or [512, 896]  # DeepseekOcr2SamVisionConfig's default where null
    whole = isinstance(value, list) and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in value)
    if not whole or len(value) != 2:
        raise sam.fail("downsample_channels", f"expected two positive integers, got {value!r}")
    hidden, heads = enc.int("hidden_size"), enc.int("num_attention_heads")
    if hidden % heads:
        raise enc.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {hidden}")
    return {
        "sam_out": sam.int("output_channels"),
        "mid": value[0],
        "width": value[1],
        "hidden": hidden,
        "depth": enc.int("num_hidden_layers"),
        "heads": heads,
        "mlp": enc.int("intermediate_size"),
        "activation": enc.activation("hidden_act", act),
    }
