"""Inference plans from the counts: prefill and decode FLOPs, KV-cache and weight bytes, and on a device the
roofline rates of a model placed in pipeline stages of a tensor-parallel group (serving.py), its links'
communication (links.py) and a speculative drafter. Pure arithmetic; no torch.

What a plan is asked is in ``plan.py``: an ``InferenceRun``, ``Formats``, a ``Placement`` and a ``Device``.
"""

from __future__ import annotations

from ..errors import InputError
from ..model.stack import Model
from ..model.terms import attended_pairs
from . import crosscache, serving
from .count import tally
from .engines import Engine, engine
from .figures import Figure, Figures
from .formats import KV_BITS, deployed, weight_bytes
from .links import Link, device_link, link_note
from .plan import Device, FitRun, Formats, InferenceRun, Placement


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


def absorbed_costs(spec: Model) -> list:
    """Mixers that decode another way than their forward (MLA absorbed) state a step's FLOPs as a fixed part
    and parts per key met (each within the most keys it meets, by window, chunk and selection): (layer span, fixed,
    [(per key, window, chunk, select)])."""
    out = [(run, run.layer.attention.decode_cost(spec)) for run in spec.runs()]
    return [(run.span, run.n * cost[0], [(run.n * f, *how) for f, *how in cost[1]]) for run, cost in out if cost]


def decode_costs(spec: Model, decode: str):
    """A decode step's FLOPs per token, as a function of a layer range: ``costs(first, stop, outside)`` over
    layers first..stop − 1 (and the parts beside the layers if ``outside``) gives the fixed part and the
    attention products with the window, chunk and selection each meets its keys under. Mixers that decode
    another way (MLA absorbed, with ``decode`` "absorbed") answer with their decode_cost; the others with their
    terms at one token, attention's products growing with the keys cached (a recurrent mixer's the same at every
    step). A row over layers a..b holds b − a identical layers' FLOPs."""
    one = tally(spec, seq_len=1)  # one query against one key: the per-key attention cost
    own = absorbed_costs(spec) if decode == "absorbed" else []
    theirs = {span for span, *_ in own}
    # a sequence's images went through their tower in the prefill: a decode step runs none of it
    rows = [r for r in one.rows if not (r.slot == "attention" and r.layers in theirs) and not r.per_sequence]

    def costs(first: int, stop: int, outside: bool):
        def share(span, x):
            if span is None:
                return x if outside else 0
            a, b = span
            part = x * max(0, min(b, stop) - max(a, first))
            return part // (b - a) if isinstance(part, int) and part % (b - a) == 0 else part / (b - a)

        grows = [(share(r.layers, r.flops), r.window, r.chunk, r.select) for r in rows if r.role == "core" and r.grows]
        fixed = sum(share(r.layers, r.flops) for r in rows if not (r.role == "core" and r.grows))
        fixed += sum(share(span, a) for span, a, _ in own)
        grows += [(share(span, f), *how) for span, _, per_key in own for f, *how in per_key]
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


def make_drafter(spec: Model, fmt, efmt, draft_model: tuple[str, Model] | None, p: Placement, context: int):
    """The drafter of ``--draft``: ``--draft-model`` if given, else the model's multi-token prediction modules,
    else none (prompt-lookup or n-gram drafting, whose cost is left out). A draft model shares the model's
    tokenizer, so its vocabulary; it runs at the model's tp on the last stage. The MTP modules share the
    embedding and head, except that with more than one stage an untied model's embedding is only on the first,
    so the last holds a copy (as vLLM loads one)."""
    if draft_model is not None:
        label, d = draft_model
        if d.vocab_size != spec.vocab_size:
            raise InputError(
                f"--draft-model {label}: its vocabulary of {d.vocab_size:,} differs from the model's "
                f"{spec.vocab_size:,}; a draft model shares the model's tokenizer"
            )
        try:
            d.check_seq_len(context, label)
            serving.place(d, Placement(p.tp, p.tp))
        except InputError as exc:
            raise InputError(f"--draft-model {label}: {exc}") from None
        w = weight_bytes(d, fmt, efmt)
        return serving.Drafter(f"draft model {label}", d, w, w.total)
    if not spec.mtp_layers:
        return None
    n, dm = spec.mtp_layers, spec.d_model
    module = spec.with_layers((spec.layers[-1],))
    w = weight_bytes(module, fmt, efmt)
    eh_proj = fmt.matrix_bytes(dm, 2 * dm) + 3 * dm * 2  # 2d -> d, and enorm, hnorm, shared_head.norm in 16 bits
    held = n * (sum(a + b for a, b in w.layers) + eh_proj)
    if p.pp > 1 and not spec.tie_embeddings:
        held += w.embedding
    return serving.Drafter(
        f"its {n} multi-token prediction module" + ("s" if n > 1 else ""),
        module,
        w,
        held,
        extra=eh_proj,
        extra_flops=2 * 2 * dm * dm,
        caches=n,
    )


def infer(
    spec: Model,
    run: InferenceRun,
    formats: Formats = Formats(),
    placement: Placement = Placement(),
    device: Device = Device(),
    link: Link | None = None,
    eng: Engine | None = None,
) -> list[Figure]:
    """Prefill and decode FLOPs, KV-cache and weight bytes, arithmetic intensity and the roofline bound;
    ``run.decode`` and ``run.prefill``: latent attention absorbed (its decode_cost, every query against the
    latent) or expanded (its training terms).
    On ``device.hw``: a roofline per device of the placement's devices in pp stages of tp (and ep), with the
    all-reduces and stage hand-offs over ``link`` (links.Link), and speculative decoding of ``run.draft`` tokens
    accepted at rate ``run.accept``."""
    prompt, generate, batch = run.prompt, run.generate, run.batch
    draft, draft_model = run.draft, run.draft_model
    decode, prefill_form, kv_dtype = run.decode, run.prefill, formats.kv_dtype
    hw = device.hw
    context = prompt + generate
    if spec.positions == "learned" and spec.placed(context) > spec.context_length:
        raise InputError(f"--prompt + --generate = {context} exceeds context_length {spec.context_length}")
    fmt, efmt = deployed(formats)
    placement = serving.place(spec, placement)
    link = link or Link(None)
    eng = eng or engine(None, fmt, hw)
    prefill = tally(spec, convention="causal", seq_len=prompt, batch=batch)
    absorbed = absorbed_costs(spec)
    if prefill_form == "absorbed" and absorbed:
        # every prompt position p runs the absorbed step against the p keys it meets, instead of the expanded
        # terms: the same weights, no kv_b expansion of the cached latents, attention over the latent
        spans = {span for span, *_ in absorbed}
        expanded = sum(r.flops for r in prefill.rows if r.slot == "attention" and r.layers in spans)
        per_sequence = prompt * (prefill.flops_per_token - expanded) + sum(
            prompt * a + sum(f * keys_met(1, prompt, *how) for f, *how in per_key) for _, a, per_key in absorbed
        )
        prefill_flops = batch * int(per_sequence)
    else:
        prefill_flops = prefill.forward_flops
    costs = decode_costs(spec, decode)
    rest, cores = costs(0, spec.n_layers, True)

    def attention(first: int, last: int, cores=cores) -> int:
        return attended(cores, first, last)

    decode_first = rest + attention(prompt + 1, prompt + 1)  # the first generated token meets prompt + 1 keys
    decode_all = generate * rest + attention(prompt + 1, context)
    w = serving.deployed_bytes(spec, formats)
    drafter = make_drafter(spec, fmt, efmt, draft_model, placement, context) if draft else None
    kv_bits = KV_BITS[kv_dtype]
    kv_token = kv_bytes_per_token(spec, kv_bits)
    state = state_bytes_per_sequence(spec, kv_bits)
    cross = crosscache.cached_bytes(spec, kv_bits)  # an encoder-decoder's cross-attention K/V, once a sequence
    # A decode step at the last position, verifying draft + 1 tokens a sequence: every active weight once
    # (the experts the batch touches), the batch's whole KV cache and recurrent state once.
    per_step = draft + 1
    step_flops = batch * per_step * (rest + attention(context, context))
    cache = kv_bytes(spec, context, kv_bits)
    active_bytes = round(serving.decode_weight_bytes(spec, w, Placement(1, 1, 1), batch * per_step))
    step_bytes = active_bytes + batch * (cache + state + cross)
    out = [
        Figure("prefill_flops", "prefill FLOPs (causal)", prefill_flops, "FLOP"),
        Figure("decode_first_flops", "decode FLOPs, first token", decode_first, "FLOP"),
        Figure("decode_flops", "decode FLOPs, all tokens × batch", batch * decode_all, "FLOP"),
        Figure("weight_bytes", "weight bytes", w.total, "bytes", fmt.source),
        Figure("bits_per_weight", "bits per weight (mean)", w.bits, "bits"),
        Figure("kv_bytes_per_token", "KV-cache bytes per token", kv_token, "bytes", kv_dtype),
        Figure("kv_bytes", "KV cache at context × batch", cache * batch, "bytes"),
        *([Figure("state_bytes", "recurrent state × batch", state * batch, "bytes")] if state else []),
        *(
            [
                Figure("cross_kv_bytes_per_sequence", "cross-attention K/V cache a sequence", cross, "bytes", kv_dtype),
                Figure("cross_kv_bytes", "cross-attention K/V cache × batch", cross * batch, "bytes"),
            ]
            if cross
            else []
        ),
        Figure("step_flops", "last decode step: FLOPs", step_flops, "FLOP"),
        Figure(
            "step_bytes",
            "last decode step: bytes read",
            step_bytes,
            "bytes",
            "active weights (experts a batch touches) + KV cache"
            + (" + state" if state else "")
            + (" + cross-attention K/V (the encoder's weights not read)" if cross else ""),
        ),
        Figure("step_intensity", "arithmetic intensity of that step", step_flops / step_bytes, "FLOP/byte"),
    ]
    if hw is None:
        return out
    from . import rates

    served = rates.Served(spec, run, w, fmt, efmt, placement, link, device, eng, drafter, kv_bits, costs, prefill, prefill_flops)
    return out + rates.figures(served)


def plan_inference(
    spec: Model,
    label: str,
    run: InferenceRun,
    formats: Formats = Formats(),
    placement: Placement = Placement(),
    device: Device = Device(),
    eng: Engine | None = None,
    prefill_on: Placement | None = None,
) -> Figures:
    """``infer`` as one keyed result; on a device with a memory size, whether it fits as well; ``eng``: the
    engine its expected rates and memory are an engine's (None: engines.default_engine); ``prefill_on``: a prefill
    instance of its own (disaggregation.py), the placement then the decode instance's."""
    prompt, generate, batch = run.prompt, run.generate, run.batch
    draft, accept, draft_model = run.draft, run.accept, run.draft_model
    hw, decode, prefill_form = device.hw, run.decode, run.prefill
    check_speculation(accept, draft)
    if draft_model and not draft:
        raise InputError(f"--draft-model {draft_model[0]} needs --draft, the tokens it drafts a step")
    p = serving.place(spec, placement)
    link = device_link(device, p)
    fmt, efmt = deployed(formats)
    eng = eng or engine(None, fmt, hw)
    figures = infer(spec, run, formats, placement, device, link, eng)
    inputs = {
        "model": label,
        "prompt": prompt,
        "generate": generate,
        "batch": batch,
        "dtype": formats.dtype,
        "experts_dtype": formats.experts_dtype,
        "kv_dtype": formats.kv_dtype,
        "hardware": hw.key if hw else None,
        "gpus": placement.gpus,
        "tp": p.tp,
        "pp": placement.pp,
        "ep": placement.ep,
        "reserve": device.reserve,
        "prefill_chunk": run.chunk,
        "accept": accept,
        "draft": draft,
        "draft_model": draft_model[0] if draft_model else None,
        "tflops": device.tflops,
        "decode": decode,
        "prefill": prefill_form,
        "link_gbs": link.gbs,
        "link_latency_us": link.latency_s * 1e6,
        "handoff_latency_us": link.p2p_latency_s * 1e6,
        "network_gbs": link.network_gbs,
        **serving_inputs(formats, placement, device, eng),
        **({"links": device.links.path} if device.links else {}),
        **(
            {"prefill_gpus": prefill_on.gpus, "prefill_tp": prefill_on.tp or prefill_on.gpus, "prefill_ep": prefill_on.ep}
            if prefill_on
            else {}
        ),
    }
    notes = [
        serving.formats_note(fmt, efmt, formats.keep),
        "FLOPs: exact matmul counts; prefill over the causal triangle (within each layer's "
        "window or chunk), each decode step's query against every key its layer caches; "
        + (
            "latent attention decoded absorbed, over the cached latent (--decode expanded: as in training); "
            if decode == "absorbed"
            else "latent attention decoded expanded: the new "
            "token's latent expanded by kv_b and its query against every head's keys and values, "
            "as if they were held expanded (the cache figures stay the latent's; --decode "
            "absorbed: as serving engines run it); "
        )
        + (
            "latent attention prefilled expanded (--prefill absorbed: each query against the latent); "
            if prefill_form == "expanded"
            else "latent attention prefilled absorbed, each query against the cached latent (--prefill expanded: as in training); "
        )
        + "a recurrent mixer's step "
        "(Mamba, Mamba-2, Gated DeltaNet) the same at any context",
    ]
    drafter = make_drafter(spec, fmt, efmt, draft_model, p, prompt + generate) if draft else None
    if draft:
        notes.append(
            f"speculative decoding: {draft} token{'s' if draft > 1 else ''} drafted a step, each accepted "
            f"at {accept:g}; "
            + (
                f"drafted by {drafter.label}, a step of it for each token, on the last "
                "stage's devices, its weights and KV cache held beside the model's, its prefill of the prompt "
                "in the time to first token"
                if drafter
                else "the drafts' cost is left out (prompt-lookup or n-gram drafting; --draft-model names a draft model)"
            )
        )
    encoded = crosscache.engine_note(spec, eng.key, eng.label)
    if encoded:
        notes.append(encoded)
    if hw is not None:
        from .rates import notes as rate_notes

        notes.append(ROOFLINE_NOTE)
        notes += rate_notes(eng, hw, fmt, any(f.id == "roofline_prefill_s" for f in figures))
        notes.append(link_note(device, p, link))
        if prefill_on is not None:
            from . import disaggregation

            split, note = disaggregation.figures(spec, run, formats, p, prefill_on, device, eng, {f.id: f.value for f in figures})
            figures += split
            notes.append(note)
        if hw.memory_bytes:
            result = serving.fit_result(spec, FitRun(prompt + generate, batch, run.chunk), formats, p, device, eng, drafter)
            have = {f.id for f in figures}
            figures += [f for f in result[0] if f.id not in have]
            notes.insert(0, result[1])
            notes.append(result[2])
    elif device.links:
        notes.append(link_note(device, p, link))
    if prefill_on is not None and hw is None:
        raise InputError("--prefill-gpus: plans each phase's rates on a device; --hardware names one")
    return Figures(f"inference with {label}: {prompt:,} prompt + {generate:,} new tokens × batch {batch}", inputs, figures, notes)


def serving_inputs(formats: Formats, placement: Placement, device: Device, eng: Engine) -> dict:
    """The inputs infer and fit share beyond the placement: the engine, the formats' overrides, offload, the
    host's bandwidth and a Mac's wired limit."""
    return {
        "engine": eng.key,
        "keep": ",".join(formats.keep) or None,
        "gpu_layers": placement.gpu_layers,
        "cpu_experts": placement.cpu_experts,
        "two_batch_overlap": placement.overlap,
        "max_nodes": placement.max_nodes,
        "cpu_gbs": device.cpu_gbs,
        "wired_limit_gib": device.wired_gib,
    }


ROOFLINE_NOTE = (
    "roofline: prefill at the device's dense peak for the weights' compute dtype (fp8 weights at "
    "fp8; llama.cpp's quantized weights at int8, where its MMQ kernels run; others at bf16, on Apple's GPUs "
    "at their fp32 rate: weight-only formats dequantize for the matmul), no slower than reading the weights "
    "once a chunk, all devices busy (with "
    "pipeline stages, the prompt's chunks streaming through them at the slowest stage's pace); a "
    "decode step takes the longer of its bytes over the memory bandwidth (each device reads its "
    "active weights once and its share of the KV cache) and its FLOPs over the peak, then its "
    "communication, not overlapped; for a mixture, the experts a batch of B tokens touches per layer "
    "in expectation, E·(1 − (1 − k/E)^B), routing uniform; with pipeline stages a copy's sequences "
    "circulate in as many micro-batches as stages, a sequence's next token after the longer of one "
    "pass through every stage and the slowest stage taking each micro-batch; time to first token = "
    "prefill + one pass; layers offloaded to the host (--gpu-layers) read at the host's bandwidth (--cpu-gbs), "
    "and for a prefill their weights cross to the device over its link"
)


def check_speculation(accept: float | None, draft: int) -> None:
    if draft < 0:
        raise InputError(f"--draft {draft}: must be 0 or more")
    if accept is not None and not 0 <= accept <= 1:
        raise InputError(f"--accept {accept}: an acceptance rate from 0 to 1")
    if draft and accept is None:
        raise InputError(f"--draft {draft} needs --accept, the rate each drafted token is accepted at")
    if accept is not None and not draft:
        raise InputError("--accept needs --draft, the tokens drafted per step (1 for one MTP module)")
