"""A training step's memory as named figures (the frameworks' dtypes, the logits and loss, the gathered buffers
of ZeRO 3, the micro-batches a schedule keeps in flight, a recomputed layer), its times without the bubble counted
twice, and the fewest devices a run fits on — each against a hand derivation."""

from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis import hardware, layouts, memory, training
from ffncalc.analysis.plan import Device, Layout, Step, TrainingRun
from ffncalc.sources import presets

PRESETS = Path(__file__).resolve().parents[2] / "presets"
GIB = 2**30
D, V, KV, FFN, HEADS = 4096, 128_256, 1024, 14_336, 32  # Llama 3 8B
LAYER = 2 * D * D + 2 * D * KV + 3 * D * FFN + 2 * D  # q, o; k, v; gate, up, down; two RMSNorms
REST = 2 * V * D + D  # the embedding, the head and the final norm


def spec(name):
    return presets.load(str(PRESETS / f"{name}.yaml"))[1]


def ids(figures):
    return {f.id: f.value for f in figures}


def one_layer(tokens):
    """A Llama 3 8B layer's kept activations without recomputation (Korthikanti et al. 2022 §4.1 with GQA and
    SwiGLU, flash attention): attention x, Q, K, V, the heads' output (2 bytes each) and a 1-byte mask of d; the
    FFN x, gate, up, act, product (2 bytes each) and its mask; two norm inputs; 4 bytes of log-sum-exp a head."""
    per_token = (2 * (D + D + 2 * KV + D) + D) + (2 * (D + 4 * FFN) + D) + 2 * 2 * D + 4 * HEADS
    return tokens * per_token


def test_fsdp2_step_figures_by_hand():
    """torchtitan's FSDP2 over 8 devices, 32k tokens, full recomputation: 16 bytes a parameter sharded 8 ways; the
    rest of the model gathered in bf16 all step, a layer and the next prefetched in bf16 and a layer's gradients
    reduce-scattered (bf16 and fp32); each layer's bf16 input kept; at the peak the loss (the head's bf16 input and
    12 bytes a logit: the fp32 log-softmax, its gradient and the input's) outweighs the recomputed layer."""
    p, t = 8_030_261_248, 32_768
    f = ids(memory.train_memory(spec("llama3-8b"), Step(seq_len=t, recompute="full", framework="fsdp2"), Layout(dp=8)))
    assert f["state_bytes_per_device"] == 16 * p // 8
    assert f["sharding_buffer_bytes_per_device"] == 2 * REST + 2 * 2 * LAYER + (2 + 4) * LAYER
    assert f["activation_bytes_per_device"] == 32 * 2 * t * D
    assert f["loss_bytes_per_device"] == 2 * t * D + 12 * t * V
    assert f["recompute_bytes_per_device"] == one_layer(t)
    expected = 16 * p // 8 + f["sharding_buffer_bytes_per_device"] + 32 * 2 * t * D + f["loss_bytes_per_device"]
    assert f["bytes_per_device"] == expected
    assert f["reserved_bytes_per_device"] == expected + int(expected * memory.ALLOCATOR_SHARE)
    assert f["peak_bytes_per_device"] == f["reserved_bytes_per_device"] + 2 * GIB


def test_torchtitan_per_op_selective_checkpointing():
    """torchtitan's per-op policy keeps, per token and layer, the bf16 layer input and the outputs of every other
    matmul in order — q (4,096), v (1,024), gate (14,336), down (4,096) of q, k, v, o, gate, up, down — and the
    flash attention's output (32 × 128) with 4 bytes of log-sum-exp a head; Megatron's selective keeps the rest."""
    t = 2 * 8192
    per_token = 2 * (D + D + KV + FFN + D + D) + 4 * HEADS
    step = Step(seq_len=8192, micro_batch=2, recompute="selective", framework="fsdp2")
    f = ids(memory.train_memory(spec("llama3-8b"), step, Layout(dp=8)))
    assert f["activation_bytes_per_device"] == 32 * t * per_token
    megatron = ids(memory.train_memory(spec("llama3-8b"), replace(step, framework="megatron"), Layout(dp=8)))
    assert megatron["activation_bytes_per_device"] == 32 * one_layer(t)


def test_loss_per_framework_and_chunked():
    """Megatron-LM's vocab-parallel cross-entropy keeps 6 bytes a logit (bf16 logits, the fp32 softmax it writes
    its gradient into), the vocabulary split over tp; Liger's fused linear cross-entropy only a chunk of tokens,
    chunk = the next power of two of ⌈t / ⌈V / d⌉⌉: 8 bytes a chunk's logit, with the bf16 gradients of the hidden
    states and the head."""
    t = 8192
    step = Step(seq_len=t, recompute="full")
    f = ids(memory.train_memory(spec("llama3-8b"), step, Layout(tp=8)))
    assert f["loss_bytes_per_device"] == 2 * t * D + 6 * t * (V // 8)
    chunk = 256  # ⌈128256 / 4096⌉ = 32; 8192 / 32 = 256
    f = ids(memory.train_memory(spec("llama3-8b"), replace(step, loss="chunked")))
    assert f["loss_bytes_per_device"] == 2 * t * D + 8 * chunk * V + 2 * t * D + 2 * V * D


def test_fsdp2_under_a_pipeline_keeps_the_stage_unsharded():
    """torchtitan does not reshard between micro-batches under a pipeline and FSDP2 accumulates the unsharded
    gradients in fp32: the stage's weights in bf16 and its gradients in fp32, whole. Stage 1 of 2, the most loaded
    (its logits): 16 layers, the final norm and the head."""
    f = ids(memory.train_memory(spec("llama3-8b"), Step(seq_len=4096, recompute="full", framework="fsdp2"), Layout(dp=4, pp=2)))
    stage1 = 16 * LAYER + D + V * D
    assert f["pipeline_stage"] == 1 and f["sharding_buffer_bytes_per_device"] == (2 + 4) * stage1


def test_interleaved_schedule_in_flight():
    """Interleaved 1F1B over pp 4 with 2 chunks a device: the first stage keeps p·(1 + (p − 1)/(p·v)) = 5.5
    micro-batches of its layers (Korthikanti et al. 2022 §4.2.3), 11 half-stage chunks; plain 1F1B keeps 4. Without
    recomputation the first stage outweighs the last's logits."""
    s, step = spec("llama3-8b"), Step(seq_len=4096)
    plain = ids(memory.train_memory(s, step, Layout(dp=1, pp=4), micro_batches=16))
    interleaved = ids(memory.train_memory(s, step, Layout(dp=1, pp=4, virtual_stages=2), micro_batches=16))
    per_micro_batch = 8 * one_layer(4096)  # 8 layers a stage
    assert plain["in_flight_micro_batches"] == 4 and plain["activation_bytes_per_device"] == 4 * per_micro_batch
    assert interleaved["in_flight_micro_batches"] == 5.5
    assert interleaved["activation_bytes_per_device"] == 11 * per_micro_batch // 2


def plan(layout, device, step=Step(seq_len=8192, global_batch=64)):
    return training.plan_training(spec("llama3-8b"), "llama3-8b", TrainingRun(10**12), step, layout, device)


def test_mfu_is_end_to_end_and_kernel_mfu_adds_the_bubble():
    """pp 2 over 8 devices, dp 4, 64 sequences of one: 16 micro-batches a pipeline, bubble 1/17. An MFU is measured
    end to end, the bubble inside it: 6N·T / (8 × 989.4 TFLOP/s × 0.4) s. A kernel efficiency is the rate while
    busy: the same ÷ (1 − 1/17)."""
    h100 = hardware.by_key("h100-sxm")
    flops = 6 * 8_030_261_248 * 10**12
    seconds = flops / (8 * 989.4e12 * 0.4)
    end_to_end = plan(Layout(gpus=8, pp=2), Device(h100, mfu=0.4))
    assert end_to_end["pipeline_bubble"].value == pytest.approx(1 / 17)
    assert end_to_end["gpu_hours"].value == pytest.approx(8 * seconds / 3600)
    busy = plan(Layout(gpus=8, pp=2), Device(h100, kernel_mfu=0.4))
    assert busy["gpu_hours"].value == pytest.approx(8 * seconds / 3600 * 17 / 16)
    # no MFU given: the bf16 default, 0.4 (Llama 3's 38–43%)
    assert plan(Layout(gpus=8, pp=2), Device(h100))["gpu_hours"].value == pytest.approx(8 * seconds / 3600)


def test_fp8_default_efficiency():
    """fp8 training is timed at the fp8 peak × 0.176 (DeepSeek-V3: 6 × 37.6B × 14.8T / (2.664M h × 3,600 s ×
    1,978.9 TFLOP/s)), not at the bf16 default's 0.4 of the doubled peak."""
    assert 6 * 37.6e9 * 14.8e12 / (2.664e6 * 3600 * 1978.9e12) == pytest.approx(0.176, abs=5e-4)
    h100 = hardware.by_key("h100-sxm")
    fp8 = plan(Layout(gpus=8), Device(h100), Step(seq_len=8192, precision="fp8"))
    assert fp8["device_tflops"].value == pytest.approx(1978.9 * 0.176)


def test_fewest_devices_and_no_smaller_layout_fits():
    """Llama 3 70B, 8k tokens, on 80 GB H100s: the search's answer fits, and no layout of fewer devices does —
    every one of a bounded space enumerated here, apart from the search: tp 1, 2, 4 or 8, pp a power of two up to
    the 80 layers, ZeRO 0–3, each recomputation, dp the rest."""
    s = spec("llama3-70b")
    device = Device(hardware.by_key("h100-sxm"), reserve=0.0)
    step = Step(seq_len=8192, mtp=False)
    found = training.plan_training(s, "llama3-70b", TrainingRun(10**12, min_gpus=True), step, Layout(), device)
    n = found.inputs["gpus"]
    assert found["free_bytes_per_device"].value >= 0 and found.notes[1].startswith(f"the fewest devices that fit: {n}")
    assert 1 < n < 64
    for gpus in range(1, n):
        for tp in (1, 2, 4, 8):
            for pp in (1, 2, 4, 8, 16, 32, 64):
                if gpus % (tp * pp) or 64 % tp:
                    continue
                for zero in range(4):
                    for recompute in ("none", "selective", "full"):
                        lay = Layout(dp=gpus // (tp * pp), tp=tp, pp=pp, zero=zero)
                        free = ids(memory.train_memory(s, replace(step, recompute=recompute), lay, device))
                        assert free["free_bytes_per_device"] < 0, (gpus, tp, pp, zero, recompute)


def test_min_gpus_needs_a_device(cli):
    code, out, err = cli("train", "llama3-8b", "--tokens", "1T", "--min-gpus")
    assert code == 2 and "--min-gpus: name a device with --hardware" in err and err.count("\n") == 1
    code, out, err = cli("train", "llama3-8b", "--tokens", "1T", "--min-gpus", "--hardware", "h100-sxm", "--gpus", "8")
    assert code == 2 and "leave out --gpus" in err
    code, out, err = cli("train", "llama3-8b", "--tokens", "1T", "--min-gpus", "--hardware", "h100-sxm")
    assert code == 0 and "the fewest devices that fit" in out


def test_search_order_prefers_less_model_parallelism():
    """Among as few devices, the search keeps the least tp × pp: each shape it tries is a layout the resolver
    accepts."""
    for tp, pp, ep, zero in layouts.shapes(spec("llama3-8b"), Layout()):
        assert 8 % tp == 0 and pp & (pp - 1) == 0 and ep == 1 and 0 <= zero <= 3


def test_pipeline_split_with_the_ends_as_layers():
    """Megatron-LM's --account-for-embedding/loss-in-pipeline-split: BLOOM's 70 layers and its two ends make 72
    slots, 6 a stage over 12; the first and the last stage hold 5 layers beside their end. Without, 70 over 12 gives
    the first ten stages 6 layers and the last two 5."""
    from ffncalc.analysis.parallel import stages

    ends = stages(70, 12, True)
    assert ends[0] == (0, 5) and ends[-1] == (65, 70) and all(b - a == 6 for a, b in ends[1:-1])
    assert [b - a for a, b in stages(70, 12)] == [6] * 10 + [5] * 2
    assert stages(2, 3, True) == [(0, 1), (1, 2), (2, 2)]  # 4 slots: the last stage only the head


def test_ends_as_layers_refuses_a_stage_without_a_layer(cli):
    """Llama 3 8B's 32 layers and two ends over 32 stages: the last stage would hold the head alone."""
    code, out, err = cli("train", "llama3-8b", "--tokens", "1B", "--pp", "32", "--ends-as-layers")
    assert code == 2 and "--ends-as-layers" in err and len(err.strip().splitlines()) == 1


def test_deepspeed_bf16_optimizer_as_bloom_ran_it():
    """BLOOM 176B on TP 4 × PP 12 × DP 8 (h 14,336, 250,880 padded vocabulary, 112 heads, sequences of 2,048, micro-
    batch 2, full recomputation), DeepSpeed's BF16_Optimizer: bf16 weights and gradients and a whole fp32 gradient
    buffer (8 bytes a parameter), the fp32 master and moments over 8 replicas (12/8). Stage 0 holds the embedding
    (its LayerNorm too) and 5 layers, a quarter of each; 12 micro-batches in flight each keep the 5 layers' inputs
    and the stage's output, whole on each tp rank (no sequence parallelism); at the peak one layer is rebuilt with
    its scores: Korthikanti et al. 2022's sbh(10 + 24/t + 5as/(ht)) bytes."""
    h, v, s, b, a, t = 14_336, 250_880, 2048, 2, 112, 4
    layer = 12 * h * h + 13 * h  # the tr11 README's one layer: 12h² + 13h
    stage0 = (v * h + 2 * h + 5 * layer) // t
    step = Step(seq_len=s, micro_batch=b, recompute="full", kernel="eager", framework="megatron-deepspeed")
    layout = Layout(dp=8, tp=t, pp=12, zero=1, sequence_parallel=False, ends_as_layers=True)
    f = ids(memory.train_memory(spec("bloom-176b"), step, layout, micro_batches=128))
    assert f["pipeline_stage"] == 0 and f["params_per_device"] == stage0
    assert f["weight_bytes_per_device"] == 2 * stage0 and f["grad_bytes_per_device"] == (2 + 4) * stage0
    assert f["optimizer_bytes_per_device"] == 12 * stage0 // 8
    hidden = 2 * s * b * h
    assert f["activation_bytes_per_device"] == 12 * (5 + 1) * hidden
    assert f["recompute_bytes_per_device"] == s * b * h * (10 + 24 // t + 5 * a * s // (h * t))


WHOLE = Path(__file__).resolve().parents[1] / "hf_whole" / "configs"


@pytest.mark.parametrize("images", [None, 1, 2])
def test_llama32_vision_cross_attention_layers_keep_their_images_rows(images):
    """Llama 3.2 Vision (MllamaConfig's defaults: 40 layers of 4,096, 32 heads of 128, 8 KV heads, SwiGLU 14,336; 8 of
    them cross-attention layers), 4,096 tokens, flash attention. A self-attention layer keeps what a Llama 3 8B layer
    keeps (``one_layer``). A cross-attention layer: its SwiGLU (x, gate, up, act, product), two norm inputs, a 1-byte
    mask of d for each sublayer; with images, a text token's q input, q's output with an fp32 inverse RMS a head, Q after
    q_norm, the heads' output, o's and the MLP's outputs (the gates' products keep them) and 4 bytes of log-sum-exp a
    head; each of an image's 4 × 1,025 rows K and V of 8 heads of 128 and k's output with an fp32 statistic a head, and,
    once a sequence, the row itself (4,096 features, the projector's). Without images the layer runs its MLP alone, its
    output kept by its gate."""
    import ffncalc

    t, rows = 4096, 4 * 1025 * (images or 0)
    mlp = 2 * (D + 4 * FFN) + D + D + 2 * 2 * D  # the SwiGLU and its mask, the attention slot's mask, two norm inputs
    if images:
        cross = t * (mlp + 2 * (3 * D + 3 * D + 2 * HEADS) + 4 * HEADS) + 2 * rows * (KV + 2 * 8 + 2 * KV)
    else:
        cross = t * (mlp + 2 * D)
    expected = 32 * one_layer(t) + 8 * cross + 2 * rows * D
    plan = ffncalc.train(str(WHOLE / "mllama.json"), tokens="1B", seq_len=t, hardware="h100-sxm", gpus=8, images=images)
    assert plan.figures["activation_bytes_per_device"].value == expected


def test_llama32_vision_cross_attention_layer_under_tensor_parallelism():
    """One cross-attention layer of Llama 3.2 Vision with one image, 2-way tensor parallelism without sequence
    parallelism: each sublayer's input and output stay whole on both devices (the two norm inputs, the MLP's input
    and mask, and the cross-attention's q input, o output and MLP output), the rest and every image row's K and V split
    by heads; the image's rows themselves (the projector's output, which k and v read) whole, once a sequence."""
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model
    from ffncalc.sources import hf

    _, model = hf.load(WHOLE / "mllama.json")
    model = with_inputs(Model("mllama", model), images=1).stack
    layer = next(layer for layer in model.layers if layer.mark("cross_attention"))
    t, rows = 4096, 4 * 1025
    per_token = 2 * (D + 4 * FFN) + D + D + 2 * 2 * D + 2 * (3 * D + 3 * D + 2 * HEADS) + 4 * HEADS
    whole = 2 * 2 * D + (2 * D + D) + 2 * 3 * D
    sequence = 2 * rows * (KV + 2 * 8 + 2 * KV)
    step, layout = Step(seq_len=t), Layout(tp=2, sequence_parallel=False)
    assert memory.activation_bytes(model.with_layers([layer]), step, layout) == t * whole + (t * (per_token - whole) + sequence) // 2
    assert memory.stack_bytes(model, step, layout) == 2 * rows * D
