"""Qwen2.5-Omni read whole (Qwen2_5OmniForConditionalGeneration at its class defaults, tests/hf_whole): its thinker as
qwen2_5_omni_thinker reads it, its talker and token2wav held beside it (parts/talker.py, parts/token2wav.py), each
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
CONFIG = HERE / "configs" / "qwen2_5_omni.json"


def recorded() -> list[tuple[str, int]]:
    return list(expanded(json.loads((HERE / "truth" / "qwen2_5_omni.json").read_text())["params"], 2))


def recorded_modules(prefix: str) -> dict[str, int]:
    """The record's parameters under ``prefix`` by module: the talker's layers as one per sublayer, the rest by their
    first module's name (the DiT's input embedding by its two children)."""
    out: dict[str, int] = {}
    for name, n in recorded():
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :].removeprefix("model.")
        rest = re.sub(r"^layers\.\d+\.(self_attn|mlp)\..*", r"layers.\1", rest)
        rest = re.sub(r"^layers\.\d+\.\w+layernorm\..*", "layers.norms", rest)
        rest = re.sub(r"^code2wav_dit_model\.(input_embed\.\w+|\w+)\..*", r"dit.\1", rest)
        rest = re.sub(r"^code2wav_bigvgan_model\.(\w+)\..*", r"bigvgan.\1", rest)
        rest = re.sub(r"^(\w+)\.(weight|bias)$", r"\1", rest)
        out[rest] = out.get(rest, 0) + n
    return out


def ours(prefix: str) -> dict[str, int]:
    _, model = hf.load(CONFIG)
    out: dict[str, int] = {}
    for t in terms(model, 8, partial=True):
        if t.component.startswith(prefix):
            out[t.component[len(prefix) :]] = out.get(t.component[len(prefix) :], 0) + t.numel * t.stored_count
    return out


def test_talker_parameters_by_hand():
    """Qwen2_5OmniTalkerConfig's defaults: width 3,584 (embedding_size too), 28 Qwen2 layers of 28 heads and 4 KV heads
    of 128, MLP 18,944, a codec vocabulary of 8,448: thinker_to_talker_proj with a bias, the codec table, q, k, v with
    biases and o without, gate, up and down without, two RMSNorms a layer, the final RMSNorm, codec_head untied."""
    h, e, n, a, k, d, f, v = 3584, 3584, 28, 28, 4, 128, 18944, 8448
    hand = {
        "thinker_to_talker_proj": e * h + h,
        "embed_tokens": v * e,
        "layers.self_attn": n * ((h * a * d + a * d) + 2 * (h * k * d + k * d) + a * d * h),
        "layers.mlp": n * 3 * h * f,
        "layers.norms": n * 2 * h,
        "norm": h,
        "codec_head": h * v,
    }
    assert sum(hand.values()) == 6_599_025_664
    assert recorded_modules("talker.") == hand
    assert ours("talker.") == hand


def test_token2wav_parameters_by_hand():
    """Qwen2_5OmniDiTConfig's and Qwen2_5OmniBigVGANConfig's defaults. DiT: width 1,024, 22 layers of 16 heads of 64, MLP
    2 × 1,024; the time MLP (256 → 1,024 → 1,024), a codec table of 8,194 rows of 512, the input projection over 80 mel
    + 128 speaker + 192 speaker-embedding + 512 codec features; ECAPA-TDNN: a TDNN 80 → 256 of kernel 5, three
    SE-Res2Net blocks at 256 (tdnn1, one 128-channel convolution of kernel 3, tdnn2, squeeze to 64 and back), mfa
    768 → 768, attentive pooling 2,304 → 64 → 768, fc 1,536 → 128; each layer's AdaLayerNormZero (1,024 → 6,144),
    q, k, v, out, the MLP; norm_out (1,024 → 2,048), proj_out (1,024 → 80); every one with a bias. BigVGAN: conv_pre 80
    → 1,536 of kernel 7, six transposed convolutions halving the channels (kernels 11, 7, 4, 4, 4, 4), after each three
    AMP blocks (kernels 3, 7, 11: six convolutions and six SnakeBeta activations of alpha and beta each), the last
    SnakeBeta at 24 and conv_post 24 → 1 of kernel 7 without a bias."""
    D, ff = 1024, 2048
    block = (D * 6 * D + 6 * D) + 4 * (D * D + D) + (D * ff + ff) + (ff * D + D)
    res2 = (256 * 256 + 256) + (128 * 128 * 3 + 128) + (256 * 256 + 256) + (256 * 64 + 64 + 64 * 256 + 256)
    speaker = (80 * 256 * 5 + 256) + 3 * res2 + (768 * 768 + 768) + (2304 * 64 + 64 + 64 * 768 + 768) + (1536 * 128 + 128)
    dit = {
        "dit.time_embed": (256 * D + D) + (D * D + D),
        "dit.text_embed": 8194 * 512,
        "dit.input_embed.proj": (80 + 128 + 192 + 512) * D + D,
        "dit.input_embed.spk_encoder": speaker,
        "dit.transformer_blocks": 22 * block,
        "dit.norm_out": D * 2 * D + 2 * D,
        "dit.proj_out": D * 80 + 80,
    }
    channels = [1536, 768, 384, 192, 96, 48, 24]
    ups = sum(channels[i] * channels[i + 1] * kernel + channels[i + 1] for i, kernel in enumerate([11, 7, 4, 4, 4, 4]))
    amp = sum(6 * (w * w * kernel + w) + 6 * 2 * w for w in channels[1:] for kernel in (3, 7, 11))
    bigvgan = {
        "bigvgan.conv_pre": 80 * 1536 * 7 + 1536,
        "bigvgan.ups": ups,
        "bigvgan.resblocks": amp,
        "bigvgan.activation_post": 2 * 24,
        "bigvgan.conv_post": 24 * 7,
    }
    hand = {**dit, **bigvgan}
    assert speaker == 1_729_280 and sum(hand.values()) == 449_051_264
    assert recorded_modules("token2wav.") == hand
    assert ours("token2wav.") == hand


def test_whole_is_the_thinker_talker_and_token2wav():
    """The whole class's total, whose thinker is qwen2_5_omni_thinker's (the same thinker_config): the talker and
    token2wav add their parameters and none of the FLOPs of a forward over the thinker's tokens, as the count says."""
    thinker = HERE / "configs" / "qwen2_5_omni_thinker.json"
    assert json.loads(CONFIG.read_text())["thinker_config"] == json.loads(thinker.read_text())
    total = sum(n for _, n in recorded())
    held = sum(n for name, n in recorded() if name.startswith(("talker.", "token2wav.")))
    _, model = hf.load(CONFIG)
    assert tally(model).params == total == 18_386_365_824
    assert tally(hf.load(thinker)[1]).params == total - held
    whole, alone = ffncalc.count(str(CONFIG), seq_len=1024), ffncalc.count(str(thinker), seq_len=1024)
    assert whole.to_dict()["totals"]["forward_flops"] == alone.to_dict()["totals"]["forward_flops"]
    notes = " ".join(whole.to_dict()["notes"])
    assert "talker: 6,599,025,664 parameters counted, its work not charged" in notes
    assert "token2wav: its DiT's and BigVGAN's parameters counted, their work not charged" in notes


def test_a_config_of_its_model_type_alone_is_the_class_defaults(tmp_path):
    """A config.json stating nothing but its model_type counts as Qwen2_5OmniConfig() builds it: every sub-config at
    its class's defaults."""
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "qwen2_5_omni"}')
    assert tally(hf.load(path)[1]).params == sum(n for _, n in recorded())


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d.update(thinker_config=3), "thinker_config: expected an object"),
        (lambda d: d["token2wav_config"]["dit_config"].update(enc_kernel_sizes=[5, 3]), "enc_channels"),
        (lambda d: d["token2wav_config"]["bigvgan_config"].update(upsample_rates="x"), "upsample_rates"),
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
    """A small talker (width 64, embedding 48, 2 layers of 4 heads and 2 KV heads of 16, MLP 96, 100 codes) read from
    a qwen2_5_omni config: one decode step of Qwen2_5OmniTalkerForConditionalGeneration's modules (thinker_to_talker_proj,
    the model over its cache of context − 1 positions, codec_head), eager attention, as FlopCounterMode counts it; and
    by hand: 2 × (48·64 + 2 · (64·64 + 2·64·32 + 64·64 + 3·64·96 + 2·64·context) + 64·100)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import DynamicCache
    from transformers.models.qwen2_5_omni.configuration_qwen2_5_omni import Qwen2_5OmniTalkerConfig
    from transformers.models.qwen2_5_omni.modeling_qwen2_5_omni import Qwen2_5OmniTalkerForConditionalGeneration

    from ffncalc.parts.talker import Talker

    small = {"hidden_size": 64, "embedding_size": 48, "intermediate_size": 96, "num_hidden_layers": 2}
    small |= {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100}
    data = json.loads(CONFIG.read_text())
    data["talker_config"] = {**data["talker_config"], **small}
    (tmp_path / "config.json").write_text(json.dumps(data))
    (talker,) = [p for p in hf.load(tmp_path / "config.json")[1].parts if isinstance(p, Talker)]
    hand = 2 * (48 * 64 + 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 96 + 2 * 64 * context) + 64 * 100)
    assert talker.token_flops(context) == hand

    rope = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]}  # 8 frequencies of a 16-wide head
    config = Qwen2_5OmniTalkerConfig(**small, rope_parameters=rope)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = Qwen2_5OmniTalkerForConditionalGeneration(config).eval()
    cache = DynamicCache(config=config)
    with torch.no_grad():
        if context > 1:  # the cache of the positions before it
            before = model.thinker_to_talker_proj(torch.randn(1, context - 1, 48))
            positions = torch.arange(context - 1).view(1, 1, -1).expand(3, 1, -1)
            model.model(inputs_embeds=before, past_key_values=cache, use_cache=True, position_ids=positions)
        with FlopCounterMode(display=False) as counter:
            step = model.thinker_to_talker_proj(torch.randn(1, 1, 48))
            out = model.model(
                inputs_embeds=step, past_key_values=cache, use_cache=True, position_ids=torch.full((3, 1, 1), context - 1)
            )
            model.codec_head(out.last_hidden_state)
    assert counter.get_total_flops() == hand
