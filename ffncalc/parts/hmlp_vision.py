"""Inkling's vision tower (the spec's ``hmlp_vision``), as transformers' InklingVisionModel builds and runs it: a
hierarchical MLP over each patch, no attention; each patch of ``frames`` × ``patch_size`` × ``patch_size`` pixels of
``channels`` channels (an image repeated to fill its two frames) is one token of the language model.

- plan_out_scales: the scales a patch passes through, (t, h, w, channels): the base (1, 1, 1, channels); h the running
  products of the patch size's prime factors, largest first, with ⌈h² × channels / 64⌉ × 64 channels; the frames'
  running products at the whole patch with ⌈patch² × channels × t⌉ × 64 channels; each of its ``n_layers`` layers the
  scale nearest in log-size to an even spacing from 1 to the patch's elements (the first and last fixed);
- each layer: the cells of its start scale folded into its end scale's (a reshape), projection (Linear(start channels ×
  the fold, end channels), no bias) over each end-scale cell of the patch, then an RMSNorm and GELU (all but the
  last, whose output is the language model's width);
- final_norm, an RMSNorm of the language model's width.

An image of ``image_size`` pixels a side is cut by its processor into ⌈size / patch⌉ rows of size // patch + 1 patches
(divide_to_patches), each padded to whole. FLOPs: ``images`` a sequence, each patch through every layer."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import log

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, Emitter
from . import register
from .vision import Vision


def prime_factors(n: int) -> list[int]:
    """``n``'s prime factors, smallest first, with their multiplicity."""
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1 if p == 2 else 2
    return out + ([n] if n > 1 else [])


def scales(frames: int, patch: int, layers: int, channels: int) -> list[tuple[int, int, int, int]] | None:
    """InklingVisionModel's plan_out_scales: each layer's end scale (t, h, w, channels), the base first; None where it
    would assign scales by linear_sum_assignment (fewer layers than scales: not read)."""
    h, t = [], []
    for f in reversed(prime_factors(patch)):
        h.append(f * (h[-1] if h else 1))
    for f in reversed(prime_factors(frames)):
        t.append(f * (t[-1] if t else 1))
    out = [(1, 1, 1, channels)]
    out += [(1, s, s, -(-s * s * channels // 64) * 64) for s in h]
    out += [(s, h[-1], h[-1], h[-1] ** 2 * channels * s * 64) for s in t]
    if layers < len(out):
        return None
    sizes = [log(a * b * c) for a, b, c, _ in out]
    total = log(patch * patch * frames * channels)
    picked = [min(range(len(out)), key=lambda j: (abs(total * i / layers - sizes[j]), j)) for i in range(layers + 1)]
    picked[0], picked[-1] = 0, len(out) - 1
    return [out[j] for j in picked]


@register
@dataclass(frozen=True)
class HmlpVision(Vision):
    key = "hmlp_vision"
    beside = True
    prefix = "vision"
    summary = "Inkling's vision tower: a hierarchical MLP over each patch's pixels, a token a patch"

    n_layers: Positive = 24
    text_width: Positive = 6144  # the language model's (text_hidden_size)
    post_norm: bool = False

    def check(self, spec) -> None:
        if self.plan is None:
            raise SpecError(("hmlp_vision", "n_layers"), f"{self.n_layers} layers: fewer than the patch's scales (not read)")

    @property
    def plan(self) -> list[tuple[int, int, int, int]] | None:
        return scales(self.frames, self.patch_size, self.n_layers, self.channels)

    @property
    def patches(self) -> int:
        """Patches an image is cut into: ⌈size / patch⌉ rows of size // patch + 1 (divide_to_patches)."""
        p = self.patch_size
        return -(-self.image_size // p) * (self.image_size // p + 1)

    @property
    def tokens(self) -> int:
        return self.patches

    def image_terms(self, model) -> list[tuple[str, object]]:
        """Each layer's projection, norm and GELU over a patch (its cells at the layer's end scale), and final_norm."""
        plan = self.plan
        assert plan is not None  # check
        e, elements = Emitter("layers"), self.frames * self.patch_size**2
        gelu, last = ACTIVATION_OPS["gelu"], len(plan) - 2
        for i, (start, end) in enumerate(zip(plan, plan[1:])):
            fold = (end[0] // start[0]) * (end[1] // start[1]) * (end[2] // start[2])
            cells = elements // (end[0] * end[1] * end[2])
            width = self.text_width if i == last else end[3]
            name = "vision.stages"  # verify names a ModuleList's modules without their index
            e.term(f"{name}.projection.weight", "weight", (width, start[3] * fold), macs=cells * start[3] * fold * width,
                   component="vision.projection")  # fmt: skip
            if i != last:
                e.norm(f"{name}.norm", Norm(kind="rmsnorm"), width, 1, total=cells * width)
                e.out[-1] = replace(e.out[-1], component="vision.norms", elementwise=e.out[-1].elementwise + cells * width * gelu)
        e.norm("vision.final_norm", Norm(kind="rmsnorm"), self.text_width, 1)
        return [("patch", t) for t in e.out]

    def input_terms(self, e, model, seq_len: int) -> None:
        scale = Fraction(self.images * self.patches, seq_len)
        # an image's work, not a token's: no token of the sequence passes through the tower (no active parameters)
        e.out.extend(replace(t, positions=scale, per_sequence=True, active_count=0) for _, t in self.image_terms(model))

    def per_image(self, model) -> tuple[int, int, int]:
        flops = elementwise = 0
        for _, t in self.image_terms(model):
            flops += 2 * self.patches * t.macs
            elementwise += self.patches * t.elementwise
        return self.tokens, flops, elementwise

    def model_module(self, model):
        return _module(self, model)


def _module(spec: HmlpVision, model):
    """The layers as torch modules: ``enter`` runs the sequence's images' patches through them (their output is not
    placed: the FLOPs are what is proven)."""
    import torch
    from torch import nn

    from ..blocks._torch import Linear, make_norm

    plan = spec.plan
    assert plan is not None

    class HmlpModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.stages = nn.ModuleList()
            last = len(plan) - 2
            for i, (start, end) in enumerate(zip(plan, plan[1:])):
                fold = (end[0] // start[0]) * (end[1] // start[1]) * (end[2] // start[2])
                layer = nn.Module()
                layer.projection = Linear(start[3] * fold, spec.text_width if i == last else end[3], bias=False)
                if i != last:
                    layer.norm = make_norm(Norm(kind="rmsnorm"), end[3])
                self.stages.append(layer)
            self.final_norm = make_norm(Norm(kind="rmsnorm"), spec.text_width)

        def enter(self, x, ctx):
            if not spec.images:
                return x
            n, elements = x.shape[0] * spec.images * spec.patches, spec.frames * spec.patch_size**2
            h = torch.zeros((n, elements, spec.channels), dtype=x.dtype, device=x.device)
            for i, (layer, (start, end)) in enumerate(zip(self.stages, zip(plan, plan[1:]))):
                fold = (end[0] // start[0]) * (end[1] // start[1]) * (end[2] // start[2])
                h = layer.projection(h.reshape(n, -1, start[3] * fold))  # the fold's order changes no count
                if hasattr(layer, "norm"):
                    h = nn.functional.gelu(layer.norm(h))
            self.final_norm(h)
            return x

    return HmlpModule()
