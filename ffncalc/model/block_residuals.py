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
work grows with the block, so the resolved stack lists each layer's state counts (``stack.Layer.mixes``) and layers of
different blocks differ.

The restart at a block's first layer skips that layer's attention residual add, which the count's two adds per layer
still include (an elementwise estimate of d per block).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .schema import Positive
from .terms import SOFTMAX_OPS

UNWEIGHTED_NORM_OPS = 3  # per element: square, sum, scale


@dataclass(frozen=True)
class BlockResiduals:
    """Inkling2TextConfig.n_layers_per_attn_res_block (6)."""

    block_layers: Positive = 6

    def finished(self, i: int) -> int:
        """Finished states (the embeddings and every whole block's sum) before layer ``i``: the block starts before it."""
        return -(-i // self.block_layers)

    def layer_mixes(self, i: int, queries: int) -> tuple[int, int, int]:
        """Layer ``i``'s (attention_input's states, its queries, mlp_input's states); no attention_input in layer 0."""
        return (self.finished(i) + 1 if i else 0, queries if i else 0, self.finished(i + 1) + 1)

    def model_terms(self, e, model) -> None:
        if e.part == "final":
            _mix(e, model, "res.final", self.finished(model.n_layers) + 1, 1)

    def layer_terms(self, e, model) -> None:
        states, queries, ffn_states = model.layers[e.layers[0]].mixes
        if states:
            _mix(e, model, "res.attention", states, queries)
        _mix(e, model, "res.ffn", ffn_states, 1)

    def model_module(self, model):
        return _modules()[2](model)

    def layer_module(self, model, mixes: tuple[int, int, int]):
        return _modules()[1](model, mixes)


def _mix(e, model, name: str, states: int, queries: int) -> None:
    d, n = model.d_model, e.n
    e.term(f"{name}.query", "norm", (queries, d) if queries > 1 else (d,), n, component=name)
    e.op(f"{name}.norm", n * UNWEIGHTED_NORM_OPS * states * d, component=name)
    # the queries (a parameter) against the normed states: the mix's own product; the weights times the states are
    # a product of activations
    e.term(f"{name}.scores", "weight", (queries * states, d), n, numel=0, macs=n * queries * states * d, component=name)
    e.op(f"{name}.softmax", n * SOFTMAX_OPS * queries * states, component=name)
    e.term(f"{name}.values", "core", (queries * states, 1, d), n, numel=0, macs=n * queries * states * d, grows=False,
           component=name)


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
            weights = (self.scores(query, normed.transpose(-2, -1)) * d ** -0.5).softmax(-1)
            return self.values(weights, normed)

    class LayerMixes(nn.Module):
        """A layer's attention_input (``attention``, absent in the first layer) and mlp_input (``ffn``)."""

        def __init__(self, model, mixes: tuple[int, int, int]):
            super().__init__()
            if mixes[0]:
                self.attention = Mix(model.d_model, mixes[1])
            self.ffn = Mix(model.d_model, 1)

    class ModelMix(nn.Module):
        """final_input (``final``)."""

        def __init__(self, model):
            super().__init__()
            self.final = Mix(model.d_model, 1)

    return Mix, LayerMixes, ModelMix


def fit(states: list, count: int) -> list:
    """The last ``count`` finished states, the first repeated in front where fewer were made (a reference model that
    runs each distinct layer once makes fewer blocks than the model has; the shapes are the model's)."""
    if count <= 0:
        return []
    states = states[-count:]
    return [states[0]] * (count - len(states)) + states
