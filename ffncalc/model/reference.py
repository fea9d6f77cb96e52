"""The reference torch model built from the resolved stack: embeddings, one module per layer holding
the blocks' own reference modules (``Block.torch_module``), norms and the head.

Module paths mirror the analytic term names (``layers.3.attn.q`` ↔ ``attn.q.weight``), so verify can
match them one to one. The modules build on the meta device without allocating weights, and run with
real tensors on any device. torch is imported here, by verify and bench only.
"""

from __future__ import annotations

import torch
from torch import nn

from ..blocks import module_name
from ..blocks._torch import Linear, make_norm
from .block_residuals import fit
from .extras import gated_norm_module
from .shared import tie
from .stack import Layer, Model


class LayerModule(nn.Module):
    """One layer. Pre-norm residual sublayers by default: each sublayer's first norm before it, any
    others after it (Gemma 2 has two each). Post: the norms after the sublayers only (OLMo 2).
    Residual: the norms after the residual add, on the sum (GPT-1). Parallel: attention and FFN read the same
    input, with one shared norm (GPT-J, phi-2) or one each
    (GPT-NeoX); one norm per layer always means parallel."""

    def __init__(self, model: Model, layer: Layer, causal: bool):
        super().__init__()
        kinds = {"norm": lambda: make_norm(model.norm.layer, model.d_model), "gated": lambda: gated_norm_module(model),
                 "none": nn.Identity}
        self.norms = nn.ModuleList(kinds[use]() for use in layer.norm_uses(model.norm))
        self.names = (module_name(layer.attention), module_name(layer.ffn))
        self.inputs = layer.attention.inputs  # separate inputs its mixer reads (Inkling 2's full layers)
        for name, block in zip(self.names, (layer.attention, layer.ffn)):
            setattr(self, name, block.torch_module(model, causal))
        self.parallel, self.placement, self.reversible = model.parallel, model.norm.placement, model.reversible
        for name in ("altup", "laurel", "residual_scale"):  # model/extras.py: the parts beside the blocks
            if getattr(model, name) is not None:
                setattr(self, name, getattr(model, name).layer_module(model))
        if model.per_layer_inputs is not None:
            self.ple = model.per_layer_inputs.layer_module(model)
        if model.hyper is not None:
            self.hc = model.hyper.layer_module(model)
        if model.block_residuals is not None:  # model/block_residuals.py: the layer's attention_input and mlp_input
            self.res, self.mixes = model.block_residuals.layer_module(model, layer.mixes), layer.mixes
        if layer.shared is not None:  # a weight-shared block: the model ties every later use to the first
            if model.hyper is not None or model.altup is not None or model.reversible:
                raise NotImplementedError("a shared block's output feeds a layer of one residual stream")
            use = layer.shared
            self.shared, self.use = use.block.torch_module(model, causal, uses=use.uses), use.use

    def forward(self, x: torch.Tensor, vector: torch.Tensor | None = None,
                embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """The layer; with AltUp, ``x`` is the streams (n, B, s, d), the layer running on the first one's
        prediction; with per-layer inputs, ``vector`` is the layer's (B, s, p), its output added after the layer
        (with AltUp, to every stream but the first); with a shared block, ``embeddings`` are the model's input
        embeddings, which the block reads beside ``x``, its output added to the first sublayer's input."""
        if hasattr(self, "res"):  # (the block's partial sum, the finished states)
            return self._mixed(*x)
        if hasattr(self, "hc"):  # streams (B, s, k, d): each sublayer reads and writes them through its own
            mixer, ffn = (getattr(self, name) for name in self.names)
            split = (len(self.norms) + 1) // 2
            x = self.hc.attn(x, lambda h: _wrapped(mixer, self.norms[:split], h, False))
            return self.hc.ffn(x, lambda h: _wrapped(ffn, self.norms[split:], h, False))
        if not hasattr(self, "altup"):
            x = self._layer(x, self.shared(x, embeddings, self.use) if hasattr(self, "shared") else None)
            return x + self.ple(x, vector) if hasattr(self, "ple") else x
        predictions = self.altup.before(x)
        streams, first = self.altup.after(predictions, self._layer(predictions[0]))
        if hasattr(self, "ple"):
            streams = torch.cat([streams[:1], streams[1:] + self.ple(first, vector)])
        return streams

    def _mixed(self, partial: torch.Tensor, states: list) -> tuple[torch.Tensor, list]:
        """Block attention residuals: each sublayer's input mixed from the finished states and the partial sum; at a
        block's first layer (mlp_input mixes one state more than attention_input) the attention's output starts the
        new partial sum and the stream it read joins the states."""
        mixer, ffn = (getattr(self, name) for name in self.names)
        attn_states, queries, ffn_states = self.mixes
        inputs = [partial] * 3
        if attn_states:
            inputs = list(self.res.attention(torch.stack(fit(states, attn_states - 1) + [partial], -2)).unbind(-2))
        q = self.norms[0](inputs[0])
        out = mixer(q, inputs[1], inputs[2 % len(inputs)]) if self.inputs == 3 else mixer(q)
        if ffn_states > attn_states:
            states, residual = states + [partial], out
        else:
            residual = partial + out
        h = self.res.ffn(torch.stack(fit(states, ffn_states - 1) + [residual], -2))[..., 0, :]
        return residual + ffn(self.norms[1](h)), states

    def _layer(self, x: torch.Tensor, added: torch.Tensor | None = None) -> torch.Tensor:
        """``added``: a shared block's output, added to the input of the first sublayer (and its norm), not to the
        residual."""
        mixer, ffn = (getattr(self, name) for name in self.names)
        if self.reversible:  # Reformer: y₁ = x₁ + attention(norm(x₂)), y₂ = x₂ + ffn(norm(y₁))
            x1, x2 = x.chunk(2, dim=-1)
            y1 = x1 + mixer(self.norms[0](x2))
            return torch.cat([y1, x2 + ffn(self.norms[1](y1))], dim=-1)
        n = len(self.norms)
        if self.parallel or (n == 1 and self.placement == "pre"):  # both read the same input: one shared norm,
            inp = x if added is None else x + added
            a = self.norms[0](inp) if n else inp  # one each, or none
            b = self.norms[1](inp) if n == 2 else a
            return x + mixer(a) + ffn(b)
        if added is not None:
            raise NotImplementedError("a shared block's output feeds a layer of one pre-norm or parallel sublayers")
        split = (n + 1) // 2  # norms[:split] wrap attention, the rest the FFN
        if self.placement == "residual":
            for sublayer, norms in ((mixer, self.norms[:split]), (ffn, self.norms[split:])):
                x = x + sublayer(x)
                for norm in norms:
                    x = norm(x)
            return x
        post = self.placement == "post"
        if hasattr(self, "laurel"):  # LAuReL on the first norm's output, beside attention (Gemma 3n)
            a = self.norms[0](x)
            x = (x + _wrapped(mixer, self.norms[1:split], a, True) + self.laurel(a)) * 2 ** -0.5
        else:
            x = self._add(x, _wrapped(mixer, self.norms[:split], x, post), 0)
        return self._add(x, _wrapped(ffn, self.norms[split:], x, post), 1)

    def _add(self, x: torch.Tensor, out: torch.Tensor, slot: int) -> torch.Tensor:
        """The residual add after sublayer ``slot``; with scaled adds (ZAYA1), each side shifted and scaled."""
        return self.residual_scale.add(x, out, slot) if hasattr(self, "residual_scale") else x + out


def _wrapped(sublayer: nn.Module, norms: nn.ModuleList, x: torch.Tensor, post: bool) -> torch.Tensor:
    """Pre: the first norm before the sublayer, any others after it. Post: every norm after it."""
    if len(norms) and not post:
        x = norms[0](x)
        norms = norms[1:]
    x = sublayer(x)
    for norm in norms:
        x = norm(x)
    return x


def sinusoids(positions: torch.Tensor, width: int, base: float = 10000.0) -> torch.Tensor:
    """Fixed position encodings (Vaswani et al. 2017 §3.5): the sines of ⌈width/2⌉ frequencies, then their
    cosines, cut to ``width``. No parameters; the model adds them to the embeddings."""
    half = (width + 1) // 2
    freq = base ** (-torch.arange(half, device=positions.device, dtype=torch.float32) / max(half, 1))
    angles = positions.to(torch.float32)[:, None] * freq[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)[:, :width]


class Transformer(nn.Module):
    """Embeddings, the layers, the final norm and the head. ``distinct``: one module per distinct layer
    (``layers.k`` is the k-th distinct layer in order of first appearance, ``index`` maps each layer to
    its module), for counting a stack of repeated layers by building and running each kind once."""

    def __init__(self, spec: Model, causal: bool = False, distinct: bool = False):
        super().__init__()
        d = spec.d_model
        # the table; of its own width or vocabulary, with its projections (model/extras.py: Embedding)
        self.embed = nn.Embedding(spec.vocab_size, d) if spec.embedding is None else spec.embedding.model_module(spec)
        if spec.positions == "learned":
            self.pos_embed = nn.Embedding(spec.context_length + spec.position_offset, d)
        self.positions, self.position_offset = spec.positions, spec.position_offset
        if spec.embedding_norm:
            self.embed_norm = make_norm(spec.norm, d)
        # model/prompts.py and model/streams.py: the parts beside the embedding
        for name in ("axial_positions", "prompts", "segments", "relative_bias", "padding", "byte_latent"):
            if getattr(spec, name) is not None:
                setattr(self, name, getattr(spec, name).model_module(spec))
        self.prompt_length = spec.prompt_length
        kinds: list[Layer] = []
        index = []
        for layer in spec.layers:
            if not distinct or layer not in kinds:  # equal layers build equal modules
                kinds.append(layer)
            index.append(len(kinds) - 1 if not distinct else kinds.index(layer))
        self.index = tuple(index)
        self.layers = nn.ModuleList(LayerModule(spec, layer, causal) for layer in kinds)
        self.reversible = spec.reversible
        firsts = {}  # model/shared.py: each shared block's later uses tied to its first
        for layer, module in zip(kinds, self.layers):
            if layer.shared is not None and layer.shared.name in firsts:
                tie(firsts[layer.shared.name], module.shared)
            elif layer.shared is not None:
                firsts[layer.shared.name] = module.shared
        for k, (layer, module) in enumerate(zip(kinds, self.layers)):  # model/reuse.py: tied to the layer it runs
            if layer.reuse:
                tie(self.layers[index[index.index(k) - layer.reuse]], module)
        if spec.cycles is not None:
            self.cycles = spec.cycles.model_module(spec)
        if spec.norm.final:
            self.final_norm = make_norm(spec.norm, spec.final_width)
        if spec.prediction_head is not None:
            self.prediction_head = spec.prediction_head.model_module(spec)
        self.lm_head = Linear(spec.head_width, spec.vocab_size, bias=spec.lm_head_bias)
        if spec.tie_embeddings:
            self.lm_head.weight = self.embed.weight  # one Parameter, counted once
        if spec.per_layer_inputs is not None:
            self.ple = spec.per_layer_inputs.model_module(spec)
        if spec.altup is not None:
            self.altup = spec.altup.model_module(spec)
        if spec.hyper is not None:
            self.hc = spec.hyper.model_module(spec)
        if spec.residual_scale is not None and spec.residual_scale.input:
            self.residual_scale = spec.residual_scale.model_module(spec)
        if spec.block_residuals is not None:
            self.res, self.finished = spec.block_residuals.model_module(spec), spec.block_residuals.finished(spec.n_layers)

    def forward(self, tokens: torch.Tensor, only: list[int] | None = None) -> torch.Tensor:
        """Logits for ``tokens`` (B, s); ``only`` runs just those modules of ``layers``, in that order
        (for counting identical layers once), instead of every layer's module in turn (with cycles, one after
        another: their states only route the same work)."""
        x = self.embed(tokens)
        positions = self.position_offset + torch.arange(tokens.shape[-1], device=tokens.device)
        if hasattr(self, "pos_embed"):
            x = x + self.pos_embed(positions)
        elif self.positions == "sinusoidal":
            x = x + sinusoids(positions, x.shape[-1]).to(x.dtype)
        if hasattr(self, "embed_norm"):
            x = self.embed_norm(x)
        if hasattr(self, "axial_positions"):
            x = self.axial_positions(x)
        if hasattr(self, "residual_scale"):
            x = self.residual_scale(x)
        if hasattr(self, "padding"):  # to whole chunks; the head reads the sequence's own positions
            x = self.padding(x)
        if hasattr(self, "prompts"):  # the prompt's positions first; the layers run over them too
            x = self.prompts(x)
        if hasattr(self, "segments"):
            x = self.segments(x)
        vectors = self.ple(tokens, x) if hasattr(self, "ple") else None  # (B, s, L, p)
        embeddings = x
        for extra in ("altup", "hc"):
            if hasattr(self, extra):
                x = getattr(self, extra).expand(x)
        if self.reversible:  # the two streams start equal
            x = torch.cat([x, x], dim=-1)
        if hasattr(self, "res"):  # block attention residuals: the partial sum and the finished states
            x = (x, [])
        order = self.index if only is None else only

        def run(ks, x):
            for k in ks:
                x = self.layers[order[k]](x, None if vectors is None else vectors[..., k, :], embeddings)
            return x

        if hasattr(self, "cycles") and only is None:  # HRM's two states through the stack runs (model/reuse.py)
            x = self.cycles(x, run)
        else:
            x = run(range(len(order)), x)
        if hasattr(self, "res"):
            x = self.res.final(torch.stack(fit(x[1], self.finished) + [x[0]], -2))[..., 0, :]
        for extra in ("altup", "hc"):
            if hasattr(self, extra):
                x = getattr(self, extra).collapse(x)
        if hasattr(self, "final_norm"):
            x = self.final_norm(x)
        if hasattr(self, "prediction_head"):
            x = self.prediction_head(x)
        # the prompt's and the padding's positions dropped before the head
        x = x[:, self.prompt_length:self.prompt_length + tokens.shape[-1]]
        return self.lm_head(self.embed.out(x) if hasattr(self.embed, "out") else x)

    def set_balanced_routing(self, balanced: bool) -> None:
        for module in self.modules():
            if hasattr(module, "balanced"):  # a block's module whose routing needs values
                module.balanced = balanced


def build(spec: Model, *, device: str | torch.device = "meta", dtype: torch.dtype = torch.float32,
          causal: bool = False, distinct: bool = False) -> Transformer:
    """The spec as a torch module; on ``meta`` (the default) no weight is allocated. ``distinct``: each
    distinct layer built once (see ``Transformer``)."""
    with torch.device(device):
        model = Transformer(spec, causal=causal, distinct=distinct)
    return model.to(dtype=dtype)
