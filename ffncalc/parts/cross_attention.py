"""Gated cross-attention layers reading an image's features (the spec's ``cross_attention``): Flamingo's form (Alayrac
et al. 2022, §2.2: tanh-gated cross-attention and MLP layers interleaved in a frozen language model), as Llama 3.2
Vision builds it (transformers' MllamaCrossAttentionDecoderLayer, MllamaTextCrossAttention) and IDEFICS (Laurençon et
al. 2023; IdeficsGatedCrossAttentionLayer: keys and values from the tower's own rows, at its width, no q and k norms
unless qk_layer_norms, gates of one element or of the model's width):

- in each layer whose attention slot states none, in its place: queries from the layer's stream after its first
  norm (q_proj, then an RMSNorm over each head, q_norm), keys and values projected from the vision part's output rows
  (k_proj, v_proj, an RMSNorm over each key head, k_norm: once an image row, at the prefill), every query meeting
  every image row of the sequence (the whole rectangle), o_proj, the output scaled by tanh of a learned scalar
  (cross_attn_attn_gate) before its residual add; the layer's own MLP after its second norm, scaled by tanh of
  another (cross_attn_mlp_gate);
- ``image_rows`` rows of the token table beyond the vocabulary (MllamaTextModel: vocab_size + 8), which the head
  does not write.

FLOPs per token: q, o and the rectangle over every image row (``images`` × rows an image: the vision part's, which
runs the tower); k and v once an image row (``Term.per_sequence``, scaled by rows / tokens). A decode step reads them
from the cache (``cached_in``: 2 × kv heads × head_dim an image row, in these layers alone). Without images the
layers' MLPs are charged as the others' (transformers skips a cross-attention layer whole when no image and no cache
is given)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import SOFTMAX_OPS
from . import LayerKept, Part, register

KEY = "cross_attention"


@register
@dataclass(frozen=True)
class CrossAttention(Part):
    key = KEY
    prefix = "cross"  # its modules in a layer, as its terms are named
    order = 6
    summary = "tanh-gated cross-attention layers reading an image's rows in place of self-attention (Llama 3.2 Vision)"

    n_heads: Positive
    n_kv_heads: Positive
    head_dim: Positive
    image_rows: NonNegative = 0  # rows of the token table beyond the vocabulary (the image tokens')
    context_width: NonNegative = 0  # the width of the rows k and v read (0: the model's; Idefics: its tower's)
    qk_norm: bool = True  # an RMSNorm over each query and key head (Mllama's q_norm, k_norm; Idefics: qk_layer_norms)
    gate_width: Positive = 1  # elements of each gate (1: a scalar; Idefics' alpha_type "vector": the model's width)

    def resolve_layers(self, spec, layers, groups):
        """The layers that cross-attend: those whose attention slot states none (the cross-attention is their mixer)."""
        return [layer.marked(KEY, True) if layer.attention.kind == "none" else layer for layer in layers]

    def table(self, shape: tuple[int, int]) -> tuple[int, int]:
        return (shape[0] + self.image_rows, shape[1])

    @staticmethod
    def _vision(model):
        """The part whose projector writes the rows these layers read (its ``cross``), or None."""
        return next((p for p in model.parts if getattr(p, "cross_layers", False)), None)

    def image_rows_of(self, model) -> int:
        """Rows of every image a sequence holds: the vision part's images × the rows its projector writes an image."""
        vision = self._vision(model)
        return vision.images * vision.tokens if vision is not None else 0

    def _crosses(self, model, layers) -> bool:
        return bool(layers) and model.layers[layers[0]].mark(KEY) is True

    def layer_terms(self, e, model, positions: int) -> None:
        if not self._crosses(model, e.layers):
            return
        d, n, h, kv, hd = model.d_model, e.n, self.n_heads, self.n_kv_heads, self.head_dim
        s = self.image_rows_of(model)
        rms, width = Norm(kind="rmsnorm"), self.context_width or d
        e.linear("cross.q", d, h * hd, False, n, heads=h)
        if self.qk_norm:
            e.norm("cross.q_norm", rms, hd, n, total=h * hd)
        rows = Fraction(s, positions)  # keys and values: once an image row, at the prefill
        start = len(e.out)
        for part in ("k", "v"):
            e.linear(f"cross.{part}", width, kv * hd, False, n, heads=kv)
        if self.qk_norm:
            e.norm("cross.k_norm", rms, hd, n, total=kv * hd)
        e.out[start:] = [replace(t, positions=rows, per_sequence=True) for t in e.out[start:]]
        if s:  # each query meets every image row, however long the context
            for part in ("scores", "values"):
                e.term(f"cross.{part}", "core", (h, s, hd), n, numel=0, macs=n * h * s * hd, select="full", grows=False)
            e.op("cross.softmax", SOFTMAX_OPS * n * h * s, scores=n * h * s)
        e.linear("cross.o", h * hd, d, False, n)
        # tanh of each gate, times its sublayer's output: the attention's and the MLP's
        g = self.gate_width
        e.term("cross.gates", "bias", (2, g) if g > 1 else (2,), n, numel=2 * g, elementwise=2 * n * d)

    def cached_elements(self, model) -> int:
        return 0  # in its layers alone: cached_in

    def cached_in(self, model, index: int) -> int:
        """A cross-attention layer's cache a sequence: K and V of its kv heads for every image row, projected at the
        prefill and read by every decode step (MllamaTextCrossAttention: past_key_values.update of the image's keys)."""
        if model.layers[index].mark(KEY) is not True:
            return 0
        return 2 * self.n_kv_heads * self.head_dim * self.image_rows_of(model)

    def layer_kept(self, model, layer, kernel: str) -> LayerKept:
        """What a cross-attention layer keeps for backward beside its MLP block and norms, as its module runs under
        fused kernels (verify --memory; the flash kernel keeps Q, K and V as given, the output and the fp32 log-sum-exp,
        Dao 2023 §3.1). A text token: q's input (the first norm's output, d), q's output (q_norm's input, h·hd, with an
        fp32 inverse RMS a head: 2·h) and Q after it (h·hd), the heads' output (o's input, h·hd), o's output and the
        MLP's output, each kept by the product with its gate's tanh for the gate's gradient (2·d); the kernel's
        log-sum-exp, 4·h bytes (eager: its scores over the images' S rows, 5·h·S, as ``Encoder.kept_bytes``). Of the
        images' rows, once a sequence in each layer: k's output (k_norm's input, kv·hd, and its fp32 statistic a head,
        2·kv), K after it and V (2·kv·hd), split by heads; without q and k norms, Q, K and V as projected. A vector
        gate's tanh once a forward (each of the two, g elements). Without images the layer runs its MLP alone: its
        output, kept by its gate. q's input and the gated outputs are whole on every device under tensor parallelism
        without sequence parallelism (each sublayer's input and output, Korthikanti et al. 2022 §4.2)."""
        if layer.mark(KEY) is not True:
            return LayerKept()
        d, h, kv, hd, g = model.d_model, self.n_heads, self.n_kv_heads, self.head_dim, self.gate_width
        s = self.image_rows_of(model)
        gate = 2 * g if g > 1 else 0  # bytes of a gate's tanh (a scalar's is a layer's scalar, no token's)
        if not s:
            return LayerKept(d, whole=d, forward=gate)
        norm = 2 * h * hd + 2 * h if self.qk_norm else h * hd  # q_norm's input and statistic, or Q as projected
        keys = (kv * hd + 2 * kv if self.qk_norm else 0) + 2 * kv * hd
        scored = {"flash": 4 * h, "eager": 5 * h * s, "recomputed": 0}[kernel]
        return LayerKept(3 * d + norm + h * hd, scored, 3 * d, 2 * s * keys, 2 * gate)

    def stacks(self, model) -> tuple[tuple[object, int, int, int], ...]:
        """The rows every cross-attention layer's k and v read, once a sequence: the images' (the vision part's
        output, at the width k and v read), kept whole for their weights' gradients; a stack of no layers."""
        s = self.image_rows_of(model)
        if not s or not any(layer.mark(KEY) is True for layer in model.layers):
            return ()
        return ((replace(model, layers=(), parts=()), s, 0, self.context_width or model.d_model),)

    def kept_module(self, model, layer):
        """The layer's module with its norms and MLP as identities (their own blocks', measured apart) over the images'
        rows (random, as the vision part's output)."""
        if layer.mark(KEY) is not True:
            return None
        return _measured()(self.layer_module(model, layer), self.image_rows_of(model), self.context_width or model.d_model)

    def embed_module(self, model):
        """The token table with its image rows (MllamaTextModel.embed_tokens)."""
        if not self.image_rows:
            return None
        from torch import nn

        return nn.Embedding(*model.embed_shape)

    def layer_module(self, model, layer):
        if layer.mark(KEY) is not True:
            return None
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks import _fused
    from ..blocks._torch import Linear, MatMul, make_norm

    class CrossModule(nn.Module):
        """The cross-attention in place of the layer's mixer: ``body`` runs the layer's first norm, this, and its MLP
        after its second norm, each output gated."""

        def __init__(self, spec: CrossAttention, model):
            super().__init__()
            d, h, kv, hd = model.d_model, spec.n_heads, spec.n_kv_heads, spec.head_dim
            self.h, self.kv, self.hd = h, kv, hd
            width = spec.context_width or d
            self.q = Linear(d, h * hd, bias=False)
            self.k = Linear(width, kv * hd, bias=False)
            self.v = Linear(width, kv * hd, bias=False)
            self.o = Linear(h * hd, d, bias=False)
            rms = Norm(kind="rmsnorm")
            if spec.qk_norm:
                self.q_norm, self.k_norm = make_norm(rms, hd), make_norm(rms, hd)
            else:
                self.q_norm, self.k_norm = nn.Identity(), nn.Identity()
            self.gates = nn.Parameter(torch.zeros((2, spec.gate_width) if spec.gate_width > 1 else (2,)))
            self.scores, self.values = MatMul(), MatMul()

        def body(self, layer, x: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            _, ffn = layer.sublayers()
            first, second = layer.norms
            states = ctx.get("cross_states")
            if states is not None and states.shape[1]:
                b, t, s = x.shape[0], x.shape[1], states.shape[1]
                q = self.q_norm(self.q(first(x)).view(b, t, self.h, self.hd)).transpose(1, 2)
                keys = self.k_norm(self.k(states).view(b, s, self.kv, self.hd)).transpose(1, 2)
                vals = self.v(states).view(b, s, self.kv, self.hd).transpose(1, 2)
                if _fused.active():  # a flash kernel: K and V at their own heads, every query meeting every row
                    heads = _fused.attention(q, keys, vals, causal=False)
                else:
                    group = self.h // self.kv
                    keys, vals = keys.repeat_interleave(group, 1), vals.repeat_interleave(group, 1)
                    probs = self.scores(q * self.hd**-0.5, keys.transpose(-2, -1)).softmax(dim=-1)
                    heads = self.values(probs, vals)
                out = self.o(heads.transpose(1, 2).reshape(b, t, -1))
                x = x + self.gates[0].tanh() * out
            return x + self.gates[1].tanh() * ffn(second(x))  # (a vector gate scales each feature)

    return CrossModule


@cache
def _measured():
    import torch
    from torch import nn

    class Measured(nn.Module):
        """A cross-attention layer's own share (verify --memory): ``cross``'s body over the layer's input with the
        layer's norms and MLP as identities, reading ``rows`` image rows of ``width`` features made here."""

        def __init__(self, cross: nn.Module, rows: int, width: int):
            super().__init__()
            self.cross, self.rows, self.width = cross, rows, width
            self.norms = (nn.Identity(), nn.Identity())

        def sublayers(self) -> tuple[None, nn.Module]:
            return None, self.norms[0]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            states = torch.randn(x.shape[0], self.rows, self.width, dtype=x.dtype, device=x.device)
            return self.cross.body(self, x, {"cross_states": states}, 0)

    return Measured
