"""The imported spec proven against transformers itself: the model class that a config.json names,
instantiated on the meta device, its parameters counted module by module against ``count.py``; and
(``measure(..., flops=True)``) one forward of that class on the meta device under torch's FlopCounterMode,
its matmul FLOPs module by module against ``count.py``'s ``exact`` convention.

Only ``verify --hf`` imports this module, and only this module imports transformers.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from ..model import Model
from ..sources.hf import Config, family_of, text_only, to_spec
from ..sources.hf.names import LAYER, fuse, our_layer, stack_start
from ..sources.hf.names import component as hf_component
from .count import tally
from .records import compact, expanded

# Keys a config may carry that ask from_config for more than the architecture: remote code, quantization.
DROPPED_KEYS = ("auto_map", "quantization_config")
# model_types whose remote code is a transformers family's under another name: built as that family
# (Kimi K2's auto_map names configuration_deepseek.DeepseekV3Config, its architectures DeepseekV3ForCausalLM)
BUILT_AS = {"kimi_k2": "deepseek_v3"}


@dataclass(frozen=True)
class HFCheck:
    component: str
    layers: tuple[int, int] | None
    ours: int
    transformers: int

    @property
    def ok(self) -> bool:
        return self.ours == self.transformers


@dataclass(frozen=True)
class HFReport:
    model: str
    model_class: str
    version: str
    notes: tuple[str, ...]
    checks: tuple[HFCheck, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[HFCheck]:
        return [c for c in self.checks if not c.ok]


def instantiate(c: Config):
    """The transformers class the config's model_type means (its causal LM; an encoder's masked LM; an
    encoder-decoder's conditional generation class), built on the
    meta device (no weights), with eager attention (the masked square, in plain matmuls) and, where the class
    offers the choice, the "batched_mm" routed experts (each token's top_k experts as one batched matmul: no data-dependent shapes)."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM, AutoModelForSpeechSeq2Seq

    from ..sources.hf.coverage import ENCODER_TYPES, SEQ2SEQ_TYPES, SPEECH_SEQ2SEQ_TYPES

    transformers.logging.set_verbosity_error()
    auto = (
        AutoModelForMaskedLM
        if c.model_type in ENCODER_TYPES
        else AutoModelForSeq2SeqLM
        if c.model_type in SEQ2SEQ_TYPES
        else AutoModelForSpeechSeq2Seq
        if c.model_type in SPEECH_SEQ2SEQ_TYPES
        else AutoModelForCausalLM
    )
    data = {k: v for k, v in c.data.items() if k not in DROPPED_KEYS}
    data["model_type"] = BUILT_AS.get(data.get("model_type"), data.get("model_type"))
    try:
        config = AutoConfig.for_model(**data)
        with torch.device("meta"):
            return auto.from_config(config, attn_implementation="eager", experts_implementation="batched_mm")
    except Exception as exc:  # noqa: BLE001 — transformers' validation raises its own classes
        raise refused(c, exc) from None


# The FLOP runs: batch 1, a short sequence and one past every sliding window and attention chunk of the
# config (so that windowed and chunked layers run with keys outside their reach); windowless: WINDOWLESS.
FLOP_BATCH, SHORT, WINDOWLESS = 1, 8, 32

# How the FLOPs are measured, recorded with them. Each stand-in below changes no matmul's shape.
FLOP_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over one forward of the class (use_cache=False) on the meta device, "
    "input_ids of shape (batch, seq_len), counting what it has formulas for (matmuls, convolutions, attention "
    "kernels: 2 per multiply-add); each counted op's FLOPs with the module it ran in and the parameter whose "
    "weights it multiplies (a tensor derived from a parameter alone carries it), or none: a product of "
    "activations. Eager attention. Routed experts as transformers' batched_mm implementation where the class "
    "offers it (each token's top_k experts); where it does not, the class's own experts forward with the router's "
    "choice replaced by a fixed one, token t's j-th expert (t*top_k + j) mod n_experts, every token meeting exactly "
    "top_k experts. Data-dependent checks that meta tensors cannot answer are given the answer for one unpadded "
    "sequence at positions 0..seq_len-1: no packed sub-sequences (masking_utils.find_packed_sequence_indices -> "
    "None), and a dynamic or long RoPE keeps its initial frequencies (its forward unwrapped; seq_len is within the "
    "original context). Matrix ops FlopCounterMode has no formula for are listed as uncounted where they ran."
)


# Ops that multiply matrices but that FlopCounterMode has no formula for: recorded where they run, uncounted.
UNCOUNTED_OPS = frozenset(
    {"linalg_solve_triangular", "triangular_solve", "linalg_solve", "cholesky_solve", "_grouped_mm", "mv", "dot", "vdot"}
)


@dataclass(frozen=True)
class FlopRun:
    """One forward's FLOPs: (module path, parameter multiplied or "", op, FLOPs), summed per such key; and
    (module path, op) for every op of UNCOUNTED_OPS that ran."""

    batch: int
    seq_len: int
    modules: tuple[tuple[str, str, str, int], ...]
    uncounted: tuple[tuple[str, str], ...] = ()

    def record(self) -> dict:
        return {"batch": self.batch, "seq_len": self.seq_len, "modules": compact(self.modules), "uncounted": compact(self.uncounted)}


def refused(c: Config, exc: Exception):
    """transformers' own refusal of a config as one line naming the key: the key its message names, else the
    first key whose value it quotes, else the message alone."""
    from ..errors import InputError

    message = " ".join(str(exc).split()) or type(exc).__name__
    named = re.search(r"field '(\w+)'", message)
    key = named.group(1) if named and named.group(1) in c.data else None
    if key is None and "rope_parameters" in message and "rope_scaling" in c.data:
        key = "rope_scaling"  # read into rope_parameters by transformers 5
    if key is None:  # a value transformers used as it is: a dtype name, a number that is a list
        key = next((k for k, v in c.data.items() if isinstance(v, str) and f"'{v}'" in message), None)
    if key is None:  # "unsupported operand type(s) …: 'list' and 'Tensor'": the key holding a list
        for kind, cls in (("'list'", list), ("'dict'", dict), ("'str'", str)):
            if kind in message:
                key = next((k for k, v in c.data.items() if isinstance(v, cls) and k not in ("architectures", "model_type")), None)
                break
    if key is None:
        key = next((k for k, v in c.data.items() if k in message), None)
    short = message if len(message) <= 200 else message[:197] + "…"
    where = c.where(key) if key else c.source
    return InputError(f"{where}: {key + ': ' if key else ''}transformers refuses this config: {short}")


@dataclass(frozen=True)
class Measured:
    """What transformers instantiates for a config: every parameter (a tied one once) and buffer, by name;
    with ``flops``, what one forward computes, or why it could not run (``unmeasured``)."""

    model_class: str
    version: str
    params: tuple[tuple[str, int], ...]
    buffers: tuple[tuple[str, int], ...]
    flops: tuple[FlopRun, ...] = ()
    unmeasured: str = ""

    def record(self) -> dict:
        out = {
            "model_class": self.model_class,
            "transformers": self.version,
            "params": compact(self.params),
            "buffers": compact(self.buffers),
        }
        if self.flops or self.unmeasured:
            out["flops"] = (
                {"unmeasured": self.unmeasured}
                if self.unmeasured
                else {"method": FLOP_METHOD, "runs": [r.record() for r in self.flops]}
            )
        return out

    @classmethod
    def from_record(cls, data: dict) -> Measured:
        flops = data.get("flops", {})
        runs = tuple(
            FlopRun(r["batch"], r["seq_len"], tuple(expanded(r["modules"], 4)), tuple(expanded(r["uncounted"], 2)))
            for r in flops.get("runs", ())
        )
        return cls(
            data["model_class"],
            data["transformers"],
            tuple(expanded(data["params"], 2)),
            tuple(expanded(data["buffers"], 2)),
            runs,
            flops.get("unmeasured", ""),
        )


def measure(c: Config, *, flops: bool = False) -> Measured:
    """Build the transformers class on the meta device and list what it holds; ``flops``: and run it."""
    import transformers

    net = instantiate(c)
    params = tuple((path, p.numel()) for path, p in net.named_parameters())  # a tied Parameter is listed once
    buffers = tuple((path, b.numel()) for path, b in net.named_buffers() if "rotary" not in path and "inv_freq" not in path)
    runs, unmeasured = (), ""
    if flops:
        from ..errors import InputError

        try:
            lengths = flop_lengths(c)
        except InputError:  # the lengths follow from the spec, which no family reads yet
            lengths, unmeasured = (), "not run: no family reads this model_type yet, and the lengths follow from its spec"
        try:
            runs = tuple(flop_run(net, FLOP_BATCH, n) for n in lengths)
        except Exception as err:  # a forward meta tensors cannot run: recorded with its reason
            unmeasured = f"the forward fails on the meta device: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
    return Measured(type(net).__name__, transformers.__version__, params, buffers, runs, unmeasured)


def flop_lengths(c: Config, spec: Model | None = None) -> tuple[int, int]:
    """The short sequence and one past the longest window or attention chunk (the config's and the spec's);
    both whole multiples of a chunked mixer's chunk_size, which transformers' torch paths pad the sequence to."""
    from math import lcm

    from .count import terms

    spec = spec or to_spec(text_only(c))  # the class built is the language model's
    reach = [t.window or t.chunk for t in terms(spec, SHORT, partial=True) if t.role == "core" and (t.window or t.chunk)]
    # the longest window or chunk a config names (LongT5: local_radius, its blocks one longer)
    reach += [
        c.data[k] for k in ("sliding_window", "attention_chunk_size", "window_size", "local_radius") if type(c.data.get(k)) is int
    ]
    unit = lcm(1, *(b.chunk_tokens() for b in spec.blocks() if b.chunk_tokens() is not None))
    short = -(-SHORT // unit) * unit
    long = -(-(max(reach) + SHORT if reach else WINDOWLESS) // unit) * unit
    return short, max(long, 2 * short)


def flop_run(net, batch: int, seq_len: int) -> FlopRun:
    """One forward under FlopCounterMode; every counted op's FLOPs with the module it ran in and the parameter
    whose weights it multiplies (or none: a product of activations, such as QKᵀ)."""
    import contextlib
    import inspect
    from unittest import mock

    import torch
    import transformers.masking_utils
    from torch.utils.flop_counter import FlopCounterMode

    hooks, fixed = [], False
    for module in net.modules():
        forward = type(module).forward
        rope = str(getattr(module, "rope_type", ""))
        if hasattr(module, "original_max_seq_len") and ("dynamic" in rope or "longrope" in rope):
            if seq_len > module.original_max_seq_len:
                raise ValueError(f"seq_len {seq_len} is past the RoPE's original context")
            module.forward = inspect.unwrap(forward).__get__(module)  # the frequency update is a no-op here
        named = inspect.signature(forward).parameters
        if "top_k_index" in named and not hasattr(module, "has_gate"):
            hooks.append(module.register_forward_pre_hook(_fixed_routing, with_kwargs=True))
            fixed = True
        elif "selected_experts" in named and "routing_weights" in named:  # the choice as a one-hot mask (Switch)
            hooks.append(module.register_forward_pre_hook(_fixed_mask, with_kwargs=True))
            fixed = True
    for module in net.modules():  # LayerDrop (Fan et al. 2019) skips layers at random in training: none skipped
        if isinstance(getattr(module, "layerdrop", None), float):
            module.layerdrop = 0.0
    tokens = torch.zeros((batch, seq_len), dtype=torch.long, device="meta")
    counter = FlopCounterMode(display=False)
    attribution = _attribution(net, counter, fixed)
    # no autograd graph (the same ops, faster), but where the experts' own loop runs: DBRX's asks for one
    grad = contextlib.nullcontext() if fixed else torch.no_grad()
    try:
        with (
            mock.patch.object(transformers.masking_utils, "find_packed_sequence_indices", lambda ids: None),
            # FSMT's make_padding_mask asks padding_mask.any(): an unpadded sequence's answer, no mask
            mock.patch.object(sys.modules[type(net).__module__], "make_padding_mask", lambda *a: None, create=True),
            # an unpadded sequence: no warning to give on padding without an attention mask (RemBERT and Megatron-BERT
            # look for the pad token among the ids, which meta tensors cannot answer)
            mock.patch.object(transformers.PreTrainedModel, "warn_if_padding_and_no_attention_mask", lambda *a: None),
            # and an all-ones padding mask, which masks nothing: the bidirectional mask is skipped where no window
            # applies, as transformers skips it for such a mask (masking_utils._ignore_bidirectional_mask_sdpa)
            mock.patch.object(
                transformers.masking_utils,
                "_ignore_bidirectional_mask_sdpa",
                lambda mask, kv_length, local: local is None or kv_length < local,
            ),
            grad,
            counter,
            attribution,
        ):
            # an encoder-decoder: the decoder reads a sequence as long as the source (the tokens again)
            extra = {"decoder_input_ids": tokens} if getattr(net.config, "is_encoder_decoder", False) else {}
            if net.main_input_name == "input_features" and hasattr(net.config, "num_conv_layers"):
                # Speech2Text: filterbank frames, 2 ** num_conv_layers a source position (each conv of stride 2)
                c = net.config
                dtype = next(net.parameters()).dtype
                shape = (batch, seq_len * 2**c.num_conv_layers, c.input_feat_per_channel * c.input_channels)
                net(input_features=torch.zeros(shape, dtype=dtype, device="meta"), use_cache=False, **extra)
            elif net.main_input_name == "input_values" and net.config.model_type == "moonshine":
                # Moonshine: the shortest waveform its convolutions (strides 64, 3, 2) turn into seq_len positions
                dtype = next(net.parameters()).dtype
                samples = torch.zeros((batch, 384 * seq_len + 511), dtype=dtype, device="meta")
                net(input_values=samples, use_cache=False, **extra)
            elif net.main_input_name == "input_features":  # a speech encoder (Whisper): one window of log-mel frames
                c = net.config
                dtype = next(net.parameters()).dtype  # the config's torch_dtype, which the convolutions hold
                frames = torch.zeros((batch, c.num_mel_bins, 2 * c.max_source_positions), dtype=dtype, device="meta")
                net(input_features=frames, use_cache=False, **extra)
            else:
                net(input_ids=tokens, use_cache=False, **extra)
    finally:
        for h in hooks:
            h.remove()
        attribution.close()
    assert sum(attribution.flops.values()) == counter.get_total_flops()  # every counted FLOP attributed
    return FlopRun(batch, seq_len, tuple((*k, n) for k, n in attribution.flops.items() if n), tuple(attribution.uncounted))


def _fixed_mask(module, args, kwargs):
    """The router's one-hot choice (tokens, 1, n_experts: SwitchTransformersExperts) replaced by a fixed one, token t
    to expert t mod n_experts, as ``_fixed_routing`` chooses with top_k 1."""
    import torch

    hidden, mask, weights = args
    tokens, experts = mask.shape[0], mask.shape[-1]
    fixed = torch.nn.functional.one_hot(torch.arange(tokens).remainder(experts), experts).view(tokens, 1, experts)
    return (hidden, fixed, weights), kwargs


def _fixed_routing(module, args, kwargs):
    """The router's choice replaced by a fixed one (a real tensor, so the experts' loop can index with it):
    token t's j-th expert is (t·top_k + j) mod n_experts; every token meets exactly top_k experts."""
    import torch

    hidden, index, weights = args
    tokens, top_k = index.shape
    # n_experts: the experts with weights (LongCat-Flash's LongcatFlashExperts: num_routed_experts, its identity
    # experts beyond them never chosen, so every token's top_k experts compute)
    experts = getattr(module, "num_routed_experts", None) or module.num_experts
    fixed = torch.arange(tokens * top_k).remainder(experts).view(tokens, top_k)
    return (hidden, fixed, weights), kwargs


def _attribution(net, counter, fixed: bool):
    """A dispatch mode above FlopCounterMode: each op's FLOPs (the counter's total before and after it) go to
    (the innermost module running, the parameter among the op's operands or "", the op). A tensor derived from
    a parameter alone (a view, a transpose, an index into an experts tensor, a cast) carries the parameter.
    ``fixed``: index tensors of a fixed routing are moved onto the meta device where an op takes them with
    meta tensors (index_add_ requires one device); shapes are unchanged."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map

    names: dict[int, list[str]] = {}
    params: dict[int, torch.Tensor] = {}
    for path, p in net.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(path)
        params[id(p)] = p
    paths = {id(m): path for path, m in net.named_modules(remove_duplicate=False)}
    stack: list[str] = []

    def enter(module, args):
        stack.append(paths.get(id(module), "?"))

    def leave(module, args, out):
        stack.pop()

    def source(t):
        return id(t) if id(t) in names else getattr(t, "_ffncalc_source", None)

    def to_meta(a):
        return a.to("meta") if isinstance(a, torch.Tensor) and a.device.type != "meta" and a.dim() else a

    class Mode(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.flops = {}
            self.uncounted: dict[tuple[str, str], None] = {}
            self.handles = [
                torch.nn.modules.module.register_module_forward_pre_hook(enter),
                torch.nn.modules.module.register_module_forward_hook(leave),
            ]

        def close(self):
            for h in self.handles:
                h.remove()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            if fixed and any(a.device.type == "meta" for a in tensors):
                args, kwargs = tree_map(to_meta, args), tree_map(to_meta, kwargs)
            before = counter.get_total_flops()
            out = func(*args, **kwargs)
            flops = counter.get_total_flops() - before
            op = str(func.overloadpacket).removeprefix("aten.")
            if op in UNCOUNTED_OPS:
                self.uncounted[(stack[-1] if stack else "", op)] = None
            floating = [a for a in tensors if a.is_floating_point()]
            sources = {source(a) for a in floating}
            if flops:
                here = stack[-1] if stack else ""
                param = ""
                if sources - {None}:  # the weight rather than the bias where an op takes both (a convolution)
                    src = max(sources - {None}, key=lambda i: (params[i].dim(), names[i][0]))
                    # a tied matrix has several names: the one of the innermost module running it (lm_head; the
                    # layer a weight-shared block runs in), else the first
                    own = next(
                        (
                            [n for n in names[src] if n.startswith(m + ".")]
                            for m in reversed(stack)
                            if m and any(n.startswith(m + ".") for n in names[src])
                        ),
                        [],
                    )
                    param = max(own, key=len) if own else names[src][0]
                key = (here, param, op)
                self.flops[key] = self.flops.get(key, 0) + flops
            # an embedding's rows are the tokens' activations, not the weight (DeepSeek-V4's first hyper-connection
            # multiplies them by its mixing matrix)
            elif floating and len(sources) == 1 and None not in sources and op != "embedding":
                for o in tree_flatten(out)[0]:
                    if isinstance(o, torch.Tensor):
                        o._ffncalc_source = next(iter(sources))
            return out

    return Mode()


def check(c: Config, *, model: str = "model", spec: Model | None = None, measured: Measured | None = None) -> HFReport:
    """Our parameter count against transformers', per component and run of identical layers; ``spec``
    (default: the config imported) is the side under test, ``measured`` (default: built now) the other."""
    spec = spec or to_spec(text_only(c))  # the class built is the language model's
    family = family_of(c)
    stacks = family.stacks(c) if family.stacks else None
    measured = measured or measure(c)
    run_of = {i: run.span for run in spec.runs() for i in range(*run.span)}

    theirs: dict[tuple[str, tuple[int, int] | None], int] = {}
    table = spec.embed_shape[0] * spec.embed_shape[1]
    for path, numel in measured.params:
        name, layer = hf_component(path, family, stacks)
        if spec.tie_embeddings and name == "lm_head" and path.endswith(".weight") and numel == table:
            # a tied table is listed once, under the name transformers registers first: the head's where the class
            # builds its head before its encoder (XLMRobertaForMaskedLM's lm_head.decoder); ours is the table's
            name = "embed"
        key = (name, run_of.get(layer) if layer is not None else None)
        theirs[key] = theirs.get(key, 0) + numel
    ours: dict[tuple[str, tuple[int, int] | None], int] = {}
    for row in tally(spec, partial=True).rows:  # parameters alone
        if row.params:
            key = (row.component, row.layers)
            ours[key] = ours.get(key, 0) + row.params
    ours = fuse(ours, theirs)  # a fused module holds several of ours

    checks = tuple(
        HFCheck(name, layers, ours.get((name, layers), 0), theirs.get((name, layers), 0))
        for name, layers in list(ours) + [k for k in theirs if k not in ours]
    )
    notes = []
    if measured.buffers:
        names = sorted({re.sub(r"\.\d+\.", ".N.", p) for p, _ in measured.buffers})
        notes.append(f"buffers, not parameters: {', '.join(names)} ({sum(n for _, n in measured.buffers):,} elements)")
    dropped = [k for k in DROPPED_KEYS if k in c.data]
    if dropped:
        notes.append(f"ignored: {', '.join(dropped)} (remote code and quantization change no shapes)")
    if any("+" in ch.component for ch in checks):
        notes.append("q+k+v, gate+up: one fused transformers module against the sum of the parts it holds")
    return HFReport(model, measured.model_class, measured.version, tuple(notes), checks)


@dataclass(frozen=True)
class FlopCheck:
    """One component's forward FLOPs over a whole pass of ``batch`` sequences of ``seq_len`` tokens."""

    batch: int
    seq_len: int
    component: str
    layers: tuple[int, int] | None
    ours: int
    transformers: int

    @property
    def ok(self) -> bool:
        return self.ours == self.transformers


# a layer module, not one inside it; XLM's attention modules, one list of them
LAYER_ITSELF = re.compile(r"(?:^|\.)(?:layers|h|blocks|attentions)\.(\d+)$")
CORE = "attention products"  # the matmuls of activations with activations (QKᵀ, AV, a scan's readout, ...)


def check_flops(c: Config, measured: Measured, *, spec: Model | None = None) -> tuple[FlopCheck, ...]:
    """Our forward FLOPs under the ``exact`` convention against those FlopCounterMode measured on the
    transformers class, per component and run of identical layers, for each recorded (batch, seq_len).

    A measured op that multiplies a parameter's weights is the component of that parameter (by the
    family's module names, as for the parameters); one that multiplies activations only is the layer's
    attention products, against the sum of our ``core`` terms."""
    spec = spec or to_spec(text_only(c))  # the class built is the language model's
    family = family_of(c)
    stacks = family.stacks(c) if family.stacks else None
    run_of = {i: run.span for run in spec.runs() for i in range(*run.span)}
    # a layer that runs an earlier layer's parameters again (model/reuse.py) is that layer's module run again in
    # transformers (ALBERT's albert_layer_groups): its work is compared where the module is, with the stored layer's
    stored = {run.span: run_of[run.first - run.layer.reuse] if run.layer.reuse else run.span for run in spec.runs()}
    checks: list[FlopCheck] = []
    weights = {path for path, _ in measured.params if path.endswith(".weight")}
    for run in measured.flops:
        theirs: dict[tuple[str, tuple[int, int] | None], int] = {}
        for module, param, _op, flops in run.modules:
            # an op inside a module that holds a weight of its own multiplies that weight, whatever other parameter its
            # input derives from (a Linear projecting a table: DeBERTa's pos_proj over rel_embeddings)
            param = module + ".weight" if param and module + ".weight" in weights else param
            if param:
                name, layer = hf_component(param, family, stacks)
            elif any(re.search(r"(?:^|\.)" + pattern, module) for pattern, _ in family.model_stacks):
                name, layer = CORE, None  # a stack beside the model's layers: its products are model-level, as ours
            else:
                found = LAYER.search(module)
                if found:
                    name, layer = CORE, stack_start(module, found, stacks) + our_layer(int(found.group(1)), found.group(2), family)
                else:
                    found = LAYER_ITSELF.search(module)  # the layer's own: AltUp's mix
                    name, layer = (CORE, int(found.group(1))) if found else (f"(unmatched) {module}", None)
            key = (name, run_of.get(layer) if layer is not None else None)
            theirs[key] = theirs.get(key, 0) + flops
        ours: dict[tuple[str, tuple[int, int] | None], int] = {}
        for row in tally(spec, convention="exact", seq_len=run.seq_len, batch=run.batch).rows:
            if row.flops:
                key = (CORE if row.role == "core" else row.component, stored.get(row.layers, row.layers) if row.layers else None)
                ours[key] = ours.get(key, 0) + int(row.flops * run.seq_len * run.batch)
        ours = fuse(ours, theirs)
        checks += [
            FlopCheck(run.batch, run.seq_len, name, layers, ours.get((name, layers), 0), theirs.get((name, layers), 0))
            for name, layers in list(ours) + [k for k in theirs if k not in ours]
        ]
    return tuple(checks)
