"""The parts a quantized checkpoint leaves in 16 bits, from its config.json's quantization_config: the module
names of ``ignore`` (compressed-tensors, ModelOpt) or ``modules_to_not_convert`` (fbgemm_fp8, bitsandbytes,
GPTQ/AWQ in transformers), as ``--keep`` rules (analysis/formats.rules). Meta's FP8 Llama 3.1 405B lists every
layer's self_attn projections and layers 0 and 125 whole."""

from __future__ import annotations

import re
from pathlib import Path

from .. import parse_json
from ..yaml import read_text

LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.(self_attn|mlp|block_sparse_moe)\b")
SLOT = {"self_attn": "attention", "mlp": "ffn", "block_sparse_moe": "ffn"}


def kept(ref: str) -> tuple[str, ...]:
    """--keep rules (each PART=bf16) for the modules a config.json's quantization_config leaves unquantized; ()
    when it names none or ``ref`` is not a config.json (or its folder)."""
    from . import config_path, is_hf_config

    if not is_hf_config(ref):
        return ()
    path = config_path(ref)
    data = parse_json(read_text(Path(path)), str(path))
    q = data.get("quantization_config") if isinstance(data, dict) else None
    if not isinstance(q, dict):
        return ()
    names = q.get("ignore") or q.get("modules_to_not_convert") or []
    if not isinstance(names, list):
        return ()
    parts: dict[int, set[str]] = {}
    for name in names:
        m = LAYER.search(name) if isinstance(name, str) else None
        if m:
            parts.setdefault(int(m.group(1)), set()).add(SLOT[m.group(2)])
    n_layers = data.get("num_hidden_layers")
    every = set.intersection(*parts.values()) if parts and len(parts) == n_layers else set()
    rules = [f"{slot}=bf16" for slot in sorted(every)]
    for layer in sorted(parts):
        rest = parts[layer] - every
        if rest == {"attention", "ffn"} or rest and rest | every == {"attention", "ffn"}:
            rules.append(f"layers:{layer}=bf16")
        else:
            rules += [f"layers:{layer}/{slot}=bf16" for slot in sorted(rest)]
    return tuple(rules)
