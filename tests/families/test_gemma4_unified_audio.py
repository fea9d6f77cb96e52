"""Gemma 4 Unified's audio (parts/waveform_audio.py): no audio tower; embed_audio, Gemma4UnifiedMultimodalEmbedder over
frames of audio_embed_dim raw samples (a weightless RMSNorm, Linear(audio_embed_dim, text width) without a bias), as
transformers 5.23 builds and runs it, on the released Gemma 4 12B's config.json (tests/hf_whole/public) and built small."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

import ffncalc
from ffncalc.analysis.count import tally
from ffncalc.analysis.records import expanded
from ffncalc.parts.waveform_audio import WaveformAudio
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
GEMMA_4_12B = HERE / "public" / "gemma-4-12b.json"


def small(audio: dict | None) -> dict:
    """A Gemma4UnifiedConfig of one small text layer, no vision embedder, and ``audio`` as its audio_config."""
    text = {
        "model_type": "gemma4_unified_text",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 1,
        "layer_types": ["full_attention"],
        "per_layer_config": {},
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "vocab_size": 128,
    }
    return {"model_type": "gemma4_unified", "text_config": text, "vision_config": None, "audio_config": audio}


def audio_part(model) -> WaveformAudio:
    (part,) = [p for p in model.parts if isinstance(p, WaveformAudio)]
    return part


def test_gemma_4_12b_audio_by_hand():
    """Gemma 4 12B's audio_config: frames of 640 samples at 16 kHz, 25 tokens a second; embed_audio's one matrix,
    640 × 3,840 = 2,457,600 parameters (the norm has no weight), of the 11,959,730,176 transformers builds; 10 s of
    audio are 250 tokens, each 2 × 640 × 3,840 FLOPs: 1,228,800,000 a sequence, 122,880,000 a second."""
    _, model = hf.load(GEMMA_4_12B)
    audio = audio_part(model)
    assert (audio.samples, audio.sampling_rate) == (640, 16_000)
    record = json.loads((HERE / "public_truth" / "gemma-4-12b.json").read_text())
    built = dict(expanded(record["params"], 2))
    assert built["model.embed_audio.embedding_projection.weight"] == 640 * 3840 == 2_457_600
    assert tally(model).params == sum(built.values()) == 11_959_730_176
    assert replace(audio, seconds=10).request_tokens() == 250
    plain = ffncalc.count(str(GEMMA_4_12B), seq_len=1024).to_dict()["totals"]
    heard = ffncalc.count(str(GEMMA_4_12B), seq_len=1024, audio_seconds=10).to_dict()["totals"]
    assert heard["forward_flops"] - plain["forward_flops"] == 250 * 2 * 640 * 3840 == 10 * 122_880_000
    assert heard["params"] == plain["params"]


def test_without_audio_config_nothing_changes(tmp_path):
    """The same file with a null audio_config (Gemma4UnifiedConfig's default): no audio part, and 2,457,600 parameters
    fewer; the embedder-free default config counts as transformers builds it (test_whole_models.py)."""
    data = json.loads(GEMMA_4_12B.read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "audio_config": None}))
    _, whole = hf.load(GEMMA_4_12B)
    _, without = hf.load(path)
    assert not [p for p in without.parts if isinstance(p, WaveformAudio)]
    assert tally(whole).params - tally(without).params == 640 * 3840


def test_frames_are_padded_to_whole(tmp_path):
    """Frames of 48 samples: 16,000 / 48 = 333⅓ a second, so 1 s is 334 tokens (the last frame padded) and 3 s exactly
    1,000; each token 2 × 48 × 64 FLOPs into the 64-wide language model."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(small({"model_type": "gemma4_unified_audio", "audio_embed_dim": 48})))
    _, model = hf.load(path)
    audio = audio_part(model)
    assert [replace(audio, seconds=s).request_tokens() for s in (1, 3)] == [334, 1000]
    plain = ffncalc.count(str(path), seq_len=512).to_dict()["totals"]["forward_flops"]
    heard = ffncalc.count(str(path), seq_len=512, audio_seconds=1).to_dict()["totals"]["forward_flops"]
    assert heard - plain == 334 * 2 * 48 * 64


@pytest.mark.parametrize("alias", ["hidden_size", "output_proj_dims", "audio_samples_per_token"])
def test_widths_stated_apart_are_one_line(tmp_path, cli, alias):
    """Gemma4UnifiedAudioConfig's hidden_size, output_proj_dims and audio_samples_per_token are audio_embed_dim by
    another name: a file stating one apart from it is named in one line, exit 2."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(small({"model_type": "gemma4_unified_audio", "audio_embed_dim": 640, alias: 320}), indent=1))
    code, out, err = cli("count", str(path))
    assert code == 2 and "Traceback" not in err
    assert alias in err and "320" in err and len(err.strip().splitlines()) == 1


def test_gemma_4_12b_walks_with_audio(cli):
    """count, train, infer and fit on the released config with 30 s of audio (750 tokens beside the prompt, prefilled),
    and --text-only leaving the audio out."""
    config, kw = str(GEMMA_4_12B), {"hardware": "h100-sxm"}
    assert ffncalc.count(config, audio_seconds=30).params == 11_959_730_176
    assert ffncalc.train(config, tokens="1B", gpus=8, **kw).figures["train_flops"].value > 0
    read = ffncalc.infer(config, prompt=850, generate=64, **kw).figures
    heard = ffncalc.infer(config, prompt=100, generate=64, audio_seconds=30, **kw).figures
    assert heard["prefill_flops"].value == read["prefill_flops"].value + 750 * 2 * 640 * 3840
    assert ffncalc.fit(config, context=2048, audio_seconds=30, **kw).figures["kv_bytes_per_device"].value > 0
    code, out, err = cli("count", config, "--audio-seconds", "30")
    assert code == 0 and "audio.projector.linear.weight" in out and "30 s a sequence" in " ".join(out.split())
    code, out, _ = cli("count", config, "--text-only")
    assert code == 0 and "audio.projector" not in out


@pytest.mark.torch
def test_audio_equals_transformers_built_small(tmp_path):
    """Built small (frames of 48 samples into a 64-wide language model): the whole class's parameters on the meta device
    equal the count's, and FlopCounterMode over Gemma4UnifiedModel.get_audio_features on 1 s of audio (334 frames of
    48 samples, real CPU tensors) equals the count's audio FLOPs."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import Gemma4UnifiedConfig, Gemma4UnifiedForConditionalGeneration

    data = small({"model_type": "gemma4_unified_audio", "audio_embed_dim": 48})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    config = Gemma4UnifiedConfig(**{k: v for k, v in data.items() if k != "model_type"})
    with torch.device("meta"):
        built = Gemma4UnifiedForConditionalGeneration(config)
    _, model = hf.load(path)
    assert tally(model).params == sum(p.numel() for p in built.parameters())
    torch.manual_seed(0)
    real = Gemma4UnifiedForConditionalGeneration(config).eval()
    frames = torch.randn(1, 334, 48)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        real.model.get_audio_features(frames)
    plain = ffncalc.count(str(path), seq_len=512).to_dict()["totals"]["forward_flops"]
    heard = ffncalc.count(str(path), seq_len=512, audio_seconds=1).to_dict()["totals"]["forward_flops"]
    assert heard - plain == counter.get_total_flops() == 334 * 2 * 48 * 64


@pytest.mark.torch
def test_gemma4_unified_verifies_with_audio():
    """30 s of audio (750 frames of 640 samples) through the reference modules to the count's FLOPs, one text layer of
    the released Gemma 4 12B kept."""
    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model

    label, stack = hf.load(GEMMA_4_12B)
    m = with_inputs(Model(label, replace(stack, layers=stack.layers[:1])), audio_seconds=30)
    assert verify(m.stack, model=label, seq_len=2048).ok
