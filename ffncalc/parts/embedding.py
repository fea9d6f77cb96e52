"""A token embedding where it is not vocab_size × d_model (the spec's ``embedding``).

``width`` e: the table and the head are e wide, a bias-free projection e -> d after the lookup, before the positions
are added (embed.project_in), and d -> e after the final norm, before the head (embed.project_out) (OPT:
OPTDecoder.project_in and project_out where word_embed_proj_dim differs from hidden_size).
``vocab_size``: the table's rows where they differ from the head's, the model's vocab_size, which an untied head
alone allows (BLT: BltLocalEncoder.embed_tokens has encoder_config.vocab_size rows, lm_head the model's).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from . import Part, register


@register
@dataclass(frozen=True)
class Embedding(Part):
    key = "embedding"
    order = 0
    summary = "a token embedding of its own width, projected to and from d_model (OPT), or of its own vocabulary (BLT)"

    width: Positive | None = None
    vocab_size: Positive | None = None

    def check(self, spec) -> None:
        if self.vocab_size not in (None, spec.vocab_size) and spec.tie_embeddings:
            raise SpecError(
                ("embedding", "vocab_size"), f"a tied head is the embedding's table: one vocabulary, vocab_size {spec.vocab_size}"
            )
        if self.width is not None and (spec.has("reversible") or spec.mtp_layers or spec.has("byte_latent")):
            raise SpecError(
                ("embedding", "width"),
                "an embedding of its own width is projected to one residual stream "
                "of d_model: no reversible streams, multi-token prediction modules "
                "or byte-latent parts, which read the embedding at d_model",
            )

    def table(self, shape):
        return (self.vocab_size or shape[0], self.width or shape[1])

    def head_width(self, width: int) -> int:
        return self.width or width

    def lookup_terms(self, e, model) -> None:
        if self.width is not None:  # project_in, before the positions are added
            e.linear("embed.project_in", self.width, model.d_model, False, 1)

    def head_terms(self, e, model) -> None:
        if self.width is not None:  # project_out, back to the embedding's width before the head
            e.linear("embed.project_out", model.d_model, self.width, False, 1)

    def embed_module(self, model):
        """The table (``weight``), with ``project_in`` and ``project_out`` where it has its own width."""
        return _module()(self, model)


@cache
def _module():
    import torch
    import torch.nn.functional as F
    from torch import nn

    from ..blocks._torch import Linear

    class Embed(nn.Module):
        """``forward(tokens)``: the table's rows, projected to d where it has its own width; ``out(x)``: d -> e."""

        def __init__(self, spec: Embedding, model):
            super().__init__()
            rows, width = spec.vocab_size or model.vocab_size, spec.width or model.d_model
            self.weight = nn.Parameter(nn.init.normal_(torch.empty(rows, width)))
            if spec.width is not None:
                self.project_in = Linear(spec.width, model.d_model, bias=False)
                self.project_out = Linear(model.d_model, spec.width, bias=False)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = F.embedding(tokens, self.weight)
            return self.project_in(x) if hasattr(self, "project_in") else x

        def out(self, x: torch.Tensor) -> torch.Tensor:
            return self.project_out(x) if hasattr(self, "project_out") else x

    return Embed
