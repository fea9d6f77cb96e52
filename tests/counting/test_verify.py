"""The analytic counts against reference torch modules: every preset, random specs, real routing."""

import dataclasses
import json
import os
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from ffncalc.analysis import verify as verify_module
from ffncalc.analysis.count import tally
from ffncalc.analysis.verify import verify
from ffncalc.blocks import _torch
from ffncalc.cli import main
from ffncalc.model import from_data, reference
from ffncalc.sources import presets

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode


@pytest.mark.parametrize("name", presets.names())
def test_every_preset_verifies(name):
    label, spec = presets.load(name)
    report = verify(spec, model=label)
    assert report.ok, report.failures
    assert sum(c.torch_params for c in report.checks) == tally(spec).params


# one run of identical layers; a dense layer before the mixtures; local and global layers taking turns
@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v2-lite", "gemma-3-27b", "gpt-oss-20b"])
def test_every_layer_equals_one_of_each_kind(name):
    """Building every layer and building each distinct layer once give the same parameters and FLOPs,
    component by component; and the torch side counted every parameter the whole model holds."""
    spec = presets.load(name)[1]
    once = verify(spec, seq_len=16)
    every = verify(spec, seq_len=16, every_layer=True)
    assert once.ok and every.ok
    assert [(c.component, c.layers, c.torch_params, c.torch_flops) for c in once.checks] == [
        (c.component, c.layers, c.torch_params, c.torch_flops) for c in every.checks
    ]
    assert sum(c.torch_params for c in every.checks) == sum(p.numel() for p in reference.build(spec).parameters())


@pytest.mark.parametrize("name", ["gpt2", "llama3-8b", "mixtral-8x7b", "microgpt"])
def test_causal_triangle_verifies(name):
    report = verify(presets.load(name)[1], seq_len=13, convention="causal", every_layer=True)
    assert report.ok, report.failures


def test_gpt3_builds_on_meta_without_weights():
    net = reference.build(presets.load("gpt3")[1])
    params = list(net.parameters())
    assert all(p.is_meta for p in params)
    # Brown et al. 2020, Table 2.1 (96 layers, d 12288, context 2048), GPT-2's 50,257 tokens, tied head: embeddings,
    # per layer 12d² weights and 13d biases and LayerNorm scales, the final LayerNorm
    d = 12288
    assert sum(p.numel() for p in params) == 50257 * d + 2048 * d + 96 * (12 * d**2 + 13 * d) + 2 * d
    assert net.lm_head.weight is net.embed.weight  # tied: one Parameter


# --- random specs -------------------------------------------------------------------------------


def _mlp(draw, kind=None):
    kind = kind or draw(st.sampled_from(["dense", "gated"]))
    acts = (
        ["relu", "relu2", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "identity"]
        if kind == "dense"
        else ["sigmoid", "identity", "relu", "relu2", "gelu", "gelu_tanh", "silu"]
    )
    return {
        "kind": kind,
        "d_ff": draw(st.integers(1, 24)),
        "activation": draw(st.sampled_from(acts)),
        "bias": draw(st.booleans()),
        "sub_norm": draw(st.booleans()),
    }  # BitNet's norm before down


def _ffn(draw):
    kind = draw(st.sampled_from(["dense", "gated", "moe", "dense_moe", "llama", "none"]))
    if kind == "none":
        return {"kind": "none"}
    if kind == "dense_moe":  # Gemma 4: a dense FFN beside a mixture
        n_experts = draw(st.integers(1, 5))
        return {
            "kind": "dense_moe",
            "dense": _mlp(draw),
            "n_experts": n_experts,
            "top_k": draw(st.integers(1, n_experts)),
            "expert": _mlp(draw),
        }
    if kind == "llama":  # the Llama width rule, resolved against d_model
        return {
            "kind": "gated",
            "d_ff": {"rule": "llama", "multiple_of": draw(st.integers(1, 8)), "multiplier": draw(st.sampled_from([None, 1.3]))},
        }
    if kind != "moe":
        return _mlp(draw, kind)
    n_experts = draw(st.integers(1, 5))
    moe = {
        "kind": "moe",
        "n_experts": n_experts,
        "top_k": draw(st.integers(1, n_experts)),
        "expert": _mlp(draw),
        "router_bias": draw(st.booleans()),
        "correction_bias": draw(st.booleans()),
    }
    shared = draw(st.integers(0, 2))
    if shared:
        moe |= {"n_shared_experts": shared, "shared": _mlp(draw), "shared_gate": draw(st.booleans())}
    return moe


def _attention(draw, d_model, kind=None):
    kind = kind or draw(st.sampled_from(["mha", "mha", "mha", "mla", "mamba", "mamba2", "gated_deltanet", "parallel", "none"]))
    if kind == "parallel":  # Falcon-H1: attention beside a state-space mixer on one input
        other = draw(st.sampled_from(["mamba", "mamba2", "gated_deltanet"]))
        members = [_attention(draw, d_model, "mha"), {**_attention(draw, d_model, other), "kind": other}]
        return {"kind": "parallel", "mixers": members[:: draw(st.sampled_from([1, -1]))]}
    if kind == "mamba":
        norm = draw(st.booleans())  # FalconMamba's weightless dt/B/C norms, or Jamba's with weights
        return {
            "kind": "mamba",
            "d_inner": draw(st.integers(1, 8)),
            "state_size": draw(st.integers(1, 4)),
            "conv_kernel": draw(st.integers(1, 4)),
            "time_step_rank": draw(st.integers(1, 3)),
            "use_bias": draw(st.booleans()),
            "use_conv_bias": draw(st.booleans()),
            "bcdt_norm": norm,
            "bcdt_weights": norm and draw(st.booleans()),
        }
    if kind == "mla":
        rank = draw(st.sampled_from([None, 4]))
        attn = {
            "kind": "mla",
            "n_heads": draw(st.integers(1, 4)),
            "q_lora_rank": rank,
            "kv_lora_rank": draw(st.integers(1, 6)),
            "qk_nope_head_dim": draw(st.integers(1, 5)),
            "qk_rope_head_dim": draw(st.integers(1, 4)),
            "v_head_dim": draw(st.integers(1, 5)),
            "bias": draw(st.booleans()),
        }
        if rank and draw(st.booleans()):  # DeepSeek-V3.2's indexer reads the query latent
            attn |= {
                "index_n_heads": draw(st.integers(1, 3)),
                "index_head_dim": draw(st.integers(1, 4)),
                "index_topk": draw(st.integers(1, 6)),
            }
        return attn
    if kind == "mamba2":
        head_dim = draw(st.sampled_from([h for h in (1, 2, 4) if (2 * d_model) % h == 0]))
        n_heads = 2 * d_model // head_dim
        return {
            "kind": "mamba2",
            "n_heads": n_heads,
            "head_dim": head_dim,
            "expand": 2,
            "state_size": draw(st.integers(1, 4)),
            "n_groups": draw(st.sampled_from([g for g in range(1, n_heads + 1) if n_heads % g == 0][:3])),
            "conv_kernel": draw(st.integers(1, 4)),
            "use_bias": draw(st.booleans()),
            "use_conv_bias": draw(st.booleans()),
            "gated_norm": draw(st.booleans()),  # Falcon-H1's options
            "out_bias": draw(st.sampled_from([None, False, True])),
        }
    if kind == "gated_deltanet":
        keys = draw(st.integers(1, 3))
        return {
            "kind": "gated_deltanet",
            "n_key_heads": keys,
            "key_head_dim": draw(st.integers(1, 4)),
            "n_value_heads": keys * draw(st.integers(1, 2)),
            "value_head_dim": draw(st.integers(1, 4)),
            "conv_kernel": draw(st.integers(1, 4)),
            "chunk_size": draw(st.integers(1, 5)),
        }
    if kind == "none":
        return {"kind": "none"}
    n_heads = draw(st.integers(1, 6))
    attn = {
        "n_heads": n_heads,
        "n_kv_heads": draw(st.sampled_from([k for k in range(1, n_heads + 1) if n_heads % k == 0])),
        "qkv_bias": draw(st.booleans()),
        "o_bias": draw(st.booleans()),
        "qk_norm": draw(st.sampled_from(["none", "head", "each_head", "full"])),
        "sinks": draw(st.booleans()),
        "gate": draw(st.booleans()),
        "rope": draw(st.booleans()),
        "window": draw(st.sampled_from([None, None, 1, 3, 6])),
    }
    if attn["window"] is None:
        attn["chunk"] = draw(st.sampled_from([None, None, 1, 2, 5]))  # Llama 4's chunked attention
    if d_model % n_heads or draw(st.booleans()):
        attn["head_dim"] = draw(st.integers(1, 12))  # head_dim unrelated to d_model / n_heads
    if draw(st.booleans()):
        attn["rotary_dim"] = draw(st.integers(1, 12))  # partial rotary (capped at head_dim)
    attn["softplus_gate"] = draw(st.sampled_from(["none", "head", "element"]))  # Laguna's g_proj
    attn["sub_norm"] = draw(st.booleans())  # BitNet's norm before o
    if draw(st.booleans()):  # Gemma 3n's and Gemma 4's layers that read an earlier layer's keys and values
        attn["kv_shared"] = True
    else:
        attn["v_norm"] = draw(st.booleans())  # Gemma 4
        if draw(st.booleans()):
            attn["k_eq_v"] = True  # Gemma 4's global layers: the values are the keys
    if not attn["gate"] and not attn.get("k_eq_v") and draw(st.booleans()):
        attn["v_head_dim"] = draw(st.integers(1, 12))  # MiMo-V2-Flash: value heads narrower than q/k heads
    return attn


@st.composite
def small_specs(draw):
    d_model = draw(st.integers(2, 24))
    n_layers = draw(st.integers(1, 4))
    spec = {
        "vocab_size": draw(st.integers(2, 40)),
        "d_model": d_model,
        "n_layers": n_layers,
        "context_length": draw(st.integers(4, 16)),
        "attention": _attention(draw, d_model),
        "ffn": _ffn(draw),
        "positions": draw(st.sampled_from(["learned", "rotary", "alibi", "sinusoidal", "none"])),
        "tie_embeddings": draw(st.booleans()),
        "lm_head_bias": draw(st.booleans()),
        "embedding_norm": draw(st.booleans()),
        "position_offset": draw(st.sampled_from([0, 2])),
    }
    kind = draw(st.sampled_from(["layernorm", "layernorm1p", "rmsnorm"]))
    affine = draw(st.booleans())
    placement = draw(st.sampled_from(["pre", "pre", "post", "residual"]))
    spec["norm"] = {
        "kind": kind,
        "affine": affine,
        "per_layer": draw(st.integers(0, 4)),
        "final": draw(st.booleans()),
        "placement": placement,
        "bias": affine and kind != "rmsnorm" and draw(st.booleans()),
    }
    if placement == "pre" and spec["norm"]["per_layer"] <= 2:
        spec["parallel"] = draw(st.booleans())  # GPT-J, GPT-NeoX, phi-2
    if n_layers > 1 and draw(st.booleans()):  # a stack whose layers differ
        first = draw(st.integers(1, n_layers - 1))
        group = {"repeat": first, "ffn": _ffn(draw)}
        if draw(st.booleans()):
            group["attention"] = _attention(draw, d_model)
        spec["layers"] = [group, {"repeat": n_layers - first}]
    seq_len = draw(st.integers(1, spec["context_length"]))
    return from_data(spec), seq_len


@settings(max_examples=int(os.environ.get("FFNCALC_EXAMPLES", 200)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=small_specs(), convention=st.sampled_from(["exact", "causal"]), every_layer=st.booleans())
def test_analytic_equals_meta_torch(case, convention, every_layer):
    spec, seq_len = case
    report = verify(spec, seq_len=seq_len, convention=convention, every_layer=every_layer)
    assert report.ok, report.failures


# --- a wrong count is caught ---------------------------------------------------------------------


def test_wrong_analytic_count_exits_1(monkeypatch, capsys):
    real = verify_module.tally

    def off_by_one(spec, **kw):
        t = real(spec, **kw)
        rows = tuple(dataclasses.replace(r, params=r.params + 1) if r.name == "ffn.up.weight" else r for r in t.rows)
        return dataclasses.replace(t, rows=rows)

    monkeypatch.setattr(verify_module, "tally", off_by_one)
    os.environ["COLUMNS"] = "200"
    with pytest.raises(SystemExit) as exc:
        main(["verify", "gpt2", "--seq-len", "8"])
    out = capsys.readouterr().out
    assert exc.value.code == 1
    assert "✗ 1 component(s) differ: ffn.up.weight" in out
    with pytest.raises(SystemExit) as exc:
        main(["verify", "gpt2", "--seq-len", "8", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert exc.value.code == 1 and data["ok"] is False
    bad = [c for c in data["components"] if not c["params_ok"]]
    assert [(c["component"], c["analytic_params"] - c["torch_params"]) for c in bad] == [("ffn.up.weight", 1)]


def test_wrong_flop_count_is_caught(monkeypatch):
    real = verify_module.tally

    def doubled_scores(spec, **kw):
        t = real(spec, **kw)
        rows = tuple(dataclasses.replace(r, flops=2 * r.flops) if r.name == "attn.scores" else r for r in t.rows)
        return dataclasses.replace(t, rows=rows)

    monkeypatch.setattr(verify_module, "tally", doubled_scores)
    report = verify(presets.load("llama3-8b")[1], seq_len=32)
    assert not report.ok
    assert [c.component for c in report.failures] == ["attn.scores"]


def test_verify_cli(capsys):
    os.environ["COLUMNS"] = "200"
    with pytest.raises(SystemExit) as exc:
        main(["verify", "mixtral-8x7b", "--seq-len", "64"])
    out = capsys.readouterr().out
    assert exc.value.code == 0
    assert "balanced" in out
    with pytest.raises(SystemExit) as exc:
        main(["verify", "mixtral-8x7b", "--seq-len", "64", "--format", "json"])
    components = json.loads(capsys.readouterr().out)["components"]
    assert exc.value.code == 0 and all(c["params_ok"] and c["flops_ok"] for c in components)
    assert f"✓ all {len(components)} components agree" in out
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--all", "--seq-len", "16", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0 and data["ok"] is True
    assert {r["model"] for r in data["reports"]} == set(presets.names())


@pytest.mark.parametrize(
    "args,expected",
    [
        (["verify"], "verify takes one of: a model, --all, --hf CONFIG"),
        (["verify", "gpt2", "--all"], "verify takes one of"),
        (["verify", "gpt2", "--hf", "config.json"], "verify takes one of"),
        (["verify", "gpt2", "--convention", "kaplan"], "Invalid value for '--convention'"),
        (["verify", "gpt2", "--seq-len", "5000"], "exceeds context_length 1024"),
    ],
)
def test_verify_bad_arguments(capsys, args, expected):
    with pytest.raises(SystemExit) as exc:
        main(args)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and expected in err and err.count("\n") == 1


# --- real tensors: routing, causal attention, a forward pass --------------------------------------


def tiny(**overrides):
    base = dict(
        vocab_size=50,
        d_model=16,
        n_layers=2,
        context_length=24,
        attention={"n_heads": 4, "n_kv_heads": 2},
        ffn={
            "kind": "moe",
            "n_experts": 4,
            "top_k": 2,
            "router_bias": True,
            "expert": {"kind": "gated", "d_ff": 8},
            "n_shared_experts": 1,
            "shared": {"kind": "dense", "d_ff": 12, "activation": "relu"},
        },
    )
    base.update(overrides)
    return from_data(base)


def test_real_top_k_routing_matches_analytic_flops_and_a_naive_sum():
    torch.manual_seed(0)
    spec = tiny()
    net = reference.build(spec, device="cpu")
    tokens = torch.randint(0, 50, (1, 24))
    with FlopCounterMode(display=False) as counter:
        net(tokens)
    assert counter.get_total_flops() == tally(spec, seq_len=24).forward_flops
    moe = net.layers[0].ffn
    x = torch.randn(24, 16)
    probs = moe.router(x).softmax(-1)
    weights, experts = probs.topk(2, dim=-1)
    naive = torch.stack(
        [sum(weights[t, j] * moe.experts[int(experts[t, j])](x[t]) for j in range(2)) + moe.shared[0](x[t]) for t in range(24)]
    )
    torch.testing.assert_close(moe(x), naive)
    assert len(set(experts.flatten().tolist())) > 1  # routing really chose among experts


def test_causal_attention_matches_masked_full_square():
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 3, 11, 5) for _ in range(3))
    mm1, mm2 = _torch.MatMul(), _torch.MatMul()
    with FlopCounterMode(display=False) as counter:
        out = _torch.causal_attention(q, k, v, mm1, mm2, block=3)
    mask = torch.ones(11, 11, dtype=torch.bool).tril()
    scores = (q @ k.transpose(-2, -1)).masked_fill(~mask, float("-inf"))
    torch.testing.assert_close(out, scores.softmax(-1) @ v)
    # QKᵀ and AV over the triangle: 11·12/2 query-key pairs, 5 features, 2·3 heads, 2 FLOPs a multiply-add
    assert counter.get_total_flops() == 2 * (2 * 2 * 3 * 5 * 11 * 12 // 2)


def test_real_forward_on_cpu_with_causal_mask():
    spec = tiny(positions="learned", tie_embeddings=True, attention={"n_heads": 4, "qk_norm": "head"})
    for causal in (False, True):
        net = reference.build(spec, device="cpu", causal=causal)
        logits = net(torch.randint(0, 50, (2, 10)))
        assert logits.shape == (2, 10, 50) and torch.isfinite(logits).all()


def test_verify_builds_each_distinct_layer_once_and_never_imports_dynamo():
    """DeepSeek-V3: 3 dense layers then 58 MoE layers (its config.json: first_k_dense_replace 3, 61 layers)."""
    import subprocess
    import sys

    code = (
        "import sys; from ffncalc.analysis.verify import verify; from ffncalc.model import reference; "
        "from ffncalc.sources import presets; spec = presets.load('deepseek-v3')[1]; "
        "print(verify(spec, seq_len=8).ok, verify(presets.load('gpt3-175b')[1]).ok, 'torch._dynamo' in sys.modules, "
        "len(reference.build(spec, distinct=True).layers))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "False", "2"]


def test_verify_refuses_more_expert_modules_than_it_can_hold(tmp_path, capsys):
    """Torch modules take memory even on the meta device: 100,000 experts in one layer kind are refused in one
    line before anything is built, the figure named."""
    spec = tmp_path / "wide.yaml"
    spec.write_text(
        "vocab_size: 100\nd_model: 8\nn_layers: 2\ncontext_length: 16\nattention: {n_heads: 2}\n"
        "ffn: {kind: moe, n_experts: 100000, top_k: 2, expert: {kind: gated, d_ff: 4}}\n"
    )
    with pytest.raises(SystemExit) as exc:
        main(["verify", str(spec), "--seq-len", "8"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert "100,000 expert modules" in err and "65,536" in err


def test_a_part_without_reference_modules_is_refused_in_one_line(capsys):
    """BLT's byte-latent part has no torch reference yet: verify says so, exit 2, rather than a traceback."""
    config = Path(__file__).resolve().parents[1] / "hf_defaults" / "configs" / "blt.json"
    with pytest.raises(SystemExit) as exc:
        main(["verify", str(config), "--seq-len", "8"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "verify cannot build it" in err


@pytest.mark.parametrize("convention", ["exact", "causal"])
def test_block_sparse_attention_verifies_as_json(cli, tmp_path, convention):
    """A small MiniMax-M3 (one block-sparse layer, blocks of 8, 2 of them a query) verifies in both views at 40
    tokens, past several blocks. The causal view's per-token FLOPs are fractions (a window's average); each
    pass's total is whole, and JSON takes it."""
    config = {
        "model_type": "minimax_m3_vl_text",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "intermediate_size": 128,
        "dense_intermediate_size": 256,
        "shared_intermediate_size": 128,
        "vocab_size": 512,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "index_n_heads": 2,
        "index_head_dim": 16,
        "index_block_size": 8,
        "index_topk_blocks": 2,
        "index_local_blocks": 1,
        "layer_types": ["minimax_m3_sparse", "full_attention"],
    }
    path = tmp_path / "mm3.json"
    path.write_text(json.dumps(config))
    code, out, err = cli("verify", str(path), "--seq-len", "40", "-c", convention, "-f", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["ok"] and all(type(c["analytic_flops"]) is int for c in data["components"])
    assert any(c["component"].startswith("attn.indexer") for c in data["components"])
