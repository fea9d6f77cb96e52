"""Vision Transformers as transformers builds CLIP's and SigLIP's vision models (CLIPVisionModel, SiglipVisionModel):
patch embedding by a convolution, learned positions, pre-norm layers of bidirectional attention with biases on
q/k/v/out_proj and a two-layer MLP with biases, LayerNorms with biases; CLIP adds a class embedding and pre_layrnorm,
SigLIP a bias on the patch convolution and, where vision_use_head, an attention-pooling head."""

from __future__ import annotations

from math import isqrt

from ..config import Config

# CLIP's; SigLIP's and the towers built as it (Idefics3's and SmolVLM's, without the pooling head); Pixtral's
VISION_TYPES = (
    "clip_vision_model",
    "siglip_vision_model",
    "idefics3_vision",
    "granite_docling_vision",  # Granite Docling's: Idefics3's SigLIP-built tower (towers/granite_docling.py)
    "smolvlm_vision",
    "pixtral",
    "internvl_vision",
    "qianfan_ocr_vision",  # Qianfan-OCR's: InternViT's, built by a class of its own
    "video_llama_3_vision",  # VideoLLaMA 3's: SigLIP's layers, 2-D rotary positions, no pooling head
    "minimax_m3_vl_vision",  # MiniMax M3 VL's: CLIP's layers, a 3-D patch convolution, rotary positions
    "ovis2_vision",  # Ovis 2's: AIMv2's layers (RMSNorms, a gated MLP), an RMSNorm after the patch embedding
    "minicpmv4_6_vision",  # MiniCPM-V 4.6's, 4.7's and MiniCPM-OCR's: SigLIP's, no pooling head
    "minicpmv4_7_vision",
    "minicpm_ocr_vision",
    "radio",  # RADIO's (Nemotron-H Omni's tower): InternViT-form layers, cls and register tokens, a cropped table
    "janus_vision_model",  # Janus's: SigLIP's layers (InternViT's names for attention), no pooling head
    "inkling2_vision",  # Inkling 2's: InternViT's layers, a class token and an interpolated table, rotary positions
    "llama4_vision_model",
    "gemma4_vision",
    "kimi_k25_vision",
    "siglip2_vision_model",
    "idefics2_vision",
    "blip_2_vision_model",
    "vit",  # ViTModel (VisionEncoderDecoderModel's encoder): CLIP's layers, a class token, no pre-norm, a pooler
    "blip_vision_model",  # BLIP's: BLIP-2's form (EVA-CLIP's layers), its output cross-attended by the text decoder
    "instructblip_vision_model",
    "instructblipvideo_vision_model",
    "cosmos3_edge_vision",
    "kosmos_2_vision_model",
    "kosmos_2_5_vision_model",
    "pix2struct_vision_model",  # Pix2Struct's encoder: Kosmos-2.5's form, its images padded to no fixed size
    "git_vision_model",
    "paddleocr_vl_vision",
    "step3p5_vision",
    "mllama_vision_model",  # Llama 3.2 Vision's tiled tower, read by towers/mllama.py (its class defaults)
    "idefics_vision",  # IDEFICS' CLIP-built tower, read by towers/idefics.py (its class defaults)
)
NAFLEX_IMAGE_SIZE = 512  # pixels a side: 32 × 32 patches of 16 (LFM2-VL's largest tile, 256 tokens after its 2 × 2 shuffle)
PADDLE_IMAGE_SIZE = 448  # pixels a side: 32 × 32 patches of 14, 16 × 16 tokens after PaddleOCR-VL's 2 × 2 merge
MOONVIT_IMAGE_SIZE = 448  # pixels a side: 32 × 32 patches of 14, 16 × 16 tokens
VIDEO_LLAMA_3_IMAGE_SIZE = 448  # pixels a side: 28 × 28 patches of 16, one token each (an image's merge size 1)
INKLING2_IMAGE_SIZE = 640  # pixels a side: 32 × 32 patches of 20 (its position table's grid), 16 × 16 tokens
GEMMA4_IMAGE_SIZE = 768  # pixels a side: 48 × 48 patches of 16, pooled to 256 tokens within its 280-token budget


def vit(v: Config, projector: dict, **over) -> dict:
    """The ``vision`` part of a vision_config (hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
    image_size, patch_size, num_channels, hidden_act), with ``projector``. SigLIP 2's NaFlex tower
    (Siglip2VisionModel): SigLIP's, its patches embedded by a linear (the same weights as the convolution) and a table
    of num_patches rows resized to each image's grid (bilinear, no multiply-adds); its images have no fixed size, an
    image's figures are at NAFLEX_IMAGE_SIZE pixels a side unless --image-size says otherwise (Cosmos3 Edge's
    Cosmos3EdgeVisionModel: the same, without a pooling head). CLIP and SigLIP: pre-norm layers of
    attention with biases and a two-layer MLP with biases, LayerNorms with biases, a learned position table. Pixtral
    (PixtralVisionModel, Mistral's vision encoder): no biases anywhere, RMSNorms (ln_pre before the layers, none after),
    a gated MLP, 2-D rotary positions (no table: rotations have no multiply-adds to count). VideoLLaMA 3's
    (VideoLlama3VisionModel): SigLIP's layers and post_layernorm, 2-D rotary positions in place of the table, no pooling
    head; its images have no fixed size, an image's figures are at VIDEO_LLAMA_3_IMAGE_SIZE pixels a side unless
    --image-size says otherwise."""
    kind = v.model_type or "clip_vision_model"
    if kind not in VISION_TYPES:
        raise v.fail("model_type", f"a vision tower of {kind!r} is not read yet (read: {', '.join(VISION_TYPES)})")
    d = v.int("hidden_size")
    heads = v.int("num_attention_heads")
    if kind == "gemma4_vision":
        return {**_gemma4(v, d, heads), "projector": projector, **over}
    if kind == "kimi_k25_vision":
        return {**_moonvit(v, d, heads), "projector": projector, **over}
    if kind == "kosmos_2_5_vision_model":
        return {**_kosmos_2_5(v, d, heads), "projector": projector, **over}
    if kind == "pix2struct_vision_model":
        return {**_pix2struct(v, d, heads), "projector": projector, **over}
    if kind == "inkling2_vision":
        return {**_inkling2(v, d, heads), "projector": projector, **over}
    if kind == "minimax_m3_vl_vision":
        return {**_minimax_m3(v, d, heads), "projector": projector, **over}
    act = v.activation("hidden_act", "gelu")
    # SigLIP 2's NaFlex (and Cosmos3 Edge's, built as it): a linear patch embedding, a table resized to the image
    naflex = kind in ("siglip2_vision_model", "cosmos3_edge_vision")
    paddle = kind == "paddleocr_vl_vision"  # PaddleOCR-VL's: a table of image_size's patches resized to the image
    rotary = kind == "video_llama_3_vision"  # no table: 2-D rotary positions, no fixed size
    fixed = PADDLE_IMAGE_SIZE if paddle else VIDEO_LLAMA_3_IMAGE_SIZE if rotary else None
    side = NAFLEX_IMAGE_SIZE if naflex else fixed or _side(v, "image_size")
    tower = {"image_size": side, "patch_size": _side(v, "patch_size"), "channels": v.int("num_channels", 3)}
    if naflex:
        tower["position_rows"] = v.int("num_patches")
    if paddle:
        tower["position_rows"] = (v.int("image_size") // v.int("patch_size")) ** 2
    if kind == "radio":
        return {**_radio(v, d, heads, act), **tower, "projector": projector, **over}
    if kind == "ovis2_vision":
        return {**_ovis2(v, d, heads, act), **tower, "projector": projector, **over}
    if kind in ("internvl_vision", "qianfan_ocr_vision"):
        return {"layers": _internvit(v, d, heads, act), **tower, **_internvit_ends(v), "projector": projector, **over}
    if kind == "step3p5_vision":  # Step3p7VisionModel: InternViT's layers, biased q/k/v/out, pre_layernorm, no post norm
        layers = {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
            # Step3p7VisionConfig.__post_init__ sets intermediate_size to int(hidden_size × mlp_ratio), whatever is stated
            "ffn": {"kind": "dense", "d_ff": int(d * v.float("mlp_ratio", 8960 / 1536)), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        }
        form = {"patch_bias": False, "pre_norm": True, "post_norm": False, "layer_scale": True}
        tower["position_rows"] = (v.int("image_size") // v.int("patch_size")) ** 2  # resized to other images (bilinear)
        return {"layers": layers, **tower, **form, "projector": projector, **over}
    if kind == "pixtral":
        attention = {"n_heads": heads, "head_dim": v.int("head_dim", d // heads)}
        layers = {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": attention,
            "ffn": {"kind": "gated", "d_ff": v.int("intermediate_size"), "activation": act},
            "norm": {"kind": "rmsnorm", "per_layer": 2, "final": False},
        }
        form = {"patch_bias": False, "position_table": False, "pre_norm": True, "post_norm": False}
        return {"layers": layers, **tower, **form, "projector": projector, **over}
    # Llama 4's: CLIP's form (a class token, pre- and post-norms, no bias on its patches' linear, an unfold)
    # Kosmos-2's and GIT's: CLIP's
    clip = kind in ("clip_vision_model", "llama4_vision_model", "kosmos_2_vision_model", "git_vision_model")
    if rotary:
        tower["position_table"] = False
    return {
        "layers": {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": _mlp_width(v, kind, d), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        },
        **tower,
        "patch_bias": not clip,
        "class_token": clip,
        "pre_norm": clip,
        "head": kind in ("siglip_vision_model", "siglip2_vision_model") and v.bool("vision_use_head", True),
        "projector": projector,
        **over,
    }


def _gemma4(v: Config, d: int, heads: int) -> dict:
    """Gemma 4's vision encoder (Gemma4VisionModel): patches embedded by a linear without a bias (input_proj) and a
    learned table of two axes' rows (position_embedding_table, 2 × position_embedding_size, the x and y rows of a
    patch summed), Gemma's layers (four RMSNorms, q and k RMSNorms over each head, a v norm without a weight, no biases,
    a gated MLP, 2-D rotary positions: no multiply-adds); no norm before or after them. Its images have no fixed size
    (the processor fits each to its soft-token budget): an image's figures are at GEMMA4_IMAGE_SIZE pixels a side."""
    bias = v.bool("attention_bias", False)
    return {
        "layers": {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": {
                "n_heads": heads,
                "n_kv_heads": v.int("num_key_value_heads", heads),
                "head_dim": v.int("head_dim", d // heads),
                "qkv_bias": bias,
                "o_bias": bias,
                "qk_norm": "head",
            },
            "ffn": {"kind": "gated", "d_ff": v.int("intermediate_size"), "activation": v.activation("hidden_activation", "gelu_tanh")},
            "norm": {"kind": "rmsnorm", "per_layer": 4, "final": False},
        },
        "image_size": GEMMA4_IMAGE_SIZE,
        "patch_size": v.int("patch_size"),
        "patch_bias": False,
        "position_rows": 2 * v.int("position_embedding_size"),
        "pre_norm": False,
        "post_norm": False,
    }


def _moonvit(v: Config, d: int, heads: int) -> dict:
    """Kimi K2.5's MoonViT (Kimi_K25VisionModel; Kimi Team 2025, Kimi-VL): patches embedded by a convolution with a
    bias, a learned pos_emb_height × pos_emb_width table resampled to the patches (bicubic, an embedding_bag: no
    multiply-adds) and a fixed time sinusoid; CLIP's layers (LayerNorms, q/k/v and proj with biases, a two-layer MLP
    with biases) with 2-D rotary positions; final_layernorm. Its images have no fixed size: an image's figures are
    at MOONVIT_IMAGE_SIZE pixels a side unless --image-size says otherwise."""
    act = v.activation("hidden_act", "gelu_tanh")
    merge = v.int_list("merge_kernel_size") if v.has("merge_kernel_size") else [2, 2]
    if len(merge) != 2 or merge[0] != merge[1]:
        raise v.fail("merge_kernel_size", f"{merge}: a square kernel is read (not yet another)")
    return {
        "layers": {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": v.int("intermediate_size"), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        },
        "image_size": MOONVIT_IMAGE_SIZE,
        "patch_size": v.int("patch_size"),
        "patch_bias": True,
        "position_rows": v.int("pos_emb_height") * v.int("pos_emb_width"),
        "pre_norm": False,
        "post_norm": True,
    }


def _kosmos_2_5(v: Config, d: int, heads: int) -> dict:
    """Kosmos-2.5's vision encoder (Kosmos2_5VisionModel, Pix2Struct's form; Lee et al. 2023): flattened patches of
    patch_embed_hidden_size pixels (3 channels × patch²) through patch_projection (a linear with a bias), a row and a
    column table of max_num_patches rows each (a patch's two rows summed: no multiply-adds); T5's layers (RMSNorms
    before each sublayer, q/k/v/output without biases, heads of head_dim, a gated MLP wi_0 · wi_1 → wo of
    dense_act_fn), a final RMSNorm (layernorm). Its processor pads every image to max_num_patches patches, which the
    layers run over: an image's figures are at that many patches, √max_num_patches patches a side."""
    n, pixels = v.int("max_num_patches"), v.int("patch_embed_hidden_size")
    side, p = isqrt(n), isqrt(pixels // 3)
    if side * side != n:
        raise v.fail("max_num_patches", f"{n} patches are not a square grid (read: a square one)")
    if 3 * p * p != pixels:
        raise v.fail("patch_embed_hidden_size", f"{pixels} pixels are not 3 channels of a square patch")
    return {
        "layers": {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": {"n_heads": heads, "head_dim": v.int("head_dim", 64)},
            "ffn": {"kind": "gated", "d_ff": v.int("intermediate_size"), "activation": v.activation("dense_act_fn", "gelu_new")},
            "norm": {"kind": "rmsnorm", "per_layer": 2, "final": False},
        },
        "image_size": side * p,
        "patch_size": p,
        "patch_bias": True,
        "position_rows": 2 * n,
        "pre_norm": False,
        "post_norm": True,
    }


PIX2STRUCT_IMAGE_SIZE = 1024  # pixels a side: 64 × 64 patches of 16, the 4,096 rows of its row and column tables


def _pix2struct(v: Config, d: int, heads: int) -> dict:
    """Pix2Struct's encoder (Pix2StructVisionModel; Lee et al. 2023, §2.1): Kosmos-2.5's form (_kosmos_2_5 above), its
    MLP d_ff wide, its attention's heads d_kv wide, a row and a column table of seq_len rows each. Its processor pads
    every image to max_patches flattened patches (2,048 by default, no square grid): an image's figures are at
    PIX2STRUCT_IMAGE_SIZE pixels a side, the tables' whole √seq_len × √seq_len grid, unless --image-size says otherwise."""
    pixels = v.int("patch_embed_hidden_size")
    p = isqrt(pixels // 3)
    if 3 * p * p != pixels:
        raise v.fail("patch_embed_hidden_size", f"{pixels} pixels are not 3 channels of a square patch")
    rows = v.int("seq_len")
    side = isqrt(rows) * p
    return {
        "layers": {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": {"n_heads": heads, "head_dim": v.int("d_kv")},
            "ffn": {"kind": "gated", "d_ff": v.int("d_ff"), "activation": v.activation("dense_act_fn", "gelu_new")},
            "norm": {"kind": "rmsnorm", "per_layer": 2, "final": False},
        },
        "image_size": side,
        "patch_size": p,
        "patch_bias": True,
        "position_rows": 2 * rows,
        "pre_norm": False,
        "post_norm": True,
    }


def _mlp_width(v: Config, kind: str, d: int) -> int:
    """The MLP's width: intermediate_size, or Janus's hidden_size × mlp_ratio (JanusVisionMLP); Janus's q and k norms
    (use_qk_norm) are not read yet."""
    if kind != "janus_vision_model":
        return v.int("intermediate_size")
    if v.bool("use_qk_norm", False):
        raise v.fail("use_qk_norm", "Janus's q and k norms are not read yet")
    return int(d * v.float("mlp_ratio", 4.0))


def _inkling2(v: Config, d: int, heads: int) -> dict:
    """Inkling 2's vision model (Inkling2VisionModel): each patch's pixels embedded by a linear without a bias, a table
    of posemb_grid_size² rows interpolated to the patches (bilinear: a weighted sum of four rows, no multiply-adds to
    count), a class token before each image's patches with a learned position of its own (class_embedding,
    cls_position_embedding), pre_layernorm; layers of InternViT's form (layernorm_before and layernorm_after, q/k/v and
    out_proj with biases, CLIP's MLP with biases, each sublayer's output scaled by lambda_1 and lambda_2) with 2-D rotary
    positions; no final norm. Its images have no fixed size: an image's figures are at INKLING2_IMAGE_SIZE pixels a side
    unless --image-size says otherwise."""
    layers = {
        "d_model": d,
        "n_layers": v.int("num_hidden_layers"),
        "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": v.int("intermediate_size"), "bias": True, "activation": v.activation("hidden_act", "gelu")},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
    }
    return {
        "layers": layers,
        "image_size": INKLING2_IMAGE_SIZE,
        "patch_size": v.int("patch_size"),
        "channels": v.int("num_channels", 3),
        "patch_bias": False,
        "class_token": True,
        "class_position": True,
        "position_rows": v.int("posemb_grid_size") ** 2,
        "pre_norm": True,
        "post_norm": False,
        "layer_scale": True,
    }


def _radio(v: Config, d: int, heads: int, act: str) -> dict:
    """RADIO (RadioModel; Ranzinger et al. 2024, AM-RADIO): each patch's pixels by a linear without a bias
    (patch_projection), a table of (max_img_size / patch_size)² positions interpolated to the patches (bilinear, no
    multiply-adds), num_cls_tokens + num_registers learned rows before them (cls_register_token); layers of LayerNorms,
    q/k/v with biases as qkv_bias and o_proj with one, an MLP of hidden_size × mlp_ratio with biases, each sublayer's
    output scaled (layer_scale1, layer_scale2); no final norm; where video_temporal_patch_size, video_patch_projection
    (Linear(video_patch_dim, width)), which no image runs. The features read are the patches' (the prefix dropped)."""
    if v.bool("use_swiglu_ffn", False):
        raise v.fail("use_swiglu_ffn", "RADIO's SwiGLU MLP is not read yet")
    channels, patch = v.int("num_channels", 3), v.int("patch_size")
    if v.int("patch_dim", channels * patch * patch) != channels * patch * patch:
        raise v.fail("patch_dim", f"{v.int('patch_dim')} is not num_channels × patch_size² ({channels * patch * patch})")
    layers = {
        "d_model": d,
        "n_layers": v.int("num_hidden_layers"),
        "attention": {"n_heads": heads, "qkv_bias": v.bool("qkv_bias", True), "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": int(d * v.float("mlp_ratio", 4.0)), "bias": True, "activation": act},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
    }
    video = v.int("video_patch_dim") if v.data.get("video_temporal_patch_size") is not None else 0
    return {
        "layers": layers,
        "patch_bias": False,
        "position_rows": (v.int("max_img_size") // patch) ** 2,
        "registers": v.int("num_cls_tokens") + v.int("num_registers"),
        "video_patch": video,
        "pre_norm": False,
        "post_norm": False,
        "layer_scale": True,
    }


def _ovis2(v: Config, d: int, heads: int, act: str) -> dict:
    """Ovis 2's vision transformer (Ovis2VisionTransformer, AIMv2's form): SigLIP's patch convolution with a bias and
    learned table, an RMSNorm over each patch's embedding before its position is added (embeddings.rms_norm); layers
    of RMSNorms (rms_norm1, rms_norm2), q/k/v and out_proj with biases as qkv_bias and a gated MLP with biases as
    mlp_bias (gate_proj, up_proj, down_proj); a final RMSNorm (rms_norm)."""
    bias = v.bool("qkv_bias", False)
    layers = {
        "d_model": d,
        "n_layers": v.int("num_hidden_layers"),
        "attention": {"n_heads": heads, "qkv_bias": bias, "o_bias": bias},
        "ffn": {"kind": "gated", "d_ff": v.int("intermediate_size"), "bias": v.bool("mlp_bias", False), "activation": act},
        "norm": {"kind": "rmsnorm", "per_layer": 2, "final": False},
    }
    return {"layers": layers, "patch_bias": True, "patch_norm": True, "pre_norm": False, "post_norm": True}


def _minimax_m3(v: Config, d: int, heads: int) -> dict:
    """MiniMax M3 VL's vision model (MiniMaxM3VLVisionModel): patches of temporal_patch_size frames (an image repeated
    to fill them) embedded by a 3-D convolution without a bias, pre_layrnorm, CLIP's layers (LayerNorms, q/k/v and
    out_proj with biases, fc1 → hidden_act → fc2 with biases) with 3-D rotary positions (no table), no final norm; each
    image attends within itself. Its images have no fixed size (the processor resizes them): an image's figures are at
    its vision_config's image_size unless --image-size says otherwise."""
    act = v.activation("hidden_act", "gelu")
    layers = {
        "d_model": d,
        "n_layers": v.int("num_hidden_layers"),
        "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": v.int("intermediate_size"), "bias": True, "activation": act},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
    }
    return {
        "layers": layers,
        "image_size": v.int("image_size"),
        "patch_size": v.int("patch_size"),
        "channels": v.int("num_channels", 3),
        "frames": v.int("temporal_patch_size", 2),
        "patch_bias": False,
        "position_table": False,
        "pre_norm": True,
        "post_norm": False,
    }


def _side(v: Config, key: str) -> int:
    """A square's side: a number, or [height, width] equal (InternVL's image_size and patch_size)."""
    value = v.data.get(key)
    if isinstance(value, list) and len(value) == 2 and value[0] == value[1]:
        return v.int_list(key)[0]
    return v.int(key)


def _internvit(v: Config, d: int, heads: int, act: str) -> dict:
    """InternViT's layers as transformers' InternVLVisionModel builds them: layernorm_before and layernorm_after
    (LayerNorm or RMSNorm by norm_type), q/k/v with attention_bias, an output projection with a bias, an MLP with biases,
    each sublayer's output scaled by a learned vector (lambda_1, lambda_2)."""
    if v.bool("use_qk_norm", False):
        raise v.fail("use_qk_norm", "InternViT's q and k norms (InternViT-6B) are not read yet")
    norm = "rmsnorm" if v.data.get("norm_type") == "rms_norm" else "layernorm"
    bias = v.bool("attention_bias", False)
    return {
        "d_model": d,
        "n_layers": v.int("num_hidden_layers"),
        "attention": {"n_heads": heads, "qkv_bias": bias, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": v.int("intermediate_size"), "bias": True, "activation": act},
        "norm": {"kind": norm, "per_layer": 2, "final": False},
    }


def _internvit_ends(v: Config) -> dict:
    """InternViT's embeddings and ends: a class token, a convolution with a bias, a learned position a position; a
    final LayerNorm unless use_mean_pooling (the default: none)."""
    return {
        "class_token": True,
        "patch_bias": True,
        "pre_norm": False,
        "post_norm": not v.bool("use_mean_pooling", True),
        "layer_scale": True,
    }


# The module names of CLIP's and SigLIP's vision models (their layers') and of the projectors around them, for
# ``verify --hf`` and checkpoints: where a parameter's path matches a tower's prefix, the rest of it names a
# component of the ``vision`` part (sources/hf/names.py).
LAYER_MODULES = (
    (r"conv\.in_proj$", "conv.in_proj"),  # LFM3-VL's gated depthwise convolution layers
    (r"conv\.spatial_conv$", "conv.conv"),
    (r"conv\.out_proj$", "conv.out_proj"),
    (r"feed_forward\.w1$", "ffn.gate"),
    (r"feed_forward\.w3$", "ffn.up"),
    (r"feed_forward\.w2$", "ffn.down"),
    (r"(operator_norm|ffn_norm)$", "norms"),
    (r"attention\.projection_layer$", "attn.o"),  # InternViT's
    (r"self_attn\.projection_layer$", "attn.o"),  # Janus's
    (r"layernorm_(before|after)$", "norms"),
    (r"attention\.q_proj$", "attn.q"),  # Pixtral's
    (r"attention\.k_proj$", "attn.k"),
    (r"attention\.v_proj$", "attn.v"),
    (r"attention\.o_proj$", "attn.o"),
    (r"feed_forward\.gate_proj$", "ffn.gate"),
    (r"feed_forward\.up_proj$", "ffn.up"),
    (r"feed_forward\.down_proj$", "ffn.down"),
    (r"(attention_norm|ffn_norm)$", "norms"),
    (r"attention\.out_proj$", "attn.o"),  # Ovis 2's
    (r"ffn\.gate_proj$", "ffn.gate"),
    (r"ffn\.up_proj$", "ffn.up"),
    (r"ffn\.down_proj$", "ffn.down"),
    (r"rms_norm[12]$", "norms"),
    (r"attn\.qkv$", "attn.q+k+v"),  # Qwen's fused projections
    (r"mlp\.lin1$", "ffn.up"),  # SAM's
    (r"mlp\.lin2$", "ffn.down"),
    (r"attn\.proj$", "attn.o"),
    (r"(^|\.)attn\.q$", "attn.q"),  # Qwen2.5-Omni's, apart
    (r"(^|\.)attn\.k$", "attn.k"),
    (r"(^|\.)attn\.v$", "attn.v"),
    (r"(^|\.)attn\.q_norm$", "attn.q_norm"),  # GLM-OCR's
    (r"(^|\.)attn\.k_norm$", "attn.k_norm"),
    (r"mlp\.gate_proj$", "ffn.gate"),
    (r"mlp\.up_proj$", "ffn.up"),
    (r"mlp\.down_proj$", "ffn.down"),
    (r"mlp\.linear_fc1$", "ffn.up"),
    (r"mlp\.linear_fc2$", "ffn.down"),
    (r"norm[12]$", "norms"),
    (r"self_attn\.q_proj$", "attn.q"),
    (r"self_attn\.k_proj$", "attn.k"),
    (r"self_attn\.v_proj$", "attn.v"),
    (r"self_attn\.out_proj$", "attn.o"),
    (r"self_attn\.projection$", "attn.o"),  # BLIP-2's
    (r"self_attn\.o_proj$", "attn.o"),  # Llama 4's
    (r"mlp\.fc1$", "ffn.up"),
    (r"mlp\.fc2$", "ffn.down"),
    (r"layer_norm[12]$", "norms"),
    (r"attention\.query$", "attn.q"),  # Kosmos-2.5's T5-form layers
    (r"attention\.key$", "attn.k"),
    (r"attention\.value$", "attn.v"),
    (r"attention\.output$", "attn.o"),
    (r"mlp\.wi_0$", "ffn.gate"),
    (r"mlp\.wi_1$", "ffn.up"),
    (r"mlp\.wo$", "ffn.down"),
    (r"(pre_attention_layer_norm|pre_mlp_layer_norm)$", "norms"),
    (r"(input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|post_feedforward_layernorm)$", "norms"),
    (r"(^|\.)attn\.q_proj$", "attn.q"),  # Kimi K2.5's MoonViT
    (r"(^|\.)attn\.k_proj$", "attn.k"),
    (r"(^|\.)attn\.v_proj$", "attn.v"),
    (r"self_attn\.q_proj\.linear$", "attn.q"),  # Gemma 4's clippable linears and its q and k norms
    (r"self_attn\.k_proj\.linear$", "attn.k"),
    (r"self_attn\.v_proj\.linear$", "attn.v"),
    (r"self_attn\.o_proj\.linear$", "attn.o"),
    (r"self_attn\.q_norm$", "attn.q_norm"),
    (r"self_attn\.k_norm$", "attn.k_norm"),
    (r"mlp\.gate_proj\.linear$", "ffn.gate"),
    (r"mlp\.up_proj\.linear$", "ffn.up"),
    (r"mlp\.down_proj\.linear$", "ffn.down"),
)
TOP_MODULES = (
    (r"^patch_embed\.projection$", "patch_embed"),  # SAM's
    (r"^patch_embed$", "patch_embed"),  # LFM3-VL's linear patch embedding and its norm
    (r"^embedding_norm$", "embed_norm"),
    (r"^neck\.conv1$", "neck.conv1"),
    (r"^neck\.conv2$", "neck.conv2"),
    (r"^neck\.layer_norm[12]$", "neck.norms"),
    (r"embeddings\.patch_embedding$", "patch_embed"),
    (r"patch_conv$", "patch_embed"),  # Pixtral's
    (r"patch_embed\.proj$", "patch_embed"),  # Qwen's
    (r"^embeddings\.proj$", "patch_embed"),  # MiniMax M3 VL's
    (r"embeddings\.patch_projection$", "patch_embed"),  # RADIO's
    (r"embeddings\.video_patch_projection$", "video_patch_embed"),
    (r"embeddings\.rms_norm$", "embed_norm"),  # Ovis 2's
    (r"^transformer\.rms_norm$", "post_norm"),
    (r"patch_embeddings\.projection$", "patch_embed"),  # InternViT's
    (r"pos_embed$", "pos_embed"),
    (r"ln_pre$", "pre_norm"),
    (r"^ln_post$", "post_norm"),  # MUSE Glimmer's
    (r"^ln$", "post_norm"),  # ERNIE 4.5-VL's
    (r"^patch_embedder\.patch_embedding$", "patch_embed"),
    (r"^patch_embedder\.position_embedding_table$", "pos_embed"),
    (r"embeddings\.position_embedding$", "pos_embed"),
    (r"embeddings$", "class_embed"),  # CLIP's class_embedding, a parameter of the embeddings module
    (r"pre_layrnorm$", "pre_norm"),
    (r"pre_layernorm$", "pre_norm"),  # Inkling 2's
    (r"patch_embedder\.input_proj$", "patch_embed"),  # Gemma 4's
    (r"patch_embedding\.linear$", "patch_embed"),  # Llama 4's unfold and linear
    (r"layernorm_pre$", "pre_norm"),
    (r"^patch_embedding$", "patch_embed"),  # Llama 3.2 Vision's
    (r"pre_layernorm$", "pre_norm"),  # Step3p7's
    (r"post_conv_layernorm$", "pre_norm"),  # GLM-4V's
    (r"final_layernorm$", "post_norm"),  # MoonViT's
    (r"layernorm_post$", "post_norm"),
    (r"post_layernorm$", "post_norm"),
    (r"embeddings\.patch_projection$", "patch_embed"),  # Kosmos-2.5's
    (r"embeddings\.(row|column)_embedder$", "pos_embed"),
    (r"^layernorm$", "post_norm"),
    (r"^pooler\.dense$", "pooler.dense"),  # ViTModel's pooler (VisionEncoderDecoderModel's encoder)
    (r"head\.attention$", "head.attn.q+k+v"),  # nn.MultiheadAttention's in_proj: the query's, keys' and values' rows
    (r"head\.attention\.out_proj$", "head.attn.o"),
    (r"head\.layernorm$", "head.norm"),
    (r"head\.mlp\.fc1$", "head.mlp.up"),
    (r"head\.mlp\.fc2$", "head.mlp.down"),
    (r"head$", "head.probe"),
)
PROJECTOR_MODULES = (
    (r"conv_upsampler1$", "downsample_1"),  # GOT-OCR 2.0's strided convolutions and linear
    (r"conv_upsampler2$", "downsample_2"),
    (r"^multimodal_projector$", "linear"),
    (r"visual_projection\.0$", "linear"),  # GIT's visual_projection: Linear, then LayerNorm
    (r"visual_projection\.1$", "out_norm"),
    (r"x_attn\.q_proj$", "q"),  # Kosmos-2's latent queries' cross-attention
    (r"x_attn\.k_proj$", "k"),
    (r"x_attn\.v_proj$", "v"),
    (r"x_attn\.out_proj$", "o"),
    (r"^dense$", "dense"),
    (r"cross_attn\.(layer_norm|layer_norm_kv)$", "norms"),  # Aria's query attention
    (r"cross_attn\.q_proj$", "q"),
    (r"cross_attn\.k_proj$", "k"),
    (r"cross_attn\.v_proj$", "v"),
    (r"cross_attn\.multihead_attn$", "in_proj"),
    (r"cross_attn\.multihead_attn\.out_proj$", "out_proj"),
    (r"feed_forward\.linear_in$", "ffn.up"),
    (r"feed_forward\.linear_out$", "ffn.down"),
    (r"(gate_proj|up_proj)$", "linear_1"),  # GLM-4V's merger: its SwiGLU's two halves
    (r"down_proj$", "linear_2"),
    (r"in_proj$", "linear_1"),  # Kimi K2.5's mm_projector
    (r"out_proj$", "linear_2"),
    (r"embedding_projection$", "linear"),  # Gemma 4's embed_vision
    (r"mlp\.(fc1|fc2)$", None),  # Llama 4's vision adapter
    (r"(merge_linear_1|merge_linear_2)$", None),  # MiniMax M3 VL's second MLP
    (r"(linear_1|linear_2|linear)$", None),  # by their own names
    (r"(projector_layernorm|mm_soft_emb_norm|layernorm|pre_norm|norm)$", "norm"),
    (r"patch_merger\.merging_layer$", "patch_merger"),
    (r"proj$", "linear"),  # Idefics3's modality_projection
    (r"ln_q$", "norm"),  # Qwen's mergers
    (r"(mlp\.0|linear_fc1|linear1)$", "linear_1"),  # Qwen's, DeepSeek-VL's aligner
    (r"(mlp\.2|linear_fc2|linear2)$", "linear_2"),
    (r"$", "linear"),  # Gemma 3's mm_input_projection_weight, a parameter of the projector itself
)
# Parameters a module holds itself, by the end of their path: InternViT's and Llama 4's tables and layer scales
PARAMETERS = (
    (r"attn\.rel_pos_h$", "attn.rel_pos_h"),  # SAM's decomposed relative position tables
    (r"attn\.rel_pos_w$", "attn.rel_pos_w"),
    (r"^pos_embed$", "pos_embed"),  # SAM's absolute table, a parameter of the encoder itself
    (r"embeddings\.cls_position_embedding$", "class_pos_embed"),  # Inkling 2's
    (r"embeddings\.cls_token$", "class_embed"),
    (r"embeddings\.position_embeddings$", "pos_embed"),
    (r"lambda_[12]$", "layer_scale"),
    (r"layer_scale[12]\.lambda1$", "layer_scale"),  # RADIO's
    (r"embeddings\.cls_register_token$", "registers"),
    (r"patch_embedder\.position_embedding_table$", "pos_embed"),  # Gemma 4's
    (r"^embeddings\.position_embedding$", "pos_embed"),  # BLIP-2's, a parameter of the embeddings module
    (r"pos_emb\.position_embeddings$", "pos_embed"),  # MoonViT's
    (r"^class_embedding$", "class_embed"),  # Llama 4's
    (r"^positional_embedding_vlm$", "pos_embed"),
    (r"^positional_embedding$", "pos_embed"),  # Molmo 2's, a parameter of its vision model
    (r"^gated_positional_embedding\.embedding$", "pos_embed"),  # Llama 3.2 Vision's tables and gates
    (r"^gated_positional_embedding\.tile_embedding\.weight$", "tile_pos_embed"),
    (r"^pre_tile_positional_embedding\.embedding\.weight$", "pre_tile_embed"),
    (r"^post_tile_positional_embedding\.embedding\.weight$", "post_tile_embed"),
    (r"^(gated_positional|pre_tile_positional|post_tile_positional)_embedding\.gate$", "tile_gates"),
    (r"\.gate_(attn|ffn)$", "gates"),  # its global layers' gates
)
# The configuration classes of the connectors and embedders read (a sparse perceiver_config's or vision_config's
# defaults; Gemma 4 Unified's encoder-free embedder, towers/vlm.py)
CONNECTOR_TYPES = (
    "idefics2_perceiver",
    "blip_2_qformer",
    "instructblip_qformer",
    "instructblipvideo_qformer",
    "gemma4_unified_vision",
    "idefics_perciever",  # IDEFICS' perceiver_config (transformers' spelling)
)
# Idefics2's perceiver resampler (parts/resampler.py), its modules by the end of their path
RESAMPLER_MODULES = (
    (r"^latents$", "latents"),
    (r"(input_latents_norm|input_context_norm)$", "norms"),
    (r"self_attn\.q_proj$", "attn.q"),
    (r"self_attn\.k_proj$", "attn.k"),
    (r"self_attn\.v_proj$", "attn.v"),
    (r"self_attn\.o_proj$", "attn.o"),
    (r"post_attention_layernorm$", "ffn.norm"),
    (r"mlp\.gate_proj$", "ffn.gate"),
    (r"mlp\.up_proj$", "ffn.up"),
    (r"mlp\.down_proj$", "ffn.down"),
    (r"^norm$", "norm"),
    (r"(context_layer_norm|latents_layer_norm)$", "norms"),  # IDEFICS': blocks.i.0 its attention, blocks.i.1 its MLP
    (r"\.0\.q_proj$", "attn.q"),
    (r"\.0\.k_proj$", "attn.k"),
    (r"\.0\.v_proj$", "attn.v"),
    (r"\.0\.output_proj$", "attn.o"),
    (r"\.1\.ln$", "ffn.norm"),
    (r"\.1\.fc$", "ffn.up"),
    (r"\.1\.c_proj$", "ffn.down"),
    (r"^layer_norm$", "norm"),
)
# BLIP-2's Q-Former (parts/qformer.py), its modules by the end of their path (cross-attention's before attention's)
QFORMER_MODULES = (
    (r"^(embeddings\.)?layernorm$", "embed_norm"),  # InstructBLIP's: its embeddings'
    (r"embeddings\.word_embeddings$", "text.word_embed"),
    (r"embeddings\.position_embeddings$", "text.pos_embed"),
    (r"crossattention\.attention\.query$", "cross.q"),
    (r"crossattention\.attention\.key$", "cross.k"),
    (r"crossattention\.attention\.value$", "cross.v"),
    (r"crossattention\.output\.dense$", "cross.o"),
    (r"attention\.attention\.query$", "attn.q"),
    (r"attention\.attention\.key$", "attn.k"),
    (r"attention\.attention\.value$", "attn.v"),
    (r"attention\.output\.dense$", "attn.o"),
    (r"intermediate_query\.dense$", "ffn.up"),
    (r"output_query\.dense$", "ffn.down"),
    (r"\.intermediate\.dense$", "text_ffn.up"),  # InstructBLIP's MLP for the instruction's tokens
    (r"\.output\.dense$", "text_ffn.down"),
    (r"LayerNorm$", "norms"),
)
# MiniCPM-V 4.6's in-tower merger (parts/window_merger.py), its modules by the end of their path
MERGER_MODULES = (
    (r"self_attn\.q_proj$", "attn.q"),
    (r"self_attn\.k_proj$", "attn.k"),
    (r"self_attn\.v_proj$", "attn.v"),
    (r"self_attn\.out_proj$", "attn.o"),
    (r"^layer_norm1$", "norm1"),
    (r"^pre_norm$", "pre_norm"),
    (r"^linear_1$", "linear_1"),
    (r"^linear_2$", "linear_2"),
)
# HunyuanOCR's patch merger (parts/conv_merger.py), its modules and parameters by the end of their path
CONV_MERGER_MODULES = (
    (r"^before_rms$", "norm"),
    (r"^proj_conv$", "conv"),
    (r"^proj_out$", "conv_out"),
    (r"^image_newline$", "newline"),
    (r"^mlp$", "linear"),
    (r"^image_(begin|end)$", "ends"),
    (r"^image_sep$", "sep"),
    (r"^after_rms$", "post_norm"),
)
# ERNIE 4.5-VL's variable-resolution resampler (parts/variable_resampler.py), its modules by the end of their path
VARIABLE_MODULES = (
    (r"^spatial_linear\.fc1$", "spatial.fc1"),
    (r"^spatial_linear\.fc2$", "spatial.fc2"),
    (r"^spatial_linear\.ln$", "spatial.norm"),
    (r"^temporal_linear\.fc1$", "temporal.fc1"),
    (r"^temporal_linear\.fc2$", "temporal.fc2"),
    (r"^temporal_linear\.ln$", "temporal.norm"),
    (r"^mlp$", "linear"),
    (r"^after_norm$", "post_norm"),
)
# Molmo 2's adapter (parts/window_pooling.py), its modules by the end of their path
WINDOW_POOLING_MODULES = (
    (r"image_pooling_2d\.q_proj$", "attn.q"),
    (r"image_pooling_2d\.k_proj$", "attn.k"),
    (r"image_pooling_2d\.v_proj$", "attn.v"),
    (r"image_pooling_2d\.o_proj$", "attn.o"),
    (r"image_projector\.gate_proj$", "ffn.gate"),
    (r"image_projector\.up_proj$", "ffn.up"),
    (r"image_projector\.down_proj$", "ffn.down"),
)
TABLES = {"resampler": RESAMPLER_MODULES, "qformer": QFORMER_MODULES, "merger": MERGER_MODULES, "conv_merger": CONV_MERGER_MODULES}
TABLES["variable"] = VARIABLE_MODULES
TABLES["window_pooling"] = WINDOW_POOLING_MODULES
# (pattern, prefix, modules): the towers' and projectors' places in the whole classes and in checkpoints
TOWERS = (
    # Granite 4 Vision's Window Q-Former downsamplers: the spatial ones the projector, the layerwise ones its deepstack
    (r"spatial_projectors\.\d+\.qformer\.", "vision.projector.qformer.", "qformer"),
    (r"spatial_projectors\.\d+\.query$", "vision.projector.qformer.queries", "self"),
    (r"spatial_projectors\.\d+\.image_positions$", "vision.projector.qformer.positions", "self"),
    (r"spatial_projectors\.\d+\.norm\.", "vision.projector.norm", "self"),
    (r"spatial_projectors\.\d+\.out_linear\.", "vision.projector.linear", "self"),
    (r"layerwise_projectors\.\d+\.qformer\.", "vision.deepstack.qformer.", "qformer"),
    (r"layerwise_projectors\.\d+\.query$", "vision.deepstack.qformer.queries", "self"),
    (r"layerwise_projectors\.\d+\.image_positions$", "vision.deepstack.qformer.positions", "self"),
    (r"layerwise_projectors\.\d+\.norm\.", "vision.deepstack.norm", "self"),
    (r"layerwise_projectors\.\d+\.out_linear\.", "vision.deepstack.linear", "self"),
    (r"vision_tower\.patch_merger\.", "vision.projector.", "conv_merger"),  # HunyuanOCR's merger inside its tower
    (r"model\.resampler_model\.", "vision.projector.", "variable"),  # ERNIE 4.5-VL's, after its tower
    (r"multi_modal_projector\.(?=image_pooling_2d\.|image_projector\.)", "vision.projector.", "window_pooling"),  # Molmo 2's
    # Granite Docling's connector inside its vision model (towers/granite_docling.py): ln_in, the coarse path's
    # projection, ln_mid, mlp_fc2, ln_out; each path's deepstack mergers; the fine path's projection
    (r"vision_model\.connector\.ln_in\.", "vision.projector.norm", "self"),
    (r"vision_model\.connector\.coarse\.projection\.", "vision.projector.linear_1", "self"),
    (r"vision_model\.connector\.ln_mid\.", "vision.projector.mid_norm", "self"),
    (r"vision_model\.connector\.mlp_fc2\.", "vision.projector.linear_2", "self"),
    (r"vision_model\.connector\.ln_out\.", "vision.projector.out_norm", "self"),
    (r"vision_model\.connector\.coarse\.deepstack_mergers\.\d+\.layer_norm\.", "vision.deepstack.norm", "self"),
    (r"vision_model\.connector\.coarse\.deepstack_mergers\.\d+\.linear_1\.", "vision.deepstack.linear_1", "self"),
    (r"vision_model\.connector\.coarse\.deepstack_mergers\.\d+\.linear_2\.", "vision.deepstack.linear_2", "self"),
    (r"vision_model\.connector\.fine\.projection\.", "vision.fine.linear", "self"),
    (r"vision_model\.connector\.fine\.deepstack_mergers\.\d+\.layer_norm\.", "vision.fine_deepstack.norm", "self"),
    (r"vision_model\.connector\.fine\.deepstack_mergers\.\d+\.linear_1\.", "vision.fine_deepstack.linear_1", "self"),
    (r"vision_model\.connector\.fine\.deepstack_mergers\.\d+\.linear_2\.", "vision.fine_deepstack.linear_2", "self"),
    (r"high_res_vision_model\.vision_encoder\.", "vision.high_res.", "tower"),  # DeepSeek-VL hybrid's SAM tower
    (r"high_res_vision_neck\.conv1\.", "vision.high_res.global_neck.conv1", "self"),
    (r"high_res_vision_neck\.conv2\.", "vision.high_res.global_neck.conv2", "self"),
    (r"high_res_vision_neck\.layer_norm[12]\.", "vision.high_res.global_neck.norms", "self"),
    (r"high_res_vision_proj\.conv1\.", "vision.high_res.proj.conv1", "self"),
    (r"high_res_vision_proj\.conv2\.", "vision.high_res.proj.conv2", "self"),
    (r"high_res_vision_alpha$", "vision.high_res.alpha", "self"),
    (r"aligner\.vision_proj\.", "vision.projector.low", "self"),  # its aligner
    (r"aligner\.high_res_vision_proj\.", "vision.projector.high", "self"),
    (r"aligner\.proj\.", "vision.projector.linear", "self"),
    (r"connector\.perceiver_resampler\.", "vision.projector.resampler.", "resampler"),  # Idefics2's
    (r"model\.perceiver_resampler\.", "vision.projector.resampler.", "resampler"),  # IDEFICS'
    (r"qformer\.", "vision.projector.qformer.", "qformer"),  # BLIP-2's
    (r"query_tokens$", "vision.projector.qformer.queries", "self"),
    (r"language_projection\.", "vision.projector.linear", "self"),
    (r"vision_embed_tokens\.", "vision.patch_embed", "self"),  # Fuyu's
    (r"visual\.downsample\.", "vision.projector.patch_merger", "self"),  # GLM-4V's
    (r"visual\.merger\.proj\.", "vision.projector.lead", "self"),
    (r"projector\.readout\.0\.", "vision.projector.linear_1", "self"),  # VideoLLaMA 3's
    (r"projector\.readout\.2\.", "vision.projector.linear_2", "self"),
    (r"projector\.(weight|bias)$", "vision.projector.tail", "self"),  # HyperCLOVAX V2's, after its tower's merger
    (r"vision_model\.merger\.", "vision.projector.", "projector"),
    (r"vision_tower\.merger\.", "vision.projector.", "projector"),  # Inkling 2's, in its vision model
    (r"vision_final_layernorm\.", "vision.post_norm", "self"),  # Nemotron-H Omni's, over RADIO's features
    (r"vision_tower\.vit_merger\.", "vision.merger.", "merger"),  # MiniCPM-V 4.6's merger inside its tower
    (r"vqmodel\.encoder\.", "vision.generation.encoder", "self"),  # Janus's image generator
    (r"vqmodel\.decoder\.", "vision.generation.decoder", "self"),
    (r"vqmodel\.quantize\.", "vision.generation.codebook", "self"),
    (r"vqmodel\.(post_)?quant_conv\.", "vision.generation.quant_convs", "self"),
    (r"generation_embeddings\.", "vision.generation.embeddings", "self"),
    (r"generation_aligner\.", "vision.generation.aligner", "self"),
    (r"generation_head\.", "vision.generation.head", "self"),
    (r"model\.vision_adapter\.fc1\.", "vision.projector.adapter.fc1", "self"),  # MUSE Glimmer's adapter and projection
    (r"model\.vision_adapter\.fc2\.", "vision.projector.adapter.fc2", "self"),
    (r"model\.vision_projection\.weight$", "vision.projector.linear_1", "self"),
    (r"aligner\.fc1\.", "vision.projector.linear_1", "self"),  # Janus's vision aligner
    (r"aligner\.hidden_layers\.0\.", "vision.projector.linear_2", "self"),
    (r"vision_tower\.head_linear\.", "vision.projector.head", "self"),  # Ovis 2's visual tokenizer and table
    (r"vision_tower\.head_norm\.", "vision.projector.head_norm", "self"),
    (r"visual_embeddings_table\.", "vision.projector.table", "self"),
    # PP-FormulaNet's SAM encoder and its projector under model.encoder (its mBART decoder is the language model)
    (r"model\.encoder\.multi_modal_projector\.conv1\.", "vision.projector.downsample_1", "self"),
    (r"model\.encoder\.multi_modal_projector\.conv2\.", "vision.projector.downsample_2", "self"),
    (r"model\.encoder\.(?=(patch_embed\.|pos_embed$|neck\.|layers\.\d+\.(attn|mlp|layer_norm[12])\.))", "vision.", "tower"),
    (r"^encoder\.", "vision.", "tower"),  # Pix2Struct's encoder (its decoder is the language model)
    # Unlimited OCR's and DeepSeek-OCR 2's SAM encoder, its strided convolutions, their second encoder and its queries
    # (parts/deep_encoder.py)
    (r"vision_tower\.query_768_resolution\.", "vision.encoder.queries_small", "self"),
    (r"vision_tower\.query_1024_resolution\.", "vision.encoder.queries_large", "self"),
    (r"vision_tower\.sam_encoder\.proj\.conv1\.", "vision.downsample.conv1", "self"),
    (r"vision_tower\.sam_encoder\.proj\.conv2\.", "vision.downsample.conv2", "self"),
    (r"vision_tower\.sam_encoder\.", "vision.", "tower"),
    (r"vision_tower\.vision_encoder\.norm\.", "vision.encoder.norm", "self"),  # DeepSeek-OCR 2's final RMSNorm
    (r"vision_tower\.vision_encoder\.", "vision.encoder.", "tower"),
    (r"view_separator$", "vision.projector.separator", "self"),
    (r"vision_tower\.(vision_model\.)?", "vision.", "tower"),
    (r"image_tower\.", "vision.", "tower"),  # Video-LLaVA's two CLIP towers
    (r"video_tower\.", "vision.video_tower.", "tower"),
    (r"vision_model\.vision_adapter\.", "vision.projector.adapter.", "projector"),  # Llama 4's
    (r"vision_model\.model\.", "vision.", "tower"),  # Kosmos-2's CLIP tower
    (r"image_to_text_projection\.", "vision.projector.", "projector"),
    (r"git\.visual_projection\.", "vision.projector.", "projector"),  # GIT's
    (r"vision_model\.downsampler1\.", "vision.projector.downsample_1", "self"),  # Step3p7's
    (r"vision_model\.downsampler2\.", "vision.projector.downsample_2", "self"),
    (r"vision_model\.global_transformer\.", "vision.global.", "tower"),  # Llama 3.2 Vision's gated global layers
    (r"vision_model\.transformer\.", "vision.", "tower"),  # and its first layers
    (r"(vision_model|vision_encoder)\.", "vision.", "tower"),  # Idefics3's and SmolVLM's; LightOnOCR's
    (r"connector\.norm\.", "vision.projector.norm", "self"),  # UltraVBERT's, over what its modality_projection writes
    (
        r"(multi_modal_projector|vision_projection|connector\.modality_projection|visual\.merger|aligner)\.",
        "vision.projector.",
        "projector",
    ),
    (r"embed_vision\.patch_ln1\.", "vision.patch_norm", "self"),  # Gemma 4 Unified's encoder-free embedder
    (r"embed_vision\.patch_dense\.", "vision.patch_embed", "self"),
    (r"embed_vision\.patch_ln2\.", "vision.embed_norm", "self"),
    (r"embed_vision\.pos_embedding$", "vision.pos_embed", "self"),
    (r"embed_vision\.pos_norm\.", "vision.pos_norm", "self"),
    (r"embed_vision\.(multimodal_embedder\.)?", "vision.projector.", "projector"),  # Gemma 4's; Gemma 4 Unified's
    (r"mm_projector\.", "vision.projector.", "projector"),  # Kimi K2.5's
    (r"projector\.", "vision.projector.", "projector"),  # PaddleOCR-VL's
    (r"visual\.deepstack_merger_list\.\d+\.", "vision.deepstack.", "projector"),
    (r"model\.projector\.", "vision.projector.", "projector"),  # Cosmos3 Edge's patch merger
    (r"visual\.merger_list\.\d+\.", "vision.deepstack.", "projector"),  # Qwen3-Omni's
    (r"visual\.", "vision.", "tower"),
    (r"image_newline$", "vision.image_newline", "self"),
    (r"merger\.mlp\.0\.", "vision.projector.", "projector"),  # MiniCPM-V 4.6's merger after its tower
)


def tower_component(path: str, tower: str = "vision") -> str | None:
    """A whole model's parameter in a vision tower or its projector -> its component, or None; ``tower``: the part
    the model's multi_modal_projector belongs to (an audio model's is the audio part's)."""
    import re

    from ..names import LAYER

    for pattern, prefix, kind in TOWERS:
        found = re.search(r"(?:^|\.)" + pattern, path)
        if not found:
            continue
        if kind == "self":
            return prefix
        if kind in TABLES:
            rest = path[found.end() :]
            module = rest.rsplit(".", 1)[0] if "." in rest else rest
            return prefix + next((name for pat, name in TABLES[kind] if re.search(pat, module)), f"(unmatched) {module}")
        if kind == "projector" and "multi_modal_projector" in found.group(0):
            prefix = f"{tower}.projector."
        elif tower != "vision":  # an audio model has no vision tower
            continue
        rest = path[found.end() :]
        module = rest.rsplit(".", 1)[0] if "." in rest else ""
        if kind == "tower":
            own = next((name for pat, name in PARAMETERS if re.search(pat, rest)), None)
            if own:
                return prefix + own
        if kind == "projector" and rest == "query":  # Aria's learned queries, a parameter of the projector itself
            return prefix + "queries"
        if kind == "projector" and rest == "latent_query":  # Kosmos-2's
            return prefix + "latents"
        if kind == "projector":
            for pat, name in PROJECTOR_MODULES:
                hit = re.search(pat, module)
                if hit:
                    return prefix + (name or hit.group(1))
        layer = LAYER.search(module)
        if layer:
            for pat, name in LAYER_MODULES:
                if re.search(pat, layer.group(2)):
                    return prefix + name
        for pat, name in TOP_MODULES:
            if re.search(r"(?:^|\.)" + pat if pat != r"embeddings$" else r"^embeddings$", module):
                return prefix + name
        return f"(unmatched) {prefix}{module}"
    return None
