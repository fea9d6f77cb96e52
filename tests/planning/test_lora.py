"""Fine-tuning with adapters: the trainable parameters against peft's own count (recorded by scripts/lora_truth.py in
tests/lora_truth.json) and against hand derivations, a 4-bit base's bytes by bitsandbytes' layout worked by hand, the
memory and FLOPs of a LoRA step, and what a wrong option or a case peft refuses answers."""

import json
from pathlib import Path

import pytest

import ffncalc
from ffncalc.analysis import quantized
from ffncalc.analysis.adapters import adapters
from ffncalc.analysis.plan import Tuning

ROOT = Path(__file__).resolve().parents[2]
TRUTH = json.loads((ROOT / "tests" / "lora_truth.json").read_text())
CONFIGS = ROOT / "tests" / "hf_configs"
CASES = [(name, case) for name, cases in TRUTH["configs"].items() for case in cases]


def config(name):
    return str(CONFIGS / f"{name}.json")


def asked(case):
    return dict(
        lora=TRUTH["rank"],
        lora_targets=case["targets"],
        dora=case["dora"] or None,
        lora_modules_to_save=case["modules_to_save"] or None,
    )


def test_the_truth_covers_dense_gqa_fused_moe_and_mla_with_every_target_set():
    names = set(TRUTH["configs"])
    assert {"llama3-8b", "phi-3-mini-4k", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"} <= names
    targets = {case["targets"] for _, case in CASES}
    assert {"all-linear", "q_proj,v_proj", "qkv_proj,o_proj,gate_up_proj,down_proj", "w1,w2,w3"} <= targets
    assert any(case["dora"] for _, case in CASES) and any(case["modules_to_save"] for _, case in CASES)
    assert any("refused" in case for _, case in CASES)


def flags(case):
    out = ["--lora", str(TRUTH["rank"]), "--lora-targets", case["targets"]]
    out += ["--dora"] if case["dora"] else []
    out += ["--lora-modules-to-save", case["modules_to_save"]] if case["modules_to_save"] else []
    return out


@pytest.mark.parametrize(
    "name, case",
    CASES,
    ids=lambda c: c if isinstance(c, str) else f"{c['targets']}-{c['dora']}-{c['modules_to_save']}",
)
def test_train_json_gives_peft_s_count(cli, name, case):
    """Every recorded config and target set, through the command line: `train --format json` gives peft's
    get_nb_trainable_parameters; where peft refuses, one line naming the option and exit 2."""
    code, out, err = cli("train", config(name), "--tokens", "1M", *flags(case), "-f", "json")
    if "refused" in case:
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("ffncalc: error: --"), err
    else:
        assert code == 0, err
        assert json.loads(out)["figures"]["trainable_params"]["value"] == case["trainable"]


def test_the_library_counts_the_same():
    for name, case in CASES:
        stack = ffncalc.load(config(name)).stack
        saved = tuple(filter(None, case["modules_to_save"].split(",")))
        tune = Tuning(TRUTH["rank"], tuple(case["targets"].split(",")), case["dora"], saved)
        if "refused" in case:
            with pytest.raises(ffncalc.InputError, match="^--"):
                adapters(stack, tune)
        else:
            assert adapters(stack, tune).trainable == case["trainable"]


def test_a_case_peft_refuses_is_one_line_and_exit_2(cli):
    code, out, err = cli("train", config("mixtral-8x7b"), "--tokens", "1M", "--lora", "16", "--lora-targets", "all-linear", "--dora")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--dora" in err and "ParamWrapper" in err and "Traceback" not in err
    code, _, err = cli("train", config("qwen3-30b-a3b"), "--tokens", "1M", "--lora", "16", "--lora-targets", "gate_proj")
    assert code == 2 and "gate_up_proj" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "args, named",
    [
        (["--lora", "0"], "--lora"),
        (["--lora", "8", "--base-dtype", "nf5"], "--base-dtype"),
        (["--dora"], "--dora"),
        (["--lora", "8", "--lora-targets", "nope_proj"], "--lora-targets"),
        (["--lora", "8", "--lora-modules-to-save", "norm"], "--lora-modules-to-save"),
        (["--lora", "8", "--tp", "2"], "--tp"),
        (["--lora", "8", "--lora-alpha", "nan"], "--lora-alpha"),
    ],
)
def test_bad_fine_tuning_options_name_the_option(cli, args, named):
    code, out, err = cli("train", "llama3-8b", "--tokens", "1M", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and named in err and "Traceback" not in err


def test_llama3_8b_by_hand():
    """Llama 3 8B (32 layers, d 4096, 8 KV heads of 128, d_ff 14336, vocabulary 128,256), rank 16, by hand: q and v
    are 16·(4096 + 4096) and 16·(4096 + 1024) a layer; all seven projections add k (as v), o (as q), gate and up
    16·(4096 + 14336) each and down the same; DoRA adds each module's outputs; lm_head saved adds its 128,256 × 4096."""
    stack = ffncalc.load(config("llama3-8b")).stack
    qv = 32 * 16 * ((4096 + 4096) + (4096 + 1024))
    assert adapters(stack, Tuning(16, ("q_proj", "v_proj"))).trainable == qv == 6_815_744
    every = 32 * 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024) + 3 * (4096 + 14336))
    assert adapters(stack, Tuning(16)).trainable == every
    magnitudes = 32 * (4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096)
    assert adapters(stack, Tuning(16, dora=True)).trainable == every + magnitudes
    assert adapters(stack, Tuning(16, ("q_proj", "v_proj"), modules_to_save=("lm_head",))).trainable == qv + 128_256 * 4096


def test_fused_experts_by_hand():
    """Qwen3-30B-A3B (48 layers, d 2048, 128 experts of d_ff 768): peft adapts the fused gate_up_proj at rank 2r over
    every expert (A of 2r·E × 2048, B of 1536 × 2r·E) and down_proj at rank r (A of r·E × 768, B of 2048 × r·E)."""
    stack = ffncalc.load(config("qwen3-30b-a3b")).stack
    r, e = 16, 128
    per_layer = 2 * r * e * (2048 + 1536) + r * e * (768 + 2048)
    assert adapters(stack, Tuning(r, ("gate_proj", "up_proj", "down_proj"))).trainable == 48 * per_layer


def test_nf4_bytes_by_hand():
    """A 4096 × 4096 weight in bitsandbytes nf4 with double quantization: 16,777,216 codes two a byte; 262,144 blocks
    of 64, an 8-bit absmax each; 1,024 blocks of 256 absmax, an fp32 absmax each; an fp32 offset; a 16-entry fp32
    code book. Without double quantization the 262,144 absmax are fp32. An odd count pads its last byte and block."""
    assert quantized.bnb4_bytes(4096 * 4096) == 8_388_608 + 262_144 + 4 * 1_024 + 4 + 64
    assert quantized.bnb4_bytes(4096 * 4096, double_quant=False) == 8_388_608 + 4 * 262_144 + 64
    assert quantized.bnb4_bytes(3 * 37) == 56 + 2 + 4 + 4 + 64  # 111 codes: 56 bytes, 2 blocks, 1 nested block
    assert quantized.int8_bytes(1024, 4096) == 1024 * 4096 + 4 * 1024
    # GPTQ/AWQ at group 128: per group of 128 inputs 64 bytes of codes, an fp16 scale and a 4-bit zero (4096 × 32
    # groups); fp8: a byte an element and an fp32 scale a 128 × 128 tile (32 × 32 tiles)
    assert quantized.matrix_bytes("gptq", 4096, 4096) == 8_388_608 + 2 * 131_072 + 131_072 // 2
    assert quantized.matrix_bytes("fp8", 4096, 4096) == 16_777_216 + 4 * 32 * 32


def test_a_quantized_base_keeps_embeddings_head_and_norms_in_bf16():
    """Llama 3 8B in nf4: every projection of the 32 layers quantized, the 2 × 128,256 × 4096 tables and the 65 norms
    of 4096 in bf16; fp32 where the rest is cast (prepare_model_for_kbit_training)."""
    stack = ffncalc.load(config("llama3-8b")).stack
    base = quantized.base_bytes(stack, "nf4")
    linears = {(4096, 4096): 64, (1024, 4096): 64, (14336, 4096): 64, (4096, 14336): 32}
    assert base.quantized == sum(n * quantized.bnb4_bytes(a * b) for (a, b), n in linears.items())
    rest = 2 * 128_256 * 4096 + 65 * 4096
    assert (base.rest_params, base.rest) == (rest, 2 * rest)
    assert quantized.base_bytes(stack, "nf4", kbit_fp32=True).rest == 4 * rest
    assert quantized.base_bytes(stack, "bf16").total == 2 * 8_030_261_248


def test_the_frozen_base_computes_no_weight_gradients():
    """A LoRA step runs the base forward and back for input gradients: about 4N a token (2N forward, 2N backward)
    where full training takes 6N, plus 6 FLOPs an adapter parameter."""
    full = ffncalc.train("llama3-8b", tokens="1M", seq_len=2048)
    lora = ffncalc.train("llama3-8b", tokens="1M", seq_len=2048, lora=16)
    adapter = lora["adapter_flops_per_token"].value
    assert adapter == 6 * lora["trainable_params"].value
    ratio = (lora["train_flops_per_token"].value - adapter) / full["train_flops_per_token"].value
    assert 4 / 6 <= ratio < 0.7  # the attention products' second operand keeps it a little above 4N/6N


def test_states_are_the_adapters_only():
    """Adam over fp32 adapters: 4 B a weight, 4 B a gradient, 8 B of moments, per trainable parameter; the base is
    frozen in bf16, 2 B a parameter; 8-bit Adam 2 B of moments."""
    plan = ffncalc.train("llama3-8b", tokens="1M", seq_len=2048, lora=16)
    n = plan["trainable_params"].value
    assert (plan["adapter_bytes_per_device"].value, plan["grad_bytes_per_device"].value) == (4 * n, 4 * n)
    assert plan["optimizer_bytes_per_device"].value == 8 * n
    assert plan["base_bytes_per_device"].value == 2 * 8_030_261_248
    paged = ffncalc.train("llama3-8b", tokens="1M", seq_len=2048, lora=16, optimizer="paged_adam8bit")
    assert paged["optimizer_bytes_per_device"].value == 2 * n


def test_fsdp_shards_the_base_and_the_states():
    one = ffncalc.train("llama3-70b", tokens="1M", seq_len=512, lora=16, base_dtype="nf4", recompute="full")
    two = ffncalc.train("llama3-70b", tokens="1M", seq_len=512, lora=16, base_dtype="nf4", recompute="full", gpus=2, zero=3)
    whole = one["base_bytes_per_device"].value
    assert -(-whole // 2) < two["base_bytes_per_device"].value < whole
    assert two["optimizer_bytes_per_device"].value == -(-one["optimizer_bytes_per_device"].value // 2)


def test_fit_answers_with_the_fewest_devices():
    """fit --lora: yes or no, on the fewest devices that hold the step; one fewer does not."""
    plan = ffncalc.fit("llama3-70b", hardware="rtx4090", lora=16, base_dtype="nf4")
    gpus = plan.inputs["gpus"]
    assert gpus > 1 and plan["free_bytes_per_device"].value >= 0 and plan.notes[0].startswith("fits")
    fewer = ffncalc.train(
        "llama3-70b",
        tokens="1M",
        hardware="rtx4090",
        seq_len=2048,
        recompute="full",
        lora=16,
        base_dtype="nf4",
        gpus=gpus - 1,
        zero=3 if gpus > 2 else 0,
    )
    assert fewer["free_bytes_per_device"].value < 0
    small = ffncalc.fit("llama3-8b", hardware="rtx4090", lora=16, base_dtype="nf4")
    assert small.inputs["gpus"] == 1 and small.notes[0].startswith("fits on 1 × rtx4090")


def test_without_lora_nothing_changes():
    """No --lora: the training plan has none of the fine-tuning figures."""
    plan = ffncalc.train("llama3-8b", tokens="1M")
    assert "trainable_params" not in plan and "params_per_device" in plan


def test_count_lists_the_adapters_and_validates(cli):
    """count --lora: each adapted module name in each run of layers, summing to peft's count, in a record its schema
    declares."""
    import jsonschema

    from ffncalc.output.schemas import schema

    case = next(c for c in TRUTH["configs"]["deepseek-v3"] if c["targets"] == "all-linear" and not c["dora"])
    code, out, _ = cli("count", config("deepseek-v3"), "--lora", str(TRUTH["rank"]), "-f", "json")
    assert code == 0
    record = json.loads(out)
    jsonschema.validate(record, schema("count"))
    found = record["adapters"]
    assert found["trainable_params"] == case["trainable"]
    assert sum(m["params"] + m["magnitude"] for m in found["modules"]) == case["trainable"]
    experts = next(m for m in found["modules"] if m["module"] == "gate_up_proj")
    assert (experts["rank"], experts["instances"], experts["layers"]) == (2 * TRUTH["rank"], 58 * 256, [3, 61])
    assert "adapters" not in json.loads(cli("count", config("deepseek-v3"), "-f", "json")[1])


def test_train_and_fit_records_validate(cli):
    import jsonschema

    from ffncalc.output.schemas import schema

    code, out, _ = cli(
        "train", "llama3-8b", "--tokens", "1M", "--lora", "8", "--base-dtype", "nf4", "--hardware", "rtx4090", "-f", "json"
    )
    assert code == 0
    jsonschema.validate(json.loads(out), schema("train"))
    code, out, _ = cli("fit", "llama3-8b", "--hardware", "rtx4090", "--lora", "8", "--dora", "-f", "json")
    assert code == 0
    jsonschema.validate(json.loads(out), schema("fit"))


def test_fit_on_the_devices_given():
    """fit --lora --gpus N: on N devices (FSDP), no search; the fewest found is the first count that fits."""
    fewest = ffncalc.fit("llama3-70b", hardware="rtx4090", lora=16, base_dtype="nf4", context=512).inputs["gpus"]
    below = ffncalc.fit("llama3-70b", hardware="rtx4090", lora=16, base_dtype="nf4", context=512, gpus=fewest - 1)
    assert below.inputs["gpus"] == fewest - 1 and below["free_bytes_per_device"].value < 0
    assert below.notes[0].startswith(f"does NOT fit on {fewest - 1} × rtx4090")


def test_time_is_the_flops_at_the_peak_times_mfu():
    """H100 SXM's bf16 peak 989.4 TFLOP/s (its datasheet) × the default MFU 0.4, on two devices; a goodput of one
    half doubles the wall-clock."""
    plan = ffncalc.train("llama3-8b", tokens="1M", seq_len=2048, lora=8, hardware="h100-sxm", gpus=2)
    seconds = plan["train_flops"].value / (989.4e12 * 0.4 * 2)
    assert plan["wall_clock_hours"].value == pytest.approx(seconds / 3600)
    assert plan["gpu_hours"].value == pytest.approx(2 * seconds / 3600)
    half = ffncalc.train("llama3-8b", tokens="1M", seq_len=2048, lora=8, hardware="h100-sxm", gpus=2, goodput=0.5)
    assert half["wall_clock_hours"].value == pytest.approx(2 * seconds / 3600)
    with pytest.raises(ffncalc.InputError, match="^--framework"):
        ffncalc.train("llama3-8b", tokens="1M", lora=8, framework="fsdp2")


def test_linear_weights_beside_the_layers_are_refused_not_skipped(cli):
    """BERT's masked-LM head has a dense layer of 768 × 768 beside its layers' blocks (589,824 parameters), which
    the adapters' count does not walk: refused, one line, rather than a count that leaves it out."""
    code, out, err = cli("count", str(CONFIGS / "bert-base-uncased.json"), "--lora", "8")
    assert code == 2 and out == "" and "589,824" in err and err.count("\n") == 1


def test_a_spec_states_its_transformers_type():
    """A spec file with model_type: qwen3_moe takes peft's names and conversion, as the config.json does: the
    preset's shape with the type stated gives peft's recorded counts; without it, the experts stay frozen."""
    import yaml

    data = yaml.safe_load((ROOT / "presets" / "qwen3-30b-a3b.yaml").read_text())
    typed = ffncalc.Model.from_dict({**data, "model_type": "qwen3_moe"}).stack
    plain = ffncalc.Model.from_dict({k: v for k, v in data.items() if k != "model_type"}).stack
    for case in TRUTH["configs"]["qwen3-30b-a3b"]:
        if case["targets"] in ("all-linear", "gate_proj,up_proj,down_proj") and not case["dora"]:
            assert (
                adapters(
                    typed,
                    Tuning(TRUTH["rank"], tuple(case["targets"].split(","))),
                ).trainable
                == case["trainable"]
            )
    attention = next(c for c in TRUTH["configs"]["qwen3-30b-a3b"] if c["targets"] == "q_proj,k_proj,v_proj,o_proj" and not c["dora"])
    assert adapters(plain, Tuning(TRUTH["rank"])).trainable == attention["trainable"]


@pytest.mark.parametrize(
    ("preset", "config"), [("qwen3-30b-a3b", "qwen3-30b-a3b"), ("mixtral-8x7b", "mixtral-8x7b"), ("deepseek-v3", "deepseek-v3")]
)
def test_moe_presets_train_what_their_config_trains(preset, config):
    """A mixture's preset states the transformers model_type it is built as, so its adapters are peft's as for its
    config.json (whose count tests/lora_truth.json holds against peft): the experts converted where peft converts them."""
    root = Path(__file__).resolve().parents[1] / "hf_configs"
    ours = ffncalc.train(preset, tokens=10**6, gpus=8, lora=16).figures["trainable_params"].value
    theirs = ffncalc.train(str(root / f"{config}.json"), tokens=10**6, gpus=8, lora=16).figures["trainable_params"].value
    assert ours == theirs
