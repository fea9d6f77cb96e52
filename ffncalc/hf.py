"""Hugging Face ``config.json`` -> ModelSpec, one small function per ``model_type``. No torch, no transformers.

Each function reads the keys its transformers configuration class defines and applies that class's
default where a key is absent (transformers 5.x; the class is named in each function). What no key
states — which projections carry a bias, where the norms sit — is taken from the modeling code, whose
class is named beside it. The shape keys (vocab, width, depth, heads, FFN width) are required: a
config.json without them describes no checkpoint, so a missing one is an error rather than a default.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from .errors import InputError
from .loader import read_text
from .spec import ModelSpec, SpecError

# transformers' ACT2FN names -> ours. gelu_new, gelu_fast and gelu_pytorch_tanh are all the tanh approximation.
ACTIVATIONS = {
    "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_fast": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_accurate": "gelu_tanh", "silu": "silu", "swish": "silu", "relu": "relu", "relu2": "relu2",
    "sigmoid": "sigmoid", "tanh": "tanh", "linear": "identity",
}


class Config:
    """A config.json's keys, with errors that name the file, the line and the key."""

    def __init__(self, data: dict, text: str, source: str):
        self.data, self.text, self.source = data, text, source
        self.model_type = data.get("model_type")

    def where(self, key: str) -> str:
        match = re.search(r'"%s"\s*:' % re.escape(key), self.text)
        return f"{self.source}:{self.text.count(chr(10), 0, match.start()) + 1}" if match else self.source

    def fail(self, key: str, message: str) -> InputError:
        return InputError(f"{self.where(key)}: {key}: {message}")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def int(self, key: str, default: Any = ..., *, positive: bool = True) -> int | None:
        value = self.data.get(key)
        if value is None:
            if default is ...:
                raise InputError(f"{self.source}: {key}: required key is missing (model_type {self.model_type})")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or (positive and value <= 0):
            raise self.fail(key, f"expected a {'positive ' if positive else ''}integer, got {value!r}")
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {value!r}")
        return value

    def float(self, key: str, default: float) -> float:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"expected a number, got {value!r}")
        return float(value)

    def int_list(self, key: str) -> list[int]:
        value = self.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.fail(key, f"expected a list of layer indices, got {value!r}")
        return value

    def activation(self, key: str, default: str) -> str:
        name = self.data.get(key) or default
        if name not in ACTIVATIONS:
            raise self.fail(key, f"unknown activation {name!r} (known: {', '.join(sorted(ACTIVATIONS))})")
        return ACTIVATIONS[name]

    def rope_fraction(self, default: float, legacy: str = "partial_rotary_factor") -> float:
        """The rotated fraction of each head: top-level, or inside rope_parameters (transformers 5)."""
        nested = self.data.get("rope_parameters")
        if isinstance(nested, dict) and nested.get("partial_rotary_factor") is not None:
            return float(nested["partial_rotary_factor"])
        return self.float(legacy, default)


# --- shared shapes --------------------------------------------------------------------------------

def _common(c: Config, *, tie: bool, context: str = "max_position_embeddings", context_default: int = 2048) -> dict:
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": c.int("hidden_size"),
        "n_layers": c.int("num_hidden_layers"),
        "context_length": c.int(context, context_default),
        "positions": "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", tie),
    }


def _attention(c: Config, *, head_dim: int | None = None, qkv_bias: bool = False, o_bias: bool = False,
               qk_norm: str = "none", rotary: float = 1.0) -> dict:
    heads = c.int("num_attention_heads")
    kv = c.int("num_key_value_heads", heads)
    hd = c.int("head_dim", head_dim)
    out = {"n_heads": heads, "n_kv_heads": kv, "head_dim": hd, "qkv_bias": qkv_bias, "o_bias": o_bias}
    if qk_norm != "none":
        out["qk_norm"] = qk_norm
    if rotary != 1.0:
        # transformers' rotary width: int(head_dim · partial_rotary_factor) (e.g. PhiRotaryEmbedding)
        out["rotary_dim"] = int((hd or c.int("hidden_size") // heads) * rotary)
    return out


def _gated(c: Config, width_key: str = "intermediate_size", act_key: str = "hidden_act", *, bias: bool = False,
           act_default: str = "silu", width: int | None = None) -> dict:
    return {"kind": "gated", "d_ff": width or c.int(width_key), "activation": c.activation(act_key, act_default),
            "bias": bias}


def _rms(per_layer: int = 2, **kw) -> dict:
    return {"kind": "rmsnorm", "per_layer": per_layer, "final": True, **kw}


def _layer_groups(kinds: list[str], ffns: dict[str, dict]) -> tuple[dict, list[dict] | None]:
    """Per-layer FFN kinds -> the model's FFN and, where layers differ, runs of identical layers."""
    runs: list[list] = []
    for kind in kinds:
        if runs and runs[-1][0] == kind:
            runs[-1][1] += 1
        else:
            runs.append([kind, 1])
    if len(runs) == 1:
        return ffns[runs[0][0]], None
    main = max(ffns, key=kinds.count)  # the model's FFN; a run of other layers states its own
    return ffns[main], [{"repeat": n, **({"ffn": ffns[kind]} if kind != main else {})} for kind, n in runs]


# --- one function per model_type ------------------------------------------------------------------

def gpt2(c: Config) -> dict:
    """GPT2Config / GPT2LMHeadModel: learned positions, Conv1D layers with biases, LayerNorm, lm_head tied."""
    d = c.int("n_embd")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("n_layer"),
        "context_length": c.int("n_positions", 1024),
        "positions": "learned",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("n_head"), "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": c.int("n_inner", 4 * d), "bias": True,
                "activation": c.activation("activation_function", "gelu_new")},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }


def gpt_neox(c: Config) -> dict:
    """GPTNeoXConfig / GPTNeoXLayer: fused query_key_value and dense with attention_bias (default true),
    MLP always biased, LayerNorm, parallel residual by default, a quarter of each head rotated."""
    parallel = c.bool("use_parallel_residual", True)
    bias = c.bool("attention_bias", True)
    return {
        **_common(c, tie=False),
        "attention": _attention(c, qkv_bias=bias, o_bias=bias, rotary=c.rope_fraction(0.25, "rotary_pct")),
        "ffn": {"kind": "dense", "d_ff": c.int("intermediate_size"), "bias": True,
                "activation": c.activation("hidden_act", "gelu")},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
        "parallel": parallel,
    }


def llama(c: Config) -> dict:
    """LlamaConfig / LlamaAttention, LlamaMLP: attention_bias on q/k/v/o and mlp_bias (both default false);
    head_dim defaults to hidden_size / heads; untied unless tie_word_embeddings (Llama 3.2 1B/3B)."""
    bias = c.bool("attention_bias", False)
    return {**_common(c, tie=False), "attention": _attention(c, qkv_bias=bias, o_bias=bias),
            "ffn": _gated(c, bias=c.bool("mlp_bias", False)), "norm": _rms()}


def mistral(c: Config) -> dict:
    """MistralConfig / MistralAttention: Llama's shapes, no biases anywhere, head_dim may be stated."""
    return {**_common(c, tie=False), "attention": _attention(c), "ffn": _gated(c), "norm": _rms()}


def mixtral(c: Config) -> dict:
    """MixtralConfig / MixtralSparseMoeBlock: Mistral's attention, a bias-free router over
    num_local_experts (default 8) SwiGLU experts, num_experts_per_tok (default 2) per token."""
    return {**_common(c, tie=False), "attention": _attention(c), "norm": _rms(),
            "ffn": {"kind": "moe", "n_experts": c.int("num_local_experts", 8), "top_k": c.int("num_experts_per_tok", 2),
                    "expert": _gated(c)}}


def qwen2(c: Config) -> dict:
    """Qwen2Config / Qwen2Attention: q, k and v always carry a bias and o never does (hard-coded, no key)."""
    return {**_common(c, tie=False), "attention": _attention(c, qkv_bias=True), "ffn": _gated(c), "norm": _rms()}


def _qwen_moe(c: Config, *, shared: bool) -> dict:
    """Qwen2Moe/Qwen3Moe DecoderLayer: layer i is sparse unless listed in mlp_only_layers, when
    num_experts > 0 and (i + 1) % decoder_sparse_step == 0; other layers are dense MLPs of intermediate_size."""
    n, step = c.int("num_hidden_layers"), c.int("decoder_sparse_step", 1)
    experts, dense_only = c.int("num_experts", 60 if shared else 128, positive=False), set(c.int_list("mlp_only_layers"))
    moe = {"kind": "moe", "n_experts": experts or 1, "top_k": c.int("num_experts_per_tok", 4 if shared else 8),
           "expert": _gated(c, "moe_intermediate_size", width=c.int("moe_intermediate_size", 1408 if shared else 768))}
    if shared:  # Qwen2MoeSparseMoeBlock: one shared expert, scaled by sigmoid(shared_expert_gate(x))
        moe.update(n_shared_experts=1, shared_gate=True,
                   shared=_gated(c, width=c.int("shared_expert_intermediate_size", 5632)))
    kinds = ["moe" if experts and i not in dense_only and (i + 1) % step == 0 else "dense" for i in range(n)]
    ffn, layers = _layer_groups(kinds, {"moe": moe, "dense": _gated(c) if "dense" in kinds else None})
    return {"ffn": ffn, **({"layers": layers} if layers else {})}


def qwen2_moe(c: Config) -> dict:
    """Qwen2MoeConfig / Qwen2MoeAttention: q/k/v bias from qkv_bias (default true), none on o."""
    return {**_common(c, tie=False), "attention": _attention(c, qkv_bias=c.bool("qkv_bias", True)),
            "norm": _rms(), **_qwen_moe(c, shared=True)}


def qwen3(c: Config) -> dict:
    """Qwen3Config / Qwen3Attention: head_dim defaults to 128, attention_bias on q/k/v/o (default false),
    and an RMSNorm over head_dim on each query and key head (q_norm, k_norm)."""
    bias = c.bool("attention_bias", False)
    return {**_common(c, tie=False), "attention": _attention(c, head_dim=128, qkv_bias=bias, o_bias=bias, qk_norm="head"),
            "ffn": _gated(c), "norm": _rms()}


def qwen3_moe(c: Config) -> dict:
    """Qwen3MoeConfig: Qwen3's attention (head_dim stated or hidden_size / heads) and routed experts only."""
    bias = c.bool("attention_bias", False)
    return {**_common(c, tie=False), "attention": _attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head"),
            "norm": _rms(), **_qwen_moe(c, shared=False)}


def gemma(c: Config) -> dict:
    """GemmaConfig / GemmaMLP: head_dim defaults to 256, GeGLU with the tanh GELU (a legacy hidden_act
    "gelu" is read as gelu_pytorch_tanh, as GemmaConfig does), tied embeddings; RMSNorm scales by 1 + w."""
    bias = c.bool("attention_bias", False)
    ffn = _gated(c, act_default="gelu_pytorch_tanh")
    if c.data.get("hidden_act") == "gelu":
        ffn["activation"] = "gelu_tanh"
    return {**_common(c, tie=True), "attention": _attention(c, head_dim=256, qkv_bias=bias, o_bias=bias),
            "ffn": ffn, "norm": _rms()}


def gemma2(c: Config) -> dict:
    """Gemma2Config / Gemma2DecoderLayer: four RMSNorms per layer, one before and one after each sublayer;
    GeGLU from hidden_activation; head_dim defaults to 256; tied embeddings."""
    bias = c.bool("attention_bias", False)
    return {**_common(c, tie=True), "attention": _attention(c, head_dim=256, qkv_bias=bias, o_bias=bias),
            "ffn": _gated(c, act_key="hidden_activation", act_default="gelu_pytorch_tanh"), "norm": _rms(per_layer=4)}


def phi(c: Config) -> dict:
    """PhiConfig / PhiDecoderLayer: one LayerNorm per layer shared by attention and MLP in parallel;
    q/k/v and dense with biases; fc1/fc2 with biases; lm_head with a bias; partial rotary (default 0.5);
    qk_layernorm adds a LayerNorm over head_dim on queries and keys."""
    return {
        **_common(c, tie=False),
        "attention": _attention(c, qkv_bias=True, o_bias=True, qk_norm="head" if c.bool("qk_layernorm", False) else "none",
                                rotary=c.rope_fraction(0.5)),
        "ffn": {"kind": "dense", "d_ff": c.int("intermediate_size"), "bias": True,
                "activation": c.activation("hidden_act", "gelu_new")},
        "norm": {"kind": "layernorm", "per_layer": 1, "final": True},
        "parallel": True,
        "lm_head_bias": True,
    }


def phi3(c: Config) -> dict:
    """Phi3Config / Phi3Attention, Phi3MLP: fused qkv_proj and gate_up_proj, no biases; the same parameters
    as separate q/k/v and gate/up."""
    return {**_common(c, tie=False), "attention": _attention(c, rotary=c.rope_fraction(1.0)), "ffn": _gated(c),
            "norm": _rms()}


def olmo2(c: Config) -> dict:
    """Olmo2Config / Olmo2DecoderLayer: RMSNorms after attention and after the MLP, none before;
    q_norm and k_norm over all heads' width; attention_bias on q/k/v/o (default false)."""
    bias = c.bool("attention_bias", False)
    return {**_common(c, tie=False), "attention": _attention(c, qkv_bias=bias, o_bias=bias, qk_norm="full"),
            "ffn": _gated(c), "norm": _rms(placement="post")}


def _deepseek(c: Config, *, mlp_bias: bool, defaults: dict) -> dict:
    """DeepseekV2/V3 DecoderLayer: MLA; layer i is MoE from first_k_dense_replace on (and, in DeepSeek's
    own code, when i % moe_layer_freq == 0; every published config has 1). The shared experts are one
    MLP of n_shared_experts × moe_intermediate_size in transformers: the same parameters and FLOPs as
    n_shared_experts experts, which is how the spec states them. The router is a bias-free weight;
    DeepSeek-V3's e_score_correction_bias is a buffer, not a parameter (DeepseekV3TopkRouter)."""
    q_rank = c.data.get("q_lora_rank", defaults["q_lora_rank"])  # an explicit null means a full-rank query
    if q_rank is not None:
        q_rank = c.int("q_lora_rank", defaults["q_lora_rank"])
    attention = {
        "kind": "mla", "n_heads": c.int("num_attention_heads"), "q_lora_rank": q_rank,
        "kv_lora_rank": c.int("kv_lora_rank", 512), "qk_nope_head_dim": c.int("qk_nope_head_dim", 128),
        "qk_rope_head_dim": c.int("qk_rope_head_dim", 64), "v_head_dim": c.int("v_head_dim", 128),
        "bias": c.bool("attention_bias", False),
    }
    n, first, freq = c.int("num_hidden_layers"), c.int("first_k_dense_replace", defaults["first_k_dense_replace"],
                                                       positive=False), c.int("moe_layer_freq", 1)
    routed = c.int("n_routed_experts", defaults["n_routed_experts"], positive=False)
    width = c.int("moe_intermediate_size", defaults["moe_intermediate_size"])
    moe = {"kind": "moe", "n_experts": routed or 1, "top_k": c.int("num_experts_per_tok", defaults["num_experts_per_tok"]),
           "expert": _gated(c, width=width)}
    shared = c.int("n_shared_experts", defaults["n_shared_experts"], positive=False)
    if shared:
        moe.update(n_shared_experts=shared, shared=_gated(c, width=width, bias=False))
    kinds = ["moe" if routed and i >= first and i % freq == 0 else "dense" for i in range(n)]
    ffn, layers = _layer_groups(kinds, {"moe": moe, "dense": _gated(c, bias=mlp_bias) if "dense" in kinds else None})
    return {**_common(c, tie=False), "attention": attention, "ffn": ffn, **({"layers": layers} if layers else {}),
            "norm": _rms()}


def deepseek_v2(c: Config) -> dict:
    """DeepseekV2Config defaults: q_lora_rank 1536, 64 routed experts, 2 shared, moe_intermediate_size 1407,
    first_k_dense_replace 0; the dense MLPs take mlp_bias (DeepseekV2MLP)."""
    return _deepseek(c, mlp_bias=c.bool("mlp_bias", False), defaults={
        "q_lora_rank": 1536, "n_routed_experts": 64, "n_shared_experts": 2, "moe_intermediate_size": 1407,
        "first_k_dense_replace": 0, "num_experts_per_tok": ...})  # no default: required


def deepseek_v3(c: Config) -> dict:
    """DeepseekV3Config defaults: q_lora_rank 1536, 256 routed experts (8 per token), 1 shared,
    moe_intermediate_size 2048, first_k_dense_replace 3. The multi-token-prediction layers
    (num_nextn_predict_layers) ship in the checkpoint but are not part of DeepseekV3ForCausalLM."""
    return _deepseek(c, mlp_bias=False, defaults={
        "q_lora_rank": 1536, "n_routed_experts": 256, "n_shared_experts": 1, "moe_intermediate_size": 2048,
        "first_k_dense_replace": 3, "num_experts_per_tok": 8})


FAMILIES: dict[str, Callable[[Config], dict]] = {
    f.__name__: f for f in (gpt2, gpt_neox, llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2,
                            phi, phi3, olmo2, deepseek_v2, deepseek_v3)
}


# --- reading --------------------------------------------------------------------------------------

def config_path(ref: str | Path) -> Path:
    """A config.json, or a folder holding one."""
    path = Path(ref)
    return path / "config.json" if path.is_dir() else path


def read_config(ref: str | Path) -> Config:
    path = config_path(ref)
    if path.parent.is_dir() and not path.exists() and path.name == "config.json":
        raise InputError(f"{path.parent}: no config.json in this folder")
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}:1: a config.json is a JSON object, not a {type(data).__name__}")
    return Config(data, text, str(path))


def is_hf_config(ref: str | Path) -> bool:
    """Whether ``ref`` names a Hugging Face config: a folder with a config.json, or a .json with model_type."""
    path = Path(ref)
    if path.is_dir():
        return (path / "config.json").is_file()
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and "model_type" in data


def spec_data(c: Config) -> dict:
    """The spec's fields, as a YAML spec states them, for a config of a supported model_type."""
    if c.model_type is None:
        raise InputError(f"{c.source}: model_type: required key is missing (supported: {', '.join(sorted(FAMILIES))})")
    family = FAMILIES.get(c.model_type)
    if family is None:
        raise c.fail("model_type", f"unsupported model_type {c.model_type!r}; supported: {', '.join(sorted(FAMILIES))}")
    return _prune(family(c))


def to_spec(c: Config) -> ModelSpec:
    data = spec_data(c)
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        cause = (err.get("ctx") or {}).get("error")
        path = ".".join(str(p) for p in tuple(err["loc"]) + (cause.path if isinstance(cause, SpecError) else ()))
        message = cause.message if isinstance(cause, SpecError) else err["msg"]
        raise InputError(f"{c.source}: the {c.model_type} config gives an invalid spec: {path}: {message}") from None


def to_yaml(c: Config) -> str:
    """The spec as YAML with a header naming its source; validated first, so it always loads back."""
    import yaml

    to_spec(c)
    data = spec_data(c)
    head = (f"# ffncalc spec imported from {c.source} (model_type {c.model_type}, {FAMILIES[c.model_type].__doc__.split(':')[0]}).\n"
            "# Count it with: ffncalc count THIS_FILE.yaml\n")
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def load(ref: str | Path) -> tuple[str, ModelSpec]:
    """A config.json (or its folder) -> (label, spec); the label is the folder's name or the file's stem."""
    path = config_path(ref)
    c = read_config(path)
    label = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    return label, to_spec(c)


def _prune(data):
    """Drop None values so the spec's own defaults apply and the printed YAML stays short."""
    if isinstance(data, dict):
        return {k: _prune(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [_prune(v) for v in data]
    return data
