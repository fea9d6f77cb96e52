"""Stored tensors -> logical parameters. A quantized checkpoint stores a weight packed (several low-bit
values to a byte or an int32) beside the scales, zero-points and indices that decode it; the logical
parameter count is the weight's elements before packing, and the decoding tensors are never parameters.

Layouts read, from the names and dtypes the headers give (never from tensor data):

- GPTQ and AWQ: ``.qweight`` int32, 32/bits values to each (bits from quantization_config, default 4);
  ``.qzeros`` (packed the same way), ``.scales`` and ``.g_idx`` decode it.
- MXFP4 as gpt-oss ships it: ``*_blocks`` uint8, two 4-bit values a byte, and ``*_scales`` (one e8m0 byte
  per 32 values).
- NVFP4 (ModelOpt; compressed-tensors' ``weight_packed``): uint8, two 4-bit values a byte, with fp8
  ``weight_scale`` per 16 values and float32 ``weight_scale_2`` / ``input_scale`` / global scales.
- fp8 with ``weight_scale_inv`` block scales (DeepSeek-V3) or per-tensor ``weight_scale``: one value a byte.
- bitsandbytes 4-bit: ``weight`` uint8, two values a byte, with ``weight.absmax``, ``weight.quant_map``,
  ``weight.nested_*`` and ``weight.quant_state.bitsandbytes__nf4|fp4``; 8-bit: int8 ``weight`` with ``SCB``.
- GGUF: the ggml block types, whose bytes per block ``gguf.py`` holds; the elements are the dims.
"""

from __future__ import annotations

from typing import NamedTuple

from ...errors import InputError
from .safetensors import DTYPE_BITS
from .tensors import Tensor

PARAM, SCALE, ZERO, INDEX, STATE = "param", "scale", "zero-point", "g_idx", "quant state"

# suffix -> role, for tensors that decode the weight beside them (``<module>.weight`` or ``.weight_packed``)
_BESIDE_WEIGHT = {
    ".weight_scale_inv": SCALE,
    ".weight_scale": SCALE,
    ".weight_scale_2": SCALE,
    ".input_scale": SCALE,
    ".weight_global_scale": SCALE,
    ".input_global_scale": SCALE,
    ".weight_zero_point": ZERO,
    ".weight_g_idx": INDEX,
    ".weight_shape": STATE,
    ".k_scale": SCALE,
    ".v_scale": SCALE,
    ".SCB": SCALE,
    ".weight_format": STATE,
}
_BNB = {".absmax": SCALE, ".quant_map": STATE, ".nested_absmax": SCALE, ".nested_quant_map": STATE}
_GPTQ = {".qzeros": ZERO, ".scales": SCALE, ".g_idx": INDEX}


class Stored(NamedTuple):
    """A tensor as it counts: ``base`` the parameter it is or serves, by the name transformers gives it (a
    packed weight's unpacked name, a scale's weight); ``role`` param or one of the decoding roles; ``params``
    its logical elements (0 unless a param); ``storage`` how it is stored, in words."""

    tensor: Tensor
    base: str
    role: str
    params: int
    storage: str


def _packed(t: Tensor, bits: int, method: str) -> tuple[int, str]:
    width = DTYPE_BITS.get(t.dtype, 8)
    if (t.numel * width) % bits:
        raise InputError(f"{t.file}: tensor {t.name!r}: {t.numel:,} {t.dtype} values do not unpack into whole {bits}-bit values")
    per = width // bits if width % bits == 0 else width / bits
    return t.numel * width // bits, f"{method}: {bits}-bit, {per:g} per {t.dtype}"


def interpret(tensors: list[Tensor] | tuple[Tensor, ...], quantization: dict | None) -> tuple[list[Stored], list[str]]:
    """Each tensor with its logical parameters and role; and notes on what was assumed."""
    q = quantization or {}
    method = str(q.get("quant_method") or "").lower()
    names = {t.name: t for t in tensors}
    notes: list[str] = []
    bits = q.get("bits", q.get("w_bit"))
    if bits is None and any(n.endswith(".qweight") for n in names):
        notes.append("packed .qweight read as 4-bit: no quantization_config states bits")
    bits = bits if isinstance(bits, int) and bits > 0 else 4

    def has_weight(base: str) -> bool:
        return base + ".weight" in names or base + ".weight_packed" in names

    out = []
    append = out.append
    for t in tensors:
        n = t.name
        stem, dot, last = n.rpartition(".")
        if (last == "weight" or last == "bias") and t.dtype != "U8":  # most tensors: a plain parameter
            append(Stored(t, n, PARAM, t.numel, t.dtype))
            continue
        if n.endswith(".qweight"):
            params, storage = _packed(t, bits, method.upper() if method in ("gptq", "awq") else "GPTQ/AWQ")
            out.append(Stored(t, n[: -len(".qweight")] + ".weight", PARAM, params, storage))
            continue
        if dot and "." + last in _GPTQ and stem + ".qweight" in names:
            out.append(Stored(t, stem + ".weight", _GPTQ["." + last], 0, t.dtype))
            continue
        if n.endswith("_blocks") and n[: -len("_blocks")] + "_scales" in names and t.dtype == "U8":
            out.append(Stored(t, n[: -len("_blocks")], PARAM, 2 * t.numel, "MXFP4: 2 per U8"))
            continue
        if n.endswith("_scales") and n[: -len("_scales")] + "_blocks" in names:
            out.append(Stored(t, n[: -len("_scales")], SCALE, 0, t.dtype))
            continue
        role = _BESIDE_WEIGHT.get("." + last) if dot else None
        if role and has_weight(stem):
            out.append(Stored(t, stem + ".weight", role, 0, t.dtype))
            continue
        head, sep, tail = n.partition(".weight.") if ".weight." in n else (n, "", "")
        if sep and (("." + tail) in _BNB or tail.startswith("quant_state.")) and head + ".weight" in names:
            out.append(Stored(t, head + ".weight", _BNB.get("." + tail, STATE), 0, t.dtype))
            continue
        if n.endswith(".weight") and t.dtype == "U8":
            base = n[: -len(".weight")]
            scale = names.get(base + ".weight_scale")
            if n + ".absmax" in names or n + ".quant_map" in names:
                out.append(Stored(t, n, PARAM, 2 * t.numel, "bitsandbytes 4-bit: 2 per U8"))
                continue
            if scale is not None and scale.dtype == "F8_E4M3":
                out.append(Stored(t, n, PARAM, 2 * t.numel, "NVFP4: 2 per U8"))
                continue
        if n.endswith(".weight_packed"):
            base = n[: -len("_packed")]
            if t.dtype == "U8":
                out.append(Stored(t, base, PARAM, 2 * t.numel, "FP4: 2 per U8"))
            else:
                cfg_bits = _group_bits(q) or bits
                params, storage = _packed(t, cfg_bits, "compressed-tensors")
                out.append(Stored(t, base, PARAM, params, storage))
            continue
        out.append(Stored(t, n, PARAM, t.numel, t.dtype))
    return out, notes


def _group_bits(q: dict) -> int | None:
    """compressed-tensors: config_groups.*.weights.num_bits, where every group agrees."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict):
        return None
    found = {g.get("weights", {}).get("num_bits") for g in groups.values() if isinstance(g, dict)}
    found.discard(None)
    return found.pop() if len(found) == 1 else None
