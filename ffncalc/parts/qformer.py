"""A Querying Transformer (Li et al. 2023, BLIP-2 §3.1): learned queries, a fixed number whatever the image's size, that
read a vision tower's output by cross-attention and become the image's tokens after the projector's linear. Not a
part of its own: a projector (parts/projector.py) holds one, before its linear. As transformers 5.23 builds BLIP-2's
and InstructBLIP's (Blip2QFormerModel, InstructBlipQFormerModel):

- ``queries`` learned rows of its width (query_tokens), a LayerNorm over them (the Q-Former's layernorm);
- ``depth`` BERT layers (Devlin et al. 2019), each normalised after its sublayers (LayerNorms with biases): attention
  of the queries among themselves (query, key, value and the output dense, with biases); every ``cross_every``-th
  layer from the first, cross-attention whose keys and values are the tower's positions (key and value from the
  tower's width); an MLP (intermediate_query, output_query, with biases, its activation);
- its ``heads`` heads of width / heads each;
- InstructBLIP's, where ``text_vocab``: the instruction's tokens beside the queries (InstructBlipQFormerEmbeddings: a
  table of text_vocab tokens and one of ``text_positions`` positions; its LayerNorm the queries' too), and each layer's
  second MLP for them (intermediate, output);
- Granite 4 Vision's Window Q-Former (Granite4VisionWindowQFormerDownsampler), where ``window``: the tower's patch grid
  cut into windows of ``window`` × ``window`` patches, each read by ``queries`` queries of its own (query_side² of its
  downsample_rate "query_side/window_side") through the same Blip2QFormerModel, a learned position a window's patch
  added to its keys (image_positions: window² rows of the tower's width) and the queries added to the patches pooled to
  the queries' grid (an area interpolation or one patch of each 2 × 2: no multiply-adds); every window's queries are
  the image's tokens, (grid / window)² × queries of them.

Its work is an image's: the queries attend each other and the image's positions. An instruction's tokens are no
image's work: counted with none (the text MLPs and tables are parameters only)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Activation, Emitter


@dataclass(frozen=True)
class QFormer:
    queries: Positive  # learned queries: the tokens an image becomes
    depth: Positive  # layers
    width: Positive  # its hidden size
    heads: Positive
    d_ff: Positive  # its MLP's width
    context: Positive  # the width of the tower's positions its cross-attention reads (encoder_hidden_size)
    cross_every: Positive = 2  # cross-attention in every n-th layer from the first (cross_attention_frequency)
    activation: Activation = "gelu"
    text_vocab: NonNegative = 0  # InstructBLIP's instruction tokens: their table's rows (0: none)
    text_positions: NonNegative = 0  # and its position table's
    window: NonNegative = 0  # patches a side of a window its queries read (Granite 4 Vision's; 0: the whole image)

    @property
    def cross(self) -> int:
        """Layers with cross-attention: 0, n, 2n, …"""
        return len(range(0, self.depth, self.cross_every))

    def windows(self, positions: int) -> int:
        """Windows an image's ``positions`` patches make (1: the whole image is one)."""
        return positions // self.window**2 if self.window else 1

    def tokens(self, grid: int) -> int:
        """The tokens an image of ``grid`` × ``grid`` patches becomes: its queries, a window's each."""
        return self.queries * self.windows(grid * grid)

    def terms(self, prefix: str, positions: int) -> list[tuple[str, object]]:
        """Its tensors and one image's work over the tower's ``positions`` (each term "image": once an image), named
        under ``prefix`` (its projector's: vision.projector.qformer.); with windows, each window's queries read the
        window's patches alone."""
        n, c, h, nw = self.depth, self.cross, self.width, self.windows(positions)
        q = self.queries * nw  # every window's queries
        hd = h // self.heads
        norm = Norm(kind="layernorm")
        e = Emitter("embedding")
        e.term(f"{prefix}queries", "position", (self.queries, h), elementwise=q * h if self.window else 0)
        if self.window:  # image_positions, added to every window's patches
            e.term(f"{prefix}positions", "position", (self.window**2, self.context), elementwise=nw * self.window**2 * self.context)
        if self.text_vocab:  # the instruction's tables
            e.term(f"{prefix}text.word_embed", "position", (self.text_vocab, h))
            e.term(f"{prefix}text.pos_embed", "position", (self.text_positions, h))
        w = Emitter("layers")

        def linear(name: str, d_in: int, d_out: int, copies: int, rows: int) -> None:  # over ``rows`` rows an image
            w.term(f"{prefix}{name}.weight", "weight", (d_out, d_in), copies, macs=copies * rows * d_in * d_out)
            w.term(f"{prefix}{name}.bias", "bias", (d_out,), copies, elementwise=copies * rows * d_out)

        w.norm(f"{prefix}embed_norm", norm, h, 1, total=q * h)
        # (sublayer, copies, rows its keys and values are projected from, keys a query meets, their width)
        keys = self.window**2 if self.window else positions  # a window's patches, or the image's
        for part, copies, rows, keys, d_kv in (("attn", n, q, self.queries, h), ("cross", c, nw * keys, keys, self.context)):
            linear(f"{part}.q", h, h, copies, q)
            linear(f"{part}.k", d_kv, h, copies, rows)
            linear(f"{part}.v", d_kv, h, copies, rows)
            for product in ("scores", "values"):  # every query meets every key (of its window)
                w.term(f"{prefix}{part}.{product}", "core", (self.heads, keys, hd), copies * q, numel=0, macs=h, select="full")
            w.op(f"{prefix}{part}.softmax", copies * q * self.heads * keys * SOFTMAX_OPS, copies)
            linear(f"{part}.o", h, h, copies, q)
        linear("ffn.up", h, self.d_ff, n, q)
        w.op(f"{prefix}ffn.act", n * q * self.d_ff * ACTIVATION_OPS[self.activation], n)
        linear("ffn.down", self.d_ff, h, n, q)
        t = n if self.text_vocab else 0  # the instruction's MLP a layer, over its tokens: none here
        if t:
            linear("text_ffn.up", h, self.d_ff, n, 0)
            linear("text_ffn.down", self.d_ff, h, n, 0)
        # after each sublayer, its output added and normalised: 2 a layer, 1 a cross-attention, 1 a text MLP
        w.term(f"{prefix}norms", "norm", (h,), 2 * n + c + t, numel=2 * h, elementwise=(2 * n + c) * norm.ops(q * h))
        w.op(f"{prefix}residual", (2 * n + c) * q * h, n)
        return [("image", t) for t in e.out + w.out]

    def module(self):
        """Its reference module (imports torch when called): forward(positions) runs one batch of images' positions."""
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm

        spec = self
        norm = Norm(kind="layernorm")
        h, heads = spec.width, spec.heads

        class Attention(nn.Module):
            def __init__(self, d_kv: int):
                super().__init__()
                self.q, self.k, self.v, self.o = Linear(h, h), Linear(d_kv, h), Linear(d_kv, h), Linear(h, h)
                self.scores, self.values = MatMul(), MatMul()

            def forward(self, x, kv):
                b, q, k = x.shape[0], x.shape[1], kv.shape[1]
                qs = self.q(x).view(b, q, heads, h // heads).transpose(1, 2)
                ks = self.k(kv).view(b, k, heads, h // heads).transpose(1, 2)
                vs = self.v(kv).view(b, k, heads, h // heads).transpose(1, 2)
                probs = self.scores(qs, ks.transpose(-2, -1)).softmax(-1)
                return self.o(self.values(probs, vs).transpose(1, 2).reshape(b, q, h))

        class Layer(nn.Module):
            def __init__(self, cross: bool):
                super().__init__()
                self.attn = Attention(h)
                if cross:
                    self.cross = Attention(spec.context)
                self.norms = nn.ModuleList(make_norm(norm, h) for _ in range(2 + cross + bool(spec.text_vocab)))
                self.ffn = nn.Module()
                self.ffn.up, self.ffn.down = Linear(h, spec.d_ff), Linear(spec.d_ff, h)
                if spec.text_vocab:  # the instruction's MLP: no instruction runs here
                    self.text_ffn = nn.Module()
                    self.text_ffn.up, self.text_ffn.down = Linear(h, spec.d_ff), Linear(spec.d_ff, h)

            def forward(self, x, positions):
                x = self.norms[0](x + self.attn(x, x))
                if hasattr(self, "cross"):
                    x = self.norms[2](x + self.cross(x, positions))
                return self.norms[1](x + self.ffn.down(ACTIVATIONS[spec.activation](self.ffn.up(x))))

        class QFormerModule(nn.Module):
            def __init__(self):
                super().__init__()
                self.queries = nn.Parameter(torch.empty(spec.queries, h))
                if spec.text_vocab:
                    self.text = nn.Module()
                    self.text.word_embed = nn.Parameter(torch.empty(spec.text_vocab, h))
                    self.text.pos_embed = nn.Parameter(torch.empty(spec.text_positions, h))
                if spec.window:
                    self.positions = nn.Parameter(torch.empty(spec.window**2, spec.context))
                self.embed_norm = make_norm(norm, h)
                self.layers = nn.ModuleList(Layer(i % spec.cross_every == 0) for i in range(spec.depth))

            def forward(self, positions):
                b, n, width = positions.shape
                if spec.window:  # each window's patches a batch row of their own (their order changes no count)
                    positions = positions.reshape(b * (n // spec.window**2), spec.window**2, width) + self.positions
                x = self.embed_norm(self.queries.expand(positions.shape[0], -1, -1))
                for layer in self.layers:
                    x = layer(x, positions)
                return x.reshape(b, -1, h)

        return QFormerModule()
