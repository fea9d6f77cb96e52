"""Training and inference plans against the papers and hand derivations."""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from ffncalc.analysis import hardware, inference, memory, training
from ffncalc.analysis.plan import Device, InferenceRun, Layout, Step, TrainingRun
from ffncalc.errors import InputError
from ffncalc.sources import presets


def spec(name):
    return presets.load(name)[1]


def figures(result):
    return {f.id: f.value for f in result}


@pytest.mark.parametrize(
    "text,expected", [("300B", 300 * 10**9), ("300e9", 300 * 10**9), ("1.5T", 1_500 * 10**9), ("2048", 2048), ("4k", 4000)]
)
def test_parse_count(text, expected):
    assert training.parse_count(text, "--tokens") == expected


@pytest.mark.parametrize("text", ["abc", "-5", "1.5", "0", "3X"])
def test_parse_count_refuses(text):
    with pytest.raises(InputError, match="--tokens"):
        training.parse_count(text, "--tokens")


def test_gpt3_training_compute():
    """Brown et al. 2020: 175B on 300B tokens took 3.14e23 FLOPs (6 per parameter per token)."""
    f = figures(training.train(spec("gpt3"), TrainingRun(300 * 10**9, convention="6n")))
    assert f["train_flops"] == 6 * 174_604_259_328 * 300 * 10**9
    assert round(f["train_flops"] / 1e21) == 314
    assert f["pf_days"] == pytest.approx(f["train_flops"] / (1e15 * 86400))


def test_narayanan_34_days():
    """Narayanan et al. 2021 §5.1: 175B, 300B tokens, 1024 GPUs at 140 TFLOP/s with recomputation:
    about 8·T·P/(n·X) = 34 days."""
    f = figures(
        training.train(spec("gpt3"), TrainingRun(300 * 10**9, convention="6n"), Step(recompute="full"), Device(tflops=140), gpus=1024)
    )
    days = f["wall_clock_days"]
    assert 33.5 < days < 34.5
    assert days == pytest.approx(8 * 300e9 * 175e9 / (1024 * 140e12) / 86400, rel=0.01)


def test_megatron_formula_time():
    """The paper's exact count F = 96·B·s·l·h²·(1 + s/6h + V/16lh) per iteration of B sequences."""
    s, l, h, v = 2048, 96, 12_288, 50_257
    per_token = Fraction(96 * l * h * h) * (1 + Fraction(s, 6 * h) + Fraction(v, 16 * l * h))
    tokens = 300 * 10**9
    f = figures(
        training.train(spec("gpt3"), TrainingRun(tokens, convention="megatron"), Step(recompute="full"), Device(tflops=140), gpus=1024)
    )
    assert f["train_flops_per_token"] == per_token
    assert f["wall_clock_days"] == pytest.approx(float(per_token) * tokens / (1024 * 140e12) / 86400)


def test_chinchilla_optimum():
    f = figures(training.train(spec("llama2-7b"), TrainingRun(2 * 10**12)))
    assert f["chinchilla_tokens"] == 20 * 6_738_415_616
    budget = 1e23
    n, d = training.compute_optimal(budget)
    assert 6 * n * d == pytest.approx(budget)  # C = 6·N·D, Hoffmann et al. Eq. (4)
    n10, _ = training.compute_optimal(10 * budget)
    assert n10 / n == pytest.approx(10 ** (0.28 / (0.34 + 0.28)))  # N_opt ∝ C^(β/(α+β))


def test_mfu_palm_definition():
    """MFU = tokens/s × (6N + 12·L·H·Q·T) / peak; N leaves out the position table (nanoGPT, PaLM)."""
    n = 124_439_808 - 1024 * 768  # gpt2 without its learned positions; the tied matrix stays
    per_token = 6 * n + 12 * 12 * 12 * 64 * 1024
    f = figures(training.train(spec("gpt2"), TrainingRun(10**9, tokens_per_s=1e5), device=Device(hardware.by_key("a100-80gb"))))
    assert f["mfu"] == pytest.approx(1e5 * per_token / 312e12)


def test_korthikanti_activations_for_gpt3():
    """Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h) bytes a layer; 34·sbh selective; 2·sbh full."""
    s, b, h, a = 2048, 1, 12_288, 96
    gpt3 = spec("gpt3")
    layers = 96

    def eager(recompute):  # the paper's attention stores its scores
        return Step(seq_len=s, micro_batch=b, recompute=recompute, kernel="eager")

    assert memory.activation_bytes(gpt3, eager("none")) == layers * (s * b * h * 34 + 5 * a * s * s * b)
    assert memory.activation_bytes(gpt3, eager("selective")) == layers * 34 * s * b * h
    assert memory.activation_bytes(gpt3, eager("full")) == layers * 2 * s * b * h
    assert memory.activation_bytes(gpt3, eager("selective"), Layout(tp=8)) == layers * (34 * s * b * h // 8)
    # tensor parallelism without sequence parallelism (their Eq. 2): s·b·h·(10 + 24/t + 5·a·s/(h·t))
    no_sp = Layout(tp=8, sequence_parallel=False)
    assert memory.activation_bytes(gpt3, eager("none"), no_sp) == layers * (10 * s * b * h + (24 * s * b * h + 5 * a * s * s * b) // 8)
    assert memory.activation_bytes(gpt3, eager("full"), no_sp) == layers * 2 * s * b * h
    assert memory.activation_bytes(gpt3, eager("full"), Layout(tp=8)) == layers * 2 * s * b * h // 8
    # A flash kernel keeps no scores, only an fp32 log-sum-exp per query and head (FlashAttention-2 §3.1.1)
    assert memory.activation_bytes(gpt3, Step(seq_len=s, micro_batch=b, recompute="none")) == layers * (34 * s * b * h + 4 * a * s * b)
    assert memory.activation_bytes(gpt3, Step(seq_len=s, micro_batch=b, recompute="selective")) == layers * (
        34 * s * b * h + 4 * a * s * b
    )


def test_deepseek_v3_activations_sum_every_layer():
    """DeepSeek-V3 (arXiv:2412.19437 §4.2): 61 layers, the first 3 with a dense SwiGLU FFN of 18,432, the other
    58 a mixture (router over 256 experts of 2,048, 8 chosen, 1 shared expert). Selective recomputation,
    16-bit: each sublayer keeps 2 bytes per kept element plus a 1-byte dropout mask of d, and 2 norms of
    2·d bytes. MLA (§2.1) keeps x, the query latent and its norm (2 × 1,536), kv_a's output (512 + 64) and
    the normed latent (512), Q and K (128 heads × 192 each) and V and the output (128 × 128 each), and its two
    latent norms an fp32 inverse RMS a row (2 elements each). The mixture keeps x, the router's fp32 probabilities
    (2 × 256), the top-8's int64 indices and sorting permutation and fp32 weights (8 × (4 + 4 + 2)), each chosen
    expert's elements and output (8 × (d + 4·2048 + d)) and the shared expert's but its input (4·2048)."""
    d, s = 7168, 4096
    attention = d + 2 * 1536 + (512 + 64) + 512 + 2 * 128 * 192 + 2 * 128 * 128 + 2 * 2
    dense_ffn = d + 4 * 18_432  # x, gate, up, act(gate), product
    moe_ffn = d + 2 * 256 + 8 * (4 + 4 + 2) + 8 * (d + 4 * 2048 + d) + 4 * 2048
    norms = 2 * 2 * d

    def layer(ffn):
        return s * ((2 * attention + d) + (2 * ffn + d) + norms)

    expected = 3 * layer(dense_ffn) + 58 * layer(moe_ffn)
    assert memory.activation_bytes(spec("deepseek-v3"), Step(seq_len=s, recompute="selective", kernel="eager")) == expected
    # no layer stands for the rest: with the first layer's FFN everywhere the figure is about 27% low
    assert 61 * layer(dense_ffn) < 0.8 * expected


def test_memory_per_device():
    f = figures(memory.train_memory(spec("llama2-7b"), Step(seq_len=4096, micro_batch=1, recompute="full")))
    assert f["state_bytes_per_device"] == 18 * 6_738_415_616  # Megatron-LM: bf16 weights, fp32 gradients, 12 B of Adam
    f = figures(
        memory.train_memory(
            spec("llama2-7b"), Step(seq_len=4096, micro_batch=1, recompute="full", optimizer="adam8bit"), Layout(tp=2, pp=2)
        )
    )
    # Llama 2 7B: a layer holds q, k, v, o (4 · 4096²), gate, up, down (3 · 4096 · 11008) and 2 norms;
    # pp 2: 16 layers a stage, the embedding (32000 × 4096) on the first, the final norm and head on the last.
    # The first stage keeps 2 micro-batches in flight against the last's 1, so it is the most loaded; tp 2 halves it.
    # 8-bit Adam under Megatron-LM: bf16 weights 2, fp32 gradients 4, fp32 master 4, two 1-byte moments: 12.
    layer = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096
    first_stage = 32000 * 4096 + 16 * layer
    assert f["params_per_device"] == first_stage // 2
    assert f["state_bytes_per_device"] == 12 * first_stage // 2
    experts = 32 * 8 * 3 * 4096 * 14_336
    f = figures(memory.train_memory(spec("mixtral-8x7b"), Step(seq_len=4096, micro_batch=1, recompute="full"), Layout(ep=8)))
    assert f["params_per_device"] == (46_702_792_704 - experts) + experts // 8


@pytest.mark.parametrize(
    "name,layers,kv_heads", [("llama3-8b", 32, 8), ("mixtral-8x7b", 32, 8), ("llama2-7b", 32, 32), ("llama2-70b", 80, 8)]
)
def test_kv_cache_bytes(name, layers, kv_heads):
    assert inference.kv_bytes_per_token(spec(name), 16) == 2 * layers * kv_heads * 128 * 2  # K and V, bf16


def test_decode_flops_by_hand():
    d, l, kv, f, v = 4096, 32, 1024, 14_336, 128_256
    weights = l * (2 * d * d + 2 * d * kv + 3 * d * f) + v * d  # q, o, k, v, gate, up, down; lm_head
    prompt = 1000
    out = figures(inference.infer(spec("llama3-8b"), InferenceRun(prompt, 10)))
    # one query against prompt + 1 keys, in QKᵀ and AV: 2·2·heads·head_dim per key per layer
    assert out["decode_first_flops"] == 2 * weights + l * 4 * 32 * 128 * (prompt + 1)
    assert out["weight_bytes"] == 2 * 8_030_261_248
    assert out["kv_bytes"] == 131_072 * 1010


def test_roofline_memory_bound_decode():
    h100 = hardware.by_key("h100-sxm")
    out = figures(inference.infer(spec("llama3-8b"), InferenceRun(100, 28), device=Device(h100)))
    # every bf16 weight once but the input embedding (128,256 × 4,096, looked up a row a token), the KV cache of 128 tokens
    step_bytes = 2 * 8_030_261_248 - 2 * 128_256 * 4096 + 128 * 131_072
    assert out["roofline_decode_tokens_per_s"] == pytest.approx(3350e9 / step_bytes)


def test_cli_formats(cli):
    code, out, _ = cli("train", "gpt3", "--tokens", "300B", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["figures"]["train_flops"] == {
        "label": "training FLOPs",
        "unit": "FLOP",
        "value": 6 * 174_604_259_328 * 300 * 10**9,
    }
    code, out, _ = cli("infer", "mixtral-8x7b", "--prompt", "512", "--generate", "64", "--hardware", "h200", "--format", "csv")
    assert code == 0 and out.splitlines()[0] == "id,label,value,unit"
    assert "kv_bytes_per_token,KV-cache bytes per token,131072" in out
    code, out, _ = cli("infer", "llama3-8b", "--prompt", "512", "--generate", "64", "--format", "markdown")
    assert code == 0 and "| --- | ---: | --- |" in out  # label, value, unit (text, left)
    code, out, _ = cli("train", "llama3-8b", "--tokens", "15T", "--hardware", "h100-sxm", "--gpus", "16384")
    assert code == 0 and "wall-clock on 16,384 devices" in out and "convention: 6n" in out


@pytest.mark.parametrize(
    "args,expected",
    [
        (["train", "gpt3", "--tokens", "lots"], "--tokens lots"),
        (["train", "gpt3", "--tokens", "1B", "--hardware", "tpu"], "--hardware tpu: unknown; known: a100-80gb"),
        (["train", "gpt3", "--tokens", "1B", "--gpus", "10", "--tp", "5"], "--tp 5 does not divide the 96 attention heads"),
        (["train", "gpt3", "--tokens", "1B", "--gpus", "8", "--tp", "16"], "--gpus 8 is not a multiple of --tp × --pp × --cp = 16"),
        (["infer", "gpt2", "--prompt", "1000", "--generate", "100"], "exceeds context_length 1024"),
        (["infer", "gpt2", "--prompt", "10", "--generate", "1", "--dtype", "q9"], "--dtype q9: unknown"),
    ],
)
def test_bad_arguments(cli, args, expected):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1


def test_json_is_keyed_with_exact_integer_bytes(cli):
    """train and infer JSON: figures under stable ids, every byte count an exact integer, inputs apart from labels."""
    code, out, _ = cli("train", "mixtral-8x7b", "--tokens", "1T", "--tp", "2", "--dp", "4", "--ep", "4", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["inputs"]["tp"] == 2 and data["inputs"]["ep"] == 4
    figures = data["figures"]
    experts = 32 * 8 * 3 * 4096 * 14_336  # Mixtral 8x7B: 32 layers × 8 experts × 3 matrices of 4096 × 14336
    assert figures["params_per_device"]["value"] == (46_702_792_704 - experts) // 2 + experts // 8
    keys = ("state", "sharding_buffer", "activation", "loss", "recompute")
    for key in (*(f"{k}_bytes_per_device" for k in keys), "bytes_per_device"):
        assert type(figures[key]["value"]) is int and figures[key]["unit"] == "bytes"
    value = {k: figures[f"{k}_bytes_per_device"]["value"] for k in keys}
    # the persistent tensors, and at the peak the larger of the logits and loss or a recomputed layer
    assert figures["bytes_per_device"]["value"] == (
        value["state"] + value["sharding_buffer"] + value["activation"] + max(value["loss"], value["recompute"])
    )
    code, out, _ = cli("infer", "llama3-8b", "--prompt", "1000", "--generate", "10", "--format", "json")
    figures = json.loads(out)["figures"]
    assert figures["weight_bytes"]["value"] == 2 * 8_030_261_248
    assert figures["kv_bytes"]["value"] == 131_072 * 1010 and type(figures["kv_bytes"]["value"]) is int


def test_recurrent_state_is_reported_and_read_each_step(cli):
    """Mamba-Codestral 7B (Mamba-2): per layer an SSM state of heads × head_dim × state_size = 128 × 64 × 128 and
    a convolution state of conv_dim × (kernel − 1), conv_dim = d_inner + 2 · groups · state = 8192 + 2 · 8 · 128;
    64 layers, bf16; no KV cache at all."""
    config = str(Path(__file__).resolve().parents[1] / "hf_configs" / "mamba-codestral-7b-mlx-8bit.json")
    per_layer = 128 * 64 * 128 + (8192 + 2 * 8 * 128) * (4 - 1)
    code, out, err = cli("infer", config, "--prompt", "1000", "--generate", "10", "--batch", "2", "--format", "json")
    figures = json.loads(out)["figures"]
    assert code == 0, err
    assert figures["kv_bytes"]["value"] == 0
    assert figures["state_bytes"]["value"] == 2 * 64 * per_layer * 2
    # a decode step reads every weight but the input embedding (32,768 × 4,096, bf16: a row per token looked up)
    embedding = 32_768 * 4096 * 2
    assert figures["step_bytes"]["value"] == figures["weight_bytes"]["value"] - embedding + 2 * 64 * per_layer * 2


def test_a_recurrent_decode_step_costs_the_same_at_any_context(cli):
    """Mamba-2 keeps a fixed state: the first new token after 1,000 or 100,000 prompt tokens costs the same."""
    config = str(Path(__file__).resolve().parents[1] / "hf_configs" / "mamba-codestral-7b-mlx-8bit.json")
    first = []
    for prompt in ("1000", "100000"):
        code, out, err = cli("infer", config, "--prompt", prompt, "--generate", "1", "--format", "json")
        assert code == 0, err
        first.append(json.loads(out)["figures"]["decode_first_flops"]["value"])
    assert first[0] == first[1]
