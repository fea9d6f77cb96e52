"""The named counting conventions: which parameters count and how forward FLOPs are tallied.

Every convention is a policy over the same typed terms (``count.Term``), so the published
accountings differ from ``exact`` only in what they keep, never in separate formulas.
Roles: token / tied / position (embedding tables), weight (linear and router weights), bias, norm,
head (the unembedding), core (the attention QKᵀ and AV matmuls), op (elementwise work only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ALL_PARAMS = frozenset({"token", "tied", "position", "weight", "bias", "norm", "head"})
MATRICES = frozenset({"token", "tied", "position", "weight", "head"})


@dataclass(frozen=True)
class Convention:
    name: str
    summary: str  # one sentence, printed with every result
    source: str
    params: frozenset[str]  # roles whose parameters count
    flops: Literal["matmul", "params"]  # matmul: 2 per multiply-add; params: 2 per counted parameter (2N)
    matmul: frozenset[str] = frozenset()  # with flops="matmul": roles whose multiply-adds count
    # the QKᵀ and AV products: full s², the causal triangle s(s+1)/2, half of the square s²/2, or none
    attention: Literal["full", "causal", "half", "none"] = "full"
    # ops: the elementwise column as ffncalc estimates it; softmax3: 3 FLOPs per attention score, in the FLOP
    # total (Chinchilla); none
    elementwise: Literal["ops", "softmax3", "none"] = "ops"
    per_head: bool = False  # one query, key and value matrix per head
    untie: bool = False  # a tied embedding counted again as the unembedding
    # linear-attention and state-space mixers: chunked (their chunked kernels' products, as ffncalc's blocks
    # write them) or recurrent (the token-by-token recurrence, as Megatron-LM counts Gated DeltaNet)
    linear: Literal["chunked", "recurrent"] = "chunked"
    leave_out: frozenset[str] = frozenset()  # components whose FLOPs the convention leaves out
    norm_macs: frozenset[str] = frozenset()  # norm components charged one multiply-add per element


CONVENTIONS: dict[str, Convention] = {
    c.name: c
    for c in [
        Convention(
            name="exact",
            summary="every tensor a framework instantiates (a tied matrix once); every matmul at 2 FLOPs per "
            "multiply-add with the full attention square, as torch's FlopCounterMode counts",
            source="torch.utils.flop_counter; the model's reference code",
            params=ALL_PARAMS,
            flops="matmul",
            matmul=frozenset({"weight", "head", "core"}),
        ),
        Convention(
            name="causal",
            summary="as exact, with QKᵀ and AV over what a causal kernel computes: each query meets the keys up to its "
            "own, s(s+1)/2 pairs instead of s² (about half), and no more than its window on sliding-window layers",
            source="the causal and sliding-window masks, as flash-attention kernels compute them",
            params=ALL_PARAMS,
            flops="matmul",
            matmul=frozenset({"weight", "head", "core"}),
            attention="causal",
        ),
        Convention(
            name="kaplan",
            summary="N = non-embedding weight matrices (no biases or norms); C_forward = 2N + 2·n_layer·n_ctx·d_attn "
            "per token; embedding and de-embedding FLOPs left out",
            source="Kaplan et al. 2020, Scaling Laws for Neural Language Models, Table 1",
            params=frozenset({"token", "tied", "position", "weight", "head"}),
            flops="matmul",
            matmul=frozenset({"weight", "core"}),
            attention="half",
            elementwise="none",
        ),
        Convention(
            name="chinchilla",
            summary="QKV, QKᵀ and AV over the full square, softmax at 3 FLOPs per score, output and FFN matmuls, "
            "in the total; embedding and logits matmuls left out, as Table A4's ratios to 6ND imply; N = weight "
            "matrices and one vocabulary matrix; backward = 2 × forward",
            source="Hoffmann et al. 2022, Training Compute-Optimal Large Language Models, Appendix F and Table A4",
            params=frozenset({"token", "tied", "weight", "head"}),
            flops="matmul",
            matmul=frozenset({"weight", "core"}),
            elementwise="softmax3",
        ),
        Convention(
            name="megatron",
            summary="weight matrices and the full attention square, logits included, no biases or norms; "
            "with --recompute full the paper's 96·B·s·l·h²·(1 + s/6h + V/16lh)",
            source="Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters, Appendix",
            params=frozenset({"token", "tied", "position", "weight", "head"}),
            flops="matmul",
            matmul=frozenset({"weight", "head", "core"}),
            elementwise="none",
        ),
        Convention(
            name="megatron-lm",
            summary="Megatron-LM's num_floating_point_operations: weight matrices (no router), logits, QKᵀ and "
            "AV over half the square (s/2 keys per query), MLA's low-rank norms and MTP's norms at one "
            "multiply-add per element, Gated DeltaNet as its recurrence (4·d_k·d_v per head); no embedding",
            source="NVIDIA Megatron-LM, megatron/training/training.py, num_floating_point_operations (2025); "
            "reproduces 155 and 250 GFLOPs per token for DeepSeek-V2 and V3 at 4,096 tokens (Zhao et al. 2025, "
            "Insights into DeepSeek-V3, Table 1)",
            params=frozenset({"token", "tied", "position", "weight", "head"}),
            flops="matmul",
            matmul=frozenset({"weight", "head", "core", "recurrence"}),
            attention="half",
            elementwise="none",
            linear="recurrent",
            leave_out=frozenset({"ffn.router", "ffn.shared_gate"}),
            norm_macs=frozenset({"attn.q_a_norm", "attn.kv_a_norm", "mtp.norms"}),
        ),
        Convention(
            name="palm",
            summary="model FLOPs 6N + 12·L·H·Q·T per token for training, N = parameters used in matmuls "
            "(positions and an untied input embedding are lookups and left out); full square",
            source="Chowdhery et al. 2022, PaLM, Appendix B",
            params=frozenset({"tied", "weight", "bias", "norm", "head"}),
            flops="params",
            elementwise="none",
        ),
        Convention(
            name="torchtitan",
            summary="6N + 12·L·H·Q·T per token for training, N = every parameter a token uses except the embedding "
            "table (a tied table is left out with it); full square",
            source="pytorch/torchtitan, get_nparams_and_flops (models/utils.py)",
            params=frozenset({"weight", "bias", "norm", "head"}),
            flops="params",
            elementwise="none",
        ),
        Convention(
            name="6n",
            summary="2N forward and 6N training FLOPs per token, N = every parameter (active ones for MoE); attention square ignored",
            source="Kaplan et al. 2020 §2.1; Brown et al. 2020 (GPT-3: 6 · 174.6B · 300B = 3.14e23)",
            params=ALL_PARAMS,
            flops="params",
            attention="none",
            elementwise="none",
        ),
        Convention(
            name="3b1b",
            summary="weight matrices only, one query, key and value matrix per head, embedding and unembedding "
            "counted separately; 2 FLOPs per weight a token meets",
            source="the GPT-3 tally of 175,181,291,520 weights in 27,938 matrices (3Blue1Brown, 'How might LLMs store facts')",
            params=frozenset({"token", "tied", "weight", "head"}),
            flops="matmul",
            matmul=frozenset({"weight", "head"}),
            attention="none",
            elementwise="none",
            per_head=True,
            untie=True,
        ),
    ]
}

DEFAULT = "exact"
