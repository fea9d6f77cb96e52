"""Reference torch modules built from a spec: the only place ffncalc defines nn.Modules.

Module paths mirror the analytic term names of ``count.py`` (``layers.3.attn.q`` ↔ ``attn.q.weight``),
so ``verify.py`` can match them one to one. Attention is written with explicit matmuls, held by small
``MatMul`` modules (``attn.scores``, ``attn.values``), because FlopCounterMode does not count the CPU
kernel of scaled_dot_product_attention and so that each product is attributed to its own component.
The modules build on the meta device without allocating weights, and run with real tensors on any device.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .spec import Attention as AttentionSpec
from .spec import DenseFFN, GatedFFN, ModelSpec, MoEFFN, Norm
from .spec import LatentAttention as LatentAttentionSpec

ACTIVATIONS = {
    "identity": lambda x: x,
    "relu": F.relu,
    "relu2": lambda x: F.relu(x).square(),
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


class Linear(nn.Linear):
    """nn.Linear without the random initialisation on the meta device, which has no values to set
    (a third of building DeepSeek-V3's 45,000 linear layers)."""

    def reset_parameters(self) -> None:
        if self.weight.device.type != "meta":
            super().reset_parameters()


def make_norm(norm: Norm, width: int) -> nn.Module:
    if norm.kind == "layernorm":
        return nn.LayerNorm(width, elementwise_affine=norm.affine, bias=norm.has_bias)
    return nn.RMSNorm(width, elementwise_affine=norm.affine)


class MatMul(nn.Module):
    """``a @ b`` as a module, so FlopCounterMode attributes the product to a named component."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def rotate(x: torch.Tensor, width: int | None = None, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (Su et al. 2021) over the first 2·⌊width/2⌋ features of (B, H, s, d);
    ``width`` defaults to all d (partial rotary: GPT-NeoX, phi-2)."""
    seq, dim = x.shape[-2], x.shape[-1]
    half = min(width or dim, dim) // 2
    if half == 0:
        return x
    inv_freq = base ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angles = torch.arange(seq, device=x.device, dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2, rest = x[..., :half], x[..., half : 2 * half], x[..., 2 * half :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest], dim=-1)


def alibi_bias(heads: int, seq: int, device, dtype) -> torch.Tensor:
    """ALiBi (Press et al. 2022): a per-head linear penalty on the query-key distance."""
    slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1, device=device, dtype=torch.float32) / heads)
    pos = torch.arange(seq, device=device, dtype=torch.float32)
    return (slopes[:, None, None] * (pos[None, None, :] - pos[None, :, None])).to(dtype)


class Attention(nn.Module):
    def __init__(self, spec: ModelSpec, attn: AttentionSpec, causal: bool):
        super().__init__()
        d = spec.d_model
        self.heads, self.kv_heads, self.head_dim = attn.n_heads, attn.kv_heads, attn.head_size(d)
        self.positions, self.causal, self.rotary = spec.positions, causal, attn.rotated(d)
        self.q = Linear(d, self.heads * self.head_dim, bias=attn.qkv_bias)
        self.k = Linear(d, self.kv_heads * self.head_dim, bias=attn.qkv_bias)
        self.v = Linear(d, self.kv_heads * self.head_dim, bias=attn.qkv_bias)
        self.qk_norm = attn.qk_norm
        if attn.qk_norm != "none":
            per_head = attn.qk_norm == "head"
            self.q_norm = make_norm(spec.norm, self.head_dim if per_head else self.heads * self.head_dim)
            self.k_norm = make_norm(spec.norm, self.head_dim if per_head else self.kv_heads * self.head_dim)
        self.scores = MatMul()
        self.values = MatMul()
        self.o = Linear(self.heads * self.head_dim, d, bias=attn.o_bias)

    def _split(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        b, s, _ = x.shape
        return x.view(b, s, heads, self.head_dim).transpose(1, 2)  # (B, heads, s, head_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        if self.qk_norm == "full":
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = self._split(q, self.heads), self._split(k, self.kv_heads), self._split(v, self.kv_heads)
        if self.qk_norm == "head":
            q, k = self.q_norm(q), self.k_norm(k)
        if self.positions == "rotary":
            q, k = rotate(q, self.rotary), rotate(k, self.rotary)
        if self.kv_heads != self.heads:  # grouped K/V heads serve several query heads each
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        out = attend(self, q, k, v)
        return self.o(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class LatentAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2 §2.1), the latents expanded as in training."""

    def __init__(self, spec: ModelSpec, attn: LatentAttentionSpec, causal: bool):
        super().__init__()
        d, h = spec.d_model, attn.n_heads
        self.heads, self.positions, self.causal = h, spec.positions, causal
        self.nope, self.rope, self.v_dim, self.rank = (attn.qk_nope_head_dim, attn.qk_rope_head_dim,
                                                      attn.v_head_dim, attn.kv_lora_rank)
        qk = self.nope + self.rope
        if attn.q_lora_rank is None:
            self.q = Linear(d, h * qk, bias=False)
        else:
            self.q_a = Linear(d, attn.q_lora_rank, bias=attn.bias)
            self.q_a_norm = make_norm(spec.norm, attn.q_lora_rank)
            self.q_b = Linear(attn.q_lora_rank, h * qk, bias=False)
        self.kv_a = Linear(d, self.rank + self.rope, bias=attn.bias)
        self.kv_a_norm = make_norm(spec.norm, self.rank)
        self.kv_b = Linear(self.rank, h * (self.nope + self.v_dim), bias=False)
        self.scores = MatMul()
        self.values = MatMul()
        self.o = Linear(h * self.v_dim, d, bias=attn.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x) if hasattr(self, "q") else self.q_b(self.q_a_norm(self.q_a(x)))
        q = q.view(b, s, self.heads, -1).transpose(1, 2)  # (B, H, s, nope + rope)
        latent, k_rope = self.kv_a(x).split([self.rank, self.rope], dim=-1)
        kv = self.kv_b(self.kv_a_norm(latent)).view(b, s, self.heads, -1).transpose(1, 2)
        k_nope, v = kv.split([self.nope, self.v_dim], dim=-1)  # (B, H, s, nope), (B, H, s, v_dim)
        k_rope = k_rope.view(b, 1, s, self.rope)  # one rotary key shared by every head
        q_nope, q_rope = q.split([self.nope, self.rope], dim=-1)
        if self.positions == "rotary":
            q_rope, k_rope = rotate(q_rope), rotate(k_rope)
        q = torch.cat([q_nope, q_rope], dim=-1)
        k = torch.cat([k_nope, k_rope.expand(b, self.heads, s, self.rope)], dim=-1)
        out = attend(self, q, k, v)  # (B, H, s, v_dim)
        return self.o(out.transpose(1, 2).reshape(b, s, self.heads * self.v_dim))


def attend(layer, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q·kᵀ/√d)·v with ``layer.scores`` and ``layer.values`` holding the two products;
    over the full square, or the causal triangle only."""
    heads, s = q.shape[1], q.shape[2]
    q = q * (1.0 / math.sqrt(q.shape[-1]))
    bias = alibi_bias(heads, s, q.device, q.dtype) if layer.positions == "alibi" else None
    if layer.causal:
        return causal_attention(q, k, v, layer.scores, layer.values, bias)
    scores = layer.scores(q, k.transpose(-2, -1))  # (B, H, s, s): the full square
    if bias is not None:
        scores = scores + bias
    return layer.values(scores.softmax(dim=-1), v)  # (B, H, s, v_dim)


def causal_attention(q, k, v, scores_mm: MatMul, values_mm: MatMul, bias=None, block: int | None = None):
    """Attention over the causal triangle only: query i meets keys 0..i, s(s+1)/2 products in all.

    Queries go in blocks of ``block``: a block meets the keys before it as one rectangle, and the
    triangles on the diagonal are computed row by row, the same row of every block in one batched
    product. About block + s/block products per call, with no product outside the triangle.
    """
    *lead, s, dim = q.shape
    block = block or max(1, math.isqrt(s))
    full = torch.full((*lead, s, s), float("-inf"), device=q.device, dtype=q.dtype)
    starts = list(range(0, s, block))
    for start in starts[1:]:  # rectangles: the block's queries against every earlier key
        stop = min(start + block, s)
        full[..., start:stop, :start] = scores_mm(q[..., start:stop, :], k[..., :start, :].transpose(-2, -1))
    for r in range(min(block, s)):  # row r of every diagonal block meets keys start..start+r
        rows = [st for st in starts if st + r < s]
        qi = torch.stack([q[..., st + r, :] for st in rows], dim=-2).unsqueeze(-2)  # (..., n, 1, dim)
        ki = torch.stack([k[..., st : st + r + 1, :] for st in rows], dim=-3)  # (..., n, r+1, dim)
        part = scores_mm(qi, ki.transpose(-2, -1)).squeeze(-2)  # (..., n, r+1)
        for j, st in enumerate(rows):
            full[..., st + r, st : st + r + 1] = part[..., j, :]
    if bias is not None:
        full = full + bias
    probs = full.softmax(dim=-1)
    out = q.new_zeros(*q.shape[:-1], v.shape[-1])
    for start in starts[1:]:
        stop = min(start + block, s)
        out[..., start:stop, :] += values_mm(probs[..., start:stop, :start], v[..., :start, :])
    for r in range(min(block, s)):
        rows = [st for st in starts if st + r < s]
        pi = torch.stack([probs[..., st + r, st : st + r + 1] for st in rows], dim=-2).unsqueeze(-2)
        vi = torch.stack([v[..., st : st + r + 1, :] for st in rows], dim=-3)  # (..., n, r+1, dim)
        part = values_mm(pi, vi).squeeze(-2)  # (..., n, dim)
        for j, st in enumerate(rows):
            out[..., st + r, :] += part[..., j, :]
    return out


class MLP(nn.Module):
    """Dense: down(act(up x)). Gated: down(act(gate x) ⊙ up x)."""

    def __init__(self, d: int, ffn: DenseFFN | GatedFFN):
        super().__init__()
        width = ffn.width(d)
        self.gated = isinstance(ffn, GatedFFN)
        if self.gated:
            self.gate = Linear(d, width, bias=ffn.bias)
        self.up = Linear(d, width, bias=ffn.bias)
        self.down = Linear(width, d, bias=ffn.bias)
        self.act = ACTIVATIONS[ffn.activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.gate(x)) * self.up(x) if self.gated else self.act(self.up(x))
        return self.down(h)


class MoE(nn.Module):
    """A router, routed experts (top_k per token) and shared experts that see every token.

    ``balanced`` routing sends token-slot j (token j // top_k) to expert j mod n_experts: every expert
    gets tokens·top_k/n_experts rows (the remainder to the first experts). It needs no data, so it runs
    on meta tensors; real routing takes the router's top_k and needs values.
    """

    def __init__(self, d: int, ffn: MoEFFN):
        super().__init__()
        self.top_k, self.n_experts = ffn.top_k, ffn.n_experts
        self.router = Linear(d, ffn.n_experts, bias=ffn.router_bias)
        self.experts = nn.ModuleList(MLP(d, ffn.expert) for _ in range(ffn.n_experts))
        self.shared = nn.ModuleList(MLP(d, ffn.shared) for _ in range(ffn.n_shared_experts))
        if ffn.shared_gate:
            self.shared_gate = Linear(d, 1, bias=False)
        self.balanced = False

    def route(self, probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens, top_k) expert indices and their weights."""
        tokens = probs.shape[0]
        if self.balanced:
            slots = torch.arange(tokens * self.top_k, device=probs.device).view(tokens, self.top_k)
            experts = slots % self.n_experts
            return experts, probs.gather(1, experts)
        weights, experts = probs.topk(self.top_k, dim=-1)
        return experts, weights

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        probs = self.router(flat).softmax(dim=-1)
        experts, weights = self.route(probs)
        out = torch.zeros_like(flat)
        token_of_slot = torch.arange(flat.shape[0], device=x.device).repeat_interleave(self.top_k)
        expert_of_slot, weight_of_slot = experts.reshape(-1), weights.reshape(-1)
        for e, expert in enumerate(self.experts):
            if self.balanced:  # slot j goes to expert j mod n_experts: a fixed index, no data needed
                if e >= expert_of_slot.shape[0]:
                    continue  # fewer token-slots than experts: this one gets none
                slots = torch.arange(e, expert_of_slot.shape[0], self.n_experts, device=x.device)
            else:
                slots = (expert_of_slot == e).nonzero().squeeze(-1)
            if slots.numel() == 0:
                continue
            rows = token_of_slot[slots]
            out.index_add_(0, rows, expert(flat[rows]) * weight_of_slot[slots, None].to(flat.dtype))
        if len(self.shared):
            shared = sum(expert(flat) for expert in self.shared)
            if hasattr(self, "shared_gate"):
                shared = torch.sigmoid(self.shared_gate(flat)) * shared
            out = out + shared
        return out.reshape(shape)


class Block(nn.Module):
    """One layer. Pre-norm residual sublayers by default: each sublayer's first norm before it, any
    others after it (Gemma 2 has two each). Post: the norms after the sublayers only (OLMo 2).
    Parallel: attention and FFN read the same input, with one shared norm (GPT-J, phi-2) or one each
    (GPT-NeoX); one norm per layer always means parallel."""

    def __init__(self, spec: ModelSpec, attn, ffn, causal: bool):
        super().__init__()
        self.norms = nn.ModuleList(make_norm(spec.norm, spec.d_model) for _ in range(spec.norm.per_layer))
        self.attn = (LatentAttention if isinstance(attn, LatentAttentionSpec) else Attention)(spec, attn, causal)
        self.ffn = MoE(spec.d_model, ffn) if isinstance(ffn, MoEFFN) else MLP(spec.d_model, ffn)
        self.parallel, self.post = spec.parallel, spec.norm.placement == "post"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = len(self.norms)
        if n == 1 and not self.post:
            h = self.norms[0](x)
            return x + self.attn(h) + self.ffn(h)
        if self.parallel:
            return x + self.attn(self.norms[0](x)) + self.ffn(self.norms[1](x))
        split = (n + 1) // 2  # norms[:split] wrap attention, the rest the FFN
        x = x + _wrapped(self.attn, self.norms[:split], x, self.post)
        return x + _wrapped(self.ffn, self.norms[split:], x, self.post)


def _wrapped(sublayer: nn.Module, norms: nn.ModuleList, x: torch.Tensor, post: bool) -> torch.Tensor:
    """Pre: the first norm before the sublayer, any others after it. Post: every norm after it."""
    if len(norms) and not post:
        x = norms[0](x)
        norms = norms[1:]
    x = sublayer(x)
    for norm in norms:
        x = norm(x)
    return x


class Transformer(nn.Module):
    def __init__(self, spec: ModelSpec, causal: bool = False):
        super().__init__()
        d = spec.d_model
        self.embed = nn.Embedding(spec.vocab_size, d)
        if spec.positions == "learned":
            self.pos_embed = nn.Embedding(spec.context_length, d)
        if spec.embedding_norm:
            self.embed_norm = make_norm(spec.norm, d)
        self.layers = nn.ModuleList(
            Block(spec, attn, ffn, causal) for _, n, attn, ffn in spec.groups() for _ in range(n)
        )
        if spec.norm.final:
            self.final_norm = make_norm(spec.norm, d)
        self.lm_head = Linear(d, spec.vocab_size, bias=spec.lm_head_bias)
        if spec.tie_embeddings:
            self.lm_head.weight = self.embed.weight  # one Parameter, counted once

    def forward(self, tokens: torch.Tensor, only: list[int] | None = None) -> torch.Tensor:
        """Logits for ``tokens`` (B, s); ``only`` runs just those layers (for counting identical layers once)."""
        x = self.embed(tokens)
        if hasattr(self, "pos_embed"):
            x = x + self.pos_embed(torch.arange(tokens.shape[-1], device=tokens.device))
        if hasattr(self, "embed_norm"):
            x = self.embed_norm(x)
        for i in range(len(self.layers)) if only is None else only:
            x = self.layers[i](x)
        if hasattr(self, "final_norm"):
            x = self.final_norm(x)
        return self.lm_head(x)

    def set_balanced_routing(self, balanced: bool) -> None:
        for module in self.modules():
            if isinstance(module, MoE):
                module.balanced = balanced


def build(spec: ModelSpec, *, device: str | torch.device = "meta", dtype: torch.dtype = torch.float32,
          causal: bool = False) -> Transformer:
    """The spec as a torch module; on ``meta`` (the default) no weight is allocated."""
    with torch.device(device):
        model = Transformer(spec, causal=causal)
    return model.to(dtype=dtype)
