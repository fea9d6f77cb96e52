"""Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1), with DeepSeek-V3.2's sparse-attention
indexer as an option.

Keys and values come from one low-rank latent: kv_a maps d_model to kv_lora_rank + qk_rope_head_dim (the
latent and one rotary key shared by all heads), a norm, then kv_b expands the latent to every head's
non-rotary key and value. The query is full-rank (q_lora_rank None) or low-rank likewise. Counted as
DeepSeek-V2 computes it in training (eqs. 9-17, and DeepseekV2Attention in transformers): the latents
expanded, not absorbed into the query.

The indexer (DeepSeek Sparse Attention, DeepSeek-V3.2-Exp technical report §2.1, eq. 1; DeepseekV32Indexer
and GlmMoeDsaIndexer in transformers 5.23.0) scores every key for each query with its own small heads,

    I[t, s] = Σ_j w[t, j] · ReLU(q[t, j] · k[s]),   q[t, j] from the query latent (wq_b), k[s] = LayerNorm(wk x_s),
                                                     w[t, j] from weights_proj x_t, j over index_n_heads heads,

and the attention then attends to the index_topk keys with the highest I[t, ·]. Its key (index_head_dim per
token) is cached beside the latent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, ROTARY_OPS, SOFTMAX_OPS
from . import Block, register
from .attention import attention_core, softmax_score_bytes

INDEXER_NORM = Norm("layernorm")  # the indexer's k_norm: nn.LayerNorm(index_head_dim), a weight and a bias
INDEX_SCORE_OPS = 2  # per index score: the softmax scale and the ReLU (the weighting is a matmul, counted apart)


@register
@dataclass(frozen=True)
class LatentAttention(Block):
    """Multi-head latent attention (DeepSeek-V2 §2.1), optionally with DeepSeek-V3.2's indexer."""

    kind = "mla"
    slot = "attention"
    summary = "multi-head latent attention: keys and values from one cached low-rank latent (DeepSeek-V2 §2.1)"

    n_heads: Positive
    kv_lora_rank: Positive
    qk_nope_head_dim: Positive
    qk_rope_head_dim: NonNegative  # 0: no rotary part (Mistral Large 4's no-RoPE layers, the nope part widened)
    v_head_dim: Positive
    q_lora_rank: Positive | None = None
    bias: bool = False  # on q_a, kv_a and o (DeepSeek's attention_bias); q/q_b and kv_b never have one
    # DeepSeek Sparse Attention's indexer (DeepSeek-V3.2-Exp §2.1), off unless index_n_heads is given:
    index_n_heads: Positive | None = None  # the indexer's heads (DeepseekV32Config.index_n_heads: 64)
    index_head_dim: Positive | None = None  # each head's width, and the cached index key's (128)
    index_topk: Positive | None = None  # keys the attention keeps per query (2048); changes no count below
    # sliding window: each query attends the last `window` keys, its own included; the layer caches no more
    # (dots.llm3's sliding_attention layers)
    window: Positive | None = None
    # a bias-free projection d_model -> n_heads whose sigmoid scales each head's output before o (dots.llm3's g_proj)
    head_gate: bool = False
    # a norm of the model's kind over the shared rotary key before it is turned (dots.llm3's k_rope_only_layernorm)
    rope_key_norm: bool = False
    # constant factors on the normed query and key-value latents, one product per element (dots.llm3's
    # q_lora_scale and kv_lora_scale)
    latent_scale: bool = False
    # a learned logit per head that joins every softmax and takes no value (HY-V4's sinks, as gpt-oss's)
    sinks: bool = False
    # a bias-free projection d_model -> n_heads·v_head_dim whose sigmoid scales each output feature before o
    # (HY-V4's gate_proj)
    feature_gate: bool = False
    # constant factors on every query head's elements (n_heads · qk_head_dim, after q_b) and on the normed key-value
    # latent, one product per element (LongCat-Flash: LongcatFlashMLA's mla_scale_q_lora and mla_scale_kv_lora)
    query_scale: bool = False
    # the queries from the normed and the raw query latents together, 2·q_lora_rank -> h·(qk_head_dim + v_head_dim)
    # in place of q_b, its other h·v_head_dim outputs a sigmoid gate on each feature of the heads' output before o
    # (AXK2's q_gate_proj)
    query_gate: bool = False
    # a learned scale and bias a head on the queries' log-position factor, q · (scale · log(1 + pos) + bias), before
    # the scores: MistralLarge4TextSoftmaxScaling (the indexer's queries too, with heads of their own)
    softmax_scaling: bool = False
    # the indexer's queries from the layer's input through a LayerNorm of its own (q_input_norm, d_model -> wq_b) in
    # place of the query latent (MistralLarge4TextIndexer, whose attention has no query latent)
    index_input_norm: bool = False
    # the indexer's keys pooled C at a time (GLM-5 Next's Glm5NextTextIndexer, index_kpool): each complete pool's keys
    # averaged by a softmax over its positions of a gate (index_kpool_compress_gate, d_model -> index_head_dim, no bias)
    # plus a learned table a position (index_kpool_compress_ape, C × index_head_dim), one index key a pool; a query
    # keeps index_topk / C whole pools and the keys of its own incomplete pool (index_kpool_always_select_tail)
    index_pool: Positive | None = None

    @property
    def kv_heads(self) -> int:
        return self.n_heads  # after expansion every head has its own key and value

    def head_count(self) -> int:
        return self.n_heads

    def kv_head_count(self) -> None:
        return None  # one latent every head reads, whole on every device

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def indexed(self) -> bool:
        return self.index_n_heads is not None

    @property
    def verify_note(self) -> str | None:
        if not self.indexed:
            return None
        return (
            "mla indexer: executed dense, as transformers' eager path runs it: the index scores over every "
            "key, then the attention over every key with the top-k selection as a mask; a sparse kernel "
            "does the attention's work over index_topk keys only"
        )

    def check(self, d_model: int) -> None:
        if self.query_scale and self.latent_scale:
            raise SpecError(("query_scale",), "the query is scaled before q_b (latent_scale) or after it, not both")
        if self.query_scale and self.q_lora_rank is None:
            raise SpecError(("query_scale",), "the query's factor is √(d_model / q_lora_rank): state q_lora_rank")
        if self.query_gate and self.q_lora_rank is None:
            raise SpecError(("query_gate",), "the gated query reads the query latent: state q_lora_rank")
        if self.window is not None and self.indexed:
            raise SpecError(("window",), "a layer attends a sliding window or the indexer's top-k keys, not both")
        if self.index_input_norm and not self.indexed:
            raise SpecError(("index_input_norm",), "an indexer setting without index_n_heads (which turns the indexer on)")
        if self.qk_rope_head_dim == 0 and self.rope_key_norm:
            raise SpecError(("rope_key_norm",), "no rotary key to norm: qk_rope_head_dim is 0")
        if not self.indexed:
            for field in ("index_head_dim", "index_topk", "index_pool"):
                if getattr(self, field) is not None:
                    raise SpecError((field,), "an indexer setting without index_n_heads (which turns the indexer on)")
            return
        if self.index_head_dim is None:
            raise SpecError(("index_head_dim",), "the indexer needs index_head_dim as well as index_n_heads")
        if self.index_pool is not None and self.qk_rope_head_dim:
            raise SpecError(("index_pool",), "pooled index keys take no rotary features: state qk_rope_head_dim 0 (GLM-5 Next)")
        if self.index_pool is not None and (self.index_topk is None or self.index_topk % self.index_pool):
            raise SpecError(
                ("index_pool",), f"pooled keys need an index_topk of whole pools of {self.index_pool} (Glm5NextTextConfig)"
            )
        if self.q_lora_rank is None and not self.index_input_norm:
            raise SpecError(
                ("q_lora_rank",), "the indexer's query reads the low-rank query latent: state q_lora_rank (DeepseekV32Indexer.wq_b)"
            )

    def describe(self) -> str:
        text = f"MLA {self.n_heads} heads, latent {self.kv_lora_rank} + rope {self.qk_rope_head_dim}"
        if self.indexed:
            text += f", indexer {self.index_n_heads} × {self.index_head_dim}"
            if self.index_topk:
                text += f" → top {self.index_topk}"
            if self.index_pool:
                text += f" in pools of {self.index_pool}"
        if self.window:
            text += f", window {self.window:,}"
        if self.head_gate:
            text += ", gated heads"
        if self.feature_gate:
            text += ", gated output"
        if self.sinks:
            text += ", sinks"
        if self.query_gate:
            text += ", gated outputs"
        return text

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/{self.n_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, r, n = model.d_model, self.n_heads, self.qk_rope_head_dim, e.n
        qk = self.qk_head_dim
        if self.q_lora_rank is None:
            e.linear("attn.q", d, h * qk, False, n, heads=h)
        else:
            e.linear("attn.q_a", d, self.q_lora_rank, self.bias, n)
            e.norm("attn.q_a_norm", model.norm, self.q_lora_rank, n)
            if self.query_gate:
                e.linear("attn.q_gate", 2 * self.q_lora_rank, h * (qk + self.v_head_dim), False, n, heads=h)
                e.op("attn.q_gate_scale", n * h * self.v_head_dim * (ACTIVATION_OPS["sigmoid"] + 1))
            else:
                e.linear("attn.q_b", self.q_lora_rank, h * qk, False, n, heads=h)
        e.linear("attn.kv_a", d, self.kv_lora_rank + r, self.bias, n)  # the latent and the shared rotary key
        e.norm("attn.kv_a_norm", model.norm, self.kv_lora_rank, n)
        if self.latent_scale:
            e.op("attn.latent_scale", n * ((self.q_lora_rank or 0) + self.kv_lora_rank))
        if self.query_scale:
            e.op("attn.query_scale", n * (h * qk + self.kv_lora_rank))
        if self.rope_key_norm:
            e.norm("attn.k_rope_norm", model.norm, r, n)
        e.linear("attn.kv_b", self.kv_lora_rank, h * (self.qk_nope_head_dim + self.v_head_dim), False, n, heads=h)
        if model.positions == "rotary":
            e.op("attn.rotary", n * ROTARY_OPS * (h + 1) * r)  # every query head and the one shared key
        if self.indexed:
            self._indexer_terms(e, model, seq_len)
        if self.head_gate:  # sigmoid(g) per head, then a multiply per output element
            e.linear("attn.g", d, h, False, n)
            e.op("attn.g_scale", n * (ACTIVATION_OPS["sigmoid"] * h + h * self.v_head_dim))
        if self.feature_gate:  # sigmoid(gate x) ⊙ the heads' output
            e.linear("attn.gate", d, h * self.v_head_dim, False, n)
            e.op("attn.gate_scale", n * (ACTIVATION_OPS["sigmoid"] + 1) * h * self.v_head_dim)
        if self.sinks:  # one more logit in each head's softmax
            e.term("attn.sinks", "bias", (h,), n, elementwise=n * h * SOFTMAX_OPS)
        if self.softmax_scaling:  # a factor a head (a multiply-add from the log-position), a product a query element
            e.term("attn.softmax_scaling.scale", "bias", (h,), n, elementwise=n * h * (2 + qk), component="attn.softmax_scaling")
            e.term("attn.softmax_scaling.bias", "bias", (h,), n, component="attn.softmax_scaling")
        # With the indexer, the attention below is the executed-dense view, which verify checks: every key is
        # scored and the top-k selection is a mask (transformers' eager and SDPA paths). The useful-FLOPs view
        # attends to min(index_topk, i + 1) keys for the query at i (a sparse kernel such as FlashMLA's): the
        # pairs of a window of index_topk, the keys picked rather than the latest; the selection itself is
        # comparisons, no FLOPs. The indexer's own scores meet every earlier key.
        first = len(e.out)
        attention_core(e, model, h, qk, self.v_head_dim, seq_len, self.bias, window=self.index_topk if self.indexed else self.window)
        if self.index_pool:  # whole pools and the tail: min(p, index_topk + p mod C) keys for the query at p
            for i in range(first, len(e.out)):
                if e.out[i].role == "core":
                    e.out[i] = replace(e.out[i], chunk=self.index_pool, select="budget")

    def _indexer_terms(self, e, model, seq_len: int) -> None:
        """DeepseekV32Indexer: wq_b (q_lora_rank -> heads·head_dim), wk (d_model -> head_dim), k_norm (a LayerNorm
        with weight and bias), weights_proj (d_model -> heads), all without bias; then q·k for every head and
        key (a "core" product like QKᵀ: the full square in exact, the triangle in causal) and the weighted sum
        over heads for every key (core too: heads multiply-adds per query-key pair)."""
        d, n, hi, di = model.d_model, e.n, self.index_n_heads, self.index_head_dim
        if self.index_input_norm:  # MistralLarge4TextIndexer: q_input_norm over the layer's input, then wq_b
            e.norm("attn.indexer.q_input_norm", INDEXER_NORM, d, n)
        e.linear("attn.indexer.wq_b", d if self.index_input_norm else self.q_lora_rank, hi * di, False, n, heads=hi)
        if self.softmax_scaling:  # the indexer's own softmax_scaling over its queries
            s_ops = n * hi * (2 + di)
            e.term("attn.indexer.softmax_scaling.scale", "bias", (hi,), n, elementwise=s_ops, component="attn.indexer.softmax_scaling")
            e.term("attn.indexer.softmax_scaling.bias", "bias", (hi,), n, component="attn.indexer.softmax_scaling")
        e.linear("attn.indexer.wk", d, di, False, n)
        e.norm("attn.indexer.k_norm", INDEXER_NORM, di, n)
        e.linear("attn.indexer.weights_proj", d, hi, False, n)
        if model.positions == "rotary":  # the first qk_rope_head_dim features of each index query and the key
            e.op("attn.indexer.rotary", n * ROTARY_OPS * (hi + 1) * min(self.qk_rope_head_dim, di))
        pool, keys = self.index_pool, seq_len
        select = {}
        if pool:  # Glm5NextTextIndexer.get_pooled_states: the gate's logits, the table added, a softmax over each
            # pool's positions and the weighted sum of its keys (per key feature: an add, the softmax, a multiply-add);
            # the scores meet every complete pool of the sequence (executed) or those up to the query (causal)
            e.linear("attn.indexer.compress_gate", d, di, False, n, component="attn.indexer.compress")
            e.term("attn.indexer.compress_ape", "bias", (pool, di), n, component="attn.indexer.compress")
            e.op("attn.indexer.pool", n * di * (1 + SOFTMAX_OPS + 2))
            keys, select = seq_len // pool, {"chunk": pool, "select": "entries"}
        e.term("attn.indexer.scores", "core", (hi, seq_len, di), n, numel=0, macs=n * hi * seq_len * di, **select)
        e.op("attn.indexer.relu", n * INDEX_SCORE_OPS * hi * keys)
        e.term("attn.indexer.head_sum", "core", (hi, seq_len, 1), n, numel=0, macs=n * hi * seq_len, **select)

    def decode_cost(self, model) -> tuple[int, tuple[tuple[int, int | None, int | None, str], ...]]:
        """One decode step absorbed, as serving engines run MLA (DeepSeek-V2 §2.1.3; FlashMLA, vLLM, SGLang):
        W_UK folded into the query and W_UV applied after attention, so each head attends over the cached
        latent (kv_lora_rank) and rotary key (qk_rope_head_dim) like MQA, and no cached latent is expanded.
        Multiply-adds per token: the query path (q_a, q_b or q), kv_a for the new token, the absorption
        h·nope·rank, W_UV h·rank·v and o h·v·d; per key, scores h·(rank + rope) and values h·rank. With the
        indexer, its projections, its scores over every key (H·D + H per key), and the attention over at
        most index_topk keys (DeepSeek-V3.2-Exp §2.1); with pooled keys, its scores against each complete pool and
        the attention over the pools kept and the tail (model/terms.py, select "entries" and "budget"). 2 FLOPs per
        multiply-add; each per-key part as (FLOPs, window, chunk, select), as inference.keys_met takes them."""
        d, h, rank, rope, nope, v = (
            model.d_model,
            self.n_heads,
            self.kv_lora_rank,
            self.qk_rope_head_dim,
            self.qk_nope_head_dim,
            self.v_head_dim,
        )
        qk = nope + rope
        if self.q_lora_rank is None:
            query = d * h * qk
        elif self.query_gate:
            query = d * self.q_lora_rank + 2 * self.q_lora_rank * h * (qk + v)
        else:
            query = d * self.q_lora_rank + self.q_lora_rank * h * qk
        fixed = query + d * (rank + rope) + h * nope * rank + h * rank * v + h * v * d
        if self.head_gate:
            fixed += d * h
        if self.feature_gate:
            fixed += d * h * v
        pool = self.index_pool
        attend = (self.index_topk, pool, "budget") if pool else (self.index_topk if self.indexed else self.window, None, "")
        per_key = [(2 * (h * (rank + rope) + h * rank), *attend)]
        if self.indexed:
            hi, di = self.index_n_heads, self.index_head_dim
            fixed += (
                (d if self.index_input_norm else self.q_lora_rank) * hi * di + d * di + d * hi
            )  # wq_b's input: the latent, or the layer's
            if pool:  # the gate's logits of the new key; the scores against each complete pool
                fixed += d * di
                per_key.append((2 * (hi * di + hi), None, pool, "entries"))
            else:
                per_key.append((2 * (hi * di + hi), None, None, ""))
        return 2 * fixed, tuple(per_key)

    def cached_tokens(self, tokens: int) -> int:
        return tokens if self.window is None else min(tokens, self.window)

    def cache_elements(self, model) -> int:
        """The latent and the shared rotary key: what DeepSeek-V2 caches per token and layer (§2.1.2); with
        the indexer, its key as well (index_head_dim: DeepSeek-V3.2's indexer key cache); pooled keys cache the gate's
        logits beside each key (Glm5NextTextIndexer's packed state: the key, the gate's logits and a validity flag,
        which is a mask)."""
        index = (2 if self.index_pool else 1) * self.index_head_dim if self.indexed else 0
        return self.kv_lora_rank + self.qk_rope_head_dim + index

    def kept_elements(self, model) -> int:
        """The input; the query latent and its normed copy (low-rank query); kv_a's output and the normed
        latent; then as multi-head attention: Q and K (h · qk each), V and the heads' output (h · v each); a head
        gate its projection's output (h) and the ungated output (h · v); a gated query its gate's logits and the
        ungated output (h · v each). A norm as a fused kernel keeps an fp32 statistic a row besides its input (the
        inverse RMS; a LayerNorm's mean too: 2 or 4 16-bit elements): the query latent's, the KV latent's and the
        rotary key's norms (the rotary key's norm keeps its input, in kv_a's output, and the rotation as a fused kernel
        keeps nothing: no normed copy). A latent scaled by a constant is q_b's or kv_b's input in place of the normed
        one, kept once. Attention as FlashAttention-2 keeps it (``_fused._Flash``: Q and K at h · qk, V made
        contiguous and the output at h · v, the fp32 log-sum-exp in ``score_bytes``).
        The indexer keeps nothing: transformers runs it under torch.no_grad (DeepseekV32Indexer.forward), and
        DeepSeek-V3.2 detaches its input from the main model's graph (it learns from its own KL loss). Softmax
        scalings (MistralLarge4TextSoftmaxScaling) keep the queries before them (h · qk, the factor's gradient), the
        factor a head (h, the queries') and the log-position (1, the scale's).

        With the indexer, the attention runs over the selected keys as the sparse kernels do, absorbed
        (``sparse``: FlashMLA's sparse kernel, MQA over the latent): in place of the normed latent, Q, K, V and
        the output, it keeps the query as W_UK's product reads it (h · qk), the kernel's absorbed query
        (h · (rank + rope)), its latent row (rank + rope, the normed latent and the rotary key), its output
        (h · rank, W_UV's input) and o's input (h · v); its int32 ids and log-sum-exp are a sequence's:
        ``score_bytes``."""
        h = self.n_heads
        q_latent = 2 * self.q_lora_rank if self.q_lora_rank else 0
        row = self.kv_lora_rank + self.qk_rope_head_dim
        latent = row + self.kv_lora_rank
        gate = h + h * self.v_head_dim if self.head_gate else 0  # the gate's projection and the ungated output
        gate += 2 * h * self.v_head_dim if self.feature_gate else 0
        gate += 2 * h * self.v_head_dim if self.query_gate else 0  # the gate's logits and the ungated output
        stat = 4 if model.norm.kind.startswith("layernorm") else 2  # fp32 inverse RMS (and mean) a row
        stats = stat * ((1 if self.q_lora_rank else 0) + 1 + (1 if self.rope_key_norm else 0))
        scaling = h * self.qk_head_dim + h + 1 if self.softmax_scaling else 0
        if self.indexed:  # kv_a's output and the kernel's row; q, the absorbed q, the kernel's output, o's input
            attention = row + row + h * self.qk_head_dim + h * row + h * self.kv_lora_rank + h * self.v_head_dim
            return model.d_model + q_latent + attention + gate + stats + scaling
        return model.d_model + q_latent + latent + 2 * h * self.qk_head_dim + 2 * h * self.v_head_dim + gate + stats + scaling

    def selected(self, seq_len: int) -> int:
        """The ids a query hands the sparse kernel: min(index_topk, s) (DeepSeek-V3.2's Indexer: topk(min(index_topk,
        end_pos)), −1 past the query's own); pooled, room for the tail's C − 1 keys besides (Glm5NextTextIndexer's
        output_width, index_topk + index_kpool − 1), at most s."""
        return min((self.index_topk or seq_len) + (self.index_pool - 1 if self.index_pool else 0), seq_len)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Flash: the fp32 log-sum-exp a query and head; with the indexer, the sparse kernel's ids too, int32 as
        FlashMLA's indices take them, ``selected`` a query. Eager: the softmax's scores, as multi-head attention's."""
        if flash and self.indexed:
            return 4 * self.n_heads * seq_len + 4 * seq_len * self.selected(seq_len)
        return softmax_score_bytes(self.n_heads, seq_len, flash)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


def index_scores(q, k, w, scores_mm, sum_mm, causal: bool, block: int | None = None):
    """The indexer's I[t, s] = Σ_j w[t, j] · ReLU(q[t, j] · k[s]) for q (B, H, s, D), k (B, H, s, D) (one key
    expanded over the heads) and w (B, s, H): (B, s, s), with ``scores_mm`` holding q·kᵀ and ``sum_mm`` the
    weighted sum over heads. Over every key, or (``causal``) the triangle only, -inf above it: queries go in
    blocks as in ``causal_attention``, so that both products meet s(s+1)/2 query-key pairs and no more."""
    import math

    import torch

    b, heads, s, _ = q.shape
    if not causal:
        relu = torch.relu(scores_mm(q, k.transpose(-2, -1))).permute(0, 2, 1, 3)  # (B, s, H, s)
        return sum_mm(w.unsqueeze(-2), relu).squeeze(-2)  # (B, s, 1, H) @ (B, s, H, s)
    block = block or max(1, math.isqrt(s))
    starts = list(range(0, s, block))
    full = q.new_zeros(b, heads, s, s)
    for start in starts[1:]:  # rectangles: a block's queries against every earlier key
        stop = min(start + block, s)
        full[..., start:stop, :start] = scores_mm(q[..., start:stop, :], k[..., :start, :].transpose(-2, -1))
    for r in range(min(block, s)):  # row r of every diagonal block meets keys start..start+r
        rows = [st for st in starts if st + r < s]
        qi = torch.stack([q[..., st + r, :] for st in rows], dim=-2).unsqueeze(-2)  # (B, H, n, 1, D)
        ki = torch.stack([k[..., st : st + r + 1, :] for st in rows], dim=-3)  # (B, H, n, r+1, D)
        part = scores_mm(qi, ki.transpose(-2, -1)).squeeze(-2)  # (B, H, n, r+1)
        for j, st in enumerate(rows):
            full[..., st + r, st : st + r + 1] = part[..., j, :]
    relu = torch.relu(full).permute(0, 2, 1, 3)  # (B, s, H, s)
    out = q.new_full((b, s, s), float("-inf"))
    for start in starts[1:]:
        stop = min(start + block, s)
        out[:, start:stop, :start] = sum_mm(w[:, start:stop, None, :], relu[:, start:stop, :, :start]).squeeze(-2)
    for r in range(min(block, s)):
        rows = [st for st in starts if st + r < s]
        wi = torch.stack([w[:, st + r, :] for st in rows], dim=1).unsqueeze(-2)  # (B, n, 1, H)
        ri = torch.stack([relu[:, st + r, :, st : st + r + 1] for st in rows], dim=1)  # (B, n, H, r+1)
        part = sum_mm(wi, ri).squeeze(-2)  # (B, n, r+1)
        for j, st in enumerate(rows):
            out[:, st + r, st : st + r + 1] = part[:, j, :]
    return out


def attend_selected(layer, q, k, v, keep):
    """``attend`` over the keys the indexer kept. Executed dense (transformers): every key meets every
    query and the selection is an additive mask. Causal (a sparse kernel): query i < topk keeps all its
    i + 1 keys (the causal triangle over the first topk positions), and each later query meets exactly
    its topk gathered keys and values: topk(topk + 1)/2 + (s − topk)·topk pairs."""
    import torch

    from ._torch import alibi_bias, causal_attention, softmax

    b, heads, s, _ = q.shape
    sinks = getattr(layer, "sinks", None)
    q = q * (1.0 / math.sqrt(q.shape[-1]))
    bias = alibi_bias(heads, s, q.device, q.dtype) if layer.positions == "alibi" else None
    if not layer.causal:
        mask = q.new_full((b, s, s), float("-inf")).scatter(-1, keep, 0.0).unsqueeze(1)  # (B, 1, s, s)
        bias = mask if bias is None else mask + bias
        return layer.values(softmax(layer.scores(q, k.transpose(-2, -1)) + bias, sinks), v)
    top = keep.shape[-1]
    head = causal_attention(
        q[..., :top, :],
        k[..., :top, :],
        v[..., :top, :],
        layer.scores,
        layer.values,
        None if bias is None else bias[..., :top, :top],
        sinks=sinks,
    )
    rows = keep[:, top:, :]  # (B, s − topk, topk): the keys each later query kept
    index = rows[:, None, :, :, None]  # broadcast over heads and features
    ks = (
        k.unsqueeze(2).expand(b, heads, s - top, s, k.shape[-1]).gather(3, index.expand(b, heads, s - top, top, k.shape[-1]))
    )  # (B, H, s − topk, topk, D)
    vs = v.unsqueeze(2).expand(b, heads, s - top, s, v.shape[-1]).gather(3, index.expand(b, heads, s - top, top, v.shape[-1]))
    scores = layer.scores(q[..., top:, :].unsqueeze(-2), ks.transpose(-2, -1)).squeeze(-2)  # (B, H, n, topk)
    if bias is not None:
        full = bias[..., top:, :].expand(b, heads, s - top, s)  # ALiBi's (H, s, s) over the batch
        scores = scores + full.gather(-1, rows[:, None].expand(b, heads, s - top, top))
    tail = layer.values(softmax(scores, sinks).unsqueeze(-2), vs).squeeze(-2)  # (B, H, n, v_dim)
    return torch.cat([head, tail], dim=-2)


def attend_pooled(layer, q, k, v, keep, budget: int, size: int):
    """``attend`` over the keys a pooled indexer kept (``keep``: (B, s, s), each query's kept keys). Executed dense
    (transformers' eager path): the full square, the selection a mask. Causal (a sparse kernel): each query against
    its kept keys only, min(p, budget + p mod C) of them for the query at p = i + 1 (model/terms.py, "budget")."""
    import torch

    from ._torch import softmax

    b, heads, s, _ = q.shape
    sinks = getattr(layer, "sinks", None)
    q = q * (1.0 / math.sqrt(q.shape[-1]))
    if not layer.causal:
        scores = layer.scores(q, k.transpose(-2, -1)).masked_fill(~keep.unsqueeze(1), float("-inf"))
        return layer.values(softmax(scores, sinks), v)
    rows = []
    for i in range(s):
        count = min(i + 1, budget + (i + 1) % size)
        index = keep[:, i].to(q.dtype).topk(count, dim=-1).indices[:, None, :, None]  # (B, 1, count, 1)
        ki = k.gather(2, index.expand(b, heads, count, k.shape[-1]))
        vi = v.gather(2, index.expand(b, heads, count, v.shape[-1]))
        rows.append(layer.values(softmax(layer.scores(q[..., i : i + 1, :], ki.transpose(-2, -1)), sinks), vi))
    return torch.cat(rows, dim=-2)


@cache
def _module():
    import contextlib

    import torch
    from torch import nn

    from ._torch import Linear, MatMul, attend, make_norm, rotate

    class SoftmaxScaling(nn.Module):
        """MistralLarge4TextSoftmaxScaling over (B, H, s, D): each head's query times scale · log(1 + pos) + bias."""

        def __init__(self, heads: int):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(heads))
            self.bias = nn.Parameter(torch.zeros(heads))

        def forward(self, q: torch.Tensor) -> torch.Tensor:
            b, _, s, _ = q.shape  # log(1 + position) of every token, in q's dtype, as transformers takes it
            log_pos = torch.arange(1, s + 1, device=q.device).float().log().to(q.dtype).expand(b, s).contiguous()
            factor = self.scale.to(q.dtype)[None, :, None] * log_pos[:, None, :] + self.bias.to(q.dtype)[None, :, None]
            return q * factor.unsqueeze(-1)  # (B, H, s, 1) a head's factor at each position

    class Indexer(nn.Module):
        """DeepseekV32Indexer: the index scores and the top-k selection, returned as an additive mask."""

        def __init__(self, spec: LatentAttention, model, causal: bool):
            super().__init__()
            d, hi, di = model.d_model, spec.index_n_heads, spec.index_head_dim
            self.heads, self.dim, self.topk = hi, di, spec.index_topk
            self.rope, self.positions, self.causal = min(spec.qk_rope_head_dim, di), model.positions, causal
            if spec.index_input_norm:
                self.q_input_norm = nn.LayerNorm(d, eps=1e-6)
            self.wq_b = Linear(d if spec.index_input_norm else spec.q_lora_rank, hi * di, bias=False)
            if spec.softmax_scaling:
                self.softmax_scaling = SoftmaxScaling(hi)
            self.wk = Linear(d, di, bias=False)
            self.k_norm = nn.LayerNorm(di, eps=1e-6)
            self.weights_proj = Linear(d, hi, bias=False)
            self.pool = spec.index_pool
            if self.pool:  # Glm5NextTextIndexer's index_kpool_compress_gate and index_kpool_compress_ape
                self.compress_gate = Linear(d, di, bias=False)
                self.compress_ape = nn.Parameter(torch.zeros(self.pool, di))
            self.scores = MatMul()
            self.head_sum = MatMul()

        def index(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            source = self.q_input_norm(x) if hasattr(self, "q_input_norm") else q_latent
            q = self.wq_b(source).view(b, s, self.heads, self.dim).transpose(1, 2)  # (B, H, s, D)
            if hasattr(self, "softmax_scaling"):
                q = self.softmax_scaling(q)
            k = self.k_norm(self.wk(x)).view(b, 1, s, self.dim)  # one index key per token
            if self.positions == "rotary" and self.rope:
                q, k = rotate(q, self.rope), rotate(k, self.rope)
            q = q * self.dim**-0.5  # the softmax scale, on the query (ReLU commutes with a positive scale)
            w = self.weights_proj(x) * self.heads**-0.5  # (B, s, H)
            return index_scores(q, k.expand(b, self.heads, s, self.dim), w, self.scores, self.head_sum, self.causal)

        def pooled(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
            """Glm5NextTextIndexer: each query's kept keys, (B, s, s). Each complete pool of C keys becomes one
            index key, the softmax over its positions of the gate's logits plus the table weighting its keys; the
            query at p = i + 1 scores the ⌊p / C⌋ pools complete up to itself (causal) or every complete pool of
            the sequence, the later ones masked (executed, as transformers computes them), keeps the best
            index_topk / C of them and the keys of its own incomplete pool (the tail)."""
            b, s, _ = x.shape
            size, most = self.pool, self.topk // self.pool
            q = self.wq_b(q_latent).view(b, s, self.heads, self.dim).transpose(1, 2) * self.dim**-0.5  # (B, H, s, D)
            k = self.k_norm(self.wk(x))  # (B, s, D)
            whole = s // size * size
            logits = self.compress_gate(x)[:, :whole].view(b, -1, size, self.dim) + self.compress_ape
            weights = logits.float().softmax(dim=2).to(k.dtype)
            pools = (weights * k[:, :whole].view(b, -1, size, self.dim)).sum(2)  # (B, P, D)
            w = self.weights_proj(x) * self.heads**-0.5  # (B, s, H)
            i = torch.arange(s, device=x.device)
            keep = (i[None, :] <= i[:, None]).expand(b, s, s).clone()  # every visible key, then the selection
            if not self.causal:
                relu = torch.relu(self.scores(q, pools.unsqueeze(1).transpose(-2, -1)))  # (B, H, s, P)
                every = self.head_sum(w.unsqueeze(-2), relu.permute(0, 2, 1, 3)).squeeze(-2)  # (B, s, P)
            for c in range(1, s // size + 1):  # the queries at p = i + 1 with ⌊p / C⌋ = c complete pools
                first, stop = c * size - 1, min((c + 1) * size - 1, s)
                if self.causal:
                    relu = torch.relu(self.scores(q[..., first:stop, :], pools[:, None, :c].transpose(-2, -1)))
                    score = self.head_sum(w[:, first:stop, None, :], relu.permute(0, 2, 1, 3)).squeeze(-2)  # (B, n, c)
                else:
                    score = every[:, first:stop, :c]
                if c <= most:
                    continue  # every complete pool is kept
                top = score.topk(most, dim=-1).indices  # (B, n, most)
                chosen = torch.zeros(b, stop - first, c, dtype=torch.bool, device=x.device).scatter(-1, top, True)
                keep[:, first:stop, : c * size] = chosen.repeat_interleave(size, dim=-1)
            return keep

        def forward(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor | None:
            if self.pool:
                return self.pooled(x, q_latent)
            scores = self.index(x, q_latent)
            if self.topk is None or self.topk >= x.shape[1]:
                return None  # every key is selected
            return scores.topk(self.topk, dim=-1).indices  # (B, s, topk)

        def select(self, x: torch.Tensor, q_latent: torch.Tensor) -> torch.Tensor:
            """The ids a sparse kernel reads: min(index_topk, s) a query (DeepSeek-V3.2's inference Indexer takes
            topk(min(index_topk, end_pos))), int32 as FlashMLA's indices, −1 where the pick lies past the query."""
            if self.pool:  # the kept keys in order, −1 past them, index_topk + C − 1 a query at most
                keep = self.pooled(x, q_latent)
                width = min(self.topk + self.pool - 1, x.shape[1])
                top = keep.to(x.dtype).topk(width, dim=-1)
                return torch.where(top.values > 0, top.indices, -1).to(torch.int32)  # (B, s, width)
            scores = self.index(x, q_latent)
            top = scores.topk(min(self.topk or x.shape[1], x.shape[1]), dim=-1)
            return torch.where(top.values > float("-inf"), top.indices, -1).to(torch.int32)  # (B, s, k)

    class MultiHeadLatentAttention(nn.Module):
        """The latents expanded, as in training."""

        def __init__(self, spec: LatentAttention, model, causal: bool):
            super().__init__()
            d, h = model.d_model, spec.n_heads
            self.heads, self.positions, self.causal = h, model.positions, causal
            self.window = spec.window
            self.q_scale = (d / spec.q_lora_rank) ** 0.5 if spec.latent_scale and spec.q_lora_rank else 1.0
            self.kv_scale = (d / spec.kv_lora_rank) ** 0.5 if spec.latent_scale or spec.query_scale else 1.0
            self.q_out_scale = (d / spec.q_lora_rank) ** 0.5 if spec.query_scale else 1.0
            self.nope, self.rope, self.v_dim, self.rank = (
                spec.qk_nope_head_dim,
                spec.qk_rope_head_dim,
                spec.v_head_dim,
                spec.kv_lora_rank,
            )
            qk = self.nope + self.rope
            if spec.q_lora_rank is None:
                self.q = Linear(d, h * qk, bias=False)
            else:
                self.q_a = Linear(d, spec.q_lora_rank, bias=spec.bias)
                self.q_a_norm = make_norm(model.norm, spec.q_lora_rank)
                if spec.query_gate:
                    self.q_gate = Linear(2 * spec.q_lora_rank, h * (qk + self.v_dim), bias=False)
                else:
                    self.q_b = Linear(spec.q_lora_rank, h * qk, bias=False)
            self.kv_a = Linear(d, self.rank + self.rope, bias=spec.bias)
            self.kv_a_norm = make_norm(model.norm, self.rank)
            self.kv_b = Linear(self.rank, h * (self.nope + self.v_dim), bias=False)
            if spec.rope_key_norm:
                self.k_rope_norm = make_norm(model.norm, self.rope)
            if spec.head_gate:
                self.g = Linear(d, h, bias=False)
            if spec.feature_gate:
                self.gate = Linear(d, h * spec.v_head_dim, bias=False)
            if spec.sinks:
                self.sinks = nn.Parameter(torch.zeros(h))
            if spec.indexed:
                self.indexer = Indexer(spec, model, causal)
            if spec.softmax_scaling:
                self.softmax_scaling = SoftmaxScaling(h)
            self.scores = MatMul()
            self.values = MatMul()
            self.o = Linear(h * self.v_dim, d, bias=spec.bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b, s, _ = x.shape
            gate = None
            if hasattr(self, "q"):
                q = self.q(x)
            else:
                raw = self.q_a(x)
                q_latent = self.q_a_norm(raw)
                if self.q_scale != 1.0:
                    q_latent = q_latent * self.q_scale
                if hasattr(self, "q_gate"):  # per head: the query, then the gate of its output features
                    q, gate = (
                        self.q_gate(torch.cat([q_latent, raw], dim=-1))
                        .view(b, s, self.heads, -1)
                        .split([self.nope + self.rope, self.v_dim], dim=-1)
                    )
                    q, gate = q.reshape(b, s, -1), gate.transpose(1, 2)  # gate (B, H, s, v_dim)
                else:
                    q = self.q_b(q_latent)
                if self.q_out_scale != 1.0:
                    q = q * self.q_out_scale
            q = q.view(b, s, self.heads, -1).transpose(1, 2)  # (B, H, s, nope + rope)
            latent, k_rope = self.kv_a(x).split([self.rank, self.rope], dim=-1)
            latent = self.kv_a_norm(latent)
            if self.kv_scale != 1.0:
                latent = latent * self.kv_scale
            if _fused.active() and self.causal and hasattr(self, "indexer"):
                out = self.sparse(x, q, latent, k_rope, None if hasattr(self, "q") else q_latent)
                return self.output(x, out, gate)
            kv = self.kv_b(latent).view(b, s, self.heads, -1).transpose(1, 2)
            k_nope, v = kv.split([self.nope, self.v_dim], dim=-1)  # (B, H, s, nope), (B, H, s, v_dim)
            if _fused.active():  # V made contiguous for the kernel (Megatron-LM's MLA: value.contiguous()), (B, s, H, v)
                v = v.transpose(1, 2).contiguous().transpose(1, 2)
            k_rope = k_rope.view(b, 1, s, self.rope)  # one rotary key shared by every head
            if hasattr(self, "k_rope_norm"):
                k_rope = self.k_rope_norm(k_rope)
            q_nope, q_rope = q.split([self.nope, self.rope], dim=-1)
            if self.positions == "rotary" and self.rope:
                q_rope, k_rope = rotate(q_rope), rotate(k_rope)
            k_rope = k_rope.expand(b, self.heads, s, self.rope)
            if _fused.active():  # Q and K written (B, s, H, qk) in memory, as a kernel takes them: its output the same
                q = torch.cat([q_nope.transpose(1, 2), q_rope.transpose(1, 2)], dim=-1).transpose(1, 2)
                k = torch.cat([k_nope.transpose(1, 2), k_rope.transpose(1, 2)], dim=-1).transpose(1, 2)
            else:
                q = torch.cat([q_nope, q_rope], dim=-1)
                k = torch.cat([k_nope, k_rope], dim=-1)
            if hasattr(self, "softmax_scaling"):
                q = self.softmax_scaling(q)
            keep = None
            if hasattr(self, "indexer"):  # under fused(), as transformers runs it: without gradient, keeping nothing
                with torch.no_grad() if _fused.active() else contextlib.nullcontext():
                    keep = self.indexer(x, None if hasattr(self, "q") else q_latent)
            if keep is None:
                out = attend(self, q, k, v)  # (B, H, s, v_dim)
            elif self.indexer.pool:
                out = attend_pooled(self, q, k, v, keep, self.indexer.topk, self.indexer.pool)
            else:
                out = attend_selected(self, q, k, v, keep)
            return self.output(x, out, gate)

        def sparse(self, x: torch.Tensor, q: torch.Tensor, latent: torch.Tensor, k_rope: torch.Tensor, q_latent) -> torch.Tensor:
            """The attention over the indexer's keys as DeepSeek-V3.2 trains it, in the absorbed latent form: the
            V3.2-Exp report (§2.1) instantiates DSA "based on the MQA mode of MLA", each latent row shared by every
            query head, and FlashMLA's sparse kernel (flash_mla_sparse_fwd; vLLM's FlashMLASparse and SGLang's NSA
            backends call it) runs MQA over the 512 + 64 latent. W_UK is folded into each head's query (q_nope · W_UK,
            rank wide; the product keeps q as it enters), the kernel attends the latent rows the ids name
            (``_fused.sparse_latent_attention``: it keeps the absorbed query, the latent rows, the int32 ids, its
            output and the log-sum-exp), and W_UV maps each head's attended latent to v_head_dim (the product keeps
            the kernel's output). The indexer's choice takes no gradient: it keeps nothing. -> (B, H, s, v_dim)."""
            from . import _fused

            b, s, _ = x.shape
            h, nope, rope, rank = self.heads, self.nope, self.rope, self.rank
            k_rope = k_rope.view(b, 1, s, rope)
            if hasattr(self, "k_rope_norm"):
                k_rope = self.k_rope_norm(k_rope)
            q_nope, q_rope = q.split([nope, rope], dim=-1)  # (B, H, s, ·)
            if self.positions == "rotary" and rope:
                q_rope, k_rope = rotate(q_rope), rotate(k_rope)
            if hasattr(self, "softmax_scaling"):
                q_nope, q_rope = self.softmax_scaling(torch.cat([q_nope, q_rope], dim=-1)).split([nope, rope], dim=-1)
            with torch.no_grad():
                ids = self.indexer.select(x, q_latent)  # (B, s, min(index_topk, s)) int32
            w = self.kv_b.weight.view(h, nope + self.v_dim, rank)  # kv_b's rows, head by head: W_UK then W_UV
            absorbed = torch.bmm(q_nope.permute(1, 0, 2, 3).reshape(h, b * s, nope), w[:, :nope])  # (H, B·s, rank)
            q_cat = torch.cat([absorbed.view(h, b, s, rank).permute(1, 2, 0, 3), q_rope.transpose(1, 2)], dim=-1)
            kv = torch.cat([latent, k_rope.reshape(b, s, rope)], dim=-1)  # (B, s, rank + rope): one row every head reads
            scale = (nope + rope) ** -0.5  # the per-head softmax scale: the absorbed product equals q·k
            out = _fused.sparse_latent_attention(q_cat, kv, ids, getattr(self, "sinks", None), rank, scale)  # (B, s, H, rank)
            out = torch.bmm(out.permute(2, 0, 1, 3).reshape(h, b * s, rank), w[:, nope:].transpose(1, 2))
            return out.view(h, b, s, self.v_dim).transpose(0, 1)  # (B, H, s, v_dim)

        def output(self, x: torch.Tensor, out: torch.Tensor, gate) -> torch.Tensor:
            """The heads' output (B, H, s, v_dim) through the gates and o."""
            b, s, _ = x.shape
            if hasattr(self, "g"):  # (B, H, s, v_dim) scaled per head by sigmoid(g x)
                out = out * torch.sigmoid(self.g(x)).transpose(1, 2).unsqueeze(-1)
            if hasattr(self, "gate"):  # (B, H, s, v_dim) scaled feature by feature
                out = out * torch.sigmoid(self.gate(x)).view(b, s, self.heads, self.v_dim).transpose(1, 2)
            if gate is not None:  # and per feature by the gated query's sigmoid
                out = out * torch.sigmoid(gate)
            return self.o(out.transpose(1, 2).reshape(b, s, self.heads * self.v_dim))

    return MultiHeadLatentAttention
