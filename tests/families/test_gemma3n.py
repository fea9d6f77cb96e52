"""Gemma 3n (gemma3n) whole: its audio tower and embedders (parts/gemma3n_audio.py), by hand and against what
transformers builds (tests/hf_whole, recorded by scripts/hf_whole.py)."""

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

    stack = text_model()
    model = replace(stack, layers=stack.layers[:1], parts=stack.parts + (audio_part(seconds=40),))
    report = verify(model, model="gemma3n", seq_len=256)
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
