"""Published fine-tuning runs for docs/guide/accuracy.md (accuracy.py): peak memory of QLoRA on one GPU, with the
command that plans it."""

from __future__ import annotations

from . import Record

TITLE = "Fine-tuning with adapters"
INTRO = (
    'torchtune\'s README table "Memory and training speed" gives the peak memory per GPU of Llama 3.1 8B fine-tuned '
    "on one RTX 4090 at batch size 2 of sequences packed to 2,048 tokens, with torch.compile; its QLoRA recipe "
    "(recipes/configs/llama3_1/8B_qlora_single_device.yaml) adapts q, k, v, output and the MLP at rank 8, keeps the "
    "base in NF4 (torchao's NF4Tensor: 4-bit codes, an 8-bit scaler a block of 64 and an fp32 factor a block of 256 "
    "scalers, bitsandbytes' double-quantized layout), trains the adapters in bf16 with AdamW, checkpoints every layer "
    "and takes a chunked cross-entropy. The plan is `train --lora 8` on all-linear (Llama's seven projections) with "
    "those settings; torchtune's earlier table states its peak memory as torch.cuda.max_memory_reserved(), so the run "
    "is held against `reserved_bytes_per_device`. What the plan does not follow: torch.compile's fusions, AdamW's "
    "moments in the adapters' bf16 (the plan keeps them in fp32: 84 MB more), and torchtune's chunked loss, which "
    "holds the bf16 logits whole (the plan's chunked loss is Liger's, which does not). Llama 3.1 8B has Llama 3 "
    "8B's shapes (the preset)."
)
TORCHTUNE = (
    'torchtune README.md, "Memory and training speed" (github.com/pytorch/torchtune, main at 0031bfb): Llama 3.1 8B, '
    "QLoRA, 1x 4090, 7.4 GiB"
)

RECORDS = [
    Record(
        "torchtune Llama 3.1 8B QLoRA, 1 × RTX 4090, batch 2 × 2,048",
        TORCHTUNE,
        7.4,
        "GiB",
        "reserved_bytes_per_device",
        "llama3-8b",
        {
            "tokens": "1M",
            "lora": 8,
            "base_dtype": "nf4",
            "adapter_dtype": "bf16",
            "seq_len": 2048,
            "micro_batch": 2,
            "recompute": "full",
            "loss": "chunked",
            "hardware": "rtx4090",
        },
        ran=True,
    ),
]
VERDICTS: list[Record] = []
GAPS: list[Record] = []
