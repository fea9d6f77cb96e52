"""--image-tokens: an image stated by the tokens of the language model it makes, the tower's work at the size that
makes them (the tower's own size where it does, else the smallest), or refused naming the nearest counts."""

import json
from pathlib import Path

import pytest

import ffncalc

WHOLE = Path(__file__).resolve().parents[1] / "hf_whole" / "configs"
QWEN = str(WHOLE / "qwen2_5_vl.json")
LLAVA = str(WHOLE / "llava.json")


def test_qwen2_5_vl_at_the_size_that_makes_them():
    """Qwen2.5-VL: patches of 14, 2 × 2 merged a token; 1,024 tokens are 32 × 32 merged, 64 × 64 patches, 896 pixels a
    side: the count is the count at --image-size 896."""
    by_tokens = ffncalc.count(QWEN, images=1, image_tokens=1024, seq_len=2048)
    by_size = ffncalc.count(QWEN, images=1, image_size=896, seq_len=2048)
    assert by_tokens.tally.flops_per_token == by_size.tally.flops_per_token
    assert any("one 896×896-pixel image is 1,024 tokens" in " ".join(n.split()) for n in by_tokens.tally.notes)


def test_a_tower_built_for_one_size_keeps_it():
    """Gemma 3's tower pools its 64 × 64 patches of 896 pixels to 16 × 16: 256 tokens at its own size (a smaller image
    of 16 × 16 patches would make 256 too, unpooled)."""
    notes = " ".join(" ".join(n.split()) for n in ffncalc.count("gemma-3-27b", images=1, image_tokens=256).tally.notes)
    assert "one 896×896-pixel image is 256 tokens" in notes


def test_infer_prefills_them(cli):
    code, out, _ = cli("infer", QWEN, "--prompt", "100", "--generate", "4", "--images", "2", "--image-tokens", "64", "-f", "json")
    assert code == 0
    assert any("128 prompt tokens beside the 100 of text" in n for n in json.loads(out)["notes"])  # 2 images of 8 × 8


@pytest.mark.parametrize(
    ("args", "words"),
    [
        # CLIP's patches of 14 at 336 pixels: 24 × 24 = 576; the next size it takes, 350: 25 × 25 = 625
        (
            (LLAVA, "--images", "1", "--image-tokens", "577"),
            "--image-tokens 577: no image size makes that many tokens in llava; nearest: 576 (336 pixels) or 625 (350 pixels)",
        ),
        ((QWEN, "--image-tokens", "64", "--image-size", "448"), "give it or --image-size, not both"),
        (("gpt2", "--image-tokens", "64"), "--image-tokens 64: gpt2 has no part that takes it (no vision tower)"),
    ],
)
def test_refused_in_one_line(cli, args, words):
    code, out, err = cli("count", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err


@pytest.mark.parametrize("option", [("--image-tokens", "64"), ("--image-size", "448"), ("--images", "1")])
def test_fine_tuning_plans_refuse_them(cli, option):
    """fit --lora plans text sequences: what an image brings is refused by its option, one line."""
    code, out, err = cli("fit", QWEN, "--hardware", "h100-sxm", "--lora", "8", *option)
    assert code == 2 and out == "" and err.count("\n") == 1 and f"{option[0]}: fine-tuning plans count text sequences" in err
