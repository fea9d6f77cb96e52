"""Parameter names -> ffncalc components, by a family's transformers module names (``config.py``).

Shared by ``verify --hf`` (the names transformers instantiates) and ``count CHECKPOINT`` (the names a
checkpoint stores). Pure Python: no torch, no transformers.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable, TypeVar

from .config import Family

# blocks: MPT, DBRX; layer: BERT; block: T5; albert_layers: ALBERT's layers inside each of its albert_layer_groups;
# attentions, ffns, layer_norm1, layer_norm2: XLM's sublayers, each in a list of its own; self_attends: Perceiver's
LAYER = re.compile(
    r"(?:^|\.)(?:layers|layer|h|blocks|block|albert_layers|attentions|ffns|layer_norm1|layer_norm2|self_attends)\.(\d+)\.(.+)$"
)

K = TypeVar("K")


def our_layer(layer: int, inner: str, family: Family) -> int:
    """Our layer index of a module at ``inner`` inside transformers' layer ``layer``: the same, or where the family
    makes each transformers layer several of ours (``Family.sublayers``), the one its sublayer index names."""
    if family.sublayers is None:
        return layer
    pattern, n = family.sublayers
    sub = re.search(pattern, inner)
    return n * layer + (int(sub.group(1)) if sub else 0)


def stack_start(module: str, found: re.Match, stacks: dict[str, int] | None) -> int:
    """Our index of layer 0 of the list that holds the layer ``found`` (LAYER's match in ``module``): 0, or where
    transformers holds the layers in several lists (``Family.stacks``, from the config), that list's."""
    return stacks.get(module[: found.start()].rsplit(".", 1)[-1], 0) if stacks else 0


def component(path: str, family: Family, stacks: dict[str, int] | None = None) -> tuple[str, int | None]:
    """A parameter's name -> (component, layer index), by the family's module names; a module inside a layer that
    no layer name matches may be a model-level one (a top name); unknown modules are named as they are, marked
    ``(unmatched)``. ``stacks``: the family's ``stacks`` for the config, where it has them; a stack beside the
    model's layers (``Family.model_stacks``) is one model-level component per name."""
    for pattern, prefix in family.model_stacks:
        beside = re.search(r"(?:^|\.)" + pattern, path)
        if beside:
            name, _ = component(path[beside.end() :], replace(family, model_stacks=()))
            return prefix + name, None
    module = path.rsplit(".", 1)[0]
    found = LAYER.search(module)
    if found:
        inner = found.group(2)
        layer = stack_start(module, found, stacks) + our_layer(int(found.group(1)), inner, family)
        for pattern, name in family.layer_modules:
            if re.search(pattern, inner):
                return name, layer
    for pattern, name in family.top_modules:
        # a model-level module; inside a layer, only one its top name places there by path (RWKV's
        # blocks.0.pre_ln, the embeddings' norm that the first block holds)
        if (not found or LAYER.search(pattern.replace("\\.", "."))) and re.search(r"(^|\.)" + pattern, module):
            return name, None
    if found:
        return f"(unmatched) {inner}", layer
    held = LAYER.search(path)  # a parameter the layer module holds itself (Doge's input_residual): by its own name
    if held:
        for pattern, name in family.layer_modules:
            if re.search(pattern, held.group(2)):
                return name, our_layer(int(held.group(1)), held.group(2), family)
    return f"(unmatched) {module}", None


def fuse(ours: dict[tuple[str, K], int], fused_names: Iterable[tuple[str, K]]) -> dict[tuple[str, K], int]:
    """Our per-component sums with the parts of a fused module (``attn.q+k+v``, ``ffn.gate+up``) summed under
    its name, where the other side names one; the order is ours, a fused module where its first part was."""
    fused = {}
    for name, key in fused_names:
        if "+" not in name:
            continue
        prefix = name.split("+")[0].rsplit(".", 1)[0]  # mixers.mixer.dt_bias+A_log: the parts of mixers.mixer
        for part in name[len(prefix) + 1 :].split("+"):
            fused[(f"{prefix}.{part}", key)] = (name, key)
    merged: dict[tuple[str, K], int] = {}
    for k, n in ours.items():
        k = fused.get(k, k)
        merged[k] = merged.get(k, 0) + n
    return merged
