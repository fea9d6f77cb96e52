"""Pipeline schedules and the step time they make: the bubble of 1F1B (interleaved) and of the zero-bubble schedules,
the forward, input-gradient and weight-gradient work of a token they need, and the tensor-, context- and
expert-parallel collectives of a step that compute does not hide. Pure arithmetic; no torch.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError
from ..model.stack import Model
from .count import tally
from .memory import trains_mtp
from .plan import Device, Layout, Step

# Pipeline schedules. 1F1B (Narayanan et al. 2021 §2.2.1; interleaved over --virtual-stages, §2.2.2), and Qi et al.
# 2023's handcrafted zero-bubble schedules ("Zero Bubble Pipeline Parallelism", arXiv:2401.10241, §2.1–2.2 and Table
# 2), the backward split into B (the input's gradient) and W (the weights'): ZB-H1 defers W passes to fill the tail
# with the micro-batches in flight of 1F1B; ZB-H2 also runs more forwards in the warm-up, (2p − 1)·M_B at the peak.
SCHEDULES = ("1f1b", "zb-h1", "zb-h2")
# Table 2's idle time (p − 1)(T_F + T_B − k·T_W): k = 1 for ZB-H1, 2 for ZB-H2 (1F1B: (p − 1)(T_F + T_B + T_W))
ZB_FILLED = {"zb-h1": 1, "zb-h2": 2}


def pass_flops(spec: Model, step: Step) -> tuple[int, int, int]:
    """(F, B, W): a token's forward, input-gradient and weight-gradient FLOPs (Qi et al. 2023 Table 1: per layer
    F = sbh(24h + 4s), B = sbh(24h + 8s), W = sbh·24h). Every matmul with a weight costs its forward again in B (the
    input's gradient) and in W (the weight's); a product of two activations (attention's cores) costs twice its
    forward in B and nothing in W; so B + W = 2F, the backward of ``Tally.train_flops``. Recomputation reruns
    forward work before B, so it is B's too. Counted as flash kernels run causal attention (the "causal" convention)."""
    t = tally(spec, seq_len=step.seq_len, recompute=step.recompute, mtp=trains_mtp(spec, step), convention="causal")
    f = t.forward_flops
    w = int(sum(r.flops for r in t.rows if r.role != "core") * t.tokens)
    return f // t.tokens, (2 * f - w + t.recompute_flops) // t.tokens, w // t.tokens


def bubble_fraction(
    pp: int,
    global_batch: int | None,
    micro_batch: int,
    dp: int,
    virtual: int = 1,
    schedule: str = "1f1b",
    passes: tuple[int, int, int] = (1, 1, 1),
) -> tuple[float, int | None]:
    """The pipeline bubble: the idle share of a step of m = global batch / (micro-batch × dp) micro-batches per
    pipeline, and m; no bubble without pp or a batch. 1F1B over v interleaved chunks a device: (pp − 1) / (v·m +
    pp − 1) (Narayanan et al. 2021 §2.2.1–2.2.2). ZB-H1: the idle time (p − 1)(T_F + T_B − T_W) beside 1F1B's
    (p − 1)(T_F + T_B + T_W) (Qi et al. 2023 Table 2), each micro-batch's work T_F + T_B + T_W, so
    (p − 1)(F + B − W) / (m(F + B + W) + (p − 1)(F + B − W)) with ``passes`` = (F, B, W) (pass_flops): a third of
    1F1B's idle time when the three are equal; ZB-H2 (p − 1)(T_F + T_B − 2T_W), none when they are. Both from p
    micro-batches a pipeline (their warm-up)."""
    if global_batch is None:
        return 0.0, None
    per_pipeline = micro_batch * dp
    if global_batch % per_pipeline:
        raise InputError(f"--global-batch {global_batch} is not a multiple of --micro-batch × dp = {per_pipeline}")
    m = global_batch // per_pipeline
    if schedule in ZB_FILLED:
        if pp > 1 and m < pp:  # the handcrafted schedules' warm-up runs p forwards: Table 2 holds from p micro-batches
            raise InputError(f"--schedule {schedule}: {m} micro-batches a pipeline, fewer than the {pp} stages it fills")
        f, b, w = passes
        idle = (pp - 1) * max(0, f + b - ZB_FILLED[schedule] * w)
        return idle / (m * (f + b + w) + idle), m
    return (pp - 1) / (virtual * m + pp - 1), m


def comm_per_token(spec: Model, step: Step, lay: Layout, device: Device, flops_per_s: float) -> float:
    """Seconds a device spends in collectives that no compute hides, per token of the run, on the most loaded stage;
    a device runs tokens / (dp · b · s) micro-batches of b sequences of s tokens over the run.

    Tensor parallelism: each sublayer ends in an all-reduce of the 16-bit activations over tp (Shoeybi et al. 2019
    §3: two a layer forward, two backward; links.collectives), with sequence parallelism an all-gather and a
    reduce-scatter of the same volume (Korthikanti et al. 2022 §4.2.2): b·(s/cp)·d·2 bytes each at the device's ring
    bandwidth over tp (links.allreduce_s: 2(t − 1)/t of them, NCCL's latency a call), in the critical path.
    Context parallelism: a ring of cp − 1 steps a layer, each sending the device's K and V (b·s/cp tokens of the
    layer's cache, serving.kv_per_device) to the next while attending the block it holds, 1/cp² of the layer's
    causal attention over tp (Megatron-Core's p2p ring, balanced over 2·cp chunks): only a send longer than its block's
    attention shows; backward sends K, V and their gradients beside twice the work. Expert parallelism: each mixture
    layer dispatches a device's sequence-parallel share of the tokens, b·(s/cp)/tp of them, to its top k experts and
    combines them back, an all-to-all each (DeepSeek-V3 §3.4's dispatch and combine, as serving.stage_comm_parts
    times them), forward and backward, (ep − 1)/ep of the bytes leaving the device (links.alltoall_s), over the
    network once the group, tp × cp apart, spans nodes; in the critical path. Full recomputation runs the forward's
    again. Data-parallel and ZeRO traffic and the pipeline's hand-offs are taken as overlapped with compute (bucketed
    gradient reduction, prefetched gathers, Megatron-LM's overlapped p2p)."""
    from .links import ACTIVATION_BYTES, allreduce_s, alltoall_s, collectives, device_link, send_s
    from .parallel import stages
    from .plan import Placement
    from .serving import kv_per_device

    if (lay.tp == 1 and lay.cp == 1 and lay.ep == 1) or device.hw is None:
        return 0.0
    seq = step.seq_len or spec.context_length
    passes = 3 if step.recompute == "full" else 2  # forward, backward (and the forward again)
    tokens = step.micro_batch * (seq // lay.cp)  # a micro-batch's on each device
    link = device_link(device, Placement(gpus=lay.gpus or 1, tp=lay.tp, pp=lay.pp))
    spans = stages(spec.n_layers, lay.pp, lay.ends_as_layers)
    per_micro_batch = 0.0
    if lay.tp > 1:
        calls = passes * max(sum(collectives(spec, spec.layers[i]) for i in range(a, b)) for a, b in spans)
        per_micro_batch += allreduce_s(tokens * spec.d_model * ACTIVATION_BYTES * calls, lay.tp, link, calls)
    if lay.cp > 1:
        cores = {}  # a layer's causal attention FLOPs a token over the whole sequence, by layer kind
        for run in spec.runs():
            if run.layer not in cores:
                one = tally(spec.with_layers([run.layer]), seq_len=seq, convention="causal")
                cores[run.layer] = sum(r.flops for r in one.rows if r.role == "core")
        ring = []
        for a, b in spans:
            kv = kv_per_device(spec, tokens, 16, lay.tp, slice(a, b))
            send = send_s(kv, link, b - a, across=lay.tp * lay.cp > link.node)
            work = sum(cores[spec.layers[i]] for i in range(a, b)) * step.micro_batch * seq / lay.cp / lay.cp / lay.tp
            ring.append((lay.cp - 1) * max(0.0, send - work / flops_per_s))
        per_micro_batch += max(ring) * (passes + 1)  # the backward's sends are twice the forward's, beside twice the work
    if lay.ep > 1:
        # the ep devices of a group lie tp × cp apart (Megatron-LM's rank order tp, cp, ep, dp, pp): past a node, the network
        apart = replace(link, node=max(1, link.node // (lay.tp * lay.cp)))
        sent = tokens * spec.d_model * ACTIVATION_BYTES // lay.tp  # a device's sequence-parallel share of the tokens
        a2a = []
        for a, b in spans:
            picks = [blk.active_experts() for i in range(a, b) for _, blk in spec.layers[i].blocks() if blk.routed_experts()]
            calls = 2 * passes * len(picks)  # dispatch and combine, each pass
            a2a.append(alltoall_s(sent * 2 * passes * sum(picks), lay.ep, apart, calls))
        per_micro_batch += max(a2a)
    return per_micro_batch / ((lay.dp or 1) * step.micro_batch * seq)


def step_bubble(spec: Model, step: Step, lay: Layout) -> tuple[float, int | None]:
    """``bubble_fraction`` of a resolved layout: its schedule's, with the model's passes where it needs them."""
    passes = pass_flops(spec, step) if lay.schedule in ZB_FILLED and lay.pp > 1 and step.global_batch else (1, 1, 1)
    return bubble_fraction(lay.pp, step.global_batch, step.micro_batch, lay.dp or 1, lay.virtual_stages, lay.schedule, passes)
