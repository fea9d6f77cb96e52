"""Compressed attention (DeepSeek-V4: DeepseekV4Attention, DeepseekV4HCACompressor, DeepseekV4CSACompressor and
DeepseekV4Indexer in transformers 5.23.0, models/deepseek_v4; the DeepSeek-V4 report §2.3).

One key-value head shared by every query head, the key and the value the same vector (shared-KV MQA): kv maps
d_model to head_dim, a norm, rotary positions on its last rotary_dim features. The query is low-rank: q_a
(d_model -> q_lora_rank), a norm, q_b (-> heads × head_dim), then an RMSNorm without weight over each head and
rotary positions. Each head's softmax takes a learned sink logit; the heads' output is turned back by the
query's rotary angle, then projected by o_a, a block-diagonal projection of o_groups groups of heads
(heads·head_dim / o_groups -> o_lora_rank each), and o_b (o_groups·o_lora_rank -> d_model). Every query attends
the last ``window`` keys, its own included.

A layer with a ``compress_rate`` m also attends compressed entries, one per complete window of m positions: its
compressor projects every token to kv and gate (d_model -> head_dim each, no bias), adds a learned position_bias
(m × head_dim) to the gates, and an entry is the softmax-over-the-window weighted sum of its window's kv, normed
(kv_norm) and turned by rotary positions at the window's first position (the heavily compressed layers, HCA, §2.3.2).
With ``overlap`` (the compressed sparse layers, CSA, §2.3.1) kv and gate are 2·head_dim wide: two series, an entry
summing the first series of the previous window and the second of its own (width 2m, stride m), position_bias
m × 2·head_dim. A query at position p (from 1) may attend the ⌊p / m⌋ entries of complete windows.
With an indexer (CSA) a query attends only index_topk of them, those its lightning indexer scores best: the
indexer has a compressor of its own at index_head_dim (kv, gate, position_bias, kv_norm; overlapping as the
layer's), q_b (q_lora_rank -> index heads × index_head_dim, from the normed query latent) with rotary positions, and
weights_proj (d_model -> index heads); score(t, s) = Σ_j w[t, j] · ReLU(q[t, j] · k[s]) / √index_head_dim.

Counted as transformers' eager path runs it (the ``exact`` view, which verify checks): QKᵀ and AV over every key
of the sequence and every entry, the window, causality and the selection masks; the index scores of every query
against every entry. The weighting of the index scores over the heads is a broadcast product and a sum in
DeepseekV4IndexerScorer (elementwise work), and so are each entry's gated sum. The useful (``causal``) view: the
window (min(p, window) keys), min(⌊p / m⌋, index_topk) entries, and every complete entry in the index scores
(model/terms.py, attended_pairs, select "entries").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ROTARY_OPS, SOFTMAX_OPS
from . import Block, register
from .attention import softmax_score_bytes

UNWEIGHTED_RMS_OPS = 3  # per element of an RMSNorm without weight: square, sum, scale
INDEX_SCORE_OPS = 2 + 2  # per index score and head: ReLU, the scale, the head weight's product, the sum over heads


@register
@dataclass(frozen=True)
class CompressedAttention(Block):
    """Shared-KV sliding-window attention with compressed entries and a lightning indexer (DeepSeek-V4)."""

    kind = "csa"
    slot = "attention"
    summary = (
        "sliding-window shared-KV attention with compressed key entries, a lightning indexer over them and "
        "a grouped output projection (DeepSeek-V4's CSA and HCA)"
    )

    n_heads: Positive
    head_dim: Positive
    q_lora_rank: Positive
    o_groups: Positive
    o_lora_rank: Positive
    window: Positive  # every query attends its last `window` keys, its own included (sliding_window)
    rotary_dim: Positive | None = None  # the features of each head rotary positions turn (qk_rope_head_dim); all
    sinks: bool = True  # a learned logit per head that joins every softmax and takes no value
    compress_rate: Positive | None = None  # positions per compressed entry; none: the window alone
    overlap: bool = False  # two series per token, each entry over its window and the one before (CSA)
    index_n_heads: Positive | None = None  # the indexer's heads; none: every entry is attended (HCA)
    index_head_dim: Positive | None = None
    index_topk: Positive | None = None  # entries a query attends, those the indexer scores best

    @property
    def rope(self) -> int:
        return self.rotary_dim or self.head_dim

    @property
    def indexed(self) -> bool:
        return self.index_n_heads is not None

    @property
    def series(self) -> int:
        return 2 if self.overlap else 1

    @property
    def verify_note(self) -> str | None:
        if self.compress_rate is None:
            return None
        return (
            "csa: executed dense, as transformers' eager path runs it: every key and compressed entry scored, "
            "the window, causality and the indexer's selection masks; causal: the window and the entries a "
            "query may attend"
        )

    def check(self, d_model: int) -> None:
        if self.n_heads * self.head_dim % self.o_groups:
            raise SpecError(("o_groups",), f"{self.o_groups} groups do not divide {self.n_heads} heads × {self.head_dim}")
        if self.rope > self.head_dim:
            raise SpecError(("rotary_dim",), f"rotary_dim {self.rope} exceeds head_dim {self.head_dim}")
        if self.compress_rate is None:
            for name in ("overlap", "index_n_heads"):
                if getattr(self, name):
                    raise SpecError((name,), f"{name} needs compressed entries: state compress_rate")
        if not self.indexed:
            for name in ("index_head_dim", "index_topk"):
                if getattr(self, name) is not None:
                    raise SpecError((name,), "an indexer setting without index_n_heads (which turns the indexer on)")
            return
        for name in ("index_head_dim", "index_topk"):
            if getattr(self, name) is None:
                raise SpecError((name,), f"the indexer needs {name} as well as index_n_heads")

    def head_count(self) -> int:
        return self.n_heads

    def describe(self) -> str:
        text = f"{self.n_heads} heads, 1 shared KV × {self.head_dim}, window {self.window:,}"
        if self.compress_rate:
            text += f", entries of {self.compress_rate}" + (" overlapping" if self.overlap else "")
        if self.indexed:
            text += f", indexer {self.index_n_heads} × {self.index_head_dim} → top {self.index_topk:,}"
        return text

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/1"}

    def terms(self, e, model, seq_len: int) -> None:
        """q_a, q_a_norm, q_b, the unweighted norm of each query head, kv and kv_norm; rotary on the query heads and
        the key, and the output turned back; the sinks; QKᵀ and AV over the window (one key head, read by every
        query head); the compressor and its entries (QKᵀ and AV over them: "core" products, select "entries"); the
        indexer; o_a (heads·head_dim -> o_groups·o_lora_rank, block-diagonal: heads·head_dim·o_lora_rank
        multiply-adds) and o_b."""
        d, h, hd, n = model.d_model, self.n_heads, self.head_dim, e.n
        e.linear("attn.q_a", d, self.q_lora_rank, False, n)
        e.norm("attn.q_a_norm", model.norm, self.q_lora_rank, n)
        e.linear("attn.q_b", self.q_lora_rank, h * hd, False, n, heads=h)
        e.op("attn.q_b_norm", n * UNWEIGHTED_RMS_OPS * h * hd)
        e.linear("attn.kv", d, hd, False, n)
        e.norm("attn.kv_norm", model.norm, hd, n)
        if model.positions == "rotary":  # every query head, the key, and the heads' output turned back
            e.op("attn.rotary", n * ROTARY_OPS * (2 * h + 1) * self.rope)
        if self.sinks:
            e.term("attn.sinks", "bias", (h,), n, elementwise=n * h * SOFTMAX_OPS)
        keys = seq_len + (seq_len // self.compress_rate if self.compress_rate else 0)
        e.op("attn.softmax", n * SOFTMAX_OPS * h * keys, scores=n * h * keys)
        e.term("attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd, window=self.window)
        e.term("attn.values", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd, window=self.window)
        if self.compress_rate:
            m = self.compress_rate
            self._compressor_terms(e, model, "attn.compressor", hd)
            topk = self.index_topk if self.indexed else None
            entries = n * h * (seq_len // m) * hd
            e.term("attn.entry_scores", "core", (h, seq_len, hd), n, numel=0, macs=entries, window=topk, chunk=m, select="entries")
            e.term("attn.entry_values", "core", (h, seq_len, hd), n, numel=0, macs=entries, window=topk, chunk=m, select="entries")
        if self.indexed:
            self._indexer_terms(e, model, seq_len)
        e.term(
            "attn.o_a.weight",
            "weight",
            (self.o_groups * self.o_lora_rank, h * hd // self.o_groups),
            n,
            macs=n * h * hd * self.o_lora_rank,
            heads=self.o_groups,
        )
        e.linear("attn.o_b", self.o_groups * self.o_lora_rank, d, False, n)

    def _compressor_terms(self, e, model, name: str, width: int) -> None:
        """kv and gate (d_model -> series × width, no bias), position_bias (m × series·width, added to every gate),
        the softmax of each gate over its entry's slots and the weighted sum (per element a token contributes);
        per entry, its norm and rotary positions: one m-th per token, rounded down."""
        d, n, m, c = model.d_model, e.n, self.compress_rate, self.series
        e.linear(f"{name}.kv", d, c * width, False, n)
        e.linear(f"{name}.gate", d, c * width, False, n)
        e.term(f"{name}.position_bias", "bias", (m, c * width), n, elementwise=n * c * width)
        e.term(
            f"{name}.kv_norm",
            "norm",
            (width,),
            n,
            numel=width * model.norm.params_per_feature,
            elementwise=n * model.norm.ops(width) // m,
        )
        rope = ROTARY_OPS * min(self.rope, width) if model.positions == "rotary" else 0
        e.op(f"{name}.pool", n * (c * width * (SOFTMAX_OPS + 2)) + n * rope // m)

    def _indexer_terms(self, e, model, seq_len: int) -> None:
        """The indexer's compressor, q_b (q_lora_rank -> heads × index_head_dim) with rotary positions,
        weights_proj (d_model -> heads), and the scores of each index head against every entry (a "core"
        product); their ReLU, scale and weighting over the heads are elementwise (DeepseekV4IndexerScorer)."""
        d, n, hi, di, m = model.d_model, e.n, self.index_n_heads, self.index_head_dim, self.compress_rate
        self._compressor_terms(e, model, "attn.indexer", di)
        e.linear("attn.indexer.q_b", self.q_lora_rank, hi * di, False, n, heads=hi)
        e.linear("attn.indexer.weights_proj", d, hi, False, n)
        if model.positions == "rotary":
            e.op("attn.indexer.rotary", n * ROTARY_OPS * hi * min(self.rope, di))
        entries = seq_len // m
        e.term("attn.indexer.scores", "core", (hi, seq_len, di), n, numel=0, macs=n * hi * entries * di, chunk=m, select="entries")
        e.op("attn.indexer.reduce", n * INDEX_SCORE_OPS * hi * entries)

    def cached_tokens(self, tokens: int) -> int:
        """Positions of head_dim elements cached after ``tokens`` tokens: the window's keys (K = V, one head), the
        compressed entries (one per m tokens), and the indexer's entries (index_head_dim each), in head_dim units
        rounded down (DeepseekV4HCACache, DeepseekV4CSACache; the buffered tokens of an incomplete window aside)."""
        cached = min(tokens, self.window)
        if self.compress_rate:
            entries = tokens // self.compress_rate
            cached += entries + (entries * self.index_head_dim // self.head_dim if self.indexed else 0)
        return cached

    def cache_elements(self, model) -> int:
        """One key-value vector per cached position: K = V, one head."""
        return self.head_dim

    def kept_elements(self, model) -> int:
        """What DeepSeek-V4's attention keeps a token with one sparse flash kernel over the window, the entries and
        the sink (FlashMLA's sparse kernel: Q, the shared key-value head, the output, the chosen entry ids and an
        fp32 log-sum-exp), its norms fused, the indexer's choice taking no gradient (it keeps nothing):

        - the input (d); q_a's output, its norm's input, and the norm's fp32 statistic (r + 2, a LayerNorm's mean
          too: + 2) and the query latent, q_b's input (r);
        - q_b's output and the inverse RMS a head of its weightless norm (h·hd + h);
        - the kernel's Q (rotated, h·hd), key-value head (hd) and output (h·hd); kv's output and its norm's
          statistic (hd + 2);
        - o_a's input, the turned-back output grouped (h·hd; without rotary positions the kernel's output itself,
          as it lies), and o_b's (o_groups · o_lora_rank);
        - with the indexer, the chosen entries' ids (int64, 4 16-bit elements each, index_topk of them).
        The compressed entries are a sequence's: ``score_bytes``."""
        h, hd, r, d = self.n_heads, self.head_dim, self.q_lora_rank, model.d_model
        stat = 4 if model.norm.kind.startswith("layernorm") else 2
        turned = h * hd if model.positions == "rotary" else 0
        kept = d + (r + stat) + r + (h * hd + h) + 2 * h * hd + turned + hd + (hd + stat) + self.o_groups * self.o_lora_rank
        return kept + (4 * self.index_topk if self.indexed else 0)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Flash: the kernel's fp32 log-sum-exp a query and head, and with a compressor, a sequence: its kv's output
        the gated sum reads (s × hd; overlapping, the two series' copy over each window's 2m slots), the gates'
        softmax over each window's slots (⌊s / m⌋ × m × series·hd), the entries before their norm and the norm's
        fp32 statistic (4 bytes an entry, a LayerNorm's 8), and the entries the kernel keeps (⌊s / m⌋ × hd).
        Eager: the softmax's scores, as multi-head attention's."""
        if not flash:
            return softmax_score_bytes(self.n_heads, seq_len, flash)
        lse = 4 * self.n_heads * seq_len
        if not self.compress_rate:
            return lse
        hd, m = self.head_dim, self.compress_rate
        w = seq_len // m
        kv = w * 2 * m * hd if self.overlap else seq_len * hd
        gates = w * m * self.series * hd
        stat = 8 if model.norm.kind.startswith("layernorm") else 4
        return lse + 2 * (kv + gates + w * hd + w * hd) + stat * w

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn

    from ._torch import Linear, MatMul, make_norm, rotate, softmax

    def rotate_tail(x: torch.Tensor, width: int) -> torch.Tensor:
        """Rotary positions on the last ``width`` features (DeepSeek-V4 lays each head out as [nope | rope])."""
        return torch.cat([x[..., : x.shape[-1] - width], rotate(x[..., x.shape[-1] - width :], width)], dim=-1)

    def unweighted(x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    class GroupedLinear(nn.Module):
        """o_a: one (group's inputs -> o_lora_rank) block per group, as one batched product."""

        weight_flops = True

        def __init__(self, groups: int, d_in: int, d_out: int):
            super().__init__()
            self.groups = groups
            self.weight = nn.Parameter(torch.empty(groups * d_out, d_in))
            if self.weight.device.type != "meta":  # nn.Linear's initialisation, not uninitialised memory
                nn.init.kaiming_uniform_(self.weight, a=5**0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., groups, d_in) -> (..., groups, d_out)
            lead = x.shape[:-2]
            w = self.weight.view(self.groups, -1, x.shape[-1]).transpose(1, 2)  # (groups, d_in, d_out)
            y = torch.bmm(x.reshape(-1, self.groups, x.shape[-1]).transpose(0, 1), w)
            return y.transpose(0, 1).reshape(*lead, self.groups, -1)

    class Compressor(nn.Module):
        """kv and gate, position_bias and kv_norm: (B, s, d) -> (B, ⌊s / m⌋, width) entries."""

        def __init__(self, spec: CompressedAttention, model, width: int):
            super().__init__()
            d, c, self.m, self.width = model.d_model, spec.series, spec.compress_rate, width
            self.overlap, self.rope, self.positions = spec.overlap, min(spec.rope, width), model.positions
            self.kv = Linear(d, c * width, bias=False)
            self.gate = Linear(d, c * width, bias=False)
            self.position_bias = nn.Parameter(torch.zeros(self.m, c * width))
            self.kv_norm = make_norm(model.norm, width)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            w, m = s // self.m, self.m
            kv, gate = self.kv(x), self.gate(x)
            kv = kv[:, : w * m].reshape(b, w, m, kv.shape[-1])
            gate = gate[:, : w * m].reshape(b, w, m, gate.shape[-1]) + self.position_bias
            if self.overlap:  # the previous window's first series, then this window's second
                width = self.width
                first_kv = torch.cat([kv.new_zeros(b, 1, m, width), kv[:, :-1, :, :width]], dim=1)
                first_gate = torch.cat([gate.new_full((b, 1, m, width), float("-inf")), gate[:, :-1, :, :width]], dim=1)
                kv = torch.cat([first_kv, kv[..., width:]], dim=2)
                gate = torch.cat([first_gate, gate[..., width:]], dim=2)
            entries = self.kv_norm((kv * gate.softmax(dim=2)).sum(dim=2))  # (B, w, width)
            if self.positions == "rotary" and w:
                entries = rotate_tail(entries.unsqueeze(1), self.rope).squeeze(1)
            return entries

    class Indexer(Compressor):
        """DeepseekV4Indexer: the entries each query keeps, (B, s, topk) indices (-1: none)."""

        def __init__(self, spec: CompressedAttention, model, causal: bool):
            super().__init__(spec, model, spec.index_head_dim)
            hi, di = spec.index_n_heads, spec.index_head_dim
            self.heads, self.dim, self.topk, self.causal = hi, di, spec.index_topk, causal
            self.q_b = Linear(spec.q_lora_rank, hi * di, bias=False)
            self.weights_proj = Linear(model.d_model, hi, bias=False)
            self.scores = MatMul()

        def forward(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
            """(B, s, w) index scores, -inf where the entry is not complete up to the query."""
            b, s, _ = x.shape
            entries = Compressor.forward(self, x)  # (B, w, di)
            w = entries.shape[1]
            q = self.q_b(q_latent).view(b, s, self.heads, self.dim).transpose(1, 2)  # (B, Hi, s, di)
            if self.positions == "rotary":
                q = rotate_tail(q, self.rope)
            weights = self.weights_proj(x) * self.heads**-0.5  # (B, s, Hi)
            score = x.new_full((b, s, w), float("-inf"))
            if self.causal:  # query p against its ⌊p / m⌋ complete entries only
                for i in range(s):
                    seen = (i + 1) // self.m
                    if seen:
                        part = self.scores(q[:, :, i : i + 1, :], entries[:, None, :seen, :].transpose(-2, -1))
                        part = torch.relu(part.squeeze(2)) / math.sqrt(self.dim)  # (B, Hi, seen)
                        score[:, i, :seen] = (part * weights[:, i, :, None]).sum(1)
                return score
            part = torch.relu(self.scores(q, entries[:, None].transpose(-2, -1))) / math.sqrt(self.dim)  # (B, Hi, s, w)
            score = (part * weights.transpose(1, 2)[..., None]).sum(1)
            i = torch.arange(s, device=x.device)
            visible = torch.arange(w, device=x.device)[None, :] < ((i + 1) // self.m)[:, None]
            return score.masked_fill(~visible, float("-inf"))

    class CSA(nn.Module):
        def __init__(self, spec: CompressedAttention, model, causal: bool):
            super().__init__()
            d, h, hd = model.d_model, spec.n_heads, spec.head_dim
            self.heads, self.dim, self.groups, self.window = h, hd, spec.o_groups, spec.window
            self.rope, self.positions, self.causal, self.m = spec.rope, model.positions, causal, spec.compress_rate
            self.q_a = Linear(d, spec.q_lora_rank, bias=False)
            self.q_a_norm = make_norm(model.norm, spec.q_lora_rank)
            self.q_b = Linear(spec.q_lora_rank, h * hd, bias=False)
            self.kv = Linear(d, hd, bias=False)
            self.kv_norm = make_norm(model.norm, hd)
            if spec.sinks:
                self.sinks = nn.Parameter(torch.zeros(h))
            if spec.compress_rate:
                self.compressor = Compressor(spec, model, hd)
                self.entry_scores = MatMul()
                self.entry_values = MatMul()
            if spec.indexed:
                self.indexer = Indexer(spec, model, causal)
            self.scores = MatMul()
            self.values = MatMul()
            self.o_a = GroupedLinear(spec.o_groups, h * hd // spec.o_groups, spec.o_lora_rank)
            self.o_b = Linear(spec.o_groups * spec.o_lora_rank, d, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b, s, _ = x.shape
            q_latent = self.q_a_norm(self.q_a(x))
            q = unweighted(self.q_b(q_latent).view(b, s, self.heads, self.dim).transpose(1, 2))  # (B, H, s, hd)
            kv = self.kv_norm(self.kv(x)).view(b, 1, s, self.dim)
            if self.positions == "rotary":
                q, kv = rotate_tail(q, self.rope), rotate_tail(kv, self.rope)
            if _fused.active() and self.causal:
                return self.sparse(x, q_latent, q, kv)
            q = q * (1.0 / math.sqrt(self.dim))
            kv = kv.expand(b, self.heads, s, self.dim)
            sinks = getattr(self, "sinks", None)
            entries = self.compressor(x)[:, None].expand(b, self.heads, -1, self.dim) if self.m else None
            w = entries.shape[2] if entries is not None else 0
            score = self.indexer(x, q_latent) if hasattr(self, "indexer") else None
            topk = self.indexer.topk if score is not None else None
            if self.causal:  # each query: its window and the entries it keeps, one softmax
                rows = []
                for t in range(s):
                    lo, seen = max(0, t - self.window + 1), (t + 1) // self.m if self.m else 0
                    sc = self.scores(q[:, :, t : t + 1], kv[:, :, lo : t + 1].transpose(-2, -1))  # (B, H, 1, n)
                    parts, vals = [sc], [kv[:, :, lo : t + 1]]
                    if seen:
                        if score is None:
                            ek = entries[:, :, :seen]
                        else:  # the indexer's best min(seen, topk) of the complete entries
                            picked = score[:, t, :seen].topk(min(seen, topk), dim=-1).indices  # (B, k)
                            ek = entries.gather(2, picked[:, None, :, None].expand(b, self.heads, -1, self.dim))
                        parts.append(self.entry_scores(q[:, :, t : t + 1], ek.transpose(-2, -1)))
                        vals.append(ek)
                    probs = softmax(torch.cat(parts, dim=-1), sinks)
                    n0 = sc.shape[-1]
                    out = self.values(probs[..., :n0], vals[0])
                    if len(vals) > 1:
                        out = out + self.entry_values(probs[..., n0:], vals[1])
                    rows.append(out)
                out = torch.cat(rows, dim=-2)
            else:  # the full square and every entry, masked
                i = torch.arange(s, device=x.device)
                scores = self.scores(q, kv.transpose(-2, -1))
                outside = (i[None, :] > i[:, None]) | (i[None, :] <= i[:, None] - self.window)
                scores = scores.masked_fill(outside, float("-inf"))
                if entries is not None:
                    w = entries.shape[2]
                    keep = torch.arange(w, device=x.device)[None, :] < ((i + 1) // self.m)[:, None]  # (s, w)
                    keep = keep.expand(b, s, w)
                    if score is not None and w:
                        top = score.topk(min(topk, w), dim=-1).indices
                        keep = keep & torch.zeros(b, s, w, dtype=torch.bool, device=x.device).scatter(-1, top, True)
                    extra = self.entry_scores(q, entries.transpose(-2, -1)).masked_fill(~keep[:, None], float("-inf"))
                    scores = torch.cat([scores, extra], dim=-1)
                probs = softmax(scores, sinks)
                out = self.values(probs[..., :s], kv)
                if entries is not None:
                    out = out + self.entry_values(probs[..., s:], entries)
            if self.positions == "rotary":  # the output turned back by the query's angle
                out = rotate_tail(out, self.rope)
            grouped = out.transpose(1, 2).reshape(b, s, self.groups, -1)
            return self.o_b(self.o_a(grouped).flatten(2))

        def sparse(self, x, q_latent, q, kv) -> torch.Tensor:
            """As DeepSeek-V4 trains: one sparse flash kernel over the window, the compressed entries and the sink
            (``_fused.compressed_attention``), the indexer's choice taking no gradient (it keeps nothing)."""
            from . import _fused

            b, s, _ = x.shape
            entries = self.compressor(x)[:, None] if self.m else None  # (B, 1, w, hd)
            index = None
            if hasattr(self, "indexer"):
                with torch.no_grad():
                    score = self.indexer(x, q_latent)  # (B, s, w)
                    top = score.topk(min(self.indexer.topk, score.shape[-1]), dim=-1)
                    chosen = torch.zeros_like(score, dtype=torch.bool).scatter(-1, top.indices, top.values > float("-inf"))
                    index = _fused.first_ids(chosen, self.indexer.topk)  # (B, s, index_topk)
            sinks = getattr(self, "sinks", None)
            out = _fused.compressed_attention(q, kv, entries, index, sinks, 1.0 / math.sqrt(self.dim), self.window, self.m)
            if self.positions == "rotary":  # the output turned back by the query's angle
                out = rotate_tail(out, self.rope)
            grouped = out.transpose(1, 2).reshape(b, s, self.groups, -1)
            return self.o_b(self.o_a(grouped).flatten(2))

    return CSA
