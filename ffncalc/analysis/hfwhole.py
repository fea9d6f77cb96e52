"""Whole multimodal models as transformers builds them: its image-text-to-text (or multimodal-LM) class built from a wrapper
config on the meta device, every parameter by name (a tied one once); and what one image costs: FlopCounterMode over the model's
``get_image_features`` (the vision tower and projector, as a forward with ``pixel_values`` runs them), one image of a stated size."""

from __future__ import annotations

from math import isqrt

from .hfcheck import DROPPED_KEYS
from .hfspeech import TRANSCRIBE_SMALL, fun_asr_nano_flops, transcribe_flops

# How image FLOPs are measured, recorded with them.
IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.get_image_features(pixel_values) of the whole class on the "
    "meta device, eager attention, one image of shape (1, 3, size, size): 2 FLOPs per multiply-add of every matmul "
    "and convolution, summed per module (the vision tower's and the projector's)"
)

# Image encoder-decoders (no get_image_features): what runs one image (the decoder's cross-attention is the language model's)
IMAGE_METHODS = {
    kind: "torch.utils.flop_counter.FlopCounterMode over the whole class's image encoder, as its forward runs it "
    + how
    + ", eager attention, one image: 2 FLOPs per multiply-add of every matmul and convolution, summed per module"
    for kind, how in (
        ("pix2struct", "(encoder(flattened_patches): (size / 16)² patches of 2 + 768 values, on the CPU, the rest meta)"),
        ("blip", "(vision_model(pixel_values) of shape (1, 3, size, size), on the meta device)"),
        ("vision-encoder-decoder", "(encoder(pixel_values) of shape (1, 3, size, size), its pooler too, on the meta device)"),
        ("pp_formulanet", "(model.encoder(pixel_values) of shape (1, 3, size, size), its projector too, on the meta device)"),
    )
}


# Whole classes no auto class builds, by name (AutoModelForImageTextToText refuses EvollaConfig: its protein-text class)
NAMED_CLASSES = {"evolla": "EvollaForProteinText2Text"}


def instantiate_whole(data: dict, device: str = "meta"):
    """The whole model a wrapper config describes, on the meta device (or ``device``), with eager attention."""
    import torch
    import transformers
    from transformers import (
        AutoConfig,
        AutoModelForImageTextToText,
        AutoModelForMaskedLM,
        AutoModelForMultimodalLM,
        AutoModelForSeq2SeqLM,
    )

    from ..sources.hf.coverage import IMAGE_TEXT_TYPES, WHOLE_ENCODER_TYPES, WHOLE_SEQ2SEQ_TYPES
    from .timmload import enable

    transformers.logging.set_verbosity_error()
    enable()  # timm's towers (TimmWrapper), where timm is installed
    data = {k: v for k, v in data.items() if k not in DROPPED_KEYS}
    kind = data.get("model_type")
    # the class of its seq2seq mapping where it is in neither multimodal mapping (Audio Flamingo 3's; VibeVoice's speech one)
    auto = (
        AutoModelForImageTextToText
        if kind in IMAGE_TEXT_TYPES
        else (transformers.AutoModelForSpeechSeq2Seq if kind == "vibevoice" else AutoModelForSeq2SeqLM)
        if kind in WHOLE_SEQ2SEQ_TYPES
        else AutoModelForMaskedLM  # a vision encoder's masked-LM class (ModernVBERT's)
        if kind in WHOLE_ENCODER_TYPES
        else AutoModelForMultimodalLM
    )
    config = AutoConfig.for_model(**data)
    with torch.device(device):
        if kind in NAMED_CLASSES:  # in no auto mapping that builds it whole: its class, by name
            return getattr(transformers, NAMED_CLASSES[kind])._from_config(config, attn_implementation="eager")
        return auto.from_config(config, attn_implementation="eager")


def measure_whole(data: dict) -> dict:
    """What transformers builds for a wrapper config: the class, every parameter (a tied one once) and buffer."""
    import transformers

    from .records import compact

    net = instantiate_whole(data)
    params = tuple((path, p.numel()) for path, p in net.named_parameters())
    buffers = tuple((path, b.numel()) for path, b in net.named_buffers() if "rotary" not in path and "inv_freq" not in path)
    return {
        "model_class": type(net).__name__,
        "transformers": transformers.__version__,
        "params": compact(params),
        "buffers": compact(buffers),
    }


# Classes whose image path reads values of its inputs (Pixtral's image_sizes, Idefics3's patch masks) run on the CPU
# with real tensors, built small (REDUCED): the FLOPs of a tower of any size follow from the same formula.
QWEN = {"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker", "exaone4_5"}
QWEN |= {"hyperclovax_vision_v2", "cohere_compass"}  # Cohere Compass's class is Qwen3-VL's
QWEN.add("ernie4_5_vl_moe")  # ERNIE 4.5-VL's: Qwen2-VL's tower, its patches of one frame
GLM = {"glm4v", "glm_ocr", "glmga", "glm5_next"}  # GLM-4V's form: Qwen2-VL's flattened patches and grid
ON_CPU = {"mistral3", "mistral_large4", "idefics3", "aria", "paddleocr_vl", "step3p7", *QWEN, *GLM}
# Classes whose tower reads its inputs' values (Gemma 4's pooler, by the patches' positions), measured at full size: the
# whole class built on the meta device, its tower and embedder then given memory on the CPU
TOWER_ON_CPU = {
    "gemma4": ("vision_tower", "embed_vision"),
    "gemma4_unified": ("embed_vision",),
    "kimi_k25": ("vision_tower", "mm_projector"),
    "lfm2_vl": ("vision_tower", "multi_modal_projector"),
    "lfm3_vl": ("vision_tower", "multi_modal_projector"),
    "cosmos3_edge": ("visual", "projector"),
    "video_llama_3": ("vision_model", "projector"),
    "inkling2": ("vision_tower",),
    "minimax_m3_vl": ("vision_tower", "multi_modal_projector"),
    "nemotron_h_omni": ("vision_model", "multi_modal_projector"),
    "minicpmv4_6": ("vision_tower", "merger"),
    "minicpmv4_7": ("vision_tower", "merger"),
    "minicpm_ocr": ("vision_tower", "merger"),
    "idefics2": ("vision_model", "connector"),
    # Idefics3's image path (padding images dropped by value, its patch masks), beside a full-size text encoder
    "modernvbert": ("vision_model", "connector"),
    "ultravbert": ("vision_model", "connector"),
    "blip-2": ("vision_model", "qformer", "language_projection", "query_tokens"),
    "instructblip": ("vision_model", "qformer", "language_projection", "query_tokens"),
    "instructblipvideo": ("vision_model", "qformer", "language_projection", "query_tokens"),
    "pix2struct": ("encoder",),  # its mask of real patches is asked of their values (Pix2StructVisionModel.forward)
}
REDUCED = {
    "vision_config": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 16},
    "text_config": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "head_dim": 16,
        "vocab_size": 1024,
    },
}


# Each Qwen tower built small by its own keys (the layers its windows and deepstack mergers name within its depth)
QWEN_REDUCED = {
    "qwen2_vl": {"embed_dim": 64, "num_heads": 4, "depth": 2, "hidden_size": 64},
    "qwen2_5_vl": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "depth": 4,
        "num_heads": 4,
        "out_hidden_size": 64,
        "fullatt_block_indexes": [1, 3],
    },
    "exaone4_5": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "depth": 4,
        "num_heads": 4,
        "num_key_value_heads": 2,
        "out_hidden_size": 64,
        "fullatt_block_indexes": [1, 3],
    },
    "hyperclovax_vision_v2": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "depth": 4,
        "num_heads": 4,
        "out_hidden_size": 48,
        "fullatt_block_indexes": [1, 3],
    },
    "ernie4_5_vl_moe": {"hidden_size": 64, "intermediate_size": 128, "depth": 2, "num_heads": 4},
    **dict.fromkeys(GLM, {"hidden_size": 64, "intermediate_size": 128, "depth": 2, "num_heads": 4, "out_hidden_size": 64}),
    **dict.fromkeys(
        ("qwen3_vl", "qwen3_omni_moe_thinker", "cohere_compass"),
        {
            "hidden_size": 64,
            "intermediate_size": 128,
            "depth": 4,
            "num_heads": 4,
            "out_hidden_size": 64,
            "deepstack_visual_indexes": [1, 2],
        },
    ),
}
QWEN_REDUCED["qwen2_5_omni_thinker"] = QWEN_REDUCED["qwen2_5_vl"]  # Qwen2.5-VL's tower
# ERNIE 4.5-VL's text config of one dense layer, its 3-D rotary sections (h, w, t frequencies) within a head of 16
ERNIE_TEXT = {"mlp_layer_types": ["dense"], "rope_parameters": {"rope_type": "default", "rope_theta": 5e5, "mrope_section": [3, 3, 2]}}


# Audio towers whose chunks are cut by their inputs' lengths (Qwen2.5-Omni's), built small: its audio_config
AUDIO_SMALL = {"d_model": 64, "encoder_attention_heads": 4, "encoder_ffn_dim": 128, "encoder_layers": 2, "output_dim": 64}
AUDIO_REDUCED = {"qwen2_5_omni_thinker": AUDIO_SMALL, "qwen3_omni_moe_thinker": {**AUDIO_SMALL, "downsample_hidden_size": 32}}
AUDIO_REDUCED["nemo_speechlm"] = TRANSCRIBE_SMALL


def reduced(kind: str) -> dict:
    """The keys that build ``kind``'s tower and language model small."""
    if kind == "nemo_speechlm":  # its audio model alone
        return {"audio_config": TRANSCRIBE_SMALL}
    if kind in QWEN_REDUCED:  # its text config's per-layer lists follow its one layer
        glm5 = {"mlp_layer_types": ["dense"], "indexer_types": ["full"], "pad_token_id": 0} if kind == "glm5_next" else {}
        lists = {"layer_types": ["full_attention"], **glm5} if kind != "ernie4_5_vl_moe" else ERNIE_TEXT
        out = {"vision_config": QWEN_REDUCED[kind], "text_config": {**REDUCED["text_config"], **lists}}
        return {**out, "audio_config": AUDIO_REDUCED[kind]} if kind in AUDIO_REDUCED else out
    if kind == "mistral_large4":  # its text config's latent widths small and per-layer lists its one layer's
        lists = {"indexer_types": ["full"], "kv_source_layers": [0], "layer_types": ["indexed_attention"]}
        lists |= {"mlp_layer_types": ["dense"], "no_rope_layers": [1]}
        latent = {"kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16}
        latent |= {"index_n_heads": 2, "index_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2}
        return {"vision_config": REDUCED["vision_config"], "text_config": {**REDUCED["text_config"], **lists, **latent}}
    if kind == "step3p7":  # its text config's per-layer lists follow its one layer
        text = {**REDUCED["text_config"], "layer_types": ["full_attention"], "mlp_layer_types": ["dense"]}
        return {"vision_config": REDUCED["vision_config"], "text_config": text}
    return REDUCED


def image_flops(data: dict, size: int) -> dict:
    """FLOPs of one image of ``size`` × ``size`` pixels through the tower and the projector, per module."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    kind = data.get("model_type")
    device = "cpu" if kind in ON_CPU | set(TOWER_ON_CPU) else "meta"
    net = instantiate_whole(data, "meta" if kind in TOWER_ON_CPU else device)
    if kind in TOWER_ON_CPU:  # the tower and its embedder alone given memory (their values unset: the FLOPs are shapes')
        holder = net.model if hasattr(net, "model") else net
        for name in TOWER_ON_CPU[kind]:
            part = getattr(holder, name)
            if isinstance(part, torch.nn.Parameter):  # a learned row of the class's own (BLIP-2's query_tokens)
                setattr(holder, name, torch.nn.Parameter(torch.empty_like(part, device="cpu")))
            else:
                setattr(holder, name, part.to_empty(device="cpu"))
        if kind in ("modernvbert", "ultravbert"):  # SigLIP's position_ids, a buffer it indexes its table by, left unset
            for buffer, ids in holder.vision_model.named_buffers():
                if buffer.endswith("position_ids"):
                    ids.copy_(torch.arange(ids.shape[-1]).expand_as(ids))
    net.requires_grad_(False)  # a learned row expanded under no_grad (BLIP-2's queries) trips the module tracker
    pixels = torch.ones(1, 3, size, size, device=device)  # not all zeros: Idefics3 drops an all-zero image as padding
    kwargs = {}
    if kind in ("mistral3", "mistral_large4"):  # each image's height and width, read as numbers
        kwargs["image_sizes"] = torch.tensor([[size, size]])
    if kind in ("idefics3", "idefics2", "modernvbert", "ultravbert"):  # images per sample, and which pixels are real
        pixels = pixels[None]
        kwargs["pixel_attention_mask"] = torch.ones(1, 1, size, size, dtype=torch.bool)
    if kind in ("gemma4", "gemma4_unified"):  # the processor's flattened patches (channels × patch² pixels each), their (x, y)
        v = net.config.vision_config
        p = v.model_patch_size if kind == "gemma4_unified" else v.patch_size
        side = size // p
        pixels = torch.ones(1, side * side, 3 * p * p)
        grid = torch.arange(side * side)
        kwargs["image_position_ids"] = torch.stack([grid % side, grid // side], dim=-1)[None]
    if kind == "deepseek_vl_hybrid":  # the same image at its SAM tower's size too
        hr = net.config.high_res_vision_config.image_size
        kwargs["high_res_pixel_values"] = torch.ones(1, 3, hr, hr, device=device)
    if kind == "aria":  # which pixels are real
        kwargs["pixel_mask"] = torch.ones(1, size, size, dtype=torch.bool)
    if kind in ("instructblip", "instructblipvideo"):  # an instruction of no tokens: the image's work alone
        kwargs["qformer_input_ids"] = torch.zeros(1, 0, dtype=torch.long)
    if kind == "fuyu":  # no tower: the processor's patches (channels × patch² each) through vision_embed_tokens
        p = net.config.patch_size
        pixels = torch.ones(1, (size // p) ** 2, net.config.num_channels * p * p, device=device)
    if kind == "lfm2_vl":  # NaFlex: the flattened patches (channels × patch² each), their grid and which are real
        p = net.config.vision_config.patch_size
        side = size // p
        pixels = torch.ones(1, side * side, 3 * p * p)
        kwargs["spatial_shapes"] = torch.tensor([[side, side]])
        kwargs["pixel_attention_mask"] = torch.ones(1, side * side, dtype=torch.bool)
    if kind == "lfm3_vl":  # the flattened patches (channels × frames × patch² each) in merge-block order, the grid
        v = net.config.vision_config
        side = size // v.patch_size
        pixels = torch.ones(side * side, v.in_channels * v.temporal_patch_size * v.patch_size**2)
        kwargs["image_grid_thw"] = torch.tensor([[1, side, side]])
    if kind == "cosmos3_edge":  # packed NaFlex patches (channels × patch² each) and the grid they pack
        p = net.config.vision_config.patch_size
        side = size // p
        pixels = torch.ones(side * side, 3 * p * p)
        kwargs["image_grid_thw"] = torch.tensor([[1, side, side]])
    if kind == "perception_lm":  # images of tiles: one tile
        pixels = pixels[None]
    if kind in ("kimi_k25", "paddleocr_vl"):  # the processor's patches (channels × patch × patch each) and the grid
        p = net.config.vision_config.patch_size
        side = size // p
        pixels = torch.ones(side * side, 3, p, p)
        kwargs["image_grid_thw"] = torch.tensor([[1, side, side]])
    if kind == "video_llama_3":  # the processor's flattened patches (channels × patch² each), the grid, merge size 1
        p = net.config.vision_config.patch_size
        side = size // p
        pixels = torch.ones(side * side, 3 * p * p)
        kwargs["image_grid_thw"] = torch.tensor([[1, side, side]])
        kwargs["image_merge_sizes"] = torch.tensor([1])
    if kind in ("minicpmv4_6", "minicpmv4_7", "minicpm_ocr"):  # NaViT-packed: the patches side by side, the grid
        p = net.config.vision_config.patch_size
        side = size // p
        pixels = torch.ones(1, 3, p, side * side * p)
        kwargs["target_sizes"] = torch.tensor([[side, side]])
    if kind == "nemotron_h_omni":  # the processor's flattened patches (channels × patch² each) and the grid
        net.vision_model.summary_idxs.copy_(torch.tensor(net.config.vision_config.summary_idxs))  # a buffer it indexes by
        p = net.config.vision_config.patch_size
        side = size // p
        pixels = torch.ones(side * side, 3 * p * p)
        kwargs["image_grid_hw"] = torch.tensor([[side, side]])
    if kind == "minimax_m3_vl":  # the processor's flattened patches (channels × frames × patch² each) and the grid
        v = net.config.vision_config
        side = size // v.patch_size
        pixels = torch.ones(side * side, v.num_channels * v.temporal_patch_size * v.patch_size**2)
        kwargs["image_grid_thw"] = torch.tensor([[1, side, side]])
    if kind == "inkling2":  # a tile of merge × merge patches (pixels, channels last) a token, the grid in tokens
        v = net.config.vision_config
        tile = v.patch_size * v.spatial_merge_size
        side = size // tile
        pixels = torch.ones(side * side, tile, tile, v.num_channels)
        kwargs["image_grid_thw"] = torch.tensor([[1, side, side]])
    if kind in QWEN | GLM:  # the processor's flattened patches (frames × channels × patch² pixels each) and the grid
        v = net.config.vision_config
        side = size // v.patch_size
        frames = getattr(v, "temporal_patch_size", 1)  # ERNIE 4.5-VL's: one frame a patch
        pixels = torch.ones(side * side, v.in_channels * frames * v.patch_size**2)
        kwargs["image_grid_thw"] = torch.tensor([[1, side, side]])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        if kind == "instructblipvideo":  # a video of one frame: the image's work
            (net.model if hasattr(net, "model") else net).get_video_features(pixel_values=pixels[None], **kwargs)
        elif kind == "kosmos-2":  # its class has no get_image_features: Kosmos2Model.get_image_features's steps
            import torch.nn.functional as F

            features = net.vision_model(pixel_values=pixels).last_hidden_state
            net.image_to_text_projection(F.normalize(net.vision_model.model.post_layernorm(features), dim=-1))
        elif kind == "kosmos-2.5":  # the processor's flattened patches (row, column, 3 × patch² pixels), as its forward runs them
            import torch.nn.functional as F

            v = net.config.vision_config
            patches = torch.ones(1, (size // isqrt(v.patch_embed_hidden_size // 3)) ** 2, 2 + v.patch_embed_hidden_size, device=device)
            features = net.vision_model(flattened_patches=patches).last_hidden_state
            net.image_to_text_projection(F.normalize(features, dim=-1))
        elif kind == "pix2struct":  # the processor's flattened patches (row, column, 3 × patch² pixels) through its encoder
            v = net.config.vision_config
            patches = torch.ones(1, (size // isqrt(v.patch_embed_hidden_size // 3)) ** 2, 2 + v.patch_embed_hidden_size, device=device)
            net.encoder(flattened_patches=patches)
        elif kind == "vision-encoder-decoder":  # its forward runs the encoder (ViTModel, its pooler too) on the pixels
            net.encoder(pixel_values=pixels)
        elif kind == "pp_formulanet":  # no get_image_features: PPFormulaNetModel's forward runs its encoder, projector too
            net.model.encoder(pixel_values=pixels)
        elif kind == "blip":  # BlipForConditionalGeneration has no get_image_features: its forward runs vision_model
            net.vision_model(pixel_values=pixels)
        elif kind == "git":  # no get_image_features: GitModel's forward runs its image_encoder, then visual_projection
            net.git.visual_projection(net.git.image_encoder(pixel_values=pixels).last_hidden_state)
        elif kind == "idefics":  # no get_image_features: IdeficsModel's forward runs its vision model, whose last rows
            # the cross-attention layers read as they are, or its perceiver resampler's latents (use_resampler)
            rows = net.model.vision_model(pixel_values=pixels).last_hidden_state
            if net.config.use_resampler:
                net.model.perceiver_resampler(rows)
        elif kind == "mllama":  # no get_image_features: MllamaModel's forward runs its vision model, then the projector,
            # over one image of max_num_tiles tiles (every tile real: the mask of tiles and an aspect-ratio id of 1)
            tiles = net.config.vision_config.max_num_tiles
            out = net.model.vision_model(
                pixel_values=torch.ones(1, 1, tiles, 3, size, size, device=device),
                aspect_ratio_ids=torch.ones(1, 1, dtype=torch.long, device=device),
                aspect_ratio_mask=torch.ones(1, 1, tiles, dtype=torch.long, device=device),
            ).last_hidden_state
            net.model.multi_modal_projector(out)
        elif kind == "llama4":  # no inner model: its get_image_features is the tower and adapter, the projector after it
            net.multi_modal_projector(net.get_image_features(pixel_values=pixels).last_hidden_state)
        else:  # the inner model's, or the class's own where it has none (BLIP-2's)
            (net.model if hasattr(net, "model") else net).get_image_features(pixel_values=pixels, **kwargs)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"size": size, "total": sum(counts["Global"].values()), "modules": modules}


# How audio FLOPs are measured, recorded with them.
AUDIO_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over one window of log-mel frames, input_features of shape (1, num_mel_bins, "
    "2 × max_source_positions), through the whole class's audio tower and multi-modal projector (Voxtral's "
    "get_audio_features; Qwen2-Audio's audio_tower and multi_modal_projector, as its forward runs them, and Audio Flamingo "
    "3's and Music Flamingo's, the tower given a mask of every frame; MOSS-Transcribe-Diarize's and GLM-ASR's, the tower's "
    "output reshaped to adaptor_input_dim or intermediate_size features a token between them, as their get_audio_features "
    "do) on the meta device; Qwen3-ASR's get_audio_features over one attention window of n_window_infer frames, its tower "
    "and projector on the CPU; eager attention: 2 FLOPs per multiply-add of every matmul and convolution, summed per module"
)


STACKED_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.get_audio_features(input_features) of the whole class on the "
    "meta device, eager attention, input_features of shape (1, positions, input_dim): its feature extractor's two "
    "stacked log-mel frames a position, through the encoder and the projector: 2 FLOPs per multiply-add of every "
    "matmul, einsum and convolution, summed per module"
)
# Classes whose encoder reads its feature extractor's stacked frames, (1, positions, input_dim), of any length (Granite
# Speech's get_audio_features: GraniteSpeechCTCEncoder and its Q-Former projector)
STACKED = {"granite_speech", "granite_speech_plus"}


def audio_flops(data: dict, positions: int) -> dict:
    """FLOPs of one window of ``positions`` positions (2 × as many frames) through the audio tower and projector."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    if data["model_type"] == "qwen3_asr":
        return qwen3_asr_flops(data, positions)
    kind = data["model_type"]
    if kind in STACKED:  # no window of its own: the positions' features themselves, as its feature extractor stacks them
        net = instantiate_whole(data)
        net.requires_grad_(False)
        features = torch.ones(1, positions, net.config.encoder_config.input_dim, device="meta")
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            net.model.get_audio_features(input_features=features)
        counts = counter.get_flop_counts()
        modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
        return {"positions": positions, "total": sum(counts["Global"].values()), "modules": modules}
    if kind == "fun_asr_nano":
        return fun_asr_nano_flops(data, positions)
    if kind == "nemo_speechlm":
        return transcribe_flops(data, positions)
    data = {**data, "audio_config": {**data["audio_config"], "max_source_positions": positions}}
    device = "cpu" if kind in AUDIO_REDUCED else "meta"  # its chunks are cut by the lengths' values
    net = instantiate_whole(data, device)
    net.requires_grad_(False)
    mels = net.config.audio_config.num_mel_bins
    frames = torch.ones(1, mels, 2 * positions, device=device)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        if kind in AUDIO_REDUCED:  # every frame real: the window's one length
            net.model.get_audio_features(input_features=frames, feature_attention_mask=torch.ones(1, 2 * positions, dtype=torch.long))
        elif data["model_type"] in ("voxtral", "voxtral_realtime"):  # Voxtral Realtime's: its causal tower, eager,
            # computing the whole square of scores its sliding-window mask then masks
            net.model.get_audio_features(input_features=frames)
        elif data["model_type"] in ("audioflamingo3", "musicflamingo"):  # its tower and its projector, as
            # get_audio_features runs them; the tower reads a mask of the frames (every one real: the attention mask it
            # builds from it asks by value whether all are, which the meta device cannot answer, and masks nothing); Music
            # Flamingo's rotary time embedding between them (no matmul) reads the prompt's audio tokens by value
            from unittest import mock

            tower = type(net.model.audio_tower).__module__
            mask = torch.ones(1, 2 * positions, dtype=torch.long, device="meta")
            with mock.patch(f"{tower}.create_bidirectional_mask", lambda **_: None):
                out = net.model.audio_tower(frames, input_features_mask=mask).last_hidden_state
            net.model.multi_modal_projector(out)
        elif data["model_type"] == "moss_transcribe_diarize":  # get_audio_features' reshape of audio_merge_size
            # positions a token (its masks of valid frames index by values the meta device does not hold)
            out = net.model.audio_tower(frames).last_hidden_state
            net.model.multi_modal_projector(out.reshape(1, -1, net.config.adaptor_input_dim))
        elif data["model_type"] == "glmasr":  # get_audio_features' reshape of intermediate_size features a token; its mask
            # of valid tokens indexes by values the meta device does not hold, so the tower and projector run as it runs them
            out = net.model.audio_tower(frames).last_hidden_state
            net.model.multi_modal_projector(out.reshape(1, -1, net.config.audio_config.intermediate_size))
        else:
            out = net.model.audio_tower(frames).last_hidden_state
            net.model.multi_modal_projector(out)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"positions": positions, "total": sum(counts["Global"].values()), "modules": modules}


def qwen3_asr_flops(data: dict, positions: int) -> dict:
    """Qwen3-ASR: one attention window of ``positions`` positions (n_window_infer set to the frames of its whole
    chunks) through get_audio_features, its tower and projector given memory on the CPU (its windows are found from
    the mask's values), every frame real."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    a = data["audio_config"]
    chunk = 2 * a["n_window"]
    per_chunk = (((chunk - 1) // 2 + 1 - 1) // 2 + 1 - 1) // 2 + 1  # three convolutions of stride 2, padding 1
    frames = positions // per_chunk * chunk
    data = {**data, "audio_config": {**a, "n_window_infer": frames}}
    net = instantiate_whole(data)
    for name in ("audio_tower", "multi_modal_projector"):
        setattr(net.model, name, getattr(net.model, name).to_empty(device="cpu"))
    net.requires_grad_(False)
    mels = torch.zeros(1, a["num_mel_bins"], frames)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_audio_features(input_features=mels, input_features_mask=torch.ones(1, frames, dtype=torch.long))
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"positions": positions, "total": sum(counts["Global"].values()), "modules": modules}


TEXT = "language model"  # the whole class's text model and head, as one component


def check_whole(c, spec, *, model: str = "model", measured: dict | None = None):
    """``verify --hf`` of a wrapper read whole: the whole class's parameters (``measured``, default: built now) against
    ours, each tower and projector component by its module's name (a fused projection against the sum of ours it
    holds; π0's action expert too), the language model and its head as one component (``verify --hf`` on its text
    config proves it layer by layer). An HFReport, as hfcheck.check."""
    from ..sources.hf.names import fuse
    from ..sources.hf.towers import NAMED, component, tower_of
    from .count import terms
    from .hfcheck import HFCheck, HFReport
    from .records import expanded

    kind = tower_of(c) or "vision"
    measured = measured or measure_whole(c.outer.data)
    theirs: dict = {}
    for name, n in expanded(measured["params"], 2):
        key = (component(name, kind) or TEXT, None)
        theirs[key] = theirs.get(key, 0) + n
    ours: dict = {}
    for t in terms(spec, 8, partial=True):
        if t.numel and not t.tied:
            key = (t.component if t.component.startswith(NAMED) else TEXT, None)
            ours[key] = ours.get(key, 0) + t.numel * t.stored_count
    ours = fuse(ours, theirs)
    checks = tuple(
        HFCheck(name, None, ours.get((name, None), 0), theirs.get((name, None), 0))
        for name, _ in list(ours) + [k for k in theirs if k not in ours]
    )
    notes = ("the whole class: its towers and projector by their modules' names, the language model and its head as one",)
    return HFReport(model, measured["model_class"], measured["transformers"], notes, checks)
