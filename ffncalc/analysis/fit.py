"""Will it fit: a served model's memory per device at context × batch, the largest context and batch that fit,
the fewest devices one copy fits on (serving.fit_result), and the roofline decode rate there (inference.infer).

What a plan is asked is in ``plan.py``: a ``FitRun``, ``Formats``, a ``Placement`` and a ``Device``.
"""

from __future__ import annotations

from ..errors import InputError
from ..model.stack import Model
from . import crosscache, serving
from .engines import Engine, engine
from .figures import Figures
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
        **serving_inputs(formats, placement, device, eng),
        **({"links": device.links.path} if device.links else {}),
    }
    notes = [verdict, serving.formats_note(fmt, efmt, formats.keep), note, ROOFLINE_NOTE]
    encoded = crosscache.engine_note(spec, eng.key, eng.label)
    notes += [encoded] if encoded else []
    if hw.bandwidth_gbs:
        from .rates import notes as rate_notes

        notes += rate_notes(eng, hw, fmt, any(f.id == "roofline_prefill_s" for f in figures))
        notes.append(link_note(device, p, link))
    elif device.links:
        notes.append(link_note(device, p, link))
    return Figures(f"{label} on {placement.gpus} × {hw.key}: {context:,} tokens × batch {batch}", inputs, figures, notes)
