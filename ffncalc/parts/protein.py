"""A protein's path into a language model (the spec's ``protein``): Evolla (Zhou et al. 2025; transformers'
EvollaForProteinText2Text), whose decoder reads one protein sequence a text sequence:

- the protein encoder (EvollaSaProtProteinEncoder, SaProt's ESM-2 form): a token table of ``vocab`` rows (no positions
  but rotary ones; a LayerNorm after it where ``embedding_norm``), ``layers``, a stack of pre-LayerNorm layers (q, k, v
  and o with biases over every head, a two-layer GELU MLP with biases) run bidirectionally over the protein's ``length``
  tokens, and emb_layer_norm_after;
- its sequence-compressor resampler (EvollaSequenceCompressorResampler, parts/resampler.py at the encoder's width): the
  latents reading the encoder's output and themselves, then protein_projector, Linear(encoder width, d_model) with a
  bias, and a LayerNorm of d_model over the latents: the rows the decoder cross-attends;
- an adapter after the MLP of each layer i with (i + 1) % ``every`` == 0 (EvollaDecoderLayer.adapter,
  EvollaSequenceAlignerCrossAttention): an RMSNorm before query (d → d with a bias), key_protein and value_protein
  (d → d with biases, once a latent row, at the prefill) over the model's heads of d / heads, every text token meeting
  every latent, out_proj (a bias where ``adapter_bias``), the output scaled by tanh of gate_attention before its
  residual add; then EvollaFeedForward (a LayerNorm, fc1 of ``adapter_d_ff``, GELU, fc2, no biases), scaled by tanh of
  gate_ffw before its residual add.

FLOPs: the encoder, the resampler and the projector once a sequence (``Term.per_sequence``) over ``length`` protein
tokens (``--source-len``; default EvollaProcessor's protein_max_length, 1,024); each adapter's query, out_proj, scores
over the latents and feed-forward a text token, its key and value once a latent row. transformers runs an adapter only
where a protein is given: a text-only forward skips them; these counts are a forward with one protein."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import Positive
from ..model.spec import Norm
from ..model.stacks import Stack
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from . import Part, register
from .resampler import Resampler

KEY = "protein"
PROTEIN_LENGTH = 1024  # EvollaProcessor's protein_max_length


@register
@dataclass(frozen=True)
class Protein(Part):
    key = KEY  # its modules' and terms' names (protein.encoder, protein.adapter), its adapters' beside its encoder's
    beside = True
    order = 6
    summary = "a protein encoder and resampler whose latents adapters in the decoder's layers cross-attend (Evolla)"
    takes = ("source_len",)  # the protein's tokens a sequence

    layers: Stack  # the protein encoder's layers (bidirectional whatever is stated)
    vocab: Positive  # rows of its token table
    resampler: Resampler  # at the encoder's width (its ``width``)
    every: Positive  # an adapter after layer i's MLP where (i + 1) % every == 0
    adapter_d_ff: Positive  # EvollaFeedForward's inner width (aligner_ffn_mult × d_model)
    adapter_bias: bool = True  # out_proj's bias (aligner_enable_bias)
    embedding_norm: bool = False  # a LayerNorm after the token table (emb_layer_norm_before)
    length: Positive = PROTEIN_LENGTH  # protein tokens a sequence, for the FLOPs

    def given(self, **inputs) -> Protein:
        source = inputs.get("source_len")
        return self if source is None else replace(self, length=source)

    def resolve_layers(self, spec, layers, groups):
        """The layers that hold an adapter: (i + 1) % every == 0 (EvollaDecoderLayer.__init__)."""
        return [layer.marked(KEY, True) if (i + 1) % self.every == 0 else layer for i, layer in enumerate(layers)]

    @property
    def stack(self) -> Stack:
        return replace(self.layers, mask="bidirectional")

    def protein_terms(self, model, length: int | None = None) -> list:
        """The protein path's terms over one protein of ``length`` tokens (default its own), each scaled to its rows
        (``positions``: rows it runs over, not yet per text token)."""
        n = length or self.length
        w, ln = self.layers.d_model, Norm(kind="layernorm")
        emb = Emitter("embedding")
        emb.term("protein.embed.weight", "token", (self.vocab, w))  # a lookup: no multiply-adds (nn.Embedding)
        if self.embedding_norm:
            emb.norm("protein.embed_norm", ln, w, 1)
        out = [replace(t, positions=n) for t in emb.out]
        out += self.stack.terms(model, "protein.encoder.", n, n)
        tail = Emitter("layers")
        tail.norm("protein.encoder.final_norm", ln, w, 1)
        out += [replace(t, layers=None, positions=n) for t in tail.out]
        out += [replace(t, positions=1) for _, t in self.resampler.terms(w, "protein.resampler.", n)]  # once a protein
        proj = Emitter("layers")  # over the latents
        proj.linear("protein.projector.linear", w, model.d_model, True, 1)
        proj.norm("protein.projector.norm", ln, model.d_model, 1)
        out += [replace(t, layers=None, positions=self.resampler.latents) for t in proj.out]
        return out

    def per_protein(self, model, length: int | None = None) -> tuple[int, int]:
        """One protein's rows for the adapters and its forward FLOPs through the encoder, the resampler and the
        projector: 2 per multiply-add of every matmul and of the attention's products, as FlopCounterMode counts."""
        flops = 0
        for t in self.protein_terms(model, length):
            if t.role == "core":  # every query meets every key (a bidirectional stack; the latents and the protein)
                heads, keys, head_dim = t.shape
                flops += 2 * t.positions * t.count * heads * keys * head_dim
            else:
                flops += 2 * t.positions * t.macs
        return self.resampler.latents, int(flops)

    def input_terms(self, e, model, seq_len: int) -> None:
        """The protein path, once a sequence at its prefill (no decode step does its work)."""
        e.out.extend(replace(t, positions=Fraction(t.positions, seq_len), per_sequence=True) for t in self.protein_terms(model))

    def _adapts(self, model, layers) -> bool:
        return bool(layers) and model.layers[layers[0]].mark(KEY) is True

    def layer_terms(self, e, model, positions: int) -> None:
        if not self._adapts(model, e.layers):
            return
        d, n, s = model.d_model, e.n, self.resampler.latents
        h = model.layers[e.layers[0]].attention.head_count()
        hd = d // h
        e.norm("protein.adapter.norm", Norm(kind="rmsnorm"), d, n)
        e.linear("protein.adapter.q", d, h * hd, True, n, heads=h)
        start = len(e.out)
        for part in ("k", "v"):  # key_protein, value_protein: once a latent row, at the prefill
            e.linear(f"protein.adapter.{part}", d, h * hd, True, n, heads=h)
        e.out[start:] = [replace(t, positions=Fraction(s, positions), per_sequence=True) for t in e.out[start:]]
        for part in ("scores", "values"):  # each text token meets every latent, however long the context
            e.term(f"protein.adapter.{part}", "core", (h, s, hd), n, numel=0, macs=n * h * s * hd, select="full", grows=False)
        e.op("protein.adapter.softmax", SOFTMAX_OPS * n * h * s, scores=n * h * s)
        e.linear("protein.adapter.o", h * hd, d, self.adapter_bias, n)
        e.norm("protein.adapter.ffn.norm", Norm(kind="layernorm"), d, n)
        e.linear("protein.adapter.ffn.up", d, self.adapter_d_ff, False, n)
        e.op("protein.adapter.ffn.act", n * self.adapter_d_ff * ACTIVATION_OPS["gelu"])
        e.linear("protein.adapter.ffn.down", self.adapter_d_ff, d, False, n)
        # tanh of each gate, times its sublayer's output, and the two residual adds
        e.term("protein.adapter.gates", "bias", (2,), n, numel=2, elementwise=2 * n * d)
        e.op("protein.adapter.residual", 2 * n * d)

    def cached_elements(self, model) -> int:
        return 0  # in its adapters' layers alone: cached_in

    def cached_in(self, model, index: int) -> int:
        """An adapter layer's cache a sequence: its key and value of every latent row (recomputed by transformers at
        each step; an engine keeps them as a cross-attention cache)."""
        return 2 * model.d_model * self.resampler.latents if model.layers[index].mark(KEY) is True else 0

    def note(self, spec) -> str:
        rows, flops = self.per_protein(spec)
        return (
            f"protein encoder: one protein of {self.length:,} tokens is {rows:,} rows every adapter cross-attends and "
            f"{flops:,} forward FLOPs through the encoder, the resampler and the projector, once a sequence "
            "(train, infer and fit: --source-len sets its tokens)"
        )

    def model_module(self, model):
        return _modules()[0](self, model)

    def layer_module(self, model, layer):
        if layer.mark(KEY) is not True:
            return None
        return _modules()[1](self, model, layer.attention.head_count())


@cache
def _modules():
    import torch
    from torch import nn

    from ..blocks._torch import Linear, MatMul, make_norm
    from ..model.reference import LayerModule

    ln = Norm(kind="layernorm")

    class ProteinModule(nn.Module):
        """The protein path: ``enter`` runs one protein of ``length`` tokens (zeros) through the encoder, the resampler
        and the projector, and puts the latents in the forward pass's ``protein_states``; the text passes unchanged."""

        def __init__(self, spec: Protein, model):
            super().__init__()
            w, d = spec.layers.d_model, model.d_model
            self.length = spec.length
            self.embed = nn.Embedding(spec.vocab, w)
            if spec.embedding_norm:
                self.embed_norm = make_norm(ln, w)
            inner = replace(spec.stack.resolve(model), mask="bidirectional")
            self.encoder = nn.Module()
            self.encoder.layers = nn.ModuleList(LayerModule(inner, layer, False) for layer in inner.layers)
            self.encoder.final_norm = make_norm(ln, w)
            self.resampler = spec.resampler.module(w)
            self.projector = nn.Module()
            self.projector.linear = Linear(w, d, bias=True)
            self.projector.norm = make_norm(ln, d)

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            tokens = ctx["tokens"]
            h = self.embed(torch.zeros((tokens.shape[0], self.length), dtype=tokens.dtype, device=tokens.device))
            if hasattr(self, "embed_norm"):
                h = self.embed_norm(h)
            inner = {"embeddings": h}
            for k, layer in enumerate(self.encoder.layers):
                h = layer(h, inner, k)
            latents = self.resampler(self.encoder.final_norm(h))
            ctx["protein_states"] = self.projector.norm(self.projector.linear(latents))
            return x

    class Adapter(nn.Module):
        """EvollaSequenceAlignerCrossAttention after the layer (``around``): the stream's RMSNorm, q; k and v of the
        latents; every query meeting every latent; o, gated by tanh of gates[0]; the LayerNorm and GELU MLP, gated by
        tanh of gates[1]; each added to the stream."""

        def __init__(self, spec: Protein, model, heads: int):
            super().__init__()
            d = model.d_model
            self.heads, self.head_dim = heads, d // heads
            a = self.adapter = nn.Module()
            a.norm = make_norm(Norm(kind="rmsnorm"), d)
            width = heads * self.head_dim
            a.q, a.k, a.v = Linear(d, width, bias=True), Linear(d, width, bias=True), Linear(d, width, bias=True)
            a.o = Linear(width, d, bias=spec.adapter_bias)
            a.ffn = nn.Module()
            a.ffn.norm = make_norm(ln, d)
            a.ffn.up = Linear(d, spec.adapter_d_ff, bias=False)
            a.ffn.down = Linear(spec.adapter_d_ff, d, bias=False)
            a.gates = nn.Parameter(torch.zeros(2))
            a.scores, a.values = MatMul(), MatMul()

        def around(self, run, x: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            x = run(x)
            states = ctx.get("protein_states")
            if states is None:
                return x
            a, b, t, s = self.adapter, x.shape[0], x.shape[1], states.shape[1]
            q = a.q(a.norm(x)).view(b, t, self.heads, self.head_dim).transpose(1, 2)
            keys = a.k(states).view(b, s, self.heads, self.head_dim).transpose(1, 2)
            vals = a.v(states).view(b, s, self.heads, self.head_dim).transpose(1, 2)
            probs = a.scores(q * self.heads**-0.5, keys.transpose(-2, -1)).softmax(dim=-1)
            out = a.o(a.values(probs, vals).transpose(1, 2).reshape(b, t, -1))
            x = x + a.gates[0].tanh() * out
            return x + a.gates[1].tanh() * a.ffn.down(nn.functional.gelu(a.ffn.up(a.ffn.norm(x))))

    return ProteinModule, Adapter
