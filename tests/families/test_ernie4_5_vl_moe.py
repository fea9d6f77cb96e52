"""ERNIE 4.5-VL (ernie4_5_vl_moe): its language model's modality-isolated mixtures (ernie4_5_vl_moe_text), its Qwen2-VL
form tower and its variable-resolution resampler, by hand, against the whole class's record (tests/hf_whole) and against
the reference modules."""

import json
import re
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "ernie4_5_vl_moe.json"
TRUTH = json.loads((HERE / "truth" / "ernie4_5_vl_moe.json").read_text())

# A small language model: a dense first layer, then a sparse one of 8 experts (2 a token) of 32 (text) and 16 (vision)
SMALL = {
    "model_type": "ernie4_5_vl_moe_text",
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "moe_num_experts": 8,
    "moe_k": 2,
    "moe_intermediate_size": [32, 16],
    "moe_num_shared_experts": 2,
    "mlp_layer_types": ["dense", "sparse"],
}


def small(tmp_path, **changes):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL, **changes}))
    return hf.load(path)[1]


def recorded(pattern: str, layer: int | None = None) -> int:
    """The whole class's parameters whose name matches ``pattern`` (in transformers' layer ``layer``, if given)."""
    total = 0
    for name, n in expanded(TRUTH["params"], 2):
        found = re.search(r"\.layers\.(\d+)\.", name)
        if re.search(pattern, name) and (layer is None or (found and int(found.group(1)) == layer)):
            total += n
    return total


def test_one_sparse_layer_by_hand():
    """A sparse layer of the defaults (hidden 2,560; 64 experts, 6 a token): the text mixture (a router of 64 × 2,560,
    its correction of 64, 64 SwiGLU experts of 1,536), the vision mixture (its own router and correction, 64 experts of
    512) and the shared experts (one SwiGLU of 2 × 1,536), as the whole class holds them in layer 1."""
    d, e, text, vision, shared = 2560, 64, 1536, 512, 2 * 1536
    text_moe = e * d + e + e * 3 * d * text
    vision_moe = e * d + e + e * 3 * d * vision
    shared_mlp = 3 * d * shared
    assert text_moe == recorded(r"mlp\.text_moe\.", 1) == 755_138_624
    assert vision_moe == recorded(r"mlp\.vision_moe\.", 1) == 251_822_144
    assert shared_mlp == recorded(r"mlp\.shared_experts\.", 1)
    _, model = hf.load(CONFIG)
    ours = {"text": 0, "vision": 0, "shared": 0}
    for t in terms(model, 8, partial=True):
        if t.layers == (1, 28) and t.slot == "ffn":
            key = "vision" if "vision_" in t.name else "shared" if ".shared." in t.name else "text"
            ours[key] += t.numel * t.count // 27
    assert ours == {"text": text_moe, "vision": vision_moe, "shared": shared_mlp}


def test_whole_count_is_the_record(tmp_path):
    """The language model, the tower and the resampler: 28,624,635,776 + 630,433,280 + 144,225,280 parameters; a
    config.json stating its model_type alone means the same (its configuration classes' defaults)."""
    _, model = hf.load(CONFIG)
    assert tally(model).params == 28_624_635_776 + 630_433_280 + 144_225_280 == recorded(".")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "ernie4_5_vl_moe"}))
    assert tally(hf.load(tmp_path / "config.json")[1]).params == recorded(".")


def test_a_text_token_runs_the_text_mixture_alone(tmp_path):
    """In the sparse layer a token's active parameters are the text router and correction, 2 of 8 text experts and the
    shared experts; its matmul FLOPs the router's, 2 experts' and the shared experts'; the vision mixture's 8 × 3 × 64 ×
    16 weights, router and correction count in the parameters, none active, no work; the note says image tokens are
    run by the images' tokens alone."""
    model = small(tmp_path)
    d, e, k, text, vision, shared = 64, 8, 2, 32, 16, 64
    rows = [t for t in terms(model, 8, partial=True) if t.layers == (1, 2) and t.slot == "ffn"]
    vision_rows = [t for t in rows if "vision_" in t.name]
    assert sum(t.numel * t.count for t in vision_rows) == e * d + e + e * 3 * d * vision
    assert sum(t.numel * t.active_count for t in vision_rows) == 0
    assert sum(t.macs + t.elementwise for t in vision_rows) == 0
    active = sum(t.numel * t.active_count for t in rows)
    assert active == e * d + e + k * 3 * d * text + 3 * d * shared
    assert sum(t.macs for t in rows) == e * d + k * 3 * d * text + 3 * d * shared
    note = " ".join(tally(model).notes)
    assert "vision mixture (8 experts of 16, its own router) runs the images' tokens and no text token" in note


# The whole class built small: SMALL's language model beside a tower of width 64 (2 layers of 4 heads); a 56-pixel image
# is 4 × 4 patches of 14, 2 × 2 a token: 4 tokens of the language model
VISION = {"depth": 2, "hidden_size": 64, "num_heads": 4, "intermediate_size": 128}
ROPE = {"rope_type": "default", "rope_theta": 5e5, "mrope_section": [3, 3, 2]}  # a head_dim of 16's 3-D sections


def with_image(tmp_path):
    from dataclasses import replace

    path = tmp_path / "whole.json"
    path.write_text(json.dumps({"model_type": "ernie4_5_vl_moe", "text_config": SMALL, "vision_config": VISION}))
    model = hf.load(path)[1]
    return replace(model, parts=tuple(p.given(images=1, image_size=56) for p in model.parts))


def mixture_flops(model, seq_len: int) -> dict[str, int]:
    """The sparse layer's forward FLOPs over a sequence, per mixture's router and experts."""
    out: dict[str, int] = {}
    for r in tally(model, seq_len=seq_len).rows:
        if r.layers == (1, 2) and r.component in ("ffn.router", "ffn.experts", "ffn.vision_router", "ffn.vision_experts"):
            out[r.component] = out.get(r.component, 0) + int(r.flops * seq_len)
    return out


def test_image_tokens_run_the_vision_mixture(tmp_path):
    """12 positions, 4 of them the image's: the text router over 8 positions (8 × 64 × 8 multiply-adds), 2 text experts
    a text position (3 × 64 × 32 each); the vision router and 2 vision experts (3 × 64 × 16) over the 4 image positions;
    a token's active parameters stay a text token's."""
    model = with_image(tmp_path)
    assert mixture_flops(model, 12) == {
        "ffn.router": 2 * 8 * 64 * 8,
        "ffn.experts": 2 * 8 * 2 * 3 * 64 * 32,
        "ffn.vision_router": 2 * 4 * 64 * 8,
        "ffn.vision_experts": 2 * 4 * 2 * 3 * 64 * 16,
    }
    assert tally(model, seq_len=12).active == tally(small(tmp_path), seq_len=12).active


def test_a_decode_step_is_a_text_token(tmp_path):
    """One position (a generated token: the images' were prefilled) runs the text mixture alone, images or not."""
    assert (
        mixture_flops(with_image(tmp_path), 1)
        == mixture_flops(small(tmp_path), 1)
        == {
            "ffn.router": 2 * 64 * 8,
            "ffn.experts": 2 * 2 * 3 * 64 * 32,
            "ffn.vision_router": 0,
            "ffn.vision_experts": 0,
        }
    )


def test_an_image_changes_the_prefill_alone(cli):
    """infer at the defaults: 1,000 tokens of text and one 448-pixel image (256 tokens) decode as 1,256 tokens of
    text do (a generated token is a text token: the same FLOPs and bytes a step); the prefill differs by the tower's
    work less, for each of the 256 image tokens, 6 experts a token through the vision mixture (512 wide) in place of
    the text mixture (1,536) in each of the 27 sparse layers: 2 × 27 × 6 × 3 × 2,560 × (1,536 − 512) FLOPs."""
    from ffncalc.parts.vision import Vision

    def figures(*args):
        code, out, _ = cli("infer", str(CONFIG), "--hardware", "h100-sxm", "--generate", "100", *args, "-f", "json")
        assert code == 0
        return {k: f["value"] for k, f in json.loads(out)["figures"].items()}

    image = figures("--prompt", "1000", "--images", "1", "--image-size", "448")
    text = figures("--prompt", "1256")
    for key in ("decode_first_flops", "decode_flops", "step_bytes", "step_flops", "decode_step_s"):
        assert image[key] == text[key], key
    (vision,) = [p for p in hf.load(CONFIG)[1].parts if isinstance(p, Vision)]
    tokens, tower = vision.per_image(hf.load(CONFIG)[1])[:2]
    assert tokens == 256
    assert image["prefill_flops"] - text["prefill_flops"] == tower - 256 * 2 * 27 * 6 * 3 * 2560 * (1536 - 512)


def test_6n_counts_a_text_tokens_parameters(tmp_path):
    """6N counts a token's active parameters, a text token's: the same FLOPs a token with an image or without (the
    vision mixture active for no token, the text mixture's parameters each token's whole)."""
    with_images = tally(with_image(tmp_path), convention="6n", seq_len=12).flops_per_token
    assert with_images == tally(small(tmp_path), convention="6n", seq_len=12).flops_per_token


@pytest.mark.torch
def test_image_tokens_as_transformers_runs_them(tmp_path):
    """Ernie4_5_VLMoeTextModel of SMALL's config, its experts run eagerly, over 12 positions with
    moe_mm_token_type_ids marking the first 4 as vision tokens: FlopCounterMode's FLOPs of each mixture's gate and
    experts in the sparse layer are the count's with one image of 4 tokens."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import Ernie4_5_VLMoeTextConfig
    from transformers.models.ernie4_5_vl_moe.modeling_ernie4_5_vl_moe import Ernie4_5_VLMoeTextModel

    config = Ernie4_5_VLMoeTextConfig(**SMALL, rope_parameters=ROPE)
    config._experts_implementation = "eager"  # per-expert linears, which FlopCounterMode sees
    net = Ernie4_5_VLMoeTextModel(config).eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net(inputs_embeds=torch.randn(1, 12, 64), moe_mm_token_type_ids=torch.tensor([[1] * 4 + [0] * 8]))
    counts = {name: sum(v.values()) for name, v in counter.get_flop_counts().items()}
    mlp = "Ernie4_5_VLMoeTextModel.layers.1.mlp."
    theirs = {
        "ffn.router": counts[mlp + "text_moe.gate"],
        "ffn.experts": counts[mlp + "text_moe.experts"],
        "ffn.vision_router": counts[mlp + "vision_moe.gate"],
        "ffn.vision_experts": counts[mlp + "vision_moe.experts"],
    }
    assert theirs == mixture_flops(with_image(tmp_path), 12)


@pytest.mark.torch
def test_reference_runs_image_tokens_through_the_vision_mixture(tmp_path):
    """verify with the image: the reference module sends the image's 4 positions through the vision mixture, every
    component's parameters and FLOPs as counted."""
    from ffncalc.analysis.verify import verify

    report = verify(with_image(tmp_path), seq_len=12)
    assert report.ok, report.failures
    checks = {c.component: c for c in report.checks if c.layers == (1, 2)}
    assert checks["ffn.vision_experts.gate.weight"].torch_flops == 2 * 4 * 2 * 64 * 16
    assert checks["ffn.experts.gate.weight"].torch_flops == 2 * 8 * 2 * 64 * 32


def test_resampler_by_hand():
    """Ernie4_5_VLMoeVariableResolutionResamplerModel at the defaults: 2 × 2 patches of 1,280 into s = 5,120 features;
    spatial_linear fc1 and fc2 (s → s) with biases and a LayerNorm, temporal_linear fc1 (2s → s) and fc2 (s → s) with
    biases and a LayerNorm, mlp (s → 2,560) with a bias and an RMSNorm of 2,560; a 448-pixel image is 32 × 32 patches of
    14, 256 tokens, a 336-pixel one 144."""
    from dataclasses import replace

    from ffncalc.parts.vision import Vision

    s, d = 4 * 1280, 2560
    params = 2 * (s * s + s) + 2 * s + (2 * s * s + s) + (s * s + s) + 2 * s + s * d + d + d
    assert params == recorded(r"resampler_model\.") == 144_225_280
    _, model = hf.load(CONFIG)
    ours = sum(t.numel * t.count for t in terms(model, 8, partial=True) if t.component.startswith("vision.projector."))
    assert ours == params
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    assert [replace(vision, image_size=size).per_image(model)[0] for size in (448, 336)] == [256, 144]


def test_reduced_image_flops_by_hand():
    """The record's image FLOPs (the class built small: a tower of width 64, 2 layers of 4 heads and an MLP of 128; the
    text width 64), FlopCounterMode's per module, by hand: each patch's 588 pixels into 64, q, k, v, o, fc1 and fc2 and
    the full square of scores and values over every patch; the resampler's s = 256 features through its four linears
    and mlp, a token each."""
    w, f, d = 64, 128, 64
    runs = {r["size"]: r["modules"] for r in TRUTH["image_flops"]["runs"]}
    for size in (448, 336):
        n = (size // 14) ** 2
        tower = n * 3 * 14 * 14 * w + 2 * (n * (4 * w * w + 2 * w * f) + 2 * n * n * w)
        s, tokens = 4 * w, n // 4
        resampler = tokens * (s * s + s * s + 2 * s * s + s * s + s * d)
        assert runs[size]["Ernie4_5_VLMoeVisionTransformerPretrainedModel"] == 2 * tower
        assert runs[size]["Ernie4_5_VLMoeVariableResolutionResamplerModel"] == 2 * resampler


@pytest.mark.torch
def test_reference_sparse_layer_verifies(tmp_path):
    """verify builds the sparse layer's reference module (the text mixture run, the vision mixture held): every
    component's parameters and FLOPs agree with the count, the vision mixture's FLOPs none."""
    from ffncalc.analysis.verify import verify

    report = verify(small(tmp_path), seq_len=16)
    assert report.ok, report.failures
    checks = {c.component: c for c in report.checks if c.layers == (1, 2)}
    held = [c for name, c in checks.items() if name.startswith(("ffn.vision_experts.", "ffn.vision_router."))]
    assert sum(c.torch_params for c in held) == 8 * 3 * 64 * 16 + 8 * 64
    assert sum(c.torch_flops for c in held) == 0
    assert checks["ffn.experts.gate.weight"].torch_flops == 2 * 16 * 2 * 64 * 32  # 2 of the text experts a token


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"moe_intermediate_size": [32]}, "moe_intermediate_size: expected the text and the vision experts' widths"),
        ({"mlp_layer_types": ["sparse"]}, 'mlp_layer_types: expected 2 entries, each "dense" or "sparse"'),
        ({"num_key_value_heads": None}, "num_key_value_heads: Ernie4_5_VLMoeTextAttention reads it as it is"),
    ],
)
def test_bad_settings_are_one_line(tmp_path, changes, words):
    from ffncalc.errors import InputError

    with pytest.raises(InputError, match=re.escape(words)):
        small(tmp_path, **changes)


def test_bad_setting_exits_2_in_one_line(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL, "moe_intermediate_size": "wide"}))
    code, _, err = cli("count", str(path))
    assert code == 2 and "moe_intermediate_size" in err and err.count("\n") == 1


def test_linears_as_transformers_holds_them(tmp_path):
    """What adapters see of the sparse layer: each mixture's router its own module (Ernie4_5_VLMoeMoeTopKRouter's
    weight a plain parameter), each mixture's experts fused 3-D parameters, the shared experts nn.Linear modules."""
    model = small(tmp_path)
    kinds = {lin.component: (lin.module, lin.kind, lin.copies) for lin in model.layers[1].ffn.linears(model)}
    assert kinds["ffn.router"] == kinds["ffn.vision_router"] == ("gate", "router", 1)
    assert kinds["ffn.vision_experts.gate"] == ("gate_proj", "experts", 8) == kinds["ffn.experts.gate"]
    assert kinds["ffn.vision_experts.down"] == ("down_proj", "experts", 8)
    assert kinds["ffn.shared.up"] == ("up_proj", "linear", 1)
