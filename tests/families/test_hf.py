"""Hugging Face config.json import: every family exact against what transformers instantiates.

The fixtures in hf_configs/ are the models' public config.json files. TOTALS holds the parameter count
of the transformers class each one names, as transformers 5.23.0 instantiates it on the meta device
(sum of numel over named_parameters, a tied matrix once); where the model's publisher states an exact
figure it is the same (Pythia Table 1, the Llama and Mixtral papers, Hugging Face model cards).
The transformers cross-check below measures those totals again, per component, on every run.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ffncalc.analysis import hfcheck, inference, memory
from ffncalc.analysis.count import tally
from ffncalc.analysis.hfcheck import Measured
from ffncalc.model import from_data
from ffncalc.sources import hf, presets
from ffncalc.sources.hf import coverage

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"

TOTALS = {
    "gpt2": 124_439_808,
    "pythia-1.4b": 1_414_647_808,  # Pythia Table 1
    "gpt-neox-20b": 20_554_567_680,
    "llama-7b": 6_738_415_616,
    "llama2-7b": 6_738_415_616,
    "llama3-8b": 8_030_261_248,
    "llama3.1-8b": 8_030_261_248,
    "llama3.2-1b": 1_235_814_400,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "qwen2.5-0.5b": 494_032_768,
    "qwen2.5-7b": 7_615_616_512,
    "qwen1.5-moe-a2.7b": 14_315_784_192,
    "qwen3-8b": 8_190_735_360,
    "qwen3-30b-a3b": 30_532_122_624,
    "gemma-2b": 2_506_172_416,
    "gemma-2-9b": 9_241_705_984,
    "phi-2": 2_779_683_840,
    "phi-3-mini-4k": 3_821_079_552,
    "olmo2-7b": 7_298_617_344,
    "deepseek-v2-lite": 15_706_484_224,
    "deepseek-v3": 671_026_404_352,
}

FAMILIES = {
    "gpt2",
    "gpt_neox",
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "phi",
    "phi3",
    "olmo2",
    "deepseek_v2",
    "deepseek_v3",
}


# Families that are another family under a new name (one line each), read by a tested family's code.
ALIASES_WITHOUT_CONFIG = {"gpt-sw3"}
# Qwen's and GLM-4V's vision-language text_configs, read as the Qwen and GLM families, Cosmos3 Edge's, Kosmos-2's and
# Kosmos-2.5's, and GIT's top-level keys: each proven as the language model of the whole class transformers builds at
# its wrapper's defaults (tests/families/test_whole_models.py)
TEXT_OF_WHOLE = {"qwen2_vl_text", "qwen2_5_vl_text", "qwen3_vl_text", "qwen3_vl_moe_text", "glm4v_text", "glm4v_moe_text"}
TEXT_OF_WHOLE |= {"cosmos3_edge_text", "kosmos_2_text_model", "kosmos_2_5_text_model", *coverage.SELF_TEXT}
TEXT_OF_WHOLE |= {"glm_ocr_text", "paddleocr_vl_text", "mistral4", "qwen2_5_omni_text", "qwen3_omni_moe_text", "step3p5"}
TEXT_OF_WHOLE |= {"voxtral_realtime_text", *coverage.TEXT_PROVEN_WHOLE}
# Llama 3.2 Vision's language model: the whole class's, and MllamaForCausalLM at the defaults of "mllama" (hf_defaults)
TEXT_OF_WHOLE |= {"mllama_text_model"}
# Families with no public config yet: proven exactly at their configuration class's defaults (tests/families/test_defaults.py)
DEFAULTS_TRUTH = CONFIGS.parent / "hf_defaults" / "truth"
PROVEN_AT_DEFAULTS = {p.stem for p in DEFAULTS_TRUTH.glob("*.json") if "refused" not in json.loads(p.read_text())}


def raw(name):
    return json.loads((CONFIGS / f"{name}.json").read_text())


def moe_active(name):
    """Active parameters per token, by hand: the total less the routed experts a token skips.

    A SwiGLU expert of width w holds 3·d·w weights; each MoE layer skips (experts - top_k) of them.
    """
    c = raw(name)
    d, layers = c["hidden_size"], c["num_hidden_layers"]
    if c["model_type"] == "mixtral":
        experts, k, w, moe_layers = c["num_local_experts"], c["num_experts_per_tok"], c["intermediate_size"], layers
    elif c["model_type"].startswith("qwen"):
        experts, k, w, moe_layers = c["num_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"], layers
    else:  # deepseek: dense before first_k_dense_replace
        experts, k, w = c["n_routed_experts"], c["num_experts_per_tok"], c["moe_intermediate_size"]
        moe_layers = layers - c["first_k_dense_replace"]
    return TOTALS[name] - moe_layers * (experts - k) * 3 * d * w


MOE = ["mixtral-8x7b", "qwen1.5-moe-a2.7b", "qwen3-30b-a3b", "deepseek-v2-lite", "deepseek-v3"]


def test_fixtures_cover_every_family():
    assert {raw(name)["model_type"] for name in TOTALS} == FAMILIES
    read = {hf.family_of(hf.read_config(p)).model_type for p in CONFIGS.glob("*.json")}
    without = set(hf.FAMILIES) - read - ALIASES_WITHOUT_CONFIG - TEXT_OF_WHOLE
    assert without <= PROVEN_AT_DEFAULTS, sorted(without)
    assert not hf.config.DUPLICATES  # each model_type read by one family module


@pytest.mark.parametrize("name,total", TOTALS.items())
def test_import_gives_the_transformers_total(name, total):
    label, spec = hf.load(CONFIGS / f"{name}.json")
    t = tally(spec)
    assert label == name and isinstance(t.params, int)
    assert t.params == total
    if name not in MOE:
        assert t.active == total


@pytest.mark.parametrize("name", MOE)
def test_moe_active_params(name):
    assert tally(hf.load(CONFIGS / f"{name}.json")[1]).active == moe_active(name)


def test_published_active_figures():
    # Mixtral paper: 12.9B active; Qwen model cards: A2.7B, A3B (3.3B); DeepSeek-V3 paper: 37B activated.
    # Mixtral by hand (Jiang et al. 2024, Table 1): untied embeddings and head, per layer Q, O (4096²) and K, V
    # (4096·1024), the router (4096·8), two RMSNorms, and 2 of the 8 SwiGLU experts (3·4096·14336 each)
    by_hand = 2 * 32000 * 4096 + 4096 + 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 4096 * 8 + 2 * 4096 + 2 * 3 * 4096 * 14336)
    assert moe_active("mixtral-8x7b") == by_hand and round(by_hand / 1e8) == 129
    assert 2.65e9 <= moe_active("qwen1.5-moe-a2.7b") < 2.75e9
    assert 3.3e9 <= moe_active("qwen3-30b-a3b") < 3.4e9
    assert 37e9 <= moe_active("deepseek-v3") < 38e9


def test_mla_shapes_by_hand():
    """DeepSeek-V2-Lite's attention per layer (full-rank query), from the paper's equations."""
    d, h, nope, rope, v, rank = 2048, 16, 128, 64, 128, 512
    per_layer = d * h * (nope + rope) + d * (rank + rope) + rank + rank * h * (nope + v) + h * v * d
    rows = tally(hf.load(CONFIGS / "deepseek-v2-lite.json")[1]).rows
    assert sum(r.params for r in rows if r.name.startswith("attn.")) == 27 * per_layer


# --- transformers itself ------------------------------------------------------------------------


@pytest.mark.parametrize("name", TOTALS)
def test_transformers_totals_are_the_recorded_truth(name):
    """TOTALS (published figures where they exist) against what transformers built (tests/hf_truth/)."""
    truth = json.loads((CONFIGS.parent / "hf_truth" / f"{name}.json").read_text())
    assert sum(n for _, n in Measured.from_record(truth).params) == TOTALS[name]


@pytest.mark.torch
def test_transformers_catches_a_wrong_bias():
    c = hf.read_config(CONFIGS / "qwen2.5-0.5b.json")
    wrong = from_data({**hf.spec_data(c), "attention": {**hf.spec_data(c)["attention"], "o_bias": True}})
    report = hfcheck.check(c, spec=wrong)  # built live: transformers itself, not the recording
    assert [ch.component for ch in report.failures] == ["attn.o"]
    assert report.failures[0].ours - report.failures[0].transformers == 24 * 896


@pytest.mark.torch
def test_deepseek_v3_correction_bias_is_a_buffer():
    report = hfcheck.check(hf.read_config(CONFIGS / "deepseek-v3.json"))
    assert any("e_score_correction_bias" in n and "14,848" in n for n in report.notes)  # 58 MoE layers × 256


@pytest.mark.parametrize("name", ["deepseek-v2-lite", "phi-2", "olmo2-7b", "qwen1.5-moe-a2.7b", "pythia-1.4b"])
@pytest.mark.torch
def test_causal_triangle_verifies(name):
    from ffncalc.analysis.verify import verify

    report = verify(hf.load(CONFIGS / f"{name}.json")[1], seq_len=7, convention="causal")
    assert report.ok, report.failures


# --- command line -------------------------------------------------------------------------------


def test_count_takes_a_config_or_its_folder(cli, tmp_path):
    code, out, _ = cli("count", str(CONFIGS / "qwen3-8b.json"), "--format", "json", "--exact")
    assert code == 0 and json.loads(out)["totals"]["params"] == TOTALS["qwen3-8b"]
    folder = tmp_path / "Qwen3-30B-A3B"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "qwen3-30b-a3b.json").read_text())
    code, out, _ = cli("count", str(folder), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["totals"]["params"] == TOTALS["qwen3-30b-a3b"]
    assert data["totals"]["active_params"] == moe_active("qwen3-30b-a3b")


@pytest.mark.parametrize("name", ["deepseek-v3", "phi-2", "qwen1.5-moe-a2.7b", "gemma-2b"])
def test_import_prints_a_spec_that_counts_the_same(cli, tmp_path, name):
    code, out, _ = cli("import", str(CONFIGS / f"{name}.json"))
    assert code == 0 and out.startswith("# ffncalc spec imported from")
    spec = from_data(yaml.safe_load(out))
    assert tally(spec).params == TOTALS[name]
    target = tmp_path / "spec.yaml"
    code, out, _ = cli("import", str(CONFIGS / f"{name}.json"), "--out", str(target))
    assert code == 0 and tally(presets.load(str(target))[1]).params == TOTALS[name]


@pytest.mark.torch
def test_verify_hf_cli(cli):
    code, out, _ = cli("verify", "--hf", str(CONFIGS / "phi-2.json"), "--seq-len", "8")
    assert code == 0
    assert "agree with PhiForCausalLM" in out
    code, js, _ = cli("verify", "--hf", str(CONFIGS / "phi-2.json"), "--seq-len", "8", "--format", "json")
    theirs = json.loads(js)["transformers"]["components"]
    assert code == 0 and f"✓ all {len(theirs)} components agree with PhiForCausalLM" in out
    code, out, _ = cli("verify", "--hf", str(CONFIGS / "gpt2.json"), "--seq-len", "8", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["transformers"]["model_class"] == "GPT2LMHeadModel"
    assert {"attn.q+k+v"} <= {c["component"] for c in data["transformers"]["components"]}


def test_verify_hf_without_transformers_says_how_to_install(tmp_path):
    probe = (
        "import sys; sys.modules['transformers'] = None\n"
        "from ffncalc.cli import main\n"
        f"main(['verify', '--hf', {str(CONFIGS / 'gpt2.json')!r}, '--seq-len', '4'])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "verify --hf needs torch and transformers" in out.stderr and "pip install" in out.stderr


def write(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data)
    return str(path)


@pytest.mark.parametrize(
    "change,expected",
    [
        ({"model_type": "wav2vec2"}, "unsupported model_type 'wav2vec2'; supported: "),
        ({"model_type": "lama"}, "unsupported model_type 'lama'; nearest: llama"),
        ({"num_attention_heads": "32"}, "num_attention_heads: expected a positive integer, got '32'"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings: expected true or false"),
        ({"hidden_act": "gelu_magic"}, "unknown activation 'gelu_magic'"),
        ({"num_key_value_heads": 5}, "n_kv_heads: 5 KV heads do not divide 32 query heads"),
    ],
)
def test_bad_configs(cli, tmp_path, change, expected):
    data = {k: v for k, v in {**raw("llama2-7b"), **change}.items() if v is not None}
    path = write(tmp_path, data)
    code, out, err = cli("count", path)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert expected in err and path in err


def test_bad_config_errors_name_the_line(cli, tmp_path):
    path = write(tmp_path, {**raw("llama2-7b"), "num_attention_heads": 0})
    line = next(i for i, text in enumerate(Path(path).read_text().splitlines(), 1) if "num_attention_heads" in text)
    code, _, err = cli("count", path)
    assert code == 2 and f"{path}:{line}: num_attention_heads" in err


def test_missing_model_type_and_broken_json(cli, tmp_path):
    data = {k: v for k, v in raw("gpt2").items() if k != "model_type"}
    code, _, err = cli("import", write(tmp_path, data))
    assert code == 2 and "model_type: required key is missing" in err
    code, _, err = cli("import", write(tmp_path, '{"model_type": "gpt2",\n  "n_embd": }', "broken.json"))
    assert code == 2 and "broken.json:2: not JSON" in err
    code, _, err = cli("import", str(tmp_path / "nothing"))
    assert code == 2 and "no such file" in err


def test_import_out_never_half_writes(cli, tmp_path):
    target = tmp_path / "mine.yaml"
    target.write_text("keep me\n")
    bad = write(tmp_path, {**raw("gpt2"), "model_type": "no_such_model_type"})
    code, _, _ = cli("import", bad, "--out", str(target))
    assert code == 2 and target.read_text() == "keep me\n"


def test_defaults_apply_where_keys_are_absent():
    """Keys transformers defaults: tie_word_embeddings, head_dim, num_key_value_heads, q_lora_rank, …"""
    c = raw("llama3.2-1b")
    base = {
        k: c[k] for k in ("model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    }
    spec = hf.to_spec(hf.Config(base, json.dumps(base), "x"))
    attention = spec.layers[0].attention
    assert not spec.tie_embeddings and attention.kv_heads == 32 and attention.head_dim == 64
    q3 = {**base, "model_type": "qwen3"}  # Qwen3Config: head_dim 128 when absent
    assert hf.to_spec(hf.Config(q3, "", "x")).layers[0].attention.head_dim == 128
    ds = {k: v for k, v in raw("deepseek-v3").items() if k != "q_lora_rank"}  # DeepseekV3Config: 1536
    assert hf.to_spec(hf.Config(ds, "", "x")).layers[0].attention.q_lora_rank == 1536
    lite = raw("deepseek-v2-lite")  # an explicit null: a full-rank query
    assert hf.to_spec(hf.Config(lite, "", "x")).layers[0].attention.q_lora_rank is None


def test_mla_kv_cache_is_the_latent():
    # DeepSeek-V3: 61 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) elements × 2 bytes (bf16)
    assert inference.kv_bytes_per_token(presets.load("deepseek-v3")[1], 16) == 61 * 576 * 2


def test_presets_match_their_configs():
    pairs = {
        "qwen2.5-7b": "qwen2.5-7b",
        "qwen3-8b": "qwen3-8b",
        "qwen3-30b-a3b": "qwen3-30b-a3b",
        "gemma-2b": "gemma-2b",
        "phi-2": "phi-2",
        "phi-3-mini": "phi-3-mini-4k",
        "olmo2-7b": "olmo2-7b",
        "pythia-1.4b": "pythia-1.4b",
        "deepseek-v2-lite": "deepseek-v2-lite",
        "deepseek-v3": "deepseek-v3",
    }
    for preset, fixture in pairs.items():
        t = tally(presets.load(preset)[1])
        assert (t.params, t.active) == (TOTALS[fixture], moe_active(fixture) if fixture in MOE else TOTALS[fixture])


def test_sparse_text_config_takes_the_config_class_defaults(cli):
    """Gemma 3 27B's text_config leaves out vocab_size: Gemma3TextConfig's default, 262,208, applies
    (the embedding is 262,208 × 5,376). The whole model: the language model as transformers' Gemma3ForCausalLM builds
    it (tests/hf_truth) and, by hand, its SigLIP So400m tower (patch 14 over 896 pixels: 4,096 positions; 27 layers of
    width 1,152 and MLP 4,304, every linear and LayerNorm with a bias) and the projector (an RMSNorm of 1,152 and a
    1,152 × 5,376 matrix); an image is 16 × 16 = 256 tokens."""
    code, out, _ = cli("count", str(CONFIGS / "gemma-3-27b-it.json"), "--format", "json")
    data = json.loads(out)
    embed = next(c for c in data["components"] if c["component"] == "embed.weight")
    assert code == 0 and embed["params"] == 262_208 * 5376
    d, f = 1152, 4304
    vision = d * 3 * 14 * 14 + d + 4096 * d + 27 * (4 * (d * d + d) + 4 * d + d * f + f + f * d + d) + 2 * d
    from ffncalc.analysis.records import expanded

    text = sum(n for _, n in expanded(json.loads((CONFIGS.parent / "hf_truth" / "gemma-3-27b-it.json").read_text())["params"], 2))
    assert data["totals"]["params"] == text + vision + d + d * 5376 == 27_432_406_640  # the model card's 27.4B
    assert data["notes"][0].startswith("vision tower: one 896×896-pixel image is 256 tokens of the language model")


def test_text_config_errors_point_into_the_text_config(cli, tmp_path):
    text = (CONFIGS / "gemma-3-27b-it.json").read_text().replace('"num_attention_heads": 32', '"num_attention_heads": "32"')
    path = write(tmp_path, text)
    line = 1 + text[: text.index('"num_attention_heads": "32"')].count("\n")
    code, _, err = cli("count", path)
    assert code == 2 and f"{path}:{line}: num_attention_heads: expected a positive integer" in err


def test_as_reads_a_config_as_another_family(cli, tmp_path):
    """A model_type ffncalc does not know, read as a family it does: Llama 3 8B's keys under a new name."""
    data = {**raw("llama3-8b"), "model_type": "my_llama"}
    path = write(tmp_path, data)
    code, _, err = cli("count", path)
    assert code == 2 and "unsupported model_type 'my_llama'; nearest: llama" in err
    code, out, _ = cli("count", path, "--as", "llama", "--format", "json")
    assert code == 0 and json.loads(out)["totals"]["params"] == TOTALS["llama3-8b"]
    code, _, err = cli("count", path, "--as", "lamma")
    assert code == 2 and "--as lamma: not a supported model_type" in err
    code, _, err = cli("count", "gpt2", "--as", "llama")
    assert code == 2 and "--as llama: only a Hugging Face config.json" in err


def test_families_lists_every_model_type(cli):
    code, out, _ = cli("families", "--format", "json")
    from ffncalc.sources.hf.coverage import CAUSAL_LM_TYPES, ENCODER_DECODER_TYPES, WHOLE_ENCODER_TYPES, WHOLE_IS_TEXT
    from ffncalc.sources.hf.towers import wrappers as whole

    records = json.loads(out)["families"]
    supported = {f["model_type"] for f in records if f["status"] == "supported" and f["kind"] != "multimodal"}
    # read whole: a wrapper's towers beside its language model, or a class that is its language model (Mistral 4)
    whole_read = {f["model_type"] for f in records if f["status"] == "supported" and f["kind"] == "multimodal"}
    assert whole_read == (set(whole()) - set(WHOLE_ENCODER_TYPES)) | set(WHOLE_IS_TEXT) | set(
        coverage.WHOLE_BY_FAMILY
    )  # T5Gemma 2: by its family
    wrappers = {w for w, t in hf.TEXT_TYPES.items() if t in hf.FAMILIES and w in CAUSAL_LM_TYPES}
    own = set(coverage.SELF_TEXT)  # a wrapper's own top-level keys (GIT's): listed among the multimodal types
    read_whole = {t for t in ENCODER_DECODER_TYPES if t in whole()}  # audio towers beside a decoder (Qwen2-Audio, Voxtral)
    read_whole |= set(WHOLE_ENCODER_TYPES)  # a vision tower beside a text encoder (ModernVBERT): an encoder's record
    assert code == 0 and supported == (set(hf.FAMILIES) | wrappers | read_whole) - own
    assert {"llama", "deepseek_v3", "gemma3_text"} <= supported
    assert all(f["detail"] for f in records)  # a config it is proven on, or what it needs


@pytest.mark.torch
def test_mistral_defaults_are_the_config_class_defaults():
    """MistralConfig and MixtralConfig: 8 KV heads when the key is absent, one per head when it is null."""
    import transformers

    for name in ("mistral-7b", "mixtral-8x7b"):
        base = {k: v for k, v in raw(name).items() if k not in ("num_key_value_heads", "max_position_embeddings")}
        theirs = transformers.AutoConfig.for_model(**base)
        ours = hf.to_spec(hf.Config(base, json.dumps(base), "x"))
        assert ours.layers[0].attention.kv_heads == theirs.num_key_value_heads == 8
        assert ours.context_length == theirs.max_position_embeddings == 131_072
        nulled = {**base, "num_key_value_heads": None}
        assert hf.to_spec(hf.Config(nulled, "", "x")).layers[0].attention.kv_heads == 32


def test_an_alias_reads_as_its_family(tmp_path):
    """GPT-SW3 is GPT-2's class under another model_type: the same file, renamed, counts the same."""
    renamed = write(tmp_path, {**raw("gpt2"), "model_type": "gpt-sw3"})
    assert tally(hf.load(renamed)[1]).params == TOTALS["gpt2"]


# OPT-350m's config.json (facebook/opt-350m): an embedding narrower than the layers, LayerNorms after the residual adds
OPT_350M = {
    "model_type": "opt",
    "architectures": ["OPTForCausalLM"],
    "vocab_size": 50272,
    "hidden_size": 1024,
    "word_embed_proj_dim": 512,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "ffn_dim": 4096,
    "max_position_embeddings": 2048,
    "do_layer_norm_before": False,
    "activation_function": "relu",
    "enable_bias": True,
    "_remove_final_layer_norm": False,
}


def test_opt_350m_word_embed_proj_dim_by_hand(tmp_path):
    """OPTDecoder with word_embed_proj_dim e = 512 < hidden_size d = 1024: embed_tokens V × e, project_in e -> d and
    project_out d -> e without biases, lm_head tied to embed_tokens; no final LayerNorm (do_layer_norm_before false)."""
    V, e, d, L, f, P = 50272, 512, 1024, 24, 4096, 2048
    embed = V * e  # 25,739,264, also the tied lm_head
    projections = e * d + d * e  # project_in, project_out
    positions = (P + 2) * d  # OPTLearnedPositionalEmbedding: two rows more
    attention = 4 * (d * d + d)  # q, k, v, out_proj with biases
    ffn = d * f + f + f * d + d  # fc1, fc2 with biases
    norms = 2 * (d + d)  # self_attn_layer_norm, final_layer_norm of the layer: weight and bias each
    total = embed + projections + positions + L * (attention + ffn + norms)
    assert total == 331_196_416  # what OPTForCausalLM instantiates for facebook/opt-350m

    spec = hf.load(write(tmp_path, OPT_350M))[1]
    t = tally(spec, seq_len=8)
    rows = {r.name: r for r in t.rows}
    assert t.params == total
    assert rows["embed.weight"].shape == rows["lm_head.weight"].shape == (V, e) and rows["lm_head.weight"].tied
    assert rows["embed.project_in.weight"].shape == (d, e) and rows["embed.project_out.weight"].shape == (e, d)
    assert "final_norm" not in rows
    # FLOPs per token: each projection 2·e·d, the head 2·V·e
    assert rows["embed.project_in.weight"].flops == rows["embed.project_out.weight"].flops == 2 * e * d
    assert rows["lm_head.weight"].flops == 2 * V * e
    # two pipeline stages: the last holds its own copy of the tied table, V × e
    assert sum(sum(s) for s in memory.stage_params(spec, 2)) == total + V * e


def test_a_tied_head_and_an_embedding_of_another_vocabulary_are_refused():
    from ffncalc.model import SpecError

    with pytest.raises(SpecError, match="one vocabulary"):
        from_data(
            {
                "vocab_size": 300,
                "d_model": 32,
                "n_layers": 1,
                "context_length": 16,
                "tie_embeddings": True,
                "attention": {"n_heads": 4},
                "ffn": {"kind": "dense", "d_ff": 64},
                "embedding": {"vocab_size": 260},
            },
            check=False,
        )


@pytest.mark.torch
@pytest.mark.parametrize("before", [True, False])
def test_opt_projections_equal_transformers_and_the_reference(tmp_path, before):
    """A small OPT with word_embed_proj_dim != hidden_size, pre- and post-norm, untied: parameters and FLOPs per
    component against OPTForCausalLM, and against the torch reference model."""
    from ffncalc.analysis.verify import verify

    small = {
        **OPT_350M,
        "vocab_size": 96,
        "hidden_size": 32,
        "word_embed_proj_dim": 24,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "ffn_dim": 64,
        "max_position_embeddings": 16,
        "do_layer_norm_before": before,
        "tie_word_embeddings": False,
    }
    path = write(tmp_path, small)
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    assert {"embed.project_in", "embed.project_out"} <= {ch.component for ch in report.checks}
    flops = hfcheck.check_flops(c, measured)
    assert flops and all(ch.ok for ch in flops), [ch for ch in flops if not ch.ok]
    label, spec = hf.load(path)
    assert verify(spec, model=label, seq_len=6).ok
