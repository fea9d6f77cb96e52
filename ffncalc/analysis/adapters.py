"""LoRA and DoRA adapters as peft builds them: which modules a target list adapts, and the trainable parameters of
each, exact. Pure arithmetic; no torch, no peft.

A LoRA adapter of rank r on a Linear(in, out) is A (r × in) and B (out × r), no bias: r·(in + out) parameters
(Hu et al. 2021 §4.1; peft/tuners/lora/layer.py LoraLayer.update_layer). DoRA adds a magnitude vector of out
elements (Liu et al. 2024; peft/tuners/lora/dora.py DoraLinearLayer: weight of shape out). A module to save is
copied whole and trained (peft ModulesToSaveWrapper), each copy counted, tied or not. lora_alpha, rsLoRA's scaling
(alpha/√r) and PiSSA's or OLoRA's initialisation change values, not shapes: nothing countable.

Targets are matched as peft matches a list: a module whose name is, or ends with, a target (peft/tuners/
tuners_utils.py check_target_module_exists). ``all-linear`` is every nn.Linear but the output head
(_maybe_include_all_linear_layers). In transformers 5 a mixture's routed experts are fused 3-D parameters and its
router a module of its own, not nn.Linear: peft reaches them only through its conversion of the names transformers 4
used (peft/utils/transformers_weight_conversion.py _convert_peft_config_moe), for the model types that convert
(PEFT_MOE): there the expert names become target_parameters (a ParamWrapper: A of (r·E) × in, B of out × (r·E);
peft/tuners/lora/layer.py ParamWrapper.update_layer), the gate and up projections fused into gate_up_proj at rank
2r (so both or neither), and the router's weight a parameter adapted at rank r; and those names then adapt no
nn.Linear (a dense layer's or a shared expert's gate_proj stays frozen). DoRA does not work on a ParamWrapper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError
from ..model.stack import Model
from .plan import Tuning

ALL_LINEAR = "all-linear"
# peft 0.21's conversion of transformers 4 MoE names (transformers_weight_conversion.py _MOE_TARGET_MODULE_MAPPING,
# _MOE_FUSED_TARGETS): name -> the linear it stands for (router, or the experts' gate, up, down)
MOE_NAMES = {
    "mixtral": {"gate": "router", "w1": "gate", "w3": "up", "w2": "down"},
    "qwen2_moe": {"gate": "router", "gate_proj": "gate", "up_proj": "up", "down_proj": "down"},
}
# the model types converted, by pattern: transformers 5.23 conversion_mapping._MODEL_TO_CONVERSION_PATTERN (with
# peft's own mixtral -> mixtral), those that get_checkpoint_conversion_mapping answers for (a test keeps it equal)
PEFT_MOE = {
    **{t: "mixtral" for t in ("minimax", "minimax_m2", "mixtral")},
    **{
        t: "qwen2_moe"
        for t in (
            "Dots3NoteTextModel afmoe deepseek_v2 deepseek_v3 deepseek_v32 dots1 ernie4_5_moe glm4_moe glm4_moe_lite "
            "glm_moe_dsa glm4v_moe longcat_flash solar_open mellum qwen3_moe beam qwen3_omni_moe qwen3_omni_moe_thinker "
            "qwen3_omni_moe_text qwen3_next hunyuan_v1_moe flex_olmo olmoe exaone_moe cohere2_moe UnlimitedOcrTextModel"
        ).split()
    },
}
TOP_MODULES = ("lm_head", "embed_tokens")


@dataclass(frozen=True)
class Adapted:
    """One adapted module name in one run of layers (or the head): its components, instances and parameters."""

    module: str  # the transformers name matched (q_proj; gate_up_proj for fused experts)
    component: str  # ours (attn.q; ffn.experts.gate+up)
    layers: tuple[int, int] | None
    d_in: int
    d_out: int
    instances: int  # modules (or experts) adapted, over the run's layers
    rank: int  # per instance
    params: int  # LoRA A and B, all instances
    magnitude: int = 0  # DoRA's, all instances
    share: tuple[int, int] = (1, 1)  # (experts a token runs, experts): the share of a routed expert's adapters a token uses

    @property
    def active(self) -> int:
        """Adapter parameters one token passes through (a routed expert's: its top k of the experts)."""
        k, e = self.share
        return self.params * k // e


@dataclass(frozen=True)
class Adapters:
    tune: Tuning
    adapted: tuple[Adapted, ...]
    saved: tuple[tuple[str, int], ...]  # (module, parameters) trained whole
    notes: tuple[str, ...]

    @property
    def lora_params(self) -> int:
        return sum(a.params + a.magnitude for a in self.adapted)

    @property
    def trainable(self) -> int:
        return self.lora_params + sum(n for _, n in self.saved)

    def per_layer(self, n_layers: int) -> list[int]:
        """Adapter parameters in each layer of the stack (the head's and saved modules' apart)."""
        out = [0] * n_layers
        for a in self.adapted:
            if a.layers:
                first, stop = a.layers
                for i in range(first, stop):
                    out[i] += (a.params + a.magnitude) // (stop - first)
        return out


def family_names(spec: Model) -> dict[str, str]:
    """Component -> transformers module name where the model's family names a linear its own way: a fused module
    (phi3's qkv_proj for attn.q+k+v) or another name (phi's dense for attn.o), from the family's module patterns."""
    if spec.model_type is None:
        return {}
    from ..sources.hf.config import COMMON_LAYER_MODULES, FAMILIES

    fam = FAMILIES.get(spec.model_type)
    out: dict[str, str] = {}
    for pattern, component in fam.layer_modules if fam else ():
        leaf = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\$$", pattern)
        if (pattern, component) in COMMON_LAYER_MODULES or not leaf:
            continue
        out.setdefault(component, leaf.group(1))
    return out


def _modules(spec: Model) -> list[tuple]:
    """(name, component, layers, in, out, instances, kind) of every linear in the layers, fused where the family
    fuses them; the head last."""
    names = family_names(spec)
    fused = {part: (c, n) for c, n in names.items() if "+" in c for part in _parts(c)}
    out = []
    for run in spec.runs():
        for _, block in run.layer.blocks():
            groups: dict[str, list] = {}
            for lin in block.linears(spec):
                comp, name = fused.get(lin.component, (lin.component, names.get(lin.component, lin.module)))
                groups.setdefault(comp, []).append((name, lin))
            for comp, lins in groups.items():
                name, first = lins[0]
                d_out = sum(lin.d_out for _, lin in lins)
                share = (block.active_experts(), block.routed_experts()) if first.kind == "experts" else (1, 1)
                out.append((name, comp, run.span, first.d_in, d_out, run.n * first.copies, first.kind, share))
    # the output head and the token table: nn.Linear and nn.Embedding, which a target may name (all-linear leaves both
    # out); an embedding's adapter is lora_embedding_A (r × vocabulary) and B (width × r), DoRA's magnitude its width
    # (peft/tuners/lora/layer.py Embedding.update_layer; dora.py DoraEmbeddingLayer)
    out.append(("lm_head", "lm_head", None, spec.head_width, spec.vocab_size, 1, "head", (1, 1)))
    out.append(("embed_tokens", "embed", None, spec.vocab_size, spec.d_model, 1, "embedding", (1, 1)))
    return out


def _uncovered(spec: Model, modules: list[tuple]) -> int:
    """Parameters of linear weights (out × in terms) the layers' blocks do not list: a part's own (an encoder's stack,
    cross-attention), which _modules does not walk."""
    from .count import tally

    weights = sum(r.params for r in tally(spec).rows if r.role == "weight" and len(r.shape) == 2)
    listed = sum(m[3] * m[4] * m[5] for m in modules if m[6] not in ("head", "embedding"))
    return max(0, weights - listed)


def _parts(component: str) -> list[str]:
    prefix, _, rest = component.rpartition(".")
    head, *others = component[len(prefix) + 1 :].split("+") if prefix else component.split("+")
    return [f"{prefix}.{p}" if prefix else p for p in [head, *others]]


def adapters(spec: Model, lora: Tuning) -> Adapters:
    """What peft adapts and trains for ``lora`` on ``spec``; a case peft refuses is refused (InputError, the
    option named)."""
    if lora.lora < 1:
        raise InputError(f"--lora {lora.lora}: a rank of at least 1")
    moe = MOE_NAMES.get(PEFT_MOE.get(spec.model_type or "", ""), {})
    modules = _modules(spec)
    uncovered = _uncovered(spec, modules)
    if uncovered:
        raise InputError(
            f"--lora: {uncovered:,} parameters of this model's linear weights lie beside its layers' blocks (an encoder, "
            "cross-attention or another part), which adapters are not counted on yet"
        )
    asked = set(lora.targets)
    if ALL_LINEAR in asked:
        if len(asked) > 1:
            raise InputError("--lora-targets all-linear: a list of module names or all-linear, not both")
        asked = {m[0] for m in modules if m[6] == "linear"} | set(moe)
    as_params = {t for t in asked if t in moe}
    fused = {moe[t] for t in as_params} & {"gate", "up"}
    if len(fused) == 1:
        one = next(t for t in as_params if moe[t] in fused)
        other = next(t for t, role in moe.items() if role in {"gate", "up"} - fused)
        raise InputError(
            f"--lora-targets {','.join(lora.targets)}: {one} without {other}, which transformers 5 fuses with it into "
            "gate_up_proj; peft refuses it (target both or neither)"
        )
    roles = {moe[t] for t in as_params}
    r, out, notes = lora.lora, [], []
    for name, comp, layers, d_in, d_out, n, kind, share in modules:
        role = "router" if kind == "router" else comp.rsplit(".", 1)[-1] if kind == "experts" else None
        if kind in ("linear", "head", "embedding") and name in asked - as_params:
            out.append(Adapted(name, comp, layers, d_in, d_out, n, r, n * r * (d_in + d_out), n * d_out if lora.dora else 0))
        elif kind == "router" and "router" in roles:
            out.append(Adapted("gate", comp, layers, d_in, d_out, n, r, n * r * (d_in + d_out)))
        elif kind == "experts" and role in roles:
            if role == "up":
                continue  # fused with gate below
            experts = n // (layers[1] - layers[0]) if layers else n
            per = layers[1] - layers[0] if layers else 1
            if role == "gate":  # gate_up_proj: in d, out 2f, rank 2r per expert
                rr, out_f, label = 2 * r, 2 * d_out, "gate_up_proj"
            else:
                rr, out_f, label = r, d_out, "down_proj"
            params = per * rr * experts * (d_in + out_f)
            out.append(Adapted(label, comp if role == "down" else comp + "+up", layers, d_in, out_f, n, rr, params, 0, share))
    if lora.dora and roles:
        raise InputError(
            f"--dora with --lora-targets {','.join(lora.targets)}: peft's DoRA does not work on fused expert or router "
            "parameters (lora.ParamWrapper does not work with use_dora=True); leave out the experts' and router's names"
        )
    saved = []
    for m in lora.modules_to_save:
        if m not in TOP_MODULES:
            raise InputError(f"--lora-modules-to-save {m}: one of {', '.join(TOP_MODULES)}")
        table = spec.vocab_size * (spec.head_width if m == "lm_head" else spec.d_model)
        saved.append((m, table + (spec.vocab_size if m == "lm_head" and spec.lm_head_bias else 0)))
    if not out:
        known = sorted({m[0] for m in modules if m[6] in ("linear", "head", "embedding")} | set(moe))
        raise InputError(
            f"--lora-targets {','.join(lora.targets)}: no module of this model has these names, and peft refuses it "
            f"(its names: {', '.join(known)})"
        )
    if any(m[6] == "experts" for m in modules) and not roles:
        notes.append(
            "routed experts not adapted: in transformers 5 they are fused parameters, which peft targets only through "
            "the transformers 4 names of the model types it converts"
        )
    return Adapters(lora, tuple(out), tuple(saved), tuple(notes))
