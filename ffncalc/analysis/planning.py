"""Training and inference plans from the counts: compute, time, memory. Pure arithmetic; no torch.

Every figure is a keyed ``Figure`` (id, label, value, unit), in order; the renderers show them. Memory sums
over every layer of the stack, each block answering for what it keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from ..errors import InputError
from ..model.stack import Model
from ..model.terms import attended_pairs
from .count import tally
from .figures import Figure, Figures
from .hardware import NODE, Hardware

SECONDS_PER_DAY = 86_400
PF_DAY = 10**15 * SECONDS_PER_DAY  # one petaFLOP/s sustained for a day (Brown et al. 2020, Table D.1)

# Hoffmann et al. 2022 (Chinchilla), §3.3, Eq. (2) fit: L(N, D) = E + A/N^α + B/D^β.
CHINCHILLA = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022, Table 3: about 20 tokens per parameter

# Bytes per parameter for weights, gradients and optimizer state.
# Mixed-precision Adam (Rajbhandari et al. 2020, ZeRO §3.1): bf16 weights 2 + bf16 gradients 2 + fp32
# master weights, momentum and variance 12 = 16. 8-bit Adam (Dettmers et al. 2022): the two moments
# in 1 byte each: 2 + 2 + 4 + 2 = 10.
OPTIMIZERS = {"adam": (2, 2, 12), "adam8bit": (2, 2, 6)}
WEIGHT_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}
PEAK_DTYPE = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "bf16", "int4": "bf16"}

DROPOUT_MASK_BYTES = 1  # per element of each sublayer's output (Korthikanti et al. 2022 §4.1)


def parse_count(text: str, name: str) -> int:
    """'300B', '300e9', '1.5T', '2048' -> an exact integer."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBtT]?)\s*", text)
    scale = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
    try:
        if not m:
            raise InvalidOperation
        value = Decimal(m.group(1)) * scale[m.group(2).lower()]
    except InvalidOperation:
        raise InputError(f"{name} {text}: give a count such as 300B, 300e9 or 2048") from None
    if value <= 0 or value != value.to_integral_value():
        raise InputError(f"{name} {text}: must be a positive whole number")
    if value > MAX_COUNT:
        raise InputError(f"{name} {text}: beyond the limit of 1e30")
    return int(value)


MAX_COUNT = 10**30  # tokens or FLOPs: far beyond any run (GPT-4-scale budgets are ~1e25), and within a float


def _per_token(rows, pred=lambda r: True) -> int:
    return sum(r.flops for r in rows if pred(r))


@dataclass(frozen=True)
class Throughput:
    """Achieved FLOP/s of one device: given, or a datasheet peak times an MFU."""

    flops_per_s: float
    how: str


def throughput(hw: Hardware | None, tflops: float | None, mfu: float, dtype: str) -> Throughput | None:
    if tflops is not None:
        return Throughput(tflops * 1e12, f"{tflops} TFLOP/s per device, as given")
    if hw is None:
        return None
    peak = hw.tflops.get(PEAK_DTYPE[dtype])
    if peak is None:
        raise InputError(f"--hardware {hw.key}: its datasheet gives no {dtype} figure")
    return Throughput(peak * mfu * 1e12, f"{hw.name} {dtype} peak {peak} TFLOP/s × MFU {mfu} ({hw.source})")


def compute_optimal(budget: float) -> tuple[float, float]:
    """Hoffmann et al. 2022 Eq. (4) with the §3.3 fit: N_opt = G·(C/6)^a, D_opt = (C/6)^b / G,
    a = β/(α+β), b = α/(α+β), G = (αA / βB)^(1/(α+β))."""
    c = CHINCHILLA
    s = c["alpha"] + c["beta"]
    g = (c["alpha"] * c["A"] / (c["beta"] * c["B"])) ** (1 / s)
    return g * (budget / 6) ** (c["beta"] / s), (budget / 6) ** (c["alpha"] / s) / g


def train(spec: Model, *, tokens: int, seq_len: int | None = None, convention: str = "6n",
          recompute: str = "none", hw: Hardware | None = None, tflops: float | None = None, mfu: float = 0.4,
          gpus: int = 1, dtype: str = "bf16", tokens_per_s: float | None = None,
          budget: float | None = None, mtp: bool | None = None, bubble: float = 0.0,
          goodput: float = 1.0) -> list[Figure]:
    """Compute and time of a training run of ``tokens`` tokens on ``gpus`` devices; ``mtp`` (default: whenever
    the model has them) counts the multi-token prediction modules' FLOPs, as a run that trains them executes.

    Time: a measured ``tokens_per_s`` (all devices together) gives the wall-clock directly; otherwise each
    device runs at ``tflops``, or the datasheet peak × ``mfu`` while busy, and the pipeline ``bubble`` (the idle
    fraction of a step, Narayanan et al. 2021 §2.2.1) stretches the time by 1 / (1 − bubble). ``goodput``, the
    fraction of the wall-clock spent training (Llama 3 reports more than 90% over 54 days of restarts after
    failures, Dubey et al. 2024 §3.3.4), stretches either by 1 / goodput."""
    if not 0 < goodput <= 1:
        raise InputError(f"--goodput {goodput}: a fraction of the wall-clock, above 0 and at most 1")
    mtp = bool(spec.mtp_layers) if mtp is None else mtp
    t = tally(spec, convention=convention, seq_len=seq_len, recompute=recompute, mtp=mtp)
    per_token = t.train_flops // t.tokens  # forward, backward (2 × forward) and recomputation, per token
    total = per_token * tokens
    views = {v: tally(spec, convention=c, seq_len=seq_len, recompute=recompute, mtp=mtp)
             for v, c in (("useful", "causal"), ("executed", "exact"))}
    out = [
        Figure("params", "parameters", t.params, "params"),
        Figure("train_flops_per_token", f"train FLOPs/token ({convention})", per_token, "FLOP",
               t.convention.source),
        *(Figure(f"train_flops_per_token_{v}", f"train FLOPs/token, {label}",
                 views[v].train_flops // views[v].tokens, "FLOP", views[v].convention.source)
          for v, label in (("useful", "useful"), ("executed", "executed"))),
        Figure("tokens", "tokens", tokens, "tokens"),
        Figure("train_flops", "training FLOPs", total, "FLOP"),
        Figure("train_flops_per_device", f"training FLOPs per device ({convention})", -(-total // gpus), "FLOP"),
        Figure("pf_days", "petaFLOP/s-days", total / PF_DAY, "PF-days", "Brown et al. 2020, Table D.1"),
    ]
    seconds = None
    if tokens_per_s is not None:
        seconds = tokens / tokens_per_s
        out.append(Figure("tokens_per_s", "measured throughput", tokens_per_s, "tokens/s"))
    else:
        rate = throughput(hw, tflops, mfu, dtype)
        if rate:
            busy = total / (rate.flops_per_s * gpus)
            seconds = busy / (1 - bubble)
            out.append(Figure("device_tflops", "device throughput", rate.flops_per_s / 1e12, "TFLOP/s", rate.how))
    if bubble:
        out.append(Figure("pipeline_bubble", "pipeline bubble (pp−1)/(m+pp−1)", bubble, "of step",
                          "Narayanan et al. 2021 §2.2.1"))
    if seconds is not None:
        seconds /= goodput
        out += [
            *([Figure("goodput", "goodput (time spent training)", goodput, "of wall-clock",
                              "the user's; Llama 3 reports above 0.9 (Dubey et al. 2024 §3.3.4)")] if goodput < 1 else []),
            Figure("gpu_hours", "GPU-hours", seconds * gpus / 3600, "hours"),
            Figure("wall_clock_days", f"wall-clock on {gpus:,} devices", seconds / SECONDS_PER_DAY, "days"),
        ]
    n = t.params
    chinchilla = "Hoffmann et al. 2022, Eq. 4"
    out.append(Figure("chinchilla_tokens", "Chinchilla tokens (20/param)",
                      CHINCHILLA_TOKENS_PER_PARAM * n, "tokens", "Hoffmann et al. 2022, Table 3"))
    c = budget if budget is not None else float(total)
    n_opt, d_opt = compute_optimal(c)
    out += [
        Figure("optimum_budget", "compute budget for the optimum", c, "FLOP"),
        Figure("optimal_params", "compute-optimal parameters", n_opt, "params", chinchilla),
        Figure("optimal_tokens", "compute-optimal tokens", d_opt, "tokens", chinchilla),
    ]
    if tokens_per_s is not None and hw is not None:
        palm = tally(spec, convention="palm", seq_len=seq_len)
        model_flops = palm.train_flops // palm.tokens  # PaLM Appendix B: 6N + 12·L·H·Q·T per token
        peak = hw.tflops.get(PEAK_DTYPE[dtype])
        if peak is None:
            raise InputError(f"--hardware {hw.key}: its datasheet gives no {dtype} figure")
        peak *= 1e12
        out.append(Figure("mfu", "MFU (PaLM: 6N + 12LHQT)", tokens_per_s * model_flops / (gpus * peak), "of peak",
                          "Chowdhery et al. 2022, Appendix B"))
        useful = views["useful"].train_flops // views["useful"].tokens
        out.append(Figure("mfu_useful", "MFU (useful FLOPs)", tokens_per_s * useful / (gpus * peak), "of peak"))
    return out


def activation_bytes(spec: Model, seq_len: int, batch: int, recompute: str, tp: int = 1,
                     kernel: str = "flash", sequence_parallel: bool = True) -> int:
    """Activation memory of the whole stack in training, 16-bit, after Korthikanti et al. 2022 §4.1, summed
    over every layer.

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
    sb, d = seq_len * batch, spec.d_model
    split = tp if sequence_parallel else 1
    if recompute == "full":
        return spec.n_layers * (2 * sb * d // split)
    total = 0
    for run in spec.runs():
        blocks = [block for _, block in run.layer.blocks()]
        per_token = sum(2 * b.kept_elements(spec) + DROPOUT_MASK_BYTES * d for b in blocks)
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


def train_memory(spec: Model, *, seq_len: int, micro_batch: int, recompute: str, optimizer: str = "adam",
                 dp: int = 1, tp: int = 1, pp: int = 1, ep: int = 1, cp: int = 1, zero: int = 0,
                 precision: str = "bf16", kernel: str = "flash", micro_batches: int | None = None,
                 hw: Hardware | None = None, reserve: float = 0.1, mtp: bool = False,
                 sequence_parallel: bool = True) -> list[Figure]:
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

    w_bytes, g_bytes = PRECISIONS[precision]
    o_bytes = OPTIMIZERS[optimizer][2]
    replicas, expert_replicas = dp * cp, dp * cp // ep
    spans = stages(spec.n_layers, pp)

    def states(dense: int, expert: int) -> list[int]:
        pd, pe = _shard(dense, tp), _shard(expert, tp * ep)
        out = [pd, pe]
        for k, sharded_from in ((w_bytes, 3), (g_bytes, 2), (o_bytes, 1)):
            out.append(_shard(pd * k, replicas if zero >= sharded_from else 1)
                       + _shard(pe * k, expert_replicas if zero >= sharded_from else 1))
        return out

    by_stage = [states(d, e) for d, e in stage_params(spec, pp, mtp)]
    # under 1F1B stage s holds pp − s micro-batches in flight (all of them when there are fewer)
    flights = [min(pp - s, micro_batches or pp) for s in range(pp)]
    acts = [activation_bytes(spec.with_layers(spec.layers[a:b]), seq_len // cp, micro_batch, recompute, tp, kernel,
                             sequence_parallel)
            * flights[s] for s, (a, b) in enumerate(spans)]
    totals = [sum(st[2:]) + a for st, a in zip(by_stage, acts)]
    worst = max(range(pp), key=lambda i: totals[i])
    pd, pe, wb, gb, ob = by_stage[worst]
    stage_acts, flight = acts[worst], flights[worst]
    zero_name = {0: "none", 1: "optimizer states", 2: "+ gradients", 3: "+ weights (FSDP)"}[zero]
    out = [
        Figure("devices", "devices (dp × tp × pp × cp)", dp * tp * pp * cp, "devices"),
        Figure("pipeline_stage", "most loaded pipeline stage", worst, "stage",
               f"layers {spans[worst][0]}–{spans[worst][1] - 1}"),
        Figure("params_per_device", "parameters per device", pd + pe, "params"),
        Figure("weight_bytes_per_device", "weights", wb, "bytes", f"{precision}: {w_bytes} B/param"),
        Figure("grad_bytes_per_device", "gradients", gb, "bytes", f"{g_bytes} B/param"),
        Figure("optimizer_bytes_per_device", f"{optimizer} states", ob, "bytes",
               f"{o_bytes} B/param, fp32 master included; ZeRO {zero}: {zero_name} sharded (Rajbhandari et al. 2020)"),
        Figure("state_bytes_per_device", "weights + gradients + optimizer", wb + gb + ob, "bytes"),
        Figure("in_flight_micro_batches", "micro-batches in flight (1F1B)", flight, "micro-batches",
               "Narayanan et al. 2021 §2.2.1"),
        Figure("activation_bytes_per_device", "activations", stage_acts, "bytes",
               f"Korthikanti et al. 2022 §4.1; micro-batch {micro_batch}, recompute {recompute}, {kernel} attention"
               + ("" if tp == 1 else ", sequence parallel" if sequence_parallel else ", no sequence parallelism")),
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


def kv_bytes_per_token(spec: Model, kv_bits: int) -> int:
    """What every layer caches for one token, summed over the layers: each mixer states its own (K and V
    of every KV head; MLA's latent and shared rotary key, DeepSeek-V2 §2.1.2), times the bytes per element."""
    return sum(b.cache_elements(spec) for b in spec.blocks()) * kv_bits // 8


def kv_bytes(spec: Model, tokens: int, kv_bits: int) -> int:
    """The cache after ``tokens`` tokens: each layer holds its own per-token elements for the positions it
    keeps (all of them, or its sliding window), times the bytes per element."""
    return sum(b.cache_elements(spec) * b.cached_tokens(tokens) for b in spec.blocks()) * kv_bits // 8


def keys_met(first: int, last: int, window: int | None, chunk: int | None = None, select: str = "") -> int:
    """Σ over query positions p = first..last (counting from 1) of the keys each meets: p, at most W, or
    with chunks of C the keys of its own chunk up to itself, (p − 1) mod C + 1; with both, block-sparse; keys an
    indexer picks by blocks (select) as count.attended_pairs counts them."""
    if select or (chunk is not None and window is not None):
        return attended_pairs(last, window, chunk, select) - attended_pairs(first - 1, window, chunk, select)
    if chunk is not None:
        def upto(n: int) -> int:  # Σ_{p=1}^{n} ((p − 1) mod C + 1)
            q, r = divmod(n, chunk)
            return q * chunk * (chunk + 1) // 2 + r * (r + 1) // 2
        return upto(last) - upto(first - 1)
    if window is None:
        return (first + last) * (last - first + 1) // 2
    below = max(0, min(last, window) - first + 1)  # positions that still see every key before them
    full = (2 * first + below - 1) * below // 2
    return full + (last - first + 1 - below) * window


def state_bytes_per_sequence(spec: Model, bits: int) -> int:
    """What every layer keeps per sequence whatever its length (Mamba-2's SSM and convolution state), summed
    over the layers, times the bytes per element."""
    return sum(b.state_elements(spec) for b in spec.blocks()) * bits // 8


def compute_peak(hw: Hardware, fmt_name: str) -> tuple[str, float | None]:
    """The datasheet peak a format's matmuls run at: fp8 weights at the fp8 peak, every other format at the
    bf16 (else fp16) peak, weight-only formats dequantizing to 16-bit for the matmul (an assumption)."""
    for d in (("fp8",) if fmt_name == "fp8" else ()) + ("bf16", "fp16"):
        if d in hw.tflops:
            return d, hw.tflops[d]
    return "bf16", None


def absorbed_costs(spec: Model) -> list:
    """Mixers that decode another way than their forward (MLA absorbed) state a step's FLOPs as a fixed part
    and parts per key met (each within the most keys it meets): (layer span, fixed, [(per key, window)])."""
    out = [(run, run.layer.attention.decode_cost(spec)) for run in spec.runs()]
    return [(run.span, run.n * cost[0], [(run.n * f, w) for f, w in cost[1]]) for run, cost in out if cost]


def decode_costs(spec: Model, decode: str = "absorbed"):
    """A decode step's FLOPs per token, as a function of a layer range: ``costs(first, stop, outside)`` over
    layers first..stop − 1 (and the parts beside the layers if ``outside``) gives the fixed part and the
    attention products with the window, chunk and selection each meets its keys under. Mixers that decode
    another way (MLA absorbed, with ``decode`` "absorbed") answer with their decode_cost; the others with their
    terms at one token, attention's products growing with the keys cached (a recurrent mixer's the same at every
    step). A row over layers a..b holds b − a identical layers' FLOPs."""
    one = tally(spec, seq_len=1)  # one query against one key: the per-key attention cost
    own = absorbed_costs(spec) if decode == "absorbed" else []
    theirs = {span for span, *_ in own}
    rows = [r for r in one.rows if not (r.slot == "attention" and r.layers in theirs)]

    def costs(first: int, stop: int, outside: bool):
        def share(span, x):
            if span is None:
                return x if outside else 0
            a, b = span
            part = x * max(0, min(b, stop) - max(a, first))
            return part // (b - a) if isinstance(part, int) and part % (b - a) == 0 else part / (b - a)

        grows = [(share(r.layers, r.flops), r.window, r.chunk, r.select) for r in rows
                 if r.role == "core" and r.grows]
        fixed = sum(share(r.layers, r.flops) for r in rows if not (r.role == "core" and r.grows))
        fixed += sum(share(span, a) for span, a, _ in own)
        grows += [(share(span, f), w, None, "") for span, _, per_key in own for f, w in per_key]
        return fixed, [c for c in grows if c[0]]

    return costs


def stage_shares(t, n_layers: int, pp: int) -> list[float]:
    """Each pipeline stage's share of a tally's forward FLOPs: its layers' rows (a row over layers a..b holds
    b − a identical layers'), and on the last stage what no layer holds (the head)."""
    from .parallel import stages

    spans = stages(n_layers, pp)
    flops = [0.0] * pp
    for r in t.rows:
        if r.layers is None:
            flops[-1] += r.flops
            continue
        a, b = r.layers
        for s, (first, stop) in enumerate(spans):
            flops[s] += r.flops * max(0, min(b, stop) - max(a, first)) / (b - a)
    total = sum(flops)
    return [f / total if total else 1 / pp for f in flops]


def attended(cores, first: int, last: int) -> int:
    """Decode positions first..last, each query against the keys it meets, over ``cores``."""
    return sum(f * keys_met(first, last, w, ch, sel) for f, w, ch, sel in cores)


def make_drafter(spec: Model, fmt, efmt, draft_model: tuple[str, Model] | None, p, context: int):
    """The drafter of ``--draft``: ``--draft-model`` if given, else the model's multi-token prediction modules,
    else none (prompt-lookup or n-gram drafting, whose cost is left out). A draft model shares the model's
    tokenizer, so its vocabulary; it runs at the model's tp on the last stage. The MTP modules share the
    embedding and head, except that with more than one stage an untied model's embedding is only on the first,
    so the last holds a copy (as vLLM loads one)."""
    from . import serving
    from .formats import weight_bytes as format_bytes

    if draft_model is not None:
        label, d = draft_model
        if d.vocab_size != spec.vocab_size:
            raise InputError(f"--draft-model {label}: its vocabulary of {d.vocab_size:,} differs from the model's "
                             f"{spec.vocab_size:,}; a draft model shares the model's tokenizer")
        try:
            d.check_seq_len(context, label)
            serving.place(d, p.tp, p.tp, 1)
        except InputError as exc:
            raise InputError(f"--draft-model {label}: {exc}") from None
        w = format_bytes(d, fmt, efmt)
        return serving.Drafter(f"draft model {label}", d, w, w.total)
    if not spec.mtp_layers:
        return None
    n, dm = spec.mtp_layers, spec.d_model
    module = spec.with_layers((spec.layers[-1],))
    w = format_bytes(module, fmt, efmt)
    eh_proj = fmt.matrix_bytes(dm, 2 * dm) + 3 * dm * 2  # 2d -> d, and enorm, hnorm, shared_head.norm in 16 bits
    held = n * (sum(a + b for a, b in w.layers) + eh_proj)
    if p.pp > 1 and not spec.tie_embeddings:
        held += w.embedding
    return serving.Drafter(f"its {n} multi-token prediction module" + ("s" if n > 1 else ""), module, w, held,
                           extra=eh_proj, extra_flops=2 * 2 * dm * dm, caches=n)


def infer(spec: Model, *, prompt: int, generate: int, batch: int = 1, dtype: str = "bf16",
          kv_dtype: str = "bf16", hw: Hardware | None = None, decode: str = "absorbed",
          experts_dtype: str | None = None, gpus: int = 1, tp: int | None = None, ep: int = 1,
          accept: float | None = None, draft: int = 0, prefill_form: str = "expanded", pp: int = 1,
          link=None, chunk: int = 2048, draft_model: tuple[str, Model] | None = None,
          tflops: float | None = None) -> list[Figure]:
    """Prefill and decode FLOPs, KV-cache and weight bytes, arithmetic intensity and the roofline bound;
    ``decode`` and ``prefill_form``: latent attention absorbed (its decode_cost, every query against the
    latent) or expanded (its training terms).
    On ``hw``: a roofline per device of ``gpus`` devices in pp stages of tp (and ep), with the all-reduces and
    stage hand-offs over ``link`` (serving.Link), and speculative decoding of ``draft`` tokens accepted at
    rate ``accept``."""
    from . import serving
    from .formats import named
    from .formats import weight_bytes as format_bytes

    context = prompt + generate
    if spec.positions == "learned" and context > spec.context_length:
        raise InputError(f"--prompt + --generate = {context} exceeds context_length {spec.context_length}")
    fmt = named(dtype)
    efmt = named(experts_dtype, "--experts-dtype") if experts_dtype else None
    placement = serving.place(spec, gpus, tp, ep, pp)
    link = link or serving.Link(None)
    prefill = tally(spec, convention="causal", seq_len=prompt, batch=batch)
    absorbed = absorbed_costs(spec)
    if prefill_form == "absorbed" and absorbed:
        # every prompt position p runs the absorbed step against the p keys it meets, instead of the expanded
        # terms: the same weights, no kv_b expansion of the cached latents, attention over the latent
        spans = {span for span, *_ in absorbed}
        expanded = sum(r.flops for r in prefill.rows if r.slot == "attention" and r.layers in spans)
        per_sequence = prompt * (prefill.flops_per_token - expanded) + sum(
            prompt * a + sum(f * keys_met(1, prompt, w) for f, w in per_key) for _, a, per_key in absorbed)
        prefill_flops = batch * int(per_sequence)
    else:
        prefill_flops = prefill.forward_flops
    costs = decode_costs(spec, decode)
    rest, cores = costs(0, spec.n_layers, True)

    def attention(first: int, last: int, cores=cores) -> int:
        return attended(cores, first, last)

    decode_first = rest + attention(prompt + 1, prompt + 1)  # the first generated token meets prompt + 1 keys
    decode_all = generate * rest + attention(prompt + 1, context)
    w = format_bytes(spec, fmt, efmt)
    drafter = make_drafter(spec, fmt, efmt, draft_model, placement, context) if draft else None
    kv_bits = WEIGHT_BITS[kv_dtype]
    kv_token = kv_bytes_per_token(spec, kv_bits)
    state = state_bytes_per_sequence(spec, kv_bits)
    # A decode step at the last position, verifying draft + 1 tokens a sequence: every active weight once
    # (the experts the batch touches), the batch's whole KV cache and recurrent state once.
    per_step = draft + 1
    step_flops = batch * per_step * (rest + attention(context, context))
    cache = kv_bytes(spec, context, kv_bits)
    active_bytes = round(serving.decode_weight_bytes(spec, w, serving.Placement(1, 1, 1), batch * per_step))
    step_bytes = active_bytes + batch * (cache + state)
    out = [
        Figure("prefill_flops", "prefill FLOPs (causal)", prefill_flops, "FLOP"),
        Figure("decode_first_flops", "decode FLOPs, first token", decode_first, "FLOP"),
        Figure("decode_flops", "decode FLOPs, all tokens × batch", batch * decode_all, "FLOP"),
        Figure("weight_bytes", "weight bytes", w.total, "bytes", fmt.source),
        Figure("bits_per_weight", "bits per weight (mean)", w.bits, "bits"),
        Figure("kv_bytes_per_token", "KV-cache bytes per token", kv_token, "bytes", kv_dtype),
        Figure("kv_bytes", "KV cache at context × batch", cache * batch, "bytes"),
        *([Figure("state_bytes", "recurrent state × batch", state * batch, "bytes")] if state else []),
        Figure("step_flops", "last decode step: FLOPs", step_flops, "FLOP"),
        Figure("step_bytes", "last decode step: bytes read", step_bytes, "bytes",
               "active weights (experts a batch touches) + KV cache" + (" + state" if state else "")),
        Figure("step_intensity", "arithmetic intensity of that step", step_flops / step_bytes, "FLOP/byte"),
    ]
    if hw is None:
        return out
    if hw.bandwidth_gbs is None:
        raise InputError(f"--hardware {hw.key}: its datasheet gives no memory bandwidth")
    peak_dtype, peak = compute_peak(hw, fmt.name)
    if tflops is not None:  # a measured or stated peak in place of the datasheet's (Apple states none)
        if not tflops > 0:
            raise InputError(f"--tflops {tflops}: a rate above 0")
        peak_dtype, peak = "--tflops", tflops
    p, bandwidth = placement, hw.bandwidth_gbs * 1e9
    yielded = serving.tokens_per_step(accept or 0.0, draft) if draft else 1.0
    # Decode: a copy's sequences split into as many micro-batches as stages (fewer when there are fewer
    # sequences); each stage's step is the longer of its bytes over the bandwidth and its FLOPs over the peak,
    # then its communication.
    per_copy = -(-batch // p.replicas)
    micro = min(p.pp, per_copy)
    mb = -(-per_copy // micro)
    draft_s = 0.0
    if drafter:
        # each drafted token: the drafter's step for the micro-batch (one module of several MTP modules, its own
        # cache), memory- or compute-bound, and its all-reduces
        fixed, grows = decode_costs(drafter.spec, decode)(0, drafter.spec.n_layers, True)
        flops = mb * (fixed + drafter.extra_flops + attended(grows, context, context)) / p.tp
        nbytes = drafter.step_bytes(p, mb, context, kv_bits)
        comm = sum(serving.collectives(drafter.spec, layer) for layer in drafter.spec.layers) * \
            serving.allreduce_s(mb * drafter.spec.d_model * serving.ACTIVATION_BYTES, p.tp, link)
        draft_s = draft * (max(nbytes / bandwidth, flops / (peak * 1e12) if peak else 0.0) + comm)
    stage_s, comm_s, bounds = [], 0.0, []
    for st in serving.stages(spec, w, p.pp):
        span = slice(st.first, st.stop)
        fixed, grows = costs(st.first, st.stop, st.last)
        nbytes = serving.decode_weight_bytes(spec, w, p, mb * per_step, st) + mb * (
            serving.kv_per_device(spec, context, kv_bits, p.tp, span)
            + serving.state_per_device(spec, kv_bits, p.tp, span))
        memory_s = nbytes / bandwidth
        compute_s = mb * per_step * (fixed + attention(context, context, grows)) / p.tp / (peak * 1e12) if peak else 0.0
        comm = serving.stage_comm_s(spec, st, p, mb * per_step, link)
        stage_s.append(max(memory_s, compute_s) + comm + (draft_s if st.last else 0.0))
        comm_s += comm
        bounds.append("memory-bound" if memory_s >= compute_s else "compute-bound")
    step_s = serving.pipeline_cycle(stage_s, micro)
    bound = bounds[max(range(p.pp), key=lambda i: stage_s[i])]
    if peak:
        out.append(Figure("machine_balance", "machine balance", peak * 1e12 / bandwidth, "FLOP/byte",
                          f"--tflops {tflops:g} over {hw.key}'s bandwidth" if tflops is not None else hw.source))
        # Prefill: a copy's prompt tokens in chunks streaming through the stages, each stage's tp devices busy
        # on its layers' share of the FLOPs (as the causal tally places them) and its communication; the
        # pipeline fills in pp − 1 chunks and then moves at its slowest stage's pace.
        chunks = -(-per_copy * prompt // chunk)
        share = stage_shares(prefill, spec.n_layers, p.pp)
        stage_chunk_s = [(prefill_flops * share[st.index] / p.replicas / (p.tp * peak * 1e12)
                          + serving.stage_comm_s(spec, st, p, per_copy * prompt, link, chunks)) / chunks
                         for st in serving.stages(spec, w, p.pp)]
        prefill_s = (sum(stage_chunk_s) if chunks == 1 else
                     (chunks - 1) * max(stage_chunk_s) + sum(stage_chunk_s))
        if drafter:  # the drafter prefills the prompt too, each MTP module over it, on the last stage
            d = tally(drafter.spec, convention="causal", seq_len=prompt, batch=per_copy)
            prefill_s += drafter.caches * (d.forward_flops + per_copy * prompt * drafter.extra_flops) / (
                p.tp * peak * 1e12)
        out.append(Figure("roofline_prefill_s", f"prefill time at {peak_dtype} peak", prefill_s, "s",
                          f"{peak:g} TFLOP/s a device"))
    out += [
        Figure("decode_step_s", f"decode step ({bound})" if p.pp == 1 else f"between a sequence's steps ({bound})",
               step_s, "s"),
        *([Figure("decode_comm_s", "communication, one pass", comm_s, "s",
                  "all-reduces over tp and pipeline hand-offs in one pass of a step through the stages")]
          if (p.tp > 1 or p.pp > 1) and link.gbs else []),
        *([Figure("tokens_per_step", "tokens per step (speculative)", yielded, "tokens",
                  "Leviathan et al. 2023, Eq. 1")] if draft else []),
        *([Figure("draft_s", f"drafting {draft} token{'s' if draft > 1 else ''} a step", draft_s, "s",
                  f"one step of the drafter a drafted token (Leviathan et al. 2023); drafted by {drafter.label}")]
          if drafter else []),
        Figure("decode_tokens_per_s_per_sequence", "decode per sequence", yielded / step_s, "tokens/s"),
        Figure("roofline_decode_tokens_per_s", f"decode, all sequences ({bound})",
               batch * yielded / step_s, "tokens/s"),
    ]
    if peak:
        out.append(Figure("ttft_s", "time to first token", prefill_s + sum(stage_s), "s"))
    return out


def bubble_fraction(pp: int, global_batch: int | None, micro_batch: int, dp: int) -> tuple[float, int | None]:
    """The 1F1B pipeline bubble (pp − 1) / (m + pp − 1) of a step of m = global batch / (micro-batch × dp)
    micro-batches per pipeline (Narayanan et al. 2021 §2.2.1), and m; no bubble without pp or a batch."""
    if global_batch is None:
        return 0.0, None
    per_pipeline = micro_batch * dp
    if global_batch % per_pipeline:
        raise InputError(f"--global-batch {global_batch} is not a multiple of --micro-batch × dp = {per_pipeline}")
    m = global_batch // per_pipeline
    return (pp - 1) / (m + pp - 1), m


def plan_training(spec: Model, *, label: str, tokens: str | int, seq_len: int | None, convention: str,
                  recompute: str, hw: Hardware | None, tflops: float | None, mfu: float, gpus: int | None,
                  dtype: str | None, tokens_per_s: float | None, budget: str | None, micro_batch: int,
                  optimizer: str, dp: int | None, tp: int, pp: int, ep: int, kernel: str = "flash",
                  mtp: bool | None = None, cp: int = 1, zero: int = 0, precision: str = "bf16",
                  global_batch: int | None = None, reserve: float = 0.1, goodput: float = 1.0,
                  sequence_parallel: bool = True) -> Figures:
    """``train`` and ``train_memory`` together, the arguments and the layout checked, as one keyed result."""
    from . import parallel
    from .conventions import CONVENTIONS

    spec.check_seq_len(seq_len, label)
    seq = seq_len or spec.context_length
    n_tokens = parse_count(tokens, "--tokens") if isinstance(tokens, str) else tokens
    if zero not in ZERO_STAGES:
        raise InputError(f"--zero {zero}: one of 0, 1, 2, 3")
    if not 0 <= reserve < 1:
        raise InputError(f"--reserve {reserve}: a fraction of the device's memory, from 0 up to 1")
    lay = parallel.resolve(spec, gpus=gpus, dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, seq_len=seq)
    dtype = dtype or ("fp8" if precision == "fp8" else "bf16")
    bubble, m = bubble_fraction(lay.pp, global_batch, micro_batch, lay.dp)
    mtp = bool(spec.mtp_layers) if mtp is None else mtp
    figures = train(spec, tokens=n_tokens, seq_len=seq_len, convention=convention, recompute=recompute, hw=hw,
                    tflops=tflops, mfu=mfu, gpus=lay.gpus, dtype=dtype, tokens_per_s=tokens_per_s,
                    budget=float(parse_count(budget, "--budget")) if budget else None, mtp=mtp, bubble=bubble,
                    goodput=goodput)
    memory = train_memory(spec, seq_len=seq, micro_batch=micro_batch, recompute=recompute, optimizer=optimizer,
                          dp=lay.dp, tp=lay.tp, pp=lay.pp, ep=lay.ep, cp=lay.cp, zero=zero, precision=precision,
                          kernel=kernel, micro_batches=m, hw=hw, reserve=reserve, mtp=mtp,
                          sequence_parallel=sequence_parallel)
    figures += memory
    conv = CONVENTIONS[convention]
    inputs = {"model": label, "tokens": n_tokens, "seq_len": seq, "convention": convention,
              "recompute": recompute, "hardware": hw.key if hw else None, "tflops": tflops, "mfu": mfu,
              "gpus": lay.gpus, "dtype": dtype, "tokens_per_s": tokens_per_s, "micro_batch": micro_batch,
              "global_batch": global_batch, "optimizer": optimizer, "precision": precision, "zero": zero,
              "dp": lay.dp, "tp": lay.tp, "pp": lay.pp, "cp": lay.cp, "ep": lay.ep, "attention_kernel": kernel,
              "reserve": reserve, "mtp": mtp, "goodput": goodput, "sequence_parallel": sequence_parallel}
    view = {"full": "executed dense (the full square)", "causal": "useful (causal, within windows and chunks)",
            "half": "half the square", "none": "not counted"}[conv.attention]
    notes = [f"layout: dp {lay.dp} × tp {lay.tp} × pp {lay.pp} × cp {lay.cp} = {lay.gpus} devices"
             + (f", ep {lay.ep} inside dp" if lay.ep > 1 else ""),
             f"convention: {conv.name} — {conv.summary} [{conv.source}]",
             f"attention FLOPs in the convention's figures: {view}; 'useful' counts exact matmuls with causal "
             "attention, 'executed' the full square",
             "memory on the most loaded device: its stage's dense parameters / tp, routed experts / (tp × ep); "
             "activations after Korthikanti et al. 2022 summed over that stage's layers, times the micro-batches "
             "1F1B keeps in flight; logits and the loss are left out",
             "time: --tokens-per-s gives it directly; else --tflops or the peak × --mfu while busy, "
             "stretched by the pipeline bubble when --global-batch gives the micro-batches"
             + (f"; all of it ÷ the goodput {goodput:g}" if goodput < 1 else
                "; no time lost to failures and restarts (--goodput sets the fraction spent training)")]
    if hw is not None and hw.memory_bytes:
        free = next(f.value for f in memory if f.id == "free_bytes_per_device")
        notes.insert(0, ("fits" if free >= 0 else "does NOT fit") + f" on {hw.key}: "
                     + (f"{free / 2**30:,.1f} GiB left over" if free >= 0 else f"short by {-free / 2**30:,.1f} GiB")
                     + f" per device, after a {reserve:.0%} allowance for the CUDA context, communication buffers "
                     "and fragmentation (a round allowance, not a measurement)")
        if free < 0:
            found = fitting_layout(spec, gpus=lay.gpus, seq=seq, micro_batch=micro_batch, recompute=recompute,
                                   optimizer=optimizer, precision=precision, kernel=kernel, zero=zero, cp=lay.cp,
                                   ep=lay.ep, hw=hw, reserve=reserve, mtp=mtp, global_batch=global_batch,
                                   sequence_parallel=sequence_parallel)
            notes.insert(1, f"on {lay.gpus:,} devices it fits as --tp {found[0].tp} --pp {found[0].pp} (dp "
                         f"{found[0].dp}) --zero {found[1]}, the least model parallelism that fits (tp within a "
                         f"node of {NODE})" if found else
                         f"no layout of {lay.gpus:,} devices fits (tp up to {NODE}, within a node; any pp; ZeRO "
                         f"{zero} to 3) at micro-batch {micro_batch} with recompute {recompute}: try more devices, "
                         "--recompute full or a shorter sequence per device (--cp)")
    if spec.mtp_layers:
        notes.append(f"multi-token prediction modules ({spec.mtp_layers}): FLOPs "
                     + ("counted, as a run that trains them executes" if mtp else "left out (--no-mtp)"))
    return Figures(f"training {label} on {n_tokens:,} tokens", inputs, figures, notes)


def fitting_layout(spec: Model, *, gpus: int, seq: int, micro_batch: int, recompute: str, optimizer: str,
                   precision: str, kernel: str, zero: int, cp: int, ep: int, hw: Hardware, reserve: float,
                   mtp: bool, global_batch: int | None, sequence_parallel: bool = True):
    """The layout of ``gpus`` devices that fits with the least model parallelism, as (Layout, ZeRO stage): tp × pp
    ascending (tp up to a node, the larger tp first: it splits activations as well as weights), each with the
    given ZeRO stage or a higher one up to 2, which move no more bytes than data parallelism does; ZeRO 3's
    1.5 times that only after every layout (Rajbhandari et al. 2020 §7); None when none fits."""
    from . import parallel

    if gpus % cp:
        return None
    shapes = parallel.model_splits(spec.n_layers, gpus // cp)
    candidates = [(z, tp, pp) for tp, pp in shapes for z in range(zero, 3)] + [(3, tp, pp) for tp, pp in shapes]
    for z, tp, pp in candidates:
        try:
            lay = parallel.resolve(spec, gpus=gpus, dp=None, tp=tp, pp=pp, cp=cp, ep=ep, seq_len=seq)
            m = bubble_fraction(pp, global_batch, micro_batch, lay.dp)[1]
        except InputError:
            continue
        memory = train_memory(spec, seq_len=seq, micro_batch=micro_batch, recompute=recompute, optimizer=optimizer,
                              dp=lay.dp, tp=tp, pp=pp, ep=ep, cp=cp, zero=z, precision=precision, kernel=kernel,
                              micro_batches=m, hw=hw, reserve=reserve, mtp=mtp, sequence_parallel=sequence_parallel)
        if next(f.value for f in memory if f.id == "free_bytes_per_device") >= 0:
            return lay, z
    return None


def plan_inference(spec: Model, *, label: str, prompt: int, generate: int, batch: int, dtype: str, kv_dtype: str,
                   hw: Hardware | None, decode: str = "absorbed", experts_dtype: str | None = None, gpus: int = 1,
                   tp: int | None = None, ep: int = 1, reserve: float = 0.1, chunk: int = 2048,
                   accept: float | None = None, draft: int = 0, prefill_form: str = "expanded", pp: int = 1,
                   link_gbs: float | None = None, link_latency_us: float | None = None,
                   draft_model: tuple[str, Model] | None = None, tflops: float | None = None,
                   network_gbs: float | None = None) -> Figures:
    """``infer`` as one keyed result; on a device with a memory size, whether it fits as well."""
    from . import serving
    from .formats import named

    check_speculation(accept, draft)
    if draft_model and not draft:
        raise InputError(f"--draft-model {draft_model[0]} needs --draft, the tokens it drafts a step")
    placement = serving.place(spec, gpus, tp, ep, pp)
    link = device_link(hw, placement, link_gbs, link_latency_us, network_gbs)
    figures = infer(spec, prompt=prompt, generate=generate, batch=batch, dtype=dtype, kv_dtype=kv_dtype, hw=hw,
                    decode=decode, experts_dtype=experts_dtype, gpus=gpus, tp=tp, ep=ep, accept=accept, draft=draft,
                    prefill_form=prefill_form, pp=pp, link=link, chunk=chunk, draft_model=draft_model,
                    tflops=tflops)
    inputs = {"model": label, "prompt": prompt, "generate": generate, "batch": batch, "dtype": dtype,
              "experts_dtype": experts_dtype, "kv_dtype": kv_dtype, "hardware": hw.key if hw else None,
              "gpus": gpus, "tp": placement.tp, "pp": pp, "ep": ep, "reserve": reserve, "prefill_chunk": chunk,
              "accept": accept, "draft": draft, "draft_model": draft_model[0] if draft_model else None,
              "tflops": tflops,
              "decode": decode, "prefill": prefill_form,
              "link_gbs": link.gbs, "link_latency_us": link.latency_s * 1e6,
              "handoff_latency_us": link.p2p_latency_s * 1e6,
              "network_gbs": link.network_gbs}
    fmt = named(dtype)
    efmt = named(experts_dtype, "--experts-dtype") if experts_dtype else None
    notes = [serving.formats_note(fmt, efmt),
             "FLOPs: exact matmul counts; prefill over the causal triangle (within each layer's "
             "window or chunk), each decode step's query against every key its layer caches; "
             + ("latent attention decoded absorbed, over the cached latent (--decode expanded: as "
                "in training); " if decode == "absorbed" else "latent attention decoded expanded: the new "
                "token's latent expanded by kv_b and its query against every head's keys and values, "
                "as if they were held expanded (the cache figures stay the latent's; --decode "
                "absorbed: as serving engines run it); ")
             + ("latent attention prefilled expanded (--prefill absorbed: each query against the latent); "
                if prefill_form == "expanded" else "latent attention prefilled absorbed, each query against the "
                "cached latent (--prefill expanded: as in training); ") + "a recurrent mixer's step "
             "(Mamba, Mamba-2, Gated DeltaNet) the same at any context"]
    drafter = make_drafter(spec, fmt, efmt, draft_model, placement, prompt + generate) if draft else None
    if draft:
        notes.append(f"speculative decoding: {draft} token{'s' if draft > 1 else ''} drafted a step, each accepted "
                     f"at {accept:g}; " + (f"drafted by {drafter.label}, a step of it for each token, on the last "
                     "stage's devices, its weights and KV cache held beside the model's, its prefill of the prompt "
                     "in the time to first token" if drafter else
                     "the drafts' cost is left out (prompt-lookup or n-gram drafting; --draft-model names a draft "
                     "model)"))
    if hw is not None:
        notes.append(ROOFLINE_NOTE)
        notes.append(link_note(hw, placement, link, link_gbs, link_latency_us, network_gbs))
        if hw.memory_bytes:
            result = fit_result(spec, hw, placement, fmt, efmt, context=prompt + generate, batch=batch,
                                kv_dtype=kv_dtype, reserve=reserve, chunk=chunk,
                                drafter=drafter)
            have = {f.id for f in figures}
            figures += [f for f in result[0] if f.id not in have]
            notes.insert(0, result[1])
            notes.append(result[2])
    return Figures(f"inference with {label}: {prompt:,} prompt + {generate:,} new tokens × batch {batch}", inputs,
                   figures, notes)


ROOFLINE_NOTE = ("roofline: prefill at the device's dense peak for the weights' compute dtype (fp8 weights at "
                 "fp8, others at bf16: weight-only formats dequantize for the matmul), all devices busy (with "
                 "pipeline stages, the prompt's chunks streaming through them at the slowest stage's pace); a "
                 "decode step takes the longer of its bytes over the memory bandwidth (each device reads its "
                 "active weights once and its share of the KV cache) and its FLOPs over the peak, then its "
                 "communication, not overlapped; for a mixture, the experts a batch of B tokens touches per layer "
                 "in expectation, E·(1 − (1 − k/E)^B), routing uniform; with pipeline stages a copy's sequences "
                 "circulate in as many micro-batches as stages, a sequence's next token after the longer of one "
                 "pass through every stage and the slowest stage taking each micro-batch; time to first token = "
                 "prefill + one pass")


NETWORK_GBS = 50.0  # one 400 Gb/s NIC per GPU each way, as DGX H100, H200 and B200 ship (8 × ConnectX-7 400 Gb/s)


def device_link(hw: Hardware | None, p, gbs: float | None, latency_us: float | None, network_gbs: float | None = None):
    """The link a placement's collectives run over: ``--link-gbs`` and ``--link-latency-us`` where given, else
    the table's scale-up link of ``hw`` (a mesh's share for a group of tp, NCCL's latency model); between its
    nodes, ``--network-gbs``."""
    from . import serving

    for option, value, floor in (("--link-gbs", gbs, 0), ("--network-gbs", network_gbs, 0)):
        if value is not None and not value > floor:
            raise InputError(f"{option} {value}: a bandwidth in GB/s, above 0")
    if latency_us is not None and not latency_us >= 0:
        raise InputError(f"--link-latency-us {latency_us}: a time, 0 or more")
    network = network_gbs if network_gbs is not None else NETWORK_GBS
    node = hw.node if hw else 8
    if gbs is not None or hw is None:
        lat = (latency_us or 0.0) * 1e-6
        return serving.Link(gbs, lat, gbs, lat, node, network)
    lat = latency_us * 1e-6 if latency_us is not None else hw.allreduce_latency_us(p.tp) * 1e-6
    if latency_us is not None:
        p2p = latency_us * 1e-6
    else:  # one step of the ring: a send to the next device
        p2p = sum(hw.link_latency_us) * 1e-6 if hw.link_latency_us else 0.0
    return serving.Link(hw.allreduce_gbs(p.tp), lat, hw.link_peer_gbs or hw.link_gbs, p2p, node, network)


def link_note(hw: Hardware, p, link, gbs: float | None, latency_us: float | None,
              network_gbs: float | None) -> str:
    """What the communication figures assume, for the placement ``p``."""
    if p.tp == 1 and p.pp == 1:
        return "communication: none (one device per model copy)"
    if not link.gbs:
        return (f"communication: not counted — {hw.key}'s table entry gives no interconnect bandwidth; "
                "--link-gbs sets one")
    parts = []
    if p.tp > 1:
        parts.append(f"an all-reduce of the 16-bit activations after each sublayer over tp {p.tp}, each device "
                     f"moving 2(n − 1)/n of them at {link.ring_gbs(p.tp):g} GB/s (Shoeybi et al. 2019; nccl-tests' "
                     "bus bandwidth), " + (f"{link.latency_s * 1e6:.3g} µs each" if link.latency_s else "no latency"))
    if p.ep_copies > 1:
        parts.append(f"in a mixture layer, in place of the FFN's all-reduce, a dispatch and a combine over the "
                     f"{p.ep} devices sharing the experts, each device sending its share of the tokens' k inputs, "
                     f"(n − 1)/n of them to the others, at {link.ring_gbs(p.ep):g} GB/s (nccl-tests' all-to-all bus "
                     "bandwidth), " + (f"{link.p2p_latency_s * 1e6:.3g} µs each" if link.p2p_latency_s
                                       else "no latency"))
    if p.pp > 1:
        parts.append(f"each stage's hand-off of its activations to the next at {link.p2p_gbs or link.gbs:g} GB/s, "
                     + (f"{link.p2p_latency_s * 1e6:.3g} µs each" if link.p2p_latency_s else "no latency"))
    source = ("--link-gbs" if gbs is not None else f"{hw.key}'s scale-up link per direction") + (
        ", --link-latency-us" if latency_us is not None else ", NCCL's ring latency model (src/graph/tuning.cc)"
        if hw.link_latency_us else ", no latency figure: a lower bound (--link-latency-us adds one)")
    crossing = p.tp > link.node or (p.pp > 1 and p.tp * p.pp > link.node) or p.ep > link.node
    network = (f"; between nodes of {link.node} the network at {link.network_gbs:g} GB/s a device "
               + ("(--network-gbs)" if network_gbs is not None else
                  "(a 400 Gb/s NIC a GPU, as DGX H100 and B200 ship; --network-gbs sets it)")) if crossing else ""
    return (f"communication ({source}): " + "; ".join(parts) + network + "; not overlapped with compute")


def check_speculation(accept: float | None, draft: int) -> None:
    if draft < 0:
        raise InputError(f"--draft {draft}: must be 0 or more")
    if accept is not None and not 0 <= accept <= 1:
        raise InputError(f"--accept {accept}: an acceptance rate from 0 to 1")
    if draft and accept is None:
        raise InputError(f"--draft {draft} needs --accept, the rate each drafted token is accepted at")
    if accept is not None and not draft:
        raise InputError("--accept needs --draft, the tokens drafted per step (1 for one MTP module)")


def fit_result(spec: Model, hw: Hardware, placement, fmt, efmt, *, context: int, batch: int, kv_dtype: str,
               reserve: float, chunk: int, drafter=None) -> tuple[list[Figure], str, str]:
    """The fit at context × batch, and the largest context and batch that fit: figures, verdict, note."""
    from . import serving
    from .formats import weight_bytes as format_bytes

    if not 0 <= reserve < 1:
        raise InputError(f"--reserve {reserve}: a fraction of the device's memory, from 0 up to 1")
    if chunk < 1:
        raise InputError(f"--prefill-chunk {chunk}: must be at least 1")
    w = format_bytes(spec, fmt, efmt)
    kv_bits = WEIGHT_BITS[kv_dtype]

    def at(c: int, b: int):
        return serving.fit(spec, w, placement, context=c, batch=b, kv_bits=kv_bits, memory=hw.memory_bytes,
                           reserve=reserve, chunk=chunk, drafter=drafter)

    f = at(context, batch)
    max_context = serving.largest(lambda c: at(c, batch).free >= 0, spec.context_length)
    max_batch = serving.largest(lambda b: at(context, b).free >= 0, serving.SEARCH_LIMIT)
    least = serving.fewest(spec, w, context=context, batch=batch, kv_bits=kv_bits, memory=hw.memory_bytes,
                           reserve=reserve, chunk=chunk, drafter=drafter)
    figures = serving.fit_figures(f, placement, hw.key) + [
        Figure("max_context", f"largest context at batch {batch}", max_context, "tokens"),
        Figure("max_batch", f"largest batch at {context:,} tokens", max_batch, "sequences"),
        *([Figure("min_gpus", f"fewest {hw.key} that fit", least.gpus, "devices", f"tp {least.tp} × pp {least.pp}")]
          if least else []),
    ]
    note = (("memory per device on the most loaded pipeline stage (layers as even as can be, the earlier "
             "stages one more; the embedding on the first, the head on the last): " if placement.pp > 1 else
             "memory per device: ")
            + f"weights (dense ÷ tp, routed experts ÷ ep, or ÷ tp without ep; ep beyond tp shares the experts "
            f"among copies) + KV cache at "
            f"context × batch ({kv_dtype}; KV heads ÷ tp, a latent cache whole) + workspace (the widest layer's "
            f"activations for a {chunk:,}-token prefill chunk, 16-bit, ÷ tp, + fp32 logits of the batch's last "
            f"tokens) + a {reserve:.0%} reserve (vLLM's default gpu_memory_utilization 0.9 leaves a tenth); "
            f"largest context searched up to the model's {spec.context_length:,}, largest batch up to "
            f"{serving.SEARCH_LIMIT:,}, by bisection")
    verdict = serving.verdict(f, placement, hw, context, batch)
    if f.free < 0:
        verdict += (f"; one copy fits on {least.gpus} (--gpus {least.gpus} --tp {least.tp}"
                    + (f" --pp {least.pp}" if least.pp > 1 else "") + ")" if least else
                    f"; no copy fits on up to {NODE * serving.MAX_STAGES} of them")
    return figures, verdict, note


def plan_fit(spec: Model, *, label: str, context: int, batch: int, dtype: str, kv_dtype: str, hw: Hardware,
             experts_dtype: str | None = None, gpus: int = 1, tp: int | None = None, ep: int = 1,
             reserve: float = 0.1, chunk: int = 2048, pp: int = 1, link_gbs: float | None = None,
             link_latency_us: float | None = None, tflops: float | None = None,
             network_gbs: float | None = None) -> Figures:
    """``fit``: memory per device at context × batch, the largest context and batch, and the roofline decode
    rate at that context."""
    from . import serving
    from .formats import named

    spec.check_seq_len(context, label)
    if hw.memory_bytes is None:
        raise InputError(f"--hardware {hw.key}: its datasheet gives no memory size")
    fmt = named(dtype)
    efmt = named(experts_dtype, "--experts-dtype") if experts_dtype else None
    placement = serving.place(spec, gpus, tp, ep, pp)
    link = device_link(hw, placement, link_gbs, link_latency_us, network_gbs)
    figures, verdict, note = fit_result(spec, hw, placement, fmt, efmt, context=context, batch=batch,
                                        kv_dtype=kv_dtype, reserve=reserve, chunk=chunk)
    if hw.bandwidth_gbs:
        rates = infer(spec, prompt=max(1, context - 1), generate=1, batch=batch, dtype=dtype, kv_dtype=kv_dtype,
                      hw=hw, experts_dtype=experts_dtype, gpus=gpus, tp=tp, ep=ep, pp=pp, link=link, chunk=chunk,
                      tflops=tflops)
        keep = ("roofline_prefill_s", "decode_step_s", "decode_comm_s", "decode_tokens_per_s_per_sequence",
                "roofline_decode_tokens_per_s", "ttft_s")
        figures += [r for r in rates if r.id in keep]
    inputs = {"model": label, "context": context, "batch": batch, "dtype": dtype, "experts_dtype": experts_dtype,
              "kv_dtype": kv_dtype, "hardware": hw.key, "gpus": gpus, "tp": placement.tp, "pp": pp, "ep": ep,
              "reserve": reserve, "prefill_chunk": chunk, "link_gbs": link.gbs, "link_latency_us": link.latency_s * 1e6,
              "handoff_latency_us": link.p2p_latency_s * 1e6,
              "network_gbs": link.network_gbs, "tflops": tflops}
    notes = [verdict, serving.formats_note(fmt, efmt), note, ROOFLINE_NOTE]
    if hw.bandwidth_gbs:
        notes.append(link_note(hw, placement, link, link_gbs, link_latency_us, network_gbs))
    return Figures(f"{label} on {gpus} × {hw.key}: {context:,} tokens × batch {batch}", inputs, figures, notes)
