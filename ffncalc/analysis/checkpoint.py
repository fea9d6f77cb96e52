"""A checkpoint's stored tensors, component by component, and — with a config.json beside them — held
against ffncalc's analytic count of that config, every difference explained.

Names map to components the way ``verify --hf`` maps transformers' (``sources/hf/names.py``, the family's
module names); GGUF's names (``blk.N.attn_q``, ``ffn_down_exps``, …) by the table below. Parameters are
logical: a packed weight counts the values it holds (``sources/checkpoint/packing.py``); scales,
zero-points and indices are reported apart and never counted. No torch, no transformers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import Model
from ..sources.checkpoint import Checkpoint
from ..sources.checkpoint.packing import PARAM, interpret
from ..sources.hf.config import COMMON_LAYER_MODULES, COMMON_TOP_MODULES, MOE_MODULES, Family
from ..sources.hf.names import LAYER, component, fuse
from .count import tally

# Tensors a checkpoint stores that are buffers, not parameters, in the transformers class and in ffncalc.
BUFFERS = re.compile(
    r"(^|\.)(e_score_correction_bias|inv_freq|masked_bias|exp_probs_b|rope_freqs)(\.weight|\.bias)?$"
    r"|(^|\.)attn\.bias$"
)
# The other parts of a multimodal checkpoint: ffncalc counts the language model only.
TOWERS = re.compile(
    r"(^|\.)(vision_tower|vision_model|visual|vision_encoder|image_encoder|audio_tower|audio_model|"
    r"audio_encoder|multi_modal_projector|mm_projector|vision_projection|embed_vision|embed_audio|"
    r"image_newline)(\.|$)"
)
MTP = re.compile(r"(^|\.)(mtp|mtp_layers|nextn)(\.|$)")

# GGUF tensor names (llama.cpp's gguf-py constants, MODEL_TENSOR names) -> components.
GGUF_TOP = {
    "token_embd": "embed",
    "position_embd": "pos_embed",
    "token_embd_norm": "embed_norm",
    "output_norm": "final_norm",
    "output": "lm_head",
}
GGUF_LAYER = {
    "attn_q": "attn.q",
    "attn_k": "attn.k",
    "attn_v": "attn.v",
    "attn_qkv": "attn.q+k+v",
    "attn_output": "attn.o",
    "attn_q_norm": "attn.q_norm",
    "attn_k_norm": "attn.k_norm",
    "attn_sinks": "attn.sinks",
    "attn_q_a": "attn.q_a",
    "attn_q_b": "attn.q_b",
    "attn_q_a_norm": "attn.q_a_norm",
    "attn_kv_a_mqa": "attn.kv_a",
    "attn_kv_a_norm": "attn.kv_a_norm",
    "attn_kv_b": "attn.kv_b",
    "attn_k_b": "attn.kv_b",
    "attn_v_b": "attn.kv_b",
    "ffn_gate": "ffn.gate",
    "ffn_up": "ffn.up",
    "ffn_down": "ffn.down",
    "ffn_gate_exps": "ffn.experts",
    "ffn_up_exps": "ffn.experts",
    "ffn_down_exps": "ffn.experts",
    "ffn_gate_up_exps": "ffn.experts",
    "ffn_gate_shexp": "ffn.shared",
    "ffn_up_shexp": "ffn.shared",
    "ffn_down_shexp": "ffn.shared",
    "ffn_gate_inp": "ffn.router",
    "ffn_gate_inp_shexp": "ffn.shared_gate",
    "attn_norm": "norms",
    "attn_norm_2": "norms",
    "ffn_norm": "norms",
    "post_attention_norm": "norms",
    "post_ffw_norm": "norms",
    "attn_post_norm": "norms",
    "ffn_post_norm": "norms",
    "layer_output_norm": "norms",
}
_GGUF_BLOCK = re.compile(r"^blk\.(\d+)\.(.+?)(\.weight|\.bias)?$")

# Without a config.json: the module names most families share.
GENERIC = Family(
    "(no config)",
    lambda c: {},
    MOE_MODULES
    + (
        (r"mlp\.router$", "ffn.router"),
        (r"q_a_proj$", "attn.q_a"),
        (r"q_a_layernorm$", "attn.q_a_norm"),
        (r"q_b_proj$", "attn.q_b"),
        (r"kv_a_proj_with_mqa$", "attn.kv_a"),
        (r"kv_a_layernorm$", "attn.kv_a_norm"),
        (r"kv_b_proj$", "attn.kv_b"),
    )
    + COMMON_LAYER_MODULES,
    COMMON_TOP_MODULES + ((r"wte$", "embed"), (r"wpe$", "pos_embed"), (r"ln_f$", "final_norm")),
)

# Within a part, components in model order; others after them, in the order the checkpoint lists them.
MODEL_ORDER = (
    "embed",
    "embed.project_in",
    "pos_embed",
    "attn.q_a",
    "attn.q_a_norm",
    "attn.q_b",
    "attn.q",
    "attn.k",
    "attn.v",
    "attn.q+k+v",
    "attn.kv_a",
    "attn.kv_a_norm",
    "attn.kv_b",
    "attn.q_norm",
    "attn.k_norm",
    "attn.sinks",
    "attn.o",
    "ffn.gate",
    "ffn.up",
    "ffn.gate+up",
    "ffn.down",
    "ffn.shared",
    "ffn.shared_gate",
    "ffn.experts",
    "ffn.router",
    "embed_norm",
    "norms",
    "final_norm",
    "embed.project_out",
    "lm_head",
)
GROUP_ORDER = ("embedding", "attention", "mixer", "ffn", "experts", "router", "norms", "head", "mtp", "tower", "buffer", "other")


def group(name: str) -> str:
    """The part of the model a component belongs to."""
    if name in ("embed", "pos_embed", "embed.project_in", "embed.project_out"):  # OPT's projections: the embedding's
        return "embedding"
    if name in ("norms", "final_norm", "embed_norm"):
        return "norms"
    if name == "lm_head":
        return "head"
    if name.startswith("attn."):
        return "attention"
    if name.startswith(("mixer.", "linear_attn.")):
        return "mixer"
    if name == "ffn.experts":
        return "experts"
    if name in ("ffn.router", "ffn.shared_gate"):
        return "router"
    if name.startswith("ffn."):
        return "ffn"
    if name in ("mtp", "buffer", "tower"):
        return name
    if name.startswith("buffer:"):
        return "buffer"
    if name.startswith("tower:"):
        return "tower"
    return "other"


_INDEX = re.compile(r"\.\d+(?=\.|$)")
_FIRST = re.compile(r"(?:^|\.)(?:layers|h|blk)\.(\d+)\.")


def _whole(ckpt) -> str | None:
    """The part beside the language model where the checkpoint's config.json is read whole ("vision", "audio")."""
    from ..sources.hf.towers import tower_of

    config = getattr(ckpt, "config", None)
    return None if config is None else tower_of(config)


class Locator:
    """``locate`` remembered per name pattern: a checkpoint's names repeat but for layer and expert numbers."""

    def __init__(self, fmt: str, family: Family, n_layers: int | None, whole: str | None = None):
        self.fmt, self.family, self.n_layers, self.seen, self.whole = fmt, family, n_layers, {}, whole

    def __call__(self, name: str) -> str:
        from ..sources.hf.towers import indexed

        if indexed(name, self.whole):  # a component its indices name (MUSE Spark's audio stages): not shared
            return locate(name, self.fmt, self.family, self.n_layers, self.whole)[0]
        layer = _FIRST.search(name)
        extra = bool(layer and self.n_layers is not None and int(layer.group(1)) >= self.n_layers)
        key = (_INDEX.sub(".#", name), extra)
        if self.whole and self.fmt != "gguf":  # a tower's component may be named by a stage's index: its whole name
            from ..sources.hf.towers import component as tower_component

            found = tower_component(name, self.whole)
            if found is not None:
                return found
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = locate(name, self.fmt, self.family, self.n_layers, self.whole)[0]
        return found


def locate(name: str, fmt: str, family: Family, n_layers: int | None, whole: str | None = None) -> tuple[str, int | None]:
    """A parameter's name -> (component, layer). Buffers, other towers and multi-token prediction first;
    a layer past the model's last (DeepSeek and GLM store MTP as extra layers) is MTP. ``whole``: the part a config
    read whole has beside its language model ("vision", "audio"), whose tensors are its components (sources/hf/towers)."""
    buffer = BUFFERS.search(name)
    if buffer:
        return f"buffer: {buffer.group(2) or 'attn.bias'}", None
    if whole and fmt != "gguf":
        from ..sources.hf.towers import component as tower_component

        found = tower_component(name, whole)
        if found is not None:
            return found, None
    tower = TOWERS.search(name)
    if tower:
        return f"tower: {tower.group(2)}", None
    if MTP.search(name):
        return "mtp", None
    if fmt == "gguf":
        found = _GGUF_BLOCK.match(name)
        if found:
            layer = int(found.group(1))
            if n_layers is not None and layer >= n_layers:
                return "mtp", layer
            return GGUF_LAYER.get(found.group(2), f"(unmatched) {found.group(2)}"), layer
        stem = re.sub(r"\.(weight|bias)$", "", name)
        return GGUF_TOP.get(stem, f"(unmatched) {stem}"), None
    layer = LAYER.search(name.rsplit(".", 1)[0])
    if layer and n_layers is not None and int(layer.group(1)) >= n_layers:
        return "mtp", int(layer.group(1))
    return component(name, family)


@dataclass(frozen=True)
class Component:
    """One component's stored tensors."""

    name: str
    group: str
    tensors: int = 0
    params: int = 0
    bytes: int = 0  # the parameters' own storage
    storage: dict[str, int] = field(default_factory=dict)  # how stored -> logical parameters
    dtypes: dict[str, int] = field(default_factory=dict)  # dtype as the file states it -> bytes
    decoding: dict[str, tuple[int, int]] = field(default_factory=dict)  # role -> (tensors, bytes)

    @property
    def decoding_bytes(self) -> int:
        return sum(b for _, b in self.decoding.values())


@dataclass(frozen=True)
class Compared:
    """One component: the checkpoint's logical parameters against ffncalc's count of the config."""

    component: str
    stored: int
    ours: int
    why: str = ""
    explained: bool = True

    @property
    def ok(self) -> bool:
        return self.stored == self.ours


@dataclass(frozen=True)
class CheckpointCount:
    checkpoint: Checkpoint
    components: tuple[Component, ...]
    compared: tuple[Compared, ...] | None  # None: no config.json to compare with
    model: str | None  # the config's model, where compared
    notes: tuple[str, ...]
    ffncalc_params: int | None = None

    @property
    def params(self) -> int:
        return sum(c.params for c in self.components if c.group != "buffer")

    @property
    def param_bytes(self) -> int:
        return sum(c.bytes for c in self.components if c.group != "buffer")

    @property
    def decoding_bytes(self) -> int:
        return sum(c.decoding_bytes for c in self.components)

    @property
    def buffer_elements(self) -> int:
        return sum(c.params for c in self.components if c.group == "buffer")

    @property
    def unexplained(self) -> list[Compared]:
        return [c for c in self.compared or () if not c.ok and not c.explained]


def count(ckpt: Checkpoint, spec: Model | None = None) -> CheckpointCount:
    """Every stored tensor counted by component; with ``spec`` (the config beside it), compared."""
    from ..sources import hf

    family = hf.family_of(ckpt.config) if ckpt.config is not None else GENERIC
    n_layers = spec.n_layers if spec is not None else None
    stored, notes = interpret(ckpt.tensors, ckpt.quantization)
    # Tally by name pattern first (layer and expert numbers dropped), then place each pattern once.
    from ..sources.hf.towers import indexed

    acc: dict[tuple, list] = {}
    index, first, whole = _INDEX.sub, _FIRST.search, _whole(ckpt)
    from ..sources.hf.towers import component as tower_component

    for s in stored:
        base, t = s.base, s.tensor
        layer = first(base)
        extra = layer is not None and n_layers is not None and int(layer.group(1)) >= n_layers
        # a name whose indices name its component (MUSE Spark's audio stages) is its own pattern; a tower's component
        # may be named by a stage's index (Gemma 3n's MobileNetV5, FastViT's, DaViT's): it joins the key
        tower = tower_component(base, whole) if whole and ckpt.format != "gguf" else None
        key = (base if indexed(base, whole) else index(".#", base), extra, s.role, s.storage, t.dtype, tower)
        a = acc.get(key)
        if a is None:
            acc[key] = [1, s.params, t.nbytes, base]
        else:
            a[0] += 1
            a[1] += s.params
            a[2] += t.nbytes
    parts: dict[str, dict] = {}
    placed: dict[tuple, str] = {}
    for (pattern, extra, role, storage, dtype, tower), (n, params, nbytes, example) in acc.items():
        name = placed.get((pattern, extra, tower))
        if name is None:
            name = placed[(pattern, extra, tower)] = locate(example, ckpt.format, family, n_layers, whole)[0]
        p = parts.setdefault(name, {"tensors": 0, "params": 0, "bytes": 0, "storage": {}, "dtypes": {}, "decoding": {}})
        p["dtypes"][dtype] = p["dtypes"].get(dtype, 0) + nbytes
        if role == PARAM:
            p["tensors"] += n
            p["params"] += params
            p["bytes"] += nbytes
            p["storage"][storage] = p["storage"].get(storage, 0) + params
        else:
            had, b = p["decoding"].get(role, (0, 0))
            p["decoding"][role] = (had + n, b + nbytes)
    order = {g: i for i, g in enumerate(GROUP_ORDER)}
    within = {name: i for i, name in enumerate(MODEL_ORDER)}
    components = tuple(
        sorted(
            (Component(name, group(name), **p) for name, p in parts.items()),
            key=lambda c: (order[c.group], within.get(c.name, len(within))),
        )
    )  # stable
    notes = list(ckpt.notes) + notes
    if ckpt.missing:
        files = sorted({f for _, f in ckpt.missing})
        notes.append(
            f"missing: {len(files)} file(s) the checkpoint names are absent: {', '.join(files)} "
            f"({len([n for n, _ in ckpt.missing if not n.startswith('(')]):,} tensors listed in them)"
        )
    if spec is None:
        return CheckpointCount(ckpt, components, None, None, tuple(notes))
    compared, total = _compare(ckpt, components, spec, family)
    return CheckpointCount(ckpt, components, tuple(compared), spec.name or ckpt.label, tuple(notes), total)


def _compare(ckpt: Checkpoint, components: tuple[Component, ...], spec: Model, family: Family):
    t = tally(spec, partial=True)  # parameters alone
    ours: dict[tuple[str, None], int] = {}
    for row in t.rows:
        if row.params or row.tied:
            ours[(row.component, None)] = ours.get((row.component, None), 0) + row.params
    mine = {c.name: c.params for c in components if c.group not in ("mtp", "tower", "buffer")}
    ours = {k[0]: v for k, v in fuse(ours, [(n, None) for n in mine]).items()}
    missing: dict[str, list[str]] = {}
    where = Locator(ckpt.format, family, spec.n_layers, _whole(ckpt))
    for name, f in ckpt.missing:
        if not name.startswith("("):
            comp = where(name)
            missing.setdefault(comp, []).append(f)

    def lost(name: str) -> str:
        files = sorted(set(missing.get(name, ())))
        return f"{len(missing[name]):,} of its tensors are in missing file(s) {', '.join(files)}" if files else ""

    out = []
    for name in list(ours) + [n for n in mine if n not in ours]:
        have, want = mine.get(name, 0), ours.get(name, 0)
        if have == want:
            tied = name == "lm_head" and spec.tie_embeddings and not have
            out.append(Compared(name, have, want, "tied to the embedding, stored once" if tied else ""))
        elif name == "lm_head" and spec.tie_embeddings and have == mine.get("embed"):
            out.append(
                Compared(
                    name,
                    have,
                    want,
                    "tie_word_embeddings: the head is the embedding matrix, counted once; the checkpoint stores it a second time",
                )
            )
        elif have < want and lost(name):
            out.append(Compared(name, have, want, lost(name)))
        elif name not in ours:
            out.append(Compared(name, have, want, "not in ffncalc's model of this config", explained=False))
        elif have == 0:
            out.append(Compared(name, have, want, "the checkpoint stores no tensor for it", explained=False))
        else:
            out.append(
                Compared(
                    name,
                    have,
                    want,
                    f"{'more' if have > want else 'fewer'} parameters stored than the config describes",
                    explained=False,
                )
            )
    extra = {c.name: c for c in components if c.group in ("mtp", "tower", "buffer")}
    mtp = extra.get("mtp")
    if mtp or t.mtp_params:
        have, want = (mtp.params if mtp else 0), t.mtp_params + t.mtp_copies
        if not mtp:
            why = f"the checkpoint leaves out the {spec.mtp_layers} multi-token prediction layer(s) the config names"
        elif not t.mtp_params:
            why, want = "multi-token prediction layers the config does not name (ffncalc counts none)", 0
        elif have == want:
            why = (
                f"multi-token prediction, which ffncalc counts apart ({t.mtp_params:,}) and here with the "
                f"embedding and head copies a checkpoint stores ({t.mtp_copies:,})"
            )
        elif have == t.mtp_params:
            why, want = "multi-token prediction, which ffncalc counts apart from the model", t.mtp_params
        else:
            why = lost("mtp") or "multi-token prediction: differs from ffncalc's count of its layers"
        out.append(Compared("mtp", have, want, why, explained=have == want or bool(lost("mtp")) or not mtp))
    for c in extra.values():
        if c.group == "tower":
            parts = ", ".join(ckpt.config.towers) if getattr(ckpt.config, "towers", ()) else "no tower config"
            out.append(
                Compared(c.name, c.params, 0, f"another part of a multimodal model ({parts}); ffncalc counts the language model")
            )
        elif c.group == "buffer":
            out.append(
                Compared(
                    c.name, c.params, 0, "a buffer, not a parameter: transformers registers it as one and ffncalc does not count it"
                )
            )
    return out, t.params


def measure(ref: str, as_family: str | None = None, flops_options: tuple[str, ...] = ()) -> CheckpointCount:
    """Read a checkpoint's headers (a path, or a repo id) and count them; compared with the config.json
    beside them when ffncalc reads it. ``flops_options``: options of an analytic count given with a
    checkpoint, which has no FLOPs to count."""
    import gc
    from dataclasses import replace

    from ..errors import InputError
    from ..sources import checkpoint, hf

    if flops_options:
        raise InputError(
            f"{', '.join(flops_options)}: for counting FLOPs of a model; {ref} is a checkpoint, "
            "counted by its stored tensors (count its config.json for FLOPs)"
        )
    # A large header is a hundred thousand small objects, none in a cycle: the cycle collector would only
    # walk them again and again (a second of a DeepSeek-V3-sized header).
    collecting = gc.isenabled()
    gc.disable()
    try:
        ckpt = checkpoint.load(ref, as_family)
        spec = None
        if ckpt.config is not None:
            try:
                spec = hf.to_spec(ckpt.config)
            except InputError as exc:
                ckpt = replace(ckpt, config=None, notes=ckpt.notes + (f"not compared with config.json: {exc}",))
        return count(ckpt, spec)
    finally:
        if collecting:
            gc.enable()
