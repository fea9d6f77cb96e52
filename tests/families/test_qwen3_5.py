"""Qwen3.5 (qwen3_5_text) and Qwen3.5-MoE (qwen3_5_moe_text): parameters by hand for Qwen3.5-27B and Qwen3.5-35B-A3B,
read through their multimodal wrappers' text_config; the wrappers' sparse text configs read with the config classes'
defaults; Qwen3.5-MoE's mlp_only_layers, which Qwen3_5MoeTextConfig deletes, not read.

Shapes from transformers 5.23.0: Qwen3_5GatedDeltaNet (models/qwen3_5/modeling_qwen3_5.py) is Qwen3NextGatedDeltaNet
with its input projections split, in_proj_qkv d -> 2·Hk·dk + H·dv, in_proj_z d -> H·dv, in_proj_b and in_proj_a
d -> H, all bias-free; a bias-free depthwise conv1d over 2·Hk·dk + H·dv channels, kernel K; dt_bias and A_log (H
each); Qwen3_5RMSNormGated over dv; out_proj H·dv -> d. Qwen3_5Attention (Qwen3NextAttention): q_proj
d -> 2·heads·head_dim, k_proj and v_proj d -> kv·head_dim, o_proj heads·head_dim -> d, q_norm and k_norm over
head_dim. Qwen3_5MLP: gate, up d -> f, down f -> d. Qwen3_5MoeSparseMoeBlock: a router weight (E, d), fused experts
gate_up_proj (E, 2·f, d) and down_proj (E, d, f), a shared expert Qwen3_5MoeMLP of the shared width and
shared_expert_gate d -> 1. Two RMSNorms a layer, a final one; embed_tokens and an untied lm_head.

The configs (tests/hf_configs/) are byte copies of https://huggingface.co/Qwen/Qwen3.5-27B/blob/main/config.json and
https://huggingface.co/Qwen/Qwen3.5-35B-A3B/blob/main/config.json as stored in ai-dynamo/aiconfigurator,
src/aiconfigurator/model_configs/Qwen--Qwen3.5-27B_config.json and Qwen--Qwen3.5-35B-A3B_config.json (added in
commit e4ee2c54992363cf85f9dc802ac6e361f96d761b, "feat: QWEN3.5 support (hybrid mode)"; unchanged at
aic-core/src/aiconfigurator_core/model_configs/ in 095f58a51c4c).
"""

import json
from pathlib import Path

from ffncalc.analysis.count import tally
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1]
CONFIGS = HERE / "hf_configs"


def gated_deltanet(d: int, hk: int, dk: int, h: int, dv: int, kernel: int = 4) -> int:
    key_dim, value_dim = hk * dk, h * dv
    return (
        d * (2 * key_dim + value_dim)  # in_proj_qkv
        + d * value_dim  # in_proj_z
        + 2 * d * h  # in_proj_b, in_proj_a
        + (2 * key_dim + value_dim) * kernel  # depthwise conv1d, no bias
        + 2 * h  # dt_bias, A_log
        + dv  # the gated RMSNorm's weight
        + value_dim * d
    )  # out_proj


def gated_attention(d: int, heads: int, kv: int, head_dim: int) -> int:
    return d * 2 * heads * head_dim + 2 * d * kv * head_dim + heads * head_dim * d + 2 * head_dim


def model(vocab: int, d: int, linear: int, full: int, mixer_gdn: int, mixer_attn: int, ffn: int) -> int:
    return 2 * vocab * d + linear * (mixer_gdn + ffn + 2 * d) + full * (mixer_attn + ffn + 2 * d) + d


def test_qwen3_5_27b_by_hand():
    """Qwen3.5-27B: d 5120, 64 layers, every fourth full attention (48 Gated DeltaNet, 16 attention); GDN 16 QK heads
    and 48 V heads of 128; attention 24 heads, 4 KV heads of 256; a gated MLP of 17408; vocab 248320."""
    label, spec = hf.load(CONFIGS / "qwen3.5-27b.json", text=True)  # the language model, by hand below
    total = model(248_320, 5120, 48, 16, gated_deltanet(5120, 16, 128, 48, 128), gated_attention(5120, 24, 4, 256), 3 * 5120 * 17_408)
    t = tally(spec)
    assert t.params == total and t.active == total  # dense: every parameter used by every token
    assert 26e9 < total < 27.5e9  # the model card's 27B, which also counts the vision encoder


def test_qwen3_5_35b_a3b_by_hand():
    """Qwen3.5-35B-A3B: d 2048, 40 layers (30 Gated DeltaNet, 10 attention); GDN 16 QK heads and 32 V heads of 128;
    attention 16 heads, 2 KV heads of 256; in every layer 256 experts of 512, top 8, and a shared expert of 512
    behind a sigmoid gate; vocab 248320."""
    d, experts, top_k, width, shared = 2048, 256, 8, 512, 512
    expert = 3 * d * width
    moe = d * experts + experts * expert + 3 * d * shared + d
    label, spec = hf.load(CONFIGS / "qwen3.5-35b-a3b.json", text=True)  # the language model, by hand below
    total = model(248_320, d, 30, 10, gated_deltanet(d, 16, 128, 32, 128), gated_attention(d, 16, 2, 256), moe)
    active = total - 40 * (experts - top_k) * expert
    t = tally(spec)
    assert t.params == total and t.active == active
    assert 34e9 < total < 36e9 and 3e9 < active < 3.5e9  # "35B-A3B"; active counts embed_tokens and lm_head


def test_wrappers_read_their_sparse_text_config_with_the_class_defaults(tmp_path):
    """A text_config that states only the depth: Qwen3_5TextConfig's defaults (d 4096, 4 KV heads, MLP 12288, GDN 16
    and 32 heads of 128) and Qwen3_5MoeTextConfig's (d 2048, 2 KV heads, 256 experts of 512, top 8)."""
    dense, sparse = tmp_path / "dense.json", tmp_path / "moe.json"
    dense.write_text(json.dumps({"model_type": "qwen3_5", "text_config": {"num_hidden_layers": 4}}))
    sparse.write_text(json.dumps({"model_type": "qwen3_5_moe", "text_config": {"num_hidden_layers": 4}}))
    total = model(248_320, 4096, 3, 1, gated_deltanet(4096, 16, 128, 32, 128), gated_attention(4096, 16, 4, 256), 3 * 4096 * 12_288)
    assert tally(hf.load(dense, text=True)[1]).params == total  # the language model (the whole adds its default tower)
    d = 2048
    moe = d * 256 + 256 * 3 * d * 512 + 3 * d * 512 + d
    total = model(248_320, d, 3, 1, gated_deltanet(d, 16, 128, 32, 128), gated_attention(d, 16, 2, 256), moe)
    assert tally(hf.load(sparse, text=True)[1]).params == total


def test_moe_every_layer_is_a_mixture_whatever_mlp_only_layers_says(tmp_path):
    """Qwen3_5MoeTextConfig deletes mlp_only_layers and decoder_sparse_step: Qwen3_5MoeDecoderLayer always builds the
    sparse block."""
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps({"model_type": "qwen3_5_moe_text", "num_hidden_layers": 4, "mlp_only_layers": [0, 1], "decoder_sparse_step": 2})
    )
    spec = hf.load(path)[1]
    assert {layer.ffn.kind for layer in spec.layers} == {"moe"}
