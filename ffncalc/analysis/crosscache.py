"""What serving an encoder-decoder holds beside a decoder's: the cache a part keeps a sequence whatever its context (the
cross-attention's K and V of every source token, ``Part.cached_elements``), and the workspace of a forward over the
stacks a part runs beside the layers (the encoder over one source, ``Part.stacks``); and which engines serve
encoder-decoders. Pure arithmetic; no torch; no part named (each answers through ``Part``'s methods)."""

from __future__ import annotations

from ..model.stack import Model

# Which engines serve encoder-decoders, each with its source; an engine not listed has no such record here.
ENGINES = {
    "vllm": "vLLM lists BartForConditionalGeneration (from v0.6.3) and WhisperForConditionalGeneration among its supported "
    "models, encoder and decoder in one engine with a cross-attention KV cache, and no T5 (docs.vllm.ai, Supported Models; "
    "vllm-project/vllm#7366)",
    "trtllm": "TensorRT-LLM runs T5ForConditionalGeneration (T5, Flan-T5), BartForConditionalGeneration, "
    "MBartForConditionalGeneration and WhisperForConditionalGeneration with its PyTorch backend (nvidia.github.io/"
    "TensorRT-LLM, Use encoder-decoder models with the PyTorch backend)",
}


def cached_per_device(spec: Model, bits: int, tp: int, layers: slice = slice(None)) -> int:
    """One sequence's cache on one device that does not grow with the context, over ``layers``: each part's
    elements a layer (the cross-attention's K and V of every source token), its heads split over tp."""
    indices = range(len(spec.layers))[layers]  # a part's cache may be in some layers alone (Part.cached_in)
    return sum(-(-p.cached_in(spec, i) // tp) for i in indices for p in spec.parts) * bits // 8


def cached_bytes(spec: Model, bits: int) -> int:
    """One sequence's such cache over every layer, whole."""
    return cached_per_device(spec, bits, 1)


def stack_workspace(spec: Model, chunk: int, batch: int, tp: int) -> int:
    """The transient activations of a forward over each stack a part runs beside the layers (an encoder over the
    sources of as many of the ``batch`` sequences as a prefill chunk of ``chunk`` tokens holds, one at least: a
    bidirectional stack reads a source whole): its widest layer's, as serving.workspace sizes a chunk's, 16-bit, ÷ tp."""
    out = 0
    for part in spec.parts:
        for inner, positions, _, _ in part.stacks(spec):
            tokens = max(positions, min(chunk, batch * positions))
            # (a stack of no layers: what a source's rows keep beside a padded encoder's, parts/encoder.py)
            kept = (sum(b.kept_elements(inner) for _, b in layer.blocks()) + 2 * inner.d_model for layer in inner.layers)
            widest = max(kept, default=0)
            out = max(out, -(-tokens * 2 * widest // tp))
    return out


def engine_note(spec: Model, key: str, label: str) -> str | None:
    """What is known of ``key`` serving a model with a cached source (None for a model without one)."""
    if not any(p.cached_in(spec, i) for p in spec.parts for i in range(len(spec.layers))):
        return None
    if not any(p.source_tokens() for p in spec.parts):  # no encoder: cross-attention layers reading images
        return (
            f"cross-attention layers reading images: the prefill projects each such layer's K and V of every image row "
            f"into a cache a sequence, read whole by each decode step; the expected rates apply {label}'s shares to these "
            f"steps ({label} has no record here of serving such a model)"
        )
    said = ENGINES.get(key)
    return (
        f"encoder-decoder: the prefill runs the encoder over the source once and projects every decoder layer's "
        f"cross-attention K and V into a cache a sequence (read whole by each decode step, whose query meets every "
        f"source token); the encoder's weights are resident and read only at the prefill; the expected rates apply "
        f"{label}'s shares to these steps — "
        + (said if said else f"{label} has no record here of serving encoder-decoders: its figures are the roofline's at its shares")
    )
