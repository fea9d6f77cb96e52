"""Model specifications: strict pydantic models and the sizing rules they may state.

A spec describes shapes only. Counting lives in ``count.py``; loading from YAML in ``loader.py``.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Tag,
    model_validator,
)


class SpecError(ValueError):
    """A spec that is well-typed but inconsistent; ``path`` names the offending field."""

    def __init__(self, path: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.path = path
        self.message = message


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class LlamaWidth(_Spec):
    """Llama's FFN width rule, as in meta-llama's ``FeedForward.__init__``.

    h = 4·d_model; h = int(2h/3); if multiplier: h = int(multiplier·h); h = multiple_of·ceil(h/multiple_of).
    """

    rule: Literal["llama"] = "llama"
    multiple_of: PositiveInt
    multiplier: PositiveFloat | None = None

    def resolve(self, d_model: int) -> int:
        return llama_ffn_width(d_model, multiple_of=self.multiple_of, multiplier=self.multiplier)


def llama_ffn_width(d_model: int, *, multiple_of: int, multiplier: float | None = None) -> int:
    """The gated FFN width Llama derives from ``d_model`` (meta-llama/llama ``model.py``, ``FeedForward``).

    The multiplier is applied in floating point, exactly as the reference code does.
    """
    hidden = 4 * d_model
    hidden = int(2 * hidden / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * math.ceil(hidden / multiple_of)


Width = Union[PositiveInt, LlamaWidth]

DenseActivation = Literal["relu", "relu2", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "identity"]
GateActivation = Literal["sigmoid", "identity", "relu", "gelu", "gelu_tanh", "silu"]

# Shazeer 2020, "GLU Variants Improve Transformer": the name of each gated variant by its activation.
GATED_VARIANTS: dict[str, str] = {
    "sigmoid": "GLU",
    "identity": "Bilinear",
    "relu": "ReGLU",
    "gelu": "GEGLU",
    "gelu_tanh": "GEGLU",
    "silu": "SwiGLU",
}


class _FFNBase(_Spec):
    d_ff: Width
    bias: bool = False

    def width(self, d_model: int) -> int:
        """The hidden width, resolving a stated rule against ``d_model``."""
        return self.d_ff if isinstance(self.d_ff, int) else self.d_ff.resolve(d_model)


class DenseFFN(_FFNBase):
    """2-layer MLP: down(act(up(x)))."""

    kind: Literal["dense"] = "dense"
    activation: DenseActivation = "gelu"

    @property
    def variant(self) -> str:
        return f"dense {self.activation}"


class GatedFFN(_FFNBase):
    """3-layer gated MLP: down(act(gate(x)) ⊙ up(x))."""

    kind: Literal["gated"] = "gated"
    activation: GateActivation = "silu"

    @property
    def variant(self) -> str:
        return GATED_VARIANTS[self.activation]


ExpertFFN = Annotated[Union[DenseFFN, GatedFFN], Field(discriminator="kind")]


class MoEFFN(_Spec):
    """Mixture of experts: a router picks ``top_k`` of ``n_experts`` routed experts per token;
    ``n_shared_experts`` copies of ``shared`` (if any) see every token."""

    kind: Literal["moe"] = "moe"
    n_experts: PositiveInt
    top_k: PositiveInt
    expert: ExpertFFN
    n_shared_experts: NonNegativeInt = 0
    shared: ExpertFFN | None = None
    shared_gate: bool = False  # a d_model -> 1 sigmoid gate on the shared experts' output (Qwen2-MoE)
    router_bias: bool = False

    @model_validator(mode="after")
    def _check(self) -> MoEFFN:
        if self.top_k > self.n_experts:
            raise SpecError(("top_k",), f"top_k {self.top_k} exceeds n_experts {self.n_experts}")
        if self.n_shared_experts and self.shared is None:
            raise SpecError(("shared",), f"n_shared_experts is {self.n_shared_experts} but no shared expert FFN is given")
        if self.shared is not None and not self.n_shared_experts:
            raise SpecError(("n_shared_experts",), "a shared expert FFN is given but n_shared_experts is 0")
        if self.shared_gate and self.shared is None:
            raise SpecError(("shared_gate",), "shared_gate needs a shared expert FFN")
        return self

    @property
    def variant(self) -> str:
        return f"MoE {self.top_k}/{self.n_experts} × {self.expert.variant}"


FFN = Annotated[Union[DenseFFN, GatedFFN, MoEFFN], Field(discriminator="kind")]


class Attention(_Spec):
    """Multi-head attention with separate q/k/v/o projections; GQA/MQA through ``n_kv_heads``."""

    kind: Literal["mha"] = "mha"
    n_heads: PositiveInt
    n_kv_heads: PositiveInt | None = None  # default: n_heads (MHA); 1 is MQA
    head_dim: PositiveInt | None = None  # default: d_model / n_heads
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: Literal["none", "head", "full"] = "none"  # head: one norm of head_dim shared by heads
    rotary_dim: PositiveInt | None = None  # features of each head that rotary positions turn; default: all

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    def head_size(self, d_model: int) -> int:
        return self.head_dim if self.head_dim is not None else d_model // self.n_heads

    def value_size(self, d_model: int) -> int:
        return self.head_size(d_model)

    def rotated(self, d_model: int) -> int:
        return min(self.rotary_dim or self.head_size(d_model), self.head_size(d_model))

    def kv_cache_elements(self, d_model: int) -> int:
        """Elements a layer caches per token: K and V of every KV head."""
        return 2 * self.kv_heads * self.head_size(d_model)


class LatentAttention(_Spec):
    """Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1).

    Keys and values come from one low-rank latent: kv_a maps d_model to kv_lora_rank + qk_rope_head_dim
    (the latent and one rotary key shared by all heads), a norm, then kv_b expands the latent to every
    head's non-rotary key and value. The query is full-rank (q_lora_rank None) or low-rank likewise.
    """

    kind: Literal["mla"] = "mla"
    n_heads: PositiveInt
    q_lora_rank: PositiveInt | None = None
    kv_lora_rank: PositiveInt
    qk_nope_head_dim: PositiveInt
    qk_rope_head_dim: PositiveInt
    v_head_dim: PositiveInt
    bias: bool = False  # on q_a, kv_a and o (DeepSeek's attention_bias); q/q_b and kv_b never have one

    @property
    def kv_heads(self) -> int:
        return self.n_heads  # after expansion every head has its own key and value

    def head_size(self, d_model: int) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    def value_size(self, d_model: int) -> int:
        return self.v_head_dim

    def rotated(self, d_model: int) -> int:
        return self.qk_rope_head_dim

    def kv_cache_elements(self, d_model: int) -> int:
        """The latent and the shared rotary key: what DeepSeek-V2 caches per token and layer (§2.1.2)."""
        return self.kv_lora_rank + self.qk_rope_head_dim


def _attention_kind(value) -> str:
    return value.get("kind", "mha") if isinstance(value, dict) else getattr(value, "kind", "mha")


AnyAttention = Annotated[
    Union[Annotated[Attention, Tag("mha")], Annotated[LatentAttention, Tag("mla")]],
    Discriminator(_attention_kind),
]


class Norm(_Spec):
    """The normalisation layers: their kind, how many each layer has, and whether a final one follows."""

    kind: Literal["layernorm", "rmsnorm"] = "rmsnorm"
    # pre: each sublayer's first norm before it, any others after it (Gemma 2 has two each);
    # post: the norms after the sublayers only (OLMo 2).
    placement: Literal["pre", "post"] = "pre"
    affine: bool = True  # a learned weight (microgpt's rmsnorm has none)
    bias: bool | None = None  # default: LayerNorm has one, RMSNorm has none
    per_layer: NonNegativeInt = 2
    final: bool = True

    @property
    def has_bias(self) -> bool:
        return self.bias if self.bias is not None else self.kind == "layernorm"

    @model_validator(mode="after")
    def _check(self) -> Norm:
        if self.has_bias and self.kind == "rmsnorm":
            raise SpecError(("bias",), "RMSNorm has no bias")
        if self.has_bias and not self.affine:
            raise SpecError(("bias",), "a norm without affine parameters has no bias")
        return self


class LayerGroup(_Spec):
    """``repeat`` consecutive layers; attention or ffn left out means the model's default."""

    repeat: PositiveInt
    attention: AnyAttention | None = None
    ffn: FFN | None = None


Positions = Literal["learned", "rotary", "alibi", "none"]


class ModelSpec(_Spec):
    """A decoder-only transformer language model."""

    name: str | None = None
    vocab_size: PositiveInt
    d_model: PositiveInt
    n_layers: PositiveInt
    context_length: PositiveInt
    attention: AnyAttention
    ffn: FFN
    layers: list[LayerGroup] | None = None  # for stacks whose layers differ, in order
    norm: Norm = Norm()
    # Attention and FFN read the same input and their outputs are added (GPT-J, GPT-NeoX, phi-2).
    # With one norm per layer they share it; with two, each has its own.
    parallel: bool = False
    positions: Positions = "rotary"
    tie_embeddings: bool = False
    lm_head_bias: bool = False
    embedding_norm: bool = False  # a norm straight after the embeddings

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.layers is not None:
            total = sum(g.repeat for g in self.layers)
            if total != self.n_layers:
                raise SpecError(("layers",), f"layer groups repeat {total} layers in all, but n_layers is {self.n_layers}")
        for path, attn in self._attentions():
            self._check_attention(path, attn)
        if self.parallel and (self.norm.per_layer > 2 or self.norm.placement != "pre"):
            raise SpecError(("parallel",), "parallel sublayers take one shared norm or one pre-norm each")
        return self

    def _attentions(self):
        yield ("attention",), self.attention
        for i, group in enumerate(self.layers or []):
            if group.attention is not None:
                yield ("layers", i, "attention"), group.attention

    def _check_attention(self, path: tuple, attn: Attention | LatentAttention) -> None:
        if isinstance(attn, LatentAttention):
            return
        if attn.head_dim is None and self.d_model % attn.n_heads:
            raise SpecError(
                path + ("n_heads",),
                f"{attn.n_heads} heads do not divide d_model {self.d_model} (state head_dim to allow it)",
            )
        if attn.n_heads % attn.kv_heads:
            raise SpecError(
                path + ("n_kv_heads",), f"{attn.kv_heads} KV heads do not divide {attn.n_heads} query heads"
            )

    def groups(self) -> list[tuple[int, int, Attention | LatentAttention, DenseFFN | GatedFFN | MoEFFN]]:
        """The stack as (first layer, layer count, attention, ffn) runs."""
        runs = self.layers or [LayerGroup(repeat=self.n_layers)]
        out, start = [], 0
        for group in runs:
            out.append((start, group.repeat, group.attention or self.attention, group.ffn or self.ffn))
            start += group.repeat
        return out
