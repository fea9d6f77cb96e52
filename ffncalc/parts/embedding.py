"""A token embedding where it is not vocab_size × d_model (the spec's ``embedding``).

``width`` e: the table and the head are e wide, a bias-free projection e -> d after the lookup, before the positions
are added (embed.project_in), and d -> e after the final norm, before the head (embed.project_out) (OPT:
OPTDecoder.project_in and project_out where word_embed_proj_dim differs from hidden_size).
``vocab_size``: the table's rows where they differ from the head's, the model's vocab_size, which an untied head
alone allows (BLT: BltLocalEncoder.embed_tokens has encoder_config.vocab_size rows, lm_head the model's).
``tied_projection``: d -> e before the head is project_in's weight transposed, stored once (NeoMME:
NeoMMEForMaskedLM.unembedding_projection tied to embed_tokens.embedding_projection, hidden_states @ its weight).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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
    tied_projection: bool = False

    def check(self, spec) -> None:
        if self.tied_projection and self.width is None:
            raise SpecError(("embedding", "tied_projection"), "a tied projection is project_in's: state the table's width")
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
        if self.tied_projection:  # project_in's weight again, transposed: its work alone
            e.term("embed.project_out", "weight", (self.width, model.d_model), numel=0, macs=model.d_model * self.width)
        elif self.width is not None:  # project_out, back to the embedding's width before the head
            e.linear("embed.project_out", model.d_model, self.width, False, 1)

    def embed_module(self, model):
        """The table (``weight``), with ``project_in`` and ``project_out`` where it has its own width."""
        return _module()(self, model)


@cache
def _module():
    import torch
    import torch.nn.functional as F
    from torch import nn

    from ..blocks._torch import Linear, MatMul

    class Embed(nn.Module):
        """``forward(tokens)``: the table's rows, projected to d where it has its own width; ``out(x)``: d -> e (a
        tied projection: x times project_in's weight)."""

        def __init__(self, spec: Embedding, model):
            super().__init__()
            rows, width = spec.vocab_size or model.vocab_size, spec.width or model.d_model
            self.weight = nn.Parameter(nn.init.normal_(torch.empty(rows, width)))
            self.tied = spec.tied_projection
            if spec.width is not None:
                self.project_in = Linear(spec.width, model.d_model, bias=False)
                self.project_out = MatMul() if spec.tied_projection else Linear(model.d_model, spec.width, bias=False)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = F.embedding(tokens, self.weight)
            return self.project_in(x) if hasattr(self, "project_in") else x

        def out(self, x: torch.Tensor) -> torch.Tensor:
            if self.tied:
                return self.project_out(x, self.project_in.weight)
            return self.project_out(x) if hasattr(self, "project_out") else x

    return Embed


@register
@dataclass(frozen=True)
class FactorizedEmbedding(Part):
    """A factorised embedding (Lan et al. 2019 §3.1, ALBERT; Clark et al. 2020, ELECTRA): the token table, the
    position and token-type tables added to its rows and the embedding norm are all ``width`` wide (E), and one linear
    layer projects the normalised sum to d_model before the first layer (ElectraModel.embeddings_project,
    AlbertTransformer.embedding_hidden_mapping_in, RemBertEncoder.embedding_hidden_mapping_in: E -> d with a bias).
    The head reads the width a prediction head maps back to (prediction_head.width); a tied head is the table."""

    key = "factorized_embedding"
    order = 1
    prefix = "embed_project"
    summary = "a token embedding, its positions, token types and norm of their own width, projected to d_model (ALBERT, ELECTRA)"

    width: Positive
    bias: bool = True

    def check(self, spec) -> None:
        if spec.has("embedding", "reversible", "byte_latent") or spec.mtp_layers:
            raise SpecError(
                ("factorized_embedding",),
                "a factorised embedding is projected to one residual stream of d_model: no embedding of its own "
                "width or vocabulary, reversible streams, multi-token prediction modules or byte-latent parts",
            )
        head = spec.d_model
        for part in spec.parts:
            head = part.head_width(head)
        if spec.tie_embeddings and head != self.width:
            raise SpecError(
                ("factorized_embedding", "width"),
                f"a tied head is the table: it reads {head} features (prediction_head.width), the table is {self.width} wide",
            )

    def table(self, shape):
        return (shape[0], self.width)

    def input_width(self, width: int) -> int:
        return self.width

    def input_terms(self, e, model, seq_len) -> None:  # after the positions and the embedding norm
        e.linear("embed_project", self.width, model.d_model, self.bias, 1)

    def embed_module(self, model):
        from torch import nn

        return nn.Embedding(model.vocab_size, self.width)

    def model_module(self, model):
        return _projection()(self, model)


@cache
def _projection():
    import torch

    from ..blocks._torch import Linear

    class Projection(Linear):
        """E -> d after the embedding norm: ``enter`` is the linear layer itself."""

        def __init__(self, spec: FactorizedEmbedding, model):
            super().__init__(spec.width, model.d_model, bias=spec.bias)

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            return self(x)

    return Projection


@register
@dataclass(frozen=True)
class TrigramEmbedding(Part):
    """MobileBERT's embedding (Sun et al. 2020 §3.1, "embedding factorization"; transformers' MobileBertEmbeddings and
    MobileBertLMPredictionHead): a token table ``width`` (E) wide whose rows, with ``trigram`` each position's
    next and previous rows beside its own (3·E, zeros past either end), are projected to d_model by a linear layer
    with a bias (embedding_transformation) before the positions and token types of d_model are added. The tied head
    multiplies by the table and by d_model − E rows of its own per token (its ``dense``, vocab_size × (d − E),
    concatenated after the table's): both are stored here as one vocab_size × d_model table, whose first E columns
    are looked up, so the head is an ordinary tied unembedding of d_model."""

    key = "trigram_embedding"
    order = 0
    summary = "a table of its own width whose neighbouring rows are projected to d_model, tied to a head of d_model (MobileBERT)"

    width: Positive
    trigram: bool = True
    # the positions of a plan's sequence (``sized``; 0: none given), not a spec's key
    sequence: int = field(default=0, init=False, compare=False, repr=False)

    def sized(self, positions: int) -> TrigramEmbedding:
        out = replace(self)
        object.__setattr__(out, "sequence", positions)
        return out

    def stacks(self, model) -> tuple[tuple[object, int, int, int], ...]:
        """embedding_transformation's input, kept for its weight's gradient (nn.Linear saves its input): the trigram
        rows, 3·E a position (E without the trigrams, where a table narrower than d_model is still projected), 16-bit,
        whole on every device; once a sequence, beside no layers (the embedding's, on the first stage)."""
        if not (self.trigram or self.width != model.d_model) or not self.sequence:
            return ()
        return ((replace(model, layers=()), self.sequence, 0, (3 if self.trigram else 1) * self.width),)

    def check(self, spec) -> None:
        if spec.has("embedding", "factorized_embedding", "reversible", "byte_latent") or spec.mtp_layers:
            raise SpecError(
                ("trigram_embedding",),
                "a trigram embedding is projected to one residual stream of d_model: no other embedding parts, "
                "reversible streams, multi-token prediction modules or byte-latent parts",
            )
        if not spec.tie_embeddings:
            raise SpecError(("trigram_embedding",), "its table is the head's first columns: tie_embeddings must be true")
        if self.width > spec.d_model:
            raise SpecError(("trigram_embedding", "width"), f"the head's own rows are d_model − width: {self.width} > {spec.d_model}")

    def lookup_terms(self, e, model) -> None:
        # embedding_transformation, before the positions are added: built always, run only with the trigrams or a
        # table narrower than d_model (MobileBertEmbeddings.forward)
        d, k = model.d_model, (3 if self.trigram else 1) * self.width
        if self.trigram or self.width != d:
            e.linear("embed.project_in", k, d, True, 1)
        else:
            e.term("embed.project_in.weight", "weight", (d, k), 1, macs=0)
            e.term("embed.project_in.bias", "bias", (d,), 1)

    def embed_module(self, model):
        """The table (``weight``, vocab_size × d_model: the looked-up columns, then the head's own)."""
        return _trigram()(self, model)


@cache
def _trigram():
    import torch
    import torch.nn.functional as F
    from torch import nn

    from ..blocks._torch import Linear

    class Trigram(nn.Module):
        def __init__(self, spec: TrigramEmbedding, model):
            super().__init__()
            d, self.e, self.trigram = model.d_model, spec.width, spec.trigram
            self.weight = nn.Parameter(nn.init.normal_(torch.empty(model.vocab_size, d)))
            self.project_in = Linear((3 if spec.trigram else 1) * spec.width, d)
            self.projected = spec.trigram or spec.width != d

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = F.embedding(tokens, self.weight[:, : self.e])
            if self.trigram:  # the next row, its own, the previous (MobileBertEmbeddings)
                x = torch.cat([F.pad(x[:, 1:], (0, 0, 0, 1)), x, F.pad(x[:, :-1], (0, 0, 1, 0))], dim=2)
            return self.project_in(x) if self.projected else x

    return Trigram
