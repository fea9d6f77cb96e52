"""Record what transformers builds for every decoder-only text model_type and every encoder at its configuration
class's defaults (the coverage table's ground truth), or check that the recording is current.

    python scripts/hf_defaults.py            # (re)write tests/hf_defaults/ for every decoder-only text type,
                                             # and ffncalc/sources/hf/class_defaults.json
    python scripts/hf_defaults.py --check    # exit 1 if any recorded file differs from what transformers builds now
    python scripts/hf_defaults.py TYPE …     # only these model_types

For each model_type of transformers' causal-LM mapping that is not in coverage.NOT_TEXT_DECODERS, and each encoder
of its masked-LM mapping (coverage.ENCODER_TYPES, built as its masked-LM class):
``configs/TYPE.json`` is ``AutoConfig.for_model(TYPE).to_dict()`` written as a config.json (every key at
its default: what a user's config.json states when it states everything); ``truth/TYPE.json`` is the
causal-LM class built from that file's language model (a wrapper's text_config) on the meta device: every
parameter by name with its element count (a tied one once) and the buffers, with the versions used (for an
encoder, its masked-LM class, and the FLOPs of one forward under FlopCounterMode as scripts/hf_truth.py records them); or,
where transformers cannot build its own defaults, the reason (``refused``). Where the defaults leave a key
None (or undefined) that the modelling code then uses as a number, REPAIRS gives it the value the class documents,
and the truth records the repair; a type coverage.REFUSED_AT_DEFAULTS lists keeps transformers' reason for refusing
its raw defaults beside it (``refused_unrepaired``). The default configurations are often toy or full-sized models;
either way they are what the class means when a key is left out.

``ffncalc/sources/hf/class_defaults.json`` holds, for every type a family reads, its configuration class's
declared defaults and attribute_map: ffncalc fills a config.json's absent keys from it, as transformers does.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "hf_defaults"


# Defaults transformers cannot build (a key left None that its own modelling code uses as a number), each
# given the value the class's own documentation or convention implies: the smallest change that builds.
QSA = {"indexer_n_heads": 4, "indexer_kv_heads": 1, "indexer_head_dim": 128, "indexer_budget": 2048, "indexer_compress_ratio": 4}
ROPE = {"rope_theta": 10000.0, "rope_type": "default", "partial_rotary_factor": 0.25}
REPAIRS = {
    # rope_parameters defaults to {}, with no entry for the full_attention layers of the default layer_types, which
    # the rotary embedding indexes: a null entry, which the class reads as no rotary positions for that type
    "cohere_compass_text": {"rope_parameters": {"full_attention": None}},
    # head_dim: None set as an attribute defeats getattr(config, "head_dim", hidden_size // heads) in the
    # attention: the fallback it means, 4096 // 32
    "hunyuan_v1_dense": {"head_dim": 128},
    "hunyuan_v1_moe": {"head_dim": 128},
    "ministral": {"head_dim": 128},
    # num_key_value_heads None: one KV head per query head, as the class documents (48 heads)
    "nemotron": {"num_key_value_heads": 48},
    # MoonshineStreamingConfig defines no num_key_value_heads, which the decoder's MoonshineStreamingAttention reads
    # (transformers refuses the raw defaults: "object has no attribute 'num_key_value_heads'"): one KV head per query
    # head, as the encoder's config states for its own attention (8 heads)
    "moonshine_streaming": {"num_key_value_heads": 8},
    # The QSA indexer's sizes default to None, which Qwen4ExpTextQSAIndexer divides: the released Qwen4-Exp's
    # (4 index heads of 128, the one key head the class requires, a budget of 2048 tokens in blocks of 4), with
    # its rotary fraction 0.25 (Qwen3_5MoeTextConfig's default, which Qwen4ExpTextConfig.__post_init__ skips), as
    # the class's validation requires rotary features to fit the index head
    "qwen4_exp_text": {**QSA, "rope_parameters": ROPE},
    "qwen4_exp": {"text_config": {**QSA, "rope_parameters": ROPE}},
    # is_decoder defaults to False, which ReformerModelWithLMHead refuses: the causal LM is the decoder
    "reformer": {"is_decoder": True},
}


def types() -> list[str]:
    """Every decoder-only text type (its causal LM), every encoder (its masked LM) and every encoder-decoder (its
    seq2seq or speech-seq2seq class)."""
    from ffncalc.sources.hf import coverage

    decoders = [t for t in coverage.CAUSAL_LM_TYPES if t not in coverage.NOT_TEXT_DECODERS]
    return list(dict.fromkeys(decoders + list(coverage.ENCODER_TYPES) + list(coverage.ENCODER_DECODER_TYPES)))


def config_text(model_type: str, repair: bool = True) -> str:
    import transformers
    from transformers import AutoConfig

    transformers.logging.set_verbosity_error()
    try:
        data = AutoConfig.for_model(model_type).to_dict()
    except Exception:  # noqa: BLE001 — the class refuses its own defaults: recorded as refused by the truth
        data = {"model_type": model_type}
    for key, value in (REPAIRS.get(model_type, {}) if repair else {}).items():  # a nested part repaired key by key
        data[key] = {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
    data.pop("transformers_version", None)
    return json.dumps(data, indent=1, sort_keys=True, default=str) + "\n"


CLASS_DEFAULTS = ROOT / "ffncalc" / "sources" / "hf" / "class_defaults.json"


def class_defaults_text() -> str:
    """Each model_type's configuration class's declared defaults (its dataclass fields beyond the base class's,
    before __post_init__ derives anything) and its attribute_map (a key another name sets), for every type a
    family reads that transformers defines: what a config.json that leaves a key out means."""
    import dataclasses

    from transformers import PretrainedConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from ffncalc.sources import hf
    from ffncalc.sources.hf import coverage

    base = {f.name for f in dataclasses.fields(PretrainedConfig)}
    from ffncalc.sources.hf.towers.audio_lm import GRANITE_TYPES, SPEECH_TYPES
    from ffncalc.sources.hf.towers.inkling_mm import INKLING_TYPES
    from ffncalc.sources.hf.towers.phi4mm import PHI4_TYPES
    from ffncalc.sources.hf.towers.qwen import ERNIE_VISION, GLM_VISION, QWEN_VISION
    from ffncalc.sources.hf.towers.vibevoice import VIBEVOICE_TYPES
    from ffncalc.sources.hf.towers.vit import CONNECTOR_TYPES, VISION_TYPES
    from ffncalc.sources.hf.towers.whisper import AUDIO_TYPES

    # the wrappers (their tie_word_embeddings, hf.wrapper_tie) and the towers read (a sparse vision_config's defaults)
    wrappers = {
        *coverage.IMAGE_TEXT_TYPES,
        *coverage.WHOLE_TYPES,
        *VISION_TYPES,
        *QWEN_VISION,
        *GLM_VISION,
        *ERNIE_VISION,
        *CONNECTOR_TYPES,
        *AUDIO_TYPES,
        *GRANITE_TYPES,
        *SPEECH_TYPES,
        *PHI4_TYPES,
        *INKLING_TYPES,
        *VIBEVOICE_TYPES,
    }
    wanted = sorted(({*types(), *hf.registered(), *hf.TEXT_TYPES.values(), *wrappers}) & set(CONFIG_MAPPING))
    out = {}
    for model_type in wanted:
        cls = CONFIG_MAPPING[model_type]
        defaults = {}
        for f in dataclasses.fields(cls):
            if f.name in base or f.name == "model_type":
                continue
            if f.default is not dataclasses.MISSING:
                value = f.default
            elif f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
            else:
                continue
            try:
                json.dumps(value)
            except TypeError:  # not plain data (a nested config object): the class builds it, not its file
                continue
            defaults[f.name] = value
        aliases = {k: v for k, v in getattr(cls, "attribute_map", {}).items() if k != v}
        out[model_type] = {"defaults": defaults, **({"aliases": aliases} if aliases else {}), **text_defaults(model_type, cls)}
    import transformers

    return json.dumps({"transformers": transformers.__version__, "types": out}, indent=0, sort_keys=True) + "\n"


def text_defaults(model_type: str, cls) -> dict:
    """A wrapper's own defaults for its text_config (its SubConfigSpec's init_kwargs: Voxtral's 3B language model, not
    LlamaConfig's 7B), which its class builds where the file states no text_config; ``text_config_merged`` where its
    __post_init__ lays them under a text_config the file does state (VoxtralConfig, GlmAsrConfig: "Keep for BC")."""
    from transformers import AutoConfig

    spec = getattr(cls, "sub_configs_defaults", {}).get("text_config")
    kwargs = getattr(spec, "init_kwargs", None)
    if not kwargs:
        return {}
    out: dict = {"text_config": json.loads(json.dumps(kwargs))}
    try:  # a text_config of its model_type alone: does the class fill it from its own defaults where they differ?
        built = AutoConfig.for_model(model_type, text_config={"model_type": spec.model_type}).text_config
        plain = AutoConfig.for_model(spec.model_type)
        differ = [k for k, v in kwargs.items() if hasattr(plain, k) and getattr(plain, k) != v]
        merged = bool(differ) and all(getattr(built, k, None) == kwargs[k] for k in differ)
    except Exception:  # noqa: BLE001 — the class refuses it: nothing merged
        merged = False
    return {**out, "text_config_merged": True} if merged else out


def truth_text(model_type: str, path: Path) -> str:
    import torch

    from ffncalc.analysis.hfcheck import measure
    from ffncalc.analysis.records import record_json
    from ffncalc.errors import InputError
    from ffncalc.sources.hf import from_text, read_config
    from ffncalc.sources.hf.coverage import ENCODER_DECODER_TYPES, ENCODER_TYPES, REFUSED_AT_DEFAULTS

    try:  # a multimodal wrapper: its language model, as ffncalc and verify --hf read it; an encoder's FLOPs too
        data = measure(read_config(path.relative_to(ROOT)), flops=model_type in ENCODER_TYPES + ENCODER_DECODER_TYPES).record()
    except InputError as exc:  # transformers refuses to build its own defaults: the reason, as it gives it
        import transformers

        data = {"transformers": transformers.__version__, "refused": str(exc).split(": ", 1)[-1]}
    if model_type in REPAIRS:
        data = {"repaired": REPAIRS[model_type], **data}
    if model_type in REPAIRS and model_type in REFUSED_AT_DEFAULTS:
        try:  # listed as refused at its raw defaults: transformers' reason kept beside the repaired truth
            measure(from_text(config_text(model_type, repair=False), f"{model_type} (unrepaired)"))
        except InputError as exc:
            data = {"refused_unrepaired": str(exc).split(": ", 1)[-1], **data}
    return record_json({"config": f"tests/hf_defaults/configs/{model_type}.json", "torch": torch.__version__, **data})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("types", nargs="*", help="model_types (default: every decoder-only text type and every encoder)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    stale = []
    if not args.types:  # the class defaults that read_config fills in, for every type at once
        text = class_defaults_text()
        if args.check:
            if not CLASS_DEFAULTS.is_file() or CLASS_DEFAULTS.read_text() != text:
                stale.append(str(CLASS_DEFAULTS.relative_to(ROOT)))
        else:
            CLASS_DEFAULTS.write_text(text)
    for model_type in args.types or types():
        config, truth = OUT / "configs" / f"{model_type}.json", OUT / "truth" / f"{model_type}.json"
        text = config_text(model_type)
        if args.check:
            if (
                not config.is_file()
                or config.read_text() != text
                or not truth.is_file()
                or truth.read_text() != truth_text(model_type, config)
            ):
                stale.append(model_type)
            continue
        config.parent.mkdir(parents=True, exist_ok=True)
        truth.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(text)
        truth.write_text(truth_text(model_type, config))
        print(model_type, flush=True)
    if args.check:
        n = len(args.types or types())
        print(
            f"{n - len(stale)} of {n} default-config records current"
            + (f"; stale: {', '.join(stale)} (rerun python scripts/hf_defaults.py)" if stale else "")
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
