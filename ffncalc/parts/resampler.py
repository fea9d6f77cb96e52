"""A resampler: a fixed number of learned latents that read an image's patch features by cross-attention, the tokens
the language model receives whatever the image's size (Alayrac et al. 2022, Flamingo's Perceiver Resampler; Jaegle
et al. 2021). Not a part of its own: a projector (parts/projector.py) holds one, after its MLP. As transformers 5.23
builds Idefics2's (Idefics2PerceiverResampler, Laurençon et al. 2024):

- ``latents`` learned rows of the model's width (its latents);
- ``depth`` layers, each: an RMSNorm over the latents and one over the context (the patches); attention whose queries
  are the latents' and whose keys and values are the context's and the latents' side by side (q, k, v, o without
  biases, ``n_kv_heads`` grouped key-value heads of ``head_dim``); an RMSNorm and a gated MLP of ``d_ff`` (SiLU, no
  biases), each sublayer added to the latents;
- a final RMSNorm over the latents.

IDEFICS' (IdeficsPerceiverResampler, Laurençon et al. 2023) at its tower's ``width``: LayerNorms with biases in place of
the RMSNorms (context_layer_norm, latents_layer_norm, its MLP's ln, the final layer_norm), its heads' keys and values
one a query head, and an MLP of fc and c_proj (ReLU, no biases; ``gated`` false).

Evolla's (EvollaSequenceCompressorResampler, Zhou et al. 2025) at its protein encoder's ``width``: IDEFICS' form with
its keys and values from one fused to_kv (the same parameters), an MLP of fc1, GELU and fc2 (``activation`` gelu), and
no norm over the latents at its width (``final_norm`` false: its projector and the LayerNorm after it, parts/protein.py).

Its work is an image's: the queries are the latents, the keys and values an image's patches and the latents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter


@dataclass(frozen=True)
class Resampler:
    latents: Positive  # learned queries: the tokens an image becomes
    depth: Positive  # layers
    n_heads: Positive
    n_kv_heads: Positive
    head_dim: Positive
    d_ff: Positive  # its MLP's width (Idefics2's: 4 × the model's width)
    width: NonNegative = 0  # the width it runs at (0: the model's; IDEFICS: its tower's)
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    gated: bool = True  # a SwiGLU MLP (false: fc, ``activation``, c_proj)
    activation: Literal["relu", "gelu"] = "relu"  # the ungated MLP's (Evolla's EvollaFeedForward: GELU)
    final_norm: bool = True  # a norm over the latents after the last layer (Evolla: none)

    def terms(self, width: int, prefix: str, patches: int) -> list[tuple[str, object]]:
        """Its tensors and one image's work over ``patches`` patch features of ``width`` (each term "image": once an
        image), named under ``prefix`` (its projector's: vision.projector.resampler.)."""
        n, q, kv = self.depth, self.latents, patches + self.latents  # the queries, the keys and values each layer
        heads, groups, hd = self.n_heads, self.n_kv_heads, self.head_dim
        norm = Norm(kind=self.norm)
        e = Emitter("embedding")
        e.term(f"{prefix}latents", "position", (q, width))
        w = Emitter("layers")

        def linear(name: str, d_in: int, d_out: int, rows: int) -> None:  # each layer's, over ``rows`` rows an image
            w.term(f"{prefix}{name}.weight", "weight", (d_out, d_in), n, macs=n * rows * d_in * d_out)

        each = width * norm.params_per_feature
        w.term(f"{prefix}norms", "norm", (each,), 2 * n, numel=each, elementwise=n * (q + patches) * norm.ops(width))
        linear("attn.q", width, heads * hd, q)
        linear("attn.k", width, groups * hd, kv)
        linear("attn.v", width, groups * hd, kv)
        for part in ("scores", "values"):  # every latent meets every patch and every latent
            w.term(f"{prefix}attn.{part}", "core", (heads, kv, hd), n * q, numel=0, macs=heads * hd, select="full")
        w.op(f"{prefix}attn.softmax", n * q * heads * kv * SOFTMAX_OPS, n)
        linear("attn.o", heads * hd, width, q)
        w.term(f"{prefix}ffn.norm", "norm", (each,), n, numel=each, elementwise=n * q * norm.ops(width))
        if self.gated:
            linear("ffn.gate", width, self.d_ff, q)
        linear("ffn.up", width, self.d_ff, q)
        act = ACTIVATION_OPS["silu"] + 1 if self.gated else ACTIVATION_OPS[self.activation]
        w.op(f"{prefix}ffn.act", n * q * self.d_ff * act, n)
        linear("ffn.down", self.d_ff, width, q)
        w.op(f"{prefix}residual", n * 2 * q * width, n)
        if self.final_norm:
            w.norm(f"{prefix}norm", norm, width, 1, total=q * width)
        return [("image", t) for t in e.out + w.out]

    def module(self, width: int):
        """Its reference module (imports torch when called): forward(context) runs one batch of images' patches."""
        import torch
        from torch import nn

        from ..blocks._torch import Linear, MatMul, make_norm

        spec = self
        norm = Norm(kind=self.norm)

        class Layer(nn.Module):
            def __init__(self):
                super().__init__()
                self.norms = nn.ModuleList([make_norm(norm, width), make_norm(norm, width)])
                self.attn = nn.Module()
                heads, groups, hd = spec.n_heads, spec.n_kv_heads, spec.head_dim
                self.attn.q = Linear(width, heads * hd, bias=False)
                self.attn.k = Linear(width, groups * hd, bias=False)
                self.attn.v = Linear(width, groups * hd, bias=False)
                self.attn.o = Linear(heads * hd, width, bias=False)
                self.attn.scores, self.attn.values = MatMul(), MatMul()
                self.ffn = nn.Module()
                self.ffn.norm = make_norm(norm, width)
                if spec.gated:
                    self.ffn.gate = Linear(width, spec.d_ff, bias=False)
                self.ffn.up = Linear(width, spec.d_ff, bias=False)
                self.ffn.down = Linear(spec.d_ff, width, bias=False)

            def forward(self, latents, context):
                b, q, heads, groups, hd = latents.shape[0], latents.shape[1], spec.n_heads, spec.n_kv_heads, spec.head_dim
                x = self.norms[0](latents)
                both = torch.cat([self.norms[1](context), x], dim=1)
                kv = both.shape[1]
                qs = self.attn.q(x).view(b, q, heads, hd).transpose(1, 2)
                ks = self.attn.k(both).view(b, kv, groups, hd).transpose(1, 2).repeat_interleave(heads // groups, dim=1)
                vs = self.attn.v(both).view(b, kv, groups, hd).transpose(1, 2).repeat_interleave(heads // groups, dim=1)
                probs = self.attn.scores(qs, ks.transpose(-2, -1)).softmax(-1)
                latents = latents + self.attn.o(self.attn.values(probs, vs).transpose(1, 2).reshape(b, q, heads * hd))
                h = self.ffn.norm(latents)
                if not spec.gated:
                    act = nn.functional.gelu if spec.activation == "gelu" else nn.functional.relu
                    return latents + self.ffn.down(act(self.ffn.up(h)))
                return latents + self.ffn.down(nn.functional.silu(self.ffn.gate(h)) * self.ffn.up(h))

        class ResamplerModule(nn.Module):
            def __init__(self):
                super().__init__()
                self.latents = nn.Parameter(torch.empty(spec.latents, width))
                self.layers = nn.ModuleList(Layer() for _ in range(spec.depth))
                self.norm = make_norm(norm, width) if spec.final_norm else nn.Identity()

            def forward(self, context):
                latents = self.latents.expand(context.shape[0], -1, -1)
                for layer in self.layers:
                    latents = layer(latents, context)
                return self.norm(latents)

        return ResamplerModule()
