"""Memory per device of a training step: the weights, gradients and optimizer states of each pipeline stage as the
layout shards them, and the activations a step keeps for backward, summed over every layer of the stack, each block
answering for what it keeps. Pure arithmetic; no torch.
"""

from __future__ import annotations

from dataclasses import replace

from ..model.stack import Model
from .count import tally
from .figures import Figure
from .plan import Device, Layout, Step

# Bytes per parameter for weights, gradients and optimizer state.
# Mixed-precision Adam (Rajbhandari et al. 2020, ZeRO §3.1): bf16 weights 2 + bf16 gradients 2 + fp32
# master weights, momentum and variance 12 = 16. 8-bit Adam (Dettmers et al. 2022): the two moments
# in 1 byte each: 2 + 2 + 4 + 2 = 10.
OPTIMIZERS = {"adam": (2, 2, 12), "adam8bit": (2, 2, 6)}

DROPOUT_MASK_BYTES = 1  # per element of each sublayer's output (Korthikanti et al. 2022 §4.1)


def trains_mtp(spec: Model, step: Step) -> bool:
    """Whether the step runs the multi-token prediction modules: as asked, else whenever the model has them."""
    return bool(spec.mtp_layers) if step.mtp is None else step.mtp


def activation_bytes(spec: Model, step: Step, layout: Layout = Layout()) -> int:
    """Activation memory of the whole stack in training for a micro-batch of ``step.seq_len`` tokens a sequence (the
    layers running over the positions the model's parts make of them), 16-bit, after Korthikanti et al. 2022 §4.1,
    summed over every layer.

    Their GPT layer keeps s·b·h·(34 + 5·a·s/h) bytes: attention 11·sbh + 5·a·s²·b, MLP 19·sbh, norms 4·sbh.
    Here each block states the 16-bit elements it keeps per token at its own widths (GQA, MLA, gated or
    MoE FFN), plus a 1-byte dropout mask of each sublayer's output, 2 bytes per norm input, and what the
    attention kernel keeps of the softmax: ``eager``, the 5 bytes per score that selective recomputation
    drops; ``flash`` (the default: every current training stack), no scores, only 4 bytes of log-sum-exp per
    query and head. Sequence and tensor parallelism divide a layer's total by t (their sbh·34/t); tensor
    parallelism alone leaves whole on every device what sequence parallelism splits: each sublayer's input
    (2 bytes of d a token: what its first matmul reads), its dropout mask and the norms' inputs (their
    sbh·(10 + 24/t)). Full recomputation keeps only each layer's input (2·sbh, ÷ t with sequence parallelism).
    """
    # the positions the layers run over: a prompt's before the sequence, padding to whole chunks (the parts')
    seq_len, batch, recompute, kernel = spec.layer_positions(step.seq_len), step.micro_batch, step.recompute, step.kernel
    tp, sequence_parallel = layout.tp, layout.sequence_parallel
    sb, d = seq_len * batch, spec.d_model
    split = tp if sequence_parallel else 1
    if recompute == "full":
        return spec.n_layers * (2 * sb * d // split)
    total = 0
    for run in spec.runs():
        blocks = [block for _, block in run.layer.blocks()]
        per_token = sum(2 * b.kept_elements(spec) + DROPOUT_MASK_BYTES * d for b in blocks)
        per_token += 2 * sum(p.kept_elements(spec) for p in spec.parts)  # what the parts in a layer keep
        uses = run.layer.norm_uses(spec.norm)
        per_token += 2 * sum(u != "none" for u in uses) * d
        per_token += 2 * uses.count("gated") * (spec.norm.gate_rank + d)  # a gate's hidden and its logits
        flash = kernel == "flash"
        dropped = recompute == "selective" and not flash  # selective recomputation of the eager scores
        scores = 0 if dropped else batch * sum(b.score_bytes(spec, seq_len, flash) for b in blocks)
        whole = 0
        if not sequence_parallel and tp > 1:  # the sublayers' inputs, dropout masks and norm inputs, replicated
            whole = sum(2 * d + DROPOUT_MASK_BYTES * d for b in blocks if b.kind != "none")
            whole += 2 * sum(u != "none" for u in uses) * d + 2 * uses.count("gated") * (spec.norm.gate_rank + d)
        total += run.n * (sb * whole + (sb * (per_token - whole) + scores) // tp)
    return total


# Bytes per parameter by training precision, before the optimizer's own states: "bf16" mixed precision keeps
# bf16 weights and bf16 gradients beside the optimizer's fp32 master copy (Micikevicius et al. 2018;
# Rajbhandari et al. 2020 §3.1); "fp8" (Transformer Engine, Micikevicius et al. 2022) keeps in addition an
# fp8 copy of each weight, cast once a step for the fp8 matmuls: 1 byte more.
PRECISIONS = {"bf16": (2, 2), "fp8": (3, 2)}
ZERO_STAGES = (0, 1, 2, 3)  # Rajbhandari et al. 2020 §5: shard optimizer states (1), + gradients (2), + weights (3)


def _shard(n: int, k: int) -> int:
    return -(-n // k)


def stage_params(spec: Model, pp: int, mtp: bool = False) -> list[tuple[int, int]]:
    """(dense, routed-expert) parameters of each pipeline stage: the layers of its span, the embedding on the
    first stage, the final norm and head on the last (and with tied embeddings and pp > 1 a copy of the
    embedding there too, as Megatron-LM keeps it); the multi-token prediction modules on the last."""
    from .parallel import stages

    t = tally(spec, mtp=mtp)
    spans = stages(spec.n_layers, pp)
    out = [[0, 0] for _ in spans]
    for r in t.rows:
        if r.part == "mtp":
            out[-1][r.expert] += r.params
        elif r.layers is None:
            out[0 if r.part == "embedding" else -1][r.expert] += r.params
        else:
            a, b = r.layers
            per_layer = r.params // (b - a)
            for s, (first, stop) in enumerate(spans):
                out[s][r.expert] += per_layer * max(0, min(b, stop) - max(a, first))
    if spec.tie_embeddings and pp > 1:
        out[-1][0] += spec.vocab_size * spec.head_width  # the tied table, as the head reads it
    return [(d, e) for d, e in out]


def train_memory(
    spec: Model, step: Step, layout: Layout = Layout(), device: Device = Device(), micro_batches: int | None = None
) -> list[Figure]:
    """Per-device memory of a run split data / tensor / pipeline / context / expert parallel, on its most
    loaded device (the first pipeline stage, or whichever stage holds the most parameters).

    Parameters: a stage's dense part split by tp, its routed experts by tp × ep. Bytes per parameter:
    weights and gradients by ``precision`` (PRECISIONS) and the optimizer's states (OPTIMIZERS, fp32 master
    copy included), ZeRO stage 1 sharding the optimizer states, 2 also the gradients, 3 (FSDP) also the
    weights over the data-parallel replicas (dp × cp; for experts dp × cp / ep). Activations: Korthikanti et
    al. 2022 summed over the first stage's real layers for one micro-batch of seq_len / cp tokens, times the
    micro-batches 1F1B keeps in flight. An allowance of ``reserve`` × the device's memory stands for the
    CUDA context, communication buffers and allocator fragmentation.
    """
    from .parallel import stages

    seq_len, micro_batch = step.seq_len or spec.context_length, step.micro_batch
    recompute, kernel, optimizer, precision = step.recompute, step.kernel, step.optimizer, step.precision
    hw, reserve = device.hw, device.reserve
    dp, tp, pp, ep, cp, zero = layout.dp or 1, layout.tp, layout.pp, layout.ep, layout.cp, layout.zero
    w_bytes, g_bytes = PRECISIONS[precision]
    o_bytes = OPTIMIZERS[optimizer][2]
    replicas, expert_replicas = dp * cp, dp * cp // ep
    spans = stages(spec.n_layers, pp)

    def states(dense: int, expert: int) -> list[int]:
        pd, pe = _shard(dense, tp), _shard(expert, tp * ep)
        out = [pd, pe]
        for k, sharded_from in ((w_bytes, 3), (g_bytes, 2), (o_bytes, 1)):
            out.append(
                _shard(pd * k, replicas if zero >= sharded_from else 1)
                + _shard(pe * k, expert_replicas if zero >= sharded_from else 1)
            )
        return out

    by_stage = [states(d, e) for d, e in stage_params(spec, pp, trains_mtp(spec, step))]
    # under 1F1B stage s holds pp − s micro-batches in flight (all of them when there are fewer)
    flights = [min(pp - s, micro_batches or pp) for s in range(pp)]
    acts = [
        activation_bytes(spec.with_layers(spec.layers[a:b]), replace(step, seq_len=seq_len // cp), layout) * flights[s]
        for s, (a, b) in enumerate(spans)
    ]
    totals = [sum(st[2:]) + a for st, a in zip(by_stage, acts)]
    worst = max(range(pp), key=lambda i: totals[i])
    pd, pe, wb, gb, ob = by_stage[worst]
    stage_acts, flight = acts[worst], flights[worst]
    zero_name = {0: "none", 1: "optimizer states", 2: "+ gradients", 3: "+ weights (FSDP)"}[zero]
    out = [
        Figure("devices", "devices (dp × tp × pp × cp)", dp * tp * pp * cp, "devices"),
        Figure("pipeline_stage", "most loaded pipeline stage", worst, "stage", f"layers {spans[worst][0]}–{spans[worst][1] - 1}"),
        Figure("params_per_device", "parameters per device", pd + pe, "params"),
        Figure("weight_bytes_per_device", "weights", wb, "bytes", f"{precision}: {w_bytes} B/param"),
        Figure("grad_bytes_per_device", "gradients", gb, "bytes", f"{g_bytes} B/param"),
        Figure(
            "optimizer_bytes_per_device",
            f"{optimizer} states",
            ob,
            "bytes",
            f"{o_bytes} B/param, fp32 master included; ZeRO {zero}: {zero_name} sharded (Rajbhandari et al. 2020)",
        ),
        Figure("state_bytes_per_device", "weights + gradients + optimizer", wb + gb + ob, "bytes"),
        Figure("in_flight_micro_batches", "micro-batches in flight (1F1B)", flight, "micro-batches", "Narayanan et al. 2021 §2.2.1"),
        Figure(
            "activation_bytes_per_device",
            "activations",
            stage_acts,
            "bytes",
            f"Korthikanti et al. 2022 §4.1; micro-batch {micro_batch}, recompute {recompute}, {kernel} attention"
            + ("" if tp == 1 else ", sequence parallel" if layout.sequence_parallel else ", no sequence parallelism"),
        ),
        Figure("bytes_per_device", "total per device (before allowance)", wb + gb + ob + stage_acts, "bytes"),
    ]
    if hw is not None and hw.memory_bytes:
        allowance = int(hw.memory_bytes * reserve)
        need = wb + gb + ob + stage_acts + allowance
        out += [
            Figure("allowance_bytes", f"framework allowance ({reserve:.0%} of memory)", allowance, "bytes"),
            Figure("device_memory_bytes", f"{hw.key} memory", hw.memory_bytes, "bytes", hw.source),
            Figure("free_bytes_per_device", "left over (negative: short by)", hw.memory_bytes - need, "bytes"),
        ]
    return out
