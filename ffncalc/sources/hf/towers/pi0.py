"""π0 (PI0ForConditionalGeneration): its PaliGemma (vlm_config, PaliGemmaModel: a SigLIP tower, its projector and the
Gemma language model, read as the paligemma wrapper's) and its Gemma action expert (dit_config) with the action and
time projections (parts/action_expert.py)."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper
from .vlm import paligemma

# PI0Config.sub_configs_defaults (transformers 5.23, models/pi0/configuration_pi0.py): what an absent vlm_config and
# dit_config build; their classes' own defaults fill the rest
PI0_VLM = {
    "model_type": "paligemma",
    "text_config": {
        "model_type": "gemma",
        "hidden_size": 2048,
        "num_hidden_layers": 18,
        "intermediate_size": 16384,
        "num_attention_heads": 8,
        "num_key_value_heads": 1,
        "vocab_size": 257152,
    },
    "vision_config": {
        "model_type": "siglip_vision_model",
        "intermediate_size": 4304,
        "hidden_size": 1152,
        "patch_size": 14,
        "image_size": 224,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "vocab_size": 257152,
        "vision_use_head": False,
    },
    "projection_dim": 2048,
    "image_token_id": 257152,
}
PI0_DIT = {
    "model_type": "gemma",
    "hidden_size": 1024,
    "num_hidden_layers": 18,
    "intermediate_size": 4096,
    "num_attention_heads": 8,
    "num_key_value_heads": 1,
    "head_dim": 256,
}
DEFAULTS = {"vlm_config": PI0_VLM, "dit_config": PI0_DIT}
# PaliGemmaConfig.sub_configs_defaults' vision_config (models/paligemma/configuration_paligemma.py): a vlm_config's
# absent vision config
PALIGEMMA_VISION = {
    "model_type": "siglip_vision_model",
    "intermediate_size": 4096,
    "hidden_size": 1152,
    "patch_size": 14,
    "image_size": 224,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "vocab_size": 257152,
    "vision_use_head": False,
}


def stated(c: Config, key: str) -> dict:
    """``key``'s sub-config as PI0Config builds it: the file's, or its default where absent."""
    data = c.data.get(key)
    if data is not None and not isinstance(data, dict):
        raise c.fail(key, f"expected an object, got {data!r}")
    return data if data is not None else DEFAULTS[key]


def vlm_of(c: Config) -> Config:
    """The vlm_config as a paligemma config of its own (its absent keys PaliGemmaConfig's defaults)."""
    from ..config import class_defaults_of

    data = stated(c, "vlm_config")
    text = data.get("text_config")
    if text is not None and not isinstance(text, dict):
        raise c.fail("text_config", f"expected an object, got {text!r}")
    if text is None:  # PaliGemmaConfig's own default text config
        text = class_defaults_of("paligemma")["text_config"]
    text = {**text, "model_type": text.get("model_type") or "gemma"}  # PaliGemmaConfig: a text config is Gemma's unless stated
    data = {"vision_config": PALIGEMMA_VISION, **data, "text_config": text, "model_type": data.get("model_type") or "paligemma"}
    return Config(data, c.text, c.source)


@wrapper("pi0")
def pi0(c: Config) -> dict:
    """PI0ForConditionalGeneration (Black et al. 2024): PaliGemma's SigLIP tower and projector, and the Gemma action
    expert beside its language model, with the state, action and time projections and action_out_proj; no LM head."""
    from .. import class_defaults
    from ..families.gemma import gemma

    c = class_defaults(c)  # PI0Config's own keys where the file leaves them out
    vision = paligemma(vlm_of(c))
    dit = sub_config(Config({**c.data, "dit_config": stated(c, "dit_config")}, c.text, c.source), "dit_config")
    text = sub_config(vlm_of(c), "text_config")
    spec = gemma(dit)
    layers = {
        "d_model": dit.int("hidden_size"),
        "n_layers": dit.int("num_hidden_layers"),
        "attention": spec["attention"],
        "ffn": spec["ffn"],
        "mask": "bidirectional",
    }
    expert = {
        "layers": layers,
        "vocab": text.int("vocab_size"),  # PI0Config.__post_init__: the dit's vocab_size is the language model's
        "actions": c.int("max_action_dim"),
        "states": c.int("max_state_dim"),
        "chunk": c.int("chunk_size"),
    }
    return {**vision, "action_expert": expert}


pi0.reads = ("vlm_config", "dit_config")  # type: ignore[attr-defined]


# PI0ForConditionalGeneration's modules beside its PaliGemma -> the action expert's components (parts/action_expert.py)
_EXPERT = (
    (r"^model\.dit\.layers\.\d+\.self_attn\.([qkvo])_proj$", r"action_expert.attn.\1"),
    (r"^model\.dit\.layers\.\d+\.mlp\.(gate|up|down)_proj$", r"action_expert.ffn.\1"),
    (r"^model\.dit\.layers\.\d+\.(input_layernorm|post_attention_layernorm)$", "action_expert.norms"),
    (r"^model\.dit\.norm$", "action_expert.norm"),
    (r"^model\.dit\.embed_tokens$", "action_expert.embed_tokens"),
    (r"^embed_action_time\.(state_proj|action_in_proj|action_time_mlp_in|action_time_mlp_out)$", r"action_expert.\1"),
    (r"^action_out_proj$", "action_expert.action_out_proj"),
)


def pi0_component(path: str) -> str | None:
    """A π0 parameter's name outside its PaliGemma -> the action expert's component, or None."""
    import re

    module = path.rsplit(".", 1)[0]
    for pattern, name in _EXPERT:
        if re.match(pattern, module):
            return re.sub(pattern, name, module)
    return None
