"""Qwen3-Omni read whole (Qwen3OmniMoeForConditionalGeneration at its class defaults repaired as scripts/hf_whole.py
records, tests/hf_whole, and at Qwen3-Omni-30B-A3B-Instruct's config): its thinker as qwen3_omni_moe_thinker reads it,
its MoE talker with its code predictor and its code2wav held beside it (parts/moe_talker.py, parts/code2wav.py), each
module's parameters derived by hand and equal to what transformers built; the talker's FLOPs a codec token as
FlopCounterMode counts a decode step of the class, built small."""

import json
import re
from pathlib import Path

import pytest

import ffncalc
from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.errors import InputError
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "qwen3_omni_moe.json"
RELEASED = HERE / "public" / "qwen3-omni-30b-a3b-instruct.json"
RECORDS = {CONFIG: HERE / "truth" / "qwen3_omni_moe.json", RELEASED: HERE / "public_truth" / "qwen3-omni-30b-a3b-instruct.json"}


def recorded(config: Path = CONFIG) -> list[tuple[str, int]]:
    return list(expanded(json.loads(RECORDS[config].read_text())["params"], 2))


def recorded_modules(prefix: str, config: Path = CONFIG) -> dict[str, int]:
    """The record's parameters under ``prefix`` by module: the layers of the talker, its code predictor and code2wav's
    transformer as one per sublayer (their norms and layer scales together), the upsampling stages and the decoder's
    blocks as one, the rest by their first module's name."""
    out: dict[str, int] = {}
    for name, n in recorded(config):
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :].replace("model.", "").replace("pre_transformer.", "transformer.")
        rest = re.sub(r"layers\.\d+\.(self_attn|mlp)\..*", r"layers.\1", rest)
        rest = re.sub(r"layers\.\d+\.\w+layernorm\..*", "layers.norms", rest)
        rest = re.sub(r"layers\.\d+\.\w+layer_scale\..*", "layers.layer_scale", rest)
        rest = re.sub(r"^upsample\.\d+\.0\..*", "upsample.convs", rest)
        rest = re.sub(r"^upsample\.\d+\.1\..*", "upsample.convnext", rest)
        rest = re.sub(r"^decoder\.\d+\.block\..*", "decoder.blocks", rest)
        rest = re.sub(r"^decoder\.\d+\.conv\..*", "decoder.convs", rest)
        rest = re.sub(r"^decoder\.\d+\.(alpha|beta)$", "decoder.activation_post", rest)
        if re.search(r"\.(weight|bias)$", rest):  # a module of its own: by its name (within the code predictor's)
            rest = re.sub(r"^((?:code_predictor|transformer)\.)?(\w+)\..*", r"\1\2", rest)
        rest = rest.replace("transformer.layers.", "transformer.")
        out[rest] = out.get(rest, 0) + n
    return out


def ours(prefix: str, config: Path = CONFIG) -> dict[str, int]:
    _, model = hf.load(config)
    out: dict[str, int] = {}
    for t in terms(model, 8, partial=True):
        if t.component.startswith(prefix):
            out[t.component[len(prefix) :]] = out.get(t.component[len(prefix) :], 0) + t.numel * t.stored_count
    return out


def talker_by_hand(d: int, groups: int) -> dict[str, int]:
    """Qwen3OmniMoeTalkerTextConfig's defaults with the repair's shared expert of 768 (and the released talker's): width
    1,024, 20 layers of 16 heads of d and 2 KV heads, 128 experts of 384, a codec vocabulary of 3,072; the projections
    2,048 → 2,048 → 1,024 with biases; the code predictor: 5 layers of width 1,024, 16 heads and 8 KV heads of 128, MLP
    3,072, ``groups`` − 1 tables and heads of 2,048 codes."""
    h, L, q, kv, E, m, s, V = 1024, 20, 16 * d, 2 * d, 128, 384, 768, 3072
    projection = 2048 * 2048 + 2048 + 2048 * h + h
    c, n, pq, pkv, f, W = 1024, 5, 16 * 128, 8 * 128, 3072, 2048
    return {
        "text_projection": projection,
        "hidden_projection": projection,
        "codec_embedding": V * h,
        "layers.self_attn": L * (h * q + 2 * h * kv + q * h + 2 * d),
        "layers.mlp": L * (E * h + E * (2 * m * h + h * m) + 3 * h * s + h),
        "layers.norms": L * 2 * h,
        "norm": h,
        "codec_head": h * V,
        "code_predictor.layers.self_attn": n * (c * pq + 2 * c * pkv + pq * c + 2 * 128),
        "code_predictor.layers.mlp": n * 3 * c * f,
        "code_predictor.layers.norms": n * 2 * c,
        "code_predictor.norm": c,
        "code_predictor.codec_embedding": (groups - 1) * W * c,
        "code_predictor.lm_head": (groups - 1) * c * W,
    }


def test_talker_parameters_by_hand():
    """At the repaired defaults: the talker's head_dim is 1,024 / 16 = 64 (its configuration class declares none), 32
    codebooks; and at the released config: heads of 128 and 16 codebooks."""
    hand = talker_by_hand(64, 32)
    assert sum(hand.values()) == 3_344_516_864
    assert recorded_modules("talker.") == hand
    assert ours("talker.") == hand
    released = talker_by_hand(128, 16)
    assert sum(released.values()) == 3_324_596_480
    assert recorded_modules("talker.", RELEASED) == released
    assert ours("talker.", RELEASED) == released


def test_code2wav_parameters_by_hand():
    """Qwen3OmniMoeCode2WavConfig's defaults (the released code2wav's too): a table of 16 × 2,048 codes of 1,024; 8
    layers of width 1,024, 16 heads and 16 KV heads of 64, MLP 3,072, two RMSNorms and two layer scales each, the final
    RMSNorm; two upsampling stages (a transposed convolution of kernel 2 with a bias, a ConvNeXt block: depthwise kernel 7,
    LayerNorm, 1,024 → 4,096 → 1,024, gamma); the decoder: 1,024 → 1,536 of kernel 7, four blocks at 1,536 → 768 → 384 →
    192 → 96 (rates 8, 5, 4, 3: a SnakeBeta, a transposed convolution of kernel 2·rate, three residual units of two
    SnakeBetas, a convolution of kernel 7 and one of kernel 1), a SnakeBeta of 96 and 96 → 1 of kernel 7."""
    H = 1024
    convnext = (H * 7 + H) + 2 * H + (H * 4 * H + 4 * H) + (4 * H * H + H) + H
    widths, rates = [1536, 768, 384, 192, 96], [8, 5, 4, 3]
    unit = [2 * 2 * w + (w * w * 7 + w) + (w * w + w) for w in widths]
    blocks = sum(2 * widths[i] + widths[i] * widths[i + 1] * 2 * r + widths[i + 1] + 3 * unit[i + 1] for i, r in enumerate(rates))
    hand = {
        "code_embedding": 16 * 2048 * H,
        "transformer.self_attn": 8 * 4 * H * H,
        "transformer.mlp": 8 * 3 * H * 3072,
        "transformer.norms": 8 * 2 * H,
        "transformer.layer_scale": 8 * 2 * H,
        "transformer.norm": H,
        "upsample.convs": 2 * (H * H * 2 + H),
        "upsample.convnext": 2 * convnext,
        "decoder.convs": (H * 1536 * 7 + 1536) + (96 * 7 + 1),
        "decoder.blocks": blocks,
        "decoder.activation_post": 2 * 96,
    }
    assert sum(hand.values()) == 216_016_577
    for config in (CONFIG, RELEASED):
        assert recorded_modules("code2wav.", config) == hand
        assert ours("code2wav.", config) == hand


def test_whole_is_the_thinker_talker_and_code2wav():
    """The whole class's total, whose thinker is qwen3_omni_moe_thinker's (the same thinker_config): the talker and
    code2wav add their parameters and none of the FLOPs of a forward over the thinker's tokens, as the count says."""
    thinker = HERE / "configs" / "qwen3_omni_moe_thinker.json"
    assert json.loads(CONFIG.read_text())["thinker_config"] == json.loads(thinker.read_text())
    total = sum(n for _, n in recorded())
    held = sum(n for name, n in recorded() if name.startswith(("talker.", "code2wav.")))
    _, model = hf.load(CONFIG)
    assert tally(model).params == total == 21_978_863_145
    assert held == 3_344_516_864 + 216_016_577
    assert tally(hf.load(thinker)[1]).params == total - held
    whole, alone = ffncalc.count(str(CONFIG), seq_len=1024), ffncalc.count(str(thinker), seq_len=1024)
    assert whole.to_dict()["totals"]["forward_flops"] == alone.to_dict()["totals"]["forward_flops"]
    notes = " ".join(whole.to_dict()["notes"])
    assert "talker: 3,344,516,864 parameters counted (its code predictor's included), its work not charged" in notes
    assert "code2wav: its transformer's and convolutional decoder's parameters counted, their work not charged" in notes


def test_released_model_total():
    """Qwen3-Omni-30B-A3B-Instruct as transformers builds it: 35,259,818,545 parameters, of which the talker's
    3,324,596,480 and code2wav's 216,016,577."""
    assert tally(hf.load(RELEASED)[1]).params == sum(n for _, n in recorded(RELEASED)) == 35_259_818_545


def test_without_audio_output_the_class_is_its_thinker(tmp_path):
    """enable_audio_output false: Qwen3OmniMoeForConditionalGeneration builds neither the talker nor code2wav."""
    data = json.loads(CONFIG.read_text())
    data["enable_audio_output"] = False
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    held = sum(n for name, n in recorded() if name.startswith(("talker.", "code2wav.")))
    assert tally(hf.load(path)[1]).params == sum(n for _, n in recorded()) - held


def test_a_tied_talker_shares_its_codec_table(tmp_path):
    """The talker config's tie_word_embeddings true: Qwen3OmniMoeTalkerForConditionalGeneration's _tied_weights_keys tie
    codec_head to model.codec_embedding, 1,024 × 3,072 parameters fewer."""
    data = json.loads(CONFIG.read_text())
    data["talker_config"]["tie_word_embeddings"] = True
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    assert tally(hf.load(path)[1]).params == sum(n for _, n in recorded()) - 1024 * 3072
    assert "codec_head" not in ours("talker.", path)


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d["talker_config"]["text_config"].pop("shared_expert_intermediate_size"), "shared_expert_intermediate_size"),
        (lambda d: d.update(talker_config=3), "talker_config: expected an object"),
        (lambda d: d["code2wav_config"].update(upsample_rates="x"), "upsample_rates"),
        (lambda d: d.update(enable_audio_output="yes"), "enable_audio_output"),
        (lambda d: d["talker_config"]["code_predictor_config"].update(tie_word_embeddings=True), "tie_word_embeddings"),
    ],
)
def test_bad_sub_configs_are_one_line_naming_the_field(tmp_path, cli, edit, words):
    data = json.loads(CONFIG.read_text())
    edit(data)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=words) as exc:
        hf.load(path)
    assert "\n" not in str(exc.value)
    code, _, err = cli("count", str(path))
    assert code == 2 and words in err and "Traceback" not in err


@pytest.mark.torch
@pytest.mark.parametrize("context", [1, 9])
def test_talker_codec_token_flops_equal_flopcountermode(tmp_path, context):
    """A small talker (width 64, 2 layers of 4 heads and 2 KV heads of 16, 4 experts of 24 choosing 2, a shared expert
    of 40, 100 codes) read from a qwen3_omni_moe config: one decode step of Qwen3OmniMoeTalkerForConditionalGeneration's
    model over its cache of context − 1 positions and codec_head, eager attention and experts, as FlopCounterMode counts
    it; and by hand: 2 × (2 · (64·64 + 2·64·32 + 64·64 + 2·64·context + 4·64 + 2·3·64·24 + 3·64·40 + 64) + 64·100)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import DynamicCache
    from transformers.models.qwen3_omni_moe.configuration_qwen3_omni_moe import Qwen3OmniMoeTalkerTextConfig
    from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeTalkerModel

    from ffncalc.parts.moe_talker import MoeTalker

    small = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}
    small |= {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 24, "shared_expert_intermediate_size": 40}
    small |= {"vocab_size": 100}
    data = json.loads(CONFIG.read_text())
    data["talker_config"]["text_config"] = {**data["talker_config"]["text_config"], **small}
    data["talker_config"]["text_config"].pop("num_local_experts")
    (tmp_path / "config.json").write_text(json.dumps(data))
    (talker,) = [p for p in hf.load(tmp_path / "config.json")[1].parts if isinstance(p, MoeTalker)]
    layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 64 * context + 4 * 64 + 2 * 3 * 64 * 24 + 3 * 64 * 40 + 64
    hand = 2 * (2 * layer + 64 * 100)
    assert talker.token_flops(context) == hand

    rope = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3], "interleaved": True}
    config = Qwen3OmniMoeTalkerTextConfig(**small, rope_parameters=rope)
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"
    torch.manual_seed(0)
    model = Qwen3OmniMoeTalkerModel(config).eval()
    head = torch.nn.Linear(64, 100, bias=False)
    cache = DynamicCache(config=config)
    with torch.no_grad():
        if context > 1:  # the cache of the positions before it
            positions = torch.arange(context - 1).view(1, 1, -1).expand(3, 1, -1)
            model(inputs_embeds=torch.randn(1, context - 1, 64), past_key_values=cache, use_cache=True, position_ids=positions)
        with FlopCounterMode(display=False) as counter:
            out = model(
                inputs_embeds=torch.randn(1, 1, 64),
                past_key_values=cache,
                use_cache=True,
                position_ids=torch.full((3, 1, 1), context - 1),
            )
            head(out.last_hidden_state)
    assert counter.get_total_flops() == hand
