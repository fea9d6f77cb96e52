"""Zamba's shared transformer block (Glorioso et al. 2024, "Zamba: A Compact 7B SSM Hybrid Model",
arXiv:2405.16712, Fig. 2; Zamba2: Glorioso et al. 2024, arXiv:2411.15242, Fig. 2), a weight-shared block
(model/shared.py) that some Mamba layers also run, as transformers' ZambaAttentionDecoderLayer and
Zamba2AttentionDecoderLayer (transformers 5.23.0, models/zamba, models/zamba2) instantiate it.

Per use, with d the model width, x the layer's input and e the model's input embeddings:

    u = norm([x; e])                          an RMSNorm over 2·d (input_layernorm)
    a = attention(u)                          q, k, v: 2·d -> heads × head_dim (default head_dim 2·d / heads),
                                              o: heads × head_dim -> d; rotary positions only where the model has
                                              them (Zamba2's use_mem_rope)
    f = down(act(gate(norm(a))) ⊙ up(norm(a)))  a norm over d (pre_ff_layernorm), a gated MLP of d_ff
    t = linear(f)                             d -> d, the using layer's own (not shared)
    the layer's mixer reads norm(x + t); its residual is x

Zamba2's adapters (use_shared_attention_adapter; the MLP's always): low-rank pairs down r, up, one per use, added
to q, k and v (2·d -> r -> 2·d, each) and to the MLP's fused gate and up projection (d -> r -> 2·d_ff). The
block holds every use's adapters (each use runs its own): they are stored with the block, at its first use.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from ..model.terms import ACTIVATION_OPS, ROTARY_OPS, SOFTMAX_OPS
from . import Block, register
from .attention import softmax_score_bytes
from .dense_ffn import OUTPUT_SAVING, DenseActivation


@register
@dataclass(frozen=True)
class ZambaTransformer(Block):
    """Zamba's shared attention and gated MLP on the hidden state and the input embeddings, [x; e]."""

    kind = "zamba_transformer"
    slot = "shared"
    prefix = "shared"
    summary = "Zamba's weight-shared attention and MLP block on [hidden; embeddings], its output projected per layer"

    n_heads: Positive
    d_ff: Positive
    n_kv_heads: Positive | None = None  # default: n_heads
    head_dim: Positive | None = None  # default: 2·d_model / n_heads
    activation: DenseActivation = "gelu"
    mlp_bias: bool = False  # on the MLP's projections (Zamba2's add_bias_linear)
    attention_adapters: bool = False  # Zamba2's use_shared_attention_adapter: low-rank adapters on q, k and v
    mlp_adapters: bool = False  # Zamba2: a low-rank adapter on the gate and up projection
    adapter_rank: Positive = 128
    # the adapter pairs the block holds, each use running its own: default one per use (Zamba2's Zamba2Attention and
    # Zamba2MLP hold one per entry of hybrid_layer_ids that falls to their block, whichever layers run them)
    adapter_sets: NonNegative | None = None

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    def head_count(self) -> int:
        return self.n_heads

    def kv_head_count(self) -> int:
        return self.kv_heads

    def resolve(self, d_model: int) -> ZambaTransformer:
        return replace(
            self, n_kv_heads=self.kv_heads, head_dim=self.head_dim if self.head_dim is not None else 2 * d_model // self.n_heads
        )

    def check(self, d_model: int) -> None:
        if self.n_heads % self.kv_heads:
            raise SpecError(("n_kv_heads",), f"{self.kv_heads} KV heads do not divide {self.n_heads} query heads")
        hd = self.head_dim if self.head_dim is not None else 2 * d_model // self.n_heads
        # each adapter's output, 2·d_model wide, is added to q, k and v (Zamba2Attention.forward)
        if self.attention_adapters and not self.n_heads * hd == self.kv_heads * hd == 2 * d_model:
            raise SpecError(
                ("head_dim",),
                f"the attention adapters add 2 · d_model = {2 * d_model} to q, k and v: "
                f"{self.n_heads} query and {self.kv_heads} KV heads of {hd} do not make it",
            )

    def describe(self) -> str:
        return f"shared attention {self.n_heads} heads, {self.kv_heads} KV × {self.head_dim} on [x; e], MLP {self.d_ff}"

    def terms(self, e, model, seq_len: int) -> None:
        d, h, kv, hd, n, f, r = model.d_model, self.n_heads, self.kv_heads, self.head_dim, e.n, self.d_ff, self.adapter_rank
        w = 2 * d  # [x; e]
        # the adapters: one per use, all stored with the block at its first use, each run at its own use
        held = n if e.shared is None else (self.held(e.shared[1]) if e.shared[0] else 0)
        e.norm("shared.input_norm", model.norm, w, n)
        for name, heads in (("q", h), ("k", kv), ("v", kv)):
            e.linear(f"shared.attn.{name}", w, heads * hd, False, n, heads=heads)
            if self.attention_adapters:  # added to the projection: an add per element
                e.linear(f"shared.attn.{name}_adapter.down", w, r, False, n, stored=held)
                e.linear(f"shared.attn.{name}_adapter.up", r, w, False, n, stored=held)
                e.op(f"shared.attn.{name}_adapter.add", n * w)
        if model.positions == "rotary":
            e.op("shared.attn.rotary", n * ROTARY_OPS * (h + kv) * hd)
        e.term("shared.attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        scores = n * h * seq_len
        e.op("shared.attn.softmax", SOFTMAX_OPS * scores, scores=scores)
        e.term("shared.attn.values", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        e.linear("shared.attn.o", h * hd, d, False, n)
        e.norm("shared.pre_ff_norm", model.norm, d, n)
        e.linear("shared.ffn.gate", d, f, self.mlp_bias, n)
        e.linear("shared.ffn.up", d, f, self.mlp_bias, n)
        if self.mlp_adapters:
            e.linear("shared.ffn.adapter.down", d, r, False, n, stored=held)
            e.linear("shared.ffn.adapter.up", r, 2 * f, False, n, stored=held)
            e.op("shared.ffn.adapter.add", n * 2 * f)
        e.op("shared.ffn.act", n * (ACTIVATION_OPS[self.activation] + 1) * f)  # act(gate) ⊙ up
        e.linear("shared.ffn.down", f, d, self.mlp_bias, n)
        e.linear("shared.linear", d, d, False, n, stored=n)  # the layer's own
        e.op("shared.add", n * d)  # x + t, the mixer's input

    def held(self, uses: int) -> int:
        """The adapter pairs of a block that ``uses`` layers run."""
        return self.adapter_sets if self.adapter_sets is not None else uses

    def cache_elements(self, model) -> int:
        """Each use caches its own keys and values (transformers' cache has a slot per hybrid layer)."""
        return 2 * self.kv_heads * self.head_dim

    def kept_elements(self, model) -> int:
        """16-bit elements a token one use keeps, norms as fused kernels keep them and attention by a flash kernel:
        [x; e] (2·d, the input norm's input; x itself is kept by no one here: the concatenation's gradient needs
        nothing) and its fp32 inverse RMS (2); the normed input (2·d, q's, k's and v's); Q, K and V at their own
        heads and the heads' output (2·h·hd + 2·kv·hd, the kernel's; its fp32 log-sum-exp in ``score_bytes``); the
        attention's output, the MLP norm's input (d), and its statistic (2); the normed input (d) and the gated
        MLP's (gate and up outputs, the activated gate and the product, 4·d_ff; d_ff fewer where the activation
        keeps its own output: ``dense_ffn``'s rule); linear's input, the MLP's output (d). Each adapter keeps its
        rank's worth (the up projection's input): 3·r for the attention's, r for the MLP's."""
        d, hd, f = model.d_model, self.head_dim, self.d_ff
        mlp = (3 + (0 if self.activation in OUTPUT_SAVING else 1)) * f
        adapters = self.adapter_rank * (3 * int(self.attention_adapters) + int(self.mlp_adapters))
        return 2 * d + 2 + 2 * d + (2 * self.n_heads + 2 * self.kv_heads) * hd + d + 2 + d + mlp + d + adapters

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        return softmax_score_bytes(self.n_heads, seq_len, flash)

    def torch_module(self, model, causal: bool, uses: int = 1):
        """Its module in one using layer, holding the adapters of all ``uses`` uses (``adapter_sets`` where stated):
        forward(x, embeddings, use)."""
        return _module()(self, model, causal, self.held(uses))


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import ACTIVATIONS, Linear, MatMul, attend, make_norm, rotate

    class Adapter(nn.Module):
        def __init__(self, d_in: int, rank: int, d_out: int):
            super().__init__()
            self.down, self.up = Linear(d_in, rank, bias=False), Linear(rank, d_out, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.up(self.down(x))

    class Attention(nn.Module):
        def __init__(self, spec: ZambaTransformer, model, causal: bool, uses: int):
            super().__init__()
            w, hd = 2 * model.d_model, spec.head_dim
            self.heads, self.kv_heads, self.head_dim = spec.n_heads, spec.kv_heads, hd
            self.positions, self.causal = model.positions, causal
            self.q = Linear(w, spec.n_heads * hd, bias=False)
            self.k = Linear(w, spec.kv_heads * hd, bias=False)
            self.v = Linear(w, spec.kv_heads * hd, bias=False)
            if spec.attention_adapters:
                for name in ("q", "k", "v"):
                    setattr(self, f"{name}_adapter", nn.ModuleList(Adapter(w, spec.adapter_rank, w) for _ in range(uses)))
            self.scores, self.values = MatMul(), MatMul()
            self.o = Linear(spec.n_heads * hd, model.d_model, bias=False)

        def forward(self, u: torch.Tensor, use: int) -> torch.Tensor:
            b, s, _ = u.shape
            parts = []
            for name, heads in (("q", self.heads), ("k", self.kv_heads), ("v", self.kv_heads)):
                y = getattr(self, name)(u)
                if hasattr(self, f"{name}_adapter"):
                    y = y + getattr(self, f"{name}_adapter")[use](u)
                parts.append(y.view(b, s, heads, self.head_dim).transpose(1, 2))
            q, k, v = parts
            if self.positions == "rotary":
                q, k = rotate(q), rotate(k)
            from . import _fused

            if self.kv_heads != self.heads and not _fused.active():  # a flash kernel reads K and V at their heads
                group = self.heads // self.kv_heads
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            out = attend(self, q, k, v).transpose(1, 2).reshape(b, s, -1)
            return self.o(out)

    class MLP(nn.Module):
        def __init__(self, spec: ZambaTransformer, model, uses: int):
            super().__init__()
            d, f = model.d_model, spec.d_ff
            self.gate, self.up = Linear(d, f, bias=spec.mlp_bias), Linear(d, f, bias=spec.mlp_bias)
            if spec.mlp_adapters:
                self.adapter = nn.ModuleList(Adapter(d, spec.adapter_rank, 2 * f) for _ in range(uses))
            self.down = Linear(f, d, bias=spec.mlp_bias)
            self.act, self.width = ACTIVATIONS[spec.activation], f

        def forward(self, x: torch.Tensor, use: int) -> torch.Tensor:
            gate, up = self.gate(x), self.up(x)
            if hasattr(self, "adapter"):
                gate, up = (torch.cat([gate, up], -1) + self.adapter[use](x)).split(self.width, -1)
            return self.down(self.act(gate) * up)

    class SharedTransformer(nn.Module):
        """The block, built in every layer that uses it; ``linear`` is the layer's own (``per_use``), every other
        parameter is tied to the first use's."""

        per_use = ("linear",)

        def __init__(self, spec: ZambaTransformer, model, causal: bool, uses: int = 1):
            super().__init__()
            self.input_norm = make_norm(model.norm, 2 * model.d_model)
            self.attn = Attention(spec, model, causal, uses)
            self.pre_ff_norm = make_norm(model.norm, model.d_model)
            self.ffn = MLP(spec, model, uses)
            self.linear = Linear(model.d_model, model.d_model, bias=False)

        def forward(self, x: torch.Tensor, embeddings: torch.Tensor | None = None, use: int = 0) -> torch.Tensor:
            """Measured alone (verify --memory), the layer's input stands in for the input embeddings."""
            embeddings = x if embeddings is None else embeddings
            a = self.attn(self.input_norm(torch.cat([x, embeddings], dim=-1)), use)
            return self.linear(self.ffn(self.pre_ff_norm(a), use))

    return SharedTransformer
