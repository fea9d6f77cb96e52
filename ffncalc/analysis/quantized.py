"""A frozen base model in the format it is fine-tuned in: bf16, fp16, fp8, bitsandbytes' LLM.int8 and 4-bit (nf4,
fp4) storage, exact to the byte, and GPTQ/AWQ through formats.py. Pure arithmetic; no torch.

Which modules bitsandbytes quantizes: transformers' replace_with_bnb_linear (transformers/integrations/
bitsandbytes.py) swaps every module whose type is exactly nn.Linear (or Conv1D) for bnb's Linear4bit or
Linear8bitLt, except the output head (quantizers/base.py get_modules_to_not_convert → get_keys_to_not_convert).
Embeddings, norms, biases, the routers (their own modules) and, in transformers 5, a mixture's routed experts (fused
3-D parameters, not nn.Linear) stay in the compute dtype (bf16); prepare_model_for_kbit_training casts every fp16 or
bf16 parameter that is not a Params4bit to fp32 (peft 0.21.2 peft/utils/other.py, lines 205–209), ``kbit_fp32``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..blocks import Linear
from ..errors import InputError
from ..model.stack import Model
from .count import tally

# bitsandbytes 4-bit, as of bitsandbytes 0.50.2 (functional.py quantize_4bit, lines 918–951: default blocksize 64;
# the packing in backends/default/ops.py _quantize_4bit_impl, lines 235–258: `packed = (q8[::2] << 4) | q8[1::2]`,
# two values a byte, an odd count padded; a last partial block gets its own absmax, line 248): ⌈n/2⌉ bytes of codes
# and one absmax per block of 64. Without double quantization the absmax are fp32. With it (compress_statistics=True,
# transformers' bnb_4bit_use_double_quant; functional.py lines 938–951): `offset = _absmax.mean()`,
# `quantize_blockwise(_absmax - offset, blocksize=256)`: one uint8 per absmax, one fp32 absmax per block of 256 of
# them (state2.absmax), and the fp32 offset. Each weight's QuantState also holds its 16-entry fp32 code book
# (get_4bit_type, line 936: a new tensor each call, 64 bytes); the 256-entry dynamic map of the nested state is one
# tensor per device, shared (functional.py lines 654–656, name2qmap["dynamic"]), and not counted. The tests quantize
# real matrices with bitsandbytes on the CPU and compare (tests/planning/test_lora_torch.py).
BNB4_BLOCK = 64
BNB4_NESTED_BLOCK = 256
BNB4_CODE_BYTES = 16 * 4
# LLM.int8 (bitsandbytes 0.50.2 nn/modules.py Int8Params._quantize, line 743 → functional.int8_vectorwise_quant):
# the int8 weight (CB) and one fp32 scale per output row (SCB, its absmax).
INT8_ROW_SCALE = 4

BASE_DTYPES = ("bf16", "fp16", "fp32", "fp8", "int8", "nf4", "fp4", "gptq", "awq")
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


def bnb4_bytes(n: int, double_quant: bool = True) -> int:
    """Bytes bitsandbytes holds for a 4-bit (nf4 or fp4) weight of ``n`` elements: packed codes, block absmax
    (fp32, or 8-bit with their own fp32 absmax per 256 and an fp32 offset), and the weight's code book."""
    blocks = -(-n // BNB4_BLOCK)
    stats = blocks + 4 * -(-blocks // BNB4_NESTED_BLOCK) + 4 if double_quant else 4 * blocks
    return -(-n // 2) + stats + BNB4_CODE_BYTES


def int8_bytes(rows: int, cols: int) -> int:
    """Bytes of an LLM.int8 weight of ``rows`` outputs × ``cols`` inputs: int8 values and an fp32 scale a row."""
    return rows * cols + INT8_ROW_SCALE * rows


def matrix_bytes(dtype: str, rows: int, cols: int, double_quant: bool = True) -> int:
    """Bytes of one quantized linear weight in ``dtype``."""
    from .formats import FORMATS

    if dtype in ("nf4", "fp4"):
        return bnb4_bytes(rows * cols, double_quant)
    if dtype == "int8":
        return int8_bytes(rows, cols)
    if dtype in ("gptq", "awq"):
        return FORMATS["int4"].matrix_bytes(rows, cols)
    if dtype == "fp8":
        return FORMATS["fp8"].matrix_bytes(rows, cols)
    return ELEMENT_BYTES[dtype] * rows * cols


def linear_bytes(lin: Linear, dtype: str, double_quant: bool = True, kbit_fp32: bool = False) -> int:
    """Bytes of one instance of a block's linear weight in a base held in ``dtype``: quantized where bitsandbytes (or
    the format) quantizes an nn.Linear, else in the rest's dtype (a router, a fused expert)."""
    if dtype in ELEMENT_BYTES:
        return ELEMENT_BYTES[dtype] * lin.d_in * lin.d_out
    if lin.kind == "linear":
        return matrix_bytes(dtype, lin.d_out, lin.d_in, double_quant)
    return ELEMENT_BYTES["fp32" if kbit_fp32 else "bf16"] * lin.d_in * lin.d_out


@dataclass(frozen=True)
class BaseBytes:
    """A frozen base model's bytes: its quantized linear weights, and the rest (kept in ``rest_dtype``)."""

    quantized: int  # bytes of the quantized linear weights
    quantized_params: int  # their parameters
    rest: int  # bytes of everything else
    rest_params: int
    rest_dtype: str

    @property
    def total(self) -> int:
        return self.quantized + self.rest


def base_bytes(spec: Model, dtype: str, double_quant: bool = True, kbit_fp32: bool = False) -> BaseBytes:
    """The base model's bytes in ``dtype``: each nn.Linear of its layers (Block.linears, kind "linear") quantized
    one weight at a time, the rest (embeddings, head, norms, biases, routers, fused experts) in bf16, or fp32 where
    ``kbit_fp32`` (prepare_model_for_kbit_training) casts them. 16-bit and fp32 bases hold everything in their dtype."""
    if dtype not in BASE_DTYPES:
        raise InputError(f"--base-dtype {dtype}: choose from {', '.join(BASE_DTYPES)}")
    total = tally(spec).params
    if dtype in ELEMENT_BYTES:
        return BaseBytes(0, 0, ELEMENT_BYTES[dtype] * total, total, dtype)
    quantized = params = 0
    for run in spec.runs():
        for _, block in run.layer.blocks():
            for lin in block.linears(spec):
                if lin.kind == "linear":
                    quantized += run.n * lin.copies * matrix_bytes(dtype, lin.d_out, lin.d_in, double_quant)
                    params += run.n * lin.copies * lin.d_in * lin.d_out
    rest_dtype = "fp32" if kbit_fp32 else "bf16"
    return BaseBytes(quantized, params, ELEMENT_BYTES[rest_dtype] * (total - params), total - params, rest_dtype)
