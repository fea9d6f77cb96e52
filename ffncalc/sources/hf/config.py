"""What every family plugin reads a config.json with: ``Config`` (typed keys, errors naming file, line and
key), the shared shapes, the common transformers module names, and the ``family`` registry decorator."""

from __future__ import annotations

import math
import re
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Callable

from ...errors import InputError
from ...model.schema import BOUNDS, LIMIT, MAX_LAYERS

# transformers' ACT2FN names -> ours. gelu_new, gelu_fast and gelu_pytorch_tanh are all the tanh approximation.
ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_accurate": "gelu_tanh",
    "quick_gelu": "quick_gelu",  # CLIP's
    "silu": "silu",
    "swish": "silu",
    "relu": "relu",
    "relu2": "relu2",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "linear": "identity",
}


class Config:
    """A config.json's keys, with errors that name the file, the line and the key."""

    def __init__(
        self,
        data: dict,
        text: str,
        source: str,
        *,
        start: int = 0,
        wrapper: str | None = None,
        towers: tuple[str, ...] = (),
        outer: Config | None = None,
    ):
        self.data, self.text, self.source = data, text, source
        self.outer = outer  # a wrapper's whole config, around this text_config
        self.model_type = data.get("model_type")
        self.start = start  # where this part of the file begins (a wrapper's text_config)
        self.wrapper, self.towers = wrapper, towers  # the multimodal model_type around it, and its other parts
        if self.model_type is not None and not isinstance(self.model_type, str):
            raise self.fail("model_type", f'expected a string such as "llama", got a {_kind(self.model_type)}')

    def where(self, key: str) -> str:
        match = re.compile(r'"%s"\s*:' % re.escape(key)).search(self.text, self.start)
        return f"{self.source}:{self.text.count(chr(10), 0, match.start()) + 1}" if match else self.source

    def with_defaults(self, defaults: dict[str, Any]) -> Config:
        """This config with a config class's defaults for the keys it leaves out, as transformers reads a
        sparse config (a wrapper's text_config often states only what differs)."""
        data = {**defaults, **self.data}
        return Config(data, self.text, self.source, start=self.start, wrapper=self.wrapper, towers=self.towers, outer=self.outer)

    def fail(self, key: str, message: str) -> InputError:
        return InputError(f"{self.where(key)}: {key}: {message}")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def int(self, key: str, default: Any = ..., *, positive: bool = True) -> int | None:
        value = self.data.get(key)
        if value is None:
            if default is ... and key in self.data:  # null, as some config classes default it (DeepseekV2Config's top-k)
                raise self.fail(
                    key,
                    f"null, and the {self.model_type} configuration class has no value for it either "
                    "(transformers cannot build the model without one): state it",
                )
            if default is ...:
                raise InputError(f"{self.source}: {key}: required key is missing (model_type {self.model_type})")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or (positive and value <= 0):
            raise self.fail(key, f"expected a {'positive ' if positive else ''}integer, got {_short(value)}")
        if abs(value) > LIMIT:
            raise self.fail(key, f"{_short(value)} is beyond the limit of {LIMIT:,} (2^40)")
        if key in DEPTH_KEYS:
            self.depth(value, key)
        return value

    def depth(self, layers: int, *keys: str) -> int:
        """``layers``, the depth of a stack that ``keys`` state (their product, a stack run in cycles): the families
        build their per-layer lists from it, so the spec's bound on layers is checked before any list is built."""
        if layers > MAX_LAYERS:
            raise self.fail(
                keys[0],
                f"{layers:,} layers{' (' + ' × '.join(keys) + ')' if len(keys) > 1 else ''} is beyond the limit of "
                f"{MAX_LAYERS:,} ({BOUNDS[MAX_LAYERS]})",
            )
        return layers

    def unstated(self, key: str, stand_in: int, what: str, example: str) -> int:
        """An integer the parameters do not depend on (a router's top-k), which ``key`` leaves null, as the model
        type's configuration class does, and transformers builds the model without: ``stand_in`` holds its place,
        and the model read is marked (``Model.needs``): its parameters are counted, its active parameters and FLOPs
        need ``what``, which ``example`` shows stated. A value stated is read as ``int`` reads it."""
        if self.data.get(key) is not None:
            return self.int(key)
        need = (
            f"{self.where(key)}: {key} is null, as the {self.model_type} configuration class leaves it: the parameters "
            f"are counted, but active parameters and FLOPs need {what}: state it ({example})"
        )
        found = _UNSTATED.get()
        if found is not None and need not in found:
            found.append(need)
        return stand_in

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
            raise self.fail(key, f"expected a number, got {_short(value)}")
        if not math.isfinite(value) or abs(value) > LIMIT:
            raise self.fail(key, f"expected a finite number within ±2^40, got {_short(value)}")
        return float(value)

    def int_list(self, key: str) -> list[int]:
        value = self.data.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.fail(key, f"expected a list of layer indices, got {_short(value)}")
        return value

    def activation(self, key: str, default: str) -> str:
        name = self.data.get(key) or default
        if not isinstance(name, str):
            raise self.fail(key, f'expected an activation name such as "silu", got a {_kind(name)}')
        if name not in ACTIVATIONS:
            raise self.fail(key, f"unknown activation {name!r} (known: {', '.join(sorted(ACTIVATIONS))})")
        return ACTIVATIONS[name]

    def rope_fraction(self, default: float, legacy: str = "partial_rotary_factor") -> float:
        """The rotated fraction of each head: top-level, or inside rope_parameters (transformers 5)."""
        nested = self.data.get("rope_parameters")
        if isinstance(nested, dict) and nested.get("partial_rotary_factor") is not None:
            key, value = "partial_rotary_factor", nested["partial_rotary_factor"]
        else:
            key, value = legacy, self.float(legacy, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise self.fail(key, f"expected a fraction of the head above 0 and at most 1, got {_short(value)}")
        return float(value)


# What the family reading a config now found left unstated (Config.unstated), each a line (sources/hf: read)
_UNSTATED: ContextVar[list[str] | None] = ContextVar("unstated", default=None)

# The keys a config states a stack's depth under (their attribute_map's other names among them)
DEPTH_KEYS = frozenset({"num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_blocks", "num_layers_per_stack"})


def _kind(value: Any) -> str:
    return {list: "list", dict: "mapping"}.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    """A value for a message: its repr, shortened (a 5,000-digit number is not worth printing)."""
    try:
        text = repr(value)
    except ValueError:  # an integer past Python's digit limit for str()
        text = f"an integer of {value.bit_length():,} bits"
    return text if len(text) <= 40 else text[:37] + "…"


# --- shared shapes ------------------------------------------------------------------------------


def common(c: Config, *, tie: bool, context: str = "max_position_embeddings", context_default: int = 2048) -> dict:
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": c.int("hidden_size"),
        "n_layers": c.int("num_hidden_layers"),
        "context_length": c.int(context, context_default),
        "positions": "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", tie),
    }


def attention(
    c: Config,
    *,
    head_dim: int | None = None,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: str = "none",
    rotary: float = 1.0,
    kv_heads: int | None = None,
) -> dict:
    """The attention keys most families share. ``kv_heads``: the config class's default when the key is
    absent; a key present but null means one KV head per query head, as every config class reads it."""
    heads = c.int("num_attention_heads")
    kv = c.int("num_key_value_heads", heads if kv_heads is None or "num_key_value_heads" in c.data else kv_heads)
    hd = c.int("head_dim", head_dim)
    if hd is None and c.int("hidden_size") % heads:  # transformers' hidden_size // num_attention_heads, floored
        hd = c.int("hidden_size") // heads
    out = {"n_heads": heads, "n_kv_heads": kv, "head_dim": hd, "qkv_bias": qkv_bias, "o_bias": o_bias}
    if qk_norm != "none":
        out["qk_norm"] = qk_norm
    if rotary != 1.0:
        # transformers' rotary width: int(head_dim · partial_rotary_factor) (e.g. PhiRotaryEmbedding)
        out["rotary_dim"] = int((hd or c.int("hidden_size") // heads) * rotary)
    return out


def gated(
    c: Config,
    width_key: str = "intermediate_size",
    act_key: str = "hidden_act",
    *,
    bias: bool = False,
    act_default: str = "silu",
    width: int | None = None,
) -> dict:
    return {"kind": "gated", "d_ff": width or c.int(width_key), "activation": c.activation(act_key, act_default), "bias": bias}


def window(c: Config, default: int | None) -> int | None:
    """sliding_window: the config class's default when the key is absent; none when it is null."""
    if c.data.get("sliding_window", default) is None:
        return None
    return c.int("sliding_window", default)


def layer_types(c: Config, pattern) -> list[str]:
    """layer_types as stated, or as the config class derives them: ``pattern(i)`` for layer i."""
    n = c.int("num_hidden_layers")
    stated = c.data.get("layer_types")
    if stated is None:
        return [pattern(i) for i in range(n)]
    if not isinstance(stated, list) or len(stated) != n or not all(isinstance(t, str) for t in stated):
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {stated!r}")
    return stated


def stack(layers: list[dict]) -> dict:
    """Per-layer {"attention": …, "ffn": …} (and any other key a layer group states: "norms") -> the spec's
    attention and ffn (those of most layers) and, where layers differ, runs of layers that state what differs."""

    def key(layer: dict) -> str:
        return repr(sorted(layer.items()))

    counts: dict[str, int] = {}
    for layer in layers:
        counts[key(layer)] = counts.get(key(layer), 0) + 1
    main = next(layer for layer in layers if key(layer) == max(counts, key=counts.get))
    runs: list[list] = []
    for layer in layers:
        if runs and key(runs[-1][0]) == key(layer):
            runs[-1][1] += 1
        else:
            runs.append([layer, 1])
    out = dict(main)
    if len(runs) > 1:
        out["layers"] = [{"repeat": n, **{k: v for k, v in layer.items() if v != main[k]}} for layer, n in runs]
    return out


def rms(per_layer: int = 2, **kw) -> dict:
    return {"kind": "rmsnorm", "per_layer": per_layer, "final": True, **kw}


def layer_groups(kinds: list[str], ffns: dict[str, dict]) -> tuple[dict, list[dict] | None]:
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


# --- module names: transformers parameter paths -> our components (verify --hf) --------------------

# Inside a layer, the names most families share (LlamaDecoderLayer's); a family lists its own first.
COMMON_LAYER_MODULES = (
    (r"\.q_proj$", "attn.q"),
    (r"\.k_proj$", "attn.k"),
    (r"\.v_proj$", "attn.v"),
    (r"(attn|attention)\.o_proj$", "attn.o"),
    (r"q_norm$", "attn.q_norm"),
    (r"k_norm$", "attn.k_norm"),
    (r"mlp\.gate_proj$", "ffn.gate"),
    (r"mlp\.up_proj$", "ffn.up"),
    (r"mlp\.down_proj$", "ffn.down"),
    (r"(input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|post_feedforward_layernorm)$", "norms"),
)
COMMON_TOP_MODULES = ((r"embed_tokens$", "embed"), (r"norm$", "final_norm"), (r"lm_head$", "lm_head"))
# Mixtures: the router, routed experts (one module per expert, or fused 3-D tensors) and shared experts.
MOE_MODULES = (
    (r"mlp\.shared_expert_gate$", "ffn.shared_gate"),
    (r"mlp\.shared_experts?\b", "ffn.shared"),
    (r"(mlp|block_sparse_moe)\.experts\b", "ffn.experts"),
    (r"(mlp|block_sparse_moe)\.gate$", "ffn.router"),
)


@dataclass(frozen=True)
class Family:
    """One Hugging Face model family: the model_type it reads, how (``read``: config -> spec data, with
    the config class's defaults), and the module names its transformers class uses."""

    model_type: str
    read: Callable[[Config], dict]
    layer_modules: tuple[tuple[str, str], ...]
    top_modules: tuple[tuple[str, str], ...]
    # (pattern, n) where each transformers layer holds n of ours (LongCat-Flash: two attention and two FFN sublayers
    # in each LongcatFlashDecoderLayer): in transformers' layer i, a module whose path inside the layer matches
    # ``pattern`` (group 1: its sublayer j) is in our layer n·i + j; any other module of layer i is in our layer n·i
    sublayers: tuple[str, int] | None = None
    # where transformers holds the layers in several lists (HRM's L_module and H_module), from the config: each list's
    # module name -> our index of its layer 0 (model/reuse.py: the first run of a stack stores its parameters)
    stacks: Callable[[Config], dict[str, int]] | None = None
    # (pattern, prefix) for stacks of layers beside the model's own (BLT's patcher, local encoder, global transformer):
    # a parameter whose path matches ``pattern`` (after the start or a dot) is named by the rest of its path, prefixed,
    # as one model-level component (no layer): model.patcher.layers.3.mlp.up_proj -> patcher.ffn.up
    model_stacks: tuple[tuple[str, str], ...] = ()

    @property
    def title(self) -> str:
        return (self.read.__doc__ or self.model_type).split(":")[0]


FAMILIES: dict[str, Family] = {}
DUPLICATES: list[str] = []  # model_types two family modules both claim (a test requires none)


def family(
    *model_types: str,
    layer_modules=(),
    top_modules=(),
    sublayers: tuple[str, int] | None = None,
    stacks: Callable[[Config], dict[str, int]] | None = None,
    model_stacks: tuple[tuple[str, str], ...] = (),
):
    """Decorator: ``read`` is the family for these model_types; its module names go before the common ones;
    ``sublayers``: where one transformers layer is several of ours (``Family.sublayers``); ``stacks``: where
    transformers holds the layers in several lists (``Family.stacks``); ``model_stacks``: stacks of layers beside
    the model's own, named as model-level components (``Family.model_stacks``)."""

    def register(read: Callable[[Config], dict]):
        for model_type in model_types:
            if model_type in FAMILIES:
                DUPLICATES.append(model_type)
            FAMILIES[model_type] = Family(
                model_type,
                read,
                tuple(layer_modules) + COMMON_LAYER_MODULES,
                tuple(top_modules) + COMMON_TOP_MODULES,
                sublayers,
                stacks,
                tuple(model_stacks),
            )
        return read

    return register


def alias(model_type: str, of: str) -> None:
    """A family that is another under a new name."""
    if model_type in FAMILIES:
        DUPLICATES.append(model_type)
    FAMILIES[model_type] = replace(FAMILIES[of], model_type=model_type)


_CLASS_DEFAULTS: dict | None = None


def class_defaults_of(model_type: str | None) -> dict | None:
    """The recorded defaults and attribute_map of a transformers configuration class (class_defaults.json)."""
    global _CLASS_DEFAULTS
    if _CLASS_DEFAULTS is None:
        import json
        from pathlib import Path

        _CLASS_DEFAULTS = json.loads((Path(__file__).with_name("class_defaults.json")).read_text())["types"]
    return _CLASS_DEFAULTS.get(model_type) if isinstance(model_type, str) else None
