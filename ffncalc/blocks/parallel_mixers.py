"""Token mixers side by side: every member reads the layer's one normed input and their outputs are summed, as
Falcon-H1's hybrid layer runs attention and a Mamba-2 mixer (FalconH1DecoderLayer, transformers 5.23.0,
models/falcon_h1/modeling_falcon_h1.py: ``mamba(h) · ssm_out_multiplier + self_attn(h · attention_in_multiplier)
· attention_out_multiplier`` with h = input_layernorm(x); the multipliers are scalars, no parameters).

Each member is a registered block of its own; its terms and its torch module sit under this block's prefix
(``mixers.attn.q``, ``mixers.mixer.in_proj``), so every count, cache and state is the members' own, summed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated

from ..model.schema import Slot, SpecError
from ..model.terms import Emitter
from . import Block, module_name, register

# The kinds a member may be: token mixers with a forward of their own and no decode computation apart from it
# (latent attention decodes absorbed, which a sum of members does not state).
MEMBERS = ("mha", "mamba", "mamba2", "gated_deltanet", "short_conv")
Member = Annotated[object, Slot("attention", default="mha", only=MEMBERS)]


@register
@dataclass(frozen=True)
class ParallelMixers(Block):
    """Several token mixers on one input, their outputs summed (Falcon-H1: attention beside Mamba-2)."""

    kind = "parallel"
    slot = "attention"
    prefix = "mixers"
    summary = "token mixers side by side on one input, outputs summed (Falcon-H1: attention and Mamba-2)"

    mixers: list[Member]

    @property
    def verify_note(self) -> str | None:  # type: ignore[override]
        notes = [m.verify_note for m in self.mixers if m.verify_note]
        return "; ".join(dict.fromkeys(notes)) or None

    def resolve(self, d_model: int) -> ParallelMixers:
        return replace(self, mixers=tuple(m.resolve(d_model) for m in self.mixers))

    def check(self, d_model: int) -> None:
        from ..model.stack import Model

        if len(self.mixers) < 2:
            raise SpecError(("mixers",), "parallel mixers take two or more")
        names = [module_name(m) for m in self.mixers]
        if len(set(names)) != len(names):
            raise SpecError(("mixers",), f"members must differ in kind of module, not {', '.join(names)}")
        for i, m in enumerate(self.mixers):
            try:
                m.check(d_model)
            except SpecError as exc:
                raise exc.within("mixers", i) from None
        bare = Model.bare(d_model)
        caching = [m for m in (m.resolve(d_model) for m in self.mixers) if m.cache_elements(bare)]
        if len(caching) > 1:  # one cache length per layer: the members' caches would need their own
            raise SpecError(("mixers",), "at most one member may cache keys per token")

    def describe(self) -> str:
        return " + ".join(m.describe() for m in self.mixers)

    def facts(self) -> dict[str, object]:
        heads = [str(m.facts()["heads"]) for m in self.mixers if "heads" in m.facts()]
        return {"heads": " + ".join(heads)} if heads else {}

    def terms(self, e, model, seq_len: int) -> None:
        for m in self.mixers:
            own = Emitter(e.part, e.layers, slot=e.slot)
            m.terms(own, model, seq_len)
            e.out += [replace(t, name=f"{self.prefix}.{t.name}", component=f"{self.prefix}.{t.component}") for t in own.out]
        e.op(f"{self.prefix}.sum", e.n * (len(self.mixers) - 1) * model.d_model)

    def cache_elements(self, model) -> int:
        return sum(m.cache_elements(model) for m in self.mixers)

    def cached_tokens(self, tokens: int) -> int:
        from ..model.stack import Model

        caching = [m for m in self.mixers if m.cache_elements(Model.bare(1))]
        return caching[0].cached_tokens(tokens) if caching else tokens

    def state_elements(self, model) -> int:
        return sum(m.state_elements(model) for m in self.mixers)

    def kept_elements(self, model) -> int:
        """The members' own, their shared input once."""
        return sum(m.kept_elements(model) for m in self.mixers) - (len(self.mixers) - 1) * model.d_model

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        return sum(m.score_bytes(model, seq_len, flash) for m in self.mixers)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    from torch import nn

    class Parallel(nn.Module):
        def __init__(self, spec: ParallelMixers, model, causal: bool):
            super().__init__()
            self.names = [module_name(m) for m in spec.mixers]
            for name, m in zip(self.names, spec.mixers):
                setattr(self, name, m.torch_module(model, causal))

        def forward(self, x):
            return sum(getattr(self, name)(x) for name in self.names)

    return Parallel
