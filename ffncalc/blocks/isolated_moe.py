"""Modality-isolated mixture of experts: ERNIE 4.5-VL's (Baidu 2025; transformers 5.23's Ernie4_5_VLMoeMoeBlock,
modeling_ernie4_5_vl_moe.py). Each sparse layer holds two mixtures of the same number of experts and top-k, each with
its own router (Ernie4_5_VLMoeMoeTopKRouter) and score correction (moe_statics), and shared experts every token runs:

- the text mixture (text_moe, experts of moe_intermediate_size[0]), which text tokens run;
- the vision mixture (vision_moe, experts of moe_intermediate_size[1]), which image and video tokens run instead.

A token's active parameters are a text token's: the text mixture's and the shared experts'. Of a sequence of s
positions holding the I tokens its images bring (the vision part's, ``--images``), the text mixture's router,
correction and experts run over the s − I text positions and the vision mixture's over the I image positions, as
Ernie4_5_VLMoeMoeBlock splits them by moe_mm_token_type_ids: their multiply-adds a token are (s − I) / s and I / s of
a whole token's. The vision mixture is active for no token (the 2N conventions, which count active parameters, charge
a text token's whatever the images); a decode step's token is a text token. The image's start and end markers, which
transformers also sends to the vision mixture, are counted as text tokens."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import SpecError
from . import MODULE_NAMES, register
from .moe import Expert, MoEFFN

IMAGE_TOKENS = (
    "modality-isolated experts: each sparse layer's vision mixture ({n} experts of {f}, its own router) runs the images' "
    "tokens and no text token; the text mixture ({t} wide) the text's"
)


def scaled(t, share: Fraction):
    """``t`` with its work (multiply-adds and elementwise operations per token) at ``share`` of the tokens."""
    if share == 1:
        return t

    def whole(x):
        return int(x) if x == int(x) else x

    return replace(t, macs=whole(t.macs * share), elementwise=whole(t.elementwise * share))


def image_positions(model, seq_len: int) -> int:
    """Positions of each sequence of ``seq_len`` that its images' tokens take (Part.image_tokens)."""
    return image_positions_of(sum(p.image_tokens() for p in model.parts), seq_len)


def image_positions_of(tokens: int, seq_len: int) -> int:
    """The images' ``tokens`` in a sequence of ``seq_len``: at most all of it; none in a single position, a decode
    step's token (the images' were prefilled)."""
    return min(tokens, seq_len) if seq_len > 1 else 0


@register
@dataclass(frozen=True)
class IsolatedMoEFFN(MoEFFN):
    """A mixture of experts (the text mixture: ``expert``, ``n_experts``, ``top_k``, ``shared``) beside a second mixture
    of ``n_experts`` experts of its own width (``vision_expert``), with its own router and correction bias, which the
    image tokens run in place of the first."""

    kind = "isolated_moe"
    slot = "ffn"
    summary = "modality-isolated mixtures of experts: text and vision experts, each with its router, and shared experts (ERNIE 4.5-VL)"

    vision_expert: Expert | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.vision_expert is None:
            raise SpecError(("vision_expert",), "an isolated mixture needs the vision mixture's expert FFN")
        if self.identity_experts or self.skip_expert or self.router_mlp is not None or self.hash_routed:
            raise SpecError(("vision_expert",), "the vision mixture is read beside a softmax top-k router alone")

    @property
    def count_note(self) -> str | None:
        assert self.vision_expert is not None
        return IMAGE_TOKENS.format(n=self.n_experts, f=self.vision_expert.d_ff, t=self.expert.d_ff)

    @property
    def variant(self) -> str:
        assert self.vision_expert is not None
        return f"{super().variant} | vision × {self.vision_expert.variant}"

    def resolve(self, d_model: int) -> IsolatedMoEFFN:
        assert self.vision_expert is not None
        return replace(super().resolve(d_model), vision_expert=self.vision_expert.resolve(d_model))

    def terms(self, e, model, seq_len: int) -> None:
        """The text mixture's terms (MoEFFN), then the vision mixture's: vision_moe.gate (no bias), its moe_statics and
        its experts, held in every sparse layer. With images, the text mixture's router, correction and experts run
        over the text's positions and the vision mixture's over the images' (the module docstring)."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        d, n, k = model.d_model, e.n, self.routed_active
        assert self.vision_expert is not None
        images = image_positions(model, seq_len)
        vision = len(e.out)
        e.linear("ffn.vision_router", d, self.n_experts, False, n)
        if self.correction_bias:
            e.term("ffn.vision_correction_bias", "bias", (self.n_experts,), n, elementwise=n * self.n_experts)
        self.vision_expert.emit(
            e, "ffn.vision_experts.", d, self.n_experts * n, k * n, model.norm, expert=True, component="ffn.vision_experts"
        )
        # the vision mixture's work is the images' share of each token's (I / s), the text mixture's the rest; a token's
        # active parameters (and the 2N conventions' FLOPs, which count them) stay a text token's
        text, share = Fraction(seq_len - images, seq_len), Fraction(images, seq_len)
        own = ("ffn.router", "ffn.correction_bias", "ffn.experts")  # the text mixture's (not the ops both run, nor shared)
        e.out[start:vision] = [scaled(t, text) if t.component in own else t for t in e.out[start:vision]]
        e.out[vision:] = [replace(scaled(t, share), active_count=0) for t in e.out[vision:]]

    def linears(self, model) -> tuple:
        """MoEFFN's, the vision mixture's router a router module (vision_moe.gate: its weight a plain parameter) and its
        experts fused 3-D parameters, as the text mixture's."""
        out = []
        for lin in super().linears(model):
            if lin.component == "ffn.vision_router":
                lin = replace(lin, module="gate", kind="router")
            elif lin.component.startswith("ffn.vision_experts."):  # named as the text mixture's experts
                lin = replace(lin, module=MODULE_NAMES.get(lin.component.replace("vision_", ""), lin.module))
            out.append(lin)
        return tuple(out)

    def torch_module(self, model, causal: bool):
        return _module()(model, self, causal)


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import Linear
    from .moe import _module as moe_module

    class IsolatedMoE(moe_module()):
        """The text mixture as MoEFFN's module runs it, over the text's positions; the vision mixture's router,
        correction bias and experts over the sequence's first ``images`` positions (its images' tokens, before its
        text: where they sit changes no count), the shared experts over both."""

        def __init__(self, model, ffn: IsolatedMoEFFN, causal: bool):
            super().__init__(model, ffn, causal)
            self.vision_router = Linear(model.d_model, ffn.n_experts, bias=False)
            if ffn.correction_bias:
                self.vision_correction_bias = nn.Parameter(torch.zeros(ffn.n_experts))
            assert ffn.vision_expert is not None
            self.vision_experts = nn.ModuleList(ffn.vision_expert.torch_module(model, causal) for _ in range(ffn.n_experts))
            self.images = sum(p.image_tokens() for p in model.parts)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            images = image_positions_of(self.images, x.shape[1])
            if not images:
                return super().forward(x)
            text = super().forward(x[:, images:])
            with self.vision_mixture():
                image = super().forward(x[:, :images])
            return torch.cat([image, text], dim=1)

        @contextmanager
        def vision_mixture(self):
            """The vision mixture's router, correction and experts in the text mixture's places while the image
            positions run (MoE.forward reads them by those names); FlopCounterMode still names them as the vision
            mixture's modules (its module tracker names each child when the block is entered)."""
            names = ["router", "experts"] + (["correction_bias"] if hasattr(self, "correction_bias") else [])
            saved = {name: getattr(self, name) for name in names}
            for name in names:
                setattr(self, name, getattr(self, f"vision_{name}"))
            try:
                yield
            finally:
                for name, value in saved.items():
                    setattr(self, name, value)

    return IsolatedMoE
