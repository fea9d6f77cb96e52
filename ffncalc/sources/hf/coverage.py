"""Which Hugging Face model_types ffncalc counts, and why the others are not counted yet: plain data, read by
``ffncalc families`` and the generated docs page without importing transformers.

``CAUSAL_LM_TYPES`` is every key of transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` in the version named
(tests/families/test_model_types.py checks it against the installed transformers). Each is either read by a family
(``sources/hf/families/``), or listed in ``NOT_TEXT_DECODERS`` (not a decoder-only text model: what it is),
or in ``NOT_YET`` (a decoder-only text model no family reads yet: what it needs).
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
        ("emu3", "fuyu", "git", "got_ocr2", "mllama", "phi4_multimodal"),
        "a multimodal model whose causal-LM class holds its image or audio parts",
    ),
}

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
    "gemma4_assistant": "its own validation rejects the default hidden_size_per_layer_input of 256",
    "gemma4_unified_assistant": "the default layer types sharing a KV cache differ from those producing one",
    "lfm2_moe": "layer_types defaults to None, which every decoder layer indexes",
}


# Supported types whose configuration class builds its defaults but leaves a figure of the work unstated (the test of
# every type at its defaults keeps this equal to the types whose default count is marked, Model.needs): what is open.
# Their parameters are exact; a question that needs the rest is refused with what it needs.
OPEN_AT_DEFAULTS = {
    "deepseek_v2": "num_experts_per_tok defaults to None: active parameters and FLOPs need a top-k",
}


# The Hugging Face repositories whose config.json each supported model_type is proven on (tests/hf_configs/,
# sources in tests/hf_configs.sources.json; tests/families/test_model_types.py keeps this list equal to that folder).
PROVEN_ON = {
    "apertus": ("swiss-ai/Apertus-8B-2509",),
    "arcee": ("Delta-Vector/Austral-AFM-SFT",),
    "aria": ("rhymes-ai/Aria",),
    "aria_text": ("rhymes-ai/Aria",),
    "bamba": ("ibm-fms/Bamba-9B",),
    "biogpt": ("AMAISIENG/finetuned_model3",),
    "bitnet": ("Compumacy/Bitnet-B1.58",),
    "bloom": ("mrm8488/bloom-560m-finetuned-common_gen",),
    "codegen": ("Salesforce/codegen-350M-mono",),
    "cohere": ("CohereForAI/aya-23-8B",),
    "cohere2": ("huihui-ai/c4ai-command-r7b-12-2024-abliterated",),
    "cpmant": ("openbmb/cpm-ant-10b",),
    "ctrl": ("dkalpakchi/SweCTRL-Mini",),
    "dbrx": ("SinclairSchneider/dbrx-instruct-quantization-fixed",),
    "deepseek_v2": ("deepseek-ai/DeepSeek-V2-Lite",),
    "deepseek_v3": ("deepseek-ai/DeepSeek-V3",),
    "deepseek_v32": ("deepseek-ai/DeepSeek-V3.2",),
    "deepseek_v4": ("deepseek-ai/DeepSeek-V4-Flash",),
    "dots1": ("rednote-hilab/dots.llm1.base",),
    "ernie4_5": ("baidu/ERNIE-4.5-0.3B-PT",),
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
    "mamba": ("RandomNameAnd6/DharMamba",),
    "mamba2": ("mlx-community/Mamba-Codestral-7B-v0.1-8bit",),
    "mimo_v2_flash": ("XiaomiMiMo/MiMo-V2-Flash",),
    "minimax_m2": ("MiniMaxAI/MiniMax-M2.5", "MiniMaxAI/MiniMax-M2.7"),
    "ministral3": ("rootlocalghost/ERNIE-Image",),
    "mistral": ("mistralai/Mistral-7B-v0.1",),
    "mixtral": ("mistralai/Mixtral-8x7B-v0.1",),
    "mpt": ("mosaicml/mpt-7b-instruct",),
    "nemotron": ("nvidia/Minitron-8B-Base",),
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
    "xglm": ("Stancld/xglm-564M",),
}


def model_types() -> list[dict]:
    """Every decoder-only text model_type of transformers' causal-LM mapping, and every other one a family reads,
    each with its status: supported (the family that reads it and the public configs it is proven on) or not
    yet (what it needs)."""
    from . import TEXT_TYPES, registered

    families = registered()
    extra = tuple(sorted(t for t in families if t not in CAUSAL_LM_TYPES))
    records = []
    for model_type in CAUSAL_LM_TYPES + extra:
        if model_type in NOT_TEXT_DECODERS:
            continue
        family = families.get(model_type) or families.get(TEXT_TYPES.get(model_type, ""))
        if family is None:
            records.append(
                {
                    "model_type": model_type,
                    "status": "not yet",
                    "family": "",
                    "file": "",
                    "detail": NOT_YET[model_type],
                    "defaults": f"refused by transformers: {REFUSED_AT_DEFAULTS[model_type]}"
                    if model_type in REFUSED_AT_DEFAULTS
                    else "",
                }
            )
            continue
        reads = family.title if model_type in families else f"its text_config, as {TEXT_TYPES[model_type]}"
        proven = ", ".join(PROVEN_ON.get(model_type, ()))
        twin = next((t for t, f in families.items() if f.read is family.read and t in PROVEN_ON), None)
        if not proven and twin:  # an alias: proven on the configs of the type it is read as
            proven = f"as {twin}: " + ", ".join(PROVEN_ON[twin])
        defaults = (
            ""
            if model_type not in CAUSAL_LM_TYPES
            else f"refused by transformers: {REFUSED_AT_DEFAULTS[model_type]}"
            if model_type in REFUSED_AT_DEFAULTS
            else f"exact parameters; {OPEN_AT_DEFAULTS[model_type]}"
            if model_type in OPEN_AT_DEFAULTS
            else "exact"
        )
        records.append(
            {
                "model_type": model_type,
                "status": "supported",
                "family": reads,
                "file": "ffncalc/sources/hf/families/" + family.read.__module__.rsplit(".", 1)[1] + ".py",
                "detail": proven or "no public config found",
                "defaults": defaults,
            }
        )
    return records
