"""Inkling's feed-forward blocks (transformers 5.23.0, models/inkling/modeling_inkling.py), each followed by the
layer's short convolution on its output (``mlp_sconv``, blocks/_sconv.py):

``sink_moe`` (InklingMoE): one router scores the routed and the shared experts together, a (E + S) × d matrix; the
top_k routed experts are chosen by their sigmoid scores (plus e_score_correction_bias, a buffer), and the logits of
the chosen and of the shared experts are normalised together (log-sigmoid, then a softmax), so that the shared
experts are a sink for the routed ones' weight; every weight is multiplied by route_scale and a learned global
scale (InklingTopkRouter.global_scale, one parameter). The routed experts are SwiGLU (fused gate_up_proj, down_proj);
the S shared experts are SwiGLU as well (3-D gate_proj, up_proj, down_proj), each scaled by its own weight. The
experts' loop treats an index equal to E as an empty expert sink.

With ``router: sigmoid`` (Inkling 2: Inkling2TopKRouter, Inkling2SparseMoeBlock): a router over the routed experts
alone, E × d; sigmoid scores, the top_k chosen by score plus e_score_correction_bias (a buffer), their scores
normalised to sum to one and multiplied by route_scale; no shared experts and no learned scale. Its experts may be
soft-capped SwiGLU (Inkling2SoftcappedSwiGLU): c_g·tanh(g/c_g)·σ(g)·c_u·tanh(u/c_u), the linear factors of the gate
and of up bounded by ``gate_softcap`` and ``up_softcap``. ``conv_scale``: the output convolution's sum × 1/√(K + 1).

``scaled_gated`` (InklingMLP): a gated MLP whose output a learned scalar multiplies (global_scale).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated, Literal

from ..model.schema import NonNegative, Positive, PositiveFloat, Slot, SpecError
from ..model.spec import Width, width
from . import Block, register
from ._sconv import emit_residual_conv, residual_conv, residual_conv_state
from .gated_ffn import GATED_VARIANTS, GateActivation, GatedFFN
from .moe import BALANCED

Expert = Annotated[object, Slot("ffn", only=("gated",))]

# InklingTopkRouter per token: a sigmoid per routed expert (4) and its correction add (1) to choose; log-sigmoid
# of the top_k + S chosen logits (3), their log-sum-exp (3), subtract and exp (2); × route_scale and × the
# global scale (2)
CHOOSE_OPS, WEIGHT_OPS = 5, 10
# Inkling2TopKRouter per token: a sigmoid per expert (4) and its correction add (1) to choose; of the top_k chosen
# scores, their sum (1), the divide (1) and × route_scale (1), and the sum's + 1e-20 once
SIGMOID_WEIGHT_OPS = 3
SOFTCAP_OPS = 3  # c·tanh(x/c): a divide, the tanh, a multiply


@register
@dataclass(frozen=True)
class SinkMoE(Block):
    """Inkling's mixture: routed and shared experts scored by one router, weighted together, times a learned scale."""

    kind = "sink_moe"
    slot = "ffn"
    summary = "mixture whose router weighs routed and shared experts together, times a learned scale (Inkling)"
    verify_note = BALANCED

    n_experts: Positive  # routed experts (n_routed_experts)
    top_k: Positive  # num_experts_per_tok
    expert: Expert
    n_shared_experts: NonNegative = 0  # n_shared_experts: scored by the router beside the routed ones
    shared: Expert | None = None
    conv_kernel: Positive | None = None  # the layer's short convolution on the output (mlp_sconv); none: no conv
    router: Literal["sink", "sigmoid"] = "sink"  # sigmoid: Inkling 2's router over the routed experts alone
    gate_softcap: PositiveFloat | None = None  # Inkling 2's experts: the gate's linear factor soft-capped
    up_softcap: PositiveFloat | None = None  # and up's
    conv_scale: bool = False  # the output convolution's sum × 1/√(K + 1) (Inkling 2)

    def __post_init__(self) -> None:
        if self.top_k > self.n_experts:
            raise SpecError(("top_k",), f"top_k {self.top_k} exceeds n_experts {self.n_experts}")
        if (self.shared is None) != (self.n_shared_experts == 0):
            raise SpecError(("shared",), "shared experts need their FFN, and only they have one")
        if self.router == "sigmoid" and self.n_shared_experts:
            raise SpecError(("n_shared_experts",), "the sigmoid router scores the routed experts alone")

    @property
    def variant(self) -> str:
        return f"MoE {self.top_k}/{self.n_experts} × {self.expert.variant}"

    def resolve(self, d_model: int) -> SinkMoE:
        shared = self.shared.resolve(d_model) if self.shared is not None else None
        return replace(self, expert=self.expert.resolve(d_model), shared=shared)

    def routed_experts(self) -> int:
        return self.n_experts

    def active_experts(self) -> int:
        return self.top_k

    def shared_experts(self) -> int:
        return self.n_shared_experts

    def describe(self) -> str:
        if self.router == "sigmoid":
            return f"{self.variant}, sigmoid router" + (", soft-capped" if self.gate_softcap or self.up_softcap else "")
        return f"{self.variant}, {self.n_shared_experts} shared in the router"

    def facts(self) -> dict[str, object]:
        return {"ffn": self.variant, "d_ff": self.expert.d_ff}

    def terms(self, e, model, seq_len: int) -> None:
        d, n, experts, shared, k = model.d_model, e.n, self.n_experts, self.n_shared_experts, self.top_k
        e.linear("ffn.router", d, experts + shared, False, n)
        if self.router == "sink":
            e.term("ffn.router.global_scale", "bias", (1,), n, component="ffn.router")
            e.op("ffn.router_weights", n * (CHOOSE_OPS * experts + WEIGHT_OPS * (k + shared)))
        else:
            e.op("ffn.router_weights", n * (CHOOSE_OPS * experts + SIGMOID_WEIGHT_OPS * k + 1))
        self.expert.emit(e, "ffn.experts.", d, experts * n, k * n, model.norm, expert=True, component="ffn.experts")
        caps = (self.gate_softcap is not None) + (self.up_softcap is not None)
        if caps:  # each chosen expert's hidden unit: the caps (the gate's multiplies σ(g) where silu multiplied g)
            e.op("ffn.experts.softcap", n * k * self.expert.d_ff * caps * SOFTCAP_OPS, component="ffn.experts")
        e.op("ffn.combine", n * 2 * k * d)  # scale each chosen expert's output, add it in
        if shared:
            copies = shared * n
            self.shared.emit(e, "ffn.shared.", d, copies, copies, model.norm, component="ffn.shared")
            e.op("ffn.shared_weights", copies * (self.shared.d_ff + d))  # each hidden unit × its weight; the sum
        if self.conv_kernel is not None:
            emit_residual_conv(e, "ffn.out_conv1d", d, self.conv_kernel, n, self.conv_scale)

    def state_elements(self, model) -> int:
        return residual_conv_state(model.d_model, self.conv_kernel) if self.conv_kernel is not None else 0

    def kept_elements(self, model) -> int:
        """What a training stack keeps a token, the routing in fp32 as transformers runs it and the routed experts
        grouped GEMMs behind a permute and an unpermute (as ``moe``):

        - the input (d: the router's and every expert's projections read it);
        - the chosen logits' flat int64 index (4·k); the sink router the log-sigmoid's fp32 input and the softmax's
          fp32 output over the k chosen and S shared logits (2·(k + S) each); the sigmoid router the sigmoid's fp32
          output over the E routed experts (2·E), the gathered scores and their sum (2·k + 2), the divide's operands;
        - the weights cast to 16 bits: the routed ones the unpermute keeps (k) and the shared ones their products
          (S);
        - each chosen expert's elements (its input the dispatched copy) and output (d), and the int64 permutation
          (4·k);
        - each shared expert's elements but its input, and its output (d, its weight's gradient);
        - the output convolution (causal-conv1d's kernel) its input (d)."""
        d, k, s = model.d_model, self.top_k, self.n_shared_experts
        if self.router == "sigmoid":
            router = 4 * k + 2 * self.n_experts + 2 * k + 2
        else:
            router = 4 * k + 2 * (k + s) + 2 * (k + s)
        routed = k * (self.expert.kept_elements(model) + d) + k + 4 * k
        shared = s * (self.shared.kept_elements(model) - d + d) + s if self.shared is not None else 0
        conv = d if self.conv_kernel is not None else 0
        return d + router + routed + shared + conv

    def torch_module(self, model, causal: bool):
        return _modules()[0](self, model, causal)

    def body(self) -> Block:
        return self.expert

    def with_body(self, body: Block) -> SinkMoE:
        return replace(self, expert=body)


@register
@dataclass(frozen=True)
class ScaledGated(Block):
    """A gated MLP times a learned scalar (Inkling's dense layers), then the layer's output convolution."""

    kind = "scaled_gated"
    slot = "ffn"
    summary = "gated MLP whose output a learned scalar scales (Inkling's dense layers)"

    d_ff: Width
    activation: GateActivation = "silu"
    conv_kernel: Positive | None = None  # the layer's short convolution on the output (mlp_sconv)

    @property
    def gated(self) -> GatedFFN:
        return GatedFFN(self.d_ff, self.activation)

    def resolve(self, d_model: int) -> ScaledGated:
        return replace(self, d_ff=width(self.d_ff, d_model))

    def describe(self) -> str:
        return f"{GATED_VARIANTS[self.activation]}, scaled"

    def facts(self) -> dict[str, object]:
        return {"ffn": GATED_VARIANTS[self.activation], "d_ff": self.d_ff}

    def terms(self, e, model, seq_len: int) -> None:
        d, n = model.d_model, e.n
        self.gated.emit(e, "ffn.", d, n, n, model.norm)
        e.term("ffn.global_scale", "bias", (1,), n, elementwise=n * d)
        if self.conv_kernel is not None:
            emit_residual_conv(e, "ffn.out_conv1d", d, self.conv_kernel, n)

    def state_elements(self, model) -> int:
        return residual_conv_state(model.d_model, self.conv_kernel) if self.conv_kernel is not None else 0

    def kept_elements(self, model) -> int:
        """The gated MLP's (d + 4·d_ff), its output (d, for the scale's gradient); the convolution's input (d)."""
        conv = model.d_model if self.conv_kernel is not None else 0
        return self.gated.kept_elements(model) + model.d_model + conv

    def torch_module(self, model, causal: bool):
        return _modules()[1](self, model, causal)

    def body(self) -> Block:
        return self.gated

    def with_body(self, body: Block) -> ScaledGated:
        if not getattr(body, "gated", False) or not hasattr(body, "activation") or body.activation == "xielu":
            raise SpecError(("ffn",), "Inkling's dense MLP is gated")
        return replace(self, d_ff=body.d_ff, activation=body.activation)


@cache
def _modules():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import Linear

    class Router(Linear):
        """The router's matrix over routed and shared experts, and its learned global scale."""

        def __init__(self, d: int, rows: int, scaled: bool = True):
            super().__init__(d, rows, bias=False)
            if scaled:
                self.global_scale = nn.Parameter(torch.ones(1))

    class SinkMixture(nn.Module):
        def __init__(self, spec: SinkMoE, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.top_k, self.n_experts, self.n_shared = spec.top_k, spec.n_experts, spec.n_shared_experts
            self.sigmoid = spec.router == "sigmoid"
            self.router = Router(d, spec.n_experts + spec.n_shared_experts, not self.sigmoid)
            # (the experts' soft caps bound activations only: the reference runs them as plain SwiGLU)
            self.experts = nn.ModuleList(spec.expert.torch_module(model, causal) for _ in range(spec.n_experts))
            self.shared = nn.ModuleList(spec.shared.torch_module(model, causal) for _ in range(spec.n_shared_experts))
            if spec.conv_kernel is not None:
                scale = (spec.conv_kernel + 1) ** -0.5 if spec.conv_scale else 1.0
                self.out_conv1d = residual_conv(d, spec.conv_kernel, scale)
            self.balanced = False

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            shape = x.shape
            flat = x.reshape(-1, shape[-1])
            tokens = flat.shape[0]
            if _fused.active() and not self.balanced:
                out = self.mixture(flat).reshape(shape)
                return self.out_conv1d(out) if hasattr(self, "out_conv1d") else out
            logits = self.router(flat)
            routed, shared = logits[:, : self.n_experts], logits[:, self.n_experts :]
            if self.balanced:  # token-slot j goes to expert j mod n_experts: no data needed
                chosen = torch.arange(tokens * self.top_k, device=x.device).view(tokens, self.top_k) % self.n_experts
            else:
                chosen = routed.sigmoid().topk(self.top_k, dim=-1).indices
            if self.sigmoid:  # the chosen scores normalised to sum to one
                scores = routed.sigmoid().gather(1, chosen)
                weights = scores / (scores.sum(dim=-1, keepdim=True) + 1e-20)
            else:
                picked = torch.nn.functional.logsigmoid(torch.cat([routed.gather(1, chosen), shared], dim=-1))
                weights = (picked - picked.logsumexp(dim=-1, keepdim=True)).exp() * self.router.global_scale
            out = torch.zeros_like(flat)
            slot_token = torch.arange(tokens, device=x.device).repeat_interleave(self.top_k)
            slot_expert, slot_weight = chosen.reshape(-1), weights[:, : self.top_k].reshape(-1)
            for i, expert in enumerate(self.experts):
                if self.balanced:
                    if i >= slot_expert.shape[0]:
                        continue
                    slots = torch.arange(i, slot_expert.shape[0], self.n_experts, device=x.device)
                else:
                    slots = (slot_expert == i).nonzero().squeeze(-1)
                if slots.numel() == 0:
                    continue
                rows = slot_token[slots]
                out.index_add_(0, rows, expert(flat[rows]) * slot_weight[slots, None])
            for j, expert in enumerate(self.shared):
                out = out + expert(flat) * weights[:, self.top_k + j, None]
            out = out.reshape(shape)
            return self.out_conv1d(out) if hasattr(self, "out_conv1d") else out

        def mixture(self, flat: torch.Tensor) -> torch.Tensor:
            """The mixture as a training stack runs it: the routing in fp32 (InklingTopkRouter, Inkling2TopKRouter), the
            chosen logits gathered by one flat int64 index, the sink router's exp(log σ − logsumexp log σ) as a softmax
            of log σ (written −softplus(−l)), the weights cast to the activations' dtype (as transformers casts them);
            the routed experts behind a permute and an unpermute (``_fused.routed``), each shared expert's output
            scaled by its weight."""
            from . import _fused

            tokens, width = flat.shape[0], self.n_experts + self.n_shared
            logits = self.router(flat).float()
            with torch.no_grad():
                chosen = logits[:, : self.n_experts].sigmoid().topk(self.top_k, dim=-1).indices
                index = chosen + torch.arange(tokens, device=flat.device)[:, None] * width
            if self.sigmoid:
                scores = logits.sigmoid().reshape(-1)[index]
                weights = scores / (scores.sum(dim=-1, keepdim=True) + 1e-20)
            else:
                picked = torch.cat([logits.reshape(-1)[index], logits[:, self.n_experts :]], dim=-1)
                weights = torch.softmax(-F.softplus(-picked), dim=-1) * self.router.global_scale
            weights = weights.to(flat.dtype)
            routed, gammas = weights[:, : self.top_k].contiguous(), weights[:, self.top_k :].contiguous()
            out = _fused.routed(flat, chosen, routed, self.experts)
            for j, expert in enumerate(self.shared):
                out = out + expert(flat) * gammas[:, j, None]
            return out

    from .dense_ffn import mlp_module

    class ScaledMLP(mlp_module()):
        """The gated MLP's gate, up and down, its output times global_scale."""

        def __init__(self, spec: ScaledGated, model, causal: bool):
            super().__init__(model.d_model, spec.gated, model.norm)
            self.global_scale = nn.Parameter(torch.ones(1))
            if spec.conv_kernel is not None:
                self.out_conv1d = residual_conv(model.d_model, spec.conv_kernel)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = super().forward(x) * self.global_scale
            return self.out_conv1d(out) if hasattr(self, "out_conv1d") else out

    return SinkMixture, ScaledMLP
