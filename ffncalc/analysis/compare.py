"""Dense vs gated FFN at an equal budget: the other kind's width, and both blocks side by side.

Pure arithmetic over ``sizing.py`` and ``count.py``; no printing, no torch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Literal, get_args

from ..blocks.dense_ffn import DenseActivation
from ..blocks.gated_ffn import GATED_VARIANTS, GateActivation
from ..errors import InputError
from ..model.stack import Model
from .count import plain, tally
from .sizing import Kind, block_flops, block_params, ffn_activation_elements, ffn_block, match_width

Match = Literal["params", "flops"]

# --activation accepts a function name or a gated variant's name (Shazeer 2020).
VARIANT_ACTIVATIONS = {"glu": "sigmoid", "bilinear": "identity", "reglu": "relu", "geglu": "gelu", "swiglu": "silu"}
FUNCTION_ALIASES = {"swish": "silu"}

# Shazeer 2020, "GLU Variants Improve Transformer", Table 1: T5-base (d_model 768, FFN d_ff 3072 dense or
# 2048 gated, no biases), held-out log-perplexity on C4 after 65,536 and 524,288 steps.
SHAZEER_2020 = {
    "ReLU": (1.997, 1.677),
    "GELU": (1.983, 1.679),
    "Swish": (1.994, 1.683),
    "GLU": (1.982, 1.663),
    "Bilinear": (1.960, 1.648),
    "GEGLU": (1.942, 1.633),
    "SwiGLU": (1.944, 1.636),
    "ReGLU": (1.953, 1.645),
}
SHAZEER_SOURCE = "Shazeer 2020, GLU Variants Improve Transformer, Table 1 (T5-base, log-perplexity, 65k / 524k steps)"
_SHAZEER_DENSE = {"relu": "ReLU", "gelu": "GELU", "gelu_tanh": "GELU", "silu": "Swish"}


@dataclass(frozen=True)
class Side:
    kind: Kind
    activation: str
    variant: str
    d_ff: int
    bias: bool
    params: int  # one block
    flops: int  # forward matmul FLOPs per token, one block
    activations: int  # elements per token a forward keeps for backward, one block
    rank_linear: int  # rank bound of the hidden map as a linear function of x
    rank_kernel: int  # rank bound over the degree-2 features x⊗x (gated); the linear bound for dense
    model_params: int | None = None  # the whole model with this FFN
    model_flops: int | None = None  # the whole model's forward matmul FLOPs per token (exact, at its context)
    reference: tuple[float, float] | None = None  # Shazeer 2020 log-perplexities, where the pair is T5-base's

    @property
    def train_flops(self) -> int:
        return 3 * self.flops  # forward + backward (2 × forward)


@dataclass(frozen=True)
class Comparison:
    model: str | None
    d_model: int
    ffn_layers: int  # layers whose FFN is compared (1 for a bare block)
    match: Match
    multiple_of: int
    moe: str | None  # set when the compared FFN is a mixture's expert
    source: Side
    target: Side

    @property
    def residual(self) -> int:
        """Target minus source in the matched figure (params or FLOPs), one block."""
        return getattr(self.target, self.match) - getattr(self.source, self.match)

    @property
    def exact(self) -> bool:
        return self.residual == 0


def side(d_model: int, ffn) -> Side:
    """One block's figures. Capacity (seeds/000): the dense hidden map act(x·W) is one projection of x,
    rank ≤ min(d_model, d_ff); the gated map (x·W_gate) ⊙ (x·W_up) is, before its activation, a linear
    map of the degree-2 features x⊗x (d_model(d_model+1)/2 distinct monomials), so rank ≤ min(d_ff, that)."""
    ffn = ffn.resolve(d_model)
    kind: Kind = ffn.kind
    f = ffn.d_ff
    linear = min(d_model, f)
    kernel = min(f, d_model * (d_model + 1) // 2) if kind == "gated" else linear
    return Side(
        kind,
        ffn.activation,
        ffn.variant,
        f,
        ffn.bias,
        block_params(d_model, ffn),
        block_flops(d_model, ffn),
        ffn_activation_elements(d_model, f, kind),
        linear,
        kernel,
    )


def counterpart(
    ffn, d_model: int, *, to: Kind | None = None, activation: str | None = None, match: Match = "params", multiple_of: int = 1
):
    """The other kind (or ``to``) at the width that matches ``ffn``'s params or FLOPs."""
    source = side(d_model, ffn)
    to = to or ("gated" if source.kind == "dense" else "dense")
    act = activation_for(activation, to, ffn.activation)
    width = match_width(d_model, getattr(source, match), to, bias=ffn.bias, match=match, multiple_of=multiple_of).d_ff
    return ffn_block(to, width, bias=ffn.bias, activation=act)


def activation_for(name: str | None, kind: Kind, fallback: str) -> str:
    """An --activation name for a ``kind`` block (a gated variant's name too); ``fallback`` when none."""
    allowed = get_args(GateActivation) if kind == "gated" else get_args(DenseActivation)
    if name is None:
        # the same function on the other side; one with no gated form (relu², tanh) gates with SiLU
        return fallback if fallback in allowed else "silu"
    act = FUNCTION_ALIASES.get(name.lower(), name.lower())
    if kind == "gated":  # a gated variant may be named for itself: SwiGLU is the gated SiLU
        act = VARIANT_ACTIVATIONS.get(act, act)
    if act not in allowed:
        raise InputError(f"--activation {name}: not a {kind} activation (choose from {', '.join(allowed)})")
    return act


def compare_block(d_model: int, ffn, **kw) -> Comparison:
    """A bare FFN block against its counterpart."""
    match, multiple_of = kw.get("match", "params"), kw.get("multiple_of", 1)
    source, target = side(d_model, ffn), side(d_model, counterpart(ffn, d_model, **kw))
    source, target = _with_reference(d_model, source, target)
    return Comparison(None, d_model, 1, match, multiple_of, None, source, target)


def compare_model(spec: Model, *, model: str, **kw) -> Comparison:
    """The model's FFN (a mixture's expert) against its counterpart, in every layer that uses it: the FFN of
    most layers (DeepSeek's MoE, not its first dense layers)."""
    ffn = main_ffn(spec)
    block = ffn.body()
    moe = None
    if block is not ffn:
        moe = f"the routed expert FFN of {ffn.describe()}: each expert resized"
    other = counterpart(block, spec.d_model, **kw)
    replaced = ffn.with_body(other)
    layers = sum(1 for layer in spec.layers if layer.ffn == ffn)
    swapped = spec.with_layers(replace(layer, ffn=replaced) if layer.ffn == ffn else layer for layer in spec.layers)
    sides = []
    for this, whole in ((block, spec), (other, swapped)):
        t = tally(whole)
        s = side(spec.d_model, this)
        sides.append(Side(**{**s.__dict__, "model_params": t.params, "model_flops": plain(t.flops_per_token)}))
    source, target = _with_reference(spec.d_model, *sides)
    return Comparison(model, spec.d_model, layers, kw.get("match", "params"), kw.get("multiple_of", 1), moe, source, target)


def _with_reference(d_model: int, source: Side, target: Side) -> tuple[Side, Side]:
    """Shazeer 2020's log-perplexities when the pair is T5-base's: d_model 768, dense 3072, gated 2048."""
    dense, gated = (source, target) if source.kind == "dense" else (target, source)
    if (d_model, dense.kind, dense.d_ff, gated.kind, gated.d_ff, dense.bias) != (768, "dense", 3072, "gated", 2048, False):
        return source, target

    def ref(s: Side) -> tuple[float, float] | None:
        name = _SHAZEER_DENSE.get(s.activation) if s.kind == "dense" else GATED_VARIANTS.get(s.activation)
        return SHAZEER_2020.get(name)

    return (Side(**{**source.__dict__, "reference": ref(source)}), Side(**{**target.__dict__, "reference": ref(target)}))


def sweep(d_model: int, block, ratios: list[float], **kw) -> list[Comparison]:
    """compare_block for ``block`` resized to each width round(ratio · d_model)."""
    if not ratios:
        raise InputError("--sweep needs at least one ratio")
    return [compare_block(d_model, replace(block, d_ff=max(1, round(r * d_model))), **kw) for r in ratios]


def main_ffn(spec: Model):
    """The FFN block of most layers among those holding a dense or gated FFN (a mixture's expert counts),
    the first such on a tie; layers that are only a mixer (Mamba, Nemotron-H's) are passed over."""
    counts = Counter(layer.ffn for layer in spec.layers if layer.ffn.body() is not None)
    if not counts:
        kinds = sorted({layer.ffn.kind for layer in spec.layers})
        raise InputError(f"compare: no layer holds a dense or gated FFN to resize (FFN kinds: {', '.join(kinds)})")
    return max(counts, key=counts.get)


def model_block(spec: Model):
    """The FFN block a model's comparison is about: its main FFN, or a mixture's routed expert."""
    return main_ffn(spec).body()


def parse_ratios(text: str, option: str = "--sweep") -> list[float]:
    """'2,2.67,4' or 'start:stop:step' (stop included): one ratio at least, each above 0; ``option`` names the text
    in errors."""
    import math

    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            if not all(map(math.isfinite, (start, stop, step))) or step <= 0 or stop < start:
                raise ValueError
            n = int(round((stop - start) / step))
            if n + 1 > MAX_RATIOS:
                raise InputError(f"{option} {text}: {n + 1:,} ratios; at most {MAX_RATIOS:,} (a larger step)")
            ratios = [round(start + i * step, 10) for i in range(n + 1)]
        else:
            ratios = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{option} {text}: give ratios of d_ff to d_model as 2,2.67,4 or start:stop:step") from None
    if not ratios:
        raise InputError(f"{option} {text!r}: no ratio given; give ratios of d_ff to d_model as 2,2.67,4 or start:stop:step")
    if len(ratios) > MAX_RATIOS:
        raise InputError(f"{option}: {len(ratios):,} ratios; at most {MAX_RATIOS:,}")
    if any(not 0 < r <= MAX_RATIO for r in ratios):
        raise InputError(f"{option} {text}: ratios must be above 0 and at most {MAX_RATIO:,}")
    return ratios


MAX_RATIOS = 1000  # rows of a sweep
MAX_RATIO = 1024  # d_ff at most 1024 × d_model
