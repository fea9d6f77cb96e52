"""Training and inference plans from the counts: compute, time, memory. Pure arithmetic; no torch.

Every figure is returned as (label, value, unit) lines in order; ``render`` shows them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from .count import tally
from .errors import InputError
from .hardware import Hardware
from .sizing import ffn_kept_elements
from .spec import ModelSpec

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

Line = tuple[str, object, str]  # label, value (int or float), unit


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
    return int(value)


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


def train(spec: ModelSpec, *, tokens: int, seq_len: int | None = None, convention: str = "6n",
          recompute: str = "none", hw: Hardware | None = None, tflops: float | None = None, mfu: float = 0.4,
          gpus: int = 1, dtype: str = "bf16", tokens_per_s: float | None = None,
          budget: float | None = None) -> list[Line]:
    """Compute and time of a training run of ``tokens`` tokens."""
    t = tally(spec, convention=convention, seq_len=seq_len, recompute=recompute)
    per_token = t.train_flops // t.tokens  # forward, backward (2 × forward) and recomputation, per token
    total = per_token * tokens
    lines: list[Line] = [
        ("parameters", t.params, "params"),
        ("training FLOPs per token", per_token, "FLOP"),
        ("tokens", tokens, "tokens"),
        ("training FLOPs", total, "FLOP"),
        ("petaFLOP/s-days", total / PF_DAY, "PF-days"),
    ]
    rate = throughput(hw, tflops, mfu, dtype)
    if rate:
        seconds = total / rate.flops_per_s
        lines += [
            ("device throughput", rate.flops_per_s / 1e12, f"TFLOP/s ({rate.how})"),
            ("GPU-hours", seconds / 3600, "hours"),
            (f"wall-clock on {gpus:,} devices", seconds / gpus / SECONDS_PER_DAY, "days"),
        ]
    n = t.params
    lines.append(("Chinchilla-optimal tokens for this size (20 per parameter)", CHINCHILLA_TOKENS_PER_PARAM * n,
                  "tokens"))
    c = budget if budget is not None else float(total)
    n_opt, d_opt = compute_optimal(c)
    lines += [
        ("compute budget for the optimum", c, "FLOP"),
        ("compute-optimal parameters (Hoffmann et al. 2022, Eq. 4)", n_opt, "params"),
        ("compute-optimal tokens (Hoffmann et al. 2022, Eq. 4)", d_opt, "tokens"),
    ]
    if tokens_per_s is not None:
        if hw is None:
            raise InputError("--tokens-per-s needs --hardware for the peak that MFU divides by")
        palm = tally(spec, convention="palm", seq_len=seq_len)
        model_flops = palm.train_flops // palm.tokens  # PaLM Appendix B: 6N + 12·L·H·Q·T per token
        peak = hw.tflops[PEAK_DTYPE[dtype]] * 1e12
        lines.append(("MFU (PaLM: tokens/s × (6N + 12LHQT) / peak of all devices)",
                      tokens_per_s * model_flops / (gpus * peak), "of peak"))
    return lines


def activation_bytes_per_layer(spec: ModelSpec, seq_len: int, batch: int, recompute: str, tp: int = 1) -> int:
    """Activation memory of one layer in training, 16-bit, after Korthikanti et al. 2022 §4.1.

    Their GPT count is s·b·h·(34 + 5·a·s/h): attention 11·sbh + 5·a·s²·b (QKV input 2, Q and K 4, V 2,
    output-projection input 2, dropout mask 1; softmax output 2·as²b, its dropout mask as²b and output
    2·as²b), MLP 19·sbh (input 2, hidden 8 and activation 8 at 4h, dropout mask 1), norms 4·sbh. Here the
    widths are the model's own (GQA, head_dim, gated or MoE FFN). Sequence and tensor parallelism divide
    it all by t; selective recomputation drops the 5·a·s²·b; full recomputation keeps the layer input (2·sbh).
    """
    _, _, attn, ffn = spec.groups()[0]
    d, h, kv, hd = spec.d_model, attn.n_heads, attn.kv_heads, attn.head_size(spec.d_model)
    sb = seq_len * batch
    if recompute == "full":
        return 2 * sb * d // tp
    attention = sb * (2 * d + 2 * (h + kv) * hd + 2 * kv * hd + 2 * h * hd + d)
    scores = 5 * h * seq_len * seq_len * batch
    mlp = sb * (2 * ffn_kept_elements(d, ffn) + d)  # 16-bit elements, and a 1-byte dropout mask
    norms = sb * 2 * spec.norm.per_layer * d
    total = attention + mlp + norms + (0 if recompute == "selective" else scores)
    return total // tp


def train_memory(spec: ModelSpec, *, seq_len: int, micro_batch: int, recompute: str, optimizer: str = "adam",
                 dp: int = 1, tp: int = 1, pp: int = 1, ep: int = 1) -> list[Line]:
    """Per-device memory and work of a run split data / tensor / pipeline / expert parallel.

    Weights, gradients and optimizer states: the layer stack split by tp·pp (experts further by ep);
    activations: 1F1B pipelining keeps p micro-batches in flight on the first stage, so each device
    holds the activations of about L/p · p = L layers for one micro-batch (Korthikanti et al. 2022 §4.2.3).
    """
    t = tally(spec)
    experts = sum(r.params for r in t.rows if ".experts." in r.name)
    per_device = (t.params - experts) / (tp * pp) + experts / (tp * pp * ep)
    w, g, o = OPTIMIZERS[optimizer]
    acts = activation_bytes_per_layer(spec, seq_len, micro_batch, recompute, tp) * spec.n_layers
    devices = dp * tp * pp
    states = per_device * (w + g + o)
    return [
        ("devices (dp × tp × pp)", devices, "devices"),
        ("parameters per device", per_device, "params"),
        (f"weights + gradients + {optimizer} states per device ({w}+{g}+{o} bytes/param)", states, "bytes"),
        (f"activations per device (micro-batch {micro_batch}, recompute {recompute})", acts, "bytes"),
        ("total per device", states + acts, "bytes"),
        ("training FLOPs per token per device", (t.train_flops // t.tokens) / devices, "FLOP"),
    ]


def kv_bytes_per_token(spec: ModelSpec, kv_bits: int) -> int:
    """What every layer caches for one token: 2 · kv_heads · head_dim elements (K and V, GQA-aware), or
    for latent attention kv_lora_rank + qk_rope_head_dim (DeepSeek-V2 §2.1.2: the latent and the shared
    rotary key), times the bytes per element."""
    return sum(n * attn.kv_cache_elements(spec.d_model) for _, n, attn, _ in spec.groups()) * kv_bits // 8


def infer(spec: ModelSpec, *, prompt: int, generate: int, batch: int = 1, dtype: str = "bf16",
          kv_dtype: str = "bf16", hw: Hardware | None = None) -> list[Line]:
    """Prefill and decode FLOPs, KV-cache and weight bytes, arithmetic intensity and the roofline bound."""
    context = prompt + generate
    if spec.positions == "learned" and context > spec.context_length:
        raise InputError(f"--prompt + --generate = {context} exceeds context_length {spec.context_length}")
    prefill = tally(spec, convention="causal", seq_len=prompt, batch=batch)
    one = tally(spec, seq_len=1)  # one query against one key: the per-key attention cost
    core = _per_token(one.rows, lambda r: r.role == "core")
    rest = one.flops_per_token - core
    decode_first = rest + core * (prompt + 1)  # the first generated token meets prompt + 1 keys
    decode_all = generate * rest + core * sum(range(prompt + 1, context + 1))
    weight_bytes = math.ceil(prefill.params * WEIGHT_BITS[dtype] / 8)
    active_bytes = math.ceil(min(prefill.params, batch * prefill.active) * WEIGHT_BITS[dtype] / 8)
    kv_token = kv_bytes_per_token(spec, WEIGHT_BITS[kv_dtype])
    # A decode step at the last position: every active weight once, the batch's whole KV cache once.
    step_flops = batch * (rest + core * context)
    step_bytes = active_bytes + batch * context * kv_token
    lines: list[Line] = [
        ("prefill FLOPs (causal)", prefill.forward_flops, "FLOP"),
        ("decode FLOPs, first new token, per sequence", decode_first, "FLOP"),
        (f"decode FLOPs, all {generate:,} new tokens × batch {batch}", batch * decode_all, "FLOP"),
        ("weight bytes", weight_bytes, f"bytes ({dtype})"),
        ("KV-cache bytes per token", kv_token, f"bytes ({kv_dtype})"),
        (f"KV-cache bytes at {context:,} tokens × batch {batch}", kv_token * context * batch, "bytes"),
        ("last decode step: FLOPs", step_flops, "FLOP"),
        ("last decode step: bytes read (active weights + KV cache)", step_bytes, "bytes"),
        ("arithmetic intensity of that step", step_flops / step_bytes, "FLOP/byte"),
    ]
    if hw is not None:
        peak = hw.tflops.get(PEAK_DTYPE[dtype])
        if peak is None or hw.bandwidth_gbs is None:
            raise InputError(f"--hardware {hw.key}: its datasheet lacks a {dtype} peak or a bandwidth")
        compute_s, memory_s = step_flops / (peak * 1e12), step_bytes / (hw.bandwidth_gbs * 1e9)
        bound = "memory-bound" if memory_s > compute_s else "compute-bound"
        lines += [
            ("machine balance (peak FLOP/s per byte/s)", peak * 1e12 / (hw.bandwidth_gbs * 1e9), "FLOP/byte"),
            (f"roofline decode rate on {hw.name} ({bound})", batch / max(compute_s, memory_s), "tokens/s"),
            ("roofline prefill time", prefill.forward_flops / (peak * 1e12), "s"),
        ]
    return lines

