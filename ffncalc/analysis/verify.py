"""The analytic counts proven against reference torch modules on the meta device.

Parameters: the numel of every torch parameter, summed per component, against ``count.py``.
FLOPs: torch.utils.flop_counter.FlopCounterMode over one forward (batch 1), per module, against the
analytic matmul FLOPs. The two share nothing but the spec. torch is imported here and in torchref only.
"""

from __future__ import annotations

import math
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from types import FunctionType

import torch
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from ..blocks._torch import MatMul
from ..model import reference
from ..model.reference import EXPERT_BYTES, MAX_EXPERTS, expert_modules
from ..model.stack import Model, Run
from .count import tally

CONVENTIONS = ("exact", "causal")


@dataclass(frozen=True)
class Check:
    component: str
    layers: tuple[int, int] | None
    analytic_params: int
    torch_params: int
    analytic_flops: int  # forward matmul FLOPs of the pass: batch 1 × seq_len tokens
    torch_flops: int

    @property
    def params_ok(self) -> bool:
        return self.analytic_params == self.torch_params

    @property
    def flops_ok(self) -> bool:
        return self.analytic_flops == self.torch_flops

    @property
    def ok(self) -> bool:
        return self.params_ok and self.flops_ok


@dataclass(frozen=True)
class Report:
    model: str
    convention: str
    seq_len: int
    every_layer: bool
    notes: tuple[str, ...]
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


_INDEX = re.compile(r"\.\d+(?=\.|$)")


def _component(path: str, norm: bool) -> tuple[str, int | None]:
    """``layers.3.ffn.experts.5.up.weight`` -> (``ffn.experts.up.weight``, 3: the module in ``layers``); a norm's
    tensors -> the norm."""
    layer = None
    if path.startswith("layers."):
        _, index, path = path.split(".", 2)
        layer = int(index)
    else:  # a stack a part holds beside the model's layers (an encoder): its layers are one model-level component
        path = re.sub(r"\.layers\.\d+\.", ".", path)
    if norm:
        path = path.rsplit(".", 1)[0]  # a norm is one component: its weight and bias together
    return _INDEX.sub("", path), layer


def _is_norm(module: torch.nn.Module) -> bool:
    return isinstance(module, (torch.nn.LayerNorm, torch.nn.RMSNorm)) or getattr(module, "is_norm", False)


Key = tuple[str, "tuple[int, int] | None"]  # (component, layer run)


def verify(
    spec: Model, *, model: str = "model", seq_len: int | None = None, convention: str = "exact", every_layer: bool = False
) -> Report:
    """Compare analytic and torch parameter counts and forward FLOPs, component by component."""
    if convention not in CONVENTIONS:
        raise ValueError(f"verify proves the exact and causal conventions, not {convention!r}")
    seq_len = spec.context_length if seq_len is None else seq_len
    check_size(spec, seq_len)
    runs = spec.runs()
    with _meta_without_dynamo():
        try:
            net = reference.build(spec, device="meta", causal=convention == "causal", distinct=not every_layer)
        except NotImplementedError as exc:  # a part with no reference module yet: said in one line
            from ..errors import InputError

            raise InputError(f"{model}: verify cannot build it: {exc}") from None
        net.set_balanced_routing(True)
        stands = _stands_for(net, runs)
        measured = _torch_params(net, stands)
        for key, flops in _torch_flops(net, stands, seq_len, every_layer).items():
            measured.setdefault(key, [0, 0])[1] += flops
    analytic = _analytic(spec, convention, seq_len)

    checks = []
    for key in list(analytic) + [k for k in measured if k not in analytic]:
        a_params, a_flops = analytic.get(key, (0, 0))
        t_params, t_flops = measured.get(key, (0, 0))
        if a_params or a_flops or t_params or t_flops:
            checks.append(Check(*key, a_params, t_params, a_flops, t_flops))
    notes = list(dict.fromkeys(b.verify_note for b in spec.blocks() if b.verify_note))
    if len(net.layers) < spec.n_layers:
        notes.append(
            f"identical layers are one module: {len(net.layers)} of {spec.n_layers} built and run, each counted "
            "for every layer of its kind (--every-layer builds them all)"
        )
    if convention == "causal" and spec.bidirectional:
        notes.append("an encoder: every query meets every key, within its window on both sides where it has one")
    elif convention == "causal":
        notes.append("attention over the causal triangle only: query i meets keys 0..i")
    return Report(model, convention, seq_len, every_layer, tuple(notes), tuple(checks))


MAX_ELEMENTS = 2**56  # torch sizes a tensor's storage in int64 bytes; far below its overflow, far above any model


def check_size(spec: Model, seq_len: int) -> None:
    """Refuse, before torch is asked, a model or sequence whose largest tensor torch would size past
    MAX_ELEMENTS: a weight, an activation (tokens × width), or the attention scores (heads × queries × keys)."""
    from ..errors import InputError

    t = tally(spec, seq_len=seq_len)
    biggest, what = 0, ""
    for r in t.rows:
        if not r.shape:
            continue
        if r.role == "core":  # (heads, keys per query, head_dim)
            size, kind = r.shape[0] * r.shape[1] * seq_len, "attention scores"
        elif math.prod(r.shape) >= seq_len * max(r.shape):
            size, kind = math.prod(r.shape), "the weight"
        else:
            size, kind = seq_len * max(r.shape), "the activations"
        if size > biggest:
            biggest, what = size, f"{kind} of {r.name}"
    if biggest > MAX_ELEMENTS:
        who = "the model" if what.startswith("the weight") else f"--seq-len {seq_len:,}"
        raise InputError(
            f"{who}: verify would build {what} of {biggest:,} elements, beyond its "
            f"limit of 2^56 ({MAX_ELEMENTS:,}); verify a shorter sequence or a smaller model"
        )
    experts = sum(expert_modules(b) for layer in dict.fromkeys(spec.layers) for _, b in layer.blocks())
    if experts > MAX_EXPERTS:
        raise InputError(
            f"the model: verify would build {experts:,} expert modules (one layer of each kind), beyond "
            f"its limit of {MAX_EXPERTS:,} (about {MAX_EXPERTS * EXPERT_BYTES / 2**30:.1f} GiB of torch "
            "module objects even on the meta device); verify a model with fewer experts"
        )


def _analytic(spec: Model, convention: str, seq_len: int) -> dict[Key, list[int]]:
    """[params, forward FLOPs of the pass] per component and layer run, from count.py."""
    out: dict[Key, list[int]] = {}
    for row in tally(spec, convention=convention, seq_len=seq_len).rows:
        if row.params or row.flops:
            entry = out.setdefault((row.name, row.layers), [0, 0])
            entry[0] += row.params
            entry[1] += row.flops * seq_len
    for entry in out.values():  # a pass's FLOPs are whole, even where a window makes the per-token figure a fraction
        if entry[1] == int(entry[1]):
            entry[1] = int(entry[1])
    return out


def _stands_for(net: reference.Transformer, runs: list[Run]) -> dict[int, list[tuple[tuple[int, int], int]]]:
    """For each module of ``net.layers``: the layer runs it stands for and how many layers of each.

    Every layer of a run is one module (``net.index``): a distinct module stands for the run's length,
    each layer's own module (every layer built) for one layer.
    """
    out: dict[int, list[tuple[tuple[int, int], int]]] = {}
    for run in runs:
        for i in range(run.first, run.stop):
            entry = out.setdefault(net.index[i], [])
            if entry and entry[-1][0] == run.span:
                entry[-1] = (run.span, entry[-1][1] + 1)
            else:
                entry.append((run.span, 1))
    return out


def _spread(out: dict[Key, int], path: str, norm: bool, amount: int, stands) -> None:
    """Add ``amount`` (of one module's tensor or operation) to its component under every run it stands for."""
    name, module = _component(path, norm)
    if module is None:
        out[(name, None)] = out.get((name, None), 0) + amount
        return
    for span, layers in stands[module]:
        out[(name, span)] = out.get((name, span), 0) + amount * layers


def _torch_params(net: reference.Transformer, stands) -> dict[Key, list[int]]:
    """[numel, 0] per component and layer run; a tied Parameter is listed once by named_parameters."""
    owners = dict(net.named_modules())
    numel: dict[Key, int] = {}
    for path, param in net.named_parameters():
        owner = owners[path.rsplit(".", 1)[0]] if "." in path else net
        _spread(numel, path, _is_norm(owner), param.numel(), stands)
    return {key: [n, 0] for key, n in numel.items()}


def _torch_flops(net: reference.Transformer, stands, seq_len: int, every_layer: bool) -> dict[Key, int]:
    """FlopCounterMode's FLOPs per Linear and MatMul module over one forward on meta tensors, each
    module of ``net.layers`` run once (every layer's, or each distinct layer's) and its FLOPs spread
    over the layers it stands for: layers of one kind are the same module with the same shapes."""
    tokens = torch.zeros((1, seq_len), dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as counter:
        net(tokens, only=None if every_layer else list(range(len(net.layers))))
    counts = counter.get_flop_counts()
    out: dict[Key, int] = {}
    attributed = 0
    for path, module in net.named_modules():
        # weighted: a Linear, or a block's module that declares its weight's FLOPs its own (a convolution)
        weighted = isinstance(module, torch.nn.Linear) or getattr(module, "weight_flops", False)
        if not (weighted or isinstance(module, MatMul)):
            continue
        flops = sum(counts.get(f"{type(net).__name__}.{path}", {}).values())
        attributed += flops
        _spread(out, path + (".weight" if weighted else ""), False, flops, stands)
    unattributed = sum(counts.get("Global", {}).values()) - attributed
    if unattributed:
        out[("(outside any linear or matmul module)", None)] = unattributed
    return out


@contextmanager
def _meta_without_dynamo():
    """Meta tensors without importing ``torch._dynamo`` (about as long as ``import torch`` itself).

    torch computes most meta results with its Python references (``torch._refs``), each wrapped by
    ``torch._disable_dynamo``, which imports ``torch._dynamo`` on its first call only to mark the
    reference as not to be compiled, and caches the result on the reference as ``__dynamo_disable``.
    Nothing here compiles, so for the duration each reference's cache is seeded with the reference
    itself and removed afterwards. Where torch's layout differs, nothing is seeded and the import
    simply happens.
    """
    seeded = []
    if "torch._dynamo" not in sys.modules:
        from torch._decomp import global_decomposition_table  # the meta kernels torch registered in Python

        marker = torch._disable_dynamo(lambda: None).__code__  # the wrapper's code, shared by every wrapped function
        slot = marker.co_freevars.index("fn")  # the wrapped function, where the wrapper caches its result
        kernels = [fn for table in global_decomposition_table.values() for fn in table.values()]
        for name, module in list(sys.modules.items()):
            if name.startswith(("torch._refs", "torch._prims", "torch._decomp")) and module is not None:
                kernels += vars(module).values()
        for cls in (FlopCounterMode, *vars(flop_counter).values()):  # its dispatch is wrapped the same way
            if isinstance(cls, type) and cls.__module__ == flop_counter.__name__:
                kernels += vars(cls).values()
        seen: set[int] = set()
        while kernels:  # down every chain of decorators: their __wrapped__ and the functions they close over
            fn = kernels.pop()
            if type(fn) is not FunctionType or id(fn) in seen:
                continue
            seen.add(id(fn))
            kernels += [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
            kernels.append(getattr(fn, "__wrapped__", None))
            if fn.__code__ is marker:
                target = fn.__closure__[slot].cell_contents
                if not hasattr(target, "__dynamo_disable"):
                    setattr(target, "__dynamo_disable", target)
                    seeded.append(target)
    try:
        yield
    finally:
        for target in seeded:
            if getattr(target, "__dynamo_disable", None) is target:
                delattr(target, "__dynamo_disable")


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a closure variable not yet assigned
        return False
    return True
