"""What transformers' own class saves for backward, measured: one training forward (train mode, eager attention,
the loss on every position) of the class a config.json names, on small real tensors on the CPU, under
``torch.autograd.graph.saved_tensors_hooks``; every distinct storage autograd packs, the parameters and buffers
aside, its bytes charged to the module that was running when it was saved. ``verify --memory --hf`` sets it beside
``hfsaved.saved_bytes``. Imports torch and transformers.
"""

from __future__ import annotations

import re
import weakref

import torch

from ..sources.hf import Config
from .hfsaved import COMPONENTS

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
ACT_BYTES = {"bf16": 2, "fp32": 4}

# a module's path -> the component it belongs to (the first that matches), as LlamaForCausalLM and its kin name them
_TOP, _LAYER = r"^(model|transformer)\.", r"^(model|transformer)\.(layers|h)\.\d+\."
_RULES = (
    (re.compile(_TOP + r"(embed_tokens|wte|wpe|drop)\b"), "embedding"),
    (re.compile(_LAYER + r"(input_layernorm|post_attention_layernorm|ln_1|ln_2)\b"), "norms"),
    (re.compile(_LAYER + r"(self_attn|attn|linear_attn)\b"), "attention"),
    (re.compile(_LAYER + r"(mlp|block_sparse_moe)\b"), "ffn"),
    (re.compile(_TOP + r"(norm|ln_f)\b"), "final_norm"),
    (re.compile(r"^lm_head\b"), "head"),
    (re.compile(_TOP + r"rotary_emb\b"), "attention"),
    (re.compile(r"^$"), "loss"),  # outside every module: the loss the causal-LM class computes after its head
)


def component(path: str) -> str:
    for pattern, name in _RULES:
        if pattern.search(path):
            return name
    raise ValueError(f"no component for the module {path!r}")


def measure(c: Config, *, seq_len: int, batch: int = 1, dtype: str = "bf16", seed: int = 0) -> dict[str, int]:
    """Bytes of every distinct tensor autograd saves in one training forward of the causal-LM class, per component."""
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    data = {k: v for k, v in c.data.items() if k not in ("auto_map", "quantization_config", "architectures")}
    config = AutoConfig.for_model(**data)
    config._attn_implementation = "eager"
    net = AutoModelForCausalLM.from_config(config, dtype=DTYPES[dtype])
    net.train()
    held = {t.untyped_storage().data_ptr() for t in (*net.parameters(), *net.buffers())}
    running: list[str] = []
    packed: list[tuple[weakref.ref, str]] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        packed.append((weakref.ref(t), running[-1] if running else ""))
        return t

    hooks = []
    for path, module in net.named_modules():
        hooks.append(module.register_forward_pre_hook(lambda m, a, p=path: running.append(p)))
        hooks.append(module.register_forward_hook(lambda m, a, o: (running.pop(), None)[1]))
    ids = torch.randint(0, config.vocab_size, (batch, seq_len))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = net(input_ids=ids, labels=ids).loss
    finally:
        for hook in hooks:
            hook.remove()
    # what the graph still holds once the forward is done: a tensor saved by a branch no gradient flows through
    # (a router's group choice) was freed with that branch, and its memory may since hold another tensor
    saved: dict[int, tuple[int, str]] = {}
    for ref, path in packed:
        t = ref()
        if t is None:
            continue
        storage = t.untyped_storage()
        if storage.data_ptr() not in held:
            saved.setdefault(storage.data_ptr(), (storage.nbytes(), path))
    del loss
    out = dict.fromkeys(COMPONENTS, 0)
    for nbytes, path in saved.values():
        out[component(path)] += nbytes
    return out
