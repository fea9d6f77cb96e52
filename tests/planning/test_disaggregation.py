"""Prefill-decode disaggregation (ffncalc/analysis/disaggregation.py): the prompts prefilled on devices of their own,
each sequence's cache handed to the decode instance over the network, and the balance of the two instances."""

from pathlib import Path

import pytest

from ffncalc.analysis import hardware, inference
from ffncalc.analysis.disaggregation import prefill_placement
from ffncalc.analysis.plan import Device, Formats, InferenceRun, Placement
from ffncalc.sources import presets

PRESETS = Path(__file__).resolve().parents[2] / "presets"


def spec(name):
    return presets.load(str(PRESETS / f"{name}.yaml"))[1]


def ids(figures):
    return {f.id: f.value for f in figures}


def test_llama3_70b_prefilled_on_four_h100s_and_decoded_on_eight():
    """Llama 3 70B, 64 prompts of 4,096 tokens: the prefill instance (4 H100s at tp 4) is planned as the same run on
    its own 4 devices; a sequence's cache of its prompt is 80 layers × K and V × 8 KV heads × 128 × 2 bytes × 4,096
    tokens, 1,342,177,280 bytes; the batch's 64 cross the 4 prefill devices' 50 GB/s NICs at once; a decode device
    asks for 4,096 prompt tokens for every 512 it generates."""
    s, h100 = spec("llama3-70b"), hardware.by_key("h100-sxm")
    run = InferenceRun(4096, 512, batch=64, chunk=8192)
    decode = Placement(gpus=8, tp=4)
    split = inference.plan_inference(s, "x", run, Formats(), decode, Device(h100), prefill_on=prefill_placement(decode, 4, None, 1))
    f = ids(split.figures)
    alone = ids(inference.plan_inference(s, "x", run, Formats(), Placement(gpus=4), Device(h100)).figures)
    assert f["disaggregated_prefill_s"] == alone["expected_prefill_s"]
    assert f["disaggregated_roofline_prefill_s"] == alone["roofline_prefill_s"]
    cache = 80 * 2 * 8 * 128 * 2 * 4096
    assert cache == 1_342_177_280
    assert f["kv_transfer_bytes"] == 64 * cache
    assert f["kv_transfer_s"] == pytest.approx(64 * cache / (4 * 50e9), rel=1e-12)
    prefill_rate = 64 * 4096 / alone["expected_prefill_s"] / 4
    assert f["prefill_tokens_per_s_per_gpu"] == pytest.approx(prefill_rate, rel=1e-12)
    assert f["prefill_gpus_per_decode_gpu"] == pytest.approx(
        f["expected_decode_tokens_per_s_per_gpu"] * 4096 / 512 / prefill_rate, rel=1e-12
    )
    # one request: its 4,096 tokens in one forward of the 8,192-token chunk (32 of them for the batch), its own
    # cache over the 4 devices of its prefill copy, then a decode step
    one_forward = alone["expected_prefill_s"] / 32
    assert f["disaggregated_ttft_s"] == pytest.approx(one_forward + cache / (4 * 50e9) + f["expected_decode_step_s"], rel=1e-12)
    # the decode instance's own figures are those of the run on its 8 devices
    plain = ids(inference.plan_inference(s, "x", run, Formats(), decode, Device(h100)).figures)
    assert f["expected_decode_step_s"] == plain["expected_decode_step_s"]
    assert any("prefill-decode disaggregation" in n for n in split.notes)


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--prefill-tp", "2"], "--prefill-tp and --prefill-ep lay out the prefill instance that --prefill-gpus names"),
        (
            ["--prefill-gpus", "3", "--prefill-tp", "2"],
            "the prefill instance (--prefill-gpus 3): --gpus 3 is not a multiple of --tp 2",
        ),
    ],
)
def test_impossible_prefill_instances(cli, args, expected):
    code, out, err = cli("infer", "llama3-70b", "--prompt", "100", "--generate", "10", "--hardware", "h100-sxm", "--gpus", "4", *args)
    assert code == 2 and out == "" and expected in err and err.count("\n") == 1


def test_a_prefill_instance_needs_a_device(cli):
    code, out, err = cli("infer", "llama3-8b", "--prompt", "100", "--generate", "10", "--prefill-gpus", "2")
    assert code == 2 and out == "" and "--hardware" in err and err.count("\n") == 1
