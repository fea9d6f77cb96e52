"""The fastest layout of a device count (train --fastest) and the zero-bubble schedules (--schedule zb-h1, zb-h2),
each against a hand derivation: the passes' FLOPs, the bubbles of each schedule, and every other layout of the
same devices planned one by one on the plain path."""

import itertools
import json

import pytest

from ffncalc.analysis import schedules
from ffncalc.analysis.plan import Step
from ffncalc.api import commands
from ffncalc.errors import InputError
from ffncalc.sources import presets

# GPT-2 XL (Radford et al. 2019; the preset): d 1600, 48 layers, 25 heads, vocabulary 50,257 tied, 1,557,611,200
# parameters (transformers' GPT2LMHeadModel, tied head counted once)
D, LAYERS, VOCAB, PARAMS = 1600, 48, 50_257, 1_557_611_200
SEQ = 1023  # odd: no context parallelism (2·cp chunks); 25 heads: no tensor parallelism
FW = 2 * (LAYERS * 12 * D * D + VOCAB * D)  # a token's matmuls with a weight: q, k, v, o, 4d up, 4d down; the head
FA = LAYERS * 2 * 2 * D * (SEQ + 1) // 2  # QKᵀ and AV, causal: (s + 1)/2 keys a query on average
H4090 = 165.2e12  # RTX 4090 bf16 dense peak (hardware.yaml)
SMALL = {"tokens": "1B", "hardware": "rtx4090", "gpus": 4, "seq_len": SEQ, "global_batch": 3, "kernel_mfu": 0.5}


def test_passes_split_the_backward_by_hand():
    """Qi et al. 2023 Table 1: F = Fw + Fa, B (the input's gradient) = Fw + 2·Fa, W (the weights') = Fw; B + W = 2F."""
    spec = presets.load("gpt2-xl")[1]
    assert schedules.pass_flops(spec, Step(seq_len=SEQ)) == (FW + FA, FW + 2 * FA, FW)
    # full recomputation reruns the layers' forward (not the head's: 2·V·d) before B
    layers = FW - 2 * VOCAB * D + FA
    assert schedules.pass_flops(spec, Step(seq_len=SEQ, recompute="full")) == (FW + FA, FW + 2 * FA + layers, FW)


def test_zb_h1_bubble_is_a_third_of_1f1b_with_equal_passes():
    """Qi et al. 2023 Table 2: idle (p − 1)(T_F + T_B − T_W) against 1F1B's (p − 1)(T_F + T_B + T_W); with the three
    equal, (p − 1)T against 3(p − 1)T. p = 4, m = 8, T = 1: work 8 × 3 = 24, ZB-H1 idle 3, 1F1B idle 9."""
    zb, m = schedules.bubble_fraction(4, 8, 1, 1, 1, "zb-h1", (1, 1, 1))
    one, _ = schedules.bubble_fraction(4, 8, 1, 1)
    assert m == 8 and zb == 3 / (24 + 3) and one == 9 / (24 + 9) == 3 / (8 + 3)
    # idle over work: a third
    assert zb / (1 - zb) == pytest.approx(one / (1 - one) / 3)
    # with W the larger share, as a model without attention has it, more of the bubble is filled: (p−1)(1 + 1 − 1)
    assert schedules.bubble_fraction(2, 4, 1, 1, 1, "zb-h1", (2, 3, 2))[0] == (2 + 3 - 2) / (4 * 7 + 3)


def test_zero_bubble_schedules_by_hand():
    """GPT-2 XL over 4 stages, 8 micro-batches of one sequence. 1F1B idles 3/(8 + 3). ZB-H1 keeps 1F1B's memory (Qi et
    al. Table 2: p·M_B) and idles 3(F + B − W) = 3(Fw + 3Fa) beside the work 8(F + B + W) = 24(Fw + Fa); ZB-H2
    idles 3(F + B − 2W) = 9Fa and keeps 2(p − s) − 1 micro-batches on stage s: 7 on the first, (2p − 1)·M_B."""
    base = {**SMALL, "pp": 4, "global_batch": 8}
    one = commands.train("gpt2-xl", **base).answer
    zb1 = commands.train("gpt2-xl", schedule="zb-h1", **base).answer
    zb2 = commands.train("gpt2-xl", schedule="zb-h2", **base).answer
    for figure in ("activation_bytes_per_device", "in_flight_micro_batches", "peak_bytes_per_device"):
        assert zb1[figure].value == one[figure].value
    assert one["in_flight_micro_batches"].value == 4 and zb2["in_flight_micro_batches"].value == 7
    assert zb2["activation_bytes_per_device"].value * 4 == one["activation_bytes_per_device"].value * 7
    assert one["pipeline_bubble"].value == 3 / 11
    assert zb1["pipeline_bubble"].value == pytest.approx(3 * (FW + 3 * FA) / (24 * (FW + FA) + 3 * (FW + 3 * FA)))
    assert zb2["pipeline_bubble"].value == pytest.approx(9 * FA / (24 * (FW + FA) + 9 * FA))
    ideal = 6 * PARAMS * 8 * SEQ / (4 * H4090 * 0.5)  # 6N a token (the 6n convention), no bubble
    for plan in (one, zb1, zb2):
        assert plan["step_seconds"].value == pytest.approx(ideal / (1 - plan["pipeline_bubble"].value))
    assert zb2["step_seconds"].value < zb1["step_seconds"].value < one["step_seconds"].value


def test_zero_bubble_schedules_need_a_micro_batch_a_stage():
    """Their warm-up runs p forwards: with 3 micro-batches over 4 stages Table 2's bubble does not hold."""
    with pytest.raises(InputError, match="--schedule zb-h1: 3 micro-batches a pipeline, fewer than the 4 stages"):
        commands.train("gpt2-xl", pp=4, schedule="zb-h1", **SMALL)


def test_the_fastest_layout_beats_every_other_that_fits():
    """GPT-2 XL on 4 RTX 4090 (24 GiB), 1,023 tokens, 3 sequences a step: 25 heads allow no tp, the odd sequence no cp,
    and dp must divide both 4 and the 3 sequences, so dp = 1 and pp = 4 (its 28 GB of states fit no fewer stages),
    m = 3 micro-batches. The bubbles by hand: 1F1B 3/(3 + 3) = 1/2; interleaved over v chunks 3/(3v + 3): 1/3, 1/5,
    1/9 for v = 2, 4, 8 (16 chunks of 4 stages would outnumber the 48 layers); ZB-H1 3(Fw + 3Fa)/(9(Fw + Fa) +
    3(Fw + 3Fa)) would be 0.268, but the zero-bubble schedules need a micro-batch a stage (3 < 4). Interleaving over 8
    chunks is the fastest (the pipeline's hand-offs are not timed):
    6N × 3 × 1,023 / (4 × 165.2 TFLOP/s × 0.5) / (1 − 1/9). Every layout of the 4 devices (chunks a power of two),
    planned on the plain path (no search), either does not fit or is no faster."""
    best = commands.train("gpt2-xl", fastest=True, **SMALL).answer
    inputs = best.inputs
    assert (inputs["tp"], inputs["pp"], inputs["cp"], inputs["dp"], inputs["virtual_stages"]) == (1, 4, 1, 1, 8)
    assert (inputs["schedule"], inputs["recompute"], inputs["zero"]) == ("1f1b", "none", 0)
    assert best["pipeline_bubble"].value == 3 / 27
    ideal = 6 * PARAMS * 3 * SEQ / (4 * H4090 * 0.5)
    assert best["step_seconds"].value == pytest.approx(ideal / (1 - 1 / 9))
    assert best.notes[1].startswith("the fastest layout of 4 devices that fits: --tp 1 --pp 4 --cp 1 --dp 1 --zero 0")
    assert "Runners-up: --tp 1 --pp 4 --cp 1 --dp 1 --zero 0 --virtual-stages 4 --recompute none" in best.notes[1]
    assert "--schedule zb-h" not in best.notes[1]
    fitting = []
    shapes = itertools.product((1, 2, 4), (1, 2, 4), (1, 2, 4), range(4), ("none", "selective", "full"))
    pipes = [("1f1b", 1), ("1f1b", 2), ("1f1b", 4), ("1f1b", 8), ("1f1b", 16), ("zb-h1", 1), ("zb-h2", 1)]
    for (tp, pp, cp, zero, recompute), (schedule, v) in itertools.product(shapes, pipes):
        if tp * pp * cp > 4:
            continue
        try:
            plan = commands.train(
                "gpt2-xl", tp=tp, pp=pp, cp=cp, zero=zero, recompute=recompute, schedule=schedule, virtual_stages=v, **SMALL
            ).answer
        except InputError:
            continue
        if plan["free_bytes_per_device"].value >= 0:
            fitting.append(plan)
            assert plan["step_seconds"].value >= best["step_seconds"].value
    # only the four-stage pipelines fit: 1F1B, 2, 4 and 8 chunks, each at 4 ZeRO stages and 3 recomputations
    assert {(p.inputs["pp"], p.inputs["virtual_stages"], p.inputs["schedule"]) for p in fitting} == {
        (4, 1, "1f1b"),
        (4, 2, "1f1b"),
        (4, 4, "1f1b"),
        (4, 8, "1f1b"),
    }
    assert len(fitting) == 4 * 4 * 3


def test_fastest_without_a_bubble_model_prefers_the_least_model_parallelism():
    """Llama 3 8B on 8 A100 80GB, 2 sequences a step: dp at most 2, so 4 devices a copy. Without --kernel-mfu the
    rate is end to end (the bubble inside it) and every layout without recomputation is as fast: 6N × 2 × 8,192 /
    (8 × 312 TFLOP/s × 0.4); the least model parallelism (tp × pp × cp = 4) and the lowest ZeRO stage come first."""
    plan = commands.train("llama3-8b", tokens="1B", hardware="a100-80gb", gpus=8, seq_len=8192, global_batch=2, fastest=True)
    answer = plan.answer
    assert answer.inputs["tp"] * answer.inputs["pp"] * answer.inputs["cp"] == 4 and answer.inputs["dp"] == 2
    assert answer.inputs["recompute"] == "none"
    assert answer["step_seconds"].value == pytest.approx(6 * 8_030_261_248 * 2 * 8192 / (8 * 312e12 * 0.4))
    assert "only recomputation tells them apart" in answer.notes[1]


@pytest.mark.parametrize(
    "kwargs,expected",
    [
        ({"gpus": 4, "hardware": "rtx4090", "tp": 2}, "--fastest chooses --tp: leave it out"),
        ({"gpus": 4, "hardware": "rtx4090", "pp": 2, "recompute": "full"}, "--fastest chooses --pp, --recompute"),
        ({"hardware": "rtx4090"}, "--fastest searches the layout of a device count: give --gpus"),
        ({"gpus": 4}, "--fastest: name a device with --hardware"),
    ],
)
def test_fastest_refuses(kwargs, expected):
    with pytest.raises(InputError, match=expected):
        commands.train("gpt2-xl", tokens="1B", fastest=True, **kwargs)


def test_zb_h1_refuses_interleaving(cli):
    code, out, err = cli("train", "gpt2-xl", "--tokens", "1B", "--pp", "4", "--virtual-stages", "2", "--schedule", "zb-h1")
    assert code == 2 and out == "" and "--schedule zb-h1 runs one chunk a device" in err and err.count("\n") == 1


H100 = 989.4e12  # H100 SXM bf16 dense peak; NVLink 450 GB/s a direction, NCCL's latency 6.6 µs + 0.6 µs a hop
LLAMA8 = 8_030_261_248


def test_tensor_parallel_collectives_by_hand():
    """Llama 3 8B over tp 2, one micro-batch of 8,192 tokens at a time, 2 sequences a step: each of 32 layers ends its
    two sublayers in an all-reduce (with sequence parallelism, a gather and a scatter of the same volume), forward and
    backward: 128 calls of 8,192 × 4,096 × 2 bytes a micro-batch, each device moving 2(2 − 1)/2 of them at 450 GB/s,
    7.8 µs a call (6.6 + 2 × 0.6). Compute: 6N × 16,384 / (2 × 989.4 TFLOP/s × 0.5)."""
    plan = commands.train("llama3-8b", tokens="1B", hardware="h100-sxm", tp=2, seq_len=8192, global_batch=2, kernel_mfu=0.5).answer
    per_micro_batch = 128 * 8192 * 4096 * 2 / 450e9 + 128 * 7.8e-6
    compute = 6 * LLAMA8 * 2 * 8192 / (2 * H100 * 0.5)
    assert plan["step_seconds"].value == pytest.approx(compute + 2 * per_micro_batch)
    assert plan["comm_share"].value == pytest.approx(2 * per_micro_batch / (compute + 2 * per_micro_batch))
    # an end-to-end MFU holds the communication: none added
    end_to_end = commands.train("llama3-8b", tokens="1B", hardware="h100-sxm", tp=2, seq_len=8192, global_batch=2, mfu=0.5)
    assert end_to_end.answer["step_seconds"].value == pytest.approx(compute)


def test_context_parallel_ring_shows_only_beyond_its_attention():
    """Llama 3 8B over cp 2: each device holds 512 of 1,024 tokens and, a layer, sends its K and V (8 heads × 128 × 2
    × 512 tokens × 2 bytes = 2 MiB) at 450 GB/s and 7.2 µs a hand-off, beside attending one block: the layer's causal
    QKᵀ and AV, 4 × 4,096 × (1,024 + 1)/2 FLOPs a token, over 1,024 / 2² tokens at 494.7 TFLOP/s. The send is the
    longer: 32 layers × (send − block) × 3 (forward; backward sends twice the bytes beside twice the work). At 8,192
    tokens the block's attention is the longer and nothing shows."""
    plan = commands.train("llama3-8b", tokens="1B", hardware="h100-sxm", cp=2, seq_len=1024, global_batch=1, kernel_mfu=0.5)
    send = 8 * 128 * 2 * 512 * 2 / 450e9 + 7.2e-6
    block = 4 * 4096 * 1025 / 2 * 1024 / 4 / (H100 * 0.5)
    assert send > block
    compute = 6 * LLAMA8 * 1024 / (2 * H100 * 0.5)
    assert plan.answer["step_seconds"].value == pytest.approx(compute + 32 * (send - block) * 3)
    long = commands.train("llama3-8b", tokens="1B", hardware="h100-sxm", cp=2, seq_len=8192, global_batch=1, kernel_mfu=0.5)
    assert long.answer["step_seconds"].value == pytest.approx(6 * LLAMA8 * 8192 / (2 * H100 * 0.5))
    assert "comm_share" not in {f.id for f in long.answer.figures}


def test_fastest_on_the_command_line(cli):
    code, out, err = cli(
        "train",
        "gpt2-xl",
        "--tokens",
        "1B",
        "--hardware",
        "rtx4090",
        "--gpus",
        "4",
        "--seq-len",
        "1023",
        "--global-batch",
        "3",
        "--kernel-mfu",
        "0.5",
        "--fastest",
        "-f",
        "json",
    )
    assert code == 0 and err == ""
    answer = json.loads(out)
    assert answer["inputs"]["fastest"] is True and answer["inputs"]["virtual_stages"] == 8
    assert answer["notes"][1].startswith("the fastest layout of 4 devices that fits")
    code, out, err = cli("train", "gpt2-xl", "--tokens", "1B", "--gpus", "4", "--fastest", "--lora", "16")
    assert code == 2 and out == "" and "--fastest: --lora plans a step over data parallelism" in err


def test_expert_parallel_all_to_alls_by_hand():
    """Mixtral 8x7B over ep 2 inside dp 2, a sequence of 4,096 tokens a device: each of 32 mixture layers dispatches
    the device's tokens to their top 2 experts and combines them back, forward and backward — 4 all-to-alls of
    4,096 × 4,096 × 2 bytes × 2 experts, half of it leaving the device at 450 GB/s, 7.2 µs a call (a hand-off's).
    Compute: 6 × 12,879,925,248 active parameters × 8,192 tokens / (2 × 989.4 TFLOP/s × 0.5)."""
    plan = commands.train(
        "mixtral-8x7b", tokens="1B", hardware="h100-sxm", gpus=2, ep=2, seq_len=4096, global_batch=2, kernel_mfu=0.5
    ).answer
    calls = 32 * 4
    comm = (2 - 1) / 2 * calls * 4096 * 4096 * 2 * 2 / 450e9 + calls * 7.2e-6
    compute = 6 * 12_879_925_248 * 2 * 4096 / (2 * H100 * 0.5)
    assert plan["step_seconds"].value == pytest.approx(compute + comm)


def test_the_fastest_layout_with_collectives_beats_every_other_that_fits():
    """Llama 3 8B on 4 H100, 8 sequences of 8,192 a step, 0.5 of the peak while busy: a whole sequence's activations
    do not fit one device without recomputation, and tp's all-reduces cost time where cp's ring hides behind each
    block's attention (at 4,096 tokens a device a block's 136 µs of attention against a 44 µs send), so the answer
    is cp 2 × dp 2 with ZeRO 3 and no recomputation, 6N × 8 × 8,192 / (4 × 989.4 TFLOP/s × 0.5) and nothing added.
    Every layout of the 4 devices planned on the plain path is no faster."""
    kw = {"tokens": "1B", "hardware": "h100-sxm", "gpus": 4, "seq_len": 8192, "global_batch": 8, "kernel_mfu": 0.5}
    best = commands.train("llama3-8b", fastest=True, **kw).answer
    inputs = best.inputs
    assert (inputs["tp"], inputs["pp"], inputs["cp"], inputs["dp"], inputs["zero"], inputs["recompute"]) == (1, 1, 2, 2, 3, "none")
    assert best["step_seconds"].value == pytest.approx(6 * LLAMA8 * 8 * 8192 / (4 * H100 * 0.5))
    shapes = itertools.product((1, 2, 4), (1, 2, 4), (1, 2, 4), range(4), ("none", "selective", "full"))
    pipes = [("1f1b", 1), ("1f1b", 2), ("1f1b", 4), ("1f1b", 8), ("1f1b", 16), ("zb-h1", 1), ("zb-h2", 1)]
    fitting = 0
    for (tp, pp, cp, zero, recompute), (schedule, v) in itertools.product(shapes, pipes):
        if tp * pp * cp > 4 or (pp == 1 and (v > 1 or schedule != "1f1b")):
            continue
        try:
            plan = commands.train(
                "llama3-8b", tp=tp, pp=pp, cp=cp, zero=zero, recompute=recompute, schedule=schedule, virtual_stages=v, **kw
            ).answer
        except InputError:
            continue
        if plan["free_bytes_per_device"].value >= 0:
            fitting += 1
            assert plan["step_seconds"].value >= best["step_seconds"].value * (1 - 1e-12)
            if tp > 1:  # tensor parallelism pays its all-reduces
                assert plan["step_seconds"].value > best["step_seconds"].value
    assert fitting > 50
