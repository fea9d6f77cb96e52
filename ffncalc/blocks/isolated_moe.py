"""Modality-isolated mixture of experts: ERNIE 4.5-VL's (Baidu 2025; transformers 5.23's Ernie4_5_VLMoeMoeBlock,
modeling_ernie4_5_vl_moe.py). Each sparse layer holds two mixtures of the same number of experts and top-k, each with
its own router (Ernie4_5_VLMoeMoeTopKRouter) and score correction (moe_statics), and shared experts every token runs:

- the text mixture (text_moe, experts of moe_intermediate_size[0]), which text tokens run;
- the vision mixture (vision_moe, experts of moe_intermediate_size[1]), which image and video tokens run instead.

A token of the sequence is counted as a text token: its active parameters and FLOPs are the text mixture's and the
shared experts'; the vision mixture's router, correction and experts are parameters no text token runs (no work,
none active). An image's tokens are charged as text tokens too (the count's note says so): transformers runs them
through the vision mixture, whose experts are narrower."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import SpecError
from . import MODULE_NAMES, register
from .moe import Expert, MoEFFN

IMAGE_TOKENS = (
    "modality-isolated experts: each sparse layer's vision mixture ({n} experts of {f}, its own router) is counted in the "
    "parameters and runs for no text token; image tokens are charged as text tokens, through the text mixture ({t} "
    "wide), where transformers runs them through the vision mixture"
)


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
        its experts, held in every sparse layer and run by no text token."""
        super().terms(e, model, seq_len)
        d, n = model.d_model, e.n
        assert self.vision_expert is not None
        e.linear("ffn.vision_router", d, self.n_experts, False, n, 0)
        if self.correction_bias:
            e.term("ffn.vision_correction_bias", "bias", (self.n_experts,), n, 0)
        self.vision_expert.emit(
            e, "ffn.vision_experts.", d, self.n_experts * n, 0, model.norm, expert=True, component="ffn.vision_experts"
        )

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
        """The text mixture as MoEFFN's module runs it (every token a text token), and the vision mixture's router,
        correction bias and experts, held and not run."""

        def __init__(self, model, ffn: IsolatedMoEFFN, causal: bool):
            super().__init__(model, ffn, causal)
            self.vision_router = Linear(model.d_model, ffn.n_experts, bias=False)
            if ffn.correction_bias:
                self.vision_correction_bias = nn.Parameter(torch.zeros(ffn.n_experts))
            assert ffn.vision_expert is not None
            self.vision_experts = nn.ModuleList(ffn.vision_expert.torch_module(model, causal) for _ in range(ffn.n_experts))

    return IsolatedMoE
