"""π0 (PI0ForConditionalGeneration, transformers 5.23): its PaliGemma read as the paligemma wrapper's and its Gemma action
expert with the action and time projections (parts/action_expert.py), held against the whole class's parameters
(tests/hf_whole, scripts/hf_whole.py) and its forward's FLOPs as FlopCounterMode counted them built small on the CPU
(the record's forward_flops), and against hand derivations from modeling_pi0.py."""

import json
from pathlib import Path

import pytest

import ffncalc
from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.errors import InputError
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "pi0.json"
PROJECTIONS = ("state_proj", "action_in_proj", "action_time_mlp_in", "action_time_mlp_out", "action_out_proj")


def truth() -> dict:
    return json.loads((HERE / "truth" / "pi0.json").read_text())


def recorded(prefixes: tuple[str, ...]) -> int:
    return sum(n for name, n in expanded(truth()["params"], 2) if name.startswith(prefixes))


def counted(model, prefix: str) -> int:
    return sum(t.numel * t.stored_count for t in terms(model, 8) if not t.tied and t.component.startswith(prefix))


def test_action_expert_and_projections_by_hand():
    """The test config's dit_config (PI0Config's default dit: h 1,024, 18 layers, 8 heads of 256, one KV head,
    intermediate 4,096) and max_action_dim = max_state_dim = 32, its vocabulary the language model's 257,152."""
    h, layers, heads, kv, hd, ff, vocab, a, s = 1024, 18, 8, 1, 256, 4096, 257152, 32, 32
    # GemmaDecoderLayer: q and o (h × heads·hd), k and v (h × kv·hd), no biases; GemmaMLP gate, up, down; two RMSNorms
    layer = 2 * h * heads * hd + 2 * h * kv * hd + 3 * h * ff + 2 * h
    assert layer == 17_303_552
    dit = vocab * h + layers * layer + h  # GemmaModel: embed_tokens (built, never run), the layers, the final norm
    assert dit == 263_323_648 + 311_463_936 + 1024
    # PI0ActionTimeEmbedding: state_proj, action_in_proj, action_time_mlp_in (2h → h), action_time_mlp_out; biases
    embedding = (s * h + h) + (a * h + h) + (2 * h * h + h) + (h * h + h)
    out = h * a + a  # action_out_proj
    assert embedding + out == 3_248_160
    _, model = hf.load(CONFIG)
    assert counted(model, "action_expert.") == dit + embedding + out == 578_036_768
    assert recorded(("model.dit.", "embed_action_time.", "action_out_proj.")) == dit + embedding + out
    # the rest is PaliGemma's (PaliGemmaModel: no LM head) and the whole is the class's
    assert tally(model).params - (dit + embedding + out) == recorded(("model.vlm.",))
    assert tally(model).params == recorded(("",)) == 3_501_372_176


def test_pi0_builds_no_lm_head():
    """PI0ForConditionalGeneration computes no logits: the head holds no parameters and reads no row."""
    _, model = hf.load(CONFIG)
    head = [t for t in terms(model, 64) if t.part == "head"]
    assert head and all(t.tied for t in head)
    rows = [r for r in tally(model, seq_len=64).rows if r.part == "head"]
    assert rows and sum(r.flops for r in rows) == 0


def small(tmp_path) -> Path:
    record = truth()["forward_flops"]
    from ffncalc.analysis.hfpi0 import PI0_REDUCED, reduced_pi0

    assert record["reduced"] == json.loads(json.dumps(PI0_REDUCED))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(reduced_pi0(json.loads(CONFIG.read_text()))))
    return path


def by_part(path: Path, prefix: int) -> dict[str, int]:
    _, model = hf.load(path)
    from ffncalc.api.commands import with_inputs
    from ffncalc.api.models import Model

    stack = with_inputs(Model("pi0", model), images=1, image_size=28).stack
    out = {"vision": 0, "text": 0, "expert": 0, "projections": 0}
    for r in tally(stack, seq_len=prefix).rows:
        name = r.component
        part = (
            "vision"
            if name.startswith("vision.")
            else "expert"
            if name.startswith("action_expert.") and not name.endswith(PROJECTIONS)
            else "projections"
            if name.startswith("action_expert.")
            else "text"
        )
        out[part] += r.flops * prefix
    return out


def test_forward_flops_equal_flopcountermode(tmp_path):
    """One forward of the class built small (the record's reduced), at two prefix lengths: PaliGemma's tower and
    projector, its language model over the prefix, the expert over the state and the chunk, and the projections, each
    as FlopCounterMode counted it, and so the total."""
    path = small(tmp_path)
    runs = truth()["forward_flops"]["runs"]
    assert [r["prefix"] for r in runs] == [9, 14]
    for run in runs:
        assert by_part(path, run["prefix"]) == run["parts"]
        total = ffncalc.count(str(path), seq_len=run["prefix"], images=1, image_size=28).to_dict()["totals"]["forward_flops"]
        assert total == run["total"]


def test_expert_and_projection_flops_by_hand(tmp_path):
    """The reduced config's expert (h 32, 2 layers, 2 heads of 16, one KV head, intermediate 80) over T = chunk_size + 1
    = 7 tokens, each query meeting the prefix's s keys and the chunk's 7; the state's projection once, the action
    projections and time MLP on each of the 6 actions, action_out_proj on each."""
    path = small(tmp_path)
    h, layers, heads, kv, hd, ff, chunk, a, s_dim = 32, 2, 2, 1, 16, 80, 6, 8, 12
    t = chunk + 1
    for prefix in (9, 14):
        linears = 2 * h * heads * hd + 2 * h * kv * hd + 3 * h * ff  # multiply-adds a token and layer
        attention = 2 * heads * (prefix + t) * hd  # QKᵀ and AV a query and layer
        expert = 2 * layers * t * (linears + attention)
        projections = 2 * (s_dim * h + chunk * (a * h + 2 * h * h + h * h + h * a))
        found = by_part(path, prefix)
        assert (found["expert"], found["projections"]) == (expert, projections)
    assert expert == 338_688 and projections == 43_776


def test_a_vlm_config_not_an_object_is_one_line(tmp_path):
    data = json.loads(CONFIG.read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "vlm_config": 3}))
    with pytest.raises(InputError, match="vlm_config: expected an object"):
        hf.load(path)


def test_cli_names_the_field_and_exits_2(cli, tmp_path):
    data = json.loads(CONFIG.read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "dit_config": [1]}))
    code, out, err = cli("count", str(path))
    assert code == 2
    assert "dit_config: expected an object" in err and len(err.strip().splitlines()) == 1 and not out


def expert_part(model):
    (part,) = [p for p in model.parts if p.key == "action_expert"]
    return part


def test_expert_forward_flops_equal_flopcountermode_and_the_note(tmp_path):
    """The expert's and the projections' FLOPs of one forward (ActionExpert.forward_flops) as FlopCounterMode counted
    them at both prefixes, and the note's linear form in the prefix's length."""
    _, model = hf.load(small(tmp_path))
    part = expert_part(model)
    for run in truth()["forward_flops"]["runs"]:
        assert part.forward_flops(model, run["prefix"]) == run["parts"]["expert"] + run["parts"]["projections"]
    assert "357,376 + 1,792·s forward FLOPs" in part.note(model)


def test_default_expert_forward_by_hand():
    """PI0Config's default expert (the test config) at a prefix of s tokens: 51 tokens (the state and 50 actions) through
    18 layers of 17,301,504 multiply-adds a token, their QKᵀ and AV over s + 51 keys (8 heads of 256), and the
    projections (state once; action_in_proj, the time MLP and action_out_proj on each of the 50 actions)."""
    h, layers, heads, hd, t, chunk = 1024, 18, 8, 256, 51, 50
    linears = 2 * h * heads * hd + 2 * h * hd + 3 * h * 4096
    assert linears == 17_301_504
    projections = 2 * (32 * h + chunk * (32 * h + 2 * h * h + h * h + h * 32))
    _, model = hf.load(CONFIG)
    part = expert_part(model)
    for s in (1, 256, 1000):
        expected = 2 * layers * t * linears + 2 * 2 * layers * t * heads * (s + t) * hd + projections
        assert part.forward_flops(model, s) == expected
    assert 2 * layers * t * linears + 2 * 2 * layers * t * heads * t * hd + projections == 32_470_286_336
    assert 2 * 2 * layers * t * heads * hd == 7_520_256
    assert "32,470,286,336 + 7,520,256·s forward FLOPs" in part.note(model)


def test_a_bare_config_counts_as_the_class_defaults(tmp_path):
    """A config.json stating only its model_type: PI0Config's default vlm_config and dit_config (its
    sub_configs_defaults), as the recorded class builds them."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "pi0"}))
    _, model = hf.load(path)
    assert tally(model).params == recorded(("",))


@pytest.mark.torch
def test_stated_sub_configs_take_their_own_classes_defaults(tmp_path):
    """A dit_config and a vlm_config stated in part take GemmaConfig's and PaliGemmaConfig's defaults for the rest (not
    PI0Config's sub-config defaults: transformers builds 28 Gemma layers here), as the class built on the meta device."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    data = {
        "model_type": "pi0",
        "dit_config": {"model_type": "gemma", "hidden_size": 512},
        "vlm_config": {"model_type": "paligemma", "projection_dim": 2048},
        "chunk_size": 10,
        "max_action_dim": 14,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    _, model = hf.load(path)
    built = instantiate_whole(data)
    assert tally(model).params == sum(p.numel() for p in built.parameters())
    assert expert_part(model).layers.n_layers == built.config.dit_config.num_hidden_layers == 28


def test_expert_components_equal_transformers_by_name():
    """Every parameter of the class beside its PaliGemma, named by its module (a checkpoint's names are the same), in
    the action expert's component ours counts, equal per component; none of PaliGemma's is taken for the expert's."""
    from ffncalc.sources.hf.towers import component

    theirs: dict[str, int] = {}
    for name, n in expanded(truth()["params"], 2):
        found = component(name, "vision")
        assert (found or "").startswith("action_expert.") == (not name.startswith("model.vlm.")), name
        if not name.startswith("model.vlm."):
            theirs[found] = theirs.get(found, 0) + n
    _, model = hf.load(CONFIG)
    mine: dict[str, int] = {}
    for t in terms(model, 8):
        if t.component.startswith("action_expert.") and t.numel:
            mine[t.component] = mine.get(t.component, 0) + t.numel * t.stored_count
    assert mine == theirs
    assert theirs["action_expert.attn.q"] == 18 * 1024 * 2048 and theirs["action_expert.norms"] == 18 * 2 * 1024
