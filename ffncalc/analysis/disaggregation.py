"""Prefill and decode on devices of their own (prefill-decode disaggregation: DistServe, Zhong et al. 2024;
Mooncake; SGLang's and vLLM's PD disaggregation): a prefill instance of ``--prefill-gpus`` devices in its own
layout prefills each request's prompt, sends its KV cache to the decode instance over the network, and the decode
instance (``--gpus`` and its layout) generates. Each phase is planned as its own placement (rates.py); the hand-off
is the prompt's cache over the NICs of the devices that send and receive it."""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError
from ..model.stack import Model
from . import serving
from .engines import Engine
from .figures import Figure
from .formats import KV_BITS
from .links import device_link
from .plan import Device, Formats, InferenceRun, Placement


def layout(p: Placement, hw_key: str) -> str:
    parts = [f"tp {p.tp}"] + ([f"pp {p.pp}"] if p.pp > 1 else []) + ([f"ep {p.ep}"] if p.ep > 1 else [])
    return f"{p.gpus} × {hw_key}, " + ", ".join(parts)


def figures(
    spec: Model,
    run: InferenceRun,
    formats: Formats,
    decode_p: Placement,
    prefill_p: Placement,
    device: Device,
    eng: Engine,
    decode_figures: dict[str, float],
) -> tuple[list[Figure], str]:
    """The prefill instance's rates, the hand-off of the caches and the balance of the two instances, beside the
    decode instance's figures (``decode_figures``, by id): (figures, note)."""
    from .inference import infer, kv_bytes

    hw = device.hw
    if hw is None or hw.bandwidth_gbs is None:
        raise InputError("--prefill-gpus: plans each phase's rates on a device; --hardware names one")
    try:
        pp = serving.place(spec, prefill_p)
    except InputError as exc:
        raise InputError(f"the prefill instance (--prefill-gpus {prefill_p.gpus}): {exc}") from None
    link = device_link(device, pp)
    got = {f.id: f.value for f in infer(spec, run, formats, pp, device, link, eng)}
    if "expected_prefill_s" not in got:
        raise InputError(f"--prefill-gpus: {hw.key} states no compute peak; --tflops gives one")
    prompt, generate, batch = run.prompt, run.generate, run.batch
    # the prompt's cache, once a sequence (a latent cache whole, KV heads split over tp: each device sends its share)
    cache = kv_bytes(spec, prompt, KV_BITS[formats.kv_dtype])
    # every device of both instances has its NIC (links.NETWORK_GBS); the caches cross the fewer of them at once
    nics = min(pp.gpus, decode_p.gpus)
    transfer = batch * cache / (nics * link.network_gbs * 1e9)
    one = cache / (min(pp.tp * pp.pp, decode_p.tp * decode_p.pp) * link.network_gbs * 1e9)
    label, key = eng.label, hw.key
    prefill_rate = batch * prompt / got["expected_prefill_s"] / pp.gpus
    decode_rate = decode_figures["expected_decode_tokens_per_s_per_gpu"]
    # each sequence brings prompt tokens to prefill for every generate tokens decoded
    ratio = decode_rate * prompt / generate / prefill_rate
    # a request's first token: its prompt's chunks, each one forward of the instance's chunk (the batch's prefill
    # in equal forwards, the request's tokens among others'), its hand-off, then a decode step
    per_copy = -(-batch // pp.replicas) * prompt
    forward_s = got["expected_prefill_s"] / -(-per_copy // run.chunk)
    ttft = -(-prompt // run.chunk) * forward_s + one + decode_figures["expected_decode_step_s"]
    out = [
        Figure("prefill_instance_gpus", "prefill instance", pp.gpus, "devices", layout(pp, key)),
        Figure("disaggregated_roofline_prefill_s", "prefill instance: prefill, roofline", got["roofline_prefill_s"], "s"),
        Figure("disaggregated_prefill_s", f"prefill instance: prefill ({label})", got["expected_prefill_s"], "s"),
        Figure(
            "prefill_tokens_per_s_per_gpu",
            f"prefill instance: prompt tokens/s a device ({label})",
            prefill_rate,
            "tokens/s",
        ),
        Figure("kv_transfer_bytes", "KV cache handed to the decode instance", batch * cache, "bytes", f"{batch} × the prompt's"),
        Figure(
            "kv_transfer_s",
            "hand-off of the batch's caches",
            transfer,
            "s",
            f"over {nics} devices' {link.network_gbs:g} GB/s NICs",
        ),
        Figure(
            "disaggregated_ttft_s",
            f"TTFT, disaggregated ({label})",
            ttft,
            "s",
            "its prompt's forwards of the prefill instance's chunk, its hand-off, a decode step",
        ),
        Figure(
            "prefill_gpus_per_decode_gpu",
            "prefill devices a decode device keeps busy",
            ratio,
            "devices",
            f"{decode_rate:,.0f} tokens/s a decode device × {prompt:,} prompt / {generate:,} generated tokens, "
            f"over {prefill_rate:,.0f} a prefill device",
        ),
    ]
    note = (
        f"prefill-decode disaggregation (--prefill-gpus): the prompts prefilled on a prefill instance of "
        f"{layout(pp, key)}, planned as its own placement; each sequence's cache of its {prompt:,}-token prompt "
        f"({cache:,} bytes) then sent to the decode instance over the network, {link.network_gbs:g} GB/s a device "
        "(RDMA from GPU memory to GPU memory, as SGLang's Mooncake and NIXL transfers and vLLM's KV connectors move "
        "it), one request's over its copy's devices, the batch's over the fewer instance's devices at once, not "
        "overlapped with compute; the decode figures, the memory and the fit are the decode instance's (--gpus and "
        "its layout); the balance: the prompt tokens a decode device's output asks for, over what a prefill "
        "device prefills (DistServe, Zhong et al. 2024, §3)"
    )
    return out, note


def prefill_placement(decode: Placement, gpus: int, tp: int | None, ep: int) -> Placement:
    """The prefill instance's placement: its own devices, tp and ep; one pipeline stage; the decode's two-batch
    overlap and node limit where its experts are shared across copies, as the decode's."""
    across = ep > (tp or gpus) and gpus > (tp or gpus)
    return replace(
        Placement(gpus, tp, ep),
        overlap=decode.overlap and across,
        max_nodes=decode.max_nodes if across else None,
    )


__all__ = ["figures", "prefill_placement"]
