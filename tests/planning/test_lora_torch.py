"""A quantized base's bytes against bitsandbytes itself (real matrices quantized on the CPU), and the model types
whose MoE names peft converts against transformers' own table."""

import pytest

pytestmark = pytest.mark.torch

from pathlib import Path  # noqa: E402

import ffncalc  # noqa: E402
from ffncalc.analysis import quantized  # noqa: E402

CONFIGS = Path(__file__).resolve().parents[2] / "tests" / "hf_configs"


def held(*tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def bnb4(rows, cols, quant_type="nf4", double_quant=True):
    """What bitsandbytes holds for a bf16 weight quantized to 4 bits: packed codes, absmax, the code book, and with
    double quantization the nested absmax and the offset (the nested code book is one shared tensor)."""
    import torch
    from bitsandbytes import functional as F

    weight = torch.randn(rows, cols, dtype=torch.bfloat16)
    codes, state = F.quantize_4bit(weight, blocksize=64, quant_type=quant_type, compress_statistics=double_quant)
    parts = [codes, state.absmax, state.code]
    if double_quant:
        parts += [state.state2.absmax, state.offset.reshape(1)]
        assert state.state2.blocksize == 256
    return held(*parts)


@pytest.mark.parametrize("shape", [(3, 37), (64, 64), (100, 300), (1, 2048), (257, 129)])
@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
@pytest.mark.parametrize("double_quant", [True, False])
def test_bnb_4bit_storage(shape, quant_type, double_quant):
    rows, cols = shape
    assert quantized.bnb4_bytes(rows * cols, double_quant) == bnb4(rows, cols, quant_type, double_quant)


@pytest.mark.parametrize("shape", [(3, 37), (128, 256), (1000, 64)])
def test_llm_int8_storage(shape):
    """bitsandbytes' LLM.int8 weight (Int8Params: int8_vectorwise_quant): int8 values and an fp32 scale a row."""
    import torch
    from bitsandbytes import functional as F

    rows, cols = shape
    values, scales, _ = F.int8_vectorwise_quant(torch.randn(rows, cols, dtype=torch.float16))
    assert quantized.int8_bytes(rows, cols) == held(values, scales)


@pytest.mark.parametrize("name", ["llama3.2-1b", "qwen1.5-moe-a2.7b"])
def test_a_whole_base_in_nf4_is_bitsandbytes_storage(name):
    """A whole model in nf4, double quantized (Llama 3.2 1B; Qwen1.5-MoE, whose fused experts and router are no
    nn.Linear): every nn.Linear transformers builds but the head, each weight's storage as bitsandbytes quantizes a
    real matrix of its shape (one per distinct shape), and every other parameter in bf16 (a tied table once, the
    biases) — ffncalc's base bytes to the byte."""
    from collections import Counter

    import torch

    from ffncalc.analysis.hfcheck import instantiate
    from ffncalc.sources import hf

    model = instantiate(hf.read_config(CONFIGS / f"{name}.json"))
    head = model.get_output_embeddings()
    shapes = Counter(tuple(m.weight.shape) for m in model.modules() if type(m) is torch.nn.Linear and m is not head)
    linear = sum(n * bnb4(*shape) for shape, n in shapes.items())
    others = sum(p.numel() for p in model.parameters()) - sum(n * a * b for (a, b), n in shapes.items())
    stack = ffncalc.load(str(CONFIGS / f"{name}.json")).stack
    assert quantized.base_bytes(stack, "nf4").total == linear + 2 * others


def test_peft_converts_the_model_types_transformers_maps():
    """PEFT_MOE is transformers' conversion pattern of each model type onto mixtral's or qwen2_moe's names, with
    peft's own mixtral entry, for the types transformers has a checkpoint conversion for."""
    from transformers.conversion_mapping import _MODEL_TO_CONVERSION_PATTERN, get_checkpoint_conversion_mapping

    from ffncalc.analysis.adapters import PEFT_MOE

    table = {**_MODEL_TO_CONVERSION_PATTERN, "mixtral": "mixtral"}
    expected = {t: p for t, p in table.items() if p in ("mixtral", "qwen2_moe") and get_checkpoint_conversion_mapping(t) is not None}
    assert PEFT_MOE == expected
