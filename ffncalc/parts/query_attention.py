"""A query attention: learned queries, as many as the image's patch count calls for, that read the tower's patches by
one cross-attention, then an MLP into the model's width (Aria: AriaProjector, Li et al. 2024). Not a part of its own:
a projector (parts/projector.py) holds one, in place of its own stages. As transformers 5.23 builds it:

- a table of ``table`` learned queries of the tower's width (query), of which an image of P patches takes the first
  ``tokens[P]`` (projector_patch_to_query_dict; a count of patches it does not name cannot run);
- AriaCrossAttention: a LayerNorm over the queries and one over the patches; q_proj, k_proj and v_proj (no biases);
  nn.MultiheadAttention over them (its in_proj's query, key and value rows and out_proj, with biases; the tower's heads);
  linear (with a bias);
- a LayerNorm, then AriaProjectorMLP: linear_in (to ``hidden``), GELU (tanh), linear_out (to the model's width), no
  biases.

Its work is an image's: the queries meet every patch."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter


@dataclass(frozen=True)
class QueryAttention:
    table: Positive  # learned queries
    heads: Positive  # the cross-attention's heads (the tower's)
    hidden: Positive  # its MLP's width
    tokens: list[list[Positive]]  # [patches, queries] pairs: the queries an image of so many patches takes

    def queries(self, patches: int) -> int:
        """The tokens an image of ``patches`` patches becomes; 0: a count the class names no queries for."""
        return next((q for p, q in self.tokens if p == patches), 0)

    def terms(self, width: int, d_model: int, prefix: str, patches: int) -> list[tuple[str, object]]:
        """Its tensors and one image's work over ``patches`` patches of ``width`` (each term "image": once an image),
        named under ``prefix`` (its projector's: vision.projector.)."""
        q, p, d = self.queries(patches), patches, width
        norm = Norm(kind="layernorm")
        e = Emitter("embedding")
        e.term(f"{prefix}queries", "position", (self.table, d))
        w = Emitter("layers")

        def linear(name: str, d_in: int, d_out: int, macs: int, bias: bool, rows: int) -> None:
            w.term(f"{prefix}{name}.weight", "weight", (d_out, d_in), macs=macs)
            if bias:
                w.term(f"{prefix}{name}.bias", "bias", (d_out,), elementwise=rows * d_out)

        w.term(f"{prefix}norms", "norm", (d,), 2, numel=2 * d, elementwise=norm.ops(q * d) + norm.ops(p * d))
        linear("q", d, d, q * d * d, False, q)
        linear("k", d, d, p * d * d, False, p)
        linear("v", d, d, p * d * d, False, p)
        # nn.MultiheadAttention's in_proj: its query rows over the queries, its key and value rows over the patches
        linear("in_proj", d, 3 * d, (q + 2 * p) * d * d, True, q + 2 * p)
        for product in ("scores", "values"):  # every query meets every patch
            w.term(f"{prefix}{product}", "core", (self.heads, p, d // self.heads), q, numel=0, macs=d, select="full")
        w.op(f"{prefix}softmax", q * self.heads * p * SOFTMAX_OPS, 1)
        linear("out_proj", d, d, q * d * d, True, q)
        linear("linear", d, d, q * d * d, True, q)
        w.norm(f"{prefix}norm", norm, d, 1, total=q * d)
        linear("ffn.up", d, self.hidden, q * d * self.hidden, False, q)
        w.op(f"{prefix}ffn.act", q * self.hidden * ACTIVATION_OPS["gelu_tanh"], 1)
        linear("ffn.down", self.hidden, d_model, q * self.hidden * d_model, False, q)
        return [("image", t) for t in e.out + w.out]

    def module(self, width: int, d_model: int):
        """Its reference module (imports torch when called): forward(patches) runs one batch of images' patches."""
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm

        spec, d = self, width
        norm = Norm(kind="layernorm")

        class QueryAttentionModule(nn.Module):
            def __init__(self):
                super().__init__()
                self.queries = nn.Parameter(torch.empty(spec.table, d))
                self.norms = nn.ModuleList([make_norm(norm, d), make_norm(norm, d)])
                self.q, self.k, self.v = Linear(d, d, bias=False), Linear(d, d, bias=False), Linear(d, d, bias=False)
                self.in_proj = nn.ModuleList(Linear(d, d) for _ in range(3))  # its query's, key's and value's rows
                self.scores, self.values = MatMul(), MatMul()
                self.out_proj, self.linear = Linear(d, d), Linear(d, d)
                self.norm = make_norm(norm, d)
                self.ffn = nn.Module()
                self.ffn.up, self.ffn.down = Linear(d, spec.hidden, bias=False), Linear(spec.hidden, d_model, bias=False)

            def forward(self, patches):
                b, p, h = patches.shape[0], patches.shape[1], spec.heads
                q = spec.queries(p)
                x = self.q(self.norms[0](self.queries[:q].expand(b, -1, -1)))
                kv = self.norms[1](patches)
                qs = self.in_proj[0](x).view(b, q, h, d // h).transpose(1, 2)
                ks = self.in_proj[1](self.k(kv)).view(b, p, h, d // h).transpose(1, 2)
                vs = self.in_proj[2](self.v(kv)).view(b, p, h, d // h).transpose(1, 2)
                probs = self.scores(qs, ks.transpose(-2, -1)).softmax(-1)
                out = self.linear(self.out_proj(self.values(probs, vs).transpose(1, 2).reshape(b, q, d)))
                return self.ffn.down(ACTIVATIONS["gelu_tanh"](self.ffn.up(self.norm(out))))

        return QueryAttentionModule()
