"""LongCat-Flash (transformers 5.23.0 LongcatFlashForCausalLM): identity experts among a mixture's choices, the
query scaled after q_b in latent attention, and one transformers layer read as two of ours; by hand."""

from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data
from ffncalc.sources import hf
from ffncalc.sources.hf.config import Config
from ffncalc.sources.hf.names import component

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"


def moe_model(**moe):
    ffn = {"kind": "moe", "n_experts": 3, "top_k": 2, "expert": {"kind": "gated", "d_ff": 4}, **moe}
    return from_data(dict(vocab_size=10, d_model=8, n_layers=1, context_length=4, attention={"n_heads": 2}, ffn=ffn))


def rows(model, prefix="ffn."):
    return {r.name: r for r in tally(model).rows if r.name.startswith(prefix)}


def test_identity_experts_add_router_outputs_and_no_expert_work():
    plain, identity = rows(moe_model()), rows(moe_model(identity_experts=2))
    assert plain["ffn.router.weight"].params == 8 * 3
    assert identity["ffn.router.weight"].params == 8 * (3 + 2)  # one router output per choice
    assert identity["ffn.router.weight"].flops == 2 * 8 * 5
    for part in ("gate", "up", "down"):  # three routed experts of 4 × 8; two of them per token at most
        r = identity[f"ffn.experts.{part}.weight"]
        assert (r.params, r.active, r.flops) == (3 * 32, 2 * 32, 2 * 2 * 32)
    assert identity["ffn.combine"].elementwise == plain["ffn.combine"].elementwise == 2 * 2 * 8  # every choice weighted
    assert "ffn.identity_gate_up" not in identity


def test_identity_gate_up_is_held_and_never_used():
    r = rows(moe_model(identity_experts=2, identity_gate_up=True))["ffn.identity_gate_up"]
    assert (r.params, r.active, r.flops, r.component) == (2 * 2 * 4 * 8, 0, 0, "ffn.experts")


def test_identity_experts_are_stated_in_the_notes():
    assert moe_model().notes == ()
    (note,) = moe_model(identity_experts=2).notes
    assert "2 of the router's 5 choices" in note and "maximum" in note


def test_identity_experts_checks():
    with pytest.raises((SpecError, ValueError)):  # pydantic's ValidationError is a ValueError
        moe_model(top_k=6, identity_experts=2)  # more choices than the router has
    moe_model(top_k=5, identity_experts=2)  # all of them: at most 3 routed
    assert rows(moe_model(top_k=5, identity_experts=2))["ffn.experts.up.weight"].active == 3 * 32
    with pytest.raises((SpecError, ValueError)):
        moe_model(identity_gate_up=True)  # no identity experts to hold them for


def mla(**extra):
    attention = {
        "kind": "mla",
        "n_heads": 2,
        "q_lora_rank": 5,
        "kv_lora_rank": 3,
        "qk_nope_head_dim": 4,
        "qk_rope_head_dim": 2,
        "v_head_dim": 4,
        **extra,
    }
    return from_data(
        dict(vocab_size=10, d_model=8, n_layers=1, context_length=4, attention=attention, ffn={"kind": "gated", "d_ff": 4})
    )


def test_query_scale_scales_every_query_element_and_the_latent():
    scale = rows(mla(query_scale=True), "attn.")["attn.query_scale"]
    assert scale.elementwise == 2 * (4 + 2) + 3  # heads × qk_head_dim after q_b, and the normed latent
    assert tally(mla(query_scale=True)).params == tally(mla()).params  # constants: no parameters
    with pytest.raises((SpecError, ValueError)):
        mla(query_scale=True, latent_scale=True)


def test_one_transformers_layer_is_two_of_ours():
    family = hf.family_of(Config({"model_type": "longcat_flash"}, "", "config.json"))
    assert component("model.layers.3.self_attn.0.q_a_proj.weight", family) == ("attn.q_a", 6)
    assert component("model.layers.3.self_attn.1.o_proj.weight", family) == ("attn.o", 7)
    assert component("model.layers.3.mlp.experts.gate_up_proj", family) == ("ffn.experts", 6)
    assert component("model.layers.3.mlp.router.classifier.weight", family) == ("ffn.router", 6)
    assert component("model.layers.3.mlps.0.up_proj.weight", family) == ("ffn.shared", 6)
    assert component("model.layers.3.mlps.1.down_proj.weight", family) == ("ffn.down", 7)
    assert component("model.layers.3.input_layernorm.1.weight", family) == ("norms", 7)
    assert component("model.layers.3.post_attention_layernorm.0.weight", family) == ("norms", 6)
    assert component("model.norm.weight", family) == ("final_norm", None)
    llama = hf.family_of(Config({"model_type": "llama"}, "", "config.json"))
    assert component("model.layers.3.self_attn.q_proj.weight", llama) == ("attn.q", 3)  # others as before


def read(**data):
    return hf.to_spec(Config({"model_type": "longcat_flash", **data}, "", "config.json"))


def test_layers_from_num_layers_or_num_hidden_layers():
    assert read(num_layers=2).n_layers == 4
    assert read(num_hidden_layers=6, num_layers=2).n_layers == 6  # LongcatFlashConfig: num_layers = 6 // 2
    model = read(num_layers=2)
    assert [layer.ffn.kind for layer in model.layers] == ["moe", "gated", "moe", "gated"]
    assert model.layers[0].ffn.shared == model.layers[1].ffn  # mlps[0] beside the mixture, mlps[1] after


def test_longcat_flash_chat_by_hand():
    """LongCat-Flash-Chat as transformers builds it: 28 layers of two MLAs, two SwiGLU MLPs of 12288, four norms, a
    router over 512 + 256 choices, gate_up_proj for all 768 and down_proj for the 512 routed experts."""
    d, vocab = 6144, 131072
    mla_params = d * 1536 + 1536 + 1536 * 64 * 192 + d * 576 + 512 + 512 * 64 * 256 + 64 * 128 * d
    mlp = 3 * 12288 * d
    experts = 768 * 2 * 2048 * d + 512 * d * 2048
    layer = 2 * mla_params + 2 * mlp + 4 * d + 768 * d + experts
    t = tally(hf.load(CONFIGS / "longcat-flash-chat.json")[1])
    assert t.params == 28 * layer + 2 * vocab * d + d
    # without the gate and up weights held for the identity experts: the 560B of the technical report (rounded)
    assert abs(t.params - 28 * 256 * 2 * 2048 * d - 560e9) < 1e9
    # the most a token uses: every one of its 12 choices a routed expert
    routed = 28 * 512 * 3 * 2048 * d
    assert t.active == t.params - 28 * 256 * 2 * 2048 * d - routed * (512 - 12) // 512
    # and the least, all 12 identity experts, less the input embedding: the report's range of 18.6B to 31.3B
    least = t.active - 28 * 12 * 3 * 2048 * d
    # (the report's figures are truncated to 0.1B: within 0.1B of each)
    assert abs(least - vocab * d - 18.6e9) < 0.1e9 and abs(t.active - vocab * d - 31.3e9) < 0.1e9


@pytest.mark.torch
def test_reference_mixture_copies_the_input_for_identity_experts():
    import torch

    model = moe_model(identity_experts=2)
    net = model.layers[0].ffn.torch_module(model, True)
    with torch.no_grad():
        for p in net.parameters():
            p.zero_()
        net.router.weight[3:] = 1.0  # a positive input scores the two identity experts highest
        x = torch.rand(1, 5, 8) + 0.5
        probs = net.router(x.reshape(-1, 8)).softmax(dim=-1)
        out = net(x)
    assert torch.allclose(out, x * probs[:, 3:].sum(dim=-1).view(1, 5, 1))
