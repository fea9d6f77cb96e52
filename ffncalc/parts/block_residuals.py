"""Block attention residuals (Inkling 2: Inkling2BlockAttentionResidual, Inkling2TextModel, transformers 5.23.0
models/inkling2): the residual stream is cut into blocks of ``block_layers`` layers, and before each sublayer and
before the final norm a learned query attends over the states so far to make that input.

The states: the embeddings, each finished block's sum (the stream as it entered the block's first layer, i.e. the
previous block's total), and the current block's partial sum. Layer i (from 0) starts a block where i is a multiple of
p = block_layers; there its attention's output starts the new partial sum (the residual restarts) and the stream it
read joins the states. So with B(i) = ⌈i / p⌉ finished states before layer i:

    attention_input (every layer but the first): B(i) + 1 states; one query, or three (the queries', keys' and
                     values' inputs) where the layer's attention takes separate inputs (Inkling 2's full layers)
    mlp_input (every layer): B(i + 1) + 1 states, one query
    final_input (the model, before the final norm): ⌈L / p⌉ + 1 states, one query

Each mix of m states of width d with q queries (a parameter of q·d, zero at init): an RMSNorm without a weight over
every state (m·d elements), scores q·m·d multiply-adds (the queries' product, scaled by 1/√d, a softmax over the
m), values q·m·d (a product of activations). The mixing
work grows with the block, so the resolved stack lists each layer's state counts (``Layer.marks``) and layers of
different blocks differ.

The restart at a block's first layer skips that layer's attention residual add, which the count's two adds per layer
still include (an elementwise estimate of d per block).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import Part, register

UNWEIGHTED_NORM_OPS = 3  # per element: square, sum, scale


@register
@dataclass(frozen=True)
class BlockResiduals(Part):
    """Inkling2TextConfig.n_layers_per_attn_res_block (6)."""

    key = "block_residuals"
    order = 25
    prefix = "res"
    summary = "learned queries mixing the embeddings and earlier blocks' sums into each sublayer's input (Inkling 2)"

    block_layers: Positive = 6

    def check(self, spec) -> None:
        if (
            spec.parallel
            or spec.norm.placement != "pre"
            or spec.has("altup", "laurel", "hyper", "residual_scale", "reversible", "shared_blocks", "per_layer_inputs", "cycles")
            or any(group.reuses for group in spec.layers or ())
        ):
            raise SpecError(
                ("block_residuals",),
                "block attention residuals mix the inputs of sequential pre-norm "
                "sublayers, without other residual streams, scaled adds, cycles or "
                "reused layers",
            )

    def resolve_layers(self, spec, layers, groups):
        """Each layer's mixes: layers of different blocks differ."""
        return [layer.marked(self.key, self.layer_mixes(i, layer.attention.inputs)) for i, layer in enumerate(layers)]

    def finished(self, i: int) -> int:
        """Finished states (the embeddings and every whole block's sum) before layer ``i``: the block starts before it."""
        return -(-i // self.block_layers)

    def layer_mixes(self, i: int, queries: int) -> tuple[int, int, int]:
        """Layer ``i``'s (attention_input's states, its queries, mlp_input's states); no attention_input in layer 0."""
        return (self.finished(i) + 1 if i else 0, queries if i else 0, self.finished(i + 1) + 1)

    def final_terms(self, e, model) -> None:
        _mix(e, model, "res.final", self.finished(model.n_layers) + 1, 1)

    def layer_terms(self, e, model, positions: int) -> None:
        states, queries, ffn_states = model.layers[e.layers[0]].mark(self.key)
        if states:
            _mix(e, model, "res.attention", states, queries)
        _mix(e, model, "res.ffn", ffn_states, 1)

    def model_module(self, model):
        return _modules()[2](self, model)

    def layer_module(self, model, layer):
        return _modules()[1](model, layer.mark(self.key))


def _mix(e, model, name: str, states: int, queries: int) -> None:
    d, n = model.d_model, e.n
    e.term(f"{name}.query", "norm", (queries, d) if queries > 1 else (d,), n, component=name)
    e.op(f"{name}.norm", n * UNWEIGHTED_NORM_OPS * states * d, component=name)
    # the queries (a parameter) against the normed states: the mix's own product; the weights times the states are
    # a product of activations
    e.term(f"{name}.scores", "weight", (queries * states, d), n, numel=0, macs=n * queries * states * d, component=name)
    e.op(f"{name}.softmax", n * SOFTMAX_OPS * queries * states, component=name)
    e.term(f"{name}.values", "core", (queries * states, 1, d), n, numel=0, macs=n * queries * states * d, grows=False, component=name)


@cache
def _modules():
    import torch
    from torch import nn

    from ..blocks._torch import MatMul

    class Mix(nn.Module):
        """q learned queries over the stacked states (B, s, m, d) -> (B, s, q, d)."""

        def __init__(self, d: int, queries: int):
            super().__init__()
            self.query = nn.Parameter(torch.zeros(queries, d) if queries > 1 else torch.zeros(d))
            self.scores = MatMul()
            self.values = MatMul()

        def forward(self, states: torch.Tensor) -> torch.Tensor:
            d = states.shape[-1]
            normed = states * torch.rsqrt(states.pow(2).mean(-1, keepdim=True) + 1e-6)
            query = self.query.view(-1, d).expand(*states.shape[:-2], -1, d)
            weights = (self.scores(query, normed.transpose(-2, -1)) * d**-0.5).softmax(-1)
            return self.values(weights, normed)

    class LayerMixes(nn.Module):
        """A layer's attention_input (``attention``, absent in the first layer) and mlp_input (``ffn``)."""

        def __init__(self, model, mixes: tuple[int, int, int]):
            super().__init__()
            self.mixes = mixes
            if mixes[0]:
                self.attention = Mix(model.d_model, mixes[1])
            self.ffn = Mix(model.d_model, 1)

        def body(self, layer, x, ctx: dict, k: int):
            """Each sublayer's input mixed from the finished states and the partial sum (``x``: the two); at a
            block's first layer (mlp_input mixes one state more than attention_input) the attention's output starts
            the new partial sum and the stream it read joins the states."""
            partial, states = x
            mixer, ffn = layer.sublayers()
            attn_states, queries, ffn_states = self.mixes
            inputs = [partial] * 3
            if attn_states:
                inputs = list(self.attention(torch.stack(fit(states, attn_states - 1) + [partial], -2)).unbind(-2))
            q = layer.norms[0](inputs[0])
            out = mixer(q, inputs[1], inputs[2 % len(inputs)]) if layer.inputs == 3 else mixer(q)
            if ffn_states > attn_states:
                states, residual = states + [partial], out
            else:
                residual = partial + out
            h = self.ffn(torch.stack(fit(states, ffn_states - 1) + [residual], -2))[..., 0, :]
            return residual + ffn(layer.norms[1](h)), states

    class ModelMix(nn.Module):
        """final_input (``final``): the streams start as the partial sum and no finished state."""

        def __init__(self, spec: BlockResiduals, model):
            super().__init__()
            self.final = Mix(model.d_model, 1)
            self.finished = spec.finished(model.n_layers)

        def expand(self, x, ctx: dict):
            return (x, [])

        def collapse(self, x, ctx: dict):
            return self.final(torch.stack(fit(x[1], self.finished) + [x[0]], -2))[..., 0, :]

    return Mix, LayerMixes, ModelMix


def fit(states: list, count: int) -> list:
    """The last ``count`` finished states, the first repeated in front where fewer were made (a reference model that
    runs each distinct layer once makes fewer blocks than the model has; the shapes are the model's)."""
    if count <= 0:
        return []
    states = states[-count:]
    return [states[0]] * (count - len(states)) + states
