"""Parallel layouts, per-device training memory, deployed weight formats and will-it-fit, against hand
derivations and published runs."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

import ffncalc
from ffncalc.analysis import formats, hardware, inference, memory, serving, training
from ffncalc.analysis.fit import plan_fit
from ffncalc.analysis.plan import TRAIN_RESERVE, Device, FitRun, Formats, InferenceRun, Layout, Placement, Step, TrainingRun
from ffncalc.sources import presets

PRESETS = Path(__file__).resolve().parents[2] / "presets"
GIB = 2**30


def spec(name):
    path = PRESETS / f"{name}.yaml"
    return presets.load(str(path) if path.exists() else name)[1]


def ids(figures):
    return {f.id: f.value for f in figures}


# --- training layouts and memory -----------------------------------------------------------------------


def llama3_70b_layer():
    """q and o 8192², k and v 8192 × 1024 (8 KV heads of 128), gate/up/down 8192 × 28672, two RMSNorms."""
    return 2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192


def test_llama3_70b_on_64_gpus():
    """--gpus 64 --tp 8 --pp 2 leaves dp 4. Stage 0 holds the embedding (128,256 × 8,192) and layers 0–39 and
    keeps both micro-batches of 1F1B in flight, so it is the most loaded; tp 8 splits it. Megatron-LM (the default
    framework) keeps bf16 weights (2 bytes), fp32 main gradients (4) and, sharded by ZeRO 1 (its distributed
    optimizer) over the 4 replicas, 12 bytes of fp32 master, m and v: 6 + 12/4 (dist_optimizer.md's table).
    Activations (flash, seq 8,192, micro-batch 1), per token and layer, after Korthikanti et al. 2022 with GQA:
    attention keeps x, Q, K, V, the heads' output (8192 + 64·128·2 + 8·128·2 elements, 2 bytes each) and a 1-byte
    dropout mask of d; the SwiGLU FFN x, gate, up, act, product (8192 + 4·28672) and its mask; two norm inputs
    (2 · 2 · 8192); flash keeps 4 bytes of log-sum-exp per query and head; all ÷ tp. Stage 0 holds no logits and,
    with selective recomputation, rebuilds no layer; beside its tensors the caching allocator's share and the 2 GiB
    CUDA allowance (nothing more kept free: train's default reserve)."""
    result = training.plan_training(
        spec("llama3-70b"),
        "llama3-70b",
        TrainingRun("15T"),
        Step(seq_len=8192, recompute="selective", global_batch=512),
        Layout(gpus=64, tp=8, pp=2, zero=1),
        Device(hardware.by_key("h100-sxm"), reserve=TRAIN_RESERVE),
    )
    f = ids(result.figures)
    assert result.inputs["dp"] == 4 and f["devices"] == 64
    stage0 = 128_256 * 8192 + 40 * llama3_70b_layer()
    p = -(-stage0 // 8)
    assert f["pipeline_stage"] == 0 and f["params_per_device"] == p == 4_409_606_144
    assert f["weight_bytes_per_device"] == 2 * p and f["grad_bytes_per_device"] == 4 * p
    assert f["optimizer_bytes_per_device"] == 12 * p // 4
    per_token = (2 * (8192 + 64 * 256 + 8 * 256) + 8192) + (2 * (8192 + 4 * 28672) + 8192) + 2 * 2 * 8192
    layer = (8192 * per_token + 4 * 64 * 8192) // 8
    assert f["in_flight_micro_batches"] == 2
    assert f["activation_bytes_per_device"] == 2 * 40 * layer
    assert f["loss_bytes_per_device"] == 0 and f["recompute_bytes_per_device"] == 0
    assert f["sharding_buffer_bytes_per_device"] == 0  # no ZeRO 3
    # 512 sequences / (micro-batch 1 × dp 4) = 128 micro-batches a pipeline: bubble 1 / 129
    assert f["pipeline_bubble"] == pytest.approx(1 / 129)
    total = 9 * p + 2 * 40 * layer
    assert f["bytes_per_device"] == total
    assert f["free_bytes_per_device"] == 80 * GIB - total - int(total * memory.ALLOCATOR_SHARE) - 2 * GIB
    assert result.notes[0].startswith("fits on h100-sxm")
    # the whole of it per device without any parallelism: 18 bytes a parameter, far past 80 GB
    one = ids(
        memory.train_memory(
            spec("llama3-70b"), Step(seq_len=8192, micro_batch=1, recompute="selective"), device=Device(hardware.by_key("h100-sxm"))
        )
    )
    assert one["state_bytes_per_device"] == 18 * 70_553_706_496 and one["free_bytes_per_device"] < 0


def test_zero_stages_and_fsdp():
    """ZeRO (Rajbhandari et al. 2020 §5) over dp 8, in each framework's dtypes. Megatron-LM: stage 1 shards the 12
    optimizer bytes (its distributed optimizer: 6 + 12/d), 2 also the 4 bytes of fp32 gradients, 3 the 2 weight
    bytes too. DeepSpeed, as its estimator states its model states: ZeRO 2, 4·P + 16·P/N
    (estimate_zero2_model_states_mem_needs: bf16 weights and gradients whole, fp32 gradients, master and moments
    sharded); ZeRO 3, 18·P/N, with 4 bytes of its largest layer gathered (estimate_zero3_model_states_mem_needs;
    Llama 3 8B's largest tensor is its 128,256 × 4,096 embedding). FSDP2: 16 bytes a parameter sharded (fp32
    parameters, gradients and moments)."""
    p = 8_030_261_248  # Llama 3 8B
    step = Step(seq_len=8192, micro_batch=1, recompute="full")
    states = {}
    for z in range(4):
        f = ids(memory.train_memory(spec("llama3-8b"), step, Layout(dp=8, zero=z)))
        states[z] = f["state_bytes_per_device"]
    assert states[0] == 18 * p
    assert states[1] == 6 * p + 12 * p // 8
    assert states[2] == 2 * p + 16 * p // 8
    assert states[3] == 18 * p // 8
    fp8 = ids(memory.train_memory(spec("llama3-8b"), Step(seq_len=8192, micro_batch=1, recompute="full", precision="fp8")))
    assert fp8["weight_bytes_per_device"] == 3 * p  # bf16 weight + its fp8 copy
    deepspeed = replace(step, framework="deepspeed")
    z2 = ids(memory.train_memory(spec("llama3-8b"), deepspeed, Layout(dp=8, zero=2)))
    assert z2["state_bytes_per_device"] == 4 * p + 16 * p // 8
    z3 = ids(memory.train_memory(spec("llama3-8b"), deepspeed, Layout(dp=8, zero=3)))
    assert z3["state_bytes_per_device"] == 18 * p // 8
    assert z3["sharding_buffer_bytes_per_device"] == 4 * 128_256 * 4096
    fsdp = ids(memory.train_memory(spec("llama3-8b"), replace(step, framework="fsdp2"), Layout(dp=8)))
    assert fsdp["state_bytes_per_device"] == 16 * p // 8


def test_deepseek_v3_with_ep_64():
    """DeepSeek-V3's own layout (arXiv:2412.19437 §3.2): pp 16, ep 64, ZeRO-1 data parallelism over 2,048
    GPUs: dp 128. 61 layers in 16 stages: 13 of 4 layers, 3 of 3. Stage 1 (layers 4–7) is four mixture layers:
    MLA (q_a 7168→1536, its norm, q_b 1536→128·192, kv_a 7168→576, its norm of 512, kv_b 512→128·256, o
    128·128→7168), a router of 256 × 7168, one shared SwiGLU expert of 2,048 and two norms stay whole; the 256
    routed experts (3 · 7168 · 2048 each) split 64 ways."""
    s = spec("deepseek-v3")
    mla = 7168 * 1536 + 1536 + 1536 * 24576 + 7168 * 576 + 512 + 512 * 32768 + 16384 * 7168
    dense = mla + 256 * 7168 + 3 * 7168 * 2048 + 2 * 7168
    experts = 256 * 3 * 7168 * 2048
    assert memory.stage_params(s, 16)[1] == (4 * dense, 4 * experts)
    f = ids(
        memory.train_memory(s, Step(seq_len=4096, micro_batch=1, recompute="full", mtp=False), Layout(dp=128, pp=16, ep=64, zero=1))
    )
    stage1 = 4 * dense + 4 * experts // 64
    assert f["params_per_device"] >= stage1  # the most loaded stage holds at least stage 1's share
    result = training.plan_training(
        s, "deepseek-v3", TrainingRun("14.8T"), Step(seq_len=4096, recompute="full"), Layout(gpus=2048, pp=16, ep=64, zero=1)
    )
    assert result.inputs["dp"] == 128 and result.inputs["ep"] == 64


def test_published_gpt3_llama3_deepseek_v3():
    """Narayanan et al. 2021 §5.1: GPT-3 175B on 300B tokens, 1,024 A100s at 140 TFLOP/s, 8·T·P/(n·X) ≈ 34 days.
    DeepSeek-V3 (Table 1): 2.664M H800-hours of pre-training on 14.8T tokens; 6N over its 37.6B active
    parameters (MTP left out) at 35% of the H800's bf16 peak reproduces it within 2%."""
    gpt3 = ids(
        training.train(spec("gpt3"), TrainingRun(300 * 10**9, convention="6n"), Step(recompute="full"), Device(tflops=140), gpus=1024)
    )
    assert 33.5 < gpt3["wall_clock_days"] < 34.5
    ds = ids(
        training.train(
            spec("deepseek-v3"),
            TrainingRun(14_800 * 10**9, convention="6n"),
            Step(mtp=False),
            Device(hardware.by_key("h800"), mfu=0.35),
            gpus=2048,
        )
    )
    assert ds["gpu_hours"] == pytest.approx(2.664e6, rel=0.02)


def test_llama3_405b_gpu_hours():
    """Llama 3 (Dubey et al. 2024): 405B on 15.6T tokens, 3.8 × 10²⁵ FLOPs (§3.1, the 6N estimate); Table 4's
    BF16 MFU is 43% (8,192 GPUs), 41% (16,384 GPUs, 8K sequences, where most tokens went) and 38% (16,384 GPUs,
    128K sequences); more than 90% of the time was effective training (§3.3.4); the model card states 30.84M
    H100-hours. MFU counts model FLOPs, attention included, without recomputation: PaLM's 6N + 12·L·H·Q·T at
    T = 8,192, N the 403,752,042,496 parameters in matmuls (the input embedding is a lookup; 126 layers, 128
    heads of 128): 6N + 12 · 126 · 16,384 · 8,192 per token. At 41% and 90% goodput that is the card's hours
    within 2%, and the card lies between what 43% and 38% give."""
    n = 405_853_388_800
    f6 = ids(training.train(spec("llama3.1-405b"), TrainingRun(15_600 * 10**9, convention="6n"), Step(seq_len=8192)))
    assert f6["train_flops"] == 6 * n * 15_600 * 10**9 and round(f6["train_flops"] / 1e25, 1) == 3.8
    per_token = 6 * 403_752_042_496 + 12 * 126 * 16_384 * 8192
    h100 = hardware.by_key("h100-sxm")
    hours = {}
    for mfu in (0.38, 0.41, 0.43):
        f = ids(
            training.train(
                spec("llama3.1-405b"),
                TrainingRun(15_600 * 10**9, convention="palm", goodput=0.9),
                Step(seq_len=8192),
                Device(h100, mfu=mfu),
                gpus=16_384,
            )
        )
        assert f["train_flops"] == per_token * 15_600 * 10**9
        hours[mfu] = f["gpu_hours"]
        assert hours[mfu] == pytest.approx(per_token * 15.6e12 / (989.4e12 * mfu) / 0.9 / 3600)
    assert hours[0.41] == pytest.approx(30.84e6, rel=0.02)
    assert hours[0.43] < 30.84e6 < hours[0.38]
    days = ids(
        training.train(
            spec("llama3.1-405b"),
            TrainingRun(15_600 * 10**9, convention="palm", goodput=0.9),
            Step(seq_len=8192),
            Device(h100, mfu=0.41),
            gpus=16_384,
        )
    )["wall_clock_days"]
    assert days == pytest.approx(hours[0.41] / 16_384 / 24)


def test_tokens_per_s_feeds_the_wall_clock():
    f = ids(training.train(spec("llama3-8b"), TrainingRun(10**12, tokens_per_s=1e6), gpus=64))
    assert f["wall_clock_days"] == pytest.approx(10**12 / 1e6 / 86_400)
    assert f["gpu_hours"] == pytest.approx(10**12 / 1e6 * 64 / 3600)


@pytest.mark.parametrize(
    "args,expected",
    [
        (["llama3-70b", "--gpus", "64", "--tp", "16"], "--tp 16 does not divide the 8 KV heads"),
        (["llama3-70b", "--gpus", "60", "--tp", "8"], "--gpus 60 is not a multiple of --tp × --pp × --cp = 8"),
        (["llama3-70b", "--gpus", "64", "--tp", "8", "--dp", "2"], "--dp 2 × --tp 8 × --pp 1 × --cp 1 = 16 differs"),
        (["llama3-70b", "--pp", "81"], "--pp 81 exceeds the 80 layers"),
        (["llama3-70b", "--cp", "3", "--seq-len", "8192"], "--cp 3: the sequence of 8192 tokens"),
        (["llama3-70b", "--ep", "2", "--dp", "2"], "--ep 2: the model has no routed experts"),
        (["deepseek-v3", "--ep", "3", "--dp", "3"], "--ep 3 does not divide the 256 routed experts"),
        (["deepseek-v3", "--gpus", "32", "--ep", "64"], "--ep 64 does not divide the data-parallel degree 32"),
        (["llama3-8b", "--pp", "2", "--global-batch", "3", "--dp", "2"], "--global-batch 3 is not a multiple"),
        (["llama3-8b", "--goodput", "0"], "--goodput"),
        (["llama3-8b", "--goodput", "1.5"], "--goodput"),
    ],
)
def test_impossible_training_layouts(cli, args, expected):
    code, out, err = cli("train", *args, "--tokens", "1T")
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1


# --- deployed formats ------------------------------------------------------------------------------------


def test_bits_per_weight_of_each_format():
    """Bytes per block from each format's layout: OCP MX v1.0 (32 × 4 bits + an 8-bit scale), NVFP4 (16 × 4 +
    an 8-bit scale), GPTQ g128 (128 × 4 + a 16-bit scale + a 4-bit zero), ggml-common.h's block structs."""
    expected = {
        "mxfp4": 4.25,
        "nvfp4": 4.5,
        "int4": 4 + 20 / 128,
        "q8_0": 8.5,
        "q6_k": 6.5625,
        "q5_k": 5.5,
        "q4_k": 4.5,
        "q3_k": 110 * 8 / 256,
        "q2_k": 84 * 8 / 256,
        "bf16": 16,
        "fp8": 8 + 32 / 128**2,
    }
    for name, bits in expected.items():
        assert float(formats.named(name).bits) == pytest.approx(bits)


def test_llama3_8b_q4_k_m_matches_llama_cpp_rules():
    """llama.cpp's Q4_K_M on 32 layers: use_more_bits(i, 32) is i < 4, i ≥ 28, or (i − 4) % 3 == 2: layers
    0–3, 28–31 and 6, 9, …, 27 (8 of them): 16 layers with attn_v (1024 × 4096) and ffn_down (4096 × 14336) in
    Q6_K (210 bytes per 256), the rest Q4_K (144 per 256); the output 128,256 × 4,096 Q6_K, the embedding Q4_K;
    norms F32. Published: Meta-Llama-3-8B-Instruct-Q4_K_M.gguf is 4.92 GB, its tokenizer metadata included."""
    q4, q6 = 144 / 256, 210 / 256
    more = [i for i in range(32) if i < 4 or i >= 28 or (i - 4) % 3 == 2]
    assert len(more) == 16
    layer_q4 = (4096 * 4096 * 2 + 1024 * 4096 + 2 * 14336 * 4096) * q4
    v, down = 1024 * 4096, 4096 * 14336
    layers = 32 * layer_q4 + 16 * (v + down) * q6 + 16 * (v + down) * q4
    total = layers + 128_256 * 4096 * (q4 + q6) + (32 * 2 * 4096 + 4096) * 4
    w = formats.weight_bytes(spec("llama3-8b"), formats.named("q4_k_m"))
    assert w.total == int(total)
    assert 4.90e9 < w.total < 4.92e9


def test_gpt_oss_120b_in_mxfp4_fits_one_80gb_gpu():
    """gpt-oss-120b as shipped: routed experts MXFP4, the rest bf16. 36 layers × 128 experts × 3 matrices of
    2880 × 2880: 2880 rows × 90 blocks × 17 bytes each, and their biases (3 × 2880) in bf16. The rest: q (4096 ×
    2880), k and v (512 × 2880), o (2880 × 4096) with biases (4096 + 512 + 512 + 2880) and 64 sinks, a router
    128 × 2880 + 128, two norms of 2880 a layer; final norm; embedding and head 201,088 × 2,880 each.
    KV: 8 KV heads × 64 × (K, V) × 2 bytes = 2,048 bytes per token and layer; 18 full layers hold 131,072
    tokens, 18 sliding layers 128. Workspace: 2,048 tokens × 2 bytes × the widest layer (attention x, Q, K, V,
    output: 2880 + 64·128 + 8·128; MoE: x, 128 fp32 router probabilities (2 elements each), the top-4's int64
    indices and permutation and fp32 weights (4 × (4 + 4 + 2)), 4 × (2880 + 4·2880 + 2880); 2 norm inputs 2·2880)
    + 201,088 fp32 logits; reserve 10% of 80 GiB."""
    s = spec("gpt-oss-120b")
    experts = 36 * 128 * (3 * 2880 * 90 * 17 + 3 * 2880 * 2)
    layer = 4096 * 2880 * 2 + 512 * 2880 * 2 + 4096 + 512 + 512 + 2880 + 64 + 128 * 2880 + 128 + 2 * 2880
    dense = 36 * layer + 2880 + 2 * 201_088 * 2880
    w = formats.weight_bytes(s, formats.named("bf16"), formats.named("mxfp4"))
    assert (w.experts, w.total) == (experts, experts + 2 * dense)
    assert 60.5 < w.total / GIB < 61  # the released checkpoint: about 60.8 GiB
    result = plan_fit(
        s, "gpt-oss-120b", FitRun(131_072, batch=1), Formats("bf16", "mxfp4", "bf16"), device=Device(hardware.by_key("h100-sxm"))
    )
    f = ids(result.figures)
    kv = 18 * 131_072 * 2048 + 18 * 128 * 2048
    moe = 2880 + 2 * 128 + 4 * (4 + 4 + 2) + 4 * (2880 + 4 * 2880 + 2880)
    workspace = 2048 * 2 * ((2880 + 64 * 128 + 8 * 128) + moe + 2 * 2880) + 201_088 * 4
    reserve = int(80 * GIB * 0.1) + round(1.79 * GIB)
    assert f["kv_bytes_per_device"] == kv and f["workspace_bytes_per_device"] == workspace
    assert f["free_bytes_per_device"] == 80 * GIB - (w.total + kv + workspace + reserve) > 0
    assert f["max_context"] == 131_072 and result.notes[0].startswith("fits on 1 × h100-sxm")


def test_llama3_70b_bf16_does_not_fit_one_80gb_gpu(cli):
    """2 bytes × 70,553,706,496 parameters alone exceed 80 GiB; with 8,192 tokens of KV (80 layers × 8 × 128 × 2
    × 2 bytes a token), vLLM's profiled forward of 8,192 tokens (8,192 × 2 × (attention 8192 + 64·256 + 8·256,
    SwiGLU 8192 + 4·28672, norms 2·8192) + 128,256 × 4), its 8 GiB reserve (gpu_memory_utilization 0.9) and 1.79
    GiB of non-torch memory, it is short by about 70 GiB. Over two, tp 2: NCCL's buffers double the non-torch
    memory (vLLM PR #10511: 3.58 GiB at tp 2) and 65.7 GiB of weights leave room for under 10,000 tokens."""
    weights = 2 * 70_553_706_496
    kv = 8192 * 80 * 8 * 128 * 2 * 2
    workspace = 8192 * 2 * ((8192 + 64 * 256 + 8 * 256) + (8192 + 4 * 28672) + 2 * 8192) + 128_256 * 4
    short = weights + kv + workspace + int(80 * GIB * 0.1) + round(1.79 * GIB) - 80 * GIB
    code, out, err = cli("fit", "llama3-70b", "--hardware", "h100-sxm", "--context", "8192", "--format", "json")
    data = json.loads(out)
    assert code == 0, err
    assert data["figures"]["free_bytes_per_device"]["value"] == -short
    assert data["figures"]["max_context"]["value"] == 0 and data["figures"]["max_batch"]["value"] == 0
    assert data["notes"][0].startswith("does NOT fit") and f"short by {short / GIB:,.2f} GiB" in data["notes"][0]
    # tp 2 over two: the weights halve, the KV heads split 4 and 4, and it fits with little to spare
    code, out, _ = cli("fit", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "2", "--context", "8192", "-f", "json")
    f = json.loads(out)["figures"]
    assert f["weight_bytes_per_device"]["value"] == weights // 2 and f["kv_bytes_per_device"]["value"] == kv // 2
    workspace2 = -(-8192 * 2 * ((8192 + 64 * 256 + 8 * 256) + (8192 + 4 * 28672) + 2 * 8192) // 2) + 128_256 * 4
    need = weights // 2 + kv // 2 + workspace2 + int(80 * GIB * 0.1) + 2 * round(1.79 * GIB)
    assert f["free_bytes_per_device"]["value"] == 80 * GIB - need > 0
    assert f["kv_capacity_tokens"]["value"] == (80 * GIB - need + kv // 2) // (80 * 4 * 128 * 2 * 2) < 10_000


def test_qwen3_32b_max_context_on_24gb_at_q4_k_m():
    """Qwen3-32B (64 layers) at llama.cpp's Q4_K_M: use_more_bits(i, 64) holds for i < 8, i ≥ 56 and
    (i − 8) % 3 == 2: 32 layers, whose attn_v (1024 × 5120) and ffn_down (5120 × 25600) are Q6_K; q (8192 ×
    5120), k, o (5120 × 8192), gate and up (25600 × 5120) Q4_K; output Q6_K, embedding Q4_K (151,936 × 5,120);
    norms F32 (q_norm, k_norm 128 each, two of 5120 a layer, the final one). KV: 64 layers × 8 × 128 × 2 × 2 =
    262,144 bytes a token. Above 2,048 tokens the workspace is fixed: 2,048 × 2 × (attention 5120 + 64·256 +
    8·256 + the q/k norms' inputs (64 + 8)·128 and an fp32 statistic a head (64 + 8)·2 + SwiGLU 5120 + 4·25600 +
    norms 2·5120) + 151,936 × 4. A GGUF format runs in llama.cpp: no share of
    the device kept, 0.5 GiB outside its buffers, its cache in cells of 256 tokens. Largest context = what the
    24 GiB leave after those, the weights and the workspace, ÷ 262,144, down to whole 256-token cells."""
    q4, q6 = 144, 210  # bytes per 256 weights
    always = (8192 * 5120 + 1024 * 5120 + 5120 * 8192 + 2 * 25600 * 5120) // 256 * q4
    v_down = (1024 * 5120 + 5120 * 25600) // 256
    weights = (
        64 * always + 32 * v_down * q6 + 32 * v_down * q4 + 151_936 * 5120 // 256 * (q4 + q6) + (64 * (2 * 128 + 2 * 5120) + 5120) * 4
    )
    s = spec("qwen3-32b")
    assert formats.weight_bytes(s, formats.named("q4_k_m")).total == weights
    attention = 5120 + 64 * 256 + 8 * 256 + (64 + 8) * 128 + (64 + 8) * 2
    workspace = 2048 * 2 * (attention + (5120 + 4 * 25600) + 2 * 5120) + 151_936 * 4
    memory = 24 * GIB
    room = memory - GIB // 2 - weights - workspace
    expected = room // 262_144 // 256 * 256
    f = ids(
        plan_fit(
            s,
            "qwen3-32b",
            FitRun(4096, batch=1),
            Formats("q4_k_m", kv_dtype="bf16"),
            device=Device(hardware.by_key("rtx4090"), reserve=0.0),
        ).figures
    )
    assert f["max_context"] == expected and 2048 < expected < 40_960
    # with an 8-bit KV cache it holds twice the tokens less the fixed parts' share
    f8 = ids(
        plan_fit(
            s,
            "qwen3-32b",
            FitRun(4096, batch=1),
            Formats("q4_k_m", kv_dtype="int8"),
            device=Device(hardware.by_key("rtx4090"), reserve=0.0),
        ).figures
    )
    assert f8["max_context"] == min(40_960, room // 131_072 // 256 * 256)


def test_largest_is_exact():
    assert serving.largest(lambda n: n <= 12_345, 1 << 24) == 12_345
    assert serving.largest(lambda n: n <= 0, 100) == 0
    assert serving.largest(lambda n: True, 100) == 100


def test_expected_experts_and_speculation():
    """E·(1 − (1 − k/E)^B): one token touches exactly k; many touch all E. Leviathan et al. 2023 Eq. 1:
    (1 − a^(γ+1)) / (1 − a) tokens a step; DeepSeek-V3's one MTP module accepted 85–90% (§5.4.3) ≈ 1.85–1.9."""
    assert serving.expected_experts(128, 4, 1) == pytest.approx(4)
    assert serving.expected_experts(128, 4, 10_000) == pytest.approx(128)
    assert serving.expected_experts(8, 2, 2) == pytest.approx(8 * (1 - (6 / 8) ** 2))
    assert serving.tokens_per_step(0.85, 1) == pytest.approx(1.85)
    assert serving.tokens_per_step(0.8, 3) == pytest.approx((1 - 0.8**4) / 0.2)


def test_decode_is_memory_bound_and_reads_active_experts(cli):
    """gpt-oss-120b, batch 1: a step reads the dense weights but the embedding and 4 of 128 experts a layer."""
    s = spec("gpt-oss-120b")
    w = formats.weight_bytes(s, formats.named("bf16"), formats.named("mxfp4"))
    read = serving.decode_weight_bytes(s, w, serving.Placement(1, 1, 1), 1)
    assert read == pytest.approx(w.total - w.experts - w.embedding + w.experts * 4 / 128)
    out = ids(inference.infer(s, InferenceRun(1000, 24), Formats("bf16", "mxfp4"), device=Device(hardware.by_key("h100-sxm"))))
    kv = 18 * 1024 * 2048 + 18 * 128 * 2048
    assert out["decode_step_s"] == pytest.approx((read + kv) / 3350e9)
    assert out["ttft_s"] == pytest.approx(out["roofline_prefill_s"] + out["decode_step_s"])


@pytest.mark.parametrize(
    "args,expected",
    [
        (["fit", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "3"], "--tp 3 does not divide the 64 attention heads"),
        (["fit", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "8", "--tp", "3"], "--gpus 8 is not a multiple of --tp 3"),
        (["fit", "llama3-70b", "--hardware", "h100-sxm", "--dtype", "q7"], "--dtype q7: unknown"),
        (["fit", "llama3-70b", "--hardware", "h100-sxm", "--ep", "2"], "--ep 2: the model has no routed experts"),
        (["fit", "llama3-70b", "--hardware", "nope"], "--hardware nope: unknown"),
        (["infer", "llama3-8b", "--prompt", "10", "--generate", "1", "--draft", "2"], "--draft 2 needs --accept"),
        (["fit", "llama3-70b", "--hardware", "mine", "--hardware-file", "/nonexistent.yaml"], "--hardware-file"),
    ],
)
def test_impossible_requests(cli, args, expected):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1


def test_hardware_file(cli, tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text(
        "- key: box\n  name: My box\n  tflops: {bf16: 100}\n  memory_gib: 16\n  bandwidth_gbs: 500\n  source: my own measurement\n"
    )
    code, out, err = cli("fit", "llama3-8b", "--hardware", "box", "--hardware-file", str(good), "--context", "1024", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["figures"]["device_memory_bytes"]["value"] == 16 * GIB
    bad = tmp_path / "bad.yaml"
    for text, message in [
        ("- key: x\n  name: X\n  source: s\n  memory_gib: -1\n", "memory_gib must be a positive"),
        ("- key: x\n  name: X\n  source: s\n  colour: red\n", "unknown field 'colour'"),
        ("key: x\n", "a YAML list of devices"),
        ("- [\n", "bad.yaml:2: YAML syntax error"),
        ("- key: x\n  name: X\n  source: s\n  link_latency_us: 5\n", "link_latency_us must be"),
        ("- key: x\n  name: X\n  source: s\n  link_peer_gbs: 0\n", "link_peer_gbs must be"),
    ]:
        bad.write_text(text)
        code, out, err = cli("fit", "llama3-8b", "--hardware", "x", "--hardware-file", str(bad))
        assert code == 2 and message in err and err.count("\n") == 1


def test_every_device_has_exact_memory_and_a_source():
    keys = {h.key for h in hardware.table()}
    assert {
        "b200",
        "gb200",
        "b300",
        "h20",
        "l40s",
        "a10g",
        "rtx5090",
        "rtx4090",
        "mi300x",
        "mi325x",
        "mi355x",
        "gaudi3",
        "tpu-v5e",
        "tpu-v5p",
        "tpu-v6e",
        "tpu-v7",
        "m3-max",
        "m3-ultra",
        "m4-max",
    } <= keys
    for h in hardware.table():
        assert h.source and type(h.memory_bytes) is int and h.memory_bytes % 2**30 == 0
    assert hardware.by_key("mi300x").memory_bytes == 192 * GIB


def test_fit_json_keys_are_stable(cli):
    code, out, _ = cli("fit", "qwen3-8b", "--hardware", "l40s", "--context", "8192", "--batch", "4", "-f", "json")
    data = json.loads(out)
    assert code == 0 and list(data) == ["schema", "title", "inputs", "notes", "figures"] and data["schema"] == "ffncalc.fit/1"
    assert list(data["figures"]) == [
        "weight_bytes",
        "bits_per_weight",
        "weight_bytes_per_device",
        "kv_bytes_per_device",
        "workspace_bytes_per_device",
        "reserve_bytes",
        "need_bytes_per_device",
        "device_memory_bytes",
        "free_bytes_per_device",
        "kv_capacity_tokens",
        "max_context",
        "max_batch",
        "min_gpus",
        "roofline_prefill_s",
        "expected_prefill_s",
        "decode_step_s",
        "expected_decode_step_s",
        "decode_tokens_per_s_per_sequence",
        "expected_decode_tokens_per_s_per_sequence",
        "roofline_decode_tokens_per_s",
        "expected_decode_tokens_per_s",
        "ttft_s",
        "expected_ttft_s",
    ]
    for key in ("weight_bytes", "kv_bytes_per_device", "free_bytes_per_device", "max_context", "max_batch"):
        assert type(data["figures"][key]["value"]) is int


@pytest.mark.parametrize(
    "args",
    [
        [
            "train",
            "llama3-70b",
            "--tokens",
            "15T",
            "--gpus",
            "64",
            "--tp",
            "8",
            "--pp",
            "2",
            "--hardware",
            "h100-sxm",
            "--global-batch",
            "512",
        ],
        [
            "infer",
            "gpt-oss-20b",
            "--prompt",
            "1000",
            "--generate",
            "100",
            "--hardware",
            "h100-sxm",
            "--experts-dtype",
            "mxfp4",
            "--draft",
            "1",
            "--accept",
            "0.8",
        ],
        ["fit", "qwen3-8b", "--hardware", "rtx4090", "--dtype", "q4_k_m"],
        [
            "infer",
            "deepseek-v3",
            "--prompt",
            "4000",
            "--generate",
            "500",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "16",
            "--pp",
            "2",
            "--dtype",
            "fp8",
            "--batch",
            "32",
            "--draft",
            "1",
            "--accept",
            "0.8",
        ],
        [
            "infer",
            "llama3-70b",
            "--prompt",
            "1000",
            "--generate",
            "100",
            "--hardware",
            "l40s",
            "--gpus",
            "8",
            "--pp",
            "2",
            "--draft",
            "3",
            "--accept",
            "0.7",
            "--draft-model",
            "llama3-8b",
        ],
    ],
)
def test_tables_fit_100_columns(cli, args):
    code, out, err = cli(*args)
    assert code == 0, err
    rows = [line for line in out.splitlines() if "│" in line or "┃" in line]
    assert rows and max(len(line) for line in rows) <= 100


# --- pipeline stages and communication in serving ---------------------------------------------------------


def no_link(hw):
    """The same device without an interconnect figure: communication is not counted."""
    from dataclasses import replace

    return replace(hw, link_gbs=None, link_peer_gbs=None, link_latency_us=None)


def test_llama3_70b_in_two_pipeline_stages():
    """--gpus 8 --pp 2: tp 4 in each stage. Stage 0 holds the embedding (128,256 × 8,192) and layers 0–39;
    stage 1 layers 40–79, the final norm (8,192) and the head (128,256 × 8,192), all bf16, ÷ 4. Its KV cache is
    its 40 layers' (8 KV heads ÷ 4 × 128 × K, V × 2 bytes a token); the fp32 logits are on stage 1 only, so
    stage 1 is the most loaded."""
    s = spec("llama3-70b")
    h100 = hardware.by_key("h100-sxm")
    w = formats.weight_bytes(s, formats.named("bf16"))
    layer = 2 * llama3_70b_layer()
    assert w.layers == tuple((layer, 0) for _ in range(80)) and w.outside == 2 * (2 * 128_256 * 8192 + 8192)
    f = ids(
        plan_fit(
            s, "llama3-70b", FitRun(8192, batch=4), Formats("bf16", kv_dtype="bf16"), Placement(gpus=8, pp=2), Device(h100)
        ).figures
    )
    assert f["pipeline_stage"] == 1
    assert f["weight_bytes_per_device"] == -(-(40 * layer + 2 * 8192 + 2 * 128_256 * 8192) // 4)
    assert f["kv_bytes_per_device"] == 4 * 8192 * 40 * 2 * 128 * 2 * 2
    workspace = -(-2048 * 2 * ((8192 + 64 * 256 + 8 * 256) + (8192 + 4 * 28672) + 2 * 8192) // 4) + 4 * 128_256 * 4
    assert f["workspace_bytes_per_device"] == workspace


def test_pipeline_decode_cycle():
    """Memory-bound decode, no link figure. Batch 1 on pp 2 × tp 4: the token passes stage 0 (layers 0–39,
    read ÷ 4) then stage 1 (layers 40–79, final norm and head ÷ 4), each with its layers' KV: the same bytes as
    tp 4 alone, so the same rate. Batch 16: two micro-batches of 8 circulate; each stage reads its weights
    once a micro-batch and 8 sequences' KV, and a sequence waits max(t0 + t1, 2 · max(t0, t1))."""
    s = spec("llama3-70b")
    hw = no_link(hardware.by_key("h100-sxm"))
    layer = 2 * llama3_70b_layer()
    head = 2 * (128_256 * 8192 + 8192)
    kv_layer = 2 * 128 * 2 * 2 * 4500  # a sequence's KV of one layer on one device (2 of the 8 KV heads)

    def rate(batch, **kw):
        return ids(inference.infer(s, InferenceRun(4000, 500, batch=batch), placement=Placement(**kw), device=Device(hw)))

    one = rate(gpus=8, pp=2, batch=1)
    t0, t1 = (40 * layer / 4 + 40 * kv_layer) / 3350e9, ((40 * layer + head) / 4 + 40 * kv_layer) / 3350e9
    assert one["decode_step_s"] == pytest.approx(t0 + t1, rel=1e-12)
    assert one["decode_step_s"] == pytest.approx(rate(gpus=4, batch=1)["decode_step_s"], rel=1e-12)
    sixteen = rate(gpus=8, pp=2, batch=16)
    t0, t1 = (40 * layer / 4 + 8 * 40 * kv_layer) / 3350e9, ((40 * layer + head) / 4 + 8 * 40 * kv_layer) / 3350e9
    assert sixteen["decode_step_s"] == pytest.approx(max(t0 + t1, 2 * max(t0, t1)), rel=1e-12)
    assert sixteen["roofline_decode_tokens_per_s"] == pytest.approx(16 / sixteen["decode_step_s"])


def test_tensor_parallel_all_reduces():
    """Llama 3 70B on 8 H100s, batch 1: 80 layers × 2 all-reduces of one token's 8,192 bf16 activations; each
    device moves 2 · 7/8 of the 16,384 bytes at 450 GB/s (NVLink 900 GB/s both ways) and waits NCCL's ring
    latency, 6.6 + 2 · 7 · 0.6 = 15 µs. The step adds them to its memory time."""
    s = spec("llama3-70b")
    h100 = hardware.by_key("h100-sxm")
    f = ids(
        inference.plan_inference(
            s, "x", InferenceRun(4000, 500, batch=1), Formats("bf16", kv_dtype="bf16"), Placement(gpus=8), Device(h100)
        ).figures
    )
    comm = 160 * (2 * 7 / 8 * 16_384 / 450e9 + 15e-6)
    assert f["decode_comm_s"] == pytest.approx(comm, rel=1e-12)
    bare = ids(inference.infer(s, InferenceRun(4000, 500), placement=Placement(gpus=8), device=Device(no_link(h100))))
    assert f["decode_step_s"] == pytest.approx(bare["decode_step_s"] + comm, rel=1e-12)
    # --link-gbs and --link-latency-us replace the table's link
    g = ids(
        inference.plan_inference(
            s,
            "x",
            InferenceRun(4000, 500, batch=1),
            Formats("bf16", kv_dtype="bf16"),
            Placement(gpus=8),
            Device(h100, link_gbs=50, link_latency_us=0),
        ).figures
    )
    assert g["decode_comm_s"] == pytest.approx(160 * 2 * 7 / 8 * 16_384 / 50e9, rel=1e-12)


def test_a_mesh_gives_a_small_group_its_peers_links():
    """MI300X: 7 Infinity Fabric links of 64 GB/s each way (896 GB/s both ways over 8 GPUs, CDNA 3 white
    paper Table 2): a pair shares one link, eight use all seven."""
    mi = hardware.by_key("mi300x")
    assert (mi.allreduce_gbs(2), mi.allreduce_gbs(4), mi.allreduce_gbs(8)) == (64, 192, 448)
    assert hardware.by_key("h100-sxm").allreduce_gbs(2) == 450  # behind NVSwitch, every pair gets the whole link


@pytest.mark.parametrize(
    "args,expected",
    [
        (["infer", "llama3-70b", "--prompt", "10", "--generate", "1", "--pp", "81"], "--pp 81 exceeds the 80 layers"),
        (["fit", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "6", "--pp", "4"], "--gpus 6 is not a multiple of --pp 4"),
        (
            ["fit", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "8", "--pp", "2", "--tp", "8"],
            "--gpus 8 is not a multiple of --tp 8 × --pp 2",
        ),
        (["fit", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "2", "--link-gbs", "0"], "--link-gbs"),
        (
            [
                "infer",
                "llama3-70b",
                "--prompt",
                "10",
                "--generate",
                "1",
                "--hardware",
                "h100-sxm",
                "--gpus",
                "8",
                "--draft",
                "2",
                "--accept",
                "0.5",
                "--draft-model",
                "gpt2",
            ],
            "--draft-model gpt2: its vocabulary of 50,257 differs from the model's 128,256",
        ),
        (
            [
                "infer",
                "llama3.1-405b",
                "--prompt",
                "10",
                "--generate",
                "1",
                "--hardware",
                "h100-sxm",
                "--gpus",
                "64",
                "--draft",
                "2",
                "--accept",
                "0.5",
                "--draft-model",
                "llama3-8b",
            ],
            "--draft-model llama3-8b: --tp 64 does not divide the 32 attention heads",
        ),
        (
            ["infer", "llama3-70b", "--prompt", "10", "--generate", "1", "--draft-model", "llama3-8b"],
            "--draft-model llama3-8b needs --draft",
        ),
        (
            ["infer", "llama3-70b", "--prompt", "10", "--generate", "1", "--draft", "1", "--accept", "0.5", "--draft-model", "nope"],
            "--draft-model nope: unknown preset",
        ),
    ],
)
def test_impossible_serving_layouts(cli, args, expected):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1


def test_a_draft_model_drafts_each_token_in_turn():
    """Llama 3 70B verifying 4 tokens a step drafted by Llama 3 8B, on one B200, no link: each drafted token is
    one memory-bound step of the 8B model (its weights but the input embedding, 128,256 × 4,096, bf16, and its
    KV: 32 layers × 8 × 128 × K, V × 2 bytes a token); then the 70B model's step over the 5 tokens. The 8B
    model's weights and KV are held beside the 70B's. Tokens a step: (1 − 0.7⁵) / (1 − 0.7)."""
    context = 2200
    hw = no_link(hardware.by_key("b200"))
    draft = presets.load("llama3-8b")
    f = ids(
        inference.plan_inference(
            spec("llama3-70b"),
            "llama3-70b",
            InferenceRun(2000, 200, batch=1, draft=4, accept=0.7, draft_model=draft),
            Formats("bf16", kv_dtype="bf16"),
            device=Device(hw),
        ).figures
    )
    kv8 = 32 * 8 * 128 * 2 * 2 * context
    draft_s = 4 * (2 * (8_030_261_248 - 128_256 * 4096) + kv8) / 7700e9
    assert f["draft_s"] == pytest.approx(draft_s, rel=1e-12)
    verify = (2 * (70_553_706_496 - 128_256 * 8192) + 80 * 8 * 128 * 2 * 2 * context) / 7700e9
    assert f["decode_step_s"] == pytest.approx(verify + draft_s, rel=1e-12)
    assert f["decode_tokens_per_s_per_sequence"] == pytest.approx((1 - 0.7**5) / 0.3 / (verify + draft_s))
    assert f["draft_bytes_per_device"] == 2 * 8_030_261_248 + kv8


def test_deepseek_v3_drafts_with_its_mtp_module():
    """DeepSeek-V3's one MTP module (§2.2): a layer like its last (MLA, a router of 256 × 7168 (its score bias
    is a buffer), one shared SwiGLU expert of 2,048, 256 routed experts of 3 · 7168 · 2048, two norms), eh_proj 14,336 →
    7,168 and three norms of 7,168, all bf16, split over tp 8; its own latent cache, (512 + 64) × 2 bytes a
    token, whole on every device."""
    s = spec("deepseek-v3")
    mla = 7168 * 1536 + 1536 + 1536 * 24576 + 7168 * 576 + 512 + 512 * 32768 + 16384 * 7168
    layer = mla + 256 * 7168 + 3 * 7168 * 2048 + 2 * 7168 + 256 * 3 * 7168 * 2048
    held = 2 * layer + 2 * 14_336 * 7168 + 3 * 7168 * 2
    f = ids(
        inference.plan_inference(
            s,
            "deepseek-v3",
            InferenceRun(2000, 200, batch=1, draft=1, accept=0.85),
            Formats("bf16", kv_dtype="bf16"),
            Placement(gpus=8),
            Device(hardware.by_key("b200")),
        ).figures
    )
    assert f["draft_bytes_per_device"] == -(-held // 8) + 2200 * 576 * 2
    assert f["tokens_per_step"] == pytest.approx(1.85)
    # without a drafter of its own (no MTP, no --draft-model) the drafts cost nothing: prompt lookup
    g = ids(
        inference.plan_inference(
            spec("llama3-8b"),
            "llama3-8b",
            InferenceRun(100, 10, batch=1, draft=2, accept=0.5),
            Formats("bf16", kv_dtype="bf16"),
            device=Device(hardware.by_key("b200")),
        ).figures
    )
    assert "draft_s" not in g and "draft_bytes_per_device" not in g


def test_fewest_devices_for_llama3_70b():
    """At 8,192 tokens × batch 1, bf16: one 80 GB H100 is short (above), two at tp 2 fit: two is the fewest, and
    the verdict names the layout."""
    result = plan_fit(
        spec("llama3-70b"),
        "llama3-70b",
        FitRun(8192, batch=1),
        Formats("bf16", kv_dtype="bf16"),
        device=Device(hardware.by_key("h100-sxm")),
    )
    f = {x.id: x for x in result.figures}
    assert f["min_gpus"].value == 2 and f["min_gpus"].source == "tp 2 × pp 1"
    assert result.notes[0].endswith("one copy fits on 2 (--gpus 2 --tp 2)")


def test_training_suggests_the_least_parallel_layout_that_fits():
    """Llama 3 70B, 64 H100s, 8K sequences, selective recompute, ZeRO 0 asked: data parallelism alone is
    short; the note's layout fits, and no layout with fewer model-parallel devices (tp × pp) fits at ZeRO 0–2."""
    s = spec("llama3-70b")
    h100 = hardware.by_key("h100-sxm")

    def plan(tp, pp, zero):
        return training.plan_training(
            s,
            "llama3-70b",
            TrainingRun("15T", convention="6n"),
            Step(seq_len=8192, micro_batch=1, recompute="selective", global_batch=512),
            Layout(gpus=64, tp=tp, pp=pp, ep=1, zero=zero),
            Device(h100),
        )

    result = plan(1, 1, 0)
    assert result.notes[0].startswith("does NOT fit")
    import re

    tp, pp, zero = map(int, re.search(r"fits as --tp (\d+) --pp (\d+) \(dp \d+\) --zero (\d+)", result.notes[1]).groups())
    again = plan(tp, pp, zero)
    assert ids(again.figures)["free_bytes_per_device"] >= 0
    for t in (1, 2, 4, 8):
        for p in (1, 2, 4, 8):
            if t * p < tp * pp:
                for z in range(3):
                    f = ids(plan(t, p, z).figures)
                    assert f["free_bytes_per_device"] < 0, (t, p, z)


def test_a_stated_peak_for_a_device_without_one():
    """A device whose table states no TFLOP/s (here the M4 Max with its fp32 figure taken away): without
    --tflops there is no prefill time; with it, prefill is the prompt's causal FLOPs over that rate on the one
    device."""
    from dataclasses import replace

    s, m4 = spec("qwen3-8b"), replace(hardware.by_key("m4-max"), tflops={})
    bare = ids(inference.infer(s, InferenceRun(1000, 10), device=Device(m4)))
    assert "roofline_prefill_s" not in bare and bare["decode_step_s"] > 0
    f = ids(inference.infer(s, InferenceRun(1000, 10), device=Device(m4, tflops=17.0)))
    assert f["roofline_prefill_s"] == pytest.approx(f["prefill_flops"] / 17e12)


def test_pipeline_stages_of_a_tied_model():
    """GPT-3 175B (tied embeddings, learned positions), 96 layers of 12d² + 13d, d = 12,288, bf16, in two
    stages: the first holds the token table (50,257 × d) and the position table (2,048 × d) and reads neither
    (both looked up); the last holds its own copy of the token table as the head, reads it each step, and the
    final LayerNorm (2d)."""
    from ffncalc.analysis import serving

    s, d = spec("gpt3"), 12_288
    w = formats.weight_bytes(s, formats.named("bf16"))
    layer, tok, pos = 12 * d * d + 13 * d, 50_257 * d, 2048 * d
    assert w.tied == 2 * tok and w.embedding == 2 * (tok + pos)
    first, last = serving.stages(s, w, 2)
    assert (first.dense, first.read) == (2 * (48 * layer + tok + pos), 2 * 48 * layer)
    assert (last.dense, last.read) == (2 * (48 * layer + 2 * d + tok), 2 * (48 * layer + 2 * d + tok))
    one = serving.stages(s, w, 1)[0]
    assert (one.dense, one.read) == (w.total, 2 * (96 * layer + 2 * d + tok))


def test_several_pipelined_copies():
    """Llama 3 8B on 8 devices as tp 2 × pp 2: two copies, each with 3 of the 6 sequences; a stage's device
    keeps 16 layers × 4 of the 8 KV heads × 128 × K, V × 2 bytes a token of its copy's 3 sequences."""
    f = ids(
        plan_fit(
            spec("llama3-8b"),
            "llama3-8b",
            FitRun(4096, batch=6),
            Formats("bf16", kv_dtype="bf16"),
            Placement(gpus=8, tp=2, pp=2),
            Device(hardware.by_key("h100-sxm")),
        ).figures
    )
    assert f["kv_bytes_per_device"] == 3 * 4096 * 16 * 4 * 128 * 2 * 2


def test_a_hand_off_between_nodes_crosses_the_network():
    """Llama 3 70B on 16 H100s as tp 8 × pp 2: each stage is a node, so the one hand-off, one token's 16,384
    bytes, goes at the network's 50 GB/s (a 400 Gb/s NIC a GPU) and NCCL's one-hop latency 6.6 + 0.6 µs; the
    all-reduces stay on NVLink."""
    s, h100 = spec("llama3-70b"), hardware.by_key("h100-sxm")

    def comm(**kw):
        return ids(
            inference.plan_inference(
                s, "x", InferenceRun(100, 10, batch=1), Formats("bf16", kv_dtype="bf16"), Placement(gpus=16, pp=2), Device(h100, **kw)
            ).figures
        )["decode_comm_s"]

    ring = 160 * (2 * 7 / 8 * 16_384 / 450e9 + 15e-6)
    assert comm() == pytest.approx(ring + 16_384 / 50e9 + 7.2e-6, rel=1e-12)
    assert comm(network_gbs=25) == pytest.approx(ring + 16_384 / 25e9 + 7.2e-6, rel=1e-12)


def test_no_copy_fits_and_the_note_on_a_pipeline_alone():
    """A device of 256 MiB holds less than Llama 3 70B's 141 GB over 512 devices (275 MB each) after its
    reserve: no layout fits, and no fewest-devices figure is given. With tp 1 and four stages the note speaks of
    hand-offs only."""
    from dataclasses import replace

    tiny = replace(hardware.by_key("h100-sxm"), key="tiny", memory_bytes=2**28)
    result = plan_fit(spec("llama3-70b"), "x", FitRun(1024, batch=1), Formats("bf16", kv_dtype="bf16"), device=Device(tiny))
    assert "min_gpus" not in ids(result.figures)
    assert result.notes[0].endswith("no copy fits on up to 512 of them")
    notes = inference.plan_inference(
        spec("llama3-70b"),
        "x",
        InferenceRun(100, 10, batch=1),
        Formats("bf16", kv_dtype="bf16"),
        Placement(gpus=4, tp=1, pp=4),
        Device(hardware.by_key("h100-sxm")),
    ).notes
    link = next(n for n in notes if n.startswith("communication"))
    assert "hand-off" in link and "all-reduce" not in link and "7.2 µs each" in link


def test_experts_shared_across_copies():
    """Mixtral 8x7B on 4 H100s as two copies of tp 2 whose 8 experts spread over all 4 (ep 4): each device
    holds half of the dense weights (attention q, o 4096², k, v 4096 × 1024, router 8 × 4096, two norms a
    layer, embedding and head 32,000 × 4,096, final norm) and a quarter of the experts (8 × 3 × 4096 × 14336
    a layer), bf16. A decode step of one sequence a copy: per layer an all-reduce of one token's 8,192 bytes
    over tp 2 (2 · 1/2 of it moved), and in place of the FFN's all-reduce a dispatch and a combine, each
    device sending its half of the token's 2 experts' inputs, 8,192 bytes, 3/4 of it to the others, at 450
    GB/s, no latency; the experts read are those the two copies' tokens pick."""
    s = spec("mixtral-8x7b")
    dense = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 8 * 4096 + 2 * 4096) + 2 * 32_000 * 4096 + 4096
    experts = 32 * 8 * 3 * 4096 * 14336
    h100 = hardware.by_key("h100-sxm")
    result = inference.plan_inference(
        s,
        "x",
        InferenceRun(100, 10, batch=2),
        Formats("bf16", kv_dtype="bf16"),
        Placement(gpus=4, tp=2, ep=4),
        Device(h100, link_latency_us=0),
    )
    f = ids(result.figures)
    assert f["weight_bytes_per_device"] == -(-2 * dense // 2) + -(-2 * experts // 4)
    comm = 32 * (8192 / 450e9 + 2 * 0.75 * 8192 / 450e9)
    assert f["decode_comm_s"] == pytest.approx(comm, rel=1e-12)
    w = formats.weight_bytes(s, formats.named("bf16"))
    read = (w.total - w.experts - w.embedding) / 2 + w.experts * serving.expected_experts(8, 2, 2) / 8 / 4
    kv = 32 * 4 * 128 * 2 * 2 * 110  # one sequence, 4 of the 8 KV heads, 110 tokens
    assert f["decode_step_s"] == pytest.approx((read + kv) / 3350e9 + comm, rel=1e-12)
    assert "ep 4 across copies" in result.notes[0]


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--gpus", "4", "--tp", "2", "--ep", "3"], "--ep 3 does not divide the 8 routed experts"),
        (["--gpus", "4", "--tp", "4", "--ep", "8"], "--ep 8: beyond --tp 4 it spans whole copies"),
    ],
)
def test_impossible_expert_layouts(cli, args, expected):
    code, out, err = cli("fit", "mixtral-8x7b", "--hardware", "h100-sxm", *args)
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1


def test_prefill_streams_through_uneven_stages():
    """Llama 3 70B on 3 H100s as three stages of one device (80 layers: 27, 27, 26), no link, a 4,000-token
    prompt in chunks of 2,048 (two). A layer's causal prefill: 2 FLOPs per matmul weight a token (q, o 8192²;
    k, v 8192 × 1024; gate, up, down 8192 × 28672) and the scores and values, 2 · 2 · 64 · 128 per key each
    query meets, Σ p = P(P + 1)/2 of them; the head 2 · 128,256 · 8,192 a token, on the last stage. The
    pipeline takes a chunk through every stage, then the second at the slowest stage's pace."""
    P, peak = 4000, 989.4e12
    matmul = 2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672
    layer = 2 * matmul * P + 4 * 64 * 128 * P * (P + 1) // 2
    head = 2 * 128_256 * 8192 * P
    stage = [27 * layer, 27 * layer, 26 * layer + head]
    chunk_s = [f / 2 / peak for f in stage]
    f = ids(
        inference.infer(
            spec("llama3-70b"),
            InferenceRun(P, 10),
            placement=Placement(gpus=3, pp=3),
            device=Device(no_link(hardware.by_key("h100-sxm"))),
        )
    )
    assert f["prefill_flops"] == sum(stage)
    assert f["roofline_prefill_s"] == pytest.approx(max(chunk_s) + sum(chunk_s), rel=1e-12)


def test_an_amd_tensor_parallel_all_reduce_pays_rccls_latency():
    """Llama 3 70B at tp 8 on MI300X: RCCL's ring LL all-reduce costs its base 12.0 µs and 0.8 µs for each of its
    2(n − 1) = 14 steps over xGMI (ROCm/rccl src/graph/tuning.cc, tuning_model_5), 23.2 µs a call. A decode step of
    one sequence makes 2 all-reduces a layer (after attention and after the MLP), 160 in all, each of one token's
    8,192 16-bit values, 2 · 7/8 of them moved at the 448 GB/s all seven links give eight devices."""
    mi = hardware.by_key("mi300x")
    assert mi.allreduce_latency_us(8) == pytest.approx(12.0 + 14 * 0.8)
    f = ids(inference.plan_inference(spec("llama3-70b"), "x", InferenceRun(100, 10), Formats(), Placement(gpus=8), Device(mi)).figures)
    by_hand = 160 * (2 * 7 / 8 * 16_384 / 448e9 + 23.2e-6)
    assert f["decode_comm_s"] == pytest.approx(by_hand, rel=1e-12)
    assert 160 * 23.2e-6 / by_hand > 0.9  # a token's all-reduces are latency, not bandwidth


def test_a_tpu_ring_pays_a_microsecond_a_hop():
    """TPU ICI: about 1 µs a hop, no base (How to Scale Your Model, part 3): a ring all-reduce over 4 chips, 2 · 3
    hops, 6 µs."""
    assert hardware.by_key("tpu-v5p").allreduce_latency_us(4) == pytest.approx(6.0)
    assert hardware.by_key("tpu-v6e").allreduce_latency_us(1) == 0.0


def test_two_batch_overlap_takes_the_longer_of_compute_and_all_to_alls():
    """Mixtral 8x7B on 4 H100s as four copies of tp 1 sharing the 8 experts over ep 4, 64 sequences a copy, 1 µs a
    hand-off (the all-to-all's latency), no all-reduce (tp 1). Without overlap a step is its bytes over the
    bandwidth, then 32 layers of a dispatch and a combine, each device sending its 64 tokens' 2 expert inputs of
    4,096 16-bit values (1 MiB), 3/4 of it to the others at 450 GB/s, 1 µs a call. With two-batch overlap, two halves
    of 32 sequences: each reads the dense weights, the experts its 4 copies' 128 tokens pick and its own 32 caches;
    the same bytes cross in twice the calls; the step is the longer of the two."""
    s = spec("mixtral-8x7b")
    h100 = hardware.by_key("h100-sxm")
    w = formats.weight_bytes(s, formats.named("bf16"))
    dense = w.total - w.experts - w.embedding
    experts = 32 * 8 * 3 * 4096 * 14336 * 2  # the routed experts' bf16 bytes
    assert w.experts == experts
    kv = 32 * 8 * 128 * 2 * 2 * 110  # one sequence's cache at 110 tokens: 32 layers, K and V of 8 heads of 128

    def reads(sequences):
        touched = serving.expected_experts(8, 2, 4 * sequences) / 8
        return dense + experts * touched / 4 + sequences * kv

    a2a = 32 * 2 * 0.75 * 64 * 2 * 4096 * 2 / 450e9

    def plan(overlap):
        result = inference.plan_inference(
            s,
            "x",
            InferenceRun(100, 10, batch=256),
            Formats(),
            Placement(gpus=4, tp=1, ep=4, overlap=overlap),
            Device(h100, link_latency_us=1),
        )
        return ids(result.figures), result.notes

    plain, _ = plan(False)
    assert plain["decode_step_s"] == pytest.approx(reads(64) / 3350e9 + a2a + 64 * 1e-6, rel=1e-9)
    overlapped, notes = plan(True)
    busy = 2 * reads(32) / 3350e9
    assert overlapped["decode_step_s"] == pytest.approx(max(busy, a2a + 128 * 1e-6), rel=1e-9)
    assert any("two-batch overlap" in n for n in notes)


def test_two_batch_overlap_needs_expert_parallel_all_to_alls(cli):
    code, out, err = cli("fit", "mixtral-8x7b", "--hardware", "h100-sxm", "--gpus", "2", "--two-batch-overlap")
    assert code == 2 and out == "" and "--two-batch-overlap" in err and err.count("\n") == 1


def test_goodput_is_the_largest_batch_within_the_inter_token_objective():
    """Llama 3 8B bf16 on one H100 in vLLM at 4,096 tokens, an inter-token objective of 20 ms: a decode step (memory-
    bound here) reads every weight but the input embedding and each sequence's 4,096 tokens of cache (32 layers × K
    and V of 8 heads of 128, 2 bytes), at 0.8 of 3,350 GB/s, and adds 120 µs for each of 32 layers and the head. So
    the largest batch within 20 ms is ⌊((0.02 − 33 · 120 µs) · 0.8 · 3.35e12 − weights) / cache⌋, and the goodput
    that batch's tokens over its step."""
    w = formats.weight_bytes(spec("llama3-8b"), formats.named("bf16"))
    weights = w.total - w.embedding
    cache = 32 * 2 * 8 * 128 * 2 * 4096
    fixed = 33 * 120e-6

    def step(b):
        return (weights + b * cache) / (0.8 * 3.35e12) + fixed

    by_hand = int(((0.02 - fixed) * 0.8 * 3.35e12 - weights) // cache)
    assert step(by_hand) <= 0.02 < step(by_hand + 1)
    r = ffncalc.fit("llama3-8b", hardware="h100-sxm", engine="vllm", context=4096, itl_slo=0.02)
    assert r["slo_batch"].value == by_hand
    assert r["goodput_tokens_per_s"].value == pytest.approx(by_hand / step(by_hand), rel=1e-9)
    tight = ffncalc.fit("llama3-8b", hardware="h100-sxm", engine="vllm", context=4096, itl_slo=0.02, ttft_slo=0.001)
    assert tight["slo_batch"].value == 0  # no request's first token comes within 1 ms
