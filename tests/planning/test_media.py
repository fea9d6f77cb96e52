"""Images and audio a sequence brings, for models read whole with a vision or audio tower: their tower's work in the
FLOPs (count), and in serving their tokens beside the prompt's, prefilled and cached, the tower run once in the prefill
and never in a decode step (infer). The per-image and per-window FLOPs are FlopCounterMode's on the whole class
(tests/hf_whole)."""

import json
from pathlib import Path

import pytest

import ffncalc
from ffncalc.errors import OptionError

WHOLE = Path(__file__).resolve().parents[1] / "hf_whole"
LLAVA = str(WHOLE / "configs" / "llava.json")


QWEN_AUDIO = str(WHOLE / "configs" / "qwen2_audio.json")


def per_window(model_type: str) -> int:
    runs = json.loads((WHOLE / "truth" / f"{model_type}.json").read_text())["audio_flops"]["runs"]
    return next(r["total"] for r in runs if r["positions"] == 1500)


def per_image(model_type: str, size: int) -> int:
    runs = json.loads((WHOLE / "truth" / f"{model_type}.json").read_text())["image_flops"]["runs"]
    return next(r["total"] for r in runs if r["size"] == size)


def test_count_charges_each_image_its_tower_and_projector():
    """Two 336-pixel images in a 2,048-token sequence add twice what one image costs through LLaVA's tower and
    projector (FlopCounterMode's 406,077,407,232), to the forward FLOPs; the parameters do not change."""
    plain = ffncalc.count(LLAVA, seq_len=2048)
    two = ffncalc.count(LLAVA, seq_len=2048, images=2)
    assert two.params == plain.params
    assert two.to_dict()["totals"]["forward_flops"] - plain.to_dict()["totals"]["forward_flops"] == 2 * per_image("llava", 336)


def test_image_size_changes_the_tower_and_the_tokens():
    """At 224 pixels LLaVA's tower sees 16 × 16 patches: 256 tokens and FlopCounterMode's 172,761,382,912 FLOPs."""
    plain = ffncalc.count(LLAVA, seq_len=1024)
    small = ffncalc.count(LLAVA, seq_len=1024, images=1, image_size=224)
    assert small.to_dict()["totals"]["forward_flops"] - plain.to_dict()["totals"]["forward_flops"] == per_image("llava", 224)
    assert "one 224×224-pixel image is 256 tokens" in small.to_dict()["notes"][0]


def test_infer_prefills_and_caches_the_image_tokens_and_decodes_without_the_tower():
    """A request of 512 text tokens and 2 images (576 tokens each) prefills and caches 1,664 tokens: the prefill is
    the text model's over 1,664 tokens plus two images through the tower; the KV cache and every decode step are those
    of a 1,664-token prompt."""
    kw = dict(generate=64, hardware="h100-sxm")
    with_images = ffncalc.infer(LLAVA, prompt=512, images=2, **kw).figures
    as_text = ffncalc.infer(LLAVA, prompt=512 + 2 * 576, **kw).figures
    assert with_images["prefill_flops"].value == as_text["prefill_flops"].value + 2 * per_image("llava", 336)
    for key in ("kv_bytes", "decode_first_flops", "decode_flops", "step_flops"):
        assert with_images[key].value == as_text[key].value, key


def test_fit_holds_each_sequences_image_tokens_beside_its_text():
    """fit --context 1024 --images 2 holds 1,024 + 2 × 576 tokens a sequence: the KV cache of a 2,176-token context,
    the same weights; its prefill runs the tower on the two images as well, so it takes longer than the text alone's."""
    kw = dict(hardware="h100-sxm")
    with_images = ffncalc.fit(LLAVA, context=1024, images=2, **kw)
    as_text = ffncalc.fit(LLAVA, context=1024 + 2 * 576, **kw)
    for key in ("kv_bytes_per_device", "weight_bytes_per_device", "need_bytes_per_device"):
        assert with_images.figures[key].value == as_text.figures[key].value, key
    assert with_images.figures["roofline_prefill_s"].value > as_text.figures["roofline_prefill_s"].value
    assert any("--images 2: 1,152 tokens a sequence beside 1,024 of text" in n for n in with_images.notes)


def test_fit_with_adapters_refuses_images_in_one_line(cli):
    code, _, err = cli("fit", LLAVA, "--hardware", "h100-sxm", "--lora", "8", "--images", "1")
    assert code == 2 and "--images: fine-tuning plans count text sequences" in err and err.count("\n") == 1


def test_audio_fills_whole_windows():
    """45 s of audio are two 30-s windows (the second padded), each through Qwen2-Audio's tower and projector as
    FlopCounterMode counted one; a request's audio is 2 × 750 tokens beside its prompt."""
    plain = ffncalc.count(QWEN_AUDIO, seq_len=4096)
    audio = ffncalc.count(QWEN_AUDIO, seq_len=4096, audio_seconds=45)
    assert audio.to_dict()["totals"]["forward_flops"] - plain.to_dict()["totals"]["forward_flops"] == 2 * per_window("qwen2_audio")
    kw = dict(generate=16, hardware="h100-sxm")
    heard = ffncalc.infer(QWEN_AUDIO, prompt=100, audio_seconds=45, **kw).figures
    read = ffncalc.infer(QWEN_AUDIO, prompt=100 + 2 * 750, **kw).figures
    assert heard["prefill_flops"].value == read["prefill_flops"].value + 2 * per_window("qwen2_audio")
    assert heard["kv_bytes"].value == read["kv_bytes"].value and heard["step_flops"].value == read["step_flops"].value


def test_granite_speech_audio_fills_whole_12_second_windows(cli):
    """30 s of audio are three of Granite Speech's 12-s windows (600 stacked positions each, the last padded), each
    through its Conformer encoder and Q-Former projector as FlopCounterMode counted one (the record's 600-position
    run); a request's audio is 3 × 120 tokens beside its prompt, prefilled and cached; fit holds them too."""
    granite = str(WHOLE / "configs" / "granite_speech.json")
    runs = json.loads((WHOLE / "truth" / "granite_speech.json").read_text())["audio_flops"]["runs"]
    one = next(r["total"] for r in runs if r["positions"] == 600)
    plain = ffncalc.count(granite, seq_len=2048)
    audio = ffncalc.count(granite, seq_len=2048, audio_seconds=30)
    assert audio.to_dict()["totals"]["forward_flops"] - plain.to_dict()["totals"]["forward_flops"] == 3 * one
    kw = dict(generate=16, hardware="h100-sxm")
    heard = ffncalc.infer(granite, prompt=100, audio_seconds=30, **kw).figures
    read = ffncalc.infer(granite, prompt=100 + 3 * 120, **kw).figures
    assert heard["prefill_flops"].value == read["prefill_flops"].value + 3 * one
    assert heard["kv_bytes"].value == read["kv_bytes"].value
    fitted = ffncalc.fit(granite, context=1024, audio_seconds=30, hardware="h100-sxm")
    as_text = ffncalc.fit(granite, context=1024 + 3 * 120, hardware="h100-sxm")
    assert fitted.figures["kv_bytes_per_device"].value == as_text.figures["kv_bytes_per_device"].value
    code, out, _ = cli("count", granite, "--audio-seconds", "30")
    assert code == 0 and "a 12-s window is 120 tokens of the language model" in out


def test_granite_speech_whose_qformer_cannot_read_its_encoder_refuses_audio_in_one_line(tmp_path):
    """GraniteSpeechConfig's own defaults: BLIP-2's Q-Former reading 1,408 features a position where the encoder writes
    1,024. transformers builds it (counted as built) and runs no audio: --audio-seconds is refused in one line."""
    data = json.loads((WHOLE / "configs" / "granite_speech.json").read_text())
    data["projector_config"] = {**data["projector_config"], "encoder_hidden_size": 1408}
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert ffncalc.count(str(tmp_path / "config.json")).params > 0
    with pytest.raises(OptionError) as err:
        ffncalc.count(str(tmp_path / "config.json"), audio_seconds=12)
    assert "reads 1408 features a position where the encoder writes 1024" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("model", "kw", "words"),
    [
        ("llama3-8b", {"images": 1}, "--images 1: llama3-8b has no part that takes it"),
        (LLAVA, {"image_size": 10}, "--image-size 10: an image of 10 pixels holds no 14-pixel patch"),
        (LLAVA, {"images": -1}, "--images -1: from 0 to 65,536"),
        (LLAVA, {"audio_seconds": 30}, "--audio-seconds 30: llava has no part that takes it (no audio tower)"),
        # GOT-OCR 2.0's projector: two strided convolutions, 4 × 4 patches a token
        (str(WHOLE / "configs" / "got_ocr2.json"), {"images": 1, "image_size": 1000}, "62 patches a side are not whole 4 × 4"),
    ],
)
def test_bad_image_options_are_one_line(model, kw, words):
    with pytest.raises(OptionError) as err:
        ffncalc.count(model, **kw)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_cli_images_exit_2(cli):
    code, _, err = cli("count", "llama3-8b", "--images", "2")
    assert code == 2 and err.strip().endswith("llama3-8b has no part that takes it (no vision tower)")


@pytest.mark.torch
@pytest.mark.parametrize(
    ("model_type", "size"),
    [("gemma3", 448), ("qwen2_5_vl", 392), ("qwen3_vl", 448), ("qwen2_5_omni_thinker", 392), ("qwen3_omni_moe_thinker", 448)],
)
def test_reference_model_runs_the_images(model_type, size):
    """verify builds the tower and projector as torch modules and runs the images through them: every component's
    FLOPs agree with the count (Gemma 3's SigLIP tower with its pooling head; Qwen2.5-VL's windows, edge windows
    included at 392 pixels; Qwen3-VL's deepstack mergers), two text layers kept."""
    from dataclasses import replace

    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model
    from ffncalc.sources import hf

    label, stack = hf.load(WHOLE / "configs" / f"{model_type}.json")
    m = with_inputs(Model(label, replace(stack, layers=stack.layers[:2])), images=1, image_size=size)
    report = verify(m.stack, model=label, seq_len=1024)
    assert report.ok


@pytest.mark.torch
def test_reference_model_runs_an_image_through_cross_attention():
    """Llama 3.2 Vision's first four text layers (the fourth a cross-attention layer) and its tiled tower at 224 pixels
    (4 tiles of 16 × 16 patches and a class token, padded to 264 rows): verify runs the image through the tower, the
    global layers and the projector, and the cross-attention's q, o and rectangle over the 4 × 257 rows, k and v once a
    row: every component's FLOPs agree with the count."""
    from dataclasses import replace

    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model
    from ffncalc.sources import hf

    label, stack = hf.load(WHOLE / "configs" / "mllama.json")
    m = with_inputs(Model(label, replace(stack, layers=stack.layers[:4])), images=1, image_size=224)
    report = verify(m.stack, model=label, seq_len=64)
    assert report.ok
    scores = next(c for c in report.checks if c.component == "cross.scores")
    assert scores.analytic_flops == scores.torch_flops == 2 * 64 * 32 * (4 * 257) * 128
    k = next(c for c in report.checks if c.component == "cross.k.weight")
    assert k.torch_flops == 2 * 4 * 257 * 4096 * 1024


@pytest.mark.torch
def test_reference_model_runs_idefics_cross_attention():
    """IDEFICS' first two layers (a gated cross-attention layer, then a LLaMA layer) and its CLIP-built tower at 224
    pixels: the cross-attention's keys and values read the tower's 257 rows at its 768 features; every component's FLOPs
    agree with the count."""
    from dataclasses import replace

    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model
    from ffncalc.sources import hf

    label, stack = hf.load(WHOLE / "configs" / "idefics.json")
    m = with_inputs(Model(label, replace(stack, layers=stack.layers[:2])), images=2)
    report = verify(m.stack, model=label, seq_len=64)
    assert report.ok
    k = next(c for c in report.checks if c.component == "cross.k.weight")
    assert k.analytic_flops == k.torch_flops == 2 * 2 * 257 * 768 * 4096


@pytest.mark.torch
def test_reference_model_runs_the_audio():
    """verify runs a window of frames through the audio tower's convolutions, layers, pool and projector: every
    component's FLOPs agree with the count (Qwen2-Audio, two text layers kept)."""
    from dataclasses import replace

    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model
    from ffncalc.sources import hf

    label, stack = hf.load(WHOLE / "configs" / "qwen2_audio.json")
    m = with_inputs(Model(label, replace(stack, layers=stack.layers[:2])), audio_seconds=30)
    assert verify(m.stack, model=label, seq_len=1024).ok


# image sizes a tower can take whole (its patch grid a whole number of the projector's tiles): the others at their own
SIZES = {"idefics3": 512, "smolvlm": 512, "mistral3": 448, "lighton_ocr": 448, "cohere2_vision": 512, "aya_vision": 364}
SIZES["aria"] = 1120  # its projector names queries for 1,225 and 4,900 patches: 35 and 70 of 32 pixels a side
SIZES["shieldgemma2"] = 896  # its defaults pool 14 patches a side to 16 tokens, which transformers cannot run either
SIZES["modernvbert"] = SIZES["ultravbert"] = 256  # 14 patches a side at 224 pixels, which a pixel shuffle of 4 cannot group
SIZES["granite4_vision"] = 256  # 7 patches of 32 a side at 224 pixels: no whole window of 8 for its Window Q-Former
# language models of fewer learned positions than the 1,024 a walk's sequences take (BLIP's and the default
# VisionEncoderDecoderModel's BERT decoders: 512)
CONTEXTS = {"blip": 512, "vision-encoder-decoder": 512}


def _whole_types() -> list[str]:
    from ffncalc.sources.hf.towers import wrappers

    return sorted(t for t in wrappers() if "params" in json.loads((WHOLE / "truth" / f"{t}.json").read_text()))


@pytest.mark.parametrize("model_type", _whole_types())
def test_every_whole_model_is_counted_trained_served_and_fitted(model_type):
    """Every type read whole answers count, train, infer and fit with its media, each naming its tower's work (Evolla's
    a protein: its tokens --source-len where a command takes it, its default length in count)."""
    from ffncalc.errors import InputError
    from ffncalc.parts.protein import Protein
    from ffncalc.sources import hf
    from ffncalc.sources.hf import coverage

    config = str(WHOLE / "configs" / f"{model_type}.json")
    parts = hf.load(config)[1].parts
    audio = any("audio_seconds" in p.takes for p in parts)  # its tower's media
    protein = {"source_len": 256} if any(isinstance(p, Protein) for p in parts) else {}
    media = {"audio_seconds": 30} if audio else {} if protein else {"images": 1, "image_size": SIZES.get(model_type)}
    from ffncalc.parts.vision import Vision

    if any(isinstance(p, Vision) and p.source for p in parts):  # its images enter an encoder's source (Florence-2's)
        with pytest.raises(InputError, match="its images enter the encoder's source, which --images does not place yet"):
            ffncalc.count(config, **media)
        media = {}
    counted = ffncalc.count(config, **media)
    assert counted.params > 0
    assert ffncalc.train(config, tokens="1B", hardware="h100-sxm", gpus=8).figures["train_flops"].value > 0

    if model_type in coverage.WHOLE_ENCODER_TYPES:  # a vision encoder: the serving plans refuse it, as any encoder
        with pytest.raises(InputError, match="generates no tokens"):
            ffncalc.infer(config, prompt=512, generate=64, hardware="h100-sxm", **media)
        with pytest.raises(InputError, match="generates no tokens"):
            ffncalc.fit(config, context=1024, hardware="h100-sxm", **media)
        return
    context = CONTEXTS.get(model_type, 1024)
    served = ffncalc.infer(config, prompt=min(512, context - 64), generate=64, hardware="h100-sxm", **media, **protein)
    assert served.figures["prefill_flops"].value > 0
    fitted = ffncalc.fit(config, context=context, hardware="h100-sxm", **media, **protein)
    assert fitted.figures["kv_bytes_per_device"].value > 0


@pytest.mark.torch
@pytest.mark.parametrize("model_type", _whole_types())
def test_every_whole_model_verifies_with_its_media(model_type):
    """Every type read whole: its reference modules (tower, projector, one text layer) hold the count's parameters
    and run one image (or 30 s of audio) to the count's FLOPs, component by component."""
    from dataclasses import replace

    from ffncalc.analysis.verify import verify
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model
    from ffncalc.sources import hf

    label, stack = hf.load(WHOLE / "configs" / f"{model_type}.json")
    # a tower whose images enter an encoder's source (Florence-2's), which --images does not place: its image given here
    from ffncalc.parts.vision import Vision

    parts = tuple(replace(p, source=False) if isinstance(p, Vision) and p.source else p for p in stack.parts)
    m = Model(label, replace(stack, layers=stack.layers[:1], parts=parts))
    audio = any("audio_seconds" in p.takes for p in m.stack.parts)
    from ffncalc.parts.protein import Protein

    if any(isinstance(p, Protein) for p in m.stack.parts):  # Evolla's media: a protein of 256 tokens
        m = with_inputs(m, source_len=256)
    else:
        m = with_inputs(m, audio_seconds=30) if audio else with_inputs(m, images=1, image_size=SIZES.get(model_type))
    assert verify(m.stack, model=label, seq_len=256).ok


def test_voxtral_realtime_audio_adds_to_the_texts_positions():
    """Voxtral Realtime adds each audio embedding to the text token's at its position (VoxtralRealtimeModel.forward:
    inputs_embeds += audio_embeds): 30 s of audio add one window through the tower and projector to the prefill
    (FlopCounterMode's figure) and no tokens to the cache or to a decode step."""
    config = str(WHOLE / "configs" / "voxtral_realtime.json")
    kw = dict(prompt=512, generate=64, hardware="h100-sxm")
    heard = ffncalc.infer(config, audio_seconds=30, **kw).figures
    plain = ffncalc.infer(config, **kw).figures
    assert heard["prefill_flops"].value - plain["prefill_flops"].value == per_window("voxtral_realtime")
    for key in ("kv_bytes", "decode_first_flops", "decode_flops", "step_flops"):
        assert heard[key].value == plain[key].value, key
