"""Gemma 3n (gemma3n) read whole: its MobileNetV5 vision tower (parts/mobilenet_v5.py), its audio tower and both
embedders (parts/gemma3n_audio.py) beside its language model, by hand and against what transformers builds
(tests/hf_whole, recorded by scripts/hf_whole.py)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.records import expanded
from ffncalc.model.terms import Emitter
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "gemma3n.json"
TRUTH = json.loads((HERE / "truth" / "gemma3n.json").read_text())


def recorded(prefix: str) -> int:
    """The recorded class's parameters under ``prefix``."""
    return sum(n for name, n in expanded(TRUTH["params"], 2) if name.startswith(prefix))


def audio_part(seconds=0):
    from ffncalc.parts.gemma3n_audio import Gemma3nAudio
    from ffncalc.sources.hf.towers.gemma3n import gemma3n_audio

    return Gemma3nAudio(**gemma3n_audio(hf.read_config(CONFIG).outer), seconds=seconds)


def text_model():
    return hf.load(CONFIG)[1]


def counted(part, model) -> dict[str, int]:
    """Our parameters by component (the part's terms at the input)."""
    e = Emitter("layers")
    part.input_terms(e, model, 1024)
    out: dict[str, int] = {}
    for t in e.out:
        name = t.name.removesuffix(".weight")
        out[name] = out.get(name, 0) + t.numel * t.count
    return out


def test_gemma3n_audio_tower_and_embedders_by_hand():
    """Gemma3nAudioConfig's defaults, width 1,536, 8 heads of 192. The subsampler: conv_0 (1 → 128 over 3 × 3) and its
    group norm's weight, conv_1 (128 → 32 over 3 × 3) and its norm, input_proj_linear from 32 channels × 32 bins left of
    128 (two halvings) to the width. A Conformer block: two feed-forwards, each two RMSNorms and Linear(w, 4w),
    Linear(4w, w); the attention's two norms, per_dim_scale (192), q, k, v, pos_proj and post (w × w each); lconv1d's
    two norms, linear_start (w → 2w), a depthwise kernel of 5 a channel, linear_end (w × w); the block's norm. The
    embedders (Gemma3nMultimodalEmbedder): a table of 128 rows of the tower's width, two RMSNorms with weights, a
    projection to the text's 2,048 (the post-projection norm has no weight): the vision tower's 2,048 wide, the
    audio's 1,536."""
    w = 1536
    subsampler = 128 * 9 + 128 + 32 * 128 * 9 + 32 + 32 * 32 * w
    feed_forward = 2 * w + 2 * 4 * w * w
    attention = 2 * w + 192 + 5 * w * w
    lconv = 2 * w + 2 * w * w + 5 * w + w * w
    block = 2 * feed_forward + attention + lconv + w
    assert (subsampler, block) == (1_611_040, 56_644_800)
    tower = subsampler + 12 * block
    assert tower == 681_348_640 == recorded("model.audio_tower.")

    def embedder(width: int) -> int:
        return 128 * width + 2 * width + width * 2048

    assert (embedder(2048), embedder(w)) == (4_460_544, 3_345_408)
    assert embedder(2048) == recorded("model.embed_vision.") and embedder(w) == recorded("model.embed_audio.")
    ours = counted(audio_part(), text_model())
    assert sum(n for k, n in ours.items() if not k.startswith("audio.projector.")) == tower
    assert sum(n for k, n in ours.items() if k.startswith("audio.projector.")) == embedder(w)


def test_gemma3n_audio_components_equal_transformers_by_name():
    """Every parameter of the recorded audio tower and embed_audio, named by its module, equal per component to ours."""
    from ffncalc.sources.hf.towers.gemma3n import gemma3n_component

    theirs: dict[str, int] = {}
    for name, n in expanded(TRUTH["params"], 2):
        if name.startswith(("model.audio_tower.", "model.embed_audio.")):
            found = gemma3n_component(name)
            theirs[found] = theirs.get(found, 0) + n
    assert not any(k.startswith("(unmatched)") for k in theirs)
    ours = {k: n for k, n in counted(audio_part(), text_model()).items() if n}
    assert ours == theirs


def clip_macs(frames: int) -> int:
    """One clip's multiply-adds by hand: conv_0 over ⌈frames / 2⌉ × 64 cells (9 inputs, 128 channels out), conv_1 over
    T = ⌈⌈frames / 2⌉ / 2⌉ × 32 cells (9 × 128 in, 32 out), input_proj_linear over T positions; each of 12 blocks: two
    feed-forwards (2 × w × 4w a position), q, k, v and post (w² each), pos_proj over the 13 relative positions once,
    linear_start (2w²), the depthwise taps (5w), linear_end (w²) a position, and over the ⌈T / 12⌉ blocks of 12 queries
    (the last padded) the content scores against 24 keys, the position scores against 13 offsets and the values of 24
    keys, 8 heads of 192; then every 4th position's embedding projection (w × 2,048)."""
    w, heads, head_dim = 1536, 8, 192
    t1 = (frames - 1) // 2 + 1
    t = (t1 - 1) // 2 + 1
    queries = -(-t // 12) * 12
    front = t1 * 64 * 128 * 9 + t * 32 * 32 * 128 * 9 + t * 1024 * w
    block = t * (2 * 8 * w * w + 4 * w * w + 2 * w * w + 5 * w + w * w) + 13 * w * w
    block += heads * queries * (24 + 13 + 24) * head_dim
    return front + 12 * block + -(-t // 4) * w * 2048


def test_gemma3n_audio_clip_flops_equal_flopcountermode():
    """A 30-s clip (2,997 frames: 750 positions, 188 soft tokens) and a 10-s one (997: 250 positions, 63 tokens) through
    the tower and embed_audio, as FlopCounterMode counted the whole class's get_audio_features, and by hand."""
    from ffncalc.parts.gemma3n_audio import MAX_SAMPLES, frames_of

    record = TRUTH["audio_clip_flops"]
    assert [r["frames"] for r in record["runs"]] == [frames_of(MAX_SAMPLES), frames_of(MAX_SAMPLES // 3)] == [2997, 997]
    part, model = audio_part(), text_model()
    for run in record["runs"]:
        assert part.clip_flops(model, run["frames"]) == run["total"] == 2 * clip_macs(run["frames"])


def test_gemma3n_audio_of_any_length_is_clips_of_30_s():
    """Audio a sequence is clips of 30 s (the feature extractor's max_length), the last shorter, each 188 tokens of the
    language model; its FLOPs a sequence are its clips'."""
    from fractions import Fraction

    from ffncalc.analysis.count import core_flops

    part, model = audio_part(seconds=70), text_model()
    assert part.clips() == [2997, 2997, 997] and part.request_tokens() == 3 * 188
    e = Emitter("layers")
    part.input_terms(e, model, 4096)
    flops = sum(core_flops(t, "full") * t.positions if t.role == "core" else 2 * t.macs * t.positions for t in e.out)
    assert flops * 4096 == 2 * part.clip_flops(model, 2997) + part.clip_flops(model, 997)
    assert sum(t.numel * t.count for t in e.out) == 681_348_640 + 3_345_408
    assert all(t.per_sequence and t.positions == Fraction(0) for t in counted_terms(audio_part(), model))


def counted_terms(part, model):
    e = Emitter("layers")
    part.input_terms(e, model, 1024)
    return e.out


@pytest.mark.torch
def test_gemma3n_audio_verifies_two_clips():
    """The reference modules (one text layer kept) hold the audio tower's and embedder's parameters and run 40 s of
    audio, a 30-s and a 10-s clip, to the count's FLOPs, component by component."""
    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model

    stack = text_model()
    m = with_inputs(Model("gemma3n", replace(stack, layers=stack.layers[:1])), audio_seconds=40)
    report = verify(m.stack, model="gemma3n", seq_len=256)
    assert report.ok, [(c.component, c.analytic_flops, c.torch_flops) for c in report.failures]
    assert {"audio.attn.scores", "audio.attn.positions", "audio.subsample.conv0.weight"} <= {c.component for c in report.checks}


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("sscp_conv_kernel_size", [[5, 5], [3, 3]], "sscp_conv_kernel_size: [[5, 5], [3, 3]]: the subsampler is read at"),
        ("sscp_conv_channel_size", [128], "sscp_conv_channel_size: [128]: two positive channel counts"),
        ("conf_attention_chunk_size", 0, "conf_attention_chunk_size: expected a positive integer"),
    ],
)
def test_gemma3n_audio_shapes_not_read_are_one_line(tmp_path, key, value, words):
    from ffncalc.errors import InputError
    from ffncalc.sources.hf.towers.gemma3n import gemma3n_audio

    data = json.loads(CONFIG.read_text())
    data["audio_config"][key] = value
    (tmp_path / "config.json").write_text(json.dumps(data, indent=1))
    with pytest.raises(InputError) as exc:
        gemma3n_audio(hf.read_config(tmp_path / "config.json").outer)
    assert words in str(exc.value) and "\n" not in str(exc.value)


# mobilenetv5_300m_enc's blocks as timm's _gen_mobilenet_v5 lists them, a stage a list
STAGES = [
    ["er_k3_s2_e4_c128"] + ["er_k3_s1_e4_c128"] * 2,
    ["uir_a3_k5_s2_e6_c256", "uir_a5_k0_s1_e4_c256", "uir_a3_k0_s1_e4_c256", "uir_a5_k0_s1_e4_c256", "uir_a3_k0_s1_e4_c256"],
    ["uir_a5_k5_s2_e6_c640"]
    + ["uir_a5_k0_s1_e4_c640"] * 7
    + ["uir_a0_k0_s1_e1_c640"]
    + ["mqa_k3_h12_v2_s1_d64_c640", "uir_a0_k0_s1_e2_c640"] * 14,
    ["uir_a5_k5_s2_e6_c1280"] + ["mqa_k3_h16_s1_d96_c1280", "uir_a0_k0_s1_e2_c1280"] * 19,
]


def options(code: str) -> tuple[str, dict[str, int]]:
    kind, *rest = code.split("_")
    return kind, {part[0]: int(part[1:]) for part in rest}


def tower_by_hand(size: int) -> tuple[list[int], int]:
    """Each stage's parameters and one image's multiply-adds. The stem: Conv2d(3, 64, 3 × 3, stride 2) with a bias and
    an RMSNorm. EdgeResidual (c → c·e → out): a k × k convolution of the block's stride, a norm, a 1 × 1 convolution, a
    norm. UIR: a depthwise a × a convolution and a norm (a > 0), 1 × 1 to c·e and a norm, a depthwise k × k convolution of
    the block's stride and a norm (k > 0), 1 × 1 to out and a norm, a layer scale. MQA (h heads of d): a norm, a 1 × 1
    query projection to h·d, keys and values each a depthwise 3 × 3 convolution of stride v and a norm (v = 2), then
    1 × 1 to d; h heads' scores and values over every query-key pair; a 1 × 1 output back; a layer scale. Stride-2
    layers halve the side (768 → 384 → 192 → 96 → 48 → 24). The fusion adapter over the last two stages' 640 + 1,280
    channels at the earlier's side: 1 × 1 to 3,840 and a norm, 1 × 1 to 2,048 and a norm, pooled to 16 × 16, a norm."""
    side = size // 2
    macs, c, params, ends = side * side * 64 * 27, 64, [], []
    for stage in STAGES:
        n = 0
        for code in stage:
            kind, o = options(code)
            out = o["c"]
            if kind == "er":
                mid = c * o["e"]
                side //= o["s"]
                n += c * mid * 9 + mid + mid * out + out
                macs += side * side * (c * mid * 9 + mid * out)
            elif kind == "uir":
                mid = c * o["e"]
                if o["a"]:
                    n += o["a"] ** 2 * c + c
                    macs += side * side * o["a"] ** 2 * c
                n += c * mid + mid
                macs += side * side * c * mid
                if o["k"]:
                    side //= o["s"]
                    n += o["k"] ** 2 * mid + mid
                    macs += side * side * o["k"] ** 2 * mid
                n += mid * out + out + out
                macs += side * side * mid * out
            else:
                h, d, v = o["h"], o["d"], o["v"] if "v" in o else 1
                p, kv = side * side, (side // v) ** 2
                n += c + c * h * d + 2 * (c * d + (9 * c + c if v > 1 else 0)) + h * d * c + c
                macs += p * c * h * d + 2 * kv * (c * d + (9 * c if v > 1 else 0)) + 2 * h * p * kv * d + p * h * d * c
            c = out
        params.append(n)
        ends.append((c, side))
    p = ends[-2][1] ** 2
    msfa = 1920 * 3840 + 3840 + 3840 * 2048 + 2048 + 2048
    macs += p * (1920 * 3840 + 3840 * 2048)
    return [64 * 27 + 64 + 64, *params, msfa], macs


def test_gemma3n_vision_tower_by_hand():
    """mobilenetv5_300m_enc through TimmWrapperModel: the stem's 1,856, the four stages' 278,880,000 and the fusion
    adapter's 15,245,056 parameters, as the recorded class holds them under timm's names, and ours."""
    stem, *stages, msfa = tower_by_hand(768)[0]
    assert (stem, sum(stages), msfa) == (1_856, 278_880_000, 15_245_056)
    timm = "model.vision_tower.timm_model."
    assert recorded(timm + "conv_stem.") == stem and recorded(timm + "msfa.") == msfa
    assert [recorded(f"{timm}blocks.{i}.") for i in range(4)] == stages
    from ffncalc.analysis.count import terms

    ours: dict[str, int] = {}
    for t in terms(text_model(), 8, partial=True):
        if t.component.startswith("vision.") and not t.component.startswith("vision.projector."):
            key = t.component.split(".")[1]
            ours[key] = ours.get(key, 0) + t.numel * t.stored_count
    assert ours == {"stem": stem, **{f"stage{i}": n for i, n in enumerate(stages)}, "msfa": msfa}


def test_gemma3n_whole_by_hand():
    """The whole class: the language model (recorded as transformers builds it), the two towers and the two embedders;
    and the count of gemma3n's config.json equal to it."""
    from ffncalc.analysis.count import tally

    vision, audio, embedders = 294_126_912, 681_348_640, 4_460_544 + 3_345_408
    assert sum(tower_by_hand(768)[0]) == vision
    text = recorded("model.language_model.") + recorded("lm_head.")
    assert text + vision + audio + embedders == sum(n for _, n in expanded(TRUTH["params"], 2)) == 7_818_517_072
    assert tally(text_model()).params == 7_818_517_072


def test_gemma3n_image_flops_equal_flopcountermode():
    """One image of 768 and of 512 pixels (48 and 32 positions a side before the fusion adapter, pooled to 16 × 16 soft
    tokens) through the tower and embed_vision, as FlopCounterMode counted get_image_features, and by hand: the tower's
    multiply-adds and 256 soft tokens through Linear(2,048, 2,048)."""
    from ffncalc.parts.vision import Vision

    (vision,) = [p for p in text_model().parts if isinstance(p, Vision)]
    runs = TRUTH["image_flops"]["runs"]
    assert [r["size"] for r in runs] == [768, 512]
    for run in runs:
        by_hand = 2 * (tower_by_hand(run["size"])[1] + 256 * 2048 * 2048)
        assert replace(vision, image_size=run["size"]).per_image(text_model())[:2] == (256, run["total"]) == (256, by_hand)


@pytest.mark.torch
def test_gemma3n_verifies_an_image_and_audio_together():
    """The reference modules (one text layer kept) run a 768-pixel image through the MobileNetV5 and embed_vision and
    30 s of audio through the audio tower and embed_audio, each component's FLOPs the count's."""
    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model

    stack = text_model()
    m = with_inputs(Model("gemma3n", replace(stack, layers=stack.layers[:1])), images=1, audio_seconds=30)
    report = verify(m.stack, model="gemma3n", seq_len=512)
    assert report.ok, [(c.component, c.analytic_flops, c.torch_flops) for c in report.failures]
    names = {c.component for c in report.checks}
    assert {"vision.stage2.mqa.scores", "vision.msfa.pw_exp.weight", "vision.projector.linear.weight"} <= names


def test_gemma3n_count_takes_images_and_audio(cli):
    """count with an image and audio: each adds its tokens (256 an image, 188 a clip) and its FLOPs to the sequence."""
    code, out, err = cli("count", str(CONFIG), "--images", "1", "--audio-seconds", "30", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    notes = " ".join(data["notes"]) if isinstance(data.get("notes"), list) else json.dumps(data)
    assert "873,630,433,280" in notes and "984,855,502,848" in notes


@pytest.mark.parametrize(
    "where, key, value, words",
    [
        ("vision_config", "architecture", "mobilenetv5_base", "architecture: 'mobilenetv5_base': a timm tower not read yet"),
        ("vision_config", "model_args", {"depth": 3}, "model_args: {'depth': 3}: MobileNetV5's towers are read"),
        ("vision_config", "hidden_size", 1024, "hidden_size: 1024: the tower's fusion adapter writes 2048 channels"),
        ("", "vision_soft_tokens_per_image", 64, "vision_soft_tokens_per_image: 64: the tower writes 16 × 16 soft tokens"),
    ],
)
def test_gemma3n_vision_shapes_not_read_are_one_line(cli, tmp_path, where, key, value, words):
    data = json.loads(CONFIG.read_text())
    (data[where] if where else data)[key] = value
    (tmp_path / "config.json").write_text(json.dumps(data, indent=1))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1
