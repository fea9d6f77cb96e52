"""Cross-domain mixture of experts (Doge: transformers 5.23.0, models/doge/modeling_doge.py, ``DogeCDMoE``): a dense
gated MLP beside a very large pool of single-neuron experts chosen by product-key routing (Lample et al. 2019,
"Large Memory Layers with Product Keys", arXiv:1907.05242, §3.2; He 2024, "Mixture of A Million Experts",
arXiv:2407.04153, PEER).

Per token, with E experts (each a row of down_embed and a row of up_embed, d_model wide), √E keys per half:

    s_x, s_y  = router_gate(x)                   d -> 2·⌊√E⌋, no bias: two sets of ⌊√E⌋ key scores
    experts   = top_k of the ⌊√E⌋² sums s_x[a] + s_y[b] (from the top ⌊√E⌋ of each half), expert a·⌊√E⌋ + b
    g         = softmax of their scores
    out       = down(act(gate(x)) ⊙ up(x)) + Σ_j g_j · act(down_embed[e_j] · x) · up_embed[e_j]

so that a token runs the dense MLP and top_k experts of 2·d multiply-adds each (k·d for the k dot products, k·d for
their weighted sum of up_embed rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.spec import Width, width
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS
from . import Block, register
from .dense_ffn import OUTPUT_SAVING
from .gated_ffn import GateActivation, GatedFFN
from .moe import BALANCED


@register
@dataclass(frozen=True)
class CrossDomainMoE(Block):
    """Doge's CDMoE: a dense gated MLP and product-key routed single-neuron experts."""

    kind = "cdmoe"
    slot = "ffn"
    summary = "cross-domain MoE: a dense gated MLP and product-key routed single-neuron experts (Doge)"
    verify_note = BALANCED

    d_ff: Width  # the dense MLP's width (DogeConfig.intermediate_size)
    n_experts: Positive  # DogeConfig.num_experts
    top_k: Positive  # DogeConfig.num_experts_per_tok
    activation: GateActivation = "silu"
    bias: bool = False  # on the dense MLP's projections (mlp_bias)

    @property
    def n_keys(self) -> int:
        """Keys per half of the product key: ⌊√E⌋ (DogeCDMoE.num_keys)."""
        return math.isqrt(self.n_experts)

    def __post_init__(self) -> None:
        if self.top_k > self.n_keys**2:
            raise SpecError(("top_k",), f"top_k {self.top_k} exceeds the {self.n_keys**2} key pairs")

    def resolve(self, d_model: int) -> CrossDomainMoE:
        return replace(self, d_ff=width(self.d_ff, d_model))

    @property
    def dense(self) -> GatedFFN:
        return GatedFFN(self.d_ff, self.activation, self.bias)

    def routed_experts(self) -> int:
        return self.n_experts

    def active_experts(self) -> int:
        return self.top_k

    def describe(self) -> str:
        return f"CDMoE {self.top_k}/{self.n_experts} + {self.dense.variant} {self.d_ff}"

    def facts(self) -> dict[str, object]:
        return {"ffn": f"CDMoE {self.top_k}/{self.n_experts}", "d_ff": self.d_ff}

    def terms(self, e, model, seq_len: int) -> None:
        d, n, k, keys = model.d_model, e.n, self.top_k, self.n_keys
        self.dense.emit(e, "ffn.", d, n, n, model.norm)
        e.linear("ffn.router_gate", d, 2 * keys, False, n)
        # the top ⌊√E⌋ of each half, their ⌊√E⌋² sums, the top k of those, and a softmax over the k
        e.op("ffn.routing", n * (keys * keys + SOFTMAX_OPS * k))
        # each expert one row of d in each embedding, k of them per token: a dot product with x, a weighted sum
        for name in ("down_embed", "up_embed"):
            e.term(
                f"ffn.{name}.weight", "weight", (d,), self.n_experts * n, k * n, macs=n * k * d, expert=True, component=f"ffn.{name}"
            )
        e.op("ffn.expert_act", n * k * (ACTIVATION_OPS[self.activation] + 1))  # act(·) · g
        e.op("ffn.combine", n * d)  # the experts' sum added to the dense MLP's output

    def kept_elements(self, model) -> int:
        """What a training stack keeps a token, the experts' rows gathered inside embedding-bag kernels (torch's
        embedding_bag, sum mode with per_sample_weights: indices and weights kept, never the gathered rows):

        - the dense MLP's elements (its input, the block's);
        - the product-key routing as DogeCDMoE runs it: each half's top ⌊√E⌋ int64 key indices (2 × 4·⌊√E⌋), the
          top-k's int64 positions among the pairs (4·k) and the softmax's output (k);
        - the experts: the chosen rows' int64 indices (4·k, both tables'), the dot products (k, the activation's
          input; none where the activation's gradient reads its output), the activation (k) and the weighted
          activation (k, the up rows' sum's weights)."""
        k = self.top_k
        pre = 0 if self.activation in OUTPUT_SAVING else k
        return self.dense.kept_elements(model) + 8 * self.n_keys + 4 * k + k + 4 * k + pre + k + k

    def torch_module(self, model, causal: bool):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import ACTIVATIONS, Linear

    class ExpertRows(nn.Module):
        """E rows of d (an nn.Embedding's weight), k gathered per token; verify attributes its FLOPs to its weight."""

        weight_flops = True

        def __init__(self, experts: int, d: int):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(experts, d))

        def forward(self, index: torch.Tensor, other: torch.Tensor, down: bool) -> torch.Tensor:
            rows = self.weight[index]  # (T, k, d)
            if down:  # each chosen row's dot product with x: (T, k, d) @ (T, d, 1)
                return (rows @ other[..., None]).squeeze(-1)
            return (other[:, None, :] @ rows).squeeze(-2)  # the weighted sum of the rows: (T, 1, k) @ (T, k, d)

    class CDMoE(nn.Module):
        def __init__(self, spec: CrossDomainMoE, model):
            super().__init__()
            d = model.d_model
            self.top_k, self.n_experts, self.n_keys = spec.top_k, spec.n_experts, spec.n_keys
            self.act = ACTIVATIONS[spec.activation]
            self.gate = Linear(d, spec.d_ff, bias=spec.bias)
            self.up = Linear(d, spec.d_ff, bias=spec.bias)
            self.down = Linear(spec.d_ff, d, bias=spec.bias)
            self.router_gate = Linear(d, 2 * spec.n_keys, bias=False)
            self.down_embed = ExpertRows(spec.n_experts, d)
            self.up_embed = ExpertRows(spec.n_experts, d)
            self.balanced = False

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            shape = x.shape
            flat = x.reshape(-1, shape[-1])
            tokens, k, keys = flat.shape[0], self.top_k, self.n_keys
            sx, sy = self.router_gate(flat).view(tokens, 2, keys).unbind(1)
            if self.balanced:  # token t's j-th expert (t·k + j) mod E: no data needed
                index = torch.arange(tokens * k, device=x.device).view(tokens, k) % self.n_experts
                scores = (sx[:, :1] + sy[:, :1]).expand(tokens, k)
            else:
                (vx, ix), (vy, iy) = sx.topk(keys, dim=-1), sy.topk(keys, dim=-1)
                pair = (vx[:, :, None] + vy[:, None, :]).flatten(1)
                scores, position = pair.topk(k, dim=-1)
                index = (ix[:, :, None] * keys + iy[:, None, :]).flatten(1).gather(1, position)
            g = scores.softmax(dim=-1)
            from . import _fused

            if _fused.active():  # the rows gathered inside embedding-bag kernels, never kept
                weights = self.act(_fused.row_dot(flat, index, self.down_embed.weight)) * g
                experts = _fused.row_sum(weights, index, self.up_embed.weight)
            else:
                weights = self.act(self.down_embed(index, flat, True)) * g
                experts = self.up_embed(index, weights, False)
            dense = self.down(self.act(self.gate(flat)) * self.up(flat))
            return (dense + experts).reshape(shape)

    return CDMoE
