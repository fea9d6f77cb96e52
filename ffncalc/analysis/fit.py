"""Will it fit: a served model's memory per device at context × batch, the largest context and batch that fit,
the fewest devices one copy fits on (serving.fit_result), and the roofline decode rate there (inference.infer).

What a plan is asked is in ``plan.py``: a ``FitRun``, ``Formats``, a ``Placement`` and a ``Device``.
"""

from __future__ import annotations

from ..errors import InputError
from ..model.stack import Model
from . import crosscache, serving
from .engines import Engine, engine
from .figures import Figure, Figures
from .formats import deployed
from .inference import ROOFLINE_NOTE, infer, serving_inputs
from .links import device_link, link_note
from .plan import Device, FitRun, Formats, InferenceRun, Placement


def plan_fit(
    spec: Model,
    label: str,
    run: FitRun,
    formats: Formats = Formats(),
    placement: Placement = Placement(),
    device: Device = Device(),
    eng: Engine | None = None,
) -> Figures:
    """``fit``: memory per device at context × batch, the largest context and batch, and the decode rate at that
    context, the roofline and the engine's expected."""
    hw, context, batch = device.hw, run.context, run.batch
    spec.check_seq_len(context, label)
    if hw.memory_bytes is None:
        raise InputError(f"--hardware {hw.key}: its datasheet gives no memory size")
    fmt, efmt = deployed(formats)
    eng = eng or engine(None, fmt, hw)
    p = serving.place(spec, placement)
    link = device_link(device, p)
    figures, verdict, note = serving.fit_result(spec, run, formats, p, device, eng)
    if hw.bandwidth_gbs:
        rates = infer(spec, InferenceRun(max(1, context - 1), 1, batch, chunk=run.chunk), formats, placement, device, link, eng)
        keep = (
            "roofline_prefill_s",
            "expected_prefill_s",
            "decode_step_s",
            "expected_decode_step_s",
            "decode_comm_s",
            "decode_tokens_per_s_per_sequence",
            "expected_decode_tokens_per_s_per_sequence",
            "roofline_decode_tokens_per_s",
            "expected_decode_tokens_per_s",
            "ttft_s",
            "expected_ttft_s",
        )
        figures += [r for r in rates if r.id in keep]
        if run.ttft_slo is not None or run.itl_slo is not None:
            most = next(f.value for f in figures if f.id == "max_batch")
            figures += goodput(spec, run, formats, placement, device, link, eng, most)
    inputs = {
        "model": label,
        "context": context,
        "batch": batch,
        "dtype": formats.dtype,
        "experts_dtype": formats.experts_dtype,
        "kv_dtype": formats.kv_dtype,
        "hardware": hw.key,
        "gpus": placement.gpus,
        "tp": p.tp,
        "pp": placement.pp,
        "ep": placement.ep,
        "reserve": device.reserve,
        "prefill_chunk": run.chunk,
        "link_gbs": link.gbs,
        "link_latency_us": link.latency_s * 1e6,
        "handoff_latency_us": link.p2p_latency_s * 1e6,
        "network_gbs": link.network_gbs,
        "tflops": device.tflops,
        "ttft_slo": run.ttft_slo,
        "itl_slo": run.itl_slo,
        **serving_inputs(formats, placement, device, eng),
        **({"links": device.links.path} if device.links else {}),
    }
    notes = [verdict, serving.formats_note(fmt, efmt, formats.keep), note, ROOFLINE_NOTE]
    if run.ttft_slo is not None or run.itl_slo is not None:
        notes.append(GOODPUT_NOTE)
    encoded = crosscache.engine_note(spec, eng.key, eng.label)
    notes += [encoded] if encoded else []
    if hw.bandwidth_gbs:
        from .rates import notes as rate_notes

        notes += rate_notes(eng, hw, fmt, any(f.id == "roofline_prefill_s" for f in figures))
        notes.append(link_note(device, p, link))
    elif device.links:
        notes.append(link_note(device, p, link))
    return Figures(f"{label} on {placement.gpus} × {hw.key}: {context:,} tokens × batch {batch}", inputs, figures, notes)


GOODPUT_NOTE = (
    "goodput: the largest batch (sequences decoded together) whose expected inter-token latency at the context is "
    "within --itl-slo and whose expected time to first token of a request joining it (its prompt of the context's "
    "tokens in chunks beside the batch's decode steps) is within --ttft-slo, searched by bisection up to the largest "
    "batch that fits (both times grow with the batch); its expected decode rate is the goodput (DistServe, Zhong et "
    "al. 2024: the rate served within both latency objectives)"
)


def goodput(spec, run: FitRun, formats, placement, device, link, eng, most: int) -> list[Figure]:
    """The largest batch up to ``most`` meeting both objectives, and its expected decode rate (none meets them: 0)."""
    if run.ttft_slo is not None and not run.ttft_slo > 0:
        raise InputError(f"--ttft-slo {run.ttft_slo}: a time in seconds, above 0")
    if run.itl_slo is not None and not run.itl_slo > 0:
        raise InputError(f"--itl-slo {run.itl_slo}: a time in seconds, above 0")

    def rates(b: int) -> dict[str, float]:
        r = infer(spec, InferenceRun(max(1, run.context - 1), 1, b, chunk=run.chunk), formats, placement, device, link, eng)
        return {f.id: f.value for f in r}

    def meets(b: int) -> bool:
        f = rates(b)
        itl = run.itl_slo is None or f["expected_decode_step_s"] <= run.itl_slo
        ttft = run.ttft_slo is None or f.get("expected_request_ttft_s", 0.0) <= run.ttft_slo
        return itl and ttft

    b = serving.largest(meets, most) if most else 0
    rate = rates(b)["expected_decode_tokens_per_s"] if b else 0.0
    return [
        Figure("slo_batch", "largest batch within the latency objectives", b, "sequences", "--ttft-slo, --itl-slo"),
        Figure("goodput_tokens_per_s", f"goodput, decode within them ({eng.label})", rate, "tokens/s"),
        Figure("goodput_tokens_per_s_per_gpu", f"goodput per device ({eng.label})", rate / placement.gpus, "tokens/s"),
    ]
