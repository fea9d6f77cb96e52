"""UDOP (UdopForConditionalGeneration): T5's encoder and decoder over a document's words and image (families/udop.py,
parts/document.py), counted whole against the class transformers 5.23 builds at its defaults (tests/hf_whole, recorded by
scripts/hf_whole.py) component by component and by hand, and its FLOPs against FlopCounterMode on the class built
small, at two sequence lengths and two image sizes. An encoder-decoder read by its family (coverage.WHOLE_BY_FAMILY),
not a wrapper's tower beside a language model: the whole-model tests' per-tower checks do not apply, these do."""

import json
from pathlib import Path

import pytest

import ffncalc
from ffncalc.analysis import hfcheck
from ffncalc.analysis.count import tally
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf
from ffncalc.sources.hf import coverage

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "udop.json"
RECORD = json.loads((HERE / "truth" / "udop.json").read_text())

# UdopConfig's defaults (tests/hf_whole/configs/udop.json)
D, HEADS, D_FF, LAYERS, VOCAB, BUCKETS, CELLS, PATCH, SIDE = 1024, 16, 4096, 24, 33201, 32, 1024, 16, 224


def components(model, seq_len: int = 512) -> dict[str, tuple[int, float]]:
    """Parameters and forward FLOPs per decoder token (the exact convention) by component, every layer together."""
    out: dict[str, tuple[int, float]] = {}
    for row in tally(model, convention="exact", seq_len=seq_len).rows:
        params, flops = out.get(row.component, (0, 0))
        out[row.component] = (params + row.params, flops + row.flops)
    return out


def test_udop_is_counted_whole_by_its_family():
    statuses = {r["model_type"]: r for r in coverage.multimodal_types()}
    assert statuses["udop"]["status"] == "supported" and statuses["udop"]["defaults"] == "exact"
    assert "udop" in coverage.WHOLE_BY_FAMILY and "udop" not in coverage.WHOLE_NOT_YET
    assert RECORD["model_class"] == "UdopForConditionalGeneration"


def test_parameters_equal_the_class_component_by_component():
    """Every parameter transformers builds, named by its module (a checkpoint's names), against ours per component."""
    label, model = hf.load(CONFIG)
    measured = hfcheck.Measured.from_record(RECORD)
    report = hfcheck.check(hf.read_config(CONFIG), model=label, spec=model, measured=measured)
    assert report.ok, [(c.component, c.ours, c.transformers) for c in report.failures]
    names = {c.component for c in report.checks}
    assert not any(n.startswith("(unmatched)") for n in names)
    assert {"patch_embed", "encoder.cell_2d.x", "encoder.cell_2d.y", "encoder.relative_bias_2d"} <= names
    assert {"decoder.embed_patches", "decoder.relative_bias_2d", "encoder.relative_bias", "relative_bias"} <= names
    assert tally(model).params == sum(n for _, n in expanded(RECORD["params"], 2)) == 742_440_960


def test_layout_tables_and_biases_by_hand():
    """UdopCellEmbeddings: an x and a y table of max_2d_position_embeddings × d_model, the encoder's alone. Each
    stack's RelativePositionBiasAggregated holds relative_bias_args' three tables of 32 buckets (RelativePositionBiasBase's
    default, not the config's relative_attention_num_buckets) × 16 heads: its first ("1d") tied to the encoder's first
    block's T5 table (_tied_weights_keys: both stacks'), the horizontal and vertical ones its own. T5's tables: one in
    each stack's first block, 32 × 16. UdopPatchEmbeddings: a Conv2d of 3 channels to d_model, 16 × 16 with a bias,
    at the top (the encoder's embed_patches tied to it) and the decoder's own."""
    ours = components(hf.load(CONFIG)[1])
    cell = 2 * CELLS * D
    biases_2d = 2 * (2 * 32 * HEADS)  # horizontal and vertical, in each stack
    t5_tables = 2 * BUCKETS * HEADS
    patches = 2 * (3 * PATCH * PATCH * D + D)
    assert ours["encoder.cell_2d.x"][0] + ours["encoder.cell_2d.y"][0] == cell == 2_097_152
    assert ours["encoder.relative_bias_2d"][0] == ours["decoder.relative_bias_2d"][0] == biases_2d // 2 == 1024
    assert ours["encoder.relative_bias"][0] + ours["relative_bias"][0] == t5_tables == 1024
    assert ours["patch_embed"][0] + ours["decoder.embed_patches"][0] == patches == 1_574_912
    encoder_layer = 4 * D * D + 2 * D * D_FF + 2 * D  # q, k, v, o; wi, wo; two RMS norms
    decoder_layer = 8 * D * D + 2 * D * D_FF + 3 * D  # and the cross-attention's four and its norm
    total = VOCAB * D + patches + LAYERS * (encoder_layer + decoder_layer) + 2 * D + t5_tables + cell + biases_2d
    assert total == sum(n for _, n in expanded(RECORD["params"], 2)) == tally(hf.load(CONFIG)[1]).params


def test_the_source_is_the_words_and_the_images_patches_by_hand():
    """combine_image_text_embeddings appends the patches under no word's centre and pads them with zero rows to all
    (224 / 16)² = 196: the encoder runs over T + 196 rows whatever the boxes, each decoder query meets them all, and the
    patch convolution (3 · 16² inputs a feature) runs once a sequence. Per decoder token at T = 512, 2 FLOPs a
    multiply-add."""
    t, rows = 512, 512 + 196
    ours = components(hf.load(CONFIG)[1], t)
    assert ours["encoder.attn.q"][1] * t == 2 * LAYERS * D * D * rows
    assert ours["encoder.attn.scores"][1] * t == 2 * LAYERS * HEADS * rows * rows * 64
    assert ours["encoder.cross.k"][1] * t == 2 * LAYERS * D * D * rows
    assert ours["encoder.cross.scores"][1] * t == 2 * LAYERS * HEADS * t * rows * 64
    assert ours["patch_embed"][1] * t == 2 * 196 * D * 3 * PATCH * PATCH
    for idle in ("decoder.embed_patches", "decoder.relative_bias_2d", "encoder.cell_2d.x", "encoder.relative_bias_2d"):
        assert ours[idle][1] == 0  # lookups, or built and never run


def test_image_size_sets_the_appended_patches(tmp_path):
    """image_size 448: 28² = 784 patches appended (UdopPatchEmbeddings refuses any other size than the config's), the
    same parameters."""
    data = json.loads(CONFIG.read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, "image_size": 448}))
    t, rows = 512, 512 + 784
    model = hf.load(tmp_path / "config.json")[1]
    ours = components(model, t)
    assert ours["encoder.attn.q"][1] * t == 2 * LAYERS * D * D * rows
    assert ours["patch_embed"][1] * t == 2 * 784 * D * 3 * PATCH * PATCH
    assert tally(model).params == tally(hf.load(CONFIG)[1]).params


def test_count_train_serve_and_fit(cli):
    code, out, err = cli("count", str(CONFIG))
    assert code == 0 and "742,440,960" in out and err == ""
    assert "one document image" in " ".join(out.split())
    config = str(CONFIG)
    assert ffncalc.train(config, tokens="1B", hardware="h100-sxm", gpus=8).figures["train_flops"].value > 0
    assert ffncalc.infer(config, prompt=448, generate=64, hardware="h100-sxm").figures["prefill_flops"].value > 0
    assert ffncalc.fit(config, context=1024, hardware="h100-sxm").figures["kv_bytes_per_device"].value > 0
    # each decoder layer caches K and V (16 heads of 64) of a 1,024-token source and its 196 patch rows
    model = hf.load(CONFIG)[1]
    (encoder,) = [p for p in model.parts if p.key == "encoder"]
    assert encoder.sized(1024).cached_elements(model) == 2 * HEADS * 64 * (1024 + 196)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"relative_bias_args": [{"type": "diagonal"}]}, "relative_bias_args"),
        ({"relative_bias_args": [{"type": "horizontal", "relative_attention_num_buckets": 64}]}, "tied to the first block's"),
        ({"relative_bias_args": [{"type": "1d", "num_heads": 3}]}, "3 heads"),
        ({"image_size": 8}, "image_size"),
    ],
)
def test_shapes_not_read_are_one_line(cli, tmp_path, change, words):
    data = json.loads(CONFIG.read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, **change}))
    code, out, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err


SMALL = {"d_model": 64, "d_kv": 16, "num_heads": 4, "d_ff": 128, "num_layers": 2, "num_decoder_layers": 3}
SMALL |= {"vocab_size": 100, "max_2d_position_embeddings": 50}


def _udop(data: dict, device: str = "cpu"):
    import torch
    from transformers import UdopConfig, UdopForConditionalGeneration

    config = UdopConfig(**{k: v for k, v in data.items() if k != "model_type"})
    with torch.device(device):
        return UdopForConditionalGeneration._from_config(config, attn_implementation="eager").eval()


@pytest.mark.torch
def test_relative_bias_tables_of_their_own_shapes_equal_transformers(tmp_path):
    """relative_bias_args with a prefix bucket (two more rows) and a table of 64 buckets: the class built on the meta
    device against ours, and by hand: 32 + 2 and 64 rows of 4 heads in each stack."""
    data = json.loads(CONFIG.read_text()) | SMALL
    args = [{"type": "1d"}, {"type": "horizontal", "prefix_bucket": True}, {"type": "vertical", "relative_attention_num_buckets": 64}]
    data["relative_bias_args"] = args
    (tmp_path / "config.json").write_text(json.dumps(data))
    model = hf.load(tmp_path / "config.json")[1]
    built = _udop(data, "meta")
    ours = components(model)
    assert ours["encoder.relative_bias_2d"][0] == ours["decoder.relative_bias_2d"][0] == (34 + 64) * 4
    assert tally(model).params == sum(p.numel() for p in built.parameters())


@pytest.mark.torch
@pytest.mark.parametrize("side", [32, 64])
def test_flops_equal_flopcountermode(tmp_path, side):
    """The class built small on the CPU (eager attention), one image of 32 and of 64 pixels (4 and 16 patches) and
    T = 5 and 9 words with their boxes, as many decoder tokens: FlopCounterMode's every matmul and convolution against
    our forward FLOPs under the exact convention, per decoder token × T."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    data = json.loads(CONFIG.read_text()) | SMALL | {"image_size": side}
    (tmp_path / "config.json").write_text(json.dumps(data))
    model = hf.load(tmp_path / "config.json")[1]
    built = _udop(data)
    torch.manual_seed(0)
    for t in (5, 9):
        box = torch.rand(1, t, 4).sort(-1).values[..., [0, 2, 1, 3]]  # x0 ≤ x1, y0 ≤ y1
        ids, decoder_ids = torch.randint(2, 100, (1, t)), torch.randint(2, 100, (1, t))
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            built(input_ids=ids, bbox=box, pixel_values=torch.rand(1, 3, side, side), decoder_input_ids=decoder_ids)
        ours = sum(r.flops for r in tally(model, convention="exact", seq_len=t).rows) * t
        assert ours == counter.get_total_flops()


@pytest.mark.torch
def test_reference_modules_hold_the_count():
    """verify: our reference modules (one layer of each stack, the document part's convolution over an image and its
    tables) hold the count's parameters and FLOPs, component by component."""
    from dataclasses import replace

    from ffncalc.analysis.verify import verify

    label, stack = hf.load(CONFIG)
    parts = tuple(replace(p, layers=replace(p.layers, n_layers=1)) if p.key == "encoder" else p for p in stack.parts)
    assert verify(replace(stack, layers=stack.layers[:1], parts=parts), model=label, seq_len=64).ok
