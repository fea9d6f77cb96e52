"""Record what peft trains for LoRA and DoRA adapters on recorded configs (the ground truth the fast tests compare
``ffncalc train --lora`` against), or check that the recorded file is current.

    python scripts/lora_truth.py            # (re)write tests/lora_truth.json
    python scripts/lora_truth.py --check    # exit 1 if the recorded file differs from what peft builds now

For each config in CONFIGS the transformers class is built on the meta device (ffncalc/analysis/hfcheck.py:
instantiate), peft's ``get_peft_model`` wraps it with a ``LoraConfig`` of each case, and
``get_nb_trainable_parameters()[0]`` is recorded; where peft refuses the case, the first line of its error is.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS_DIR = ROOT / "tests" / "hf_configs"
TRUTH = ROOT / "tests" / "lora_truth.json"
RANK = 16

ATTENTION = "q_proj,k_proj,v_proj,o_proj"
LLAMA_ALL = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
# (targets, dora, modules_to_save) asked of every config, then each config's own module names
COMMON = [
    ("q_proj,v_proj", False, ""),
    (ATTENTION, False, ""),
    (LLAMA_ALL, False, ""),
    ("all-linear", False, ""),
    ("all-linear", True, ""),
    (ATTENTION, True, ""),
    ("q_proj,v_proj", False, "lm_head"),
    ("q_proj,v_proj", False, "embed_tokens,lm_head"),
    ("gate_proj", False, ""),
]
CONFIGS = {
    "llama3-8b": [],  # dense, GQA
    "llama3.2-1b": [("embed_tokens", False, ""), ("embed_tokens", True, ""), ("q_proj,lm_head", True, "")],  # tied
    "qwen3-8b": [],  # q and k norms
    "phi-3-mini-4k": [("qkv_proj,o_proj,gate_up_proj,down_proj", False, ""), ("qkv_proj", True, "")],  # fused
    "mixtral-8x7b": [("w1,w2,w3", False, ""), ("w1,w2", False, ""), ("q_proj,v_proj,gate", False, "")],
    "qwen3-30b-a3b": [("gate_proj,up_proj,down_proj", False, ""), ("gate", False, "")],
    "qwen1.5-moe-a2.7b": [("shared_expert_gate", False, "")],  # shared expert and its gate
    "deepseek-v3": [("q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj", False, ""), ("kv_b_proj", True, "")],
    "deepseek-v2-lite": [("q_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj", False, "")],
}


def case(c, targets: str, dora: bool, save: str) -> dict:
    from peft import LoraConfig, get_peft_model

    from ffncalc.analysis.hfcheck import instantiate

    model = instantiate(c)
    modules = "all-linear" if targets == "all-linear" else targets.split(",")
    out: dict = {"targets": targets, "dora": dora, "modules_to_save": save}
    try:
        config = LoraConfig(
            r=RANK, lora_alpha=2 * RANK, target_modules=modules, use_dora=dora, modules_to_save=save.split(",") if save else None
        )
        wrapped = get_peft_model(model, config)
        out["trainable"] = wrapped.get_nb_trainable_parameters()[0]
    except Exception as exc:  # noqa: BLE001 — peft refuses with ValueError, RuntimeError or its own
        out["refused"] = stable(str(exc).strip().splitlines()[0][:300])
    return out


def stable(message: str) -> str:
    """peft's message with each set it prints ({'q_proj', 'v_proj'}) in sorted order: a set's order varies with
    the process's string hashing."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)


def record() -> str:
    import peft
    import torch
    import transformers

    from ffncalc.sources import hf

    transformers.logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    data: dict = {"peft": peft.__version__, "transformers": transformers.__version__, "torch": torch.__version__, "rank": RANK}
    data["configs"] = {
        name: [case(hf.read_config(CONFIGS_DIR / f"{name}.json"), *asked) for asked in COMMON + own] for name, own in CONFIGS.items()
    }
    return json.dumps(data, indent=1) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    text = record()
    if args.check:
        current = TRUTH.is_file() and TRUTH.read_text() == text
        print("the LoRA ground truth is current" if current else f"{TRUTH.name} is stale (rerun python scripts/lora_truth.py)")
        return 0 if current else 1
    TRUTH.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
