"""Latent queries: a learned table of queries that read the tower's positions, and themselves, by one cross-attention
into the model's tokens (Kosmos-2: Kosmos2ImageToTextProjection, Peng et al. 2023 §2). Not a part of its own: a
projector (parts/projector.py) holds one, in place of its own stages. As transformers 5.23 builds it:

- dense, Linear(tower width, model width) with a bias, over every position the tower writes;
- latent_query, ``latents`` learned rows of the model's width, appended to those positions as keys and values;
- x_attn (KosmosTextAttention without its inner norm): q_proj over the latents, k_proj and v_proj over the positions
  and the latents, out_proj over the latents, all with biases; ``heads`` heads of model width / heads.

Its work is an image's: each latent meets every position and every latent."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive
from ..model.terms import SOFTMAX_OPS, Emitter


@dataclass(frozen=True)
class LatentQuery:
    latents: Positive  # learned queries: the image's tokens (latent_query_num)
    heads: Positive  # the cross-attention's heads (the language model's)

    def terms(self, width: int, d_model: int, prefix: str, patches: int) -> list[tuple[str, object]]:
        """Its tensors and one image's work over ``patches`` positions of ``width`` (each term "image": once an
        image), named under ``prefix`` (its projector's: vision.projector.)."""
        q, d = self.latents, d_model
        keys = patches + q  # the positions and the latents
        e = Emitter("embedding")
        e.term(f"{prefix}latents", "position", (q, d))
        w = Emitter("layers")

        def linear(name: str, d_in: int, rows: int) -> None:
            w.term(f"{prefix}{name}.weight", "weight", (d, d_in), macs=rows * d_in * d)
            w.term(f"{prefix}{name}.bias", "bias", (d,), elementwise=rows * d)

        linear("dense", width, patches)
        linear("q", d, q)
        linear("k", d, keys)
        linear("v", d, keys)
        for product in ("scores", "values"):  # every latent meets every key
            w.term(f"{prefix}{product}", "core", (self.heads, keys, d // self.heads), q, numel=0, macs=d, select="full")
        w.op(f"{prefix}softmax", q * self.heads * keys * SOFTMAX_OPS, 1)
        linear("o", d, q)
        return [("image", t) for t in e.out + w.out]

    def module(self, width: int, d_model: int):
        """Its reference module (imports torch when called): forward(positions) runs one batch of images' positions."""
        import torch
        from torch import nn

        from ..blocks._torch import Linear, MatMul

        spec, d = self, d_model

        class LatentQueryModule(nn.Module):
            def __init__(self):
                super().__init__()
                self.latents = nn.Parameter(torch.empty(spec.latents, d))
                self.dense = Linear(width, d)
                self.q, self.k, self.v, self.o = (Linear(d, d) for _ in range(4))
                self.scores, self.values = MatMul(), MatMul()

            def forward(self, positions):
                b, h, n = positions.shape[0], spec.heads, spec.latents
                lat = self.latents.expand(b, -1, -1)
                kv = torch.cat([self.dense(positions), lat], dim=1)
                keys = kv.shape[1]
                qs = self.q(lat).view(b, n, h, d // h).transpose(1, 2)
                ks = self.k(kv).view(b, keys, h, d // h).transpose(1, 2)
                vs = self.v(kv).view(b, keys, h, d // h).transpose(1, 2)
                probs = self.scores(qs, ks.transpose(-2, -1)).softmax(-1)
                return self.o(self.values(probs, vs).transpose(1, 2).reshape(b, n, d))

        return LatentQueryModule()
