"""Mixture of attention heads (Zhang et al. 2022, "Mixture of Attention Heads: Selecting Attention Heads Per Token",
arXiv:2210.05144; Shen et al. 2024, "JetMoE: Reaching Llama2 Performance with 0.1M Dollars", arXiv:2404.07413, §2.2),
as transformers instantiates it in JetMoE (transformers 5.23.0, models/jetmoe/modeling_jetmoe.py, ``JetMoeAttention``
and ``JetMoeMoA``).

Per token, with E attention experts of which a router picks k, kv key/value heads of width d_h shared by every expert:

    i_1..i_k, g = topk(router(x)), softmax over the k chosen logits       router: d -> E, no bias
    q_j     = W_q^{(i_j)} x                   each chosen expert's query projection: d -> kv·d_h
    k, v    = kv_proj(x)                      one shared projection: d -> 2·kv·d_h (no bias)
    o_j     = attention(q_j, k, v)            kv heads per expert: k·kv query heads over kv key/value heads
    out     = Σ_j g_j · W_o^{(i_j)} o_j + b   each chosen expert's output projection: kv·d_h -> d, one bias of d

so that per token the attention meets the keys with k·kv query heads (JetMoeConfig sets num_attention_heads to
num_key_value_heads · num_experts_per_tok), and the experts' projections run k of E.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ROTARY_OPS, SOFTMAX_OPS
from . import Block, register
from .attention import softmax_score_bytes
from .moe import BALANCED


@register
@dataclass(frozen=True)
class MixtureOfAttention(Block):
    """Mixture of attention heads: top-k of E experts' query and output projections, shared keys and values."""

    kind = "moa"
    slot = "attention"
    summary = "mixture of attention heads: routed query and output projections, shared K/V (Zhang et al. 2022, JetMoE)"
    verify_note = BALANCED

    n_experts: Positive
    top_k: Positive
    n_kv_heads: Positive  # key/value heads, and each expert's query heads (JetMoeConfig.num_key_value_heads)
    head_dim: Positive  # JetMoeConfig.kv_channels
    output_bias: bool = True  # JetMoeMoA.bias, added to the experts' combined output

    def __post_init__(self) -> None:
        if self.top_k > self.n_experts:
            raise SpecError(("top_k",), f"top_k {self.top_k} exceeds n_experts {self.n_experts}")

    @property
    def heads(self) -> int:
        """Query heads a token's attention runs: every chosen expert's."""
        return self.top_k * self.n_kv_heads

    @property
    def width(self) -> int:
        return self.n_kv_heads * self.head_dim

    def routed_experts(self) -> int:
        return self.n_experts

    def active_experts(self) -> int:
        return self.top_k

    def describe(self) -> str:
        return f"MoA {self.top_k}/{self.n_experts} × {self.n_kv_heads} heads × {self.head_dim}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"MoA {self.heads}/{self.n_kv_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, n, w, h, hd = model.d_model, e.n, self.width, self.heads, self.head_dim
        e.linear("attn.router", d, self.n_experts, False, n)
        e.op("attn.router_softmax", n * SOFTMAX_OPS * self.top_k)  # a softmax over the k chosen logits
        e.linear("attn.experts.q", d, w, False, self.n_experts * n, self.top_k * n, expert=True, component="attn.experts.q")
        e.linear("attn.kv", d, 2 * w, False, n)
        if model.positions == "rotary":
            e.op("attn.rotary", n * ROTARY_OPS * (h + self.n_kv_heads) * hd)
        e.term("attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        scores = n * h * seq_len
        e.op("attn.softmax", SOFTMAX_OPS * scores, scores=scores)
        e.term("attn.values", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        e.linear("attn.experts.o", w, d, False, self.n_experts * n, self.top_k * n, expert=True, component="attn.experts.o")
        e.op("attn.combine", n * 2 * self.top_k * d)  # scale each chosen expert's output, add it in
        if self.output_bias:
            e.term("attn.bias", "bias", (d,), n, elementwise=n * d, component="attn.bias")

    def cache_elements(self, model) -> int:
        """K and V of the shared key/value heads."""
        return 2 * self.width

    def kept_elements(self, model) -> int:
        """What JetMoE's training keeps a token (the authors' ScatterMoE ParallelLinear for the experts' projections,
        which gathers rows inside the kernel and keeps its input as given; JetMoeAttention's K and V repeated for
        every chosen expert's heads into a flash kernel):

        - the input (d: the router's, the experts' query projections' and kv's);
        - the router: the top-k's int64 indices (4·k) and the fp32 softmax over the chosen logits (2·k); the
          slots' sorted expert ids and their permutation, int64, shared by both projections (4·k + 4·k);
        - the flash kernel's Q (k·kv·d_h, rotated), K and V repeated to k·kv heads (k·kv·d_h each) and its output
          (k·kv·d_h, the output projection's input as well), and a log-sum-exp a query head (``score_bytes``);
        - the output projection's gates, cast to 16 bits (k), and each slot's output before them (k·d, the gates'
          gradient)."""
        k, w = self.top_k, self.width
        return model.d_model + 4 * k + 2 * k + 8 * k + 4 * k * w + k + k * model.d_model

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        return softmax_score_bytes(self.heads, seq_len, flash)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import Linear, MatMul, attend, rotate

    class Expert(nn.Module):
        def __init__(self, d: int, width: int):
            super().__init__()
            self.q = Linear(d, width, bias=False)
            self.o = Linear(width, d, bias=False)

    class MoA(nn.Module):
        """Routed query and output projections around attention with shared keys and values. ``balanced`` routing
        sends token-slot j (token j // k) to expert j mod E, as the MoE's does (no data needed)."""

        def __init__(self, spec: MixtureOfAttention, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.top_k, self.n_experts, self.kv_heads, self.head_dim = spec.top_k, spec.n_experts, spec.n_kv_heads, spec.head_dim
            self.positions, self.causal = model.positions, causal
            self.router = Linear(d, spec.n_experts, bias=False)
            self.experts = nn.ModuleList(Expert(d, spec.width) for _ in range(spec.n_experts))
            self.kv = Linear(d, 2 * spec.width, bias=False)
            self.scores = MatMul()
            self.values = MatMul()
            if spec.output_bias:
                self.bias = nn.Parameter(torch.zeros(d))
            self.balanced = False

        def _slots(self, e: int, experts: torch.Tensor) -> torch.Tensor:
            if self.balanced:
                return torch.arange(e, experts.numel(), self.n_experts, device=experts.device)
            return (experts.reshape(-1) == e).nonzero().squeeze(-1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            if _fused.active() and not self.balanced:
                return self.scattered(x)
            b, s, d = x.shape
            flat = x.reshape(-1, d)
            tokens, k = flat.shape[0], self.top_k
            logits = self.router(flat)
            if self.balanced:
                experts = torch.arange(tokens * k, device=x.device).view(tokens, k) % self.n_experts
                chosen = logits.gather(1, experts)
            else:
                chosen, experts = logits.topk(k, dim=-1)
            gates = chosen.softmax(dim=-1).reshape(-1)
            width = self.kv_heads * self.head_dim
            q = flat.new_zeros(tokens * k, width)
            for e, expert in enumerate(self.experts):
                slots = self._slots(e, experts)
                if slots.numel():
                    q[slots] = expert.q(flat[slots // k])
            q = q.view(b, s, k * self.kv_heads, self.head_dim).transpose(1, 2)  # head j·kv + i: expert slot j, head i
            key, value = (t.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2) for t in self.kv(x).chunk(2, dim=-1))
            if self.positions == "rotary":
                q, key = rotate(q), rotate(key)
            key, value = key.repeat(1, k, 1, 1), value.repeat(1, k, 1, 1)  # slot j's head i reads K/V head i
            o = attend(self, q, key, value).transpose(1, 2).reshape(tokens * k, width)
            out = flat.new_zeros(tokens, d)
            for e, expert in enumerate(self.experts):
                slots = self._slots(e, experts)
                if slots.numel():
                    out.index_add_(0, slots // k, expert.o(o[slots]) * gates[slots, None].to(flat.dtype))
            if hasattr(self, "bias"):
                out = out + self.bias
            return out.view(b, s, d)

        def scattered(self, x: torch.Tensor) -> torch.Tensor:
            """As JetMoE trains it: the router's logits in fp32, the gates a softmax over the chosen k cast back
            (JetMoeTopKGating); the experts' query and output projections ScatterMoE's ParallelLinear (the JetMoE
            authors' kernel); K and V repeated for every chosen expert's heads (JetMoeAttention) into the flash
            kernel."""
            from . import _fused

            b, s, d = x.shape
            flat = x.reshape(-1, d)
            tokens, k = flat.shape[0], self.top_k
            chosen, experts = self.router(flat).float().topk(k, dim=-1)
            gates = torch.softmax(chosen, dim=-1).to(x.dtype)
            slots = _fused.sort_slots(experts)
            q = _fused.scatter_linear(flat, slots, [e.q.weight for e in self.experts], k)  # (tokens·k, width), slot order
            q = q.view(b, s, k * self.kv_heads, self.head_dim).transpose(1, 2)  # head j·kv + i: expert slot j, head i
            key, value = (t.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2) for t in self.kv(x).chunk(2, dim=-1))
            if self.positions == "rotary":
                q, key = rotate(q), rotate(key)
            key, value = key.repeat(1, k, 1, 1), value.repeat(1, k, 1, 1)  # slot j's head i reads K/V head i
            o = attend(self, q, key, value).transpose(1, 2).reshape(tokens * k, -1)
            out = _fused.scatter_linear(o, slots, [e.o.weight for e in self.experts], 1, gates)
            if hasattr(self, "bias"):
                out = out + self.bias
            return out.view(b, s, d)

    return MoA
