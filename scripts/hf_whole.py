"""Record what transformers builds for every type of its image-text-to-text and multimodal-LM mappings (and the
audio-language types of its seq2seq mappings alone, coverage.WHOLE_SEQ2SEQ_TYPES, and the vision encoders of its
masked-LM mapping, coverage.WHOLE_ENCODER_TYPES, as their masked-LM class) at its
configuration class's defaults (the whole model: text, towers and projector), or check that the recording is current.

    python scripts/hf_whole.py            # (re)write tests/hf_whole/ for every type
    python scripts/hf_whole.py --check    # exit 1 if any recorded file differs from what transformers builds now
    python scripts/hf_whole.py TYPE …     # only these model_types (or public:NAME for a public config)

``configs/TYPE.json`` is ``AutoConfig.for_model(TYPE).to_dict()`` written as a config.json (every key at its default,
with REPAIRS applied); ``truth/TYPE.json`` is the whole class built from it on the meta device (every parameter by
name with its element count, a tied one once; the buffers), or transformers' reason for refusing its own defaults;
and for the types of IMAGE_SIZES the FLOPs of one image through the vision tower and the projector at each size
(ffncalc/analysis/hfwhole.py: IMAGE_METHOD). Each public config in ``public/`` (its source in public/sources.json) is
recorded the same way, in ``public_truth/NAME.json``. timm's towers (Gemma 3n's, FastVLM's, Perception LM's) need
timm: ``pip install --no-deps timm==1.0.31`` (ffncalc/analysis/timmload.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "hf_whole"

# Image sizes at which the FLOPs of one image are recorded, per type: the class's default and another. A size
# changes the tower (its position table) and, for Gemma 3, the projector's pooling: each run builds the class with
# vision_config.image_size set to it.
IMAGE_SIZES = {
    "llava": (336, 224),
    "video_llava": (224, 336),  # its image_tower alone (16 and 24 patches a side); the video_tower runs only frames
    "paligemma": (224, 448),
    "gemma3": (896, 448),
    "cohere2_vision": (512, 256),
    "aya_vision": (364, 728),  # AyaVisionConfig's 384 pixels are 27 patches a side, which its pixel shuffle cannot halve
    "mistral3": (224, 448),
    "mistral_large4": (224, 448),  # Pixtral's tower and Mistral 3's projector, as mistral3's
    "idefics3": (256, 512),  # its default 224 pixels are 7 patches of 32 a side, which its pixel shuffle cannot halve
    "qwen2_vl": (448, 224),
    "qwen2_5_vl": (448, 392),  # 16 merged tokens a side in whole windows of 4; 14 leave windows of 2 at the edges
    "qwen2_5_omni_thinker": (448, 392),  # as Qwen2.5-VL's
    "qwen3_omni_moe_thinker": (448, 256),  # as Qwen3-VL's
    "qwen3_vl": (448, 256),
    "cohere_compass": (448, 256),  # its class is Qwen3-VL's, its patches of 16 merged 2 × 2: 14 and 8 tokens a side
    "exaone4_5": (448, 392),  # Qwen2.5-VL's windows, whole and cut at the edges, with grouped key-value heads
    "hyperclovax_vision_v2": (448, 392),  # Qwen2.5-VL's, and its projector after the merger
    "internvl": (448, 224),
    "minimax_m3_vl": (448, 224),  # 32 and 16 patches of 14 a side, merged 2 × 2 (its config's 2,016 pixels too slow on a CPU)
    "minicpmv4_6": (448, 320),  # 28 and 20 patches of 16 a side, merged 2 × 2 in the tower and 2 × 2 after it
    "minicpmv4_7": (448, 320),
    "minicpm_ocr": (448, 320),  # its "4x": the tower's merger built, not run; 2 × 2 after the tower
    "nemotron_h_omni": (224, 448),  # 14 and 28 patches of 16 a side, shuffled 2 × 2 (RADIO's images have no fixed size)
    "janus": (384, 256),  # 24 and 16 patches of 16 a side through its tower and aligner (its generator: none)
    "ovis2": (224, 448),  # 16 and 32 patches of 14 a side, each a token of its visual vocabulary
    "inkling2": (640, 480),  # 16 and 12 tokens a side (40-pixel tiles of 2 × 2 patches of 20)
    "video_llama_3": (448, 224),  # 28 and 14 patches of 16 a side, one token each (an image's merge size 1)
    "qianfan_ocr": (448, 224),  # InternViT's 32 and 16 patches a side, shuffled 2 × 2 into 256 and 64 tokens
    "llama4": (336, 448),  # Llama 4's released tiles are 336 pixels; the class's default 448
    "gemma4": (480, 240),  # 30 and 15 patches a side, whole 3 × 3 tiles of its pooler (100 and 25 tokens)
    "gemma4_unified": (768, 480),  # 16 and 10 patches of 48 a side, one soft token each
    "glm4v": (448, 336),  # 16 and 12 merged tokens a side (28-pixel tiles of 2 × 2 patches)
    "glm_ocr": (448, 336),  # 16 and 12 merged tokens a side, as GLM-4V's
    "glm5_next": (448, 336),  # as GLM-OCR's
    "florence2": (768, 512),  # 24 and 16 positions a side after its stages: windows of 12 whole, and cut at 128 and 64
    "paddleocr_vl": (448, 336),  # 32 and 24 patches of 14 a side, 16 and 12 tokens after its 2 × 2 merge
    "ernie4_5_vl_moe": (448, 336),  # 32 and 24 patches of 14 a side, 16 and 12 tokens a side after its resampler
    "step3p7": (728, 504),  # 52 and 36 patches of 14 a side: 13 and 9 tokens after its two strided convolutions
    "glmga": (448, 336),  # GLM-4.6V's class, as GLM-4V's
    "kimi_k25": (336, 224),  # 12 and 8 tokens a side (28-pixel tiles of 2 × 2 patches)
    "fuyu": (300, 600),  # 10 and 20 patches of 30 a side
    "aria": (1120, 2240),  # 35 and 70 patches of 32 a side: the 1,225 and 4,900 its projector names 128 and 256 queries for
    "blip-2": (224, 280),  # 16 and 20 patches of 14 a side and a class token, read by 32 queries
    "instructblip": (224, 280),  # as BLIP-2's, with an instruction of no tokens
    "instructblipvideo": (224, 280),  # one frame, as InstructBLIP's image
    "idefics2": (224, 448),  # 7 and 14 patches of 32 a side, resampled to 64 latents
    "lfm2_vl": (512, 256),  # 16 and 8 tokens a side (32-pixel tiles of 2 × 2 patches)
    "kosmos-2": (224, 280),  # 16 and 20 patches of 14 a side and a class token, read by 64 latents
    # every image padded to max_num_patches (4,096: 64 patches of 16 a side, 1,024 pixels); and 1,024 patches
    "kosmos-2.5": (1024, 512),
    "cosmos3_edge": (512, 256),  # NaFlex: 32 and 16 patches of 16 a side, 16 and 8 merged tokens a side
    "git": (224, 384),  # 14 and 24 patches of 16 a side and a class token, every position a token
    # their default 224 pixels are 14 patches of 16 a side, which a pixel shuffle of 4 cannot group: 16 and 32 patches
    "modernvbert": (256, 512),
    "ultravbert": (256, 512),
    "blip": (384, 224),  # 24 and 14 patches of 16 a side and a class token, every position cross-attended
    "vision-encoder-decoder": (224, 384),  # ViT's 14 and 24 patches of 16 a side and a class token, every position read
    "pix2struct": (1024, 512),  # 64 and 32 patches of 16 a side: 4,096 (its tables' grid) and 1,024 flattened patches
    # SAM towers: 64 and 32 patches of 16 a side (windows of 14 padded to 70 and 42 a side), 256 and 64 tokens
    "got_ocr2": (1024, 512),
    "pp_chart2table": (1024, 512),
    # its SAM encoder at the class's 512 pixels and the processor's 768: 32 and 48 patches of 16 a side (windows of 14
    # padded to 42 and 56 a side), 64 and 144 tokens after its projector's two strided convolutions
    "pp_formulanet": (512, 768),
    # its SigLIP's 14 and 24 patches of 16 a side, one token each; its SAM tower's 1,024-pixel image at both
    "deepseek_vl_hybrid": (224, 384),
    "lfm3_vl": (512, 256),  # 32 and 16 patches of 16 a side (no fixed size), 16 and 8 merged tokens a side
    "dots3_note": (224, 112),  # 16 and 8 patches of 14 a side (no fixed size), its towers built small
    # an image's pixels a side, its tower at crop_size (448): the global image and 1 and 4 crops, 545 and 1,329 tokens
    "phi4_multimodal": (448, 896),
    "inkling_mm_model": (640, 320),  # 16 rows of 17 and 8 rows of 9 patches of 40 pixels, a token each
    # 4 tiles of 32 and 16 patches of 14 a side and a class token, padded to 1,032 and 264 rows
    "mllama": (448, 224),
    # 32 and 48 patches of 14 a side: one whole window of 32, then windows of 32 and 16 a side; 256 and 576 tokens
    "muse_glimmer": (448, 672),
    "muse_spark": (448, 672),  # MUSE Glimmer's tower, as its
    "idefics": (224, 448),  # 16 and 32 patches of 14 a side and a class token, every row read by the cross-attention
    "perception_lm": (336, 448),  # 24 and 32 patches of 14 a side: PE L/14's images, and Perception LM's tiles
    "fast_vlm": (1024, 512),  # FastViTHD's 16 and 8 tokens a side (64 pixels a token): FastVLM's images, and half
    # one tile of 32 and 16 patches of 16 a side (its table built at each), 8 and 4 tokens a side after its shuffle of 4
    "granite_docling": (512, 256),
    # no fixed size: 48 and 32 patches of 16 a side (the processor's multiples of 32 pixels), 24 rows of 24 cells and 16
    # of 16, each with its newline, and the begin and end rows: 602 and 274 tokens
    "hunyuan_vl": (768, 512),
    # 768 pixels (its processor's) and 512: the tower's 48 and 32 positions a side before its fusion adapter, each pooled to
    # 16 × 16 soft tokens (3 × 3 and 2 × 2 of them a token)
    "gemma3n": (768, 512),
    "chameleon": (512, 256),  # 32 and 16 codes a side (16 pixels a code): its processor's 512-pixel crop, and half
    "emu3": (512, 256),  # 64 and 32 codes a side (8 pixels a code): its processor's min_pixels (512²), and half
    # its SAM's 64 and 40 patches of 16 a side (windows of 14 padded to 70 and 42), 16 and 10 positions a side after
    # its two strided convolutions, CLIP's layers over them and a class token: 273 and 111 tokens
    "unlimited_ocr": (1024, 640),
    # its SAM's 64 and 48 patches of 16 a side, 16 and 12 positions a side after its two strided convolutions: 256
    # positions and 256 queries, 144 and 144 (query_1024_resolution's and query_768_resolution's): 257 and 145 tokens
    "deepseek_ocr2": (1024, 768),
    # one 378-pixel crop and the global crop (392 tokens), and a 2 × 2 tiling of 46 patches a side and the global crop
    # (725 tokens): its tower at its crops' 378 pixels, an image's crops by its processor (ffncalc/analysis/hfmolmo2.py)
    "molmo2": (378, 756),
    # one crop of 8 and 16 patches of 32 a side (its default 224 pixels are 7, no whole window of 8): 1 and 4 windows of
    # 8 × 8 patches, 16 queries each; the tower's position table built at each
    "granite4_vision": (256, 512),
    "diffusion_gemma": (480, 240),  # Gemma 4's tower, as gemma4's: 30 and 15 patches a side (100 and 25 tokens)
}
# Frames of quantised mel bins at which Inkling's audio tower is measured (20 a second: 30 s and 10 s)
AUDIO_FRAMES = {"inkling_mm_model": (600, 200)}
# Tokens of audio (a hop of 3,200 samples each at 24 kHz) at which VibeVoice-ASR's audio FLOPs are recorded: 90 s (two
# chunks of 60 s, the second of 30) and 20 s
VIBEVOICE_TOKENS = {"vibevoice_asr": (675, 150), "vibevoice": (675, 150)}
# Tokens of audio (1,920 samples each at 24 kHz) at which MUSE Spark's audio FLOPs are recorded: 30 s and 10 s
MUSE_SPARK_TOKENS = (375, 125)
# Positions of one Dots3 Note audio chunk (8 frames each) at which its FLOPs are recorded: a whole 60-s chunk and 3 s
DOTS3_POSITIONS = (750, 38)

# Positions of one window (max_source_positions: 2 × as many frames) at which one window's FLOPs are recorded: the
# class's default (30 s) and 1,000 (20 s), each run built with it
AUDIO_POSITIONS = {
    "qwen2_audio": (1500, 1000),
    "voxtral": (1500, 1000),
    "voxtral_realtime": (1500, 1000),  # its causal tower over 30 and 20 s (no window of its own)
    "fun_asr_nano": (500, 300),  # its stacked positions (60 ms each): 30 and 18 s
    "nemo_speechlm": (500, 250),  # 40 and 20 s (80 ms a position): one chunk of chunk_length (500) or less
    "glmasr": (1500, 1000),
    "qwen2_5_omni_thinker": (1500, 1000),
    "qwen3_omni_moe_thinker": (1500, 1000),  # 30 and 20 chunks of 100 frames: 390 and 260 positions, windows of 104
    "audioflamingo3": (1500, 1000),
    "musicflamingo": (1500, 1000),
    "moss_transcribe_diarize": (1500, 1000),
    "qwen3_asr": (104, 52),  # one window of n_window_infer frames: 8 and 4 chunks of 100 frames, 13 positions each
    # its stacked positions, 50 a second: 12 and 24 s, whole blocks of context_size (200) and window_size (15)
    "granite_speech": (600, 1200),
    "granite_speech_plus": (600, 1200),
    "phi4_multimodal": (500, 250),  # its positions, 8 frames each: its forward's 500-position window (40 s) and 20 s
}

# Defaults transformers cannot run, each given the released model's value: the smallest change that runs.
REPAIRS = {
    # DeepseekOcr2TextConfig's mlp_layer_types defaults to None, which each DeepseekOcr2TextDecoderLayer indexes: the
    # released DeepSeek-OCR 2's pattern (first_k_dense_replace 1: layer 0 dense, the rest mixtures); and its
    # num_experts_per_tok to None, which the router's torch.topk cannot run: the released 6
    # Its DeepseekOcr2VisionEncoderConfig's hidden_size defaults to 4,096, where the SAM's convolutions write
    # downsample_channels[-1] (896) features that it reads as its rows: the released DeepSeek-OCR 2's encoder is 896
    # wide (Qwen2-0.5B's), and its 32 heads of 28 run as they are (its parameters at the defaults: test_whole_models)
    "deepseek_ocr2": {
        "text_config": {"mlp_layer_types": ["dense"] + ["sparse"] * 31, "num_experts_per_tok": 6},
        "vision_config": {"encoder_config": {"hidden_size": 896}},
    },
    # HunYuanVLTextConfig's head_dim defaults to None, which HunYuanVLDenseV1Attention's scaling raises to a power, and
    # its rope_parameters name no mrope_section, whose length the rotary embedding's forward takes: the released
    # HunyuanOCR's head_dim 128 (hidden_size // num_attention_heads here too) and XD-RoPE sections [16, 16, 16, 16]
    "hunyuan_vl": {
        "text_config": {
            "head_dim": 128,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [16, 16, 16, 16]},
        }
    },
    # Qwen4ExpTextConfig's QSA indexer sizes default to None, which Qwen4ExpTextQSAIndexer divides: the released
    # Qwen4-Exp's (4 index heads of 128, the one key head the class requires, a budget of 2,048 tokens in blocks of 4),
    # with its rotary fraction 0.25 (Qwen3_5MoeTextConfig's default, which Qwen4ExpTextConfig.__post_init__ skips), as
    # the class's validation requires rotary features to fit the index head (as tests/hf_defaults records its text model)
    "qwen4_exp": {
        "text_config": {
            "indexer_n_heads": 4,
            "indexer_kv_heads": 1,
            "indexer_head_dim": 128,
            "indexer_budget": 2048,
            "indexer_compress_ratio": 4,
            "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default", "partial_rotary_factor": 0.25},
        }
    },
    # Gemma3Config's vision_config defaults to SigLIP's 224-pixel images while mm_tokens_per_image (256) pools 16 × 16
    # tokens: 14 patches a side pool by a kernel of 14 // 16 = 0; Gemma 3's released towers see 896-pixel images
    "gemma3": {"vision_config": {"image_size": 896}},
    # AyaVisionConfig's default SigLIP tower (1,152 wide) has 14 heads, which do not divide it: the 16 heads of the
    # released Aya Vision's SigLIP2 so400m tower (siglip2-so400m-patch14-384)
    "aya_vision": {"vision_config": {"num_attention_heads": 16}},
    # Llama4VisionConfig's default tower (768 wide) pixel-shuffles to 3,072 features where its adapter reads
    # intermediate_size (5,632), and its projector reads vision_output_dim (7,680) where the adapter writes 4,096: the
    # released Llama 4 Scout's and Maverick's tower is 1,408 wide (4 × 1,408 = 5,632) with vision_output_dim 4,096
    "llama4": {"vision_config": {"hidden_size": 1408, "vision_output_dim": 4096}},
    # Gemma4Config's vision_config defaults to None, and the class then builds no vision tower: its tower is recorded
    # at Gemma4VisionConfig's own defaults, stated by its model_type alone
    "gemma4": {"vision_config": {"model_type": "gemma4_vision"}},
    # Gemma4UnifiedConfig's vision_config and audio_config default to None (no embedders): its vision embedder is
    # recorded at Gemma4UnifiedVisionConfig's own defaults, stated by its model_type alone
    "gemma4_unified": {"vision_config": {"model_type": "gemma4_unified_vision"}},
    # GraniteSpeechConfig's projector_config defaults to BLIP-2's Q-Former, whose cross-attention reads 1,408 features
    # where its encoder writes hidden_dim (1,024): the released Granite Speech 3.3's encoder_hidden_size, 1,024
    "granite_speech": {"projector_config": {"encoder_hidden_size": 1024}},
    "granite_speech_plus": {"projector_config": {"encoder_hidden_size": 1024}},  # as Granite Speech's (no cat_hidden_layers)
    # PerceptionLMConfig's vision_config defaults to timm's resnet50 without model_args, while its projector reads
    # model_args["embed_dim"]: the released Perception LM's tower, Perception Encoder L/14 (Cho et al. 2025 §3; Bolya et
    # al. 2025 Table 1: width 1,024), as timm builds it at its defaults
    "perception_lm": {"vision_config": {"architecture": "vit_pe_core_large_patch14_336", "model_args": {"embed_dim": 1024}}},
    # ChameleonConfig's and Emu3Config's vq_config default to their VQ-VAE config classes' defaults, but vocabulary_map
    # (the image codes' token names and ids) defaults to None, which ChameleonImageVocabularyMapping and
    # Emu3ImageVocabularyMapping read (vocab_map.get): an empty map builds every parameter, none of which it sizes
    "chameleon": {"vocabulary_map": {}},
    # CohereCompassTextConfig's rope_parameters default to {}, with no entry for the full_attention layers of its default
    # layer_types, which CohereCompassRotaryEmbedding indexes: the released North Micro Vision's null entry, its
    # full_attention layers without rotary positions (scripts/hf_defaults.py repairs cohere_compass_text the same way)
    "cohere_compass": {"text_config": {"rope_parameters": {"full_attention": None}}},
    # Granite4VisionConfig's downsample_rate and deepstack_layer_map default to None, which its
    # Granite4VisionWindowQFormerDownsampler splits at "/" and Granite4VisionModel takes the length of: the released
    # Granite Vision 4.1's "4/8" (4 × 4 queries a window of 8 × 8 patches) and its four [vision layer, text layer] pairs
    "granite4_vision": {"downsample_rate": "4/8", "deepstack_layer_map": [[-19, 9], [-13, 6], [-7, 3], [-1, 0]]},
    "emu3": {"vocabulary_map": {}},
    # Qwen3OmniMoeTalkerTextConfig declares no shared_expert_intermediate_size, which every talker layer's
    # Qwen3OmniMoeTalkerTextSparseMoeBlock reads for its shared expert, and Qwen3OmniMoeTalkerConfig no
    # spatial_merge_size, which Qwen3OmniMoeTalkerForConditionalGeneration.__init__ reads: the released
    # Qwen3-Omni-30B-A3B's 768 and 2 (tests/hf_whole/public/qwen3-omni-30b-a3b-instruct.json), the two keys without
    # which the class cannot be built (spatial_merge_size sizes no parameter)
    "qwen3_omni_moe": {"talker_config": {"spatial_merge_size": 2, "text_config": {"shared_expert_intermediate_size": 768}}},
    # DiffusionGemmaTextConfig's num_experts and moe_intermediate_size default to None, while every
    # DiffusionGemmaEncoderTextLayer and DiffusionGemmaDecoderTextLayer builds its router and experts whatever they say
    # (no enable_moe_block), nn.Linear(hidden_size, None) refusing; and top_k_experts to None, which the router's
    # torch.topk reads in every forward: the released DiffusionGemma 26B-A4B's Gemma 4 26B-A4B mixture (128 experts of
    # 704, 8 a token). The two sizes build it; the top-k runs it
    "diffusion_gemma": {"text_config": {"num_experts": 128, "moe_intermediate_size": 704, "top_k_experts": 8}},
}


def config_data(model_type: str) -> dict:
    import transformers
    from transformers import AutoConfig

    transformers.logging.set_verbosity_error()
    try:
        data = AutoConfig.for_model(model_type).to_dict()
    except Exception:  # noqa: BLE001 — the class refuses its own defaults: recorded as refused by the truth
        data = {"model_type": model_type}
    data = _repaired(data, REPAIRS.get(model_type, {}))
    data.pop("transformers_version", None)
    return json.loads(json.dumps(data, default=str))


def _repaired(data: dict, repair: dict) -> dict:
    """``data`` with ``repair``'s keys set, a nested object's keys merged into the one it states (a sub-config's)."""
    out = dict(data)
    for key, value in repair.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key.endswith("_config"):
            out[key] = _repaired(out[key], value)
        else:
            out[key] = value
    return out


def reduced(data: dict) -> dict:
    """``data`` with its tower and language model built small (hfwhole.REDUCED)."""
    from ffncalc.analysis.hfwhole import reduced as keys

    return {**data, **{key: {**data[key], **value} for key, value in keys(data["model_type"]).items()}}


def sized(data: dict, size: int) -> dict:
    """``data`` with its images' size set: its vision_config's image_size, or the wrapper's own (Fuyu's, no tower)."""
    if data.get("model_type") == "vision-encoder-decoder":  # its vision encoder's configuration is ``encoder``
        return {**data, "encoder": {**data["encoder"], "image_size": size}}
    if data.get("model_type") in ("unlimited_ocr", "deepseek_ocr2"):  # its tables interpolated to any image: the pixels set it
        return data
    if "vision_config" not in data:
        return {**data, "image_size": size}
    if str(data["vision_config"].get("architecture", "")).startswith("vit_pe_"):  # timm builds a PE ViT for its img_size
        args = {**(data["vision_config"].get("model_args") or {}), "img_size": size}
        return {**data, "vision_config": {**data["vision_config"], "model_args": args}}
    return {**data, "vision_config": {**data["vision_config"], "image_size": size}}


def truth_text(model_type: str, data: dict, config: str = "") -> str:
    import torch

    from ffncalc.analysis.hfspeech import AUDIO_METHODS
    from ffncalc.analysis.hfwhole import (
        AUDIO_METHOD,
        AUDIO_REDUCED,
        IMAGE_METHOD,
        IMAGE_METHODS,
        ON_CPU,
        STACKED,
        STACKED_METHOD,
        audio_flops,
        image_flops,
        measure_whole,
    )
    from ffncalc.analysis.hfwhole import reduced as reduced_keys
    from ffncalc.analysis.records import record_json

    try:
        record = measure_whole(data)
    except Exception as exc:  # noqa: BLE001 — transformers refuses its own defaults: the reason, as it gives it
        import transformers

        message = " ".join(str(exc).split())
        record = {"transformers": transformers.__version__, "refused": f"{type(exc).__name__}: {message[:300]}"}
    if model_type == "phi4_multimodal" and "refused" not in record and not config:  # its own image and audio paths
        from ffncalc.analysis.hfembedded import PHI4_AUDIO_METHOD, PHI4_IMAGE_METHOD, PHI4_REDUCED, phi4_audio_flops, phi4_image_flops

        small = {**data, **{key: {**data[key], **value} for key, value in PHI4_REDUCED.items()}}
        runs = [phi4_image_flops(small, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": PHI4_IMAGE_METHOD, "runs": runs, "reduced": PHI4_REDUCED}
        runs = [phi4_audio_flops(data, n) for n in AUDIO_POSITIONS[model_type]]
        record["audio_flops"] = {"method": PHI4_AUDIO_METHOD, "runs": runs}
    elif model_type == "inkling_mm_model" and "refused" not in record and not config:  # patches a token; codes a frame
        from ffncalc.analysis.hfembedded import INKLING_AUDIO_METHOD, INKLING_IMAGE_METHOD, inkling_audio_flops, inkling_image_flops

        runs = [inkling_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": INKLING_IMAGE_METHOD, "runs": runs}
        runs = [inkling_audio_flops(data, n) for n in AUDIO_FRAMES[model_type]]
        record["audio_code_flops"] = {"method": INKLING_AUDIO_METHOD, "runs": runs}
    elif model_type == "dots3_note" and "refused" not in record and not config:  # its towers small, experts eager
        from ffncalc.analysis.hfdots3 import (
            DOTS3_AUDIO_METHOD,
            DOTS3_IMAGE_METHOD,
            DOTS3_REDUCED,
            dots3_audio_flops,
            dots3_image_flops,
        )

        runs = [dots3_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": DOTS3_IMAGE_METHOD, "runs": runs, "reduced": DOTS3_REDUCED}
        runs = [dots3_audio_flops(data, n) for n in DOTS3_POSITIONS]
        record["audio_flops"] = {"method": DOTS3_AUDIO_METHOD, "runs": runs, "reduced": DOTS3_REDUCED}
    elif model_type == "granite_docling" and "refused" not in record and not config:  # one tile, its vision model on the CPU
        from ffncalc.analysis.hfdocling import DOCLING_IMAGE_METHOD, docling_image_flops

        runs = [docling_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": DOCLING_IMAGE_METHOD, "runs": runs}
    elif model_type == "muse_glimmer" and "refused" not in record and not config:  # built small, on the CPU
        from ffncalc.analysis.hfmuse import MUSE_IMAGE_METHOD, MUSE_REDUCED, muse_image_flops

        runs = [muse_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": MUSE_IMAGE_METHOD, "runs": runs, "reduced": MUSE_REDUCED}
    elif model_type == "muse_spark" and "refused" not in record and not config:  # raw samples, on the meta device
        from ffncalc.analysis.hfmuse import (
            MUSE_SPARK_AUDIO_METHOD,
            MUSE_SPARK_IMAGE_METHOD,
            MUSE_SPARK_REDUCED,
            muse_image_flops,
            muse_spark_audio_flops,
        )

        runs = [muse_image_flops(data, s, MUSE_SPARK_REDUCED) for s in IMAGE_SIZES[model_type]]  # its tower built small
        record["image_flops"] = {"method": MUSE_SPARK_IMAGE_METHOD, "runs": runs, "reduced": MUSE_SPARK_REDUCED}
        runs = [muse_spark_audio_flops(data, n) for n in MUSE_SPARK_TOKENS]
        record["audio_token_flops"] = {"method": MUSE_SPARK_AUDIO_METHOD, "runs": runs}
    elif model_type == "hunyuan_vl" and "refused" not in record and not config:  # built small, on the CPU
        from ffncalc.analysis.hfhunyuan import HUNYUAN_IMAGE_METHOD, HUNYUAN_REDUCED, hunyuan_image_flops

        runs = [hunyuan_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": HUNYUAN_IMAGE_METHOD, "runs": runs, "reduced": HUNYUAN_REDUCED}
    elif model_type == "gemma3n" and "refused" not in record and not config:  # a clip of frames; timm's tower
        from ffncalc.analysis.hfgemma3n import (
            GEMMA3N_AUDIO_METHOD,
            GEMMA3N_FRAMES,
            GEMMA3N_IMAGE_METHOD,
            gemma3n_audio_flops,
            gemma3n_image_flops,
        )

        runs = [gemma3n_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": GEMMA3N_IMAGE_METHOD, "runs": runs}
        runs = [gemma3n_audio_flops(data, n) for n in GEMMA3N_FRAMES]
        record["audio_clip_flops"] = {"method": GEMMA3N_AUDIO_METHOD, "runs": runs}
    elif model_type in ("chameleon", "emu3") and "refused" not in record and not config:  # its VQ-VAE's encode, on the meta device
        from ffncalc.analysis.hfvqvae import VQVAE_IMAGE_METHOD, vqvae_image_flops

        runs = [vqvae_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": VQVAE_IMAGE_METHOD, "runs": runs}
    elif model_type == "molmo2" and "refused" not in record and not config:  # its crops; a FLOP-only repair
        from ffncalc.analysis.hfmolmo2 import MOLMO2_IMAGE_METHOD, MOLMO2_REDUCED, molmo2_image_flops

        # MOLMO2_REDUCED: its adapter's text_hidden_size (3,584) is not its language model's width (4,096), so its
        # forward refuses any image; the FLOPs at the released Molmo 2's layout, the parameters at the defaults
        runs = [molmo2_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": MOLMO2_IMAGE_METHOD, "runs": runs, "reduced": MOLMO2_REDUCED}
    elif model_type == "granite4_vision" and "refused" not in record and not config:  # its projectors run one by one
        from ffncalc.analysis.hfgranite4 import GRANITE4_IMAGE_METHOD, GRANITE4_REDUCED, granite4_image_flops

        runs = [granite4_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": GRANITE4_IMAGE_METHOD, "runs": runs, "reduced": GRANITE4_REDUCED}
    elif model_type == "diffusion_gemma" and "refused" not in record and not config:  # its encoder's image path
        from ffncalc.analysis.hfdgemma import DGEMMA_IMAGE_METHOD, dgemma_image_flops

        runs = [dgemma_image_flops(data, s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": DGEMMA_IMAGE_METHOD, "runs": runs}
    elif model_type == "evolla" and "refused" not in record and not config:  # a protein, not an image
        from ffncalc.analysis import hfevolla

        runs = [hfevolla.protein_flops(data, n) for n in hfevolla.PROTEIN_POSITIONS]
        record["protein_flops"] = {"method": hfevolla.PROTEIN_METHOD, "runs": runs}
        runs = [hfevolla.forward_flops(data, t, n) for t, n in hfevolla.FORWARD_SHAPES]
        record["forward_flops"] = {"method": hfevolla.FORWARD_METHOD, "runs": runs, "reduced": hfevolla.EVOLLA_REDUCED}
    elif model_type in VIBEVOICE_TOKENS and "refused" not in record and not config:  # samples, not frames
        from ffncalc.analysis import hfspeech

        if model_type == "vibevoice":  # its forward's acoustic path, and its diffusion head's step (one row, and two)
            runs = [hfspeech.vibevoice_flops(data, n) for n in VIBEVOICE_TOKENS[model_type]]
            record["audio_token_flops"] = {"method": hfspeech.VIBEVOICE_SPEECH_METHOD, "runs": runs}
            steps = [hfspeech.vibevoice_diffusion_flops(data, rows) for rows in (1, 2)]
            record["diffusion_step_flops"] = {"method": hfspeech.VIBEVOICE_DIFFUSION_METHOD, "runs": steps}
        else:
            runs = [hfspeech.vibevoice_asr_flops(data, n) for n in VIBEVOICE_TOKENS[model_type]]
            record["audio_token_flops"] = {"method": hfspeech.VIBEVOICE_METHOD, "runs": runs}
    elif model_type == "pi0" and "refused" not in record and not config:  # its whole forward, built small on the CPU
        from ffncalc.analysis.hfpi0 import PI0_METHOD, PI0_PREFIXES, PI0_REDUCED, pi0_flops, reduced_pi0

        runs = [pi0_flops(reduced_pi0(data), n) for n in PI0_PREFIXES]
        record["forward_flops"] = {"method": PI0_METHOD, "runs": runs, "reduced": PI0_REDUCED}
    elif model_type in IMAGE_SIZES and "refused" not in record and not config:
        base = reduced(data) if model_type in ON_CPU else data
        runs = [image_flops(sized(base, s), s) for s in IMAGE_SIZES[model_type]]
        record["image_flops"] = {"method": IMAGE_METHODS.get(model_type, IMAGE_METHOD), "runs": runs}
        if model_type in ON_CPU:  # built small, on the CPU, with real tensors
            record["image_flops"]["reduced"] = reduced_keys(model_type)
    if model_type in AUDIO_POSITIONS and "refused" not in record and not config and model_type != "phi4_multimodal":
        base = reduced(data) if model_type in AUDIO_REDUCED else data
        runs = [audio_flops(base, n) for n in AUDIO_POSITIONS[model_type]]
        method = AUDIO_METHODS.get(model_type, STACKED_METHOD if model_type in STACKED else AUDIO_METHOD)
        record["audio_flops"] = {"method": method, "runs": runs}
        if model_type in AUDIO_REDUCED:  # built small, on the CPU, with real tensors
            record["audio_flops"]["reduced"] = reduced_keys(model_type)
    if model_type in REPAIRS and not config:
        record = {"repaired": REPAIRS[model_type], **record}
    path = f"tests/hf_whole/{config or 'configs/' + model_type}.json"
    return record_json({"config": path, "torch": torch.__version__, **record})


def main() -> int:
    from ffncalc.sources.hf.coverage import WHOLE_ENCODER_TYPES, WHOLE_TYPES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("types", nargs="*", help="model_types (default: every type of the two mappings)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    from ffncalc.analysis.timmload import TIMM_VERSION, available

    if not available():  # three towers are timm's (TimmWrapper): without it their records would read "refused"
        print(f"hf_whole.py: timm is needed: pip install --no-deps timm=={TIMM_VERSION}", file=sys.stderr)
        return 2
    stale = []
    public = [f"public:{p.stem}" for p in sorted((OUT / "public").glob("*.json")) if p.stem != "sources"]
    names = args.types or list(WHOLE_TYPES) + list(WHOLE_ENCODER_TYPES) + public
    for model_type in names:
        if model_type.startswith("public:"):  # a public config as it is: its truth alone is written
            name = model_type.split(":", 1)[1]
            data = json.loads((OUT / "public" / f"{name}.json").read_text())
            truth, record = OUT / "public_truth" / f"{name}.json", truth_text(data["model_type"], data, f"public/{name}")
            if args.check:
                stale += [model_type] if not truth.is_file() or truth.read_text() != record else []
            else:
                truth.parent.mkdir(parents=True, exist_ok=True)
                truth.write_text(record)
            continue
        config, truth = OUT / "configs" / f"{model_type}.json", OUT / "truth" / f"{model_type}.json"
        data = config_data(model_type)
        text, record = json.dumps(data, indent=1, sort_keys=True) + "\n", truth_text(model_type, data)
        if args.check:
            if not config.is_file() or config.read_text() != text or not truth.is_file() or truth.read_text() != record:
                stale.append(model_type)
            continue
        config.parent.mkdir(parents=True, exist_ok=True)
        truth.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(text)
        truth.write_text(record)
    if args.check:
        print(
            f"{len(names) - len(stale)} of {len(names)} whole-model records current"
            + (f"; stale: {', '.join(stale)} (rerun python scripts/hf_whole.py)" if stale else "")
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
