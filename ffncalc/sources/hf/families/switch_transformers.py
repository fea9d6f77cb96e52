"""Switch Transformers (Fedus et al. 2022): T5's encoder-decoder (t5.py) with a mixture of experts in place of the FFN
in every sparse_step-th layer of each stack, a router sending each token to one expert (top-1)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, family, layer_groups
from .t5 import LAYER_MODULES, TOP_MODULES, t5

SWITCH_LAYER_MODULES = (
    (r"mlp\.router\.classifier$", "ffn.router"),
    (r"mlp\.wi$", "ffn.up"),
    (r"mlp\.wo$", "ffn.down"),
    *MOE_MODULES,
    *LAYER_MODULES,
)
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "silu": "silu"}


def sparse_step(layers: int, sparse: int) -> int:
    """SwitchTransformersConfig.__post_init__: num_layers // num_sparse_*_layers, or num_layers where that is 0."""
    return layers // sparse if sparse > 0 else layers


def is_sparse(i: int, step: int) -> bool:
    """SwitchTransformersStack: block i holds the mixture where i % step == 1, or every block at step 1."""
    return step > 0 and (i % step == 1 or step == 1)


@family("switch_transformers", layer_modules=SWITCH_LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def switch_transformers(c: Config) -> dict:
    """SwitchTransformersConfig / SwitchTransformersForConditionalGeneration: T5's stacks (shared table of vocab_size,
    32128, × d_model, 768, tied to lm_head; num_layers 12 and num_decoder_layers 12 blocks of num_heads 12 heads of
    d_kv 64; one relative-bias table of 32 buckets a stack in its first block; RMS norms without biases); each block's
    SwitchTransformersLayerFF an MLP (wi d -> d_ff, 2048, and wo back, dense_act_fn "relu", no biases) or, in the
    blocks is_sparse picks (the step num_layers // num_sparse_encoder_layers, 3, and likewise for the decoder),
    SwitchTransformersSparseMLP: router.classifier (d -> num_experts, 8, router_bias false) choosing one expert a token
    (top-1) among num_experts MLPs as above."""
    act = c.data.get("dense_act_fn", "relu")
    if act not in ACTIVATIONS:
        raise c.fail("dense_act_fn", f"expected one of {', '.join(ACTIVATIONS)}, got {act!r}")
    dense = {"kind": "dense", "d_ff": c.int("d_ff"), "activation": ACTIVATIONS[act]}
    moe = {"kind": "moe", "n_experts": c.int("num_experts"), "top_k": 1, "expert": dense, "router_bias": c.bool("router_bias", False)}
    spec = t5(c)  # T5's reading of the rest (its FFN replaced below)
    encoder_layers, decoder_layers = c.int("num_layers"), spec["n_layers"]
    enc_step = sparse_step(encoder_layers, c.int("num_sparse_encoder_layers", 3))
    dec_step = sparse_step(decoder_layers, c.int("num_sparse_decoder_layers", 3))
    kinds = ["sparse" if is_sparse(i, dec_step) else "dense" for i in range(decoder_layers)]
    ffn, groups = layer_groups(kinds, {"sparse": moe, "dense": dense})
    spec.update(ffn=ffn, **({"layers": groups} if groups else {}))
    layers = {**spec["encoder"]["layers"], "ffn": dense}
    if any(is_sparse(i, enc_step) for i in range(encoder_layers)):
        layers.update(sparse_ffn=moe, sparse_step=enc_step)
    spec["encoder"] = {**spec["encoder"], "layers": layers}
    return spec
