"""Exact integer tallies of parameters and FLOPs, component by component. No printing here.

``terms(spec, seq_len)`` lists every tensor and every operation of a forward pass as typed terms;
``tally(...)`` applies a convention (``conventions.py``) and returns rows with their totals.
FLOPs are per token of a forward pass at ``seq_len``: a matmul costs 2 FLOPs per multiply-add.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Literal

from ..errors import InputError
from ..model.norms import norm_terms
from ..model.stack import Model
from ..model.stacks import run_terms
from ..model.terms import Emitter, Part, Term, attended_pairs
from ..parts import ordered
from .conventions import CONVENTIONS, DEFAULT, MATRICES, Convention

Recompute = Literal["none", "selective", "full"]
RECOMPUTE = ("none", "selective", "full")


def terms(model: Model, seq_len: int, *, partial: bool = False) -> list[Term]:
    """Every tensor and operation of one forward pass at ``seq_len``, in model order; each run of
    identical layers once, its terms standing for all its layers. With prompt positions (parts/prompts.py) the
    layers and the final norm run over seq_len + P positions, their terms scaled to the sequence's tokens. A model
    whose source leaves unstated what its work needs (``Model.needs``) is refused with what it needs, unless
    ``partial``: its terms then hold a stand-in, right in their parameters only."""
    if model.needs and not partial:
        raise InputError(model.needs[0])
    positions = model.layer_positions(seq_len)  # what the layers run over
    parts = model.parts
    emb = Emitter("embedding")
    # A lookup has no multiply-adds; macs records the one-hot matmul that Chinchilla's accounting charges.
    rows, width = model.embed_shape  # vocab_size × d_model, or what parts make of it (parts/embedding.py)
    emb.term("embed.weight", "tied" if model.tie_embeddings else "token", (rows, width), macs=rows * width)
    for part in parts:  # a projection of the table's rows to d_model (OPT)
        part.lookup_terms(emb, model)
    w = model.input_width  # d_model, or a factorised embedding's own width (parts/embedding.py)
    if model.positions == "learned":
        emb.term("pos_embed.weight", "position", (model.context_length + model.position_offset, w), elementwise=w)
    elif model.positions == "sinusoidal":  # a fixed table, no parameters: its add
        emb.op("pos_embed", w)
    if model.embedding_norm:
        emb.norm("embed_norm", model.embedding_norm_kind, w, 1)
    for part in ordered(parts, "input"):  # positions, prompt rows, every layer's inputs, streams, the input's scale
        part.input_terms(emb, model, seq_len)
    out = emb.out
    inside: list[Term] = []
    for run in model.runs():
        e = Emitter("layers", run.span)
        run_terms(e, model, run.layer, positions)
        inside += e.out
    fin = Emitter("final")
    for part in parts:  # the streams back into one; HRM's states and stack norms
        part.final_terms(fin, model)
    if model.norm.final:
        fin.norm("final_norm", model.norm, model.final_width, 1)
    inside += fin.out
    if positions != seq_len:  # the prompt's or the padding's positions too, per token of the sequence
        # (times a term's own: a block's padding, ProphetNet's pairs, a cross-attention's source rows)
        inside = [replace(t, positions=Fraction(positions, seq_len) * t.positions) for t in inside]
    top = Emitter("final")
    for part in parts:  # a prediction head, over the sequence's own positions (the padding's dropped before it)
        part.top_terms(top, model)
    inside += top.out
    if model.bidirectional:  # every query meets every key (within its window, on both sides): no causal triangle
        # (a product whose keys are not the sequence's, "pairs", meets them in every view as it is)
        inside = [replace(t, select="both" if t.window else "full") if t.role == "core" and t.select != "pairs" else t for t in inside]
    once = Emitter("final")
    for part in parts:  # once a sequence: a pooler over its first position
        part.sequence_terms(once, model, seq_len)
    inside += once.out
    head = Emitter("head")
    for part in parts:  # the projection back to the embedding's width (OPT)
        part.head_terms(head, model)
    v, w = model.head_shape  # both reversible streams, or the embedding's width
    head.term("lm_head.weight", "head", (v, w), macs=v * w, tied=model.tie_embeddings)
    if model.lm_head_bias:
        head.term("lm_head.bias", "bias", (v,), elementwise=v)
    scale = Fraction(1)
    for part in parts:  # rows the head reads per token of the sequence (Perceiver IO's decoder queries)
        scale = part.head_positions(seq_len, scale)
    if scale != 1:
        head.out = [replace(t, positions=scale * t.positions) for t in head.out]
    return out + inside + head.out


def mtp_terms(model: Model, seq_len: int) -> list[Term]:
    """The multi-token prediction modules (DeepSeek-V3 §2.2, Figure 3; DeepSeek's inference/model.py): each
    normalises the layer's hidden state and the next token's embedding (hnorm, enorm), projects their
    concatenation 2·d -> d (eh_proj), runs one layer like the model's last, and normalises before the
    shared output head (shared_head.norm). Embedding and head are shared with the model."""
    if not model.mtp_layers:
        return []
    d, n = model.d_model, model.mtp_layers
    e = Emitter("mtp", (0, n))
    e.norm("mtp.norms", model.norm, d, 3 * n)  # enorm, hnorm, shared_head.norm
    e.linear("mtp.eh_proj", 2 * d, d, False, n)
    norm_terms(e, model, model.layers[-1])
    for slot, block in model.layers[-1].blocks():
        e.slot = slot
        block.terms(e, model, seq_len)
    e.slot = ""
    # each module's logits through the model's own (shared) output head: no parameters of its own
    e.term("mtp.head", "head", (model.vocab_size, d), n, numel=0, macs=n * model.vocab_size * d)
    return e.out


@dataclass(frozen=True)
class Row:
    """A term as a convention counts it."""

    name: str
    role: str
    part: Part
    layers: tuple[int, int] | None
    shape: tuple[int, ...]
    count: int
    params: int
    active: int
    matrices: int
    flops: int  # forward matmul FLOPs per token
    elementwise: int  # forward elementwise FLOPs per token
    tied: bool = False
    expert: bool = False  # a routed expert's tensor: expert parallelism splits it
    component: str = ""
    slot: str = ""  # "attention" or "ffn": the slot of the block it belongs to
    window: int | None = None  # core rows: the most keys a query meets
    chunk: int | None = None  # core rows: queries meet only the keys of their own chunk
    grows: bool = True  # core rows: a decode step's work grows with the context
    select: str = ""  # core rows: keys an indexer picks by blocks (model/terms.py, attended_pairs)
    per_sequence: bool = False  # work once a sequence (an image through a tower): no decode step does it


Number = int | Fraction  # FLOPs per token: an average over the sequence where a window makes it a fraction


def plain(n: Number) -> int | float:
    """An exact per-token figure as JSON and tables take it: an int where it is whole, else a float."""
    if isinstance(n, (int, float)):  # already plain (a figure made plain before it is shown)
        return n
    return int(n) if n.denominator == 1 else float(n)


def core_flops(t: Term, attention: str) -> Number:
    """FLOPs of QKᵀ or AV per token: 2 per multiply-add over the query-key pairs the mode keeps.

    full: every query meets every key, as eager attention computes the masked square (the executed view);
    causal: each query meets the keys it may attend, within its window if it has one (the useful view);
    half: s²/2, as Kaplan et al. and Megatron-LM count the masked square; none: not counted.
    """
    heads, keys, head_dim = t.shape
    # every query meets every key in every view: a cross-attention's rectangle (parts/latent.py), a bidirectional
    # stack's square (model/stacks.py)
    if t.select == "pairs":  # one query standing for a whole image's windows: its keys are their pairs, in every view
        return 0 if attention == "none" else t.count * heads * head_dim * 2 * keys
    causal = 2 * keys if t.select == "full" else Fraction(2 * attended_pairs(keys, t.window, t.chunk, t.select, t.ahead), keys)
    pairs_x2 = {  # twice the keys an average query meets
        # pooled keys: only complete blocks exist to score; a compressor's entries: every one, for every query
        "full": causal if t.select == "blocks" else 2 * (keys // t.chunk) if t.select == "entries" else 2 * keys,
        "causal": causal,
        "half": keys // t.chunk if t.select == "entries" else keys,
        "none": 0,
    }[attention]
    flops = t.count * heads * head_dim * pairs_x2
    return int(flops) if flops == int(flops) else flops


def _whole(n: Number) -> Number:
    return int(n) if n == int(n) else n


def _row(t: Term, conv: Convention) -> Row:
    counted = t.role in conv.params and not (t.tied and not conv.untie)
    # a weight-shared tensor (t.stored) holds its parameters once, where it is stored, and runs at every use
    params = t.numel * t.stored_count if counted else 0
    active = t.numel * (t.active_count if t.stored is None else t.stored) if counted else 0
    shape, count = t.shape, t.stored_count
    if conv.per_head and t.heads > 1:
        shape, count = (t.shape[0] // t.heads,) + t.shape[1:], t.count * t.heads
    matrices = count if counted and t.role in MATRICES else 0

    if t.form and t.form != conv.linear or t.component in conv.leave_out:
        flops = 0
    elif t.role == "core":
        flops = core_flops(t, conv.attention)
    elif t.role == "norm" and t.component in conv.norm_macs:
        flops = 2 * t.active_count * t.shape[0]  # one multiply-add per element normalised
    elif conv.flops == "matmul":
        flops = 2 * t.macs if t.role in conv.matmul else 0
    else:
        flops = 2 * t.numel * t.active_count if counted else 0  # 2N: two FLOPs per parameter a token uses, per use

    if conv.elementwise == "ops":
        elementwise = t.elementwise
    else:
        elementwise = 0
    if conv.elementwise == "softmax3":
        flops += 3 * t.scores  # Chinchilla: softmax 3·heads·s² per sequence, in its FLOP total
    if t.positions != 1:  # the layers' work over prompt positions as well (parts/prompts.py)
        flops, elementwise = _whole(flops * t.positions), _whole(elementwise * t.positions)
    return Row(
        t.name,
        t.role,
        t.part,
        t.layers,
        shape,
        count,
        params,
        active,
        matrices,
        flops,
        elementwise,
        tied=t.tied and not conv.untie,
        expert=t.expert,
        component=t.component,
        slot=t.slot,
        window=t.window,
        chunk=t.chunk,
        grows=t.grows,
        select=t.select,
        per_sequence=t.per_sequence,
    )


@dataclass(frozen=True)
class Tally:
    """Rows under one convention, with the totals every output shows."""

    model: str
    convention: Convention
    seq_len: int
    batch: int
    recompute: Recompute
    rows: tuple[Row, ...]
    moe: bool
    notes: tuple[str, ...] = ()  # the source's notes on what is and is not counted
    mtp_params: int = 0  # multi-token prediction modules, apart from the model's parameters
    mtp_copies: int = 0  # the embedding and head copies a checkpoint stores with each of them
    # the attention products (QKᵀ, AV and their kin) per token in the two views, whatever the convention:
    # executed dense (the full square eager attention computes) and useful (what a causal, windowed,
    # chunked or sparse kernel computes); None where the convention does not count attention
    views: dict[str, Number] | None = None
    # what the source leaves unstated that active parameters and FLOPs need (Model.needs): where any, only the
    # parameters are figures; the rest rests on a stand-in and is never shown
    needs: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    def _sum(self, attr: str, where=lambda r: True) -> Number:
        total = sum(getattr(r, attr) for r in self.rows if where(r))
        return int(total) if total == int(total) else total

    def _model_sum(self, attr: str, where=lambda r: True) -> Number:
        """Over the model's own rows: the multi-token prediction modules' parameters are counted apart."""
        return self._sum(attr, lambda r: r.part != "mtp" and where(r))

    @property
    def mtp(self) -> bool:
        """Whether the FLOPs include the multi-token prediction modules (training with them)."""
        return any(r.part == "mtp" for r in self.rows)

    @property
    def params(self) -> int:
        return self._model_sum("params")

    @property
    def embedding(self) -> int:
        """Embedding tables and the unembedding (a tied matrix once)."""
        return self._model_sum("params", lambda r: r.part in ("embedding", "head"))

    @property
    def non_embedding(self) -> int:
        return self.params - self.embedding

    @property
    def active(self) -> int:
        """Parameters one token uses: top_k of the routed experts, everything else in full."""
        return self._model_sum("active")

    @property
    def active_without_input_embedding(self) -> int:
        """Active parameters less the input embedding table, as gpt-oss's model card counts them (the
        unembedding stays: every token multiplies it). A tied matrix is the unembedding too, so it stays."""
        return self.active - self._sum("active", lambda r: r.part == "embedding" and not r.tied and r.role == "token")

    @property
    def active_without_embeddings(self) -> int:
        """Active parameters less every embedding table and the unembedding (Kaplan et al.'s non-embedding N)."""
        return self.active - self._sum("active", lambda r: r.part in ("embedding", "head"))

    @property
    def matrices(self) -> int:
        return self._model_sum("matrices")

    @property
    def flops_per_token(self) -> Number:
        """An exact average over the sequence: a fraction where a windowed layer makes it one."""
        return self._sum("flops")

    @property
    def elementwise_per_token(self) -> Number:
        return self._sum("elementwise")

    @property
    def forward_flops(self) -> int:
        return int(self.flops_per_token * self.tokens)  # whole: every sequence has seq_len queries

    @property
    def elementwise_flops(self) -> int:
        return int(self.elementwise_per_token * self.tokens)  # whole: every sequence has seq_len tokens

    @property
    def recompute_flops(self) -> int:
        """Forward work run again during the backward pass (Korthikanti et al. 2022)."""
        if self.recompute == "full":
            per_token = self._sum("flops", lambda r: r.part in ("layers", "mtp"))
        elif self.recompute == "selective":
            per_token = self._sum("flops", lambda r: r.role == "core")
        else:
            per_token = 0
        return int(per_token * self.tokens)

    @property
    def train_flops(self) -> int:
        """One training step: forward + backward (2 × forward: input and weight gradients) + recomputation."""
        return 3 * self.forward_flops + self.recompute_flops

    def view(self, name: str) -> Number | None:
        """Forward matmul FLOPs per token with the attention products in view ``name`` ("executed" or "useful")."""
        if self.views is None:
            return None
        own = self._sum("flops", lambda r: r.role == "core")
        total = self.flops_per_token - own + self.views[name]
        return int(total) if total == int(total) else total

    def totals(self) -> dict[str, int]:
        return {
            "params": self.params,
            "embedding_params": self.embedding,
            "non_embedding_params": self.non_embedding,
            "active_params": self.active,
            "mtp_params": self.mtp_params,
            "mtp_params_with_copies": self.mtp_params + self.mtp_copies,
            "active_params_without_input_embedding": self.active_without_input_embedding,
            "active_non_embedding_params": self.active_without_embeddings,
            "matrices": self.matrices,
            "forward_flops_per_token": plain(self.flops_per_token),
            "elementwise_flops_per_token": plain(self.elementwise_per_token),
            "forward_flops": self.forward_flops,
            "elementwise_flops": self.elementwise_flops,
            "recompute_flops": self.recompute_flops,
            "train_flops": self.train_flops,
        }

    def view_records(self) -> dict[str, dict[str, int | float]]:
        """Per token in each view: the attention products and the forward matmul total."""
        if self.views is None:
            return {}
        return {
            k: {"attention_flops_per_token": plain(v), "forward_flops_per_token": plain(self.view(k))} for k, v in self.views.items()
        }


def tally(
    spec: Model,
    *,
    model: str | None = None,
    convention: str = DEFAULT,
    seq_len: int | None = None,
    batch: int = 1,
    recompute: Recompute = "none",
    mtp: bool = False,
    partial: bool = False,
) -> Tally:
    """Count ``spec`` under a named convention at ``seq_len`` (default: the model's context) and ``batch``;
    ``mtp``: the FLOPs include the multi-token prediction modules, as a training run with them executes
    (their parameters are counted apart either way). A model whose source leaves unstated what active parameters
    and FLOPs need (``Model.needs``) is refused with what it needs, unless ``partial``: then its parameters alone
    are figures (``Tally.needs``)."""
    conv = CONVENTIONS[convention]
    seq_len = spec.context_length if seq_len is None else seq_len
    all_terms = terms(spec, seq_len, partial=partial)
    mtp_rows = [_row(t, conv) for t in mtp_terms(spec, seq_len)]
    if mtp:
        all_terms += mtp_terms(spec, seq_len)
    rows = tuple(r for r in (_row(t, conv) for t in all_terms) if r.params or r.flops or r.elementwise or r.tied)
    moe = any(t.expert for t in all_terms)
    mtp_params = sum(r.params for r in mtp_rows)
    views = None
    if conv.attention != "none" and conv.flops == "matmul" and "core" in conv.matmul:
        cores = [t for t in all_terms if t.role == "core" and not (t.form and t.form != conv.linear)]
        views = {
            "executed": _whole(sum(core_flops(t, "full") * t.positions for t in cores)),
            "useful": _whole(sum(core_flops(t, "causal") * t.positions for t in cores)),
        }
    copies = spec.mtp_layers * 2 * spec.vocab_size * spec.d_model  # DeepSeek-V3's checkpoint: embed_tokens, shared_head.head
    return Tally(
        model or spec.name or "model", conv, seq_len, batch, recompute, rows, moe, spec.notes, mtp_params, copies, views, spec.needs
    )


def merge_layers(rows: tuple[Row, ...]) -> list[Row]:
    """Fold rows of the same name across layer groups; a shape that differs between groups becomes ()."""
    merged: dict[tuple[str, str], Row] = {}
    for r in rows:
        key = (r.part, r.name)
        m = merged.get(key)
        if m is None:
            merged[key] = r
            continue
        layers = None if m.layers is None else (min(m.layers[0], r.layers[0]), max(m.layers[1], r.layers[1]))
        merged[key] = replace(
            m,
            layers=layers,
            shape=m.shape if m.shape == r.shape else (),
            count=m.count + r.count,
            params=m.params + r.params,
            active=m.active + r.active,
            matrices=m.matrices + r.matrices,
            flops=m.flops + r.flops,
            elementwise=m.elementwise + r.elementwise,
        )
    return list(merged.values())
