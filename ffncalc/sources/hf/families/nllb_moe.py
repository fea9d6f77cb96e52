"""NLLB-MoE (NLLB Team 2022, "No Language Left Behind", §6.2): M2M-100's pre-norm encoder-decoder (bart.py's m2m_100)
with a mixture of experts in place of the FFN in every encoder_sparse_step-th encoder layer and every
decoder_sparse_step-th decoder layer, a router sending each token to its top two experts."""

from __future__ import annotations

from ..config import Config, family, layer_groups
from .bart import SEAMLESS_LAYER_MODULES, STACKS, TOP_MODULES, seq2seq

LAYER_MODULES = (
    (r"ffn\.router\.classifier$", "ffn.router"),
    (r"ffn\.experts\b", "ffn.experts"),
    (r"ff_layer_norm$", "norms"),
    *SEAMLESS_LAYER_MODULES,
)


def is_sparse(i: int, step: int) -> bool:
    """NllbMoeEncoder and NllbMoeDecoder: layer i holds the mixture where (i + 1) % sparse_step == 0 (none at 0)."""
    return step > 0 and (i + 1) % step == 0


@family("nllb-moe", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def nllb_moe(c: Config) -> dict:
    """NllbMoeConfig / NllbMoeForConditionalGeneration: model.shared (NllbMoeScaledWordEmbedding, vocab_size 128,112 ×
    d_model 1,024; scale_embedding multiplies) is both stacks' embed_tokens and lm_head's (tied: _tied_weights_keys);
    NllbMoeSinusoidalPositionalEmbedding a buffer (max_position_embeddings + 2 rows, no parameters); each stack's
    layers (encoder_layers and decoder_layers, 12) of self_attn (encoder_attention_heads, decoder_attention_heads: 16;
    q, k, v, out_proj with biases) after self_attn_layer_norm, in the decoder cross_attention (q from the decoder, k
    and v from the encoder's output, out_proj; biases) after cross_attention_layer_norm, and ffn after ff_layer_norm:
    NllbMoeDenseActDense (fc1 d -> encoder_ffn_dim or decoder_ffn_dim, 4,096, activation_function relu, fc2 back;
    biases) or, where (i + 1) % sparse_step == 0 (encoder_sparse_step, decoder_sparse_step: 4), NllbMoeSparseMLP:
    router.classifier (d -> num_experts, 128; router_bias, default false) and num_experts NllbMoeDenseActDense
    experts, each token weighted over its top two (NllbMoeTop2Router); a final layer_norm a stack.

    The FLOPs are the design's, each token through its two experts (§6.2: "top-2 gating"). transformers 5.23's
    NllbMoeExperts.forward is given the router's top-1 mask (tokens × num_experts, 0 or 1) and one-hot encodes it
    again, so its loop runs expert_0 over every (token, expert) pair the mask leaves out and expert_1 over each
    token's first choice: num_experts rows of expert work a token, all of them expert_0's and expert_1's. At
    num_experts 2 the two agree (each token through both experts); the capacity (expert_capacity, and at inference
    moe_eval_capacity_token_fraction) drops tokens only when an expert is over-full, which these counts, as the
    other mixtures', leave out."""
    spec = seq2seq(c, pre_norm=True, embedding_norm=False, offset=2, table="buffer")
    act = c.activation("activation_function", "relu")
    experts = c.int("num_experts")

    def ffns(prefix: str) -> tuple[dict, dict]:
        dense = {"kind": "dense", "d_ff": c.int(f"{prefix}_ffn_dim"), "bias": True, "activation": act}
        moe = {"kind": "moe", "n_experts": experts, "top_k": min(2, experts), "expert": dense}
        return dense, {**moe, "router_bias": c.bool("router_bias", False)}

    dense, moe = ffns("decoder")
    step = c.int("decoder_sparse_step", 4)
    kinds = ["sparse" if is_sparse(i, step) else "dense" for i in range(spec["n_layers"])]
    ffn, groups = layer_groups(kinds, {"sparse": moe, "dense": dense})
    spec.update(ffn=ffn, **({"layers": groups} if groups else {}))
    dense, moe = ffns("encoder")
    step = c.int("encoder_sparse_step", 4)
    layers = {**spec["encoder"]["layers"], "ffn": dense}
    if any(is_sparse(i, step) for i in range(layers["n_layers"])):
        layers.update(sparse_ffn=moe, sparse_step=step, sparse_phase=step - 1)
    spec["encoder"] = {**spec["encoder"], "layers": layers}
    return spec
