"""Which Hugging Face model_types ffncalc counts, and why the others are not counted yet: plain data, read by
``ffncalc families`` and the generated docs page without importing transformers.

``CAUSAL_LM_TYPES`` is every key of transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` in the version named
(tests/families/test_model_types.py checks it against the installed transformers). Each is either read by a family
(``sources/hf/families/``), or listed in ``NOT_TEXT_DECODERS`` (not a decoder-only text model: what it is),
or in ``NOT_YET`` (a decoder-only text model no family reads yet: what it needs). ``MASKED_LM_TYPES`` is every key
of its ``MODEL_FOR_MASKED_LM_MAPPING_NAMES``; its encoders (``ENCODER_TYPES``) are each read by a family (as the
masked-LM class) or listed in ``ENCODERS_NOT_YET``; the encoder-decoders of its seq2seq and speech-seq2seq mappings
(``ENCODER_DECODER_TYPES``) by a family or in ``SEQ2SEQ_NOT_YET``.
"""

from __future__ import annotations

TRANSFORMERS_VERSION = "5.23.0"

CAUSAL_LM_TYPES = (
    "afmoe",
    "apertus",
    "arcee",
    "aria_text",
    "axk1",
    "axk2",
    "bailing_hybrid",
    "bamba",
    "bart",
    "beam",
    "bert",
    "bert-generation",
    "big_bird",
    "bigbird_pegasus",
    "biogpt",
    "bitnet",
    "blenderbot",
    "blenderbot-small",
    "bloom",
    "blt",
    "camembert",
    "codegen",
    "cohere",
    "cohere2",
    "cohere2_moe",
    "cohere_compass_text",
    "cpmant",
    "ctrl",
    "cwm",
    "data2vec-text",
    "dbrx",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "deepseek_v4",
    "diffllama",
    "doge",
    "dots1",
    "dots3_note",
    "dots3_note_text",
    "electra",
    "emu3",
    "ernie",
    "ernie4_5",
    "ernie4_5_moe",
    "exaone4",
    "exaone_moe",
    "falcon",
    "falcon_h1",
    "falcon_mamba",
    "flex_olmo",
    "flint",
    "fuyu",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gemma3n",
    "gemma3n_text",
    "gemma4",
    "gemma4_assistant",
    "gemma4_text",
    "gemma4_unified",
    "gemma4_unified_assistant",
    "gemma4_unified_text",
    "git",
    "glm",
    "glm4",
    "glm4_moe",
    "glm4_moe_lite",
    "glm_moe_dsa",
    "got_ocr2",
    "gpt-sw3",
    "gpt2",
    "gpt_bigcode",
    "gpt_neo",
    "gpt_neox",
    "gpt_neox_japanese",
    "gpt_oss",
    "gptj",
    "granite",
    "granite_swa",
    "granitemoe",
    "granitemoe_swa",
    "granitemoehybrid",
    "granitemoeshared",
    "helium",
    "hrm_text",
    "hunyuan_v1_dense",
    "hunyuan_v1_moe",
    "hy_v3",
    "hy_v4",
    "hyperclovax",
    "inkling2_text",
    "inkling_text",
    "internlm3",
    "iquestcoder",
    "jais2",
    "jamba",
    "jetmoe",
    "kimi_linear",
    "kolibri1",
    "laguna",
    "lfm2",
    "lfm2_moe",
    "lfm3",
    "llama",
    "llama4",
    "llama4_text",
    "longcat_flash",
    "mamba",
    "mamba2",
    "marian",
    "mbart",
    "megatron-bert",
    "mellum",
    "mimo_v2_flash",
    "minicpm3",
    "minimax",
    "minimax_m2",
    "minimax_m3_vl_text",
    "ministral",
    "ministral3",
    "mistral",
    "mixtral",
    "mllama",
    "modernbert-decoder",
    "moshi",
    "moss_transcribe_diarize",
    "mpt",
    "musicgen",
    "musicgen_melody",
    "mvp",
    "nanochat",
    "nemotron",
    "nemotron_h",
    "olmo",
    "olmo2",
    "olmo3",
    "olmo_hybrid",
    "olmoe",
    "openai-gpt",
    "opt",
    "pegasus",
    "persimmon",
    "phi",
    "phi3",
    "phi4_multimodal",
    "phimoe",
    "plbart",
    "prophetnet",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "qwen3_5_text",
    "qwen3_moe",
    "qwen3_next",
    "qwen4_exp",
    "qwen4_exp_text",
    "recurrent_gemma",
    "reformer",
    "rembert",
    "roberta",
    "roberta-prelayernorm",
    "roc_bert",
    "roformer",
    "rwkv",
    "seed_oss",
    "smollm3",
    "solar_open",
    "stablelm",
    "starcoder2",
    "trocr",
    "vaultgemma",
    "whisper",
    "xglm",
    "xlm",
    "xlm-roberta",
    "xlm-roberta-xl",
    "xlnet",
    "xlstm",
    "xmod",
    "youtu",
    "zamba",
    "zamba2",
    "zaya",
)

# Causal-LM heads of encoders and encoder-decoders, and models of speech, music or images.
NOT_TEXT_DECODERS = {
    **dict.fromkeys(
        ("bart", "bigbird_pegasus", "blenderbot", "blenderbot-small", "marian", "mbart", "mvp", "pegasus", "plbart", "prophetnet"),
        "the decoder of an encoder-decoder",
    ),
    **dict.fromkeys(
        (
            "bert",
            "bert-generation",
            "big_bird",
            "camembert",
            "data2vec-text",
            "electra",
            "ernie",
            "megatron-bert",
            "rembert",
            "roberta",
            "roberta-prelayernorm",
            "roc_bert",
            "roformer",
            "xlm",
            "xlm-roberta",
            "xlm-roberta-xl",
            "xmod",
        ),
        "a bidirectional encoder with a causal-LM head",
    ),
    "xlnet": "a permutation language model (two-stream attention)",
    "trocr": "the text decoder of an image-to-text encoder-decoder",
    "whisper": "the text decoder of a speech encoder-decoder",
    "moss_transcribe_diarize": "speech to text",
    "moshi": "speech (audio codebooks)",
    "musicgen": "music (audio codebooks)",
    "musicgen_melody": "music (audio codebooks)",
    **dict.fromkeys(
        ("emu3", "fuyu", "git", "got_ocr2", "phi4_multimodal"),
        "a multimodal model whose causal-LM class holds its image or audio parts",
    ),
}

# Encoders: every key of transformers' MODEL_FOR_MASKED_LM_MAPPING_NAMES in the version named (the masked-LM class
# is what such a model_type means), less the decoder-only text types counted as causal LMs (Reformer) and the
# encoder-decoders (BART, mBART, MVP).
MASKED_LM_TYPES = (
    "albert",
    "bart",
    "bert",
    "big_bird",
    "camembert",
    "convbert",
    "data2vec-text",
    "deberta",
    "deberta-v2",
    "distilbert",
    "electra",
    "ernie",
    "esm",
    "esmc",
    "eurobert",
    "flaubert",
    "fnet",
    "funnel",
    "gte",
    "ibert",
    "jina_embeddings_v3",
    "layoutlm",
    "longformer",
    "luke",
    "mbart",
    "megatron-bert",
    "mobilebert",
    "modernbert",
    "modernvbert",
    "mpnet",
    "mra",
    "mvp",
    "neomme",
    "nomic_bert",
    "nystromformer",
    "perceiver",
    "reformer",
    "rembert",
    "roberta",
    "roberta-prelayernorm",
    "roc_bert",
    "roformer",
    "squeezebert",
    "tapas",
    "ultrabert",
    "ultravbert",
    "xlm",
    "xlm-roberta",
    "xlm-roberta-xl",
    "xmod",
    "yoso",
)
ENCODER_TYPES = tuple(t for t in MASKED_LM_TYPES if t not in ("bart", "mbart", "mvp", "reformer"))

# Encoder-decoders: every key of transformers' MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES and of its
# MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES in the version named (the class such a model_type means).
SEQ2SEQ_TYPES = (
    "audioflamingo3",
    "bart",
    "bigbird_pegasus",
    "blenderbot",
    "blenderbot-small",
    "encoder-decoder",
    "fsmt",
    "glmasr",
    "granite_speech",
    "granite_speech_plus",
    "led",
    "longt5",
    "m2m_100",
    "marian",
    "mbart",
    "moss_transcribe_diarize",
    "mt5",
    "musicflamingo",
    "mvp",
    "nemo_speechlm",
    "nllb-moe",
    "pegasus",
    "pegasus_x",
    "plbart",
    "prophetnet",
    "qwen2_audio",
    "qwen3_asr",
    "seamless_m4t",
    "seamless_m4t_v2",
    "switch_transformers",
    "t5",
    "t5gemma",
    "t5gemma2",
    "umt5",
    "vibevoice_asr",
    "voxtral",
    "voxtral_realtime",
)
SPEECH_SEQ2SEQ_TYPES = (
    "canary",
    "cohere_asr",
    "dia",
    "fun_asr_nano",
    "granite_speech",
    "granite_speech_plus",
    "kyutai_speech_to_text",
    "moonshine",
    "moonshine_streaming",
    "pop2piano",
    "qwen3_asr",
    "seamless_m4t",
    "seamless_m4t_v2",
    "speech-encoder-decoder",
    "speech_to_text",
    "speecht5",
    "vibevoice",
    "vibevoice_asr",
    "voxtral",
    "voxtral_realtime",
    "whisper",
)


ENCODER_DECODER_TYPES = tuple(dict.fromkeys(SEQ2SEQ_TYPES + SPEECH_SEQ2SEQ_TYPES))


# transformers' image-text-to-text mapping (MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES): whole models, towers and all
IMAGE_TEXT_TYPES = (
    "aria",
    "aya_vision",
    "blip",
    "blip-2",
    "chameleon",
    "cohere2_vision",
    "cohere_compass",
    "cosmos3_edge",
    "cosmos3_omni",
    "deepseek_ocr2",
    "deepseek_vl",
    "deepseek_vl_hybrid",
    "diffusion_gemma",
    "dots3_note",
    "emu3",
    "ernie4_5_vl_moe",
    "evolla",
    "exaone4_5",
    "fast_vlm",
    "florence2",
    "fuyu",
    "gemma3",
    "gemma3n",
    "gemma4",
    "gemma4_unified",
    "git",
    "glm46v",
    "glm4v",
    "glm4v_moe",
    "glm5_next",
    "glm_ocr",
    "glmga",
    "got_ocr2",
    "granite4_vision",
    "granite_docling",
    "hunyuan_vl",
    "hyperclovax_vision_v2",
    "idefics",
    "idefics2",
    "idefics3",
    "inkling2",
    "inkling_mm_model",
    "instructblip",
    "instructblipvideo",
    "internvl",
    "janus",
    "kimi_k25",
    "kosmos-2",
    "kosmos-2.5",
    "lfm2_vl",
    "lfm3_vl",
    "lighton_ocr",
    "llama4",
    "llava",
    "llava_next",
    "llava_next_video",
    "llava_onevision",
    "minicpm_ocr",
    "minicpmv4_6",
    "minicpmv4_7",
    "minimax_m3_vl",
    "mistral3",
    "mistral4",
    "mistral_large4",
    "mllama",
    "molmo2",
    "muse_glimmer",
    "muse_spark",
    "nemotron_h_omni",
    "ovis2",
    "paddleocr_vl",
    "paligemma",
    "perception_lm",
    "pi0",
    "pix2struct",
    "pp_chart2table",
    "pp_formulanet",
    "qianfan_ocr",
    "qwen2_5_omni_thinker",
    "qwen2_5_vl",
    "qwen2_vl",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_omni_moe_thinker",
    "qwen3_vl",
    "qwen3_vl_moe",
    "qwen4_exp",
    "shieldgemma2",
    "smolvlm",
    "step3p7",
    "t5gemma2",
    "udop",
    "unlimited_ocr",
    "video_llama_3",
    "video_llava",
    "vipllava",
    "vision-encoder-decoder",
)
# its multimodal-LM mapping (MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES): the image-text types and the audio-text ones
MULTIMODAL_LM_TYPES = (
    "aria",
    "aya_vision",
    "blip",
    "blip-2",
    "chameleon",
    "cohere2_vision",
    "cohere_compass",
    "cosmos3_edge",
    "cosmos3_omni",
    "deepseek_ocr2",
    "deepseek_vl",
    "deepseek_vl_hybrid",
    "diffusion_gemma",
    "dots3_note",
    "emu3",
    "ernie4_5_vl_moe",
    "evolla",
    "exaone4_5",
    "fast_vlm",
    "florence2",
    "fun_asr_nano",
    "fuyu",
    "gemma3",
    "gemma3n",
    "gemma4",
    "gemma4_unified",
    "git",
    "glm46v",
    "glm4v",
    "glm4v_moe",
    "glm5_next",
    "glm_ocr",
    "glmasr",
    "glmga",
    "got_ocr2",
    "granite4_vision",
    "granite_docling",
    "granite_speech",
    "granite_speech_plus",
    "hunyuan_vl",
    "hyperclovax_vision_v2",
    "idefics",
    "idefics2",
    "idefics3",
    "inkling2",
    "inkling_mm_model",
    "instructblip",
    "instructblipvideo",
    "internvl",
    "janus",
    "kimi_k25",
    "kosmos-2",
    "kosmos-2.5",
    "kyutai_speech_to_text",
    "lfm2_vl",
    "lfm3_vl",
    "lighton_ocr",
    "llama4",
    "llava",
    "llava_next",
    "llava_next_video",
    "llava_onevision",
    "minicpm_ocr",
    "minicpmv4_6",
    "minicpmv4_7",
    "minimax_m3_vl",
    "mistral3",
    "mistral4",
    "mistral_large4",
    "mllama",
    "molmo2",
    "moss_transcribe_diarize",
    "muse_glimmer",
    "muse_spark",
    "nemo_speechlm",
    "nemotron_h_omni",
    "ovis2",
    "paddleocr_vl",
    "paligemma",
    "perception_lm",
    "phi4_multimodal",
    "pi0",
    "pix2struct",
    "pp_chart2table",
    "pp_formulanet",
    "qianfan_ocr",
    "qwen2_5_omni",
    "qwen2_5_omni_thinker",
    "qwen2_5_vl",
    "qwen2_audio",
    "qwen2_vl",
    "qwen3_5",
    "qwen3_5_moe",
    "qwen3_asr",
    "qwen3_omni_moe",
    "qwen3_omni_moe_thinker",
    "qwen3_vl",
    "qwen3_vl_moe",
    "qwen4_exp",
    "shieldgemma2",
    "smolvlm",
    "step3p7",
    "t5gemma2",
    "udop",
    "unlimited_ocr",
    "vibevoice_asr",
    "video_llama_3",
    "video_llava",
    "vipllava",
    "vision-encoder-decoder",
    "voxtral",
    "voxtral_realtime",
)

# Types of the seq2seq mappings alone (in neither multimodal mapping) that are an audio tower beside a decoder-only
# language model: recorded whole (tests/hf_whole) and read as the multimodal-LM types are
WHOLE_SEQ2SEQ_TYPES = ("audioflamingo3", "musicflamingo", "vibevoice")
WHOLE_TYPES = MULTIMODAL_LM_TYPES + WHOLE_SEQ2SEQ_TYPES
# Encoders of the masked-LM mapping that are a vision tower beside a text encoder: read whole (sources/hf/towers/vbert.py),
# their masked-LM class recorded whole with one image's FLOPs (tests/hf_whole) beside their text encoder's record
# (tests/hf_defaults)
WHOLE_ENCODER_TYPES = ("modernvbert", "ultravbert")

# Encoder-decoders no family reads yet: what each needs.
SEQ2SEQ_NOT_YET: dict[str, str] = {}

# Encoders no family reads yet: what each needs.
ENCODERS_NOT_YET: dict[str, str] = {}


# Decoder-only text models no family reads yet, each with what it needs.
NOT_YET = {
    "gemma4_assistant": (
        "transformers 5.23.0 builds none: a draft model whose every layer reads the target's KV cache, "
        "which its configuration's validation refuses (and it reads the target's embeddings)"
    ),
    "gemma4_unified_assistant": (
        "transformers 5.23.0 builds none: a draft model whose every layer reads the target's "
        "KV cache, which its configuration's validation refuses"
    ),
}

# Decoder-only text types whose configuration class's defaults transformers itself cannot build (the test of
# every type at its defaults, tests/families/test_defaults.py, records transformers' error): why.
REFUSED_AT_DEFAULTS = {
    "dbrx": "the default attn_config lacks the rope_theta the attention reads",
    "dots1": "n_routed_experts and the other expert sizes default to None",
    "esm": "vocab_size defaults to None, which the token table's size needs",
    "moonshine_streaming": "its attention reads num_key_value_heads, which its configuration class does not define",
    "voxtral_realtime": "its text_config's class has no causal-LM class of its own (the whole model is the speech-to-text one)",
    "gemma4_assistant": "its own validation rejects the default hidden_size_per_layer_input of 256",
    "gemma4_unified_assistant": "the default layer types sharing a KV cache differ from those producing one",
    "lfm2_moe": "layer_types defaults to None, which every decoder layer indexes",
}
# Of those, the types recorded at the smallest repair of their defaults (scripts/hf_defaults.py REPAIRS, its truth beside
# transformers' reason for refusing the rest) and counted exactly there: the repair
REPAIRED_AT_DEFAULTS = {
    "moonshine_streaming": "num_key_value_heads = num_attention_heads, 8",
}


# Supported types whose configuration class builds its defaults but leaves a figure of the work unstated (the test of
# every type at its defaults keeps this equal to the types whose default count is marked, Model.needs): what is open.
# Their parameters are exact; a question that needs the rest is refused with what it needs.
OPEN_AT_DEFAULTS = {
    "deepseek_v2": "num_experts_per_tok defaults to None: active parameters and FLOPs need a top-k",
}


# The model_type of each wrapper's text_config at its class's defaults (tests/hf_whole/configs: a test keeps it equal)
WRAPPED_TEXT = {
    "aria": "aria_text",
    "audioflamingo3": "qwen2",
    "aya_vision": "cohere2",
    "blip": "blip_text_model",
    "blip-2": "opt",
    "cohere2_vision": "cohere2",
    "cohere_compass": "cohere_compass_text",
    "cosmos3_edge": "cosmos3_edge_text",
    "cosmos3_omni": "qwen3_vl_text",
    "deepseek_ocr2": "deepseek_ocr2_text",
    "deepseek_vl": "llama",
    "deepseek_vl_hybrid": "llama",
    "diffusion_gemma": "diffusion_gemma_text",
    "dots3_note": "dots3_note_text",
    "emu3": "emu3_text_model",
    "ernie4_5_vl_moe": "ernie4_5_vl_moe_text",
    "exaone4_5": "exaone4",
    "fast_vlm": "qwen2",
    "florence2": "bart",
    "fun_asr_nano": "qwen3",
    "fuyu": "persimmon",
    "gemma3": "gemma3_text",
    "gemma3n": "gemma3n_text",
    "gemma4": "gemma4_text",
    "gemma4_unified": "gemma4_unified_text",
    "glm46v": "glm4v_text",
    "glm4v": "glm4v_text",
    "glm4v_moe": "glm4v_moe_text",
    "glm5_next": "glm5_next_text",
    "glm_ocr": "glm_ocr_text",
    "glmasr": "llama",
    "glmga": "glm4v_text",
    "got_ocr2": "qwen2",
    "granite4_vision": "granite4_vision_text",
    "granite_docling": "granite_docling_text",
    "granite_speech": "granite",
    "granite_speech_plus": "granite",
    "hunyuan_vl": "hunyuan_vl_text",
    "hyperclovax_vision_v2": "hyperclovax",
    "idefics2": "mistral",
    "idefics3": "llama",
    "inkling2": "inkling2_text",
    "inkling_mm_model": "inkling_text",
    "instructblip": "opt",
    "instructblipvideo": "opt",
    "internvl": "qwen2",
    "janus": "llama",
    "kimi_k25": "deepseek_v3",
    "kosmos-2": "kosmos_2_text_model",
    "kosmos-2.5": "kosmos_2_5_text_model",
    "lfm2_vl": "lfm2",
    "lfm3_vl": "lfm3",
    "lighton_ocr": "qwen3",
    "llama4": "llama4_text",
    "llava": "llama",
    "llava_next": "llama",
    "llava_next_video": "llama",
    "llava_onevision": "qwen2",
    "minicpm_ocr": "qwen3_5_text",
    "minicpmv4_6": "qwen3_5_text",
    "minicpmv4_7": "qwen3_5_text",
    "minimax_m3_vl": "minimax_m3_vl_text",
    "mistral3": "mistral",
    "mistral_large4": "mistral_large4_text",
    "mllama": "mllama_text_model",
    "molmo2": "molmo2_text",
    "moss_transcribe_diarize": "qwen3",
    "muse_glimmer": "muse_glimmer_text",
    "musicflamingo": "qwen2",
    "muse_spark": "muse_spark_text",
    "nemo_speechlm": "nemotron_h",
    "nemotron_h_omni": "nemotron_h",
    "ovis2": "qwen2",
    "paddleocr_vl": "paddleocr_vl_text",
    "paligemma": "gemma",
    "perception_lm": "llama",
    "pix2struct": "pix2struct_text_model",
    "pp_chart2table": "qwen2",
    "pp_formulanet": "pp_formulanet_text",
    "qianfan_ocr": "qwen3",
    "qwen2_5_omni_thinker": "qwen2_5_omni_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
    "qwen2_audio": "qwen2",
    "qwen2_vl": "qwen2_vl_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "qwen3_asr": "qwen3",
    "qwen3_omni_moe_thinker": "qwen3_omni_moe_text",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "qwen4_exp": "qwen4_exp_text",
    "shieldgemma2": "gemma3_text",
    "smolvlm": "llama",
    "step3p7": "step3p5",
    "unlimited_ocr": "unlimited_ocr_text",
    "vibevoice": "qwen2",
    "vibevoice_asr": "qwen2",
    "video_llama_3": "qwen2",
    "video_llava": "llama",
    "vipllava": "llama",
    "voxtral": "llama",
    "voxtral_realtime": "voxtral_realtime_text",
}

# Image-text and multimodal-LM types whose configuration class's defaults transformers itself cannot build whole
# (tests/hf_whole records its error): why.
WHOLE_REFUSED_AT_DEFAULTS = {}
# (Qwen3-Omni's defaults are recorded at their smallest repair, scripts/hf_whole.py REPAIRS: its talker's text config
# lacks the shared_expert_intermediate_size its layers read, and its talker config the spatial_merge_size its class reads)

# Of the types read whole, those whose defaults transformers refuses and that are recorded at the smallest repair of
# them (scripts/hf_whole.py REPAIRS, its truth's "repaired") and counted exactly there: the repair, and why they are
# refused as they are
WHOLE_REPAIRED_AT_DEFAULTS = {
    "diffusion_gemma": (
        "text_config's num_experts 128 and moe_intermediate_size 704, which build it, and top_k_experts 8, which runs it: "
        "the released DiffusionGemma 26B-A4B's mixture",
        "every text layer builds its router and experts whatever the config says, and num_experts and "
        "moe_intermediate_size default to None",
    ),
}


# Language models read by a family of their own that only a whole class builds (no causal-LM class, no public config of
# their own): the wrapper whose whole class, at its defaults, proves them (tests/hf_whole)
TEXT_PROVEN_WHOLE = {
    "step3p5": "step3p7",
    "pix2struct_text_model": "pix2struct",
    "blip_text_model": "blip",
    "pp_formulanet_text": "pp_formulanet",
    "voxtral_realtime_text": "voxtral_realtime",
    "mistral_large4_text": "mistral_large4",
    "granite_docling_text": "granite_docling",
    "granite4_vision_text": "granite4_vision",
    "muse_glimmer_text": "muse_glimmer",
    "muse_spark_text": "muse_spark",
    "unlimited_ocr_text": "unlimited_ocr",
    "deepseek_ocr2_text": "deepseek_ocr2",
    "hunyuan_vl_text": "hunyuan_vl",
    "glm5_next_text": "glm5_next",
    "molmo2_text": "molmo2",
    "emu3_text_model": "emu3",
    "ernie4_5_vl_moe_text": "ernie4_5_vl_moe",
    "diffusion_gemma_text": "diffusion_gemma",
}


# Types of the multimodal-LM mapping whose whole class is their language model: no tower at the configuration class's
# defaults or anywhere in it (tests/hf_whole records the class; its family reads every parameter)
WHOLE_IS_TEXT = {
    "mistral4": "Mistral4ForCausalLM (Mistral Small 4): DeepSeek-V3's layers, no tower",
}


# Multimodal types whose configuration states its language model's keys at its top (no text_config) and whose
# causal-LM class is the whole model (NOT_TEXT_DECODERS), or that have none (IDEFICS): the family of the same name reads
# those keys as the wrapper's language model, and the type is listed among the multimodal types, counted whole
# (GitForCausalLM, IdeficsForVisionText2Text, ChameleonForConditionalGeneration, EvollaForProteinText2Text, which
# analysis/hfwhole.py builds by name); Phi-4-multimodal's top-level keys are Phi-4-mini's, read as phi3
# (Phi4MultimodalForCausalLM); UDOP's top-level keys are its T5 stacks', read whole by its family (WHOLE_BY_FAMILY)
SELF_TEXT = ("git", "phi4_multimodal", "idefics", "chameleon", "udop", "evolla")


# Image-text and multimodal-LM types not read whole yet whose class builds more than a tower and a projector beside a
# language model: what counting it needs (``ffncalc families``; the rest say their towers and projector are not read)
WHOLE_NOT_YET = {}


# Multimodal types whose family (of the seq2seq mappings) reads them whole, towers included (T5Gemma 2: its vision tower
# and projector before the encoder; Kyutai's speech-to-text: the Mimi codec beside its decoder), proven on PROVEN_ON's
# configs and at their class defaults (tests/hf_defaults); UDOP's: the document image's patches and layout tables in its
# T5 encoder's source (families/udop.py, parts/document.py), proven at its class defaults (tests/hf_whole)
WHOLE_BY_FAMILY = ("kyutai_speech_to_text", "t5gemma2", "udop")

# The public configs each whole-read type is proven on as the whole class (tests/hf_whole/public/, sources in its
# sources.json; the whole-model tests keep this equal to that folder), beside PROVEN_ON's language models
WHOLE_PROVEN_ON = {
    "aria": ("rhymes-ai/Aria",),
    "blip": ("Salesforce/blip-image-captioning-base",),
    "blip-2": ("Salesforce/blip2-opt-2.7b",),
    "gemma3": ("google/gemma-3-27b-it",),
    "gemma4": ("google/gemma-4-26B-A4B", "nvidia/Gemma-4-31B-IT-NVFP4"),
    "gemma4_unified": ("google/gemma-4-12B",),
    "glm4v_moe": ("zai-org/GLM-4.5V",),
    "kimi_k25": ("nvidia/Kimi-K2.5-NVFP4",),
    "llama4": ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"),
    "llava": ("llava-hf/llava-1.5-7b-hf",),
    "minicpmv4_6": ("openbmb/MiniCPM-V-4.6",),
    "molmo2": ("allenai/Molmo2-4B",),
    "mistral3": ("black-forest-labs/FLUX.2-dev (its text encoder, Mistral Small 3.2 24B)",),
    "qwen2_5_vl": (
        "DiffSynth-Studio/Nexus-GenV2 (Qwen2.5-VL-7B's layout, saved flat)",
        "Qwen/Qwen-Image (its text encoder, Qwen2.5-VL-7B-Instruct)",
    ),
    "qwen2_audio": ("Qwen/Qwen2-Audio-7B",),
    "qwen3_omni_moe": ("Qwen/Qwen3-Omni-30B-A3B-Instruct",),
    "qwen3_5": ("Qwen/Qwen3.5-27B",),
    "qwen3_5_moe": ("Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3.5-397B-A17B"),
    "qwen3_vl": ("Qwen/Qwen3-VL-4B-Instruct", "Qwen/Qwen3-VL-8B-Instruct"),
    "qwen3_vl_moe": ("Qwen/Qwen3-VL-30B-A3B-Instruct", "Qwen/Qwen3-VL-235B-A22B-Instruct"),
    "smolvlm": ("HuggingFaceTB/SmolVLM2-500M-Video-Instruct",),
    "vision-encoder-decoder": ("a ViT-GPT2 captioner, nlpconnect/vit-gpt2-image-captioning's composition",),
}

# The Hugging Face repositories whose config.json each supported model_type is proven on (tests/hf_configs/,
# sources in tests/hf_configs.sources.json; tests/families/test_model_types.py keeps this list equal to that folder).
PROVEN_ON = {
    "apertus": ("swiss-ai/Apertus-8B-2509",),
    "arcee": ("Delta-Vector/Austral-AFM-SFT",),
    "aria": ("rhymes-ai/Aria",),
    "aria_text": ("rhymes-ai/Aria",),
    "bamba": ("ibm-fms/Bamba-9B",),
    "bert": ("google-bert/bert-base-uncased",),
    "biogpt": ("AMAISIENG/finetuned_model3",),
    "bitnet": ("Compumacy/Bitnet-B1.58",),
    "bloom": ("mrm8488/bloom-560m-finetuned-common_gen",),
    "codegen": ("Salesforce/codegen-350M-mono",),
    "cohere": ("CohereForAI/aya-23-8B",),
    "cohere2": ("huihui-ai/c4ai-command-r7b-12-2024-abliterated",),
    "cpmant": ("openbmb/cpm-ant-10b",),
    "ctrl": ("dkalpakchi/SweCTRL-Mini",),
    "dbrx": ("SinclairSchneider/dbrx-instruct-quantization-fixed",),
    "deberta-v2": ("microsoft/deberta-v3-base",),
    "deepseek_v2": ("deepseek-ai/DeepSeek-V2-Lite",),
    "deepseek_v3": ("deepseek-ai/DeepSeek-V3",),
    "deepseek_v32": ("deepseek-ai/DeepSeek-V3.2",),
    "deepseek_v4": ("deepseek-ai/DeepSeek-V4-Flash",),
    "dots1": ("rednote-hilab/dots.llm1.base",),
    "ernie4_5": ("baidu/ERNIE-4.5-0.3B-PT",),
    "esm": ("facebook/esm2_t33_650M_UR50D",),
    "exaone4": ("LGAI-EXAONE/EXAONE-4.0-1.2B",),
    "falcon": ("tiiuae/falcon-7b-instruct",),
    "falcon_mamba": ("tiiuae/falcon-mamba-tiny-dev",),
    "flex_olmo": ("hf-internal-testing/tiny-random-FlexOlmoForCausalLM",),
    "gemma": ("google/gemma-2b",),
    "gemma2": ("google/gemma-2-9b",),
    "gemma3": ("google/gemma-3-27b-it",),
    "gemma3_text": ("google/gemma-3-27b-it",),
    "gemma4_unified": ("google/gemma-4-12B",),
    "gemma4_unified_text": ("google/gemma-4-12B",),
    "gemma4": ("google/gemma-4-26B-A4B", "nvidia/Gemma-4-31B-IT-NVFP4"),
    "gemma4_text": ("google/gemma-4-26B-A4B", "nvidia/Gemma-4-31B-IT-NVFP4"),
    "glm": ("THUDM/glm-4-9b-chat",),
    "glm4": ("Delta-Vector/Austral-GLM4-SFT",),
    "glm4_moe": ("zai-org/GLM-4.7",),
    "glm4_moe_lite": ("zai-org/GLM-4.7-Flash",),
    "glm_moe_dsa": ("zai-org/GLM-5", "zai-org/GLM-5.1"),
    "gpt2": ("openai-community/gpt2",),
    "gpt_bigcode": ("bigcode/tiny_starcoder_py",),
    "gpt_neo": ("EleutherAI/gpt-neo-125m",),
    "gpt_neox": ("EleutherAI/gpt-neox-20b", "EleutherAI/pythia-1.4b"),
    "gpt_oss": ("openai/gpt-oss-20b",),
    "gptj": ("EleutherAI/gpt-j-6b",),
    "granite": ("ibm-granite/granite-3.3-8b-instruct",),
    "granite_swa": ("ibm-granite/granite-swash-2b",),
    "granitemoe": ("ibm-granite/granite-3.0-1b-a400m-base",),
    "granitemoehybrid": ("mlx-community/granite-4.0-h-350m-4bit",),
    "helium": ("mlx-community/helium-1-preview-2b-4bit",),
    "hunyuan_v1_dense": ("tencent/Hy-MT2-7B",),
    "internlm3": ("internlm/internlm3-8b-instruct",),
    "iquestcoder": ("Multilingual-Multimodal-NLP/IndustrialCoder-32B-AWQ-INT4",),
    "jamba": ("ai21labs/Jamba-v0.1",),
    "kimi_k2": ("moonshotai/Kimi-K2-Instruct",),
    "kimi_linear": ("Firworks/Kimi-Linear-48B-A3B-Instruct-nvfp4",),
    "lfm2": ("FlameF0X/LFM2.5-1.2B-Distilled-Claude-4.6",),
    "lfm2_moe": ("mlx-community/LFM2-8B-A1B-4bit",),
    "llama": (
        "huggyllama/llama-7b",
        "meta-llama/Llama-2-7b-hf",
        "meta-llama/Llama-3.1-8B",
        "meta-llama/Llama-3.2-1B",
        "meta-llama/Meta-Llama-3-8B",
    ),
    "llama4": ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
    "llama4_text": ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
    "longcat_flash": ("mlx-community/LongCat-Flash-Chat-bf16",),
    "longformer": ("allenai/longformer-base-4096",),
    "mamba": ("RandomNameAnd6/DharMamba",),
    "mamba2": ("mlx-community/Mamba-Codestral-7B-v0.1-8bit",),
    "mimo_v2_flash": ("XiaomiMiMo/MiMo-V2-Flash",),
    "minimax_m2": ("MiniMaxAI/MiniMax-M2.5", "MiniMaxAI/MiniMax-M2.7"),
    "ministral3": ("rootlocalghost/ERNIE-Image",),
    "mistral": ("mistralai/Mistral-7B-v0.1",),
    "mixtral": ("mistralai/Mixtral-8x7B-v0.1",),
    "mpnet": ("sentence-transformers/all-mpnet-base-v2",),
    "mpt": ("mosaicml/mpt-7b-instruct",),
    "nemotron": ("nvidia/Minitron-8B-Base",),
    "nllb-moe": ("facebook/nllb-moe-54b",),
    "nemotron_h": ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia/Nemotron-H-56B-Base-8K"),
    "olmo": ("Shahradmz/OLMo-1B-hf-PPO-constitution-1",),
    "olmo2": ("allenai/OLMo-2-1124-7B",),
    "olmo3": ("allenai/Olmo-3-1125-32B", "complexly/olmo3-190m-zh-continue"),
    "olmoe": ("allenai/OLMoE-1B-7B-0924",),
    "openai-gpt": ("openai-community/openai-gpt",),
    "opt": ("facebook/opt-125m",),
    "persimmon": ("adept/persimmon-8b-base",),
    "phi": ("microsoft/phi-2",),
    "phi3": ("microsoft/Phi-3-mini-4k-instruct",),
    "phimoe": ("Pearush/phi_moe_30_attn2",),
    "qwen2": ("Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-7B"),
    "qwen2_moe": ("Qwen/Qwen1.5-MoE-A2.7B",),
    "qwen3": ("Qwen/Qwen3-8B",),
    "qwen3_5": ("Qwen/Qwen3.5-27B",),
    "qwen3_5_moe": ("Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3.5-397B-A17B"),
    "qwen3_5_moe_text": ("Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3.5-397B-A17B"),
    "t5gemma2": ("google/t5gemma-2-270m-270m",),
    "qwen3_5_text": ("Qwen/Qwen3.5-27B",),
    "qwen3_moe": ("Qwen/Qwen3-30B-A3B",),
    "qwen3_next": ("Qwen/Qwen3-Next-80B-A3B-Thinking",),
    "recurrent_gemma": ("google/recurrentgemma-2b",),
    "rwkv": ("RWKV/rwkv-4-430m-pile",),
    "seed_oss": ("darkc0de/4.3test2",),
    "smollm3": ("HuggingFaceTB/SmolLM3-3B",),
    "solar_open": ("upstage/Solar-Open-100B",),
    "stablelm": ("stabilityai/stablelm-2-1_6b-chat",),
    "starcoder2": ("bigcode/starcoder2-3b",),
    "whisper": ("openai/whisper-large-v3",),
    "xglm": ("Stancld/xglm-564M",),
}


def model_types() -> list[dict]:
    """Every decoder-only text model_type of transformers' causal-LM mapping, every encoder of its masked-LM
    mapping, every encoder-decoder of its seq2seq and speech-seq2seq mappings, and every other one a family reads,
    each with its kind (decoder, encoder or encoder-decoder) and status: supported (the
    family that reads it and the public configs it is proven on) or not yet (what it needs)."""
    from . import TEXT_TYPES, registered
    from .towers import wrappers

    families, whole = registered(), wrappers()
    # the language models of wrappers read whole: each proven at its wrapper's class defaults (tests/hf_whole)
    whole_text = {WRAPPED_TEXT[w] for w in whole if w in WRAPPED_TEXT}
    known = CAUSAL_LM_TYPES + ENCODER_TYPES + ENCODER_DECODER_TYPES + SELF_TEXT  # a wrapper's own keys: a multimodal type
    extra = tuple(sorted(t for t in families if t not in known))
    records = []
    decoders = [(t, "decoder") for t in CAUSAL_LM_TYPES + extra if t not in NOT_TEXT_DECODERS]
    for model_type, kind in (
        decoders + [(t, "encoder") for t in ENCODER_TYPES] + [(t, "encoder-decoder") for t in ENCODER_DECODER_TYPES]
    ):
        encoder = kind != "decoder"
        family = families.get(model_type) or families.get(TEXT_TYPES.get(model_type, ""))
        # an audio tower beside a decoder-only LM, or a vision tower beside a text encoder (WHOLE_ENCODER_TYPES), read whole
        if model_type in whole and (kind == "encoder-decoder" or model_type in WHOLE_ENCODER_TYPES):
            reader = whole[model_type]
            records.append(
                {
                    "model_type": model_type,
                    "kind": kind,
                    "status": "supported",
                    "family": (reader.__doc__ or "").split(":")[0],
                    "file": "ffncalc/sources/hf/towers/" + reader.__module__.rsplit(".", 1)[1] + ".py",
                    "detail": ", ".join(WHOLE_PROVEN_ON.get(model_type, ())) or "no public config found",
                    "defaults": "exact",
                }
            )
            continue
        if family is None:
            records.append(
                {
                    "model_type": model_type,
                    "kind": kind,
                    "status": "not yet",
                    "family": "",
                    "file": "",
                    "detail": {"decoder": NOT_YET, "encoder": ENCODERS_NOT_YET, "encoder-decoder": SEQ2SEQ_NOT_YET}[kind][model_type],
                    "defaults": f"refused by transformers: {REFUSED_AT_DEFAULTS[model_type]}"
                    if model_type in REFUSED_AT_DEFAULTS
                    else "",
                }
            )
            continue
        reads = family.title if model_type in families else f"its text_config, as {TEXT_TYPES[model_type]}"
        proven = ", ".join(PROVEN_ON.get(model_type, ()))
        if not proven and model_type in TEXT_PROVEN_WHOLE:
            proven = f"as {TEXT_PROVEN_WHOLE[model_type]}'s language model: its class defaults (tests/hf_whole)"
        twin = next((t for t, f in families.items() if f.read is family.read and t in PROVEN_ON), None)
        if not proven and twin:  # an alias: proven on the configs of the type it is read as
            proven = f"as {twin}: " + ", ".join(PROVEN_ON[twin])
        defaults = (
            ""
            if model_type not in CAUSAL_LM_TYPES and not encoder and model_type not in whole_text
            else f"exact at its wrapper's smallest repair ({WHOLE_REPAIRED_AT_DEFAULTS[TEXT_PROVEN_WHOLE[model_type]][0]})"
            if TEXT_PROVEN_WHOLE.get(model_type) in WHOLE_REPAIRED_AT_DEFAULTS
            else f"exact at the smallest repair ({REPAIRED_AT_DEFAULTS[model_type]}); refused by transformers as they are: "
            f"{REFUSED_AT_DEFAULTS[model_type]}"
            if model_type in REPAIRED_AT_DEFAULTS
            else f"refused by transformers: {REFUSED_AT_DEFAULTS[model_type]}"
            if model_type in REFUSED_AT_DEFAULTS
            else f"exact parameters; {OPEN_AT_DEFAULTS[model_type]}"
            if model_type in OPEN_AT_DEFAULTS
            else "exact"
        )
        records.append(
            {
                "model_type": model_type,
                "kind": kind,
                "status": "supported",
                "family": reads,
                "file": "ffncalc/sources/hf/families/" + family.read.__module__.rsplit(".", 1)[1] + ".py",
                "detail": proven or "no public config found",
                "defaults": defaults,
            }
        )
    return records


def multimodal_types() -> list[dict]:
    """Every type of transformers' image-text-to-text and multimodal-LM mappings (and the audio-language types of its
    seq2seq mappings alone, WHOLE_SEQ2SEQ_TYPES) with its status: counted whole (the
    wrapper's towers and projector beside its language model: sources/hf/towers), its language model only (what the
    towers need), or not yet (its language model is not read)."""
    from . import TEXT_TYPES, registered
    from .towers import wrappers

    families, whole = registered(), wrappers()
    records = []
    for model_type in WHOLE_TYPES:
        refused = WHOLE_REFUSED_AT_DEFAULTS.get(model_type)
        defaults = f"refused by transformers: {refused}" if refused else "exact" if model_type in whole else ""
        if model_type in WHOLE_REPAIRED_AT_DEFAULTS:
            repair, reason = WHOLE_REPAIRED_AT_DEFAULTS[model_type]
            defaults = f"exact at the smallest repair ({repair}); refused by transformers as they are: {reason}"
        if model_type in WHOLE_IS_TEXT and model_type in families:
            status, detail, defaults = "supported", "its class defaults (tests/hf_whole)", "exact"
            read = WHOLE_IS_TEXT[model_type]
            file = "ffncalc/sources/hf/families/" + families[model_type].read.__module__.rsplit(".", 1)[1] + ".py"
        elif model_type in WHOLE_BY_FAMILY and model_type in families:
            recorded = "tests/hf_defaults" if model_type in ENCODER_DECODER_TYPES else "tests/hf_whole"
            detail = ", ".join(PROVEN_ON.get(model_type, ())) or f"its class defaults ({recorded})"
            status, defaults = "supported", "exact"
            read = families[model_type].title
            file = "ffncalc/sources/hf/families/" + families[model_type].read.__module__.rsplit(".", 1)[1] + ".py"
        elif model_type in whole:
            reader = whole[model_type]
            status, detail = "supported", "; ".join(WHOLE_PROVEN_ON.get(model_type, ())) or "its class defaults (tests/hf_whole)"
            read, file = (
                (reader.__doc__ or "").split(":")[0],
                "ffncalc/sources/hf/towers/" + reader.__module__.rsplit(".", 1)[1] + ".py",
            )
        else:
            text = TEXT_TYPES.get(model_type) or WRAPPED_TEXT.get(model_type)
            status = "language model only" if model_type in families or text in families else "not yet"
            read = f"its language model, as {text or model_type}" if status != "not yet" else ""
            file, detail = "", WHOLE_NOT_YET.get(model_type, "its towers and projector are not read yet")
            defaults = defaults or ("the language model exact" if status != "not yet" else "")
        records.append(
            {
                "model_type": model_type,
                "kind": "multimodal",
                "status": status,
                "family": read,
                "file": file,
                "detail": detail,
                "defaults": defaults,
            }
        )
    return records
