"""Whole multimodal models: the vision tower, its projector and the language model counted as transformers 5.23
builds the whole class (tests/hf_whole, recorded by scripts/hf_whole.py), one image's FLOPs as FlopCounterMode counts
them on that class, and the head tied by the wrapper's tie_word_embeddings."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf
from ffncalc.sources.hf import coverage
from ffncalc.sources.hf.towers import TOWER_PREFIXES, wrappers

HERE = Path(__file__).resolve().parents[1] / "hf_whole"


def truth(model_type: str) -> dict:
    return json.loads((HERE / "truth" / f"{model_type}.json").read_text())


WHOLE = sorted(t for t in wrappers() if "params" in truth(t))
TOWER = ("vision_tower", "multi_modal_projector", "image_newline")


def tower(model_type: str) -> str:
    """The part the type's wrapper puts beside its language model, as its names are read ("vision", "audio", or an
    audio tower or image tokenizer named its own way: towers.tower_of)."""
    from ffncalc.sources.hf.towers import tower_of

    return tower_of(hf.read_config(HERE / "configs" / f"{model_type}.json")) or "vision"


def part_of(component: str) -> str:
    """A component's part: the projector (and LLaVA-NeXT's newline row), the tower, or the language model."""
    if ".projector." in component or component.startswith("vision.image_newline"):
        return "projector"
    return "tower" if component.startswith(TOWER_PREFIXES) else "text"


def groups(model_type: str) -> dict[str, int]:
    """The recorded class's parameters by part: the tower, its projector, the language model and its head (the
    towers' modules by their names, sources/hf/towers)."""
    from ffncalc.sources.hf.towers import component

    kind = tower(model_type)
    out = {"tower": 0, "projector": 0, "text": 0}
    for name, n in expanded(truth(model_type)["params"], 2):
        out[part_of(component(name, kind) or "")] += n
    return out


def ours(model) -> dict[str, int]:
    out = {"tower": 0, "projector": 0, "text": 0}
    for t in terms(model, 8, partial=True):
        if not t.tied:
            out[part_of(t.component)] += t.numel * t.stored_count
    return out


def test_whole_wrappers_are_recorded():
    assert {"llava", "paligemma", "gemma3", "cohere2_vision", "aya_vision", "mistral3", "idefics3"} <= set(IMAGED)
    assert {"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "internvl"} <= set(IMAGED)
    assert {"llava", "llava_next", "vipllava", "paligemma", "gemma3", "shieldgemma2", "mistral3", "idefics3", "smolvlm"} <= set(WHOLE)
    audio = {"qwen2_audio", "voxtral", "glmasr", "audioflamingo3", "musicflamingo", "moss_transcribe_diarize", "qwen3_asr"}
    audio |= {"granite_speech", "granite_speech_plus"}
    assert audio <= set(WHOLE) and audio <= set(AUDIO)
    assert set(wrappers()) <= set(coverage.WHOLE_TYPES) | set(coverage.WHOLE_ENCODER_TYPES)


@pytest.mark.parametrize("model_type", WHOLE)
def test_whole_model_parameters_equal_transformers(model_type):
    """Tower, projector and language model each equal to what the whole class builds, and so the total."""
    _, model = hf.load(HERE / "configs" / f"{model_type}.json")
    assert ours(model) == groups(model_type)
    assert tally(model).params == sum(n for _, n in expanded(truth(model_type)["params"], 2))


IMAGED = [t for t in WHOLE if "image_flops" in truth(t)]
AUDIO = [t for t in WHOLE if "audio_flops" in truth(t)]


@pytest.mark.parametrize("model_type", AUDIO)
def test_one_audio_window_flops_equal_flopcountermode(model_type, tmp_path):
    """Whisper-built audio towers (Qwen2-Audio's, with its average pool; Voxtral's, four positions a token;
    Qwen2.5-Omni's, attending within chunks, built small on the CPU: the record's "reduced") at two window lengths: one
    window through the tower and the projector, as FlopCounterMode counted it."""
    from ffncalc.parts.audio import Audio

    record = truth(model_type)["audio_flops"]
    data = json.loads((HERE / "configs" / f"{model_type}.json").read_text())
    data = {**data, **{key: {**data[key], **value} for key, value in record.get("reduced", {}).items()}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    runs = record["runs"]
    assert len(runs) == 2
    for run in runs:
        if model_type == "qwen3_omni_moe_thinker":  # the run's frames (2 × positions) as seconds of audio, in windows
            seconds = 2 * run["positions"] // 100
            assert replace(audio, seconds=seconds).heard(model)[1] == run["total"]
        else:
            assert replace(audio, source_positions=run["positions"]).per_window(model)[1] == run["total"]


@pytest.mark.parametrize("model_type", IMAGED)
def test_one_image_flops_equal_flopcountermode(model_type, tmp_path):
    """Each tower family at two image sizes, tower and projector FLOPs of one image as FlopCounterMode counted the whole
    class's get_image_features: CLIP (LLaVA), SigLIP (PaliGemma), SigLIP with its pooling head and Gemma 3's pooled
    projector, Command A Vision's and Aya Vision's pixel shuffle and SwiGLU, Pixtral's tower and patch merger (Mistral
    3), Idefics3's shuffle, and Qwen's towers (Qwen2-VL; Qwen2.5-VL's windows, whole and cut at the edges; Qwen3-VL's
    interpolated positions and deepstack mergers), the last five built small on the CPU (the record's "reduced")."""
    from ffncalc.parts.vision import Vision

    record = truth(model_type)["image_flops"]
    data = json.loads((HERE / "configs" / f"{model_type}.json").read_text())
    data = {**data, **{key: {**data[key], **value} for key, value in record.get("reduced", {}).items()}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    assert len(record["runs"]) == 2
    for run in record["runs"]:
        assert replace(vision, image_size=run["size"]).per_image(model)[1] == run["total"]


def test_llava_image_flops_by_hand():
    """LLaVA-1.5's tower at 336 pixels: 576 patches and a class token through 24 CLIP layers of width 1024 and MLP
    4096, the patch convolution over the patches, the projector (1024 -> 4096 -> 4096) over the 576 patch tokens."""
    from ffncalc.parts.vision import Vision

    _, model = hf.load(HERE / "configs" / "llava.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    n, d, f = 577, 1024, 4096
    layer = 2 * n * (4 * d * d + 2 * d * f) + 2 * 2 * n * n * d  # q, k, v, o, fc1, fc2; QKᵀ and AV over the square
    conv = 2 * 576 * d * 3 * 14 * 14
    projector = 2 * 576 * (d * 4096 + 4096 * 4096)
    assert vision.per_image(model)[:2] == (576, 24 * layer + conv + projector)


def test_video_llava_second_tower_by_hand():
    """Video-LLaVA: two CLIP ViT-L/14 towers of the vision_config (image_tower, video_tower), each 24 layers of width
    1024 and MLP 4096 with biases, a class token, 257 positions at 224 pixels, a patch convolution without a bias,
    pre- and post-LayerNorms; an image at 224 pixels runs the image tower and the projector only (256 tokens)."""
    from ffncalc.parts.vision import Vision

    _, model = hf.load(HERE / "configs" / "video_llava.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    d, f, n = 1024, 4096, 257
    layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d
    one = 24 * layer + d * 3 * 14 * 14 + d + n * d + 2 * 2 * d  # layers, patches, class token, positions, two norms
    video = sum(t.numel * t.stored_count for t in terms(model, 8, partial=True) if t.component.startswith("vision.video_tower."))
    assert video == one == groups("video_llava")["tower"] // 2
    step = 2 * n * (4 * d * d + 2 * d * f) + 2 * 2 * n * n * d
    flops = 24 * step + 2 * 256 * d * 3 * 14 * 14 + 2 * 256 * (d * 4096 + 4096 * 4096)
    assert vision.per_image(model)[:2] == (256, flops)


def test_glmasr_window_by_hand():
    """GLM-ASR at its defaults: a 30-s window is 3,000 log-mel frames of 128 bins; conv1 (kernel 3, 128 -> 1280) over
    the frames, conv2 (kernel 3, stride 2) to 1,500 positions, 32 layers of width 1280 (q, k, v, o) and MLP 5120 with
    the full square of attention, no position table (rotary); four positions a token (its 5,120-feature reshape): 375
    tokens through Linear(5120, 4096) and Linear(4096, 2048)."""
    from ffncalc.parts.audio import Audio

    _, model = hf.load(HERE / "configs" / "glmasr.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    d, f, n, mels = 1280, 5120, 1500, 128
    layer = n * (4 * d * d + 2 * d * f) + 2 * n * n * d
    macs = 2 * n * mels * 3 * d + n * d * 3 * d + 32 * layer + 375 * (5120 * 4096 + 4096 * 2048)
    assert audio.per_window(model) == (375, 2 * macs)
    assert not any("pos_embed" in t.component for t in terms(model, 8, partial=True))


@pytest.mark.parametrize("model_type", ["audioflamingo3", "musicflamingo"])
def test_audio_flamingo_by_hand(model_type):
    """Audio Flamingo 3 and Music Flamingo at their defaults: Whisper large-v3's encoder (conv1 128 -> 1280 and conv2
    1280 -> 1280 of kernel 3 with biases, a table of 1,500 positions, 32 layers of width 1280 with q, v and out_proj
    biased and k_proj not, fc1 and fc2 of 5,120 with biases, two LayerNorms each, a final LayerNorm), its 1,500
    positions pooled by two into 750 tokens, each through Linear(1280, 4096) → GELU → Linear(4096, 4096) with biases to
    the Qwen2 language model's width; Music Flamingo's rotary time embedding holds no parameters."""
    from ffncalc.parts.audio import Audio

    d, f, n, mels, text = 1280, 5120, 1500, 128, 4096
    layer = 4 * d * d + 3 * d + 2 * d * f + f + d + 4 * d
    tower = mels * 3 * d + d + d * 3 * d + d + n * d + 32 * layer + 2 * d
    assert groups(model_type)["tower"] == tower
    assert groups(model_type)["projector"] == d * text + text + text * text + text
    _, model = hf.load(HERE / "configs" / f"{model_type}.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    step = n * (4 * d * d + 2 * d * f) + 2 * n * n * d  # q, k, v, o, fc1, fc2; QKᵀ and AV over the whole window
    macs = 2 * n * mels * 3 * d + n * d * 3 * d + 32 * step + 750 * (d * text + text * text)
    assert audio.per_window(model) == (750, 2 * macs)


def test_moss_transcribe_diarize_by_hand():
    """MOSS-Transcribe-Diarize at its defaults: a Whisper encoder of width 1024 (24 layers, 16 heads, MLP 4096, 80
    log-mel bins, 1,500 positions), four positions concatenated into one token (audio_merge_size), each through
    Linear(4096, 1024) → SiLU → Linear(1024, 1024) with biases to the Qwen3 language model's width, then a LayerNorm
    with a bias: 375 tokens a 30-s window."""
    from ffncalc.parts.audio import Audio

    d, f, n, mels, text = 1024, 4096, 1500, 80, 1024
    layer = 4 * d * d + 3 * d + 2 * d * f + f + d + 4 * d
    assert groups("moss_transcribe_diarize")["tower"] == mels * 3 * d + d + d * 3 * d + d + n * d + 24 * layer + 2 * d
    assert groups("moss_transcribe_diarize")["projector"] == 4 * d * text + text + text * text + text + 2 * text
    _, model = hf.load(HERE / "configs" / "moss_transcribe_diarize.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    step = n * (4 * d * d + 2 * d * f) + 2 * n * n * d
    macs = 2 * n * mels * 3 * d + n * d * 3 * d + 24 * step + 375 * (4 * d * text + text * text)
    assert audio.per_window(model) == (375, 2 * macs)


def test_qwen3_asr_window_by_hand():
    """Qwen3-ASR at its defaults: 100-frame chunks of 128 log-mel bins, each through three Conv2d of 480 channels
    (kernel 3 × 3, stride 2: 64 × 50, 32 × 25, 16 × 13 outputs) and Linear(480 × 16, 1024) without a bias to 13
    positions; 24 layers of width 1024 (q, k, v, o with biases) and MLP 4096, each position meeting the 104 of its
    window of 800 frames; the projector Linear(1024, 1024) → GELU → Linear(1024, 3584) over each position."""
    from ffncalc.parts.audio import Audio

    c, d, f, n, out = 480, 1024, 4096, 104, 3584
    convs = c * 9 * 64 * 50 + c * c * 9 * 32 * 25 + c * c * 9 * 16 * 13
    tower = c * 9 + c + 2 * (c * c * 9 + c) + c * 16 * d + 24 * (4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d) + 2 * d
    assert groups("qwen3_asr")["tower"] == tower
    assert groups("qwen3_asr")["projector"] == d * d + d + d * out + out
    _, model = hf.load(HERE / "configs" / "qwen3_asr.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    layer = n * (4 * d * d + 2 * d * f) + 2 * n * n * d
    macs = 8 * convs + n * c * 16 * d + 24 * layer + n * (d * d + d * out)
    assert audio.per_window(model) == (104, 2 * macs)


def test_qwen3_asr_last_window_is_as_long_as_its_chunks():
    """20 s of audio at Qwen3-ASR's defaults: 20 chunks of 100 frames (13 positions each), two whole windows of 8
    chunks and one of 4 (its get_audio_cu_seqlens): 260 tokens, the work of two windows as FlopCounterMode counted one
    of 104 positions and of one as it counted one of 52 (the last window's attention over its own positions alone)."""
    import ffncalc
    from ffncalc.parts.audio import Audio

    config = HERE / "configs" / "qwen3_asr.json"
    _, model = hf.load(config)
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    assert replace(audio, seconds=20).layout() == [104, 104, 52] and replace(audio, seconds=20).request_tokens() == 260
    runs = {r["positions"]: r["total"] for r in truth("qwen3_asr")["audio_flops"]["runs"]}
    plain = ffncalc.count(str(config), seq_len=1024).to_dict()["totals"]["forward_flops"]
    heard = ffncalc.count(str(config), seq_len=1024, audio_seconds=20).to_dict()["totals"]["forward_flops"]
    assert heard - plain == 2 * runs[104] + runs[52]


def test_granite_speech_window_by_hand():
    """Granite Speech at its defaults (the Q-Former reading the encoder's 1,024 features, as released): a 12-s window is
    600 positions of 160 stacked features; input_linear (160 -> 1024), 10 Conformer layers of width 1024: two
    half-step FFNs (1024 -> 4096 -> 1024), to_q, to_kv and to_out, QKᵀ, AV and Shaw's position scores within blocks of
    200 positions (8 heads of 128), the convolution module (1024 -> 4096, GLU, a depthwise kernel of 15 over 2,048
    channels, 2048 -> 1024); out and out_mid (1024 -> 42 -> 1024) once; the Q-Former over 40 blocks of 15 positions,
    3 queries of 768 each (12 layers, cross-attention in 6, MLP 3072), its first layer's self-attention and the
    cross-attention's queries once (the queries a batch of one); 120 tokens through Linear(768, 4096)."""
    from ffncalc.parts.audio import Audio

    _, model = hf.load(HERE / "configs" / "granite_speech.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    n, d, f, ctx, heads, hd = 600, 1024, 4096, 200, 8, 128
    layer = n * (2 * 2 * d * f + 4 * d * d + d * 4 * d + 2 * d * 15 + 2 * d * d) + 3 * n * heads * ctx * hd
    encoder = n * 160 * d + 10 * layer + n * 2 * d * 42
    q, w, c, kv, blocks = 3, 768, 15, 1024, 40
    self_attn = q * 4 * w * w + 2 * 12 * q * q * 64  # q, k, v, o over the queries; QKᵀ and AV
    cross = q * w * w + 2 * c * kv * w + 2 * 12 * q * c * 64 + q * w * w  # q; k and v over the block; QKᵀ, AV; o
    block = 11 * self_attn + 6 * cross - q * w * w + 12 * 2 * q * w * 3072
    once = self_attn + q * w * w
    projector = blocks * block + once + blocks * q * w * 4096
    assert audio.per_window(model) == (120, 2 * (encoder + projector))


@pytest.mark.torch
def test_granite_speech_plus_concatenated_layers_flops(tmp_path):
    """Granite Speech Plus with cat_hidden_layers [2, 5]: its Q-Former's keys and values read three layers' outputs
    side by side (encoder_hidden_size 3 × 1,024); parameters as transformers builds them, one 12-s window as
    FlopCounterMode counts get_audio_features."""
    from ffncalc.analysis.hfwhole import audio_flops, instantiate_whole
    from ffncalc.parts.audio import Audio

    data = json.loads((HERE / "configs" / "granite_speech_plus.json").read_text())
    data["encoder_config"] = {**data["encoder_config"], "cat_hidden_layers": [2, 5]}
    data["projector_config"] = {**data["projector_config"], "encoder_hidden_size": 3 * 1024}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    assert tally(model).params == sum(p.numel() for p in instantiate_whole(data).parameters())
    assert audio.per_window(model)[1] == audio_flops(data, 600)["total"]


def test_gemma4_unified_embedder_by_hand():
    """Gemma 4 Unified's encoder-free embedder at Gemma4UnifiedVisionConfig's defaults: patches of 16 × 3 = 48 pixels
    (6,912 values each) through LayerNorm, Linear(6912, 3840) with a bias, LayerNorm, a table of 1,120 rows on each of
    two axes, LayerNorm, then a weightless RMSNorm and Linear(3840, 2304) to the text width; one 768-pixel image is
    16 × 16 = 256 soft tokens, each through the two linears."""
    from ffncalc.parts.vision import Vision

    _, model = hf.load(HERE / "configs" / "gemma4_unified.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    pixels, d, text = 48 * 48 * 3, 3840, 2304
    params = 2 * pixels + (pixels * d + d) + 2 * d + 2 * 1120 * d + 2 * d + d * text
    assert groups("gemma4_unified")["tower"] + groups("gemma4_unified")["projector"] == params
    assert vision.per_image(model)[:2] == (256, 2 * 256 * (pixels * d + d * text))


def test_wrapper_tie_decides_the_head(tmp_path):
    """Mistral3Config ties the whole model's head (its tie_word_embeddings defaults to true) while its text_config
    (a MistralConfig) says false: transformers builds one table, and so does the count; stated false in the wrapper,
    the head is a matrix of its own, vocab × hidden more."""
    path = HERE / "configs" / "mistral3.json"
    data = json.loads(path.read_text())
    assert data["tie_word_embeddings"] is True and data["text_config"]["tie_word_embeddings"] is False
    _, tied = hf.load(path)
    assert ours(tied) == groups("mistral3")  # the text part: the language model and the head, one table
    loose = tmp_path / "config.json"
    loose.write_text(json.dumps({**data, "tie_word_embeddings": False}))
    _, untied = hf.load(loose)
    v, h = data["text_config"]["vocab_size"], data["text_config"]["hidden_size"]
    assert tally(untied).params - tally(tied).params == v * h


# (a type whose whole class is its language model is held whole: test_whole_class_that_is_its_language_model)
# (a type its encoder-decoder family reads whole is held whole there: test_encoder_decoders.py)
# Types of the two mappings read neither whole nor by a family of their own
NOT_WHOLE = [
    t for t in coverage.WHOLE_TYPES if t not in wrappers() and t not in coverage.WHOLE_IS_TEXT and t not in coverage.WHOLE_BY_FAMILY
]


def test_every_type_is_read_whole():
    """Every type of transformers 5.23's two multimodal mappings is read whole, or whole by a family of its own
    (none is counted as its language model alone), and ``ffncalc families`` says of none that it is not yet read."""
    assert NOT_WHOLE == []
    assert not coverage.WHOLE_NOT_YET


TEXT_MODULES = ("model.language_model.", "language_model.", "model.text_model.", "lm_head.")


@pytest.mark.parametrize("model_type", WHOLE)
def test_tower_components_equal_transformers_by_name(model_type):
    """Every parameter of the whole class in a tower or its projector (or a part held beside them: Qwen2.5-Omni's talker
    and token2wav, π0's action expert), named by its module (a checkpoint's names are the same), equal per component to
    ours; fused projections (nn.MultiheadAttention's in_proj, Qwen's qkv) against our q, k, v."""
    from ffncalc.sources.hf.names import fuse
    from ffncalc.sources.hf.towers import NAMED, component

    kind = tower(model_type)
    theirs: dict = {}
    for name, n in expanded(truth(model_type)["params"], 2):
        found = component(name, kind)
        if found is not None:
            theirs[(found, None)] = theirs.get((found, None), 0) + n
    _, model = hf.load(HERE / "configs" / f"{model_type}.json")
    mine: dict = {}
    for t in terms(model, 8, partial=True):
        if t.component.startswith(NAMED) and t.numel:
            mine[(t.component, None)] = mine.get((t.component, None), 0) + t.numel * t.stored_count
    assert not any(k[0].startswith("(unmatched)") for k in theirs)
    assert fuse(mine, theirs) == theirs


def test_multimodal_statuses_are_what_a_count_does():
    """`ffncalc families` and docs/model-types.md: supported means read whole, "language model only" that the config
    at its defaults counts (its language model), "not yet" that it is refused in one line; every refusal at defaults
    listed is one the record holds, and the text types listed are the recorded configs'."""
    from ffncalc.errors import InputError

    for record in coverage.multimodal_types():
        t = record["model_type"]
        assert (record["status"] == "supported") == (t in wrappers() or t in coverage.WHOLE_IS_TEXT or t in coverage.WHOLE_BY_FAMILY)
        assert ("refused" in truth(t)) == (t in coverage.WHOLE_REFUSED_AT_DEFAULTS)
        text = json.loads((HERE / "configs" / f"{t}.json").read_text()).get("text_config")
        assert coverage.WRAPPED_TEXT.get(t) == (text.get("model_type") if isinstance(text, dict) else None)
        if t in coverage.WHOLE_REFUSED_AT_DEFAULTS:  # refused by transformers: ours may refuse too, in one line
            try:
                hf.load(HERE / "configs" / f"{t}.json")
            except InputError as exc:
                assert "\n" not in str(exc)
        elif record["status"] == "not yet":
            with pytest.raises(InputError):
                hf.load(HERE / "configs" / f"{t}.json")
        else:
            hf.load(HERE / "configs" / f"{t}.json")


PUBLIC = sorted(p.stem for p in (HERE / "public").glob("*.json") if p.stem != "sources")


@pytest.mark.parametrize("name", PUBLIC)
def test_public_whole_configs_equal_transformers(name):
    """Real config.json files (their sources in tests/hf_whole/public/sources.json), counted whole: tower, projector
    and language model equal per part to the whole class transformers builds from the file."""
    from ffncalc.sources.hf.towers import component, tower_of

    record = json.loads((HERE / "public_truth" / f"{name}.json").read_text())
    kind = tower_of(hf.read_config(HERE / "public" / f"{name}.json")) or "vision"  # an audio model's tower by its names
    theirs = {"tower": 0, "projector": 0, "text": 0}
    for path, n in expanded(record["params"], 2):
        theirs[part_of(component(path, kind) or "")] += n
    _, model = hf.load(HERE / "public" / f"{name}.json")
    assert ours(model) == theirs
    assert name in json.loads((HERE / "public" / "sources.json").read_text())


def test_llava_1_5_7b_by_hand():
    """LLaVA-1.5 7B: Vicuna-7B (32 layers of width 4,096, MLP 11,008, a 32,064-token vocabulary, untied head), CLIP
    ViT-L/14 at 336 pixels (24 layers of 1,024, MLP 4,096, 577 positions with the class token) and the two-layer
    projector: 7,063,427,072 parameters, the Hub's 7.06B."""
    d, f, v = 4096, 11008, 32064
    text = 2 * v * d + 32 * (4 * d * d + 3 * d * f + 2 * d) + d
    w, g = 1024, 4096
    tower = w * 3 * 14 * 14 + w + 577 * w + 2 * w + 24 * (4 * (w * w + w) + 4 * w + w * g + g + g * w + w) + 2 * w
    projector = w * d + d + d * d + d
    _, model = hf.load(HERE / "public" / "llava-1.5-7b.json")
    assert tally(model).params == text + tower + projector == 7_063_427_072


def test_qwen2_audio_7b_by_hand():
    """Qwen2-Audio 7B's config.json: a Qwen2 language model of Qwen2Config's default shape (32 layers of width 4,096, 32
    heads and as many key-value heads, q, k and v with biases, MLP 11,008, an untied head) over a 156,032-token
    vocabulary; the Whisper-large-v3-shaped tower (conv1 128 -> 1280 and conv2, kernel 3 with biases, 1,500 positions,
    32 layers of 1,280 with k_proj unbiased, MLP 5,120, a final LayerNorm); the projector Linear(1280, 4096) with a bias."""
    v, h, ff = 156_032, 4096, 11_008
    text = 2 * v * h + 32 * (4 * h * h + 3 * h + 3 * h * ff + 2 * h) + h
    d, f = 1280, 5120
    tower = 128 * 3 * d + d + d * 3 * d + d + 1500 * d + 32 * (4 * d * d + 3 * d + 2 * d * f + f + d + 4 * d) + 2 * d
    _, model = hf.load(HERE / "public" / "qwen2-audio-7b.json")
    assert ours(model) == {"text": text, "tower": tower, "projector": d * h + h}
    assert tally(model).params == text + tower + d * h + h == 8_397_094_912


def test_mistral_small_3_2_head_as_transformers_ties_it():
    """Mistral Small 3.2's config.json states no top-level tie_word_embeddings; Mistral3Config's default (true) ties
    the head in the class transformers 5.23 builds, as the count does. The released checkpoint stores lm_head apart:
    one more 131,072 × 5,120 matrix, 24,011,361,280 parameters, the Hub's 24B."""
    _, model = hf.load(HERE / "public" / "mistral-small-3.2-24b.json")
    record = json.loads((HERE / "public_truth" / "mistral-small-3.2-24b.json").read_text())
    built = sum(n for _, n in expanded(record["params"], 2))
    assert tally(model).params == built
    assert built + 131_072 * 5_120 == 24_011_361_280


# The released checkpoints' element counts, as the public model-information reports quoting their configs total their
# safetensors (sources.json): each the parameters transformers builds and the buffers the checkpoint stores beside them
# (GLM-4.5V's 45 MoE layers' e_score_correction_bias of 128, a buffer of Glm4vMoeTextTopkRouter)
CHECKPOINT_ELEMENTS = {
    "glm-4.5v": (107_710_933_120, 45 * 128),
    "qwen3-vl-8b-instruct": (8_767_123_696, 0),
    "qwen3-vl-30b-a3b-instruct": (31_070_754_032, 0),
    "qwen3-vl-235b-a22b-instruct": (235_670_022_896, 0),
}


@pytest.mark.parametrize("name", sorted(CHECKPOINT_ELEMENTS))
def test_public_whole_configs_equal_their_checkpoints(name):
    """A public config counted whole equals its released checkpoint's elements, less the buffers it stores."""
    elements, buffers = CHECKPOINT_ELEMENTS[name]
    _, model = hf.load(HERE / "public" / f"{name}.json")
    assert tally(model).params + buffers == elements


def test_whole_proven_on_names_the_public_configs():
    """coverage.WHOLE_PROVEN_ON: a public config recorded for each type it names, and each public config's type named."""
    types = {json.loads((HERE / "public" / f"{n}.json").read_text())["model_type"] for n in PUBLIC}
    assert types == set(coverage.WHOLE_PROVEN_ON)


@pytest.mark.torch
def test_music_flamingo_reads_its_encoder_type_as_audio_flamingo_3s(tmp_path):
    """MusicFlamingoConfig builds an audio_config of model_type "musicflamingo_encoder" as AudioFlamingo3Encoder: read
    so, the whole model equal to the class transformers builds."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    audio = {"model_type": "musicflamingo_encoder", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4}
    text = {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 1, "vocab_size": 100, "intermediate_size": 128}
    data = {"model_type": "musicflamingo", "audio_config": audio, "text_config": text}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    assert tally(model).params == sum(p.numel() for p in instantiate_whole(json.loads(json.dumps(data))).parameters())


@pytest.mark.torch
@pytest.mark.parametrize("text", [None, {"model_type": "llama"}, {"model_type": "llama", "num_hidden_layers": 2, "vocab_size": 1000}])
def test_voxtral_text_config_takes_its_own_defaults(tmp_path, text):
    """VoxtralConfig builds its language model from its own defaults (a 30-layer Llama of width 3,072 with a
    131,072-token vocabulary, not LlamaConfig's 7B) where the file states no text_config, and lays them under the
    keys of one it states (its __post_init__, "Keep for BC"): the whole model equal to the class transformers builds."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    data = {"model_type": "voxtral", "audio_config": {"model_type": "voxtral_encoder", "num_hidden_layers": 2}}
    data |= {"text_config": text} if text is not None else {}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    assert model.d_model == 3072
    assert tally(model).params == sum(p.numel() for p in instantiate_whole(data).parameters())


@pytest.mark.torch
@pytest.mark.parametrize(
    "tower",
    [
        {"model_type": "pixtral", "hidden_size": 32, "num_attention_heads": 4, "head_dim": 8},
        {"model_type": "siglip_vision_model", "hidden_size": 48, "num_attention_heads": 4},
    ],
)
def test_sparse_tower_configs_take_their_class_defaults(tmp_path, tower):
    """A vision_config stating a few keys: the rest are its configuration class's defaults (PixtralVisionConfig's,
    SiglipVisionConfig's), as transformers fills them; the whole model equal to the class it builds."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    text = {"model_type": "mistral", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
    text |= {"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}
    kind = "mistral3" if tower["model_type"] == "pixtral" else "llava_onevision"
    data = {"model_type": kind, "text_config": text, "tie_word_embeddings": False, "vision_config": tower}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    assert tally(model).params == sum(p.numel() for p in instantiate_whole(data).parameters())


@pytest.mark.torch
@pytest.mark.parametrize("model_type", [t for t in coverage.WHOLE_TYPES if "refused" not in truth(t) and coverage.WRAPPED_TEXT.get(t)])
def test_wrapper_tie_rule_is_the_configuration_class(model_type):
    """Where the wrapper says false and its text_config true, and the other way round, the whole model's
    tie_word_embeddings as the wrapper's configuration class settles it (its __post_init__: some forward the text
    config's true to a false wrapper, as pre-v5 checkpoints saved it there) equals hf.wrapper_tie's."""
    import transformers
    from transformers import AutoConfig

    transformers.logging.set_verbosity_error()
    data = json.loads((HERE / "configs" / f"{model_type}.json").read_text())
    text = data["text_config"]
    for outer, inner in ((False, True), (True, False)):
        stated = {**data, "tie_word_embeddings": outer, "text_config": {**text, "tie_word_embeddings": inner}}
        flag = getattr(AutoConfig.for_model(**stated), "tie_word_embeddings", None)
        theirs = inner if flag is None else flag  # none on the wrapper: its language model ties by its own
        c = hf.Config(stated, json.dumps(stated), "x")
        ours = hf.wrapper_tie(c, {**stated["text_config"]})
        assert (inner if ours is None else ours) == theirs, (outer, inner)


def test_a_flat_qwen2_5_vl_config_is_read_whole():
    """Qwen2.5-VL's released files are saved flat (the language model's keys at the top, the tower under the wrapper's
    own model_type), as Qwen2_5_VLConfig still reads them: Nexus-Gen V2's, in Qwen2.5-VL-7B's layout, is the whole
    8,292,166,656 parameters of the class transformers builds from it (the Hub's 8.29B for Qwen2.5-VL-7B-Instruct)."""
    _, model = hf.load(HERE / "public" / "nexus-gen-v2.json")
    record = json.loads((HERE / "public_truth" / "nexus-gen-v2.json").read_text())
    assert tally(model).params == sum(n for _, n in expanded(record["params"], 2)) == 8_292_166_656


@pytest.mark.parametrize("model_type", WHOLE)
def test_verify_hf_holds_the_whole_class(model_type):
    """verify --hf of a wrapper read whole: its towers' and projector's components by name and the language model as
    one, against what transformers built (the recording; ``check_whole`` builds it afresh without one)."""
    from ffncalc.analysis.hfwhole import TEXT, check_whole

    path = HERE / "configs" / f"{model_type}.json"
    label, model = hf.load(path)
    recorded = truth(model_type)
    report = check_whole(hf.read_config(path), model, model=label, measured=recorded)
    assert report.ok, [(c.component, c.ours, c.transformers) for c in report.failures]
    assert report.model_class == recorded["model_class"]
    names = {c.component for c in report.checks}
    assert TEXT in names and any(n.startswith(TOWER_PREFIXES) for n in names)
    assert sum(c.transformers for c in report.checks) == sum(n for _, n in expanded(recorded["params"], 2))


@pytest.mark.torch
def test_verify_hf_of_a_wrapper_builds_the_whole_class(cli):
    code, out, _ = cli("verify", "--hf", str(HERE / "configs" / "llava.json"), "--seq-len", "64")
    assert code == 0 and "LlavaForConditionalGeneration" in out and "vision.projector.linear_1" in out
    assert "✓ all 15 components agree with LlavaForConditionalGeneration" in out


@pytest.mark.torch
def test_llama4_defaults_whose_widths_do_not_meet_count_as_built(tmp_path):
    """Llama4VisionConfig's own defaults (a 768-wide tower whose shuffled 3,072 features meet an adapter reading
    intermediate_size 5,632, and a projector reading vision_output_dim 7,680 where the adapter writes 4,096): the whole
    class transformers builds from them, counted linear by linear; an image, which transformers cannot run, is refused
    in one line naming the width."""
    from ffncalc.analysis.hfwhole import instantiate_whole
    from ffncalc.errors import OptionError

    data = {"model_type": "llama4"}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    assert tally(model).params == sum(p.numel() for p in instantiate_whole(data).parameters())
    with pytest.raises(OptionError) as err:
        import ffncalc

        ffncalc.count(str(tmp_path / "config.json"), images=1)
    assert "adapter_in: 5632 features where 3072 are handed on" in str(err.value) and "\n" not in str(err.value)


def test_a_tower_not_read_yet_is_named_in_a_note(tmp_path):
    """A Gemma 4 config with an audio tower (E2B's and E4B's): its language model and vision encoder are counted as
    without it, and the count says in a note that the audio_config is not."""
    data = json.loads((HERE / "configs" / "gemma4.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, "audio_config": {"model_type": "gemma4_audio"}}))
    _, heard = hf.load(tmp_path / "config.json")
    _, seen = hf.load(HERE / "configs" / "gemma4.json")
    assert tally(heard).params == tally(seen).params
    assert any("not counted: audio_config" in n for n in heard.notes)
    assert not any("not counted" in n for n in seen.notes)


def test_blip2_qformer_flops_by_hand():
    """BLIP-2's Q-Former on one 224-pixel image, by hand: 32 queries of 768 over 257 positions of 1,408 (256 patches and
    the class token), 12 layers of self-attention (q, k, v, o and the two products over the 32 queries) and an MLP of
    3,072, cross-attention in the 6 even layers (q and o over the queries, k and v over the positions from 1,408, the
    products over 32 × 257 pairs): the Blip2QFormerModel's FLOPs FlopCounterMode recorded."""
    from ffncalc.parts.vision import Vision

    q, p, h, e, f = 32, 257, 768, 1408, 3072
    attn = 4 * q * h * h + 2 * q * q * h
    cross = 2 * q * h * h + 2 * p * e * h + 2 * q * p * h
    mlp = 2 * q * h * f
    by_hand = 2 * (12 * (attn + mlp) + 6 * cross)
    _, model = hf.load(HERE / "configs" / "blip-2.json")
    (vision,) = [v for v in model.parts if isinstance(v, Vision)]
    ours = 0
    for _, t in vision.image_terms(model):
        if t.name.startswith("vision.projector.qformer."):
            ours += 2 * t.count * t.shape[0] * t.shape[1] * t.shape[2] if t.role == "core" else 2 * t.macs
    run = next(r for r in truth("blip-2")["image_flops"]["runs"] if r["size"] == 224)
    assert ours == by_hand == run["modules"]["Blip2QFormerModel"] == 12_747_866_112


def test_gemma4_image_flops_by_hand():
    """Gemma 4's vision encoder at Gemma4VisionConfig's defaults on one 480-pixel image, by hand: 900 patches of 16
    (a linear of 768 × 768), 16 layers of width 768 (q, k, v, o and a GeGLU MLP of 3,072; the two products over the
    900 × 900 square), the pooler's one-hot matmul of 100 tokens over the 900 patches, and embed_vision to the text's
    2,304: FlopCounterMode's figures for the tower and the embedder."""
    from ffncalc.parts.vision import Vision

    n, d, f, t = 900, 768, 3072, 100
    tower = 2 * n * d * 3 * 16 * 16 + 16 * (2 * n * (4 * d * d + 3 * d * f) + 2 * 2 * n * n * d) + 2 * t * n * d
    embedder = 2 * t * d * 2304
    _, model = hf.load(HERE / "configs" / "gemma4.json")
    (vision,) = [v for v in model.parts if isinstance(v, Vision)]
    run = next(r for r in truth("gemma4")["image_flops"]["runs"] if r["size"] == 480)
    assert (tower, embedder) == (run["modules"]["Gemma4VisionModel"], run["modules"]["Gemma4MultimodalEmbedder"])
    assert replace(vision, image_size=480).per_image(model)[:2] == (t, tower + embedder)


def test_kosmos2_latent_queries_by_hand():
    """Kosmos-2's image-to-text projection on one 224-pixel image, by hand: dense over 257 positions (256 patches of 14
    and the class token) from 1,024 to 2,048, then 64 latents of 2,048 reading those positions and themselves (321
    keys): q and o over the latents, k and v over the 321 keys, the two products over 64 × 321 pairs; the
    Kosmos2ImageToTextProjection's FLOPs FlopCounterMode recorded."""
    from ffncalc.parts.vision import Vision

    p, w, d, n = 257, 1024, 2048, 64
    keys = p + n
    by_hand = 2 * (p * w * d + 2 * n * d * d + 2 * keys * d * d + 2 * n * keys * d)
    _, model = hf.load(HERE / "configs" / "kosmos-2.json")
    (vision,) = [v for v in model.parts if isinstance(v, Vision)]
    ours = 0
    for _, t in vision.image_terms(model):
        if t.name.startswith("vision.projector."):
            ours += 2 * t.count * t.shape[0] * t.shape[1] * t.shape[2] if t.role == "core" else 2 * t.macs
    run = next(r for r in truth("kosmos-2")["image_flops"]["runs"] if r["size"] == 224)
    assert ours == by_hand == run["modules"]["Kosmos2ImageToTextProjection"] == 7_705_460_736
    assert vision.tokens == n


def test_kosmos2_5_tower_by_hand():
    """Kosmos-2.5's encoder at its defaults on one image padded to 4,096 patches, by hand: patch_projection of 768
    pixels a patch to 1,536, then 18 layers of width 1,536 (q, k, v and output; the two products over the 4,096 ×
    4,096 square; a gated MLP of 3,968): FlopCounterMode's figure for Kosmos2_5VisionModel; each image is its 2,048
    latents' tokens."""
    from ffncalc.parts.vision import Vision

    n, d, f, layers = 4096, 1536, 3968, 18
    tower = 2 * n * 768 * d + layers * (2 * n * 4 * d * d + 2 * 2 * n * n * d + 2 * n * 3 * d * f)
    _, model = hf.load(HERE / "configs" / "kosmos-2.5.json")
    (vision,) = [v for v in model.parts if isinstance(v, Vision)]
    run = next(r for r in truth("kosmos-2.5")["image_flops"]["runs"] if r["size"] == 1024)
    assert tower == run["modules"]["Kosmos2_5VisionModel"]
    assert vision.per_image(model)[:2] == (2048, tower + run["modules"]["Kosmos2_5ImageToTextProjection"])


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [("max_num_patches", 4000, "not a square grid"), ("patch_embed_hidden_size", 700, "not 3 channels of a square patch")],
)
def test_kosmos2_5_tower_shapes_not_read_are_one_line(tmp_path, key, value, words):
    """A Kosmos-2.5 encoder whose patches do not tile a square grid, or whose patch pixels are not three channels of a
    square, is refused in one line naming the key."""
    from ffncalc.errors import InputError

    data = json.loads((HERE / "configs" / "kosmos-2.5.json").read_text())
    data["vision_config"][key] = value
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        hf.load(tmp_path / "config.json")
    assert key in str(err.value) and words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.torch
@pytest.mark.parametrize(
    "data",
    [
        {
            "model_type": "kosmos-2",
            "latent_query_num": 8,
            "text_config": {"embed_dim": 64, "layers": 2, "attention_heads": 4, "ffn_dim": 96, "vocab_size": 100},
            "vision_config": {"hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2, "num_attention_heads": 4},
        },
        {
            "model_type": "kosmos-2.5",
            "latent_query_num": 16,
            "text_config": {"embed_dim": 64, "layers": 2, "attention_heads": 4, "ffn_dim": 96, "vocab_size": 100},
            "vision_config": {"hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2, "num_attention_heads": 3},
        },
        {
            "model_type": "cosmos3_edge",
            "projector_hidden_size": 72,
            "text_config": {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "vocab_size": 100},
            "vision_config": {"hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2, "num_attention_heads": 4},
        },
        {
            "model_type": "git",
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "vocab_size": 100,
            "vision_config": {"hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2, "num_attention_heads": 4},
        },
    ],
    ids=lambda d: d["model_type"],
)
def test_sparse_configs_of_types_read_whole_equal_their_classes(tmp_path, data):
    """Kosmos-2, Kosmos-2.5, Cosmos3 Edge and GIT configs stating a few keys of each part (the rest their configuration
    classes' defaults, as transformers fills them, the sub-configs' model_type left out; GIT's language model at the
    top): the whole model equal to the class transformers builds from the same file."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    if data["model_type"] == "cosmos3_edge":  # its multimodal rotary sections fill the heads' width (128 by default)
        data["text_config"] |= {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}
        data["text_config"]["rope_parameters"] = {"rope_theta": 1e8, "rope_type": "default", "mrope_section": [4, 2, 2]}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    assert tally(model).params == sum(p.numel() for p in instantiate_whole(data).parameters())


def test_git_image_positions_take_no_row_of_its_position_table():
    """GIT's image positions take no row of its learned table (GitEmbeddings numbers the text alone): a sequence of
    1,024 text tokens beside one 224-pixel image's 197 fits its 1,024 positions, one more text token does not."""
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model
    from ffncalc.errors import InputError

    label, stack = hf.load(HERE / "configs" / "git.json")
    m = with_inputs(Model(label, stack), images=1)
    assert m.stack.context_length == 1024 and m.stack.placed(1024 + 197) == 1024
    m.stack.check_seq_len(1024 + 197, label)
    with pytest.raises(InputError, match="context_length 1024"):
        m.stack.check_seq_len(1025 + 197, label)


@pytest.mark.torch
@pytest.mark.parametrize("model_type", sorted(coverage.WHOLE_IS_TEXT))
def test_whole_class_that_is_its_language_model(model_type):
    """A multimodal-LM type whose whole class is a causal LM with no tower (Mistral 4: Mistral4ForCausalLM): every
    parameter of the recorded class, by component, equal to the count of its config, and the class has no tower."""
    from ffncalc.analysis.hfcheck import check

    record = truth(model_type)
    assert record["model_class"].endswith("ForCausalLM")
    assert not any(row[0].startswith(("model.vision", "model.visual", "model.multi_modal")) for row in record["params"])
    _, model = hf.load(HERE / "configs" / f"{model_type}.json")
    assert tally(model).params == sum(n for _, n in expanded(record["params"], 2))
    report = check(hf.read_config(HERE / "configs" / f"{model_type}.json"), spec=model)
    assert report.ok and report.model_class == record["model_class"]


def test_qwen3_omni_audio_by_hand():
    """Qwen3-Omni's thinker at its defaults, 30 s of audio (3,000 frames of 128 mel bins): 30 chunks of 100 frames,
    each through three 2-D convolutions of 480 channels (kernel 3, stride 2: 128 × 100 → 64 × 50 → 32 × 25 → 16 × 13)
    and conv_out (480 × 16 → 1280) at each of its 13 time steps: 390 positions, attending within windows of 8 chunks
    (104 positions: three, and 78 left); 32 layers of width 1280 (q, k, v, o, an MLP of 5120), proj1 (1280 → 1280) and
    proj2 (1280 → 3584) at every position."""
    from ffncalc.parts.audio import Audio

    _, model = hf.load(HERE / "configs" / "qwen3_omni_moe_thinker.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    c, d, chunks, n = 480, 1280, 30, 390
    convs = chunks * (64 * 50 * c * 9 + 32 * 25 * c * 9 * c + 16 * 13 * c * 9 * c) + n * c * 16 * d
    pairs = 3 * 104 * 104 + 78 * 78
    layers = 32 * (n * (4 * d * d + 2 * d * 5120) + 2 * pairs * d)  # QKᵀ and AV over each window's pairs
    projector = n * (d * d + d * 3584)
    assert replace(audio, seconds=30).heard(model) == (n, 2 * (convs + layers + projector))
    assert replace(audio, seconds=30).layout() == [104, 104, 104, 78]


def test_minicpm_window_merger_flops_by_hand():
    """MiniCPM-V 4.6 at its defaults, one 448-pixel image (28 × 28 patches of 16): the patch convolution, 7 SigLIP layers
    of width 768 (MLP 3,072) over 784 patches, the window merger (q, k, v, out_proj over every patch, each meeting the 4
    of its 2 × 2 window, then 196 windows through Linear(3,072, 12,288) and Linear(12,288, 768)), 5 layers over the 196
    merged patches, and the projector over 49 tokens (3,072 → 3,072 → 4,096); MiniCPM-OCR's "4x" runs all 12 layers over
    784 patches and no merger, its projector over 196 tokens. 2 FLOPs a multiply-add; FlopCounterMode's figures."""
    from ffncalc.parts.vision import Vision

    d, ff, text, n = 768, 3072, 4096, 28 * 28
    m = n // 4

    def layers(k, tokens):
        return k * (tokens * (4 * d * d + 2 * d * ff) + 2 * tokens * tokens * d)

    merger = n * 4 * d * d + 2 * n * 4 * d + m * (4 * d * 4 * ff + 4 * ff * d)
    sixteen = n * 3 * 16 * 16 * d + layers(7, n) + merger + layers(5, m) + (m // 4) * (4 * d * 4 * d + 4 * d * text)
    four = n * 3 * 16 * 16 * d + layers(12, n) + m * (4 * d * 4 * d + 4 * d * text)
    for model_type, macs, tokens in (("minicpmv4_6", sixteen, 49), ("minicpm_ocr", four, 196)):
        _, model = hf.load(HERE / "configs" / f"{model_type}.json")
        (vision,) = [p for p in model.parts if isinstance(p, Vision)]
        assert vision.per_image(model)[:2] == (tokens, 2 * macs)
        assert 2 * macs == next(r["total"] for r in truth(model_type)["image_flops"]["runs"] if r["size"] == 448)


def test_pix2struct_by_hand():
    """Pix2Struct at its defaults: the encoder reads 768 pixels a patch through patch_projection (with a bias) to 768,
    a row and a column table of 4,096 rows, 12 T5-form layers of width 768 (query, key, value, output; a gated MLP
    of 2,048; two RMSNorms) and a final RMSNorm; one 1,024-pixel image is 64 × 64 patches, the encoder's work once and
    no token of the decoder's sequence. The decoder: 12 T5 layers, each with a cross-attention (its norm, q, k, v, o
    of 768) whose k and v run once over the 4,096 positions, and its q, o and the two products once a decoder token."""
    from ffncalc.parts.vision import Vision

    d, f, n, rows = 768, 2048, 4096, 4096
    layer = 4 * d * d + 3 * d * f + 2 * d
    assert groups("pix2struct")["tower"] == 768 * d + d + 2 * rows * d + 12 * layer + d
    _, model = hf.load(HERE / "configs" / "pix2struct.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    tower = 2 * n * 768 * d + 12 * (2 * n * (4 * d * d + 3 * d * f) + 2 * 2 * n * n * d)
    assert vision.per_image(model)[1] == tower == 1_319_091_830_784
    assert vision.request_tokens() == 0
    cross = {t.name: t for t in terms(model, 8, partial=True) if t.name.startswith("encoder.cross.")}
    # k and v: once a source position, 4,096 of them over the 8-token sequence; q and o once a token
    assert cross["encoder.cross.k.weight"].positions * 8 == n and cross["encoder.cross.q.weight"].positions == 1
    assert cross["encoder.cross.scores"].shape == (12, n, 64)


def test_pix2struct_one_image_a_sequence_and_its_size(cli):
    """Pix2Struct's decoder cross-attends one image: --images 2 is refused in one line; --image-size 512 makes it
    1,024 patches through the encoder (FlopCounterMode's 213,808,840,704) and 1,024 cross-attended positions."""
    import ffncalc

    config = str(HERE / "configs" / "pix2struct.json")
    code, _, err = cli("count", config, "--images", "2")
    assert code == 2 and "an image encoder-decoder reads one image a sequence" in err and err.count("\n") == 1
    big = ffncalc.count(config, seq_len=64).to_dict()["totals"]["forward_flops"]
    small = ffncalc.count(config, seq_len=64, image_size=512).to_dict()["totals"]["forward_flops"]
    runs = {r["size"]: r["total"] for r in truth("pix2struct")["image_flops"]["runs"]}
    d, layers, tokens = 768, 12, 64
    # the cross-attention's k and v (2 × d × d each position) and its two products (each decoder token × positions × d)
    cross = layers * (2 * 2 * d * d + 2 * 2 * tokens * d)
    assert big - small == runs[1024] - runs[512] + (4096 - 1024) * cross


def test_blip_by_hand():
    """BLIP's captioner at its defaults: a ViT-B/16 tower (a patch convolution of 16 × 16 × 3 → 768 with a bias, a
    class token, 577 learned positions, 12 layers of width 768 with a fused qkv and a projection with biases, an MLP of
    3,072 with biases, two LayerNorms, post_layernorm); one 384-pixel image is 576 patches and the class token, every
    one cross-attended by each of the 12 BERT decoder layers (query, key, value and output dense of 768 with biases,
    a LayerNorm), whose key and value run once a position."""
    from ffncalc.parts.vision import Vision

    d, f, n = 768, 3072, 577
    layer = 3 * d * d + 3 * d + d * d + d + d * f + f + f * d + d + 4 * d
    assert groups("blip")["tower"] == d * 3 * 16 * 16 + d + d + n * d + 12 * layer + 2 * d
    _, model = hf.load(HERE / "configs" / "blip.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    flops = 2 * 576 * d * 3 * 16 * 16 + 12 * (2 * n * (4 * d * d + 2 * d * f) + 2 * 2 * n * n * d)
    run = next(r for r in truth("blip")["image_flops"]["runs"] if r["size"] == 384)
    assert vision.per_image(model)[1] == flops == run["total"] == 110_967_164_928
    cross = [t for t in terms(model, 8, partial=True) if t.component.startswith("encoder.cross.")]
    assert sum(t.numel * t.stored_count for t in cross) == 12 * 4 * (d * d + d)
    built = sum(
        n
        for name, n in expanded(truth("blip")["params"], 2)
        if ".crossattention.self." in name or ".crossattention.output.dense" in name
    )
    assert built == 12 * 4 * (d * d + d)
    k = next(t for t in cross if t.name == "encoder.cross.k.weight")
    assert k.positions * 8 == n and k.per_sequence  # projected once a position of the image, at the prefill


def test_vision_encoder_decoder_by_hand():
    """VisionEncoderDecoderModel: the default ViT-B/16 encoder (a patch convolution with a bias, a class token, 197
    positions, 12 pre-norm layers of width 768 with biased q, k, v, o and an MLP of 3,072, a final LayerNorm, the
    pooler's dense with a bias) run once an image: 197 positions through the layers, the pooler over the class token.
    The public ViT-GPT2 captioner: that encoder, GPT-2 small (124,439,808 parameters, its head tied by its own config)
    and in each of its 12 layers a cross-attention (q_attn, c_attn's key and value, c_proj with biases, ln_cross_attn):
    239,195,904 parameters, as transformers builds the file."""
    from ffncalc.parts.vision import Vision

    d, f, n = 768, 3072, 197
    layer = 4 * (d * d + d) + 4 * d + d * f + f + f * d + d
    vit = d * 3 * 16 * 16 + d + d + n * d + 12 * layer + 2 * d + d * d + d
    assert groups("vision-encoder-decoder")["tower"] == vit
    _, model = hf.load(HERE / "configs" / "vision-encoder-decoder.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    flops = 2 * 196 * d * 3 * 16 * 16 + 12 * (2 * n * (4 * d * d + 2 * d * f) + 2 * 2 * n * n * d) + 2 * d * d
    run = next(r for r in truth("vision-encoder-decoder")["image_flops"]["runs"] if r["size"] == 224)
    assert vision.per_image(model)[1] == flops == run["total"]
    gpt2 = 50257 * d + 1024 * d + 12 * (2 * 2 * d + 3 * d * d + 3 * d + d * d + d + 2 * (d * f) + f + d) + 2 * d
    cross = 12 * (d * d + d + 2 * d * d + 2 * d + d * d + d + 2 * d)
    _, public = hf.load(HERE / "public" / "vit-gpt2-image-captioning.json")
    assert gpt2 == 124_439_808
    assert tally(public).params == vit + gpt2 + cross == 239_195_904


@pytest.mark.parametrize(
    ("side", "value", "words"),
    [
        ("encoder", {"model_type": "swin"}, "a swin encoder is not read yet (read: vit)"),
        ("decoder", {"model_type": "bart", "add_cross_attention": True}, "a bart decoder is not read yet (read: bert, gpt2)"),
        ("decoder", {"model_type": "bert", "add_cross_attention": False}, "add_cross_attention true"),
    ],
)
def test_vision_encoder_decoder_sides_not_read_are_one_line(tmp_path, side, value, words):
    """A VisionEncoderDecoderModel config whose encoder or decoder is not read (or whose decoder attends nothing) is
    refused in one line naming it."""
    from ffncalc.errors import InputError

    data = json.loads((HERE / "configs" / "vision-encoder-decoder.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, side: value}))
    with pytest.raises(InputError) as err:
        hf.load(tmp_path / "config.json")
    assert words in str(err.value) and "\n" not in str(err.value)


def test_got_ocr2_sam_tower_flops_by_hand():
    """GOT-OCR 2.0 at its defaults, one 1,024-pixel image (64 × 64 patches of 16) and one of 512 (32 × 32): the patch
    convolution; 8 layers attending windows of 14 × 14 patches, the grid padded to 70 (42) a side, so qkv, proj and each
    window's products and decomposed relative positions (each query times 14 rows of rel_pos_h and 14 of rel_pos_w) run
    over 4,900 (1,764) positions; 4 global layers over the grid (each query times 64 (32) rows of each table); every
    layer's MLP (768 → 3,072 → 768) over the grid; the neck (1 × 1 to 256, 3 × 3 at 256); the projector's two strided
    3 × 3 convolutions (256 → 512 → 1,024) and Linear(1,024, 1,024) over 256 (64) tokens. 2 FLOPs a multiply-add;
    FlopCounterMode's figures."""
    from ffncalc.parts.vision import Vision

    d, ff, out, text, w = 768, 3072, 256, 1024, 14

    def macs(g):
        padded = -(-g // w) * w
        windowed = 8 * (padded**2 * 4 * d * d + 2 * padded**2 * w * w * d + 2 * padded**2 * w * d)
        full = 4 * (g * g * 4 * d * d + 2 * g**4 * d + 2 * g**3 * d)
        mlp = 12 * g * g * 2 * d * ff
        neck = g * g * (d * out + 9 * out * out)
        half, tokens = (g // 2) ** 2, (g // 4) ** 2
        projector = half * 9 * out * 2 * out + tokens * (9 * 2 * out * text + text * text)
        return g * g * 3 * 16 * 16 * d + windowed + full + mlp + neck + projector, tokens

    _, model = hf.load(HERE / "configs" / "got_ocr2.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    for size in (1024, 512):
        work, tokens = macs(size // 16)
        assert replace(vision, image_size=size).per_image(model)[:2] == (tokens, 2 * work)
        assert 2 * work == next(r["total"] for r in truth("got_ocr2")["image_flops"]["runs"] if r["size"] == size)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("global_attn_indexes", [2, 12], "expected distinct layer indices below num_hidden_layers 12"),
        ("num_attention_heads", 10, "10 heads do not divide hidden_size 768"),
        ("window_size", -1, "expected a non-negative integer"),
    ],
)
def test_sam_tower_shapes_not_read_are_one_line(tmp_path, key, value, words):
    """A SAM tower naming a global layer it does not have, heads that do not divide its width or a negative window is
    refused in one line naming the key."""
    from ffncalc.errors import InputError

    data = json.loads((HERE / "configs" / "got_ocr2.json").read_text())
    data["vision_config"][key] = value
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        hf.load(tmp_path / "config.json")
    assert key in str(err.value) and words in str(err.value) and "\n" not in str(err.value)


def test_pp_formulanet_by_hand():
    """PP-FormulaNet at its defaults. The SAM encoder: a patch convolution (16 × 16 × 3 → 768, a bias), 32 × 32 absolute
    positions, 12 layers of width 768 (qkv and proj with biases, an MLP of 3,072 with biases, two LayerNorms), the
    relative tables of 8 windowed layers (2 × 27 rows of 64) and of 4 global ones (2 × 63 rows of 64), the neck (1 × 1
    to 256 and 3 × 3 at 256, no biases, two LayerNorms); the projector: two strided 3 × 3 convolutions without biases
    (256 → 512 → 1,024), linear_1 (1,024 square) and linear_2 (to 512) with biases. The mBART decoder: a table of
    50,000 × 512, 2,562 learned positions, layernorm_embedding, 8 pre-norm layers (self- and cross-attention of four
    512-square projections with biases, an FFN of 2,048 with biases, three LayerNorms), a final LayerNorm and an untied
    head. One image at 512 and 768 pixels (32 and 48 patches a side; windows of 14 padded to 42 and 56 a side; 64 and
    144 tokens after the projector): 2 FLOPs a multiply-add, FlopCounterMode's figures; each cross-attention's k and v
    run once over the image's 64 tokens."""
    from ffncalc.parts.vision import Vision

    d, ff, out, w, wide, t, f = 768, 3072, 256, 14, 1024, 512, 2048
    layer = 3 * d * d + 3 * d + d * d + d + 4 * d + d * ff + ff + ff * d + d
    tower = d * 3 * 16 * 16 + d + 32 * 32 * d + 12 * layer + 8 * 2 * 27 * 64 + 4 * 2 * 63 * 64 + d * out + 9 * out * out + 4 * out
    projector = 9 * out * 2 * out + 9 * 2 * out * wide + wide * wide + wide + wide * t + t
    decoder = 8 * (8 * (t * t + t) + 6 * t + t * f + f + f * t + t)
    text = 50000 * t + 2562 * t + 2 * t + decoder + 2 * t + 50000 * t
    assert groups("pp_formulanet") == {"tower": tower, "projector": projector, "text": text}
    assert tower + projector + text == 180_897_536

    def macs(g):
        padded = -(-g // w) * w
        windowed = 8 * (padded**2 * 4 * d * d + 2 * padded**2 * w * w * d + 2 * padded**2 * w * d)
        full = 4 * (g * g * 4 * d * d + 2 * g**4 * d + 2 * g**3 * d)
        mlp = 12 * g * g * 2 * d * ff
        neck = g * g * (d * out + 9 * out * out)
        half, tokens = (g // 2) ** 2, (g // 4) ** 2
        convs = half * 9 * out * 2 * out + tokens * 9 * 2 * out * wide
        return g * g * 3 * 16 * 16 * d + windowed + full + mlp + neck + convs + tokens * (wide * wide + wide * t), tokens

    _, model = hf.load(HERE / "configs" / "pp_formulanet.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    runs = {r["size"]: r["total"] for r in truth("pp_formulanet")["image_flops"]["runs"]}
    for size, figure in ((512, 228_499_587_072), (768, 515_072_065_536)):
        work, tokens = macs(size // 16)
        assert replace(vision, image_size=size).per_image(model)[1] == 2 * work == runs[size] == figure
    assert vision.request_tokens() == 0  # the image is no token of the decoder's sequence
    cross = {t.name: t for t in terms(model, 8, partial=True) if t.name.startswith("encoder.cross.")}
    assert cross["encoder.cross.k.weight"].positions * 8 == 64 and cross["encoder.cross.q.weight"].positions == 1
    assert cross["encoder.cross.scores"].shape == (16, 64, 32)


def test_pp_formulanet_image_size_sets_the_cross_attended_tokens(cli):
    """--image-size 768 makes PP-FormulaNet's image 144 tokens (48 patches a side, 4 × 4 a token) through the encoder
    and the cross-attention: the difference from 512 pixels is FlopCounterMode's encoder difference and each of the 8
    layers' k and v (2 × 512 × 512 a token) and two products (each decoder token × tokens × 512) over 80 more tokens;
    --images 2 is refused in one line."""
    import ffncalc

    config = str(HERE / "configs" / "pp_formulanet.json")
    code, _, err = cli("count", config, "--images", "2")
    assert code == 2 and "an image encoder-decoder reads one image a sequence" in err and err.count("\n") == 1
    small = ffncalc.count(config, seq_len=64).to_dict()["totals"]["forward_flops"]
    big = ffncalc.count(config, seq_len=64, image_size=768).to_dict()["totals"]["forward_flops"]
    runs = {r["size"]: r["total"] for r in truth("pp_formulanet")["image_flops"]["runs"]}
    d, layers, tokens = 512, 8, 64
    cross = layers * (2 * 2 * d * d + 2 * 2 * tokens * d)
    assert big - small == runs[768] - runs[512] + (144 - 64) * cross


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("decoder_hidden_size", 768, "768 features where the decoder's encoder_attn reads d_model 512"),
        ("post_conv_in_channels", 128, "128 where the neck writes output_channels 256"),
        ("post_conv_mid_channels", 384, "a first convolution other than 2 × output_channels (512) is not read"),
    ],
)
def test_pp_formulanet_shapes_not_read_are_one_line(tmp_path, key, value, words):
    """A PP-FormulaNet vision_config whose projector does not meet its neck or its decoder is refused in one line naming
    the key."""
    from ffncalc.errors import InputError

    data = json.loads((HERE / "configs" / "pp_formulanet.json").read_text())
    data["vision_config"][key] = value
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        hf.load(tmp_path / "config.json")
    assert key in str(err.value) and words in str(err.value) and "\n" not in str(err.value)


def test_deepseek_vl_hybrid_flops_by_hand():
    """DeepSeek-VL hybrid at its defaults, one image at 224 and 384 pixels (14 and 24 SigLIP patches of 16 a side): the
    SigLIP tower (12 layers of width 768, MLP 3,072) and its pooling head (its probe's keys and values over every patch);
    the SAM tower at 1,024 pixels whatever the image (GOT-OCR 2.0's: 8 layers over windows padded to 70 a side, 4 global,
    its neck); the second neck over the first global layer's output; high_res_vision_proj on both necks' outputs, each
    resized to 4 × the SigLIP grid (56, 96) and halved twice (256 → 512 → 1,024 channels); the aligner over the 196 (576)
    tokens: 768 → 2,048 and 1,024 → 2,048 side by side, then 4,096 → 4,096. 2 FLOPs a multiply-add; FlopCounterMode's."""
    from ffncalc.parts.vision import Vision

    d, ff, o, text, w, g = 768, 3072, 256, 4096, 14, 64
    padded = 70
    sam = g * g * 3 * 16 * 16 * d + 8 * (padded**2 * 4 * d * d + 2 * padded**2 * w * w * d + 2 * padded**2 * w * d)
    sam += 4 * (g * g * 4 * d * d + 2 * g**4 * d + 2 * g**3 * d) + 12 * g * g * 2 * d * ff + g * g * (d * o + 9 * o * o)
    second_neck = g * g * (d * o + 9 * o * o)

    def macs(side):
        n = side * side
        siglip = n * 3 * 16 * 16 * d + 12 * (n * (4 * d * d + 2 * d * ff) + 2 * n * n * d)
        head = n * 2 * d * d + 2 * d * d + 2 * n * d + 2 * d * ff
        proj = 2 * ((2 * side) ** 2 * 9 * o * 2 * o + n * 9 * 2 * o * 4 * o)
        aligner = n * (d * text // 2 + 4 * o * text // 2 + text * text)
        return siglip + head + sam + second_neck + proj + aligner

    _, model = hf.load(HERE / "configs" / "deepseek_vl_hybrid.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    for size in (224, 384):
        side = size // 16
        assert replace(vision, image_size=size).per_image(model)[:2] == (side * side, 2 * macs(side))
        assert 2 * macs(side) == next(r["total"] for r in truth("deepseek_vl_hybrid")["image_flops"]["runs"] if r["size"] == size)


def test_lfm3_vl_tower_flops_by_hand():
    """LFM3-VL at its defaults, one image of 512 and of 256 pixels (32 × 32 and 16 × 16 patches of 16): the linear patch
    embedding (two frames of 3 × 16 × 16 pixels → 1,024), each convolution layer of layer_types (in_proj to 3 × 1,024,
    a depthwise 3 × 3 convolution, out_proj), each attention layer (q and out_proj of 1,024, k and v of 8 heads of 64,
    every patch meeting every patch), every layer's SwiGLU MLP (1,024 → 2 × 2,560 → 1,024), then the projector over each
    2 × 2 patches (4,096 → projector_hidden_size → the text width). 2 FLOPs a multiply-add; FlopCounterMode's."""
    from ffncalc.parts.vision import Vision

    data = json.loads((HERE / "configs" / "lfm3_vl.json").read_text())
    kinds = data["vision_config"]["layer_types"]
    convs, attention = kinds.count("conv"), len(kinds) - kinds.count("conv")
    d, ff, kv, hidden, text = 1024, 2560, 8 * 64, data["projector_hidden_size"], data["text_config"]["hidden_size"]

    def macs(side):
        n = side * side
        per_patch = 3 * 2 * 16 * 16 * d + convs * (4 * d * d + 9 * d) + attention * (2 * d * d + 2 * d * kv + 2 * n * d)
        per_patch += len(kinds) * 3 * d * ff
        return n * per_patch + n // 4 * (4 * d * hidden + hidden * text)

    _, model = hf.load(HERE / "configs" / "lfm3_vl.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    for size in (512, 256):
        side = size // 16
        assert replace(vision, image_size=size).per_image(model)[:2] == (side * side // 4, 2 * macs(side))
        assert 2 * macs(side) == next(r["total"] for r in truth("lfm3_vl")["image_flops"]["runs"] if r["size"] == size)


def test_voxtral_realtime_by_hand():
    """Voxtral Realtime at its defaults (Voxtral Mini 4B Realtime's shapes): its causal encoder, conv1 (128 -> 1280)
    and conv2 (1280 -> 1280, stride 2) of kernel 3 with biases, no position table, 32 layers of width 1280 with 32
    heads of 64 (q, v and o_proj with biases, k_proj not), a SwiGLU of 5,120 (down_proj alone with a bias), two
    RMSNorms each and a final one; four positions a token through Linear(5120, 3072) → GELU → Linear(3072, 3072), no
    biases; the text decoder's 26 layers each with Linear(3072, 32) and Linear(32, 3072) of its adaptive norm, its head
    tied. One 30-s window (3,000 frames, 1,500 positions) computes the whole square of scores that its causal
    sliding-window mask then masks (eager attention): 375 tokens."""
    from fractions import Fraction

    from ffncalc.parts.audio import Audio

    d, a, f, n, mels, text = 1280, 2048, 5120, 1500, 128, 3072
    layer = (d * a + a) + d * a + (d * a + a) + (a * d + d) + 2 * d + 3 * d * f + d
    assert groups("voxtral_realtime")["tower"] == mels * 3 * d + d + d * 3 * d + d + 32 * layer + d
    assert groups("voxtral_realtime")["projector"] == 4 * d * text + text * text
    kv, ff = 8 * 128, 9216
    decoder = text * 4096 + 2 * text * kv + 4096 * text + 3 * text * ff + 2 * text + 2 * text * 32
    assert groups("voxtral_realtime")["text"] == 131072 * text + 26 * decoder + text
    _, model = hf.load(HERE / "configs" / "voxtral_realtime.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    step = n * (3 * d * a + a * d + 3 * d * f) + 2 * n * n * a  # q, k, v, o, the SwiGLU; QKᵀ and AV over the square
    macs = 2 * n * mels * 3 * d + n * d * 3 * d + 32 * step + 375 * (4 * d * text + text * text)
    assert audio.per_window(model) == (375, 2 * macs)
    # the time embedding is one row a forward: its two linears run once a sequence, in every layer
    once = [t for t in terms(model, 1024) if t.component.startswith("ada_norm.linear")]
    assert once and all(t.per_sequence and t.positions == Fraction(1, 1024) for t in once)


def test_fun_asr_nano_by_hand():
    """Fun-ASR-Nano at its defaults: SenseVoice's SAN-M encoder of 70 layers of width 512 (4 heads; q, k, v and o with
    biases; an FSMN of 11 depthwise taps without a bias over the values; fc1 and fc2 of 2,048 with biases; two
    LayerNorms each, and one more after layer 49 and layer 69), the first reading 80 × 7 = 560 stacked features; the
    projector Linear(512, 2048) → ReLU → Linear(2048, 1024) with biases, then two adaptor layers of width 1024 (8 heads,
    MLP 256). One 30-s window is 500 positions (one every 60 ms), each a token, every attention over the whole window."""
    from ffncalc.parts.audio import Audio

    d, first, f, k, n = 512, 560, 2048, 11, 500
    mlp = d * f + f + f * d + d
    layer0 = 3 * (first * d + d) + (d * d + d) + 2 * first + 2 * d + mlp + d * k
    layer = 4 * (d * d + d) + 4 * d + mlp + d * k
    assert groups("fun_asr_nano")["tower"] == layer0 + 69 * layer + 2 * 2 * d
    w, f2 = 1024, 256
    adaptor = 4 * (w * w + w) + 4 * w + w * f2 + f2 + f2 * w + w
    assert groups("fun_asr_nano")["projector"] == d * 2048 + 2048 + 2048 * w + w + 2 * adaptor
    _, model = hf.load(HERE / "configs" / "fun_asr_nano.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    products = 2 * n * n * d  # QKᵀ and AV over the whole window
    first_step = n * (3 * first * d + d * d + 2 * d * f + d * k) + products
    step = n * (4 * d * d + 2 * d * f + d * k) + products
    after = n * (d * 2048 + 2048 * w) + 2 * (n * (4 * w * w + 2 * w * f2) + 2 * n * n * w)
    assert audio.per_window(model) == (n, 2 * (first_step + 69 * step + after))


def test_nemo_speechlm_by_hand():
    """Nemotron 3.5 Transcribe at its defaults: the recognition encoder (8 frames of 128 bins stacked into a position,
    Linear(1024, 1280) without a bias, 32 layers of width 1280 with 10 heads of 128, q_norm and k_norm LayerNorms over
    128 with biases, o_proj alone biased, MLP 5120 with biases) and the diarization model on the same positions (Linear
    (1024, 512), 31 layers of width 512 with 8 heads, MLP 2048; proj to 192, a Conv1d of kernel 3 to 8 × 192 channels,
    the classifier's dense and out_proj over each of the 8 frames of a position), the speakers' activities times their
    8 × 1280 sinusoid table, and Linear(1280, 2688) to the language model; the word-timestamp model (a ConvTranspose1d of
    factor 2, 2 layers of width 1280 with 16 heads of 80 and MLP 640) and its Conv1d head to 23,863 logits: parameters.
    One 40-s window is one chunk of 500 positions, each a token."""
    from ffncalc.parts.audio import Audio

    d, f, n, head = 1280, 5120, 500, 192
    asr = 1024 * d + 2 * d + 32 * (4 * d * d + d + 2 * 2 * 128 + 2 * 2 * d + d * f + f + f * d + d) + 2 * d
    w, fw = 512, 2048
    diar = 1024 * w + 2 * w + 31 * (4 * w * w + w + 2 * 2 * w + w * fw + fw + fw * w + w) + 2 * w + w
    diar += (w * head + head) + (8 * head * head * 3 + 8 * head) + (head * head + head) + (head * 8 + 8)
    s, fs = 1280, 640
    stamps = s * s * 2 + s + 2 * s + 2 * (4 * s * s + s + 2 * 2 * 80 + 2 * 2 * s + s * fs + fs + fs * s + s) + 2 * s
    stamps += 23863 * s + 23863
    assert groups("nemo_speechlm")["tower"] == asr + diar + 2 * d + 2 * 8 + stamps
    assert groups("nemo_speechlm")["projector"] == d * 2688 + 2688
    _, model = hf.load(HERE / "configs" / "nemo_speechlm.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    encoder = n * 1024 * d + 32 * (n * (4 * d * d + 2 * d * f) + 2 * n * n * d)
    diarize = n * 1024 * w + 31 * (n * (4 * w * w + 2 * w * fw) + 2 * n * n * w) + n * w * head
    diarize += n * 8 * head * head * 3 + 8 * n * (head * head + head * 8)
    assert audio.per_window(model) == (n, 2 * (encoder + diarize + n * 8 * d + n * d * 2688))


@pytest.mark.parametrize("model_type", ["voxtral_realtime", "fun_asr_nano", "nemo_speechlm", "vibevoice_asr", "vibevoice"])
def test_speech_model_of_model_type_alone_is_the_whole_class(model_type, tmp_path):
    """A config.json stating only its model_type means every class default, the audio sub-configs' too (their classes'
    declared defaults, or those their readers state where a sub-config has no model_type of its own): the whole class
    transformers builds at its defaults."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    _, model = hf.load(tmp_path / "config.json")
    assert tally(model).params == sum(n for _, n in expanded(truth(model_type)["params"], 2))


def test_phi4_multimodal_audio_window_by_hand():
    """Phi-4-multimodal at its defaults, one 40-s window (4,000 frames of 80 mel bins, 500 positions): NeMo's
    subsampling (conv.0 of 1,024 channels over 2,000 × 40 outputs, a depthwise 3 × 3 and a pointwise 1 × 1 over 1,000 ×
    20 and over 500 × 10, out 10,240 → 1,024), 24 Conformer layers of width 1,024 (feed_forward_in and feed_forward_out
    1,024 → 2 × 1,536 → 1,024; q, k, v, o; QKᵀ and AV over 500 × 500; the GLU 1,024 → 2,048; dw_conv of kernel 3 and
    pw_conv over 502 positions; ext_pw_conv_1d), the speech projector 1,024 → 3,072 → 3,072 over 500 tokens. 2 FLOPs a
    multiply-add; FlopCounterMode's figure at 500 positions."""
    from ffncalc.parts.phi4_audio import Phi4Audio

    c, d, f, text, n, k = 1024, 1024, 1536, 3072, 500, 3
    front = 4 * n * 40 * c * 9 + 2 * n * 20 * (c * 9 + c * c) + n * 10 * (c * 9 + c * c) + n * c * 10 * d
    ffns = 2 * n * (d * 2 * f + f * d)
    conv = n * d * 2 * d + (n + k - 1) * (d * k + d * d) + n * d * d
    layer = ffns + 4 * n * d * d + 2 * n * n * d + conv
    projector = n * (d * text + text * text)
    _, model = hf.load(HERE / "configs" / "phi4_multimodal.json")
    (audio,) = [p for p in model.parts if isinstance(p, Phi4Audio)]
    total = 2 * (front + 24 * layer + projector)
    assert audio.per_window(model) == (n, total)
    assert total == next(r["total"] for r in truth("phi4_multimodal")["audio_flops"]["runs"] if r["positions"] == n)


def test_phi4_multimodal_image_tokens_by_hand():
    """Its image processor's num_img_tokens, 256 + 1 + 256 a crop + 16 a row of crops + 16: a 448-pixel image is one crop
    and the global image (545 tokens), an 896-pixel one four crops (1,329), a 1,000-pixel one padded to nine (2,625); the
    tower runs once a crop and once over the global image."""
    from ffncalc.parts.phi4_vision import Phi4Vision

    _, model = hf.load(HERE / "configs" / "phi4_multimodal.json")
    (vision,) = [p for p in model.parts if isinstance(p, Phi4Vision)]
    for size, crops, rows in ((448, 1, 1), (896, 4, 2), (1000, 9, 3)):
        image = replace(vision, image_size=size)
        assert image.tokens == 256 + 1 + 256 * crops + 16 * rows + 16
        assert image.crops == crops + 1
    assert [r["tokens"] for r in truth("phi4_multimodal")["image_flops"]["runs"]] == [545, 1329]


@pytest.mark.torch
def test_phi4_multimodal_verifies_with_images_and_audio():
    """Both its towers at once: an 896-pixel image (its global image and four crops through the tower, 1,329 tokens
    through the projector) and 50 s of audio (5,000 frames through the front end, 625 positions padded to two windows
    of 500) run through the reference modules to the count's FLOPs, one text layer kept."""
    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model

    label, stack = hf.load(HERE / "configs" / "phi4_multimodal.json")
    m = with_inputs(Model(label, replace(stack, layers=stack.layers[:1])), images=1, image_size=896, audio_seconds=50)
    assert verify(m.stack, model=label, seq_len=2048).ok


def test_phi4_multimodal_shapes_not_read_are_one_line(tmp_path, cli):
    """A crop size other than the tower's image size, or convolution widths the next convolution cannot read, are
    named by their key in one line."""
    data = json.loads((HERE / "configs" / "phi4_multimodal.json").read_text())
    for key, value, words in (
        ("vision_config", {"crop_size": 336}, "crop_size: 336"),
        ("audio_config", {"ext_pw_out_channel": 512}, "ext_pw_out_channel: 512"),
    ):
        (tmp_path / "config.json").write_text(json.dumps({**data, key: {**data[key], **value}}))
        code, _, err = cli("count", str(tmp_path / "config.json"))
        assert code == 2 and words in err and err.count("\n") == 1, err


def test_inkling_vision_tower_by_hand():
    """Inkling at its defaults: each patch of 2 frames × 40 × 40 pixels × 3 channels through 24 projections planned from
    40's factors (5, 2, 2, 2) and the 2 frames: four 3 → 3 over its 3,200 pixels, 75 → 128 and five 128 → 128 over 5 ×
    5 cells (128 a patch), 512 → 320 and two 320 → 320 (32), 1,280 → 1,216 and three 1,216 → 1,216 (8), 4,864 → 4,800
    and two 4,800 → 4,800 (2), 9,600 → 614,400, two 614,400 → 614,400 and 614,400 → 6,144 (1: the patch's token); a
    640-pixel image is 16 rows of 17 patches (divide_to_patches). FlopCounterMode's figure."""
    from ffncalc.parts.hmlp_vision import HmlpVision

    macs = 4 * 3200 * 3 * 3 + 128 * (75 * 128 + 5 * 128 * 128) + 32 * (512 * 320 + 2 * 320 * 320)
    macs += 8 * (1280 * 1216 + 3 * 1216 * 1216) + 2 * (4864 * 4800 + 2 * 4800 * 4800)
    macs += 9600 * 614400 + 2 * 614400 * 614400 + 614400 * 6144
    _, model = hf.load(HERE / "configs" / "inkling_mm_model.json")
    (vision,) = [p for p in model.parts if isinstance(p, HmlpVision)]
    assert vision.per_image(model)[:2] == (16 * 17, 2 * 16 * 17 * macs)
    assert 2 * 16 * 17 * macs == next(r["total"] for r in truth("inkling_mm_model")["image_flops"]["runs"] if r["size"] == 640)


def test_inkling_audio_is_table_lookups():
    """Inkling's audio tower: 80 × 256 rows of 6,144 (125,829,120 parameters) and an RMSNorm; a frame's 80 rows summed,
    no matmul (FlopCounterMode counts none at 600 and 200 frames); 30 s of audio are 600 tokens of the prompt (its
    feature extractor's 0.05-s frames)."""
    from ffncalc.parts.audio_codes import AudioCodes

    _, model = hf.load(HERE / "configs" / "inkling_mm_model.json")
    (audio,) = [p for p in model.parts if isinstance(p, AudioCodes)]
    terms = audio.frame_terms()
    assert sum(t.numel for t in terms) == 80 * 256 * 6144 + 6144 and all(t.macs == 0 for t in terms)
    assert [r["total"] for r in truth("inkling_mm_model")["audio_code_flops"]["runs"]] == [0, 0]
    assert replace(audio, seconds=30).request_tokens() == 600


@pytest.mark.torch
def test_inkling_verifies_with_images_and_audio():
    """Both towers at once: a 320-pixel image (8 rows of 9 patches) and 30 s of audio (600 frames) through the
    reference modules to the count's FLOPs, one text layer kept."""
    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model

    label, stack = hf.load(HERE / "configs" / "inkling_mm_model.json")
    m = with_inputs(Model(label, replace(stack, layers=stack.layers[:1])), images=1, image_size=320, audio_seconds=30)
    assert verify(m.stack, model=label, seq_len=2048).ok


@pytest.mark.torch
@pytest.mark.parametrize("seconds", [7, 50])
def test_phi4_multimodal_audio_of_any_length_equals_flopcountermode(seconds):
    """Audio shorter than a window (7 s: 700 frames, 88 positions, its convolutions' ceilings) and longer (50 s: 625
    positions padded to two windows of 500, the padding cut before the projector): the count's audio work equals
    FlopCounterMode over the whole class's encoder and speech projector on the meta device."""
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    from ffncalc.analysis.hfwhole import instantiate_whole
    from ffncalc.model.terms import Emitter
    from ffncalc.parts.phi4_audio import Phi4Audio

    data = json.loads((HERE / "configs" / "phi4_multimodal.json").read_text())
    _, model = hf.load(HERE / "configs" / "phi4_multimodal.json")
    (audio,) = [replace(p, seconds=seconds) for p in model.parts if isinstance(p, Phi4Audio)]
    e = Emitter("layers")
    audio.input_terms(e, model, 1)
    core = sum(2 * t.count * t.shape[0] * t.shape[1] * t.shape[2] * t.positions for t in e.out if t.role == "core")
    ours = core + sum(2 * t.macs * t.positions for t in e.out if t.role != "core")
    net = instantiate_whole(data)
    net.requires_grad_(False)
    embed = net.model.embed_tokens_extend.audio_embed
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        h = embed.encoder(torch.ones(1, 100 * seconds, 80, device="meta"), None)
        embed.down_proj_for_speech(nn.functional.gelu(embed.up_proj_for_speech(h)))
    assert ours == sum(counter.get_flop_counts()["Global"].values())
    assert audio.request_tokens() == {7: 88, 50: 625}[seconds]


def test_mllama_by_hand():
    """Llama 3.2 Vision at MllamaConfig's defaults, derived by hand from MllamaVisionModel and MllamaTextModel: 40 text
    layers of width 4,096 (32 heads of 128, 8 KV heads, SwiGLU 14,336), 8 of them (3, 8, … 38) cross-attention layers
    with q, k, v, o, q_norm and k_norm over a head and two tanh gates in place of self-attention, a table of 128,256 + 8
    rows; the tower 1,280 wide (16 heads, MLP 5,120) with 32 layers and 8 gated global layers over 4 tiles of 448 pixels
    (1,024 patches of 14 and a class token a tile, padded to 1,032 rows), 5 layers' features beside the last (7,680)
    through Linear(7,680, 4,096). One image: the patch convolution, 40 layers over 4 × 1,032 rows meeting every other,
    the tiles' mask product (4,128²), the projector over 4 × 1,025 rows; the language model's cache a sequence is K and V
    of those rows in each cross-attention layer."""
    from ffncalc.parts.vision import Vision

    _, model = hf.load(HERE / "configs" / "mllama.json")
    d, kv, ff, vocab = 4096, 1024, 14336, 128256
    attn = d * d * 2 + kv * d * 2
    text = (vocab + 8) * d + vocab * d + d + 40 * (3 * d * ff + 2 * d) + 32 * attn + 8 * (attn + 2 * 128 + 2)
    assert 8 * (attn + 2 * 128 + 2 + 3 * d * ff + 2 * d) == 8 * 218_112_258
    w, f, rows = 1280, 5120, 32 * 32 + 1
    layer = 4 * w * w + 2 * w * f + f + w + 4 * w
    tables = rows * w + 9 * 4 * rows * w + 2 * 9 * 4 * w + 3
    tower = w * 3 * 14 * 14 + w + tables + 2 * 2 * w + 40 * layer + 8 * 2
    assert ours(model) == {"text": text, "tower": tower, "projector": 7680 * d + d} == groups("mllama")
    assert tally(model).params == 10_642_941_475
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    n = 4 * 1032
    macs = 4 * 1024 * w * 3 * 14 * 14 + 40 * (n * (4 * w * w + 2 * w * f) + 2 * n * n * w) + n * n + 4 * rows * 7680 * d
    assert vision.per_image(model)[:2] == (4 * rows, 2 * macs)
    assert 2 * macs == next(r["total"] for r in truth("mllama")["image_flops"]["runs"] if r["size"] == 448)
    import ffncalc

    served = ffncalc.infer(str(HERE / "configs" / "mllama.json"), prompt=512, generate=64, hardware="h100-sxm", images=2)
    # bf16 K and V of 2 images' rows in the 8 cross-attention layers alone
    assert served.figures["cross_kv_bytes_per_sequence"].value == 8 * 2 * kv * 2 * (2 * 4 * rows)


@pytest.mark.torch
def test_mllama_head_is_never_tied(tmp_path):
    """MllamaForConditionalGeneration with tie_word_embeddings true still builds lm_head apart (vocab_size rows against
    the table's vocab_size + 8): the count equals the class transformers builds."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    data = {**json.loads((HERE / "configs" / "mllama.json").read_text()), "tie_word_embeddings": True}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    assert tally(model).params == sum(p.numel() for p in instantiate_whole(data).parameters()) == 10_642_941_475


def test_idefics_by_hand():
    """IDEFICS at IdeficsConfig's defaults, derived by hand from IdeficsModel: 32 LLaMA layers of width 4,096 (32 heads,
    SwiGLU 11,008), before each (cross_layer_interval 1) a gated cross-attention layer of its own (q and o of 4,096, k and
    v from the tower's 768 features, its own SwiGLU, two RMSNorms, two scalar gates), 32,000 rows a side; the CLIP-built
    tower 768 wide (16 heads, MLP 5,120, 32 layers) over 16 × 16 patches of 14 and a class token, whose 257 rows are the
    keys and values as they are (no projector). One image: the patch convolution and 32 layers over 257 rows; its
    cache a sequence: K and V of those rows in each of the 32 cross-attention layers."""
    from ffncalc.parts.vision import Vision

    _, model = hf.load(HERE / "configs" / "idefics.json")
    d, ff, vocab, w, f, rows = 4096, 11008, 32000, 768, 5120, 16 * 16 + 1
    layer = 4 * d * d + 3 * d * ff + 2 * d
    cross = 2 * d * d + 2 * w * d + 3 * d * ff + 2 * d + 2
    text = 2 * vocab * d + d + 32 * layer + 32 * cross
    tower = w * 3 * 14 * 14 + w + rows * w + 2 * w + 32 * (4 * w * w + 4 * w + 2 * w * f + f + w + 4 * w) + 2 * w
    assert ours(model) == {"text": text, "tower": tower, "projector": 0} == groups("idefics")
    assert tally(model).params == 12_670_461_504
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    macs = 256 * w * 3 * 14 * 14 + 32 * (rows * (4 * w * w + 2 * w * f) + 2 * rows * rows * w)
    assert vision.per_image(model)[:2] == (rows, 2 * macs)
    assert 2 * macs == next(r["total"] for r in truth("idefics")["image_flops"]["runs"] if r["size"] == 224)
    import ffncalc

    served = ffncalc.infer(str(HERE / "configs" / "idefics.json"), prompt=256, generate=16, hardware="h100-sxm", images=3)
    assert served.figures["cross_kv_bytes_per_sequence"].value == 32 * 2 * d * 2 * (3 * rows)


@pytest.mark.parametrize(
    ("model_type", "change", "words"),
    [
        (
            "idefics",
            {"use_resampler": True, "perceiver_config": {"qk_layer_norms_perceiver": True}},
            "qk_layer_norms_perceiver: true: the resampler's q and k LayerNorms are not read yet",
        ),
        ("mllama", {"vision_config": {"vision_output_dim": 4096}}, "vision_output_dim: 4096: the tower writes 7680 features"),
    ],
)
def test_cross_attention_wrappers_refuse_what_they_do_not_read_in_one_line(model_type, change, words, tmp_path):
    """IDEFICS' resampler with q and k LayerNorms, and Llama 3.2 Vision whose projector reads other than the tower's 6 ×
    1,280 features: one line naming the key."""
    from ffncalc.errors import InputError

    data = json.loads((HERE / "configs" / f"{model_type}.json").read_text())
    data = {k: ({**data[k], **v} if isinstance(v, dict) else v) for k, v in {**data, **change}.items()}
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        hf.load(tmp_path / "config.json")
    assert str(err.value).endswith(words) and "\n" not in str(err.value)


@pytest.mark.torch
def test_idefics_perceiver_resampler_equals_transformers(tmp_path):
    """IDEFICS with use_resampler (IdeficsPerceiverResampler at its perceiver_config's defaults: 64 latents of the
    tower's 768, 6 layers of 16 heads of 96, LayerNorms, a ReLU MLP of 3,072): every component equal to the whole class
    transformers builds, one image's FLOPs through the tower and the resampler equal to FlopCounterMode at 224 and 448
    pixels, each image 64 rows of the cross-attention's keys and values; verify runs it through the reference modules."""
    from ffncalc.analysis.hfwhole import check_whole, image_flops
    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model
    from ffncalc.parts.vision import Vision

    data = {**json.loads((HERE / "configs" / "idefics.json").read_text()), "use_resampler": True}
    (tmp_path / "config.json").write_text(json.dumps(data))
    label, model = hf.load(tmp_path / "config.json")
    report = check_whole(hf.read_config(tmp_path / "config.json"), model, model=label)
    assert report.ok and "vision.projector.resampler.attn.q" in {c.component for c in report.checks}
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    for size in (224, 448):
        sized = {**data, "vision_config": {**data["vision_config"], "image_size": size}}
        assert replace(vision, image_size=size).per_image(model)[:2] == (64, image_flops(sized, size)["total"])
    m = with_inputs(Model(label, replace(model, layers=model.layers[:2])), images=1)
    assert verify(m.stack, model=label, seq_len=64).ok


@pytest.mark.torch
@pytest.mark.parametrize("changes", [{}, {"qk_layer_norms": True, "alpha_type": "vector"}], ids=["float", "qk-norms-vector"])
@pytest.mark.parametrize("text", [False, True], ids=["whole", "text"])
def test_idefics_cross_attention_reads_the_towers_width(tmp_path, changes, text):
    """IDEFICS cut down to a language model of 256 (4 heads, SwiGLU 512, 2 layers, each with a cross-attention layer
    before it) and a tower of 96 (4 heads, MLP 192, 2 layers, 28-pixel images of 14-pixel patches: 5 rows): the
    cross-attention layers' k and v read the tower's 96 features (2 × 96 × 256 each), whether the whole model or its
    language model alone is read; q and k RMSNorms of a head (qk_layer_norms) in the cross-attention layers alone
    (IdeficsDecoderLayer's self_attn leaves them out), gates of one element or of d. By hand, and equal to the whole
    class transformers builds."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    data = json.loads((HERE / "configs" / "idefics.json").read_text())
    data |= {"hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 512, "num_hidden_layers": 2}
    data |= {"vocab_size": 1024, "cross_layer_interval": 1, **changes}
    data["vision_config"] |= {"embed_dim": 96, "num_attention_heads": 4, "intermediate_size": 192}
    data["vision_config"] |= {"num_hidden_layers": 2, "image_size": 28}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json", text=text)
    d, ff, v, w, f, rows = 256, 512, 1024, 96, 192, 5
    gates, norms = (2 * d, 2 * 64) if changes else (2, 0)
    cross = 2 * d * d + 2 * w * d + 3 * d * ff + 2 * d + gates + norms
    language = 2 * v * d + d + 2 * (4 * d * d + 3 * d * ff + 2 * d) + 2 * cross
    tower = w * 3 * 14 * 14 + w + rows * w + 2 * w + 2 * (4 * w * w + 4 * w + 2 * w * f + f + w + 4 * w) + 2 * w
    if text:
        assert tally(model).params == language
    else:
        assert tally(model).params == language + tower == sum(p.numel() for p in instantiate_whole(data).parameters())


def test_dots3_note_towers_by_hand():
    """Dots3 Note at its defaults. Its vision tower: a 14 × 14 patch convolution with a bias (588 → 1,536) and an RMSNorm,
    42 layers each of two RMSNorms, qkv (1,536 → 3 × 1,536) and proj without biases and an RMSNorm of 64 over each
    query and key head; the first 25 a SwiGLU of 4,224, the last 17 a router (1,536 → experts) and 4, 8, …, 64 and 64
    routed experts (608 in all), each a SwiGLU of 2,112 in gate_up_proj and down_proj; its final RMSNorm; its merger, a
    LayerNorm and 2 × 2 patches through 6,144 → 6,144 → 5,120 with biases. Its audio tower: three 3 × 3 convolutions of
    480 channels with biases (1 → 480 → 480 → 480), conv_out (480 × 16 bins → 1,280), 32 layers of two RMSNorms,
    q, v and o_proj with biases and k_proj without (1,280 each), gate_up_proj (1,280 → 2 × 5,120) and down_proj with
    biases; a final RMSNorm; its adapter, a LayerNorm, fc1 (1,280 → 5,120) and fc2 (5,120 → 5,120) with biases."""
    d, ff, m = 1536, 4224, 2112
    experts = [4 * k for k in range(1, 17)] + [64]
    layer = 2 * d + 4 * d * d + 2 * 64
    vision = d * 588 + d + d + 42 * layer + 25 * 3 * d * ff + sum(e * (3 * d * m + d) for e in experts) + d
    vision += 2 * d + (4 * d) ** 2 + 4 * d + 4 * d * 5120 + 5120
    a, c, af = 1280, 480, 5120
    audio = c * 9 + c + 2 * (c * c * 9 + c) + c * 16 * a + a + 2 * a + a * af + af + af * af + af
    audio += 32 * (2 * a + 4 * a * a + 3 * a + a * 2 * af + 2 * af + af * a + a)
    _, model = hf.load(HERE / "configs" / "dots3_note.json")
    mine = {"vision": 0, "audio": 0}
    for t in terms(model, 8, partial=True):
        if t.component.startswith(("vision.", "audio.")):
            mine[t.component.split(".")[0]] += t.numel * t.stored_count
    assert (vision, audio) == (6_871_277_312, 886_199_680)
    assert mine == {"vision": vision, "audio": audio}
    recorded = {"vision": 0, "audio": 0}
    for name, n in expanded(truth("dots3_note")["params"], 2):
        if "_tower." in name:
            recorded[name.split("_tower.")[0].rsplit(".", 1)[-1]] += n
    assert recorded == mine


def test_dots3_note_image_and_chunk_flops_by_hand(tmp_path):
    """Dots3 Note with its towers small (the record's reduced: width 64, 4 heads, layers of a SwiGLU of 96, 96, then 4
    and 8 experts of 48, two a patch; the audio tower of width 64, 2 layers, a SwiGLU of 96, 8 channels), as
    FlopCounterMode counted transformers' eager experts. One image of n patches: the patch convolution (588 → 64), every
    layer's q, k, v and proj and every patch meeting every patch, the dense layers' SwiGLU, the routed layers' routers
    and two experts a patch, then the merger over n / 4 tokens (256 → 256 → 5,120). One chunk of p positions (8 p
    frames): the convolutions over 64 × 4p, 32 × 2p and 16 × p outputs, conv_out (128 → 64), each layer's four
    projections, its p × p scores and values and its SwiGLU, then the adapter (64 → 5,120 → 5,120). 2 FLOPs a
    multiply-add."""
    from ffncalc.parts.audio import Audio
    from ffncalc.parts.vision import Vision

    record = truth("dots3_note")
    data = json.loads((HERE / "configs" / "dots3_note.json").read_text())
    data = {**data, **{key: {**data[key], **value} for key, value in record["image_flops"]["reduced"].items()}}
    d, t = 64, 5120

    def image(side):
        n = side * side
        per_patch = d * 588 + 4 * (4 * d * d + 2 * n * d) + 2 * 3 * d * 96 + (4 + 8) * d + 2 * 2 * 3 * d * 48
        return n * per_patch + n // 4 * (4 * d * 4 * d + 4 * d * t)

    def chunk(p):
        convs = 9 * 8 * 64 * 4 * p + 9 * 64 * 32 * 2 * p + 9 * 64 * 16 * p
        return convs + p * 128 * d + 2 * (p * 4 * d * d + 2 * p * p * d + p * 3 * d * 96) + p * (d * t + t * t)

    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    for size in (224, 112):
        side = size // 14
        assert replace(vision, image_size=size).per_image(model)[:2] == (side * side // 4, 2 * image(side))
        assert 2 * image(side) == next(r["total"] for r in record["image_flops"]["runs"] if r["size"] == size)
    for p in (750, 38):
        assert replace(audio, source_positions=p).per_window(model) == (p, 2 * chunk(p))
        assert 2 * chunk(p) == next(r["total"] for r in record["audio_flops"]["runs"] if r["positions"] == p)
    # 70 s: a chunk of 60 s (750 positions) and one of 10 s (125), padded to the longest: both through the
    # convolutions and the layers at 750 positions, the adapter over the 875 valid ones alone (as transformers pads them)
    seventy = replace(audio, seconds=70)
    assert seventy.layout() == [750, 750] and seventy.valid_layout() == [750, 125]
    assert seventy.heard(model) == (875, 2 * (2 * chunk(750) - 625 * (d * t + t * t)))


@pytest.mark.torch
def test_dots3_note_chunks_padded_to_the_longest_equal_flopcountermode(tmp_path):
    """70 s of audio through Dots3 Note's audio tower (small, the record's reduced) as its feature extractor hands it: a
    60-s chunk and a 10-s one, both 6,000 frames (padded to the longest), with their sample lengths; FlopCounterMode
    over get_audio_features (eager attention) equals the count's: both chunks through the convolutions and the layers,
    the adapter over the 875 valid positions alone."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ffncalc.analysis.hfdots3 import _built
    from ffncalc.parts.audio import Audio

    record = truth("dots3_note")["audio_flops"]
    data = json.loads((HERE / "configs" / "dots3_note.json").read_text())
    net = _built(data, "audio_tower")
    features = torch.ones(2, 128, 6000)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_audio_features(input_features=features, chunk_sample_lengths=torch.tensor([960_000, 160_000]))
    small = {**data, **{key: {**data[key], **value} for key, value in record["reduced"].items()}}
    (tmp_path / "config.json").write_text(json.dumps(small))
    _, model = hf.load(tmp_path / "config.json")
    (audio,) = [p for p in model.parts if isinstance(p, Audio)]
    assert replace(audio, seconds=70).heard(model) == (875, sum(counter.get_flop_counts()["Global"].values()))


@pytest.mark.torch
def test_dots3_note_verifies_an_image_and_padded_chunks_together():
    """Dots3 Note's reference modules (its towers at their defaults, one text layer) run two 224-pixel images and 70 s
    of audio (two chunks padded to the longest) to the count's parameters and FLOPs, component by component."""
    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model

    label, stack = hf.load(HERE / "configs" / "dots3_note.json")
    m = with_inputs(Model(label, replace(stack, layers=stack.layers[:1])), images=2, image_size=224, audio_seconds=70)
    assert verify(m.stack, model=label, seq_len=2048).ok


@pytest.mark.parametrize(
    ("section", "key", "value", "words"),
    [
        ("vision_config", "mlp_layer_types", ["dense"] * 3, "expected 42 of 'dense' or 'sparse'"),
        ("vision_config", "per_layer_config", {"30": {"num_local_experts": 0}}, "layer 30: num_local_experts 0"),
        ("vision_config", "adapter_out_dim", 4096, "4096 features: the language model's width is 5120"),
        ("audio_config", "conv_output_size", 7000, "7000 features: its convolutions write 480 × 16"),
    ],
)
def test_dots3_note_tower_shapes_not_read_are_one_line(cli, tmp_path, section, key, value, words):
    """A Dots3 Note config whose towers' shapes its classes cannot run: one line naming the key, exit 2."""
    data = json.loads((HERE / "configs" / "dots3_note.json").read_text())
    data[section] = {**data[section], key: value}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and words in err and key in err and err.count("\n") == 1, err


def test_fast_vlm_fastvithd_by_hand():
    """FastVLM's FastViTHD (timm's fastvit_mci3, reparameterized; Vasu et al. 2025 §3.2), by hand: the stem (3 → 96,
    3 × 3 stride 2; depthwise 3 × 3 stride 2; 1 × 1), five stages of widths 96…1536 and depths 2, 12, 24, 4, 2 — the
    last two attention stages (heads of 32) after a depthwise 7 × 7 position encoding, the first three RepMixer stages
    (a depthwise 3 × 3) — each block's ConvMlp (depthwise 7 × 7 without a bias, a BatchNorm, 1 × 1 to 4w and back) and
    layer scales, each stage after the first after a grouped 7 × 7 of stride 2 and a 1 × 1; the final 3 × 3 grouped
    convolution to 3072 channels with its squeeze-and-excitation to 192: 122,714,208 parameters. A 1,024-pixel image
    is 16 × 16 tokens (six stride-2 steps), its FLOPs 2 a multiply-add of every convolution's output positions and
    of the attention's products and linears; the projector 3072 → 3584 → 3584 over the 256 tokens."""
    from ffncalc.parts.vision import Vision

    _, model = hf.load(HERE / "configs" / "fast_vlm.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    widths, depths, attention = (96, 192, 384, 768, 1536), (2, 12, 24, 4, 2), (False, False, False, True, True)
    params = 96 * 27 + 96 + 96 * 9 + 96 + 96 * 96 + 96
    macs = 512**2 * 96 * 27 + 256**2 * (96 * 9 + 96 * 96)
    side = 256
    for i, (w, n, attn) in enumerate(zip(widths, depths, attention)):
        side = side // 2 if i else side
        p = side * side
        if i:  # the grouped 7 × 7 (one channel in a group) and the 1 × 1, biases
            params += w * 49 + w + w * w + w
            macs += p * (w * 49 + w * w)
        if attn:  # the position encoding; a LayerNorm, qkv (no bias), proj, two scales a block; the square twice
            params += w * 49 + w + n * (2 * w + 3 * w * w + w * w + w + 2 * w)
            macs += p * w * 49 + n * (p * 4 * w * w + 2 * p * p * w)
        else:  # the 3 × 3 mixer and its bias, one scale a block
            params += n * (w * 9 + w + w)
            macs += n * p * w * 9
        params += n * (w * 49 + 2 * w + 4 * w * w + 4 * w + 4 * w * w + w)  # ConvMlp: conv, BatchNorm, fc1, fc2
        macs += n * p * (w * 49 + 8 * w * w)
    params += 3072 * 9 + 3072 + 3072 * 192 + 192 + 192 * 3072 + 3072
    macs += 16 * 16 * 3072 * 9 + 2 * 3072 * 192
    assert side == 16 and params == 122_714_208
    tower = sum(t.numel * t.stored_count for t in terms(model, 8, partial=True) if t.component.startswith("vision.stage"))
    tower += sum(
        t.numel * t.stored_count for t in terms(model, 8, partial=True) if t.component.startswith(("vision.stem", "vision.final"))
    )
    assert tower == params
    projector = 256 * (3072 * 3584 + 3584 * 3584)
    assert vision.per_image(model)[:2] == (256, 2 * (macs + projector))


def test_perception_lm_perception_encoder_by_hand():
    """Perception LM at its defaults repaired with the released tower (PerceptionLMConfig's default resnet50 has no
    embed_dim for its projector): Perception Encoder L/14 as timm builds it (Bolya et al. 2025 Table 1: width 1,024,
    24 layers, 16 heads, MLP 4,096, 336 pixels), CLIP's form — a patch convolution without a bias, a class token, 577
    table rows, LayerNorms before and after the layers — and an attention-pooling head (a latent query; q, k, v and o;
    a LayerNorm and the MLP) that TimmWrapperModel runs: 316,102,656 parameters. One 336-pixel image: 577 positions
    through the layers, k and v of the head over them, its one query; the projector 1,024 → 4,096 → 4,096 over the 576
    patches (the class token dropped)."""
    from ffncalc.parts.vision import Vision

    _, model = hf.load(HERE / "configs" / "perception_lm.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    d, f, n = 1024, 4096, 577
    layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d
    head = d + 4 * (d * d + d) + 2 * d + (d * f + f) + (f * d + d)
    tower = 24 * layer + d * 3 * 14 * 14 + d + n * d + 2 * 2 * d + head
    assert tower == 316_102_656 == groups("perception_lm")["tower"]
    step = 2 * n * (4 * d * d + 2 * d * f) + 2 * 2 * n * n * d
    pooling = 2 * n * 2 * d * d + 2 * (2 * d * d + 2 * d * f) + 2 * 2 * n * d
    flops = 24 * step + 2 * 576 * d * 3 * 14 * 14 + pooling + 2 * 576 * (d * 4096 + 4096 * 4096)
    assert vision.per_image(model)[:2] == (576, flops)


@pytest.mark.torch
def test_perception_lm_tower_as_released_equals_transformers(tmp_path):
    """Perception LM's tower as its released checkpoints state it (Cho et al. 2025 §3: PE L/14's layers but the last,
    at 448 pixels, the features before any pooling; model_args depth 23, img_size 448, global_pool '', no post norm,
    layer scales from init_values), built by transformers now with timm: every component's parameters, and one
    image's FLOPs against FlopCounterMode on get_image_features."""
    from ffncalc.analysis.hfwhole import check_whole, image_flops
    from ffncalc.parts.vision import Vision

    data = json.loads((HERE / "configs" / "perception_lm.json").read_text())
    args = {"embed_dim": 1024, "img_size": [448, 448], "depth": 23, "global_pool": "", "use_post_transformer_norm": False}
    data["vision_config"]["model_args"] = {**args, "init_values": 0.1, "ref_feat_shape": [32, 32]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    label, model = hf.load(path)
    report = check_whole(hf.language_model(c), model)
    assert len([ch for ch in report.checks if ch.component.startswith("vision.")]) == 12
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    assert vision.per_image(model)[1] == image_flops(data, 448)["total"]


def test_granite_docling_by_hand():
    """Granite Docling at its defaults: a SigLIP-built tower of 12 layers of width 768 (MLP 3,072) over tiles of 512
    pixels (32 × 32 patches of 16: a table of 1,024 rows), post_layernorm; its connector's ln_in, a pixel shuffle of 4
    (12,288 features a token), the coarse projection to 1,024 (no bias), ln_mid, GELU, mlp_fc2 (no bias) and ln_out;
    three deepstack mergers (LayerNorm of 12,288, 12,288 → 1,024 → 1,024 with biases) on layers 3, 7 and 10; the fine
    path the same at a shuffle of 2 (3,072 features), built and run by no image unless asked. One tile becomes 64
    tokens (16 at 256 pixels); its FLOPs are the tower's, the projection and mlp_fc2, and the mergers over those tokens.
    2 FLOPs a multiply-add; FlopCounterMode's."""
    from ffncalc.parts.vision import Vision

    d, ff, depth, out = 768, 3072, 12, 1024
    layer = 4 * (d * d + d) + 2 * 2 * d + d * ff + ff + ff * d + d  # q, k, v, out_proj; two LayerNorms; fc1, fc2
    tower = 3 * 16 * 16 * d + d + 1024 * d + depth * layer + 2 * d

    def merger(m):  # LayerNorm(m), linear_1 (m → out), linear_2 (out → out), with biases
        return 2 * m + m * out + out + out * out + out

    coarse, fine = 16 * d * out + 3 * merger(16 * d), 4 * d * out + 3 * merger(4 * d)
    connector = 2 * d + coarse + fine + 2 * out + out * out + 2 * out  # ln_in, paths, ln_mid, mlp_fc2, ln_out
    assert (tower, connector) == (86_433_024, 70_364_672)
    _, model = hf.load(HERE / "configs" / "granite_docling.json")
    got = ours(model)
    assert got["tower"] + got["projector"] == tower + connector
    assert got == groups("granite_docling")

    def macs(side):
        n = side * side
        per_patch = 3 * 16 * 16 * d + depth * (4 * d * d + 2 * d * ff + 2 * n * d)
        return n * per_patch + n // 16 * (4 * (16 * d * out + out * out))  # projection + mlp_fc2, three mergers

    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    for size in (512, 256):
        side = size // 16
        assert replace(vision, image_size=size).per_image(model)[:2] == (side * side // 16, 2 * macs(side))
        assert 2 * macs(side) == next(r["total"] for r in truth("granite_docling")["image_flops"]["runs"] if r["size"] == size)


@pytest.mark.parametrize(
    ("where", "key", "value", "words"),
    [
        ("vision_config", "out_hidden_size", 512, "out_hidden_size: 512 features where the language model's width is 1024"),
        ("vision_config", "scale_factor", 3, "scale_factor: 3 does not divide the tile's 32 patches a side"),
        ("vision_config", "deepstack_visual_indexes", [3, 12], "deepstack_visual_indexes: [3, 12]: each must name one of"),
        (None, "density_router_hidden_size", 256, "density_router_hidden_size: a density router is not read yet"),
    ],
)
def test_granite_docling_shapes_not_read_are_one_line(tmp_path, where, key, value, words):
    """Granite Docling's connector writes the text's width (the class adds its tokens to the text's), its shuffle
    groups whole tiles' patches and its mergers tap the tower's layers; its density router is not read: each refused
    in one line naming the key."""
    from ffncalc.errors import InputError

    data = json.loads((HERE / "configs" / "granite_docling.json").read_text())
    if where:
        data[where] = {**data[where], key: value}
    else:
        data[key] = value
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape(words)):
        hf.load(tmp_path / "config.json")


def test_muse_glimmer_by_hand():
    """MUSE Glimmer at its defaults. Its tower: a linear patch embedding without a bias (2 frames × 3 × 14² = 1,176 →
    1,536), a table of 32 × 32 positions, ln_pre and ln_post (LayerNorms), 50 layers of two LayerNorms, q, k, v and proj
    with biases and an MLP of 8,960 with biases; its projector: the 2 × 2 shuffle (6,144 features), the adapter's fc1
    (6,144 → 4,096) and fc2 (4,096 → 4,096) and vision_projection (4,096 → 6,656), none with a bias, its norm without a
    weight. Its language model: 202,048 rows of 6,656 and an untied head; 52 layers of q (6,656 → 32 × 128), k and v
    (2 × 128 each), o, the gate's gate_proj (6,656 → 4,096), a SwiGLU of 19,968 and four RMSNorms (the q and k norms
    weightless); the final RMSNorm."""
    d, ff = 1536, 8960
    layer = 2 * 2 * d + 4 * (d * d + d) + d * ff + ff + ff * d + d
    tower = 1176 * d + 32 * 32 * d + 2 * 2 * d + 50 * layer
    projector = 6144 * 4096 + 4096 * 4096 + 4096 * 6656
    w, v = 6656, 202_048
    text_layer = w * 4096 + 2 * w * 256 + 4096 * w + w * 4096 + 3 * w * 19_968 + 4 * w
    text = 2 * v * w + 52 * text_layer + w
    assert (tower, projector, text) == (1_852_639_744, 69_206_016, 27_854_780_928)
    _, model = hf.load(HERE / "configs" / "muse_glimmer.json")
    assert ours(model) == {"tower": tower, "projector": projector, "text": text} == groups("muse_glimmer")


def test_muse_glimmer_image_flops_by_hand(tmp_path):
    """MUSE Glimmer with its tower small (the record's reduced: two layers of width 1,536 and an MLP of 128, the first
    windowed and the second whole; the text width 64), as FlopCounterMode counted it. One image of s × s patches of 14:
    the patch embedding (1,176 → 1,536), each layer's q, k, v and proj and its MLP; the full layer every patch meeting
    every patch, the windowed one each patch its own window's, windows of 32 patches a side tiled from the corner (48
    patches a side: windows of 32 and 16); then s² / 4 tokens through the adapter (6,144 → 4,096 → 4,096) and
    vision_projection (4,096 → 64). 2 FLOPs a multiply-add, scores and values each."""
    from ffncalc.parts.vision import Vision

    record = truth("muse_glimmer")["image_flops"]
    data = json.loads((HERE / "configs" / "muse_glimmer.json").read_text())
    data = {**data, **{key: {**data[key], **value} for key, value in record["reduced"].items()}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    d = 1536

    def image(side):
        n = side * side
        spans = [min(32, side - i) for i in range(0, side, 32)]
        pairs = sum((a * b) ** 2 for a in spans for b in spans)
        linear = 2 * n * (1176 * d + 2 * (4 * d * d + 2 * d * 128))
        attention = 2 * 2 * d * (n * n + pairs)
        return linear + attention + 2 * (n // 4) * (6144 * 4096 + 4096 * 4096 + 4096 * 64)

    assert [image(32), image(48)] == [78_458_650_624, 190_222_172_160]
    assert [r["total"] for r in record["runs"]] == [image(32), image(48)]
    assert [replace(vision, image_size=14 * s).per_image(model)[1] for s in (32, 48)] == [image(32), image(48)]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            {"vision_config": {"layer_types": ["window_attention"] * 3}},
            "expected 50 layer kinds (num_hidden_layers), window_attention or full_attention",
        ),
        ({"vision_config": {"pos_emb_height": 31}}, "windows of 31 patches a side are not whole 2 × 2 tokens"),
        ({"projector_hidden_act": "silu"}, "its vision adapter is read with gelu, MuseGlimmerConfig's (not yet another)"),
        ({"text_config": {"layer_rope_theta": [1.0]}}, "layer_rope_theta: expected a list of 52 numbers, one a layer"),
    ],
)
def test_muse_glimmer_shapes_not_read_are_one_line(change, words, tmp_path, cli):
    """MUSE Glimmer's layer kinds not one a layer, windows that split merged tokens, an adapter other than GELU's and
    rotary bases not one a layer: one line naming the key, exit 2."""
    from ffncalc.errors import InputError

    data = json.loads((HERE / "configs" / "muse_glimmer.json").read_text())
    data = {k: ({**data[k], **v} if isinstance(v, dict) else v) for k, v in {**data, **change}.items()}
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        hf.load(tmp_path / "config.json")
    assert str(err.value).endswith(words) and "\n" not in str(err.value)
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_unlimited_ocr_language_model_by_hand():
    """Unlimited OCR's language model (UnlimitedOcrTextConfig's defaults), derived by hand: 129,280 × 1,280 untied
    embeddings and head; 12 layers of multi-head attention (10 heads of 128: q, k, v and o each 1,280², no biases) and
    two RMSNorms; layer 0 a SwiGLU MLP of 6,848; layers 1 to 11 DeepSeek-V2's mixture: a 64 × 1,280 router, 64
    experts of 896 (3 · 1,280 · 896 each, 6 a token) and one shared MLP of 2 × 896; a final RMSNorm. Equal to the
    language model and head UnlimitedOcrForConditionalGeneration builds (tests/hf_whole)."""
    v, d = 129_280, 1_280
    attention, norms = 4 * d * d, 2 * d
    dense = 3 * d * 6_848
    expert = 3 * d * 896
    sparse = 64 * d + 64 * expert + 3 * d * 2 * 896
    total = 2 * v * d + 12 * (attention + norms) + dense + 11 * sparse + d
    assert total == 2_934_734_080
    _, model = hf.load(HERE / "configs" / "unlimited_ocr.json")
    text = sum(n for name, n in expanded(truth("unlimited_ocr")["params"], 2) if name.startswith(TEXT_MODULES))
    assert ours(model)["text"] == text == total
    assert tally(model).active == total - 11 * (64 - 6) * expert  # its tower's and projector's: no token runs them


def test_unlimited_ocr_tower_by_hand():
    """Unlimited OCR's tower and projector at their defaults, derived by hand: the SAM encoder (GOT-OCR 2.0's: a
    16-pixel patch convolution, a 64 × 64 table, 12 layers of 768 with 14 × 14 windows in all but layers 2, 5, 8 and 11,
    the neck to 256) and its two strided 3 × 3 convolutions (256 → 512 → 1,024, no biases); the CLIP encoder (a class
    token, 257 positions of 1,024, pre_layrnorm, 24 layers of 4 · 1,024² + 2 · 1,024 · 4,096 weights with biases and
    two LayerNorms); the projector Linear(2,048, 1,280) with a bias, image_newline and view_separator. Equal to the
    class's tower and projector (tests/hf_whole)."""
    d, ff, out, heads = 768, 3072, 256, 12
    sam = 16 * 16 * 3 * d + d + 64 * 64 * d
    sam += 12 * (4 * d + 3 * d * d + 3 * d + d * d + d + 2 * d * ff + ff + d)  # norms, qkv, proj, the MLP
    sam += 8 * 2 * 27 * (d // heads) + 4 * 2 * 127 * (d // heads)  # rel_pos_h and rel_pos_w: 2 · 14 − 1, 2 · 64 − 1
    sam += d * out + 9 * out * out + 4 * out  # the neck and its two LayerNorms
    convs = 9 * out * 512 + 9 * 512 * 1024
    w, f = 1024, 4096
    clip = w + 257 * w + 2 * w + 24 * (4 * (w * w + w) + w * f + f + f * w + w + 4 * w)
    projector = 2048 * 1280 + 1280 + 2 * 1280
    _, model = hf.load(HERE / "configs" / "unlimited_ocr.json")
    assert ours(model)["tower"] == sam + convs + clip == groups("unlimited_ocr")["tower"]
    assert ours(model)["projector"] == projector == groups("unlimited_ocr")["projector"]


def test_unlimited_ocr_image_by_hand():
    """One image of S pixels: the SAM's S / 16 patches a side, halved twice by the strided convolutions to q = S / 64
    positions a side (16 at 1,024 pixels, 10 at 640); q rows of q tokens, each row with its newline, and the view
    separator: q × (q + 1) + 1 (273, 111). Its CLIP encoder over q² + 1 rows (the class token's too): q, k, v, o and the
    MLP (1,024 → 4,096 → 1,024) a row, QKᵀ and AV over the square, in 24 layers; the projector over the q² rows of
    2,048; the SAM as GOT-OCR 2.0's (test_got_ocr2_sam_tower_flops_by_hand). Against FlopCounterMode's record: the
    projector's Linear as its own module, and the whole."""
    from ffncalc.parts.vision import Vision

    d, ff, out, w, f, text = 768, 3072, 256, 1024, 4096, 1280

    def macs(g):
        padded = -(-g // 14) * 14
        windowed = 8 * (padded**2 * 4 * d * d + 2 * padded**2 * 14 * 14 * d + 2 * padded**2 * 14 * d)
        full = 4 * (g * g * 4 * d * d + 2 * g**4 * d + 2 * g**3 * d)
        sam = g * g * 3 * 16 * 16 * d + windowed + full + 12 * g * g * 2 * d * ff + g * g * (d * out + 9 * out * out)
        q = g // 4
        convs = (g // 2) ** 2 * 9 * out * 512 + q * q * 9 * 512 * w
        rows = q * q + 1
        clip = 24 * (rows * (4 * w * w + 2 * w * f) + 2 * rows * rows * w)
        return sam + convs + clip, q * q * 2 * w * text, q * (q + 1) + 1

    _, model = hf.load(HERE / "configs" / "unlimited_ocr.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    runs = {r["size"]: r for r in truth("unlimited_ocr")["image_flops"]["runs"]}
    for size, tokens in ((1024, 273), (640, 111)):
        tower, projector, n = macs(size // 16)
        assert n == tokens
        assert runs[size]["modules"]["Linear"] == 2 * projector  # multi_modal_projector, its own module
        assert replace(vision, image_size=size).per_image(model)[:2] == (tokens, 2 * (tower + projector))
        assert 2 * (tower + projector) == runs[size]["total"]
    assert runs[1024]["total"] == 1_139_967_033_344 and runs[640]["total"] == 388_149_837_824


@pytest.mark.torch
def test_unlimited_ocr_image_tokens_equal_the_class():
    """The class's own get_image_features (built at its defaults on the meta device) writes q × (q + 1) + 1 rows for one
    global view of S pixels: 273 at 1,024, 111 at 640; as many as the count's tokens an image."""
    import torch

    from ffncalc.analysis.hfwhole import instantiate_whole
    from ffncalc.parts.vision import Vision

    data = json.loads((HERE / "configs" / "unlimited_ocr.json").read_text())
    net = instantiate_whole(data)
    _, model = hf.load(HERE / "configs" / "unlimited_ocr.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    for size, tokens in ((1024, 273), (640, 111)):
        pixels = torch.ones(1, 3, size, size, device="meta")
        with torch.no_grad():
            (rows,) = net.model.get_image_features(pixel_values=pixels).pooler_output
        assert rows.shape[0] == tokens == replace(vision, image_size=size).tokens


def test_deepseek_ocr2_language_model_by_hand():
    """DeepSeek-OCR 2's language model at DeepseekOcr2TextConfig's defaults repaired as scripts/hf_whole.py records
    (mlp_layer_types: layer 0 dense, the rest mixtures; 6 experts a token), derived by hand: 102,400 × 4,096 untied
    embeddings and head; 32 layers of multi-head attention (32 heads of 128, one KV head each: q, k, v and o each
    4,096²) and two RMSNorms; layer 0 a SwiGLU MLP of 11,008; layers 1 to 31 a 64 × 4,096 router, 64 experts of 1,407
    and one shared MLP of 2 × 1,407; a final RMSNorm. Equal to the language model and head
    DeepseekOcr2ForConditionalGeneration builds there."""
    assert truth("deepseek_ocr2")["repaired"]["text_config"]["mlp_layer_types"] == ["dense"] + ["sparse"] * 31
    v, d = 102_400, 4_096
    expert = 3 * d * 1_407
    sparse = 64 * d + 64 * expert + 3 * d * 2 * 1_407
    total = 2 * v * d + 32 * (4 * d * d + 2 * d) + 3 * d * 11_008 + 31 * sparse + d
    _, model = hf.load(HERE / "configs" / "deepseek_ocr2.json")
    text = sum(n for name, n in expanded(truth("deepseek_ocr2")["params"], 2) if name.startswith(TEXT_MODULES))
    assert ours(model)["text"] == text == total
    assert tally(model).active == total - 31 * (64 - 6) * expert  # its tower's and projector's: no token runs them


def deepseek_ocr2_tower(hidden: int) -> tuple[int, int]:
    """DeepSeek-OCR 2's tower and projector parameters by hand, its encoder ``hidden`` wide: the SAM encoder
    (Unlimited OCR's, test_unlimited_ocr_tower_by_hand), its convolutions 256 → 512 → 896; 32 Qwen2 layers (q, k, v of
    hidden² with biases, o without; a SwiGLU of 3 · hidden · 22,016; two RMSNorms), a final RMSNorm, 144 + 256 queries;
    the projector Linear(hidden, 4,096) with a bias and view_separator."""
    d, ff, out, heads = 768, 3072, 256, 12
    sam = 16 * 16 * 3 * d + d + 64 * 64 * d
    sam += 12 * (4 * d + 3 * d * d + 3 * d + d * d + d + 2 * d * ff + ff + d)
    sam += 8 * 2 * 27 * (d // heads) + 4 * 2 * 127 * (d // heads)
    sam += d * out + 9 * out * out + 4 * out
    convs = 9 * out * 512 + 9 * 512 * 896
    encoder = 32 * (4 * hidden * hidden + 3 * hidden + 3 * hidden * 22_016 + 2 * hidden) + hidden + (144 + 256) * hidden
    return sam + convs + encoder, hidden * 4096 + 4096 + 4096


def test_deepseek_ocr2_tower_by_hand():
    """The tower and projector as recorded (the encoder repaired to the 896 its SAM writes), by hand."""
    assert truth("deepseek_ocr2")["repaired"]["vision_config"] == {"encoder_config": {"hidden_size": 896}}
    _, model = hf.load(HERE / "configs" / "deepseek_ocr2.json")
    tower, projector = deepseek_ocr2_tower(896)
    assert (ours(model)["tower"], ours(model)["projector"]) == (tower, projector)
    assert (groups("deepseek_ocr2")["tower"], groups("deepseek_ocr2")["projector"]) == (tower, projector)


def deepseek_ocr2_defaults(tmp_path) -> Path:
    """The record's config with its encoder at DeepseekOcr2VisionEncoderConfig's own hidden_size (4,096)."""
    data = json.loads((HERE / "configs" / "deepseek_ocr2.json").read_text())
    data["vision_config"]["encoder_config"]["hidden_size"] = 4096
    (tmp_path / "config.json").write_text(json.dumps(data))
    return tmp_path / "config.json"


@pytest.mark.torch
def test_deepseek_ocr2_parameters_at_the_class_defaults(tmp_path):
    """At the class's own encoder width (4,096, which no image can run), every parameter still counted: equal to the
    whole class transformers builds there (on the meta device) and to the hand derivation."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    path = deepseek_ocr2_defaults(tmp_path)
    net = instantiate_whole(json.loads(path.read_text()))
    _, model = hf.load(path)
    tower, projector = deepseek_ocr2_tower(4096)
    assert (ours(model)["tower"], ours(model)["projector"]) == (tower, projector)
    assert tally(model).params == sum(p.numel() for p in net.parameters()) == 49_422_329_088


def test_deepseek_ocr2_images_at_the_class_defaults_are_one_line(cli, tmp_path):
    """Its encoder 4,096 wide where the SAM's convolutions write 896 features: counted without images, an image refused
    in one line, exit 2."""
    path = str(deepseek_ocr2_defaults(tmp_path))
    code, _, _ = cli("count", path)
    assert code == 0
    code, _, err = cli("count", path, "--images", "1")
    assert code == 2 and "its encoder is 4096 wide where its convolutions write 896 channels" in err
    assert len(err.strip().splitlines()) == 1


def test_deepseek_ocr2_image_by_hand():
    """One image of S pixels: the SAM's S / 16 patches a side, q = S / 64 positions a side after its convolutions (16
    at 1,024 pixels, 12 at 768); Q learned queries, 256 where q² > 144, else 144; Q + 1 tokens (257, 145). Its encoder
    over the q² + Q rows: q, k, v and o (896², 28-wide heads), the SwiGLU (3 · 896 · 22,016) a row and QKᵀ and AV over
    the whole square in 32 layers; the projector over the Q rows. Against FlopCounterMode's record: the projector's
    Linear as its own module, and the whole."""
    from ffncalc.parts.vision import Vision

    d, ff, out, w, text = 768, 3072, 256, 896, 4096

    def macs(g):
        padded = -(-g // 14) * 14
        windowed = 8 * (padded**2 * 4 * d * d + 2 * padded**2 * 14 * 14 * d + 2 * padded**2 * 14 * d)
        full = 4 * (g * g * 4 * d * d + 2 * g**4 * d + 2 * g**3 * d)
        sam = g * g * 3 * 16 * 16 * d + windowed + full + 12 * g * g * 2 * d * ff + g * g * (d * out + 9 * out * out)
        q = g // 4
        queries = 256 if q * q > 144 else 144
        convs = (g // 2) ** 2 * 9 * out * 512 + q * q * 9 * 512 * w
        rows = q * q + queries
        encoder = 32 * (rows * (4 * w * w + 3 * w * 22_016) + 2 * rows * rows * w)
        return sam + convs + encoder, queries * w * text, queries + 1

    _, model = hf.load(HERE / "configs" / "deepseek_ocr2.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    runs = {r["size"]: r for r in truth("deepseek_ocr2")["image_flops"]["runs"]}
    for size, tokens in ((1024, 257), (768, 145)):
        tower, projector, n = macs(size // 16)
        assert n == tokens
        assert runs[size]["modules"]["Linear"] == 2 * projector  # multi_modal_projector, its own module
        assert replace(vision, image_size=size).per_image(model)[:2] == (tokens, 2 * (tower + projector))
        assert 2 * (tower + projector) == runs[size]["total"]


@pytest.mark.torch
def test_deepseek_ocr2_image_tokens_equal_the_class():
    """The class's own get_image_features (built as recorded, on the meta device) writes Q + 1 rows for one global view:
    257 at 1,024 pixels, 145 at 768 (and at 640: 10 × 10 positions, still 144 queries); as many as the count's tokens."""
    import torch

    from ffncalc.analysis.hfwhole import instantiate_whole
    from ffncalc.parts.vision import Vision

    net = instantiate_whole(json.loads((HERE / "configs" / "deepseek_ocr2.json").read_text()))
    _, model = hf.load(HERE / "configs" / "deepseek_ocr2.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    for size, tokens in ((1024, 257), (768, 145), (640, 145)):
        pixels = torch.ones(1, 3, size, size, device="meta")
        with torch.no_grad():
            (rows,) = net.model.get_image_features(pixel_values=pixels).pooler_output
        assert rows.shape[0] == tokens == replace(vision, image_size=size).tokens


def test_deepseek_ocr2_text_without_layer_kinds_is_one_line(cli, tmp_path):
    """DeepseekOcr2TextConfig's own default mlp_layer_types (None), which its decoder layers index: one line naming
    the key, exit 2."""
    data = json.loads((HERE / "configs" / "deepseek_ocr2.json").read_text())
    data["text_config"] = {**data["text_config"], "mlp_layer_types": None}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and "mlp_layer_types" in err and err.count("\n") == 1, err


def test_hunyuan_vl_language_model_by_hand():
    """HunyuanOCR's language model at HunYuanVLTextConfig's defaults repaired as scripts/hf_whole.py records (head_dim
    128, XD-RoPE sections [16, 16, 16, 16]), derived by hand: a 290,943 × 4,096 embedding, the head tied to it; 32
    layers of q, k, v and o (4,096², no biases), a query and a key RMSNorm of 128, two RMSNorms and a SwiGLU MLP of
    11,008; a final RMSNorm. Equal to the language model and head HunYuanVLForConditionalGeneration builds there."""
    assert truth("hunyuan_vl")["repaired"]["text_config"]["head_dim"] == 128
    v, d = 290_943, 4_096
    total = v * d + 32 * (4 * d * d + 2 * 128 + 2 * d + 3 * d * 11_008) + d
    _, model = hf.load(HERE / "configs" / "hunyuan_vl.json")
    text = sum(n for name, n in expanded(truth("hunyuan_vl")["params"], 2) if name.startswith(TEXT_MODULES))
    assert ours(model)["text"] == text == total == 7_667_982_336


def test_hunyuan_vl_text_without_head_dim_is_one_line(cli, tmp_path):
    """HunYuanVLTextConfig's own default head_dim (None), which its attention's scaling reads: one line naming the
    key, exit 2."""
    data = json.loads((HERE / "configs" / "hunyuan_vl.json").read_text())
    data["text_config"] = {k: v for k, v in data["text_config"].items() if k != "head_dim"}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and "head_dim" in err and err.count("\n") == 1, err


def test_hunyuan_vl_tower_and_merger_by_hand():
    """HunyuanOCR at its defaults (repaired as recorded). Its tower: a Conv2d patch embedding with a bias (3 × 16² = 768
    → 1,152), a table of (2,048 / 16)² + 1 = 16,385 rows, 27 layers of two LayerNorms, q, k, v and o with biases and an
    MLP of 4,304 with biases, no norm after them. Its patch merger: before_rms (1,152), proj_conv (a 2 × 2 Conv2d 1,152
    → 2,304 with a bias), proj_out (a 1 × 1 Conv2d 2,304 → 4,608 with a bias), image_newline (4,608), mlp (4,608 → 4,096
    with a bias), image_begin, image_end and image_sep (4,096 each), after_rms (4,096). Equal per part to
    HunYuanVLForConditionalGeneration, 8,139,351,536 in all."""
    d, ff, t = 1152, 4304, 4096
    layer = 2 * 2 * d + 4 * (d * d + d) + d * ff + ff + ff * d + d
    tower = 768 * d + d + (128 * 128 + 1) * d + 27 * layer
    merger = d + (2 * d * d * 2 * 2 + 2 * d) + (4 * d * 2 * d + 4 * d) + 4 * d + (4 * d * t + t) + 3 * t + t
    assert (tower, merger) == (431_228_016, 40_141_184)
    _, model = hf.load(HERE / "configs" / "hunyuan_vl.json")
    assert ours(model) == {"tower": tower, "projector": merger, "text": 7_667_982_336} == groups("hunyuan_vl")
    assert tally(model).params == tower + merger + 7_667_982_336 == 8_139_351_536


def test_hunyuan_vl_image_flops_by_hand(tmp_path):
    """HunyuanOCR with its tower small (the record's reduced: two layers of width 1,152 and an MLP of 128; the text
    width 64), as FlopCounterMode counted it. One image of S × S pixels is g = S / 16 patches a side: the patch
    embedding (768 → 1,152) and each layer's q, k, v, o and MLP over g² patches, every patch meeting every patch; the
    merger's proj_conv (2 × 2 × 1,152 → 2,304) and proj_out (2,304 → 4,608) over (g / 2)² cells, its mlp (4,608 → 64)
    over (g / 2) × (g / 2 + 1) rows (a newline after each row of cells); the image (g / 2) × (g / 2 + 1) + 2 tokens
    with its begin and end rows. 2 FLOPs a multiply-add, scores and values each."""
    from ffncalc.parts.vision import Vision

    record = truth("hunyuan_vl")["image_flops"]
    data = json.loads((HERE / "configs" / "hunyuan_vl.json").read_text())
    data = {**data, **{key: {**data[key], **value} for key, value in record["reduced"].items()}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    d = 1152

    def image(g):
        n, cells, rows = g * g, (g // 2) ** 2, (g // 2) * (g // 2 + 1)
        tower = n * 768 * d + 2 * (n * (4 * d * d + 2 * d * 128) + 2 * n * n * d)
        return 2 * (tower + cells * (4 * d * 2 * d + 2 * d * 4 * d) + rows * 4 * d * 64)

    assert [image(48), image(32)] == [129_454_571_520, 45_458_915_328]
    assert [(r["size"], r["total"]) for r in record["runs"]] == [(768, image(48)), (512, image(32))]
    sized = [replace(vision, image_size=s).per_image(model)[:2] for s in (768, 512)]
    assert sized == [(24 * 25 + 2, image(48)), (16 * 17 + 2, image(32))]


@pytest.mark.torch
def test_hunyuan_vl_full_size_image_equals_flopcountermode():
    """HunyuanOCR at its recorded defaults, full size: one 768-pixel image (48 patches of 16 a side) through its 27
    layers of 1,152 (MLP 4,304) and its merger to the text width 4,096, derived by hand and equal to FlopCounterMode over
    get_image_features of the whole class on the meta device (its grid given on the CPU: the tower splits by it)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ffncalc.analysis.hfwhole import instantiate_whole
    from ffncalc.parts.vision import Vision

    d, ff, t, g = 1152, 4304, 4096, 48
    n, cells, rows = g * g, (g // 2) ** 2, (g // 2) * (g // 2 + 1)
    tower = n * 768 * d + 27 * (n * (4 * d * d + 2 * d * ff) + 2 * n * n * d)
    flops = 2 * (tower + cells * (4 * d * 2 * d + 2 * d * 4 * d) + rows * 4 * d * t)
    assert flops == 2_605_851_869_184
    net = instantiate_whole(json.loads((HERE / "configs" / "hunyuan_vl.json").read_text()))
    net.requires_grad_(False)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_image_features(pixel_values=torch.ones(n, 768, device="meta"), image_grid_thw=torch.tensor([[1, g, g]]))
    assert sum(counter.get_flop_counts()["Global"].values()) == flops
    _, model = hf.load(HERE / "configs" / "hunyuan_vl.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    assert vision.image_size == 768 and vision.per_image(model)[:2] == (602, flops)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [("num_attention_heads", 7, "7 heads do not divide a width of 1152"), ("max_image_size", 8, "its table has no grid")],
)
def test_hunyuan_vl_tower_shapes_not_read_are_one_line(cli, tmp_path, key, value, words):
    """A tower whose heads do not divide its width, or whose position table has no grid: one line naming the key,
    exit 2."""
    data = json.loads((HERE / "configs" / "hunyuan_vl.json").read_text())
    data["vision_config"][key] = value
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and key in err and words in err and len(err.strip().splitlines()) == 1, err


def test_hunyuan_vl_image_of_odd_patches_is_one_line(cli):
    """An image whose patches a side do not pair into the merger's 2 × 2 cells (HunYuanVLVisionPatchMerger's strided
    convolution would drop a row): one line naming the size, exit 2."""
    code, _, err = cli("count", str(HERE / "configs" / "hunyuan_vl.json"), "--images", "1", "--image-size", "784")
    assert code == 2 and "49 patches a side are not whole 2 × 2 tiles" in err and len(err.strip().splitlines()) == 1, err


def test_vibevoice_asr_by_hand():
    """VibeVoice-ASR at its defaults: two tokenizer encoders (latents 64 and 128 wide) of a causal Conv1d(1, 32, 7)
    stem and six downsamplers Conv1d(32·2ⁱ, 32·2ⁱ⁺¹, 2r, stride r) for r in 2, 2, 4, 5, 5, 8, with 3, 3, 3, 3, 3, 3
    and 8 ConvNeXt-1d layers at the widths 32 … 2,048 (two RMSNorms, a depthwise Conv1d of 7 taps, linear1 w → 4w and
    linear2 4w → w with biases, gamma and ffn_gamma), a head Conv1d(2,048, latent, 7); each encoder's projector
    Linear(latent, 4,096) → RMSNorm → Linear(4,096, 4,096) with biases. A token is a hop of 2·2·4·5·5·8 = 3,200 samples:
    stage i runs 3,200, 1,600, 800, 200, 40, 8 and 1 positions a token. 2 FLOPs a multiply-add."""
    from ffncalc.parts.vibevoice_audio import VibeVoiceAudio

    widths, depths, ratios, k, d = [32 * 2**i for i in range(7)], [3, 3, 3, 3, 3, 3, 8], [2, 2, 4, 5, 5, 8], 7, 4096
    convnext = [depth * (2 * w + w * k + w + 4 * w * w + 4 * w + 4 * w * w + w + 2 * w) for w, depth in zip(widths, depths)]
    convs = [32 * 7 + 32] + [widths[i + 1] * widths[i] * 2 * r + widths[i + 1] for i, r in enumerate(ratios)]
    encoders = 2 * (sum(convnext) + sum(convs)) + sum(lat * 2048 * k + lat for lat in (64, 128))
    projector = sum(lat * d + d + d + d * d + d for lat in (64, 128))
    assert groups("vibevoice_asr")["tower"] == encoders
    assert groups("vibevoice_asr")["projector"] == projector
    positions = [3200, 1600, 800, 200, 40, 8, 1]  # a token's positions at each stage
    c_in = [(1, 7)] + [(widths[i], 2 * r) for i, r in enumerate(ratios)]
    stages = sum(n * (w * c * kern + depth * (w * k + 8 * w * w)) for n, w, (c, kern), depth in zip(positions, widths, c_in, depths))
    per_token = 2 * stages + sum(lat * 2048 * k + lat * d + d * d for lat in (64, 128))
    _, model = hf.load(HERE / "configs" / "vibevoice_asr.json")
    (audio,) = [p for p in model.parts if isinstance(p, VibeVoiceAudio)]
    runs = truth("vibevoice_asr")["audio_token_flops"]["runs"]
    assert [r["tokens"] for r in runs] == [675, 150]  # 90 s (two chunks of 60 s, the second half full) and 20 s
    for run in runs:
        assert 2 * run["tokens"] * per_token == run["total"] == audio.flops(run["tokens"])
    assert replace(audio, seconds=90).request_tokens() == 675 and replace(audio, seconds=1).request_tokens() == 8


def test_vibevoice_asr_audio_adds_its_flops_to_a_sequence():
    """20 s of audio in a 1,024-token sequence add FlopCounterMode's 1,100,207,308,800 FLOPs (150 tokens) to count."""
    import ffncalc

    path = str(HERE / "configs" / "vibevoice_asr.json")
    plain = ffncalc.count(path, seq_len=1024).to_dict()["totals"]["forward_flops"]
    heard = ffncalc.count(path, seq_len=1024, audio_seconds=20).to_dict()["totals"]["forward_flops"]
    runs = truth("vibevoice_asr")["audio_token_flops"]["runs"]
    assert heard - plain == next(r["total"] for r in runs if r["tokens"] == 150)


def test_vibevoice_asr_encoders_of_other_shapes_are_one_line(cli, tmp_path):
    """A semantic encoder whose stages differ from the acoustic one's (their latents meet a token each): one line."""
    data = json.loads((HERE / "configs" / "vibevoice_asr.json").read_text())
    data["semantic_tokenizer_encoder_config"] = {**data["semantic_tokenizer_encoder_config"], "depths": [3, 3, 3, 3, 3, 3, 4]}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and "depths" in err and "semantic_tokenizer_encoder_config" in err and err.count("\n") == 1, err


def test_vibevoice_by_hand():
    """VibeVoice at its defaults: VibeVoice-ASR's two tokenizer encoders (test_vibevoice_asr_by_hand) and connectors
    (the multi_modal_projector and semantic_connector: Linear(latent, 4,096) → RMSNorm → Linear(4,096, 4,096) with
    biases), the acoustic decoder (a Conv1d(64, 2,048, 7) stem, 8, 3, 3, 3, 3, 3 and 3 ConvNeXt-1d layers at 2,048 …
    32, ConvTranspose1d(w, w / 2, 2r, stride r) for r in 8, 5, 5, 4, 2, 2, a head Conv1d(32, 1, 7)), the diffusion head
    at the text width (noisy_images_proj 64 → 4,096, cond_proj, timestep fc1 256 → 4,096 and fc2, 4 layers of a linear
    4,096 → 3 × 4,096, an RMSNorm and a SwiGLU MLP of 4,608, final linear_1 4,096 → 2 × 4,096 and linear_2 → 64, no
    biases) and two latent factors. Its forward runs the acoustic encoder and the multi_modal_projector alone."""
    from ffncalc.parts.vibevoice_audio import VibeVoiceAudio

    widths, depths, ratios, k, d, m = [32 * 2**i for i in range(7)], [3, 3, 3, 3, 3, 3, 8], [2, 2, 4, 5, 5, 8], 7, 4096, 4608
    convnext = sum(depth * (8 * w * w + 17 * w) for w, depth in zip(widths, depths))  # norms, mixer, linears, gammas
    downs = 32 * 7 + 32 + sum(widths[i + 1] * widths[i] * 2 * r + widths[i + 1] for i, r in enumerate(ratios))
    encoders = 2 * (convnext + downs) + sum(lat * 2048 * k + lat for lat in (64, 128))
    ups = sum(widths[i + 1] * widths[i] * 2 * r + widths[i] for i, r in enumerate(ratios))  # ConvTranspose1d(2w → w)
    decoder = 2048 * 64 * k + 2048 + convnext + ups + 32 * k + 1
    diffusion = 64 * d + d * d + 256 * d + d * d + 4 * (3 * d * d + d + 3 * d * m) + 2 * d * d + d * 64
    connectors = sum(lat * d + d + d + d * d + d for lat in (64, 128))
    assert groups("vibevoice")["tower"] == encoders + decoder + diffusion + 2
    assert groups("vibevoice")["projector"] == connectors
    step = 2 * (64 * d + d * d + 256 * d + d * d + 4 * (3 * d * d + 3 * d * m) + 2 * d * d + d * 64)
    record = truth("vibevoice")
    assert [r["total"] for r in record["diffusion_step_flops"]["runs"]] == [step, 2 * step]  # one row, and a CFG pair
    positions = [3200, 1600, 800, 200, 40, 8, 1]
    c_in = [(1, 7)] + [(widths[i], 2 * r) for i, r in enumerate(ratios)]
    stages = sum(n * (w * c * kern + depth * (w * k + 8 * w * w)) for n, w, (c, kern), depth in zip(positions, widths, c_in, depths))
    per_token = 2 * (stages + 64 * 2048 * k + 64 * d + d * d)  # the acoustic encoder and its projector alone
    _, model = hf.load(HERE / "configs" / "vibevoice.json")
    (audio,) = [p for p in model.parts if isinstance(p, VibeVoiceAudio)]
    assert audio.diffusion_step_flops() == step
    for run in record["audio_token_flops"]["runs"]:
        assert run["tokens"] * per_token == run["total"] == audio.flops(run["tokens"])
    assert "19,860,029,440 a generated latent (10 steps of two rows" in audio.note(model)


def test_molmo2_language_model_by_hand():
    """Molmo2's language model at Molmo2TextConfig's defaults, derived by hand: a (151,936 + 128) × 4,096 embedding
    (vocab_size + additional_vocab_size rows) and an untied 151,936 × 4,096 head; 36 layers of q and o (4,096²), k and
    v (1,024 × 4,096: 8 key-value heads of 128), no biases, a q_norm and a k_norm of 128 (qk_norm_type qwen3), two
    RMSNorms and a SwiGLU MLP of 12,288; a final RMSNorm. Equal to the language model and head
    Molmo2ForConditionalGeneration builds there (beside its tower and adapter, tests/families/test_molmo2.py)."""
    v, d, kv = 151_936, 4_096, 1_024
    total = (v + 128) * d + v * d + 36 * (2 * d * d + 2 * kv * d + 2 * 128 + 2 * d + 3 * d * 12_288) + d
    _, model = hf.load(HERE / "configs" / "molmo2.json")
    text = sum(n for name, n in expanded(truth("molmo2")["params"], 2) if name.startswith(TEXT_MODULES))
    ours = sum(t.numel * t.stored_count for t in terms(model, 8, partial=True) if not t.component.startswith("vision."))
    assert ours == text == total


def test_molmo2_olmo_norms_after_by_hand(tmp_path):
    """qk_norm_type olmo: q_norm over all 32 heads' 4,096 features and k_norm over the 8 key-value heads' 1,024
    (Molmo2Attention), 4,864 per layer where the per-head norms hold 256; norm_after moves the two RMSNorms after
    each sublayer, which changes no count. The defaults' total, by hand, plus 36 × (4,864 - 256)."""
    data = json.loads((HERE / "configs" / "molmo2.json").read_text())
    base = tally(hf.load(HERE / "configs" / "molmo2.json")[1]).params
    data["text_config"] = {**data["text_config"], "qk_norm_type": "olmo", "norm_after": True}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    assert tally(model).params == base + 36 * (4_096 + 1_024 - 2 * 128)
    assert hf.load(HERE / "configs" / "molmo2.json")[1].norm.placement == "pre" and model.norm.placement == "post"


def test_molmo2_unknown_qk_norm_type_is_one_line(cli, tmp_path):
    """A qk_norm_type Molmo2TextConfig refuses (neither qwen3 nor olmo): one line naming the key, exit 2."""
    data = json.loads((HERE / "configs" / "molmo2.json").read_text())
    data["text_config"] = {**data["text_config"], "qk_norm_type": "gemma"}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and "qk_norm_type" in err and err.count("\n") == 1, err


def test_emu3_language_model_is_llamas_layers(tmp_path):
    """Emu3's text_config (emu3_text_model) read by llama's family: Emu3TextModel's and lm_head's parameters as
    Emu3ForConditionalGeneration builds them (tests/hf_whole/truth/emu3.json), and by hand from its defaults: vocabulary
    184,622, width 4096, 32 layers of 32 query and 8 key-value heads of 128, SwiGLU of 14,336, RMSNorms, untied head."""
    text = json.loads((HERE / "configs" / "emu3.json").read_text())["text_config"]
    (tmp_path / "config.json").write_text(json.dumps(text))
    _, model = hf.load(tmp_path / "config.json")
    built = sum(n for name, n in expanded(truth("emu3")["params"], 2) if name.startswith(TEXT_MODULES))
    layer = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128 + 3 * 4096 * 14336 + 2 * 4096
    assert tally(model).params == built == 2 * 184_622 * 4096 + 32 * layer + 4096


@pytest.mark.parametrize(
    ("sub", "key", "value", "words"),
    [
        ("sam_config", "downsample_channels", [512], "expected two positive integers, got [512]"),
        ("encoder_config", "num_attention_heads", 12, "12 heads do not divide hidden_size 1024"),
    ],
)
def test_unlimited_ocr_tower_shapes_not_read_are_one_line(cli, tmp_path, sub, key, value, words):
    """Unlimited OCR's strided convolutions named by other than two widths, or heads that do not divide its CLIP
    encoder's width: one line naming the key, exit 2."""
    data = json.loads((HERE / "configs" / "unlimited_ocr.json").read_text())
    data["vision_config"][sub][key] = value
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and key in err and words in err and len(err.strip().splitlines()) == 1


def test_unlimited_ocr_encoder_not_the_sams_width_counts_and_refuses_images(cli, tmp_path):
    """A CLIP encoder whose width is not the 1,024 channels its convolutions write (which transformers builds and cannot
    run an image through): its parameters counted, an image refused in one line, exit 2."""
    data = json.loads((HERE / "configs" / "unlimited_ocr.json").read_text())
    data["vision_config"]["encoder_config"]["hidden_size"] = 768
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert cli("count", str(tmp_path / "config.json"))[0] == 0
    code, _, err = cli("count", str(tmp_path / "config.json"), "--images", "1")
    assert code == 2 and "its encoder is 768 wide where its convolutions write 1024 channels" in err
    assert len(err.strip().splitlines()) == 1
