"""What a Hugging Face training forward keeps for backward (``analysis/hfsaved.py``), per component, against what
transformers 5.23.0's own classes saved: recorded by ``scripts/hf_saved.py`` from small real configs (public
config.json files cut down, tests/hf_saved/sources.json), at two lengths, batch 1 and 2, bf16 and fp32. The
recording needs torch; these comparisons do not."""

import json
from pathlib import Path

import pytest

from ffncalc.analysis import hfsaved
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parent.parent / "hf_saved"
NAMES = sorted(p.stem for p in (HERE / "configs").glob("*.json"))
ACT = {"bf16": 2, "fp32": 4}


def test_the_recorded_families_cover_the_kinds_named():
    """Dense (Llama 3.1), sliding window (Mistral), biases (Qwen2.5), q/k norms (Qwen3), two mixtures (Mixtral,
    Qwen3-MoE), latent attention with a grouped sigmoid router and a shared expert (DeepSeek-V3), hybrid linear
    attention (Qwen3-Next: Gated DeltaNet layers over one and two chunks, gated full attention, (1 + w) norms) and
    learned positions with biases, LayerNorm and dropout (GPT-2)."""
    types = {hf.read_config(HERE / "configs" / f"{n}.json").model_type for n in NAMES}
    assert types == {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe", "deepseek_v3", "qwen3_next", "gpt2"}
    sources = json.loads((HERE / "sources.json").read_text())
    assert set(sources) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_planned_equals_what_transformers_saves(name):
    c = hf.read_config(HERE / "configs" / f"{name}.json")
    spec, style = hf.to_spec(c), hfsaved.style_of(c)
    truth = json.loads((HERE / "truth" / f"{name}.json").read_text())
    assert len(truth["runs"]) == 8
    for run in truth["runs"]:
        planned = hfsaved.saved_bytes(spec, style, run["seq_len"], run["batch"], ACT[run["dtype"]])
        assert planned == run["saved"], (run["seq_len"], run["batch"], run["dtype"])


def test_llama_layer_by_hand():
    """Llama 3.1 cut to d = 64, 4 heads of 16, 2 KV heads, d_ff 128, 2 layers, vocabulary 512; one sequence of 16
    tokens in bf16. Per token and layer: two RMSNorms of 4·64 + 4 + 2·64 (fp32 input, rsqrt, bf16 normalised);
    attention: the projections' input 2·64, Q, K and V of 4 heads after repeat_kv 3·2·64, fp32 softmax and its
    bf16 copy (4 + 2)·4·16 keys, o's input 2·64; the gated MLP 2·(64 + 4·128). Once: cos and sin 2·2·16·16."""
    c = hf.read_config(HERE / "configs" / "llama3.1-8b.json")
    got = hfsaved.saved_bytes(hf.to_spec(c), hfsaved.style_of(c), 16, 1, 2)
    n = 16
    assert got["embedding"] == 8 * n
    assert got["norms"] == 2 * n * 2 * (4 * 64 + 4 + 2 * 64)
    assert got["attention"] == 2 * n * (2 * 64 + 3 * 2 * 64 + 6 * 4 * 16 + 2 * 64) + 2 * 2 * 16 * 16
    assert got["ffn"] == 2 * n * 2 * (64 + 4 * 128)
    assert got["final_norm"] == n * (4 * 64 + 4 + 2 * 64) and got["head"] == n * 2 * 64
    assert got["loss"] == n * 4 * 512 + 8 * 17 + 4


def test_cuda_rules_differ_where_stated():
    """GPT-2 on CUDA: a bool dropout mask (1 byte, not the CPU's act bytes) and fp32 layer-norm statistics."""
    c = hf.read_config(HERE / "configs" / "gpt2.json")
    spec, style = hf.to_spec(c), hfsaved.style_of(c)
    cpu = hfsaved.saved_bytes(spec, style, 16, 1, 2, device="cpu")
    cuda = hfsaved.saved_bytes(spec, style, 16, 1, 2, device="cuda")
    n, d, h = 16, 64, 4
    assert cpu["embedding"] - cuda["embedding"] == n * d  # the embeddings' mask: 2 bytes an element -> 1
    # per layer: four statistics (two norms × mean and rstd) 2 -> 4 bytes; masks: attention's h·T, the output's d
    assert cuda["norms"] - cpu["norms"] == 2 * n * 2 * 2 * 2
    assert cpu["attention"] - cuda["attention"] == 2 * n * (h * 16 + d)


def test_unmodelled_classes_say_why():
    c = hf.read_config(Path(__file__).resolve().parent.parent / "hf_configs" / "olmo2-7b.json")
    assert hfsaved.style_of(c) is None
    assert "modelled for" in hfsaved.unsupported(hf.to_spec(c), None)


@pytest.mark.torch
def test_verify_memory_hf_runs_the_class(cli):
    code, out, err = cli("verify", "--memory", "--hf", str(HERE / "configs" / "qwen3-8b.json"))
    assert code == 0 and "every component of 4 runs equals" in out
