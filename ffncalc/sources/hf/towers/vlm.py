"""Vision-language wrappers read whole: each composes its text_config's language model (read by its text family) with
a vision tower (vit.py) and its projector, as transformers 5.23's classes build them."""

from __future__ import annotations

from math import isqrt

from ..config import Config
from . import sub_config, wrapper
from .vit import vit

GEMMA4_UNIFIED_IMAGE_SIZE = 768  # pixels a side: 16 × 16 patches of 48, 256 soft tokens


def _layers(c: Config) -> int:
    """How many of the tower's layers' outputs the projector reads, concatenated (vision_feature_layer: an index or
    a list of them)."""
    chosen = c.data.get("vision_feature_layer", -2)
    return len(chosen) if isinstance(chosen, list) else 1


@wrapper("llava", "llava_next", "vipllava")
def llava(c: Config) -> dict:
    """LlavaForConditionalGeneration (Liu et al. 2023): a CLIP vision tower; LlavaMultiModalProjector, Linear(vision
    width × the layers it reads, text width) → projector_hidden_act → Linear(text width, text width), biases as
    multimodal_projector_bias (default true); the tower's patches only ("default" strategy) or its class token too
    ("full"). VipLLaVA (Cai et al. 2024): five layers' features concatenated, a LayerNorm over them
    (projector_layernorm) first. LLaVA-NeXT: an image_newline row of the text width (model.image_newline)."""
    v = sub_config(c, "vision_config")
    width = v.int("hidden_size")
    vip = c.model_type == "vipllava"
    projector = {
        "width": width * (_layers(c) if vip else 1),
        "hidden": sub_config(c, "text_config").int("hidden_size"),
        "bias": True if vip else c.bool("multimodal_projector_bias", True),
        "activation": c.activation("projector_hidden_act", "gelu"),
        "norm": "layernorm" if vip else "none",
    }
    read_class = c.data.get("vision_feature_select_strategy", "default") == "full"
    return {"vision": vit(v, projector, read_class=read_class, newline=c.model_type == "llava_next")}


@wrapper("video_llava")
def video_llava(c: Config) -> dict:
    """VideoLlavaForConditionalGeneration (Lin et al. 2023, Video-LLaVA): LLaVA's projector (one, shared) over two CLIP
    towers of the vision_config, image_tower for images and video_tower for a video's frames, each with weights of its
    own; an image runs through image_tower alone (its layer vision_feature_layer, the class token dropped by
    "default")."""
    spec = llava(c)
    spec["vision"]["video_tower"] = True
    return spec


@wrapper("paligemma")
def paligemma(c: Config) -> dict:
    """PaliGemmaForConditionalGeneration (Beyer et al. 2024): a SigLIP tower without its pooling head
    (vision_use_head false: the class builds it so), PaliGemmaMultiModalProjector one Linear(vision width,
    projection_dim) with a bias."""
    v = sub_config(c, "vision_config")
    projector = {"width": v.int("hidden_size"), "bias": True}
    return {"vision": vit(v, projector, head=False)}


@wrapper("gemma3", "shieldgemma2")
def gemma3(c: Config) -> dict:
    """Gemma3ForConditionalGeneration (Gemma Team 2025): a SigLIP tower (its pooling head where vision_use_head:
    built, its output unread); Gemma3MultiModalProjector, an average pool of the patch grid towards
    √mm_tokens_per_image tokens a side, mm_soft_emb_norm (an RMSNorm of the vision width) and
    mm_input_projection_weight (vision width × text width, no bias)."""
    v = sub_config(c, "vision_config")
    side = isqrt(c.int("mm_tokens_per_image", 256))
    projector = {"width": v.int("hidden_size"), "bias": False, "norm": "rmsnorm", "pool_to": side}
    return {"vision": vit(v, projector)}


@wrapper("llava_onevision", "llava_next_video")
def llava_onevision(c: Config) -> dict:
    """LlavaOnevisionForConditionalGeneration (Li et al. 2024) and LlavaNextVideoForConditionalGeneration: LLaVA's
    projector over a SigLIP (OneVision) or CLIP (NeXT-Video) tower, and LLaVA-NeXT's image_newline row."""
    spec = llava(c)
    spec["vision"]["newline"] = True
    return spec


@wrapper("idefics3", "smolvlm")
def idefics3(c: Config) -> dict:
    """Idefics3ForConditionalGeneration (Laurençon et al. 2024) and SmolVLMForConditionalGeneration (Marafioti et al.
    2025): a SigLIP-built tower (Idefics3VisionTransformer: no pooling head), its features pixel-shuffled by
    scale_factor (default 2: 2 × 2 tokens into one of four times the width) and projected by the connector's
    modality_projection, one Linear(width · scale², text width) without a bias."""
    v = sub_config(c, "vision_config")
    projector = {"width": v.int("hidden_size"), "bias": False, "shuffle": c.int("scale_factor", 2)}
    return {"vision": vit(v, projector)}


@wrapper("mistral3", "lighton_ocr")
def mistral3(c: Config) -> dict:
    """Mistral3ForConditionalGeneration (Mistral Small 3.1 and later): a Pixtral tower; Mistral3MultiModalProjector,
    an RMSNorm of the vision width, the patch merger of spatial_merge_size² patches (Linear(width · 4, width), no
    bias), then Linear(width, text width) → projector_hidden_act → Linear(text width, text width), biases as
    multimodal_projector_bias (default false). LightOnOCR: the same tower and projector (vision_encoder,
    vision_projection), no biases."""
    v = sub_config(c, "vision_config")
    projector = {
        "width": v.int("hidden_size"),
        "hidden": sub_config(c, "text_config").int("hidden_size"),
        "bias": c.model_type in ("mistral3", "mistral_large4") and c.bool("multimodal_projector_bias", False),
        "activation": c.activation("projector_hidden_act", "gelu"),
        "norm": "rmsnorm",
        "merge": c.int("spatial_merge_size", 2),
    }
    return {"vision": vit(v, projector)}


@wrapper("mistral_large4")
def mistral_large4(c: Config) -> dict:
    """MistralLarge4ForConditionalGeneration (Mistral Large 4): Mistral 3's Pixtral tower and projector
    (MistralLarge4MultiModalProjector, MistralLarge4PatchMerger), its language model mistral_large4_text."""
    return mistral3(c)


@wrapper("cohere2_vision", "aya_vision")
def cohere2_vision(c: Config) -> dict:
    """Cohere2VisionForConditionalGeneration (Command A Vision) and AyaVisionForConditionalGeneration (Aya Vision): a
    SigLIP tower, its features pixel-shuffled by downsample_factor (2), then a SwiGLU MLP: Linear(width · 4,
    alignment_intermediate_size) with a bias, halved by silu(one half) ⊙ the other, Linear(half, text width) with a
    bias. Aya Vision: a LayerNorm over the shuffled features first; its intermediate size the text width unless
    alignment_intermediate_size is given."""
    v = sub_config(c, "vision_config")
    text = sub_config(c, "text_config").int("hidden_size")
    aya = c.model_type == "aya_vision"
    projector = {
        "width": v.int("hidden_size"),
        "hidden": c.int("alignment_intermediate_size", text) if aya else c.int("alignment_intermediate_size", 36864),
        "gated": True,
        "shuffle": c.int("downsample_factor", 2),
        "norm": "layernorm" if aya else "none",
    }
    return {"vision": vit(v, projector)}


@wrapper("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "qwen4_exp", "cosmos3_omni")
def qwen_vl(c: Config) -> dict:
    """Qwen2VLForConditionalGeneration, Qwen2_5_VLForConditionalGeneration (Bai et al. 2025), Qwen3VL, Qwen3VLMoe,
    Qwen3.5 and Qwen3.5-MoE (their towers without deepstack mergers), Qwen4-Exp (Qwen3.5-MoE's tower), and Cosmos3-Omni
    (Qwen3-VL's): a Qwen vision tower and its merger (towers/qwen.py) beside the language model of the text_config."""
    from .qwen import qwen_vision

    # files may name the tower by the wrapper's own type (Qwen2.5-VL's, Qwen3.5's), which its class reads as its tower's
    vision = sub_config(c, "vision_config", {c.model_type: f"{c.model_type}_vision"})
    if vision.model_type is None:  # none stated: the wrapper's class builds its own
        vision = sub_config(c, "vision_config", {None: f"{c.model_type}_vision"})  # type: ignore[dict-item]
    return {"vision": qwen_vision(vision)}


@wrapper("ernie4_5_vl_moe")
def ernie4_5_vl_moe(c: Config) -> dict:
    """Ernie4_5_VLMoeForConditionalGeneration (Baidu 2025, ERNIE 4.5-VL): Qwen2-VL's tower with patches of one frame,
    a linear patch embedding and a final LayerNorm (vision_tower), then the variable-resolution resampler
    (resampler_model) of 2 × 2 patches a token to the text width (towers/qwen.py, parts/variable_resampler.py), beside
    the language model of the text_config (ERNIE 4.5's layers with modality-isolated experts, ernie4_5_vl_moe_text)."""
    from .qwen import ernie_vision

    v = sub_config(c, "vision_config", {None: "ernie4_5_vl_moe_vision"})  # type: ignore[dict-item]
    return {"vision": ernie_vision(v, v.int("temporal_merge_size", 2))}


@wrapper("cohere_compass")
def cohere_compass(c: Config) -> dict:
    """CohereCompassForConditionalGeneration (Cohere, North Micro Vision): Qwen3VLForConditionalGeneration's class, its
    CohereCompassVisionModel Qwen3VLVisionModel (a Conv3d patch embedding with a bias, a table of num_position_embeddings
    rows interpolated to the patches, LayerNorm layers with a fused qkv, the merger and the deepstack mergers of
    deepstack_visual_indexes: towers/qwen.py) beside its Cohere 2-built language model (cohere_compass_text)."""
    return qwen_vl(c)


@wrapper("video_llama_3")
def video_llama_3(c: Config) -> dict:
    """VideoLlama3ForConditionalGeneration (Zhang et al. 2025, VideoLLaMA 3): its vision model (vit.py: SigLIP's layers,
    rotary positions), each image's patches kept one token each (its merge size 1: the bilinear resize to the same grid
    has no multiply-adds), then VideoLlama3Projector's readout, Linear(vision width, text width) → GELU → Linear(text
    width, text width), with biases."""
    v = sub_config(c, "vision_config")
    text = sub_config(c, "text_config").int("hidden_size")
    return {"vision": vit(v, {"width": v.int("hidden_size"), "hidden": text, "bias": True, "activation": "gelu"})}


@wrapper("inkling2")
def inkling2(c: Config) -> dict:
    """Inkling2ForConditionalGeneration (Thinking Machines, Inkling 2): its vision model (vit.py) and
    Inkling2VisionMerger: spatial_merge_size² patches side by side (the class token dropped), Linear(width · merge²,
    projection_hidden_dim) → hidden_act → Linear(projection_hidden_dim, text_hidden_size), biases as projector_bias."""
    v = sub_config(c, "vision_config")
    projector = {
        "width": v.int("hidden_size"),
        "hidden": v.int("projection_hidden_dim"),
        "bias": v.bool("projector_bias", False),
        "activation": v.activation("hidden_act", "gelu"),
        "shuffle": v.int("spatial_merge_size", 2),
        "out": v.int("text_hidden_size"),
    }
    return {"vision": vit(v, projector)}


@wrapper("minimax_m3_vl")
def minimax_m3_vl(c: Config) -> dict:
    """MiniMaxM3SparseForConditionalGeneration (MiniMax, MiniMax M3): its vision model (vit.py) and
    MiniMaxM3VLMultiModalProjector: over every patch Linear(vision width, projector_hidden_size) → GELU →
    Linear(projector_hidden_size, text width), then spatial_merge_size² of those side by side through
    Linear(text width · merge², projector_hidden_size) → GELU → Linear(projector_hidden_size, text width), with biases."""
    v = sub_config(c, "vision_config")
    hidden = c.int("projector_hidden_size", 6144)
    projector = {"width": v.int("hidden_size"), "hidden": hidden, "then": hidden, "shuffle": v.int("spatial_merge_size", 2)}
    return {"vision": vit(v, projector)}


@wrapper("ovis2")
def ovis2(c: Config) -> dict:
    """Ovis2ForConditionalGeneration (Lu et al. 2024, Ovis; Ovis 2): its vision transformer (vit.py), then its visual
    tokenizer and embedding table (parts/projector.py: ``vocab``): hidden_stride² patches side by side (Ovis2VisionModel),
    head_linear to vocab_size − num_visual_indicator_tokens logits, head_norm, a softmax, and visual_embeddings_table
    (vocab_size rows of the wrapper's hidden_size, built at that width whatever the text's) read by the probabilities."""
    v = sub_config(c, "vision_config")
    if v.data.get("tokenize_function", "softmax") != "softmax":
        raise v.fail("tokenize_function", f"{v.data.get('tokenize_function')!r}: read with softmax, the default (not yet another)")
    stride = v.int("hidden_stride", 1)
    projector = {
        "width": v.int("hidden_size"),
        "vocab": v.int("vocab_size"),
        "indicators": v.int("num_visual_indicator_tokens"),
        "shuffle": stride if stride > 1 else 0,
        "out": c.int("hidden_size", sub_config(c, "text_config").int("hidden_size")),  # the table's width, as stated
    }
    return {"vision": vit(v, projector)}


@wrapper("janus")
def janus(c: Config) -> dict:
    """JanusForConditionalGeneration (Wu et al. 2024, Janus): a SigLIP-built tower (JanusVisionModel: no pooling head)
    and JanusVisionAlignerMLP, fc1 Linear(vision width, projection_dim) → GELU → Linear(projection_dim,
    projection_dim), with biases; beside them the image generator's parameters (parts/generation.py: the VQ-VAE of
    vq_config, generation embeddings, aligner and head), which no image it reads runs through."""
    v = sub_config(c, "vision_config")
    q = sub_config(c, "vq_config")
    if v.int("depth", 2) != 2:
        raise v.fail("depth", f"{v.int('depth')}: the aligner is read with two linears (depth 2, the default; not yet another)")
    width = v.int("projection_dim")
    projector = {"width": v.int("hidden_size"), "hidden": width, "bias": True, "activation": v.activation("hidden_act", "gelu")}
    projector["out"] = width  # its second linear writes projection_dim features, whatever the text's width
    generator = {
        "base": q.int("base_channels"),
        "multipliers": q.int_list("channel_multiplier"),
        "res_blocks": q.int("num_res_blocks"),
        "latent": q.int("latent_channels"),
        "embed_dim": q.int("embed_dim"),
        "codes": q.int("num_embeddings"),
        "width": q.int("projection_dim"),
        "token_width": q.int("image_token_embed_dim"),
        "in_channels": q.int("in_channels", 3),
        "out_channels": q.int("out_channels", 3),
        "double_latent": q.bool("double_latent", False),
        "aligner_depth": q.int("num_hidden_layers", 2),
    }
    return {"vision": {**vit(v, projector), "generator": generator}}


MINICPM_IMAGE_SIZE = 448  # pixels a side: MiniCPMV4_6Config's image_size, 28 × 28 patches of 16 (its processor's slices)


@wrapper("minicpmv4_6", "minicpmv4_7", "minicpm_ocr")
def minicpmv4_6(c: Config) -> dict:
    """MiniCPMV4_6ForConditionalGeneration (OpenBMB, MiniCPM-V 4.6), MiniCPM-V 4.7's and MiniCPM-OCR's (built
    the same): a SigLIP-built tower (no pooling head; a table of (vision image_size / patch)² rows each patch reads its
    nearest row of), MiniCPMV4_6ViTWindowAttentionMerger after layer insert_layer_id (parts/window_merger.py; run where
    downsample_mode is "16x", MiniCPM-OCR's "4x" builds it and runs none), then MiniCPMV4_6Merger: 2 × 2 patches side
    by side, a LayerNorm over them (pre_norm), Linear(4w, 4w) → GELU → Linear(4w, text width), with biases. An image's
    figures are at the wrapper's image_size (MINICPM_IMAGE_SIZE where it states none) unless --image-size says
    otherwise."""
    v = sub_config(c, "vision_config")
    d, side = v.int("hidden_size"), c.int("image_size", MINICPM_IMAGE_SIZE)
    if c.int("merger_times", 1) != 1:
        raise c.fail("merger_times", f"{c.int('merger_times')}: one round of the merger is read (the default; not yet more)")
    kernel = c.int_list("merge_kernel_size") if c.has("merge_kernel_size") else [2, 2]
    window = v.int_list("window_kernel_size") if v.has("window_kernel_size") else [2, 2]
    if kernel != [2, 2] or window != [2, 2]:
        raise c.fail("merge_kernel_size", "2 × 2 merges are read (the default; not yet another)")
    insert = c.int("insert_layer_id", 6)
    merger = {
        "after": insert + 1,
        "heads": v.int("num_attention_heads"),
        "d_ff": 4 * v.int("intermediate_size"),
        "runs": c.data.get("downsample_mode", "16x") != "4x" and 0 <= insert < v.int("num_hidden_layers"),
    }
    if insert < 0:  # none runs, and it is built all the same: its parameters after the first layer
        merger["after"] = 1
    projector = {"width": d, "hidden": 4 * d, "bias": True, "activation": "gelu", "norm": "layernorm", "shuffle": 2}
    rows = (_side_of(v, "image_size") // _side_of(v, "patch_size")) ** 2
    return {"vision": vit(v, projector, image_size=side, position_rows=rows, merger=merger)}


def _side_of(v: Config, key: str) -> int:
    """A square's side: a number, or [height, width] equal."""
    value = v.data.get(key)
    return v.int_list(key)[0] if isinstance(value, list) else v.int(key)


@wrapper("nemotron_h_omni")
def nemotron_h_omni(c: Config) -> dict:
    """NemotronH_Omni_Reasoning_V3 (NVIDIA, Nemotron 3 Nano Omni): a RADIO tower (vit.py), a LayerNorm over its
    features where the text_config has MTP layers (vision_final_layernorm), a pixel shuffle by 1 / downsample_ratio,
    then its projector: an RMSNorm over the shuffled features, Linear(4 × vision_hidden_size, projector_hidden_size)
    → relu² → Linear(projector_hidden_size, text width), no biases. An audio_config's tower is not read yet: such a
    file is refused in one line."""
    if c.data.get("audio_config") is not None:
        raise c.fail("audio_config", "Nemotron-H Omni's audio tower is not read yet")
    v = sub_config(c, "vision_config")
    mtp = (sub_config(c, "text_config").int("num_nextn_predict_layers", 0, positive=False) or 0) > 0
    projector = {
        "width": c.int("vision_hidden_size", v.int("hidden_size")),
        "hidden": c.int("projector_hidden_size"),
        "bias": False,
        "activation": "relu2",
        "norm": "rmsnorm",
        "shuffle": round(1 / c.float("downsample_ratio", 0.5)),
    }
    return {"vision": vit(v, projector, post_norm=mtp)}


@wrapper("exaone4_5")
def exaone4_5(c: Config) -> dict:
    """Exaone4_5_ForConditionalGeneration (LG AI Research, EXAONE 4.5): Qwen2.5-VL's tower and merger with grouped
    key-value heads (towers/qwen.py) beside the language model of the text_config (EXAONE 4's layers)."""
    from .qwen import qwen_vision

    return {"vision": qwen_vision(sub_config(c, "vision_config", {None: "exaone4_5_vision"}))}  # type: ignore[dict-item]


@wrapper("hyperclovax_vision_v2")
def hyperclovax_vision_v2(c: Config) -> dict:
    """HyperCLOVAXVisionV2ForConditionalGeneration (NAVER Cloud, HyperCLOVA X SEED Think): Qwen2.5-VL's tower and
    merger (towers/qwen.py; its vision_model, to out_hidden_size) and projector, one Linear(out_hidden_size, text width)
    with a bias, beside the language model of the text_config (HyperCLOVA X's layers)."""
    from .qwen import qwen_vision

    spec = qwen_vision(sub_config(c, "vision_config", {"qwen2_5_vl": "qwen2_5_vl_vision", None: "qwen2_5_vl_vision"}))  # type: ignore[dict-item]
    spec["projector"]["tail"] = True
    return {"vision": spec}


@wrapper("internvl", "qianfan_ocr")
def internvl(c: Config) -> dict:
    """InternVLForConditionalGeneration (Chen et al. 2024; InternVL 3) and QianfanOCRForConditionalGeneration (Baidu,
    Qianfan-OCR: QianfanOCRVisionModel, InternViT's layers, embeddings and ends under names of its own, and
    QianfanOCRMultiModalProjector, InternVL's): an InternViT tower (vit.py); its features
    pixel-shuffled by 1 / downsample_ratio (0.5: 2 × 2 tokens into one of four times the width), then
    InternVLMultiModalProjector: a LayerNorm over them, Linear(4 × width, text width) → projector_hidden_act →
    Linear(text width, text width), with biases; the class token dropped ("default")."""
    v = sub_config(c, "vision_config")
    ratio = c.float("downsample_ratio", 0.5)
    projector = {
        "width": v.int("hidden_size"),
        "hidden": sub_config(c, "text_config").int("hidden_size"),
        "bias": True,
        "activation": c.activation("projector_hidden_act", "gelu"),
        "norm": "layernorm",
        "shuffle": round(1 / ratio),
    }
    return {"vision": vit(v, projector, read_class=c.data.get("vision_feature_select_strategy", "default") == "full")}


@wrapper("deepseek_vl")
def deepseek_vl(c: Config) -> dict:
    """DeepseekVLForConditionalGeneration (Lu et al. 2024, DeepSeek-VL): a SigLIP tower (its pooling head where
    vision_use_head: built, its output unread) and DeepseekVLAligner, Linear(vision width, text width) → GELU →
    Linear(text width, text width), with biases."""
    v = sub_config(c, "vision_config")
    projector = {"width": v.int("hidden_size"), "hidden": sub_config(c, "text_config").int("hidden_size"), "bias": True}
    return {"vision": vit(v, projector)}


@wrapper("llama4")
def llama4(c: Config) -> dict:
    """Llama4ForConditionalGeneration (Meta 2025, Llama 4): Llama4VisionModel, CLIP's form (a class token, a learned
    position a position, layernorm_pre and layernorm_post, LayerNorms and biases in its layers) with its patches
    embedded by an unfold and a linear without a bias and 2-D rotary positions (no multiply-adds); the class token
    dropped, its vision adapter (pixel_shuffle_ratio 0.5: 2 × 2 patches into one of four times the width, then
    fc1 → GELU → fc2 → GELU, no biases) and Llama4MultiModalProjector's linear_1 (vision_output_dim → text width, no
    bias), each at its stated width (Llama4VisionConfig's defaults do not meet: no image runs through them). Each tile
    of image_size pixels the processor cuts an image into (and its global view) is one image here."""
    v = sub_config(c, "vision_config", {None: "llama4_vision_model"})  # type: ignore[dict-item]
    d, ratio = v.int("hidden_size"), v.float("pixel_shuffle_ratio", 0.5)
    shuffle = round(1 / ratio)
    # each linear at its stated width, as transformers builds it (an image runs only where they meet: vision.check)
    widths = {"adapter_in": v.int("intermediate_size"), "adapter_out": v.int("projector_output_dim")}
    widths["adapter_to"] = v.int("vision_output_dim")
    projector = {"width": d, "bias": False, "shuffle": shuffle, "adapter": v.int("projector_input_dim"), **widths}
    return {"vision": vit(v, projector)}


@wrapper("gemma4")
def gemma4(c: Config) -> dict:
    """Gemma4ForConditionalGeneration (Gemma Team 2026, Gemma 4): its vision encoder (vit.py), Gemma4VisionPooler
    (pooling_kernel_size² patches averaged into one soft token, the average one matmul over the patches) and
    embed_vision (Gemma4MultimodalEmbedder: an RMSNorm without a weight, Linear(vision width, text width) without a
    bias); none where vision_config is null (the class then builds no tower). An audio_config's tower (Gemma 4 E2B's and
    E4B's) is not read yet: the count says so in a note."""
    if c.data.get("vision_config") is None:
        return {}
    v = sub_config(c, "vision_config")
    projector = {"width": v.int("hidden_size"), "bias": False, "norm": "rmsnorm", "norm_affine": False}
    projector["pool"] = v.int("pooling_kernel_size", 3)
    return {"vision": vit(v, projector)}


@wrapper("gemma4_unified")
def gemma4_unified(c: Config) -> dict:
    """Gemma4UnifiedForConditionalGeneration (Gemma 4 Unified): no vision tower; Gemma4UnifiedVisionEmbedder embeds each
    patch of model_patch_size (patch_size × pooling_kernel_size) pixels a side into one soft token: a LayerNorm over
    its pixels (patch_ln1), Linear(3 · patch², mm_embed_dim) with a bias (patch_dense), a LayerNorm (patch_ln2), a
    factorised table of mm_posemb_size rows on each of two axes (a patch's x and y rows summed) and a LayerNorm
    (pos_norm), then its multimodal_embedder: an RMSNorm without a weight and Linear(output_proj_dims, text width)
    without a bias; none where vision_config is null (the class then builds no embedder). Its images have no fixed
    size: an image's figures are at GEMMA4_UNIFIED_IMAGE_SIZE pixels a side unless --image-size says otherwise. Its
    audio_config's embed_audio (parts/waveform_audio.py): no audio tower, each frame of audio_embed_dim raw samples
    through an RMSNorm without a weight and Linear(audio_embed_dim, text width) without a bias; none where audio_config
    is null."""
    parts = {} if c.data.get("audio_config") is None else {"waveform_audio": gemma4_unified_audio(c)}
    if c.data.get("vision_config") is None:
        return parts
    v = sub_config(c, "vision_config")
    d = v.int("mm_embed_dim")
    if v.int("output_proj_dims") != d:  # its embedder reads what pos_norm writes
        raise c.fail("vision_config", f"output_proj_dims {v.int('output_proj_dims')} differs from mm_embed_dim {d}")
    projector = {"width": d, "bias": False, "norm": "rmsnorm", "norm_affine": False}
    vision = {
        "image_size": GEMMA4_UNIFIED_IMAGE_SIZE,
        "patch_size": v.int("patch_size") * v.int("pooling_kernel_size"),
        "embed_width": d,
        "embed_norms": True,
        "position_rows": 2 * v.int("mm_posemb_size"),
        "post_norm": False,
        "projector": projector,
    }
    return {"vision": vision, **parts}


def gemma4_unified_audio(c: Config) -> dict:
    """Gemma4UnifiedAudioConfig: audio_embed_dim, which its hidden_size, output_proj_dims and audio_samples_per_token
    each set and read (properties of one field); a file stating two of them apart is refused (transformers keeps
    whichever it sets last)."""
    a = sub_config(c, "audio_config", {None: "gemma4_unified_audio"})  # type: ignore[dict-item]
    samples = a.int("audio_embed_dim", 640)
    for alias in ("hidden_size", "output_proj_dims", "audio_samples_per_token"):
        if alias in a.data and a.int(alias) != samples:
            raise a.fail(alias, f"{a.int(alias)} differs from audio_embed_dim {samples}, which it is")
    return {"samples": samples}


@wrapper("glm4v", "glm4v_moe", "glm46v", "glmga")
def glm4v(c: Config) -> dict:
    """Glm4vForConditionalGeneration (GLM-4.1V-Thinking), Glm4vMoeForConditionalGeneration (GLM-4.5V) and
    Glm46VForConditionalGeneration (GLM-4.6V, and GlmGa, which transformers builds as it): GLM-4V's vision tower, its
    downsample and merger (towers/qwen.py) beside the language model of the text_config (GLM-4's layers, or GLM-4.5's
    mixture)."""
    from .qwen import glm_vision

    vision = sub_config(c, "vision_config", {None: "glm4v_moe_vision" if c.model_type == "glm4v_moe" else "glm4v_vision"})  # type: ignore[dict-item]
    return {"vision": glm_vision(vision)}


@wrapper("glm_ocr")
def glm_ocr(c: Config) -> dict:
    """GlmOcrForConditionalGeneration (GLM-OCR): GLM-4V's form, its tower without post_conv_layernorm or a position
    table and with q and k norms, biases and its own merger width (towers/qwen.py), beside GLM-4V's language model with
    q, k and v unbiased (families/glm.py)."""
    from .qwen import glm_vision

    return {"vision": glm_vision(sub_config(c, "vision_config", {None: "glm_ocr_vision"}))}  # type: ignore[dict-item]


@wrapper("glm5_next")
def glm5_next(c: Config) -> dict:
    """Glm5NextForConditionalGeneration (GLM-5 Next): GLM-OCR's tower form with a fused qkv and its merger of
    projection_intermediate_size (towers/qwen.py), beside its language model (families/glm5_next.py)."""
    from .qwen import glm_vision

    return {"vision": glm_vision(sub_config(c, "vision_config", {None: "glm5_next_vision"}))}  # type: ignore[dict-item]


@wrapper("kimi_k25")
def kimi_k25(c: Config) -> dict:
    """Kimi_K25ForConditionalGeneration (Kimi K2.5): MoonViT (vit.py), each merge_kernel_size² patches averaged over
    time (one frame: as they are) and gathered into one token, and Kimi_K25MultimodalProjection: pre_norm (a LayerNorm
    of projection_hidden_size over each patch), in_proj (Linear(4 × width, 4 × width) with a bias), GELU and out_proj
    (Linear(4 × width, text width) with a bias)."""
    # the Hub's files state none, or an empty one, which Kimi_K25Config builds as its own
    v = sub_config(c, "vision_config", {None: "kimi_k25_vision", "": "kimi_k25_vision"})  # type: ignore[dict-item]
    d = v.int("hidden_size")
    if c.int("projection_hidden_size", d) != d:  # the LayerNorm runs over each patch's features
        raise c.fail("projection_hidden_size", f"{c.int('projection_hidden_size')} is not the tower's width {d}: no image runs")
    merge = v.int_list("merge_kernel_size")[0] if v.has("merge_kernel_size") else 2
    projector = {"width": d, "hidden": d * merge * merge, "bias": True, "norm": "layernorm", "prenorm": True, "shuffle": merge}
    return {"vision": vit(v, projector)}


@wrapper("lfm2_vl")
def lfm2_vl(c: Config) -> dict:
    """Lfm2VlForConditionalGeneration (Liquid AI 2025, LFM2-VL): a SigLIP 2 NaFlex tower (vit.py; its pooling head
    where vision_use_head: built and run, its output unread), then Lfm2VlMultiModalProjector: a pixel unshuffle of
    downsample_factor² patches into one token of as many times the width, a LayerNorm over it (where
    projector_use_layernorm), Linear(width · factor², projector_hidden_size) → projector_hidden_act →
    Linear(projector_hidden_size, text width), biases as projector_bias."""
    v = sub_config(c, "vision_config")
    projector = {
        "width": v.int("hidden_size"),
        "hidden": c.int("projector_hidden_size", 2560),
        "bias": c.bool("projector_bias", True),
        "activation": c.activation("projector_hidden_act", "gelu"),
        "norm": "layernorm" if c.bool("projector_use_layernorm", True) else "none",
        "shuffle": c.int("downsample_factor", 2),
    }
    return {"vision": vit(v, projector)}


@wrapper("fuyu")
def fuyu(c: Config) -> dict:
    """FuyuForCausalLM (Adept 2023, Fuyu-8B): no vision tower; each patch_size² patch of num_channels channels goes
    straight into the language model through vision_embed_tokens, one Linear(channels · patch², text width) with a
    bias, a row of patches followed by a |NEWLINE| token of the text's own. An image's figures are at image_size
    pixels a side (its processor pads each to 1,080 × 1,920) unless --image-size says otherwise."""
    d = sub_config(c, "text_config").int("hidden_size")
    return {
        "vision": {
            "image_size": c.int("image_size", 300),
            "patch_size": c.int("patch_size", 30),
            "channels": c.int("num_channels", 3),
            "position_table": False,
            "post_norm": False,
            "row_breaks": True,
            "projector": {"width": d, "linear": False},
        }
    }


@wrapper("idefics2")
def idefics2(c: Config) -> dict:
    """Idefics2ForConditionalGeneration (Laurençon et al. 2024): a SigLIP-built tower (Idefics2VisionTransformer: no
    pooling head), then Idefics2Connector: modality_projection, a gated MLP (gate_proj, up_proj of the text's
    intermediate_size, down_proj to the text width, no biases, the text's hidden_act) over every patch, and the
    perceiver resampler (parts/resampler.py) of perceiver_config: resampler_n_latents latents, resampler_depth layers of
    resampler_n_heads heads of resampler_head_dim and num_key_value_heads key-value heads, an MLP of 4 × the text width;
    each image is its latents' tokens."""
    v = sub_config(c, "vision_config")
    t = sub_config(c, "text_config")
    p = sub_config(c, "perceiver_config", {None: "idefics2_perceiver"})  # type: ignore[dict-item]
    if t.activation("hidden_act", "silu") != "silu" or p.activation("hidden_act", "silu") != "silu":
        raise c.fail("text_config", "hidden_act: the connector's gated MLPs are read with silu (not yet another)")
    width = t.int("hidden_size")  # Idefics2Config gives the perceiver the text width
    resampler = {
        "latents": p.int("resampler_n_latents"),
        "depth": p.int("resampler_depth"),
        "n_heads": p.int("resampler_n_heads"),
        "n_kv_heads": p.int("num_key_value_heads"),
        "head_dim": p.int("resampler_head_dim"),
        "d_ff": 4 * width,
    }
    projector = {
        "width": v.int("hidden_size"),
        "hidden": 2 * t.int("intermediate_size"),  # gate_proj and up_proj, side by side
        "gated": True,
        "bias": False,
        "resampler": resampler,
    }
    return {"vision": vit(v, projector)}


@wrapper("blip-2", "instructblip", "instructblipvideo")
def blip_2(c: Config) -> dict:
    """Blip2ForConditionalGeneration (Li et al. 2023, BLIP-2): its EVA-CLIP-built tower (Blip2VisionModel: a class
    token, a learned position a position, a patch convolution with a bias, a fused qkv with qkv_bias and a projection
    with a bias, LayerNorms, post_layernorm; no pre-norm), the Q-Former (parts/qformer.py) of qformer_config reading
    every position, class token included, with num_query_tokens queries, and language_projection, Linear(Q-Former
    width, text width) with a bias; each image is its queries' tokens. InstructBlipForConditionalGeneration (Dai et al.
    2023, InstructBLIP): the same, its Q-Former also reading the instruction's tokens (their tables and MLPs);
    InstructBlipVideoForConditionalGeneration: InstructBLIP's, each frame of a video one image here."""
    v = sub_config(c, "vision_config")
    q = sub_config(c, "qformer_config")
    if c.bool("use_decoder_only_language_model", True) is False:
        raise c.fail("use_decoder_only_language_model", "false: an encoder-decoder language model (Flan-T5) is not read whole yet")
    h = q.int("hidden_size")
    qformer = {
        "queries": c.int("num_query_tokens", 32),
        "depth": q.int("num_hidden_layers"),
        "width": h,
        "heads": q.int("num_attention_heads"),
        "d_ff": q.int("intermediate_size"),
        "context": q.int("encoder_hidden_size"),
        "cross_every": q.int("cross_attention_frequency", 2),
        "activation": q.activation("hidden_act", "gelu"),
    }
    if c.model_type in ("instructblip", "instructblipvideo"):
        qformer.update(text_vocab=q.int("vocab_size"), text_positions=q.int("max_position_embeddings"))
    projector = {"width": h, "bias": True, "qformer": qformer}
    spec = vit(v, projector, class_token=True, pre_norm=False, patch_bias=True, read_class=True)
    spec["layers"]["attention"]["qkv_bias"] = v.bool("qkv_bias", True)
    return {"vision": spec}


@wrapper("aria")
def aria(c: Config) -> dict:
    """AriaForConditionalGeneration (Li et al. 2024, Aria): an Idefics3-built tower (a SigLIP tower without its
    pooling head; the projector reads its last layer's output), then AriaProjector (parts/query_attention.py): the
    learned queries projector_patch_to_query_dict names for the image's patch count, one cross-attention over the
    patches with the tower's heads, a LayerNorm and an MLP to the text width through the text width."""
    v = sub_config(c, "vision_config")
    text = sub_config(c, "text_config").int("hidden_size")
    table = c.data.get("projector_patch_to_query_dict", {1225: 128, 4900: 256})
    if not isinstance(table, dict) or not all(str(k).isdigit() and isinstance(q, int) and q > 0 for k, q in table.items()):
        raise c.fail("projector_patch_to_query_dict", f"expected patch counts and their queries, got {table!r}")
    query = {
        "table": c.int("max_value_projector_patch_to_query_dict", 256),
        "heads": v.int("num_attention_heads"),
        "hidden": text,
        "tokens": [[int(k), q] for k, q in table.items()],
    }
    return {"vision": vit(v, {"width": v.int("hidden_size"), "query": query})}


@wrapper("cosmos3_edge")
def cosmos3_edge(c: Config) -> dict:
    """Cosmos3EdgeForConditionalGeneration (NVIDIA 2026, Cosmos3 Edge): Cosmos3EdgeVisionModel, SigLIP 2's NaFlex form
    (vit.py: a linear patch embedding with a bias, a table of num_patches rows resized to the image's grid, SigLIP's
    layers, post_layernorm; no pooling head), then Cosmos3EdgePatchMerger: a LayerNorm over each patch's features (norm,
    before the merge: use_postshuffle_norm false), spatial_merge_size² patches gathered into one token, linear_fc1
    (width · merge², projector_hidden_size) with a bias, GELU (nn.GELU: exact), linear_fc2 (projector_hidden_size,
    text width) with a bias; beside the language model of the text_config (cosmos3_edge_text)."""
    v = sub_config(c, "vision_config", {None: "cosmos3_edge_vision"})  # type: ignore[dict-item]
    merge = v.int("spatial_merge_size", 2)
    projector = {
        "width": v.int("hidden_size"),
        "hidden": c.int("projector_hidden_size", 11520),
        "bias": True,
        "norm": "layernorm",
        "prenorm": True,
        "shuffle": merge,
    }
    return {"vision": vit(v, projector)}


@wrapper("kosmos-2", "kosmos-2.5")
def kosmos_2(c: Config) -> dict:
    """Kosmos2ForConditionalGeneration (Peng et al. 2023, Kosmos-2): its CLIP-built tower (Kosmos2VisionTransformer: a
    class token, a learned position a position, pre_layrnorm, CLIP's layers; post_layernorm over every position, as
    get_image_features runs it), then Kosmos2ImageToTextProjection (parts/latent_query.py): dense, Linear(vision width,
    text width) with a bias over every position, class token included, and latent_query_num learned latents that read
    those positions and themselves through one cross-attention (x_attn) of the text's heads; each image is its latents'
    tokens, beside the language model of the text_config (kosmos_2_text_model). Kosmos2_5ForConditionalGeneration (Lv
    et al. 2023, Kosmos-2.5): the same projection (Kosmos2_5ImageToTextProjection, 2,048 latents by default) over
    Kosmos-2.5's Pix2Struct-form encoder (vit.py), beside kosmos_2_5_text_model."""
    five = c.model_type == "kosmos-2.5"
    v = sub_config(c, "vision_config", {None: "kosmos_2_5_vision_model" if five else "kosmos_2_vision_model"})  # type: ignore[dict-item]
    t = sub_config(c, "text_config", {None: "kosmos_2_5_text_model" if five else "kosmos_2_text_model"})  # type: ignore[dict-item]
    latent = {"latents": c.int("latent_query_num", 2048 if five else 64), "heads": t.int("attention_heads", 16 if five else 32)}
    return {"vision": vit(v, {"width": v.int("hidden_size"), "latent": latent}, read_class=True)}


@wrapper("git")
def git(c: Config) -> dict:
    """GitForCausalLM (Wang et al. 2022, GIT): GitVisionModel, CLIP's form (a class token, a learned position a
    position, pre_layrnorm, CLIP's layers, post_layernorm over every position), then GitProjection's
    visual_projection, Linear(vision width, hidden_size) with a bias and a LayerNorm, over every position, class token
    included: each image is those tokens, before the text, in the language model of the file's top-level keys
    (families/git.py), taking no row of its position table (GitEmbeddings numbers the text alone)."""
    v = sub_config(c, "vision_config", {None: "git_vision_model"})  # type: ignore[dict-item]
    projector = {"width": v.int("hidden_size"), "bias": True, "out_norm": True}
    return {"vision": vit(v, projector, read_class=True, table_positions=False)}


@wrapper("paddleocr_vl")
def paddleocr_vl(c: Config) -> dict:
    """PaddleOCRVLForConditionalGeneration (Cui et al. 2025, PaddleOCR-VL): a SigLIP-built tower (PaddleOCRVisionModel:
    a patch convolution with a bias, a table of (image_size / patch_size)² positions resized to the image's patches
    (bilinear, no multiply-adds), SigLIP's layers with 2-D rotary positions, post_layernorm; no pooling head), then
    PaddleOCRProjector: pre_norm (a LayerNorm over each patch), spatial_merge_size² patches gathered into one token,
    linear_1 (Linear(4 × width, 4 × width) with a bias), GELU and linear_2 (Linear(4 × width, text width) with a bias).
    Its images have no fixed size: an image's figures are at PADDLE_IMAGE_SIZE pixels a side (vit.py) unless
    --image-size says otherwise."""
    v = sub_config(c, "vision_config", {None: "paddleocr_vl_vision"})  # type: ignore[dict-item]
    d, merge = v.int("hidden_size"), v.int("spatial_merge_size", 2)
    projector = {"width": d, "hidden": d * merge * merge, "bias": True, "norm": "layernorm", "prenorm": True, "shuffle": merge}
    return {"vision": vit(v, projector)}


@wrapper("step3p7")
def step3p7(c: Config) -> dict:
    """Step3p7ForConditionalGeneration (StepFun): Step3p7VisionModel (vit.py: a patch convolution without a bias, a table
    of (image_size / patch_size)² positions resized to other images, pre_layernorm, InternViT's layers with learned
    layer scales and 2-D rotary positions, no post norm), its downsampler1 and downsampler2 (two strided 3 × 3
    convolutions, 4 × 4 patches a token at 4 × the width; parts/projector.py) and multi_modal_projector, Linear(4 ×
    width, text width) with projector_bias (default false); beside Step 3.5's language model (families/step3p5.py).
    Each global view and local crop of image_size pixels is one image here."""
    v = sub_config(c, "vision_config", {None: "step3p5_vision"})  # type: ignore[dict-item]
    projector = {"width": v.int("hidden_size"), "bias": c.bool("projector_bias", False), "downsample": True}
    return {"vision": vit(v, projector)}
