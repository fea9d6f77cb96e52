"""Evolla's FLOPs as transformers runs them (EvollaForProteinText2Text): one protein through its protein encoder (the
SaProt encoder, the sequence-compressor resampler and its projector) at the class's defaults on the meta device, and a
whole forward of a text sequence with one protein, built small on the CPU (its adapters run only where a protein's mask
is read as a Python bool, which the meta device cannot give)."""

from __future__ import annotations

PROTEIN_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.protein_encoder(input_ids, attention_mask) of the whole class on "
    "the meta device, eager attention, one protein of `positions` tokens and a mask of ones (which masks nothing: its "
    "bidirectional mask skipped, as masking_utils._ignore_bidirectional_mask_sdpa skips it for such a mask): 2 FLOPs per "
    "multiply-add of every matmul, summed over the module (the encoder, the resampler and protein_projector)"
)
FORWARD_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over one forward of the whole class built at `reduced` on the CPU, eager "
    "attention, input_ids of `tokens` tokens and one protein of `positions` tokens (masks of ones): 2 FLOPs per "
    "multiply-add of every matmul; `protein`: of them, model.protein_encoder's"
)
# Its language model, protein encoder and resampler small: 4 layers, an adapter after every second (layers 1 and 3)
EVOLLA_REDUCED = {
    "vocab_size": 100,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "aligner_num_add_layers": 2,
    "aligner_ffn_mult": 3,
    "resampler_depth": 2,
    "resampler_heads": 2,
    "resampler_dim_head": 8,
    "resampler_num_latents": 4,
    "resampler_ff_mult": 2,
    "protein_encoder_config": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 48},
}
PROTEIN_POSITIONS = (1024, 256)  # EvollaProcessor's protein_max_length, and a quarter of it
FORWARD_SHAPES = ((8, 16), (24, 40))  # (text tokens, protein tokens)


def _reduced(data: dict) -> dict:
    out = {**data, **{k: v for k, v in EVOLLA_REDUCED.items() if k != "protein_encoder_config"}}
    out["protein_encoder_config"] = {**data.get("protein_encoder_config", {}), **EVOLLA_REDUCED["protein_encoder_config"]}
    return out


def protein_flops(data: dict, positions: int) -> dict:
    """FlopCounterMode's FLOPs of one protein of ``positions`` tokens through the protein encoder, on the meta device."""
    from unittest import mock

    import torch
    import transformers.masking_utils
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    skip = mock.patch.object(transformers.masking_utils, "_ignore_bidirectional_mask_sdpa", lambda *a: True)
    ids = torch.full((1, positions), 5, dtype=torch.long, device="meta")
    mask = torch.ones(1, positions, dtype=torch.long, device="meta")
    with torch.no_grad(), skip, FlopCounterMode(display=False) as counter:
        net.model.protein_encoder(input_ids=ids, attention_mask=mask)
    return {"positions": positions, "total": counter.get_total_flops()}


def forward_flops(data: dict, tokens: int, positions: int) -> dict:
    """FlopCounterMode's FLOPs of one forward of ``tokens`` text tokens with one protein of ``positions`` tokens, the
    class built small (EVOLLA_REDUCED) on the CPU; ``protein``: the protein encoder's share."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    torch.manual_seed(0)
    net = instantiate_whole(_reduced(data), device="cpu").eval()
    ids = torch.arange(tokens).unsqueeze(0) % 90 + 5
    proteins = torch.arange(positions).unsqueeze(0) % 400 + 5
    ones = {"attention_mask": torch.ones(1, tokens, dtype=torch.long)}
    ones["protein_attention_mask"] = torch.ones(1, positions, dtype=torch.long)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net(input_ids=ids, protein_input_ids=proteins, use_cache=False, **ones)
    name = type(net).__name__ + ".model.protein_encoder"
    protein = sum(counter.get_flop_counts().get(name, {}).values())
    return {"tokens": tokens, "positions": positions, "total": counter.get_total_flops(), "protein": protein}
