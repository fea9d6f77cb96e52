"""A dense FFN and a mixture of experts side by side, both reading the layer's input, each output normalised and
the two added (Gemma 4's MoE layers: Gemma4TextDecoderLayer with enable_moe_block)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated

from ..model.schema import Positive, Slot, SpecError
from ..model.terms import SOFTMAX_OPS
from . import Block, register
from .moe import BALANCED

Body = Annotated[object, Slot("ffn", only=("dense", "gated"))]
RMS_OPS = 3  # a weightless RMS norm per element: square, add, scale


@register
@dataclass(frozen=True)
class DenseMoEFFN(Block):
    """``dense`` (ffn.gate/up/down) beside a mixture: a router picks ``top_k`` of ``n_experts`` routed experts.

    The router normalises its input without weights (RMS), scales it by a learned vector (router_scale) and
    projects it to the experts' logits (router); the top-k softmax weights, renormalised, are scaled by a
    learned per-expert factor (expert_scale). Three norms of the model's kind (ffn.norms): one on the
    mixture's input, one on each branch's output before the sum (Gemma4TextDecoderLayer's
    pre_feedforward_layernorm_2, post_feedforward_layernorm_1 and _2).
    """

    kind = "dense_moe"
    slot = "ffn"
    summary = "a dense FFN beside a mixture of experts, each normalised, outputs added (Gemma 4)"
    verify_note = BALANCED

    dense: Body
    n_experts: Positive
    top_k: Positive
    expert: Body

    def __post_init__(self) -> None:
        if self.top_k > self.n_experts:
            raise SpecError(("top_k",), f"top_k {self.top_k} exceeds n_experts {self.n_experts}")

    @property
    def variant(self) -> str:
        return f"{self.dense.variant} + MoE {self.top_k}/{self.n_experts} × {self.expert.variant}"

    def resolve(self, d_model: int) -> DenseMoEFFN:
        return replace(self, dense=self.dense.resolve(d_model), expert=self.expert.resolve(d_model))

    def routed_experts(self) -> int:
        return self.n_experts

    def active_experts(self) -> int:
        return self.top_k

    def describe(self) -> str:
        return self.variant

    def facts(self) -> dict[str, object]:
        return {"ffn": self.variant, "d_ff": self.expert.d_ff}

    def terms(self, e, model, seq_len: int) -> None:
        d, n, experts, k = model.d_model, e.n, self.n_experts, self.top_k
        self.dense.emit(e, "ffn.", d, n, n, model.norm)
        e.op("ffn.router_norm", n * RMS_OPS * d)
        e.term("ffn.router_scale", "norm", (d,), n, elementwise=n * 2 * d)  # the scale, and 1/√d
        e.linear("ffn.router", d, experts, False, n)
        e.op("ffn.router_softmax", n * SOFTMAX_OPS * experts)
        e.term("ffn.expert_scale", "norm", (experts,), n, elementwise=n * 2 * k)  # renormalise, scale
        e.norm("ffn.norms", model.norm, d, 3 * n)
        self.expert.emit(e, "ffn.experts.", d, experts * n, k * n, model.norm, expert=True, component="ffn.experts")
        e.op("ffn.combine", n * (2 * k + 1) * d)  # scale each chosen expert's output, add it in; add the branches

    def kept_elements(self, model) -> int:
        """What a training stack keeps a token (Gemma4TextRouter's routing, the experts grouped GEMMs behind a permute
        and an unpermute as in ``moe``, fused norms):

        - the dense branch's elements (its input, the layer's, counted once);
        - its output norm's input (d) and fp32 statistic (2 16-bit elements; a LayerNorm's mean too, 4);
        - the router: its weightless RMS norm fused with the learned scale keeps its fp32 inverse RMS (2; its input is
          the layer's), the projection its input (d), the fp32 softmax its output (2·E), the top-k its int64 indices
          (4·k); the renormalising divide its fp32 operands (2·k and the sum's 2) and the per-expert scale's product
          the renormalised weights (2·k) and the gathered scales (k);
        - the mixture's input norm its statistic (its input is the layer's);
        - each chosen expert's elements (its input the dispatched copy) and output (d), the fp32 weights (2·k) and the
          int64 permutation (4·k) the unpermute keeps;
        - the mixture's output norm its input (d) and its statistic."""
        d, e, k = model.d_model, self.n_experts, self.top_k
        stat = 4 if model.norm.kind.startswith("layernorm") else 2  # fp32 inverse RMS (and mean) a row
        router = 2 + d + 2 * e + 4 * k + (2 * k + 2) + (2 * k + k)
        routed = k * (self.expert.kept_elements(model) + d) + 2 * k + 4 * k
        return self.dense.kept_elements(model) + (d + stat) + router + stat + routed + (d + stat)

    def torch_module(self, model, causal: bool):
        return _module()(model, self, causal)


@cache
def _module():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import ACTIVATIONS, Linear, make_norm

    class DenseMoE(nn.Module):
        """The dense branch (gate, up, down), the router (router_scale, router, expert_scale), the routed
        experts and three norms. Both branches read this module's input: in the layer the mixture and the
        router read the residual stream before pre_feedforward_layernorm, a tensor of the same shape.
        ``balanced`` routing as the mixture block's (token-slot j to expert j mod n_experts)."""

        def __init__(self, model, ffn: DenseMoEFFN, causal: bool):
            super().__init__()
            d, body = model.d_model, ffn.dense
            self.gated, self.act = body.gated, ACTIVATIONS[body.activation]
            if body.gated:
                self.gate = Linear(d, body.d_ff, bias=body.bias)
            self.up = Linear(d, body.d_ff, bias=body.bias)
            if body.sub_norm:
                self.sub_norm = make_norm(model.norm, body.d_ff)
            self.down = Linear(body.d_ff, d, bias=body.out_bias)
            self.router_scale = nn.Parameter(torch.ones(d))
            self.router = Linear(d, ffn.n_experts, bias=False)
            self.expert_scale = nn.Parameter(torch.ones(ffn.n_experts))
            self.norms = nn.ModuleList(make_norm(model.norm, d) for _ in range(3))
            self.experts = nn.ModuleList(ffn.expert.torch_module(model, causal) for _ in range(ffn.n_experts))
            self.top_k, self.n_experts, self.d = ffn.top_k, ffn.n_experts, d
            self.balanced = False

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            shape = x.shape
            h = self.act(self.gate(x)) * self.up(x) if self.gated else self.act(self.up(x))
            if hasattr(self, "sub_norm"):
                h = self.sub_norm(h)
            dense = self.norms[1](self.down(h))
            flat = x.reshape(-1, shape[-1])
            if _fused.active() and not self.balanced:
                return dense + self.norms[2](self.mixture(flat).reshape(shape))
            logits = self.router(F.rms_norm(flat, (self.d,)) * self.router_scale * self.d**-0.5)
            probs = logits.softmax(dim=-1)
            tokens = flat.shape[0]
            if self.balanced:  # slot j goes to expert j mod n_experts: a fixed index, no data needed
                chosen = torch.arange(tokens * self.top_k, device=x.device).view(tokens, self.top_k) % self.n_experts
                weights = probs.gather(1, chosen)
            else:
                weights, chosen = probs.topk(self.top_k, dim=-1)
            weights = weights / weights.sum(dim=-1, keepdim=True) * self.expert_scale[chosen]
            inner = self.norms[0](flat)
            out = torch.zeros_like(flat)
            token_of_slot = torch.arange(tokens, device=x.device).repeat_interleave(self.top_k)
            expert_of_slot, weight_of_slot = chosen.reshape(-1), weights.reshape(-1)
            for j, expert in enumerate(self.experts):
                if self.balanced:
                    if j >= expert_of_slot.shape[0]:
                        continue  # fewer token-slots than experts: this one gets none
                    slots = torch.arange(j, expert_of_slot.shape[0], self.n_experts, device=x.device)
                else:
                    slots = (expert_of_slot == j).nonzero().squeeze(-1)
                if slots.numel() == 0:
                    continue
                rows = token_of_slot[slots]
                out.index_add_(0, rows, expert(inner[rows]) * weight_of_slot[slots, None].to(flat.dtype))
            return dense + self.norms[2](out.reshape(shape))

        def mixture(self, flat: torch.Tensor) -> torch.Tensor:
            """The routed branch as a training stack runs it (Gemma4TextRouter: the weightless RMS norm and the learned
            scale one fused RMSNorm, the softmax in fp32, the top-k weights renormalised and scaled per expert in
            fp32; the experts behind a permute and an unpermute, ``_fused.routed``)."""
            from . import _fused

            eps = torch.finfo(torch.float32).eps  # F.rms_norm's default for the eager form's fp32 reference
            scaled = _fused.norm(flat, self.router_scale, None, eps, False) * self.d**-0.5
            probs = torch.softmax(self.router(scaled), dim=-1, dtype=torch.float32)
            weights, chosen = probs.topk(self.top_k, dim=-1)
            weights = weights / weights.sum(dim=-1, keepdim=True) * self.expert_scale[chosen]
            return _fused.routed(self.norms[0](flat), chosen, weights, self.experts)

    return DenseMoE
