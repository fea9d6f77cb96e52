"""The rates of a served model on a device, each twice: the roofline (an upper bound: every byte at the
datasheet's bandwidth, every FLOP at its peak) and the rate an engine is expected to reach (engines.py: its
achieved shares and a layer's fixed time a forward). Prefill of the whole batch, one decode step (the
inter-token latency), throughput per sequence, in all and per device, the time to first token of the whole
batch and of one request arriving at a running batch (its prompt prefilled in chunks beside the batch's decode
steps, as vLLM's and SGLang's chunked prefill schedule it), and the output rate of the whole run."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..errors import InputError
from ..model.stack import Model
from . import exchange, serving, steps
from .count import tally
from .engines import ROOFLINE, Efficiency, Engine, prefill_peak, quantized
from .figures import Figure
from .formats import Format, WeightBytes
from .links import ACTIVATION_BYTES, Link, allreduce_s, collectives
from .plan import Device, InferenceRun, Placement


@dataclass(frozen=True)
class Served:
    """What inference.infer has worked out that the rates need."""

    spec: Model
    run: InferenceRun
    w: WeightBytes
    fmt: Format
    efmt: Format | None  # the routed experts' (None: fmt)
    p: Placement
    link: Link
    device: Device
    eng: Engine
    drafter: serving.Drafter | None
    kv_bits: int | Fraction
    costs: object
    prefill_tally: object
    prefill_flops: int


def figures(s: Served) -> list[Figure]:
    from .inference import attended, decode_costs, stage_shares

    spec, run, p, link, device, eng = s.spec, s.run, s.p, s.link, s.device, s.eng
    hw, tflops = device.hw, device.tflops
    if hw.bandwidth_gbs is None:
        raise InputError(f"--hardware {hw.key}: its datasheet gives no memory bandwidth")
    peak_dtype, peak = prefill_peak(hw, s.fmt, eng)
    if tflops is not None:  # a measured or stated peak in place of the datasheet's
        if not tflops > 0:
            raise InputError(f"--tflops {tflops}: a rate above 0")
        peak_dtype, peak = "--tflops", tflops
    bandwidth = hw.bandwidth_gbs * 1e9
    host = (device.cpu_gbs * 1e9, (hw.link_gbs or 32.0) * 1e9)  # the device's own link to the host (PCIe)
    fp8 = (s.efmt or s.fmt).name == "fp8"
    setting = steps.Setting(spec, s.w, p, link, s.kv_bits, bandwidth, peak * 1e12 if peak else None, host, s.costs, fp8)
    expected = eng.rates(hw).for_format(quantized(s.fmt))
    prompt, generate, batch, draft = run.prompt, run.generate, run.batch, run.draft
    context = prompt + generate
    yielded = serving.tokens_per_step(run.accept or 0.0, draft) if draft else 1.0
    per_copy = -(-batch // p.replicas)
    micro = min(p.pp, per_copy)
    mb = -(-per_copy // micro)
    per_step = draft + 1

    def drafting(eff: Efficiency) -> float:
        d = s.drafter
        if not d:
            return 0.0
        # each drafted token: the drafter's step for the micro-batch (one module of several MTP modules, its own
        # cache), memory- or compute-bound, and its all-reduces
        fixed, grows = decode_costs(d.spec, run.decode)(0, d.spec.n_layers, True)
        flops = mb * (fixed + d.extra_flops + attended(grows, context, context)) / p.tp
        nbytes = d.step_bytes(p, mb, context, s.kv_bits)
        comm = sum(collectives(d.spec, layer) for layer in d.spec.layers) * allreduce_s(
            mb * d.spec.d_model * ACTIVATION_BYTES, p.tp, link
        )
        compute = flops / (peak * 1e12 * eff.compute) if peak else 0.0
        return draft * (max(nbytes / (bandwidth * eff.bandwidth), compute) + eff.layer_s * d.spec.n_layers + comm)

    def step(eff: Efficiency, at: int = context) -> steps.Step:
        return steps.decode_step(setting, eff, at, (micro, mb), per_step, drafting(eff))

    roof, exp = step(ROOFLINE), step(expected)
    out: list[Figure] = []
    shares = stage_shares(s.prefill_tally, spec.n_layers, p.pp)

    def prefill_s(eff: Efficiency) -> float:
        t = steps.prefill(setting, eff, s.prefill_flops, shares, per_copy * prompt, run.chunk)
        if s.drafter and peak:  # the drafter prefills the prompt too, each MTP module over it, on the last stage
            d = tally(s.drafter.spec, convention="causal", seq_len=prompt, batch=per_copy)
            t += s.drafter.caches * (d.forward_flops + per_copy * prompt * s.drafter.extra_flops) / (p.tp * peak * 1e12 * eff.compute)
        return t

    label = eng.label
    if peak:
        out.append(
            Figure(
                "machine_balance",
                "machine balance",
                peak * 1e12 / bandwidth,
                "FLOP/byte",
                f"--tflops {tflops:g} over {hw.key}'s bandwidth" if tflops is not None else hw.source,
            )
        )
        roof_prefill, exp_prefill = prefill_s(ROOFLINE), prefill_s(expected)
        out += [
            Figure("roofline_prefill_s", f"prefill time at {peak_dtype} peak", roof_prefill, "s", f"{peak:g} TFLOP/s a device"),
            Figure("expected_prefill_s", f"prefill time ({label})", exp_prefill, "s", eng.source),
        ]
    out += [
        Figure(
            "decode_step_s",
            f"decode step ({roof.bound})" if p.pp == 1 else f"between a sequence's steps ({roof.bound})",
            roof.seconds,
            "s",
        ),
        Figure("expected_decode_step_s", f"inter-token latency ({label})", exp.seconds, "s", eng.source),
        *(
            [
                Figure(
                    "decode_comm_s",
                    "communication, one pass",
                    roof.comm_s,
                    "s",
                    "all-reduces over tp and pipeline hand-offs in one pass of a step through the stages"
                    + (f"; the link measured in {link.source}" if link.source else ""),
                )
            ]
            if (p.tp > 1 or p.pp > 1) and link.gbs
            else []
        ),
        *exchange.dispatch_figures(spec, p, link, fp8),
        *(
            [Figure("tokens_per_step", "tokens per step (speculative)", yielded, "tokens", "Leviathan et al. 2023, Eq. 1")]
            if draft
            else []
        ),
        *(
            [
                Figure(
                    "draft_s",
                    f"drafting {draft} token{'s' if draft > 1 else ''} a step",
                    drafting(ROOFLINE),
                    "s",
                    f"one step of the drafter a drafted token (Leviathan et al. 2023); drafted by {s.drafter.label}",
                )
            ]
            if s.drafter
            else []
        ),
        Figure("decode_tokens_per_s_per_sequence", "decode per sequence", yielded / roof.seconds, "tokens/s"),
        Figure("expected_decode_tokens_per_s_per_sequence", f"decode per user ({label})", yielded / exp.seconds, "tokens/s"),
        Figure("roofline_decode_tokens_per_s", f"decode, all sequences ({roof.bound})", batch * yielded / roof.seconds, "tokens/s"),
        Figure("expected_decode_tokens_per_s", f"decode, all sequences ({label})", batch * yielded / exp.seconds, "tokens/s"),
        Figure(
            "expected_decode_tokens_per_s_per_gpu", f"decode per device ({label})", batch * yielded / exp.seconds / p.gpus, "tokens/s"
        ),
    ]
    if peak:
        chunk = min(run.chunk, prompt)
        # one request's chunk: its share of the batch's prefill FLOPs, on one copy of the model
        per_chunk_flops = s.prefill_flops / batch / -(-prompt // chunk)
        chunk_setting = replace(setting, p=replace(p, gpus=p.tp * p.pp))

        def arriving(eff: Efficiency, decode_s: float) -> float:
            """Each chunk of the request's prompt is one step of the engine: the chunk's prefill beside the running
            batch's decode step; the first token comes with the last chunk."""
            one_chunk = steps.prefill(chunk_setting, eff, per_chunk_flops, shares, chunk, chunk)
            return -(-prompt // chunk) * (one_chunk + decode_s)

        out += [
            Figure("ttft_s", "TTFT, whole batch", roof_prefill + sum(roof.stage_s), "s"),
            Figure("expected_ttft_s", f"TTFT, whole batch ({label})", exp_prefill + sum(exp.stage_s), "s"),
            Figure(
                "request_ttft_s",
                "TTFT, one request joining the batch",
                arriving(ROOFLINE, roof.seconds),
                "s",
                f"its prompt in {-(-prompt // chunk)} chunk(s) of {chunk:,} tokens, each beside a decode step of the batch",
            ),
            Figure("expected_request_ttft_s", f"TTFT, one request joining ({label})", arriving(expected, exp.seconds), "s"),
        ]
        at = prompt + max(1, generate // 2)
        run_s = exp_prefill + generate / yielded * step(expected, at).seconds
        roof_run_s = roof_prefill + generate / yielded * step(ROOFLINE, at).seconds
        out.append(
            Figure(
                "output_tokens_per_s_per_gpu",
                "output per device, whole run",
                batch * generate / roof_run_s / p.gpus,
                "tokens/s",
                "the batch's prefill, then every decode step (timed at the middle of the generation)",
            )
        )
        out.append(
            Figure(
                "expected_output_tokens_per_s_per_gpu",
                f"output per device, whole run ({label})",
                batch * generate / run_s / p.gpus,
                "tokens/s",
                "the batch's prefill, then every decode step (timed at the middle of the generation)",
            )
        )
    return out


def notes(eng: Engine, hw, fmt: Format, peak: bool) -> list[str]:
    r = eng.rates(hw).for_format(quantized(fmt))
    text = (
        f"expected: {eng.label} (--engine {eng.key}), decode at {r.bandwidth:.0%} of the bandwidth, prefill at "
        f"{r.compute:.0%} of the peak, {r.layer_s * 1e6:g} µs a layer a forward — {eng.source}"
    )
    out = [text]
    if not peak:
        out.append(f"{hw.key} states no compute peak: prefill, time to first token and the compute check of decode need --tflops")
    return out
