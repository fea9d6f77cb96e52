"""Terms: one tensor, or one operation without parameters, of a forward pass; and the emitter blocks write them with.

FLOPs are per token of a forward pass: a matmul costs 2 FLOPs per multiply-add (``macs``). Elementwise
work is kept apart (``elementwise``): its per-element costs below are estimates by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import prod
from typing import Literal

Part = Literal["embedding", "layers", "final", "head", "mtp"]

# Elementwise FLOPs per element, one per arithmetic step of the textbook formula, a transcendental
# (exp, erf, tanh) counting one. These are estimates by construction and never enter the matmul figure.
ACTIVATION_OPS = {
    "identity": 0,
    "relu": 1,  # max(0, x)
    "relu2": 2,  # max(0, x)²
    "tanh": 1,
    "sigmoid": 4,  # 1 / (1 + exp(-x)): negate, exp, add, divide
    "silu": 5,  # x · sigmoid(x)
    "gelu": 5,  # 0.5 · x · (1 + erf(x / √2)): divide, erf, add, two multiplies
    "gelu_tanh": 9,  # 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))
    "quick_gelu": 6,  # x · sigmoid(1.702 · x) (CLIP's): a multiply, the sigmoid, a multiply
}
Activation = Literal["identity", "relu", "relu2", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "quick_gelu"]  # a spec's
SOFTMAX_OPS = 6  # per score: scale by 1/√d, max, subtract, exp, sum, divide
ROTARY_OPS = 3  # per rotated element: x·cos + rotate(x)·sin
RESIDUAL_ADDS = 2  # per layer and model-width element: one after attention, one after the FFN


@dataclass(frozen=True)
class Term:
    """One tensor (or one operation without parameters) of the model, all its instances together."""

    name: str
    role: str  # see analysis/conventions.py
    part: Part
    shape: tuple[int, ...] = ()  # one instance
    numel: int = 0  # parameters of one instance
    count: int = 1  # instances in the model (layers × copies per layer)
    active_count: int = 1  # instances one token passes through (top_k of the experts)
    macs: int = 0  # forward multiply-adds per token, all instances (core: the full square)
    elementwise: int = 0  # forward elementwise FLOPs per token, all instances
    scores: int = 0  # attention score elements per token (softmax terms only)
    heads: int = 1  # matrices per instance in a per-head view (q, k, v)
    tied: bool = False  # the unembedding shares the token embedding's parameters
    layers: tuple[int, int] | None = None  # [first, stop) for terms inside the stack
    expert: bool = False  # one of a mixture's routed experts: expert parallelism splits it
    component: str = ""  # the module the term belongs to (its name without .weight/.bias, or a group of them)
    slot: str = ""  # inside a layer: the slot of the block that wrote it ("attention", "ffn"), or "" for the layer's own
    window: int | None = None  # core terms: each query meets at most this many keys, its own included
    chunk: int | None = None  # core terms: each query meets only the keys of its own chunk of this many positions
    # (both: block-sparse, its own chunk up to itself and at most window − chunk keys of whole earlier chunks)
    # core terms of an encoder's sliding window (select "both"): the keys after each query where fewer than ``window``
    # (Moonshine Streaming's lookahead: 15 keys before, 3 or none after)
    ahead: int | None = None
    grows: bool = True  # core terms: decoding meets every cached key (attention); False: a recurrent mixer's
    # per-step work, the same at any context
    # a linear-attention mixer's work exists in one form only: "chunked" (its chunked kernel's products) or
    # "recurrent" (the token-by-token recurrence); a convention counts the form it names (conventions.py)
    form: str = ""
    # core terms whose keys an indexer picks by blocks of `chunk` (Qwen4-Exp's QSA): "budget", a query meets its
    # visible keys up to `window` (the budget) of whole earlier blocks and the keys of its own incomplete block;
    # "blocks", the index scores: a query meets one pooled key per complete block up to itself, in every view;
    # "entries", keys of a compressor's entries, one per `chunk` positions (DeepSeek-V4's compressed attention): a
    # query meets the entries of complete chunks up to itself, at most `window` of them, and executed dense every
    # entry of the sequence; "pairs", a vision tower's windowed attention over one image (parts/vision.py), written as
    # one query whose keys are the query-key pairs of all the image's windows, each computed in every view
    select: str = ""
    # positions the work runs over per token of the sequence: (s + P) / s in the layers of a model that prepends P
    # prompt positions to every sequence of s tokens (parts/prompts.py); its FLOPs are scaled by it
    positions: Fraction | int = 1
    # instances whose parameters this term holds, where not every instance it runs is stored here: a weight-shared
    # block's tensors are stored once, in the run of its first use, and run at every use (model/shared.py); None: count
    stored: int | None = None
    # work done once a sequence for what it brings beside its tokens (an image through a vision tower), charged with
    # the sequence's tokens (``positions``) in a forward over it, and never in a decode step
    per_sequence: bool = False

    @property
    def stored_count(self) -> int:
        return self.count if self.stored is None else self.stored


@dataclass
class Emitter:
    """Collects the terms of one part of the model (or one run of identical layers: ``n`` of them)."""

    part: Part
    layers: tuple[int, int] | None = None
    out: list[Term] = field(default_factory=list)
    slot: str = ""  # set while a block writes its terms
    # while a weight-shared block writes its terms (model/shared.py): whether this run holds its tensors (the
    # block's first use) and how many layers use the block in all; (False, 0) for every term of a layer that runs an
    # earlier layer's parameters again (model/reuse.py); None otherwise
    shared: tuple[bool, int] | None = None

    @property
    def n(self) -> int:
        """Layers this emitter stands for."""
        return self.layers[1] - self.layers[0] if self.layers else 1

    def term(
        self,
        name: str,
        role: str,
        shape: tuple[int, ...] = (),
        copies: int = 1,
        active: int | None = None,
        *,
        numel: int | None = None,
        component: str | None = None,
        **kw,
    ) -> None:
        if numel is None:
            numel = prod(shape) if shape else 0
        active = copies if active is None else active
        component = component or name.removesuffix(".weight").removesuffix(".bias")
        if self.shared is not None and numel and "stored" not in kw:  # stored once, at the first use
            kw["stored"] = copies // self.n if self.shared[0] else 0
        self.out.append(
            Term(name, role, self.part, shape, numel, copies, active, layers=self.layers, component=component, slot=self.slot, **kw)
        )

    def linear(
        self, name: str, d_in: int, d_out: int, bias: bool, copies: int, active: int | None = None, heads: int = 1, **kw
    ) -> None:
        """nn.Linear(d_in, d_out): a (d_out, d_in) weight and an optional bias."""
        active = copies if active is None else active
        self.term(f"{name}.weight", "weight", (d_out, d_in), copies, active, macs=active * d_in * d_out, heads=heads, **kw)
        if bias:
            self.term(f"{name}.bias", "bias", (d_out,), copies, active, elementwise=active * d_out, **kw)

    def norm(self, name: str, norm, width: int, copies: int, total: int | None = None) -> None:
        """``copies`` norms of ``width`` features; ``total`` elements normalised per token (default: width each)."""
        if copies:
            self.term(
                name,
                "norm",
                (width,),
                copies,
                numel=width * norm.params_per_feature,
                elementwise=copies * norm.ops(width if total is None else total),
            )

    def op(self, name: str, elementwise: int, copies: int | None = None, **kw) -> None:
        """Elementwise work with no tensor of its own, done once per layer this emitter stands for (``copies``,
        what count's × column shows) unless stated; ``elementwise`` is the work of all of them."""
        self.term(name, "op", copies=self.n if copies is None else copies, elementwise=elementwise, **kw)


def attended_pairs(
    tokens: int, window: int | None = None, chunk: int | None = None, select: str = "", ahead: int | None = None
) -> int:
    """Query-key pairs a causal kernel computes over ``tokens`` queries: query i (from 0) meets keys
    max(0, i − W + 1)..i, min(i + 1, W) of them. Without a window, the triangle T(T+1)/2; with W < T,
    the triangle over the first W queries and W for each of the other T − W: W(W+1)/2 + (T − W)·W.
    Chunked (Llama 4's attention_chunk_size C): query i meets the keys of its own chunk up to itself,
    (i mod C) + 1 of them: a triangle per chunk, q·C(C+1)/2 + r(r+1)/2 with T = q·C + r.
    Both (block-sparse attention that keeps a query's own block: MiniMax-M3's indexer, W = K·C for K blocks):
    its own chunk up to itself and min(b·C, W − C) keys of whole earlier chunks, b = ⌊i / C⌋.
    select "budget" (Qwen4-Exp's QSA, W the budget of K·C keys): query p = i + 1 meets min(p, W + p mod C), which is
    block-sparse's count for p + 1 (window W + C) less one; summed, attended_pairs(T + 1, W + C, C) − 1 − T.
    select "blocks" (its index scores): query p meets ⌊p / C⌋ pooled keys; summed, C·q(q − 1)/2 + q·(m + 1) with
    T = q·C + m.
    select "entries" (DeepSeek-V4's compressed keys, one entry per chunk of C positions): query p meets min(⌊p / C⌋, W)
    entries (W none: no cap), the "blocks" count up to P = min(T, (W + 1)·C − 1) and W for each later query.
    select "both" (an encoder's sliding window, ModernBERT: |i − j| ≤ W): query i meets min(i, W) keys before it,
    min(T − 1 − i, W) after it and itself; summed, T + 2·Σ min(i, W). With ``ahead`` A (Moonshine Streaming's
    lookahead), min(T − 1 − i, A) keys after it: T + Σ min(i, W) + Σ min(i, A)."""
    if select == "both":  # query i meets keys i − W..i + A within the sequence
        # Σ min(i, W) on a side is the causal count with a window of W + 1 less the queries themselves
        after = window if ahead is None else ahead
        return attended_pairs(tokens, window + 1) + attended_pairs(tokens, after + 1) - tokens
    if select == "entries":
        last = tokens if window is None else min(tokens, (window + 1) * chunk - 1)
        return attended_pairs(last, chunk=chunk, select="blocks") + (tokens - last) * (window or 0)
    if select == "budget":
        return attended_pairs(tokens + 1, window + chunk, chunk) - 1 - tokens
    if select == "blocks":
        q, m = divmod(tokens, chunk)
        return chunk * q * (q - 1) // 2 + q * (m + 1)
    if chunk is not None and window is not None:
        q, r = divmod(tokens, chunk)
        most = max(window - chunk, 0) // chunk  # earlier chunks a query meets at most
        below = q * (q - 1) // 2 if q <= most + 1 else most * (most + 1) // 2 + (q - 1 - most) * most  # Σ min(b, most)
        earlier = below * chunk * chunk + r * min(q, most) * chunk
        return attended_pairs(tokens, chunk=chunk) + earlier
    if chunk is not None:
        q, r = divmod(tokens, chunk)
        return q * chunk * (chunk + 1) // 2 + r * (r + 1) // 2
    if window is None or tokens <= window:
        return tokens * (tokens + 1) // 2
    return window * (window + 1) // 2 + (tokens - window) * window
