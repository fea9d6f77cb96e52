"""Each block's kept activations (``Block.kept_elements``, 16-bit elements a token, and ``score_bytes(flash=True)``,
what the attention kernel keeps a sequence) against what autograd saves when its reference module runs one
training forward on real tensors on the CPU, in bf16, as fused kernels run it (``blocks/_fused.py``: attention by
torch's flash kernel, rotary positions recomputed): every distinct storage ``saved_tensors_hooks`` packed that the
graph still holds when the forward ends, parameters, buffers and the kernels' mask tables aside. ``verify --memory``
shows it. Imports torch.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from ..blocks import _fused
from ..model.stack import Model

LIMIT_BYTES = 2 * 2**30  # a layer's bf16 weights built for real on the CPU: at most this


@dataclass(frozen=True)
class KeptCheck:
    layers: tuple[int, int]
    slot: str
    kind: str
    planned: int  # bytes: tokens × 2 × kept_elements + score_bytes(flash=True)
    saved: int  # bytes autograd holds for backward

    @property
    def ok(self) -> bool:
        return self.planned == self.saved


def layer_bytes(spec: Model) -> int:
    """bf16 bytes of the largest layer's parameters."""
    from .count import tally

    per_layer = {}
    for r in tally(spec, partial=True).rows:
        if r.layers is not None and r.part != "mtp":
            a, b = r.layers
            per_layer[(a, b)] = per_layer.get((a, b), 0) + r.params // (b - a)
    return 2 * max(per_layer.values(), default=0)


def saved_bytes(module: torch.nn.Module, x: torch.Tensor) -> int:
    held = {t.untyped_storage().data_ptr() for t in (*module.parameters(), *module.buffers())}
    packed: list[weakref.ref] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        packed.append(weakref.ref(t))
        return t

    with _fused.fused(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = module(x)
    seen: dict[int, int] = {}
    for ref in packed:
        t = ref()
        if t is None or _fused.is_table(t) or t.dim() == 0:  # a table, or a layer's scalar (DiffLlama's λ): no token's
            continue
        storage = t.untyped_storage()
        if storage.data_ptr() not in held:
            seen.setdefault(storage.data_ptr(), storage.nbytes())
    del out
    return sum(seen.values())


def imaged(spec: Model) -> Model:
    """``spec`` with one image a sequence where its layers read images' rows (``Part.kept_module``) and it states
    none: what those layers keep is measured with the images they attend."""
    from dataclasses import replace

    from ..parts import Part

    reads = any(type(p).kept_module is not Part.kept_module for p in spec.parts)  # a part that measures its own share
    if not reads or any(p.request_tokens() for p in spec.parts if "images" in p.takes):
        return spec
    return replace(spec, parts=tuple(p.given(images=1) if "images" in p.takes else p for p in spec.parts))


def check(spec: Model, seq_len: int = 16, seed: int = 0) -> list[KeptCheck]:
    """Every block of each run of identical layers, measured once; and each part's own share of a layer
    (``Part.kept_module``: a cross-attention layer's), planned as ``Part.layer_kept`` with the flash kernel and
    what it keeps once a sequence beside the layers (``Part.stacks``' rows kept whole: the images' rows k and v read)."""
    torch.manual_seed(seed)
    spec = imaged(spec)
    out = []
    for run in spec.runs():
        for slot, block in run.layer.blocks():
            if block.kind == "none":
                continue
            module = block.torch_module(spec, True).to(torch.bfloat16)
            x = torch.randn(1, seq_len, spec.d_model, dtype=torch.bfloat16, requires_grad=True)
            planned = seq_len * 2 * block.kept_elements(spec) + block.score_bytes(spec, seq_len, True)
            out.append(KeptCheck(run.span, slot, block.kind, planned, saved_bytes(module, x)))
        for part in spec.parts:
            module = part.kept_module(spec, run.layer)
            if module is None:
                continue
            kept = part.layer_kept(spec, run.layer, "flash")
            planned = seq_len * (2 * kept.elements + kept.bytes) + kept.sequence + kept.forward
            planned += sum(2 * rows * whole for inner, rows, _, whole in part.stacks(spec) if not inner.layers)
            x = torch.randn(1, seq_len, spec.d_model, dtype=torch.bfloat16, requires_grad=True)
            out.append(KeptCheck(run.span, part.key, part.key, planned, saved_bytes(module.to(torch.bfloat16), x)))
    return out
