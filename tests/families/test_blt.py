"""The Byte Latent Transformer's parts (parts/latent.py; the blt family): counted by hand, named as transformers names
them, and proven against BltForCausalLM's own forward with patches of a fixed size."""

import json

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data
from ffncalc.sources.hf import family_of
from ffncalc.sources.hf.config import Config
from ffncalc.sources.hf.names import component


def _stack(d, layers, d_ff):
    return {"d_model": d, "n_layers": layers, "attention": {"kind": "mha", "n_heads": 2}, "ffn": {"kind": "gated", "d_ff": d_ff}}


DATA = dict(
    vocab_size=10,
    d_model=8,
    n_layers=2,
    context_length=16,
    attention={"kind": "mha", "n_heads": 2},
    ffn={"kind": "gated", "d_ff": 12},
    byte_latent={
        "encoder": _stack(8, 1, 12),
        "latent": _stack(12, 1, 16),
        "cross_k": 2,
        "hash_tables": 2,
        "hash_vocab": 5,
        "patch_size": 2,
    },
)


def test_parameters_by_hand():
    layer = 4 * 64 + 3 * 8 * 12 + 2 * 8  # q, k, v, o; gate, up, down; two norms
    cross = 4 * 64 + 2 * 8  # q, k, v, o; q_norm, k_norm
    latent = 4 * 144 + 3 * 12 * 16 + 2 * 12
    model = 80 + 80 + 8 + 2 * layer  # embedding, head, final norm, the decoder's layers
    beside = 2 * 5 * 8 + layer + 16 * 8 + cross  # hash tables, the encoder's layer, its patch projection and cross
    beside += 12 * 16 + latent + 16 * 12 + 2 * cross  # 2·8 -> 12, the global layer, 12 -> 2·8, a cross per layer
    assert tally(from_data(DATA)).params == model + beside


def test_flops_by_hand():
    # 4 bytes in 2 patches of 2, 4 cross rows; per layer over s positions: 2·(linear macs)·s + 2·2·(h·s·hd)·s
    def layer(linear, heads, hd, s):
        return 2 * linear * s + 2 * 2 * heads * s * hd * s

    def cross(queries, rows):  # q and o on the queries, k and v on the rows, the rectangle
        return 2 * 2 * 64 * queries + 2 * 2 * 64 * rows + 2 * 2 * 2 * rows * 4 * queries

    decoder = 2 * layer(256 + 288, 2, 4, 4) + 2 * 80 * 4 + 2 * cross(4, 4)
    encoder = layer(256 + 288, 2, 4, 4) + 2 * 128 * 2 + cross(4, 4)
    latent = 2 * 192 * 2 + layer(576 + 576, 2, 6, 2) + 2 * 192 * 2
    assert tally(from_data(DATA), seq_len=4).forward_flops == decoder + encoder + latent


def test_the_encoder_is_the_embedding_width():
    data = {**DATA, "byte_latent": {**DATA["byte_latent"], "encoder": _stack(16, 1, 12)}}
    with pytest.raises(SpecError, match="width"):
        from_data(data, check=False)


def test_model_stacks_beside_the_layers_are_named_as_one_component():
    family = family_of(Config({"model_type": "blt"}, "{}", "config.json"))
    assert component("model.global_transformer.layers.3.mlp.up_proj.weight", family) == ("latent.ffn.up", None)
    assert component("model.patcher.lm_head.weight", family) == ("patcher.lm_head", None)
    assert component("model.local_encoder.embed_tokens.weight", family) == ("embed", None)
    assert component("model.local_decoder.cross_attn_layers.4.k_norm.weight", family) == ("decoder.cross.k_norm", None)
    assert component("model.local_decoder.layers.4.self_attn.o_proj.weight", family) == ("attn.o", 4)


SMALL = {
    "vocab_size": 260,
    "cross_attn_k": 2,
    "encoder_hash_byte_group_vocab": 50,
    "local_attention_window_len": 8,
    "encoder_config": {
        "hidden_size": 32,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "cross_attn_all_layers": True,
    },
    "decoder_config": {
        "hidden_size": 32,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 3,
        "intermediate_size": 48,
        "hidden_size_global": 48,
        "cross_attn_all_layers": False,
    },
    "global_config": {"hidden_size": 48, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 80},
    "patcher_config": {
        "hidden_size": 24,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "intermediate_size": 40,
        "sliding_window": 6,
    },
}


@pytest.mark.torch
@pytest.mark.parametrize("seq_len,patch", [(12, 3), (13, 3), (20, 4), (7, 7), (5, 1)])
def test_flops_equal_transformers_with_fixed_patches(seq_len, patch):
    """BltForCausalLM's forward with patch_lengths of ``patch`` bytes (the last shorter) and its patcher over every
    byte, under FlopCounterMode, against the exact count with patch_size ``patch``: in all and the patcher's."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import BltConfig, BltForCausalLM

    from ffncalc.sources import hf

    config = BltConfig(**{**SMALL, "patch_size": patch})
    net = BltForCausalLM._from_config(config, attn_implementation="eager").eval()
    ids = torch.randint(0, 256, (1, seq_len))
    lengths = torch.tensor([[patch] * (seq_len // patch) + ([seq_len % patch] if seq_len % patch else [])])
    main, patcher = FlopCounterMode(display=False), FlopCounterMode(display=False)
    with torch.no_grad():
        with main:
            net(input_ids=ids, patch_lengths=lengths, use_cache=False)
        with patcher:
            net.model.patcher(ids, patch_size=patch, threshold=1.0)
    data = json.loads(config.to_json_string())
    rows = tally(hf.to_spec(Config(data, json.dumps(data), "config.json")), seq_len=seq_len).rows
    assert sum(r.flops for r in rows if r.component.startswith("patcher.")) * seq_len == patcher.get_total_flops()
    assert sum(r.flops for r in rows) * seq_len == main.get_total_flops() + patcher.get_total_flops()


def test_an_untied_head_over_another_vocabulary_than_the_bytes():
    """BltLocalEncoder.embed_tokens has encoder_config.vocab_size rows, BltForCausalLM.lm_head the model's vocab_size:
    untied, each its own; tied, the one matrix is lm_head's."""
    from ffncalc.sources import hf

    def rows(tied):
        data = {**SMALL, "model_type": "blt", "vocab_size": 300, "tie_word_embeddings": tied}
        return {r.name: r for r in tally(hf.to_spec(Config(data, json.dumps(data), "config.json"))).rows}

    untied = rows(False)
    assert untied["embed.weight"].shape == (260, 32) and untied["embed.weight"].params == 260 * 32
    assert untied["lm_head.weight"].shape == (300, 32) and untied["lm_head.weight"].params == 300 * 32
    tied = rows(True)
    assert tied["embed.weight"].shape == tied["lm_head.weight"].shape == (300, 32) and tied["lm_head.weight"].tied


@pytest.mark.torch
def test_an_untied_head_over_another_vocabulary_equals_transformers():
    """Parameters per component and one forward's FLOPs (patches of 3 bytes) against BltForCausalLM."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import BltConfig, BltForCausalLM

    from ffncalc.analysis import hfcheck
    from ffncalc.sources import hf

    config = BltConfig(**{**SMALL, "vocab_size": 300, "patch_size": 3})
    data = json.loads(config.to_json_string())
    c = Config(data, json.dumps(data), "config.json")
    report = hfcheck.check(c)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    net = BltForCausalLM._from_config(config, attn_implementation="eager").eval()
    ids = torch.randint(0, 256, (1, 12))
    with torch.no_grad(), FlopCounterMode(display=False) as main:
        net(input_ids=ids, patch_lengths=torch.tensor([[3] * 4]), use_cache=False)
    with torch.no_grad(), FlopCounterMode(display=False) as patcher:
        net.model.patcher(ids, patch_size=3, threshold=1.0)
    rows = tally(hf.to_spec(c), seq_len=12).rows
    assert sum(r.flops for r in rows) * 12 == main.get_total_flops() + patcher.get_total_flops()
