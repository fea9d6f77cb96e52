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
    The parts' shares of each layer (``Part.layer_kept``) join it: per token, and what a sequence keeps whatever its
    length (a cross-attention layer's K and V of every image row, split by heads over t).
    """
    # the positions the layers run over: a prompt's before the sequence, padding to whole chunks (the parts')
    seq_len, batch, recompute, kernel = spec.layer_positions(step.seq_len), step.micro_batch, step.recompute, step.kernel
    tp, sequence_parallel = layout.tp, layout.sequence_parallel
    sb, d = seq_len * batch, spec.d_model
    split = tp if sequence_parallel else 1
    if recompute == "full":
        return spec.n_layers * (2 * sb * d // split)
    total = 0
    flash = kernel == "flash"
    dropped = recompute == "selective" and not flash  # selective recomputation of the eager scores
    scored = "recomputed" if dropped else kernel
    for run in spec.runs():
        blocks = [block for _, block in run.layer.blocks()]
        per_token = sum(2 * b.kept_elements(spec) + DROPOUT_MASK_BYTES * d for b in blocks)
        kept = [p.layer_kept(spec, run.layer, scored) for p in spec.parts]  # the parts' shares of the layer
        per_token += sum(2 * k.elements + k.bytes for k in kept)
        # what a part keeps a sequence (split by heads) and a forward (whole) whatever the length: K and V of images' rows
        sequences, forward = batch * sum(k.sequence for k in kept), sum(k.forward for k in kept)
        uses = run.layer.norm_uses(spec.norm)
        per_token += 2 * sum(u != "none" for u in uses) * d
        per_token += 2 * uses.count("gated") * (spec.norm.gate_rank + d)  # a gate's hidden and its logits
        scores = 0 if dropped else batch * sum(b.score_bytes(spec, seq_len, flash) for b in blocks)
        whole = 0
        if not sequence_parallel and tp > 1:  # the sublayers' inputs, dropout masks and norm inputs, replicated
            whole = sum(2 * d + DROPOUT_MASK_BYTES * d for b in blocks if b.kind != "none")
            whole += 2 * sum(u != "none" for u in uses) * d + 2 * uses.count("gated") * (spec.norm.gate_rank + d)
            whole += 2 * sum(k.whole for k in kept)
        total += run.n * (sb * whole + (sb * (per_token - whole) + scores + sequences) // tp + forward)
    return total


def stack_bytes(spec: Model, step: Step, layout: Layout = Layout()) -> int:
    """Activations of the stacks the parts run beside the layers (an encoder's over its source, ``Part.stacks``), for a
    micro-batch, as ``activation_bytes`` counts the model's own layers over each stack's positions; and what each of
    their positions keeps beside them (the encoder's output and each decoder layer's cross-attention K and V), 16-bit,
    the heads' share ÷ tp. Full recomputation keeps the stack's layers' inputs and its output, and rebuilds the rest."""
    total = 0
    for part in spec.parts:
        for inner, positions, split, whole in part.stacks(spec):
            total += activation_bytes(inner, replace(step, seq_len=positions), layout)
            rows = positions * step.micro_batch
            total += 2 * rows * whole + (0 if step.recompute == "full" else 2 * rows * split // layout.tp)
    return total


ZERO_STAGES = (0, 1, 2, 3)  # Rajbhandari et al. 2020 §5: shard optimizer states (1), + gradients (2), + weights (3)


def _shard(n: int, k: int) -> int:
    return -(-n // k)


def stage_params(spec: Model, pp: int, mtp: bool = False, ends: bool = False) -> list[tuple[int, int]]:
    """(dense, routed-expert) parameters of each pipeline stage: the layers of its span, the embedding on the
    first stage, the final norm and head on the last (and with tied embeddings and pp > 1 a copy of the
    embedding there too, as Megatron-LM keeps it); the multi-token prediction modules on the last. ``ends``: the
    embedding and the head take a layer's slot in the split (parallel.stages)."""
    from .parallel import stages

    t = tally(spec, mtp=mtp)
    spans = stages(spec.n_layers, pp, ends)
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


def per_op_bytes(spec: Model, step: Step, layout: Layout = Layout()) -> int:
    """Activations kept under torchtitan's per-op selective checkpointing (torchtitan/parallelisms/
    parallelize_llama.py, _apply_ac_to_transformer_block with selective_ac_option "op"): in each layer its bf16
    input, the output of every other matmul (the first, third, … in the order the layer runs them: every term of
    role weight, a routed expert's top-k outputs included) and each attention's output with its fp32 log-sum-exp
    (the flash kernel's, MUST_SAVE); the rest is recomputed. All split over tp (sequence parallel)."""
    tokens = spec.layer_positions(step.seq_len or spec.context_length) * step.micro_batch
    total = 0
    for run in spec.runs():
        rows = [r for r in tally(spec.with_layers([run.layer])).rows if r.layers is not None]
        outputs = [r.active // r.shape[-1] for r in rows if r.role == "weight" and r.shape]
        heads = [(r.shape[0], r.shape[0] * r.shape[-1]) for r in rows if r.role == "core" and r.name.endswith("values")]
        per_token = 2 * (spec.d_model + sum(outputs[::2]) + sum(w for _, w in heads)) + 4 * sum(h for h, _ in heads)
        total += run.n * (tokens * per_token // layout.tp)
    return total


def layer_params(spec: Model, mtp: bool = False) -> tuple[list[int], list[int]]:
    """(dense, routed-expert) parameters of each layer of the stack."""
    dense, expert = [0] * spec.n_layers, [0] * spec.n_layers
    for r in tally(spec, mtp=mtp).rows:
        if r.layers is not None and r.part != "mtp":
            a, b = r.layers
            for i in range(a, b):
                (expert if r.expert else dense)[i] += r.params // (b - a)
    return dense, expert


def largest_tensor(spec: Model) -> int:
    """The parameters of the model's largest single tensor (DeepSpeed's estimator's largest layer)."""
    return max((r.params // max(r.count, 1) for r in tally(spec).rows if r.params), default=0)


# What a device holds beside its tensors. The CUDA context with its kernels' modules (about 0.5–1 GiB on Hopper
# with CUDA 12's lazy loading), cuBLAS workspaces and NCCL's communicator buffers (NCCL_BUFFSIZE, 4 MiB a channel
# a peer) lie outside PyTorch's caching allocator: a round 2 GiB, stated, not measured.
CUDA_CONTEXT_BYTES = 2 * 2**30
# The caching allocator reserves more than the live tensors (blocks split and cached, fragmentation): the share of
# the tensors' peak that torchtitan's max_reserved memory shows beyond them, from the calibration runs of
# docs/guide/accuracy.md (analysis/accuracy/: CALIBRATION).
ALLOCATOR_SHARE = 0.13


def in_flight(pp: int, virtual: int, stage: int, micro_batches: int | None, schedule: str = "1f1b") -> tuple[int, int]:
    """(micro-batch chunks, chunks a micro-batch of the stage) stage ``stage`` keeps in flight: under 1F1B pp − s
    micro-batches (Narayanan et al. 2021 §2.2.1); interleaved over ``virtual`` chunks a device, Megatron-LM's
    warm-up (pp − s − 1)·2 + (v − 1)·pp chunks and one more (megatron/core/pipeline_parallel/schedules.py), which
    for the first stage is Korthikanti et al. 2022 §4.2.3's p·(1 + (p − 1)/(p·v)) micro-batches; never more than
    the step's micro-batches. ZB-H1 keeps 1F1B's (Qi et al. 2023 Table 2: p·M_B at the peak); ZB-H2 runs forwards
    until the first backward reaches the stage, 2(p − s) − 1 of them with T_F = T_B as its handcrafted schedule
    takes them (the first stage's 2p − 1: Table 2's (2p − 1)·M_B)."""
    if schedule == "zb-h2":
        return min(2 * (pp - stage) - 1, micro_batches or 2 * pp), 1
    m = micro_batches or pp
    if virtual == 1:
        return min(pp - stage, m), 1
    return min((pp - stage - 1) * 2 + (virtual - 1) * pp + 1, m * virtual), virtual


def train_memory(
    spec: Model, step: Step, layout: Layout = Layout(), device: Device = Device(), micro_batches: int | None = None
) -> list[Figure]:
    """Per-device memory of a training step on its most loaded device (whichever pipeline stage needs the most):
    the framework's states as ZeRO shards them, the buffers of gathered weights and gradients, the activations of
    the micro-batches in flight, and, at the step's peak, the larger of the logits and loss or the working set of a
    layer recomputed; then the allocator's share and a fixed CUDA allowance (frameworks.py for each figure's
    source)."""
    from .frameworks import FRAMEWORKS, MOMENT_BYTES, loss_bytes
    from .parallel import stages

    fw = FRAMEWORKS[step.framework]
    seq = step.seq_len or spec.context_length
    dp, tp, pp, ep, cp = layout.dp or 1, layout.tp, layout.pp, layout.ep, layout.cp
    zero = fw.zero if layout.zero is None else layout.zero
    replicas, expert_replicas = dp * cp, dp * cp // ep
    spans, mtp = stages(spec.n_layers, pp, layout.ends_as_layers), trains_mtp(spec, step)
    per_layer = layer_params(spec, mtp)
    fp8 = fw.fp8_copy if step.precision == "fp8" else 0
    sub = replace(step, seq_len=seq // cp)
    layer_step = replace(sub, recompute="none")
    one_layer = [(r.first, r.stop, activation_bytes(spec.with_layers([r.layer]), layer_step, layout)) for r in spec.runs()]

    def held(pd: int, pe: int, nbytes: int, sharded_from: int) -> int:
        if sharded_from < 0:  # 16-bit gradients held whole, or in ZeRO 3 only in the gathered buffers
            return 0 if zero >= 3 else nbytes * (pd + pe)
        return _shard(pd * nbytes, replicas if zero >= sharded_from else 1) + _shard(
            pe * nbytes, expert_replicas if zero >= sharded_from else 1
        )

    def stage(s: int, dense: int, expert: int) -> dict[str, int]:
        a, b = spans[s]
        pd, pe = _shard(dense, tp), _shard(expert, tp * ep)
        out = {"params": pd + pe, "weights": held(pd, pe, fw.weights[0] + fp8, fw.weights[1])}
        out["grads"] = sum(held(pd, pe, n, f) for n, f in fw.grads)
        out["optimizer"] = held(pd, pe, fw.master[0], fw.master[1]) + held(pd, pe, MOMENT_BYTES[step.optimizer], 1)
        layer = max(_shard(per_layer[0][i], tp) + _shard(per_layer[1][i], tp * ep) for i in range(a, b))
        rest = pd + pe - sum(_shard(per_layer[0][i], tp) + _shard(per_layer[1][i], tp * ep) for i in range(a, b))
        buffers = 0
        if zero >= 3 and fw.gather == "modules":  # DeepSpeed: the largest module's 16-bit weights and gradients
            buffers = 4 * _shard(largest_tensor(spec), tp)
        elif zero >= 3 and pp > 1:  # FSDP2 under a pipeline: no resharding between micro-batches, gradients
            buffers = (2 + 4) * (pd + pe)  # accumulated unsharded in fp32 (torchtitan apply_fsdp; FSDPParam)
        elif zero >= 3:  # the rest of the model gathered throughout, a layer and the next prefetched, bf16, and
            buffers = 2 * rest + 2 * 2 * layer + (2 + 4) * layer  # a layer's gradients reduce-scattered in fp32
        out["buffers"] = buffers
        chunks, per_mb = in_flight(pp, layout.virtual_stages, s, micro_batches, layout.schedule)
        out["chunks"], out["per_mb"] = chunks, per_mb
        span = spec.with_layers(spec.layers[a:b])
        per_op = fw.per_op and step.recompute == "selective"
        acts = per_op_bytes(span, sub, layout) if per_op else activation_bytes(span, sub, layout)
        acts += stack_bytes(spec, sub, layout) if s == 0 else 0  # a part's own stacks: one stage, as pipelines are refused
        last = s == pp - 1
        tokens = step.micro_batch * (seq // cp)
        if fw.keeps_stage_outputs and not last:  # the stage's bf16 output, a micro-batch's, split only under SP
            acts += 2 * tokens * spec.d_model // (tp if layout.sequence_parallel else 1) * per_mb
        out["activations"] = acts * chunks // per_mb
        out["loss"] = loss_bytes(fw, step.loss, tokens, _shard(spec.vocab_size, tp), spec.head_width, tp > 1) if last else 0
        rebuilt = max(n for first, stop, n in one_layer if first < b and stop > a)
        out["recompute"] = rebuilt if step.recompute == "full" else 0
        persistent = sum(out[k] for k in ("weights", "grads", "optimizer", "buffers", "activations"))
        out["total"] = persistent + max(out["loss"], out["recompute"])
        return out

    by_stage = [stage(s, d, e) for s, (d, e) in enumerate(stage_params(spec, pp, mtp, layout.ends_as_layers))]
    worst = max(range(pp), key=lambda i: by_stage[i]["total"])
    st = by_stage[worst]
    tensors = st["total"]
    allocator = int(tensors * ALLOCATOR_SHARE)
    w_b, g_b = fw.weights[0] + fp8, sum(n for n, _ in fw.grads)
    o_b = fw.master[0] + MOMENT_BYTES[step.optimizer]
    zero_name = {0: "none", 1: "optimizer states", 2: "+ gradients", 3: "+ weights (FSDP)"}[zero]
    flight = st["chunks"] if st["per_mb"] == 1 else st["chunks"] / st["per_mb"]
    schedule = "1F1B" if layout.virtual_stages == 1 else f"interleaved 1F1B, {layout.virtual_stages} chunks a device"
    if layout.schedule == "zb-h1":  # ZB-H1 keeps 1F1B's micro-batches in flight: peak p·M_B (Qi et al. 2023, Table 2)
        schedule = "ZB-H1, as 1F1B (Qi et al. 2023 Table 2: peak memory p·M_B)"
    elif layout.schedule == "zb-h2":
        schedule = "ZB-H2, 2(p − s) − 1 on stage s (Qi et al. 2023 Table 2: peak memory (2p − 1)·M_B)"
    out = [
        Figure("devices", "devices (dp × tp × pp × cp)", dp * tp * pp * cp, "devices"),
        Figure("pipeline_stage", "most loaded pipeline stage", worst, "stage", f"layers {spans[worst][0]}–{spans[worst][1] - 1}"),
        Figure("params_per_device", "parameters per device", st["params"], "params"),
        Figure(
            "weight_bytes_per_device", "weights", st["weights"], "bytes", f"{fw.name}, {step.precision}: {w_b} B/param; {fw.source}"
        ),
        Figure("grad_bytes_per_device", "gradients", st["grads"], "bytes", f"{g_b} B/param"),
        Figure(
            "optimizer_bytes_per_device",
            f"{step.optimizer} states",
            st["optimizer"],
            "bytes",
            f"{o_b} B/param, fp32 master included; ZeRO {zero}: {zero_name} sharded (Rajbhandari et al. 2020)",
        ),
        Figure("state_bytes_per_device", "weights + gradients + optimizer", st["weights"] + st["grads"] + st["optimizer"], "bytes"),
        Figure(
            "sharding_buffer_bytes_per_device",
            "gathered weights, gradients (ZeRO 3)",
            st["buffers"],
            "bytes",
            "FSDP2: the rest gathered, a layer and the next in bf16, a layer's gradients in fp32 (under a pipeline the "
            "stage's weights and fp32 gradients unsharded); DeepSpeed: 4 B × its largest layer (its estimator)",
        ),
        Figure(
            "in_flight_micro_batches",
            "micro-batches in flight",
            flight,
            "micro-batches",
            f"{schedule}: Narayanan et al. 2021 §2.2.1; Korthikanti et al. 2022 §4.2.3",
        ),
        Figure(
            "activation_bytes_per_device",
            "activations",
            st["activations"],
            "bytes",
            f"Korthikanti et al. 2022 §4.1; micro-batch {step.micro_batch}, recompute {step.recompute}, {step.kernel} attention"
            + ("" if tp == 1 else ", sequence parallel" if layout.sequence_parallel else ", no sequence parallelism"),
        ),
        Figure(
            "loss_bytes_per_device",
            f"logits and loss ({step.loss})",
            st["loss"],
            "bytes",
            f"{fw.tp_loss_bytes if tp > 1 else fw.loss_bytes} B a logit, vocabulary split over tp; the head's input"
            if step.loss == "full"
            else "a chunk's fp32 logits and gradient (Liger-Kernel's fused linear cross-entropy)",
        ),
        Figure(
            "recompute_bytes_per_device",
            "a recomputed layer",
            st["recompute"],
            "bytes",
            "full recomputation rebuilds one layer's activations at a time",
        ),
        Figure(
            "bytes_per_device",
            "tensors at the peak",
            tensors,
            "bytes",
            "states, buffers, activations, and the larger of the loss or a recomputed layer",
        ),
        Figure(
            "allocator_bytes_per_device",
            f"caching allocator ({ALLOCATOR_SHARE:.0%} of the tensors)",
            allocator,
            "bytes",
            "calibrated on torchtitan's max_reserved memory (docs/guide/accuracy.md)",
        ),
        Figure(
            "reserved_bytes_per_device",
            "reserved by the allocator",
            tensors + allocator,
            "bytes",
            "what torch.cuda.max_memory_reserved reads",
        ),
        Figure(
            "cuda_context_bytes",
            "CUDA context and NCCL buffers",
            CUDA_CONTEXT_BYTES,
            "bytes",
            "a fixed allowance, stated (memory.CUDA_CONTEXT_BYTES)",
        ),
        Figure("peak_bytes_per_device", "peak per device", tensors + allocator + CUDA_CONTEXT_BYTES, "bytes"),
    ]
    hw, reserve = device.hw, device.reserve
    if hw is not None and hw.memory_bytes:
        kept = int(hw.memory_bytes * reserve)
        need = tensors + allocator + CUDA_CONTEXT_BYTES + kept
        if reserve:
            out.append(Figure("allowance_bytes", f"kept free ({reserve:.0%} of memory)", kept, "bytes"))
        out += [
            Figure("device_memory_bytes", f"{hw.key} memory", hw.memory_bytes, "bytes", hw.source),
            Figure("free_bytes_per_device", "left over (negative: short by)", hw.memory_bytes - need, "bytes"),
        ]
    return out
