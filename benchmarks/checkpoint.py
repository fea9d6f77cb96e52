"""Reading a checkpoint's headers: a DeepSeek-V3-shaped sharded safetensors set (61 layers, 256 experts each, fp8
weights with their block scales as DeepSeek ships them: about 90,000 tensors, some 640 GiB described) laid out
as sparse files, counted by ``ffncalc count FOLDER``.

    python benchmarks/checkpoint.py [--runs 5] [--shards 4]

Prints the wall time and peak memory of each run (median and range) beside the interpreter's own start-up
with ffncalc imported, the floor of any command. The targets: under 1 s and under 100 MB. Not a test:
nothing here passes or fails. The files are sparse: the data sections take no disk space.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

PY = sys.executable
D, V, LAYERS, DENSE, EXPERTS, EXPERT_FF, DENSE_FF, HEADS = 7168, 129280, 61, 3, 256, 2048, 18432, 128
Q_LORA, KV_LORA, NOPE, ROPE, VD = 1536, 512, 128, 64, 128


def tensors() -> dict[str, tuple[int, ...]]:
    """DeepSeek-V3's tensor names and shapes, as its Hugging Face checkpoint names them (without its fp8
    scales; ``write`` adds them)."""
    out = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,), "lm_head.weight": (V, D)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out |= {
            p + "input_layernorm.weight": (D,),
            p + "post_attention_layernorm.weight": (D,),
            p + "self_attn.q_a_proj.weight": (Q_LORA, D),
            p + "self_attn.q_a_layernorm.weight": (Q_LORA,),
            p + "self_attn.q_b_proj.weight": (HEADS * (NOPE + ROPE), Q_LORA),
            p + "self_attn.kv_a_proj_with_mqa.weight": (KV_LORA + ROPE, D),
            p + "self_attn.kv_a_layernorm.weight": (KV_LORA,),
            p + "self_attn.kv_b_proj.weight": (HEADS * (NOPE + VD), KV_LORA),
            p + "self_attn.o_proj.weight": (D, HEADS * VD),
        }
        if i < DENSE:
            out |= {
                p + f"mlp.{m}.weight": s
                for m, s in (("gate_proj", (DENSE_FF, D)), ("up_proj", (DENSE_FF, D)), ("down_proj", (D, DENSE_FF)))
            }
            continue
        out[p + "mlp.gate.weight"] = (EXPERTS, D)
        out[p + "mlp.gate.e_score_correction_bias"] = (EXPERTS,)
        for e in [*(f"experts.{j}" for j in range(EXPERTS)), "shared_experts"]:
            out |= {
                p + f"mlp.{e}.gate_proj.weight": (EXPERT_FF, D),
                p + f"mlp.{e}.up_proj.weight": (EXPERT_FF, D),
                p + f"mlp.{e}.down_proj.weight": (D, EXPERT_FF),
            }
    return out


def write(folder: Path, shards: int) -> int:
    """The shards and their index; returns the bytes the headers describe."""
    names = list(tensors().items())
    per = -(-len(names) // shards)
    weight_map, total = {}, 0
    for k in range(shards):
        part = names[k * per : (k + 1) * per]
        file = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        header, offset = {}, 0

        def put(name: str, dtype: str, shape: tuple[int, ...], width: int) -> None:
            nonlocal offset
            size = width
            for n in shape:
                size *= n
            header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
            offset += size
            weight_map[name] = file

        for name, shape in part:
            # as DeepSeek-V3 ships: fp8 linear weights, each with an fp32 scale per 128 × 128 block (weight_scale_inv)
            fp8 = len(shape) == 2 and "embed" not in name and "lm_head" not in name and ".gate." not in name
            put(name, "F8_E4M3" if fp8 else "BF16", shape, 1 if fp8 else 2)
            if fp8:
                put(name.removesuffix("weight") + "weight_scale_inv", "F32", (-(-shape[0] // 128), -(-shape[1] // 128)), 4)
        blob = json.dumps(header, separators=(",", ":")).encode()
        blob += b" " * (-len(blob) % 8)
        with open(folder / file, "wb") as f:
            f.write(struct.pack("<Q", len(blob)) + blob)
            f.truncate(8 + len(blob) + offset)  # the data section, sparse
        total += offset
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return total


def run(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and the peak resident memory (MB) of one run of ``cmd`` in a fresh process."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); w = time.perf_counter() - t; "
        "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([PY, "-c", code, *cmd], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1]) / 1024  # ru_maxrss: KiB on Linux; MiB here


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shards", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "deepseek-v3-shaped"
        folder.mkdir()
        described = write(folder, args.shards)
        header = sum(os.path.getsize(f) - 0 for f in folder.glob("*.safetensors"))  # apparent sizes
        print(
            f"{platform.node()} · {platform.processor() or platform.machine()} · {os.cpu_count()} cores · "
            f"Python {platform.python_version()}"
        )
        count = sum(len(json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]) for _ in [0])
        print(
            f"{count:,} tensors in {args.shards} shards describing {described / 2**30:,.0f} GiB "
            f"({header / 2**30:,.0f} GiB apparent, sparse on disk)"
        )
        rows = [
            ("floor: python -c 'import ffncalc.cli'", [PY, "-c", "import ffncalc.cli"]),
            ("ffncalc count FOLDER", [PY, "-m", "ffncalc", "count", str(folder), "--format", "json"]),
        ]
        for label, cmd in rows:
            results = [run(cmd) for _ in range(args.runs)]
            walls, peaks = [w for w, _ in results], [m for _, m in results]
            print(
                f"{label:40} wall {statistics.median(walls):.2f} s ({min(walls):.2f}–{max(walls):.2f}), "
                f"peak memory {statistics.median(peaks):.0f} MiB ({min(peaks):.0f}–{max(peaks):.0f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
