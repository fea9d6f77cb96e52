"""Dense vs gated at an equal budget: the published reproductions, torch-measured sizes, the CLI."""

import json

import pytest

from ffncalc.analysis.compare import compare_block, compare_model
from ffncalc.analysis.sizing import ffn_activation_elements, ffn_block, ffn_params
from ffncalc.model.stack import Model
from ffncalc.sources import presets


def compared(cli, *args):
    code, out, err = cli("compare", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_t5_base_shazeer_2020(cli):
    """2·768·3072 = 3·768·2048 = 4,718,592 weights per FFN, no biases; Table 1's log-perplexities."""
    c = compared(cli, "--d-model", "768", "--d-ff", "3072", "--kind", "dense", "--activation", "geglu")
    assert c["target"]["d_ff"] == 2048 and c["exact"] and c["residual"] == 0
    assert c["source"]["params_per_layer"] == c["target"]["params_per_layer"] == 4_718_592
    assert c["source"]["reference_log_perplexity"] == [1.997, 1.677]  # ReLU
    assert c["target"]["reference_log_perplexity"] == [1.942, 1.633]  # GEGLU
    assert "Shazeer 2020" in c["reference_source"]
    code, out, _ = cli("compare", "--d-model", "768", "--d-ff", "3072", "--activation", "swiglu")
    assert code == 0 and "1.944 / 1.636" in out and "Shazeer 2020" in out


def test_llama_rule_from_dense_16384(cli):
    c = compared(cli, "--d-model", "4096", "--d-ff", "16384", "--multiple-of", "256")
    assert c["target"]["d_ff"] == 11008  # Llama-2-7B's width: 4·4096 → 2/3 → multiple of 256
    assert not c["exact"] and c["residual"] == 3 * 4096 * 11008 - 2 * 4096 * 16384


def test_llama2_7b_to_dense(cli):
    c = compared(cli, "llama2-7b")
    assert (c["source"]["d_ff"], c["target"]["d_ff"]) == (11008, 16512)
    assert c["exact"] and c["source"]["params_per_layer"] == 3 * 4096 * 11008 == 2 * 4096 * 16512
    assert c["source"]["model_params"] == c["target"]["model_params"] == 6_738_415_616


def test_gpt3_175b_nearest_gated_width(cli):
    d, f = 12_288, 49_152
    dense = 2 * d * f + f + d  # up and down weights and biases

    def gated(g):
        return 3 * d * g + 2 * g + d

    c = compared(cli, "gpt3-175b")
    g = c["target"]["d_ff"]
    assert g == 32_768
    assert abs(gated(g) - dense) < abs(gated(g - 1) - dense) and abs(gated(g) - dense) < abs(gated(g + 1) - dense)
    assert c["residual"] == gated(g) - dense == 16_384
    assert c["source"]["model_params"] == 174_604_259_328
    assert c["target"]["model_params"] == 174_604_259_328 + 96 * 16_384
    assert c["residual_percent"] == pytest.approx(100 * 16_384 / dense)


def test_match_flops():
    c = compare_block(12_288, ffn_block("dense", 49_152, bias=True, activation="gelu"), match="flops")
    assert c.target.d_ff == 32_768 and c.exact  # 2·2·d·49152 = 2·3·d·32768; biases cost no matmul FLOPs


def test_moe_compares_its_expert(cli):
    c = compared(cli, "mixtral-8x7b")
    assert "routed expert" in c["moe"]
    assert (c["source"]["d_ff"], c["target"]["d_ff"]) == (14336, 21504)  # 3·14336 = 2·21504
    assert c["target"]["model_params"] == c["source"]["model_params"] == 46_702_792_704


@pytest.mark.parametrize("name", presets.names())
def test_compare_works_on_every_preset(cli, name):
    c = compared(cli, name)
    assert c["source"]["kind"] != c["target"]["kind"]
    assert abs(c["residual"]) <= 3 * c["d_model"] + 2  # nearest: within one step of the width


@pytest.mark.parametrize("kind,width", [("dense", 96), ("gated", 64)])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.torch
def test_block_sizes_against_torch(kind, width, bias):
    """Parameters from torch's numel; kept activations from autograd's saved-tensor hooks."""
    import torch

    ffn = ffn_block(kind, width, activation="silu", bias=bias)
    block = ffn.torch_module(Model.bare(48), causal=False)
    assert ffn_params(48, width, kind, bias) == sum(p.numel() for p in block.parameters())
    params = {p.data_ptr() for p in block.parameters()}
    saved = {}

    def pack(t):
        if t.data_ptr() not in params:
            saved[t.data_ptr()] = t.numel()
        return t

    x = torch.randn(1, 48, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x)
    assert sum(saved.values()) == ffn_activation_elements(48, width, kind)


def test_capacity_ranks():
    c = compare_block(768, ffn_block("dense", 3072, activation="relu"))
    assert (c.source.rank_linear, c.source.rank_kernel) == (768, 768)
    assert (c.target.rank_linear, c.target.rank_kernel) == (768, 2048)
    tiny = compare_block(3, ffn_block("dense", 12, activation="relu"))  # x⊗x has only 3·4/2 = 6 monomials
    assert tiny.target.rank_kernel == min(tiny.target.d_ff, 6)


def test_activation_choice():
    c = compare_model(presets.load("gpt2")[1], model="gpt2", activation="reglu")
    assert (c.target.variant, c.target.activation) == ("ReGLU", "relu")
    c = compare_model(presets.load("llama3-8b")[1], model="llama3-8b", to="dense", activation="relu2")
    assert c.target.activation == "relu2" and c.target.d_ff == 3 * 14336 // 2


def test_sweep(cli):
    rows = json.loads(cli("compare", "--d-model", "1024", "--sweep", "2:4:1", "--format", "json")[1])["sweep"]
    assert [r["source"]["d_ff"] for r in rows] == [2048, 3072, 4096]
    assert [r["target"]["d_ff"] for r in rows] == [1365, 2048, 2731]  # 2·f/3, nearest
    code, out, _ = cli("compare", "llama2-7b", "--sweep", "2,2.6875", "--format", "markdown")
    assert code == 0 and "| 2.688 | 11,008 | 16,512 |" in out
    code, out, _ = cli("compare", "--d-model", "64", "--sweep", "2,3", "--format", "csv")
    assert code == 0 and out.splitlines()[0].startswith("d_model,match")


@pytest.mark.torch
def test_bench_column_on_cpu(cli, steady_peak):
    c = compared(cli, "--d-model", "128", "--d-ff", "512", "--bench", "--tokens", "64", "--repeats", "2", "--device", "cpu")
    assert [r["variant"] for r in c["bench"]] == ["dense relu d_ff 512", "ReGLU d_ff 341"]
    assert all(r["median_ms"] > 0 and r["tflops"] > 0 and r["device"] == "cpu" for r in c["bench"])
    code, out, _ = cli(
        "compare", "--d-model", "128", "--d-ff", "512", "--bench", "--tokens", "64", "--repeats", "2", "--device", "cpu"
    )
    assert code == 0 and "measured ms" in out and "time ratio" in out


def test_formats(cli):
    code, out, _ = cli("compare", "gpt2", "--format", "markdown")
    assert code == 0 and "| d_ff | 3,072 | 2,048 |" in out
    code, out, _ = cli("compare", "gpt2", "--format", "csv")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3 and lines[1].startswith("source,gpt2") and lines[2].startswith("target")


@pytest.mark.parametrize(
    "args,expected",
    [
        (["compare"], "compare needs a model"),
        (["compare", "gpt2", "--d-model", "64"], "not both"),
        (["compare", "--d-model", "64"], "needs --d-ff"),
        (["compare", "gpt2", "--activation", "swish2"], "--activation swish2: not a gated activation"),
        (
            ["compare", "--d-model", "64", "--d-ff", "128", "--kind", "gated", "--activation", "geglu"],
            "--activation geglu: not a dense activation",
        ),
        (["compare", "gpt2", "--sweep", "a,b"], "--sweep a,b"),
        (["compare", "gpt2", "--multiple-of", "0"], "--multiple-of"),
    ],
)
def test_bad_arguments(cli, args, expected):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1
