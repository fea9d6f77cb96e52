"""A whole vision-language checkpoint counted from its header: every tensor of the tower and the projector explained
by the count of its config.json, as the language model's are (Gemma 3 at its class defaults, its SigLIP tower with the
pooling head whose in_proj holds the query's, keys' and values' rows in one tensor)."""

import json
import shutil
from pathlib import Path

import pytest
from checkpoints.test_checkpoint import counted, write_safetensors

CONFIGS = Path(__file__).resolve().parents[1] / "hf_whole" / "configs"


@pytest.mark.torch
def test_whole_gemma3_checkpoint_is_explained(cli, tmp_path):
    from ffncalc.analysis.hfwhole import instantiate_whole

    config = CONFIGS / "gemma3.json"
    net = instantiate_whole(json.loads(config.read_text()))
    tensors = [(name, "BF16", tuple(p.shape)) for name, p in net.named_parameters()]  # a tied one once
    shutil.copy(config, tmp_path / "config.json")
    write_safetensors(tmp_path / "model.safetensors", tensors)
    data = counted(cli, str(tmp_path / "model.safetensors"))
    assert data["compared"]["unexplained"] == 0
    assert data["totals"]["params"] == sum(p.numel() for p in net.parameters()) == data["compared"]["ffncalc_params"]
    towers = {c["component"] for c in data["compared"]["components"] if c["component"].startswith("vision.")}
    assert {"vision.patch_embed", "vision.attn.q", "vision.head.attn.q+k+v", "vision.projector.linear"} <= towers


@pytest.mark.torch
def test_whole_hunyuan_vl_checkpoint_is_explained(cli, tmp_path):
    """HunyuanOCR at its recorded defaults: every tensor of its tower and of the patch merger inside it
    (model.vision_tower.patch_merger: its convolutions, newline, begin, end and separator rows and both RMSNorms)
    explained by the count of its config.json."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    config = CONFIGS / "hunyuan_vl.json"
    net = instantiate_whole(json.loads(config.read_text()))
    tensors = [(name, "BF16", tuple(p.shape)) for name, p in net.named_parameters()]  # the tied head once
    shutil.copy(config, tmp_path / "config.json")
    write_safetensors(tmp_path / "model.safetensors", tensors)
    data = counted(cli, str(tmp_path / "model.safetensors"))
    assert data["compared"]["unexplained"] == 0
    assert data["totals"]["params"] == sum(p.numel() for p in net.parameters()) == data["compared"]["ffncalc_params"]
    merger = {c["component"] for c in data["compared"]["components"] if c["component"].startswith("vision.projector.")}
    names = ("norm", "conv", "conv_out", "newline", "linear", "ends", "sep", "post_norm")
    assert merger == {f"vision.projector.{n}" for n in names}


@pytest.mark.torch
def test_whole_muse_spark_checkpoint_is_explained(cli, tmp_path):
    """MUSE Spark built small (tests/families/test_muse_spark.py: dense and mixture layers, narrow experts, two audio
    stages): every tensor of its language model, vision tower, adapter and audio tower explained by the count of its
    config.json, the audio tower's modules by their components."""
    from families.test_muse_spark import small

    from ffncalc.analysis.hfwhole import instantiate_whole

    config = small(tmp_path)
    net = instantiate_whole(json.loads(config.read_text()))
    tensors = [(name, "BF16", tuple(p.shape)) for name, p in net.named_parameters()]
    write_safetensors(tmp_path / "model.safetensors", tensors)
    data = counted(cli, str(tmp_path / "model.safetensors"))
    assert data["compared"]["unexplained"] == 0
    assert data["totals"]["params"] == sum(p.numel() for p in net.parameters()) == data["compared"]["ffncalc_params"]
    audio = {c["component"] for c in data["compared"]["components"] if c["component"].startswith("audio.")}
    stages = {f"audio.patch{i}.{m}" for i in (0, 1) for m in ("proj", "norm")}
    assert audio == stages | {f"audio.stage0.{m}" for m in ("conv", "norm", "fc1", "fc2")} | {
        "audio.norm",
        "audio.proj",
        "audio.post_proj_norm",
    }


@pytest.mark.torch
def test_whole_gemma3n_checkpoint_is_explained(cli, tmp_path):
    """Gemma 3n at its class defaults: every tensor of its MobileNetV5 (timm's names under vision_tower.timm_model), its
    audio tower and both embedders explained by the count of its config.json, as the language model's are."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    config = CONFIGS / "gemma3n.json"
    net = instantiate_whole(json.loads(config.read_text()))
    tensors = [(name, "BF16", tuple(p.shape)) for name, p in net.named_parameters()]  # the tied head once
    shutil.copy(config, tmp_path / "config.json")
    write_safetensors(tmp_path / "model.safetensors", tensors)
    data = counted(cli, str(tmp_path / "model.safetensors"))
    assert data["compared"]["unexplained"] == 0
    assert data["totals"]["params"] == sum(p.numel() for p in net.parameters()) == data["compared"]["ffncalc_params"]
    towers = {c["component"] for c in data["compared"]["components"] if c["component"].startswith(("vision.", "audio."))}
    named = {"vision.stem.conv", "vision.stage2.mqa.key_down", "vision.msfa.pw_proj", "vision.projector.linear"}
    assert named | {"audio.subsample.conv0", "audio.attn.pos_proj", "audio.lconv.conv", "audio.projector.embedding"} <= towers


@pytest.mark.torch
@pytest.mark.parametrize(
    ("model_type", "parts"),
    [
        # Granite 4 Vision: its spatial Window Q-Formers the projector, its layerwise ones the deepstack
        (
            "granite4_vision",
            {"vision.projector.norm", "vision.projector.qformer.queries", "vision.projector.qformer.positions"}
            | {"vision.projector.qformer.cross.k", "vision.projector.linear", "vision.deepstack.qformer.positions"}
            | {"vision.deepstack.linear", "vision.image_newline"},
        ),
        # Cohere Compass: Qwen3-VL's merger and deepstack mergers
        ("cohere_compass", {"vision.projector.norm", "vision.projector.linear_1", "vision.deepstack.linear_2"}),
    ],
)
def test_whole_checkpoint_of_a_deepstack_model_is_explained(cli, tmp_path, model_type, parts):
    """Granite 4 Vision and Cohere Compass at their recorded defaults: every tensor of their towers, projectors and
    deepstack projectors explained by the count of its config.json."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    config = CONFIGS / f"{model_type}.json"
    net = instantiate_whole(json.loads(config.read_text()))
    tensors = [(name, "BF16", tuple(p.shape)) for name, p in net.named_parameters()]
    shutil.copy(config, tmp_path / "config.json")
    write_safetensors(tmp_path / "model.safetensors", tensors)
    data = counted(cli, str(tmp_path / "model.safetensors"))
    assert data["compared"]["unexplained"] == 0
    assert data["totals"]["params"] == sum(p.numel() for p in net.parameters()) == data["compared"]["ffncalc_params"]
    assert parts <= {c["component"] for c in data["compared"]["components"]}
