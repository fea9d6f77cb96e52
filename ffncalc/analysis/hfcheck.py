"""The imported spec proven against transformers itself: the model class that a config.json names,
instantiated on the meta device, its parameters counted module by module against ``count.py``; and
(``measure(..., flops=True)``) one forward of that class on the meta device under torch's FlopCounterMode,
its matmul FLOPs module by module against ``count.py``'s ``exact`` convention.

Only ``verify --hf`` imports this module, and only this module imports transformers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import Model
from ..sources.hf import Config, family_of, text_only, to_spec
from ..sources.hf.names import LAYER, fuse, our_layer, stack_start
from ..sources.hf.names import component as hf_component
from .count import tally
from .hfrun import FLOP_METHOD, UNCOUNTED_OPS, FlopRun, flop_run  # noqa: F401  (their home; hfcheck's names)
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


# Text configs whose causal LM the causal-LM mapping reaches only through their wrapper's model_type (MllamaForCausalLM,
# mapped as "mllama", built from MllamaTextConfig)
TEXT_CLASSES = {"mllama_text_model": "MllamaForCausalLM"}


def instantiate(c: Config):
    """The transformers class the config's model_type means (its causal LM; an encoder's masked LM; an
    encoder-decoder's conditional generation class), built on the
    meta device (no weights), with eager attention (the masked square, in plain matmuls) and, where the class
    offers the choice, the "batched_mm" routed experts (each token's top_k experts as one batched matmul: no data-dependent shapes)."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM, AutoModelForSpeechSeq2Seq

    from ..sources.hf.coverage import ENCODER_TYPES, SEQ2SEQ_TYPES, SPEECH_SEQ2SEQ_TYPES, WHOLE_IS_TEXT

    transformers.logging.set_verbosity_error()
    if c.model_type in WHOLE_IS_TEXT:  # a causal LM transformers maps only as a multimodal LM (Mistral 4)
        from transformers import AutoModelForMultimodalLM as AutoModelForCausalLM
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
            if data["model_type"] in TEXT_CLASSES:  # a causal LM of a text config no auto class maps
                own = getattr(transformers, TEXT_CLASSES[data["model_type"]])
                return own._from_config(config, attn_implementation="eager")
            return auto.from_config(config, attn_implementation="eager", experts_implementation="batched_mm")
    except Exception as exc:  # noqa: BLE001 — transformers' validation raises its own classes
        raise refused(c, exc) from None


# The FLOP runs: batch 1, a short sequence and one past every sliding window and attention chunk of the
# config (so that windowed and chunked layers run with keys outside their reach); windowless: WINDOWLESS.
FLOP_BATCH, SHORT, WINDOWLESS = 1, 8, 32
# Types whose forward on a CPU or the meta device skips work it does on a GPU: their FLOPs are not measured, and why
CUDA_ONLY = {
    "mra": "its attention runs only in transformers' CUDA kernels (kernels-community/mra): without them mra2_attention "
    "returns zeros, so a CPU or meta forward computes none of its products",
}


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
        if c.model_type in CUDA_ONLY:
            lengths, unmeasured = (), f"not run: {CUDA_ONLY[c.model_type]}"
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
    # the longest window or chunk a config names (LongT5: local_radius, its blocks one longer; LED: attention_window)
    keys = ("sliding_window", "attention_chunk_size", "window_size", "local_radius", "attention_window")
    reach += [c.data[k] for k in keys if type(c.data.get(k)) is int]
    unit = lcm(1, *(b.chunk_tokens() for b in spec.blocks() if b.chunk_tokens() is not None))
    short = -(-SHORT // unit) * unit
    long = -(-(max(reach) + SHORT if reach else WINDOWLESS) // unit) * unit
    return short, max(long, 2 * short)


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
                    top = next((n for pattern, n in family.top_modules if re.search(r"(^|\.)" + pattern, module)), None)
                    # the head's own module, multiplying a weight several parameters make (MobileBERT's: the tied table
                    # concatenated with its own rows), is the head
                    head = "lm_head" if top == "lm_head" else None
                    name, layer = (CORE, int(found.group(1))) if found else (head or f"(unmatched) {module}", None)
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
