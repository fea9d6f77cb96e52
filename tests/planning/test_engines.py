"""Engine profiles, per-request latency, offload, per-component formats, ggml KV types and Apple's wired memory,
against hand derivations."""

import json

import pytest

import ffncalc
from ffncalc.analysis import engines, formats, hardware
from ffncalc.sources import presets

GIB = 2**30
LLAMA3_8B = 8_030_261_248  # parameters
# Llama 3 8B's widest layer, elements kept per token: attention x, Q, K, V, output (4096 + 32·256 + 8·256), SwiGLU
# x, gate, up, act, product (4096 + 4·14336), two norm inputs (2·4096)
WIDEST_8B = (4096 + 32 * 256 + 8 * 256) + (4096 + 4 * 14336) + 2 * 4096
KV_8B = 32 * 2 * 8 * 128 * 2  # bytes a token: 32 layers × K, V × 8 heads × 128 × bf16


def values(result):
    return {k: f.value for k, f in result.figures.items()}


def test_vllm_memory_as_it_profiles_an_h100():
    """vLLM (the default for bf16): 10% of the device left (gpu_memory_utilization 0.9), 1.79 GiB of non-torch
    memory, the activation peak of an 8,192-token forward (16-bit, the widest layer) and the last token's fp32
    logits; the KV cache gets the rest, in 16-token blocks. vLLM PR #10511 logs 53.29 GiB of KV cache for this run."""
    f = values(ffncalc.fit("llama3-8b", hardware="h100-sxm", context=8192))
    reserve = int(80 * GIB * 0.1) + round(1.79 * GIB)
    workspace = 8192 * 2 * WIDEST_8B + 128_256 * 4
    assert f["reserve_bytes"] == reserve and f["workspace_bytes_per_device"] == workspace
    room = 80 * GIB - 2 * LLAMA3_8B - workspace - reserve
    assert f["kv_capacity_tokens"] == room // KV_8B
    assert f["kv_capacity_tokens"] * KV_8B / (53.29 * GIB) == pytest.approx(1.0, abs=0.02)
    # at tp 2, NCCL's buffers double the non-torch memory (3.58 GiB in the same profile)
    f2 = values(ffncalc.fit("llama3-8b", hardware="h100-sxm", context=8192, gpus=2))
    assert f2["reserve_bytes"] == int(80 * GIB * 0.1) + 2 * round(1.79 * GIB)


def test_llama_cpp_holds_its_buffers_and_pads_the_context():
    """llama.cpp (the default for GGUF formats): no share of the device kept, 0.5 GiB outside its buffers, a
    512-token compute buffer, and the cache of 1,000 tokens padded to 1,024 cells."""
    f = values(ffncalc.fit("llama3-8b", hardware="rtx4090", dtype="q4_k_m", context=1000))
    assert f["reserve_bytes"] == GIB // 2
    assert f["kv_bytes_per_device"] == 1024 * KV_8B
    assert f["workspace_bytes_per_device"] == 512 * 2 * WIDEST_8B + 128_256 * 4
    # on two devices it splits whole layers (-sm layer), not tensors
    r = ffncalc.fit("llama3-70b", hardware="rtx4090", gpus=2, dtype="q4_k_m", context=8192, engine="llamacpp")
    assert (r.inputs["tp"], r.inputs["pp"]) == (1, 2) and r["free_bytes_per_device"].value > 0


def test_sglang_keeps_more_as_tp_grows():
    """SGLang's mem_fraction_static: 0.88 at tp 1, 0.81 at tp 8 (server_args.py): a reserve of 12% and 19% of 80 GiB."""
    one = ffncalc.fit("llama3-8b", hardware="h100-sxm", engine="sglang")
    assert one["reserve_bytes"].value == int(80 * GIB * 0.12) + round(1.79 * GIB)
    eight = ffncalc.fit("llama3-70b", hardware="h100-sxm", engine="sglang", gpus=8)
    assert eight["reserve_bytes"].value == int(80 * GIB * 0.19) + 2 * round(1.79 * GIB)


def test_default_engine():
    q4, bf16 = formats.named("q4_k_m"), formats.named("bf16")
    assert engines.default_engine(q4, hardware.by_key("h100-sxm")) == "llamacpp"
    assert engines.default_engine(bf16, hardware.by_key("m4-max")) == "mlx"
    assert engines.default_engine(bf16, hardware.by_key("h100-sxm")) == "vllm"
    assert engines.default_engine(bf16, None) == "vllm"


def test_ggml_kv_types_take_their_blocks():
    """q8_0: 34 bytes per 32 values, q4_0: 18 per 32 (ggml-common.h): Llama 3 8B caches 32 × 2 × 1,024 values a
    token."""
    q8 = ffncalc.infer("llama3-8b", prompt=10, generate=1, kv_dtype="q8_0")
    q4 = ffncalc.infer("llama3-8b", prompt=10, generate=1, kv_dtype="q4_0")
    assert q8["kv_bytes_per_token"].value == 32 * 2 * 1024 // 32 * 34 == 69_632
    assert q4["kv_bytes_per_token"].value == 32 * 2 * 1024 // 32 * 18


def test_keep_attention_in_bf16():
    """fp8 with 128×128 tile scales: a rows × cols matrix is rows·cols bytes + 4 bytes a tile; bf16 2 bytes a
    weight. Keeping Llama 3 8B's attention (q, o 4,096 × 4,096; k, v 1,024 × 4,096) in bf16 adds per layer
    2·(2·4096² + 2·1024·4096) − (2·(4096² + 4·32·32) + 2·(1024·4096 + 4·8·32)) bytes."""
    s = presets.load("llama3-8b")[1]
    fp8 = formats.named("fp8")
    plain = formats.weight_bytes(s, fp8)
    kept = formats.overridden(s, fp8, None, ("attention=bf16",))
    per_layer = 2 * (2 * 4096**2 + 2 * 1024 * 4096) - (2 * (4096**2 + 4 * 32 * 32) + 2 * (1024 * 4096 + 4 * 8 * 32))
    assert kept.total - plain.total == 32 * per_layer
    # a layer range: only layer 0's matrices change
    first = formats.overridden(s, fp8, None, ("layers:0=bf16",))
    assert first.layers[1:] == plain.layers[1:] and first.layers[0][0] > plain.layers[0][0]


def test_partial_offload_reads_the_host_for_its_layers():
    """--gpu-layers 40 of Llama 3 70B: layers 0–39 on the host, read at 89.6 GB/s; layers 40–79 and the head on
    the RTX 4090 at 1,008 GB/s; the hidden state crosses the device's link (32 GB/s) once a token. The device
    holds only its layers."""
    s = presets.load("llama3-70b")[1]
    w = formats.weight_bytes(s, formats.named("q4_k_m"))
    outside = w.total - sum(d + e for d, e in w.layers)
    host = sum(d for d, _ in w.layers[:40])
    device = sum(d for d, _ in w.layers[40:]) + outside - w.embedding
    kv_layer = 2 * 8 * 128 * 2 * 2  # a layer's K and V at 2 tokens (prompt 1, generate 1), bf16
    r = ffncalc.infer("llama3-70b", prompt=1, generate=1, dtype="q4_k_m", hardware="rtx4090", gpu_layers=40)
    expected = (host + 40 * kv_layer) / 89.6e9 + (device + 40 * kv_layer) / 1008e9 + 8192 * 2 / 32e9
    assert r["decode_step_s"].value == pytest.approx(expected)
    f = values(ffncalc.fit("llama3-70b", hardware="rtx4090", dtype="q4_k_m", gpu_layers=40, context=8192))
    assert f["weight_bytes_per_device"] == sum(d for d, _ in w.layers[40:]) + outside - w.embedding
    assert f["expected_decode_step_s"] > f["decode_step_s"] > 0


def test_one_request_joining_a_running_batch():
    """Its prompt of 4,096 tokens in one 8,192-token chunk (vLLM's), prefilled beside one decode step of the
    batch: its share of the batch's prefill FLOPs over the bf16 peak, then the batch's step."""
    r = ffncalc.infer("llama3-8b", prompt=4096, generate=1, batch=8, hardware="h100-sxm")
    own = r["prefill_flops"].value / 8 / 989.4e12
    assert r["request_ttft_s"].value == pytest.approx(own + r["decode_step_s"].value)
    assert r["request_ttft_s"].value < r["ttft_s"].value  # the whole batch's prefill is longer
    assert r["expected_request_ttft_s"].value > r["request_ttft_s"].value


def test_every_device_gives_prefill_or_says_why(tmp_path):
    for hw in hardware.table():
        assert "roofline_prefill_s" in ffncalc.infer("gpt2", prompt=64, generate=4, hardware=hw.key), hw.key
    path = tmp_path / "hw.yaml"
    path.write_text("- {key: bare, name: Bare, memory_gib: 16, bandwidth_gbs: 500, source: a test}\n")
    r = ffncalc.infer("gpt2", prompt=64, generate=4, hardware="bare", hardware_file=str(path))
    assert "roofline_prefill_s" not in r and any("need --tflops" in n for n in r.notes)


def test_apple_wired_memory():
    """macOS lets the GPU wire three quarters of a Mac with more than 36 GB (128 GiB: 96 GiB; 64 GiB: 48 GiB);
    --wired-limit-gib states another limit."""
    assert ffncalc.fit("llama3-8b", hardware="m4-max")["device_memory_bytes"].value == 96 * GIB
    assert ffncalc.fit("llama3-8b", hardware="m1-max")["device_memory_bytes"].value == 48 * GIB
    assert ffncalc.fit("llama3-8b", hardware="m4-max", wired_limit_gib=120)["device_memory_bytes"].value == 120 * GIB


def test_expected_never_beats_the_roofline():
    for kw in ({"hardware": "h100-sxm"}, {"hardware": "rtx4090", "dtype": "q4_k_m"}, {"hardware": "m3-max", "dtype": "q4_k_m"}):
        r = values(ffncalc.infer("llama3-8b", prompt=2000, generate=100, batch=4, **kw))
        assert r["expected_decode_step_s"] >= r["decode_step_s"] and r["expected_prefill_s"] >= r["roofline_prefill_s"]
        assert r["expected_ttft_s"] >= r["ttft_s"] and r["expected_output_tokens_per_s_per_gpu"] <= r["output_tokens_per_s_per_gpu"]


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--keep", "attention"], "--keep attention: COMPONENT=FORMAT"),
        (["--keep", "layers:5-2=bf16"], "the range's end is before its start"),
        (["--keep", "layers:0-99=bf16"], "the model has 32 layers"),
        (["--keep", "mlp=bf16"], "the component is one of attention, ffn, experts"),
        (["--gpu-layers", "33"], "--gpu-layers 33: from 1 to the model's 32 layers"),
        (["--engine", "vllm", "--hardware", "m4-max"], "--engine vllm: does not run on m4-max"),
        (["--engine", "mlx"], "--engine mlx: runs on Apple silicon only, not on h100-sxm"),
        (["--cpu-experts"], "--cpu-experts: the model has no routed experts"),
        (
            ["--gpu-layers", "20", "--gpus", "2"],
            "--gpu-layers 20 with --gpus 2: layers offloaded to the CPU are modelled beside one device",
        ),
    ],
)
def test_bad_serving_options(cli, args, expected):
    base = ["infer", "llama3-8b", "--prompt", "10", "--generate", "1"]
    if "--hardware" not in args:
        base += ["--hardware", "h100-sxm"]
    code, out, err = cli(*base, *args)
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1


def test_new_inputs_are_in_the_record(cli):
    code, out, _ = cli("fit", "llama3-8b", "--hardware", "rtx4090", "--dtype", "q4_k_m", "--gpu-layers", "20", "-f", "json")
    inputs = json.loads(out)["inputs"]
    assert code == 0 and inputs["engine"] == "llamacpp" and inputs["gpu_layers"] == 20 and inputs["keep"] is None


def test_a_checkpoint_config_names_what_it_keeps(tmp_path):
    """A config.json whose quantization_config (fbgemm_fp8's modules_to_not_convert, as Meta's FP8 Llama 3.1 405B
    ships it) lists every layer's self_attn projections, layer 0's mlp and lm_head: --dtype fp8 keeps those in
    bf16 without --keep, as the rules attention=bf16 and layers:0=bf16 would."""
    from pathlib import Path

    config = json.loads((Path(__file__).resolve().parents[1] / "hf_configs" / "llama3-8b.json").read_text())
    names = [f"model.layers.{i}.self_attn.{p}_proj" for i in range(32) for p in "qkvo"]
    names += [f"model.layers.0.mlp.{p}_proj" for p in ("gate", "up", "down")] + ["lm_head"]
    config["quantization_config"] = {"quant_method": "fbgemm_fp8", "modules_to_not_convert": names}
    folder = tmp_path / "llama-fp8"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    r = ffncalc.fit(str(folder), hardware="h100-sxm", dtype="fp8", context=4096)
    assert r.inputs["keep"] == "attention=bf16,layers:0=bf16"
    by_hand = ffncalc.fit("llama3-8b", hardware="h100-sxm", dtype="fp8", context=4096, keep=("attention=bf16", "layers:0=bf16"))
    assert (
        r["weight_bytes"].value
        == by_hand["weight_bytes"].value
        > ffncalc.fit("llama3-8b", hardware="h100-sxm", dtype="fp8")["weight_bytes"].value
    )


def test_an_fp8_dispatch():
    """Mixtral 8x7B on 4 H100s, two copies of tp 2 sharing the experts over ep 4, experts in fp8: per layer an
    all-reduce of one token's 8,192 bytes over tp 2 (half of it moved), a dispatch of the device's half of the
    token's 2 experts' inputs in fp8 with an fp32 scale per 128 values (4,096 × (1 + 4/128) bytes, DeepSeek-V3
    §3.4), and a combine of the same in bf16 (8,192 bytes), 3/4 of each to the others, at 450 GB/s, no latency."""
    from ffncalc.analysis import inference
    from ffncalc.analysis.plan import Device, Formats, InferenceRun, Placement

    s = presets.load("mixtral-8x7b")[1]
    result = inference.plan_inference(
        s,
        "x",
        InferenceRun(100, 10, batch=2),
        Formats("bf16", "fp8", "bf16"),
        Placement(gpus=4, tp=2, ep=4),
        Device(hardware.by_key("h100-sxm"), link_latency_us=0),
    )
    comm = 32 * (8192 / 450e9 + 0.75 * (4096 * (1 + 4 / 128) + 8192) / 450e9)
    assert result.figures[[f.id for f in result.figures].index("decode_comm_s")].value == pytest.approx(comm, rel=1e-12)


def test_tensorrt_llm_keeps_a_tenth_of_what_is_free():
    """TensorRT-LLM's free_gpu_memory_fraction 0.9 is of the memory the weights and activations leave: for Llama 3
    8B on an H100 its reserve is a tenth of 80 GiB less the weights, the 8,192-token forward's activations and the
    1.79 GiB outside the engine's tensors, plus those 1.79 GiB."""
    f = values(ffncalc.fit("llama3-8b", hardware="h100-sxm", engine="trtllm", context=8192))
    workspace = 8192 * 2 * WIDEST_8B + 128_256 * 4
    fixed = round(1.79 * GIB)
    assert f["reserve_bytes"] == int((80 * GIB - 2 * LLAMA3_8B - workspace - fixed) * 0.1) + fixed
